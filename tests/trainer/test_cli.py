"""fastvec-train's shell: the command line and its errors, metrics.jsonl, checkpoints (round trip, resume,
architecture mismatch), --eval with a GIF, and fastvec-plot. The config itself: test_config.py."""

import json

import numpy as np
import pytest

from fastvec.trainer import checkpoint, cli, run
from fastvec.trainer.config import load_config

TINY = {"env": {"num_envs": 8}, "policy": {"kind": "mingru", "hidden": 8, "layers": 1},
        "train": {"total_timesteps": 8 * 16 * 3, "horizon": 16, "bptt_horizon": 8, "minibatch_size": 64,
                  "log_interval": 0.0, "checkpoint_interval": 2}}


def tiny_config(**sections):
    overrides = {k: dict(v) for k, v in TINY.items()}
    for section, values in sections.items():
        overrides.setdefault(section, {}).update(values)
    return load_config("cartpole", overrides)


# ---------------------------------------------------------------------------------------------- command line


def test_cli_reports_errors_on_stderr_with_exit_status_2(capsys):
    assert cli.main(["cartpole", "--train.nope=1"]) == 2
    assert "train.nope" in capsys.readouterr().err
    assert cli.main(["pacman"]) == 2
    assert "unknown env 'pacman'" in capsys.readouterr().err
    assert cli.main(["cartpole", "stray"]) == 2
    assert "stray" in capsys.readouterr().err


@pytest.mark.parametrize("filename,line", [("/mnt/full/x.npz", "No space left on device: /mnt/full/x.npz"),
                                           (None, "No space left on device")])
def test_an_unforeseen_os_error_is_one_line_with_its_file_if_it_names_one(filename, line, capsys, monkeypatch):
    def full_disk():
        raise OSError(28, "No space left on device", filename)

    monkeypatch.setattr(cli, "list_envs", full_disk)
    assert cli.main(["--list"]) == 2
    assert capsys.readouterr().err == f"fastvec-train: error: {line}\n"


def test_a_rank_of_a_launchers_job_is_not_trained_alone_on_the_cpu(tmp_path, capsys, monkeypatch):
    """Started by a launcher as rank 1 of 2 (torchrun's variables) with the CPU trainer: refused, naming the fix,
    never trained as a run of its own beside its ranks."""
    for key, value in {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": "29400"}.items():
        monkeypatch.setenv(key, value)
    assert cli.main(["cartpole", "--train.device=cpu", "--train.total_timesteps=2048",
                     f"--run-dir={tmp_path / 'run'}"]) == 2
    assert "several GPUs (2 ranks) need the CUDA trainer, but train.device=cpu" in capsys.readouterr().err


def test_cuda_request_without_the_cuda_trainer_says_so(capsys):
    if run.cuda_trainer_available():
        pytest.skip("the CUDA trainer is available here")
    assert cli.main(["cartpole", "--train.device=cuda"]) == 2
    assert "--train.device=cpu" in capsys.readouterr().err
    assert run.resolve_device("auto") == "cpu"


@pytest.mark.parametrize("flag,message", [
    ("--train.env_device=gpu", "train.env_device='gpu': use cuda"),
    ("--train.env_groups=0", "train.env_groups=0 must be >= 1"),
])
def test_host_env_settings_are_checked_before_training(flag, message, tmp_path, capsys):
    assert cli.main(["cartpole", "--train.device=cpu", flag, f"--run-dir={tmp_path / 'run'}"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize("args,message", [
    (["breakout", "--train.gpus=2"], "train.async=true with several GPUs (train.gpus=2) is not supported yet"),
    (["cartpole", "--train.gpus=2", "--train.env_device=cpu"], "use --train.gpus=1, or --train.env_device=cuda"),
])
def test_multi_gpu_combinations_are_refused_before_anything_starts(args, message, tmp_path, capsys):
    assert cli.main([*args, f"--run-dir={tmp_path / 'run'}"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_cpu_trainer_accepts_host_env_settings(tmp_path):
    """The CPU trainer always steps CPU envs: env_device=cpu and any env_groups change nothing."""
    config = tiny_config(train={"device": "cpu", "env_device": "cpu", "env_groups": 3})
    summary = run.train(config, tmp_path / "run", dashboard=False)
    assert summary["trainer"].device == "cpu" and summary["global_step"] == config["train"]["total_timesteps"]


def test_selfplay_on_cuda_without_the_cuda_trainer_names_the_missing_gpu(capsys):
    if run.cuda_trainer_available():
        pytest.skip("the CUDA trainer is available here")
    assert cli.main(["pong", "--selfplay.enabled=true", "--train.device=cuda"]) == 2
    err = capsys.readouterr().err
    assert "--train.device=cpu" in err and "self-play" not in err  # the GPU is missing; self-play runs on cuda


# ---------------------------------------------------------------------------------------------- training shell


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    config = tiny_config()
    summary = run.train(config, run_dir, dashboard=False)
    return config, run_dir, summary


def test_run_writes_config_metrics_and_checkpoints(tiny_run):
    config, run_dir, summary = tiny_run
    import tomllib
    # the config as given, with the device it ran on (the CPU trainer steps CPU envs)
    resolved = {**config, "train": {**config["train"], "device": "cpu", "env_device": "cpu"}}
    assert tomllib.loads((run_dir / "config.toml").read_text()) == resolved
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 3  # log_interval 0: one line per update
    for key in ["global_step", "time", "sps", "episode_return", "episode_length", "losses/policy_loss",
                "losses/value_loss", "losses/entropy", "losses/approx_kl", "charts/learning_rate"]:
        assert key in rows[-1], key
    assert [r["global_step"] for r in rows] == [128, 256, 384]
    names = sorted(p.name for p in (run_dir / "checkpoints").glob("*.npz"))
    assert names == ["update_000002.npz", "update_000003.npz"]


def test_a_run_shorter_than_log_interval_still_logs_every_5_percent(tmp_path):
    """A sub-second run (a GPU run of cartpole.toml) logs at every 5% of its updates, so the last line is the end
    of training and not the mean of every episode of the run."""
    config = tiny_config(train={"total_timesteps": 8 * 16 * 40, "log_interval": 1e6, "checkpoint_interval": 1000})
    run.train(config, tmp_path / "run", dashboard=False)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == list(range(2, 41, 2))


def test_checkpoint_round_trip_restores_the_exact_parameters_and_optimizer(tiny_run, tmp_path):
    config, run_dir, summary = tiny_run
    trainer = summary["trainer"]
    meta, state = checkpoint.load(checkpoint.latest(run_dir))
    np.testing.assert_array_equal(state["params"], trainer.params)
    np.testing.assert_array_equal(state["optimizer"], trainer.opt_state)
    assert meta["policy"] == {"kind": "mingru", "hidden": 8, "layers": 1, "highway": True}
    assert meta["counters"]["global_step"] == 384
    fresh = run.make_trainer(config)
    fresh.load_state_dict(state)
    obs = np.random.default_rng(0).standard_normal((1, 5, 4)).astype(np.float32)
    starts = np.ones((1, 5), np.float32)
    state0 = np.zeros((1, 5, 8), np.float32)
    from fastvec.trainer.reference import policy_forward
    a = policy_forward(fresh.spec, fresh.param_views, obs, starts, state0)[0]
    b = policy_forward(trainer.spec, trainer.param_views, obs, starts, state0)[0]
    np.testing.assert_array_equal(a, b)


def test_resume_continues_counters_and_appends_metrics(tiny_run, tmp_path):
    import shutil
    config, run_dir, _ = tiny_run
    copy = tmp_path / "resumed"
    shutil.copytree(run_dir, copy)
    assert cli.main(["cartpole", f"--resume={copy}", "--train.total_timesteps=640"]) == 0
    rows = [json.loads(line) for line in (copy / "metrics.jsonl").read_text().splitlines()]
    assert [r["global_step"] for r in rows][-3:] == [384, 512, 640]
    assert checkpoint.load(checkpoint.latest(copy))[0]["counters"]["update"] == 5


def test_resume_with_another_architecture_is_a_clear_error(tiny_run, tmp_path, capsys):
    import shutil
    _, run_dir, _ = tiny_run
    copy = tmp_path / "other"
    shutil.copytree(run_dir, copy)
    assert cli.main(["cartpole", f"--resume={copy}", "--policy.hidden=16", "--train.total_timesteps=640"]) == 2
    err = capsys.readouterr().err
    assert "another architecture" in err and "policy.hidden=8" in err and "policy.hidden=16" in err


def test_not_a_checkpoint_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros(3))
    with pytest.raises(checkpoint.CheckpointError, match="not a fastvec checkpoint"):
        checkpoint.load(bad)


def test_eval_plays_one_episode_per_env_and_writes_a_gif(tiny_run, tmp_path, capsys):
    pytest.importorskip("imageio")
    _, run_dir, _ = tiny_run
    gif = tmp_path / "play.gif"
    assert cli.main(["cartpole", f"--eval={run_dir}", "--eval.episodes=12", f"--eval.render={gif}"]) == 0
    out = capsys.readouterr().out
    assert "over 12 episodes" in out
    import imageio.v3 as iio
    frames = iio.imread(gif, index=None)
    assert frames.ndim == 4 and frames.shape[1:3] == (400, 600) and len(frames) >= 8
    assert len(np.unique(frames.reshape(len(frames), -1)[:, ::97], axis=0)) > 1, "the pole never moved"


def test_eval_of_a_checkpoint_on_another_env_is_an_error(tiny_run, capsys):
    _, run_dir, _ = tiny_run
    assert cli.main(["breakout", f"--eval={run_dir}"]) == 2
    assert "trained on cartpole" in capsys.readouterr().err


def test_plot_writes_a_png(tiny_run, tmp_path):
    pytest.importorskip("matplotlib")
    from fastvec.trainer import plot
    _, run_dir, _ = tiny_run
    out = tmp_path / "curve.png"
    assert plot.main([str(run_dir), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_dashboard_draws_only_when_enabled():
    import io
    from fastvec.trainer.dashboard import Dashboard
    metrics = {"global_step": 100, "time": 1.0, "sps": 100.0, "episode_return": 12.5, "losses/entropy": 0.6}
    quiet, piped = io.StringIO(), io.StringIO()
    Dashboard("t", 1000, enabled=False, stream=quiet).update(metrics, [])
    board = Dashboard("t", 1000, stream=piped)  # StringIO is not a TTY: the title, then plain progress lines
    board.update(metrics, [])
    board.update(metrics, [])  # within the line interval: no second line (the live panel: test_display.py)
    assert quiet.getvalue() == ""
    assert piped.getvalue().splitlines() == ["t", "step 100/1K  100 SPS  return 12.5  elapsed 0:01  ETA 0:09"]


def test_eval_plays_in_the_env_settings_the_checkpoint_was_trained_with(tmp_path, capsys):
    """A checkpoint trained against the Pong bot is evaluated against the bot, not in two-agent mode."""
    config = load_config("pong", {"env": {"num_envs": 4, "pong_bot": 1, "points": 1},
                                  "policy": {"hidden": 8, "layers": 1},
                                  "train": {"total_timesteps": 4 * 16, "horizon": 16, "bptt_horizon": 16,
                                            "minibatch_size": 32}})
    run.train(config, tmp_path / "pong", dashboard=False)
    assert cli.main(["pong", f"--eval={tmp_path / 'pong'}", "--eval.episodes=3"]) == 0
    out = capsys.readouterr().out
    assert "opponent_score" in out and "left_score" not in out


def test_eval_takes_the_checkpoints_env_parameters_and_the_command_lines_over_them(tmp_path, capsys):
    """A CartPole checkpoint trained with sutton_barto_reward=1 is evaluated with that reward (0 a step, -1 at
    the end: every episode -1), unless the command line sets the parameter itself (1 a step)."""
    config = tiny_config(env={"sutton_barto_reward": 1}, train={"total_timesteps": 8 * 16})
    run.train(config, tmp_path / "run", dashboard=False)
    assert cli.main(["cartpole", f"--eval={tmp_path / 'run'}", "--eval.episodes=4"]) == 0
    assert "cartpole: mean return -1 (std 0) over 4 episodes" in capsys.readouterr().out
    assert cli.main(["cartpole", f"--eval={tmp_path / 'run'}", "--eval.episodes=4", "--env.sutton_barto_reward=0"]) == 0
    out = capsys.readouterr().out
    assert "mean return -1 " not in out and "mean length" in out
    returns = float(out.split("mean return ")[1].split()[0])
    length = float(out.split("mean length ")[1].split()[0].rstrip(","))
    assert returns == length >= 8  # one reward a step: the return is the length


def test_auto_device_says_how_to_use_a_gpu_without_pycuda(monkeypatch, capsys):
    from fastvec.trainer import run

    monkeypatch.setattr(run, "cuda_trainer_available", lambda: False)
    monkeypatch.setattr(run.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(run.importlib.util, "find_spec", lambda name: None)
    assert run.resolve_device("auto") == "cpu"
    assert "pip install 'fastvec[cuda]'" in capsys.readouterr().err


def test_env_sizes_read_an_env_files_defines_and_say_what_they_lack(tmp_path):
    """`--list`'s sizes, read from the source: each size's values (several under #if branches), '?' for one the
    file leaves undefined, the action space's kind and the observation's element type, the file's own headers
    included."""
    (tmp_path / "common.h").write_text("#define NUM_AGENTS 2\n#if X\n#define NUM_AGENTS 1\n#endif\n")
    box = tmp_path / "box.h"
    box.write_text('#define OBS_SIZE 3\n#define ACTION_SPACE FV_BOX\n#define ACTION_DIMS 2\n#include "common.h"\n')
    assert cli.env_sizes(box) == {"OBS_SIZE": "3", "NUM_ACTIONS": "?", "NUM_AGENTS": "2/1", "ACTION_DIMS": "2",
                                  "actions": "Box(2 dims)", "obs": "3 floats"}
    grid = tmp_path / "grid.h"
    grid.write_text("#define OBS_T unsigned char\n#define NUM_ACTIONS 5\n#define ACTION_SPACE FV_MULTI_DISCRETE\n")
    assert cli.env_sizes(grid) == {"OBS_SIZE": "?", "NUM_ACTIONS": "5", "NUM_AGENTS": "?", "ACTION_DIMS": "?",
                                   "actions": "MultiDiscrete(? dims)", "obs": "? bytes"}
    plain = tmp_path / "plain.h"
    plain.write_text("#define NUM_ACTIONS 4\n")
    assert cli.env_sizes(plain)["actions"] == "Discrete(4)"


def test_env_sizes_of_built_in_games_are_their_gymnasium_spaces():
    import gymnasium as gym

    import fastvec  # noqa: F401
    from fastvec.native import source_path

    for key, gym_id in (("cartpole", "fastvec/CartPole"), ("breakout-minatar", "fastvec/Breakout-MinAtar"),
                        ("pendulum", "fastvec/Pendulum")):
        space = gym.make(gym_id)
        sizes = cli.env_sizes(source_path(key))
        assert sizes["obs"].split()[0] == str(int(np.prod(space.observation_space.shape))), key
        assert sizes["obs"].split()[1] == ("bytes" if space.observation_space.dtype == np.uint8 else "floats"), key
        if isinstance(space.action_space, gym.spaces.Discrete):  # MinAtar's: the minimal set's and the full one's
            assert sizes["actions"] == f"Discrete({sizes['NUM_ACTIONS']})", key
            assert str(space.action_space.n) == sizes["NUM_ACTIONS"].split("/")[0], key
        else:
            assert sizes["actions"] == f"Box({space.action_space.shape[0]} dims)", key


def test_print_config_prints_the_resolved_config_as_toml_and_exits_0(capsys, tmp_path):
    """--print-config: the whole resolved config (defaults, the env's, the command line's) as TOML that reads
    back to the same config; nothing trained, exit status 0 (scripts chain on it)."""
    from fastvec.trainer.config import load_toml

    assert cli.main(["cartpole", "--train.seed=7", "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "[train]" in printed
    path = tmp_path / "printed.toml"
    path.write_text(printed)
    assert load_toml(path) == load_config("cartpole", {"train": {"seed": 7}})
    assert cli.main(["cartpole", "--help-config"]) == 0
    assert "train.seed" in capsys.readouterr().out


def test_a_special_options_value_may_follow_it_as_the_next_word():
    """--run-dir DIR, --resume DIR, --eval PATH and --config FILE, as --name=VALUE, also as two words, the last
    two of the command line too; a special option with no value after it is refused naming the form."""
    from fastvec.trainer.config import ConfigError

    for name in ("run-dir", "resume", "eval", "config"):
        args = cli.parse_args(["cartpole", f"--{name}", "some/where"])
        assert args["env"] == "cartpole" and args[name] == "some/where", name
        with pytest.raises(ConfigError, match=rf"--{name} needs a value: --{name}=VALUE"):
            cli.parse_args(["cartpole", f"--{name}"])
