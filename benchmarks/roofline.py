"""Rooflines of what the GPU benchmarks measured: how far each figure is from the bound its bytes or FLOPs put on it.

- Env steps through the GPU backend's step() (benchmarks/results/env_steps_gpu.json, minatar_gpu.json): the bytes
  one step of one env must move (slots_gpu.h's count, for a step that neither ends nor resets an episode: the
  actions read, the State and the episode book read and written, the rewards and observations written), the bound
  that HBM bandwidth puts on env steps/s, and the fraction of it reached. An episode's end adds its flags and
  episode outputs (and their zeros the step after), a reset the RNG's 32 bytes read and written.
- The fused trainer (benchmarks/results/train_speed_scaling.json): FLOPs per agent step at each model size, 2P for
  the rollout's forward and 6P for the update's forward and backward (one epoch; P the parameters, nearly all of
  them in weight matrices, each used once a row), the bound at the GPU's bf16 GEMM rate and the fraction reached,
  whole and by part.

The sizes come from the envs' own CPU builds (sizeof(State) and the rest); nothing runs on a GPU. Prints the
tables and writes benchmarks/results/roofline.json (or --out).

    python benchmarks/roofline.py [--bandwidth 4.3e12] [--bf16-flops 7.9e14]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
sys.path.insert(0, str(ROOT))

# The figure's label in its JSON -> (registry name, its parameters)
ENVS = {"CartPole": ("cartpole", {}), "CartPole float32": ("cartpole", {"float32": 1}),
        "Breakout": ("breakout", {}), "Asterix": ("asterix-minatar", {}), "Breakout-MinAtar": ("breakout-minatar", {}),
        "Freeway": ("freeway-minatar", {}), "Seaquest": ("seaquest-minatar", {}),
        "SpaceInvaders": ("spaceinvaders-minatar", {})}
ACTION_BYTES = 8  # step() was timed with int64 actions already on the device
REWARD_BYTES = 4


def env_sizes(name: str, params: dict) -> dict:
    """sizeof(State), the observation's bytes, the action values and the agents of one env, from its CPU build
    (the GPU build's State is the same size: cuda_build checks the slot layouts agree)."""
    from fastvec import native
    from fastvec.native import cpu

    env = cpu.load(native.source_path(name), tuple(sorted(native.resolve_defines(name, params).items())))
    return {"state_bytes": env.lib.fv_state_size(), "action_values": env.num_agents * env.action_dims,
            "obs_bytes": env.num_agents * env.obs_size * env.obs_dtype.itemsize, "agents": env.num_agents}


def step_bytes(sizes: dict) -> int:
    """Bytes one env's step() moves when it neither ends nor resets an episode (slots_gpu.h): its actions, its
    State and its book (an episode return per agent and a flags word) each read and written, its rewards and
    observations written."""
    book = 4 * sizes["agents"] + 4
    return (ACTION_BYTES * sizes["action_values"] + 2 * sizes["state_bytes"] + 2 * book
            + REWARD_BYTES * sizes["agents"] + sizes["obs_bytes"])


def measured_steps(results: Path) -> list[tuple[str, int, float, str]]:
    """(label, envs, env steps/s, source file) of every GPU step() figure in the results."""
    found = []
    gpu = json.loads((results / "env_steps_gpu.json").read_text())
    for row in gpu["rows"]:
        for label in ("CartPole", "CartPole float32", "Breakout"):
            value = row.get(f"fastvec {label} step()")
            if value is not None:
                found.append((label, row["num_envs"], value, "env_steps_gpu.json"))
    minatar = json.loads((results / "minatar_gpu.json").read_text())
    for row in minatar["rows"]:
        label = "Breakout-MinAtar" if row["game"] == "Breakout" else row["game"]
        found.append((label, row["num_envs"], row["fastvec step()"], "minatar_gpu.json"))
    return found


def trainer_rows(results: Path, bf16_flops: float) -> list[dict]:
    rows = []
    for r in json.loads((results / "train_speed_scaling.json").read_text())["rows"]:
        p = r["params"]
        whole = 8 * p * r["sps"]
        rows.append({"hidden": r["hidden"], "layers": r["layers"], "params": p, "optimizer": r["optimizer"],
                     "async": r["is_async"], "flops_per_step": 8 * p, "sps": r["sps"], "tflops": whole / 1e12,
                     "fraction": whole / bf16_flops,
                     # by part only where the parts ran one after the other (async overlaps them, and its rollout
                     # time is the launches')
                     "rollout_fraction": None if r["is_async"] else 2 * p * r["rollout_sps"] / bf16_flops,
                     "update_fraction": None if r["is_async"] else 6 * p * r["update_sps"] / bf16_flops})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bandwidth", type=float, default=4.3e12, help="HBM bytes/s (the H200's measured copy rate)")
    parser.add_argument("--bf16-flops", type=float, default=7.9e14, help="bf16 GEMM FLOP/s (the H200's, cuBLAS)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--out", type=Path, default=RESULTS / "roofline.json")
    args = parser.parse_args(argv)

    sizes = {label: env_sizes(*ENVS[label]) for label in ENVS}
    envs = []
    print(f"{'env':<18} {'envs':>10} {'bytes':>6} {'bound G/s':>10} {'measured':>9} {'fraction':>8}")
    for label, n, rate, source in measured_steps(args.results):
        moved = step_bytes(sizes[label])
        bound = args.bandwidth / moved
        envs.append({"env": label, "num_envs": n, "bytes_per_step": moved, **sizes[label], "bound": bound,
                     "measured": rate, "fraction": rate / bound, "source": source})
        print(f"{label:<18} {n:>10,} {moved:>6} {bound / 1e9:>10.1f} {rate / 1e9:>9.2f} {rate / bound:>8.0%}")
    trainer = trainer_rows(args.results, args.bf16_flops)
    print(f"\n{'model':<10} {'params':>10} {'opt':>5} {'async':>5} {'FLOP/step':>10} {'TFLOP/s':>8} {'fraction':>8}")
    for t in trainer:
        print(f"{t['hidden']}x{t['layers']:<7} {t['params']:>10,} {t['optimizer']:>5} {str(t['async']):>5} "
              f"{t['flops_per_step']:>10,} {t['tflops']:>8.1f} {t['fraction']:>8.1%}")
    out = {"bandwidth": args.bandwidth, "bf16_flops": args.bf16_flops, "action_bytes": ACTION_BYTES,
           "sources": {name: json.loads((args.results / name).read_text()).get("date") for name in
                       ("env_steps_gpu.json", "minatar_gpu.json", "train_speed_scaling.json")},
           "envs": envs, "trainer": trainer}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
