"""The CPU backend's helpers that need no build: the compiler it picks from CC, what a failed compile's
message keeps (the first errors, the env's directory left off, the contract's missing names), the
#include guard on file names, the Gymnasium block's layout, and get_state/set_state's index and value checks."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from fastvec.native import cpu
from fastvec.native.spaces import EnvSpaces


def test_cc_is_split_as_a_shell_would_and_must_name_a_program(monkeypatch):
    """CC is a command line split as a shell would; its first word must be a program on PATH, and the error
    names that word."""
    monkeypatch.setenv("CC", "  gcc -O0  ")
    assert cpu.find_compiler() == ("gcc", "-O0")
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(cpu.CompileError, match=r"CC='/nonexistent/cc': '/nonexistent/cc' is not an executable"):
        cpu.find_compiler()
    monkeypatch.setenv("CC", "ccache-missing gcc -O2")  # the program named is the first word, not the whole line
    with pytest.raises(cpu.CompileError, match=r"CC='ccache-missing gcc -O2': 'ccache-missing' is not an executable"):
        cpu.find_compiler()
    monkeypatch.setenv("CC", "gcc 'unclosed")
    with pytest.raises(cpu.CompileError, match="cannot be split into words"):
        cpu.find_compiler()
    monkeypatch.setenv("CC", "   ")
    assert cpu.find_compiler()[0] in ("cc", "gcc", "clang")
    monkeypatch.delenv("CC")
    assert cpu.find_compiler()[0] in ("cc", "gcc", "clang")


def test_a_compile_failure_keeps_the_first_errors_without_the_envs_directory():
    out = ("/home/u/envs/my_env.h: In function 'env_step':\n"
           "/home/u/envs/my_env.h:12:5: error: 'x' undeclared (first use in this function)\n"
           "/home/u/envs/my_env.h:14: error: expected ';'\n"
           "/home/u/envs/my_env.h:20:1: fatal error: missing.h: No such file\n")
    assert cpu.first_errors(out, Path("/home/u/envs")) == [
        "my_env.h:12:5: error: 'x' undeclared (first use in this function)", "my_env.h:14: error: expected ';'",
        "my_env.h:20:1: fatal error: missing.h: No such file"]
    assert cpu.first_errors(out)[0].startswith("/home/u/envs/my_env.h:12:5")
    linker = "/usr/bin/ld: warning: x\ncollect2: error: ld returned 1 exit status\nmore error text\n"
    assert cpu.first_errors(linker) == ["collect2: error: ld returned 1 exit status"]
    assert cpu.first_errors("something odd\nsecond line\n") == ["something odd"]


def test_a_compile_failures_message_shows_three_errors_counts_the_rest_and_keeps_the_full_log(monkeypatch):
    import subprocess

    proc = subprocess.CompletedProcess(["cc"], 1, "", "  x.h:1: error: a\nx.h:2: error: b\n  ")
    errors = ["x.h:1: error: a", "x.h:2: error: b", "x.h:3: error: c", "x.h:4: error: d", "x.h:5: error: e"]
    monkeypatch.delenv("FASTVEC_BUILD_LOG", raising=False)
    err = cpu.compile_failure("building my_env.h", ["cc", "-O2", "my env.h"], proc, errors, 5)
    assert str(err) == ("building my_env.h failed:\n  x.h:1: error: a\n  x.h:2: error: b\n  x.h:3: error: c\n"
                        "  (2 more errors)\n(the compiler's full output: the error's .log, or FASTVEC_BUILD_LOG=1 "
                        "to print it)")
    assert err.log == "$ cc -O2 'my env.h'\n(exit 1)\nx.h:1: error: a\nx.h:2: error: b"
    err = cpu.compile_failure("building my_env.h", ["cc"], proc, errors[:3], 3, tool="nvcc")
    assert "more errors" not in str(err) and "(nvcc's full output" in str(err)
    assert str(cpu.compile_failure("linking", ["cc"], proc, [], 0)).startswith("linking failed:\n  exit 1\n")
    monkeypatch.setenv("FASTVEC_BUILD_LOG", "1")
    err = cpu.compile_failure("building my_env.h", ["cc"], proc, errors[:1], 1)
    assert str(err) == "building my_env.h failed:\n  x.h:1: error: a\n" + err.log


def test_the_contracts_missing_names_come_in_contract_order_and_a_missing_size_hides_its_followers():
    gcc = ("x.h:3: error: implicit declaration of function 'env_step'\n"
           "x.h:4: error: implicit declaration of function 'env_reset'\n")
    assert cpu.missing_names(gcc) == [n for n in cpu.CONTRACT if n in ("env_step", "env_reset")]
    clang = "x.h:1: error: use of undeclared identifier 'OBS_SIZE'\nx.h:9: error: call to undeclared function 'env_step'"
    assert cpu.missing_names(clang) == ["OBS_SIZE"]
    assert cpu.missing_names("'NUM_ACTIONS' undeclared here") == ["NUM_ACTIONS"]
    assert cpu.missing_names("undefined symbol: env_step") == ["env_step"]
    assert cpu.missing_names("error: 'foo' undeclared") == []
    err = cpu.contract_error("my_env.h", RuntimeError("unknown type name 'State'"))
    assert isinstance(err, cpu.CompileError) and str(err).startswith("State not defined in my_env.h")
    assert cpu.contract_error("my_env.h", RuntimeError("error: expected ';'")) is None


@pytest.mark.parametrize("name", ['a"b.h', "a\\b.h", "a\nb.h", "a\x7fb.h"])
def test_a_file_name_that_could_end_an_include_line_is_refused(name, tmp_path):
    with pytest.raises(ValueError, match="cannot be written into an #include"):
        cpu.include_name(tmp_path / name)
    with pytest.raises(ValueError):
        cpu.driver_source(tmp_path / name)


def test_the_driver_source_includes_the_env_then_the_batch_layer(tmp_path):
    assert cpu.driver_source() == '#include "batch.h"\n'
    assert cpu.driver_source(tmp_path / "my env.h") == f'#include "{tmp_path}/my env.h"\n#include "batch.h"\n'


def test_the_gymnasium_blocks_layout_packs_each_array_after_the_last():
    size, fields = cpu.gym_out_layout(3, 2)
    assert size == (20 + 8) * 3
    assert fields == {"rewards": (np.float64, 3, 0), "episode_return": (np.float32, 3, 24),
                      "episode_length": (np.int32, 3, 36), "stats": (np.float32, 6, 48), "flags": (np.bool_, 12, 72)}
    end = max(offset + np.dtype(dtype).itemsize * count for dtype, count, offset in fields.values())
    assert end == size
    assert cpu.gym_obs_offset(3, 2) == 128 and cpu.gym_obs_offset(16, 0) == 320  # the next 64-byte boundary
    assert cpu.gym_obs_offset(32, 0) == 640


def test_state_indices_take_ints_count_negatives_from_the_end_and_name_a_bad_one():
    np.testing.assert_array_equal(cpu.state_indices(None, 3), [0, 1, 2])
    np.testing.assert_array_equal(cpu.state_indices([2, -1, -3, 0], 3), [2, 2, 0, 0])
    np.testing.assert_array_equal(cpu.state_indices(1, 3), [1])
    np.testing.assert_array_equal(cpu.state_indices(np.array([1], np.uint8), 3), [1])
    for bad in (3, -4, [0, 5]):
        with pytest.raises(IndexError, match="out of range for 3 envs"):
            cpu.state_indices(bad, 3)
    for bad in ([True, False], [0.5], [[0, 1]], "0"):
        with pytest.raises(TypeError, match="indices must be an int or a 1-D list of ints"):
            cpu.state_indices(bad, 3)


def spaces(state_size):
    return EnvSpaces(name="box_point", action_kind="box", nvec=np.zeros(2, np.int64),
                     action_low=np.zeros(2, np.float32), action_high=np.ones(2, np.float32), obs_shape=(3,),
                     obs_dtype=np.dtype(np.float32), obs_low=np.zeros(3, np.float32),
                     obs_high=np.ones(3, np.float32), state_size=state_size)


def test_state_values_are_one_row_per_env_and_a_single_envs_row_may_come_flat():
    sp = spaces(2)
    out = cpu.state_values([[1, 2], [3, 4]], 2, sp)
    assert out.dtype == np.float64 and out.flags.c_contiguous and out.tolist() == [[1, 2], [3, 4]]
    assert cpu.state_values([5, 6], 1, sp).tolist() == [[5, 6]]
    with pytest.raises(ValueError, match=r"state values for 2 env\(s\) of box_point must have shape \(2, 2\)"):
        cpu.state_values([5, 6], 2, sp)
    with pytest.raises(ValueError, match=r"shape \(1, 2\), got \(3,\)"):
        cpu.state_values([1, 2, 3], 1, sp)
    cpu.require_state_access(sp)
    cpu.require_state_access(spaces(0))
    with pytest.raises(AttributeError, match="box_point has no state access"):
        cpu.require_state_access(spaces(-1))


def test_seeds_of_any_integer_dtype_seed_alike_and_negative_ones_are_refused():
    env = cpu.load(Path(__file__).resolve().parents[1] / "envs" / "random_walk.h", ())
    a, b = cpu.CpuBatch(env, 3, 0, None), cpu.CpuBatch(env, 3, 0, None)
    a.reset(np.array([5, 6, 7], np.int64), None)
    b.reset(np.array([5, 6, 7], np.uint64), None)
    for _ in range(3):
        actions = np.ones((3, env.num_agents, 1), np.int64)
        a.step(actions)
        b.step(actions)
    np.testing.assert_array_equal(a.obs, b.obs)
    for bad in (np.array([1, -1, 2]), np.array([0.5, 1.0, 2.0])):
        with pytest.raises(ValueError, match="seeds must be non-negative integers"):
            a.reset(bad, None)


def test_the_compiler_probes_print_nothing_and_a_refused_flag_is_left_out(capfd, tmp_path):
    cc = cpu.find_compiler()
    simd = cpu.simd_flags.__wrapped__(cc)
    version = subprocess.run([*cc, "--version"], capture_output=True, text=True).stdout
    if "Free Software Foundation" in version or "clang" in version:  # gcc >= 4.9 and clang >= 3.7 take it
        assert simd == ["-fopenmp-simd"]  # so batch.h's `omp simd` loops vectorise
    cpu._march_native.__wrapped__(cc)
    cpu._compiler_version.__wrapped__(cc)
    picky = tmp_path / "picky-cc"  # a compiler that refuses every flag, loudly
    picky.write_text("#!/bin/sh\necho 'picky-cc: unknown option' >&2\necho 'picky-cc 1.0'\nexit 1\n")
    picky.chmod(0o755)
    assert cpu.simd_flags.__wrapped__((str(picky),)) == []
    assert cpu._march_native.__wrapped__((str(picky),)) == ([], "")
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_the_native_target_switch_is_read_at_each_build_after_the_compiler_was_asked(monkeypatch):
    """FASTVEC_NATIVE_ARCH=0 set after a build in the same process still builds for the default target: the
    compiler's answer is cached, the variable is not."""
    cc = cpu.find_compiler()
    monkeypatch.delenv("FASTVEC_NATIVE_ARCH", raising=False)
    native = cpu.native_arch(cc)
    monkeypatch.setenv("FASTVEC_NATIVE_ARCH", "0")
    assert cpu.native_arch(cc) == ([], "")
    monkeypatch.delenv("FASTVEC_NATIVE_ARCH")
    assert cpu.native_arch(cc) == native
