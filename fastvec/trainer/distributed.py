"""Data-parallel training on several GPUs and nodes: which rank this process is (torchrun, Slurm or MPI
variables), the NCCL unique id exchange (a small TCP rendezvous, or mpi4py), `--train.gpus=N` starting one
process per GPU, each rank's NCCL process group (cuda/nccl.py, through which the CUDA trainer all-reduces).

Semantics (docs/multi-gpu.md): env.num_envs and train.minibatch_size are per GPU, so N GPUs train on an
N times larger global batch; train.total_timesteps is the global total, split across the ranks. Every
rank starts from rank 0's weights, steps its own envs (seeds offset by rank), averages its minibatch
gradient with the others' inside the update graph (before clipping), and normalises advantages with the
global minibatch mean and std. Rank 0 alone logs and checkpoints."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fastvec.trainer.config import ConfigError, check_world_size
from fastvec.trainer.settings import Config

DEFAULT_PORT = 29500  # torchrun's default MASTER_PORT
RENDEZVOUS_TIMEOUT = 300.0  # seconds ranks wait for rank 0 (a busy cluster starts ranks minutes apart)
HELLO_WAIT = 10.0  # seconds rank 0 waits for a connection's hello before dropping it (a silent port probe)
CONNECT_WAIT = 5.0  # seconds a rank's connection attempt may take before it retries (rank 0 not listening yet)
_HELLO = struct.Struct("!4sII")  # magic, rank, world size: what a rank sends rank 0
_MAGIC = b"FVID"


class DistributedError(RuntimeError):
    """Ranks could not find each other or disagree; the message says which and what to check."""


# ------------------------------------------------------------------------------------------------
# RANK DISCOVERY


@dataclasses.dataclass(frozen=True)
class Launch:
    """This process's place in the job. launcher: 'env' (RANK/WORLD_SIZE: torchrun, or --train.gpus),
    'mpi' (mpirun/mpiexec), 'slurm' (srun) or 'single' (one process). rendezvous_port: where rank 0 serves
    the NCCL unique id (MASTER_PORT, or MASTER_PORT + 1 under torchrun, whose own store holds MASTER_PORT)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    master_addr: str | None = None
    rendezvous_port: int = DEFAULT_PORT
    launcher: str = "single"


def _int(environ, *names) -> int | None:
    for name in names:
        value = environ.get(name)
        if value not in (None, ""):
            try:
                return int(value)
            except ValueError:
                raise DistributedError(f"{name}={value!r} is not an integer") from None
    return None


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list: 'gpu[03-05,9],login1' -> 'gpu03' (padding kept)."""
    depth, end = 0, len(nodelist)
    for i, ch in enumerate(nodelist):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            end = i
            break
    host, out, i = nodelist[:end].strip(), "", 0
    while i < len(host):
        if host[i] == "[":
            close = host.index("]", i)
            out += host[i + 1:close].split(",")[0].split("-")[0]
            i = close + 1
        else:
            out += host[i]
            i += 1
    return out


def discover(environ=None) -> Launch:
    """Rank, world size, local rank and rank 0's address from the launcher's variables, in this order:
    RANK/WORLD_SIZE (torchrun and --train.gpus), Open MPI / PMI (mpirun), Slurm's srun step. Slurm counts
    only inside an srun step (SLURM_STEP_NUM_TASKS): a batch script's own shell also has SLURM_PROCID=0
    and SLURM_NTASKS, and would otherwise wait for ranks that never come."""
    env = os.environ if environ is None else environ
    addr = env.get("MASTER_ADDR") or None
    port = _int(env, "FASTVEC_RENDEZVOUS_PORT")
    master_port = _int(env, "MASTER_PORT")
    if _int(env, "RANK") is not None and _int(env, "WORLD_SIZE") is not None:
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
        local = _int(env, "LOCAL_RANK")
        launcher = "env"
        if port is None and master_port is not None:
            port = master_port + 1 if env.get("TORCHELASTIC_RUN_ID") else master_port
    elif _int(env, "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK") is not None:
        rank = _int(env, "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
        world = _int(env, "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS")
        if world is None:
            raise DistributedError("MPI rank found but no world size (OMPI_COMM_WORLD_SIZE or PMI_SIZE); "
                                   "start the ranks with mpirun/mpiexec")
        local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID")
        launcher = "mpi"
    elif _int(env, "SLURM_STEP_NUM_TASKS") is not None and _int(env, "SLURM_PROCID") is not None:
        rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_STEP_NUM_TASKS")
        local = _int(env, "SLURM_LOCALID")
        launcher = "slurm"
        nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
        if addr is None and nodes:
            addr = first_host(nodes)  # srun places rank 0 on the step's first node
        if port is None and master_port is None and _int(env, "SLURM_JOB_ID") is not None:
            port = 20000 + _int(env, "SLURM_JOB_ID") % 20000  # jobs sharing a node pick different ports
    else:
        return Launch()
    if port is None:
        port = master_port if master_port is not None else DEFAULT_PORT
    if world < 1 or not 0 <= rank < world:
        raise DistributedError(f"rank {rank} of world size {world} (from the {launcher} variables) is impossible")
    return Launch(rank=rank, world_size=world, local_rank=rank if local is None else local, master_addr=addr,
                  rendezvous_port=port, launcher=launcher)


# ------------------------------------------------------------------------------------------------
# NCCL UNIQUE ID EXCHANGE


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise DistributedError(f"the rendezvous connection closed after {len(data)} of {size} bytes")
        data += chunk
    return data


def serve_unique_id(unique_id: bytes, port: int, world_size: int, timeout: float = RENDEZVOUS_TIMEOUT,
                    host: str = "", ready=None) -> None:
    """Rank 0: listen on host:port and hand `unique_id` to each of the other world_size - 1 ranks (each says
    its rank and world size first; a mismatch fails both sides). `ready` (threading.Event) is set once
    listening. Returns when every rank has its copy."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind((host, port))
        except OSError as err:
            raise DistributedError(f"rank 0 cannot listen on port {port} for the NCCL id exchange ({err}); set "
                                   f"MASTER_PORT (or FASTVEC_RENDEZVOUS_PORT) to a free port") from None
        server.listen(world_size)
        if ready is not None:
            ready.set()
        deadline = time.monotonic() + timeout
        seen: set[int] = set()
        while len(seen) < world_size - 1:
            server.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                conn, _ = server.accept()
            except TimeoutError:
                missing = sorted(set(range(1, world_size)) - seen)
                raise DistributedError(f"rank 0 waited {timeout:.0f} s on port {port} and ranks {missing} never "
                                       f"connected; check that every rank was started with the same MASTER_ADDR "
                                       f"and MASTER_PORT and can reach this host") from None
            with conn:
                conn.settimeout(HELLO_WAIT)
                try:
                    hello = _recv_exact(conn, _HELLO.size)
                except (DistributedError, OSError):  # closed or silent before a whole hello (a port probe, say):
                    continue  # no fastvec rank, which says its hello at once; it gets no answer
                magic, rank, world = _HELLO.unpack(hello)
                problem = None
                if magic != _MAGIC:
                    problem = "a connection that is not a fastvec rank"
                elif world != world_size:
                    problem = f"rank {rank} says the world size is {world}, rank 0 says {world_size}"
                elif not 0 < rank < world_size or rank in seen:
                    problem = f"rank {rank} is out of range or connected twice (world size {world_size})"
                if problem:
                    conn.sendall(b"NO" + problem.encode()[:len(unique_id)].ljust(len(unique_id)))
                    if magic == _MAGIC:
                        raise DistributedError(f"NCCL id exchange: {problem}")
                    continue
                conn.sendall(b"OK" + unique_id)
                seen.add(rank)


def fetch_unique_id(addr: str, port: int, rank: int, world_size: int, size: int = 128,
                    timeout: float = RENDEZVOUS_TIMEOUT) -> bytes:
    """Ranks 1..N-1: connect to rank 0 at addr:port (retrying until `timeout`, since rank 0 may start
    later) and receive the `size`-byte unique id."""
    deadline = time.monotonic() + timeout
    delay, last_error = 0.05, None
    while time.monotonic() < deadline:
        try:
            wait = max(min(CONNECT_WAIT, deadline - time.monotonic()), 0.1)
            with socket.create_connection((addr, port), timeout=wait) as conn:
                # Once connected, wait for the answer as long as the rendezvous lasts: rank 0 serves one connection
                # at a time, and a rank that gave up on this one would find itself served already when it retries.
                conn.settimeout(max(deadline - time.monotonic(), 0.1))
                conn.sendall(_HELLO.pack(_MAGIC, rank, world_size))
                reply = _recv_exact(conn, 2 + size)
            if reply[:2] != b"OK":
                raise DistributedError(f"rank 0 refused rank {rank}: {reply[2:].decode(errors='replace').strip()}")
            return reply[2:]
        except (ConnectionRefusedError, TimeoutError, socket.gaierror, OSError) as err:
            if isinstance(err, DistributedError):
                raise
            last_error = err
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    raise DistributedError(f"rank {rank} could not get the NCCL id from rank 0 at {addr}:{port} within {timeout:.0f} s "
                           f"({last_error}); check MASTER_ADDR (rank 0's host), MASTER_PORT, and that rank 0 started")


def _is_loopback(addr: str | None) -> bool:
    return addr in ("localhost", "::1") or bool(addr and addr.startswith("127."))


def exchange_unique_id(launch: Launch, make_id, size: int = 128, timeout: float = RENDEZVOUS_TIMEOUT) -> bytes:
    """The NCCL unique id every rank must share: rank 0 calls make_id() and sends it, through mpi4py's
    broadcast under an MPI launcher when mpi4py is installed, else through the TCP rendezvous on
    MASTER_ADDR:port (rank 0 listens on loopback only when MASTER_ADDR is a loopback address)."""
    if launch.world_size == 1:
        return make_id()
    if launch.launcher == "mpi":
        try:
            from mpi4py import MPI
        except ImportError:
            MPI = None
        if MPI is not None:
            comm = MPI.COMM_WORLD
            if comm.Get_size() != launch.world_size:
                raise DistributedError(f"MPI says world size {comm.Get_size()}, the environment {launch.world_size}")
            return comm.bcast(make_id() if launch.rank == 0 else None, root=0)
    if not launch.master_addr:
        hint = "pip install mpi4py, or " if launch.launcher == "mpi" else ""
        raise DistributedError(f"rank {launch.rank} of {launch.world_size} ({launch.launcher}) does not know rank 0's "
                               f"address for the NCCL id exchange: {hint}export MASTER_ADDR=<rank 0's host> "
                               f"MASTER_PORT=<a free port> for every rank")
    if launch.rank == 0:
        unique_id = make_id()
        host = launch.master_addr if _is_loopback(launch.master_addr) else ""
        serve_unique_id(unique_id, launch.rendezvous_port, launch.world_size, timeout, host=host)
        return unique_id
    return fetch_unique_id(launch.master_addr, launch.rendezvous_port, launch.rank, launch.world_size, size, timeout)


# ------------------------------------------------------------------------------------------------
# GPUS


def visible_gpu_count() -> int:
    """CUDA devices this process can see (honours CUDA_VISIBLE_DEVICES); 0 without a driver. Uses the
    driver API directly, creating no context, so forked or spawned ranks are unaffected."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int()
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def visible_devices(count: int, environ=None) -> list[str]:
    """The device names to hand one to each rank: CUDA_VISIBLE_DEVICES' entries, or '0'..'count-1'."""
    env = os.environ if environ is None else environ
    listed = [d.strip() for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return listed[:count] if "CUDA_VISIBLE_DEVICES" in env else [str(i) for i in range(count)]


def select_gpu(local_rank: int, environ=None) -> None:
    """Pin this rank to one GPU before CUDA starts: CUDA_VISIBLE_DEVICES becomes the local_rank-th
    visible device (kept as is when the launcher already gave this rank exactly one, as srun
    --gpus-per-task=1 and --train.gpus do). The CUDA trainer then uses device 0."""
    env = os.environ if environ is None else environ
    listed = [d.strip() for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if "CUDA_VISIBLE_DEVICES" in env and len(listed) == 1:
        return
    if "CUDA_VISIBLE_DEVICES" in env:
        if local_rank >= len(listed):
            raise DistributedError(f"local rank {local_rank} has no GPU: CUDA_VISIBLE_DEVICES="
                                   f"{env['CUDA_VISIBLE_DEVICES']!r} lists {len(listed)}; start at most one rank "
                                   f"per GPU")
        env["CUDA_VISIBLE_DEVICES"] = listed[local_rank]
        return
    env["CUDA_VISIBLE_DEVICES"] = str(local_rank)


def check_gpus(requested: int, available: int, device: str) -> None:
    """Refuse a --train.gpus this machine cannot give, before any process starts."""
    if device == "cpu":
        raise ConfigError(f"train.gpus={requested} runs the CUDA trainer on every GPU, but train.device=cpu; "
                          f"drop --train.device=cpu, or use --train.gpus=1 for the CPU trainer")
    if requested > available:
        seen = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f" (CUDA_VISIBLE_DEVICES={seen!r})" if seen is not None else ""
        raise ConfigError(f"train.gpus={requested}, but this machine shows {available} CUDA GPU(s){where}; "
                          f"lower --train.gpus to at most {max(available, 1)}, or start ranks on several machines "
                          f"(docs/multi-gpu.md)")


# ------------------------------------------------------------------------------------------------
# CHECKS


def check_in_sync(trainer, group) -> float:
    """The largest |params - rank 0's params| on this rank after training (0.0 when the ranks stayed
    in step, as they must: same start, same averaged gradients). Uses the gradient buffer as scratch."""
    cuda, a, p = trainer.cuda, trainer.arena, trainer.layout.size
    cuda.memcpy_dtod_async(a.ptr("grads"), a.ptr("params"), p * 4, trainer.stream)
    group.broadcast(a.ptr("grads"), p, trainer.stream.handle)
    trainer.stream.synchronize()
    return float(np.abs(a.get(cuda, "grads") - a.get(cuda, "params")).max())


# ------------------------------------------------------------------------------------------------
# RUNNING: one rank, or --train.gpus=N ranks on this machine


def launched(environ=None) -> bool:
    """True when a launcher (torchrun, srun, mpirun, --train.gpus) started this process as one of several."""
    return discover(environ).world_size > 1


def train(config: Config, run_dir: Path, resume: bool, dashboard: bool | None, train_rank) -> dict:
    """run.train for several GPUs: this process's rank when a launcher started it, else start
    train.gpus ranks on this machine and return rank 0's summary. train_rank(config, run_dir, resume,
    dashboard) is fastvec-train's one-process loop, which a rank runs with its group active."""
    launch = discover()
    if launch.world_size > 1:
        return run_rank(config, Path(run_dir), resume, dashboard, launch, train_rank)
    return spawn(config, Path(run_dir), resume, dashboard)


def run_rank(config: Config | dict, run_dir: Path, resume: bool, dashboard: bool | None, launch: Launch,
             train_rank) -> dict:
    """Train as one rank: pin the GPU, build the NCCL communicator, run fastvec-train's loop (train_rank)
    with the CUDA trainer all-reducing through it. Ranks other than 0 write their logs and checkpoints to
    a scratch directory that is deleted at the end, and print nothing."""
    config = Config.of(config)
    # what validate() refuses for train.gpus > 1, for launched ranks too
    check_world_size(config.to_dict(), launch.world_size)
    if config.train.device == "cpu":
        check_gpus(launch.world_size, launch.world_size, "cpu")
    select_gpu(launch.local_rank)
    from fastvec.trainer.cuda import device, nccl

    device.init()  # CudaUnavailable says why this rank has no GPU
    unique_id = exchange_unique_id(launch, nccl.get_unique_id, nccl.UNIQUE_ID_BYTES)
    comm = nccl.Communicator(unique_id, launch.world_size, launch.rank)
    config = config.replace("train", device="cuda")
    scratch = None
    if launch.rank != 0:
        # under --train.gpus inside the parent's work directory, which it deletes even if it kills this rank
        scratch = Path(tempfile.mkdtemp(prefix=f"fastvec-rank{launch.rank}-",
                                        dir=os.environ.get("FASTVEC_RANK_SCRATCH") or None))
        if resume:  # every rank resumes from the same file; rank 0 cannot write a newer one before we copy
            from fastvec.trainer import checkpoint
            (scratch / "checkpoints").mkdir()
            shutil.copy2(checkpoint.latest(run_dir), scratch / "checkpoints")
        sys.stdout = open(os.devnull, "w")  # rank 0 alone reports
        dashboard = False
    group = nccl.ProcessGroup(launch.rank, launch.world_size, comm)
    nccl.set_active_group(group)
    ok = False
    try:
        summary = train_rank(config, scratch or run_dir, resume, dashboard)
        trainer = summary["trainer"]
        # An interrupted rank 0 skips the check: the other ranks are still in training's collectives.
        summary["params_drift"] = None if summary["interrupted"] else check_in_sync(trainer, group)
        if summary["params_drift"]:
            print(f"fastvec-train: warning: rank {launch.rank}'s weights differ from rank 0's by up to "
                  f"{summary['params_drift']:.3g} after training", file=sys.stderr)
        trainer.close()
        ok = not summary["interrupted"]
    finally:
        nccl.set_active_group(None)
        if ok:
            comm.destroy()
        else:  # after an error or Ctrl-C a peer may never answer
            comm.abort()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    summary["run_dir"] = run_dir
    summary["rank"], summary["world_size"] = launch.rank, launch.world_size
    return summary


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(config: Config, run_dir: Path, resume: bool, dashboard: bool | None) -> dict:
    """--train.gpus=N on this machine: N processes (distributed.main), rank r on
    GPU r of those visible; waits for them and returns rank 0's summary. A rank that fails stops the
    others (they would wait for it forever); Ctrl-C lets rank 0 save a checkpoint first."""
    gpus = config.train.gpus
    check_gpus(gpus, visible_gpu_count(), config.train.device)
    from fastvec.trainer.config import to_toml
    from fastvec.trainer.cuda import nccl

    nccl.load()  # NcclUnavailable (with the pip command) before any rank starts
    devices = visible_devices(gpus)
    work = Path(tempfile.mkdtemp(prefix="fastvec-gpus-"))
    config_path, summary_path = work / "config.toml", work / "summary.json"
    config_path.write_text(to_toml(config.to_dict()))
    port = _free_port()
    procs = []
    try:
        for rank in range(gpus):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(gpus), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(gpus), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       CUDA_VISIBLE_DEVICES=devices[rank], FASTVEC_SUMMARY=str(summary_path) if rank == 0 else "",
                       FASTVEC_RANK_SCRATCH=str(work))
            env.pop("TORCHELASTIC_RUN_ID", None)
            env.pop("FASTVEC_RENDEZVOUS_PORT", None)
            # Not `python -m`: that runs a second copy of a module as __main__, beside the imported one the
            # rest of the package uses.
            cmd = [sys.executable, "-c", "import sys; from fastvec.trainer.run import rank_main; sys.exit(rank_main())",
                   str(config_path), str(run_dir)]
            cmd += ["--resume"] * resume + ([f"--dashboard={int(dashboard)}"] if dashboard is not None else [])
            procs.append(subprocess.Popen(cmd, env=env, stdout=None if rank == 0 else subprocess.DEVNULL))
        _wait(procs)
        if not summary_path.exists():
            raise DistributedError("rank 0 finished without writing its summary; see its output above")
        summary = json.loads(summary_path.read_text())
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    summary["run_dir"] = Path(summary["run_dir"])
    summary["checkpoint"] = Path(summary["checkpoint"]) if summary["checkpoint"] else None
    summary["trainer"] = None
    return summary


def _wait(procs: list) -> None:
    """Wait for every rank; raise if one failed (after stopping the rest). On Ctrl-C (which every rank in
    the terminal's process group also gets) wait for rank 0 to save its checkpoint, then stop the rest."""
    try:
        while True:
            codes = [proc.poll() for proc in procs]
            for rank, code in enumerate(codes):
                if code not in (None, 0) and not (rank == 0 and code == 130):
                    raise DistributedError(f"rank {rank} of {len(procs)} failed with exit code {code} (its error is "
                                           f"above); the other ranks were stopped")
            if codes[0] == 130 or all(code == 0 for code in codes):  # after 130 the rest wait on rank 0 forever
                return
            time.sleep(0.1)
    except KeyboardInterrupt:
        procs[0].wait()


def main(argv: list[str] | None, train_rank) -> int:
    """One rank started by spawn() (through run.rank_main, which passes train_rank):
    CONFIG.toml RUN_DIR [--resume] [--dashboard=0|1]."""
    from fastvec.trainer.config import load_toml

    args = sys.argv[1:] if argv is None else argv
    launch = discover()
    if launch.rank != 0:  # Ctrl-C goes to rank 0 (it saves a checkpoint); the parent then stops the rest
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    dashboard = None
    for arg in args[2:]:
        if arg.startswith("--dashboard="):
            dashboard = arg.endswith("1")
    summary = run_rank(load_toml(Path(args[0])), Path(args[1]), "--resume" in args, dashboard, launch, train_rank)
    path = os.environ.get("FASTVEC_SUMMARY")
    if launch.rank == 0 and path:
        keep = {k: v for k, v in summary.items() if k != "trainer"}
        Path(path).write_text(json.dumps(keep, default=str))
    return 130 if summary["interrupted"] else 0

