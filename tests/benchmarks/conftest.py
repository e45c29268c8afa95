"""The peer harnesses' tests run JaxMARL-style trials in this process, whose quiet_wandb() puts a stand-in `wandb`
module into sys.modules where wandb is not installed: each test's stand-in is taken out again, so that later tests
(the W&B logger's, which skip without the real package) never mistake it for wandb."""

import sys

import pytest


@pytest.fixture(autouse=True)
def wandb_module_restored():
    before = sys.modules.get("wandb")
    yield
    if before is None:
        sys.modules.pop("wandb", None)
    else:
        sys.modules["wandb"] = before
