"""reference.gae's V-trace defaults: with ratios and no clips given, rho and c are clipped at 1 (IMPALA's
rho-bar = c-bar = 1), checked against the direct sum of IMPALA's definition with ratios on both sides of 1."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref

RNG = np.random.default_rng(8080)


def vtrace_by_definition(values, last_value, rewards, dones, ratios, gamma, lam, rho_clip, c_clip):
    """v_s - V(x_s) = sum_t gamma^(t-s) (prod_{s<=i<t} c_i) rho_t delta_t, rho_t = min(rho_clip, ratio_t),
    c_i = lam min(c_clip, ratio_i), nothing carried past an episode's end."""
    steps, b = values.shape
    next_values = np.concatenate([values[1:], last_value[None]])
    out = np.zeros_like(values)
    for i in range(b):
        for s in range(steps):
            total, weight = 0.0, 1.0
            for t in range(s, steps):
                nonterminal = 0.0 if dones[t, i] else 1.0
                delta = rewards[t, i] + gamma * nonterminal * next_values[t, i] - values[t, i]
                total += weight * min(rho_clip, ratios[t, i]) * delta
                if dones[t, i]:
                    break
                weight *= gamma * lam * min(c_clip, ratios[t, i])
            out[s, i] = total
    return out


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
