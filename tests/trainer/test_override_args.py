"""parse_overrides reads the section.key name before the first '=': a dot in the value alone (--seed=0.5) is no
section, and a value's own '=' or dots stay in the value."""

import pytest

from fastvec.trainer.config import ConfigError, parse_overrides


@pytest.mark.parametrize("arg", ["--seed=0.5", "--lr=3e-4.0", "seed.x=1", "-train.seed=1"])
def test_an_argument_without_a_dotted_name_before_its_equals_is_refused(arg):
    with pytest.raises(ConfigError) as err:
        parse_overrides([arg])
    assert str(err.value) == f"unexpected argument {arg!r}; config overrides look like --section.key=value"


def test_the_value_keeps_its_own_equals_and_dots():
    assert parse_overrides(["--env.gym_id=ALE/Pong-v5"]) == {"env": {"gym_id": "ALE/Pong-v5"}}
    assert parse_overrides(["--train.learning_rate=2.5e-4"]) == {"train": {"learning_rate": 2.5e-4}}
    assert parse_overrides(["--env.name=a=b.c=d"]) == {"env": {"name": "a=b.c=d"}}
    assert parse_overrides(["--env.name", "x=y.z"]) == {"env": {"name": "x=y.z"}}
