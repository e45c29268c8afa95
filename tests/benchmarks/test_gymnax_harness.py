"""benchmarks/env_steps.py's gymnax harness never times a compile: it warms a jitted function until its jit cache
stops growing (a state whose types change after the first step compiles twice) and refuses a timing during which
the cache grew; on gymnax's Pendulum, the env whose reset and step states differ in type, on the CPU."""

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(scope="module")
def env_steps(load_benchmark):
    return load_benchmark("env_steps")


def test_warm_up_continues_until_the_state_types_settle(env_steps):
    # reset's weakly typed 0.0 becomes a strong float32 after one call: the second call compiles again
    run = jax.jit(lambda carry: ((carry[0] + jnp.float32(1.0), carry[1]), carry[0]))
    carry, calls = env_steps.warm_until_cached(run, (jnp.array(0.0), jnp.int32(1)))
    assert calls == 3 and run._cache_size() == 2
    calls, elapsed = env_steps.timed_calls(run, carry, seconds=0.0, min_calls=5)
    assert calls == 5 and elapsed > 0 and run._cache_size() == 2


def test_a_type_stable_function_is_warm_after_two_calls(env_steps):
    run = jax.jit(lambda carry: (carry + 1, carry))
    _, calls = env_steps.warm_until_cached(run, jnp.zeros(3, jnp.int32))
    assert calls == 2 and run._cache_size() == 1


def test_a_function_that_always_compiles_is_refused(env_steps):
    run = jax.jit(lambda carry: (jnp.concatenate([carry, carry[:1]]), carry))  # one more element each call
    with pytest.raises(RuntimeError, match="still compiles after 4 calls"):
        env_steps.warm_until_cached(run, jnp.zeros(1), max_calls=4)


def test_a_compile_while_timing_is_refused(env_steps):
    run = jax.jit(lambda carry: (jnp.concatenate([carry, carry[:1]]), carry))
    run(jnp.zeros(1))  # warm for the first shape only: the timed calls meet new shapes
    with pytest.raises(RuntimeError, match="compiled while being timed"):
        env_steps.timed_calls(run, jnp.zeros(1), seconds=0.0, min_calls=3)


def test_gymnax_pendulum_is_timed_warm(env_steps):
    env_steps._flax_struct_shim()  # gymnax needs only flax.struct, which the harness provides where flax is missing
    pytest.importorskip("gymnax")
    m = env_steps.gymnax_measure("Pendulum-v1", num_envs=4, steps=3, seconds=0.05)
    # Pendulum's reset makes a weakly typed last_u: the harness needs a third call to see the cache settle
    assert m["warmup_calls"] == 3 and m["compiles"] == 2 and m["steps_per_second"] > 0
    assert m["state_bytes_per_env"] == 16  # theta, theta_dot, last_u, time: four 4-byte fields
