"""ppo.cu's shuffle_kernel over a whole launch grid (cut out of the .cu file and compiled for the CPU): the threads past
the epoch's count, which a grid of 256-thread blocks has unless count is a multiple of 256, write nothing, and
threads 0..count-1 write reference.sequence_order's permutation."""

import ctypes
import subprocess

import numpy as np
import pytest
from test_counter_streams import COMPILER, CUDA, cut

from fastvec.trainer import reference as ref

HARNESS = """
#define __device__
#define __global__
#define __forceinline__ inline
struct fv_dim { unsigned int x; };
static struct fv_dim blockIdx = {0}, blockDim = {1}, threadIdx = {0};
%s
/* Every thread of `blocks` blocks of `block` threads, as a launch of that grid runs them. */
void host_shuffle_grid(int blocks, int block, int count, int half_bits, unsigned long long seed_key, int update,
                       int epoch, int* perm) {
    TrainScalars scalars = {0};
    scalars.update = update;
    blockDim.x = (unsigned int)block;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < block; t++) {
            blockIdx.x = (unsigned int)b;
            threadIdx.x = (unsigned int)t;
            shuffle_kernel(count, half_bits, seed_key, epoch, &scalars, perm);
        }
}
"""
BLOCK = 256  # gpu.Launcher.threads: update.py launches shuffle_kernel with ceil(count / 256) such blocks
GUARD = 300  # entries past perm's end, more than a block


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    if COMPILER is None:
        pytest.skip("no C compiler")
    common, ppo = ((CUDA / name).read_text() for name in ("common.cu", "ppo.cu"))
    parts = [cut(common, "typedef struct {\n    double lr;"), cut(common, "__device__ __forceinline__ unsigned long long mix64("),
             cut(ppo, "__device__ unsigned int feistel("), cut(ppo, "__global__ void shuffle_kernel(")]
    folder = tmp_path_factory.mktemp("shuffle_grid")
    (folder / "grid.c").write_text(HARNESS % "\n".join(parts))
    subprocess.run([COMPILER, "-O1", "-shared", "-fPIC", "-o", str(folder / "grid.so"), str(folder / "grid.c")],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(folder / "grid.so"))
    lib.host_shuffle_grid.argtypes = [ctypes.c_int] * 4 + [ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int,
                                                           ctypes.c_void_p]
    return lib


@pytest.mark.parametrize("count", [1, 3, 100, 255, 256, 257, 1000])
def test_threads_past_the_count_write_nothing(kernels, count):
    """perm has count entries (plan.py: perm (Q,)), followed here by guard entries: after a launch of whole blocks
    they hold what they held, and the first count entries are the reference's order, a permutation of 0..count-1.
    A grid of two extra blocks too: a thread past the count does nothing wherever it lies."""
    half = max(1, -(-int(np.ceil(np.log2(max(count, 2)))) // 2))
    key = ref.shuffle_key(ref.sampling_key(5))
    for blocks in (-(-count // BLOCK), -(-count // BLOCK) + 2):
        for update, epoch in [(0, 0), (7, 3)]:
            perm = np.full(count + GUARD, -7, np.int32)
            kernels.host_shuffle_grid(blocks, BLOCK, count, half, key, update, epoch, perm.ctypes.data)
            np.testing.assert_array_equal(perm[:count], ref.sequence_order(count, key, update, epoch))
            np.testing.assert_array_equal(np.sort(perm[:count]), np.arange(count))
            assert (perm[count:] == -7).all(), f"written past perm's {count} entries"
