"""What fastvec/trainer/run.py decides around training and evaluation: the device 'auto' and 'cuda' resolve to (and
what each says when the GPU path is missing), one process or the distributed path, the run directory a rank
writes and gives back when training fails, BLAS's threads, and the GIF or MP4 of one episode (its frames, frame
time, and the episode cut where it ends)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fastvec.trainer import distributed, run
from fastvec.trainer.config import ConfigError, load_config

TINY = {"env": {"num_envs": 4}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
        "train": {"device": "cpu", "horizon": 8, "bptt_horizon": 8, "minibatch_size": 32, "total_timesteps": 32}}


def tiny(**sections) -> dict:
    overrides = {k: dict(v) for k, v in TINY.items()}
    for section, values in sections.items():
        overrides.setdefault(section, {}).update(values)
    return load_config("cartpole", overrides)


@pytest.mark.parametrize("available,nvidia_smi,pycuda,device,warns", [
    (True, None, None, "cuda", False),
    (False, None, None, "cpu", False),  # no GPU here: the CPU, quietly
    (False, "/usr/bin/nvidia-smi", None, "cpu", True),  # a GPU without PyCUDA: the CPU, saying how to use the GPU
    (False, "/usr/bin/nvidia-smi", "spec", "cpu", False),  # PyCUDA there but no GPU answered: nothing to install
])
def test_auto_resolves_to_the_gpu_when_the_cuda_trainer_runs_else_the_cpu(available, nvidia_smi, pycuda, device,
                                                                          warns, monkeypatch, capsys):
    monkeypatch.setattr(run, "cuda_trainer_available", lambda: available)
    monkeypatch.setattr(run.shutil, "which", lambda name: nvidia_smi if name == "nvidia-smi" else None)
    monkeypatch.setattr(run.importlib.util, "find_spec", lambda name: pycuda if name == "pycuda" else None)
    assert run.resolve_device("auto") == device
    err = capsys.readouterr().err
    assert (err == "fastvec-train: an NVIDIA GPU seems present but PyCUDA is not installed, so this run uses the "
                   "CPU; pip install 'fastvec[cuda]' to train on the GPU\n") if warns else err == ""


def test_cpu_stays_cpu_and_cuda_without_a_gpu_is_refused_naming_what_is_missing(monkeypatch):
    monkeypatch.setattr(run, "cuda_trainer_available", lambda: False)
    assert run.resolve_device("cpu") == "cpu"
    with pytest.raises(ConfigError) as err:  # the CUDA trainer's module is here, the GPU or PyCUDA is not
        run.resolve_device("cuda")
    assert str(err.value) == ("train.device=cuda: the CUDA trainer needs an NVIDIA GPU and PyCUDA (pip install "
                              "'fastvec[cuda]'), and none answered here; use --train.device=cpu")
    monkeypatch.setattr(run, "cuda_trainer_available", lambda: True)
    assert run.resolve_device("cuda") == "cuda"


def test_cuda_trainer_available_is_false_without_its_module(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "fastvec.trainer.cuda", None)  # the module cannot be imported
    assert run.cuda_trainer_available() is False


def record_calls(monkeypatch):
    """distributed.train and run.train_one_process replaced by recorders: which of them train() called, with what."""
    calls = []
    monkeypatch.setattr(distributed, "train", lambda config, run_dir, resume, dashboard, one: calls.append(
        ("distributed", run_dir, resume, one is run.train_one_process)) or {"path": "distributed"})
    monkeypatch.setattr(run, "train_one_process", lambda config, run_dir, resume, dashboard, watch=None: calls.append(
        ("one", run_dir, resume, watch)) or {"path": "one"})
    return calls


@pytest.mark.parametrize("gpus,launched,rank,path,writes", [
    (1, False, 0, "one", True),
    (2, False, 0, "distributed", True),  # one process per GPU: this one spawns them
    (1, True, 0, "distributed", True),  # rank 0 of a launcher's job writes the run directory
    (1, True, 1, "distributed", False),  # the other ranks train in scratch directories
])
def test_a_run_trains_in_this_process_or_through_distributed_and_only_rank_0_claims_the_directory(
        gpus, launched, rank, path, writes, tmp_path, monkeypatch):
    calls = record_calls(monkeypatch)
    monkeypatch.setattr(distributed, "launched", lambda: launched)
    monkeypatch.setattr(distributed, "discover", lambda: type("Job", (), {"rank": rank})())
    config = tiny(train={"gpus": gpus, "device": "cuda" if gpus > 1 else "cpu"})  # several GPUs: the CUDA trainer
    watch = object()
    assert run.train(config, tmp_path / "run", watch=watch)["path"] == path
    assert calls[0][:3] == (path, tmp_path / "run", False)
    assert calls[0][3] is (True if path == "distributed" else watch)
    assert (tmp_path / "run" / "config.toml").is_file() == writes


def test_a_resumed_run_claims_nothing_and_a_run_that_fails_gives_its_directory_back(tmp_path, monkeypatch):
    calls = record_calls(monkeypatch)
    monkeypatch.setattr(distributed, "launched", lambda: False)
    run.train(tiny(), tmp_path / "resumed", resume=True)
    assert calls == [("one", tmp_path / "resumed", True, None)] and not (tmp_path / "resumed").exists()

    def fails(*args, **kwargs):
        assert (tmp_path / "run" / "config.toml").is_file()  # claimed while training
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "train_one_process", fails)
    with pytest.raises(KeyboardInterrupt):
        run.train(tiny(), tmp_path / "run")
    assert not (tmp_path / "run").exists()  # nothing logged or saved: the directory is given back


def test_blas_threads_limits_numpys_blas_inside_and_zero_leaves_it_alone():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    if not before:
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl here")
    with run.blas_threads(1):
        assert {p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"} == {1}
    with run.blas_threads(0):
        assert [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"] == before
    assert [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"] == before


@pytest.fixture(scope="module")
def policy():
    """A deterministic policy for CartPole that pushes left at every step: (config, spec, params)."""
    from fastvec.trainer import reference as ref
    from fastvec.trainer.resolve import make_policy_spec
    config = tiny(eval={"deterministic": True})
    spec = make_policy_spec(config, 4, 2)
    params = np.zeros(ref.FlatLayout(ref.param_table(spec)).size, np.float32)
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    views["dec.b"][0] = 5.0  # logit 5 for action 0 (left), 0 for right: argmax 0 from every state
    return config, spec, views


def pushed_left_length(config: dict) -> int:
    """How many steps CartPole lasts from the render's reset (train.seed) when pushed left at every step."""
    batch = run.make_batch(config, 1)
    try:
        batch.reset(np.array([config["train"]["seed"]], np.uint64), None)
        for steps in range(1, 600):
            batch.step(np.zeros((1, 1), np.int32))
            if batch.terminated[0] or batch.truncated[0]:
                return steps
    finally:
        batch.close()
    raise AssertionError("the pole never fell")


def test_a_gif_of_one_episode_holds_its_frames_until_the_end_at_the_envs_frame_rate(policy, tmp_path):
    iio = pytest.importorskip("imageio.v3")
    config, spec, params = policy
    length = pushed_left_length(config)
    assert 1 < length < 50
    from fastvec.trainer.settings import Config
    cfg = Config.of({**config, "eval": {**config["eval"], "render_max_frames": 200}})
    path = run.record_episode(cfg, spec, params, str(tmp_path / "sub" / "play.GIF"), np.random.default_rng(0), True)
    frames = iio.imread(path, index=None)
    # the reset's frame and one after each step but the last (which ends the episode: the env has reset then)
    assert path == tmp_path / "sub" / "play.GIF" and len(frames) == length
    meta = iio.immeta(path, index=0)
    assert meta["duration"] == 20 and meta["loop"] == 0  # CartPole's 50 frames a second, played in a loop
    short = Config.of({**config, "eval": {**config["eval"], "render_max_frames": 3}})
    path = run.record_episode(short, spec, params, str(tmp_path / "short.gif"), np.random.default_rng(0), True)
    assert len(iio.imread(path, index=None)) == 4  # the reset's frame and 3 steps'


def test_an_mp4_is_written_or_its_missing_backend_named(policy, tmp_path, monkeypatch):
    iio = pytest.importorskip("imageio.v3")
    config, spec, params = policy
    from fastvec.trainer.settings import Config
    cfg = Config.of({**config, "eval": {**config["eval"], "render_max_frames": 3}})
    pytest.importorskip("imageio_ffmpeg")
    path = run.record_episode(cfg, spec, params, str(tmp_path / "play.mp4"), np.random.default_rng(0), True)
    assert path.read_bytes()[4:8] == b"ftyp"  # an ISO media file

    def no_backend(*args, **kwargs):
        raise ValueError("Could not find a backend to open `play.mp4`")

    monkeypatch.setattr(iio, "imwrite", no_backend)
    with pytest.raises(RuntimeError) as err:
        run.record_episode(cfg, spec, params, str(tmp_path / "b.mp4"), np.random.default_rng(0), True)
    assert str(err.value) == (f"writing {tmp_path / 'b.mp4'} failed (Could not find a backend to open `play.mp4`); "
                              f"MP4 needs imageio-ffmpeg: pip install imageio-ffmpeg, or write a .gif")
    with pytest.raises(ConfigError, match=r"eval.render='.*play.png': give a path ending in .gif or .mp4"):
        run.record_episode(cfg, spec, params, str(tmp_path / "play.png"), np.random.default_rng(0), True)


def recorded_policy_inputs(monkeypatch) -> list:
    """reference.policy_act wrapped: the starts and recurrent state of every call appended to the list returned."""
    from fastvec.trainer import reference as ref
    calls, real = [], ref.policy_act

    def policy_act(spec, params, obs, starts, state, *args, **kwargs):
        calls.append((np.array(starts), np.array(state)))
        return real(spec, params, obs, starts, state, *args, **kwargs)

    monkeypatch.setattr(ref, "policy_act", policy_act)
    return calls


@pytest.fixture(scope="module")
def recurrent():
    """A MinGRU policy for CartPole with random weights: (config, spec, param views, flat parameters)."""
    from fastvec.trainer import reference as ref
    from fastvec.trainer.resolve import make_policy_spec
    config = tiny(policy={"kind": "mingru"}, eval={"episodes": 3, "render_max_frames": 40})
    spec = make_policy_spec(config, 4, 2)
    params = ref.init_params(spec, np.random.default_rng(7))
    return config, spec, ref.FlatLayout(ref.param_table(spec)).views(params), params


def test_an_episodes_recurrent_state_starts_fresh_and_is_carried_step_to_step_in_a_recording(recurrent, tmp_path,
                                                                                             monkeypatch):
    pytest.importorskip("imageio")
    config, spec, views, _ = recurrent
    calls = recorded_policy_inputs(monkeypatch)
    from fastvec.trainer.settings import Config
    run.record_episode(Config.of(config), spec, views, str(tmp_path / "a.gif"), np.random.default_rng(0), False)
    assert len(calls) >= 3
    assert calls[0][0].tolist() == [1.0] and not calls[0][1].any()  # the first step: a fresh state
    assert all(starts.tolist() == [0.0] for starts, _ in calls[1:])  # then carried on
    assert all(state.any() for _, state in calls[1:])


def test_an_evaluations_recurrent_state_restarts_only_where_an_episode_ended(recurrent, tmp_path, monkeypatch):
    from fastvec.trainer import checkpoint
    config, spec, _, params = recurrent
    path = checkpoint.save(tmp_path / "update_000001.npz", spec, "cartpole", 1,
                           {"params": params, "optimizer": None, "counters": {"update": 1, "global_step": 8}}, config)
    ended = []
    from fastvec.native.cpu import CpuBatch
    real_step = CpuBatch.step

    def step(self, actions, *args, **kwargs):
        out = real_step(self, actions, *args, **kwargs)
        ended.append(np.array(self.terminated | self.truncated))
        return out

    monkeypatch.setattr(CpuBatch, "step", step)
    calls = recorded_policy_inputs(monkeypatch)
    run.evaluate(config, path)
    assert calls[0][0].tolist() == [1.0, 1.0, 1.0] and not calls[0][1].any()
    for (starts, _), done in zip(calls[1:], ended):  # each step's starts: where the step before ended an episode
        assert starts.tolist() == done.astype(np.float32).tolist()
    assert any(done.any() for done in ended[:-1])  # an episode ended (and restarted) before the last one


def test_a_recording_of_a_two_agent_game_plays_both_seats(tmp_path, monkeypatch):
    """Pong without the bot: both paddles are the policy's, every step's actions one per agent."""
    iio = pytest.importorskip("imageio.v3")
    from fastvec.trainer import reference as ref
    from fastvec.trainer.resolve import make_policy_spec
    from fastvec.trainer.settings import Config
    config = load_config("pong", {"env": {"num_envs": 2, "pong_bot": 0},
                                  "policy": {"kind": "mlp", "hidden": 8, "layers": 1}, "eval": {"render_max_frames": 3}})
    spec = make_policy_spec(config, 8, 3)
    views = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, np.random.default_rng(3)))
    calls = recorded_policy_inputs(monkeypatch)
    path = run.record_episode(Config.of(config), spec, views, str(tmp_path / "pong.gif"), np.random.default_rng(0),
                              True)
    assert len(iio.imread(path, index=None)) == 4  # the reset's frame and 3 steps' (no point is over that soon)
    assert [starts.tolist() for starts, _ in calls] == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("cuda_module,refusal", [
    (None, "train.device=cuda: this fastvec has no CUDA trainer; use --train.device=cpu"),
    ("here, no GPU", "train.device=cuda: the CUDA trainer needs an NVIDIA GPU and PyCUDA (pip install "
                     "'fastvec[cuda]'), and none answered here; use --train.device=cpu")])
def test_without_the_cuda_trainers_module_auto_is_the_cpu_and_cuda_is_refused(cuda_module, refusal, monkeypatch):
    """An install without fastvec.trainer.cuda (its import fails) trains on the CPU under 'auto' and refuses 'cuda'
    saying it has no CUDA trainer; one whose module imports but sees no GPU names what the GPU path needs."""
    import sys

    import fastvec.trainer
    monkeypatch.setattr(run.shutil, "which", lambda name: None)
    if cuda_module is None:
        monkeypatch.delattr(fastvec.trainer, "cuda", raising=False)
        monkeypatch.setitem(sys.modules, "fastvec.trainer.cuda", None)  # import raises ImportError
    else:
        from fastvec.trainer import cuda
        monkeypatch.setattr(cuda, "available", lambda: False)
    assert run.cuda_trainer_available() is False
    assert run.resolve_device("auto") == "cpu"
    with pytest.raises(ConfigError) as err:
        run.resolve_device("cuda")
    assert str(err.value) == refusal


def test_the_summary_times_start_up_and_training_apart_within_the_call(tmp_path):
    """run.train's summary: start-up (making the trainer) and training seconds, each >= 0 and together no more than
    the call took; what fastvec-train prints and the benchmarks read as start-up and training time."""
    start = time.perf_counter()
    summary = run.train(tiny(), tmp_path / "run", dashboard=False)
    took = time.perf_counter() - start
    assert 0 <= summary["startup"] and 0 < summary["elapsed"] and summary["startup"] + summary["elapsed"] <= took
