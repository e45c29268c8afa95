"""Where the CUDA trainer's time per update goes, for one config (default: the best CartPole
time-to-solve config of a CartPole sweep): start-up, the first two iterations (eager, then graph capture),
the training loop's wall time per call (rollout, update, pop_episodes), the rollout and update graphs'
GPU time replayed back to back (CUDA events), and the graphs' node counts. Prints a table and writes
benchmarks/results/update_profile<tag>.json (or --out).

    python benchmarks/update_profile.py [--updates 50] [--rollout auto|gemm|thread|warp] [--set env.num_envs=4096 ...]
    python benchmarks/update_profile.py --breakdown     # also the GPU time of each operation of a rollout and an update
    python benchmarks/update_profile.py --overlap --set train.async=true ...   # the two graphs alone and together
    nsys profile --capture-range=cudaProfilerApi --cuda-graph-trace=node python benchmarks/update_profile.py --nsys
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep import parse_assignments  # noqa: E402
from train_speed import fastvec_config  # noqa: E402

CARTPOLE = {"policy.kind": "mlp", "policy.hidden": 64, "policy.layers": 2, "train.total_timesteps": 20_000_000,
            "env.num_envs": 1024, "train.horizon": 32, "train.bptt_horizon": 32, "train.update_epochs": 2,
            "train.learning_rate": 0.01, "train.minibatch_size": 16384}
NODE_TYPES = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty"}


def graph_nodes(graph) -> dict:
    """{node type: count} of a captured CudaGraph (cuGraphGetNodes, cuGraphNodeGetType)."""
    from fastvec.native.graphs import call
    count = ctypes.c_size_t(0)
    call("cuGraphGetNodes", graph._graph, None, ctypes.byref(count))
    nodes = (ctypes.c_void_p * count.value)()
    call("cuGraphGetNodes", graph._graph, nodes, ctypes.byref(count))
    out = {}
    for node in nodes:
        kind = ctypes.c_int(0)
        call("cuGraphNodeGetType", ctypes.c_void_p(node), ctypes.byref(kind))
        name = NODE_TYPES.get(kind.value, str(kind.value))
        out[name] = out.get(name, 0) + 1
    return out


def replay_ms(cuda, stream, graph, times: int) -> list[float]:
    """GPU milliseconds of `times` back-to-back replays of graph (events between them, one sync at the end)."""
    events = [cuda.Event() for _ in range(times + 1)]
    events[0].record(stream)
    for i in range(times):
        graph.launch()
        events[i + 1].record(stream)
    stream.synchronize()
    return [events[i + 1].time_since(events[i]) for i in range(times)]


def overlap_ms(cuda, trainer, times: int = 10) -> dict:
    """With train.async: the GPU milliseconds of a rollout graph (slot 0, actor stream) and an update graph
    (slot 1, learner stream), each replayed alone and then both launched together (each timed from the
    common start to its own end; medians over `times`), to see how much the two overlap on the GPU."""
    rollout, update = trainer.collector.graphs[0], trainer.updater.graphs[1]
    actor, learner = trainer.actor.stream, trainer.stream
    out = {"rollout_alone": statistics.median(replay_ms(cuda, actor, rollout, times)),
           "update_alone": statistics.median(replay_ms(cuda, learner, update, times))}
    rollout_t, update_t, both_t = [], [], []
    for _ in range(times):
        start, r_end, u_end = cuda.Event(), cuda.Event(), cuda.Event()
        start.record(learner)
        actor.wait_for_event(start)
        update.launch()
        rollout.launch()
        u_end.record(learner)
        r_end.record(actor)
        actor.synchronize()
        learner.synchronize()
        rollout_t.append(r_end.time_since(start))
        update_t.append(u_end.time_since(start))
        both_t.append(max(rollout_t[-1], update_t[-1]))
    out.update(rollout_together=statistics.median(rollout_t), update_together=statistics.median(update_t),
               both_together=statistics.median(both_t))
    return {k: round(v, 4) for k, v in out.items()}


def graph_breakdown(k, blas, stream, record, replays: int = 5) -> list[dict]:
    """GPU time of each operation that record() enqueues through launcher k and cuBLAS blas on stream (no
    nsys needed): captured again with an event record node after every kernel launch and cuBLAS call
    (cuEventRecordWithFlags, EXTERNAL), replayed, and the time between consecutive events summed per
    operation name (median over the replays). Copies count toward the operation after them."""
    from fastvec.native.graphs import CudaGraph, call
    pycuda_stream, stream = stream, stream.handle
    events, labels = [], []

    def mark(label):
        event = ctypes.c_void_p()
        call("cuEventCreate", ctypes.byref(event), ctypes.c_uint(0))
        call("cuEventRecordWithFlags", event, ctypes.c_void_p(stream), ctypes.c_uint(1))
        events.append(event)
        labels.append(label)

    originals = {name: getattr(k, name) for name in ("launch", "launch_grid", "launch_block", "launch_shared")}
    originals["matmul"] = blas.matmul

    def wrap(name, label_of):
        def call_and_mark(*args, **kwargs):
            originals[name](*args, **kwargs)
            mark(label_of(args))
        return call_and_mark

    graph = CudaGraph(stream)
    try:
        for name in ("launch", "launch_grid", "launch_block", "launch_shared"):
            setattr(k, name, wrap(name, lambda args: args[0]))
        blas.matmul = wrap("matmul", lambda args: f"gemm {args[3]}x{args[4]}x{args[5]}")
        with graph.capture():
            mark("start")
            record()
    finally:
        for name in ("launch", "launch_grid", "launch_block", "launch_shared"):
            setattr(k, name, originals[name])
        blas.matmul = originals["matmul"]
    per_replay = []
    for _ in range(replays):
        graph.launch()
        pycuda_stream.synchronize()
        times = {}
        for i in range(1, len(events)):
            elapsed = ctypes.c_float()
            call("cuEventElapsedTime", ctypes.byref(elapsed), events[i - 1], events[i])
            entry = times.setdefault(labels[i], [0.0, 0])
            entry[0] += elapsed.value
            entry[1] += 1
        per_replay.append(times)
    graph.close()
    for event in events:
        call("cuEventDestroy_v2", event)
    rows = [{"op": label, "count": per_replay[0][label][1],
             "ms": round(statistics.median(t[label][0] for t in per_replay), 4)} for label in per_replay[0]]
    return sorted(rows, key=lambda r: -r["ms"])


def ms(seconds: float) -> float:
    return round(seconds * 1e3, 4)


def profiled_trainer(config: dict, rollout: str, warp_block: int = 0):
    """A CudaTrainer for config with the rollout path forced (or "auto") and the warp-per-env rollout's block
    size, and its start-up seconds."""
    from fastvec.trainer import run
    from fastvec.trainer.cuda.plan import Choices
    from fastvec.trainer.cuda.trainer import CudaTrainer
    from fastvec.trainer.resolve import make_policy_spec
    t0 = time.perf_counter()
    batch = run.make_batch(config)
    spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions)
    trainer = CudaTrainer(config, batch, spec, choices=Choices(rollout=rollout, warp_block=warp_block))
    return trainer, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="cartpole")
    parser.add_argument("--set", nargs="*", default=[], help="section.key=value over the CartPole config")
    parser.add_argument("--updates", type=int, default=50, help="timed training-loop iterations")
    parser.add_argument("--replays", type=int, default=20, help="back-to-back replays of each graph")
    parser.add_argument("--rollout", default="auto", choices=["auto", "gemm", "thread", "warp"],
                        help="the rollout's policy step (plan.Choices.rollout)")
    parser.add_argument("--warp-block", type=int, default=0,
                        help="threads per block of the warp-per-env rollout (plan.Choices.warp_block; 0: auto)")
    parser.add_argument("--nsys", action="store_true",
                        help="bracket the update-graph replays with cuProfilerStart/Stop")
    parser.add_argument("--breakdown", action="store_true",
                        help="GPU time per operation of one rollout and one update (event nodes)")
    parser.add_argument("--overlap", action="store_true",
                        help="with train.async: a rollout and an update graph alone and launched together")
    parser.add_argument("--tag", default="")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    overrides = {**(CARTPOLE if args.env == "cartpole" else {}), **parse_assignments(args.set, multi=False)}
    config = fastvec_config(args.env, overrides)
    trainer, startup = profiled_trainer(config, args.rollout, args.warp_block)
    cuda, stream = trainer.cuda, trainer.stream
    num_updates = math.ceil(config["train"]["total_timesteps"] / (trainer.horizon * trainer.num_envs))
    result = {"env": args.env, "overrides": overrides, "rollout": trainer.plan.rollout, "trainer": trainer.describe(),
              "params": trainer.layout.size, "steps_per_update": trainer.horizon * trainer.num_envs,
              "startup_ms": ms(startup)}
    if hasattr(trainer, "warm_up"):  # start-up work done before training (graphs captured, state restored)
        t0 = time.perf_counter()
        trainer.warm_up(num_updates)
        result["warm_up_ms"] = ms(time.perf_counter() - t0)

    def iteration() -> dict:
        t0 = time.perf_counter()
        trainer.rollout()
        t1 = time.perf_counter()
        trainer.update(num_updates)
        t2 = time.perf_counter()
        trainer.pop_episodes()
        t3 = time.perf_counter()
        return {"rollout": t1 - t0, "update": t2 - t1, "pop_episodes": t3 - t2, "total": t3 - t0}

    first = [iteration() for _ in range(2)]
    result["first_two_ms"] = [{k: ms(v) for k, v in it.items()} for it in first]
    loop = [iteration() for _ in range(args.updates)]
    result["loop_ms_median"] = {k: ms(statistics.median(it[k] for it in loop)) for k in loop[0]}
    result["loop_ms_mean"] = {k: ms(statistics.fmean(it[k] for it in loop)) for k in loop[0]}

    rollout_graph, update_graph = trainer.collector.graphs[0], trainer.updater.graphs[0]
    result["rollout_graph_nodes"] = graph_nodes(rollout_graph)
    result["update_graph_nodes"] = graph_nodes(update_graph)
    result["rollout_graph_gpu_ms"] = round(statistics.median(replay_ms(cuda, stream, rollout_graph, args.replays)), 4)
    if args.nsys:
        from fastvec.native.graphs import call
        call("cuProfilerStart")
    result["update_graph_gpu_ms"] = round(statistics.median(replay_ms(cuda, stream, update_graph, args.replays)), 4)
    if args.nsys:
        call("cuProfilerStop")
    gpu = result["rollout_graph_gpu_ms"] + result["update_graph_gpu_ms"]
    result["host_overhead_ms"] = round(result["loop_ms_median"]["total"] - gpu, 4)
    if args.overlap:
        result["overlap_ms"] = overlap_ms(cuda, trainer)
    if args.breakdown:
        records = {"rollout": (trainer.actor.k, trainer.actor.blas, trainer.actor.stream,
                               lambda: trainer.rollout_path.record(0)),
                   "update": (trainer.k, trainer.blas, trainer.stream, lambda: trainer.updater.record(num_updates, 0))}
        for name, (k, blas, stream_of, record) in records.items():
            try:
                result[f"{name}_breakdown"] = graph_breakdown(k, blas, stream_of, record)
            except Exception as err:  # a profiling aid only: say why and keep the rest
                result[f"{name}_breakdown_error"] = repr(err)
    trainer.close()

    print(f"{args.env} {overrides} {result['trainer']}, "
          f"P={result['params']}, {result['steps_per_update']} steps/update")
    warm = f", warm-up {result['warm_up_ms']:.1f} ms" if "warm_up_ms" in result else ""
    print(f"start-up {result['startup_ms']:.1f} ms{warm}")
    for i, it in enumerate(result["first_two_ms"]):
        print(f"iteration {i + 1}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in it.items()))
    print(f"{'per update (median of ' + str(args.updates) + ')':<34} {'ms':>8}")
    for k, v in result["loop_ms_median"].items():
        print(f"  wall {k:<27} {v:>8.3f}")
    for name in ("rollout", "update"):
        print(f"  {name + ' graph on the GPU':<32} {result[name + '_graph_gpu_ms']:>8.3f}   "
              f"nodes {result[name + '_graph_nodes']}")
    print(f"  host and gaps (wall - GPU)       {result['host_overhead_ms']:>8.3f}")
    if "overlap_ms" in result:
        ov = result["overlap_ms"]
        print(f"rollout graph alone {ov['rollout_alone']:.3f} ms, update graph alone {ov['update_alone']:.3f} ms; "
              f"launched together: rollout done after {ov['rollout_together']:.3f} ms, update after "
              f"{ov['update_together']:.3f} ms, both after {ov['both_together']:.3f} ms")
    for name in ("rollout", "update"):
        if f"{name}_breakdown" in result:
            rows = result[f"{name}_breakdown"]
            print(f"one {name}, GPU time per operation (event nodes; total {sum(r['ms'] for r in rows):.3f} ms):")
            for r in rows:
                print(f"  {r['op']:<40} x{r['count']:<4} {r['ms']:>8.4f} ms")
        elif f"{name}_breakdown_error" in result:
            print(f"{name} breakdown failed: {result[name + '_breakdown_error']}")
    path = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"update_profile{args.tag}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
