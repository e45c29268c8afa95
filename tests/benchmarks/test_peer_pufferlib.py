"""benchmarks/peers/pufferlib.py, PufferLib 5.0 beside fastvec-train on Breakout: its dashboards parsed from a sample
printed as pufferl.cu's puf_dashboard_print prints to a pipe, the log-interval rule both sides are read by (against
means worked out by hand), a seed that never reaches 850 counted as a bound, the nvcc and train commands, the pack's
commit, and the JSON's schema as the figures renderer reads it."""

import json
import subprocess
import tarfile

import pytest


@pytest.fixture(scope="module")
def puffer(load_benchmark):
    load_benchmark("train_peers")  # puts benchmarks/peers on sys.path
    import pufferlib
    assert pufferlib.__file__.endswith("benchmarks/peers/pufferlib.py")  # not an installed PufferLib package
    return pufferlib


def stat_row(label, value, b="Model", seconds="12ms", share="3%", c="policy", loss="0.123"):
    # "│ %-9.9s " + value right-aligned in 13 + "    %-12.12s " + 6 + " " + 4 + "    %-10.10s " + 7 + "    │"
    return f"│ {label:<9.9} {value:>13}    {b:<12.12} {seconds:>6} {share:>4}    {c:<10.10} {loss:>7}    │"


def env_row(k1, v1, k2=None, v2=None):
    right = f"{k2:<25.25} {v2:>9.3f}" if k2 else f"{'':<25} {'':>9}"
    return f"│ {k1:<25.25} {v1:>9.3f}   {right}    │"


def dashboard(steps, sps, uptime, epoch, env=()):
    rows = [("Env", "breakout"), ("Params", "14.8K"), ("Steps", steps), ("SPS", sps), ("Epoch", str(epoch)),
            ("Uptime", uptime), ("To go", "3s 100ms")]
    lines = ["╭" + "─" * 78 + "╮", "│ PufferLib 5.0" + " " * 20 + "🐡  GPU:  97%   VRAM: 3.1/80G    RAM:  1.2G     │",
             "│" + " " * 78 + "│"]
    lines += [stat_row(label, value) for label, value in rows]
    lines.append("│" + " " * 78 + "│")
    items = list(env)
    for i in range(0, len(items), 2):
        lines.append(env_row(*items[i], *(items[i + 1] if i + 1 < len(items) else ())))
    lines.append("╰" + "─" * 78 + "╯")
    return "\n".join(lines)


SAMPLE = "\n".join([
    "Compiling... unrelated output",
    dashboard("0.3M", "0.0", "12ms", 0),  # no episode finished yet: no env/* rows
    dashboard("13.1M", "21.8M", "612ms", 50, [("score", 312.25), ("episode_return", 310.0), ("episode_length", 901.5)]),
    dashboard("26.5M", "22.3M", "1s 213ms", 101, [("score", 851.0), ("perf", 0.985)]),
    dashboard("94.0M", "22.1M", "1m 04s 007ms", 358, [("score", 860.5)]),
])


def test_dashboards_parsed_from_a_pipe(puffer):
    frames = puffer.parse_dashboards(SAMPLE)
    assert [f["steps"] for f in frames] == [0.3e6, 13.1e6, 26.5e6, 94.0e6]
    assert [f["uptime_s"] for f in frames] == pytest.approx([0.012, 0.612, 1.213, 64.007])
    assert [f["epoch"] for f in frames] == [0, 50, 101, 358]
    assert frames[1]["sps"] == pytest.approx(21.8e6) and frames[1]["params"] == pytest.approx(14.8e3)
    assert frames[0]["env"] == {}
    assert frames[1]["env"] == {"score": 312.25, "episode_return": 310.0, "episode_length": 901.5}
    assert puffer.puffer_groups(frames) == [(13.1e6, 0.612, 312.25, None), (26.5e6, 1.213, 851.0, None),
                                            (94.0e6, 64.007, 860.5, None)]


def test_a_layout_other_than_5_0s_is_refused(puffer):
    broken = SAMPLE.replace("│ Uptime   ", "│ Time     ")
    with pytest.raises(puffer.PufferError, match="expected"):
        puffer.parse_dashboards(broken)


@pytest.mark.parametrize("text, seconds", [("345ms", 0.345), ("12s 345ms", 12.345), ("1m 02s 345ms", 62.345),
                                           ("1d 2h 3m 4s", 93784.0)])
def test_durations(puffer, text, seconds):
    assert puffer.duration(text) == pytest.approx(seconds)


def test_the_first_log_interval_at_850_is_the_time(puffer):
    run = {"seed": 3, "command": "puffer train", "frames": puffer.parse_dashboards(SAMPLE)}
    seed = puffer.puffer_seed(run)
    assert (seed["reached"], seed["time_s"], seed["steps_to_threshold"]) == (True, 1.213, 26.5e6)
    assert seed["train_s"] == pytest.approx(64.007) and not seed["lower_bound"]
    missed = puffer.puffer_seed(run, target=861.0)  # never reached: its whole training time, a lower bound
    assert (missed["reached"], missed["time_s"], missed["lower_bound"]) == (False, 64.007, True)


# fastvec's per-update groups (steps, seconds, mean score, episodes)
GROUPS = [(1, 0.1, 100.0, 10), (2, 0.5, 400.0, 30), (3, 0.7, 900.0, 10), (4, 0.9, None, 0), (5, 1.0, 860.0, 30)]


def test_groups_merged_into_intervals_of_at_least_the_peers_log_period(fairness_module):
    intervals = fairness_module.interval_groups(GROUPS, 0.6)
    # the first group alone; then 0.5 and 0.7 (0.7 >= 0.1 + 0.6): (30 * 400 + 10 * 900) / 40; the last group closes
    # the last interval though only 0.3 s later: 860
    assert intervals == [(1, 0.1, 100.0, 10), (3, 0.7, 525.0, 40), (5, 1.0, 860.0, 30)]
    assert fairness_module.interval_crossing(intervals, 850.0) == (1.0, 5)  # 900 at 0.7 s is inside a 525 interval
    assert fairness_module.interval_crossing(intervals, 861.0) is None
    assert fairness_module.bounded_time(None, 1.25) == {"reached": False, "time_s": 1.25, "steps_to_threshold": None,
                                                        "lower_bound": True}


@pytest.fixture(scope="module")
def fairness_module(puffer):
    import fairness
    return fairness


def test_ratio_is_a_bound_where_a_puffer_seed_never_reached(puffer):
    puffer_seeds = [{"seed": 1, "time_s": 9.0, "lower_bound": False}, {"seed": 2, "time_s": 20.0, "lower_bound": True},
                    {"seed": 3, "time_s": 30.0, "lower_bound": True}, {"seed": 4, "error": "exit 1"}]
    fastvec_seeds = [{"seed": s, "time_s": 1.0, "lower_bound": False} for s in (1, 2, 3, 4)]
    row = puffer.summarize_time(puffer_seeds, fastvec_seeds)
    assert row["puffer_failed"] == [4]
    assert (row["ratio"], row["ratio_text"], row["lower_bound"]) == (20.0, ">=20.00", True)


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "PufferLib"
    (root / "ocean" / "breakout").mkdir(parents=True)
    (root / "ocean" / "breakout" / "breakout.cu").write_text("typedef float obs_t;\n")
    (root / "ocean" / "breakout" / "breakout.h").write_text("typedef float obs_t;\n")
    for f in ("raylib-5.5_linux_amd64/include/raylib.h", "raylib-5.5_linux_amd64/lib/libraylib.a"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("")
    return root


DEPS = {"include": ["/cuda/include"], "lib": ["/cuda/lib"], "link": ["-lcublas", "-l:libnccl.so.2"]}


def test_build_command_compiles_the_trainer_with_the_env_in(puffer, checkout, tmp_path):
    cmd = puffer.build_command(checkout, tmp_path / "puffer", DEPS, checkout / puffer.RAYLIB, arch="sm_90")
    assert cmd[0] == "nvcc" and "-arch=sm_90" in cmd and "src/pufferl.cu" in cmd
    assert '-DENV_HEADER="ocean/breakout/breakout.cu"' in cmd and '-DPUFFER_ENV_NAME="breakout"' in cmd
    assert "-DPUFFERLIB_BUILD_MAIN" in cmd and "-I/cuda/include" in cmd and "-Xlinker=-rpath=/cuda/lib" in cmd
    assert cmd.index("src/pufferl.cu") < cmd.index("-lcublas") < cmd.index("-o")
    assert cmd[-1] == str(tmp_path / "puffer")
    cpu = puffer.build_command(checkout, tmp_path / "puffer", DEPS, checkout / puffer.RAYLIB, gpu_env=False)
    assert '-DENV_HEADER="ocean/breakout/breakout.h"' in cpu and "-arch=native" in cpu


def test_build_refuses_without_raylib_naming_the_fix(puffer, checkout, tmp_path):
    with pytest.raises(puffer.PufferError, match="build.sh breakout"):
        puffer.build_command(checkout, tmp_path / "puffer", DEPS, tmp_path / "no-raylib")


def test_library_found_by_its_versioned_name(puffer, tmp_path):
    (tmp_path / "libnccl.so.2").write_text("")
    assert puffer.find_library("nccl", [tmp_path]) == (tmp_path, "-l:libnccl.so.2")
    (tmp_path / "libnccl.so").write_text("")
    assert puffer.find_library("nccl", [tmp_path]) == (tmp_path, "-lnccl")
    assert puffer.find_library("cublas", [tmp_path]) is None


def test_train_command_sets_the_seed_and_skips_the_final_evaluation(puffer, tmp_path):
    cmd = puffer.puffer_command(tmp_path / "puffer", 7, tmp_path, {"policy.hidden_size": 128})
    assert cmd[:2] == [str(tmp_path / "puffer"), "train"]
    assert {"--base.seed=7", "--base.eval_episodes=0", "--policy.hidden_size=128"} <= set(cmd)
    # PufferLib 5.0's ini loader exits on a key its default.ini lacks: [train] has no seed there
    keys = {a[2:].split("=")[0] for a in cmd[2:]}
    assert keys <= {"base.seed", "base.eval_episodes", "base.checkpoint_interval", "base.checkpoint_dir",
                    "base.log_dir", "policy.hidden_size"}


def test_ini_values_read_as_pufferlibs_loader_reads_them(puffer):
    text = "[base]\nenv_name = breakout ; a comment\n[env]\nframeskip = 3 # PufferLib's\n[train]\nframeskip = 9\n"
    assert puffer.ini_value(text, "env", "frameskip") == "3"
    assert puffer.ini_value(text, "base", "env_name") == "breakout"
    assert puffer.ini_value(text, "base", "frameskip") is None and puffer.ini_value(None, "env", "x") is None


def test_sps_runs_share_one_shape(puffer):
    fastvec, peer = puffer.sps_overrides(256, 3, True)
    assert (fastvec["env.num_envs"], fastvec["train.horizon"], fastvec["train.minibatch_size"]) == (
        peer["vec.total_agents"], peer["train.horizon"], peer["train.minibatch_size"])
    assert (fastvec["policy.hidden"], fastvec["policy.layers"]) == (peer["policy.hidden_size"], peer["policy.num_layers"])
    assert fastvec["train.async"] and peer["base.async"] == 1 and peer["train.replay_ratio"] == 1
    assert set(peer) <= {"vec.total_agents", "policy.hidden_size", "policy.num_layers", "train.horizon",  # 5.0's keys
                         "train.minibatch_size", "train.replay_ratio", "base.async", "train.total_timesteps"}
    frames = [{"sps": s} for s in (0.0, 5e6, 20e6, 21e6, 22e6, 30e6)]
    assert puffer.puffer_sps(frames) == 22e6  # the second half's median: 21, 22, 30


def test_pack_records_the_commit_and_unpacks(puffer, tmp_path):
    repo = tmp_path / "PufferLib"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "pufferl.cu").write_text("// trainer\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "sources"], check=True)
    (repo / "untracked.txt").write_text("not committed")
    path = puffer.pack(repo, tmp_path / "out")
    commit = puffer.checkout_commit(repo)
    assert path.name == f"pufferlib-{commit[:12]}.tar" and puffer.archive_commit(path) == commit
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == ["src", "src/pufferl.cu"]
    unpacked = puffer.unpack(path, tmp_path / "unpacked")
    assert (unpacked / "src" / "pufferl.cu").read_text() == "// trainer\n"

    raylib = tmp_path / "raylib"  # a raylib beside the checkout travels in the same tar, under the name build.sh uses
    (raylib / "include").mkdir(parents=True)
    (raylib / "include" / "raylib.h").write_text("// raylib\n")
    with tarfile.open(puffer.pack(repo, tmp_path / "out2", raylib)) as tar:
        assert f"{puffer.RAYLIB}/include/raylib.h" in tar.getnames() and "src/pufferl.cu" in tar.getnames()


def test_raylib_from_a_folder_or_a_tar(puffer, tmp_path):
    folder = tmp_path / puffer.RAYLIB
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "raylib.h").write_text("")
    assert puffer.raylib_dir(folder, tmp_path / "x") == folder
    with tarfile.open(tmp_path / "raylib.tar", "w") as tar:
        tar.add(folder, arcname=puffer.RAYLIB)
    found = puffer.raylib_dir(tmp_path / "raylib.tar", tmp_path / "unpacked")
    assert found == tmp_path / "unpacked" / puffer.RAYLIB and (found / "include" / "raylib.h").exists()


def test_figure_renders_from_the_json_the_script_writes(puffer, load_benchmark, tmp_path):
    figures = load_benchmark("figures")
    frames = puffer.parse_dashboards(SAMPLE)
    peer = [puffer.puffer_seed({"seed": s, "command": "puffer train", "frames": frames}) for s in (1, 2)]
    mine = [{"seed": s, "time_s": 0.9, "lower_bound": False, "reached": True, "train_s": 0.95, "sps": 70e6,
             "last_100_episodes": {"reached": True, "time_s": 0.8, "lower_bound": False}} for s in (1, 2)]
    out = {"date": "2026-12-05", "gpu": "NVIDIA H200", "puffer_commit": "bc98fdc0" + "0" * 32,
           "command": "python benchmarks/peers/pufferlib.py --pufferlib P", "time_to_850": puffer.summarize_time(peer, mine),
           "sps": [{"hidden": 40, "layers": 2, "async": False, "fastvec_params": 14764, "puffer_params": 14.8e3,
                    "fastvec_sps": 63.4e6, "puffer_sps": 21.0e6, "ratio": 3.019}]}
    (tmp_path / "pufferlib_breakout.json").write_text(json.dumps(out))
    text = figures.pufferlib_breakout(tmp_path)
    assert "1.21 / 1.21 s" in text and "0.90 / 0.90 s" in text and "1.3x" in text  # 1.213 / 0.9
    assert "| 40 x 2 | 14,764 | 14.8K | sync | 63.40M | 21.00M | 3.0x |" in text


def test_seeds_alternate_which_side_goes_first(puffer, monkeypatch):
    order = []

    def fake_puffer(binary, checkout, seed, overrides, timeout):
        order.append(("puffer", seed))
        return {"seed": seed, "command": "puffer train", "frames": puffer.parse_dashboards(SAMPLE)}

    def fake_fastvec(seed, device, target, max_seconds):
        order.append(("fastvec", seed))
        return {"seed": seed, "time_s": 0.9, "lower_bound": False, "reached": True}

    monkeypatch.setattr(puffer, "puffer_run", fake_puffer)
    monkeypatch.setattr(puffer, "fastvec_seed", fake_fastvec)
    row = puffer.time_to_target("puffer", "checkout", [5, 6, 7], "cuda", 60.0)
    assert order == [("puffer", 5), ("fastvec", 5), ("fastvec", 6), ("puffer", 6), ("puffer", 7), ("fastvec", 7)]
    assert [r["seed"] for r in row["puffer_seeds"]] == [5, 6, 7] and row["ratio"] == pytest.approx(1.213 / 0.9, 1e-3)
