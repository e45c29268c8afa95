"""benchmarks/peers/fairness.py, the rules both sides of train_peers.py are measured by: the window of the last K
finished episodes (against means worked out by hand), a seed that never crosses counted as its whole training time,
the bound a median and a ratio carry, and PureJaxRL's published settings mapped onto configs fastvec-train loads."""

import pytest


@pytest.fixture(scope="module")
def fairness(load_benchmark):
    load_benchmark("train_peers")  # puts benchmarks/peers on sys.path
    import fairness
    return fairness


# (steps, seconds, mean return, episodes): 2 episodes at 1, then 1 at 4, none, then 3 at 10
GROUPS = [(100, 0.1, 1.0, 2), (200, 0.2, 4.0, 1), (300, 0.3, None, 0), (400, 0.4, 10.0, 3)]


@pytest.mark.parametrize("k, means", [
    (3, [None, 2.0, 2.0, 10.0]),   # (1 + 1 + 4) / 3; then the last three are the 10s
    (4, [None, None, None, 8.5]),  # (4 + 10 + 10 + 10) / 4: both 1s fall out
    (5, [None, None, None, 7.0]),  # (1 + 4 + 10 + 10 + 10) / 5: one of the two 1s stays in
    (6, [None, None, None, 6.0]),     # all six: (1 + 1 + 4 + 30) / 6
    (7, [None, None, None, None]),
])
def test_window_means_by_hand(fairness, k, means):
    assert fairness.window_means(GROUPS, k) == pytest.approx(means)


def test_first_crossing_needs_k_episodes(fairness):
    assert fairness.first_crossing(GROUPS, 2.0, k=3) == (0.2, 200)
    assert fairness.first_crossing(GROUPS, 9.0, k=3) == (0.4, 400)
    assert fairness.first_crossing(GROUPS, -1e9, k=7) is None  # 6 episodes never make a window of 7
    assert fairness.final_window_mean(GROUPS, k=100) == pytest.approx(36 / 6)  # all 6 where fewer than k finished


def test_seed_that_never_crosses_counts_its_whole_training_time(fairness):
    assert fairness.seed_time(GROUPS, 50.0, train_s=7.5, k=3) == {
        "reached": False, "time_s": 7.5, "steps_to_threshold": None, "lower_bound": True}
    assert fairness.seed_time(GROUPS, 2.0, train_s=7.5, k=3) == {
        "reached": True, "time_s": 0.2, "steps_to_threshold": 200, "lower_bound": False}


@pytest.mark.parametrize("times, bounds, median, is_bound", [
    ([1.0, 2.0, 10.0], [False, False, True], 2.0, False),  # the miss is above the median whatever its true time
    ([2.0, 1.0, 3.0], [True, False, False], 2.0, True),    # the miss is the median: its true time may be more
    ([1.0, 5.0, 9.0, 4.0], [False, False, True, False], 4.5, False),
    ([1.0, 5.0, 9.0, 4.0], [False, True, True, False], 4.5, True),
])
def test_median_is_a_bound_only_where_a_miss_reaches_it(fairness, times, bounds, median, is_bound):
    assert fairness.median_bound(times, bounds) == (median, is_bound)


def test_ratio_carries_the_bound_of_each_side(fairness):
    exact = fairness.ratio([3.0, 4.0, 9.0], [False, False, True], [1.0, 2.0, 1.0], [False] * 3)
    assert (exact["ratio"], exact["ratio_text"], exact["lower_bound"], exact["upper_bound"]) == (4.0, "4.00", False,
                                                                                                  False)
    peer_missed = fairness.ratio([3.0, 9.0, 10.0], [False, True, True], [1.0, 2.0, 1.0], [False] * 3)
    assert (peer_missed["ratio"], peer_missed["ratio_text"], peer_missed["lower_bound"]) == (9.0, ">=9.00", True)
    fastvec_missed = fairness.ratio([4.0] * 3, [False] * 3, [1.0, 2.0, 2.0], [False, True, True])
    assert (fastvec_missed["ratio_text"], fastvec_missed["upper_bound"]) == ("<=2.00", True)
    both = fairness.ratio([4.0] * 3, [True] * 3, [2.0] * 3, [True] * 3)
    assert both["ratio_text"] == "?2.00" and both["unbounded"] and not (both["lower_bound"] or both["upper_bound"])


@pytest.mark.parametrize("env, family", [("pendulum", "continuous"), ("acrobot", "classic"),
                                         ("breakout-minatar", "minatar")])
def test_published_settings_map_onto_a_config_fastvec_loads(fairness, env, family):
    import purejaxrl_ppo
    from fastvec.trainer.config import load_config, rollout_sizes
    from fastvec.trainer.settings import Config

    peer = purejaxrl_ppo.published(fairness.peer_family(env))
    assert fairness.peer_family(env) == family
    settings, unmapped = fairness.fastvec_in_peer_shape(peer)
    config = load_config(env, {**settings, "env": {**settings["env"], **fairness.fastvec_env_overrides(env)}})
    train = config["train"]
    assert config["env"]["num_envs"] * train["horizon"] == peer["NUM_ENVS"] * peer["NUM_STEPS"]
    assert train["minibatch_size"] * peer["NUM_MINIBATCHES"] == peer["NUM_ENVS"] * peer["NUM_STEPS"]
    assert (train["learning_rate"], train["update_epochs"], train["anneal_lr"], train["ent_coef"],
            config["policy"]["hidden"]) == (peer["LR"], peer["UPDATE_EPOCHS"], peer["ANNEAL_LR"], peer["ENT_COEF"],
                                            peer["HIDDEN"])
    assert (train["norm_obs"], train["norm_reward"]) == (peer["NORMALIZE_ENV"],) * 2
    assert any("activation" in u for u in unmapped) == (peer["ACTIVATION"] != "relu")
    assert rollout_sizes(Config.of(config).train, config["env"]["num_envs"], 1)[-1] == peer["NUM_ENVS"] * peer["NUM_STEPS"]


def test_peer_threshold_is_the_median_of_the_seeds_that_finished_an_episode(fairness):
    assert fairness.peer_threshold([3.0, None, 1.0, 2.0]) == 2.0
    assert fairness.peer_threshold(iter([None, None])) is None
