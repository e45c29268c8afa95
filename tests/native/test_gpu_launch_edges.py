"""What the GPU code hands the driver, checked without a GPU: the launcher's grids, the size of an env batch's
slots against the layout batch_gpu.h's kernels use (built for the CPU), and graphs.py's driver calls and flags
against the CUDA headers (skipped where no cuda.h is found)."""

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import cuda_header, header_enums
from test_graph_and_event_release import driver, use_driver  # noqa: F401  (the libcuda stand-in's fixtures)

from fastvec import native
from fastvec.native import cuda_build, graphs
from fastvec.native.gpu import Launcher

EMULATION = Path(__file__).resolve().parents[1] / "emulation"
ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"


# ---------------------------------------------------------------------- Launcher's grids
class _Function:
    def __init__(self, calls):
        self.calls = calls

    def prepare(self, signature):
        self.signature = signature

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        self.calls.append((grid, block, stream, args, shared_size))


class _Module:
    def __init__(self):
        self.calls = []

    def get_function(self, name):
        return _Function(self.calls)


@pytest.mark.parametrize("threads,blocks", [(0, 1), (1, 1), (255, 1), (256, 1), (257, 2), (512, 2), (513, 3),
                                            (1_000_000, 3907)])
def test_launch_covers_every_thread_and_never_asks_for_an_empty_grid(threads, blocks):
    """launch(name, threads) runs ceil(threads / 256) blocks of 256 threads, and one block for no threads: CUDA
    refuses a grid of zero blocks, while the kernels return for an index past their count."""
    module = _Module()
    k = Launcher(module, "stream", {"kernel": "iP"})
    k.launch("kernel", threads, 7, 8)
    assert module.calls == [((blocks, 1, 1), (256, 1, 1), "stream", (7, 8), 0)]


@pytest.mark.parametrize("threads,block,blocks", [(0, 128, 1), (1, 128, 1), (128, 128, 1), (129, 128, 2),
                                                  (1000, 64, 16)])
def test_launch_shared_covers_every_thread_and_passes_its_shared_memory(threads, block, blocks):
    module = _Module()
    k = Launcher(module, "stream", {"kernel": "P"})
    k.launch_shared("kernel", threads, block, 4096, 5)
    assert module.calls == [((blocks, 1, 1), (block, 1, 1), "stream", (5,), 4096)]


def test_launch_block_and_launch_grid_take_their_sizes_as_given():
    module = _Module()
    k = Launcher(module, "s", {"kernel": "P"})
    k.launch_block("kernel", 1)
    k.launch_grid("kernel", 3, 64, 2)
    assert module.calls == [((1, 1, 1), (1024, 1, 1), "s", (1,), 0), ((3, 1, 1), (64, 1, 1), "s", (2,), 0)]


# ---------------------------------------------------------------------- slots of an env batch
LAYOUT_SOURCE = """#include <vector>
#include "gpu_on_cpu.cpp"
/* The bytes from the slots' base to the end of the last env's RNG, as fv_split_of lays them out. */
extern "C" long long emu_slots_end(int n) {
    std::vector<char> buf((size_t)n * (sizeof(State) + sizeof(fv_book) + sizeof(fv_rng)) + 1024);
    fv_split p = fv_split_of(buf.data(), n);
    return (long long)((char*)(p.rngs + n) - buf.data());
}
"""

# name: (env file, defines): states of 21 bytes (not a multiple of 4), a book of two agents, a float64 state
LAYOUT_ENVS = {
    "cartpole": (native.source_path("cartpole"), {}),
    "random_walk": (ENVS_DIR / "random_walk.h", {"LIMIT": 3}),
    "byte_state_21": (ENVS_DIR / "byte_state.h", {"STATE_BYTES": 21}),
}


@pytest.mark.parametrize("name", sorted(LAYOUT_ENVS))
def test_slots_bytes_end_where_the_last_envs_rng_ends(name, tmp_path):
    """CudaCompiledEnv.slots_bytes(n), the allocation CudaBatch makes and hands out as dev.slots, ends exactly where
    fv_split_of puts the end of env n-1's RNG: smaller and the kernels write past it, larger and dev.slots shows
    bytes that belong to no env."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    path, defines = LAYOUT_ENVS[name]
    source = tmp_path / "layout.cpp"
    source.write_text(LAYOUT_SOURCE)
    out = tmp_path / "layout.so"
    cmd = [cxx, "-std=c++20", "-O0", "-fPIC", "-shared", "-pthread", f"-I{native.NATIVE_DIR}", f"-I{EMULATION}",
           f"-I{path.parent}", f'-DENV="{path}"', *[f"-D{k}={v}" for k, v in defines.items()], str(source),
           "-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode and "barrier" in proc.stderr:
        pytest.skip("the C++ compiler lacks C++20's <barrier>")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lib = ctypes.CDLL(str(out))
    lib.emu_slots_end.restype = ctypes.c_longlong
    env = object.__new__(cuda_build.CudaCompiledEnv)  # the sizes a GPU module reads back, without a GPU
    env.state_size, env.book_size = lib.emu_state_size(), lib.emu_book_size()
    for n in (1, 2, 3, 255, 256, 257, 1000):
        assert env.slots_bytes(n) == lib.emu_slots_end(n), n


# ---------------------------------------------------------------------- graphs.py against cuda.h
def _cuda_h() -> tuple[str, dict[str, int]]:
    """cuda.h's text and its enumerators' values."""
    header = cuda_header("cuda.h")
    return header.read_text(errors="replace"), header_enums(header)


def test_graphs_driver_constants_are_cuda_h_values():
    _, values = _cuda_h()
    assert graphs.EVENT_DISABLE_TIMING == values["CU_EVENT_DISABLE_TIMING"]
    assert graphs.CAPTURE_MODE_THREAD_LOCAL == values["CU_STREAM_CAPTURE_MODE_THREAD_LOCAL"]
    assert values["CUDA_SUCCESS"] == 0  # check()'s test


def test_graphs_calls_the_symbols_cuda_h_maps_its_functions_to():
    """Each driver function graphs.py names is one cuda.h declares or maps an API name to (the _v2 of
    cuEventDestroy), never a name the header redirects to another symbol (ctypes would call the old ABI)."""
    header, _ = _cuda_h()
    text = Path(graphs.__file__).read_text()
    names = set(re.findall(r"\b(cu[A-Z]\w*)\b", text))
    assert {"cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuStreamBeginCapture_v2"} <= names
    for name in sorted(names):
        remap = re.search(rf"#define\s+{name}\s+(\S+)", header)
        if remap:
            assert remap.group(1) in (name, f"__CUDA_API_PTSZ({name})"), f"cuda.h maps {name} to {remap.group(1)}"
        declared = re.search(rf"CUDAAPI\s+{name}\s*\(", header)
        mapped_to = re.search(rf"#define\s+\w+\s+(?:__CUDA_API_PTSZ\()?{name}\b", header)
        assert declared or mapped_to, f"{name} is not a function of cuda.h"


def test_events_and_graphs_pass_the_driver_cuda_h_flags(driver):  # noqa: F811
    """An Event is made with CU_EVENT_DISABLE_TIMING (no timing, no blocking sync), a wait uses
    CU_EVENT_WAIT_DEFAULT, a capture CU_STREAM_CAPTURE_MODE_THREAD_LOCAL and an instantiation no flags; the legacy
    default stream (None or 0) reaches the driver as a null stream."""
    _, values = _cuda_h()
    event, graph = graphs.Event(), graphs.CudaGraph(0x99)
    event.make_wait(waiter=0x77, producer=None)
    event.make_wait(waiter=0, producer=0x88)
    with graph.capture():
        pass
    graph.launch()
    graph.launch(stream=0x55)
    assert driver.args("cuEventCreate") == [(0x1010, values["CU_EVENT_DISABLE_TIMING"])]
    assert driver.args("cuEventRecord") == [(0x1010, None), (0x1010, 0x88)]
    wait_default = values["CU_EVENT_WAIT_DEFAULT"]
    assert driver.args("cuStreamWaitEvent") == [(0x77, 0x1010, wait_default), (None, 0x1010, wait_default)]
    assert driver.args("cuStreamBeginCapture_v2") == [(0x99, values["CU_STREAM_CAPTURE_MODE_THREAD_LOCAL"])]
    assert [args[2] for args in driver.args("cuGraphInstantiateWithFlags")] == [0]
    assert [args[1] for args in driver.args("cuGraphLaunch")] == [0x99, 0x55]
    graph.close()
    event.__del__()
    assert {n for n, _ in driver.calls} >= {"cuEventDestroy_v2", "cuGraphExecDestroy", "cuGraphDestroy"}


def test_a_failed_driver_call_names_the_call_and_the_error(use_driver):  # noqa: F811
    use_driver(fail=("cuEventRecord",))
    event = graphs.Event()
    with pytest.raises(graphs.CudaDriverError, match="cuEventRecord failed with CUDA_ERROR_INVALID_VALUE: inv"):
        event.make_wait(waiter=1, producer=2)
