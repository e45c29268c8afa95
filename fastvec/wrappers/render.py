"""Rendering for the Gymnasium and PettingZoo faces: a lazy sequence of a batch's rgb_array frames, and
render_mode="human"'s pygame window."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium.error import DependencyNotInstalled


class HumanWindow:
    """render_mode="human": a pygame window showing the env's rgb_array frame at the env's render_fps, as
    Gymnasium's own envs draw theirs. pygame is imported only here (`pip install 'fastvec[render]'`)."""

    def __init__(self, fps: int):
        try:
            import pygame
        except ImportError as e:
            raise DependencyNotInstalled("render_mode='human' draws with pygame, which is not installed: "
                                         "pip install 'fastvec[render]' (or pip install pygame)") from e
        self.pygame, self.fps, self.screen, self.clock = pygame, fps, None, None

    def show(self, frame: np.ndarray) -> None:
        pg = self.pygame
        if self.screen is None:  # the window opens at the first frame, as in Gymnasium's envs
            pg.display.init()
            self.screen, self.clock = pg.display.set_mode(frame.shape[1::-1]), pg.time.Clock()
        self.screen.blit(pg.surfarray.make_surface(frame.swapaxes(0, 1)), (0, 0))
        pg.event.pump()
        self.clock.tick(self.fps)
        pg.display.flip()

    def close(self) -> None:
        if self.screen is not None:
            self.pygame.display.quit()
            self.screen = None


class FrameSequence(Sequence):
    """The frames of every env as a lazy sequence: env i is rendered only when frames[i] is read,
    so RecordVideo(record_first_only=True) on 4096 envs renders one frame per step."""

    def __init__(self, render_one, num_envs: int):
        self._render_one, self._num_envs = render_one, num_envs

    def __len__(self) -> int:
        return self._num_envs

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._num_envs))]
        if not -self._num_envs <= i < self._num_envs:
            raise IndexError(f"env index {i} out of range for {self._num_envs} envs")
        return self._render_one(i % self._num_envs)
