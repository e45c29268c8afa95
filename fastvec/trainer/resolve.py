"""What a run's config resolves to, once, before any trainer is built (`Resolved`): the device and where the env
steps, the host env batch checked against the config, its spaces and the policy spec; the CUDA trainer's refusals
(`cuda_unsupported`) and the fallback to the CPU trainer that `train.device=auto` takes on one."""

from __future__ import annotations

import sys

import numpy as np

from fastvec.trainer import reference as ref
from fastvec.trainer.agent_inputs import world_state_size
from fastvec.trainer.config import ConfigError, check_with_env
from fastvec.trainer.cuda.plan import fused_kernels_run  # pure Python: what the GPU's fused kernels implement
from fastvec.trainer.env_batch import make_batch
from fastvec.trainer.settings import Config


def on_device(config: Config, device: str) -> Config:
    """config with the device the run uses (train.device, never "auto") and where its env steps (train.env_device):
    the CPU trainer always steps CPU envs; the CUDA trainer steps Gymnasium envs on the host (they have no GPU
    build), a built-in, team or user's env file (self-play's games too) where env_device says."""
    host = device == "cpu" or config.env_kind == "gym"
    return config.replace("train", device=device, **({"env_device": "cpu"} if host else {}))


def make_policy_spec(config: Config | dict, obs_size: int, num_actions: int, spaces=None, agents: int = 1,
                     world_size: int = 0) -> ref.PolicySpec:
    """The policy for an env of obs_size observations and Discrete(num_actions) actions, or for the env whose
    spaces (native.spaces.EnvSpaces: its action head, byte observations scaled to [0, 1]) are given, of `agents`
    agents a game (their one-hot id an input with policy.agent_id) and a world state of world_size values (the
    critic's input with policy.critic_input=world_state). Without spaces, an env with no Discrete action space
    (num_actions 0) is a ConfigError."""
    config = Config.of(config)
    policy, kind = config.policy, spaces.action_kind if spaces is not None else "discrete"
    if kind == "discrete" and num_actions < 1:
        raise ConfigError(f"{config.env.name} has no Discrete action space (a Box or MultiDiscrete env) and "
                          "this trainer was not given its spaces: train it with --train.device=cpu")
    scale = 1.0
    if spaces is not None and spaces.obs_dtype == np.uint8 and float(spaces.obs_high.max()) > 0:
        scale = 1.0 / float(spaces.obs_high.max())  # bytes to [0, 1] by their declared bound (255 unless set)
    nvec = tuple(int(n) for n in spaces.nvec) if kind == "multi_discrete" else ()
    return ref.PolicySpec(obs_size=obs_size, num_actions=num_actions if kind == "discrete" else 0,
                          kind=policy.kind, hidden=policy.hidden, layers=policy.layers,
                          highway=policy.highway, action_kind=kind, action_nvec=nvec,
                          action_dims=spaces.action_dims if kind == "box" else 0, obs_scale=scale,
                          norm_obs=config.train.norm_obs, critic=policy.critic, encoder=policy.encoder,
                          activation=policy.activation,
                          agent_ids=agents if policy.agent_id else 0,
                          world_size=world_size if policy.critic_input == "world_state" else 0)


def cuda_unsupported(spec: ref.PolicySpec, config: Config | dict) -> str | None:
    """What in spec or config only the CPU trainer trains (a message), or None: the CUDA trainer's kernels
    implement every head (Discrete, MultiDiscrete, Box) with the env on the GPU or on the host, byte and float
    observations, train.norm_obs and train.norm_reward, a shared or a separate critic; self-play on the GPU
    without the fused policy's options; the running normalisation on one GPU; team games (MPE, SMAX: action masks,
    agent ids, a world-state critic) on the GPU or on the host. Agent ids and world states of another multi-agent
    env are the host envs'; self-play of a team game is the CPU trainer's."""
    config = Config.of(config)
    train = config.train
    if config.env_kind == "team" and config.selfplay.enabled:
        return ("the CUDA trainer's self-play plays no team games (their action masks are not in its opponents' "
                "policy)")
    if (spec.agent_ids or spec.world_size) and config.env_kind != "team" and train.env_device == "cuda":
        return ("the CUDA trainer appends agent ids and world states to a non-team env's inputs with the env on the "
                "host; use --train.env_device=cpu")
    if not fused_kernels_run(spec) and config.selfplay.enabled and train.env_device == "cuda":
        return ("the CUDA trainer's self-play on the GPU plays Discrete heads of a shared actor-critic with a linear "
                "encoder on raw observations (no train.norm_obs, no byte scaling, policy.critic=shared, "
                "policy.encoder=linear); use --train.env_device=cpu")
    if (train.norm_obs or train.norm_reward) and train.gpus != 1:
        return "the CUDA trainer keeps train.norm_obs and train.norm_reward statistics on one GPU; use --train.gpus=1"
    return None


class Resolved:
    """A config resolved once for `device` ("cpu" or "cuda", what its train.device stands for here; where that was
    "auto", a run the CUDA trainer refuses gives way to the CPU trainer): `config` (train.device and
    train.env_device chosen), the host env `batch` (checked against the config: config.check_with_env), the policy
    `spec` for its spaces. The trainers are built from it (run.make_trainer); `close()` closes the batch."""

    def __init__(self, config: Config, device: str):
        requested, config = config.train.device, on_device(config, device)
        batch = make_batch(config)
        try:
            num_agents = batch.obs.shape[1]
            check_with_env(config, num_agents, batch.env.stat_names)
            world = world_state_size(batch) if config.policy.critic_input == "world_state" else 0
            spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces, num_agents,
                                    world)
            if config.train.device == "cuda" and (why := cuda_unsupported(spec, config)):
                if requested != "auto":
                    raise ConfigError(f"train.device=cuda: {why}; train {config.env.name} with --train.device=cpu")
                print(f"fastvec-train: the CUDA trainer cannot train this run ({why}), so it trains on the CPU",
                      file=sys.stderr)
                config = on_device(config, "cpu")  # the same host batch: the device does not change how it is made
        except BaseException:
            batch.close()
            raise
        self.config, self.batch, self.spec = config, batch, spec

    def close(self) -> None:
        self.batch.close()
