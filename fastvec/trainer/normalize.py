"""The reference algorithm's running normalisation (reference.py imports it; the CUDA trainer implements the same
math): observation statistics kept in the policy's layout (train.norm_obs) and reward scaling by the running std
of discounted returns (train.norm_reward), both updated once per rollout, on the host in float64."""

from __future__ import annotations

import numpy as np

REWARD_EPS, REWARD_CLIP = 1e-8, 10.0  # as Gymnasium's NormalizeReward, and CleanRL's clip of its output


def merge_moments(mean, var, count, batch):
    """Running (mean, var, count) merged with a batch (n, ...) by Chan et al.'s parallel formula (Gymnasium's
    RunningMeanStd): with delta = mean_b - mean and total = count + n, mean += delta n / total and
    var = (var count + var_b n + delta^2 count n / total) / total (population variances). float64 throughout."""
    batch = np.asarray(batch, np.float64)
    n = batch.shape[0]
    batch_mean, batch_var = batch.mean(0), batch.var(0)
    mean, var, count = np.float64(mean), np.float64(var), np.float64(count)
    delta = batch_mean - mean
    total = count + n
    new_mean = mean + delta * n / total
    new_var = (var * count + batch_var * n + delta * delta * count * n / total) / total
    return new_mean, new_var, total


def update_obs_norm(spec, params: dict, obs) -> None:
    """Merge a rollout's inputs obs (..., I) (raw: bytes or floats; the observation, then any agent ids) into the
    layout's statistics (obs_norm.mean, .var, .count, float32), as the encoder sees them before normalising: times
    spec.obs_scale."""
    x = np.asarray(obs, np.float64).reshape(-1, spec.input_size) * spec.obs_scale
    mean, var, count = merge_moments(params["obs_norm.mean"], params["obs_norm.var"], params["obs_norm.count"][0], x)
    params["obs_norm.mean"][...] = mean
    params["obs_norm.var"][...] = var
    params["obs_norm.count"][...] = count


def scale_rewards(rewards, dones, returns, moments, gamma):
    """Reward scaling for one rollout (train.norm_reward, as Gym's NormalizeReward that CleanRL uses): each row's
    discounted return G = gamma G + r, reset to 0 after the step that ends an episode, is carried across rollouts;
    the rollout's T x R values of G update the running moments (merge_moments), then every reward is divided by
    sqrt(var + 1e-8) and clipped to [-10, 10]. rewards, dones (T, R); returns (R,) float64, updated in place;
    moments (mean, var, count). Returns (scaled rewards in rewards' dtype, new moments)."""
    seen = np.empty(rewards.shape, np.float64)
    for t in range(len(rewards)):
        returns *= gamma
        returns += rewards[t]
        seen[t] = returns
        returns *= 1.0 - dones[t]
    moments = merge_moments(*moments, seen.reshape(-1))
    scale = 1.0 / np.sqrt(moments[1] + REWARD_EPS)
    return np.clip(rewards * scale, -REWARD_CLIP, REWARD_CLIP).astype(rewards.dtype), moments
