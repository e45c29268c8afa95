"""reference.newton_schulz against its definition in the spectral domain: for G = U diag(s) V^T the iteration
acts on each singular value alone, so the result must be U diag(p(...p(s / (|G|_F + 1e-7))...)) V^T with Muon's
quintic p(x) = a x + b x^3 + c x^5 applied `steps` times, whatever the shape or scale of G."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref


def spectral_newton_schulz(g, steps):
    u, s, vt = np.linalg.svd(g, full_matrices=False)
    a, b, c = ref.NS_COEFFS
    x = s / (np.sqrt((g * g).sum()) + 1e-7)
    for _ in range(steps):
        x = a * x + b * x**3 + c * x**5
    return (u * x) @ vt


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (4, 4)])
@pytest.mark.parametrize("scale", [1e-4, 1.0, 50.0])
@pytest.mark.parametrize("steps", [1, 5])
def test_newton_schulz_applies_the_quintic_to_each_singular_value(shape, scale, steps):
    g = np.random.default_rng(sum(shape)).standard_normal(shape) * scale
    np.testing.assert_allclose(ref.newton_schulz(g, steps), spectral_newton_schulz(g, steps), rtol=1e-9,
                               atol=1e-12)


def test_muon_update_scale_is_0_2_sqrt_of_the_larger_side():
    assert ref.muon_update_scale((64, 4)) == pytest.approx(0.2 * 8)
    assert ref.muon_update_scale((9, 100)) == pytest.approx(0.2 * 10)


@pytest.mark.parametrize("shape", [(7, 3), (2, 5)])
def test_a_matrix_and_its_transpose_are_orthogonalised_by_the_same_arithmetic(shape):
    """The iteration runs on the wide side (the smaller Gram matrix), so NS(G^T) is NS(G)^T bit for bit."""
    g = np.random.default_rng(7).standard_normal(shape)
    np.testing.assert_array_equal(ref.newton_schulz(g.T, 5), ref.newton_schulz(g, 5).T)
