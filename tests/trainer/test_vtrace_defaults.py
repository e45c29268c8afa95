"""reference.gae's V-trace defaults: with ratios and no clips given, rho and c are clipped at 1 (IMPALA's
rho-bar = c-bar = 1), checked against the direct sum of IMPALA's definition with ratios on both sides of 1."""

import numpy as np
import pytest
from test_reference import vtrace_by_definition  # IMPALA's definition summed term by term

from fastvec.trainer import reference as ref

RNG = np.random.default_rng(8080)


@pytest.mark.parametrize("given", [{}, {"rho_clip": 1.0}, {"c_clip": 1.0}])
def test_vtrace_clips_rho_and_c_at_1_unless_told_otherwise(given):
    steps, b = 9, 3
    values, rewards = RNG.standard_normal((steps, b)), RNG.standard_normal((steps, b))
    dones, last = RNG.random((steps, b)) < 0.15, RNG.standard_normal(b)
    ratios = np.exp(RNG.uniform(-1.0, 1.0, (steps, b)))  # about half above 1, so either clip shows
    assert (ratios > 1.2).any() and (ratios < 0.8).any()
    got = ref.gae(values, last, rewards, dones, 0.98, 0.9, ratios, **given)
    want = vtrace_by_definition(values, last, rewards, dones, ratios, 0.98, 0.9, 1.0, 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
