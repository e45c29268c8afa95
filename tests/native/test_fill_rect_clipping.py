"""fastvec.h's fv_fill_rect, which every env's render draws with: the rectangle [x0, x1) x [y0, y1) is filled and
clipped to the frame on each side, every pixel outside it (and every byte around the frame) left alone; the oracle
is NumPy slicing of the same frame."""

import ctypes

import numpy as np
import pytest

SOURCE = r"""
#include "fastvec.h"
void fill(unsigned char* rgb, int w, int h, int x0, int y0, int x1, int y1) {
    fv_fill_rect(rgb, w, h, x0, y0, x1, y1, 11, 22, 33);
}
"""
W, H, GUARD = 7, 5, 64  # GUARD bytes before and after the frame catch a write outside it

# Rectangles over each edge, over two and four edges at once, inside, outside and empty.
RECTS = [(-3, 1, 2, 3), (1, -2, 3, 2), (4, 1, 11, 3), (2, 3, 5, 9), (-1, -1, 2, 2), (5, 3, 9, 8),
         (-4, -6, 20, 30), (2, 1, 5, 4), (-5, 1, -1, 3), (1, -4, 3, 0), (7, 0, 9, 5), (0, 5, 7, 8), (3, 2, 3, 4),
         (4, 3, 2, 1), (0, 0, W, H)]


@pytest.fixture(scope="module")
def fill(c_shim):
    lib = c_shim(SOURCE)
    lib.fill.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 6
    lib.fill.restype = None
    return lib


@pytest.mark.parametrize("x0,y0,x1,y1", RECTS)
def test_a_filled_rectangle_is_clipped_to_the_frame_on_every_side(fill, x0, y0, x1, y1):
    buf = np.full(GUARD + H * W * 3 + GUARD, 200, np.uint8)
    fill.fill(buf.ctypes.data + GUARD, W, H, x0, y0, x1, y1)
    expected = np.full((H, W, 3), 200, np.uint8)
    expected[max(y0, 0):max(min(y1, H), 0), max(x0, 0):max(min(x1, W), 0)] = (11, 22, 33)
    np.testing.assert_array_equal(buf[GUARD:GUARD + H * W * 3].reshape(H, W, 3), expected)
    assert (buf[:GUARD] == 200).all() and (buf[GUARD + H * W * 3:] == 200).all(), "a write outside the frame"
