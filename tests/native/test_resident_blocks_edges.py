"""cuda_build.resident_blocks (which picks the wide or the occupancy-bounded step kernel) against sm_90's occupancy
rules worked by hand: registers allocated per warp in units of 256, 65,536 per SM, at most 64 warps (2,048 threads)
and 32 blocks; a whole number of blocks, and never fewer than one."""

import pytest

from fastvec.native import cuda_build


@pytest.mark.parametrize("registers,threads,blocks", [
    # 33 * 32 = 1056 registers a warp, rounded up to 1280: 65536 // (1280 * 8 warps) = 6 (not 65536 // 8448 = 7)
    (33, 256, 6),
    # 41 * 32 = 1312 -> 1536 a warp: 65536 // 12288 = 5 (unrounded: 65536 // 10496 = 6)
    (41, 256, 5),
    (41, 128, 10),
    # 12 warps: registers would allow 65536 // (512 * 12) = 10, threads 2048 // 384 = 5 (5.33 is no block count)
    (16, 384, 5),
    (40, 384, 4),   # 1280 * 12 = 15360: 4
    (32, 96, 21),   # 2048 // 96 = 21, registers 65536 // 3072 = 21
    (16, 96, 21),   # registers would allow 42
    (32, 640, 3),   # 65536 // 20480 = 3, 2048 // 640 = 3
    (24, 32, 32),   # one warp: 32 blocks at most
    (32, 256, 8),   # 1024 * 8 = 8192: 8 by registers and 8 by threads (2048 // 256)
    (32, 1024, 2),  # 1024 * 32 warps = 32768: 2, and 2048 // 1024 = 2
    # 128 * 32 * 32 warps = 131072 registers: no such block fits; the answer is still one block
    (128, 1024, 1),
    (255, 1024, 1),
    (255, 256, 1),  # 255 * 32 = 8160 -> 8192 a warp, 65536 per block of 8 warps: exactly one
])
def test_resident_blocks_by_hand(registers, threads, blocks):
    got = cuda_build.resident_blocks(registers, threads)
    assert got == blocks and type(got) is int


def test_the_default_block_is_the_step_kernels_256_threads():
    assert cuda_build.THREADS_PER_BLOCK == 256
    assert [cuda_build.resident_blocks(r) for r in (33, 41, 57, 65, 73, 255)] == [6, 5, 4, 3, 3, 1]
