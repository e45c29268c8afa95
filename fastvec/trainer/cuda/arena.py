"""The trainer's one device allocation: every tensor is registered first (name, shape, dtype, a shape
comment), then all are carved out of a single cuMemAlloc at 256-byte-aligned offsets. Pointers never
change after start-up, which is what lets the rollout and the update be captured as CUDA graphs, and
parameters, gradients and optimizer state are each one flat buffer (one kernel zeroes, clips or steps)."""

from __future__ import annotations

import math

import numpy as np

ALIGN = 256


class Arena:
    """arena.add("obs", (T + 1, R, O), np.float32, "observations; slot T is the next rollout's first")
    ... arena.allocate(); arena.ptr("obs") -> int device address; arena.get/set for host copies."""

    def __init__(self):
        self.entries: dict[str, tuple[int, tuple[int, ...], np.dtype, str]] = {}  # name -> offset, shape, dtype, doc
        self.size = 0
        self.allocation = None
        self.base = 0

    def add(self, name: str, shape: tuple[int, ...], dtype, doc: str = "") -> None:
        if self.allocation is not None:
            raise RuntimeError(f"arena tensor {name!r} registered after allocate(); register everything first")
        if name in self.entries:
            raise ValueError(f"arena tensor {name!r} registered twice")
        shape = tuple(int(s) for s in shape)
        dtype = np.dtype(dtype)
        offset = (self.size + ALIGN - 1) // ALIGN * ALIGN
        self.entries[name] = (offset, shape, dtype, doc)
        self.size = offset + math.prod(shape) * dtype.itemsize

    def nbytes(self, name: str) -> int:
        _, shape, dtype, _ = self.entries[name]
        return math.prod(shape) * dtype.itemsize

    def allocate(self, cuda) -> None:
        """One allocation for everything, zeroed (buffers that kernels accumulate into start at 0)."""
        self.allocation = cuda.mem_alloc(max(self.size, ALIGN))
        self.base = int(self.allocation)
        cuda.memset_d8(self.base, 0, max(self.size, ALIGN))

    def ptr(self, name: str, offset_elements: int = 0) -> int:
        """Device address of tensor `name`, plus offset_elements of its dtype."""
        offset, _, dtype, _ = self.entries[name]
        return self.base + offset + int(offset_elements) * dtype.itemsize

    def get(self, cuda, name: str) -> np.ndarray:
        """A host copy of tensor `name` (synchronous)."""
        _, shape, dtype, _ = self.entries[name]
        out = np.empty(shape, dtype)
        cuda.memcpy_dtoh(out, self.ptr(name))
        return out

    def set(self, cuda, name: str, value: np.ndarray) -> None:
        """Copy a host array into tensor `name` (synchronous; shape and dtype must match)."""
        _, shape, dtype, _ = self.entries[name]
        value = np.ascontiguousarray(value, dtype)
        if value.shape != shape:
            raise ValueError(f"arena tensor {name!r} is {shape}, got an array of shape {value.shape}")
        cuda.memcpy_htod(self.ptr(name), value)

    def describe(self) -> str:
        """One line per tensor: offset, bytes, shape, dtype, comment (the arena's map)."""
        lines = [f"arena: {self.size:,} bytes in {len(self.entries)} tensors"]
        for name, (offset, shape, dtype, doc) in self.entries.items():
            lines.append(f"  {offset:>12,} {self.nbytes(name):>12,}  {name:<16} {str(shape):<22} {dtype.name:<8} {doc}")
        return "\n".join(lines)
