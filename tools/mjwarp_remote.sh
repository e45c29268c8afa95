# Sourced on the GPU machine (Python 3.12, CUDA 13, no network) from the repo root: source .gpu-mjwarp/remote.sh
# Installs what tools/stage_mjwarp.py staged (its wheels, and warp-lang cut down to sm_90) into .gpu-mjwarp-site
# without the network, puts it and the project on PYTHONPATH, and prints the GPU and the versions. Where warp's
# archive was split (over one call's 64 MiB), the first call (carry .gpu-mjwarp) installs the wheels and keeps part
# 0 in the site, and says the archive is incomplete (PyCUDA and mujoco are there already: the kernels' test runs
# then); the second call (carry .gpu-mjwarp-2) sources .gpu-mjwarp-2/remote.sh, which adds its part and finishes the
# site (a third part, if any, in .gpu-mjwarp-3). The site is an ignored folder of the repo root, which the device
# machine keeps between calls; MJW_SITE names another.
MJW_SITE=${MJW_SITE:-$PWD/.gpu-mjwarp-site}
mkdir -p $MJW_SITE/parts
for MJW_STAGE in $PWD/.gpu-mjwarp $PWD/.gpu-mjwarp-[0-9]*; do
  [ -d $MJW_STAGE ] || continue
  if [ ! -f $MJW_SITE/.wheels ] && ls $MJW_STAGE/wheels/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target $MJW_SITE $MJW_STAGE/wheels/*.whl >/dev/null 2>&1 \
      || { echo "wheel install failed"; return 1; }
    touch $MJW_SITE/.wheels
  fi
  cp -n $MJW_STAGE/warp_lang-*.tar.xz* $MJW_SITE/parts/ 2>/dev/null
done
export PYTHONPATH=$MJW_SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
if [ ! -f $MJW_SITE/.warp ]; then
  python3 - $MJW_SITE <<'PY' || echo "warp's archive is incomplete: the site has no warp yet; carry the next .gpu-mjwarp-N in another call and source its remote.sh"
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
python3 -c "import pycuda.driver as d, numpy, gymnasium, mujoco; d.init(); print('gpu:', d.Device(0).name(), '| pycuda', d.get_version(), '| mujoco', mujoco.__version__, '| numpy', numpy.__version__)"
[ -f $MJW_SITE/.warp ] && python3 -c "import mujoco_warp, warp as wp; wp.init(); print('warp', wp.config.version, '| mujoco_warp', mujoco_warp.__version__)"
