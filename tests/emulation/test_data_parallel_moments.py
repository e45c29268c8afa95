"""DataParallel.record_adv_moments (fastvec/trainer/cuda/data_parallel.py) without GPUs: two ranks, each a thread,
launch their kernels as the trainer does (the grids and arguments it passes, typed by device.SIGNATURES) on the
CPU build of ppo.cu (data_parallel_on_cpu.cpp), and a stand-in process group sums their partial sums; every rank
must end with the mean and population std of all ranks' minibatch advantages together (train.norm_adv)."""

import ctypes
import threading
from types import SimpleNamespace

import numpy as np
import pytest
from test_heads_kernels import build_harness

from fastvec.trainer.cuda import device
from fastvec.trainer.cuda.data_parallel import DataParallel
from fastvec.trainer.cuda.plan import NORM_BLOCKS

HARNESS = build_harness.__globals__["HARNESS"].parent / "data_parallel_on_cpu.cpp"
C_TYPES = {"q": ctypes.c_longlong, "i": ctypes.c_int, "P": ctypes.c_void_p, "d": ctypes.c_double,
           "f": ctypes.c_float}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    return build_harness(tmp_path_factory, HARNESS)


class CpuLauncher:
    """device.Launcher's launch_grid on the CPU build: each argument converted by the kernel's signature (so a
    wrong width or count fails here as it would on the device); one launch at a time (the emulation's block
    state is global)."""

    lock = threading.Lock()

    def __init__(self, emu):
        self.emu = emu

    def launch_grid(self, name, blocks, threads, *args):
        signature = device.SIGNATURES[name]
        assert len(args) == len(signature), (name, args)
        converted = [C_TYPES[code](int(a) if code in "qiP" else float(a)) for code, a in zip(signature, args)]
        fn = getattr(self.emu, f"emu_grid_{name}")
        fn.restype = None
        with self.lock:
            fn(ctypes.c_longlong(blocks), ctypes.c_int(threads), *converted)


class ThreadGroup:
    """An nccl.ProcessGroup of `world` ranks that are threads of this process: sum() adds the ranks' float64
    buffers element-wise and gives every rank the total."""

    def __init__(self, world):
        self.world, self.barrier, self.buffers = world, threading.Barrier(world, timeout=60), {}

    def rank(self, rank):
        group = self

        class Member:
            def __init__(self):
                self.rank, self.world_size = rank, group.world

            def sum(self, ptr, count, stream, dtype=np.float64):
                assert np.dtype(dtype) == np.float64
                view = np.ctypeslib.as_array((ctypes.c_double * count).from_address(ptr))
                group.buffers[rank] = view.copy()
                group.barrier.wait()
                total = np.sum([group.buffers[r] for r in range(group.world)], axis=0)
                group.barrier.wait()
                view[...] = total

        return Member()


def rank_arena(adv: np.ndarray):
    """The arena tensors record_adv_moments reads and writes, at host addresses. mb_adv sits in front of other
    tensors as in the trainer's arena: the values after it are not advantages."""
    rows = len(adv)
    tensors = {"mb_adv": np.concatenate([adv, np.full(rows, 1e3, np.float32)]),
               "sums_partial": np.zeros((NORM_BLOCKS, 5, 2)), "adv_moments": np.zeros(2, np.float32)}
    return tensors, SimpleNamespace(ptr=lambda name: tensors[name].ctypes.data)


def test_every_rank_normalises_with_the_moments_of_all_ranks_advantages(emu):
    """40000 rows a rank: every one of the 128 blocks of 256 threads sums some of them, a few twice around."""
    rows = 40000
    rng = np.random.default_rng(rows)
    advs = [(rng.standard_normal(rows) * 2 - 1).astype(np.float32),
            (rng.standard_normal(rows) * 0.5 + 4).astype(np.float32)]  # the ranks' envs differ
    group, results, errors = ThreadGroup(2), {}, []

    def run(rank):
        try:
            tensors, arena = rank_arena(advs[rank])
            DataParallel(group.rank(rank)).record_adv_moments(CpuLauncher(emu), arena, rows,
                                                              SimpleNamespace(handle=0))
            results[rank] = tensors["adv_moments"].copy()
        except BaseException as err:  # noqa: BLE001 (reported below, from the main thread)
            errors.append(err)
            group.barrier.abort()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    both = np.concatenate(advs).astype(np.float64)
    for rank in range(2):
        np.testing.assert_allclose(results[rank], [both.mean(), both.std()], rtol=2e-6, atol=1e-6)
    assert abs(both.mean() - advs[0].mean()) > 1  # neither rank's own moments would pass
