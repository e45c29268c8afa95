"""Integration edges (issue 20): Python's standard TypeError for an unknown keyword (TorchRL's GymEnv drops
`frameskip` by matching its wording), TorchRL's GymEnv on fastvec ids, render_mode="human" through pygame
(imported only when asked for; a clear error without it) and Gymnasium's reward_threshold in the specs.
Human rendering runs on SDL's dummy video driver, so no display is needed."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import DependencyNotInstalled

import fastvec
from fastvec.pettingzoo import env as aec_env
from fastvec.pettingzoo import parallel_env, vector_env

STANDARD = r"^{}\(\) got an unexpected keyword argument 'foo'"


# ---------------------------------------------------------------------------------- unknown keywords
@pytest.mark.parametrize("make, func", [
    (lambda: gym.make("fastvec/CartPole", foo=1), "CartPoleEnv.__init__"),
    (lambda: gym.make("fastvec/Pong", foo=1), "PongEnv.__init__"),
    (lambda: gym.make_vec("fastvec/CartPole", 2, foo=1), "CartPoleVectorEnv.__init__"),
    (lambda: gym.make_vec("fastvec/Breakout", 2, foo=1), "BreakoutVectorEnv.__init__"),
    (lambda: fastvec.make_vec("Pong", 2, foo=1), "PongVectorEnv.__init__"),
    (lambda: parallel_env("CartPole", foo=1), "NativeParallelEnv.__init__"),
    (lambda: aec_env("Pong", foo=1), "NativeParallelEnv.__init__"),
    (lambda: vector_env("Breakout", 2, foo=1), "MultiAgentVectorEnv.__init__"),
])
def test_unknown_keyword_is_pythons_own_type_error(make, func):
    """The wording Python gives a function called with a keyword it lacks, so wrappers that test for it
    (TorchRL's GymEnv, Gymnasium's make) work; Gymnasium's make appends its own context after it. Before,
    the message was "unknown keyword(s) ['foo'] for fastvec env ...", which no wrapper recognises."""
    with pytest.raises(TypeError, match=STANDARD.format(func.replace(".", r"\."))) as raised:
        make()
    assert "fastvec's" in str(raised.value)  # followed by the keywords the env takes


def test_known_keywords_still_work():
    assert gym.make_vec("fastvec/Breakout", 2, frameskip=2).params == {"frameskip": 2}
    assert gym.make("fastvec/Pong", opponent="bot", difficulty=3, points=5).unwrapped.vec.params["points"] == 5
    assert parallel_env("Pong", opponent="bot", difficulty=1).possible_agents == ["left"]
    with pytest.raises(TypeError, match="pong_bot= is internal"):  # set through opponent='bot', not directly
        gym.make_vec("fastvec/Pong", 2, pong_bot=1)


@pytest.mark.parametrize("env_id", ["fastvec/CartPole", "fastvec/Breakout", "fastvec/Pong"])
def test_torchrl_gym_env_builds_and_rolls_out(env_id):
    """TorchRL's GymEnv(id) calls gym.make(id, frameskip=1) and drops `frameskip` only when the TypeError says
    "unexpected keyword argument 'frameskip'"; before, GymEnv("fastvec/CartPole") raised. Breakout takes a
    frameskip of its own, so there it is the env's parameter."""
    pytest.importorskip("torch")
    pytest.importorskip("torchrl")
    from torchrl.envs import GymEnv

    envs = GymEnv(env_id)
    rollout = envs.rollout(20, break_when_any_done=False)
    assert rollout.batch_size == (20,)
    assert rollout["next", "observation"].shape == (20, gym.spec(env_id).make().observation_space.shape[0])
    assert rollout["next", "reward"].shape == (20, 1)
    envs.close()


# ---------------------------------------------------------------------------------- reward_threshold
def test_reward_threshold_in_specs():
    """Gymnasium's own value where fastvec reproduces a Gymnasium env (CartPole is CartPole-v1); None for
    fastvec's own games. Before, every spec had reward_threshold None."""
    assert gym.spec("fastvec/CartPole").reward_threshold == gym.spec("CartPole-v1").reward_threshold == 475.0
    assert gym.spec("fastvec/CartPole").max_episode_steps == gym.spec("CartPole-v1").max_episode_steps
    assert gym.make("fastvec/CartPole").spec.reward_threshold == 475.0
    assert gym.make_vec("fastvec/CartPole", 2).spec.reward_threshold == 475.0
    assert gym.spec("fastvec/Breakout").reward_threshold is None
    assert gym.spec("fastvec/Pong").reward_threshold is None


# ---------------------------------------------------------------------------------- render_mode="human"
@pytest.fixture
def pygame(monkeypatch):
    pygame = pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    return pygame


def window_pixels(pygame) -> np.ndarray:
    return pygame.surfarray.array3d(pygame.display.get_surface()).swapaxes(0, 1)


@pytest.mark.parametrize("env_id", ["fastvec/CartPole", "fastvec/Breakout", "fastvec/Pong"])
def test_human_render_shows_the_rgb_array_frame(pygame, env_id):
    """As Gymnasium's own envs: reset and step draw into a pygame window at the env's render_fps and
    render() returns None; the window shows exactly the rgb_array frame of the same state."""
    human = gym.make(env_id, render_mode="human")
    frames = gym.make(env_id, render_mode="rgb_array")
    assert "human" in human.metadata["render_modes"] and human.metadata["render_fps"] > 0
    human.reset(seed=3)
    frames.reset(seed=3)
    assert np.array_equal(window_pixels(pygame), frames.render())
    rng = np.random.default_rng(0)
    for _ in range(5):
        a = int(rng.integers(human.action_space.n))
        assert np.array_equal(human.step(a)[0], frames.step(a)[0])
        assert np.array_equal(window_pixels(pygame), frames.render())
    assert human.render() is None
    human.close()
    assert not pygame.display.get_init()  # close() closes the window


def test_human_render_runs_at_render_fps(pygame):
    env = gym.make("fastvec/CartPole", render_mode="human")  # 50 frames per second
    env.reset(seed=0)
    steps = 10
    start = pygame.time.get_ticks()
    for _ in range(steps):
        env.step(0)
    assert pygame.time.get_ticks() - start >= 1000 * (steps - 1) / env.metadata["render_fps"] * 0.9
    env.close()


def test_human_render_in_the_parallel_env(pygame):
    env = parallel_env("Pong", render_mode="human")
    frames = parallel_env("Pong", render_mode="rgb_array")
    env.reset(seed=1)
    frames.reset(seed=1)
    for _ in range(3):
        actions = {a: 1 for a in env.agents}
        env.step(actions)
        frames.step(actions)
        assert np.array_equal(window_pixels(pygame), frames.render())
    assert env.render() is None
    env.close()


def test_vector_envs_refuse_human():
    with pytest.raises(ValueError, match="render_mode='human' is not supported by a vector env"):
        gym.make_vec("fastvec/CartPole", 2, render_mode="human")


def test_human_render_without_pygame_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygame", None)  # `import pygame` now raises ImportError
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'fastvec\[render\]'"):
        gym.make("fastvec/CartPole", render_mode="human")
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'fastvec\[render\]'"):
        parallel_env("Pong", render_mode="human")
    gym.make("fastvec/CartPole", render_mode="rgb_array").reset(seed=0)  # the other modes need no pygame


def test_pygame_is_imported_only_for_human_rendering():
    code = ("import sys, gymnasium as gym, fastvec, fastvec.pettingzoo as fpz\n"
            "e = gym.make('fastvec/CartPole', render_mode='rgb_array'); e.reset(seed=0); e.render()\n"
            "v = gym.make_vec('fastvec/Breakout', 2, render_mode='rgb_array'); v.reset(seed=0); v.render()[0]\n"
            "p = fpz.parallel_env('Pong', render_mode='rgb_array'); p.reset(seed=0); p.render()\n"
            "assert 'pygame' not in sys.modules, 'pygame imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_render_frames_are_a_lazy_sequence_indexed_as_a_list():
    """A vector env's render() reads like a list of its envs' frames (negative indices and slices as a list's, an
    index past either end an IndexError), drawing an env only when its frame is read."""
    from fastvec.wrappers.render import FrameSequence

    drawn = []
    frames = FrameSequence(lambda i: drawn.append(i) or f"frame {i}", 3)
    assert len(frames) == 3 and drawn == []
    listed = ["frame 0", "frame 1", "frame 2"]
    assert frames[-1] == listed[-1] and drawn == [2]  # env 2 alone drawn
    assert frames[-3] == listed[-3] and frames[0] == listed[0]
    assert frames[1:] == listed[1:] and frames[::-1] == listed[::-1] and frames[-2:5] == listed[-2:5]
    assert list(frames) == listed and frames.index("frame 2") == 2
    for bad in (3, -4):
        with pytest.raises(IndexError, match=f"env index {bad} out of range for 3 envs"):
            frames[bad]
