"""CUDA driver calls that PyCUDA lacks (graphs, events across foreign streams), through ctypes on
libcuda.so.1, each checked and failing with the CUresult's name. `CudaGraph` records the work a
function enqueues on a stream once and replays it with one launch; the trainer uses it too."""

from __future__ import annotations

import ctypes
from functools import lru_cache

# CUstreamCaptureMode: THREAD_LOCAL refuses unsafe calls (e.g. a synchronising copy) made by this
# thread during capture, but lets other threads (e.g. a torch allocator) carry on.
CAPTURE_MODE_THREAD_LOCAL = 1
EVENT_DISABLE_TIMING = 0x2


class CudaDriverError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the CUresult."""


@lru_cache(maxsize=None)
def libcuda() -> ctypes.CDLL:
    """The CUDA driver library (loaded once), or an error saying why it cannot be used."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        raise CudaDriverError(
            f"cannot load the CUDA driver libcuda.so.1 ({err}); a GPU env needs an NVIDIA GPU and its driver"
        ) from None


def error_name(result: int) -> str:
    """'CUDA_ERROR_X: description' for a CUresult."""
    lib = libcuda()
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    lib.cuGetErrorName(ctypes.c_int(result), ctypes.byref(name))
    lib.cuGetErrorString(ctypes.c_int(result), ctypes.byref(text))
    return f"{(name.value or b'CUresult %d' % result).decode()}: {(text.value or b'').decode()}"


def check(result: int, call: str) -> None:
    """Raise CudaDriverError naming `call` and the CUresult unless result is CUDA_SUCCESS."""
    if result != 0:
        raise CudaDriverError(f"{call} failed with {error_name(result)}")


def call(name: str, *args) -> None:
    """Call driver function `name` with ctypes arguments and check its result."""
    check(getattr(libcuda(), name)(*args), name)


def _stream(handle: int | None) -> ctypes.c_void_p:
    return ctypes.c_void_p(handle or 0)


class Event:
    """A timing-free CUDA event, for ordering one stream after another (no host wait)."""

    def __init__(self):
        self.handle = ctypes.c_void_p()
        call("cuEventCreate", ctypes.byref(self.handle), ctypes.c_uint(EVENT_DISABLE_TIMING))

    def make_wait(self, waiter: int | None, producer: int | None) -> None:
        """Make stream `waiter` wait for the work enqueued so far on stream `producer`."""
        call("cuEventRecord", self.handle, _stream(producer))
        call("cuStreamWaitEvent", _stream(waiter), self.handle, ctypes.c_uint(0))

    def __del__(self):
        if getattr(self, "handle", None) and self.handle.value:
            libcuda().cuEventDestroy_v2(self.handle)
            self.handle = None


class CudaGraph:
    """Work captured from a stream, replayable as one launch.

        graph = CudaGraph(stream_handle)
        with graph.capture():
            ...enqueue kernels on the stream (no host synchronisation inside)...
        graph.launch()          # replays everything, in order, on the same stream

    Pointers and scalars are baked in at capture: buffers must stay where they are (fastvec's
    batches never move theirs). Capture raises CudaDriverError (e.g. CUDA_ERROR_STREAM_CAPTURE_
    UNSUPPORTED) if the captured code synchronises with the host.
    """

    def __init__(self, stream: int):
        if not stream:
            raise ValueError("CUDA graphs cannot be captured on the legacy default stream; pass a created stream")
        self.stream = int(stream)
        self._graph = ctypes.c_void_p()
        self._exec = ctypes.c_void_p()

    def capture(self) -> _Capture:
        """Context manager: everything enqueued on the stream inside it becomes the graph."""
        if self._exec.value:
            raise RuntimeError("this CudaGraph is already captured; make a new one to record other work")
        return _Capture(self)

    @property
    def captured(self) -> bool:
        return bool(self._exec.value)

    def launch(self, stream: int | None = None) -> None:
        """Replay the graph on its stream (or `stream`); returns at once, like a kernel launch."""
        if not self._exec.value:
            raise RuntimeError("launch() before capture(): record the work first")
        check(libcuda().cuGraphLaunch(self._exec, _stream(stream or self.stream)), "cuGraphLaunch")

    def close(self) -> None:
        """Free the graph now (also done when it is garbage-collected)."""
        lib = libcuda()
        if self._exec.value:
            lib.cuGraphExecDestroy(self._exec)
            self._exec = ctypes.c_void_p()
        if self._graph.value:
            lib.cuGraphDestroy(self._graph)
            self._graph = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the driver may be gone already
            pass


class _Capture:
    def __init__(self, graph: CudaGraph):
        self.graph = graph

    def __enter__(self) -> CudaGraph:
        call("cuStreamBeginCapture_v2", _stream(self.graph.stream), ctypes.c_int(CAPTURE_MODE_THREAD_LOCAL))
        return self.graph

    def __exit__(self, exc_type, exc, tb) -> None:
        g = self.graph
        # End the capture even when the body failed, or the stream stays unusable.
        result = libcuda().cuStreamEndCapture(_stream(g.stream), ctypes.byref(g._graph))
        if exc_type is not None:
            g.close()
            return
        check(result, "cuStreamEndCapture")
        call("cuGraphInstantiateWithFlags", ctypes.byref(g._exec), g._graph, ctypes.c_ulonglong(0))
