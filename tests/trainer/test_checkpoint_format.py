"""Checkpoint files (trainer/checkpoint.py) at the unit level: the format version 1 layout written and read back,
other format versions and other files refused by name, structure checks, the newest valid checkpoint chosen by
update number, and architecture/env mismatches named on both sides."""

import io
import json
import os

import numpy as np
import pytest

from fastvec.trainer import checkpoint as ckpt
from fastvec.trainer.reference import FlatLayout, PolicySpec, param_table

SPEC = PolicySpec(obs_size=4, num_actions=2, kind="mingru", hidden=8, layers=2)
SIZE = FlatLayout(param_table(SPEC)).size


def state(update=3, seed=0):
    rng = np.random.default_rng(seed)
    return {"params": rng.standard_normal(SIZE).astype(np.float32),
            "optimizer": rng.standard_normal(2 * SIZE).astype(np.float32),
            "counters": {"update": update, "global_step": 100 * update, "opt_step": 4 * update},
            "rng": np.random.default_rng(1).bit_generator.state}


def write(folder, update, **kw):
    return ckpt.save(folder / ckpt.checkpoint_name(update), SPEC, "cartpole", 1, state(update, **kw), {"train": {}})


def rewrite_meta(path, **changes):
    """Rewrite a checkpoint's meta JSON with some fields changed (None: removed)."""
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(bytes(arrays["meta"]).decode())
    for key, value in changes.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


def test_version_1_layout_round_trips(tmp_path):
    path = write(tmp_path, 7)
    assert path.name == "update_000007.npz"
    with np.load(path) as archive:
        assert sorted(archive.files) == ["meta", "optimizer", "params"]
        meta = json.loads(bytes(archive["meta"]).decode())
    assert (meta["format"], meta["version"]) == ("fastvec-checkpoint", 1)
    assert (meta["env"], meta["obs_size"], meta["num_actions"], meta["num_agents"]) == ("cartpole", 4, 2, 1)
    assert meta["policy"] == {"kind": "mingru", "hidden": 8, "layers": 2, "highway": True}
    assert meta["layout"] == [[name, list(shape)] for name, shape in param_table(SPEC)]
    loaded_meta, loaded = ckpt.load(path)
    expected = state(7)
    np.testing.assert_array_equal(loaded["params"], expected["params"])
    np.testing.assert_array_equal(loaded["optimizer"], expected["optimizer"])
    assert loaded["counters"] == expected["counters"] and loaded["rng"] == expected["rng"]
    assert ckpt.spec_of(loaded_meta) == SPEC


def test_weights_only_checkpoints_load_without_optimizer_state(tmp_path):
    weights = {"params": state()["params"], "counters": {"update": 0, "global_step": 0}}
    path = ckpt.save(tmp_path / "w.npz", SPEC, "cartpole", 1, weights, {})
    with np.load(path) as archive:
        assert "optimizer" not in archive.files
    assert ckpt.load(path)[1]["optimizer"] is None


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_other_format_versions_are_refused_naming_both_versions(tmp_path, version):
    path = write(tmp_path, 1)
    rewrite_meta(path, version=version)
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.load(path)
    shown = "None" if version is None else version
    assert str(err.value) == (f"{path} is checkpoint format version {shown}, this fastvec reads version 1; "
                              f"evaluate it with the fastvec release that wrote it")


def test_another_format_is_not_a_checkpoint(tmp_path):
    path = write(tmp_path, 1)
    rewrite_meta(path, format="someone-else")
    with pytest.raises(ckpt.CheckpointError, match=r"is not a fastvec checkpoint \(format 'someone-else'\)"):
        ckpt.load(path)
    np.savez(tmp_path / "plain.npz", params=np.zeros(3, np.float32))
    with pytest.raises(ckpt.CheckpointError, match="it lacks meta;"):
        ckpt.load(tmp_path / "plain.npz")


@pytest.mark.parametrize("change,problem", [
    ({"env": None}, "its metadata lacks env"),
    ({"obs_size": "4"}, "its obs_size is not a int"),
    ({"counters": {"global_step": 1}}, "its counters lack update"),
    ({"counters": {"update": -1, "global_step": 1}}, "its counters' update is not a count"),
    ({"counters": {"update": True, "global_step": 1}}, "its counters' update is not a count"),
    ({"counters": {"update": 1, "global_step": 1.5}}, "its counters' global_step is not a count"),
    ({"policy": {"kind": "lstm", "hidden": 8, "layers": 2}}, "its recorded architecture is not one fastvec builds"),
    ({"policy": {"kind": "mingru", "hidden": 9, "layers": 2, "highway": True}},
     "its parameter layout does not match its recorded architecture"),
])
def test_structure_problems_are_named(tmp_path, change, problem):
    path = write(tmp_path, 1)
    rewrite_meta(path, **change)
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.load(path)
    assert str(err.value).startswith(f"{path} is damaged: {problem}")


@pytest.mark.parametrize("array,bad,problem", [
    ("params", np.nan, "1 of its {n} weights are NaN or infinite"),
    ("optimizer", np.inf, "1 of its {n} optimizer state are NaN or infinite"),
])
def test_non_finite_numbers_are_damage(tmp_path, array, bad, problem):
    s = state()
    s[array][5] = bad
    path = ckpt.save(tmp_path / "x.npz", SPEC, "cartpole", 1, s, {})
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.load(path)
    assert str(err.value) == f"{path} is damaged: " + problem.format(n=f"{s[array].size:,}")


def test_wrong_optimizer_shape_and_dtype(tmp_path):
    s = state()
    s["optimizer"] = s["optimizer"][:-1]
    path = ckpt.save(tmp_path / "x.npz", SPEC, "cartpole", 1, s, {})
    with pytest.raises(ckpt.CheckpointError, match=rf"optimizer state has shape \({2 * SIZE - 1},\), not \({2 * SIZE},\)"):
        ckpt.load(path)


def test_the_newest_valid_checkpoint_is_chosen_by_update_number(tmp_path, capsys):
    folder = tmp_path / "checkpoints"
    for update in (2, 10, 9):
        write(folder, update)
    os.utime(folder / "update_000002.npz", (2e9, 2e9))  # the newest modification time does not count
    path, meta, _, rejected = ckpt.newest_valid(tmp_path)
    assert path.name == "update_000010.npz" and meta["counters"]["update"] == 10 and rejected == []
    assert [u for u, _ in ckpt.candidates(tmp_path)] == [10, 9, 2]
    (folder / "update_000010.npz").write_bytes(b"not a zip")
    (folder / ".update_000011.npz.123.abcd.tmp").write_bytes(b"partial")
    path, _, _, rejected = ckpt.newest_valid(tmp_path)
    assert path.name == "update_000009.npz" and len(rejected) == 1
    assert "skipped 1 newer checkpoint (" in capsys.readouterr().err
    assert ckpt.latest(tmp_path) == path
    ckpt.remove_stale_temps(folder)
    assert not (folder / ".update_000011.npz.123.abcd.tmp").exists()


def test_a_renamed_checkpoint_is_passed_over(tmp_path):
    folder = tmp_path / "checkpoints"
    write(folder, 4)
    (folder / "update_000004.npz").rename(folder / "update_000005.npz")
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.newest_valid(tmp_path)
    assert "its counters say update 4, its name update 5" in str(err.value)
    assert str(err.value).startswith(f"no usable checkpoint in {folder}: ")


def test_no_checkpoint_at_all(tmp_path):
    with pytest.raises(ckpt.CheckpointError, match="no checkpoint"):
        ckpt.newest_valid(tmp_path)


def test_mismatches_name_both_sides(tmp_path):
    meta, _ = ckpt.load(write(tmp_path, 1))
    ckpt.check_compatible(meta, SPEC, "cartpole", "p")
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.check_env(meta, "pong", 8, 3, "p")
    assert str(err.value) == ("p was trained on cartpole (obs 4, actions 2), not pong (obs 8, actions 3) with "
                              "these [env] settings")
    with pytest.raises(ckpt.CheckpointError, match="obs 4, actions 2"):
        ckpt.check_env(meta, "cartpole", 5, 2, "p")
    other = PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=8, layers=2)
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.check_compatible(meta, other, "cartpole", "p")
    assert ("holds another architecture: policy.kind=mingru, policy.hidden=8, policy.layers=2, highway=true "
            "(obs 4, actions 2); this run asks for policy.kind=mlp, policy.hidden=8, policy.layers=2 (obs 4, "
            "actions 2)") in str(err.value)


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    path = ckpt.atomic_write(tmp_path / "f.bin", b"abc")
    assert path.read_bytes() == b"abc" and os.listdir(tmp_path) == ["f.bin"]
    ckpt.atomic_write(path, b"de")
    assert path.read_bytes() == b"de" and os.listdir(tmp_path) == ["f.bin"]


def test_saving_creates_missing_folders_and_a_file_readable_under_the_umask(tmp_path):
    path = ckpt.save(tmp_path / "run" / "checkpoints" / "x.npz", SPEC, "cartpole", 1, state(), {})
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    ckpt.save(path, SPEC, "cartpole", 1, state(seed=1), {})  # over an existing file, in an existing folder
    np.testing.assert_array_equal(ckpt.load(path)[1]["params"], state(seed=1)["params"])


def test_other_files_beside_the_checkpoints(tmp_path):
    """Numbered checkpoints come first by number, then other .npz files newest first; files that are not
    .npz and atomic_write's temporary files are never candidates."""
    folder = tmp_path / "checkpoints"
    write(folder, 1)
    for name, mtime in (("best.npz", 1e9), ("final.npz", 1.5e9), ("old.npz", 5e8)):
        ckpt.save(folder / name, SPEC, "cartpole", 1, state(), {})
        os.utime(folder / name, (mtime, mtime))
    (folder / "notes.txt").write_text("x")
    (folder / ".update_000002.npz.77.beef.tmp").write_bytes(b"x")
    assert [p.name for _, p in ckpt.candidates(tmp_path)] == ["update_000001.npz", "final.npz", "best.npz", "old.npz"]
    assert ckpt.candidates(tmp_path / "nothing") == []


def test_several_rejected_checkpoints_are_counted_in_the_messages(tmp_path, capsys):
    folder = tmp_path / "checkpoints"
    write(folder, 1)
    for update in (2, 3):
        (folder / ckpt.checkpoint_name(update)).write_bytes(b"damaged")
    path, _, _, rejected = ckpt.newest_valid(tmp_path)
    assert path.name == "update_000001.npz" and len(rejected) == 2
    assert "skipped 2 newer checkpoints (" in capsys.readouterr().err
    (folder / "update_000001.npz").write_bytes(b"damaged")
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.newest_valid(tmp_path)
    assert str(err.value).endswith(" (and 2 older checkpoints rejected too)")
    (folder / "update_000001.npz").unlink()
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.newest_valid(tmp_path)
    assert str(err.value).endswith(" (and 1 older checkpoint rejected too)")


def test_error_lines_name_the_operation_path_and_reason(tmp_path):
    err = OSError(13, "Permission denied", str(tmp_path / "a"))
    assert str(ckpt.file_error(err, "write", tmp_path / "a")) == f"cannot write {tmp_path / 'a'}: Permission denied"
    other = OSError(2, "No such file or directory", "/elsewhere")
    assert str(ckpt.file_error(other, "read", "p")) == "cannot read p: No such file or directory (/elsewhere)"
    assert ckpt._first_line(ValueError("first\nsecond")) == "ValueError: first"
    assert ckpt._first_line(ValueError("")) == "ValueError"
    assert ckpt._first_line(ValueError("x" * 300)) == "ValueError: " + "x" * 160


def test_pickled_arrays_are_refused_not_unpickled(tmp_path):
    path = write(tmp_path, 1)
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["optimizer"] = np.array([object()], dtype=object)  # would run pickle on load
    np.savez(path, **arrays)
    with pytest.raises(ckpt.CheckpointError) as err:
        ckpt.load(path)
    assert "Object arrays cannot be loaded when allow_pickle=False" in str(err.value)


def test_only_checkpoints_saved_for_time_alone_are_replaceable(tmp_path, monkeypatch):
    """A run's checkpoints kept as written (a copy of each): the one a run starts with (update 0) and those saved
    for time alone (train.checkpoint_seconds) are replaceable_checkpoints, the interval's and the last are not;
    an unreadable file is neither."""
    import shutil

    from fastvec.trainer import cli

    kept = tmp_path / "kept"
    kept.mkdir()
    real = ckpt.save

    def save(path, *args):
        written = real(path, *args)
        shutil.copy(written, kept / written.name)
        return written

    monkeypatch.setattr(ckpt, "save", save)
    args = ["cartpole", "--env.num_envs=8", "--policy.hidden=8", "--train.device=cpu", "--train.horizon=16",
            "--train.bptt_horizon=8", "--train.minibatch_size=64", "--train.update_epochs=1",
            "--train.log_interval=0", "--train.stop_at_target=false", f"--train.total_timesteps={5 * 128}",
            "--train.checkpoint_interval=3", "--train.checkpoint_seconds=1e-9", f"--run-dir={tmp_path / 'run'}"]
    assert cli.main(args) == 0
    assert sorted(p.name for p in kept.iterdir()) == [ckpt.checkpoint_name(k) for k in range(6)]
    (kept / ckpt.checkpoint_name(9)).write_bytes(b"not a checkpoint")
    assert [p.name for p in ckpt.replaceable_checkpoints(kept)] == \
        [ckpt.checkpoint_name(k) for k in (0, 1, 2, 4)]


def test_stale_temps_are_removed_and_one_gone_meanwhile_is_no_error(tmp_path, monkeypatch):
    """remove_stale_temps deletes atomic_write's leftovers (and nothing else); one that another process (a second
    resume of the same run) removed between the listing and the delete is simply gone."""
    from pathlib import Path

    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for name in (".update_000003.npz.41.ab12.tmp", ".metrics.jsonl.7.ff.tmp", "update_000003.npz", "notes.tmp"):
        (folder / name).write_bytes(b"x")
    real_iterdir = Path.iterdir

    def listing(self):
        yield from real_iterdir(self)
        yield self / ".update_000004.npz.42.cd34.tmp"  # listed, then removed by someone else before the delete

    monkeypatch.setattr(Path, "iterdir", listing)
    ckpt.remove_stale_temps(folder)
    monkeypatch.undo()
    assert sorted(p.name for p in folder.iterdir()) == ["notes.tmp", "update_000003.npz"]
    ckpt.remove_stale_temps(tmp_path / "missing")  # no folder: nothing to do


def test_the_reward_moments_are_kept_with_norm_reward_only(tmp_path):
    """train.norm_reward's running moments (mean, var, count) go into the checkpoint and come back from it; a run
    without norm_reward keeps none, whatever its state holds."""
    moments = [0.25, 4.0, 1234.0]
    kept = ckpt.save(tmp_path / "a.npz", SPEC, "cartpole", 1, {**state(3), "reward_norm": moments},
                     {"train": {"norm_reward": True}})
    assert ckpt.load(kept)[1]["reward_norm"] == moments
    none = ckpt.save(tmp_path / "b.npz", SPEC, "cartpole", 1, {**state(3), "reward_norm": moments},
                     {"train": {"norm_reward": False}})
    assert ckpt.load(none)[1]["reward_norm"] is None


def test_an_architecture_is_described_by_the_settings_that_make_it():
    """The words of an architecture mismatch: each setting that differs from the default named as the config key a
    user passes, the action head's kind and size."""
    team = PolicySpec(obs_size=10, num_actions=0, kind="mlp", hidden=16, layers=1, action_kind="box", action_dims=2,
                      norm_obs=True, critic="separate", encoder="tanh", activation="tanh", agent_ids=3, world_size=12)
    assert ckpt.describe(team) == (
        "policy.kind=mlp, policy.hidden=16, policy.layers=1, train.norm_obs=true, policy.critic=separate, "
        "policy.encoder=tanh, policy.activation=tanh, policy.agent_id=true (3 agents), "
        "policy.critic_input=world_state (12 values) (obs 10, actions Box of 2)")
    grid = PolicySpec(obs_size=6, num_actions=0, kind="mingru", hidden=8, layers=2, highway=False,
                      action_kind="multi_discrete", action_nvec=(3, 4))
    assert ckpt.describe(grid) == ("policy.kind=mingru, policy.hidden=8, policy.layers=2, highway=false "
                                   "(obs 6, actions MultiDiscrete[3, 4])")


def test_another_action_count_alone_is_another_env(tmp_path):
    meta, _ = ckpt.load(write(tmp_path, 1))
    with pytest.raises(ckpt.CheckpointError, match=r"trained on cartpole \(obs 4, actions 2\), not cartpole \(obs 4, "
                                                   r"actions 3\)"):
        ckpt.check_env(meta, "cartpole", 4, 3, "p")


def test_an_unreadable_checkpoint_does_not_hide_the_replaceable_ones_after_it(tmp_path):
    (tmp_path / ckpt.checkpoint_name(1)).write_bytes(b"damaged")
    ckpt.save(tmp_path / ckpt.checkpoint_name(2), SPEC, "cartpole", 1, state(2), {"train": {}}, replaceable=True)
    write(tmp_path, 3)
    ckpt.save(tmp_path / ckpt.checkpoint_name(4), SPEC, "cartpole", 1, state(4), {"train": {}}, replaceable=True)
    (tmp_path / "notes.npz").write_bytes(b"not one of the run's")
    assert ckpt.replaceable_checkpoints(tmp_path) == [tmp_path / ckpt.checkpoint_name(k) for k in (2, 4)]
    assert ckpt.replaceable_checkpoints(tmp_path / "missing") == []


def test_past_a_million_updates_the_newest_is_still_chosen_by_number_not_by_name(tmp_path):
    """update_1000000.npz sorts before update_999999.npz as text: the update number decides."""
    for update in (999_999, 1_000_000, 2):
        write(tmp_path, update)
    assert ckpt.checkpoint_name(1_000_000) == "update_1000000.npz"
    assert [u for u, _ in ckpt.candidates(tmp_path)] == [1_000_000, 999_999, 2]
    assert ckpt.latest(tmp_path).name == "update_1000000.npz"
