#!/usr/bin/env bash
# Run on the GPU machine from the repo root, after `source .gpu/remote.sh`: every test marked gpu, in 8 processes,
# except MuJoCo Warp's (tests/mujoco_gpu: their wheels travel apart, docs/mujoco-gpu.md). The log goes to
# $OUT/gpu_tests.txt (or ./gpu_tests.txt). MUJOCO_GL stays unset: EGL needs libraries the machine lacks unless
# they are carried, and no GPU test renders a MuJoCo frame. The one argument: the time limit in seconds (420).
set -o pipefail
log=${OUT:-.}/gpu_tests.txt
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
start=$(date +%s)
timeout "${1:-420}" python3 -m pytest -q -rs -m gpu -n 8 -p no:cacheprovider tests \
  --ignore=tests/mujoco_gpu > "$log" 2>&1
status=$?
echo "gpu suite: exit $status in $(( $(date +%s) - start )) s" | tee -a "$log"
grep -E "^(FAILED|ERROR)|passed|failed" "$log" | sort -u | tail -30
exit $status
