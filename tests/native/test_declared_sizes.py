"""check_declared_sizes: each size a build declares below its least value (a C int past 2**31-1 reads back
negative) is refused naming its env-file constant; each at its least value, and a size not given, passes."""

import re

import pytest

from fastvec.native.spaces import check_declared_sizes

LEAST = {"OBS_SIZE": ("obs_size", 1), "NUM_AGENTS": ("num_agents", 1), "NUM_STATS": ("num_stats", 0),
         "RENDER_W": ("render_width", 1), "RENDER_H": ("render_height", 1)}
GOOD = {"obs_size": 1, "num_agents": 1, "num_stats": 0, "render_width": 1, "render_height": 1, "slot_size": 1}


def test_every_size_at_its_least_value_passes_and_a_missing_one_is_skipped():
    check_declared_sizes("e", GOOD)
    check_declared_sizes("e", {})
    check_declared_sizes("e", {"obs_size": 2**31 - 1, "num_stats": 7})


@pytest.mark.parametrize("constant", LEAST)
@pytest.mark.parametrize("below", [1, 2**31])
def test_a_size_below_its_least_value_names_its_constant(constant, below):
    key, least = LEAST[constant]
    value = least - below
    want = f"e: {constant} reads back as {value}; it must be at least {least} and at most 2**31-1 (a C int)"
    with pytest.raises(ValueError, match=re.escape(want)):
        check_declared_sizes("e", {**GOOD, key: value})


@pytest.mark.parametrize("value", [0, -8])
def test_a_state_struct_past_a_c_int_is_refused(value):
    with pytest.raises(ValueError, match=re.escape(f"e: sizeof(State) does not fit in a C int (it reads back as "
                                                   f"{value}): keep State under 2 GiB")):
        check_declared_sizes("e", {**GOOD, "slot_size": value})
