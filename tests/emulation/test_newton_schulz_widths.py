"""muon_small_kernel's Newton-Schulz (fastvec/trainer/cuda/newton_schulz.cu) on the CPU build for every width and
height remainder mod 4: the float4 products run over the sizes rounded up to 4, so a width of 4k+1 (one column past
a whole float4) must still reach the reference.newton_schulz result."""

import pytest
from test_newton_schulz import assert_newton_schulz_matches_reference, emu  # noqa: F401  (the module's harness)


@pytest.mark.parametrize("shape", [(5, 9), (9, 5), (3, 13), (17, 6), (8, 33), (2, 21), (12, 25), (7, 7)])
def test_a_wide_side_one_past_a_float4_matches_the_reference(emu, shape):  # noqa: F811
    """The wide side (c = max(rows, cols)) is 1 mod 4 in every shape (its last column alone in its float4), the
    narrow side 1, 2, 3 or 0 mod 4, both orientations."""
    assert_newton_schulz_matches_reference(emu, shape, sum(shape) + 7)
