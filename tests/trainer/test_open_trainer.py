"""fastvec-train beyond the built-in envs (issue 20): a user's env file (PATH.h or --env.source, its -D
parameters as --env.KEY=value) and a Gymnasium id (gym:ID) trained end to end on the CPU, evaluated and resumed;
the Gymnasium adapter's SAME_STEP semantics checked step by step against Gymnasium's own envs; spaces the trainer
cannot train refused; config.toml's device resolved; the optional loggers fed every metrics row and closed."""

import json
import re
import shutil
import sys
import types
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from fastvec.native.gym_batch import GymBatch
from fastvec.trainer import checkpoint, cli, config as config_mod, loop, resolve, run
from fastvec.trainer.config import ConfigError, load_config, load_run_config
from fastvec.trainer.settings import Config

ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"
SMALL = ["--policy.hidden=16", "--policy.layers=1", "--train.horizon=16", "--train.bptt_horizon=8",
         "--train.minibatch_size=128", "--train.log_interval=0", "--train.checkpoint_interval=10"]


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def saved_config(run_dir: Path) -> dict:
    return config_mod.read_run_config(run_dir / "config.toml")


@pytest.fixture
def env_file(tmp_path):
    """tests/envs/counting.h in a folder of its own: the reward is the action (0..4), so a policy that learns
    picks 4; an episode lasts TERMINATE_AT steps (a -D parameter)."""
    folder = tmp_path / "envs"
    folder.mkdir()
    return Path(shutil.copy(ENVS_DIR / "counting.h", folder / "counting.h"))


# ---------------------------------------------------------------------------------------------- a user's env file


def test_a_user_env_file_trains_evaluates_and_resumes(env_file, tmp_path, capsys):
    run_dir = tmp_path / "run"
    args = [str(env_file), "--env.terminate_at=4", "--env.num_envs=16", "--train.total_timesteps=12_000",
            "--train.learning_rate=0.01", *SMALL, f"--run-dir={run_dir}"]
    assert cli.main(args) == 0, capsys.readouterr().err
    logged = rows(run_dir)
    assert logged[-1]["global_step"] >= 12_000 and logged[-1]["update"] == len(logged)
    assert all(row["episode_length"] == 4.0 for row in logged if row["episodes"])  # the -D parameter took effect
    assert logged[-1]["count"] == 4.0  # the env's own episode stat
    # a random policy returns 4 steps x mean action 2 = 8; a learnt one towards 16
    first, last = logged[0]["episode_return"], np.mean([row["episode_return"] for row in logged[-5:]])
    assert first < 9 and last > first + 1, (first, last)
    saved = saved_config(run_dir)
    assert saved["env"]["name"] == "counting.h" and saved["env"]["source"] == str(env_file.resolve())
    assert saved["env"]["terminate_at"] == 4
    newest = checkpoint.latest(run_dir)
    meta, _ = checkpoint.load(newest)
    assert meta["env"] == "counting.h"
    assert meta["env_source"] == {"path": str(env_file.resolve()), "sha256": config_mod.source_sha256(env_file)}

    # --eval: the checkpoint's env file and its parameters (the run's name as ENV, found through the checkpoint)
    capsys.readouterr()
    assert cli.main(["counting.h", f"--eval={run_dir}", "--eval.episodes=16", "--eval.deterministic=true"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"mean length 4(\.0)?\b", out) and "counting.h: mean return" in out
    assert float(out.split("mean return ")[1].split()[0]) > 12

    # --resume continues the run: the same env file, the updates numbered on
    updates = logged[-1]["update"]
    assert cli.main([str(env_file), f"--resume={run_dir}", "--train.total_timesteps=16_000"]) == 0
    resumed = rows(run_dir)
    assert resumed[-1]["update"] > updates and [r["update"] for r in resumed] == sorted(r["update"] for r in resumed)
    # from the learnt weights, not from scratch
    assert np.mean([row["episode_return"] for row in resumed[len(logged):]]) > first + 1


def test_a_moved_env_file_is_found_at_its_new_path_and_a_changed_one_is_named(env_file, tmp_path, capsys):
    run_dir = tmp_path / "run"
    base = ["--env.num_envs=8", *SMALL]
    assert cli.main([str(env_file), "--train.total_timesteps=1000", *base, f"--run-dir={run_dir}"]) == 0
    moved = tmp_path / "elsewhere" / "counting.h"
    moved.parent.mkdir()
    env_file.rename(moved)
    capsys.readouterr()
    # by its run's name: the recorded path is gone, and the message says how to go on
    assert cli.main(["counting.h", f"--resume={run_dir}", "--train.total_timesteps=2000"]) == 2
    err = capsys.readouterr().err
    assert "is gone (moved or deleted)" in err and f"--resume={run_dir}" in err
    # by its new path: resumed, and config.toml records where the file is now
    assert cli.main([str(moved), f"--resume={run_dir}", "--train.total_timesteps=2000"]) == 0
    assert saved_config(run_dir)["env"]["source"] == str(moved.resolve())
    assert "differs from the one" not in capsys.readouterr().err  # moved, not changed: no warning
    # changed content: it still runs (the sizes match), with one warning naming both files' hashes
    moved.write_text(moved.read_text().replace("rewards[0] = (float)actions[0];", "rewards[0] = 1.0f;"))
    assert cli.main([str(moved), f"--eval={run_dir}", "--eval.episodes=4"]) == 0
    err = capsys.readouterr().err
    assert "differs from the one" in err and "env's rules may have changed" in err


def test_a_named_user_env_and_its_parameters_are_checked(env_file, tmp_path):
    config = load_config("my_counter", {"env": {"source": str(env_file), "terminate_at": 7}})
    assert config["env"]["name"] == "my_counter" and config["env"]["source"] == str(env_file.resolve())
    assert config_mod.source_defines(config["env"]["source"], Config.of(config).env.params) == {"TERMINATE_AT": 7}
    with pytest.raises(ConfigError, match="env.mode='fast': a parameter of an env file is a -D define"):
        load_config(str(env_file), {"env": {"mode": "fast"}})
    with pytest.raises(ConfigError, match="under the name 'cartpole', a built-in env's"):
        load_config("cartpole", {"env": {"source": str(env_file)}})
    with pytest.raises(ConfigError, match="env file 'nowhere/my_env.h' not found"):
        load_config("nowhere/my_env.h")
    assert load_config(str(env_file), {"selfplay": {"enabled": True}})["selfplay"]["enabled"]  # agents: checked at start
    with pytest.raises(ConfigError, match="a bot switch is a built-in game's parameter"):
        load_config(str(env_file), {"selfplay": {"enabled": True, "bot_switch_param": "terminate_at"}})
    with pytest.raises(ConfigError, match="self-play trains a multi-agent env file or a built-in game"):
        load_config("gym:CartPole-v1", {"selfplay": {"enabled": True}})
    with pytest.raises(ConfigError, match=r"unknown env 'cartpol'; .* a user's env file .* a Gymnasium id"):
        load_config("cartpol")
    # a run of a user env resumes under its name from any directory (the run recorded the file)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.toml").write_text(config_mod.to_toml(load_config(str(env_file))))
    assert load_run_config(run_dir, "counting.h")["env"]["source"] == str(env_file.resolve())
    with pytest.raises(ConfigError, match="is a 'counting.h' run, not 'cartpole'"):
        load_run_config(run_dir, "cartpole")


# ---------------------------------------------------------------------------------------------- a Gymnasium id


def test_a_gymnasium_id_trains_end_to_end_and_evaluates(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["gym:CartPole-v1", "--env.num_envs=8", "--train.total_timesteps=4000", *SMALL,
                     f"--run-dir={run_dir}"]) == 0, capsys.readouterr().err
    logged = rows(run_dir)
    assert logged[-1]["global_step"] >= 4000 and sum(row["episodes"] for row in logged) > 50
    assert all(row["episode_length"] == pytest.approx(row["episode_return"])  # CartPole: +1 a step
               for row in logged if row["episodes"])
    saved = saved_config(run_dir)
    assert saved["env"]["name"] == "gym:CartPole-v1" and saved["env"]["gym_id"] == "CartPole-v1"
    assert saved["train"]["device"] == "cpu" and saved["train"]["env_device"] == "cpu"
    assert checkpoint.load(checkpoint.latest(run_dir))[0]["env"] == "gym:CartPole-v1"
    capsys.readouterr()
    assert cli.main(["gym:CartPole-v1", f"--eval={run_dir}", "--eval.episodes=5"]) == 0
    assert "gym:CartPole-v1: mean return" in capsys.readouterr().out
    assert run.default_run_dir("gym:ALE/Pong-v5").parts[1] == "gym-ALE-Pong-v5"


@pytest.mark.parametrize("kwargs", [{}, {"max_episode_steps": 12}])
def test_the_gym_batch_steps_as_gymnasiums_own_envs_with_same_step_autoreset(kwargs):
    """A whole rollout of GymBatch against one gymnasium.make env per slot stepped by hand: the same obs,
    rewards, terminated and truncated every step; where an episode ends, its return and length, its last obs in
    final_obs, and obs already the next episode's first (the env reset in the same step, unseeded, as
    Gymnasium's SAME_STEP autoreset does)."""
    n, steps = 4, 300
    seeds = np.arange(n, dtype=np.uint64) + np.uint64(11 << 32)
    batch = GymBatch("CartPole-v1", n, kwargs)
    envs = [gymnasium.make("CartPole-v1", **kwargs) for _ in range(n)]
    batch.reset(seeds, None)
    obs = np.stack([env.reset(seed=int(s))[0] for env, s in zip(envs, seeds)])
    np.testing.assert_array_equal(batch.obs[:, 0], obs.astype(np.float32))
    assert batch.obs.shape == (n, 1, 4) and batch.obs.dtype == np.float32 and batch.episode_stats.shape == (n, 0)
    # its env describes those arrays as a native batch's does: one agent, CartPole's 4 numbers and 2 actions
    info = batch.env
    assert (info.num_agents, info.obs_size, info.num_actions, info.obs_dtype) == (1, 4, 2, batch.obs.dtype)
    returns, lengths = np.zeros(n), np.zeros(n, int)
    ends = {"terminated": 0, "truncated": 0}
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions = rng.integers(0, 2, (n, 1))
        ended = batch.step(actions)
        assert ended == int((batch.terminated | batch.truncated).sum())
        for i, env in enumerate(envs):
            o, r, term, trunc, _ = env.step(int(actions[i, 0]))
            returns[i] += r
            lengths[i] += 1
            assert (batch.rewards[i, 0], batch.terminated[i], batch.truncated[i]) == (r, term, trunc)
            if term or trunc:
                ends["terminated" if term else "truncated"] += 1
                np.testing.assert_array_equal(batch.final_obs[i, 0], np.float32(o))
                assert (batch.episode_return[i, 0], batch.episode_length[i]) == (returns[i], lengths[i])
                o, _ = env.reset()
                returns[i], lengths[i] = 0, 0
            np.testing.assert_array_equal(batch.obs[i, 0], np.float32(o))
    assert ends["terminated"] > 10
    assert ends["truncated"] > 10 if kwargs else ends["truncated"] == 0
    # a masked reset starts only those envs' episodes over
    batch.reset(np.arange(n, dtype=np.uint64), np.array([True, False, False, True]))
    np.testing.assert_array_equal(batch.obs[0, 0], np.float32(envs[0].reset(seed=0)[0]))
    np.testing.assert_array_equal(batch.obs[3, 0], np.float32(envs[3].reset(seed=3)[0]))
    with pytest.raises(ValueError, match=r"action 2 out of range for Discrete\(2\) at env 1"):
        batch.step(np.array([[0], [2], [0], [0]]))
    batch.close()


class ImageEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0, 255, (8, 8, 3), np.uint8)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros((8, 8, 3), np.uint8), {}

    def step(self, action):
        return np.zeros((8, 8, 3), np.uint8), 0.0, True, False, {}


@pytest.mark.parametrize("env_id,message", [
    ("Pendulum-v1", r"gym:Pendulum-v1 has Box\(-2.0, 2.0, \(1,\), float32\) actions"),
    ("FastvecTestImage-v0", r"gym:FastvecTestImage-v0 has Box\(0, 255, \(8, 8, 3\), uint8\) observations "
                            r"\(images need a convolutional policy"),
])
def test_a_space_the_trainer_cannot_train_is_refused_naming_it(env_id, message, tmp_path, capsys):
    if env_id not in gymnasium.registry:
        gymnasium.register(env_id, entry_point=ImageEnv)
    assert cli.main([f"gym:{env_id}", f"--run-dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert "the bundled trainer trains Discrete actions and flat Box observations" in err


def test_gymnasium_ids_and_their_arguments_are_checked(tmp_path, capsys):
    with pytest.raises(ConfigError, match="Did you mean: `CartPole`"):
        load_config("gym:CartPol-v1")
    config = load_config("cart", {"env": {"gym_id": "CartPole-v1", "sutton_barto_reward": True}})
    assert config["env"]["name"] == "cart" and config_mod.env_params(config) == {"sutton_barto_reward": True}
    with pytest.raises(ConfigError, match="train one env, a file or a Gymnasium id"):
        load_config("gym:CartPole-v1", {"env": {"source": str(ENVS_DIR / "counting.h")}})
    assert cli.main(["gym:CartPole-v1", "--env.gravity_x=1", f"--run-dir={tmp_path / 'run'}"]) == 2
    assert "refused its [env] arguments {'gravity_x': 1}" in capsys.readouterr().err


def test_env_build_names_what_a_gpu_build_compiles_for_each_kind_of_env(env_file):
    """resolve.env_build: what the CUDA trainer compiles its module around. A Gymnasium env gets a stub of its
    sizes (the host-env kernels need OBS_SIZE and NUM_ACTIONS); it must compile, here with the C compiler."""
    from fastvec.native import cpu
    builtin = load_config("breakout", {"env": {"frameskip": 2}})
    source, defines, limit = resolve.env_build(Config.of(builtin), None)
    assert (source.name, defines, limit) == ("breakout.h", {"FRAMESKIP": 2}, 10_000)
    user = load_config(str(env_file), {"env": {"terminate_at": 6}})
    assert resolve.env_build(Config.of(user), None) == (env_file.resolve(), {"TERMINATE_AT": 6}, 0)
    gym = load_config("gym:CartPole-v1", {"env": {"num_envs": 2}})
    batch = run.make_batch(gym)
    source, defines, limit = resolve.env_build(Config.of(gym), batch)
    batch.close()
    stub = cpu.load(source, ())
    assert (stub.obs_size, stub.num_actions, stub.num_agents, stub.stat_names, defines, limit) == (4, 2, 1, [], {}, 0)


# ---------------------------------------------------------------------------------------------- the run's files


def test_config_toml_records_the_device_used_and_reads_back(tmp_path):
    run_dir = tmp_path / "run"
    config = load_config("cartpole", {"env": {"num_envs": 8}, "train": {
        "total_timesteps": 256, "horizon": 16, "bptt_horizon": 8, "minibatch_size": 64, "device": "auto"}})
    assert config["train"]["device"] == "auto" and config["train"]["env_device"] == "cuda"
    run.train(config, run_dir, dashboard=False)
    expected = run.resolve_device("auto")
    saved = saved_config(run_dir)["train"]
    assert saved["device"] == expected != "auto"
    assert saved["env_device"] == ("cpu" if expected == "cpu" else "cuda")
    assert load_run_config(run_dir, "cartpole")["train"]["device"] == expected


def test_a_run_config_written_before_the_new_keys_still_resumes(tmp_path):
    text = config_mod.to_toml(load_config("cartpole"))
    for line in ("source = \"\"", "gym_id = \"\"", "gym_vectorization = \"sync\"", "tensorboard = false",
                 "wandb_project = \"\"", "wandb_mode = \"\""):
        assert line + "\n" in text
        text = text.replace(line + "\n", "")
    (tmp_path / "config.toml").write_text(text)
    config = load_run_config(tmp_path, "cartpole")
    assert config["env"]["source"] == "" and config["train"]["tensorboard"] is False


def fake_loggers(monkeypatch, fail_on_log: int | None = None) -> list:
    """Stand in for fastvec/trainer/loggers.py: RunLoggers records what it is given."""
    calls: list = []

    class RunLoggers:
        def __init__(self, config, run_dir, resume):
            calls.append(("init", config["train"]["tensorboard"], Path(run_dir), resume, Path(run_dir).is_dir()))

        def log(self, row):
            calls.append(("log", dict(row)))
            if fail_on_log is not None and len(calls) - 1 == fail_on_log:
                raise RuntimeError("logger failed")

        def close(self):
            calls.append(("close",))

    monkeypatch.setitem(sys.modules, "fastvec.trainer.loggers", types.SimpleNamespace(RunLoggers=RunLoggers))
    return calls


def test_the_optional_loggers_get_every_metrics_row_and_are_closed(tmp_path, monkeypatch):
    overrides = {"env": {"num_envs": 8}, "train": {"total_timesteps": 8 * 16 * 4, "horizon": 16, "bptt_horizon": 8,
                                                   "minibatch_size": 64, "log_interval": 0.0, "tensorboard": True}}
    calls = fake_loggers(monkeypatch)
    run.train(load_config("cartpole", overrides), tmp_path / "run", dashboard=False)
    assert calls[0] == ("init", True, tmp_path / "run", False, True)  # made once the run directory exists
    assert [c[1] for c in calls if c[0] == "log"] == rows(tmp_path / "run")
    assert calls[-1] == ("close",)
    # closed on the way out of a failed run too
    calls = fake_loggers(monkeypatch, fail_on_log=2)
    with pytest.raises(RuntimeError, match="logger failed"):
        run.train(load_config("cartpole", overrides), tmp_path / "run2", dashboard=False)
    assert calls[-1] == ("close",)


def test_without_a_logger_option_loggers_py_is_never_imported(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "fastvec.trainer.loggers", None)  # any import of it would fail
    config = load_config("cartpole", {"env": {"num_envs": 8}, "train": {
        "total_timesteps": 256, "horizon": 16, "bptt_horizon": 8, "minibatch_size": 64}})
    assert loop.open_loggers(Config.of(config), tmp_path, False) is None
    run.train(config, tmp_path / "run", dashboard=False)


class NoFrameRateEnv(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"]}
    observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def render(self):
        return np.zeros((4, 4, 3), np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


def test_the_gym_batch_frame_rate_is_the_envs_else_record_videos_default(tmp_path):
    """The frame rate of the trainer's videos of a gym: env: its render_fps, else 30 as Gymnasium's RecordVideo
    takes for an env that declares none."""
    batch = GymBatch("CartPole-v1", 1, {})
    assert batch.env.render_fps == gymnasium.make("CartPole-v1").metadata["render_fps"] == 50
    batch.close()
    gymnasium.register("FastvecTestNoFrameRate-v0", entry_point=NoFrameRateEnv)
    try:
        batch = GymBatch("FastvecTestNoFrameRate-v0", 1, {})
        recorder = gymnasium.wrappers.RecordVideo(gymnasium.make("FastvecTestNoFrameRate-v0", render_mode="rgb_array"),
                                                  str(tmp_path / "videos"), disable_logger=True)
        assert batch.env.render_fps == recorder.frames_per_sec == 30
        batch.close()
    finally:
        gymnasium.registry.pop("FastvecTestNoFrameRate-v0")


def test_the_gym_batch_draws_each_envs_own_frame_when_made_to_render():
    """render=True: env i's frame is Gymnasium's frame of that env (CartPole-v1 seeded alike); made without it, a
    frame is refused naming the render mode it lacks."""
    pytest.importorskip("pygame", reason="CartPole-v1's frames need pygame (the render extra)")
    batch = GymBatch("CartPole-v1", 2, {}, render=True)
    oracle = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    try:
        batch.reset(np.array([3, 4], np.uint64), None)
        oracle.reset(seed=4)
        frame = batch.render(1)
        assert frame.dtype == np.uint8 and frame.shape == (400, 600, 3)
        np.testing.assert_array_equal(frame, oracle.render())
    finally:
        batch.close()
        oracle.close()
    plain = GymBatch("CartPole-v1", 1, {})
    try:
        plain.reset(None, None)
        with pytest.raises(ValueError, match=r"gym:CartPole-v1 was made without render_mode='rgb_array'"):
            plain.render(0)
    finally:
        plain.close()


def test_the_gpu_build_of_a_gym_batch_is_a_stub_of_its_sizes_without_a_step_limit():
    """A gym: env steps on the host, where its own TimeLimit truncates: the GPU build compiles a stub of its sizes
    with no step limit of its own (0), nor defines; built-in envs build their registered file with theirs."""
    from fastvec.native import source_path
    from fastvec.trainer.resolve import env_build
    from fastvec.trainer.settings import Config

    batch = GymBatch("CartPole-v1", 2, {})
    try:
        source, defines, limit = env_build(Config.of(load_config("gym:CartPole-v1")), batch)
    finally:
        batch.close()
    assert (defines, limit) == ({}, 0)
    text = source.read_text()
    assert "#define OBS_SIZE 4" in text and "#define NUM_ACTIONS 2" in text
    source, defines, limit = env_build(Config.of(load_config("pong", {"env": {"points": 3}})), None)
    assert source == source_path("pong") and defines["POINTS"] == 3 and limit == 20_000


@pytest.mark.parametrize("kind", ["discrete", "box", "multi_discrete"])
def test_gym_batch_host_stubs_compile_to_the_host_envs_sizes_and_action_space(kind, tmp_path):
    """The stub the CUDA trainer's host-env kernels are built around, compiled here by the CPU backend: its sizes
    and action space are the host env's (Box bounds infinite or not, MultiDiscrete's counts), one file per content."""
    from fastvec.native import cpu
    from fastvec.native.gym_batch import host_stub_source

    spaces = types.SimpleNamespace(action_kind=kind, action_low=np.array([-np.inf, -1.5], np.float32),
                                   action_high=np.array([np.inf, 2.0], np.float32), nvec=np.array([3, 5, 2]))
    env = types.SimpleNamespace(obs_size=7, num_actions=4, spaces=None if kind == "discrete" else spaces)
    path = host_stub_source(env, tmp_path)
    assert host_stub_source(env, tmp_path) == path and len(list(tmp_path.iterdir())) == 1
    text = path.read_text()
    path.write_text("/* cut short")  # a damaged stub (a full disk, a crash mid-write) is written again
    assert host_stub_source(env, tmp_path) == path and path.read_text() == text
    built = cpu.load(path, ())
    assert (built.obs_size, built.num_agents, built.spaces.action_kind) == (7, 1, kind)
    if kind == "discrete":
        assert built.num_actions == 4
    elif kind == "box":
        np.testing.assert_array_equal(built.spaces.action_low, spaces.action_low)
        np.testing.assert_array_equal(built.spaces.action_high, spaces.action_high)
    else:
        assert built.spaces.nvec.tolist() == [3, 5, 2]
    other = host_stub_source(types.SimpleNamespace(obs_size=8, num_actions=4, spaces=env.spaces), tmp_path)
    assert other != path and "host_stub_8_" in other.name


def test_gym_batch_space_problems_name_the_space_and_what_the_policy_lacks():
    from gymnasium import spaces

    from fastvec.native.gym_batch import space_problem

    flat, image = spaces.Box(-1, 1, (4,), np.float32), spaces.Box(0, 255, (8, 8, 3), np.uint8)
    assert space_problem("X-v0", flat, spaces.Discrete(3)) is None
    box = space_problem("X-v0", flat, spaces.Box(-1, 1, (2,), np.float32))
    assert box.startswith("gym:X-v0 has Box(-1.0, 1.0, (2,), float32) actions (continuous control needs a Gaussian")
    multi = space_problem("X-v0", flat, spaces.MultiDiscrete([2, 3]))
    assert multi.startswith("gym:X-v0 has MultiDiscrete([2 3]) actions;")
    assert "(images need a convolutional policy" in space_problem("X-v0", image, spaces.Discrete(3))
    discrete_obs = space_problem("X-v0", spaces.Discrete(5), spaces.Discrete(3))
    assert discrete_obs.startswith("gym:X-v0 has Discrete(5) observations;") and "images" not in discrete_obs
    assert space_problem("X-v0", spaces.Box(0, 1, (4,), np.bool_), spaces.Discrete(2)) is None
    for other in (spaces.MultiBinary([2, 2]), spaces.Dict({"a": flat})):  # not Box: no image hint, whatever the shape
        problem = space_problem("X-v0", other, spaces.Discrete(3))
        assert problem.startswith(f"gym:X-v0 has {other} observations;") and "images" not in problem


class CountingStartEnv(gymnasium.Env):
    """obs [steps so far, the action taken]; reward: the action; Discrete(3, start=-1); episodes of 3 steps."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(3, start=-1)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t, action], np.float32), float(action), self.t == 3, False, {}


def test_the_gym_batch_shifts_actions_to_the_spaces_start_and_resets_only_the_masked_envs():
    """Actions 0..n-1 reach a Discrete(n, start) env as start..start+n-1; a masked reset starts only those envs'
    episodes (obs, return and length from the reset), an empty mask resets nothing; negative or float seeds and
    actions that are not integers or out of range are refused, nothing stepped."""
    from fastvec.native.gym_batch import ActionError

    if "FastvecTestStart-v0" not in gymnasium.registry:
        gymnasium.register("FastvecTestStart-v0", entry_point=CountingStartEnv)
    batch = GymBatch("FastvecTestStart-v0", 2, {})
    assert batch.env.num_actions == 3
    batch.reset(np.array([0, 2]), None)  # int64 seeds, non-negative: taken
    batch.step(np.array([[2], [0]]))
    np.testing.assert_array_equal(batch.obs[:, 0], [[1, 1], [1, -1]])
    np.testing.assert_array_equal(batch.rewards[:, 0], [1, -1])
    batch.reset(None, np.array([False, True]))
    np.testing.assert_array_equal(batch.obs[:, 0], [[1, 1], [0, 0]])
    batch.reset(None, np.zeros(2, np.bool_))  # nothing to reset
    np.testing.assert_array_equal(batch.obs[:, 0], [[1, 1], [0, 0]])
    for bad, message in ((np.array([[0], [3]]), r"action 3 out of range for Discrete\(3\) at env 1"),
                         (np.array([[-1], [0]]), r"action -1 out of range for Discrete\(3\) at env 0"),
                         (np.array([[0.0], [1.0]]), "actions must be integers, got float64")):
        with pytest.raises(ActionError, match=message):
            batch.step(bad)
    for bad in (np.array([-1, 2]), np.array([1.0, 2.0])):
        with pytest.raises(ValueError, match="seeds must be non-negative integers"):
            batch.reset(bad, None)
    np.testing.assert_array_equal(batch.obs[:, 0], [[1, 1], [0, 0]])
    assert batch.step(np.array([[2], [2]])) == 0
    assert batch.step(np.array([[2], [1]])) == 1  # env 0's third step ends its episode
    assert (batch.episode_return[0, 0], batch.episode_length[0]) == (3, 3)
    np.testing.assert_array_equal(batch.final_obs[0, 0], [3, 1])
    assert batch.step(np.array([[0], [1]])) == 1  # env 1's third step since its reset
    assert (batch.episode_return[1, 0], batch.episode_length[1]) == (1, 3)
    np.testing.assert_array_equal(batch.obs[:, 0], [[1, -1], [0, 0]])
    batch.close()


@pytest.mark.parametrize("mode", ["NextStep", "Disabled", "SameStep", None])
def test_the_gym_batch_takes_only_a_same_step_vector_env_or_one_that_names_no_mode(mode, monkeypatch):
    """The trainers read a SAME_STEP vector env's outputs (the next episode's first obs on the step that ends one):
    should Gymnasium hand back a vector env that says it steps in another autoreset mode, the batch is refused naming
    the mode and the env closed; one that names no mode in its metadata (older Gymnasium) is taken."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    made = []

    def make_vec(env_id, num_envs, vectorization_mode, vector_kwargs, **kwargs):
        assert vector_kwargs == {"autoreset_mode": AutoresetMode.SAME_STEP}
        vec = SyncVectorEnv([CountingStartEnv] * num_envs,
                            autoreset_mode=AutoresetMode(mode or "SameStep"))
        if mode is None:
            del vec.metadata["autoreset_mode"]
        made.append(vec)
        return vec

    monkeypatch.setattr(gymnasium, "make_vec", make_vec)
    if mode in ("SameStep", None):
        batch = GymBatch("FastvecTestStart-v0", 2, {})
        batch.reset(None, None)
        assert batch.step(np.array([[2], [0]])) == 0 and not made[0].closed
        # the trainers' layout (envs, agents=1, ...), as a native batch hands it out
        shapes = {name: getattr(batch, name).shape for name in ("obs", "final_obs", "rewards", "terminated",
                                                                "truncated", "episode_return", "episode_length",
                                                                "episode_stats")}
        assert shapes == {"obs": (2, 1, 2), "final_obs": (2, 1, 2), "rewards": (2, 1), "terminated": (2,),
                          "truncated": (2,), "episode_return": (2, 1), "episode_length": (2,), "episode_stats": (2, 0)}
        np.testing.assert_array_equal(batch.rewards, [[1], [-1]])
        batch.close()
        return
    with pytest.raises(ValueError, match=rf"gym:FastvecTestStart-v0's vector env steps in .*{AutoresetMode(mode).name} autoreset "
                                         r"mode, not the SAME_STEP mode the trainers need"):
        GymBatch("FastvecTestStart-v0", 2, {})
    assert made[0].closed
