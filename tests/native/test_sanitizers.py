"""Every built-in env, the test envs of every space kind and the MuJoCo tasks, built with AddressSanitizer and
UndefinedBehaviorSanitizer and stepped in a child process: an env must never touch memory it does not own.

The child builds through the product's own compile functions (`cpu.compile_env`, `mujoco._library`) with their
flag lists extended (sanitizers, -O1): the same sources, defines and command, a build cache key of its own. It
runs with libasan preloaded, so every malloc of the process (NumPy's buffers, and Python's objects under
PYTHONMALLOC=malloc) is ASan's, with poisoned bytes on both sides:
- ASan catches a read or write past any buffer the batch hands to C (the slots, obs, rewards, flags, final obs,
  episode statistics, action masks, world states, actions, the Gymnasium face's block, states, frames) and past
  the env's stack and global arrays; a write past one env's slot into the next env's slot is within the buffer
  and seen only for the last env (so every batch size includes 1).
- UBSan (`-fsanitize=undefined`, which holds `bounds`; GCC's `bounds-strict` for a struct's last member array)
  catches an index past a fixed-size array, a struct's member arrays included, signed overflow, bad shifts and
  misaligned or null pointers.
- Neither sees an index that stays inside the env's own struct through a pointer, a read past a MuJoCo model's
  or data's arrays (they lie in libmujoco's own arenas), nor a wrong value: the rule tests' business.
The child names each env before and after stepping it; the test fails on a non-zero exit or any report in its
output, and two tests of the harness require the report for an env file with a known slip of each kind."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENV_FILES = REPO / "tests" / "envs"
SANITIZE = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
            "-fno-sanitize-recover=undefined"]

# group -> the envs one child builds and steps, each as ("env", registry name, params), ("team", team env name,
# params), ("file", env file under tests/envs, params) or ("mujoco", task, {}). A group shares one child (and its
# start-up under ASan, a second of CPU); tools/mutation.py runs the group of each env file it mutates.
CLASSIC = ("cartpole", "acrobot", "mountaincar", "mountaincarcontinuous", "pendulum")
GROUPS = {
    "classic": [("env", name, {}) for name in CLASSIC],
    "classic_float32": [("env", name, {"float32": 1}) for name in CLASSIC],
    "arcade": [("env", "breakout", {}), ("env", "pong", {}), ("env", "pong", {"pong_bot": 0})],
    "minatar": [("env", f"{game}-minatar", {"difficulty_ramping": 1})
                for game in ("asterix", "breakout", "freeway", "seaquest", "spaceinvaders")],
    "mpe": [("team", name, {}) for name in ("simple_spread", "simple_tag", "simple_adversary", "simple_push",
                                            "simple_speaker_listener", "simple_reference", "simple_crypto",
                                            "simple_world_comm")]
    + [("team", "simple_spread", {"continuous_actions": True})],
    "smax": [("team", "smax:3m", {}), ("team", "smax:2s3z", {"enemy": "heuristic"}),
             ("team", "smax:smacv2_5_units", {})],
    "space_kinds": [("file", name, {}) for name in ("box_open", "box_point", "byte_state", "counting", "image_obs",
                                                    "multi_discrete", "random_walk")],
    "mujoco": [("mujoco", task, {}) for task in ("InvertedPendulum", "InvertedDoublePendulum", "Reacher", "Pusher",
                                                 "Swimmer", "HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid",
                                                 "HumanoidStandup")],
}


@lru_cache(maxsize=None)
def sanitizer_build() -> tuple[str, list[str]] | str:
    """(the C compiler's libasan, the flags the child adds to the builds' own), or why there is none here: the
    compiler refuses -fsanitize=address,undefined, knows no libasan.so, or a program built with them does not start
    (ASan's shadow memory clashes with some kernels' address layouts). GCC's -fsanitize=bounds-strict is added where
    taken: it checks a struct's last member array too, which `bounds` leaves alone as a possible flexible array."""
    from fastvec.native.cpu import CompileError, find_compiler

    try:
        cc = find_compiler()  # the compiler the builds use
    except CompileError as err:
        return str(err)

    def build(flags: list[str], out: str = os.devnull, kind: tuple = ("-shared", "-fPIC")) -> bool:
        return subprocess.run([*cc, *flags, *kind, "-x", "c", "-o", out, "-"], capture_output=True,
                              input=b"int main(void) { return 0; }\n").returncode == 0

    path = subprocess.run([*cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not (build(SANITIZE) and os.path.isabs(path) and os.path.exists(path)):
        return f"{shlex.join(cc)} has no AddressSanitizer runtime (libasan.so) or refuses -fsanitize=address,undefined"
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "starts")
        if not build(SANITIZE, program, ()):
            return f"{shlex.join(cc)} does not link a program with -fsanitize=address,undefined"
        started = subprocess.run([program], capture_output=True, text=True)
        if started.returncode != 0:
            first = (started.stderr.strip().splitlines() or [f"exit {started.returncode}"])[0]
            return f"a program built with -fsanitize=address does not start here: {first}"
    strict = ["-fsanitize=bounds-strict"]
    return path, SANITIZE + (strict if build(SANITIZE + strict) else [])


def run_child(cases: list) -> subprocess.CompletedProcess:
    """The child that builds and steps `cases` (GROUPS' entries) under the sanitizers, run to its end."""
    found = sanitizer_build()
    if isinstance(found, str):
        pytest.skip(found)
    runtime, flags = found
    env = {**os.environ, "LD_PRELOAD": runtime, "ASAN_OPTIONS": "detect_leaks=0", "PYTHONMALLOC": "malloc",
           "UBSAN_OPTIONS": "print_stacktrace=1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, __file__, json.dumps({"flags": flags, "cases": cases})], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)


def sanitizer_reports(output: str) -> list[str]:
    return [line for line in output.splitlines() if "ERROR: AddressSanitizer" in line or "runtime error:" in line]


@pytest.mark.parametrize("group", list(GROUPS))
def test_envs_touch_only_their_own_memory(group):
    if group == "mujoco":
        pytest.importorskip("mujoco", reason="the MuJoCo tasks build against the mujoco package's libmujoco")
    proc = run_child(GROUPS[group])
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and not sanitizer_reports(output), f"{group}: exit {proc.returncode}\n{output[-8000:]}"
    assert proc.stdout.count("stepped ") == len(GROUPS[group]), output[-3000:]  # each env went through its steps


# The harness itself: an env file with a known slip of each kind the docstring promises is caught.
SLIPS = {
    "heap": ("obs[0] = (float)s->count;", "obs[0] = (float)s->count;\n    obs[OBS_SIZE] = 0.0f;"),
    "member_array": ("typedef struct { int count; } State;", "typedef struct { int cells[3]; int count; } State;",
                     "stats[0] = (float)s->count;", "stats[0] = (float)s->count;\n    s->cells[s->count] = 1;"),
}


@pytest.mark.parametrize("slip", list(SLIPS))
def test_an_env_that_writes_past_its_memory_is_reported(slip, tmp_path):
    text = (ENV_FILES / "counting.h").read_text()
    edits = SLIPS[slip]
    for old, new in zip(edits[::2], edits[1::2]):
        assert old in text
        text = text.replace(old, new)
    (tmp_path / "slip.h").write_text(text)
    proc = run_child([("file", str(tmp_path / "slip"), {})])
    reports = sanitizer_reports(proc.stdout + proc.stderr)
    assert proc.returncode != 0 and reports, (proc.stdout + proc.stderr)[-3000:]
    assert ("heap-buffer-overflow" if slip == "heap" else "index 3 out of bounds") in reports[0]


# ---------------------------------------------------------------------- the child
def random_actions(rng, spaces, shape):
    """Random actions for a batch of shape (N, A, D) in spaces (an EnvSpaces): in range for the discrete kinds, Box
    ones up to 20% beyond their bounds (the env clips them)."""
    import numpy as np

    if spaces.action_kind == "box":
        low = np.where(np.isfinite(spaces.action_low), spaces.action_low, -10.0)
        high = np.where(np.isfinite(spaces.action_high), spaces.action_high, 10.0)
        return rng.uniform(low * 1.2, high * 1.2, shape).astype(np.float32)  # beyond the bounds too: the env clips
    return (rng.random(shape) * spaces.nvec).astype(np.int64)


def drive(batch, spaces, rng, steps: int, reset_by_hand: bool) -> None:
    """Seeded resets, random steps through ends and truncations (the plain step and the Gymnasium face's),
    partial resets, state round trips and frames of the first and last env."""
    import numpy as np

    n = batch.num_envs
    batch.reset(np.arange(n, dtype=np.uint64) * 7 + 1, None)
    shape = batch.actions.shape
    for t in range(steps):
        actions = random_actions(rng, spaces, shape)
        if t % 2:
            batch.gym_step(actions, copy_obs=bool(t % 4 == 1))
        else:
            batch.step(actions)
        done = batch.terminated | batch.truncated
        if reset_by_hand and done.any():
            batch.reset(None, done)
        if t % 37 == 5:
            batch.reset(rng.integers(0, 2**32, n, dtype=np.uint64), rng.random(n) < 0.5)
    if spaces.state_size > 0:
        batch.set_state(None, batch.get_state())
        batch.set_state([n - 1, 0], batch.get_state([0, n - 1]))
    if batch.env.render_shape[0] * batch.env.render_shape[1]:
        batch.render(0)
        batch.render(n - 1)


def drive_mujoco(task: str, rng) -> None:
    """A task's batches of 1 and 3 envs (both autoreset modes) through random steps, truncations, a partial
    reset and a state copy."""
    import numpy as np

    from fastvec.native import mujoco

    for n, same_step in ((1, False), (3, True)):
        batch = mujoco.MujocoBatch(task, n, max_episode_steps=9, same_step=same_step)
        batch.reset(np.arange(n, dtype=np.uint64) + 3, None)
        for t in range(25):
            batch.step(rng.uniform(batch.ctrl_low * 1.2, batch.ctrl_high * 1.2, (n, batch.nu)))
            if t == 11:
                batch.reset(None, np.arange(n) % 2 == 0)
        batch.set_state([n - 1], batch.get_state([0]))
        batch.close()


def drive_env(kind: str, name: str, params: dict, rng) -> None:
    """A built-in env, team env or test env file in batches of 1, 5, 3 and 319 envs (the last on two threads: the
    pool's chunks of 64 envs, the last one short by one)."""
    from fastvec.native import AUTORESET_CODES, batches, cpu

    if kind == "team":
        path, defines, _ = batches.team_source(name, params)
        build = cpu.load(path, tuple(sorted(defines.items())))
    else:
        build = batches.load_env(name if kind == "env" else ENV_FILES / f"{name}.h", params)
    # (envs, threads, autoreset mode, step limit, steps): one env, odd counts, and enough envs for the pool
    # to share them out between threads (pool.h's FV_PAR_MIN_ENVS).
    for n, threads, mode, limit, steps in ((1, 1, "SameStep", 13, 150), (5, 1, "NextStep", 7, 90),
                                           (3, 1, "Disabled", 11, 60), (319, 2, "SameStep", 9, 40)):
        build.lib.fv_set_num_threads(threads)
        batch = cpu.CpuBatch(build, n, AUTORESET_CODES[mode], limit)
        drive(batch, build.spaces, rng, steps, reset_by_hand=mode == "Disabled")


def child(flags: list, cases: list) -> None:
    os.environ.pop("LD_PRELOAD", None)  # this process has libasan; the compilers it starts need none
    import numpy as np

    from fastvec.native import cpu, mujoco

    # The product's builds with the sanitizers: the flags are part of each build's cache key.
    cpu.C_FLAGS = [f for f in cpu.C_FLAGS if not f.startswith("-O")] + flags
    mujoco.C_FLAGS = [f for f in mujoco.C_FLAGS if not f.startswith("-O")] + flags
    rng = np.random.default_rng(0)
    for kind, name, params in cases:
        print("stepping", kind, name, params, flush=True)  # the env a report that follows is about
        if kind == "mujoco":
            drive_mujoco(name, rng)
        else:
            drive_env(kind, name, params, rng)
        print("stepped", kind, name, params, flush=True)


if __name__ == "__main__":
    child(**json.loads(sys.argv[1]))
