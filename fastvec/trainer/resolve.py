"""What a run's config resolves to, once, before a trainer is built: its env (`EnvSource`: kind, source, step limit;
its host batches and GPU build) and the run (`Resolved`: the device, the host batch checked against the config, the
policy spec), with the CUDA trainer's refusals (`cuda_unsupported`) and train.device=auto's fallback to the CPU one."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fastvec.native import ENVS, resolve_defines, source_path
from fastvec.native.batches import load_batch, team_source
from fastvec.native.cpu import default_threads
from fastvec.trainer import reference as ref
from fastvec.trainer.agent_inputs import AgentInputs, world_state_size
from fastvec.trainer.config import ConfigError, check_with_env, source_defines
from fastvec.trainer.cuda.plan import fused_kernels_run  # pure Python: what the GPU's fused kernels implement
from fastvec.trainer.settings import Config


class EnvSource:
    """Config's env resolved once: its `kind` (Config.env_kind), what a batch of it loads (`source`, a built-in env's
    name or an env file, and `params`, its [env] parameters or -D defines; a Gymnasium id's `gym_id` and make
    arguments, or the fastvec MuJoCo task it registers, `mujoco`), its `step_limit` (Config.step_limit) and the
    threads a CPU batch steps it with (train.env_threads). A team env's defines are its scenario's
    (native.batches.team_source)."""

    def __init__(self, config: Config):
        env = config.env
        self.kind, self.name, self.num_envs = config.env_kind, env.name, env.num_envs
        self.step_limit = config.step_limit
        # train.env_threads=0 is every CPU, asked for by name: the pool is shared by the process, so a batch of an
        # earlier run (a sweep's trial) with 1 would otherwise leave it at 1
        self.threads = config.train.env_threads or default_threads()
        self.gym_id, self.vectorization = env.gym_id, env.gym_vectorization
        self.params, self.source, self.mujoco = dict(env.params), None, None
        self.on_gpu = config.train.device == "cuda" and config.train.env_device == "cuda"
        if self.kind == "team":
            self.source, self.params, _ = team_source(env.name, env.params)
        elif self.kind == "builtin":
            self.source = env.name  # load_batch checks its parameters against the registry
        elif self.kind == "source":
            self.source, self.params = Path(env.source), source_defines(env.source, env.params)
        else:
            self.mujoco = mujoco_task(env.gym_id)
            if self.mujoco is None and self.step_limit > 0:  # else Gymnasium's own registered limit
                self.params["max_episode_steps"] = self.step_limit

    def batch(self, num_envs: int | None = None, render: bool = False):
        """A host batch of num_envs envs (env.num_envs if None) in SAME_STEP autoreset: a built-in env, a team env or
        a user's env file as a CpuBatch (native.batches.load_batch), or a Gymnasium id as a GymBatch
        (native/gym_batch.py) over Gymnasium's own vector env, except fastvec's MuJoCo tasks (fastvec/Hopper-v5, ...),
        made as a MujocoHostBatch (native/mujoco/host_batch.py) over the C batch itself. render: the Gymnasium envs
        are made to draw (render_mode="rgb_array"; render_batch draws the others). A Gymnasium env the trainer
        cannot train, or whose make refuses the [env] arguments, is a ConfigError."""
        num_envs = num_envs or self.num_envs
        if self.source is not None:
            return load_batch(self.source, num_envs, self.params, max_episode_steps=self.step_limit,
                              threads=self.threads)
        if self.mujoco is not None:
            return self._mujoco_batch(num_envs)
        import gymnasium

        from fastvec.native.gym_batch import GymBatch, SpaceError
        try:
            return GymBatch(self.gym_id, num_envs, self.params, self.vectorization, render=render)
        except SpaceError as err:
            raise ConfigError(str(err)) from None
        except TypeError as err:  # gymnasium.make's error for an argument the env does not take
            raise ConfigError(f"gym:{self.gym_id} refused its [env] arguments {self.arguments()}: {err}") from None
        except (gymnasium.error.Error, ImportError) as err:  # e.g. DependencyNotInstalled (Box2D, ALE)
            raise ConfigError(f"gym:{self.gym_id} could not be made: {err}") from None

    def trainer_batch(self):
        """The batch a trainer steps: a MuJoCo task's on MuJoCo Warp (native/mujoco/device_batch.py) where the CUDA
        trainer steps the env on the GPU (train.env_device = "cuda"), else a host batch (batch())."""
        if self.mujoco is None or not self.on_gpu:
            return self.batch()
        from fastvec.native.mujoco.device_batch import MujocoDeviceBatch
        from fastvec.native.mujoco.host_batch import gym_id
        try:
            return MujocoDeviceBatch(self.mujoco, self.num_envs, max_episode_steps=self.step_limit or None,
                                     **self.params)
        except ImportError as err:  # no mujoco, mujoco-warp or warp-lang
            raise ConfigError(f"{gym_id(self.mujoco)} on the GPU: {err}; or step it on the CPU with "
                              "--train.env_device=cpu") from None
        except (TypeError, ValueError, FileNotFoundError) as err:  # a bad keyword, a model MJWarp cannot step
            raise ConfigError(f"{gym_id(self.mujoco)} on the GPU (MuJoCo Warp) with [env] arguments {self.params}: "
                              f"{err}; or step it on the CPU with --train.env_device=cpu") from None

    def arguments(self) -> dict:
        """A Gymnasium env's [env] arguments, as the config gives them (its make arguments less the step limit)."""
        return {name: value for name, value in self.params.items() if name != "max_episode_steps"}

    def _mujoco_batch(self, num_envs: int):
        from fastvec.native.mujoco.host_batch import MujocoHostBatch, gym_id
        try:
            return MujocoHostBatch(self.mujoco, num_envs, max_episode_steps=self.step_limit or None,
                                   threads=self.threads, **self.params)
        except ImportError as err:  # no mujoco package
            raise ConfigError(f"{gym_id(self.mujoco)}: {err}") from None
        except (TypeError, ValueError, FileNotFoundError) as err:  # a keyword the task does not take, a bad value
            raise ConfigError(f"{gym_id(self.mujoco)} refused its [env] arguments {self.params}: {err}") from None

    def render_batch(self):
        """One env that draws its frames (batch.render(0); --eval.render); a MuJoCo task's with Gymnasium's own
        renderer (wrappers/mujoco.py's Frames)."""
        batch = self.batch(1, render=True)
        if self.mujoco is not None:
            from fastvec.wrappers.mujoco import Frames
            batch.frames = Frames(self.mujoco, batch.mj, "rgb_array", {})
        return batch

    def frame_rate(self, batch) -> int:
        """The frames per second a recording of `batch` plays at: a built-in env's registered rate, a Gymnasium env's
        or MuJoCo task's own (batch.env.render_fps), else 30."""
        if self.kind == "builtin":
            return ENVS[self.name].render_fps
        return batch.env.render_fps if self.kind == "gym" else 30

    def build(self, batch) -> tuple[Path, dict, int]:
        """What a GPU build of the env compiles (the CUDA trainer's module): (the env source, its -D defines, its
        step limit, 0 for none). A built-in env's registered file, a user's env file, a team env's scenario, or for a
        Gymnasium env, which steps on the host, a stub of its sizes (batch.env's; gym_batch.host_stub_source) that
        the host-env kernels are compiled around."""
        if self.kind == "builtin":
            return source_path(self.name), resolve_defines(self.name, self.params), self.step_limit
        if self.source is not None:
            return self.source, self.params, self.step_limit
        from fastvec.native.cpu import cache_dir
        from fastvec.native.gym_batch import host_stub_source
        return host_stub_source(batch.env, cache_dir()), {}, 0


def make_batch(config: Config | dict, num_envs: int | None = None):
    """A host batch of config's env (EnvSource.batch): num_envs envs, env.num_envs if None."""
    return EnvSource(Config.of(config)).batch(num_envs)


def render_batch(config: Config | dict):
    """One env of config's that draws its frames (EnvSource.render_batch)."""
    return EnvSource(Config.of(config)).render_batch()


def env_build(config: Config, batch) -> tuple[Path, dict, int]:
    """What a GPU build of config's env compiles (EnvSource.build)."""
    return EnvSource(config).build(batch)


def mujoco_task(gym_id: str) -> str | None:
    """The fastvec MuJoCo task that Gymnasium id `gym_id` registers (fastvec/Hopper-v5 -> Hopper), or None."""
    from fastvec.native.mujoco.host_batch import GYM_IDS
    return GYM_IDS.get(gym_id.lower()) if gym_id else None


def on_device(config: Config, device: str) -> Config:
    """config with the device the run uses (train.device, never "auto") and where its env steps (train.env_device):
    the CPU trainer always steps CPU envs; the CUDA trainer steps Gymnasium envs on the host (they have no GPU
    build), a built-in, team or user's env file (self-play's games too) and fastvec's MuJoCo tasks (on MuJoCo Warp)
    where env_device says."""
    host = device == "cpu" or (config.env_kind == "gym" and mujoco_task(config.env.gym_id) is None)
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


def cuda_unsupported(spec: ref.PolicySpec, config: Config | dict, masked: bool = False) -> str | None:
    """What in spec or config only the CPU trainer trains (a message), or None: the CUDA trainer's kernels
    implement every head (Discrete, MultiDiscrete, Box) with the env on the GPU or on the host, byte and float
    observations, train.norm_obs and train.norm_reward, a shared or a separate critic; self-play on the GPU
    without the fused policy's options; the running normalisation on one GPU; team games (MPE, SMAX: action masks,
    agent ids, a world-state critic) on the GPU or on the host. Agent ids, world states and action masks (masked:
    the env has some) of another env are the host envs'; self-play of a team game is the CPU trainer's."""
    config = Config.of(config)
    train = config.train
    if config.env_kind == "team" and config.selfplay.enabled:
        return ("the CUDA trainer's self-play plays no team games (their action masks are not in its opponents' "
                "policy)")
    if (spec.agent_ids or spec.world_size) and config.env_kind != "team" and train.env_device == "cuda":
        return ("the CUDA trainer appends agent ids and world states to a non-team env's inputs with the env on the "
                "host; use --train.env_device=cpu")
    if masked and config.env_kind != "team" and train.env_device == "cuda":
        return ("the CUDA trainer applies the action masks of an env that is not a team game with the env on the "
                "host; use --train.env_device=cpu")
    if not fused_kernels_run(spec) and config.selfplay.enabled and train.env_device == "cuda":
        return ("the CUDA trainer's self-play on the GPU plays Discrete heads of a shared actor-critic with a linear "
                "encoder on raw observations (no train.norm_obs, no byte scaling, policy.critic=shared, "
                "policy.encoder=linear); use --train.env_device=cpu")
    if config.env_kind == "gym" and train.env_device == "cuda" and train.gpus != 1:
        return ("the CUDA trainer steps a MuJoCo task on MuJoCo Warp on one GPU; use --train.gpus=1, or "
                "--train.env_device=cpu")
    if train.prio_alpha > 0 and train.gpus != 1:
        return ("the CUDA trainer draws prioritised training sequences (train.prio_alpha > 0) on one GPU; use "
                "--train.gpus=1 or --train.prio_alpha=0")
    if (train.norm_obs or train.norm_reward) and train.gpus != 1:
        return "the CUDA trainer keeps train.norm_obs and train.norm_reward statistics on one GPU; use --train.gpus=1"
    return None


class Resolved:
    """A config resolved once for `device` ("cpu" or "cuda", what its train.device stands for here; where that was
    "auto", a run the CUDA trainer refuses gives way to the CPU trainer): `config` (train.device and
    train.env_device chosen), its `env` (EnvSource) and the `batch` a trainer steps (EnvSource.trainer_batch: a host
    batch, or a MuJoCo task's on the GPU; checked against the config: config.check_with_env), the policy `spec` for
    its spaces. The trainers are built from it (run.make_trainer)."""

    def __init__(self, config: Config, device: str):
        requested, config = config.train.device, on_device(config, device)
        env = EnvSource(config)
        batch = env.trainer_batch()
        try:
            num_agents = batch.obs.shape[1]
            check_with_env(config, num_agents, batch.env.stat_names)
            world = world_state_size(batch) if config.policy.critic_input == "world_state" else 0
            spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces, num_agents,
                                    world)
            on_gpu = config.train.device == "cuda"
            masked = on_gpu and AgentInputs(spec, batch).mask() is not None
            if on_gpu and (why := cuda_unsupported(spec, config, masked)):
                if requested != "auto":
                    raise ConfigError(f"train.device=cuda: {why}; train {config.env.name} with --train.device=cpu")
                print(f"fastvec-train: the CUDA trainer cannot train this run ({why}), so it trains on the CPU",
                      file=sys.stderr)
                config = on_device(config, "cpu")  # the same host batch: the device does not change how it is made,
                if getattr(batch, "device", "cpu") == "cuda":  # except a MuJoCo task's on MuJoCo Warp
                    batch.close()
                    env = EnvSource(config)
                    batch = env.batch()
        except BaseException:
            batch.close()
            raise
        self.config, self.env, self.batch, self.spec = config, env, batch, spec
