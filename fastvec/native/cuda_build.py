"""An env compiled for a GPU through gpu.py (`CudaCompiledEnv`: its module, kernels and the sizes and spaces it
declares) and the per-process loader (`load`); cuda.py's CudaBatch steps copies of one."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np

from fastvec.native import NATIVE_DIR, check_define_names
from fastvec.native.cpu import memoized_build
from fastvec.native.env_file import check_env_file_defines
from fastvec.native.gpu import ENV_INCLUDE, load_module, primary_context
from fastvec.native.spaces import MAX_OBS_DIMS, EnvSpaces

THREADS_PER_BLOCK = 256
# The step kernels of batch_gpu.h by name: all give the same bits; cuda.step_kernel_name picks one.
STEP_KERNEL_NAMES = ("staged_wide", "wide", "wide_occ")
# The fused random rollout's kernels (random_gpu.h) by name: a block's slots and obs in shared memory; each env's in
# its thread's registers; the same with the registers capped at 128 (two blocks of 256 threads an SM).
ROLLOUT_KERNELS = {"staged": "fv_rollout_random_staged_kernel", "plain": "fv_rollout_random_kernel",
                   "occ": "fv_rollout_random_occ_kernel"}
# Their arguments in pycuda letters (i int32, q int64, Q uint64, P pointer): n, slots, actions, env, agent
# and dimension strides, action bytes, signed, the nine output buffers, autoreset mode, max_episode_steps, error.
STEP_KERNEL_ARGS = "iPPqqqii" + "P" * 9 + "iiP"

def parse_device(device) -> int:
    """The CUDA ordinal of "cuda", "cuda:N" (or a torch.device); errors name the accepted forms."""
    text = str(device)
    match = re.fullmatch(r"cuda(?::(\d+))?", text)
    if match is None:
        raise ValueError(f"device={device!r} is not one of 'cpu', 'cuda', 'cuda:N'")
    return int(match.group(1) or 0)


def env_source(env_path: Path | None = None) -> str:
    """The translation unit of an env on the GPU: the env file, batch.h and batch_gpu.h. The env is
    included as gpu.ENV_INCLUDE, the copy that load_module(..., env_path=) puts beside the source, so its
    file name never becomes source text (env_path is not used; it stays for callers that pass it)."""
    return f'#include "{ENV_INCLUDE}"\n#include "batch.h"\n#include "batch_gpu.h"\n'


def _read_global(module, name: str, dtype, count: int = 1) -> np.ndarray:
    drv = sys.modules["pycuda.driver"]
    ptr, size = module.get_global(name)
    out = np.zeros(size // np.dtype(dtype).itemsize if count is None else count, dtype)
    drv.memcpy_dtoh(out, ptr)
    return out


class CudaCompiledEnv:
    """An env compiled for one GPU (module, kernels) and the sizes it declares, with the same
    attribute names as cpu.CompiledEnv."""

    def __init__(self, env_path: Path, defines: dict, device_index: int):
        self.device_index = device_index
        self.env_path, self.defines = env_path, dict(defines)
        self.name = env_path.stem
        self.module = load_module(env_source(), include_dirs=[NATIVE_DIR, env_path.parent],
                                  defines=check_define_names(defines), name=f"env-{self.name}",
                                  device_index=device_index, env_path=env_path)
        self.context = primary_context(device_index)
        ints = {k: int(_read_global(self.module, "fv_" + k, np.int32)[0]) for k in
                ["obs_size", "num_actions", "num_agents", "num_stats", "slot_size", "obs_bytes", "state_size",
                 "book_size", "action_kind", "action_dims", "state_values", "action_mask", "world_state_size"]}
        self.obs_size, self.num_actions = ints["obs_size"], ints["num_actions"]
        self.num_agents, self.slot_size = ints["num_agents"], ints["slot_size"]
        # The slots on the GPU are split into states, books and RNGs (batch_gpu.h): their sizes.
        self.state_size, self.book_size = ints["state_size"], ints["book_size"]
        self.obs_dtype = np.dtype(np.float32) if ints["obs_bytes"] == 4 else np.dtype(np.uint8)
        names = _read_global(self.module, "fv_stat_names", np.uint8, None).tobytes().split(b"\0")[0].decode()
        self.stat_names = [s.strip() for s in names.split(",") if s.strip()]
        if len(self.stat_names) != ints["num_stats"]:
            raise ValueError(f"{self.name}: STAT_NAMES lists {len(self.stat_names)} names but NUM_STATS is {ints['num_stats']}")
        self.spaces = read_spaces(self.module, self.name, self.obs_size, self.obs_dtype, ints)
        self.action_kind, self.action_dims = self.spaces.action_kind, self.spaces.action_dims
        # state_size is sizeof(State) here (the split slots); the state access's values are spaces.state_size.
        self.action_dtype = self.spaces.action_dtype
        # fastvec.h's optional hooks, as cpu.CompiledEnv's: masks per agent, a world state's size (0: none)
        self.action_mask, self.world_state_size = bool(ints["action_mask"]), max(ints["world_state_size"], 0)
        self.observe_kernel = self.module.get_function("fv_observe_kernel").prepare("iPPPP")
        # pycuda argument formats: i int32, q int64, Q uint64, P pointer.
        self.get_state_kernel = self.module.get_function("fv_get_state_kernel").prepare("iPiPP")
        self.set_state_kernel = self.module.get_function("fv_set_state_kernel").prepare("iPiPPP")
        self.reset_kernel = self.module.get_function("fv_reset_split_kernel").prepare("iPPPP")
        self.random_actions_kernel = self.module.get_function("fv_random_actions_kernel").prepare("iQqP")
        self.rollout_kernels = {name: self.module.get_function(kernel).prepare("iiQqP" + "P" * 9 + "ii")
                                for name, kernel in ROLLOUT_KERNELS.items()}
        # The staged kernels pass each block's slots and obs through shared memory (batch_gpu.h);
        # stage_threads is their block size, 0 where an env's slot and obs are too big for it.
        self.stage_threads = int(_read_global(self.module, "fv_stage_threads", np.int32)[0])
        self.step_kernels = {name: self.module.get_function(f"fv_step_{name}_kernel").prepare(STEP_KERNEL_ARGS)
                             for name in STEP_KERNEL_NAMES}
        # wide_occ is wide bounded to 5 blocks of 256 threads per SM: taken where that is more blocks
        # than wide gets and costs no spills (more local memory).
        wide, occ = self.step_kernels["wide"], self.step_kernels["wide_occ"]
        self.wide_kernel_name = "wide_occ" if resident_blocks(occ.num_regs) > resident_blocks(wide.num_regs) and \
            occ.local_size_bytes <= wide.local_size_bytes else "wide"

    @property
    def cpu(self):
        """The same env built for the CPU (for render(), which draws on the host)."""
        from fastvec.native import cpu

        compiled = cpu.load(self.env_path, tuple(sorted(self.defines.items())))
        if compiled.slot_size != self.slot_size:
            raise RuntimeError(f"{self.name}: slot layout differs between nvcc ({self.slot_size} B) and the C compiler "
                               f"({compiled.slot_size} B); render() needs them equal")
        return compiled

    @property
    def render_shape(self):
        return self.cpu.render_shape

    def slots_bytes(self, num_envs: int) -> int:
        """Bytes of the slots of num_envs envs on the GPU: states, books, RNGs (16 B each), the first
        two rounded up to 256 B, as batch_gpu.h's fv_split_of lays them out."""
        round_up = lambda b: -(-b // 256) * 256
        return round_up(num_envs * self.state_size) + round_up(num_envs * self.book_size) + num_envs * 16


def read_spaces(module, name: str, obs_size: int, obs_dtype, ints: dict) -> EnvSpaces:
    """The spaces a GPU module declares (batch_gpu.h's fv_spaces_kernel, run once by one thread)."""
    drv = sys.modules["pycuda.driver"]
    dims = ints["action_dims"]
    host = {"shape": np.zeros(MAX_OBS_DIMS, np.int32), "obs_low": np.zeros(obs_size, np.float32),
            "obs_high": np.zeros(obs_size, np.float32), "nvec": np.zeros(dims, np.int64),
            "action_low": np.zeros(dims, np.float32), "action_high": np.zeros(dims, np.float32),
            "ndim": np.zeros(1, np.int32)}
    dev = {k: drv.mem_alloc(v.nbytes) for k, v in host.items()}
    module.get_function("fv_spaces_kernel")(*dev.values(), block=(1, 1, 1), grid=(1, 1))
    for k, v in host.items():
        drv.memcpy_dtoh(v, dev[k])
    return EnvSpaces.from_arrays(name, ints["action_kind"], obs_size, obs_dtype, int(host["ndim"][0]), host["shape"],
                                 host["obs_low"], host["obs_high"], host["nvec"], host["action_low"],
                                 host["action_high"], ints["state_values"])


def load(env_path: Path, defines: tuple, device_index: int = 0) -> CudaCompiledEnv:
    """Compile (or fetch from gpu.py's disk cache) and load an env on a GPU, memoized per process while what its
    build reads is unchanged (cpu.memoized_build), as the CPU backend's load: an edited env file loads its new
    build. A user's env file takes only the parameters it declares, checked before any GPU is asked for."""
    env_file = Path(os.path.abspath(env_path))
    if env_file.parent != NATIVE_DIR:  # a built-in env's parameters are the registry's (resolve_defines)
        check_env_file_defines(env_file, check_define_names(dict(defines)))
    return memoized_build(_loaded, (env_file, tuple(defines), device_index), env_file,
                          lambda: CudaCompiledEnv(Path(env_path), dict(defines), device_index))


_loaded: dict[tuple, tuple[tuple, CudaCompiledEnv]] = {}


def resident_blocks(registers: int, threads: int = THREADS_PER_BLOCK) -> int:
    """Blocks of `threads` threads using `registers` registers each (no shared memory) that fit on one
    SM of compute capability 9.0 (and 7.0-8.x): 65,536 registers, allocated per warp in units of
    256; at most 2,048 threads and 32 blocks."""
    per_warp = -(-registers * 32 // 256) * 256
    return max(1, min(65536 // (per_warp * (threads // 32)), 2048 // threads, 32))
