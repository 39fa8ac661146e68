"""DMA inference for ``tile.move``: pure planning helpers (no IR), used by ``convert-tile-to-loop``.

A ``tile.move`` moves a window of a main-memory array (per dim ``d``: ``offset_d + i*stride_d``,
``0 <= i < size_d``) to or from a tile distributed over the 8x8 CPE mesh. Each CPE moves its
*piece*: the part of the window that maps to its local block (``rc``/``cr``/``cpe``/``rep``
distribution of :class:`taihu.dialects.tile.TileBufType`). This module answers, statically:

* :func:`tile_dims_of_window` -- which memref dim carries which tile dim (unit dims dropped, like
  a rank-reducing ``memref.subview``);
* :func:`cpe_blocks` -- per tile dim, the CPE-dependent start ``a*row + b*col`` and the extent
  of the local block, with the CPE classes of a ragged ``cpe`` distribution (full / partial last
  / empty CPEs);
* :func:`clip_cases` -- for boundary windows (``pad`` loads / ``clip`` stores), the distinct
  in-bounds sub-ranges a piece can have along one dim, each with the interval of piece starts
  that produces it (004 §4.2.4 L883-889 / algorithms.md §E6: the padded elements are filled in
  LDM, only the valid part is transferred; nothing outside the array is touched);
* :func:`split_box` -- the split of a (sub-)box of a piece into DMAs that are each ONE athread
  DMA (:func:`taihu.dialects.loop.dma_pattern`: a contiguous run repeated with a constant gap;
  spec §4.2, 004 L597) whose LDM side is contiguous (the LDM side of an athread DMA is packed),
  for a row-major or transposed (``col`` layout) local block.

Units: element counts and element offsets (byte conversion happens in ``loop.dma_start``).
Errors: :class:`DmaInferenceError` (a ``ValueError``) with a readable reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from taihu.dialects.loop import dma_pattern

MESH = 8
N_CPE = MESH * MESH


class DmaInferenceError(ValueError):
    """A tile.move cannot be lowered to athread DMAs (reason in the message)."""


def tile_dims_of_window(sizes: Sequence[int], tile_shape: Sequence[int]) -> list[int | None]:
    """For each memref dim of the window, the tile dim it carries (None for unit window dims).

    The window's non-unit dims map in order onto the tile's non-unit dims (unit tile dims carry
    nothing). Raises :class:`DmaInferenceError` when the squeezed shapes differ."""
    wdims = [d for d, s in enumerate(sizes) if s != 1]
    tdims = [t for t, s in enumerate(tile_shape) if s != 1]
    if [sizes[d] for d in wdims] != [tile_shape[t] for t in tdims]:
        raise DmaInferenceError(f"window sizes {list(sizes)} do not match the tile shape {list(tile_shape)}")
    out: list[int | None] = [None] * len(sizes)
    for d, t in zip(wdims, tdims):
        out[d] = t
    return out


@dataclass(frozen=True)
class DimBlock:
    """A CPE's local range along one tile dim: start = ``a*row + b*col``, extent ``n``."""

    a: int
    b: int
    n: int


@dataclass(frozen=True)
class CpeClass:
    """CPEs with ids in ``[id_lo, id_hi]`` whose local block has ``dim0_n`` elements along the
    split tile dim (dim 0 for ``cpe`` and ``rep``, dim d for ``cpe<d>``; 0 = the CPE holds
    nothing). Other distributions: one class."""

    id_lo: int
    id_hi: int
    dim0_n: int


def cpe_blocks(dist: str, shape: Sequence[int]) -> tuple[list[DimBlock], list[CpeClass]]:
    """Local block of CPE (row, col) per tile dim, and the CPE classes.

    ``rc``: dim 0 over mesh rows, dim 1 over columns; ``cr``: dim 0 over columns, dim 1 over rows
    (blocks of d/8); ``cpe``: dim 0 in chunks of q = ceil(d0/64) by id = 8*row + col (004 L734),
    the last non-empty CPE may hold fewer rows, the rest none; ``cpe<d>``: the same along dim d;
    ``cpe<d>+<h>``: blocks of q + h at a stride of q, q = ceil((d - h)/64) (overlapping: the
    halo); ``rep``: whole tile everywhere.
    """
    s = list(shape)
    base, plus, h = dist.partition("+")
    if plus and base.startswith("cpe"):  # halo: blocks of q + h at a stride of q (overlapping)
        halo = int(h)
        sd = int(base[3:]) if base[3:] else 0
        if not 0 <= sd < len(s) or halo >= s[sd]:
            raise DmaInferenceError(f"distribution {dist} does not fit a tile of shape {s}")
        blocks, classes = cpe_blocks(base, s[:sd] + [s[sd] - halo] + s[sd + 1 :])
        b = blocks[sd]
        blocks[sd] = DimBlock(b.a, b.b, b.n + halo)
        return blocks, [CpeClass(c.id_lo, c.id_hi, c.dim0_n + halo if c.dim0_n else 0) for c in classes]
    if dist.startswith("cpe") and dist[3:].isdigit():
        sd = int(dist[3:])
        if sd >= len(s):
            raise DmaInferenceError(f"distribution {dist} splits dim {sd} of a rank-{len(s)} tile")
        blocks0, classes = cpe_blocks("cpe", [s[sd]])
        blocks = [DimBlock(0, 0, d) for d in s]
        blocks[sd] = blocks0[0]
        return blocks, classes
    whole = [DimBlock(0, 0, d) for d in s[2:]]  # rank > 2 rc/cr tiles: trailing dims whole
    if dist == "rc":
        return [DimBlock(s[0] // MESH, 0, s[0] // MESH), DimBlock(0, s[1] // MESH, s[1] // MESH)] + whole, [
            CpeClass(0, N_CPE - 1, s[0] // MESH)
        ]
    if dist == "cr":
        return [DimBlock(0, s[0] // MESH, s[0] // MESH), DimBlock(s[1] // MESH, 0, s[1] // MESH)] + whole, [
            CpeClass(0, N_CPE - 1, s[0] // MESH)
        ]
    if dist == "cpe":
        q = -(-s[0] // N_CPE)
        blocks = [DimBlock(MESH * q, q, q)] + [DimBlock(0, 0, d) for d in s[1:]]
        full = s[0] // q
        classes = [CpeClass(0, full - 1, q)]
        rem = s[0] - full * q
        nxt = full
        if rem:
            classes.append(CpeClass(full, full, rem))
            nxt += 1
        if nxt < N_CPE:
            classes.append(CpeClass(nxt, N_CPE - 1, 0))
        return blocks, classes
    if dist == "rep":
        return [DimBlock(0, 0, d) for d in s], [CpeClass(0, N_CPE - 1, s[0])]
    raise DmaInferenceError(f"unknown distribution {dist!r}")


def class_cpe_offsets(blk: DimBlock, cls: CpeClass) -> list[int]:
    """Distinct values of ``a*row + b*col`` over the CPEs of a class (sorted)."""
    vals = {blk.a * (i // MESH) + blk.b * (i % MESH) for i in range(cls.id_lo, cls.id_hi + 1)}
    return sorted(vals)


@dataclass(frozen=True)
class ClipCase:
    """Piece starts ``s`` in ``[s_lo, s_hi]`` (among the possible ones) have the valid index
    range ``[lo, hi)`` (``hi <= lo``: nothing valid) of the piece's ``n`` elements."""

    s_lo: int
    s_hi: int
    lo: int
    hi: int


def valid_range(start: int, n: int, stride: int, dim: int) -> tuple[int, int]:
    """Indices ``i`` in ``[0, n)`` with ``0 <= start + i*stride < dim``, as ``[lo, hi)``
    (``hi == lo`` when none)."""
    lo = 0 if start >= 0 else min(n, (-start + stride - 1) // stride)
    hi = 0 if dim <= start else min(n, (dim - start + stride - 1) // stride)
    return lo, max(lo, hi)


def clip_cases(starts: Sequence[int], n: int, stride: int, dim: int) -> list[ClipCase]:
    """Group the possible piece starts by their valid range (:func:`valid_range`); the valid
    range is monotone in the start, so each group is an interval of the sorted starts."""
    out: list[ClipCase] = []
    for s in sorted(set(starts)):
        lo, hi = valid_range(s, n, stride, dim)
        if out and (out[-1].lo, out[-1].hi) == (lo, hi):
            c = out[-1]
            out[-1] = ClipCase(c.s_lo, s, lo, hi)
        else:
            out.append(ClipCase(s, s, lo, hi))
    return out


@dataclass(frozen=True)
class SplitPlan:
    """DMAs of a box ``[lo_d, hi_d)`` (piece coordinates) of a local block of extents ``n_d``.

    ``lead``: memref dims enumerated one index per DMA (outermost first, in LDM order); the
    other dims are covered whole by every DMA (``sizes``: per memref dim, 1 for lead dims).
    ``ldm_pitch``: element pitch of each memref dim in the packed LDM block."""

    lead: tuple[int, ...]
    sizes: tuple[int, ...]
    ldm_pitch: tuple[int, ...]

    def count(self, lo: Sequence[int], hi: Sequence[int]) -> int:
        return math.prod(hi[d] - lo[d] for d in self.lead)


def ldm_pitches(n: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """Element pitch per memref dim in a block packed row-major in ``order`` (outermost first)."""
    pitch = [0] * len(n)
    p = 1
    for d in reversed(order):
        pitch[d] = p
        p *= n[d]
    return tuple(pitch)


def split_box(
    mem_shape: Sequence[int],
    strides: Sequence[int],
    n: Sequence[int],
    lo: Sequence[int],
    hi: Sequence[int],
    order: Sequence[int],
    elem_bytes: int,
) -> SplitPlan:
    """The fewest DMAs covering the box ``[lo, hi)`` of a local block of extents ``n`` (packed
    in LDM in ``order``): the smallest split level ``l`` (position in ``order``) such that the
    trailing dims ``order[l:]`` form one athread DMA: every trailing dim after the first is whole
    in the block (LDM side contiguous), the trailing non-unit dims are
    in memref order (the DMA's row-major order equals the LDM order) and the memref window is one
    :func:`dma_pattern`. Level ``r-1`` (a single dim) always qualifies."""
    r = len(mem_shape)
    ext = [hi[d] - lo[d] for d in range(r)]
    if any(e <= 0 for e in ext):
        raise DmaInferenceError("empty box")
    pitch = ldm_pitches(n, order)
    for lvl in range(r):
        trail = list(order[lvl:])
        if any(ext[d] != n[d] for d in trail[1:]):
            continue
        nonunit = [d for d in trail if ext[d] != 1]
        if nonunit != sorted(nonunit):
            continue
        sizes = tuple(ext[d] if d in trail else 1 for d in range(r))
        if dma_pattern(mem_shape, sizes, elem_bytes, strides) is None:
            continue
        lead = tuple(order[:lvl])
        return SplitPlan(lead, sizes, pitch)
    raise DmaInferenceError("no single-DMA split found")  # unreachable: level r-1 qualifies


def expand_plan(
    plan: SplitPlan, lo: Sequence[int], hi: Sequence[int]
) -> list[tuple[tuple[int, ...], int]]:
    """Every DMA of a plan: (first element's piece index per memref dim, LDM element offset)."""
    out: list[tuple[tuple[int, ...], int]] = []
    ranges = [range(lo[d], hi[d]) for d in plan.lead]
    for combo in product(ranges):
        idx = list(lo)
        for d, i in zip(plan.lead, combo):
            idx[d] = i
        out.append((tuple(idx), sum(i * p for i, p in zip(idx, plan.ldm_pitch))))
    return out


def product(ranges: list[range]) -> list[tuple[int, ...]]:
    """All index tuples of the ranges (first range outermost)."""
    res: list[tuple[int, ...]] = [()]
    for rg in ranges:
        res = [t + (i,) for t in res for i in rg]
    return res
