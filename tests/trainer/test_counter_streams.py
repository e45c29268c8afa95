"""The host twins of the CUDA trainer's counter-based random streams (reference.policy_uniforms,
reference.sequence_order, reference.splitmix64) against the kernels' own source: mix64, policy_uniform,
feistel and shuffle_kernel are cut out of the .cu files and compiled for the CPU with the system compiler, so
the host's recomputation is checked without a GPU; and splitmix64 against its published first output."""

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fastvec.trainer import reference as ref

CUDA = Path(ref.__file__).resolve().parent / "cuda"
COMPILER = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def cut(source: str, header: str) -> str:
    """The text of the definition that starts with `header` through its closing brace (or `;` for a typedef)."""
    start = source.index(header)
    depth, i = 0, source.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        if depth == 0:
            break
        i += 1
    end = source.index(";", i) + 1 if header.startswith("typedef") else i + 1
    return source[start:end]


HARNESS = """
#define __device__
#define __global__
#define __forceinline__ inline
struct fv_dim { unsigned int x; };
static struct fv_dim blockIdx = {0}, blockDim = {1}, threadIdx = {0};
%s
float host_policy_uniform(unsigned long long key, long long row, long long step) {
    return policy_uniform(key, row, step);
}
unsigned long long host_mix64(unsigned long long z) { return mix64(z); }
void host_shuffle(int count, int half_bits, unsigned long long seed_key, int update, int epoch, int* perm) {
    TrainScalars scalars = {0};
    scalars.update = update;
    for (unsigned int i = 0; i < (unsigned int)count; i++) {
        threadIdx.x = i;
        shuffle_kernel(count, half_bits, seed_key, epoch, &scalars, perm);
    }
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    if COMPILER is None:
        pytest.skip("no C compiler")
    common, policy, ppo = ((CUDA / name).read_text() for name in ("common.cu", "policy.cu", "ppo.cu"))
    parts = [cut(common, "typedef struct {\n    double lr;"),
             cut(common, "__device__ __forceinline__ unsigned long long mix64("),
             cut(policy, "__device__ __forceinline__ float policy_uniform("),
             cut(ppo, "__device__ unsigned int feistel("),
             cut(ppo, "__global__ void shuffle_kernel(")]
    folder = tmp_path_factory.mktemp("streams")
    (folder / "streams.c").write_text(HARNESS % "\n".join(parts))
    subprocess.run([COMPILER, "-O1", "-shared", "-fPIC", "-o", str(folder / "streams.so"), str(folder / "streams.c")],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(folder / "streams.so"))
    lib.host_policy_uniform.restype = ctypes.c_float
    lib.host_policy_uniform.argtypes = [ctypes.c_ulonglong, ctypes.c_longlong, ctypes.c_longlong]
    lib.host_mix64.restype = ctypes.c_ulonglong
    lib.host_mix64.argtypes = [ctypes.c_ulonglong]
    lib.host_shuffle.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p]
    return lib


def test_splitmix64_is_the_published_finaliser(kernels):
    # splitmix64 seeded with 0: its first output is mix(0x9E3779B97F4A7C15) = 0xE220A8397B1DCDAF (Vigna).
    assert ref.splitmix64(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF
    for z in [0, 1, 12345, 2**63 + 7, 2**64 - 1]:
        assert ref.splitmix64(z) == kernels.host_mix64(z)
        with np.errstate(over="ignore"):
            assert int(ref._mix64(np.uint64(z))) == kernels.host_mix64(z)


@pytest.mark.parametrize("key,step", [(0, 0), (0xDEADBEEF, 7), (2**64 - 5, 123456)])
def test_policy_uniforms_are_the_kernels(kernels, key, step):
    host = ref.policy_uniforms(key, 50, step)
    device = np.array([kernels.host_policy_uniform(key, row, step) for row in range(50)], np.float32)
    np.testing.assert_array_equal(host, device)
    assert ((host >= 0) & (host < 1)).all()


@pytest.mark.parametrize("count", [1, 2, 5, 16, 17, 100, 1000])
def test_sequence_order_is_the_shuffle_kernels_permutation(kernels, count):
    half = max(1, -(-int(np.ceil(np.log2(max(count, 2)))) // 2))
    for update, epoch in [(0, 0), (3, 1), (70000, 5)]:
        key = 0x1234_5678_9ABC_DEF0
        host = ref.sequence_order(count, key, update, epoch)
        perm = np.full(count, -1, np.int32)
        kernels.host_shuffle(count, half, key, update, epoch, perm.ctypes.data)
        np.testing.assert_array_equal(host, perm)
        np.testing.assert_array_equal(np.sort(host), np.arange(count))
    if count >= 16:
        assert not np.array_equal(ref.sequence_order(count, 1, 0, 0), ref.sequence_order(count, 1, 0, 1))
