"""graphs.py's releases, against a stand-in for libcuda (no GPU): an Event or CudaGraph is destroyed once, with
its own handles; one never created, failed or already released calls nothing and raises nothing, also when
collected (Python would print an exception raised in __del__ as `Exception ignored in ...`)."""

import ctypes
import gc
import sys

import pytest

from fastvec.native import graphs


class _Driver:
    """libcuda as graphs.py calls it: calls recorded as (name, plain argument values), handles handed out from
    0x1000 on, CUDA_SUCCESS unless the call is in `fail`."""

    def __init__(self, fail=()):
        self.calls, self.fail, self.next, self.handed = [], set(fail), 0x1000, set()

    def __getattr__(self, name):
        def call(*args):
            out = {"cuEventCreate": 0, "cuStreamEndCapture": 1, "cuGraphInstantiateWithFlags": 0}.get(name)
            if out is not None and name not in self.fail:
                self.next += 0x10
                self.handed.add(self.next)
                args[out]._obj.value = self.next
            if name in ("cuGetErrorName", "cuGetErrorString"):
                args[1]._obj.value = b"CUDA_ERROR_INVALID_VALUE" if name == "cuGetErrorName" else b"invalid argument"
            plain = lambda a: getattr(getattr(a, "_obj", a), "value", a)
            self.calls.append((name, tuple(plain(a) for a in args)))
            return 1 if name in self.fail else 0
        return call

    def named(self, *names):
        return [(n, args) for n, args in self.calls if n in names]

    def args(self, name):
        return [args for n, args in self.calls if n == name]


@pytest.fixture
def use_driver(monkeypatch):
    """use_driver(fail=...) puts a stand-in driver in libcuda's place. At the end, any Event or CudaGraph still
    holding a stand-in's handle (a failed test keeps its objects alive) has it dropped: the real driver must never
    see one."""
    fakes = []

    def use(fail=()):
        fakes.append(_Driver(fail))
        monkeypatch.setattr(graphs, "libcuda", lambda: fakes[-1])
        return fakes[-1]

    yield use
    handed = set().union(*(fake.handed for fake in fakes))
    ours = lambda handle: handle is not None and handle.value in handed  # never a real driver's handle
    for obj in gc.get_objects():
        if type(obj) is graphs.Event and ours(obj.handle):  # type(), not isinstance: reads nothing of other objects
            obj.handle = None
        elif type(obj) is graphs.CudaGraph:
            if ours(obj._exec):
                obj._exec = ctypes.c_void_p()
            if ours(obj._graph):
                obj._graph = ctypes.c_void_p()


@pytest.fixture
def driver(use_driver):
    return use_driver()


@pytest.fixture
def unraisable(monkeypatch):
    """Exceptions raised in __del__ (which Python only prints), collected here."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def test_an_event_is_destroyed_once_with_its_handle(driver, unraisable):
    event = graphs.Event()
    (created,) = [args[0] for _, args in driver.named("cuEventCreate")]
    event.__del__()  # released early, then collected: the collection must not release it again
    assert driver.named("cuEventDestroy_v2") == [("cuEventDestroy_v2", (created,))]
    event.__del__()
    del event
    gc.collect()
    assert driver.named("cuEventDestroy_v2") == [("cuEventDestroy_v2", (created,))]
    assert unraisable == []


def test_an_event_whose_creation_failed_releases_nothing(use_driver, unraisable):
    fake = use_driver(fail={"cuEventCreate"})
    with pytest.raises(graphs.CudaDriverError, match="cuEventCreate failed"):
        graphs.Event()
    gc.collect()  # the half-made Event (its handle still null) is collected
    assert fake.named("cuEventDestroy_v2") == [] and unraisable == []


def test_a_collected_event_releases_its_handle(driver, unraisable):
    graphs.Event()  # dropped at once
    gc.collect()
    (created,) = [args[0] for _, args in driver.named("cuEventCreate")]
    assert driver.named("cuEventDestroy_v2") == [("cuEventDestroy_v2", (created,))] and unraisable == []


def test_a_graph_never_captured_releases_nothing(driver, unraisable):
    graph = graphs.CudaGraph(0x99)
    graph.close()
    del graph
    gc.collect()
    assert driver.calls == [] and unraisable == []


def test_a_captured_graph_launches_on_its_stream_and_is_destroyed_once_exec_first(driver, unraisable):
    graph = graphs.CudaGraph(0x99)
    with graph.capture():
        pass
    assert graph.captured
    (made,) = [args[1] for _, args in driver.named("cuStreamEndCapture")]
    (instance,) = [args[0] for _, args in driver.named("cuGraphInstantiateWithFlags")]
    graph.launch()
    graph.launch(0x55)
    assert driver.named("cuGraphLaunch") == [("cuGraphLaunch", (instance, 0x99)), ("cuGraphLaunch", (instance, 0x55))]
    graph.close()
    destroyed = [("cuGraphExecDestroy", (instance,)), ("cuGraphDestroy", (made,))]
    assert driver.named("cuGraphExecDestroy", "cuGraphDestroy") == destroyed
    assert not graph.captured
    graph.close()
    del graph
    gc.collect()
    assert driver.named("cuGraphExecDestroy", "cuGraphDestroy") == destroyed and unraisable == []


def test_a_closed_graph_cannot_launch(driver):
    graph = graphs.CudaGraph(0x99)
    with graph.capture():
        pass
    graph.close()
    with pytest.raises(RuntimeError, match=r"launch\(\) before capture\(\)"):
        graph.launch()
    assert driver.named("cuGraphLaunch") == []


def test_a_capture_whose_body_fails_ends_it_and_frees_the_graph(driver, unraisable):
    """The stream leaves capture mode (cuStreamEndCapture) even when the body raises; the graph captured so far is
    destroyed, nothing is instantiated and the body's error is the one raised."""
    graph = graphs.CudaGraph(0x99)
    with pytest.raises(KeyError, match="body"), graph.capture():
        raise KeyError("body")
    (made,) = [args[1] for _, args in driver.named("cuStreamEndCapture")]
    assert driver.named("cuGraphInstantiateWithFlags", "cuGraphExecDestroy") == []
    assert driver.named("cuGraphDestroy") == [("cuGraphDestroy", (made,))] and not graph.captured
    del graph
    gc.collect()
    assert len(driver.named("cuGraphDestroy")) == 1 and unraisable == []


def test_a_graph_is_captured_once(driver):
    graph = graphs.CudaGraph(0x99)
    with graph.capture():
        pass
    with pytest.raises(RuntimeError, match="already captured"):
        graph.capture()
    graph.close()


def test_a_failed_end_of_capture_names_the_call(use_driver):
    fake = use_driver(fail={"cuStreamEndCapture"})
    graph = graphs.CudaGraph(0x99)
    with pytest.raises(graphs.CudaDriverError, match="cuStreamEndCapture failed with CUDA_ERROR_INVALID_VALUE"), \
            graph.capture():
        pass
    assert fake.named("cuGraphInstantiateWithFlags") == [] and not graph.captured
