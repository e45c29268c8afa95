"""End to end: `fastvec-train cartpole` with its shipped config learns CartPole. The logged mean return
must reach 475 and the final checkpoint, evaluated on 100 fresh episodes, must average at least 475.
About 10-20 s on 2 CPU cores."""

import json

from fastvec.trainer import cli


def test_cartpole_training_reaches_mean_return_475(tmp_path, capsys):
    run_dir = tmp_path / "cartpole"
    assert cli.main(["cartpole", f"--run-dir={run_dir}"]) == 0
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    logged = [r["episode_return"] for r in rows if r["episode_return"] is not None]
    assert max(logged) >= 475, f"logged mean returns never reached 475: {logged}"
    summary_line = capsys.readouterr().out.strip().splitlines()[-1]  # training time, then start-up apart
    startup = float(summary_line.split("start-up ")[1].split()[0])
    assert startup >= 0 and float(summary_line.split(" steps in ")[1].split()[0]) > 0, summary_line
    assert cli.main(["cartpole", f"--eval={run_dir}", "--eval.episodes=100"]) == 0
    out = capsys.readouterr().out
    mean_return = float(out.split("mean return ")[1].split()[0])
    assert mean_return >= 475, out
