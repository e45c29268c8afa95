"""The GPU half of a mutation sample: the mutants `tools/mutation.py` reports as GPU-only, each run on the GPU
machine against the test files that stand guard over its file (their @pytest.mark.gpu tests and the CPU ones).
The machine needs neither git nor cosmic-ray: `export` applies the mutants here and ships each mutated file's
text. Usage: docs/testing.md.

    python tools/mutation_gpu.py export REPORT.json --out .gpu/mutants              # here
    python3 tools/mutation_gpu.py run .gpu/mutants --jobs 3 --json $OUT/gpu.json    # on the GPU machine
    python tools/mutation.py --report REPORT.json gpu.json                           # both halves in one table
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation import (C_SOURCES, REPO, Mutant, TreePool, apply_mutant, c_mutants, in_nvcc_branch,  # noqa: E402
                      load_listed, py_mutants, record_outcome, run_tests, snapshot)

_NATIVE = ("tests/native/test_cuda_backend.py", "tests/native/test_backend.py", "tests/native/test_spaces_gpu.py",
           "tests/native/test_classic_control_gpu.py", "tests/native/test_minatar_gpu.py",
           "tests/wrappers/test_pettingzoo_gpu.py", "tests/wrappers/test_integrations.py",
           "tests/wrappers/test_pettingzoo.py", "tests/mpe/test_mpe_gpu.py", "tests/smax/test_smax_gpu.py",
           "tests/native/test_gpu_launch_edges.py", "tests/native/test_gpu_stream_order_edges.py",
           "tests/wrappers/test_pettingzoo_gpu_rows_edges.py", "tests/native/test_cuda_batch_rollout_host_logic.py",
           "tests/native/test_device_view_dlpack_edges.py", "tests/native/test_cuda_batch_action_views.py",
           "tests/wrappers/test_game_rows_host_logic.py")
_TRAINER = ("tests/trainer/test_cuda_without_a_gpu.py", "tests/trainer/test_async.py", "tests/trainer/test_cuda.py",
            "tests/trainer/test_cuda_heads.py", "tests/trainer/test_cuda_prio.py", "tests/trainer/test_selfplay_gpu.py",
            "tests/trainer/test_cuda_teams.py", "tests/trainer/test_distributed.py", "tests/mujoco_cpu/test_train.py",
            "tests/trainer/test_nccl_bindings.py", "tests/trainer/test_cublas_bindings.py",
            "tests/trainer/test_cuda_host_side_logic.py",
            "tests/trainer/test_cuda_host_launch_bookkeeping.py",
            "tests/trainer/test_cuda_gemm_exponent_range.py", "tests/trainer/test_cuda_host_env_masks.py",
            "tests/trainer/test_cuda_two_seat_bootstrap.py", "tests/trainer/test_cuda_mirrored_constants.py",
            "tests/emulation/test_policy_kernel_edges.py", "tests/emulation/test_rollout_bootstrap_kernels.py",
            "tests/trainer/test_nccl_result_codes.py", "tests/trainer/test_cuda_mlp_backward_launches.py",
            "tests/trainer/test_cuda_rollout_slot_starts.py", "tests/trainer/test_cuda_host_plan_and_logging_edges.py",
            "tests/trainer/test_cuda_muon_host_plan.py", "tests/trainer/test_cuda_selfplay_pool_sync.py",
            "tests/trainer/test_cuda_shared_memory_sizes.py",
            "tests/trainer/test_cuda_update_enqueue_order.py")
_WARP = ("tests/mujoco_gpu",)  # needs MuJoCo Warp's site (docs/mujoco-gpu.md): `run --only-warp`

# The test files over each GPU-only file, by path prefix (the longest match wins), run whole (GPU and CPU tests) in
# this order (the broad, quick files first, so that most mutants fail early).
GPU_TESTS: dict[str, tuple[str, ...]] = {
    "fastvec/native/": _NATIVE,
    # the cubin cache's records and files, nvcc's errors, the cache's checks (a stand-in nvcc, and the real one where
    # installed: no GPU needed)
    "fastvec/native/gpu.py": (*_NATIVE, "tests/native/test_cubin_cache_records.py",
                              "tests/native/test_gpu_build_errors.py",
                              *(f"tests/native/test_build_cache.py::{name}" for name in (
                                  "test_cuda_cache_directory_is_checked_too",
                                  "test_env_file_name_never_reaches_nvcc_source", "test_bad_cubin_is_rebuilt",
                                  "test_nvcc_never_sees_an_include_directory_it_cannot_quote"))),
    # Event and CudaGraph releases against a stand-in driver
    "fastvec/native/graphs.py": (*_NATIVE, "tests/native/test_graph_and_event_release.py"),
    # resident_blocks against sm_90's occupancy rules worked by hand
    "fastvec/native/cuda_build.py": (*_NATIVE, "tests/native/test_resident_blocks_edges.py"),
    # device_view on torch's CUDA tensors (stand-ins) and host objects
    "fastvec/native/device_array.py": (*_NATIVE, "tests/native/test_device_view_torch_objects.py"),
    # GameRows and game_rows.cu's kernels, built for the CPU and launched by GameRows over host buffers
    "fastvec/native/game_rows": (*_NATIVE, "tests/emulation/test_game_rows_kernels.py"),
    "fastvec/wrappers/": _NATIVE,
    # the torch face's actions (CPU envs given any torch tensor, a stand-in GPU env given one in place)
    "fastvec/wrappers/torch.py": (*_NATIVE, "tests/wrappers/test_torch_face_actions.py"),
    "fastvec/trainer/": _TRAINER,
    # the kernels compiled for the CPU (tests/emulation's harnesses include these files; _TRAINER has the policy
    # edges and the rollout bootstrap already) run after the GPU tests
    **{f"fastvec/trainer/cuda/{name}": (*_TRAINER, *(f"tests/emulation/test_{t}.py" for t in tests)) for name, tests in (
        ("common.cu", ("heads_kernels", "prio_kernel", "data_parallel_moments", "selfplay_kernels", "teams_kernels",
                       "device_env_kernels")),
        ("policy.cu", ("heads_kernels", "selfplay_kernels", "teams_kernels", "device_env_kernels",
                       "head_rollout_step")),
        ("rollout.cu", ("device_env_kernels", "teams_kernels", "team_inputs_grid", "head_rollout_step")))},
    "fastvec/native/mujoco/": _WARP,
    "fastvec/trainer/cuda/device_envs.py": _WARP,  # steps MuJoCo Warp's envs only
    # muon_stride and the Newton-Schulz layout, checked against the kernels compiled for the CPU
    "fastvec/trainer/cuda/optimizers.py": (*_TRAINER, "tests/emulation/test_newton_schulz.py"),
    # the advantage moments across ranks, launched as DataParallel launches them on the CPU build of ppo.cu
    "fastvec/trainer/cuda/data_parallel.py": (*_TRAINER, "tests/emulation/test_data_parallel_moments.py"),
    # the evaluation kernel's grid (play_layout)
    "fastvec/trainer/cuda/matches.py": (*_TRAINER, "tests/emulation/test_selfplay_kernels.py::"
                                        "test_play_layout_fills_the_sms_with_every_block_resident"),
}


def gpu_tests(rel: str) -> tuple[str, ...]:
    """The test files that stand guard over `rel`."""
    prefix = max((p for p in GPU_TESTS if rel.startswith(p)), key=len, default=None)
    if prefix is None:
        raise SystemExit(f"no GPU tests known for {rel}; add its folder to GPU_TESTS in {__file__}")
    return GPU_TESTS[prefix]


def export(report_path: Path, out: Path, source: str) -> int:
    """Apply each GPU-only mutant of the report (and each whose tests skip without a GPU) to a snapshot of
    `source`; write the mutated texts to `out`."""
    report, listed = json.loads(report_path.read_text()), load_listed()
    # "skipped": a file whose tests all skip without a GPU (MuJoCo Warp's); and a CPU survivor on a line only the GPU
    # runs (listed GPU-only, or in a branch only nvcc compiles): the GPU half must run it before the count leaves it out
    workdir = Path(tempfile.mkdtemp(prefix="mutgpu-"))
    commit = snapshot(source, workdir / "w")
    clone = workdir / "w"

    wanted = [m for m in (Mutant(**{k: v for k, v in row.items() if k != "key"}) for row in report["mutants"])
              if m.outcome in ("gpu-only", "skipped")
              or (m.outcome == "survived"
                  and (listed.get(m.key(), ("",))[0] == "gpu-only" or in_nvcc_branch(m, clone)))]
    found: dict[str, dict[tuple, Mutant]] = {}
    rows, gone = [], []
    for m in wanted:
        if m.file not in found:
            path = clone / m.file
            mutants = c_mutants(m.file, path.read_text()) if m.file.endswith(C_SOURCES) else py_mutants(m.file, path)
            found[m.file] = {x.key(): x for x in mutants}
        here = found[m.file].get(m.key())
        if here is None:  # the line changed since the sample was drawn
            gone.append(m)
            continue
        path = clone / m.file
        original = path.read_text()
        if not apply_mutant(path, original, m.file, here.spec):
            gone.append(m)
            continue
        mutated = path.read_text()
        path.write_text(original)
        rows.append({"mutant": {**asdict(m), "line": here.line, "spec": here.spec}, "tests": gpu_tests(m.file),
                     "text": mutated})
    shutil.rmtree(workdir, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutants.json").write_text(json.dumps(
        {"commit": commit, "sample": str(report_path), "seed": report.get("seed"), "rows": rows,
         "gone": [asdict(m) for m in gone]}) + "\n")
    print(f"{len(rows)} GPU-only mutants of {report_path} applied to {commit[:12]} -> {out / 'mutants.json'}; "
          f"{len(gone)} no longer in the code: {[f'{m.file}:{m.line}' for m in gone]}")
    return 0


def _keys(reports: list[Path], outcomes: tuple[str, ...] | None = None) -> set[tuple]:
    return {tuple(m["key"]) for report in reports for m in json.loads(report.read_text())["mutants"]
            if outcomes is None or m["outcome"] in outcomes}


def run(bundle: Path, jobs: int, workers: int, only_warp: bool, json_out: Path, seconds: float,
        done_before: list[Path], survivors_of: list[Path], tests: list[str] | None,
        baselines_from: list[Path] = ()) -> int:
    """Test each exported mutant in one of `jobs` copies of this tree; write a report mutation.py can merge,
    again after each mutant. No mutant starts after `seconds` (counted from the start, baselines included);
    those of `done_before` (earlier reports) are left out, so that a later call tests the rest; with
    `survivors_of`, only those reports' survivors run (against `tests` where given, e.g. the tests written after
    reading them). A selection that passed unmutated in a `baselines_from` report (an earlier call on the same
    tree) is not run again: its recorded time sets its limit."""
    start = time.perf_counter()
    data = json.loads((bundle / "mutants.json").read_text())
    done, wanted = _keys(done_before), _keys(survivors_of, ("survived",)) if survivors_of else None
    rows = [r for r in data["rows"] if (tuple(r["tests"]) == _WARP) == only_warp
            and (key := Mutant(**r["mutant"]).key()) not in done and (wanted is None or key in wanted)]
    if tests:
        rows = [{**r, "tests": list(tests)} for r in rows]
    workdir = Path(tempfile.mkdtemp(prefix="mutgpu-"))
    ignore = shutil.ignore_patterns(".git", ".gpu*", "runs", "__pycache__", ".pytest_cache", "*.egg-info")
    trees = [workdir / f"w{k}" for k in range(max(jobs, 1))]
    for tree in trees:
        shutil.copytree(REPO, tree, ignore=ignore)
    # Shared by the trees and kept for later calls on the same machine: keyed by content, locked per artefact.
    cache = Path(tempfile.gettempdir()) / "mutgpu-cache"
    pytest_workers = ["-n", str(workers)] if workers else []

    # Each selection must pass unmutated (each in its own tree, at once); its time sets its mutants' limit.
    def baseline(job: tuple[Path, tuple[str, ...]]) -> tuple[tuple[str, ...], str, float, str]:
        tree, selection = job
        t0 = time.perf_counter()
        status, out = run_tests(tree, [*pytest_workers, *selection], 1800, cache=cache)
        return selection, status, time.perf_counter() - t0, out

    passed_before = {tuple(selection.split()): took for report in baselines_from
                     for selection, took in json.loads(report.read_text()).get("baselines", {}).items()}
    selections = [t for t in dict.fromkeys(tuple(r["tests"]) for r in rows) if t not in passed_before]
    baselines = {t: passed_before[t] for t in dict.fromkeys(tuple(r["tests"]) for r in rows) if t in passed_before}
    for selection, took in baselines.items():
        print(f"baseline {took:6.1f} s passed before: {' '.join(selection)}", flush=True)
    with concurrent.futures.ThreadPoolExecutor(len(trees)) as pool:
        selection_trees = [(trees[i % len(trees)], selection) for i, selection in enumerate(selections)]
        for selection, status, took, out in pool.map(baseline, selection_trees):
            print(f"baseline {took:6.1f} s {status}: {' '.join(selection)}", flush=True)
            if status != "passed":
                print(out, file=sys.stderr)
                return 1
            baselines[selection] = took
    limits = {selection: 3 * took + 60 for selection, took in baselines.items()}  # + 60: a mutated kernel compiles again
    pool_of_trees = TreePool(trees)

    def test_one(row: dict) -> Mutant | None:
        m = Mutant(**row["mutant"])
        if time.perf_counter() - start > seconds:
            return None
        with pool_of_trees.holding(m) as (tree, path, _):
            path.write_text(row["text"])
            record_outcome(m, *run_tests(tree, [*pytest_workers, *row["tests"]], limits[tuple(row["tests"])],
                                         cache=cache))
        return m

    mutants: list[Mutant] = []
    json_out.parent.mkdir(parents=True, exist_ok=True)

    def write_report() -> None:
        json_out.write_text(json.dumps(
            {"commit": data["commit"], "sample": data["sample"], "seed": data["seed"],
             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "not_run": len(rows) - len(mutants),
             "baselines": {" ".join(selection): took for selection, took in baselines.items()},
             "mutants": [{**asdict(x), "key": list(x.key())} for x in mutants]}, indent=1) + "\n")

    write_report()  # the baselines, for --baselines-from, even if no mutant starts
    with concurrent.futures.ThreadPoolExecutor(len(trees)) as pool:
        for m in pool.map(test_one, rows):
            if m is None:
                continue
            mutants.append(m)
            print(f"[{len(mutants)}/{len(rows)}] {m.outcome:9s} {m.seconds:5.0f} s {m.file}:{m.line} {m.change}  "
                  f"`{m.source[:70]}`", flush=True)
            write_report()
    if len(mutants) < len(rows):
        print(f"{len(rows) - len(mutants)} mutants not started within {seconds:.0f} s: run again with "
              f"--done-before {json_out}")
    killed = sum(m.outcome in ("killed", "timeout") for m in mutants)
    print(f"{killed}/{len(mutants)} killed; report: {json_out}")
    for m in mutants:
        if m.outcome == "survived":
            print(f"  survived: {m.file}:{m.line} {m.change} [{m.index}] `{m.source}`")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="apply a report's GPU-only mutants here and write their texts")
    ex.add_argument("report", type=Path)
    ex.add_argument("--out", type=Path, default=REPO / ".gpu" / "mutants")
    ex.add_argument("--source", default=str(REPO), help="repository whose committed HEAD the mutants are applied to")
    rn = sub.add_parser("run", help="on the GPU machine: test each exported mutant")
    rn.add_argument("bundle", type=Path)
    rn.add_argument("--jobs", type=int, default=3, help="mutants tested at once (copies of this tree)")
    rn.add_argument("--workers", type=int, default=0, help="pytest-xdist workers per mutant (0: none)")
    rn.add_argument("--only-warp", action="store_true", help="the mutants whose tests need MuJoCo Warp's site")
    rn.add_argument("--json", type=Path, default=Path(os.environ.get("OUT", ".")) / "mutation_gpu.json")
    rn.add_argument("--seconds", type=float, default=float("inf"), help="start no mutant after this many "
                    "seconds, counted from the start (the unmutated baselines included)")
    rn.add_argument("--done-before", type=Path, nargs="*", default=[], help="earlier runs' reports: their mutants "
                    "are not run again")
    rn.add_argument("--survivors-of", type=Path, nargs="*", default=[], help="run only these reports' survivors")
    rn.add_argument("--tests", nargs="*", help="pytest arguments to run instead of each file's GPU_TESTS")
    rn.add_argument("--baselines-from", type=Path, nargs="*", default=[], help="earlier reports on this tree: "
                    "the selections that passed unmutated there are not run again")
    args = parser.parse_args(argv)
    if args.command == "export":
        return export(args.report, args.out, args.source)
    return run(args.bundle, args.jobs, args.workers, args.only_warp, args.json, args.seconds, args.done_before,
               args.survivors_of, args.tests, args.baselines_from)


if __name__ == "__main__":
    sys.exit(main())
