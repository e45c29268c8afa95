"""Round trips a user relies on: fastvec-plot reads every metrics row around blank and damaged lines (and
says how many it skipped), and a Config turned back into its dict is the validated config it came from,
[env]'s parameters and name and [sweep]'s search space included."""

import json

from fastvec.trainer.config import load_config
from fastvec.trainer.plot import read_metrics
from fastvec.trainer.settings import Config


def test_plot_reads_rows_after_blank_lines_and_counts_the_damaged_ones(tmp_path, capsys):
    rows = [{"global_step": k * 10, "time": k * 1.5, "episode_return": float(k)} for k in range(4)]
    lines = [json.dumps(rows[0]), "", json.dumps(rows[1]), "   ", '{"global_step": 5}', "[1, 2]",
             json.dumps(rows[2]), '{"global_step": 30, "ti', json.dumps(rows[3])]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert read_metrics(tmp_path) == rows
    assert "skipped 3 unreadable lines" in capsys.readouterr().err


def test_a_config_object_gives_back_the_dict_it_was_made_of():
    config = load_config("pong", {"env": {"points": 3, "num_envs": 4}, "train": {"seed": 9}})
    assert Config.of(config).to_dict() == config
    assert list(Config.of(config).to_dict()) == list(config)
    swept = load_config("cartpole", {"sweep": {"train.learning_rate": "1e-4:1e-2:log"}})
    assert Config.of(swept).to_dict() == swept
    env = Config.of(config).env
    assert env.name == "pong" and env.params["points"] == 3
