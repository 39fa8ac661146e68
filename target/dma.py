"""The athread DMA rules every level shares (spec sw26010-model.md §4.2, §4.4; 004 L481, L597).

Pure arithmetic, no IR and no simulator state: the ``loop`` dialect verifies its DMA windows with
:func:`dma_pattern`, tile-to-loop splits windows by it, the analytic model and the simulator's DMA
engine cost transfers with :func:`moved` / :func:`moved_strided`.

* Main memory is accessed in ``mem_txn_bytes`` = 128-B transactions (004 L481): a contiguous
  range ``[a, a + s)`` moves ``128 * (ceil((a + s) / 128) - floor(a / 128))`` bytes.
* A strided descriptor ``(size, bsize, stride)`` (bytes; ``stride`` = bytes skipped between the
  end of a block and the next start, 004 L597) moves the sum over its blocks (eq 3-2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["block_starts", "dma_pattern", "moved", "moved_strided", "txn", "waste"]


# ---- transactions and waste (spec §4.4) ----------------------------------------------------
def txn(a: int, s: int, txn_bytes: int = 128) -> int:
    """128-B transactions touched by ``[a, a + s)``: ``ceil((a+s)/128) - floor(a/128)``."""
    return -(-(a + s) // txn_bytes) - a // txn_bytes


def moved(a: int, s: int, txn_bytes: int = 128) -> int:
    """Bytes moved for the contiguous range ``[a, a + s)`` (whole transactions)."""
    return txn_bytes * txn(a, s, txn_bytes)


def waste(a: int, s: int, txn_bytes: int = 128) -> int:
    """Bytes moved but not requested for ``[a, a + s)``."""
    return moved(a, s, txn_bytes) - s


def block_starts(addr: int, size: int, bsize: int, stride: int) -> np.ndarray:
    """Main-memory start address of every block of a descriptor (``bsize = 0``: one block).

    ``stride`` is the gap (bytes skipped) between the end of a block and the next start (L597).
    """
    if bsize == 0 or bsize == size and stride == 0:
        return np.array([addr], dtype=np.int64)
    nblk = size // bsize
    return addr + np.arange(nblk, dtype=np.int64) * (bsize + stride)


def moved_strided(addr: int, size: int, bsize: int, stride: int, txn_bytes: int = 128) -> int:
    """Bytes moved by a strided descriptor: ``Σ_i moved(a_i, bsize)`` (eq 3-2, spec §4.4)."""
    if bsize == 0 or bsize == size and stride == 0:
        return moved(addr, size, txn_bytes)
    # block i starts at a_i = addr + i*pitch; with r_i = a_i mod T it touches
    # ceil((r_i + bsize) / T) transactions, and r_i repeats with period T / gcd(pitch, T): sum one
    # period in closed form instead of every block (exact integers, no arrays)
    nblk = size // bsize
    if nblk <= 0:
        return 0
    pitch = bsize + stride
    period = min(nblk, txn_bytes // math.gcd(pitch % txn_bytes, txn_bytes))
    r0, step = addr % txn_bytes, pitch % txn_bytes
    per = [-(-((r0 + i * step) % txn_bytes + bsize) // txn_bytes) for i in range(period)]
    full, rest = divmod(nblk, period)
    return (full * sum(per) + sum(per[:rest])) * txn_bytes


def dma_pattern(
    mem_shape: Sequence[int], sizes: Sequence[int], elem_bytes: int, strides: Sequence[int] | None = None
) -> tuple[int, int, int] | None:
    """The single athread DMA moving the window ``sizes`` (element ``strides`` per dim, default
    1) of a row-major array ``mem_shape``: ``(size, bsize, stride)`` in bytes (``bsize = stride =
    0`` when contiguous; ``stride`` = bytes skipped between blocks, spec §4.2/L597), or None when
    the window is not one block repeated with a constant pitch. Blocks are the longest contiguous
    run (the innermost non-unit dims whose element pitch continues the run: stride 1 and every
    dim inside it full); the other non-unit dims must nest exactly (each one's pitch = the next
    inner one's size x pitch), so that they act as a single repeat count. (``loop.dma_start``
    verifies its window with it; tile-to-loop and the analytic model split / cost windows by it.)"""
    r = len(mem_shape)
    st = tuple(strides) if strides is not None else (1,) * r
    pitch = [math.prod(mem_shape[i + 1 :]) * st[i] for i in range(r)]
    dims = [i for i in range(r) if sizes[i] != 1]
    run = 1
    k = len(dims)
    while k > 0 and pitch[dims[k - 1]] == run:
        run *= sizes[dims[k - 1]]
        k -= 1
    outer = dims[:k]
    if not outer:
        return (run * elem_bytes, 0, 0)
    for a, b in zip(outer, outer[1:]):
        if pitch[a] != sizes[b] * pitch[b]:
            return None
    inner = outer[-1]
    blocks = math.prod(sizes[i] for i in outer)
    if pitch[inner] < run:  # overlapping repeats (cannot happen for in-bounds windows)
        return None
    return (blocks * run * elem_bytes, run * elem_bytes, (pitch[inner] - run) * elem_bytes)
