#!/usr/bin/env bash
# Run here, from the repo root, with CLEANRL_CHECKOUT=PATH (a checkout of github.com/vwxyzjn/cleanrl): stages CleanRL's
# ppo_continuous_action.py and what it imports beyond the GPU machine's torch and tensorboard (gymnasium 0.29.1, as
# CleanRL pins it, and tyro) into .gpu-cleanrl/, with a `python` there that runs the script on them, for
# benchmarks/peers/cleanrl_mujoco.py on that machine's host (carry .gpu and .gpu-cleanrl):
#   source .gpu/remote.sh && python3 benchmarks/peers/cleanrl_mujoco.py --cleanrl .gpu-cleanrl \
#     --cleanrl-python .gpu-cleanrl/python --parallel 12
# or, its side alone in the background while the call goes on (its 1M steps outlast a call): tools/cleanrl_peer.sh.
# CleanRL pins mujoco<=2.3.3, which has no wheel for the machine's Python 3.12: its v4 tasks run on .gpu/'s mujoco
# 3.3.7 (tools/stage_gpu_extras.sh). Checked on the 2-core VM the same way (gymnasium 0.29.1, mujoco 3.3.7, torch).
set -euo pipefail
[ -n "${CLEANRL_CHECKOUT:-}" ] || { echo "set CLEANRL_CHECKOUT to a checkout of github.com/vwxyzjn/cleanrl"; exit 1; }
rm -rf .gpu-cleanrl && mkdir -p .gpu-cleanrl/wheels .gpu-cleanrl/cleanrl
cp "$CLEANRL_CHECKOUT/cleanrl/ppo_continuous_action.py" .gpu-cleanrl/cleanrl/
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  -d .gpu-cleanrl/wheels gymnasium==0.29.1 tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.1
# the script's Python: the machine's python3 with these wheels ahead of .gpu's gymnasium 1.4 (installed once)
cat > .gpu-cleanrl/python <<'SH'
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
[ -f /tmp/site-cleanrl/.done ] || { python3 -m pip install -q --no-index --no-deps --no-compile \
  --target /tmp/site-cleanrl "$here"/wheels/*.whl >/dev/null 2>&1 && touch /tmp/site-cleanrl/.done; }
PYTHONPATH=/tmp/site-cleanrl${PYTHONPATH:+:$PYTHONPATH} exec python3 "$@"
SH
chmod +x .gpu-cleanrl/python
du -sh .gpu-cleanrl
