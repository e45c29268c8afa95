"""Acrobot's rgb_array frame, pixel by pixel against the drawing computed here by hand: the links are cyan capsules
and the joints yellow disks of radius 0.1 link (scale 500 / 4.4 px a link length, the fixed joint at the centre,
y down the image so that theta1 = 0 hangs straight down), a pixel painted when its centre lies within the radius; the
target height a black line one link above the fixed joint, on a white field."""

import gymnasium as gym
import numpy as np
import pytest

import fastvec  # noqa: F401  (registers fastvec/...)

SIZE = 500
SCALE = SIZE / 4.4
RADIUS = 0.1 * SCALE
CYAN, YELLOW = (0, 204, 204), (204, 204, 0)


def within(px, py, x0, y0, x1, y1):
    """d^2 - RADIUS^2 for every pixel centre (px, py) against the segment (x0, y0)-(x1, y1)."""
    dx, dy = x1 - x0, y1 - y0
    ex, ey = px - x0, py - y0
    len2 = dx * dx + dy * dy
    t = np.clip((ex * dx + ey * dy) / len2, 0.0, 1.0) if len2 > 0 else 0.0
    return (ex - t * dx) ** 2 + (ey - t * dy) ** 2 - RADIUS**2


@pytest.mark.parametrize("theta1, theta2", [(0.0, 0.0), (0.7, -1.9), (-2.4, 0.3), (np.pi / 2, np.pi / 2)])
def test_links_and_joints_are_painted_where_hand_computed(theta1, theta2):
    env = gym.make("fastvec/Acrobot", render_mode="rgb_array")
    env.reset(seed=0)
    env.unwrapped.state = np.array([theta1, theta2, 0.0, 0.0])
    frame = env.render()
    assert frame.shape == (SIZE, SIZE, 3)
    c = SIZE / 2
    x1, y1 = c + np.sin(theta1) * SCALE, c + np.cos(theta1) * SCALE
    x2, y2 = x1 + np.sin(theta1 + theta2) * SCALE, y1 + np.cos(theta1 + theta2) * SCALE
    py, px = np.mgrid[0:SIZE, 0:SIZE] + 0.5  # pixel centres, image coordinates
    joints = np.minimum(within(px, py, c, c, c, c), within(px, py, x1, y1, x1, y1))
    links = np.minimum(within(px, py, c, c, x1, y1), within(px, py, x1, y1, x2, y2))
    sure = (np.abs(joints) > 1e-6) & (np.abs(links) > 1e-6)  # pixels on an edge itself may go either way
    yellow, cyan = (frame == YELLOW).all(axis=2), (frame == CYAN).all(axis=2)
    np.testing.assert_array_equal(yellow[sure], (joints < 0)[sure])
    np.testing.assert_array_equal(cyan[sure], ((links < 0) & (joints >= 0))[sure])
    assert yellow.sum() > 2 * 300 and cyan.sum() > 2 * RADIUS * SCALE  # two disks, two links
    # the rest white but for the target height, one link above the fixed joint: a black line across the frame
    black = (frame == 0).all(axis=2)
    assert ((frame == 255).all(axis=2) | black | yellow | cyan).all()
    line = int(c - SCALE)
    np.testing.assert_array_equal(np.flatnonzero(black.any(axis=1)), [line])
    np.testing.assert_array_equal(black[line], ~yellow[line] & ~cyan[line])
