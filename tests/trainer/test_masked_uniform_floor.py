"""The masked categorical's sampling floor and masked logit (reference.masked_uniforms, reference.MASKED_LOGIT)
against the constants the CUDA kernels define in teams.cu, and what the floor does to a draw at a zero uniform."""

from __future__ import annotations

import re

import numpy as np

from fastvec.native import NATIVE_DIR
from fastvec.trainer import reference as ref
from fastvec.trainer.streams import policy_uniforms

TEAMS_CU = NATIVE_DIR.parent / "trainer" / "cuda" / "teams.cu"


def _cu_define(name: str) -> np.float32:
    """A float `#define name <literal>f` of teams.cu, as the kernel's float32."""
    found = re.search(rf"^#define {name} \(?(-?[0-9.e+-]+)f\)?", TEAMS_CU.read_text(), re.MULTILINE)
    assert found, f"teams.cu defines no {name}"
    return np.float32(float(found.group(1)))


def test_a_zero_uniform_is_raised_to_the_kernels_floor_of_2_to_the_minus_25():
    """masked_uniforms turns a 0 into exactly 2^-25, half the step 2^-24 of the counter uniforms, and the kernel's
    MASKED_UNIFORM_MIN (teams.cu's fmaxf floor) is that same float32."""
    floor = _cu_define("MASKED_UNIFORM_MIN")
    assert floor == np.float32(2.0 ** -25) == np.float32(1 / 33554432)
    out = ref.masked_uniforms(np.zeros(3, np.float32))
    assert out.dtype == np.float32
    assert (out == floor).all() and (out == np.float32(2.0 ** -25)).all()


def test_every_nonzero_counter_uniform_passes_the_floor_unchanged():
    """The floor lies below the smallest nonzero uniform the counter streams draw (2^-24, one step), so only a
    zero changes: 2^-24, 2^-23 and a stream's own draws come back bit for bit."""
    step = np.float32(1.0 / 16777216.0)
    u = np.concatenate([np.array([step, 2 * step, 3 * step, 0.5, 1 - step], np.float32),
                        policy_uniforms(12345, 4096, 7)])
    u = u[u > 0]
    assert np.array_equal(ref.masked_uniforms(u), u)
    assert ref.masked_uniforms(np.array([0.0, step], np.float32)).tolist() == [2.0 ** -25, 2.0 ** -24]


def test_at_a_zero_uniform_the_first_available_action_is_drawn_exactly_when_its_probability_passes_the_floor():
    """Inverse-CDF sampling at u = 0 raised to 2^-25 (2.98e-8): the first available action (2 of 2..3) is drawn
    when its probability is above the floor (3.7e-8; a floor of 2^-24 = 5.96e-8 would pass over it) and passed over
    when below (2e-8; a floor of 2^-26 = 1.49e-8 would draw it). Actions 0, 1 and 4.. are masked out."""
    a = 6
    mask = np.zeros((4, a), np.uint8)
    mask[:, 2:4] = 1
    logits = np.zeros((4, a), np.float32)
    logits[:, 2] = np.log([3.7e-8, 2e-8, 5.0e-8, 1.7e-8])
    probs = np.exp(np.float64(logits[:, 2])) / (1 + np.exp(np.float64(logits[:, 2])))
    want = np.where(probs > 2.0 ** -25, 2, 3)  # the hand computation: cdf(2) < u * total passes over it
    assert want.tolist() == [2, 3, 2, 3]
    actions, logp = ref.sample_actions(ref.mask_logits(logits, mask), ref.masked_uniforms(np.zeros(4, np.float32)))
    assert actions.tolist() == want.tolist()
    assert np.isfinite(logp).all()
    # without the floor a zero uniform picks action 0, which is masked out
    assert (ref.sample_actions(ref.mask_logits(logits, mask), np.zeros(4, np.float32))[0] == 0).all()


def test_the_masked_logit_is_the_kernels_and_masks_to_probability_zero():
    """MASKED_LOGIT is teams.cu's (-1e10, JaxMARL's), and a masked action's probability is exactly 0 in float32."""
    assert _cu_define("MASKED_LOGIT") == np.float32(ref.MASKED_LOGIT) == np.float32(-1e10)
    logits = np.array([[3.0, 80.0, -5.0]], np.float32)
    masked = ref.mask_logits(logits, np.array([[1, 0, 1]], np.uint8))
    assert masked.dtype == np.float32 and masked[0, 1] == np.float32(-1e10)
    p = np.exp(ref.log_softmax(masked))
    assert p[0, 1] == 0.0 and abs(p[0].sum() - 1) < 1e-6
