"""What a run's config resolves to before a trainer is built (fastvec/trainer/resolve.py): the device and where the
env steps, the GPU's refusals under train.device=cuda and its quiet fall-back to the CPU under auto, the frame rate
of a recording, what a GPU build compiles, the MuJoCo task a Gymnasium id names, and the threads a CPU batch steps
on."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from fastvec.native import ENVS, resolve_defines, source_path
from fastvec.trainer import resolve
from fastvec.trainer.config import ConfigError, load_config
from fastvec.trainer.settings import Config

CORRIDOR = Path(__file__).resolve().parents[2] / "examples" / "my_env.h"


def config_of(name: str = "cartpole", **sections) -> Config:
    overrides = {"env": {"num_envs": 2}, "policy": {"hidden": 8, "layers": 1}}
    for section, values in sections.items():
        overrides.setdefault(section, {}).update(values)
    return Config.of(load_config(name, overrides))


@pytest.mark.parametrize("env,device,env_device,steps_on", [
    ("cartpole", "cpu", "cuda", "cpu"),  # the CPU trainer steps CPU envs
    ("cartpole", "cuda", "cuda", "cuda"),
    ("cartpole", "cuda", "cpu", "cpu"),
    ("gym:CartPole-v1", "cuda", "cuda", "cpu"),  # a Gymnasium env has no GPU build: it steps on the host
])
def test_the_run_records_its_device_and_where_its_env_steps(env, device, env_device, steps_on):
    config = resolve.on_device(config_of(env, train={"env_device": env_device}), device)
    assert (config.train.device, config.train.env_device) == (device, steps_on)


@pytest.mark.parametrize("requested", ["auto", "cuda"])
def test_what_the_gpu_cannot_train_is_refused_under_cuda_and_trained_on_the_cpu_under_auto(requested, monkeypatch,
                                                                                         capsys):
    closed = []
    real_batch = resolve.EnvSource.batch

    def batch(self, num_envs=None, render=False):
        made = real_batch(self, num_envs, render)
        real_close = made.close
        made.close = lambda: closed.append(True) or real_close()
        return made

    monkeypatch.setattr(resolve.EnvSource, "batch", batch)
    monkeypatch.setattr(resolve, "cuda_unsupported", lambda spec, config, masked=False: "no such kernel")
    config = config_of(train={"device": requested, "env_device": "cuda"})
    if requested == "cuda":
        with pytest.raises(ConfigError) as err:
            resolve.Resolved(config, "cuda")
        assert str(err.value) == "train.device=cuda: no such kernel; train cartpole with --train.device=cpu"
        assert closed == [True]  # the batch made for the check is closed
        return
    resolved = resolve.Resolved(config, "cuda")
    try:
        assert capsys.readouterr().err == ("fastvec-train: the CUDA trainer cannot train this run (no such kernel), so "
                                           "it trains on the CPU\n")
        assert (resolved.config.train.device, resolved.config.train.env_device) == ("cpu", "cpu")
        assert resolved.spec.obs_size == 4 and resolved.batch.num_envs == 2 and closed == []
    finally:
        resolved.batch.close()


def test_a_run_the_gpu_trains_stays_on_it(monkeypatch, capsys):
    monkeypatch.setattr(resolve, "cuda_unsupported", lambda spec, config, masked=False: None)
    resolved = resolve.Resolved(config_of(train={"device": "auto", "env_device": "cuda"}), "cuda")
    try:
        assert (resolved.config.train.device, resolved.config.train.env_device) == ("cuda", "cuda")
        assert capsys.readouterr().err == ""
    finally:
        resolved.batch.close()


def test_a_recording_plays_at_the_envs_own_frame_rate_else_30():
    drawn = SimpleNamespace(env=SimpleNamespace(render_fps=17))
    for name in ("cartpole", "pong", "breakout-minatar"):
        assert resolve.EnvSource(config_of(name)).frame_rate(drawn) == ENVS[name].render_fps, name
    assert resolve.EnvSource(config_of("gym:CartPole-v1")).frame_rate(drawn) == 17  # the Gymnasium env's own
    assert resolve.EnvSource(config_of(str(CORRIDOR))).frame_rate(drawn) == 30  # a user's env declares none
    assert resolve.EnvSource(config_of("simple_spread")).frame_rate(drawn) == 30


def test_a_gpu_build_compiles_the_envs_own_source_with_its_defines_and_step_limit():
    env = resolve.EnvSource(config_of("cartpole", env={"sutton_barto_reward": 1}))
    assert env.build(None) == (source_path("cartpole"), resolve_defines("cartpole", {"sutton_barto_reward": 1}), 500)
    mine = resolve.EnvSource(config_of(str(CORRIDOR), env={"LENGTH": 7}))
    path, defines, limit = mine.build(None)
    assert (path, defines["LENGTH"], limit) == (CORRIDOR, 7, mine.step_limit)


def test_a_gymnasium_id_gets_the_configs_step_limit_as_a_make_argument_but_not_as_an_env_argument():
    env = resolve.EnvSource(config_of("gym:CartPole-v1", env={"max_episode_steps": 77}))
    assert env.kind == "gym" and env.mujoco is None and env.source is None
    assert env.params["max_episode_steps"] == 77 and "max_episode_steps" not in env.arguments()
    batch = env.batch(2)
    try:
        assert batch.num_envs == 2 and batch.env.obs_size == 4
        stub, defines, limit = env.build(batch)  # the host steps it: a stub of its sizes, no step limit of its own
        assert stub.is_file() and "OBS_SIZE 4" in stub.read_text() and defines == {} and limit == 0
    finally:
        batch.close()


def test_the_mujoco_task_of_a_gymnasium_id_whatever_its_case():
    assert resolve.mujoco_task("fastvec/Hopper-v5") == "Hopper"
    assert resolve.mujoco_task("FASTVEC/hopper-V5") == "Hopper"
    assert resolve.mujoco_task("Hopper-v5") is None and resolve.mujoco_task("") is None
    assert resolve.mujoco_task(None) is None


def test_a_policy_without_spaces_needs_a_discrete_action_count_of_at_least_one():
    config = config_of()
    assert resolve.make_policy_spec(config, 3, 1).num_actions == 1
    assert resolve.make_policy_spec(config, 3, 5).action_kind == "discrete"
    with pytest.raises(ConfigError) as err:
        resolve.make_policy_spec(config, 3, 0)
    assert str(err.value) == ("cartpole has no Discrete action space (a Box or MultiDiscrete env) and this trainer was "
                              "not given its spaces: train it with --train.device=cpu")


def test_byte_observations_are_scaled_by_their_declared_bound_and_floats_not_at_all():
    import numpy as np
    config = config_of()

    def spaces(dtype, high):
        return SimpleNamespace(action_kind="discrete", obs_dtype=dtype, obs_high=np.array([0, high]), nvec=(),
                               action_dims=0)

    assert resolve.make_policy_spec(config, 2, 3, spaces(np.uint8, 255)).obs_scale == 1 / 255
    assert resolve.make_policy_spec(config, 2, 3, spaces(np.uint8, 4)).obs_scale == 0.25
    assert resolve.make_policy_spec(config, 2, 3, spaces(np.uint8, 1)).obs_scale == 1.0
    assert resolve.make_policy_spec(config, 2, 3, spaces(np.uint8, 0)).obs_scale == 1.0  # no bound: left as they are
    assert resolve.make_policy_spec(config, 2, 3, spaces(np.float32, 255.0)).obs_scale == 1.0


def test_a_world_state_critic_reads_the_world_state_size_it_is_given_and_none_without_one():
    config = load_config("simple_spread", {"policy": {"kind": "mlp", "critic": "separate",
                                                      "critic_input": "world_state"}})
    assert resolve.make_policy_spec(config, 18, 5, agents=3, world_size=54).world_size == 54
    assert resolve.make_policy_spec(config, 18, 5, agents=3).world_size == 0  # no world state given: none read
    plain = load_config("simple_spread", {"policy": {"kind": "mlp", "critic": "separate"}})
    assert resolve.make_policy_spec(plain, 18, 5, agents=3, world_size=54).world_size == 0  # the actor's inputs


# One agent choosing among 3 actions of which the env's mask allows the first two (fastvec.h's ACTION_MASK hook).
MASKED_ENV = """#include "fastvec.h"
#define OBS_SIZE 1
#define NUM_ACTIONS 3
#define NUM_AGENTS 1
#define NUM_STATS 1
#define STAT_NAMES "steps"
#define RENDER_W 1
#define RENDER_H 1
#define ACTION_MASK 1
typedef struct { int t; } State;
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) { (void)rng; s->t = 0; obs[0] = 0.0f; }
FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    rewards[0] = actions[0] == 2 ? -1.0f : 0.0f;
    obs[0] = (float)++s->t;
    stats[0] = (float)s->t;
    return s->t >= 8;
}
FV_FN void env_action_mask(const State* s, unsigned char* mask) { (void)s; mask[0] = mask[1] = 1; mask[2] = 0; }
FV_FN void env_render(const State* s, unsigned char* rgb) { rgb[0] = rgb[1] = rgb[2] = (unsigned char)s->t; }
"""


@pytest.mark.parametrize("requested", ["auto", "cuda"])
def test_an_env_files_action_masks_keep_the_env_on_the_host(tmp_path, capsys, requested):
    """The CUDA trainer applies the masks of an env that is not a team game only to host envs: with the env on the
    GPU a run is refused (train.device=cuda) or trained on the CPU (auto), never sampled without its masks."""
    path = tmp_path / "masked.h"
    path.write_text(MASKED_ENV)
    config = config_of(str(path), train={"device": requested, "env_device": "cuda"})
    why = ("the CUDA trainer applies the action masks of an env that is not a team game with the env on the host; "
           "use --train.env_device=cpu")
    if requested == "cuda":
        with pytest.raises(ConfigError) as err:
            resolve.Resolved(config, "cuda")
        assert str(err.value).startswith(f"train.device=cuda: {why}; train ")
        assert str(err.value).endswith("masked.h with --train.device=cpu")
        return
    resolved = resolve.Resolved(config, "cuda")
    try:
        assert capsys.readouterr().err == f"fastvec-train: the CUDA trainer cannot train this run ({why}), so it " \
                                          "trains on the CPU\n"
        assert resolved.config.train.device == "cpu"
    finally:
        resolved.batch.close()
    # with the env on the host the CUDA trainer takes it (AgentInputs hands it the masks)
    hosted = resolve.Resolved(config_of(str(path), train={"device": "cuda", "env_device": "cpu"}), "cuda")
    try:
        assert hosted.config.train.device == "cuda"
    finally:
        hosted.batch.close()


def test_env_threads_zero_steps_on_every_cpu_after_a_batch_that_asked_for_one():
    """train.env_threads=0 means every CPU (FASTVEC_NUM_THREADS, else the affinity mask) for each run's batch, also
    after an earlier run in the process (a sweep's trial) set the shared pool to 1 thread."""
    from fastvec.native.cpu import default_threads

    one = resolve.EnvSource(config_of("cartpole", train={"env_threads": 1})).batch()
    assert one.env.lib.fv_set_num_threads(0) == 1  # 0 reads the pool's count and sets nothing
    every = resolve.EnvSource(config_of("cartpole", train={"env_threads": 0})).batch()
    assert every.env.lib.fv_set_num_threads(0) == default_threads()
