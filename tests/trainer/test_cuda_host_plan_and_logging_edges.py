"""Host-side parts of the CUDA trainer without a GPU: the fused rollout's block sizes against the shared memory they
must fit (hand computation), pop_episodes and update()'s statistics from stand-in device scalars against the NumPy
trainer's and by hand, where libcublas is looked for, and the rollouts' startup lines."""

from __future__ import annotations

import ctypes
import sys
import time
import types
from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda import plan


def _spec(obs_size: int, hidden: int, num_actions: int = 3, layers: int = 1) -> ref.PolicySpec:
    return ref.PolicySpec(obs_size=obs_size, num_actions=num_actions, kind="mlp", hidden=hidden, layers=layers)


def _warp_shared_bytes(spec, layout, block: int, agents: int) -> int:
    """rollouts.WarpRollout's dynamic shared memory: the weights (S_TOTAL: the flat parameters, the obs and one
    padding float per matrix column, rounded up to 4 floats) and a warp's scratch per 32 threads (two (H,)
    activations and each agent's A + 1 decoder row), written out here from rollout.cu's layout."""
    weights = -(-(layout.size + spec.obs_size + (spec.layers + 1) * spec.hidden) // 4) * 4
    scratch = 2 * spec.hidden + agents * (spec.num_actions + 1)
    return 4 * (weights + block // 32 * scratch)


def test_a_warp_per_env_block_where_shared_memory_binds_is_the_most_whole_warps_that_fit():
    """H 128, 300 observations: the weights take 224,448 of the 232,448 bytes, a warp's scratch 1,040, so 7 warps
    (224 threads) fit, not 8; the block is whole warps (a warp per env: a block of 217 would split an env's warp
    across two blocks)."""
    spec = _spec(300, 128)
    layout = ref.FlatLayout(ref.param_table(spec))
    assert 4 * (-(-(layout.size + 300 + 2 * 128) // 4) * 4) == 224_448 and plan.SHARED_LIMIT == 232_448
    assert plan.fused_rollout_kernel(spec, layout, num_envs=64, num_agents=1) == ("warp", 224)
    assert plan.fused_rollout_kernel(spec, layout, num_envs=64, num_agents=1, warp_block=512) == ("warp", 224)
    assert plan.fused_rollout_kernel(spec, layout, num_envs=64, num_agents=1, warp_block=128) == ("warp", 128)


def _first_obs_size_past(fits) -> int:
    """The smallest observation size for which fits(obs) is False (fits holds at 1 and fails by 100,000)."""
    lo, hi = 1, 100_000
    assert fits(lo) and not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return hi


def _obs_sizes(fits, below: int) -> list[int]:
    """A few small observation sizes and every one from `below` under the first that no longer fits to 2 past it:
    where shared memory, not the asked block, sets the block."""
    edge = _first_obs_size_past(fits)
    return [1, 6, 100] + list(range(max(1, edge - below), edge + 3))


def _layout(spec):
    return ref.FlatLayout(ref.param_table(spec))


@pytest.mark.parametrize("hidden", [4, 32, 128])
@pytest.mark.parametrize("agents", [1, 3])
@pytest.mark.parametrize("warp_block", [256, 512])
def test_every_warp_per_env_block_is_whole_warps_that_fit_shared_memory_and_no_warp_more_would(hidden, agents,
                                                                                              warp_block):
    """From small observations to where one warp no longer fits: the block is a multiple of 32, at most the asked
    block, its weights and scratch fit SHARED_LIMIT, and one more warp would not (or the asked block is reached);
    where not even one warp fits, the GEMM path."""
    def one_warp_fits(obs):
        spec = _spec(obs, hidden, num_actions=5)
        return _warp_shared_bytes(spec, _layout(spec), 32, agents) <= plan.SHARED_LIMIT

    seen = set()
    for obs in _obs_sizes(one_warp_fits, below=80 * warp_block // 256):
        spec = _spec(obs, hidden, num_actions=5)
        layout = _layout(spec)
        kind, block = plan.fused_rollout_kernel(spec, layout, num_envs=100, num_agents=agents, warp_block=warp_block)
        if not one_warp_fits(obs):
            assert (kind, block) == ("gemm", 0), obs
            seen.add("gemm")
            continue
        assert kind == "warp" and block % 32 == 0 and 32 <= block <= warp_block, (obs, block)
        assert _warp_shared_bytes(spec, layout, block, agents) <= plan.SHARED_LIMIT, (obs, block)
        if block < warp_block:
            assert _warp_shared_bytes(spec, layout, block + 32, agents) > plan.SHARED_LIMIT, (obs, block)
            seen.add(block)
        else:
            seen.add("asked")
    assert {"asked", "gemm", 32, warp_block - 32} <= seen, seen  # every block size shared memory can set


@pytest.mark.parametrize("hidden", [8, 64, 128])
def test_every_thread_per_env_block_is_whole_warps_that_fit_shared_memory(hidden):
    """policy_step_kernel's block: the weights as float4s (16 bytes per 4 floats) and an (H,) activation per
    thread fit SHARED_LIMIT, a multiple of 32 threads, at most FUSED_MAX_BLOCK, and 32 more would not fit unless
    the block is already FUSED_MAX_BLOCK; where not even 32 threads fit, the GEMM path."""
    def weights(obs):
        return -(-_layout(_spec(obs, hidden)).size // 4) * 16

    def warp_fits(obs):
        return weights(obs) + 4 * hidden * 32 <= plan.SHARED_LIMIT

    seen = set()
    for obs in _obs_sizes(warp_fits, below=12):
        spec = _spec(obs, hidden)
        kind, block = plan.fused_rollout_kernel(spec, _layout(spec), num_envs=plan.FUSED_THREAD_MIN_ENVS,
                                                num_agents=1)
        if not warp_fits(obs):
            assert (kind, block) == ("gemm", 0), obs
            seen.add("gemm")
            continue
        assert kind == "thread" and block % 32 == 0 and 32 <= block <= plan.FUSED_MAX_BLOCK, (obs, block)
        assert weights(obs) + 4 * hidden * block <= plan.SHARED_LIMIT, (obs, block)
        if block < plan.FUSED_MAX_BLOCK:
            assert weights(obs) + 4 * hidden * (block + 32) > plan.SHARED_LIMIT, (obs, block)
        seen.add(block)
    assert {"gemm", 32, plan.FUSED_MAX_BLOCK} <= seen, seen


# pop_episodes: rollout.cu's record_outcome adds, per finished episode, 1, the mean of its agents' returns, its
# length, its stats, and each agent's return into episode_acc; pop_episodes turns the sums into means.

EPISODES = [  # (each agent's return, length, stats)
    ((1.0, -3.0), 10, (0.5, 7.0)),
    ((4.0, 2.0), 25, (1.5, -1.0)),
    ((-2.5, 0.5), 7, (0.0, 2.0)),
]
STAT_NAMES = ("hits", "score")


class _Cuda:
    """The driver calls pop_episodes makes: a copy of the device accumulator into the host buffer, a memset."""

    def __init__(self, device: np.ndarray):
        self.device, self.zeroed = device, []

    def memcpy_dtoh_async(self, host, ptr, stream):
        assert ptr == 0xACC
        host[...] = self.device

    def memset_d8_async(self, ptr, value, nbytes, stream):
        assert ptr == 0xACC and value == 0
        self.zeroed.append(nbytes)
        self.device[...] = 0


def _stand_in_trainer(episodes, teams):
    agents = len(teams) if teams else 2
    acc = np.zeros(3 + len(STAT_NAMES) + agents, np.float64)
    for returns, length, stats in episodes:
        acc[0] += 1
        acc[1] += sum(returns) / agents
        acc[2] += length
        acc[3:3 + len(STAT_NAMES)] += stats
        acc[3 + len(STAT_NAMES):] += returns
    cuda = _Cuda(acc)
    stream = SimpleNamespace(synchronize=lambda: None)
    arena = SimpleNamespace(ptr=lambda name: {"episode_acc": 0xACC}[name],
                            nbytes=lambda name: {"episode_acc": acc.nbytes}[name])
    trainer = SimpleNamespace(cuda=cuda, stream=stream, arena=arena, episode_acc_host=np.full_like(acc, np.nan),
                              teams=teams, batch=SimpleNamespace(env=SimpleNamespace(stat_names=STAT_NAMES)),
                              _synchronize=lambda: None)
    return trainer, cuda


def _numpy_trainers_log(episodes, teams):
    from fastvec.trainer.numpy_trainer import NumpyTrainer
    finished = [(np.array([returns], np.float64), np.array([length]), np.array([stats], np.float64))
                for returns, length, stats in episodes]
    stand_in = SimpleNamespace(finished=finished, teams=teams,
                               batch=SimpleNamespace(env=SimpleNamespace(stat_names=STAT_NAMES)))
    return NumpyTrainer.pop_episodes(stand_in)


@pytest.mark.parametrize("teams", [None, ["prey", "predator"], ["a", "a"]])
def test_pop_episodes_logs_the_means_the_numpy_trainer_logs_then_none_until_another_episode_ends(teams):
    from fastvec.trainer.cuda.trainer import CudaTrainer
    trainer, cuda = _stand_in_trainer(EPISODES, teams)
    logged = CudaTrainer.pop_episodes(trainer)
    expected = _numpy_trainers_log(EPISODES, teams)
    assert logged.keys() == expected.keys() and logged["episodes"] == 3
    for key, value in expected.items():
        assert logged[key] == pytest.approx(value, rel=1e-12), key
    assert logged["episode_length"] == pytest.approx(14.0) and logged["hits"] == pytest.approx(2 / 3)
    if teams == ["prey", "predator"]:
        assert logged["episode_return_prey"] == pytest.approx(2.5 / 3)
        assert logged["episode_return_predator"] == pytest.approx(-0.5 / 3)
    assert cuda.zeroed == [cuda.device.nbytes]  # the sums start again from zero
    assert CudaTrainer.pop_episodes(trainer) is None  # nothing finished since: None, as the NumPy trainer's
    assert cuda.zeroed == [cuda.device.nbytes]  # and nothing to zero


def test_pop_episodes_before_any_episode_ends_is_none_and_leaves_the_sums_alone():
    from fastvec.trainer.cuda.trainer import CudaTrainer
    trainer, cuda = _stand_in_trainer([], None)
    assert CudaTrainer.pop_episodes(trainer) is None and cuda.zeroed == []


def test_a_single_episode_with_a_zero_return_is_still_logged():
    """An episode whose return sums to 0 counts: the check is on the episode count, not on a sum."""
    from fastvec.trainer.cuda.trainer import CudaTrainer
    trainer, _ = _stand_in_trainer([((0.0, 0.0), 0, (0.0, 0.0))], None)
    assert CudaTrainer.pop_episodes(trainer) == {"episodes": 1, "episode_return": 0.0, "episode_length": 0.0,
                                                  "hits": 0.0, "score": 0.0}


# libcublas: after the toolkit's, the nvidia-cublas wheel's lib/ folder, of the folder `import nvidia.cublas`
# resolves first (a namespace package may span several site folders).

def _paths_libcublas_tries(cublas, monkeypatch) -> tuple[list[str], str]:
    """Every path libcublas() hands ctypes.CDLL, in order, when each is refused, and the error a user then reads."""
    tried = []

    def refuse(path, *args, **kwargs):
        tried.append(path)
        raise OSError(f"{path}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", refuse)
    cublas.libcublas.cache_clear()
    try:
        with pytest.raises(cublas.CublasError, match="cannot load libcublas") as err:
            cublas.libcublas()
    finally:
        cublas.libcublas.cache_clear()
    return tried, str(err.value)

def test_libcublas_is_looked_for_in_the_wheel_folder_python_imports_nvidia_cublas_from(tmp_path, monkeypatch):
    from fastvec.trainer.cuda import cublas
    folders = []
    for name in ("first", "second"):
        lib = tmp_path / name / "nvidia" / "cublas" / "lib"
        lib.mkdir(parents=True)
        (lib / "libcublas.so.12").write_bytes(b"")
        folders.append(str(lib.parent))
    package = types.ModuleType("nvidia.cublas")
    package.__path__ = list(folders)
    parent = types.ModuleType("nvidia")
    parent.__path__ = [str(tmp_path / "first" / "nvidia"), str(tmp_path / "second" / "nvidia")]
    parent.cublas = package
    monkeypatch.setitem(sys.modules, "nvidia", parent)
    monkeypatch.setitem(sys.modules, "nvidia.cublas", package)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    tried, err = _paths_libcublas_tries(cublas, monkeypatch)
    wheel = folders[0] + "/lib/libcublas.so.12"
    assert wheel in tried and wheel in err  # tried, and named in the error a user reads
    assert all(path.startswith(str(tmp_path)) for path in tried[tried.index(wheel):])  # after the toolkit's


def test_a_fused_block_is_a_python_int_the_launcher_can_pass():
    """The block goes to the driver as a launch dimension: an int, never a float that equals one."""
    for obs, envs in [(6, 64), (300, 64), (6, plan.FUSED_THREAD_MIN_ENVS), (700, plan.FUSED_THREAD_MIN_ENVS)]:
        spec = _spec(obs, 64)
        kind, block = plan.fused_rollout_kernel(spec, _layout(spec), num_envs=envs, num_agents=1)
        assert kind in ("warp", "thread") and type(block) is int, (obs, envs, block)


@pytest.mark.parametrize("change,path", [
    ({}, "fused"), ({"num_actions": 64}, "fused"), ({"num_actions": 65}, "gemm"), ({"hidden": 126}, "gemm"),
    ({"hidden": 132}, "gemm"), ({"hidden": 128}, "fused"), ({"critic": "separate"}, "gemm"),
    ({"encoder": "tanh"}, "gemm"), ({"activation": "tanh"}, "gemm"), ({"norm_obs": True}, "gemm"),
    ({"obs_scale": 1 / 255}, "gemm"), ({"kind": "mingru"}, "fused")])
@pytest.mark.parametrize("forced", ["auto", "thread", "warp", "gemm"])
def test_the_gemm_path_has_no_fused_block_and_runs_what_the_fused_kernels_cannot(change, path, forced):
    """What the fused kernels implement (a Discrete head of at most MAX_ACTIONS, hidden a multiple of 4 up to 128, a
    shared critic, a linear encoder, ReLU layers, raw observations) takes the asked or automatic fused path; the
    rest, and anything asked to, the GEMM path with block 0 (plan.fused_block 0: no fused step to size)."""
    fields = {"obs_size": 6, "num_actions": 3, "kind": "mlp", "hidden": 64, "layers": 1, **change}
    spec = ref.PolicySpec(**fields)
    kind, block = plan.fused_rollout_kernel(spec, _layout(spec), num_envs=64, num_agents=1, forced=forced)
    if path == "gemm" or forced == "gemm":
        assert (kind, block) == ("gemm", 0)
    else:
        assert kind == ("thread" if forced == "thread" else "warp") and block >= 32


@pytest.mark.parametrize("warp_block", [1, 31, 48, 100, -32])
def test_a_warp_block_that_is_not_whole_warps_is_refused(warp_block):
    """Choices.warp_block is threads a block of the warp-per-env rollout, 32 an env: a block of 48 would split an
    env's warp across two blocks (and give it no scratch), so only 0 (automatic) and multiples of 32 are taken."""
    with pytest.raises(ValueError, match="warp_block"):
        plan.Choices(warp_block=warp_block)
    for fine in (0, 32, 96, 512):
        assert plan.Choices(warp_block=fine).warp_block == fine


@pytest.mark.parametrize("obs,actions,size,block", [(14293, 3, 57216, 224), (14260, 4, 57089, 224)])
def test_a_thread_per_env_block_counts_the_weights_float4_padding_to_the_byte(obs, actions, size, block):
    """H 4: P floats of weights take ceil(P / 4) float4s of shared memory. P = 57,216 (a multiple of 4): 228,864
    bytes, and 224 threads' (4,) activations take the other 3,584 of the 232,448 exactly; P = 57,089: 228,368
    bytes (3 floats of padding), leaving 4,080, so 255 threads' worth, 224 as whole warps (256 would be 16 bytes
    over)."""
    spec = _spec(obs, 4, num_actions=actions)
    layout = _layout(spec)
    assert layout.size == size
    assert plan.fused_rollout_kernel(spec, layout, num_envs=plan.FUSED_THREAD_MIN_ENVS, num_agents=1) == \
        ("thread", block)


def test_libcublas_is_looked_for_under_cuda_home_and_cuda_path_first(tmp_path, monkeypatch):
    """CUDA_HOME's and CUDA_PATH's lib64/ and targets/<arch>/lib/ come right after the loader's own search (the bare
    name), before /usr/local/cuda; the error names every place tried."""
    from fastvec.trainer.cuda import cublas
    home, path = tmp_path / "home", tmp_path / "path"
    wanted = [home / "lib64" / "libcublas.so.13", home / "targets" / "x86_64-linux" / "lib" / "libcublas.so.13",
              path / "lib64" / "libcublas.so.12"]
    for lib in wanted:
        lib.parent.mkdir(parents=True, exist_ok=True)
        lib.write_bytes(b"")
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("CUDA_PATH", str(path))
    monkeypatch.setitem(sys.modules, "nvidia.cublas", None)  # no wheel: `import nvidia.cublas` raises ImportError
    tried, err = _paths_libcublas_tries(cublas, monkeypatch)
    assert tried[:4] == ["libcublas.so", *map(str, wanted)]
    assert all(name in err for name in tried)


# update(): the update kernels add each minibatch's losses, KL, clip fraction and gradient norm into the device
# scalars' stat[0:6], the minibatch count into stat[6] and the explained variance into stat[7]; update() reads them
# back behind the learner and reports their means, as NumpyTrainer.update does.

def _stand_in_for_update(stat, new_schedule, update_index=3):
    from fastvec.trainer.config import load_config
    config = load_config("cartpole", {"train": {"anneal_lr": True, "anneal_ent": True, "ent_coef": 0.02,
                                                "learning_rate": 3e-3, "vf_coef": 0.7}})
    device = np.zeros((), plan.SCALARS_DTYPE)
    device["stat"], device["opt_step"], device["lr"] = stat, 41, 123.0
    calls = []

    def memcpy_dtoh_async(host, ptr, stream):
        assert ptr == 0x5CA
        host[...] = np.frombuffer(device.tobytes(), np.uint8)

    updater = SimpleNamespace(new_schedule=lambda num_updates: new_schedule,
                              enqueue=lambda num_updates, slot, stale: calls.append(("enqueue", num_updates, slot,
                                                                                    stale)))
    trainer = SimpleNamespace(
        config=SimpleNamespace(train=SimpleNamespace(**config["train"])), update_index=update_index, updater=updater,
        scalars=lambda: device.copy(), _write_scalars=lambda scalars: calls.append(("write", scalars.copy())),
        active_slot=1, slots=SimpleNamespace(stale=lambda index: index == 3),
        collector=SimpleNamespace(finish_deferred=lambda: 0.0), timing={"rollout": 0.0, "update": 0.0},
        cuda=SimpleNamespace(memcpy_dtoh_async=memcpy_dtoh_async), arena=SimpleNamespace(ptr=lambda name: 0x5CA),
        stream=SimpleNamespace(synchronize=lambda: None),
        scalars_host=np.zeros(plan.SCALARS_DTYPE.itemsize, np.uint8))
    return trainer, calls, config["train"]


@pytest.mark.parametrize("new_schedule", [False, True])
def test_update_reports_the_minibatch_means_the_loss_and_the_schedules_rates(new_schedule):
    from fastvec.trainer.cuda.trainer import CudaTrainer
    stat = [2.0, 8.0, 1.2, 0.04, 0.5, 3.0, 4.0, 0.25]  # sums over 4 minibatches, then the count and the EV
    trainer, calls, train = _stand_in_for_update(stat, new_schedule)
    out = CudaTrainer.update(trainer, num_updates=10)
    lr = train["learning_rate"] * (1 - 3 / 10)
    ent = float(np.float32(train["ent_coef"] * (1 - 3 / 10)))
    expected = {"policy_loss": 0.5, "value_loss": 2.0, "entropy": 0.3, "approx_kl": 0.01, "clipfrac": 0.125,
                "grad_norm": 0.75, "learning_rate": lr, "ent_coef": ent, "explained_variance": 0.25,
                "loss": 0.5 + 0.7 * 2.0 - ent * 0.3}
    assert out.keys() == expected.keys()
    for key, value in expected.items():
        assert out[key] == pytest.approx(value, rel=1e-12), key
    assert trainer.update_index == 4 and trainer.opt_step == 41
    assert calls[-1] == ("enqueue", 10, 1, True)  # the active slot, stale as the slots say for update 3
    writes = [c[1] for c in calls if c[0] == "write"]
    if new_schedule:  # the schedule kernel starts from this update's rates and keeps them from here on
        assert len(writes) == 1 and writes[0]["lr"] == lr and writes[0]["ent_coef"] == np.float32(ent)
        assert calls[0][0] == "write"
    else:
        assert writes == []


def test_an_update_with_no_minibatch_counted_reports_the_sums_not_a_division_by_zero():
    from fastvec.trainer.cuda.trainer import CudaTrainer
    trainer, _, _ = _stand_in_for_update([0.0] * 8, False, update_index=0)
    out = CudaTrainer.update(trainer, num_updates=10)
    assert all(out[name] == 0.0 for name in plan.STAT_NAMES) and out["learning_rate"] == 3e-3


def test_an_update_of_one_minibatch_reports_its_values_and_times_itself():
    from fastvec.trainer.cuda.trainer import CudaTrainer
    stat = [0.3, 1.5, 0.9, 0.02, 0.25, 0.6, 1.0, -0.5]
    trainer, _, _ = _stand_in_for_update(stat, False, update_index=0)
    started = time.perf_counter()
    out = CudaTrainer.update(trainer, num_updates=10)
    took = time.perf_counter() - started
    assert [out[name] for name in plan.STAT_NAMES] == stat[:6] and out["explained_variance"] == -0.5
    assert 0.0 <= trainer.timing["update"] <= took and trainer.timing["rollout"] == 0.0


@pytest.mark.parametrize("bf16", [False, True])
def test_the_startup_line_names_the_rollout_policys_precision_as_the_plan_chose_it(bf16):
    """The GEMM-path rollouts (the plain one and self-play's) say "(bf16)" exactly when the plan runs the learner's
    rollout GEMMs in bf16: the line a user reads to know which precision the actor used."""
    from fastvec.trainer.cuda.rollouts import GemmRollout, SelfPlayRollout

    gemm = GemmRollout.__new__(GemmRollout)
    gemm.plan, gemm.step_kernel = SimpleNamespace(rollout_bf16=bf16), ("rollout_step_kernel", 256)
    selfplay = SelfPlayRollout.__new__(SelfPlayRollout)
    selfplay.plan, selfplay.seats, selfplay.pool_slots = SimpleNamespace(rollout_bf16=bf16), 2, 4
    assert gemm.describe() == "GEMM-path policy, rollout_step_kernel for the env" + (" (bf16)" if bf16 else "")
    assert selfplay.describe() == ("self-play on the GPU (2 seats a game, 4 pool slots): the learner's policy as GEMMs"
                                   + (" (bf16)" if bf16 else "") + ", the opponents' a thread per seat")
