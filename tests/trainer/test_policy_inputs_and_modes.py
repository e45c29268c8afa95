"""What the trainer's policy makes of an env: byte observations scaled to [0, 1] by their declared bound before
the encoder (float ones untouched), and the deterministic action --eval plays: the argmax of each categorical,
the Box Gaussian's mean (not a sample), with its log-probability."""

from pathlib import Path

import numpy as np
import pytest

from fastvec.native import cpu
from fastvec.trainer import heads
from fastvec.trainer.config import load_config
from fastvec.trainer import reference as ref
from fastvec.trainer.resolve import make_policy_spec

ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"


@pytest.mark.parametrize("env_file,scale", [("random_walk.h", 1 / 255),  # bytes, no bound declared: 0..255
                                            ("image_obs.h", 1.0),  # bytes declared 0..1
                                            ("box_point.h", 1.0), ("counting.h", 1.0)])  # floats
def test_byte_observations_are_scaled_by_their_declared_bound(env_file, scale):
    spaces = cpu.load(ENVS_DIR / env_file, ()).spaces
    spec = make_policy_spec(load_config("cartpole"), int(np.prod(spaces.obs_shape)), spaces.num_actions, spaces)
    assert spec.obs_scale == scale


def test_the_encoder_sees_bytes_over_their_bound_and_floats_as_they_are():
    spec = ref.PolicySpec(obs_size=3, num_actions=2, kind="mlp", hidden=4, layers=1, obs_scale=1 / 255)
    params = {"enc.w": np.zeros((4, 3), np.float32)}
    x = ref.encoder_input(spec, params, np.array([[0, 51, 255]], np.uint8))
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, [[0.0, 0.2, 1.0]], rtol=1e-6)
    floats = np.array([[0.5, -3.0, 7.0]], np.float32)
    plain = ref.PolicySpec(obs_size=3, num_actions=2, kind="mlp", hidden=4, layers=1)
    assert ref.encoder_input(plain, params, floats) is floats  # no copy, no change


def test_a_box_policys_deterministic_action_is_its_mean():
    spec = ref.PolicySpec(obs_size=2, num_actions=0, kind="mlp", hidden=8, layers=1, action_kind="box",
                          action_dims=2)
    dist = np.array([[0.3, -1.2, np.log(0.5), np.log(2.0)], [2.0, 0.0, 0.0, -1.0]], np.float32)
    mode = heads.head_mode(spec, dist)
    np.testing.assert_array_equal(mode, dist[:, :2])
    mode[0, 0] = 99.0
    assert dist[0, 0] == np.float32(0.3)  # a copy: the logits stay as they were
    layout = ref.FlatLayout(ref.param_table(spec))
    params = layout.views(ref.init_params(spec, np.random.default_rng(0)))
    obs = np.array([[0.1, 0.2], [-0.5, 1.0], [0.0, 0.0]], np.float32)
    state = np.zeros((spec.state_layers, 3, spec.hidden), np.float32)
    starts = np.ones(3, np.float32)
    logits = ref.policy_forward(spec, params, obs[None], starts[None], state)[0][0]
    a1, logp, _, _ = ref.policy_act(spec, params, obs, starts, state, np.random.default_rng(1), deterministic=True)
    a2, _, _, _ = ref.policy_act(spec, params, obs, starts, state, np.random.default_rng(2), deterministic=True)
    np.testing.assert_array_equal(a1, logits[:, :2])
    np.testing.assert_array_equal(a1, a2)  # the rng plays no part
    std = np.exp(logits[:, 2:].astype(np.float64))
    expected = (-np.log(std) - 0.5 * np.log(2 * np.pi)).sum(-1)  # the Gaussian's density at its mean
    np.testing.assert_allclose(logp, expected, rtol=1e-5, atol=1e-5)
    sampled, _, _, _ = ref.policy_act(spec, params, obs, starts, state, np.random.default_rng(1))
    assert not np.array_equal(sampled, a1)


def test_categorical_modes_are_the_argmax_of_each_dimension():
    discrete = ref.PolicySpec(obs_size=2, num_actions=3, kind="mlp", hidden=4, layers=1)
    np.testing.assert_array_equal(heads.head_mode(discrete, np.array([[0.1, 2.0, -1.0], [5.0, 0.0, 4.9]])), [1, 0])
    multi = ref.PolicySpec(obs_size=2, num_actions=0, kind="mlp", hidden=4, layers=1,
                           action_kind="multi_discrete", action_nvec=(2, 3))
    dist = np.array([[0.0, 1.0, 3.0, -1.0, 2.0], [1.0, 0.0, -1.0, 0.0, 4.0]])
    np.testing.assert_array_equal(heads.head_mode(multi, dist), [[1, 0], [0, 2]])


def test_modes_are_taken_over_the_last_axis_whatever_the_leading_shape():
    """head_mode of a (T, R, Y) stack is each (R, Y) slice's, and of one row (Y,) its own, for every kind: the
    argmax runs over the actions' axis, never over the rows'."""
    rng = np.random.default_rng(3)
    specs = [ref.PolicySpec(obs_size=2, num_actions=4, kind="mlp", hidden=4, layers=1),
             ref.PolicySpec(obs_size=2, num_actions=0, kind="mlp", hidden=4, layers=1,
                            action_kind="multi_discrete", action_nvec=(3, 2)),
             ref.PolicySpec(obs_size=2, num_actions=0, kind="mlp", hidden=4, layers=1, action_kind="box",
                            action_dims=2)]
    for spec in specs:
        dist = rng.standard_normal((3, 5, 4 if spec.action_kind != "multi_discrete" else 5)).astype(np.float32)
        stacked = heads.head_mode(spec, dist)
        per_slice = np.stack([heads.head_mode(spec, dist[t]) for t in range(3)])
        np.testing.assert_array_equal(stacked, per_slice)
        assert stacked.shape == (3, 5, *spec.action_shape)
        np.testing.assert_array_equal(heads.head_mode(spec, dist[1, 2]), per_slice[1, 2])
    discrete_rows = rng.standard_normal((3, 5, 4))
    np.testing.assert_array_equal(heads.head_mode(specs[0], discrete_rows), discrete_rows.argmax(axis=2))
