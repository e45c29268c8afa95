"""benchmarks/peers/sweep_peer.py, the sweep procedure both sides of train_peers.py's tuned rows get: the shared space
maps onto both alike (the same samples per rollout and per minibatch, a config fastvec-train loads), fastvec-sweep's
objective scores a trial of either side, both samplers start at the same point, and the peer's per-update returns
count every finished episode (gymnax's Pendulum: every episode is 200 steps)."""

import pytest

pytest.importorskip("optuna")

# Pendulum, small: 16 envs x 25 steps, so each env ends an episode every 8th update; 40 updates
TINY = {"num_envs": 16, "num_steps": 25, "minibatches": 2, "update_epochs": 1, "learning_rate": 1e-3, "hidden": 16,
        "gamma": 0.9, "gae_lambda": 0.9, "anneal_lr": False, "total_timesteps": 16_000}
CHUNK_STEPS = 4_000  # 10 updates a chunk


@pytest.fixture(scope="module")
def sweep_peer(load_benchmark):
    load_benchmark("train_peers")  # puts benchmarks/peers on sys.path
    import sweep_peer
    return sweep_peer


@pytest.fixture(scope="module")
def tiny_peer(sweep_peer):
    pytest.importorskip("jax")
    import purejaxrl_ppo
    purejaxrl_ppo.flax_struct_shim()  # gymnax needs flax.struct alone, which the shim provides where flax is missing
    pytest.importorskip("gymnax")
    return sweep_peer.compile_peer("pendulum", TINY, CHUNK_STEPS)


def shortfall_value(trial_seconds, target, best):
    """fastvec-sweep's score of a trial that missed the target (docs/sweeps.md)."""
    return trial_seconds * (1 + min(max((target - best) / abs(target), 0.0), 1.0))


@pytest.mark.parametrize("params", [TINY, {**TINY, "num_envs": 2048, "num_steps": 8, "minibatches": 32},
                                    {**TINY, "num_envs": 16, "num_steps": 8, "minibatches": 32}])
def test_space_maps_onto_both_sides_alike(sweep_peer, params):
    from fastvec.trainer.config import load_config, rollout_sizes
    from fastvec.trainer.settings import Config

    peer = sweep_peer.peer_overrides(params)
    config = load_config("pendulum", sweep_peer.fastvec_settings(params))
    train = config["train"]
    samples = peer["NUM_ENVS"] * peer["NUM_STEPS"]
    assert rollout_sizes(Config.of(config).train, config["env"]["num_envs"], 1)[-1] == samples
    assert train["minibatch_size"] * peer["NUM_MINIBATCHES"] == samples
    assert train["minibatch_size"] >= sweep_peer.MIN_MINIBATCH and samples % peer["NUM_MINIBATCHES"] == 0
    assert (train["learning_rate"], train["gamma"], train["total_timesteps"], config["policy"]["hidden"]) == (
        peer["LR"], peer["GAMMA"], peer["TOTAL_TIMESTEPS"], peer["HIDDEN"])


def test_peer_counts_every_finished_episode(tiny_peer):
    run = tiny_peer.train(1, eval_episodes=False)
    assert [g[0] for g in run["groups"]] == [3_200 * i for i in range(1, 6)]  # every 8th update of 400 steps
    assert [g[3] for g in run["groups"]] == [16] * 5
    seconds = [g[1] for g in run["groups"]]
    assert seconds == sorted(seconds) and 0 < seconds[-1] <= run["train_s"]
    assert run["steps"] == run["budget_steps"] == 16_000 and not run["capped"]


@pytest.mark.parametrize("side", ["peer", "fastvec"])
def test_one_trial_sweep_is_scored_as_fastvec_sweep_scores_it(sweep_peer, tiny_peer, monkeypatch, side):
    fixed = {k: v for k, v in TINY.items() if k != "learning_rate"}
    if side == "peer":  # the module's compiled program stands in for the trial's (the same shapes)
        monkeypatch.setattr(sweep_peer, "compile_peer", lambda env, params, chunk: tiny_peer)
    result = sweep_peer.run_sweep("pendulum", side, trials=1, trial_seconds=5.0, batch=1, device="cpu", fixed=fixed,
                                  chunk_steps=CHUNK_STEPS, log=lambda line: None)
    (record,) = result["records"]
    assert record["state"] == "COMPLETE" and record["hit_seconds"] is None  # 16K steps cannot swing Pendulum up
    assert record["value"] == pytest.approx(shortfall_value(5.0, -200.0, record["best"]))
    assert record["steps"] == 16_000  # the whole budget: 40 updates of 400 steps
    assert result["best"]["params"] == record["params"] and record["startup"] >= 0
    if side == "peer":
        assert result["best"]["overrides"] == sweep_peer.peer_overrides(record["params"])
        assert record["compile_s"] > 0
    else:
        assert result["best"]["settings"]["env"]["num_envs"] == 16


def test_both_sides_samplers_start_at_the_same_point(sweep_peer, tiny_peer, monkeypatch):
    monkeypatch.setattr(sweep_peer, "compile_peer", lambda env, params, chunk: tiny_peer)
    fixed = {k: v for k, v in TINY.items() if k not in ("learning_rate", "gae_lambda")}
    first = [sweep_peer.run_sweep("pendulum", side, trials=1, trial_seconds=0.2, batch=1, device="cpu", fixed=fixed,
                                  chunk_steps=CHUNK_STEPS, log=lambda line: None)["records"][0]["params"]
             for side in ("peer", "fastvec")]
    assert first[0] == first[1] and set(first[0]) == set(TINY)
