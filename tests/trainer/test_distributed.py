"""Data-parallel training without a multi-GPU machine: the gradient reduction simulated with the NumPy
reference (averaged shard gradients == the concatenated batch's gradient), rank discovery from each
launcher's variables, the TCP exchange of the NCCL id, NCCL's absence, and --train.gpus refusals.
The multi-GPU tests at the end run only where 2+ GPUs and NCCL are present."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from fastvec.trainer import cli, distributed
from fastvec.trainer import reference as ref
from fastvec.trainer.cuda import nccl
from fastvec.trainer.cuda.plan import gather_threads

# ------------------------------------------------------------------------------------------------
# THE REDUCTION, SIMULATED: W ranks, each with an equal shard of one minibatch and the same weights


def minibatch_gradient(spec, flat_params, batch, adv_mean, adv_std, coefs):
    """The flat gradient of the PPO loss of `batch` (CudaTrainer.minibatch_step's math, reference
    functions), its advantages normalised with the given mean and std."""
    layout = ref.FlatLayout(ref.param_table(spec))
    params = layout.views(flat_params)
    grads_flat = np.zeros_like(flat_params)
    logits, values, _, cache = ref.policy_forward(spec, params, batch["obs"], batch["starts"], batch["state"])
    adv = (batch["adv"] - adv_mean) / (adv_std + 1e-8)
    _, dlogits, dvalues, _ = ref.ppo_loss(logits, values, batch["actions"], batch["logp"], batch["values"], adv,
                                          batch["returns"], **coefs)
    ref.policy_backward(spec, params, layout.views(grads_flat), dlogits, dvalues, cache)
    return grads_flat


def random_minibatch(spec, rng, steps, rows):
    """A minibatch of `rows` sequences of `steps` steps with random data, float64 (K, B, ...)."""
    return {
        "obs": rng.standard_normal((steps, rows, spec.obs_size)),
        "starts": (rng.random((steps, rows)) < 0.15).astype(np.float64),
        "state": rng.standard_normal((spec.state_layers, rows, spec.hidden)) * 0.5,
        "actions": rng.integers(0, spec.num_actions, (steps, rows)),
        "logp": np.log(rng.uniform(0.1, 0.6, (steps, rows))),
        "values": rng.standard_normal((steps, rows)),
        "adv": rng.standard_normal((steps, rows)) * 3 + 1.5,  # mean far from 0: normalisation matters
        "returns": rng.standard_normal((steps, rows)),
    }


def shard(batch, rank, world):
    """Rank `rank`'s equal share of the sequences (the batch axis; state's is axis 1)."""
    rows = batch["obs"].shape[1] // world
    part = slice(rank * rows, (rank + 1) * rows)
    return {k: v[:, part] for k, v in batch.items()}  # state (Ls, B, H) also has rows on axis 1


def global_moments(shards):
    """What the CUDA trainer computes for norm_adv: every rank's (sum, sum of squares) summed over the
    ranks (the NCCL sum of sums_partial), then moments_finish_kernel's mean and population std."""
    total = sum(s["adv"].sum() for s in shards)
    squares = sum((s["adv"] ** 2).sum() for s in shards)
    count = sum(s["adv"].size for s in shards)
    mean = total / count
    return mean, math.sqrt(max(squares / count - mean * mean, 0.0))


COEFS = {"clip_coef": 0.2, "vf_clip_coef": 0.2, "vf_coef": 0.5, "ent_coef": 0.01}


@pytest.mark.parametrize("kind,world", [("mingru", 2), ("mingru", 4), ("mlp", 3)])
def test_mean_of_shard_gradients_is_the_concatenated_batch_gradient(kind, world):
    """The all-reduce (average) of the ranks' gradients equals the single-process gradient of the whole
    minibatch, with advantages normalised by the global minibatch statistics (the rule the CUDA trainer
    follows: it all-reduces the advantage sums before normalising)."""
    rng = np.random.default_rng(7 + world)
    spec = ref.PolicySpec(obs_size=5, num_actions=3, kind=kind, hidden=8, layers=2)
    # Weights away from the init (larger logits): the PPO ratios leave the clip range for some rows.
    flat = ref.init_params(spec, rng, np.float64) + rng.standard_normal(ref.FlatLayout(ref.param_table(spec)).size) * 0.3
    batch = random_minibatch(spec, rng, steps=6, rows=4 * world)
    full = minibatch_gradient(spec, flat, batch, batch["adv"].mean(), batch["adv"].std(), COEFS)

    shards = [shard(batch, r, world) for r in range(world)]
    mean, std = global_moments(shards)
    averaged = np.mean([minibatch_gradient(spec, flat, s, mean, std, COEFS) for s in shards], axis=0)
    np.testing.assert_allclose(averaged, full, rtol=1e-10, atol=1e-13)

    # Clipping comes after the all-reduce: the clipped mean gradient is the clipped full gradient.
    clipped_avg, clipped_full = averaged.copy(), full.copy()
    norm_avg = ref.clip_grad_norm(clipped_avg, 0.05)
    norm_full = ref.clip_grad_norm(clipped_full, 0.05)
    assert norm_avg == pytest.approx(norm_full, rel=1e-10) and norm_full > 0.05  # the clip is active
    np.testing.assert_allclose(clipped_avg, clipped_full, rtol=1e-10, atol=1e-13)


def test_per_rank_advantage_normalisation_would_not_match():
    """Why the trainer all-reduces the advantage statistics: with each rank normalising by its own shard's
    mean and std, the averaged gradient is not the concatenated batch's."""
    rng = np.random.default_rng(3)
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mingru", hidden=8, layers=1)
    flat = ref.init_params(spec, rng, np.float64)
    batch = random_minibatch(spec, rng, steps=5, rows=8)
    batch["adv"][:, 4:] += 5.0  # the shards' advantage distributions differ, as different envs' do
    full = minibatch_gradient(spec, flat, batch, batch["adv"].mean(), batch["adv"].std(), COEFS)
    shards = [shard(batch, r, 2) for r in range(2)]
    per_rank = np.mean([minibatch_gradient(spec, flat, s, s["adv"].mean(), s["adv"].std(), COEFS) for s in shards], 0)
    assert np.abs(per_rank - full).max() > 1e-3 * np.abs(full).max()


def test_global_moments_are_the_concatenated_batch_moments():
    rng = np.random.default_rng(11)
    adv = rng.standard_normal((16, 12)) * 2 - 4
    shards = [{"adv": adv[:, i * 4:(i + 1) * 4]} for i in range(3)]
    mean, std = global_moments(shards)
    assert mean == pytest.approx(adv.mean(), rel=1e-12)
    assert std == pytest.approx(adv.std(), rel=1e-10)


# ------------------------------------------------------------------------------------------------
# WHERE THE CUDA TRAINER REDUCES (its update is recorded with stand-in launchers: no GPU needed)


class _Recorder:
    """Stands in for the kernel launcher, cuBLAS and the process group: logs every call in order."""

    def __init__(self, log, who):
        self.log, self.who = log, who

    def __getattr__(self, method):
        return lambda *args, **kwargs: self.log.append((self.who, method, args))


class _Address(int):
    """A fake device address that equals its arena (name, offset), so the log reads by name; an int, so the argument
    structs (kernel_args.py) take it."""

    def __new__(cls, name, offset=0):
        address = super().__new__(cls, (abs(hash((name, offset))) % (1 << 40) + 1) * 256)
        address.key = (name, offset)
        return address

    def __eq__(self, other):
        return self.key == other if isinstance(other, tuple) else int.__eq__(self, other)

    __hash__ = int.__hash__

    def __getitem__(self, i):
        return self.key[i]


def _recorded_minibatch_step(norm_adv, world_size):
    """The CUDA trainer's minibatch step (cuda/update.py) recorded against stand-ins: nothing touches a GPU."""
    from types import SimpleNamespace

    from fastvec.trainer.config import load_config
    from fastvec.trainer.cuda.data_parallel import DataParallel, SingleGpu
    from fastvec.trainer.cuda.heads import HeadOps
    from fastvec.trainer.cuda.optimizers import Adam
    from fastvec.trainer.cuda.plan import Choices
    from fastvec.trainer.cuda.policy import GpuPolicy
    from fastvec.trainer.cuda.update import GpuUpdate
    from fastvec.trainer.settings import Config

    log = []
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mingru", hidden=8, layers=2)
    layout = ref.FlatLayout(ref.param_table(spec))
    train = Config.of(load_config("cartpole", {"train": {"optimizer": "adam", "norm_adv": norm_adv,
                                                         "vtrace": False}})).train
    arena = SimpleNamespace(ptr=_Address)
    plan = SimpleNamespace(bptt=4, seqs_per_mb=3, rows=6, mb_rows=12, horizon=8, bf16_acts=False, obs_bytes=False,
                           slot_count=1, choices=Choices(), masked=False)
    reduction = SingleGpu()
    if world_size > 1:
        group = _Recorder(log, "group")
        group.rank, group.world_size = 0, world_size
        reduction = DataParallel(group)
    policy = GpuPolicy(spec, layout, arena, plan)
    learner = (_Recorder(log, "k"), _Recorder(log, "blas"), SimpleNamespace(handle=1234))
    update = GpuUpdate(plan, spec, layout, arena, train, learner, None, policy, Adam(train, layout, arena),
                       HeadOps(spec, layout, arena, plan, train), reduction, shuffle_key=1)
    update.minibatch_step(0)
    return update, log


def test_cuda_trainer_averages_the_gradient_between_backward_and_clipping():
    trainer, log = _recorded_minibatch_step(norm_adv=True, world_size=2)
    at = log.index(("group", "average", (("grads", 0), trainer.layout.size, 1234)))  # the whole flat buffer, once
    assert sum(entry[:2] == ("group", "average") for entry in log) == 1
    backward = [i for i, e in enumerate(log) if e[0] == "blas" and e[2][0][0] == "grads"]  # GEMMs writing grads
    assert backward and max(backward) < at
    assert log[at + 1][:2] == ("k", "launch_grid") and log[at + 1][2][0] == "grad_norm_kernel"


def test_cuda_trainer_normalises_advantages_with_global_moments():
    from fastvec.trainer.cuda.plan import NORM_BLOCKS

    trainer, log = _recorded_minibatch_step(norm_adv=True, world_size=2)
    names = [e[2][0] if e[0] == "k" else e[1] for e in log]
    first = names.index("sums_partial_kernel")
    assert log[first][2][5] == ("mb_adv", 0)
    assert log[first + 1] == ("group", "sum", (("sums_partial", 0), NORM_BLOCKS * 2, 1234))
    finish = log[first + 2][2]
    assert finish[0] == "moments_finish_kernel" and int(finish[5]) == trainer.plan.mb_rows * 2  # the global count


def test_cuda_trainer_on_one_gpu_records_no_collective():
    trainer, log = _recorded_minibatch_step(norm_adv=True, world_size=1)
    assert not [e for e in log if e[0] == "group"]
    # one GPU: the gather kernel computes the advantages' moments itself, over its own rows only
    names = [e[2][0] for e in log if e[0] == "k"]
    assert "moments_finish_kernel" not in names and "sums_partial_kernel" not in names
    from fastvec.trainer.cuda.kernel_args import GatherArgs

    gather = next(e[2] for e in log if e[0] == "k" and e[2][0] == "gather_minibatch_kernel")
    assert int(gather[1]) == gather_threads(trainer.plan.mb_rows, trainer.spec.obs_size)
    assert GatherArgs.from_buffer_copy(gather[2]).adv_moments == _Address("adv_moments")


# ------------------------------------------------------------------------------------------------
# RANK DISCOVERY


def test_discover_single_process_without_launcher_variables():
    launch = distributed.discover({"PATH": "/usr/bin"})
    assert (launch.rank, launch.world_size, launch.launcher) == (0, 1, "single")
    assert not distributed.launched({})


@pytest.mark.parametrize("stray", [{"RANK": "0"}, {"WORLD_SIZE": "4"}])
def test_discover_takes_one_of_rank_and_world_size_alone_as_a_single_process(stray):
    """torchrun sets RANK and WORLD_SIZE together; one of them alone (left in a shell, set by another tool) is no
    launch, so the run trains as one process rather than failing on a world size it cannot know."""
    launch = distributed.discover({"PATH": "/usr/bin", **stray})
    assert (launch.rank, launch.world_size, launch.launcher) == (0, 1, "single")


def test_discover_torchrun_variables():
    env = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "node7", "MASTER_PORT": "29400",
           "TORCHELASTIC_RUN_ID": "abc"}
    launch = distributed.discover(env)
    assert (launch.rank, launch.world_size, launch.local_rank, launch.master_addr) == (5, 8, 1, "node7")
    assert launch.launcher == "env"
    assert launch.rendezvous_port == 29401  # torchrun's own store listens on MASTER_PORT
    plain = distributed.discover({**env, "TORCHELASTIC_RUN_ID": ""})
    assert plain.rendezvous_port == 29400
    assert distributed.discover({**env, "FASTVEC_RENDEZVOUS_PORT": "31000"}).rendezvous_port == 31000
    assert distributed.launched(env)


def test_discover_slurm_step_variables():
    env = {"SLURM_PROCID": "6", "SLURM_STEP_NUM_TASKS": "16", "SLURM_NTASKS": "16", "SLURM_LOCALID": "2",
           "SLURM_STEP_NODELIST": "gpu[007-008,012],login1", "SLURM_JOB_ID": "123456"}
    launch = distributed.discover(env)
    assert (launch.rank, launch.world_size, launch.local_rank, launch.launcher) == (6, 16, 2, "slurm")
    assert launch.master_addr == "gpu007"
    assert launch.rendezvous_port == 20000 + 123456 % 20000
    with_master = distributed.discover({**env, "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29555"})
    assert (with_master.master_addr, with_master.rendezvous_port) == ("10.0.0.1", 29555)


def test_discover_ignores_a_slurm_batch_shell():
    """sbatch's own shell has SLURM_PROCID=0 and SLURM_NTASKS=4 but is no rank: only srun steps count."""
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": "n[1-4]"}
    assert distributed.discover(env).world_size == 1


def test_discover_mpi_variables():
    ompi = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
            "MASTER_ADDR": "head", "MASTER_PORT": "29600",
            # mpirun inside an sbatch allocation: the Slurm variables belong to the batch step, not to the ranks
            "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1"}
    launch = distributed.discover(ompi)
    assert (launch.rank, launch.world_size, launch.local_rank, launch.launcher) == (3, 4, 1, "mpi")
    assert (launch.master_addr, launch.rendezvous_port) == ("head", 29600)
    mpich = distributed.discover({"PMI_RANK": "2", "PMI_SIZE": "3", "MPI_LOCALRANKID": "0"})
    assert (mpich.rank, mpich.world_size, mpich.local_rank, mpich.launcher) == (2, 3, 0, "mpi")


@pytest.mark.parametrize("env,message", [
    ({"RANK": "4", "WORLD_SIZE": "4"}, "impossible"),
    ({"RANK": "x", "WORLD_SIZE": "4"}, "RANK='x' is not an integer"),
    ({"PMI_RANK": "1"}, "no world size"),
])
def test_discover_rejects_inconsistent_variables(env, message):
    with pytest.raises(distributed.DistributedError, match=message):
        distributed.discover(env)


@pytest.mark.parametrize("nodelist,host", [("gpu[03-05,9],login1", "gpu03"), ("a01,b02", "a01"), ("solo", "solo"),
                                           ("rack[2-3]-n[010-011]", "rack2-n010")])
def test_first_host_of_a_slurm_nodelist(nodelist, host):
    assert distributed.first_host(nodelist) == host


def test_select_gpu_pins_one_device_per_local_rank():
    env = {}
    distributed.select_gpu(3, env)
    assert env["CUDA_VISIBLE_DEVICES"] == "3"
    env = {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    distributed.select_gpu(2, env)
    assert env["CUDA_VISIBLE_DEVICES"] == "6"
    env = {"CUDA_VISIBLE_DEVICES": "5"}  # srun --gpus-per-task=1 already gave this rank its GPU
    distributed.select_gpu(1, env)
    assert env["CUDA_VISIBLE_DEVICES"] == "5"
    with pytest.raises(distributed.DistributedError, match="local rank 2 has no GPU"):
        distributed.select_gpu(2, {"CUDA_VISIBLE_DEVICES": "0,1"})


# ------------------------------------------------------------------------------------------------
# THE NCCL ID EXCHANGE


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tcp_rendezvous_gives_every_rank_rank0s_128_byte_id():
    """Three ranks (threads) exchange a random 128-byte id through exchange_unique_id; the other ranks
    start first and retry until rank 0 listens."""
    port = _free_port()
    unique_id = os.urandom(128)
    results, errors = {}, []

    def rank_main(rank):
        launch = distributed.Launch(rank=rank, world_size=3, local_rank=rank, master_addr="127.0.0.1",
                                    rendezvous_port=port, launcher="env")
        try:
            results[rank] = distributed.exchange_unique_id(launch, lambda: unique_id, timeout=20)
        except Exception as err:  # surfaced by the assert below
            errors.append(err)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in (2, 1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert results == {0: unique_id, 1: unique_id, 2: unique_id}


def test_tcp_rendezvous_across_processes():
    """The same exchange between 3 OS processes (what ranks are), each printing the id it holds."""
    port = _free_port()
    code = ("import sys; from fastvec.trainer import distributed as d; r = int(sys.argv[1]); "
            "l = d.Launch(rank=r, world_size=3, local_rank=r, master_addr='127.0.0.1', rendezvous_port=%d, launcher='env'); "
            "print(d.exchange_unique_id(l, lambda: bytes(range(128)), timeout=30).hex())" % port)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(r)], stdout=subprocess.PIPE, text=True) for r in (1, 2, 0)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert outs == [bytes(range(128)).hex()] * 3


def test_rendezvous_refuses_a_rank_with_another_world_size():
    port = _free_port()
    ready = threading.Event()
    server_error = []

    def serve():
        try:
            distributed.serve_unique_id(bytes(128), port, world_size=3, timeout=20, host="127.0.0.1", ready=ready)
        except distributed.DistributedError as err:
            server_error.append(err)

    thread = threading.Thread(target=serve)
    thread.start()
    ready.wait(10)
    with pytest.raises(distributed.DistributedError, match="world size is 4, rank 0 says 3"):
        distributed.fetch_unique_id("127.0.0.1", port, rank=1, world_size=4, timeout=10)
    thread.join(10)
    assert server_error and "world size is 4" in str(server_error[0])


def test_rendezvous_times_out_naming_what_to_check():
    with pytest.raises(distributed.DistributedError, match="MASTER_ADDR"):
        distributed.fetch_unique_id("127.0.0.1", _free_port(), rank=1, world_size=2, timeout=0.5)


def test_exchange_needs_rank0_address(monkeypatch):
    """Under an MPI launcher without mpi4py (hidden here, so a machine that has it gives the same answer) and
    without MASTER_ADDR, the error says to install one or export the other."""
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    launch = distributed.Launch(rank=1, world_size=2, local_rank=1, master_addr=None, launcher="mpi")
    with pytest.raises(distributed.DistributedError, match="pip install mpi4py, or export MASTER_ADDR"):
        distributed.exchange_unique_id(launch, lambda: bytes(128), timeout=1)


# ------------------------------------------------------------------------------------------------
# NCCL PRESENT OR NOT


@pytest.fixture
def no_nccl(monkeypatch):
    monkeypatch.setattr(nccl, "library_candidates", lambda: ["/nonexistent/libnccl.so.2"])
    nccl.load.cache_clear()
    yield
    nccl.load.cache_clear()


def test_missing_nccl_is_a_clear_error(no_nccl):
    with pytest.raises(nccl.NcclUnavailable, match=r"pip install nvidia-nccl-cu13.*FASTVEC_NCCL_LIBRARY"):
        nccl.get_unique_id()


def test_nccl_module_imports_without_nccl_or_gpu():
    env = dict(os.environ, FASTVEC_NCCL_LIBRARY="/nonexistent/libnccl.so.2", CUDA_VISIBLE_DEVICES="")
    code = ("import fastvec.trainer.cuda.nccl as n, fastvec.trainer.distributed as d\n"
            "try:\n    n.version()\nexcept n.NcclUnavailable as e:\n    print('unavailable:', e)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "unavailable:" in out.stdout and "/nonexistent/libnccl.so.2" in out.stdout


def _nccl_installed() -> bool:
    try:
        nccl.load()
        return True
    except nccl.NcclUnavailable:
        return False


@pytest.mark.skipif(not _nccl_installed(), reason="NCCL not installed (pip install nvidia-nccl-cu13)")
def test_real_nccl_loads_and_makes_unique_ids():
    assert nccl.version() >= (2, 10, 0)  # ncclAvg
    first, second = nccl.get_unique_id(), nccl.get_unique_id()
    assert len(first) == len(second) == 128 and first != second
    assert "ncclInvalidArgument" in nccl.error_text(4)


@pytest.mark.skipif(not _nccl_installed() or distributed.visible_gpu_count() > 0,
                    reason="needs NCCL and no GPU (the failure path)")
def test_nccl_call_failure_names_the_call_and_result():
    with pytest.raises(nccl.NcclError, match=r"ncclCommInitRank\(rank 0 of 1\) failed with nccl\w+"):
        nccl.Communicator(nccl.get_unique_id(), 1, 0)


def test_communicator_checks_its_arguments():
    with pytest.raises(ValueError, match="128 bytes"):
        nccl.Communicator(b"short", 2, 0)
    with pytest.raises(ValueError, match="rank 2 is outside world_size 2"):
        nccl.Communicator(bytes(128), 2, 2)


# ------------------------------------------------------------------------------------------------
# --train.gpus REFUSALS


def test_train_gpus_refused_on_a_machine_with_fewer_gpus(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(distributed, "visible_gpu_count", lambda: 1)
    code = cli.main(["cartpole", "--train.gpus=2", f"--run-dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "train.gpus=2, but this machine shows 1 CUDA GPU(s)" in err and "lower --train.gpus to at most 1" in err
    assert not (tmp_path / "run").exists()  # refused before anything started


def test_train_gpus_refused_on_this_cpu_machine(capsys, tmp_path):
    """No monkeypatching: the real GPU count (0 here, or on CI)."""
    if distributed.visible_gpu_count() >= 2:
        pytest.skip("this machine has 2+ GPUs")
    assert cli.main(["cartpole", "--train.gpus=2", f"--run-dir={tmp_path / 'run'}"]) == 2
    assert "train.gpus=2, but this machine shows" in capsys.readouterr().err


def test_train_gpus_with_cpu_device_refused(capsys, tmp_path):
    assert cli.main(["cartpole", "--train.gpus=2", "--train.device=cpu", f"--run-dir={tmp_path}"]) == 2
    assert "train.device=cpu" in capsys.readouterr().err


def test_train_gpus_must_be_positive(capsys):
    assert cli.main(["cartpole", "--train.gpus=0", "--print-config"]) == 2
    assert "train.gpus=0 must be >= 1" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# --train.gpus PLUMBING WITHOUT GPUS: the ranks' processes are real, NCCL and the training loop are
# stand-ins (installed in each rank by a sitecustomize.py on PYTHONPATH)

STAND_INS = """
import os, sys, time, types
from pathlib import Path
from fastvec.trainer import distributed, run
from fastvec.trainer.cuda import device, nccl
device.init = lambda: None
class Comm:
    def __init__(self, unique_id, world_size, rank):
        assert len(unique_id) == 128
    def destroy(self): pass
    def abort(self): pass
nccl.Communicator = Comm
nccl.get_unique_id = lambda: os.urandom(nccl.UNIQUE_ID_BYTES)  # stand-in ranks need no libnccl
def fake_train(config, run_dir, resume, dashboard):
    group = nccl.active_group()  # what CudaTrainer reads: must be this rank's group
    print(f"rank {group.rank}/{group.world_size} gpu {os.environ['CUDA_VISIBLE_DEVICES']} device "
          f"{config.train.device} resume {resume} writes {'run_dir' if Path(run_dir) == Path(sys.argv[2]) else 'scratch'}",
          file=sys.stderr)
    if group.rank == int(os.environ.get("FAIL_RANK", "-1")):
        raise RuntimeError("rank failure for the test")
    if group.rank == int(os.environ.get("HANG_RANK", "-1")):
        time.sleep(60)  # a rank still training when another fails
    return {"run_dir": run_dir, "checkpoint": None, "metrics": {"episode_return": 1.5}, "elapsed": 1.0,
            "global_step": 1024, "sps": 1024.0, "recent_returns": [1.5], "interrupted": False,
            "trainer": types.SimpleNamespace(close=lambda: None)}
run.train_one_process = fake_train
distributed.check_in_sync = lambda trainer, group: 0.0
"""


@pytest.fixture
def stand_in_ranks(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(STAND_INS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6,3")
    monkeypatch.setattr(distributed, "visible_gpu_count", lambda: 2)
    monkeypatch.setattr(nccl, "load", lambda: None)
    return tmp_path


def test_train_gpus_starts_one_rank_per_gpu_and_returns_rank0s_summary(stand_in_ranks, capfd):
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    config = load_config("cartpole", {"train": {"gpus": 2}})
    summary = run.train(config, stand_in_ranks / "run", dashboard=False)
    err = capfd.readouterr().err
    assert "rank 0/2 gpu 6 device cuda resume False writes run_dir" in err
    assert "rank 1/2 gpu 3 device cuda resume False writes scratch" in err
    assert summary["metrics"] == {"episode_return": 1.5} and summary["global_step"] == 1024
    assert summary["run_dir"] == stand_in_ranks / "run" and summary["rank"] == 0 and summary["params_drift"] == 0.0


def test_train_gpus_stops_everything_when_a_rank_fails(stand_in_ranks, monkeypatch):
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    monkeypatch.setenv("FAIL_RANK", "1")
    with pytest.raises(distributed.DistributedError, match="rank 1 of 2 failed with exit code 1"):
        run.train(load_config("cartpole", {"train": {"gpus": 2}}), stand_in_ranks / "run", dashboard=False)


def test_a_failed_rank_stops_the_ranks_still_running_and_the_work_directory_goes(stand_in_ranks, monkeypatch):
    """Rank 1 fails while rank 0 is still training (a minute's sleep): the launcher raises, having killed rank 0
    (not left it running, nor waited the minute) and removed its work directory; a rank that ended is not killed."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    procs, dirs = [], []
    real_popen, real_mkdtemp = subprocess.Popen, distributed.tempfile.mkdtemp

    class Recorded(real_popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            procs.append(self)

    monkeypatch.setattr(distributed.subprocess, "Popen", Recorded)
    monkeypatch.setattr(distributed.tempfile, "mkdtemp", lambda **kw: dirs.append(real_mkdtemp(**kw)) or dirs[-1])
    monkeypatch.setenv("FAIL_RANK", "1")
    monkeypatch.setenv("HANG_RANK", "0")
    try:
        with pytest.raises(distributed.DistributedError, match="rank 1 of 2 failed with exit code 1"):
            run.train(load_config("cartpole", {"train": {"gpus": 2}}), stand_in_ranks / "run", dashboard=False)
        assert len(procs) == 2 and procs[0].poll() == -signal.SIGKILL and procs[1].poll() == 1
        assert len(dirs) == 1 and not os.path.exists(dirs[0])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("rank,interrupted", [(0, False), (1, False), (0, True)])
def test_a_rank_process_ignores_ctrl_c_unless_rank_0_which_alone_writes_the_summary(monkeypatch, tmp_path, rank,
                                                                                   interrupted):
    """distributed.main, one rank of --train.gpus: a rank other than 0 ignores SIGINT (rank 0 gets Ctrl-C, saves
    its checkpoint, and the parent stops the rest), rank 0 keeps Python's handler; rank 0 alone writes its summary
    to FASTVEC_SUMMARY (the trainer left out); --resume and --dashboard=0|1 reach the rank; exit 130 after Ctrl-C."""
    import json

    from fastvec.trainer import config as config_module

    calls = []

    def run_rank(config, run_dir, resume, dashboard, launch, train_rank):
        calls.append((config, run_dir, resume, dashboard, launch.rank, train_rank))
        return {"interrupted": interrupted, "trainer": object(), "global_step": 64, "run_dir": run_dir}

    summary = tmp_path / "summary.json"
    monkeypatch.setattr(distributed, "discover", lambda: distributed.Launch(rank=rank, world_size=2, local_rank=rank))
    monkeypatch.setattr(distributed, "run_rank", run_rank)
    monkeypatch.setattr(config_module, "load_toml", lambda path: {"from": str(path)})
    monkeypatch.setenv("FASTVEC_SUMMARY", str(summary))
    before = signal.getsignal(signal.SIGINT)
    try:  # Python's own handler to start from (a shell's background job starts with SIGINT ignored)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = distributed.main(["c.toml", str(tmp_path / "run"), "--resume", f"--dashboard={rank}"], "train")
        handler = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == (130 if interrupted else 0)
    assert handler == (signal.SIG_IGN if rank else signal.default_int_handler)
    assert calls == [({"from": "c.toml"}, tmp_path / "run", True, bool(rank), rank, "train")]
    if rank == 0:
        assert json.loads(summary.read_text()) == {"interrupted": interrupted, "global_step": 64,
                                                   "run_dir": str(tmp_path / "run")}
    else:
        assert not summary.exists()


@pytest.mark.parametrize("stopped_rank", [0, 1])
def test_only_rank_0_may_end_on_ctrl_c_without_failing_the_run(stopped_rank):
    """Exit code 130 (Ctrl-C) from rank 0, which saved its checkpoint, ends the wait for the ranks without an
    error while another rank still runs; from any other rank it is a failure like any other code."""
    def rank(code):
        return subprocess.Popen([sys.executable, "-c", f"import sys, time; time.sleep({0 if code else 60}); "
                                                       f"sys.exit({code})"])

    procs = [rank(130 if r == stopped_rank else None) for r in range(2)]
    try:
        if stopped_rank == 0:
            distributed._wait(procs)
            assert procs[0].returncode == 130 and procs[1].poll() is None
        else:
            with pytest.raises(distributed.DistributedError, match="rank 1 of 2 failed with exit code 130"):
                distributed._wait(procs)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------------------------------------
# ON A MULTI-GPU MACHINE (skipped elsewhere)

two_gpus = pytest.mark.skipif(distributed.visible_gpu_count() < 2 or not _nccl_installed(),
                              reason="needs 2+ CUDA GPUs and NCCL")

ALLREDUCE_RANK = """
import sys, numpy as np
from fastvec.trainer import distributed as d
from fastvec.trainer.cuda import device, nccl
launch = d.discover()
d.select_gpu(launch.local_rank)
cuda = device.init()
comm = nccl.Communicator(d.exchange_unique_id(launch, nccl.get_unique_id, timeout=60), launch.world_size, launch.rank)
stream = cuda.Stream()
x = (np.arange(1000, dtype=np.float32) + 1000 * launch.rank)
buf = cuda.to_device(x)
comm.all_reduce(int(buf), x.size, np.float32, "avg", stream.handle)
stream.synchronize()
out = np.empty_like(x); cuda.memcpy_dtoh(out, buf)
expected = np.arange(1000, dtype=np.float32) + 1000 * (launch.world_size - 1) / 2
assert np.allclose(out, expected), (out[:4], expected[:4])
comm.destroy()
print("ok", launch.rank)
"""


@pytest.mark.gpu
@two_gpus
def test_nccl_average_across_two_gpu_processes():
    port = str(_free_port())
    procs = [subprocess.Popen([sys.executable, "-c", ALLREDUCE_RANK], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port)) for r in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and "ok 0" in outs[0] and "ok 1" in outs[1]


@pytest.mark.gpu
@two_gpus
def test_train_gpus_2_trains_cartpole_with_ranks_in_step(tmp_path, capsys):
    """fastvec-train --train.gpus=2: runs, writes one run dir (rank 0), counts both ranks' steps."""
    from fastvec.trainer import checkpoint, run
    from fastvec.trainer.config import load_config

    config = load_config("cartpole", {"env": {"num_envs": 1024}, "train": {
        "gpus": 2, "device": "cuda", "total_timesteps": 2 * 1024 * 64 * 6, "horizon": 64, "bptt_horizon": 16,
        "minibatch_size": 8192}})
    summary = run.train(config, tmp_path / "run", dashboard=False)
    assert summary["global_step"] == 2 * 1024 * 64 * 6
    assert summary["params_drift"] == 0.0
    meta, state = checkpoint.load(checkpoint.latest(tmp_path / "run"))
    assert state["counters"]["update"] == 6


UPDATE_RANK = """
import sys, numpy as np
from fastvec.trainer import distributed as d, run
from fastvec.trainer.config import load_config
from fastvec.trainer.cuda import device, nccl
launch = d.discover()
d.select_gpu(launch.local_rank)
device.init()
comm = nccl.Communicator(d.exchange_unique_id(launch, nccl.get_unique_id, timeout=60), launch.world_size, launch.rank)
nccl.set_active_group(nccl.ProcessGroup(launch.rank, launch.world_size, comm))
config = load_config("cartpole", {"env": {"num_envs": 64}, "policy": {"hidden": 32, "layers": 2}, "train": {
    "device": "cuda", "horizon": 16, "bptt_horizon": 8, "minibatch_size": 64 * 16, "update_epochs": 2,
    "optimizer": "muon", "learning_rate": 0.01, "precision": sys.argv[2]}})
trainer = run.make_trainer(config)
trainer.rollout()
names = ["obs", "starts", "actions", "logp", "values", "rewards", "dones", "segment_state"]
data = {name: trainer.arena.get(trainer.cuda, name) for name in names}
data["last_value"] = trainer.last_values()
data["params_before"] = trainer.arena.get(trainer.cuda, "params")
trainer.update(num_updates=10)
data["params_after"] = trainer.arena.get(trainer.cuda, "params")
np.savez(f"{sys.argv[1]}/rank{launch.rank}.npz", **data)
trainer.close()
nccl.set_active_group(None)
comm.destroy()
print("ok", launch.rank)
"""


@pytest.mark.gpu
@two_gpus
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("bf16", 1e-3)])
def test_two_gpus_update_equals_one_gpu_on_the_same_global_batch(tmp_path, monkeypatch, precision, tol):
    """Two ranks (64 envs each) each collect a rollout and run one update (2 epochs of one minibatch each,
    gradients averaged by NCCL, advantages normalised with the global moments); one GPU runs the same update
    on the two rollouts side by side (128 envs, a minibatch of both): the weights agree to fp32 rounding
    (bf16 rounding with bf16 GEMMs). One minibatch per epoch, so both sides' minibatches hold the same samples
    whatever each side's shuffle."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    port = str(_free_port())
    procs = [subprocess.Popen([sys.executable, "-c", UPDATE_RANK, str(tmp_path), precision], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                                                  MASTER_ADDR="127.0.0.1", MASTER_PORT=port)) for r in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in range(2)]
    assert np.array_equal(ranks[0]["params_before"], ranks[1]["params_before"])
    assert np.array_equal(ranks[0]["params_after"], ranks[1]["params_after"])  # one model on both GPUs
    assert not np.array_equal(ranks[0]["actions"], ranks[1]["actions"])  # two different halves of the batch

    config = load_config("cartpole", {"env": {"num_envs": 128}, "policy": {"hidden": 32, "layers": 2}, "train": {
        "device": "cuda", "horizon": 16, "bptt_horizon": 8, "minibatch_size": 128 * 16, "update_epochs": 2,
        "optimizer": "muon", "learning_rate": 0.01, "precision": precision}})
    one = run.make_trainer(config)
    one.rollout()  # any data: replaced by the ranks' before the update
    a, cuda = one.arena, one.cuda
    assert np.array_equal(a.get(cuda, "params"), ranks[0]["params_before"])  # the same initial weights
    for name, axis in [("obs", 1), ("starts", 1), ("actions", 1), ("logp", 1), ("values", 1), ("rewards", 1),
                       ("dones", 1), ("segment_state", 2)]:
        a.set(cuda, name, np.concatenate([ranks[0][name], ranks[1][name]], axis=axis))
    last_value = np.concatenate([ranks[0]["last_value"], ranks[1]["last_value"]])
    if one.plan.fused_block:  # the fused paths keep the bootstrap values in last_value, the GEMM path in r_y
        a.set(cuda, "last_value", last_value)
    else:
        r_y = a.get(cuda, "r_y")
        r_y[:, -1] = last_value
        a.set(cuda, "r_y", r_y)
    one.update(num_updates=10)
    got, want = a.get(cuda, "params"), ranks[0]["params_after"]
    scale = np.abs(want).max()
    assert np.abs(want - ranks[0]["params_before"]).max() > 10 * tol * scale  # the update moved them: can fail
    assert np.abs(got - want).max() <= tol * scale, (np.abs(got - want).max(), scale)
    one.close()


class FakeDriver:
    """libcuda.so.1 as ctypes sees it: cuInit's and cuDeviceGetCount's results, the count written through the
    pointer."""

    def __init__(self, init: int, count_result: int, count: int):
        self.init, self.count_result, self.count = init, count_result, count

    def cuInit(self, flags):
        assert flags == 0
        return self.init

    def cuDeviceGetCount(self, ref):
        ref._obj.value = self.count
        return self.count_result


@pytest.mark.parametrize("driver, want", [(FakeDriver(0, 0, 3), 3), (FakeDriver(100, 0, 3), 0),
                                          (FakeDriver(0, 999, 3), 0), (None, 0)],
                         ids=["three", "no_device", "count_failed", "no_driver"])
def test_visible_gpu_count_asks_the_driver_and_is_0_when_it_cannot(monkeypatch, driver, want):
    """The driver's device count; 0 where there is no libcuda (a CPU machine), where cuInit fails (no device,
    a broken install: CUDA_ERROR_NO_DEVICE is 100) or where the count cannot be read."""
    def cdll(name):
        assert name == "libcuda.so.1"
        if driver is None:
            raise OSError("libcuda.so.1: cannot open shared object file")
        return driver

    monkeypatch.setattr(distributed.ctypes, "CDLL", cdll)
    assert distributed.visible_gpu_count() == want


def test_without_a_master_port_the_rendezvous_uses_torchruns_default_port():
    """A launcher that sets no MASTER_PORT (mpirun, or RANK/WORLD_SIZE by hand): every rank meets on 29500,
    torchrun's default, unless FASTVEC_RENDEZVOUS_PORT says otherwise."""
    for env in ({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "head"},
                {"PMI_RANK": "1", "PMI_SIZE": "2", "MASTER_ADDR": "head"}):
        assert distributed.discover(env).rendezvous_port == 29500, env
        assert distributed.discover({**env, "FASTVEC_RENDEZVOUS_PORT": "31001"}).rendezvous_port == 31001
    assert distributed.Launch().rendezvous_port == 29500


def test_ctrl_c_in_the_launcher_waits_for_rank_0_alone():
    """Ctrl-C while the launcher waits (every rank of the terminal's process group gets it too): it waits for rank 0,
    which saves its checkpoint, and returns without an error, leaving the other ranks to spawn's clean-up."""
    class Rank:
        def __init__(self, interrupt):
            self.interrupt, self.waited = interrupt, 0

        def poll(self):
            if self.interrupt:
                raise KeyboardInterrupt
            return None

        def wait(self):
            self.waited += 1
            return 130

    ranks = [Rank(False), Rank(True), Rank(False)]
    distributed._wait(ranks)
    assert [rank.waited for rank in ranks] == [1, 0, 0]


def test_visible_devices_hand_out_the_listed_gpus_in_order_else_the_first_ones():
    """--train.gpus=N: rank r gets CUDA_VISIBLE_DEVICES' r-th entry (spaces and empty entries dropped, only the first
    N), or device r when the variable is unset; set but empty lists no device."""
    assert distributed.visible_devices(3, {}) == ["0", "1", "2"]
    assert distributed.visible_devices(2, {"CUDA_VISIBLE_DEVICES": " 4, ,5 ,7"}) == ["4", "5"]
    assert distributed.visible_devices(1, {"CUDA_VISIBLE_DEVICES": "GPU-a1b2"}) == ["GPU-a1b2"]
    assert distributed.visible_devices(2, {"CUDA_VISIBLE_DEVICES": ""}) == []


def test_rank_0_listens_on_loopback_only_for_a_loopback_master_address():
    for addr in ("127.0.0.1", "127.3.4.5", "localhost", "::1"):
        assert distributed._is_loopback(addr), addr
    for addr in ("10.0.0.7", "gpu03", "", None, "12.7.0.1"):
        assert not distributed._is_loopback(addr), addr


@pytest.mark.parametrize("timeout", [0.0, 0.05])
def test_rank_0_waiting_past_its_deadline_names_the_ranks_that_never_connected(timeout):
    """A deadline already passed (timeout 0) or passing while rank 0 waits still ends in the rendezvous error that
    names the missing ranks, never in a socket error about the timeout value."""
    with pytest.raises(distributed.DistributedError, match=r"ranks \[1, 2\] never connected"):
        distributed.serve_unique_id(bytes(128), _free_port(), world_size=3, timeout=timeout, host="127.0.0.1")


def _serving(unique_id: bytes, world_size: int):
    """serve_unique_id in a thread on a free loopback port: (port, thread, the errors it raised)."""
    port, ready, errors = _free_port(), threading.Event(), []

    def serve():
        try:
            distributed.serve_unique_id(unique_id, port, world_size=world_size, timeout=20, host="127.0.0.1",
                                        ready=ready)
        except distributed.DistributedError as err:
            errors.append(str(err))

    thread = threading.Thread(target=serve)
    thread.start()
    assert ready.wait(10)
    return port, thread, errors


@pytest.mark.parametrize("rank", [0, 3, 7])
def test_rendezvous_refuses_a_rank_outside_1_to_world_size_minus_1_with_rank0s_whole_reason(rank):
    """Rank 0 serves ranks 1 and 2 of a world of 3; rank 0 itself, 3 and 7 are refused, the refused rank's error
    carrying rank 0's reason word for word, and rank 0 stops with the same reason."""
    port, thread, errors = _serving(os.urandom(128), 3)
    reason = f"rank {rank} is out of range or connected twice (world size 3)"
    with pytest.raises(distributed.DistributedError) as err:
        distributed.fetch_unique_id("127.0.0.1", port, rank=rank, world_size=3, timeout=10)
    thread.join(10)
    assert str(err.value) == f"rank 0 refused rank {rank}: {reason}"
    assert errors == [f"NCCL id exchange: {reason}"]


def test_rendezvous_refuses_a_rank_that_connects_twice_and_cuts_the_reason_to_the_ids_length():
    """Rank 1 gets the (16-byte) id once; connecting again it is refused, with rank 0's reason cut to the id's
    16 bytes (the reply's fixed size) and the padding stripped."""
    unique_id = bytes(range(16))
    port, thread, errors = _serving(unique_id, 3)
    assert distributed.fetch_unique_id("127.0.0.1", port, rank=1, world_size=3, size=16, timeout=10) == unique_id
    with pytest.raises(distributed.DistributedError) as err:
        distributed.fetch_unique_id("127.0.0.1", port, rank=1, world_size=3, size=16, timeout=10)
    thread.join(10)
    assert str(err.value) == "rank 0 refused rank 1: rank 1 is out of"
    assert errors == ["NCCL id exchange: rank 1 is out of range or connected twice (world size 3)"]


def test_rendezvous_answers_a_stranger_no_and_keeps_serving_the_ranks():
    """A connection that does not say fastvec's magic gets NO and rank 0's reason, and rank 0 goes on: ranks 1
    and 2 still get the id and the exchange ends without an error."""
    import socket
    unique_id = os.urandom(128)
    port, thread, errors = _serving(unique_id, 3)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(distributed._HELLO.pack(b"HTTP", 1, 3))
        reply = distributed._recv_exact(conn, 2 + 128)
    assert reply[:2] == b"NO" and reply[2:].decode().strip() == "a connection that is not a fastvec rank"
    for rank in (2, 1):
        assert distributed.fetch_unique_id("127.0.0.1", port, rank=rank, world_size=3, timeout=10) == unique_id
    thread.join(10)
    assert not thread.is_alive() and errors == []


def test_a_rank_retries_rank_0_backing_off_with_each_attempt_waiting_0_1_to_5_s(monkeypatch):
    """fetch_unique_id on a clock the test moves, rank 0 never listening (each attempt refused after 0.9 s): an
    attempt waits at most 5 s and at least 0.1 s (the floor where less is left), the pauses between attempts
    double from 0.05 s up to 1 s, none starts once the time is up (exactly up included), and then the error names
    the timeout and what to check."""
    from types import SimpleNamespace
    now, waits, pauses, attempt_s = [0.0], [], [], [0.9]

    def refused(address, timeout):
        waits.append(round(timeout, 9))
        now[0] += attempt_s[0]
        raise ConnectionRefusedError("refused")

    def pause(seconds):
        pauses.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(distributed, "time", SimpleNamespace(monotonic=lambda: now[0], sleep=pause))
    monkeypatch.setattr(distributed.socket, "create_connection", refused)
    with pytest.raises(distributed.DistributedError, match=r"within 9 s \(refused\); check MASTER_ADDR"):
        distributed.fetch_unique_id("10.0.0.1", 1234, rank=1, world_size=2, timeout=9.0)
    # attempts start at 0, 0.95, 1.95, 3.05, 4.35, 6.05, 7.95: each waits what is left, at most 5 s
    assert waits == [5.0, 5.0, 5.0, 5.0, 4.65, 2.95, 1.05]
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    now[0], waits[:], pauses[:] = 0.0, [], []
    with pytest.raises(distributed.DistributedError, match="within 1 s"):
        distributed.fetch_unique_id("10.0.0.1", 1234, rank=1, world_size=2, timeout=0.97)
    assert waits == [0.97, 0.1]  # at 0.95 s only 0.02 s is left: the attempt still waits 0.1 s
    assert pauses == [0.05, 0.1]
    now[0], waits[:], pauses[:], attempt_s[0] = 0.0, [], [], 0.95
    with pytest.raises(distributed.DistributedError, match="within 1 s"):
        distributed.fetch_unique_id("10.0.0.1", 1234, rank=1, world_size=2, timeout=1.0)
    assert (waits, pauses) == ([1.0], [0.05])  # the pause ends exactly at the deadline: no attempt then


def test_rank_0_reads_a_strangers_hello_arriving_in_pieces_and_keeps_serving():
    """A connection whose first 5 bytes come alone and then many more (not a fastvec rank): rank 0 reads exactly
    the hello's 12 bytes, answers NO, and still serves rank 1."""
    import socket
    import time
    unique_id = os.urandom(128)
    port, thread, errors = _serving(unique_id, 2)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET /")
        time.sleep(0.2)
        conn.sendall(b" HTTP/1.1\r\nHost: localhost\r\n\r\n" + b"x" * 200)
        reply = distributed._recv_exact(conn, 2 + 128)
    assert reply[:2] == b"NO" and reply[2:].decode().strip() == "a connection that is not a fastvec rank"
    assert distributed.fetch_unique_id("127.0.0.1", port, rank=1, world_size=2, timeout=10) == unique_id
    thread.join(10)
    assert not thread.is_alive() and errors == []


def test_rank_0_listens_again_on_its_port_right_after_an_exchange():
    """A run restarted at once (the same MASTER_PORT): rank 0 closed each rank's connection first, so the port
    is still in TIME_WAIT; the second rendezvous on it must still listen (SO_REUSEADDR) and serve."""
    unique_id = os.urandom(128)
    port, thread, errors = _serving(unique_id, 2)
    assert distributed.fetch_unique_id("127.0.0.1", port, rank=1, world_size=2, timeout=10) == unique_id
    thread.join(10)
    ready, again = threading.Event(), []
    second = threading.Thread(target=lambda: again.append(distributed.serve_unique_id(
        unique_id, port, world_size=2, timeout=20, host="127.0.0.1", ready=ready)))
    second.start()
    assert ready.wait(10)
    assert distributed.fetch_unique_id("127.0.0.1", port, rank=1, world_size=2, timeout=10) == unique_id
    second.join(10)
    assert errors == [] and again == [None]


def test_rank_0_drops_a_port_probe_that_closes_before_its_hello_and_keeps_serving():
    """A connection that closes at once without a byte (a TCP port probe such as `nc -z`) is no fastvec rank:
    rank 0 drops it, as it answers other strangers, and still serves the ranks without an error."""
    import socket
    unique_id = os.urandom(128)
    port, thread, errors = _serving(unique_id, 3)
    socket.create_connection(("127.0.0.1", port), timeout=10).close()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET")  # part of a hello, then gone
    for rank in (1, 2):
        assert distributed.fetch_unique_id("127.0.0.1", port, rank=rank, world_size=3, timeout=10) == unique_id
    thread.join(10)
    assert not thread.is_alive() and errors == []


class _ClockedServer:
    """serve_unique_id's listening socket on a clock the test moves: accept() hands out the queued peers, each
    (hello delay in seconds or None for silent, hello bytes), and records when it was called."""

    def __init__(self, now, peers, accepts):
        self.now, self.peers, self.accepts, self.timeout, self.conns = now, peers, accepts, None, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def setsockopt(self, *args):
        pass

    def bind(self, address):
        pass

    def listen(self, backlog):
        pass

    def settimeout(self, seconds):
        self.timeout = seconds

    def accept(self):
        self.accepts.append(self.now[0])
        if not self.peers:
            self.now[0] += self.timeout
            raise TimeoutError("timed out")
        self.conns.append(_ClockedConn(self.now, *self.peers.pop(0)))
        return self.conns[-1], ("127.0.0.1", 40000)


class _ClockedConn:
    def __init__(self, now, delay, hello):
        self.now, self.delay, self.hello, self.timeout, self.sent = now, delay, hello, None, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def settimeout(self, seconds):
        self.timeout = seconds

    def recv(self, size):
        if self.delay is None or self.delay > self.timeout:  # the socket's timeout passes first
            self.now[0] += self.timeout
            raise TimeoutError("timed out")
        self.now[0] += self.delay
        data, self.hello = self.hello[:size], self.hello[size:]
        return data

    def sendall(self, data):
        self.sent.append(data)


def test_rank_0_gives_a_connected_rank_10_s_for_its_hello_then_drops_it_and_serves_the_others(monkeypatch):
    """On a clock the test moves: a rank whose hello arrives 9.9 s after it connected is served; a connection
    that says nothing is dropped after exactly 10 s, and rank 0 then serves the next rank."""
    from types import SimpleNamespace
    now, accepts = [0.0], []
    hello = distributed._HELLO.pack(distributed._MAGIC, 1, 3)
    peers = [(None, b""), (9.9, hello), (None, b""), (0.5, distributed._HELLO.pack(distributed._MAGIC, 2, 3))]
    server = _ClockedServer(now, peers, accepts)
    monkeypatch.setattr(distributed, "time", SimpleNamespace(monotonic=lambda: now[0], sleep=None))
    monkeypatch.setattr(distributed, "socket", SimpleNamespace(
        socket=lambda *args: server, AF_INET=0, SOCK_STREAM=0, SOL_SOCKET=0, SO_REUSEADDR=0))
    distributed.serve_unique_id(b"i" * 128, 1234, world_size=3, timeout=60.0)
    assert accepts == [0.0, 10.0, 19.9, 29.9]
    assert server.peers == [] and now[0] == 30.4
    assert [c.sent for c in server.conns] == [[], [b"OK" + b"i" * 128], [], [b"OK" + b"i" * 128]]


def test_a_rank_connected_while_rank_0_waits_on_a_silent_probe_is_served_once(monkeypatch):
    """Rank 0 serves one connection at a time: while it waits on a silent port probe, a rank that has connected
    keeps waiting for its answer rather than giving up and connecting again (which rank 0 would refuse as a rank
    connected twice, having answered the first connection)."""
    monkeypatch.setattr(distributed, "HELLO_WAIT", 0.6)
    monkeypatch.setattr(distributed, "CONNECT_WAIT", 0.1)
    import socket
    port, ready, errors = _free_port(), threading.Event(), []

    def rank_0():
        try:
            distributed.serve_unique_id(b"u" * 128, port, world_size=2, timeout=5.0, host="127.0.0.1", ready=ready)
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            errors.append(err)

    server = threading.Thread(target=rank_0)
    server.start()
    assert ready.wait(5.0)
    with socket.create_connection(("127.0.0.1", port)):  # the probe: connected, silent
        got = distributed.fetch_unique_id("127.0.0.1", port, rank=1, world_size=2, timeout=5.0)
    server.join(20.0)
    assert got == b"u" * 128 and errors == []
