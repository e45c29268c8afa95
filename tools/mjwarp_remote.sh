# Sourced on the GPU machine (Python 3.12, CUDA 13, no network) from the repo root: source .gpu-mjwarp/remote.sh
# Installs what tools/stage_mjwarp.py staged (its wheels, and warp-lang cut down to sm_90) into /tmp/mjw-site without
# the network, puts it and the project on PYTHONPATH, and prints the GPU and the versions. Where warp's archive was
# split (over one call's 64 MiB), the first call installs the wheels and keeps part 0 in /tmp/mjw-site/parts; the
# second call carries .gpu-mjwarp-2 (the other parts) and sources .gpu-mjwarp-2/remote.sh, which finishes the site.
MJW_STAGE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MJW_SITE=${MJW_SITE:-/tmp/mjw-site}
mkdir -p $MJW_SITE/parts
if [ ! -f $MJW_SITE/.wheels ]; then
  if ls $MJW_STAGE/wheels/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target $MJW_SITE $MJW_STAGE/wheels/*.whl >/dev/null 2>&1 \
      || { echo "wheel install failed"; return 1; }
    touch $MJW_SITE/.wheels
  fi
fi
cp -n $MJW_STAGE/warp_lang-*.tar.xz* $MJW_SITE/parts/ 2>/dev/null
if [ ! -f $MJW_SITE/.warp ]; then
  python3 - $MJW_SITE <<'PY' || { echo "warp's archive is incomplete: carry .gpu-mjwarp-2 in a second call and source .gpu-mjwarp-2/remote.sh"; return 1; }
import io, sys, tarfile
from pathlib import Path
site = Path(sys.argv[1])
whole = sorted(site.glob("parts/warp_lang-*.tar.xz"))
parts = sorted(site.glob("parts/warp_lang-*.tar.xz.part*"), key=lambda p: int(p.name.rsplit("part", 1)[1]))
data = whole[0].read_bytes() if whole else b"".join(p.read_bytes() for p in parts)
with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:  # a truncated stream raises here
    tar.extractall(site)
(site / ".warp").touch()
PY
fi
export PYTHONPATH=$MJW_SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
python3 -c "import pycuda.driver as d, numpy, gymnasium, mujoco, mujoco_warp, warp as wp; d.init(); wp.init(); print('gpu:', d.Device(0).name(), '| pycuda', d.get_version(), '| warp', wp.config.version, '| mujoco', mujoco.__version__, '| mujoco_warp', mujoco_warp.__version__, '| numpy', numpy.__version__)"
