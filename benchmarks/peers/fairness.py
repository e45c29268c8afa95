"""The rules both sides of a training comparison are measured by: the envs they play (fastvec name, gymnax id,
threshold), one smoothing of the returns (the mean of the last K finished episodes), every seed counted (a seed
that never crosses counts as its whole training time, a bound), the same groups merged into a peer's log intervals
where the peer logs no episode counts, and the map from PureJaxRL's settings onto fastvec-train's config. Plain
Python: no JAX, no fastvec import."""

from __future__ import annotations

import math
import statistics

WINDOW_EPISODES = 100  # K: the threshold is crossed when the mean return of the last K finished episodes reaches it

# fastvec env -> (gymnax id, return threshold or None for report-only)
CLASSIC = {
    "pendulum": ("Pendulum-v1", -200.0),
    "acrobot": ("Acrobot-v1", -100.0),
    "mountaincar": ("MountainCar-v0", None),
    "mountaincarcontinuous": ("MountainCarContinuous-v0", None),
}
MINATAR = {
    "breakout-minatar": ("Breakout-MinAtar", 30.0),
    "asterix-minatar": ("Asterix-MinAtar", None),
    "freeway-minatar": ("Freeway-MinAtar", None),
    "seaquest-minatar": ("Seaquest-MinAtar", None),
    "spaceinvaders-minatar": ("SpaceInvaders-MinAtar", None),
}
CONTINUOUS = {"pendulum", "mountaincarcontinuous"}  # Box actions: PureJaxRL's continuous settings


def peer_family(env: str) -> str:
    """The PureJaxRL settings family (purejaxrl_ppo.FAMILIES) that the peer trains env with."""
    return "minatar" if env in MINATAR else "continuous" if env in CONTINUOUS else "classic"


def fastvec_env_overrides(env: str) -> dict:
    """[env] settings under which fastvec plays gymnax's version of env: gymnax's MinAtar games have no sticky
    actions (the `minatar` package's, and fastvec's, default 0.1 repeats the previous action one step in ten) and end
    episodes at 1,000 steps (Freeway 2,500; the `minatar` package's, and fastvec's, run to the game's end)."""
    if env not in MINATAR:
        return {}
    return {"sticky_action_milli": 0, "max_episode_steps": 2500 if env == "freeway-minatar" else 1000}


def window_means(groups, k: int = WINDOW_EPISODES) -> list:
    """The mean return of the last k finished episodes after each group, or None while fewer than k have finished.

    groups: (steps, seconds, mean return, episodes) in training order, one per update (both trainers report each
    update's finished episodes as a mean and a count, not one by one). A count-weighted window: the newest groups
    whole, and the oldest group inside the window only for the episodes it still contributes, at its mean."""
    out, window, total = [], [], 0
    for _, _, mean, count in groups:
        if count:
            window.append((mean, count))
            total += count
            while total - window[0][1] >= k:
                total -= window.pop(0)[1]
        if total < k:
            out.append(None)
            continue
        excess = total - k  # episodes of the oldest group that fall outside the window
        out.append((sum(m * c for m, c in window) - excess * window[0][0]) / k)
    return out


def first_crossing(groups, threshold: float, k: int = WINDOW_EPISODES):
    """(seconds, steps) of the first group after which the last k episodes' mean return is >= threshold, or None."""
    for (steps, seconds, _, _), mean in zip(groups, window_means(groups, k)):
        if mean is not None and mean >= threshold:
            return seconds, steps
    return None


def final_window_mean(groups, k: int = WINDOW_EPISODES):
    """The mean return of the run's last k finished episodes (of all of them where fewer finished); None: none did."""
    episodes = sum(c for *_, c in groups)
    if not episodes:
        return None
    return window_means(groups, min(k, episodes))[-1]


def peer_threshold(finals) -> float | None:
    """A comparison whose threshold is what the peer reaches: the median over the peer's seeds of each seed's final
    window mean (None where no seed finished one, or finished any episode)."""
    finals = [f for f in finals if f is not None]
    return statistics.median(finals) if finals else None


def seed_time(groups, threshold: float, train_s: float, k: int = WINDOW_EPISODES) -> dict:
    """One seed's time to the threshold by the window rule; a seed that never crosses counts as its whole training
    time (train_s), a lower bound of the time it would need."""
    return bounded_time(first_crossing(groups, threshold, k), train_s)


def interval_groups(groups, min_seconds: float) -> list:
    """groups merged into log intervals as a trainer that logs at most every min_seconds forms them: an interval
    closes at the first group at least min_seconds after the previous interval closed (the first group closes the
    first, the last group the last), and holds the count-weighted mean of its episodes. For a peer that logs each
    interval's mean but not how many episodes it holds, so that both sides are read by one rule. Groups without
    episodes add none."""
    out, pending, last_close = [], [], None
    for i, (steps, seconds, mean, count) in enumerate(groups):
        if count:
            pending.append((mean, count))
        if last_close is not None and seconds < last_close + min_seconds and i < len(groups) - 1:
            continue
        episodes = sum(c for _, c in pending)
        out.append((steps, seconds, sum(m * c for m, c in pending) / episodes if episodes else None, episodes))
        pending, last_close = [], seconds
    return out


def interval_crossing(intervals, threshold: float):
    """(seconds, steps) of the first log interval whose episodes' mean score is >= threshold, or None."""
    for steps, seconds, mean, _ in intervals:
        if mean is not None and mean >= threshold:
            return seconds, steps
    return None


def bounded_time(hit, train_s: float) -> dict:
    """One seed's time to a threshold from its crossing (seconds, steps) or None; a seed that never crosses counts as
    its whole training time (train_s), a lower bound of the time it would need."""
    if hit is None:
        return {"reached": False, "time_s": round(train_s, 4), "steps_to_threshold": None, "lower_bound": True}
    return {"reached": True, "time_s": round(hit[0], 4), "steps_to_threshold": hit[1], "lower_bound": False}


def median_bound(times, bounds) -> tuple[float | None, bool]:
    """(median of every seed's time, whether it is only a lower bound). A missed seed's time is a lower bound; the
    median is exact when it stays the same with the missed seeds' times raised to infinity."""
    times = list(times)
    if not times:
        return None, False
    low = statistics.median(times)
    high = statistics.median([math.inf if bound else t for t, bound in zip(times, bounds)])
    return low, high != low


def ratio(peer_times, peer_bounds, fastvec_times, fastvec_bounds) -> dict:
    """The peer's median time over fastvec's, every seed counted: ">=" (lower_bound) where only the peer's median is
    a bound, "<=" (upper_bound) where only fastvec's is, "?" where both are (then the figure bounds nothing)."""
    peer, peer_bound = median_bound(peer_times, peer_bounds)
    fastvec, fastvec_bound = median_bound(fastvec_times, fastvec_bounds)
    if not peer or not fastvec:
        return {"ratio": None, "lower_bound": False, "upper_bound": False, "ratio_text": "-",
                "peer_median_s": peer, "fastvec_median_s": fastvec}
    value = round(peer / fastvec, 3)
    lower, upper = peer_bound and not fastvec_bound, fastvec_bound and not peer_bound
    prefix = ">=" if lower else "<=" if upper else "?" if peer_bound else ""
    return {"ratio": value, "lower_bound": lower, "upper_bound": upper, "unbounded": peer_bound and fastvec_bound,
            "ratio_text": f"{prefix}{value:.2f}", "peer_median_s": round(peer, 4),
            "fastvec_median_s": round(fastvec, 4),
            "peer_median_is_bound": peer_bound, "fastvec_median_is_bound": fastvec_bound}


def fastvec_in_peer_shape(peer: dict, total_timesteps: int | None = None) -> tuple[dict, list[str]]:
    """fastvec-train settings {section: {key: value}} for a PureJaxRL config (upper-case keys), and what does not map.
    The network is PureJaxRL's (a separate critic, two hidden layers: a ReLU encoder and one MLP layer); each
    minibatch is a random set of single steps (bptt_horizon 1), as PureJaxRL shuffles its batch. total_timesteps:
    the peer's budget as it runs it (whole chunks of updates), else its TOTAL_TIMESTEPS."""
    samples = peer["NUM_ENVS"] * peer["NUM_STEPS"]
    settings = {
        "env": {"num_envs": peer["NUM_ENVS"]},
        "policy": {"kind": "mlp", "hidden": peer["HIDDEN"], "layers": 1, "encoder": "relu", "critic": "separate"},
        "train": {"horizon": peer["NUM_STEPS"], "bptt_horizon": 1, "minibatch_size": samples // peer["NUM_MINIBATCHES"],
                  "update_epochs": peer["UPDATE_EPOCHS"], "optimizer": "adam", "learning_rate": peer["LR"],
                  "anneal_lr": bool(peer["ANNEAL_LR"]), "adam_eps": 1e-5, "gamma": peer["GAMMA"],
                  "gae_lambda": peer["GAE_LAMBDA"], "clip_coef": peer["CLIP_EPS"], "vf_clip_coef": peer["CLIP_EPS"],
                  "ent_coef": peer["ENT_COEF"], "vf_coef": peer["VF_COEF"], "max_grad_norm": peer["MAX_GRAD_NORM"],
                  "norm_adv": True, "norm_obs": bool(peer["NORMALIZE_ENV"]), "norm_reward": bool(peer["NORMALIZE_ENV"]),
                  "total_timesteps": total_timesteps or peer["TOTAL_TIMESTEPS"],
                  # PureJaxRL's too, whatever an env's config says: optax's Adam, fp32, synchronous rollouts
                  "adam_beta1": 0.9, "adam_beta2": 0.999, "precision": "fp32", "async": False, "anneal_ent": False,
                  "reward_clamp": False, "vtrace": False}}
    unmapped = ["weight initialisation (PureJaxRL: orthogonal, gains sqrt 2 / 0.01 / 1; fastvec: its own)"]
    if peer["ACTIVATION"] != "relu":
        unmapped.insert(0, f"activation {peer['ACTIVATION']} (fastvec's MLP layers are ReLU)")
    if peer["NORMALIZE_ENV"]:
        unmapped.append("normalised observations and rewards: fastvec clips both to [-10, 10], PureJaxRL's "
                        "wrappers do not clip")
    return settings, unmapped
