"""The training loop's stop signals (loop.StopRequest), in this process: the first SIGTERM or SIGINT asks
for a stop at the next update and is remembered, a second Ctrl-C stops at once unless a save is under way,
a SIGINT after a SIGTERM is the same stop; handlers go in only on the main thread, leave ignored signals
ignored, skip SIGTERM when told, and the previous handlers come back."""

import os
import signal
import threading

import pytest

from fastvec.trainer.loop import StopRequest


@pytest.fixture
def handlers():
    """Python's own handlers for the test (a shell's background job starts with SIGINT ignored), then back."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_the_first_signal_is_remembered_and_a_second_ctrl_c_stops_at_once(handlers):
    stop = StopRequest().install()
    os.kill(os.getpid(), signal.SIGINT)
    assert stop.signum == signal.SIGINT
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    stop.restore()


def test_a_second_ctrl_c_during_a_save_lets_it_finish(handlers):
    stop = StopRequest().install()
    stop.handle(signal.SIGINT, None)
    stop.saving = True
    stop.handle(signal.SIGINT, None)  # no KeyboardInterrupt
    assert stop.signum == signal.SIGINT
    stop.restore()


def test_sigterm_then_sigint_is_one_stop_that_keeps_the_first_signal(handlers):
    stop = StopRequest().install()
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop.signum == signal.SIGTERM
    stop.restore()


def test_the_previous_handlers_come_back(handlers):
    def mine(signum, frame):
        pass

    signal.signal(signal.SIGTERM, mine)
    stop = StopRequest().install()
    assert signal.getsignal(signal.SIGTERM) == stop.handle and signal.getsignal(signal.SIGINT) == stop.handle
    stop.restore()
    assert signal.getsignal(signal.SIGTERM) is mine
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert stop.previous == {}


def test_an_ignored_signal_stays_ignored_and_sigterm_can_be_left_alone(handlers):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = StopRequest().install()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and signal.getsignal(signal.SIGTERM) == stop.handle
    stop.restore()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rank = StopRequest().install(sigterm=False)
    assert signal.getsignal(signal.SIGINT) == rank.handle
    assert signal.getsignal(signal.SIGTERM) is not rank.handle
    rank.restore()


def test_off_the_main_thread_nothing_is_installed(handlers):
    before = signal.getsignal(signal.SIGINT)
    done = []
    thread = threading.Thread(target=lambda: done.append(StopRequest().install()))
    thread.start()
    thread.join()
    assert done[0].previous == {} and signal.getsignal(signal.SIGINT) is before
