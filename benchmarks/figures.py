"""README.md's and BENCHMARKS.md's benchmark tables, rendered from benchmarks/results/*.json.

Each table sits between `<!-- figures:NAME -->` and `<!-- /figures:NAME -->`; NAME is a renderer below.
`python benchmarks/figures.py` rewrites every block; `--check` exits 1 naming the first block that differs."""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS = (ROOT / "README.md", ROOT / "BENCHMARKS.md")
BLOCK = re.compile(r"(<!-- figures:(\w+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.S)


class FigureError(Exception):
    """A JSON or a block that a table cannot be rendered from."""


class Node(dict):
    """A JSON object that names its file and key path when a key is missing."""
    where = ""

    def __missing__(self, key):
        raise FigureError(f"{self.where} has no key {key!r}: re-run the benchmark that writes it, "
                          f"or adapt its renderer in benchmarks/figures.py")


def wrap(value, where):
    if isinstance(value, dict):
        node = Node((k, wrap(v, f"{where}[{k!r}]")) for k, v in value.items())
        node.where = where
        return node
    if isinstance(value, list):
        return [wrap(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def load(results, name):
    path = Path(results) / name
    if not path.exists():
        raise FigureError(f"{path} is missing: run the benchmark that writes it (BENCHMARKS.md names the command)")
    return wrap(json.loads(path.read_text()), name)


def row_where(rows, key, value):
    """The one row of `rows` whose `key` equals `value`."""
    found = [r for r in rows if r.get(key) == value]
    if len(found) != 1:
        where = rows[0].where.rsplit("[", 1)[0] if rows else "the JSON"
        raise FigureError(f"{where}: {len(found)} rows with {key} == {value!r}, expected 1")
    return found[0]


# --- number formats --------------------------------------------------------------------------------------

def si(x):
    """3 significant digits with a K/M/G suffix: 22.5e9 -> '22.5G', 47978 -> '48.0K'."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= scale * 0.9995:
            return f"{x / scale:#.3g}".rstrip(".") + suffix
    return f"{x:#.3g}".rstrip(".")


def scaled(x, scale):
    """x / scale with 2 decimals, or 3 significant digits below 1: 66.24e9, 1e9 -> '66.24'; 1.2e8 -> '0.120'."""
    v = x / scale
    return f"{v:,.2f}" if abs(v) >= 1 else f"{v:#.3g}"


def mega(x):
    return scaled(x, 1e6) + "M"


def times(a, b):
    """The ratio a / b: one decimal below 10, whole numbers above: '2.6x', '1,265x'."""
    r = a / b
    return f"{r:.1f}x" if r < 9.95 else f"{r:,.0f}x"


def percent(p):
    return f"{100 * p:.1f}".removesuffix(".0") + "%"


def span(values, fmt):
    """'lo-hi' of the formatted values (one unit suffix), or one value when both ends read the same."""
    lo, hi = fmt(min(values)), fmt(max(values))
    if lo == hi:
        return lo
    unit = re.search(r"[^\d.]*$", hi).group()  # '2.43-2.64M', not '2.43M-2.64M'
    return f"{lo.removesuffix(unit) if unit and lo.endswith(unit) else lo}-{hi}"


def envs(n):
    return f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n:,}"


def bold(cell, on=True):
    return f"**{cell}**" if on else cell


def table(header, align, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# --- BENCHMARKS.md ---------------------------------------------------------------------------------------

def env_steps_cpu(results):
    d = load(results, "env_steps_cpu.json")
    rows = []
    for r in d["rows"]:
        sync = mega(r["gymnasium CartPole Sync"]) if "gymnasium CartPole Sync" in r else "–"
        rows.append([f"{r['num_envs']:,}", mega(r["fastvec CartPole"]), mega(r["fastvec CartPole 1 thread"]),
                     mega(r["gymnasium CartPole vector"]),
                     bold(times(r["fastvec CartPole"], r["gymnasium CartPole vector"]), r["num_envs"] == 4096),
                     sync, mega(r["fastvec Breakout"]), mega(r["fastvec Breakout 1 thread"])])
    return table(["num_envs", "fastvec CartPole", "fastvec CartPole, 1 thread", "Gymnasium CartPole-v1 vector env",
                  "ratio", "Gymnasium SyncVectorEnv", "fastvec Breakout", "fastvec Breakout, 1 thread"],
                 ["---:"] * 8, rows)


def classic_control_cpu(results):
    d = load(results, "classic_control_cpu.json")
    rows = []
    for r in d["rows"]:
        mode = "sync = SyncVectorEnv" if r["gymnasium_vector_mode"] == "sync" else "vector env"
        rows.append([r["gym_id"], mega(r["fastvec"]), f"{mega(r['gymnasium_vector'])} ({mode})",
                     bold(times(r["fastvec"], r["gymnasium_vector"]), r["env"] == "cartpole"),
                     mega(r["sync_vector_env"]), times(r["fastvec"], r["sync_vector_env"])])
    return table(["env", "fastvec", "Gymnasium vectorised", "ratio", "SyncVectorEnv", "ratio"],
                 ["---"] + ["---:"] * 5, rows)


CLASSIC_GPU_LABELS = {  # JSON "env" -> row label, in table order; the bold rows are the claims
    "cartpole": ("CartPole-v1 (float64, Gymnasium's bits)", True),
    "cartpole float32=1": ("CartPole-v1, `float32=1`", False),
    "acrobot": ("Acrobot-v1 (float64, Gymnasium's bits)", False),
    "acrobot float32=1": ("Acrobot-v1, `float32=1`", True),
    "mountaincar": ("MountainCar-v0", False),
    "mountaincarcontinuous": ("MountainCarContinuous-v0", False),
    "pendulum": ("Pendulum-v1", False),
    "mountaincar float32=1": ("MountainCar-v0, `float32=1`", False),
    "mountaincarcontinuous float32=1": ("MountainCarContinuous-v0, `float32=1`", False),
    "pendulum float32=1": ("Pendulum-v1, `float32=1`", False),
}


def classic_control_gpu(results):
    return classic_control_gpu_table(results, "classic_control_gpu.json")


def classic_control_gpu_h100(results):
    return classic_control_gpu_table(results, "classic_control_gpu_h100.json")


def classic_control_gpu_table(results, name):
    d = load(results, name)
    unlabelled = [r["env"] for r in d["rows"] if r["env"] not in CLASSIC_GPU_LABELS]
    if unlabelled:
        raise FigureError(f"{name}: rows {unlabelled} have no label: add them to CLASSIC_GPU_LABELS")
    sizes = sorted({r["num_envs"] for r in d["rows"]})
    rows = []
    measured = {r["env"] for r in d["rows"]}
    for env, (label, claim) in CLASSIC_GPU_LABELS.items():
        if env not in measured:  # a variant this run did not measure
            continue
        cells = [label]
        for n in sizes:
            r = row_where([r for r in d["rows"] if r["num_envs"] == n], "env", env)
            cells += [scaled(r["fastvec_rollout"], 1e9), scaled(r["gymnax_scan"], 1e9),
                      bold(times(r["fastvec_rollout"], r["gymnax_scan"]), claim and n == sizes[-1])]
        cells.append(str(r["gymnax_warmup_calls"]))
        rows.append(cells)
    header = ["env"] + [c for n in sizes for c in (f"fastvec, {envs(n)}", f"gymnax, {envs(n)}", "ratio")]
    return table(header + ["gymnax warm-up calls"], ["---"] + ["---:"] * (3 * len(sizes) + 1), rows)


def minatar_cpu(results):
    d = load(results, "minatar_cpu.json")
    rows = []
    for r in d["rows"]:
        rows.append([r["game"], mega(r["fastvec"]), mega(r["minatar SyncVectorEnv"]),
                     times(r["fastvec"], r["minatar SyncVectorEnv"]), mega(r["minatar loop"]),
                     times(r["fastvec"], r["minatar loop"])])
    return table(["game", "fastvec", "minatar, SyncVectorEnv", "ratio", "minatar, own loop", "ratio"],
                 ["---"] + ["---:"] * 5, rows)


def mujoco_cpu_table(d):
    """fastvec's MuJoCo batch beside Gymnasium, EnvPool and `mujoco.rollout` (mujoco_steps.py's JSON); a peer
    that was not run (its median NaN) shows as a dash."""
    k = "{:,.0f}".format
    rows = []
    for r in d["rows"]:
        med = {m: r[m]["median"] for m in ("fastvec", "fastvec_1_thread", "sync", "async", "envpool",
                                           "mujoco_rollout")}
        envpool = med["envpool"] == med["envpool"]  # NaN where EnvPool was not run
        rows.append([r["task"], f"{r['num_envs']:,}", k(med["fastvec"]), k(med["fastvec_1_thread"]), k(med["sync"]),
                     k(med["async"]), k(med["envpool"]) if envpool else "–", k(med["mujoco_rollout"]),
                     times(med["fastvec"], med["async"]), times(med["fastvec"], med["envpool"]) if envpool else "–",
                     f"{med['fastvec'] / med['mujoco_rollout']:.2f}"])
    envpool = f"EnvPool {d['envpool']} (v4)" if d.get("envpool") else "EnvPool"
    return table(["task", "envs", "fastvec", "fastvec, 1 thread", "Gymnasium sync", "Gymnasium async", envpool,
                  "`mujoco.rollout`", "vs async", "vs EnvPool", "of `mujoco.rollout`"], ["---"] + ["---:"] * 10, rows)


def mujoco_cpu(results):
    return mujoco_cpu_table(load(results, "mujoco_cpu.json"))


def mujoco_cpu_16core(results):
    return mujoco_cpu_table(load(results, "mujoco_cpu_16core.json"))


def mujoco_gpu(results):
    d = load(results, "mujoco_gpu.json")
    med = statistics.median
    with_mjx = any("mjx_loop" in r for r in d["rows"])  # MJX's columns where the run measured it
    rows = []
    for r in d["rows"]:
        if "error" in r:
            reason = r["error"].split(": ", 1)[1].split(";")[0]
            rows.append([r["task"], f"{r['num_envs']:,}", f"refused: {reason}"] + [""] * (6 if with_mjx else 4))
            continue
        graph, eager, own = (med(r[k]["physics_steps_per_s"]) for k in ("fastvec_graph", "fastvec_step", "mjwarp_loop"))
        row = [r["task"], f"{r['num_envs']:,}", si(graph), si(med(r["fastvec_graph"]["env_steps_per_s"])),
               si(eager), si(own), bold(f"{graph / own:.2f}", graph / own >= d["claim"])]
        if with_mjx:
            mjx = r.get("mjx_loop", {"error": "not run"})
            if "error" in mjx:
                row += [f"failed: {mjx['error']}", ""]
            else:
                peer = med(mjx["physics_steps_per_s"])
                row += [si(peer), f"{graph / peer:.1f}"]
        rows.append(row)
    head = ["task", "worlds", "fastvec, graph: physics steps/s", "env steps/s", "fastvec, eager step()",
            "MJWarp's own loop", "fastvec / MJWarp"] + (["MJX (JAX)", "fastvec / MJX"] if with_mjx else [])
    return table(head, ["---"] + ["---:"] * (len(head) - 1), rows)


def roofline_envs(results):
    d = load(results, "roofline.json")
    rows = [[r["env"], f"{r['num_envs']:,}", f"{r['state_bytes']} / {r['obs_bytes']}", str(r["bytes_per_step"]),
             si(r["bound"]), si(r["measured"]), f"{100 * r['fraction']:.0f}%"]
            for r in sorted(d["envs"], key=lambda r: (r["source"], r["env"], r["num_envs"]))]
    return table(["env", "envs", "State / obs bytes", "bytes a step", "bound: steps/s", "step() measured",
                  "of the bound"], ["---"] + ["---:"] * 6, rows)


def roofline_trainer(results):
    d = load(results, "roofline.json")
    rows = [[f"{r['hidden']} x {r['layers']}", f"{r['params']:,}", r["optimizer"].capitalize(),
             "async" if r["async"] else "sync", si(r["flops_per_step"]), si(r["sps"]), f"{r['tflops']:.1f}",
             percent(r["fraction"]), *("" if r[k] is None else percent(r[k]) for k in ("rollout_fraction",
                                                                                        "update_fraction"))]
            for r in d["trainer"]]
    return table(["hidden x layers", "params", "optimizer", "mode", "FLOPs an agent step", "SPS", "TFLOP/s",
                  "of bf16 peak", "rollout alone", "update alone"], ["---:", "---:", "---", "---"] + ["---:"] * 6,
                 rows)


def cpu_steps_4096(results):
    return cpu_steps_table(load(results, "cpu_steps_4096_cpu_time.json"))


def cpu_steps_4096_avx2(results):
    return cpu_steps_table(load(results, "cpu_steps_4096_cpu_time_avx2.json"))


def cpu_steps_table(d):
    rows = []
    for r in d["rows"]:
        passed = r["ratio"] >= 1.10 and r["ratio_min"] > 1.0  # the median and every round
        rows.append([r["env"], f"{r['old_steps_per_s'] / 1e6:.2f}", f"{r['new_steps_per_s'] / 1e6:.2f}",
                     bold(f"{r['ratio']:.2f}", passed), f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f}"])
    return table(["env", "old, M/CPU-s", "new, M/CPU-s", "new / old", "per-round min-max"],
                 ["---", "---:", "---:", "---:", "---"], rows)


def minatar_gpu(results):
    d = load(results, "minatar_gpu.json")
    rows = []
    for r in d["rows"]:
        timed = "gymnax scan(100)" in r
        rows.append([r["game"], envs(r["num_envs"]), scaled(r["fastvec step()"], 1e9),
                     scaled(r["fastvec rollout(100)"], 1e9),
                     scaled(r["gymnax scan(100)"], 1e9) if timed else r["gymnax note"],
                     bold(times(r["fastvec rollout(100)"], r["gymnax scan(100)"])) if timed else "",
                     str(r["gymnax warm-up calls"]) if timed else "",
                     f"{r['fastvec state bytes per env']:,} / " + (f"{r['gymnax state bytes per env']:,.0f}" if timed
                                                                   else "-")])
    return table(["game", "envs", "fastvec `step()`", "fastvec `rollout(100)`", "gymnax scan(100)", "rollout / gymnax",
                  "gymnax warm-up calls", "state bytes per env, fastvec / gymnax"], ["---"] + ["---:"] * 7, rows)


def mujoco_gpu_train(results):
    """mujoco_gpu_train.py's invocations (runs), a row per task: each side's seconds to the target (the median of
    the host seeds' final returns), '>' where a seed never got there (its whole training time)."""
    d = load(results, "mujoco_gpu_train.json")

    def to_target(side):
        pairs = zip(side["seconds_to_target"], side["reached"])
        text = " / ".join(f"{'>' * (not ok)}{t:.1f}" for t, ok in pairs) + " s"
        if any(side.get("capped", [])):  # a run stopped by --max-seconds before its step budget: how far it got
            text += f" ({span(side['steps'], mega)} steps)"
        return text

    def ends(side):
        return "; ".join(f"{f:,.0f} ({e:,.0f})" for f, e in zip(side["final_return"], side["eval_return"]))

    rows = []
    for run in d["runs"]:
        budget = si(run["gpu_shape"]["train.total_timesteps"])
        for r in run["rows"]:
            host, gpu = r["host"], r["gpu"]
            mark = "<=" if gpu["bound"] else ">=" if host["bound"] else ""
            rows.append([r["task"], ", ".join(map(str, run["seeds"])), f"{r['target']:,.0f}", to_target(host),
                         span(host["sps"], si), ends(host), to_target(gpu), span(gpu["sps"], si), budget, ends(gpu),
                         bold(f"{mark}{r['faster']:.1f}x", not mark and r["faster"] >= 5)])
    return table(["task", "seeds", "target", "host path: to target", "host SPS", "host: final (eval)",
                  "MuJoCo Warp: to target", "MuJoCo Warp SPS", "MuJoCo Warp steps", "MuJoCo Warp: final (eval)",
                  "sooner (medians)"], ["---", "---", "---:", "---:", "---:", "---", "---:", "---:", "---:", "---",
                                        "---:"], rows)


def cleanrl_mujoco(results):
    """cleanrl_mujoco.py's rows: CleanRL's return after its 1M steps (every seed; the median is fastvec's target) and
    training time, fastvec-train's time to that return ('>T' where a seed never got there in its T seconds)."""
    d = load(results, "cleanrl_mujoco.json")
    rows, episodes = [], {x["eval_episodes"] for r in d["rows"] for x in r["fastvec"]}
    for r in d["rows"]:
        mine, peer = r["fastvec"], r["cleanrl"]
        rows.append([f"{r['cleanrl_env']} / {r['task']}", ", ".join(str(x["seed"]) for x in peer),
                     " / ".join(f"{x:,.0f}" for x in r["cleanrl_returns"]), f"{r['target_return']:,.0f}",
                     " / ".join(f"{t:,.0f}" for t in r["cleanrl_train_s"]) + " s",
                     " / ".join(bound_time(x) for x in mine) + " s", span([x["sps"] for x in mine], si),
                     seeds(mine, "eval_return", "{:,.0f}".format),
                     bold(f"{r['ratio_text']}x", not r["upper_bound"] and (r["ratio"] or 0) >= 10)])
    return table(["CleanRL task / fastvec task", "seeds", "CleanRL: return after 1M steps", "target (median)",
                  "CleanRL: training time", "fastvec: time to target", "fastvec SPS",
                  f"fastvec: eval ({' / '.join(f'{n:,}' for n in sorted(episodes))} episodes)",
                  "CleanRL's time / fastvec's (medians)"], ["---", "---", "---:", "---:", "---:", "---:", "---:",
                                                             "---:", "---:"], rows)


def teams_steps_table(d, mine_key):
    """teams_steps.py's JSON: fastvec's rate (mine_key of its fastvec entry) beside jaxmarl's, bold where >= 10x."""
    rows = []
    for r in d["rows"]:
        mine, peer = r["fastvec"][mine_key], r["jaxmarl"].get("steps_per_second")
        if peer is None:
            rows.append([r["env"], f"{r['num_envs']:,}", si(mine), f"not run: {r['jaxmarl']['skipped']}", "", ""])
            continue
        rows.append([r["env"], f"{r['num_envs']:,}", si(mine), si(peer), bold(times(mine, peer), mine >= 10 * peer),
                     str(r["jaxmarl"]["warmup_calls"])])
    return rows


def teams_gpu_table(d):
    return table(["scenario", "envs", 'fastvec `rollout("random", 100)`', "jaxmarl jit + vmap + scan(100)",
                  "fastvec / jaxmarl", "jaxmarl warm-up calls"], ["---"] + ["---:"] * 5,
                 teams_steps_table(d, "rollout"))


def teams_gpu(results):
    return teams_gpu_table(load(results, "teams_gpu.json"))


def teams_gpu_262k(results):
    return teams_gpu_table(load(results, "teams_gpu_262k.json"))


def teams_cpu(results):
    rows = teams_steps_table(load(results, "teams_cpu.json"), "step")
    return table(["scenario", "envs", "fastvec `step()`", "jaxmarl jit + vmap + scan(100)", "fastvec / jaxmarl",
                  "jaxmarl warm-up calls"], ["---"] + ["---:"] * 5, rows)


ENV_STEPS_GPU_ROWS = [  # label, JSON key, measured at 16M envs too (gymnax ran up to 1M)
    ("fastvec CartPole `step()`", "fastvec CartPole step()", True),
    ("fastvec CartPole float32 `step()`", "fastvec CartPole float32 step()", True),
    ('fastvec CartPole `rollout("random", 100)`', "fastvec CartPole rollout(100)", True),
    ('fastvec CartPole float32 `rollout("random", 100)`', "fastvec CartPole float32 rollout(100)", True),
    ("fastvec Breakout `step()`", "fastvec Breakout step()", True),
    ("fastvec Breakout `rollout(100)`", "fastvec Breakout rollout(100)", True),
    ("gymnax CartPole, jit + scan(100)", "gymnax CartPole scan(100)", False),
    ("gymnax MinAtar Breakout, jit + scan(100)", "gymnax Breakout scan(100)", False),
]
ENV_STEPS_GPU_SIZES = (1 << 20, 1 << 24)
GYMNASIUM_HOST_ENVS = 4096


def env_steps_gpu(results):
    d = load(results, "env_steps_gpu.json")
    small, large = (row_where(d["rows"], "num_envs", n) for n in ENV_STEPS_GPU_SIZES)
    top = max(large[key] for _, key, both in ENV_STEPS_GPU_ROWS if both)  # the table's largest figure, bold
    rows = []
    for label, key, both in ENV_STEPS_GPU_ROWS:
        cells = [scaled(small[key], 1e9), bold(scaled(large[key], 1e9), large[key] == top) if both else "–"]
        rows.append([label] + cells)
    host = row_where(d["rows"], "num_envs", GYMNASIUM_HOST_ENVS)
    rows.append([f"Gymnasium CartPole vector env (host CPU, {GYMNASIUM_HOST_ENVS:,} envs)",
                 scaled(host["gymnasium CartPole vector (CPU)"], 1e9), ""])
    return table([""] + [f"{envs(n)} envs" for n in ENV_STEPS_GPU_SIZES], ["---"] + ["---:"] * 2, rows)


def selfplay_gpu(results):
    d = load(results, "selfplay_gpu.json")
    rows = []
    for r in d["rows"]:
        where = "GPU" if r["env_device"] == "cuda" else "host"
        bots = r["scores_vs_bot"]
        easier = [percent(bots[f"bot{i}"]) for i in range(4)]
        rows.append([f"games and opponents on the {where}", str(r["seed"]),
                     f"{si(r['steps'])} steps in {r['train_seconds']:.2f} s", si(r["sps"]),
                     str(r["eval_games_per_level"]), percent(bots["bot4"]),
                     easier[0] if len(set(easier)) == 1 else " / ".join(easier)])
    return table(["path", "seed", "training", "agent steps/s", "games a level", "vs level 4 (hardest)",
                  "levels 0-3"], ["---", "---:", "---", "---:", "---:", "---:", "---"], rows)


def selfplay_ratings(results):
    d = load(results, "selfplay_gpu_ratings.json")
    rows = [[str(h["update"]), si(h["global_step"]), f"{h['elo']:.0f}", percent(h["selfplay/score_bot4"]),
             percent(h["selfplay/score_past"])] for h in d["history"]]
    return table(["update", "agent steps", "Elo", "vs level 4", "vs past selves"], ["---:"] * 5, rows)


def seed_time(run, decimals=2):
    """A run's time to its threshold, or '>T' (the training seconds it ran without reaching it)."""
    if run["reached"]:
        return f"{run['time_to_threshold_s']:.{decimals}f}"
    return f">{run['train_s']:.{decimals}f}"


def seeds(runs, key, fmt):
    return " / ".join(fmt(r[key]) for r in runs)


def bound_time(run):
    """A seed's seconds to the threshold, or '>T' where it never crossed (T: its whole training time)."""
    return f"{'>' if run['lower_bound'] else ''}{run['time_s']:.2f}"


def peer_ratio(row):
    """Which side reached the threshold sooner, by how much (median times): '>=' where the slower side's median is a
    bound (a seed that never crossed: its whole training time), '<=' where the faster side's is; no figure where both
    are."""
    if row["unbounded"]:
        return "neither median crossed"
    r, fastvec_ahead = row["ratio"], row["ratio"] >= 1
    slower_is_bound = row["lower_bound"] if fastvec_ahead else row["upper_bound"]
    faster_is_bound = row["upper_bound"] if fastvec_ahead else row["lower_bound"]
    mark = ">=" if slower_is_bound else "<=" if faster_is_bound else ""
    return f"{'fastvec' if fastvec_ahead else 'the peer'} {mark}{times(r if fastvec_ahead else 1 / r, 1)} faster"


TRAIN_PEERS_KINDS = {"published": "the peer's published settings, fastvec in its shape",
                     "tuned": "each side tuned alike"}


def train_peers_classic(results):
    d = load(results, "train_peers.json")
    rows = []
    for r in d["rows"]:
        if r["kind"] not in TRAIN_PEERS_KINDS:
            continue
        mine, peer = r["fastvec_seeds"], r["peer_seeds"]
        rows.append([f"{r['gymnax_id']} ({r['threshold']:g})", TRAIN_PEERS_KINDS[r["kind"]],
                     " / ".join(bound_time(x) for x in mine) + " s",
                     span([x["sps"] for x in mine], si), seeds(mine, "eval_return", "{:.1f}".format),
                     " / ".join(bound_time(x) for x in peer) + " s",
                     span([x["sps"] for x in peer], si), seeds(peer, "eval_return", "{:.1f}".format),
                     peer_ratio(r)])
    return table(["env (threshold)", "settings", "fastvec: seconds to threshold", "fastvec SPS", "fastvec eval",
                  "peer: seconds to threshold", "peer SPS", "peer eval", "sooner (medians)"],
                 ["---"] * 8 + ["---:"], rows)


TRAIN_PEERS_MINATAR = [  # env, the JSON that holds its latest run beside the peer, the row's kind in it
    (env, "train_peers_minatar_h100.json", "published")
    for env in ("breakout-minatar", "asterix-minatar", "freeway-minatar", "seaquest-minatar", "spaceinvaders-minatar")
]


def minatar_row(results, name, env, kind):
    """The row of env and kind in a train_peers.py JSON."""
    return row_where([r for r in load(results, name)["rows"] if r["env"] == env], "kind", kind)


def seconds_to_return(same, side):
    """Each seed's seconds to the common return; '>': a seed that never got there, its whole training time."""
    missed = same.get(f"{side}_missed", [False] * len(same[f"{side}_s"]))
    return " / ".join(f"{'>' * m}{x:.2f}" for x, m in zip(same[f"{side}_s"], missed)) + " s"


def steps_if_capped(runs):
    """How far each run got, where one was stopped before its step budget; else nothing."""
    capped = any(x["steps"] < x["budget_steps"] for x in runs)
    return f" ({span([x['steps'] for x in runs], mega)} steps)" if capped else ""


def train_peers_minatar(results):
    rows = []
    for env, name, kind in TRAIN_PEERS_MINATAR:
        r = minatar_row(results, name, env, kind)
        mine, peer = r["fastvec_seeds"], r["peer_seeds"]
        game = r["gymnax_id"].split("-")[0]
        if r["threshold"] is not None:
            target = f">= {r['threshold']:g}"
            reached = [x["steps_to_threshold"] for x in mine if x["reached"]]
            mine_to = " / ".join(bound_time(x) for x in mine) + " s" + (f" ({span(reached, mega)} steps)"
                                                                       if reached else "")
            peer_to = " / ".join(bound_time(x) for x in peer) + " s"
        else:
            same = r["same_return"]
            target = f"{same['return']:.1f}"
            mine_to, peer_to = seconds_to_return(same, "fastvec"), seconds_to_return(same, "peer")
        sooner = peer_ratio(r if r["threshold"] is not None else r["same_return"])
        rows.append([f"{game} ({target}, {len(mine)} seed{'s' * (len(mine) > 1)}; {name})",
                     mine_to,
                     f"{span([x['train_s'] for x in mine], '{:.1f}'.format)} s{steps_if_capped(mine)}, "
                     f"{span([x['sps'] for x in mine], si)}, {seeds(mine, 'eval_return', '{:.1f}'.format)}",
                     peer_to,
                     f"{span([x['train_s'] for x in peer], '{:.1f}'.format)} s{steps_if_capped(peer)}, "
                     f"{seeds(peer, 'eval_return', '{:.1f}'.format)}", sooner])
    return table(["game (target, seeds; JSON)", "fastvec: to target", "fastvec: 10M steps, SPS, eval",
                  "peer: to target", "peer: 10M steps, eval", "sooner (medians)"], ["---"] * 5 + ["---:"], rows)


JAXMARL_KINDS = {"published": "each side's published settings", "tuned": "each side tuned alike"}


def jaxmarl_train(results):
    """benchmarks/peers/jaxmarl_baselines.py's rows: JaxMARL's IPPO/MAPPO scripts and fastvec-train, each side's
    seconds to JaxMARL's final return or win rate; where no fastvec seed crossed it, its final values instead of a
    ratio (a bound on a time that never came is no speed-up)."""
    d = load(results, "jaxmarl_train.json")
    rows = []
    for r in d["rows"]:
        mine, peer = r["fastvec_seeds"], r["peer_seeds"]
        final = "{:.1%}".format if r["metric"] == "win_rate" else "{:.1f}".format
        target = final(r["threshold"]) if r["threshold"] is not None else "none"
        sooner = (f"fastvec never reached it (JaxMARL's median {r['peer_median_s']:.0f} s)"
                  if all(not x["reached"] for x in mine) else peer_ratio(r))
        rows.append([f"{r['scenario']} {r['algo'].upper()} ({target}; JaxMARL {len(peer)} seed{'s' * (len(peer) > 1)})",
                     r.get("settings", JAXMARL_KINDS[r["kind"]]),
                     " / ".join(bound_time(x) for x in peer) + " s",
                     f"{span([x['steps'] for x in peer], mega)} steps, {span([x['sps'] for x in peer], si)} SPS",
                     " / ".join(bound_time(x) for x in mine) + " s",
                     f"{span([x['steps'] for x in mine], mega)} steps, {span([x['sps'] for x in mine], si)} SPS, "
                     f"final {seeds(mine, 'final', final)}", sooner])
    return table(["row (JaxMARL's final value)", "settings", "JaxMARL: seconds to it", "JaxMARL: run",
                  "fastvec: seconds to it", "fastvec: run", "sooner (medians)"], ["---"] * 6 + ["---:"], rows)


def pufferlib_breakout(results):
    d = load(results, "pufferlib_breakout.json")
    t = d["time_to_850"]
    peer = [bound_time(x) if "time_s" in x else "failed" for x in t["puffer_seeds"]]
    mine = [bound_time(x) for x in t["fastvec_seeds"]]
    window = [bound_time(x["last_100_episodes"]) for x in t["fastvec_seeds"]]
    first = table(["claim", "fastvec-train breakout", f"PufferLib {d['puffer_commit'][:8]}", "sooner (medians)"],
                  ["---", "---:", "---:", "---:"],
                  [[f"seconds to a score of 850 ({len(mine)} seeds; the mean of a log interval of >= 0.6 s)",
                    " / ".join(mine) + " s", " / ".join(peer) + " s", peer_ratio(t)],
                   ["fastvec by its last 100 episodes instead", " / ".join(window) + " s", "-", ""]])
    rows = [[f"{r['hidden']} x {r['layers']}", f"{r['fastvec_params']:,}",
             si(r["puffer_params"]) if r["puffer_params"] is not None else "-", "async" if r["async"] else "sync",
             mega(r["fastvec_sps"]), mega(r["puffer_sps"]) if r["puffer_sps"] else "failed",
             times(r["fastvec_sps"], r["puffer_sps"]) if r["puffer_sps"] else "-"] for r in d["sps"]]
    second = table(["hidden x layers", "params, fastvec", "params, PufferLib", "mode", "fastvec SPS", "PufferLib SPS",
                    "ratio"], ["---:", "---:", "---:", "---", "---:", "---:", "---:"], rows)
    return f"{first}\n\n{second}"


# a renderer whose block is added with its first JSON
PENDING = {"pufferlib_breakout": "pufferlib_breakout.json", "cleanrl_mujoco": "cleanrl_mujoco.json"}


# --- README.md -------------------------------------------------------------------------------------------

def readme_headline(results):
    rows = []

    cpu = row_where(load(results, "env_steps_cpu.json")["rows"], "num_envs", 4096)
    cc = row_where(load(results, "classic_control_cpu.json")["rows"], "env", "cartpole")
    rows.append([f"CartPole env steps/s, {cpu['num_envs']:,} envs, 2-core VM (Gymnasium's bits for whole episodes)",
                 f"{si(cpu['fastvec CartPole'])}; {si(cc['fastvec'])}",
                 f"Gymnasium's vector CartPole {si(cpu['gymnasium CartPole vector'])}; {si(cc['gymnasium_vector'])} "
                 f"in the same runs ({times(cpu['fastvec CartPole'], cpu['gymnasium CartPole vector'])}; "
                 f"{times(cc['fastvec'], cc['gymnasium_vector'])})"])

    gpu = [r for r in load(results, "classic_control_gpu.json")["rows"] if r["num_envs"] == 1 << 20]
    f64, f32 = (row_where(gpu, "env", e) for e in ("cartpole", "cartpole float32=1"))
    rows.append([f"CartPole env steps/s on an H200, {envs(f64['num_envs'])} envs, {f64['rollout_steps']} steps fused",
                 f"{si(f64['fastvec_rollout'])} (float64, Gymnasium's bits); {si(f32['fastvec_rollout'])} with "
                 f"`float32=1`", f"gymnax (jit + scan, warmed) {si(f64['gymnax_scan'])} in the same run "
                 f"({times(f64['fastvec_rollout'], f64['gymnax_scan'])}; "
                 f"{times(f32['fastvec_rollout'], f32['gymnax_scan'])})"])
    others = [row_where(gpu, "env", e) for e in ("pendulum", "acrobot", "mountaincarcontinuous", "mountaincar")]
    rows.append([f"Pendulum, Acrobot, MountainCarContinuous, MountainCar env steps/s on an H200, {envs(1 << 20)} envs, "
                 f"100 steps fused (float64, Gymnasium's bits)", ", ".join(si(r["fastvec_rollout"]) for r in others),
                 "gymnax (jit + scan, warmed), same run: fastvec at " +
                 ", ".join(times(r["fastvec_rollout"], r["gymnax_scan"]) for r in others) + " its rate"])

    minatar = load(results, "minatar_gpu.json")
    small = [r for r in minatar["rows"] if r["num_envs"] == 65536]
    regular = [r for r in small if r["game"] != "Seaquest"]
    seaquest = row_where(small, "game", "Seaquest")
    ratios = [r["fastvec rollout(100)"] / r["gymnax scan(100)"] for r in regular]
    rows.append([f"MinAtar env steps/s on an H200, {envs(65536)} envs, {minatar['rollout_steps']} steps fused",
                 ", ".join(f"{r['game']} {si(r['fastvec rollout(100)'])}" for r in small),
                 f"gymnax (jit + scan, warmed): {times(min(ratios), 1)} to {times(max(ratios), 1)} slower, same run; "
                 f"Seaquest {times(seaquest['fastvec rollout(100)'], seaquest['gymnax scan(100)'])} (its "
                 f"{seaquest['gymnax state bytes per env'] / 1000:.1f} KB of fixed-size entity buffers per env)"])

    pong = row_where(load(results, "pong_steps_cpu.json")["rows"], "num_games", 1024)
    rows.append([f"Pong, {pong['num_games']:,} games, agent steps/s, 16-core host", si(pong["fastvec_vector_env"]),
                 f"SuperSuit over PettingZoo {si(pong['supersuit_concat'])}"])

    peers = load(results, "train_peers.json")
    tuned = [r for r in peers["rows"] if r["kind"] == "tuned"]
    for r in tuned:
        mine, peer = r["fastvec_seeds"], r["peer_seeds"]
        rows.append([f"{r['gymnax_id']}, seconds to a return of {r['threshold']:g} (mean of the last {r['window']} "
                     f"episodes), H200, both tuned alike ({peers['sweep']['trials']} Optuna trials of "
                     f"{peers['sweep']['trial_seconds']:g} s), {len(mine)} fresh seeds",
                     "`fastvec-train`: " + " / ".join(bound_time(x) for x in mine) + " s",
                     "PureJaxRL-style PPO on gymnax, same run: " + " / ".join(bound_time(x) for x in peer) +
                     f" s ({peer_ratio(r)}, medians)"])

    mujoco = load(results, "cleanrl_mujoco.json")["rows"]
    sittings = len({json.dumps(r.get("sitting"), sort_keys=True) for r in mujoco})  # each row names its sitting
    rows.append([", ".join(r["cleanrl_env"].replace("-v4", "-v5") for r in mujoco) + " (v4's defaults where they "
                 "differ): seconds to the return CleanRL's `ppo_continuous_action.py` reaches in its 1M steps (the "
                 f"median of its {len(mujoco[0]['cleanrl'])} seeds), the same PPO, an H100 host's 16 cores" +
                 (f", {sittings} sittings" if sittings > 1 else ""),
                 "`fastvec-train`: " + "; ".join(" / ".join(bound_time(x) for x in r["fastvec"]) + " s"
                                                  for r in mujoco),
                 "CleanRL, in the task's sitting: " + "; ".join(span(r["cleanrl_train_s"], "{:,.0f}".format) + " s"
                                                       for r in mujoco) +
                 " (" + ", ".join(("<=" if r["upper_bound"] else ">=" if r["lower_bound"] else "") +
                                     times(r["ratio"], 1) for r in mujoco) + ", medians)"])

    shipped = [r for r in load(results, "breakout_toml_one_second_h200.json")["shipped_twelve_seeds"]["runs"]
               if r["case"] == "shipped"]
    rows.append([f"`fastvec-train breakout` (breakout.toml), H200, {len(shipped)} seeds",
                 f"mean score over {shipped[0]['eval_episodes']:,} episodes {span([r['eval'] for r in shipped], '{:.1f}'.format)}, "
                 f">= 850 on {sum(r['eval'] >= 850 for r in shipped)} of {len(shipped)}, after "
                 f"{span([r['train_s'] for r in shipped], '{:.2f}'.format)} s of training "
                 f"({si(shipped[0]['steps'])} steps)", "-"])

    play = load(results, "selfplay_gpu.json")["rows"]
    on_gpu = [r for r in play if r["env_device"] == "cuda"]
    host = [r for r in play if r["env_device"] != "cuda"]
    if not on_gpu or not host:
        raise FigureError("selfplay_gpu.json: expected rows with env_device 'cuda' and with the games on the host")
    cli = load(results, "selfplay_gpu.json")["cli"]
    rows.append([f"`fastvec-train pong --config=fastvec/configs/pong-selfplay.toml` (self-play, "
                 f"{on_gpu[0]['num_games']:,} games), H200",
                 f"{span([r['sps'] for r in on_gpu], si)} agent steps/s over "
                 f"{span([r['train_seconds'] for r in on_gpu], '{:.2f}'.format)} s of training and "
                 f"{span([r['eval_seconds'] for r in on_gpu], '{:.2f}'.format)} s of evaluations "
                 f"({span([r['eval_share_of_training'] for r in on_gpu], percent)} of training); "
                 f"{span([r['scores_vs_bot']['bot4'] for r in on_gpu], percent)} wins vs the hardest bot "
                 f"({len(on_gpu)} seeds). The command: {cli['train']['wall_s']:.1f} s wall, start-up included; "
                 f"`--eval=RUN --eval.opponent=bot --eval.episodes=256` {cli['eval']['wall_s']:.1f} s wall",
                 f"the same trainer with the games on the host: {si(host[0]['sps'])} steps/s"])

    return table(["what", "fastvec", "peer, same machine and run"], ["---", "---:", "---:"], rows)


RENDERERS = {f.__name__: f for f in (
    env_steps_cpu, classic_control_cpu, classic_control_gpu, classic_control_gpu_h100, minatar_cpu, mujoco_cpu,
    mujoco_cpu_16core, mujoco_gpu,
    cpu_steps_4096, cpu_steps_4096_avx2, minatar_gpu, env_steps_gpu, mujoco_gpu_train, cleanrl_mujoco, teams_gpu,
    teams_gpu_262k, teams_cpu,
    roofline_envs,
    roofline_trainer, selfplay_gpu, selfplay_ratings, train_peers_classic, train_peers_minatar, pufferlib_breakout,
    jaxmarl_train,
    readme_headline)}


# --- the blocks in the docs ------------------------------------------------------------------------------

def rendered(text, results, renderers):
    """`text` with every block replaced by its render."""
    def one(match):
        name = match.group(2)
        if name not in renderers:
            raise FigureError(f"block {name!r} has no renderer: add one to RENDERERS in benchmarks/figures.py")
        return f"{match.group(1)}\n{renderers[name](results)}\n\n{match.group(4)}"
    return BLOCK.sub(one, text)


def differences(path, text, new):
    """One 'file: block NAME, line N: ...' for each block of `text` that differs from its render in `new`."""
    found = []
    for old, fresh in zip(BLOCK.finditer(text), BLOCK.finditer(new)):
        old_lines, new_lines = old.group(3).split("\n"), fresh.group(3).split("\n")
        for i in range(max(len(old_lines), len(new_lines))):
            a = old_lines[i] if i < len(old_lines) else "<no line>"
            b = new_lines[i] if i < len(new_lines) else "<no line>"
            if a != b:
                line = text.count("\n", 0, old.start(3)) + i + 1
                found.append(f"{path}: block {old.group(2)!r}, line {line}:\n  file: {a}\n  JSON: {b}")
                break
    return found


def main(argv=None, docs=DOCS, results=RESULTS, renderers=RENDERERS):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block differs from its JSON's render")
    args = parser.parse_args(argv)
    problems = []
    for path in docs:
        text = Path(path).read_text()
        try:
            new = rendered(text, results, renderers)
        except FigureError as e:
            problems.append(f"{path}: {e}")
            continue
        if args.check:
            problems += differences(path, text, new)
        elif new != text:
            Path(path).write_text(new)
            print(f"rewrote {path}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems and args.check:
        print("run `python benchmarks/figures.py` to rewrite the blocks from their JSON", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
