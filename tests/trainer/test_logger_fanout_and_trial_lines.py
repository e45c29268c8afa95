"""Two small promises of the trainer's outputs: every open logger output gets each metrics row (as CleanRL's
scalars, at its global_step, or the row count without one) and all are closed even if one fails to; and the
sweep's one line per finished trial says what the trial reached, its seeds' totals, its error and parameters."""

from types import SimpleNamespace

import pytest

from fastvec.trainer.loggers import RunLoggers
from fastvec.trainer.sweep_report import describe_trial


class Output:
    def __init__(self, fail_close=False):
        self.rows, self.closed, self.fail_close = [], False, fail_close

    def log(self, values, step):
        self.rows.append((step, values))

    def close(self):
        self.closed = True
        if self.fail_close:
            raise OSError(self.fail_close if isinstance(self.fail_close, str) else "disk gone")


def test_every_output_gets_every_row_and_all_are_closed(tmp_path):
    loggers = RunLoggers({"train": {"tensorboard": False, "wandb_project": ""}}, tmp_path, False)
    first, second, third = Output(fail_close=True), Output(), Output(fail_close="and the network")
    loggers.outputs = [first, second, third]
    loggers.log({"global_step": 512, "episode_return": 3.0})
    loggers.log({"episode_return": 4.0})  # no step: the row count
    loggers.log({"global_step": True, "episode_return": 5.0})  # a bool is no step
    for out in (first, second, third):
        assert [step for step, _ in out.rows] == [512, 1, 2]
        assert out.rows[0][1]["charts/episodic_return"] == 3.0
    with pytest.raises(OSError, match="disk gone"):  # the first failure's
        loggers.close()
    assert first.closed and second.closed and third.closed and loggers.outputs == []
    loggers.close()  # twice is harmless


SETTINGS = {"metric": "episode_return", "objective": "time_to_target", "target": 475.0}


def result(seconds, steps, hit, best, score=400.0):
    return {"seconds": seconds, "steps": steps, "startup": 0.25, "hit_seconds": hit, "best": best, "score": score}


def test_a_time_to_target_trial_that_missed_names_its_best_log_and_its_penalty():
    plan = SimpleNamespace(settings=SETTINGS)
    record = {"trial": 7, "state": "COMPLETE", "values": [9.5], "params": {"train.learning_rate": 0.001},
              "results": [result(3.0, 1000, 2.0, 480.0), result(4.0, 2000, None, 300.0)]}
    line = describe_trial(plan, record)
    assert line.startswith("trial 7  complete  missed 475 (best log 300; counts as 9.5 s)")
    assert "(7 s, 3K steps, start-up 0.50 s)" in line and line.endswith("train.learning_rate=0.001")
    hit = {**record, "values": [2.5], "results": [result(3.0, 1000, 2.5, 480.0)]}
    assert "2.5 s to 475" in describe_trial(plan, hit) and "missed" not in describe_trial(plan, hit)


def test_a_score_trial_is_never_a_miss_and_a_failure_says_why():
    plan = SimpleNamespace(settings={**SETTINGS, "objective": "score"})
    record = {"trial": 2, "state": "COMPLETE", "values": [412.0], "params": {},
              "results": [result(3.0, 1000, None, 300.0)]}
    assert "return 412" in describe_trial(plan, record) and "missed" not in describe_trial(plan, record)
    failed = {"trial": 3, "state": "FAIL", "error": "no episode finished", "params": {"x": 2},
              "results": [result(1.0, 10, None, 1.0, score=12.0)]}
    line = describe_trial(plan, failed)
    assert "return 12" in line and "error: no episode finished" in line and line.endswith("x=2")


def test_a_failed_trial_without_an_error_text_shows_no_error_part():
    """A trial that failed with nothing recorded (its process killed, say) shows its state alone, not 'error: None';
    an error text kept on a trial that did not fail is not shown either."""
    plan = SimpleNamespace(settings={**SETTINGS, "objective": "score"})
    failed = {"trial": 5, "state": "FAIL", "params": {"x": 1}, "results": []}
    assert describe_trial(plan, failed) == "trial 5  fail  x=1"
    kept = {"trial": 6, "state": "COMPLETE", "values": [412.0], "error": "a retried seed's", "params": {},
            "results": [result(3.0, 1000, None, 300.0)]}
    assert "error" not in describe_trial(plan, kept)


def test_a_pruned_trial_shows_its_last_seeds_score():
    """A trial stopped part-way (the pruner stops at a seed's report) shows the score where it stopped: its last seed's;
    a last seed that logged no episode shows none."""
    plan = SimpleNamespace(settings={**SETTINGS, "objective": "score"})
    record = {"trial": 4, "state": "PRUNED", "params": {},
              "results": [result(3.0, 1000, None, 300.0, score=300.0), result(1.0, 500, None, 90.0, score=90.0)]}
    line = describe_trial(plan, record)
    assert line.startswith("trial 4  pruned  return 90  (4 s, 1.5K steps, start-up 0.50 s)")
    record["results"][-1]["score"] = None
    assert describe_trial(plan, record).startswith("trial 4  pruned  (4 s,")
