"""`fastvec-train ENV [--section.key=value ...]`: train PPO on a fastvec env, resume a run, or evaluate
a checkpoint. Config: the defaults of config_keys.py (fastvec/configs/default.toml) < fastvec/configs/ENV.toml
< the command line."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

USAGE = """usage: fastvec-train ENV [--config=PATH] [--section.key=value ...] [--run-dir=PATH [--overwrite]]
                     [--resume=RUN_DIR]
       fastvec-train --list | --help-config | --version
       fastvec-train ENV --eval=CHECKPOINT [--eval.episodes=N] [--eval.render=PATH.gif|.mp4]
       fastvec-train ENV --eval=A --eval.opponent=B|bot   (multi-agent: A against checkpoint B or the bot)

Train PPO on a fastvec env (cartpole, breakout, ...) with the bundled trainer.
  ENV                   a registered env name, your env file (PATH.h; its -D parameters as --env.KEY=value),
                        or gym:ID (a Gymnasium id with Discrete actions and flat observations, e.g. gym:CartPole-v1);
                        a team of agents: an MPE scenario (simple_spread, --env.N=5) or smax:NAME (smax:3m)
  --section.key=value   override a config value, e.g. --train.total_timesteps=20_000_000
                        --env.num_envs=1024 --policy.hidden=128 --train.device=cpu
  --config=PATH         a TOML of config values over ENV.toml's, under the command line's: a sweep's
                        best.toml, a run's config.toml, or your own (any subset of the sections)
  --run-dir=PATH        where to write config.toml, metrics.jsonl, checkpoints/ (default runs/ENV/<time>,
                        a new directory per run); one that already holds a run is refused
  --overwrite           replace the run already in --run-dir (its config.toml, metrics.jsonl, checkpoints/)
  --resume=RUN_DIR      continue the run in RUN_DIR from its newest checkpoint
  --eval=CHECKPOINT     play a checkpoint (file, or a run dir for its newest) and print the mean return
  --selfplay.enabled=true  train a multi-agent game (e.g. pong) by self-play against a pool of past selves
  --list                list the registered envs: observation and action sizes, parameters (--env.KEY=value)
  --version             print fastvec's version and exit
  --print-config        print the resolved config and exit
  --help-config         list every config key with its value and meaning (with ENV: that env's values
                        and parameters); defaults with caveats: fastvec/configs/default.toml
Per-env values: fastvec/configs/ENV.toml. Hyperparameter search: fastvec-sweep ENV (docs/sweeps.md).
Plot a run: fastvec-plot RUN_DIR. Progress goes to stdout: a live panel on a terminal, a line every few
seconds when stdout is a pipe or a file (| tee log, nohup, Slurm)."""


def version() -> str:
    """fastvec's installed version (importlib.metadata), else the package's own __version__."""
    from importlib import metadata
    try:
        return metadata.version("fastvec")
    except metadata.PackageNotFoundError:
        import fastvec
        return getattr(fastvec, "__version__", "unknown")


def env_sizes(source: Path) -> dict[str, str]:
    """OBS_SIZE, NUM_ACTIONS, NUM_AGENTS and ACTION_DIMS as the env's source (and the fastvec headers it
    includes) define them, the observation's element type and the action space's kind (read, not compiled; a
    size defined under several #if branches, as Pong's agents, shows each value: '2/1')."""
    import re
    text = source.read_text(encoding="utf-8", errors="replace")
    for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):  # e.g. minatar_common.h
        if header != "fastvec.h" and (source.parent / header).is_file():
            text += (source.parent / header).read_text(encoding="utf-8", errors="replace")
    sizes = {}
    for name in ("OBS_SIZE", "NUM_ACTIONS", "NUM_AGENTS", "ACTION_DIMS"):
        values = list(dict.fromkeys(re.findall(rf"^\s*#\s*define\s+{name}\s+(\d+)\b", text, re.M)))
        sizes[name] = "/".join(values) or "?"
    kind = re.search(r"^\s*#\s*define\s+ACTION_SPACE\s+(\w+)", text, re.M)
    sizes["actions"] = {"FV_BOX": f"Box({sizes['ACTION_DIMS']} dims)",
                        "FV_MULTI_DISCRETE": f"MultiDiscrete({sizes['ACTION_DIMS']} dims)"}.get(
        kind.group(1) if kind else "", f"Discrete({sizes['NUM_ACTIONS']})")
    byte_obs = re.search(r"^\s*#\s*define\s+OBS_T\s+unsigned\s+char\b", text, re.M)
    sizes["obs"] = f"{sizes['OBS_SIZE']} {'bytes' if byte_obs else 'floats'}"
    return sizes


def list_envs() -> str:
    """`fastvec-train --list`: every registered env with its sizes, episode limit and parameters."""
    from fastvec.native import ENVS, source_path
    lines = ["registered envs (fastvec-train ENV; a parameter is set with --env.KEY=value):"]
    for name, info in sorted(ENVS.items()):
        sizes = env_sizes(source_path(name))
        limit = f"{info.max_episode_steps:,}" if info.max_episode_steps else "none"
        lines.append(f"  {name:<22} {info.gym_id:<30} observation {sizes['obs']}, actions {sizes['actions']}, "
                     f"agents {sizes['NUM_AGENTS']}, step limit {limit}")
        for key, param in info.params.items():
            lines.append(f"      --env.{key}={param.default}  [{param.low}, {param.high}]  {param.doc}")
    from fastvec.native.mujoco import TASKS
    from fastvec.native.mujoco.host_batch import gym_id, train_name
    lines.append("MuJoCo tasks (Gymnasium's v5, with the mujoco package; --env.KEY=value: the task's v5 keywords, "
                 "e.g. --env.ctrl_cost_weight=0.01):")
    for task, limit in TASKS.items():
        lines.append(f"  {train_name(task):<22} {gym_id(task):<30} Box actions, float observations, step limit "
                     f"{limit:,}")
    from fastvec.native import mpe
    lines.append("teams of agents (one policy every agent shares, its agent id an input; configs mpe.toml, smax.toml):")
    for name, scenario in mpe.SCENARIOS.items():
        keywords = [f"--env.{key}={param.default}" for key, param in scenario.params.items()]
        keywords += ["--env.local_ratio=0.5"] if scenario.local_ratio else []
        lines.append(f"  {name:<22} {f'fastvec/{name}-v{scenario.version}':<30} mpe2's scenario, step limit "
                     f"{mpe.MAX_CYCLES}{'; ' + ', '.join(keywords) if keywords else ''}")
    from fastvec.native import smax
    lines.append(f"  smax:NAME              jaxmarl's SMAX, NAME one of {', '.join(smax.SCENARIOS)}; step limit "
                 f"{smax.TIME_LIMIT}")
    lines.append("config keys and their values: fastvec-train --help-config (fastvec-train ENV --help-config)")
    return "\n".join(lines)


def suggest_env(message: str, env: str | None) -> str:
    """An `unknown env 'X'` error with the closest registered names: `unknown env 'cartpol'; did you mean
    'cartpole'? ...` (config.py raises it; config keys get their suggestions there)."""
    import difflib
    import re
    from fastvec.native import ENVS
    match = re.match(r"unknown env ('[^']*'|\"[^\"]*\")", message)
    if env is None or match is None or "did you mean" in message:
        return message
    from fastvec.native.mujoco import TASKS
    from fastvec.trainer.teams import names as team_names
    close = difflib.get_close_matches(env.lower(), sorted(ENVS) + [task.lower() for task in TASKS] + team_names(),
                                      n=2, cutoff=0.6)
    if not close:
        return message
    hint = " or ".join(repr(name) for name in close)
    rest = message[match.end():].lstrip("; ")
    return f"{match.group(0)}; did you mean {hint}?" + (f" ({rest})" if rest else "")


def config_file(path: str, env: str) -> dict:
    """A --config TOML as config overrides (checked key by key, naming the file). A run's config.toml or a sweep's
    best.toml names its env (env.name): it must be ENV, and is dropped (ENV names the env)."""
    from fastvec.trainer import config as config_mod
    if not Path(path).is_file():
        raise config_mod.ConfigError(f"--config={path}: no such file; give a TOML of config values (e.g. a "
                                     f"fastvec-sweep best.toml)")
    values = config_mod.load_toml(Path(path))
    named = values.get("env", {}).pop("name", None) if isinstance(values.get("env"), dict) else None
    if named is not None and named != config_mod.run_env_name(env):
        raise config_mod.ConfigError(f"--config={path} is a config for {named!r}, not {env!r}; give it with "
                                     f"fastvec-train {named} --config={path}")
    config_mod.merge(config_mod.defaults(), values, path)  # its keys and types, with the file named in errors
    return values


def parse_args(argv: list[str]) -> dict:
    """Split argv into the env, the special flags and the config overrides."""
    from fastvec.trainer.config import ConfigError, parse_overrides

    special = {"run-dir": None, "resume": None, "eval": None, "config": None}
    flags = set()
    rest = []
    env = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if arg in ("-h", "--help"):
            flags.add("help")
        elif arg in ("--print-config", "--help-config", "--list", "--version", "--overwrite"):
            flags.add(arg[2:])
        elif name in special:
            if not eq:
                if i + 1 >= len(argv):
                    raise ConfigError(f"--{name} needs a value: --{name}=VALUE")
                value = argv[i + 1]
                i += 1
            special[name] = value
        elif not arg.startswith("-") and env is None:
            env = arg
        else:
            rest.append(arg)
        i += 1
    return {"env": env, "overrides": parse_overrides(rest), "flags": flags, **special}


def default_run_dir(env: str) -> Path:
    """A new runs/ENV/<time> directory for this run (run_dir.new_run_dir); a launcher's ranks other than 0 only
    name one, since they train in scratch directories and would leave empty ones behind."""
    from fastvec.trainer import distributed, run_dir
    if distributed.launched() and distributed.discover().rank != 0:
        return run_dir.default_run_dir(env)
    return run_dir.new_run_dir(env)


STOP_CODES = {"SIGINT": 130, "SIGTERM": 143}  # 128 + the signal's number, as a shell reports a stopped job


def main(argv: list[str] | None = None) -> int:
    """fastvec-train. Every failure a user can cause or meet (a config, a damaged file, the file system,
    memory) is one line on stderr, `fastvec-train: error: ...`, with exit status 2."""
    from fastvec.trainer import checkpoint, config as config_mod

    argv = sys.argv[1:] if argv is None else argv
    state: dict = {}
    try:
        return _main(argv, state)
    except (config_mod.ConfigError, checkpoint.CheckpointError, checkpoint.RunFileError, ImportError) as err:
        message = str(err)
    except BrokenPipeError:  # stdout closed early (`fastvec-train --list | head`): stop quietly, as a shell tool does
        import os
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        except (OSError, ValueError):
            pass
        return 141  # 128 + SIGPIPE
    except OSError as err:  # one that no file operation of the run named (those are RunFileErrors)
        path = f" {err.filename}" if err.filename else ""
        message = f"{err.strerror or err}{':' + path if path else ''}"
    except MemoryError as err:
        config = state.get("config")
        sizes = (f" with env.num_envs={config['env']['num_envs']}, train.horizon={config['train']['horizon']}, "
                 f"policy.hidden={config['policy']['hidden']}" if config else "")
        message = (f"out of memory ({str(err) or 'MemoryError'}){sizes}; lower env.num_envs (or train.horizon, "
                   f"policy.hidden)")
    except KeyboardInterrupt:
        print("fastvec-train: interrupted before training began; nothing was saved", file=sys.stderr)
        return 130
    print(f"fastvec-train: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _main(argv: list[str], state: dict) -> int:
    from fastvec.trainer import checkpoint, config as config_mod

    args = parse_args(argv)
    if "version" in args["flags"]:
        print(f"fastvec-train (fastvec {version()})")
        return 0
    if "list" in args["flags"]:
        print(list_envs())
        return 0
    if "help-config" in args["flags"] and args["env"] is None:
        print(config_mod.help_text())
        return 0
    if "help" in args["flags"] or args["env"] is None:
        print(USAGE)
        return 0 if "help" in args["flags"] else 2
    eval_path = Path(args["eval"]) if args["eval"] else None
    if eval_path and not args["resume"]:
        if eval_path.is_dir():
            eval_path = checkpoint.latest(eval_path)  # the newest valid one (a warning names any skipped)
        # Play the checkpoint in the env it was trained in (e.g. pong against the bot), unless the
        # command line says otherwise.
        meta, _ = checkpoint.load(eval_path)
        if args["env"] and meta["env"] == config_mod.run_env_name(args["env"]) and isinstance(meta.get("config"), dict):
            saved = {k: v for k, v in meta["config"].get("env", {}).items() if k not in ("name", "num_envs")}
            args["overrides"]["env"] = {**saved, **args["overrides"].get("env", {})}
    config = state["config"] = config_of(args)
    if "help-config" in args["flags"]:
        print(config_mod.help_text(config))
        return 0
    if "print-config" in args["flags"]:
        print(config_mod.to_toml(config))
        return 0
    if eval_path:
        if args["resume"] or args["run-dir"]:
            raise config_mod.ConfigError("--eval plays a checkpoint; it takes neither --resume nor --run-dir")
        return play_checkpoint(args, config, eval_path)
    return train_and_report(args, config)


def config_of(args: dict) -> dict:
    """The config the command line asks for: a run's config.toml (--resume) or ENV's, --config's file and the
    overrides on top."""
    from fastvec.trainer import config as config_mod

    if args["config"]:
        if args["resume"]:
            raise config_mod.ConfigError("--config and --resume: a resumed run keeps its own config.toml; give "
                                         "changes as --section.key=value")
        given = config_file(args["config"], args["env"])
        args["overrides"] = {section: {**given.get(section, {}), **args["overrides"].get(section, {})}
                             for section in {**given, **args["overrides"]}}
    try:
        if args["resume"]:
            return config_mod.load_run_config(Path(args["resume"]), args["env"], args["overrides"])
        return config_mod.load_config(args["env"], args["overrides"])
    except config_mod.ConfigError as err:
        raise config_mod.ConfigError(suggest_env(str(err), args["env"])) from None


def play_checkpoint(args: dict, config: dict, eval_path: Path) -> int:
    """--eval: the checkpoint's mean return (and a GIF/MP4), or its games against eval.opponent."""
    from fastvec.trainer import run
    from fastvec.trainer.dashboard import fmt_number

    if config["eval"]["opponent"]:
        from fastvec.trainer.selfplay import evaluate_checkpoints
        on_gpu = run.resolve_device(config["train"]["device"]) == "cuda"
        result = evaluate_checkpoints(config, eval_path, config["eval"]["opponent"], on_gpu)
        for match in result["matches"]:
            print(f"{result['env']}: {args['eval']} vs {match['opponent']}: score {fmt_number(match['score'], 3)} "
                  f"over {result['games']} games ({match['wins']} wins, {match['ties']} ties, "
                  f"{match['losses']} losses)")
        print(f"{len(result['matches']) * result['games']} games played on the "
              f"{'GPU' if on_gpu else 'CPU'} in {result['seconds']:.2f} s")
        print("Elo (these games only): " + ", ".join(f"{k} {v:.0f}" for k, v in result["elo"].items()))
        return 0
    result = run.evaluate(config, eval_path, render=config["eval"]["render"])
    stats = "".join(f", {k} {fmt_number(result[k])}" for k in result
                    if k not in ("env", "checkpoint", "episodes", "episode_return", "episode_return_std",
                                 "episode_length", "render"))
    print(f"{result['env']}: mean return {fmt_number(result['episode_return'])} "
          f"(std {fmt_number(result['episode_return_std'])}) over {result['episodes']} episodes, "
          f"mean length {fmt_number(result['episode_length'])}{stats}")
    if "render" in result:
        print(f"wrote {result['render']}")
    return 0


def train_and_report(args: dict, config: dict) -> int:
    """Train (or resume) and print the summary; the exit status (STOP_CODES for a run a signal stopped)."""
    from fastvec.trainer import config as config_mod, run
    from fastvec.trainer.dashboard import fmt_number, fmt_si

    overwrite = "overwrite" in args["flags"]
    if overwrite and args["resume"]:
        raise config_mod.ConfigError("--overwrite and --resume: --resume continues the run in RUN_DIR, --overwrite "
                                     "replaces it; drop one")
    if overwrite and not args["run-dir"]:
        raise config_mod.ConfigError("--overwrite replaces the run in a given directory; add --run-dir=PATH")
    made_here = not (args["resume"] or args["run-dir"])
    run_dir = Path(args["resume"] or args["run-dir"] or default_run_dir(config["env"]["name"]))
    try:
        summary = run.train(config, run_dir, resume=bool(args["resume"]), overwrite=overwrite)
    except BaseException:
        if made_here:  # a run refused before it wrote anything leaves no empty runs/ENV/<time> behind
            with contextlib.suppress(OSError):
                run_dir.rmdir()
        raise
    env = config["env"]["name"]
    steps = summary.get("trained_steps", summary["global_step"])  # the steps the updates trained on
    if summary["interrupted"]:
        saved = (f"saved {summary['checkpoint']}" if summary.get("saved_at_stop") else
                 f"nothing saved since {summary['checkpoint']}" if summary["checkpoint"] else
                 "no checkpoint yet, so a resume starts over")
        print(f"fastvec-train: stopped by {summary['signal'] or 'SIGINT'} at update {summary.get('update', '?')} "
              f"(step {fmt_si(steps)}); {saved}; continue with: fastvec-train {env} --resume={run_dir}",
              file=sys.stderr)
        return STOP_CODES.get(summary["signal"], 130)
    last = summary["metrics"]
    if not last:
        print(f"fastvec-train: nothing to do, {run_dir} already holds {fmt_si(steps)} steps "
              f"(train.total_timesteps={config['train']['total_timesteps']:,}); raise it to train on")
        return 0
    returns = summary["recent_returns"][-5:]
    mean_return = fmt_number(sum(returns) / len(returns)) if returns else "n/a"
    speed = f"{summary['elapsed']:.1f} s ({fmt_si(summary['sps'])} SPS"
    if summary.get("eval_time"):
        speed = (f"{summary['elapsed'] - summary['eval_time']:.1f} s of training ({fmt_si(summary['train_sps'])} SPS) "
                 f"and {summary['eval_time']:.1f} s of evaluations, {summary['elapsed']:.1f} s wall "
                 f"({fmt_si(summary['sps'])} SPS")
    print(f"fastvec-train {env}: {fmt_si(steps)} steps in {speed}; start-up {summary['startup']:.2f} s "
          f"before that); mean return (last {len(returns)} logs) {mean_return}; "
          f"last log {fmt_number(last.get('episode_return'))}; run dir {run_dir}; checkpoint {summary['checkpoint']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
