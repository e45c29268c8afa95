"""Builds and runs cartpole_layout.c (a lab measurement: CartPole's float64 step pass with the state as
array of slots or structure of arrays, exact or with the divisions by 1.1 as products), with fastvec's CPU
flags (cpu.C_FLAGS without -shared, cpu.simd_flags, cpu.native_arch).

    python benchmarks/lab/cartpole_layout.py [--runs 5] [--samples 200] [--steps 10] [--num-envs 4096]
    python benchmarks/lab/cartpole_layout.py --vec-report     # which loops vectorised (-fopt-info-vec)
    python benchmarks/lab/cartpole_layout.py --asm out.s      # the assembly

Runs the binary --runs times in a row (the VM's speed flips between two levels; each run interleaves
all variants) and prints each run's table, then the range of the runs' medians per variant.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from fastvec.native import NATIVE_DIR, cpu

LAB_DIR = Path(__file__).resolve().parent
SRC = LAB_DIR / "cartpole_layout.c"


def flags(cc: str) -> list[str]:
    base = [f for f in cpu.C_FLAGS if f not in ("-shared", "-std=c99")]
    # -std=gnu11 rather than c99: the lab file uses aligned_alloc and clock_gettime
    return base + ["-std=gnu11"] + cpu.simd_flags(cc) + cpu.native_arch(cc)[0]


def build(out: Path, extra: list[str] | None = None) -> subprocess.CompletedProcess:
    cc = os.environ.get("CC", "cc")
    cmd = [cc, *flags(cc), *(extra or []), f"-I{NATIVE_DIR}", str(SRC), "-o", str(out), "-lm"]
    print("build:", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, capture_output=True, text=True, check=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--vec-report", action="store_true")
    ap.add_argument("--asm", type=Path)
    ap.add_argument("--extra", default="", help="extra compiler flags, e.g. '-mtune-ctrl=use_gather'")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "cartpole_layout"
        if args.vec_report:
            proc = build(exe, args.extra.split() + ["-fopt-info-vec-optimized", "-fopt-info-vec-missed"])
            for line in proc.stderr.splitlines():
                if "cartpole_layout.c" in line and ("loop vectorized" in line or "not vectorized: " in line) \
                        and "couldn't vectorize loop" not in line:
                    print(line.replace(str(LAB_DIR) + "/", ""))
            return
        if args.asm:
            cc = os.environ.get("CC", "cc")
            subprocess.run([cc, *flags(cc), *args.extra.split(), f"-I{NATIVE_DIR}", "-S", str(SRC), "-o", str(args.asm)], check=True)
            return
        build(exe, args.extra.split())
        stats: dict[str, list[tuple[float, float, float]]] = {}
        for run in range(args.runs):
            out = subprocess.run([str(exe), str(args.num_envs), str(args.samples), str(args.steps), "0"],
                                 capture_output=True, text=True, check=True).stdout
            print(f"--- run {run + 1}/{args.runs}")
            print(out if run == 0 else "\n".join(l for l in out.splitlines() if not l.startswith("check")))
            for line in out.splitlines():
                m = re.match(r"^((?:aos|soa)\S*\s+\S+\s+\S+)\s+" + r"\s+".join([r"([\d.]+)"] * 7), line)
                if m:  # p10, median, paired ratio
                    stats.setdefault(m.group(1), []).append((float(m.group(3)), float(m.group(4)), float(m.group(8))))
        print(f"--- over the {args.runs} runs: TSC ticks per env-step (p10 range, median range), ratio to aos_real "
              "(median of paired per-round ratios, range over runs)")
        for name, vals in stats.items():
            p10, med, ratio = zip(*vals)
            print(f"{name:22s} p10 {min(p10):6.2f} .. {max(p10):6.2f}   median {min(med):6.2f} .. {max(med):6.2f}"
                  f"   vs aos_real {min(ratio):5.3f} .. {max(ratio):5.3f}")

if __name__ == "__main__":
    main()
