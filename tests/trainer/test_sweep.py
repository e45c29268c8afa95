"""fastvec-sweep: search-space entries parse into Optuna's distributions and bad ones are clear errors; a real sweep
of the CPU trainer on CartPole runs end to end; its best.toml trains to the same weights through fastvec-train
--config; pruned trials and trials that reach the target stop early; a second process joins the same study
through its storage without colliding. CPU only, tiny CartPole runs."""

import importlib.util
import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

from fastvec.native import cpu
from fastvec.trainer import checkpoint, cli, run, sweep
from fastvec.trainer.config import (
    CONFIG_DIR,
    ConfigError,
    load_config,
    load_run_config,
    to_toml,
)
from fastvec.trainer.sweep_space import parse_entry, parse_space, split_arguments

optuna = pytest.importorskip("optuna")

STEPS = 8 * 16  # agent steps per update of a tiny run (8 envs x horizon 16)
TINY = ["--train.device=cpu", "--env.num_envs=8", "--policy.hidden=8", "--policy.layers=1", "--train.horizon=16",
        "--train.bptt_horizon=8", "--train.minibatch_size=64", "--sweep.sampler_seed=0"]


def sweep_args(folder: Path, *extra: str) -> list[str]:
    return ["cartpole", *TINY, f"--sweep.dir={folder}", *extra]


def trial_lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------------------------------------- the search space


def test_search_space_entries_parse_into_optuna_distributions():
    D = optuna.distributions
    assert parse_entry("train.learning_rate", "1e-4:1e-1:log") == ("search", D.FloatDistribution(1e-4, 0.1, log=True))
    assert parse_entry("train.gae_lambda", "0.8:0.99") == ("search", D.FloatDistribution(0.8, 0.99))
    assert parse_entry("train.ent_coef", "0:0.02:0.005") == ("search", D.FloatDistribution(0.0, 0.02, step=0.005))
    assert parse_entry("train.update_epochs", "1:4") == ("search", D.IntDistribution(1, 4))
    assert parse_entry("env.num_envs", "64:1024:log") == ("search", D.IntDistribution(64, 1024, log=True))
    assert parse_entry("train.horizon", "10:20:10") == ("search", D.IntDistribution(10, 20, step=10))
    assert parse_entry("policy.hidden", "32, 64,128") == ("search", D.CategoricalDistribution([32, 64, 128]))
    assert parse_entry("train.optimizer", "adam,muon") == ("search", D.CategoricalDistribution(["adam", "muon"]))
    assert parse_entry("train.async", "true,false") == ("search", D.CategoricalDistribution([True, False]))
    assert parse_entry("train.learning_rate", "1,2") == ("search", D.CategoricalDistribution([1.0, 2.0]))
    assert parse_entry("env.frameskip", "2:6", "breakout") == ("search", D.IntDistribution(2, 6))  # an env parameter
    # one value fixes the key for every trial, of the key's type
    assert parse_entry("train.total_timesteps", "200_000") == ("fixed", 200_000)
    assert parse_entry("train.learning_rate", "1") == ("fixed", 1.0)
    assert parse_entry("train.optimizer", "adam") == ("fixed", "adam")
    assert parse_entry("train.total_timesteps", 5000) == ("fixed", 5000)  # a TOML value
    space = parse_space({"train.learning_rate": "1e-3:1e-2:log", "policy.hidden": "16,32", "train.seed": "4"})
    assert list(space.distributions) == ["train.learning_rate", "policy.hidden"]
    assert space.overrides({"policy.hidden": 16}) == {"train": {"seed": 4}, "policy": {"hidden": 16}}
    assert space.overrides({"policy.hidden": 16}, only=set()) == {"policy": {"hidden": 16}}


@pytest.mark.parametrize("path, spec, message", [
    ("train.learnin_rate", "1e-3:1e-2", "did you mean train.learning_rate"),
    ("train.learning_rate", "1e-2:1e-3", "the low end 0.01 must be below the high end 0.001"),
    ("train.learning_rate", "1e-3:1e-3", "the low end 0.001 must be below the high end 0.001"),
    ("train.update_epochs", "4:4", "the low end 4 must be below the high end 4"),
    ("train.learning_rate", "0:0.1:log", "train.learning_rate=0.0 must be > 0"),
    ("train.ent_coef", "0:0.1:log", "a log range needs a low end > 0"),
    ("train.update_epochs", "1:4.5", "'4.5' is not an int"),
    ("train.update_epochs", "1:2:3:4", "takes lo:hi, lo:hi:log, lo:hi:STEP, a,b,c or one value"),
    ("train.ent_coef", "0:0.1:0", "the step 0 must be > 0"),
    ("train.gamma", "0.9:1.5", "train.gamma=1.5 must be in [0, 1]"),
    ("train.async", "0:1", "(a bool: true,false)"),
    ("train.async", "true,maybe", "search it as true,false"),
    ("policy.hidden", "32,,64", "an empty choice"),
    ("policy.hidden", "32,64,32", "a choice is given twice"),
    ("policy.hidden", [32, 64], 'give choices as one string, "32,64"'),
    ("sweep.trials", "1:4", "the sweep's own settings are not searched"),
    ("env.name", "cartpole,breakout", "a sweep trains one env on one process"),
    ("learning_rate", "1:2", "give a config key as section.key"),
])
def test_bad_search_space_entries_are_clear_errors(path, spec, message):
    with pytest.raises(ConfigError) as err:
        parse_entry(path, spec)
    assert message in str(err.value)


def test_the_command_line_splits_into_settings_and_entries_kept_as_written():
    settings, entries = split_arguments(["--sweep.trials=3", "--train.horizon=10:20:10", "--policy.hidden", "8,16",
                                         "--sweep.objective", "pareto"])
    assert settings == {"trials": 3, "objective": "pareto"}
    assert entries == {"train.horizon": "10:20:10", "policy.hidden": "8,16"}  # 10:20:10 is not TOML's time here
    for bad, message in ((["lr=3"], "fastvec-sweep takes --sweep.key=value"), (["--train.seed"], "needs a value"),
                         (["--lr=0.5"], "unexpected argument '--lr=0.5'"),  # a dot in the value, none in the key
                         (["--sweep.train.seed=3"], "give a search-space entry as --train.seed=SPEC")):
        with pytest.raises(ConfigError, match=message):
            split_arguments(bad)


def test_sweep_settings_are_config_keys_and_env_tomls_carry_a_search_space(tmp_path):
    assert load_config("cartpole", {"sweep": {"trials": 3}})["sweep"]["trials"] == 3
    with pytest.raises(ConfigError, match="did you mean sweep.trials"):
        load_config("cartpole", {"sweep": {"trails": 3}})
    with pytest.raises(ConfigError, match="use score, time_to_target or pareto"):
        load_config("cartpole", {"sweep": {"objective": "fastest"}})
    config = load_config("cartpole")
    assert config["sweep"]["objective"] == "time_to_target" and "train.learning_rate" in config["sweep"]
    assert tomllib.loads(to_toml(config))["sweep"] == config["sweep"]  # the dotted entries are quoted keys
    (tmp_path / "config.toml").write_text(to_toml(config))  # a run's config.toml with them resumes
    assert load_run_config(tmp_path, "cartpole")["sweep"] == config["sweep"]
    given = tmp_path / "given.toml"  # layers: [sweep]'s fixed values < --config < the command line
    given.write_text('[train]\nseed = 5\n[sweep]\n"train.seed" = "9"\n"train.gamma" = "0.9"\n"train.vf_coef" = 0.7\n')
    plan = sweep.make_plan("cartpole", {}, {"train.gamma": "0.95"}, str(given))
    train = plan.trial_config({"train.learning_rate": 0.01})["train"]
    assert (train["seed"], train["gamma"], train["vf_coef"], train["learning_rate"]) == (5, 0.95, 0.7, 0.01)
    alone = sweep.make_plan("cartpole", {"env_space": False}, {"train.learning_rate": "1e-3:1e-2"}, None)
    assert list(alone.space.distributions) == ["train.learning_rate"]  # cartpole.toml's entries left out
    breakout = load_config("breakout")["sweep"]
    assert breakout["metric"] == "score" and breakout["target"] == 850
    assert len(parse_space({k: v for k, v in breakout.items() if "." in k}, "breakout").distributions) >= 10


SWEPT_ENVS = sorted(path.stem for path in CONFIG_DIR.glob("*.toml")
                    if path.stem != "default" and "sweep" in tomllib.loads(path.read_text()))


@pytest.mark.parametrize("env", SWEPT_ENVS)
def test_every_shipped_sweep_section_makes_a_plan(env):
    """`fastvec-sweep ENV` with nothing else works for each env whose config carries a [sweep] section: its
    settings are valid together and every entry of its search space parses."""
    plan = sweep.make_plan(env, {}, {}, None)
    assert plan.space.distributions and plan.settings["objective"] in ("score", "time_to_target", "pareto")


def test_breakout_seaquest_and_asterix_minatar_carry_a_search_space():
    assert {"breakout-minatar", "seaquest-minatar", "asterix-minatar"} <= set(SWEPT_ENVS)


@pytest.mark.parametrize("extra, message", [
    (["--sweep.objective=time_to_target", "--sweep.trial_seconds=0"], "needs a time budget per trial"),
    (["--sweep.trials=0", "--sweep.timeout=0"], "would sweep forever"),
    (["--sweep.metric=score"], "sweep.metric='score': cartpole logs episode_return; use one of them"),
    (["--train.gpus=2", "--train.device=cuda"], "run one fastvec-sweep process per GPU"),
    (["--train.gpus=1,2"], "'train.gpus': a sweep trains one env on one process"),
    (["--train.learning_rate=0.01", "--train.update_epochs=1", "--train.gae_lambda=0.9"], "the search space is empty"),
    (["--sweep.storage=nosuchdb://x"], "sweep.storage='nosuchdb://x'"),
    (["--train.async=1"], "train.async in the command line = 1 must be a bool"),  # a fixed value: the key's own check
])
def test_bad_sweeps_are_one_line_errors(tmp_path, capsys, extra, message):
    assert sweep.main(sweep_args(tmp_path, "--sweep.trials=1", *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastvec-sweep: error: ") and message in err and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------- real sweeps


def test_a_real_sweep_runs_end_to_end(tmp_path, capsys):
    before = cpu.load.cache_info().misses
    folder = tmp_path / "sweep"
    assert sweep.main(sweep_args(folder, "--sweep.objective=score", "--sweep.trial_seconds=0", "--sweep.trials=4",
                                 f"--train.total_timesteps={8 * STEPS}")) == 0
    assert cpu.load.cache_info().misses - before <= 1  # the env is compiled (or loaded) once for every trial
    out = capsys.readouterr().out
    assert "fastvec-sweep cartpole: study cartpole-score" in out and "trials/h" in out and "best return" in out
    lines = trial_lines(folder)
    assert sorted(line["trial"] for line in lines) == [0, 1, 2, 3]
    for line in lines:
        trial_dir = folder / "trials" / f"{line['trial']:04d}"
        assert {p.name for p in trial_dir.iterdir()} >= {"trial.toml", "config.toml", "metrics.jsonl", "trial.json"}
        assert json.loads((trial_dir / "trial.json").read_text())["trial"] == line["trial"]
        if line["state"] == "COMPLETE":
            assert line["results"][0]["steps"] == 8 * STEPS and line["results"][0]["startup"] >= 0
        sampled = tomllib.loads((trial_dir / "trial.toml").read_text())
        assert sampled["train"]["learning_rate"] == pytest.approx(line["params"]["train.learning_rate"])
        assert "sweep" not in sampled  # trial.toml trains as is; config.toml is the run's own record
    summary = json.loads((folder / "summary.json").read_text())
    best = tomllib.loads((folder / "best.toml").read_text())
    assert best["train"]["learning_rate"] == pytest.approx(summary["best"]["params"]["train.learning_rate"])
    if importlib.util.find_spec("matplotlib") is not None:  # the plot extra
        assert (folder / "plots" / "front.png").stat().st_size > 0 and (folder / "plots" / "params.png").is_file()
    # --report rewrites the summary from the storage alone, without running a trial
    assert sweep.main(sweep_args(folder, "--report", "--sweep.study=cartpole-score")) == 0
    assert "study cartpole-score: 4 trials" in capsys.readouterr().out and len(trial_lines(folder)) == 4


def test_the_best_toml_trains_to_the_same_weights_through_fastvec_train(tmp_path):
    folder = tmp_path / "sweep"
    assert sweep.main(sweep_args(folder, "--sweep.objective=score", "--sweep.trial_seconds=0", "--sweep.trials=2",
                                 "--sweep.keep_checkpoints=true", f"--train.total_timesteps={6 * STEPS}")) == 0
    number = json.loads((folder / "summary.json").read_text())["best"]["trial"]
    assert cli.main(["cartpole", f"--config={folder / 'best.toml'}", f"--run-dir={tmp_path / 'rerun'}"]) == 0
    trial = checkpoint.latest(folder / "trials" / f"{number:04d}")
    rerun = checkpoint.latest(tmp_path / "rerun")
    assert np.array_equal(checkpoint.load(trial)[1]["params"], checkpoint.load(rerun)[1]["params"])


class StubTrial:
    """The parts of an Optuna trial that run_trial uses, with a pruner that always says prune."""

    number, params = 0, {}

    def __init__(self):
        self.reports, self.attrs = [], {}

    def set_user_attr(self, key, value):
        self.attrs[key] = value

    def report(self, value, step):
        self.reports.append((step, value))

    def should_prune(self):
        return True


class Quiet:
    def running(self, *args):
        pass


def test_pruned_trials_and_trials_that_reach_the_target_stop_early(tmp_path):
    total = 40 * STEPS
    plan = sweep.make_plan("cartpole", {"objective": "score", "trial_seconds": 0.0, "dir": str(tmp_path)},
                           split_arguments(TINY[:-1] + [f"--train.total_timesteps={total}"])[1], None)
    trial = StubTrial()
    record = sweep.run_trial(plan, trial, Quiet())
    assert record["state"] == "PRUNED" and trial.reports
    assert 0 < record["results"][0]["steps"] < total  # stopped at the first report after the warm-up
    assert tomllib.loads(trial.attrs["config"])["train"]["total_timesteps"] == total
    # time_to_target: a run ends at the first log that reaches the target, and that log's time is the value
    plan = sweep.make_plan("cartpole", {"objective": "time_to_target", "target": 5.0, "trial_seconds": 30.0,
                                        "pruner": "none", "dir": str(tmp_path / "hit")},
                           split_arguments(TINY[:-1] + [f"--train.total_timesteps={total}"])[1], None)
    record = sweep.run_trial(plan, StubTrial(), Quiet())
    result = record["results"][0]
    assert record["state"] == "COMPLETE" and result["steps"] < total and result["hit_steps"] == result["steps"]
    assert result["hit_seconds"] == result["seconds"] > 0  # the hit's training seconds: the run ended at that log
    assert record["values"] == [result["hit_seconds"]]


def test_the_watchs_own_time_is_not_training_time(tmp_path):
    # a sweep's pruner reads and writes its database inside watch(); a trial's seconds (its objective, its budget)
    # must be what the same run takes without it, as fastvec-train times it
    config = load_config("cartpole", {"train": {"device": "cpu", "total_timesteps": 30 * STEPS, "horizon": 16,
                                                "bptt_horizon": 8, "minibatch_size": 64},
                                      "env": {"num_envs": 8}, "policy": {"hidden": 8, "layers": 1}})
    given = []

    def slow_watch(metrics, seconds, steps):
        given.append(seconds)
        time.sleep(0.1)
        return False

    summary = run.train(config, tmp_path, dashboard=False, watch=slow_watch)
    slept = 0.1 * len(given)
    assert len(given) == 30 and summary["elapsed"] < slept
    assert given[-1] < slept - 0.1 and given == sorted(given)
    logged = [json.loads(line)["time"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert logged[-1] <= summary["elapsed"] < slept


@pytest.mark.parametrize("reduce, expected", [
    ("mean", {"score": [800.0], "pareto": [800.0, 1.0], "time_to_target": [(0.8 + 3.0 * 1.1) / 2]}),
    ("worst", {"score": [765.0], "pareto": [765.0, 1.2], "time_to_target": [3.0 * 1.1]}),
])
def test_seed_reduce_ranks_a_trial_by_the_mean_or_its_unluckiest_seed(reduce, expected, tmp_path):
    # seed 1 reached 850 at 0.8 s; seed 2 missed it, its best log 765 (a 10% shortfall) and its run 1.2 s
    results = [{"score": 835.0, "seconds": 0.8, "best": 851.0, "hit_seconds": 0.8},
               {"score": 765.0, "seconds": 1.2, "best": 765.0, "hit_seconds": None}]
    for objective, values in expected.items():
        settings = {"objective": objective, "seed_reduce": reduce, "target": 850.0, "trial_seconds": 3.0}
        assert sweep.objective_values(settings, results) == pytest.approx(values)
    # the trial's recorded score and seconds (the Pareto plot's points) combine the seeds the same way
    trial, told = StubTrial(), []
    study = type("Study", (), {"tell": lambda self, t, values=None, state=None: told.append(values)})()
    record = {"trial": 0, "state": "COMPLETE", "values": expected["pareto"],
              "results": [{**r, "steps": 100, "startup": 0.1} for r in results]}
    sweep.finish_trial(study, trial, record, tmp_path, reduce)
    pareto = expected["pareto"]
    assert told == [pareto] and [trial.attrs["score"], trial.attrs["seconds"]] == pytest.approx(pareto)
    assert trial.attrs["steps"] == 100 and trial.attrs["hit"] is False


@pytest.mark.parametrize("hits, hit", [((0.8, 1.1), True), ((None, None), False), ((0.8, None), False)])
def test_a_trial_hits_the_target_only_where_every_seed_reached_it(hits, hit, tmp_path):
    """A time_to_target trial is shown as `SECONDS s to TARGET` when every seed reached the target, and as
    `TARGET missed (counts as SECONDS s)` when one or none did (its recorded "hit")."""
    from fastvec.trainer.sweep_report import objective_text
    results = [{"score": 800.0, "seconds": 1.5, "best": 851.0, "hit_seconds": h, "steps": 100, "startup": 0.1}
               for h in hits]
    trial = StubTrial()
    study = type("Study", (), {"tell": lambda self, t, values=None, state=None: None})()
    sweep.finish_trial(study, trial, {"trial": 0, "state": "COMPLETE", "values": [1.5], "results": results}, tmp_path)
    assert trial.attrs["hit"] is hit
    settings = {"objective": "time_to_target", "metric": "episode_return", "target": 850.0}
    assert objective_text(settings, [1.5], trial.attrs["hit"]) == ("1.5 s to 850" if hit else
                                                                   "850 missed (counts as 1.5 s)")


def test_a_second_process_joins_the_study_through_its_storage(tmp_path):
    folder = tmp_path / "shared"
    args = sweep_args(folder, "--sweep.objective=score", "--sweep.trial_seconds=0", "--sweep.trials=2",
                      f"--train.total_timesteps={4 * STEPS}", "--sweep.sampler_seed=-1")
    other = subprocess.Popen([sys.executable, "-m", "fastvec.trainer.sweep", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    assert sweep.main(args) == 0
    assert other.wait(timeout=120) == 0, other.stdout.read()
    lines = trial_lines(folder)
    assert sorted(line["trial"] for line in lines) == [0, 1, 2, 3]  # numbered by the storage: no collision
    assert len({line["pid"] for line in lines}) == 2
    assert len(list((folder / "trials").iterdir())) == 4
    study = optuna.load_study(study_name="cartpole-score", storage=f"sqlite:///{folder / 'study.db'}")
    assert len(study.trials) == 4
    # a process with other settings cannot join: its trials would not compare
    assert sweep.main(args[:-1] + ["--sweep.metric=episode_length"]) == 2


def test_fastvec_train_config_option(tmp_path, capsys):
    path = tmp_path / "mine.toml"
    path.write_text('[train]\nlearning_rate = 0.0123\nseed = 5\n')
    assert cli.main(["cartpole", f"--config={path}", "--train.seed=6", "--print-config"]) == 0
    printed = tomllib.loads(capsys.readouterr().out)
    assert printed["train"]["learning_rate"] == 0.0123 and printed["train"]["seed"] == 6  # the command line wins
    assert printed["train"]["total_timesteps"] == 300_000  # cartpole.toml's, under the file
    path.write_text('[env]\nname = "breakout"\n')
    for args, message in (([f"--config={path}"], "is a config for 'breakout', not 'cartpole'"),
                          ([f"--config={tmp_path / 'none.toml'}"], "no such file"),
                          ([f"--config={path}", f"--resume={tmp_path}"], "a resumed run keeps its own config.toml")):
        assert cli.main(["cartpole", *args]) == 2
        assert message in capsys.readouterr().err
    path.write_text("[train]\nlearning_rat = 0.1\n")
    assert cli.main(["cartpole", f"--config={path}"]) == 2
    assert f"unknown config key train.learning_rat in {path}" in capsys.readouterr().err


def test_print_space_shows_the_search_space_and_the_fixed_keys_without_running(tmp_path, capsys):
    """--print-space: the study, the sweep settings, each searched key with its distribution and each fixed key,
    one a line; nothing is run (no study, no trial written)."""
    assert sweep.main(sweep_args(tmp_path, "--train.learning_rate=1e-4:1e-2:log", "--train.gamma=0.98",
                                 "--print-space")) == 0
    out = capsys.readouterr().out
    assert out.startswith("fastvec-sweep cartpole: study ")
    space = out.split("search space:\n", 1)[1]
    assert space.startswith("  train.learning_rate")
    fixed = out.split("fixed for every trial:\n", 1)[1].splitlines()
    assert "  train.gamma = 0.98" in fixed and all(line.startswith("  ") for line in fixed)
    assert not (tmp_path / "trials.jsonl").exists()


def test_help_usage_and_a_config_without_a_path(capsys, tmp_path):
    """fastvec-sweep --help prints the usage and exits 0; without an env the usage goes out with status 2; --config
    with no path is one error line naming the form (exit 2); --config PATH takes the next argument."""
    assert sweep.main(["--help"]) == 0 and "fastvec-sweep" in capsys.readouterr().out
    assert sweep.main([]) == 2 and "fastvec-sweep" in capsys.readouterr().out
    for args in (["cartpole", "--print-space", "--config"], ["cartpole", "--print-space", "--config="]):
        assert sweep.main(args) == 2
        assert "fastvec-sweep: error: --config needs a value: --config=PATH" in capsys.readouterr().err
    assert sweep.main(["cartpole", "--config", str(tmp_path / "none.toml"), "--print-space"]) == 2
    assert "none.toml" in capsys.readouterr().err


def test_print_space_shows_the_sweep_settings_as_a_toml_table_without_the_config_marks(tmp_path, capsys):
    """--print-space's settings block (between the study line and "search space:") is the [sweep] table of every
    setting, command-line overrides included, as TOML that reads back to the plan's settings: without the saved
    config's first line or its end mark."""
    args = sweep_args(tmp_path, "--sweep.trials=7", "--train.learning_rate=1e-4:1e-2:log", "--print-space")
    assert sweep.main(args) == 0
    block = capsys.readouterr().out.split("\n", 1)[1].split("search space:\n", 1)[0]
    assert block.startswith("[sweep]\n") and "# end" not in block
    settings, entries = split_arguments(args[1:-1])
    plan = sweep.make_plan("cartpole", settings, entries, None)
    table = tomllib.loads(block)
    assert list(table) == ["sweep"]
    assert table["sweep"] == {k: v for k, v in plan.settings.items() if "." not in k}
    assert table["sweep"]["trials"] == 7 and table["sweep"]["dir"] == str(tmp_path)
    assert block.splitlines()[-1].split(" = ")[0] in table["sweep"]  # the last line a setting, no blank after it


def test_search_space_lines_show_each_range_with_its_log_or_step_as_a_person_reads_it():
    """Space.describe: a line a searched key, `path  low .. high` with ints grouped by _ and floats by %g, then
    " (log)" for a log range, " (step S)" for a stepped one (an int range's default step of 1 is no step, a
    float range's step of 1.0 is one), and choices as `one of a, b, c`."""
    space = parse_space({"train.learning_rate": "1e-4:1e-1:log", "train.gae_lambda": "0.8:0.99",
                         "train.ent_coef": "0:0.02:0.005", "train.vf_coef": "0:3:1", "train.update_epochs": "1:4",
                         "train.horizon": "10:20:2", "env.num_envs": "64:1024:log",
                         "train.total_timesteps": "100_000:2_000_000:1", "policy.hidden": "32,64,128"})
    assert space.describe() == [
        "train.learning_rate  0.0001 .. 0.1 (log)",
        "train.gae_lambda  0.8 .. 0.99",
        "train.ent_coef  0 .. 0.02 (step 0.005)",
        "train.vf_coef  0 .. 3 (step 1.0)",
        "train.update_epochs  1 .. 4",
        "train.horizon  10 .. 20 (step 2)",
        "env.num_envs  64 .. 1_024 (log)",
        "train.total_timesteps  100_000 .. 2_000_000",
        "policy.hidden  one of 32, 64, 128",
    ]


def test_options_may_come_before_the_env_and_a_second_env_is_an_error(tmp_path, capsys):
    """fastvec-sweep reads its one env as the first argument that is not an option, wherever it stands: options
    before it still count, and a second bare word is an error line naming it (exit 2), not a new env."""
    assert sweep.main(["--sweep.trials=3", "--train.gamma=0.98", "cartpole", f"--sweep.dir={tmp_path}",
                       "--print-space"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fastvec-sweep cartpole: study ")
    assert "\ntrials = 3\n" in out and "  train.gamma = 0.98" in out.split("fixed for every trial:\n", 1)[1]
    assert sweep.main(["cartpole", "pong", "--print-space"]) == 2
    assert "fastvec-sweep: error: unexpected argument 'pong'" in capsys.readouterr().err
