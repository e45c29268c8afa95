"""mpe_common.h's world step (forces, contact forces, integration) for any mix of movable and immovable, colliding
and passing entities, bit for bit against mpe2's own World.step: entities pushed only by contacts (a movable
landmark, hit by nothing else first) start from a force of 0, as mpe2's None + force does."""

import ctypes
import itertools

import numpy as np
import pytest

pytest.importorskip("mpe2", reason="the MPE oracle is mpe2 (pip install mpe2)")
from mpe2._mpe_utils.core import Agent, Landmark, World  # noqa: E402
from mpe_oracle import needs_glibc_fma  # noqa: E402

SOURCE = r"""
#include "glibc_exp.h"
#define OBS_SIZE 1
#define MPE_AGENTS 2
#define MPE_LANDMARKS 2
#define MPE_DIM_C 0
#define MPE_EXTRA_STATE 0
#define MPE_NUM_ACTIONS 5
static int movable[4], collide[4];
static const double sizes[4] = {0.05, 0.075, 0.1, 0.08};
FV_FN double mpe_size(int e) { return sizes[e]; }
FV_FN int mpe_collide(int e) { return collide[e]; }
FV_FN int mpe_movable(int e) { return movable[e]; }
FV_FN int mpe_silent(int a) { (void)a; return 1; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"
/* One world step of the 4 entities (pos, vel: 4 x 2 each, updated in place), agent a's force u[a]. */
void step(const int* mov, const int* col, double* pos, double* vel, const double* u) {
    MpeWorld w;
    MpeAction act[MPE_AGENTS];
    for (int e = 0; e < 4; e++) {
        movable[e] = mov[e], collide[e] = col[e];
        for (int k = 0; k < 2; k++) w.pos[e][k] = pos[2 * e + k], w.vel[e][k] = vel[2 * e + k];
    }
    for (int a = 0; a < MPE_AGENTS; a++) act[a].u[0] = u[2 * a], act[a].u[1] = u[2 * a + 1], act[a].c[0] = 0.0;
    mpe_world_step(&w, act);
    for (int e = 0; e < 4; e++)
        for (int k = 0; k < 2; k++) pos[2 * e + k] = w.pos[e][k], vel[2 * e + k] = w.vel[e][k];
}
"""

SIZES = [0.05, 0.075, 0.1, 0.08]


@pytest.fixture(scope="module")
def lib(c_shim):
    return c_shim(SOURCE)


def mpe2_step(movable, collide, pos, vel, u):
    world = World()
    world.agents = [Agent() for _ in range(2)]
    world.landmarks = [Landmark() for _ in range(2)]
    for e, entity in enumerate(world.entities):
        entity.size, entity.movable, entity.collide = SIZES[e], bool(movable[e]), bool(collide[e])
        entity.state.p_pos, entity.state.p_vel = pos[e].copy(), vel[e].copy()
    for a, agent in enumerate(world.agents):
        agent.silent, agent.u_noise = True, None
        agent.action.u, agent.action.c = u[a].copy(), np.zeros(0)
        agent.state.c = np.zeros(0)
    world.step()
    return (np.array([e.state.p_pos for e in world.entities]), np.array([e.state.p_vel for e in world.entities]))


@needs_glibc_fma
def test_contact_forces_on_every_mix_of_movable_and_colliding_entities_are_mpe2s(lib):
    rng = np.random.default_rng(4)
    pos = np.array([[0.0, 0.0], [0.04, 0.03], [0.03, -0.04], [-0.04, 0.02]])  # every pair overlapping
    checked = 0
    for movable in itertools.product([0, 1], repeat=4):
        for collide in ([1, 1, 1, 1], [0, 1, 1, 1], [1, 0, 1, 1], [0, 0, 1, 1], [1, 1, 0, 1]):
            p, v = pos + rng.uniform(-0.01, 0.01, (4, 2)), rng.uniform(-0.3, 0.3, (4, 2))
            u = rng.uniform(-1.0, 1.0, (2, 2))
            got_p, got_v = p.copy(), v.copy()
            ptr = ctypes.POINTER(ctypes.c_double)
            lib.step((ctypes.c_int * 4)(*movable), (ctypes.c_int * 4)(*collide), got_p.ctypes.data_as(ptr),
                     got_v.ctypes.data_as(ptr), np.ascontiguousarray(u).ctypes.data_as(ptr))
            want_p, want_v = mpe2_step(movable, collide, p, v, u)
            case = f"movable={movable} collide={collide}"
            np.testing.assert_array_equal(got_p.view(np.uint64), want_p.view(np.uint64), err_msg=case)
            np.testing.assert_array_equal(got_v.view(np.uint64), want_v.view(np.uint64), err_msg=case)
            checked += 1
    assert checked == 16 * 5
