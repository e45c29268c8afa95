"""normalize.scale_rewards where the returns' variance is tiny or zero: the reward is divided by
sqrt(var + 1e-8) (Gymnasium's NormalizeReward epsilon), so zero variance scales by 1e4 and stays finite."""

import numpy as np

from fastvec.trainer import normalize


def test_reward_scaling_with_zero_variance_divides_by_the_epsilons_root():
    rewards = np.zeros((2, 3), np.float32)
    scaled, moments = normalize.scale_rewards(rewards, np.zeros((2, 3)), np.zeros(3), (0.0, 0.0, 1e6), 0.99)
    assert moments[0] == 0.0 and moments[1] == 0.0 and moments[2] == 1e6 + 6
    assert np.isfinite(scaled).all() and not scaled.any()


def test_reward_scaling_with_a_variance_of_the_epsilon_itself_divides_by_root_2e_minus_8():
    """var 1e-8 with a count so large that one new return of 1e-3 leaves it there: 1e-3 / sqrt(1e-8 + 1e-8)."""
    rewards = np.array([[1e-3]], np.float32)
    scaled, moments = normalize.scale_rewards(rewards, np.zeros((1, 1)), np.zeros(1), (0.0, 1e-8, 1e12), 0.99)
    assert abs(moments[1] - 1e-8) < 1e-17
    np.testing.assert_allclose(scaled, [[1e-3 / np.sqrt(2e-8)]], rtol=1e-6)
    assert 7.07 < scaled[0, 0] < 7.072
