"""The training loop drives either trainer through protocol.Trainer: both define its every method, and a NumPy
trainer made by run.make_trainer has its every attribute (the CUDA trainer's are set on a GPU:
tests/trainer/test_cuda.py trains through the same loop)."""

from __future__ import annotations

import inspect

from fastvec.trainer import run
from fastvec.trainer.config import load_config
from fastvec.trainer.cuda.trainer import CudaTrainer
from fastvec.trainer.numpy_trainer import NumpyTrainer
from fastvec.trainer.protocol import Trainer

METHODS = [name for name, member in vars(Trainer).items() if not name.startswith("_") and inspect.isfunction(member)]
ATTRIBUTES = [name for name in Trainer.__annotations__ if name not in METHODS]


def test_both_trainers_define_every_method_of_the_protocol():
    assert {"rollout", "update", "warm_up", "describe", "state_dict", "load_state_dict"} <= set(METHODS)
    for cls in (NumpyTrainer, CudaTrainer):
        missing = [name for name in METHODS if not callable(getattr(cls, name, None))]
        assert not missing, f"{cls.__name__} lacks {missing}"


def test_a_numpy_trainer_has_every_attribute_and_no_op_where_it_does_not_apply():
    config = load_config("cartpole", {"env": {"num_envs": 4}, "train": {
        "device": "cpu", "horizon": 8, "bptt_horizon": 8, "minibatch_size": 32}})
    trainer = run.make_trainer(config)
    try:
        assert [name for name in ATTRIBUTES if not hasattr(trainer, name)] == []
        assert (trainer.rank, trainer.world_size, trainer.selfplay, trainer.gpu_games) == (0, 1, None, None)
        assert trainer.warm_up(10) == 0.0 and trainer.describe() == ""
        assert trainer.config.train.device == "cpu" and trainer.env_batches[0] is trainer.batch
    finally:
        run.close_batches(trainer.env_batches)
