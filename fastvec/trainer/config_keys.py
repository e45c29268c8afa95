"""Every fastvec-train config key, defined once: section, name, type, default, meaning, allowed values.
config.py loads, merges and validates configs against KEYS, and renders fastvec/configs/default.toml from it."""

from __future__ import annotations

import dataclasses
import math

Value = bool | int | float | str


class ConfigError(ValueError):
    """A bad config key, value or env name; the message names it and the valid choices (raised where configs are
    checked: config.py and config_text.py's read_run_config; the trainer imports it from config)."""


@dataclasses.dataclass(frozen=True)
class Key:
    """One config key. doc: its meaning in one line; note: a caveat worth a second line (or "").
    choices: the allowed values (each named, quoted, in doc); min/max: inclusive bounds; gt/lt: exclusive.
    Every float must be finite (no nan; inf only where infinite_ok says it means something, e.g. no target) and
    every int must fit in 64 bits, whatever its range."""

    section: str
    name: str
    type: type
    default: Value
    doc: str
    note: str = ""
    choices: tuple = ()
    min: float | None = None
    max: float | None = None
    gt: float | None = None
    lt: float | None = None
    infinite_ok: bool = False

    @property
    def path(self) -> str:
        return f"{self.section}.{self.name}"

    def range_text(self) -> str:
        """The numeric range as default.toml and errors write it: ">= 1", "> 0", "[0, 1]", "[0, 1)"."""
        low = _number(self.min if self.min is not None else self.gt)
        high = _number(self.max if self.max is not None else self.lt)
        if low is not None and high is not None:
            return f"{'[' if self.min is not None else '('}{low}, {high}{']' if self.max is not None else ')'}"
        if low is not None:
            return f">= {low}" if self.min is not None else f"> {low}"
        if high is not None:
            return f"<= {high}" if self.max is not None else f"< {high}"
        return ""

    def problem(self, value) -> str | None:
        """Why value is not allowed (a message naming the key, the value and the fix), or None."""
        if self.choices and value not in self.choices:
            names = [str(c) for c in self.choices]
            listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
            return f"{self.path}={value!r}: use {listed}"
        text = self.range_text()
        if isinstance(value, float) and not math.isfinite(value) and not (self.infinite_ok and math.isinf(value)):
            return f"{self.path}={value!r} must be a finite number{' ' + _range_words(text) if text else ''}"
        if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
            must = f"; it must be {_range_words(text)}" if text else ""
            return f"{self.path}={value!r} does not fit in 64 bits{must}"
        if ((self.min is not None and value < self.min) or (self.max is not None and value > self.max)
                or (self.gt is not None and value <= self.gt) or (self.lt is not None and value >= self.lt)):
            return f"{self.path}={value!r} must be {_range_words(text)}"
        return None


def _number(value) -> str | None:
    """A bound as written in ranges: 0.5, 1e-08, 4_294_967_295."""
    if value is None:
        return None
    if isinstance(value, int):
        return f"{value:_}" if abs(value) >= 10_000 else str(value)
    return f"{value:g}"


def _range_words(text: str) -> str:
    return "in " + text if text[0] in "[(" else text


SECTIONS = ("env", "policy", "train", "eval", "selfplay", "sweep")

# Text under a section's header in default.toml: what holds for the whole section.
SECTION_NOTES = {
    "env": "Any other key here is an env parameter (e.g. frameskip for breakout), checked against the env's "
           "registered parameters (fastvec-train ENV --help-config lists them); for a user's env file, a -D "
           "define of its source (an int or a float, e.g. --env.grid_size=8); for a Gymnasium id, a keyword "
           "argument of gymnasium.make.",
    "selfplay": "Self-play for multi-agent games: the learner plays one seat per game (game g: seat g % agents, "
                "so it learns every side), frozen snapshots of itself from a pool play the others. On the CUDA "
                "trainer the games, the opponents (the pool's snapshots in the arena) and the evaluations run on "
                "the GPU; with train.env_device = \"cpu\" the games are a CPU batch (one env group) and the "
                "opponents act with NumPy beside it.",
    "sweep": "fastvec-sweep's settings (fastvec-train ignores them; docs/sweeps.md). Any other key here, a quoted "
             "config path, is a dimension of the search space: \"train.learning_rate\" = \"1e-4:1e-1:log\" (lo:hi, "
             "lo:hi:log or lo:hi:STEP), \"policy.hidden\" = \"32,64,128\" (choices), or a single value, which "
             "every trial trains with; on the command line: --train.learning_rate=1e-4:1e-1:log.",
}

KEYS: tuple[Key, ...] = (
    # [env]
    Key("env", "num_envs", int, 256, "environments stepped together in one batch (per GPU with train.gpus > 1)",
        min=1),
    Key("env", "max_episode_steps", int, -1,
        "truncate episodes after this many steps: -1 = the env's own limit (CartPole 500; the MinAtar games none, "
        "as the minatar package), 0 = never",
        "gymnax's MinAtar games end at 1,000 steps (Freeway 2,500); an env file has no limit of its own. With "
        "env.gym_id a count > 0 goes to gymnasium.make.", min=-1, max=2**31 - 1),
    Key("env", "source", str, "",
        "a user's env file (.h, see examples/my_env.h) to train; fastvec-train PATH.h sets it (\"\" = ENV is a "
        "built-in env)",
        "The run records its path and its checkpoints the file's sha256: --resume and --eval find it there (a "
        "file that moved: give its new path as ENV), and warn if its content changed since."),
    Key("env", "gym_id", str, "",
        "a Gymnasium env id to train (Discrete actions, flat Box observations), stepped on the host by "
        "Gymnasium's own vector env; fastvec-train gym:ID sets it",
        "With train.device=cuda it uses the host-env path (train.env_device = \"cpu\"). Its other [env] keys "
        "are keyword arguments of gymnasium.make."),
    Key("env", "gym_vectorization", str, "sync",
        'env.gym_id: "sync" (one process, the envs stepped in turn) or "async" (a subprocess per env)',
        choices=("sync", "async")),
    # [policy]
    Key("policy", "kind", str, "mingru", '"mingru" (recurrent, carries state across steps) or "mlp"',
        choices=("mingru", "mlp")),
    Key("policy", "hidden", int, 64, "width of every hidden layer", min=1),
    Key("policy", "layers", int, 2, "MinGRU or MLP layers between the linear encoder and decoder", min=1),
    Key("policy", "highway", bool, True, "MinGRU: a learned gate mixes each layer's input into its output"),
    Key("policy", "critic", str, "shared",
        '"shared": the value is the decoder\'s last row over the policy\'s torso; "separate" (MLP): a critic of its '
        "own, with the policy's widths (PureJaxRL's and CleanRL's actor-critics)",
        "separate: both trainers; not with self-play's games on the GPU (use train.env_device=cpu there)",
        choices=("shared", "separate")),
    Key("policy", "encoder", str, "linear",
        '"linear": the layers read the encoder\'s output as it is; "relu" or "tanh": through that '
        "nonlinearity (an MLP with policy.layers=1 is then PureJaxRL's and CleanRL's two-hidden-layer network; a "
        "MinGRU reads a ReLU layer's output, as JaxMARL's recurrent baselines' GRU)",
        "relu, tanh: both trainers (the CUDA trainer's GEMM-path rollouts); not with self-play's games on the GPU",
        choices=("linear", "relu", "tanh")),
    Key("policy", "activation", str, "relu",
        '"relu" or "tanh": the MLP layers\' nonlinearity (tanh is CleanRL\'s continuous-control actor-critic\'s)',
        "tanh: both trainers (the CUDA trainer's GEMM-path rollouts); not with self-play's games on the GPU",
        choices=("relu", "tanh")),
    Key("policy", "agent_id", bool, False,
        "a multi-agent env: the agent's index, one-hot, appended to its observation (and to a world-state "
        "critic's input), so that the policy every agent shares can tell them apart (JaxMARL's, MAPPO's)",
        "The team envs' configs (mpe.toml, smax.toml) turn it on. Both trainers (the CUDA trainer's with the "
        "games on the host); not with self-play."),
    Key("policy", "critic_input", str, "local",
        '"local": the critic reads what the actor reads (IPPO); "world_state": a separate critic reads the env\'s '
        "world state (MAPPO's centralised critic; SMAX's, or every agent's observation concatenated, as mpe2's "
        "state())",
        "world_state needs policy.critic=separate (an MLP); the world state reaches it unnormalised. Both trainers "
        "(the CUDA trainer's with the games on the host).",
        choices=("local", "world_state")),
    # [train]
    Key("train", "device", str, "auto",
        '"cpu", "cuda", or "auto" (the CUDA trainer when it is available, else cpu)', choices=("cpu", "cuda", "auto")),
    Key("train", "gpus", int, 1, ">1: one CUDA training process per GPU of this machine, gradients averaged (NCCL)",
        "env.num_envs and train.minibatch_size are then per GPU (docs/multi-gpu.md)", min=1),
    Key("train", "seed", int, 1, "seeds the weights, the action sampling and the environments", min=0,
        max=2**32 - 1),
    Key("train", "total_timesteps", int, 10_000_000, "agent steps to train for (rounded up to whole rollouts)", min=1),
    Key("train", "horizon", int, 64, "steps per env per rollout; a rollout is num_envs * agents * horizon samples",
        min=1),
    Key("train", "bptt_horizon", int, 64, "length of the sequence segments gradients flow through (divides horizon)",
        min=1),
    Key("train", "minibatch_size", int, 4096,
        "samples per gradient step (a multiple of bptt_horizon, at most one rollout)", min=1),
    Key("train", "update_epochs", int, 1, "passes over each rollout", min=1),
    Key("train", "optimizer", str, "muon",
        '"muon" (Newton-Schulz orthogonalised momentum on 2-D weights, Adam on the rest) or "adam"',
        choices=("adam", "muon")),
    Key("train", "learning_rate", float, 0.003, "the optimizer's step size (at the start of the run with anneal_lr)",
        gt=0),
    Key("train", "precision", str, "fp32",
        'CUDA trainer GEMM inputs: "fp32" (bitwise repeatable, matches the NumPy reference), "tf32" or "bf16" '
        "(tensor cores)",
        "tf32 and bf16 accumulate in fp32 and keep fp32 master weights; bf16 also stores a MinGRU's layer "
        "activations in bfloat16. The CPU trainer always computes in fp32.",
        choices=("fp32", "tf32", "bf16")),
    Key("train", "anneal_lr", bool, True, "linear decay of the learning rate to 0 over the run"),
    Key("train", "adam_beta1", float, 0.9, "Adam's first-moment decay (Muon's Adam for non-matrix weights too)",
        min=0, lt=1),
    Key("train", "adam_beta2", float, 0.999, "Adam's second-moment decay", min=0, lt=1),
    Key("train", "adam_eps", float, 1e-8, "Adam's denominator epsilon", gt=0),
    Key("train", "muon_momentum", float, 0.95, "Muon's momentum on the 2-D weights", min=0, lt=1),
    Key("train", "gamma", float, 0.99, "discount", min=0, max=1),
    Key("train", "gae_lambda", float, 0.95, "GAE's lambda: 0 one-step (low variance), 1 Monte Carlo (no bias)",
        min=0, max=1),
    Key("train", "clip_coef", float, 0.2, "PPO ratio clip", min=0),
    Key("train", "vf_clip_coef", float, 0.2, "value clip around the rollout's value estimate", min=0),
    Key("train", "vf_coef", float, 0.5, "weight of the value loss", min=0),
    Key("train", "ent_coef", float, 0.01, "weight of the entropy bonus (at the start of the run with anneal_ent)",
        min=0),
    Key("train", "anneal_ent", bool, False, "linear decay of the entropy bonus to 0 over the run",
        "Explores early and ends with a sharper (lower-entropy) policy."),
    Key("train", "max_grad_norm", float, 0.5, "global gradient-norm clip", gt=0),
    Key("train", "norm_adv", bool, True, "normalise advantages per minibatch"),
    Key("train", "reward_clamp", bool, False, "clamp rewards to [-1, 1]"),
    Key("train", "norm_obs", bool, False,
        "running observation normalisation: clip((obs - mean) / std, -10, 10) before the encoder (CPU trainer)",
        "The statistics are updated from each rollout after its update and live in the policy's parameters, so "
        "checkpoints, --eval and --resume apply them as training did."),
    Key("train", "norm_reward", bool, False,
        "divide rewards by the running std of discounted returns, clipped to [-10, 10] (CPU trainer)",
        "As Gym's NormalizeReward in CleanRL's continuous PPO; updated from each rollout, saved in checkpoints."),
    Key("train", "vtrace", bool, False,
        "V-trace correction of the advantages for off-policy data (later epochs, async rollouts)"),
    Key("train", "vtrace_rho_clip", float, 1.0, "V-trace's clip of the importance ratio in the targets (rho bar)",
        gt=0),
    Key("train", "vtrace_c_clip", float, 1.0, "V-trace's clip of the ratio in the traces (c bar)", gt=0),
    Key("train", "prio_alpha", float, 0.0,
        "prioritised training sequences: each epoch draws its sequences with replacement, in proportion to "
        "(sum of |advantage| over the sequence)^prio_alpha (0: each sequence once, shuffled)",
        "The drawn sequences' policy-loss terms are weighted by (Q p)^-beta over the epoch's largest (Q sequences, "
        "p a sequence's probability; beta from train.prio_beta0 to 1 over the run); docs/trainer.md.", min=0),
    Key("train", "prio_beta0", float, 0.4,
        "the importance weights' exponent beta at the start of the run, annealed linearly to 1 (train.prio_alpha "
        "> 0)", "0.4: Schaul et al.'s proportional prioritised replay.", min=0, max=1),
    Key("train", "async", bool, False,
        "asynchronous rollouts: two rollout slots, the next rollout collected with the weights one update old "
        "while the learner updates",
        "The CUDA trainer overlaps the two on separate streams (host envs: the CPU steps them during the "
        "update); the CPU trainer computes the same schedule sequentially (no speed gain; tests compare the "
        "two). Off by default: at high learning rates it can stall (Breakout at lr 0.05), at lower ones it "
        "can learn better than sync; env configs turn it on."),
    Key("train", "target_return", float, math.inf,
        "end the run once train.target_metric's mean over the last train.target_episodes episodes reaches this "
        "(inf: no target)",
        "Default: what the env declares as solved: a Gymnasium id's reward_threshold (CartPole-v1: 475), a "
        "built-in env's (cartpole, acrobot, mountaincar, mountaincarcontinuous), an env file's #define "
        "REWARD_THRESHOLD; else inf. The summary says when it was reached.", infinite_ok=True),
    Key("train", "target_metric", str, "episode_return",
        "the logged metric train.target_return is for: episode_return or one of the env's statistics "
        "(breakout: score)"),
    Key("train", "target_episodes", int, 20,
        "the episodes train.target_metric is averaged over for the target (the newest logs', weighted by their "
        "episode counts)",
        "20, not Gymnasium's 100 trials: a policy that averages the target over its newest 20 episodes also does "
        "over 100 evaluation episodes (gym:CartPole-v1, 4 seeds: 500, 500, 500, 490.8), and 100 episodes of "
        "500 steps would keep a solved run training ~30% longer.", min=1),
    Key("train", "stop_at_target", bool, True,
        "stop the run (checkpoint saved) when train.target_return is reached; false: train on, the summary "
        "still says when it was reached",
        "One process only: with several GPUs the run trains its whole budget and reports the target."),
    Key("train", "checkpoint_interval", int, 200,
        "updates between checkpoints (also every checkpoint_seconds, at the end, and on SIGTERM or Ctrl-C)", min=1),
    Key("train", "checkpoint_seconds", float, 60.0,
        "seconds of training between checkpoints as well (0: by checkpoint_interval alone)",
        "A kill -9 loses at most this much training (plus the update in progress), or checkpoint_interval "
        "updates if those come sooner; --resume=RUN_DIR continues from the newest valid checkpoint. A checkpoint "
        "taken for time alone is deleted once the next one is written.", min=0),
    Key("train", "tensorboard", bool, False,
        "write TensorBoard event files to RUN_DIR/tensorboard (needs the [logging] extra)"),
    Key("train", "wandb_project", str, "",
        'log to Weights & Biases under this project ("" = off; needs the [logging] extra)'),
    Key("train", "wandb_mode", str, "",
        'Weights & Biases: "online", "offline" (sync later), "disabled", or "" (the WANDB_MODE environment '
        'variable, else online)', choices=("", "online", "offline", "disabled")),
    Key("train", "log_interval", float, 1.0,
        "seconds between metrics.jsonl lines and dashboard refreshes (also one at every 5% of the run's updates)",
        min=0),
    Key("train", "env_device", str, "cuda",
        'CUDA trainer: "cuda" steps the env compiled for the GPU inside the rollout graph (fastest; a MuJoCo task on '
        'MuJoCo Warp, its captured step between the policy\'s graphs); "cpu" steps CPU env batches on the host '
        "beside it",
        'With "cpu": pinned buffers, one env group stepped while the GPU runs the policy for the other. '
        'Self-play on the CUDA trainer always uses "cpu"; the CPU trainer always steps CPU envs.',
        choices=("cuda", "cpu")),
    Key("train", "env_groups", int, 2,
        'env_device = "cpu": groups the envs are split into and stepped in turn, the CPU stepping one while '
        "the GPU runs the other's policy",
        "Pays when the env step costs about as much as a policy step; for a cheap env (CartPole) 1 is faster.",
        min=1),
    Key("train", "env_threads", int, 1, "threads stepping the CPU env batch (0 = FASTVEC_NUM_THREADS, else all CPUs)",
        "1 suffices: envs step far faster than the NumPy trainer learns, and the pool's workers would share the "
        "trainer's cores.", min=0),
    Key("train", "blas_threads", int, 1, "CPU trainer: BLAS threads (0 = leave as is)",
        "1 is fastest on small CPUs: BLAS threads on small matrices fight the env's threads.", min=0),
    # [eval]
    Key("eval", "episodes", int, 100,
        "--eval plays this many episodes (one per env, in parallel); with eval.opponent, games per opponent", min=1),
    Key("eval", "deterministic", bool, False, "argmax actions instead of sampling"),
    Key("eval", "render", str, "", "with --eval: write a GIF or MP4 of one episode here (a .gif or .mp4 path; "
        "needs imageio)"),
    Key("eval", "render_max_frames", int, 3000, "stop recording after this many frames", min=1),
    Key("eval", "opponent", str, "",
        'with --eval=A: a checkpoint B to play A against (A takes seat game % agents, B the others), or "bot" '
        "for the env's scripted bot at every level ([selfplay] bot_*)"),
    # [selfplay]
    Key("selfplay", "enabled", bool, False, "train by self-play against a pool of past selves (a multi-agent env)"),
    Key("selfplay", "pool_size", int, 8, "snapshots kept; the oldest leaves the pool when a new one comes in", min=1),
    Key("selfplay", "refresh_interval", int, 10, "updates between snapshots of the learner added to the pool", min=1),
    Key("selfplay", "latest_prob", float, 0.5,
        "a game that ends gets the newest snapshot as its next opponent with this probability, else one drawn "
        "uniformly from the pool (never changed mid-game)", min=0, max=1),
    Key("selfplay", "eval_interval", int, 50,
        "updates between evaluations (0: only at the end): vs the scripted bot at every level (where the env "
        "has one) and vs past selves; Elo ratings -> metrics.jsonl", min=0),
    Key("selfplay", "eval_games", int, 64, "games per opponent in an evaluation", min=1),
    Key("selfplay", "eval_past", int, 3, "past selves (pool snapshots, newest first) played at each evaluation",
        min=0),
    Key("selfplay", "bot_switch_param", str, "",
        'the [env] parameter that turns one seat into a scripted bot (pong: "pong_bot"); "" = the env has no bot',
        "Self-play training sets it to 0, bot evaluations to 1."),
    Key("selfplay", "bot_level_param", str, "",
        "the [env] parameter giving the bot's difficulty (pong: \"bot_level\"); every value in its registered "
        "range is evaluated"),
    # [sweep]
    Key("sweep", "objective", str, "score",
        '"score" (the metric at the end of each trial\'s budget, maximised), "time_to_target" (training seconds '
        'until a log\'s metric reaches sweep.target, minimised) or "pareto" (score up, training seconds down)',
        "time_to_target needs sweep.trial_seconds: a trial that misses the target scores trial_seconds x (1 + its "
        "shortfall), so every hit ranks ahead of every miss. pareto is multi-objective: no pruning.",
        choices=("score", "time_to_target", "pareto")),
    Key("sweep", "metric", str, "episode_return",
        "the logged metric the objective reads: episode_return or one of the env's statistics (breakout: score)"),
    Key("sweep", "target", float, 0.0, "time_to_target: the metric's value to reach (a log's mean over its episodes)"),
    Key("sweep", "trial_seconds", float, 0.0,
        "training seconds per trial (start-up excluded; 0: train.total_timesteps alone bounds a trial)", min=0),
    Key("sweep", "trials", int, 20, "trials this process runs (0: until sweep.timeout)", min=0),
    Key("sweep", "timeout", float, 0.0, "seconds this process sweeps for (0: until sweep.trials are done)", min=0),
    Key("sweep", "seeds", int, 1, "training seeds per trial (train.seed, train.seed + 1, ...); sweep.seed_reduce "
        "combines their objectives", min=1),
    Key("sweep", "seed_reduce", str, "mean",
        '"mean" (each objective averaged over the seeds) or "worst" (the lowest seed\'s score, the slowest seed\'s '
        'seconds)', "worst ranks a trial by its unluckiest seed: for a config that must reach a target on every seed.",
        choices=("mean", "worst")),
    Key("sweep", "sampler", str, "tpe",
        'Optuna\'s sampler: "tpe" (single- and multi-objective), "nsga2" (multi-objective, genetic) or "random"',
        choices=("tpe", "nsga2", "random")),
    Key("sweep", "sampler_seed", int, -1, "the sampler's seed (-1: a fresh one per process)",
        "Processes sharing one study need different seeds, or their first random trials repeat each other.",
        min=-1, max=2**32 - 1),
    Key("sweep", "pruner", str, "median",
        '"median" (stop a trial whose metric falls below the median of earlier trials at the same point of the '
        'budget) or "none"', choices=("median", "none")),
    Key("sweep", "prune_startup", int, 3, "trials completed before any trial is pruned", min=0),
    Key("sweep", "prune_warmup", float, 0.2, "fraction of a trial's budget before it can be pruned", min=0, max=1),
    Key("sweep", "reports", int, 20,
        "intermediate reports to the pruner per trial budget (per seed): every 1/reports of trial_seconds, or of "
        "train.total_timesteps when trial_seconds = 0", min=1),
    Key("sweep", "storage", str, "",
        'Optuna storage URL shared by every process of the study ("" = sqlite:///SWEEP_DIR/study.db); e.g. '
        "postgresql://user@host/db or mysql+pymysql://user@host/db for several machines"),
    Key("sweep", "study", str, "", 'the study\'s name in the storage ("" = ENV-OBJECTIVE, e.g. cartpole-score)'),
    Key("sweep", "dir", str, "", 'the sweep directory: trials, best.toml, plots ("" = sweeps/ENV/STUDY)'),
    Key("sweep", "env_space", bool, True,
        "search the entries of fastvec/configs/ENV.toml's [sweep] section too (false: only --config's and the "
        "command line's; e.g. to refine a best.toml along a few keys)"),
    Key("sweep", "keep_checkpoints", bool, False, "keep each trial's final checkpoint (under SWEEP_DIR/trials/)"),
)

BY_PATH: dict[str, Key] = {key.path: key for key in KEYS}


def section_keys(section: str) -> dict[str, Key]:
    """The keys of one section by name, in definition order."""
    return {key.name: key for key in KEYS if key.section == section}
