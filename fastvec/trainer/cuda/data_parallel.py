"""The CUDA trainer across GPUs (distributed.py, nccl.py): `SingleGpu` (one process, nothing to share) or
`DataParallel` (rank r of W: each rank samples with its own key and steps its own envs, starts from rank 0's
weights, normalises a minibatch's advantages with the global minibatch's moments, and averages the flat gradient
inside the update graph, between backward and clipping). `data_parallel()` picks one for the active group."""

from __future__ import annotations

import numpy as np

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda import nccl
from fastvec.trainer.cuda.plan import NORM_BLOCKS


class SingleGpu:
    """One training process: the gather computes a minibatch's advantage moments itself, over its own rows."""

    group = None
    rank, world_size = 0, 1
    moments_in_gather = True

    def rank_key(self, seed_key: int) -> int:
        """This rank's sampling key."""
        return seed_key

    def broadcast_params(self, arena, size: int, stream) -> None:
        """Every rank starts from the same weights: nothing to do alone."""

    def record_adv_moments(self, k, arena, rows: int, stream) -> None:
        """The minibatch advantages' moments over every rank's rows (adv_moments): the gather's, alone."""

    def record_grad_average(self, arena, size: int, stream) -> None:
        """The flat gradient averaged over the ranks: it is this rank's, alone."""


class DataParallel(SingleGpu):
    """Rank `group.rank` of `group.world_size` (an nccl group)."""

    moments_in_gather = False

    def __init__(self, group):
        self.group, self.rank, self.world_size = group, group.rank, group.world_size

    def rank_key(self, seed_key: int) -> int:
        if not self.rank:
            return seed_key
        return ref.splitmix64(seed_key ^ ((self.rank * 0xD1B54A32D192ED03) & ref.MASK64))

    def broadcast_params(self, arena, size: int, stream) -> None:
        """Rank 0's weights to every rank (init rounding may differ across machines)."""
        self.group.broadcast(arena.ptr("params"), size, stream.handle)

    def record_adv_moments(self, k, arena, rows: int, stream) -> None:
        """Every rank's partial sums of its minibatch advantages, summed over the ranks, then finished."""
        k.launch_grid("sums_partial_kernel", NORM_BLOCKS, 256, np.int64(rows), np.int32(1), arena.ptr("mb_adv"),
                      arena.ptr("sums_partial"))
        self.group.sum(arena.ptr("sums_partial"), NORM_BLOCKS * 2, stream.handle)
        k.launch_grid("moments_finish_kernel", 1, 1, np.int32(NORM_BLOCKS), arena.ptr("sums_partial"),
                      np.int64(rows * self.world_size), arena.ptr("adv_moments"))

    def record_grad_average(self, arena, size: int, stream) -> None:
        self.group.average(arena.ptr("grads"), size, stream.handle)


def data_parallel() -> SingleGpu:
    """DataParallel over the active process group (distributed.py starts one per rank), else SingleGpu."""
    group = nccl.active_group()
    return DataParallel(group) if group else SingleGpu()
