"""Continuous MPE actions at and past the Box(0, 1)'s edges, against mpe2 bit for bit: -0.0 (inside the box; mpe2 adds
its 0.0 noise, which turns an utterance of -0.0 into +0.0) and finite values below 0 or above 1 (clipped)."""

import mpe_oracle
import pytest
from test_mpe_oracle import SCENARIOS

# Scenarios whose agents observe an utterance (the listener the speaker's, each agent the other's).
SPEAKING = {"speaker_listener": "simple_speaker_listener", "two_speakers": "simple_reference"}


@mpe_oracle.needs_glibc_fma
@pytest.mark.parametrize("name", list(SPEAKING))
def test_negative_zero_actions_give_mpe2s_observations(name, monkeypatch):
    sample = mpe_oracle.sample_actions

    def with_negative_zeros(*args):
        actions = sample(*args)
        actions[actions == 0] = -0.0  # every 0 in an agent's action (its exact 0s and its padding) as -0.0
        return actions

    monkeypatch.setattr(mpe_oracle, "sample_actions", with_negative_zeros)
    assert mpe_oracle.play(SCENARIOS[SPEAKING[name]], True, 4, seed=73100) == 4 * 25


@mpe_oracle.needs_glibc_fma
@pytest.mark.parametrize("name", list(SPEAKING))
def test_actions_outside_the_box_are_clipped_as_mpe2s_public_env_clips_them(name, monkeypatch):
    """Finite continuous actions below 0 and above 1 (accepted, fastvec.h: the env clips them): moves and
    utterances as mpe2's parallel_env gives them after its clip to [0, 1], bit for bit."""
    sample = mpe_oracle.sample_actions

    def spread(*args):
        actions = sample(*args)
        return (actions * 3 - 1).astype(actions.dtype)  # [0, 1] to [-1, 2]: a third below 0, a third above 1

    monkeypatch.setattr(mpe_oracle, "sample_actions", spread)
    assert mpe_oracle.play(SCENARIOS[SPEAKING[name]], True, 4, seed=73200, public=True) == 4 * 25
