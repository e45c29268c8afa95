"""What fastvec-train prints and returns around training: usage and help, --list's tables, the config a --config file
gives, the run directory it picks, the one-line errors and exit statuses of what can go wrong, the summary and stop
lines of a run and the lines of --eval (a run's summary dict and an evaluation's result written by hand here, the
numbers worked out by hand)."""

import re
from pathlib import Path

import pytest

from fastvec.trainer import checkpoint, cli, config as config_mod, run
from fastvec.trainer.config import ConfigError, load_config

TINY = ["--env.num_envs=4", "--policy.hidden=8", "--policy.layers=1", "--train.horizon=16",
        "--train.bptt_horizon=8", "--train.minibatch_size=32", "--train.total_timesteps=64", "--train.device=cpu"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A one-update CartPole run trained with sutton_barto_reward=1: its run directory."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    overrides = {"env": {"num_envs": 4, "sutton_barto_reward": 1}, "policy": {"hidden": 8, "layers": 1},
                 "train": {"horizon": 16, "bptt_horizon": 8, "minibatch_size": 32, "total_timesteps": 64}}
    run.train(load_config("cartpole", overrides), run_dir, dashboard=False)
    return run_dir


# ---------------------------------------------------------------------------------------------- usage and help


def test_no_env_prints_the_usage_and_fails_and_help_prints_it_and_succeeds(capsys):
    assert cli.main([]) == 2
    assert capsys.readouterr().out == cli.USAGE + "\n"
    for argv in (["--help"], ["-h"], ["cartpole", "--help"]):
        assert cli.main(argv) == 0, argv
        assert capsys.readouterr().out == cli.USAGE + "\n", argv


def test_help_config_without_an_env_lists_the_defaults_and_with_one_that_envs_values(capsys):
    assert cli.main(["--help-config"]) == 0
    assert capsys.readouterr().out == config_mod.help_text() + "\n"
    assert cli.main(["breakout", "--help-config", "--train.seed=5"]) == 0
    assert capsys.readouterr().out == config_mod.help_text(load_config("breakout", {"train": {"seed": 5}})) + "\n"


def test_the_version_is_the_installed_packages_else_the_modules_own(monkeypatch):
    from importlib import metadata

    import fastvec

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", lambda name: "9.8.7" if name == "fastvec" else None)
    assert cli.version() == "9.8.7"
    monkeypatch.setattr(metadata, "version", not_installed)
    monkeypatch.setattr(fastvec, "__version__", "1.2.3", raising=False)
    assert cli.version() == "1.2.3"
    monkeypatch.delattr(fastvec, "__version__")
    assert cli.version() == "unknown"


def test_env_sizes_read_the_envs_own_headers_but_not_fastvec_h_nor_a_missing_one(tmp_path):
    (tmp_path / "fastvec.h").write_text("#define NUM_AGENTS 9\n#define OBS_SIZE 99\n")
    (tmp_path / "sizes.h").write_text("#define NUM_AGENTS 3\n")
    env = tmp_path / "env.h"
    env.write_text('#include "fastvec.h"\n#include "sizes.h"\n#include "gone.h"\n#define OBS_SIZE 6\n'
                   "#define NUM_ACTIONS 4\n")
    assert cli.env_sizes(env) == {"OBS_SIZE": "6", "NUM_ACTIONS": "4", "NUM_AGENTS": "3", "ACTION_DIMS": "?",
                                  "actions": "Discrete(4)", "obs": "6 floats"}


def test_parse_args_splits_the_env_the_flags_the_special_options_and_the_overrides():
    args = cli.parse_args(["--overwrite", "cartpole", "--train.seed=3", "--run-dir=out/x", "--print-config",
                           "--config", "c.toml", "--env.num_envs=8"])
    assert args == {"env": "cartpole", "overrides": {"train": {"seed": 3}, "env": {"num_envs": 8}},
                    "flags": {"overwrite", "print-config"}, "run-dir": "out/x", "resume": None, "eval": None,
                    "config": "c.toml"}
    assert cli.parse_args(["--version", "--list", "--help-config", "-h"])["flags"] == \
        {"version", "list", "help-config", "help"}
    assert cli.parse_args(["--resume=a=b"])["resume"] == "a=b"  # only the first '=' splits


# ---------------------------------------------------------------------------------------------- --list


def test_list_gives_each_envs_step_limit_and_each_parameters_default_range_and_meaning(capsys):
    import gymnasium as gym

    from fastvec.native import ENVS, smax
    from fastvec.native.mujoco import TASKS
    from fastvec.native.mujoco.host_batch import gym_id, train_name
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("registered envs")
    for name, info in ENVS.items():
        limit = f"{info.max_episode_steps:,}" if info.max_episode_steps else "none"
        line = next(i for i, text in enumerate(lines) if text.startswith(f"  {name} "))
        assert lines[line].endswith(f", step limit {limit}"), name
        params = [f"      --env.{key}={p.default}  [{p.low}, {p.high}]  {p.doc}" for key, p in info.params.items()]
        assert lines[line + 1:line + 1 + len(params)] == params, name
    assert "step limit 10,000" in out  # breakout's 10000 with its thousands separator
    for task in TASKS:  # every MuJoCo task with Gymnasium's own v5 step limit
        limit = gym.spec(gym_id(task).split("/", 1)[1]).max_episode_steps
        assert re.search(rf"^  {train_name(task)} +{gym_id(task)} +Box actions, float observations, step limit "
                         rf"{limit:,}$", out, re.M), task
    smax_line = next(text for text in lines if text.startswith("  smax:NAME "))
    assert smax_line.endswith(f"NAME one of {', '.join(smax.SCENARIOS)}; step limit {smax.TIME_LIMIT}")
    assert lines[-1] == "config keys and their values: fastvec-train --help-config (fastvec-train ENV --help-config)"


# ---------------------------------------------------------------------------------------------- env suggestions


@pytest.mark.parametrize("typed,hint", [("hoper", "'hopper'"), ("simple_sprad", "'simple_spread'"),
                                        ("HalfCheeta", "'halfcheetah'")])
def test_a_misspelt_mujoco_task_or_team_gets_its_name_suggested(typed, hint, capsys):
    assert cli.main([typed, "--train.device=cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fastvec-train: error: unknown env '{typed.lower()}'; did you mean {hint}"), err
    assert err.endswith("(fastvec-train gym:CartPole-v1))\n")  # the rest of the message kept, in parentheses


def test_suggest_env_leaves_alone_what_it_cannot_improve():
    message = "unknown env 'cartpol'; known: a, b"
    assert cli.suggest_env(message, "cartpol") == "unknown env 'cartpol'; did you mean 'cartpole'? (known: a, b)"
    assert cli.suggest_env("unknown env 'cartpol'", "cartpol") == "unknown env 'cartpol'; did you mean 'cartpole'?"
    assert cli.suggest_env("unknown env 'cartpol'; did you mean 'x'?", "cartpol") == \
        "unknown env 'cartpol'; did you mean 'x'?"
    assert cli.suggest_env(message, None) == message
    assert cli.suggest_env("train.nope: unknown key", "cartpol") == "train.nope: unknown key"
    assert cli.suggest_env("unknown env 'zzzzqqq'; known: a", "zzzzqqq") == "unknown env 'zzzzqqq'; known: a"
    both = cli.suggest_env("unknown env 'breakout-mina'", "breakout-mina")  # two close names: the closest first
    assert both == "unknown env 'breakout-mina'; did you mean 'breakout-minatar' or 'breakout'?"


# ---------------------------------------------------------------------------------------------- --config


def test_a_config_file_gives_values_under_the_command_lines(tmp_path, capsys):
    path = tmp_path / "best.toml"
    path.write_text('[env]\nname = "cartpole"\nnum_envs = 12\n[train]\nseed = 4\nlearning_rate = 0.002\n')
    assert cli.main(["cartpole", f"--config={path}", "--train.seed=9", "--policy.hidden=16", "--print-config"]) == 0
    printed = tmp_path / "printed.toml"
    printed.write_text(capsys.readouterr().out)
    assert config_mod.load_toml(printed) == load_config(
        "cartpole", {"env": {"num_envs": 12}, "train": {"seed": 9, "learning_rate": 0.002}, "policy": {"hidden": 16}})


@pytest.mark.parametrize("text,argv,message", [
    (None, ["cartpole"], "--config={path}: no such file; give a TOML of config values"),
    ('[env]\nname = "breakout"\n', ["cartpole"], "--config={path} is a config for 'breakout', not 'cartpole'; give "
                                                 "it with fastvec-train breakout --config={path}"),
    ("[train]\nnope = 1\n", ["cartpole"], "{path}"),
    ("[train]\nseed = 1\n", ["cartpole", "--resume={run}"], "--config and --resume: a resumed run keeps its own "
                                                            "config.toml"),
])
def test_a_config_file_that_cannot_apply_is_one_line_naming_it(text, argv, message, tmp_path, capsys):
    path = tmp_path / "given.toml"
    if text is not None:
        path.write_text(text)
    run_dir = tmp_path / "run"
    argv = [a.format(run=run_dir) for a in argv]
    assert cli.main([*argv, f"--config={path}", f"--run-dir={tmp_path / 'new'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastvec-train: error: ") and err.count("\n") == 1
    assert message.format(path=path) in err
    assert not (tmp_path / "new").exists()


# ---------------------------------------------------------------------------------------------- the run directory


def test_the_default_run_directory_is_made_under_runs_env_but_a_rank_above_0_only_names_one(tmp_path, monkeypatch):
    from fastvec.trainer import distributed
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(distributed, "launched", lambda: False)
    made = cli.default_run_dir("gym:ALE/Pong-v5")
    assert made.parent == Path("runs") / "gym-ALE-Pong-v5" and made.is_dir()
    for rank, makes in ((1, False), (0, True)):
        monkeypatch.setattr(distributed, "launched", lambda: True)
        monkeypatch.setattr(distributed, "discover", lambda: type("Job", (), {"rank": rank})())
        path = cli.default_run_dir(f"rank{rank}")
        assert path.parent == Path("runs") / f"rank{rank}" and path.is_dir() == makes, rank


def fake_train(monkeypatch, summary: dict) -> list:
    """run.train replaced by one that returns `summary` (completed with a finished run's keys); the calls' arguments
    are appended to the list returned."""
    calls = []
    full = {"interrupted": False, "signal": None, "checkpoint": None, "saved_at_stop": False, "metrics": {},
            "global_step": 0, "recent_returns": [], "elapsed": 0.0, "startup": 0.0, "sps": 0.0, "eval_time": 0.0,
            "train_sps": 0.0, **summary}

    def train(config, run_dir, resume=False, overwrite=False, **kwargs):
        calls.append({"env": config["env"]["name"], "run_dir": run_dir, "resume": resume, "overwrite": overwrite})
        return full

    monkeypatch.setattr(run, "train", train)
    return calls


def test_a_new_run_without_run_dir_goes_to_a_new_directory_under_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    calls = fake_train(monkeypatch, {"metrics": {"episode_return": 1.0}})
    assert cli.main(["cartpole"]) == 0
    (call,) = calls
    assert call["run_dir"].parent == Path("runs") / "cartpole" and call["run_dir"].is_dir()
    assert (call["resume"], call["overwrite"]) == (False, False)
    assert f"run dir {call['run_dir']};" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["--overwrite", "--resume={d}"], "--overwrite and --resume: --resume continues the run in RUN_DIR, --overwrite "
                                      "replaces it; drop one"),
    (["--overwrite"], "--overwrite replaces the run in a given directory; add --run-dir=PATH"),
])
def test_overwrite_with_resume_or_without_a_run_directory_is_refused(argv, message, tmp_path, monkeypatch, capsys):
    calls = fake_train(monkeypatch, {})
    monkeypatch.setattr(config_mod, "load_run_config", lambda path, env, overrides: load_config(env, overrides))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["cartpole", *[a.format(d=tmp_path / "run") for a in argv]]) == 2
    assert capsys.readouterr().err == f"fastvec-train: error: {message}\n"
    assert calls == [] and not (tmp_path / "runs").exists()


def test_resume_and_overwrite_reach_training_as_asked(tmp_path, monkeypatch, capsys):
    calls = fake_train(monkeypatch, {"metrics": {"episode_return": 1.0}})
    monkeypatch.setattr(config_mod, "load_run_config", lambda path, env, overrides: load_config(env, overrides))
    assert cli.main(["cartpole", f"--resume={tmp_path / 'a'}"]) == 0
    assert cli.main(["cartpole", "--overwrite", f"--run-dir={tmp_path / 'b'}"]) == 0
    assert [(c["run_dir"], c["resume"], c["overwrite"]) for c in calls] == \
        [(tmp_path / "a", True, False), (tmp_path / "b", False, True)]


# ---------------------------------------------------------------------------------------------- a run's last lines


def test_a_finished_run_prints_its_steps_speed_start_up_returns_and_where_it_is(tmp_path, monkeypatch, capsys):
    fake_train(monkeypatch, {"trained_steps": 1_234_567, "global_step": 1_300_000, "elapsed": 12.34, "sps": 100_045.2,
                             "startup": 1.234, "recent_returns": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0],
                             "metrics": {"episode_return": 236.857}, "checkpoint": tmp_path / "c.npz"})
    assert cli.main(["cartpole", f"--run-dir={tmp_path}"]) == 0
    # the last 5 logs' returns: (3 + 4 + 5 + 6 + 100) / 5 = 23.6; the steps the updates trained on, not global_step
    assert capsys.readouterr().out == (
        f"fastvec-train cartpole: 1.23M steps in 12.3 s (100K SPS; start-up 1.23 s before that); mean return "
        f"(last 5 logs) 23.6; last log 236.9; run dir {tmp_path}; checkpoint {tmp_path / 'c.npz'}\n")


def test_a_run_with_evaluations_gives_training_and_evaluation_seconds_apart(tmp_path, monkeypatch, capsys):
    fake_train(monkeypatch, {"global_step": 4096, "elapsed": 10.0, "eval_time": 4.0, "sps": 409.6, "train_sps": 682.7,
                             "startup": 0.5, "recent_returns": [], "metrics": {"episode_return": None}})
    assert cli.main(["pong", f"--run-dir={tmp_path}"]) == 0
    assert capsys.readouterr().out == (
        f"fastvec-train pong: 4.1K steps in 6.0 s of training (682.7 SPS) and 4.0 s of evaluations, 10.0 s wall "
        f"(409.6 SPS; start-up 0.50 s before that); mean return (last 0 logs) n/a; last log --; run dir {tmp_path}; "
        f"checkpoint None\n")


def test_a_run_with_nothing_left_to_train_says_how_to_train_on(tmp_path, monkeypatch, capsys):
    fake_train(monkeypatch, {"global_step": 20_000, "metrics": {}})
    monkeypatch.setattr(config_mod, "load_run_config", lambda path, env, overrides: load_config(env, overrides))
    assert cli.main(["cartpole", f"--resume={tmp_path}", "--train.total_timesteps=20000"]) == 0
    assert capsys.readouterr().out == (f"fastvec-train: nothing to do, {tmp_path} already holds 20K steps "
                                       f"(train.total_timesteps=20,000); raise it to train on\n")


@pytest.mark.parametrize("summary,code,said", [
    ({"signal": "SIGTERM", "saved_at_stop": True, "checkpoint": "ck/update_000007.npz"}, 143,
     "stopped by SIGTERM at update 7 (step 896); saved ck/update_000007.npz"),
    ({"signal": "SIGINT", "saved_at_stop": False, "checkpoint": "ck/update_000006.npz"}, 130,
     "stopped by SIGINT at update 7 (step 896); nothing saved since ck/update_000006.npz"),
    ({"signal": None, "saved_at_stop": False, "checkpoint": None}, 130,
     "stopped by SIGINT at update 7 (step 896); no checkpoint yet, so a resume starts over"),
])
def test_a_stopped_run_says_what_was_saved_and_how_to_resume_with_the_signals_status(summary, code, said, tmp_path,
                                                                                     monkeypatch, capsys):
    fake_train(monkeypatch, {"interrupted": True, "update": 7, "trained_steps": 896, "global_step": 1024, **summary})
    assert cli.main(["cartpole", f"--run-dir={tmp_path}"]) == code
    out, err = capsys.readouterr()
    assert out == "" and err == f"fastvec-train: {said}; continue with: fastvec-train cartpole --resume={tmp_path}\n"


# ---------------------------------------------------------------------------------------------- failures


@pytest.mark.parametrize("error,code,line", [
    (ConfigError("two\n   lines  of\twords"), 2, "fastvec-train: error: two lines of words"),
    (checkpoint.CheckpointError("bad file"), 2, "fastvec-train: error: bad file"),
    (ImportError("no module named x; pip install x"), 2, "fastvec-train: error: no module named x; pip install x"),
    (MemoryError(), 2, "fastvec-train: error: out of memory (MemoryError); lower env.num_envs (or train.horizon, "
                       "policy.hidden)"),
    (KeyboardInterrupt(), 130, "fastvec-train: interrupted before training began; nothing was saved"),
    (OSError(5, "Input/output error"), 2, "fastvec-train: error: Input/output error"),
])
def test_each_failure_before_training_is_one_line_with_its_exit_status(error, code, line, monkeypatch, capsys):
    def fail():
        raise error

    monkeypatch.setattr(cli, "list_envs", fail)
    assert cli.main(["--list"]) == code
    assert capsys.readouterr() == ("", line + "\n")


def test_out_of_memory_while_training_names_the_configs_sizes(tmp_path, monkeypatch, capsys):
    def train(*args, **kwargs):
        raise MemoryError("Unable to allocate 2 GiB")

    monkeypatch.setattr(run, "train", train)
    assert cli.main(["cartpole", "--env.num_envs=24", "--train.horizon=64", "--policy.hidden=16",
                     f"--run-dir={tmp_path}"]) == 2
    assert capsys.readouterr().err == (
        "fastvec-train: error: out of memory (Unable to allocate 2 GiB) with env.num_envs=24, train.horizon=64, "
        "policy.hidden=16; lower env.num_envs (or train.horizon, policy.hidden)\n")


def test_a_closed_stdout_ends_quietly_with_sigpipes_status(monkeypatch, capsys):
    def closed():
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "list_envs", closed)
    assert cli.main(["--list"]) == 141
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------- --eval


def test_eval_refuses_resume_and_run_dir(trained, tmp_path, capsys):
    for extra in ([f"--run-dir={tmp_path / 'x'}"], [f"--resume={trained}"]):
        assert cli.main(["cartpole", f"--eval={trained}", *extra]) == 2, extra
        assert capsys.readouterr().err == ("fastvec-train: error: --eval plays a checkpoint; it takes neither "
                                           "--resume nor --run-dir\n"), extra
    assert not (tmp_path / "x").exists()


def test_eval_of_a_run_directory_plays_its_newest_checkpoint_in_its_env_settings(trained, monkeypatch, capsys):
    played = []

    def evaluate(config, path, render=""):
        played.append((config["env"]["sutton_barto_reward"], config["env"]["num_envs"], Path(path), render))
        return {"env": "cartpole", "checkpoint": str(path), "episodes": 4, "episode_return": -1.0,
                "episode_return_std": 0.0, "episode_length": 9.5}

    monkeypatch.setattr(run, "evaluate", evaluate)
    assert cli.main(["cartpole", f"--eval={trained}", "--eval.episodes=4"]) == 0
    newest = checkpoint.latest(trained)
    # the checkpoint's env parameters, but not its num_envs (an evaluation plays eval.episodes envs)
    assert played == [(1, load_config("cartpole", {})["env"]["num_envs"], newest, "")]
    assert cli.main(["cartpole", f"--eval={newest}", "--env.sutton_barto_reward=0", "--eval.render=a.gif"]) == 0
    assert played[-1] == (0, load_config("cartpole", {})["env"]["num_envs"], newest, "a.gif")


def test_eval_prints_the_mean_return_its_spread_length_stats_and_the_render(trained, monkeypatch, capsys):
    result = {"env": "cartpole", "checkpoint": "c.npz", "episodes": 12, "episode_return": 21.456789,
              "episode_return_std": 0.125, "episode_length": 20.0, "score": 3.0, "lives": 0.0123456,
              "render": "out/play.gif"}
    monkeypatch.setattr(run, "evaluate", lambda config, path, render="": dict(result))
    assert cli.main(["cartpole", f"--eval={trained}"]) == 0
    assert capsys.readouterr().out == ("cartpole: mean return 21.46 (std 0.125) over 12 episodes, mean length 20, "
                                       "score 3, lives 0.01235\nwrote out/play.gif\n")
    del result["render"], result["score"], result["lives"]
    assert cli.main(["cartpole", f"--eval={trained}"]) == 0
    assert capsys.readouterr().out == "cartpole: mean return 21.46 (std 0.125) over 12 episodes, mean length 20\n"


@pytest.mark.parametrize("device,where", [("cpu", "CPU"), ("cuda", "GPU")])
def test_eval_against_an_opponent_prints_each_match_where_the_games_ran_and_the_elo(device, where, tmp_path,
                                                                                     monkeypatch, capsys):
    from fastvec.trainer import selfplay
    a = tmp_path / "a.npz"
    monkeypatch.setattr(checkpoint, "load", lambda path: ({"env": "pong"}, {}))
    monkeypatch.setattr(run, "resolve_device", lambda requested: device)
    asked = []

    def evaluate_checkpoints(config, path, opponent, on_gpu):
        asked.append((Path(path), opponent, on_gpu))
        return {"env": "pong", "games": 8, "seconds": 1.234, "elo": {"A": 1012.4, "bot0": 987.6},
                "matches": [{"opponent": "bot level 0", "score": 0.6875, "wins": 5, "ties": 1, "losses": 2},
                            {"opponent": "bot level 1", "score": 0.0, "wins": 0, "ties": 0, "losses": 8}]}

    monkeypatch.setattr(selfplay, "evaluate_checkpoints", evaluate_checkpoints)
    assert cli.main(["pong", f"--eval={a}", "--eval.opponent=bot"]) == 0
    assert asked == [(a, "bot", device == "cuda")]
    assert capsys.readouterr().out == (
        f"pong: {a} vs bot level 0: score 0.688 over 8 games (5 wins, 1 ties, 2 losses)\n"
        f"pong: {a} vs bot level 1: score 0 over 8 games (0 wins, 0 ties, 8 losses)\n"
        f"16 games played on the {where} in 1.23 s\n"
        f"Elo (these games only): A 1012, bot0 988\n")
