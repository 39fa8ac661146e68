"""Main memory and the 64 local data memories (LDM) of one simulated SW26010 core group.

Main memory is a flat, byte-addressable space backed by a growable numpy ``uint8`` array;
allocations are 128-byte aligned (the DMA transaction size, 004 L481, L657/L865 "allocate
everything 128-B aligned") and every access must lie inside one allocation. Each CPE owns a
64 KB LDM (004 L460); the 64 LDMs are one ``(64, 65536)`` ``uint8`` array. All contents are
real bytes: DMA copies bytes, micro-kernels view the LDM as ``float64``/``float32``.

Errors: :class:`MemoryBoundsError` (a :class:`SimError`) for any access outside an allocation
or outside an LDM.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np


class SimError(Exception):
    """Base class of every error raised by the core-group simulator."""


class MemoryBoundsError(SimError):
    """An access outside an allocated main-memory buffer or outside a CPE's LDM."""


MAIN_MEMORY_BASE = 0x10000
"""Byte address of the first main-memory allocation (any multiple of 128 would do)."""

MAIN_MEMORY_BYTES = 32 << 30
"""Main memory a program may allocate, bytes: the chip's 4 x 8 GB DDR3, one address space that
every MPE and CPE can access (004 L451, L464). A larger allocation is refused up front (a
``MemoryBoundsError`` naming the buffer) instead of failing inside numpy."""


@dataclass(frozen=True)
class Allocation:
    """One main-memory buffer: ``[addr, addr + nbytes)``; ``name`` is for diagnostics."""

    addr: int
    nbytes: int
    name: str


class MainMemory:
    """Byte-addressable main memory of one core group (8 GB DDR3 per CG, 004 L451 — only the
    allocated bytes are materialised).

    Addresses are plain integers (bytes). ``alloc`` returns 128-B aligned addresses by default.
    """

    def __init__(self, txn_bytes: int = 128, materialize: bool = True) -> None:
        self.txn_bytes = txn_bytes
        #: False: only the allocation table is kept (timing-only simulation); reads return
        #: zeros, writes are dropped
        self.materialize = materialize
        self._data = np.zeros(1 << 16 if materialize else 0, dtype=np.uint8)
        self._top = MAIN_MEMORY_BASE
        self._starts: list[int] = []
        self._allocs: list[Allocation] = []

    # -- allocation ---------------------------------------------------------------------
    def alloc(self, nbytes: int, name: str = "", align: int | None = None) -> int:
        """Allocate ``nbytes`` (> 0) bytes, aligned to ``align`` (default 128 B); zero-filled."""
        if nbytes <= 0:
            raise MemoryBoundsError(f"allocation '{name}' of {nbytes} bytes: size must be > 0")
        align = align or self.txn_bytes
        addr = -(-self._top // align) * align
        end = addr + nbytes
        if end - MAIN_MEMORY_BASE > MAIN_MEMORY_BYTES:
            used = self._top - MAIN_MEMORY_BASE
            raise MemoryBoundsError(
                f"allocation '{name}' of {nbytes} bytes does not fit in main memory: "
                f"{used} bytes allocated before it, {MAIN_MEMORY_BYTES} in all (32 GB, 004 L451)")
        try:
            self._ensure(end)
        except MemoryError:
            raise MemoryBoundsError(
                f"allocation '{name}' of {nbytes} bytes: this host cannot hold the {end - MAIN_MEMORY_BASE} "
                "bytes of simulated main memory (simulate with --timing-only)") from None
        self._top = end
        self._starts.append(addr)
        self._allocs.append(Allocation(addr, nbytes, name or f"buf{len(self._allocs)}"))
        return addr

    def _ensure(self, end: int) -> None:
        if not self.materialize:
            return
        need = end - MAIN_MEMORY_BASE
        if need > self._data.size:
            new = np.zeros(max(need, 2 * self._data.size), dtype=np.uint8)
            new[: self._data.size] = self._data
            self._data = new

    @property
    def allocations(self) -> list[Allocation]:
        return list(self._allocs)

    def allocation_of(self, addr: int, nbytes: int = 1) -> Allocation:
        """The allocation containing ``[addr, addr + nbytes)``; raises ``MemoryBoundsError``."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            a = self._allocs[i]
            if addr + nbytes <= a.addr + a.nbytes:
                return a
            raise MemoryBoundsError(
                f"main-memory access [{addr:#x}, {addr + nbytes:#x}) overruns buffer "
                f"'{a.name}' [{a.addr:#x}, {a.addr + a.nbytes:#x})"
            )
        raise MemoryBoundsError(
            f"main-memory access [{addr:#x}, {addr + nbytes:#x}) is outside every allocation"
        )

    # -- access -------------------------------------------------------------------------
    def check_range(self, lo: int, hi: int) -> None:
        """Check that ``[lo, hi)`` lies inside one allocation."""
        self.allocation_of(lo, hi - lo)

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        """A copy of ``nbytes`` bytes at ``addr``."""
        self.allocation_of(addr, nbytes)
        if not self.materialize:
            return np.zeros(nbytes, dtype=np.uint8)
        o = addr - MAIN_MEMORY_BASE
        return self._data[o : o + nbytes].copy()

    def write(self, addr: int, data: np.ndarray) -> None:
        """Write the bytes of ``data`` (any dtype, C order) at ``addr``."""
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        self.allocation_of(addr, raw.size)
        if not self.materialize:
            return
        o = addr - MAIN_MEMORY_BASE
        self._data[o : o + raw.size] = raw

    def gather(self, index: np.ndarray) -> np.ndarray:
        """Bytes at absolute addresses ``index`` (already bounds-checked by the caller)."""
        return self._data[index - MAIN_MEMORY_BASE]

    def scatter(self, index: np.ndarray, values: np.ndarray) -> None:
        """Write bytes ``values`` to absolute addresses ``index`` (bounds-checked by the caller)."""
        self._data[index - MAIN_MEMORY_BASE] = values

    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """A writable ``uint8`` view of ``[addr, addr + nbytes)``."""
        self.allocation_of(addr, nbytes)
        o = addr - MAIN_MEMORY_BASE
        return self._data[o : o + nbytes]


class LDMArray:
    """The 64 local data memories: ``data[cpe, byte]``, each ``ldm_bytes`` (65 536) long.

    ``f64[cpe]`` / ``f32[cpe]`` are typed views used by micro-kernels (LDM addresses are byte
    offsets; fp64 accesses need 8-B alignment, fp32 4-B).
    """

    def __init__(self, n_cpes: int = 64, ldm_bytes: int = 65536) -> None:
        self.n_cpes = n_cpes
        self.ldm_bytes = ldm_bytes
        self.data = np.zeros((n_cpes, ldm_bytes), dtype=np.uint8)
        self.f64 = self.data.view(np.float64)
        self.f32 = self.data.view(np.float32)

    def check(self, cpe: int, addr: int, nbytes: int, what: str = "access") -> None:
        """Raise ``MemoryBoundsError`` unless ``[addr, addr + nbytes)`` is inside the 64 KB LDM."""
        if addr < 0 or nbytes < 0 or addr + nbytes > self.ldm_bytes:
            raise MemoryBoundsError(
                f"CPE {cpe}: LDM {what} [{addr}, {addr + nbytes}) outside the "
                f"{self.ldm_bytes}-byte LDM"
            )

    def read(self, cpe: int, addr: int, nbytes: int) -> np.ndarray:
        self.check(cpe, addr, nbytes, "read")
        return self.data[cpe, addr : addr + nbytes].copy()

    def write(self, cpe: int, addr: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        self.check(cpe, addr, raw.size, "write")
        self.data[cpe, addr : addr + raw.size] = raw
