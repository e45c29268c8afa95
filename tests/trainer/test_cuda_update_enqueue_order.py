"""What GpuUpdate.record enqueues for one update, in order, against stand-ins for the launcher and the pieces it
calls: the statistics zeroed first, GAE (V-trace where asked), each epoch's order and minibatches, then the
bookkeeping kernels (schedule_kernel's update += 1, a read-modify-write, on a single thread)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fastvec.trainer.cuda.plan import NORM_BLOCKS
from fastvec.trainer.cuda.update import GpuUpdate


def _update(log, sequences=8, vtrace=False, epochs=2, minibatches=2):
    upd = GpuUpdate.__new__(GpuUpdate)
    upd.train = SimpleNamespace(vtrace=vtrace, update_epochs=epochs, learning_rate=3e-4, anneal_lr=True,
                                ent_coef=0.01, anneal_ent=False)
    upd.plan = SimpleNamespace(sequences=sequences, minibatches=minibatches, seqs_per_mb=sequences // minibatches,
                               horizon=4, rows=6)
    upd.arena = SimpleNamespace(ptr=lambda name, offset=0: name)
    upd.stream = "learner stream"
    upd.k = SimpleNamespace(launch_grid=lambda name, blocks, threads, *args: log.append((name, blocks, threads,
                                                                                          args)))
    upd.cuda = SimpleNamespace(memset_d32_async=lambda ptr, value, count, stream: log.append(("memset", ptr, value,
                                                                                            count, stream)))
    upd.optimizer = SimpleNamespace(join=lambda stream: log.append(("join", stream)))
    upd.heads = SimpleNamespace(update_obs_norm=lambda k, obs: log.append(("obs norm", obs)))
    upd.addresses = lambda name, slot, offset: (name, slot)
    upd.gae = lambda vtrace: log.append(("gae", vtrace))
    upd.current_logp = lambda half_bits: log.append(("current logp", half_bits))
    upd.epoch_order = lambda half_bits, epoch, num_updates: log.append(("order", half_bits, epoch, num_updates))
    upd.minibatch_step = lambda first: log.append(("minibatch", first))
    return upd


def _bookkeeping(log):
    return [(entry[0], entry[1], entry[2]) for entry in log if entry[0].endswith("_kernel")]


def test_one_update_zeroes_the_statistics_runs_every_epoch_then_the_bookkeeping_single_threaded():
    log = []
    _update(log).record(num_updates=10, slot=1)
    assert [entry[0] if entry[0].endswith("_kernel") else entry for entry in log] == [
        "begin_update_kernel", ("gae", False),
        ("order", 2, 0, 10), ("minibatch", 0), ("minibatch", 4),
        ("order", 2, 1, 10), ("minibatch", 0), ("minibatch", 4),
        ("join", "learner stream"), ("obs norm", ("obs", 1)),
        "sums_partial_kernel", "explained_variance_finish_kernel", "schedule_kernel"]
    launches = _bookkeeping(log)
    # schedule_kernel reads and rewrites scalars->update: exactly one thread. The other two store the same values
    # from every thread (more would only repeat them), but a launch needs at least one block of one thread.
    assert launches[3] == ("schedule_kernel", 1, 1)
    assert all(blocks >= 1 and threads >= 1 for name, blocks, threads in launches)
    _, blocks, threads = launches[1]  # sums_partial_kernel: full warps (its shuffles name all 32 lanes), and the
    assert blocks == NORM_BLOCKS and threads % 32 == 0 and 32 <= threads <= 1024  # partials the finish reads
    sums = next(entry for entry in log if entry[0] == "sums_partial_kernel")
    assert [int(sums[3][0]), int(sums[3][1]), *sums[3][2:]] == [4 * 6, 2, "adv_returns", "sums_partial"]  # A, R
    finish = next(entry for entry in log if entry[0] == "explained_variance_finish_kernel")
    assert int(finish[3][0]) == NORM_BLOCKS and int(finish[3][2]) == 4 * 6  # every partial; the slot's T * R rows
    schedule = next(entry for entry in log if entry[0] == "schedule_kernel")
    assert [float(v) for v in schedule[3][1:]] == [3e-4, 10, 1, 0.01, 0]


def test_a_stale_vtrace_update_recomputes_logp_first_and_corrects_gae_every_epoch():
    """train.vtrace on a slot collected with older weights: new_logp zeroed over the slot's T * R rows, the
    current policy's log-probabilities, then V-trace's GAE before each epoch (a fresh slot: plain GAE first)."""
    log = []
    _update(log, vtrace=True, epochs=3).record(num_updates=5, slot=0, stale=True)
    steps = [entry for entry in log if entry[0] in ("memset", "current logp", "gae", "order")]
    assert steps == [("memset", "new_logp", 0, 24, "learner stream"), ("current logp", 2), ("gae", True),
                     ("order", 2, 0, 5), ("gae", True), ("order", 2, 1, 5), ("gae", True), ("order", 2, 2, 5)]
    log.clear()
    _update(log, vtrace=True, epochs=2).record(num_updates=5, slot=0, stale=False)
    assert [entry for entry in log if entry[0] in ("memset", "current logp", "gae")] == [
        ("memset", "new_logp", 0, 24, "learner stream"), ("gae", False), ("gae", True)]


@pytest.mark.parametrize(("sequences", "half_bits"), [(1, 1), (2, 1), (4, 1), (5, 2), (16, 2), (17, 3), (64, 3),
                                                      (65, 4), (1000, 5), (1024, 5), (1025, 6)])
def test_the_shuffle_works_on_the_smallest_square_power_of_two_domain_holding_every_sequence(sequences, half_bits):
    """shuffle_kernel's Feistel permutation of 2 * half_bits bits, cycle-walked: 4 ** half_bits >= sequences with
    half_bits >= 1 as small as that allows (streams.sequence_order's domain, so the orders agree)."""
    log = []
    _update(log, sequences=sequences, minibatches=1).record(num_updates=3, slot=0)
    assert {entry[1] for entry in log if entry[0] == "order"} == {half_bits}
    assert 4 ** half_bits >= sequences and (half_bits == 1 or 4 ** (half_bits - 1) < sequences)
