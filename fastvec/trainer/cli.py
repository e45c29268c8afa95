"""`fastvec-train ENV [--section.key=value ...]`: train PPO on a fastvec env, resume a run, or evaluate
a checkpoint. Config: the defaults of config_keys.py (fastvec/configs/default.toml) < fastvec/configs/ENV.toml
< the command line."""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = """usage: fastvec-train ENV [--section.key=value ...] [--run-dir=PATH] [--resume=RUN_DIR]
       fastvec-train ENV --eval=CHECKPOINT [--eval.episodes=N] [--eval.render=PATH.gif|.mp4]
       fastvec-train ENV --eval=A --eval.opponent=B|bot   (multi-agent: A against checkpoint B or the bot)

Train PPO on a fastvec env (cartpole, breakout, ...) with the bundled trainer.
  ENV                   a registered env name
  --section.key=value   override a config value, e.g. --train.total_timesteps=20_000_000
                        --env.num_envs=1024 --policy.hidden=128 --train.device=cpu
  --run-dir=PATH        where to write config.toml, metrics.jsonl, checkpoints/ (default runs/ENV/<time>)
  --resume=RUN_DIR      continue the run in RUN_DIR from its newest checkpoint
  --eval=CHECKPOINT     play a checkpoint (file, or a run dir for its newest) and print the mean return
  --selfplay.enabled=true  train a multi-agent game (e.g. pong) by self-play against a pool of past selves
  --print-config        print the resolved config and exit
  --help-config         list every config key with its value and meaning (with ENV: that env's values
                        and parameters); defaults with caveats: fastvec/configs/default.toml
Per-env values: fastvec/configs/ENV.toml.
Plot a run: fastvec-plot RUN_DIR."""


def parse_args(argv: list[str]) -> dict:
    """Split argv into the env, the special flags and the config overrides."""
    from fastvec.trainer.config import ConfigError, parse_overrides

    special = {"run-dir": None, "resume": None, "eval": None}
    flags = set()
    rest = []
    env = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if arg in ("-h", "--help"):
            flags.add("help")
        elif arg in ("--print-config", "--help-config"):
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
    from fastvec.trainer import checkpoint, config as config_mod, run

    args = parse_args(argv)
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
        if args["env"] and meta["env"] == args["env"].lower() and isinstance(meta.get("config"), dict):
            saved = {k: v for k, v in meta["config"].get("env", {}).items() if k not in ("name", "num_envs")}
            args["overrides"]["env"] = {**saved, **args["overrides"].get("env", {})}
    if args["resume"]:
        config = config_mod.load_run_config(Path(args["resume"]), args["env"], args["overrides"])
    else:
        config = config_mod.load_config(args["env"], args["overrides"])
    state["config"] = config
    if "help-config" in args["flags"]:
        print(config_mod.help_text(config))
        return 0
    if "print-config" in args["flags"]:
        print(config_mod.to_toml(config))
        return 0
    if eval_path:
        if args["resume"] or args["run-dir"]:
            raise config_mod.ConfigError("--eval plays a checkpoint; it takes neither --resume nor --run-dir")
        if config["eval"]["opponent"]:
            from fastvec.trainer.selfplay import evaluate_checkpoints
            result = evaluate_checkpoints(config, eval_path, config["eval"]["opponent"])
            for match in result["matches"]:
                print(f"{result['env']}: {args['eval']} vs {match['opponent']}: score {match['score']:.3f} "
                      f"over {result['games']} games ({match['wins']} wins, {match['ties']} ties, "
                      f"{match['losses']} losses)")
            print("Elo (these games only): " + ", ".join(f"{k} {v:.0f}" for k, v in result["elo"].items()))
            return 0
        result = run.evaluate(config, eval_path, render=config["eval"]["render"])
        stats = "".join(f", {k} {result[k]:.2f}" for k in result
                        if k not in ("env", "checkpoint", "episodes", "episode_return", "episode_return_std",
                                     "episode_length", "render"))
        print(f"{result['env']}: mean return {result['episode_return']:.2f} "
              f"(std {result['episode_return_std']:.2f}) over {result['episodes']} episodes, "
              f"mean length {result['episode_length']:.1f}{stats}")
        if "render" in result:
            print(f"wrote {result['render']}")
        return 0
    run_dir = Path(args["resume"] or args["run-dir"] or run.default_run_dir(config["env"]["name"]))
    summary = run.train(config, run_dir, resume=bool(args["resume"]))
    env = config["env"]["name"]
    steps = summary.get("trained_steps", summary["global_step"])  # the steps the updates trained on
    if summary["interrupted"]:
        saved = (f"saved {summary['checkpoint']}" if summary.get("saved_at_stop") else
                 f"nothing saved since {summary['checkpoint']}" if summary["checkpoint"] else
                 "no checkpoint yet, so a resume starts over")
        print(f"fastvec-train: stopped by {summary['signal'] or 'SIGINT'} at update {summary.get('update', '?')} "
              f"(step {steps:,}); {saved}; continue with: fastvec-train {env} --resume={run_dir}",
              file=sys.stderr)
        return STOP_CODES.get(summary["signal"], 130)
    last = summary["metrics"]
    if not last:
        print(f"fastvec-train: nothing to do, {run_dir} already holds {steps:,} steps "
              f"(train.total_timesteps={config['train']['total_timesteps']:,}); raise it to train on")
        return 0
    returns = summary["recent_returns"][-5:]
    mean_return = f"{sum(returns) / len(returns):.1f}" if returns else "n/a"
    print(f"fastvec-train {env}: {steps:,} steps in "
          f"{summary['elapsed']:.1f} s ({summary['sps']:,.0f} SPS; start-up {summary['startup']:.2f} s "
          f"before that); mean return (last logs) {mean_return}; "
          f"last log {last.get('episode_return')}; run dir {run_dir}; checkpoint {summary['checkpoint']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
