"""heads.sample_actions, the NumPy reference's inverse-CDF sampling, for any number of rows (one, fewer than the
actions, more): each row's action is the first whose cumulative probability exceeds its uniform, by hand."""

import numpy as np
import pytest

from fastvec.trainer.heads import sample_actions


def by_hand(probs, u):
    """The first action whose running sum of probabilities passes u (the last when rounding leaves none)."""
    total = 0.0
    for a, p in enumerate(probs):
        total += p
        if u < total:
            return a
    return len(probs) - 1


@pytest.mark.parametrize("rows", [1, 2, 5, 9])
def test_each_rows_action_is_the_inverse_cdf_of_its_uniform_whatever_the_row_count(rows):
    probs = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    logits = np.tile(np.log(probs), (rows, 1)) + np.arange(rows)[:, None]  # a shift per row changes nothing
    uniforms = np.linspace(0.02, 0.98, rows) if rows > 1 else np.array([0.97])
    actions, logp = sample_actions(logits, uniforms)
    assert actions.dtype == np.int64 and actions.shape == (rows,)
    assert actions.tolist() == [by_hand(probs, u) for u in uniforms]
    np.testing.assert_allclose(logp, np.log(probs[actions]), rtol=1e-12)


def test_one_row_reaches_the_last_action_and_the_first():
    logits = np.log(np.array([[0.25, 0.25, 0.5]]))
    assert sample_actions(logits, np.array([0.9]))[0].tolist() == [2]
    assert sample_actions(logits, np.array([0.0]))[0].tolist() == [0]
    assert sample_actions(logits, np.array([0.3]))[0].tolist() == [1]
