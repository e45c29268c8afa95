#!/usr/bin/env bash
# On the GPU machine, from the repo root, after `source .gpu/remote.sh` (carry .gpu and .gpu-cleanrl, which
# tools/stage_cleanrl.sh builds): CleanRL's side of benchmarks/peers/cleanrl_mujoco.py, which takes longer than one
# call may run. First CleanRL's device is checked (Hopper, 6,144 steps with --cuda and --no-cuda side by side), then,
# if 1M steps at the faster rate fit the seconds given as the first argument, `cleanrl_mujoco.py --cleanrl-only` starts
# in a process session of its own (it outlives the call while the machine stays lent), a run a core on the cores given
# (default 0-11: the 12 runs of four tasks x 3 seeds), for the tasks given (default: the script's four), leaving the
# other cores for fastvec's side (`cleanrl_mujoco.py --fastvec-only` under taskset). It writes /tmp/clr/peer.json
# after each run; a later call copies it out:
#   bash tools/cleanrl_peer.sh 1300
#   bash tools/cleanrl_peer.sh 1300 0-5 halfcheetah ant
#   ... later: cp /tmp/clr/peer.json /tmp/clr/log.txt $OUT/
set -uo pipefail
root=$PWD
cores=${2:-0-11}
tasks=("${@:3}")
parallel=$(python3 -c "import sys; print(sum(int(r.split('-')[-1]) - int(r.split('-')[0]) + 1
                                          for r in sys.argv[1].split(',')))" "$cores") || exit 1  # cores in 0-5,8
rm -rf /tmp/gcl /tmp/clr && cp -r .gpu-cleanrl /tmp/gcl && mkdir -p /tmp/clr && cd /tmp/clr || exit 1
/tmp/gcl/python -c "import gymnasium, torch; print('CleanRL side: gymnasium', gymnasium.__version__,
                                                   'torch', torch.__version__)"
for device in cuda no-cuda; do  # one core each, at the same time
  OMP_NUM_THREADS=1 timeout 120 taskset -c "$([ $device = cuda ] && echo 0 || echo 1)" /tmp/gcl/python \
    /tmp/gcl/cleanrl/ppo_continuous_action.py --env-id Hopper-v4 --total-timesteps 6144 --$device \
    > "/tmp/clr/check_$device.txt" 2>&1 &
done
wait
rate() { grep -E "^SPS" "/tmp/clr/check_$1.txt" | tail -1 | cut -d' ' -f2; }
cuda=$(rate cuda); cpu=$(rate no-cuda)
flag=--no-cuda; [ "${cuda:-0}" -gt "${cpu:-0}" ] && flag=--cuda
best=$(( ${cuda:-0} > ${cpu:-0} ? ${cuda:-0} : ${cpu:-0} ))
need=$(( best > 0 ? 1150000 / best : 999999 ))  # 1M steps and 15% for the processes at once
echo "CleanRL steps/s: --cuda ${cuda:-none}, --no-cuda ${cpu:-none}"
echo "with $flag 1M steps take about $need s (${1:-0} s given)"
[ "$need" -lt "${1:-0}" ] || { echo "not started: it would not finish"; exit 0; }
cd "$root" || exit 1
setsid nohup taskset -c "$cores" python3 benchmarks/peers/cleanrl_mujoco.py --cleanrl /tmp/gcl \
  --cleanrl-python /tmp/gcl/python --cleanrl-only --parallel "$parallel" --cleanrl-args=$flag --out /tmp/clr/peer.json \
  ${tasks[@]:+--tasks "${tasks[@]}"} > /tmp/clr/log.txt 2>&1 < /dev/null &
sleep 5
echo "started on cores $cores: $(pgrep -fc ppo_continuous_action) CleanRL processes (--parallel $parallel)"
