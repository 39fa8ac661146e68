"""Schedules of the memory-bound ops: element-wise maps, transposes, pools, reductions, axis ops.

The memory-bound kernels of ``convert-graph-to-tile`` (:mod:`taihu.passes.conversion.graph_to_tile.maps`)
run data-parallel per CPE with double-buffered LDM tiles (algorithms.md §A0 R0/R1/R6, 004 L983,
L1225-1246); their free decisions are the tile: which dim is split over the 64 CPEs and how many
rows, planes or columns a tile holds. This module is their planner, in the form of
:mod:`taihu.backends.model.schedule` (issue "schedules as data"): per op family a problem
(``*Shape``, canonical, hashable: the key of tuning records), a plan, and

* :func:`map_space` -- every tile the planner considers, lazily, each with its cost;
* :func:`map_model_plan` -- the planner's pick: the first cheapest of the space;
* :func:`map_schedule_of` / :func:`map_plan_for` -- plan <-> :class:`~.schedule.Schedule`; a
  schedule need not be among the planner's candidates: any legal tile is accepted, an illegal one
  is an :class:`~.schedule.IllegalSchedule` naming the parameter.

Budgets are per-CPE LDM bytes (the pass's ``ldm_budget``); double-buffered tiles count twice.

Costs (:attr:`MapPlan.cost`) are the planners' relative cost in element-equivalents:
``(iterations + 1) * (512 + per-CPE elements x run penalty)`` -- 512 elements stand for a DMA
start-up (200 cycles, model §4 / 004 L460 ff.), the +1 is the first load and last store double
buffering cannot hide, the run penalty counts the 128-B transactions a short DMA run touches
(spec §4.4). :func:`map_cycles` turns it into an estimate in cycles (DMA-bound: the bytes of the
element-equivalents at the machine's DMA bandwidth).

Schedules (every parameter is required; dims are those of the canonical problem):

========== ==================================================================================
map        element-wise ops, pad, copies (:class:`ElementwiseShape`): ``split`` (the dim split
           over the CPEs), ``rows`` (tile extent along it: the whole dim or a multiple of 64),
           ``chunk`` (tile extent along dim ``split + 1``, when there is one; below the whole
           dim only with one row per CPE); outer dims are loops, inner dims whole
transpose  transposes and layout transforms (:class:`TransposeShape`): ``window`` (the input
           dims in the tile, e.g. ``"0,2"``; the others are loops), ``split`` (the window dim
           split over the CPEs), ``rows`` (its extent: the whole dim or a multiple of 64)
window     max / avg pools (:class:`PoolShape`): ``planes`` (N*C planes per tile: all or a
           multiple of 64), ``rows`` (output rows per tile)
reduce     global average pool (:class:`ReduceShape`): ``planes`` (as for pools), ``chunk``
           (elements of a plane per tile: the whole plane, or partial sums)
axis       softmax / lrn on ``(outer, A, inner)`` (:class:`AxisShape`): ``split`` (0: rows of
           outer over the CPEs, 1: LRN channel blocks, 2: inner columns), ``rows`` (outer rows),
           ``channels`` (A per tile: all of it, or LRN chunks carrying the window's halo),
           ``cols`` (inner columns)
========== ==================================================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from taihu.backends.model.schedule import IllegalSchedule, Schedule, _int, _take
from taihu.target.machine import Machine

__all__ = [
    "MAP_PLANS",
    "MAP_SHAPES",
    "AxisPlan",
    "AxisShape",
    "ElementwisePlan",
    "ElementwiseShape",
    "MapPlan",
    "MapShape",
    "PoolPlan",
    "PoolShape",
    "ReducePlan",
    "ReduceShape",
    "TILE_OVERHEAD",
    "TransposePlan",
    "TransposeShape",
    "map_algorithm",
    "map_cycles",
    "map_model_plan",
    "map_plan_for",
    "map_schedule_of",
    "map_space",
    "run_penalty",
]

N_CPE = 64
#: per-iteration overhead of a tile, in element-equivalents (a DMA start-up is 200 cycles,
#: model §4 / 004 L460 ff.)
TILE_OVERHEAD = 512


def run_penalty(run_bytes: int) -> float:
    """Expected 128-B transactions moved per requested byte of a DMA run of ``run_bytes`` at an
    arbitrary alignment (spec §4.4: whole transactions; a run touches ~``(r + 127) / 128``)."""
    return (run_bytes + 127) / run_bytes if run_bytes < 4096 else 1.0


def _balanced(n: int, parts: int) -> int:
    return math.ceil(n / parts)


def _rows(name: str, value: int, dim: int, what: str, past_end: bool = False) -> None:
    """A tile extent along a dim split over the CPEs: the whole dim or a multiple of 64, at most
    the dim rounded up to 64; ``past_end``: any multiple of 64 whose per-CPE piece is at most
    the dim (pieces divide the dim; the part past its end is clipped)."""
    if value != dim and value % N_CPE:
        raise IllegalSchedule(f"{name}={value} is neither the whole {what} ({dim}) nor a multiple of 64 (the CPEs)")
    if past_end and value // N_CPE > dim:
        raise IllegalSchedule(f"{name}={value}: {value // N_CPE} per CPE exceeds the {what} ({dim})")
    if not past_end and value > -(-dim // N_CPE) * N_CPE:
        raise IllegalSchedule(f"{name}={value} exceeds the {what} ({dim}) rounded up to 64")


def _at_most(name: str, value: int, dim: int, what: str) -> None:
    if value > dim:
        raise IllegalSchedule(f"{name}={value} exceeds the {what} ({dim})")


def _fits(ldm_bytes: int, budget: int) -> None:
    if ldm_bytes > budget:
        raise IllegalSchedule(f"LDM footprint {ldm_bytes} B per CPE > the budget {budget} B")


# --------------------------------------------------------------------------------------------
# Element-wise maps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ElementwiseShape:
    """An element-wise kernel on the canonical iteration space ``dims`` (rank k): ``operands``
    = the full (True) / broadcast (False) pattern per dim of every double-buffered input tile,
    ``out_bufs`` output tiles besides them (0 when the output aliases an input tile), elements
    of ``elem_bytes``."""

    dims: tuple[int, ...]
    operands: tuple[tuple[bool, ...], ...]
    out_bufs: int
    elem_bytes: int


@dataclass(frozen=True)
class ElementwisePlan:
    """``split`` = the dim split over the CPEs (tile dim 0); ``tiles`` = the tile per dim (1
    before ``split``, whole or chunked after); ``cost`` in element-equivalents."""

    split: int
    tiles: tuple[int, ...]
    cost: float


def _local_elems(full: Sequence[bool], tiles: Sequence[int], s: int) -> int:
    """Per-CPE elements of an operand's tile (cpe when full along s, else rep)."""
    shp = [t if f else 1 for t, f in zip(tiles[s:], full[s:])]
    if full[s]:
        shp[0] = math.ceil(shp[0] / N_CPE)
    return math.prod(shp)


def _ew_footprint(p: ElementwiseShape, tiles: Sequence[int], s: int) -> int:
    total = sum(_local_elems(o, tiles, s) for o in p.operands)
    total += p.out_bufs * _local_elems([True] * len(tiles), tiles, s)
    return 2 * p.elem_bytes * total


def _ew_plan(p: ElementwiseShape, s: int, tiles: Sequence[int]) -> ElementwisePlan:
    iters = math.prod(math.ceil(d / t) for d, t in zip(p.dims, tiles))
    cost = (iters + 1) * (TILE_OVERHEAD + _local_elems([True] * len(tiles), tiles, s))
    return ElementwisePlan(s, tuple(tiles), cost)


def elementwise_space(p: ElementwiseShape, budget: int) -> Iterator[ElementwisePlan]:
    """For every split dim s: the inner dims whole and ``q`` rows per CPE (balanced tiles, up to
    8x more tiles than the fewest that fit; 128-B aligned per-CPE runs on the last dim), or --
    when not even one row per CPE fits -- one row per CPE with dim s+1 in the fewest balanced
    chunks that fit."""
    D, k = p.dims, len(p.dims)
    for s in range(k):
        q_need = math.ceil(D[s] / N_CPE)
        base = [1] * s + [0] + list(D[s + 1 :])
        n_fit = None
        for n in range(1, q_need + 1):  # n tiles along s, balanced
            q = math.ceil(q_need / n)
            if n > 1 and q == math.ceil(q_need / (n - 1)):
                continue
            if n_fit is not None and n > 8 * n_fit:
                break  # smaller tiles only add overhead beyond this
            ts = D[s] if n == 1 else N_CPE * q
            if s == k - 1 and n > 1 and q >= 32:
                ts = N_CPE * (math.ceil(q / 32) * 32)  # 128-B aligned per-CPE runs (R1)
                if ts >= D[s]:
                    ts = D[s]
            tiles = list(base)
            tiles[s] = ts
            if _ew_footprint(p, tiles, s) <= budget:
                n_fit = n_fit or n
                yield _ew_plan(p, s, tiles)
        if n_fit is None and s + 1 < k:
            for n in range(2, D[s + 1] + 1):
                c = math.ceil(D[s + 1] / n)
                if c == math.ceil(D[s + 1] / (n - 1)):
                    continue
                tiles = list(base)
                tiles[s] = min(D[s], N_CPE)
                tiles[s + 1] = c
                if _ew_footprint(p, tiles, s) <= budget:
                    yield _ew_plan(p, s, tiles)
                    break


def _ew_schedule(plan: ElementwisePlan) -> Schedule:
    s = plan.split
    extra = {"chunk": plan.tiles[s + 1]} if s + 1 < len(plan.tiles) else {}
    return Schedule.make("map", split=s, rows=plan.tiles[s], **extra)


def _ew_plan_for(p: ElementwiseShape, budget: int, schedule: Schedule) -> ElementwisePlan:
    D, k = p.dims, len(p.dims)
    first = schedule.as_dict().get("split")
    has_chunk = isinstance(first, int) and not isinstance(first, bool) and 0 <= first < k - 1
    d = _take(schedule, ("split", "rows", "chunk") if has_chunk else ("split", "rows"))
    s = d["split"]
    if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < k:
        raise IllegalSchedule(f"split={s} is not a dim of the iteration space {list(D)} (0 .. {k - 1})")
    rows = _int(d, "rows")
    _rows("rows", rows, D[s], f"dim {s}")
    tiles = [1] * s + [rows] + list(D[s + 1 :])
    if has_chunk:
        chunk = _int(d, "chunk")
        _at_most("chunk", chunk, D[s + 1], f"dim {s + 1}")
        if chunk < D[s + 1] and rows != min(D[s], N_CPE):
            raise IllegalSchedule(f"chunk={chunk} splits dim {s + 1}: only with one row per CPE "
                                  f"(rows={min(D[s], N_CPE)}), got rows={rows}")
        tiles[s + 1] = chunk
    _fits(_ew_footprint(p, tiles, s), budget)
    return _ew_plan(p, s, tiles)


# --------------------------------------------------------------------------------------------
# Transposes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransposeShape:
    """A transpose of the canonical input dims ``dims`` by ``perm`` (out dim i = in dim
    ``perm[i]``, not the identity), elements of ``elem_bytes``."""

    dims: tuple[int, ...]
    perm: tuple[int, ...]
    elem_bytes: int


@dataclass(frozen=True)
class TransposePlan:
    """``window`` = the input dims in the tile (input order), ``split`` = the one of them split
    over the CPEs (``cpe<i>`` at its position in either order), ``rows`` = its tile extent;
    ``cost`` in element-equivalents."""

    split: int
    window: tuple[int, ...]
    rows: int
    cost: float


def _tr_run(p: TransposeShape, order: Sequence[int], win: set[int], d: int, q: int) -> int:
    """Contiguous elements of a piece in a memref of dim ``order`` (innermost last)."""
    r = 1
    for j in reversed(order):
        if j not in win:
            return r
        if j == d:
            return r * q
        r *= p.dims[j]
    return r


def _tr_inner_split(p: TransposeShape, win: set[int], d: int) -> bool:
    """``d`` is not the outermost tile dim on a side: a partial piece is not contiguous in LDM."""
    return sorted(win).index(d) > 0 or [j for j in p.perm if j in win].index(d) > 0


def _tr_plan(p: TransposeShape, win: set[int], d: int, q: int) -> TransposePlan:
    k, eb = len(p.dims), p.elem_bytes
    others = math.prod(p.dims[j] for j in win if j != d)
    tile_d = p.dims[d] if q == math.ceil(p.dims[d] / N_CPE) else N_CPE * q
    iters = math.prod(p.dims[j] for j in range(k) if j not in win) * math.ceil(p.dims[d] / tile_d)
    local = q * others
    r_in = _tr_run(p, range(k), win, d, q) * eb
    r_out = _tr_run(p, p.perm, win, d, q) * eb
    # DMA-bound: every tile's transfers + its overhead; the in-LDM transpose of the last tile
    # (~3 cycles per element, ~1/4 of an element's DMA time) is exposed
    cost = iters * (TILE_OVERHEAD + local * (run_penalty(r_in) + run_penalty(r_out))) + local / 4
    if _tr_inner_split(p, win, d) and p.dims[d] % q:
        cost *= 1.5
    return TransposePlan(d, tuple(sorted(win)), tile_d, cost)


def _tr_q_max(p: TransposeShape, win: set[int], d: int, budget: int) -> int:
    others = math.prod(p.dims[j] for j in win if j != d)
    return budget // (2 * 2 * p.elem_bytes * others)


def transpose_space(p: TransposeShape, budget: int) -> Iterator[TransposePlan]:
    """Every window of input dims and dim of it split over the CPEs, with balanced piece sizes
    ``q`` (and, when a partial piece would not be contiguous, the divisors of the dim)."""
    dims, k = p.dims, len(p.dims)
    for mask in range(1, 1 << k):
        win = {j for j in range(k) if mask >> j & 1}
        for d in win:
            q_max = _tr_q_max(p, win, d, budget)
            if q_max < 1:
                continue
            q_need = math.ceil(dims[d] / N_CPE)
            n_min = math.ceil(q_need / min(q_need, q_max))
            qs = {_balanced(q_need, n) for n in range(n_min, min(q_need, 8 * n_min) + 1)}
            # q dividing dims[d] leaves only full / empty pieces (the tile then runs past the end)
            if _tr_inner_split(p, win, d):
                qs |= {x for x in range(1, min(q_max, 2 * q_need) + 1) if dims[d] % x == 0}
            for q in sorted(qs):
                yield _tr_plan(p, win, d, q)


def _tr_schedule(plan: TransposePlan) -> Schedule:
    return Schedule.make("transpose", window=",".join(map(str, plan.window)), split=plan.split, rows=plan.rows)


def _tr_plan_for(p: TransposeShape, budget: int, schedule: Schedule) -> TransposePlan:
    dims, k = p.dims, len(p.dims)
    d = _take(schedule, ("rows", "split", "window"))
    words = str(d["window"]).split(",")
    if not all(w.isdigit() for w in words) or sorted({int(w) for w in words}) != [int(w) for w in words] \
            or not all(int(w) < k for w in words):
        raise IllegalSchedule(f'window="{d["window"]}" must list distinct input dims in increasing order '
                              f"(0 .. {k - 1}), e.g. \"0,1\"")
    win = {int(w) for w in words}
    s = d["split"]
    if isinstance(s, bool) or not isinstance(s, int) or s not in win:
        raise IllegalSchedule(f"split={s} is not a dim of the window ({d['window']})")
    rows = _int(d, "rows")
    _rows("rows", rows, dims[s], f"dim {s}", past_end=True)
    q = math.ceil(dims[s] / N_CPE) if rows == dims[s] else rows // N_CPE
    _fits(2 * 2 * p.elem_bytes * q * math.prod(dims[j] for j in win if j != s), budget)
    return _tr_plan(p, win, s, q)


# --------------------------------------------------------------------------------------------
# Pools
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolShape:
    """A max / avg pool on ``planes`` (N*C) planes of h x w -> ho x wo, window kh x kw, strides
    sh x sw, top / left pads pt / pl; ``inv_count`` when the avg divisor varies per position (a
    (ho, wo) constant tile is loaded beside the input)."""

    planes: int
    h: int
    w: int
    ho: int
    wo: int
    kh: int
    kw: int
    sh: int
    sw: int
    pt: int
    pl: int
    elem_bytes: int
    inv_count: bool

    @property
    def pr_map(self) -> int:
        """Right pad (incl. the ceil_mode tail) the window needs past the row."""
        return max(0, (self.wo - 1) * self.sw + self.kw - self.pl - self.w)

    @property
    def pb_map(self) -> int:
        """Bottom pad the window needs past the plane."""
        return max(0, (self.ho - 1) * self.sh + self.kh - self.pt - self.h)

    @property
    def map_pads(self) -> bool:
        """Whole input rows are loaded and the column pads are the map's ``pads``."""
        return self.pl < self.kw and self.pr_map < self.kw

    @property
    def row_width(self) -> int:
        """Width of an input tile row: the row, or the padded window width."""
        return self.w if self.map_pads else (self.wo - 1) * self.sw + self.kw

    def whole(self, rows: int) -> bool:
        """A tile of ``rows`` output rows loads whole planes (row pads in the map too)."""
        return rows == self.ho and self.map_pads and self.pt < self.kh and self.pb_map < self.kh

    def in_rows(self, rows: int) -> int:
        return self.h if self.whole(rows) else (rows - 1) * self.sh + self.kh


@dataclass(frozen=True)
class PoolPlan:
    """``planes`` per tile (P or 64*q), ``rows`` output rows per tile, ``whole`` (whole planes
    loaded); ``cost`` in element-equivalents."""

    planes: int
    rows: int
    whole: bool
    cost: float


def _pool_footprint(p: PoolShape, q: int, tho: int) -> int:
    thi = p.in_rows(tho)
    return 2 * p.elem_bytes * (q * thi * p.row_width + q * tho * p.wo + (tho * p.wo if p.inv_count else 0))


def _pool_plan(p: PoolShape, q: int, tho: int) -> PoolPlan:
    q_need = math.ceil(p.planes / N_CPE)
    tp = p.planes if q == q_need else N_CPE * q
    thi, wt, eb = p.in_rows(tho), p.row_width, p.elem_bytes
    iters = math.ceil(p.planes / tp) * math.ceil(p.ho / tho)
    # DMA runs: a CPE's q planes are one run when whole rows of whole planes move
    run_in = (q if thi == p.h and wt == p.w else 1) * thi * wt * eb
    run_out = (q if tho == p.ho else 1) * tho * p.wo * eb
    cost = (iters + 1) * (TILE_OVERHEAD + q * (thi * wt * run_penalty(run_in) + tho * p.wo * run_penalty(run_out)))
    return PoolPlan(tp, tho, p.whole(tho), cost)


def pool_space(p: PoolShape, budget: int) -> Iterator[PoolPlan]:
    """Balanced plane tiles x balanced output-row tiles that fit."""
    q_need = math.ceil(p.planes / N_CPE)
    for m in range(1, q_need + 1):
        q = _balanced(q_need, m)
        if m > 1 and q == _balanced(q_need, m - 1):
            continue
        for n in range(1, p.ho + 1):
            tho = _balanced(p.ho, n)
            if n > 1 and tho == _balanced(p.ho, n - 1):
                continue
            if _pool_footprint(p, q, tho) <= budget:
                yield _pool_plan(p, q, tho)


def _planes_q(planes: int, total: int) -> int:
    """Planes per CPE of a tile of ``planes`` (checked by :func:`_rows`)."""
    return math.ceil(total / N_CPE) if planes == total else planes // N_CPE


def _pool_plan_for(p: PoolShape, budget: int, schedule: Schedule) -> PoolPlan:
    d = _take(schedule, ("planes", "rows"))
    planes, rows = _int(d, "planes"), _int(d, "rows")
    _rows("planes", planes, p.planes, "planes (N*C)")
    _at_most("rows", rows, p.ho, "output rows")
    q = _planes_q(planes, p.planes)
    _fits(_pool_footprint(p, q, rows), budget)
    return _pool_plan(p, q, rows)


# --------------------------------------------------------------------------------------------
# Global average pool (reduce over a plane)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReduceShape:
    """The mean of each of ``planes`` planes of ``size`` elements of ``elem_bytes``."""

    planes: int
    size: int
    elem_bytes: int


@dataclass(frozen=True)
class ReducePlan:
    """``planes`` per tile (P or 64*q); ``chunk`` elements of a plane per tile (the whole plane:
    ``reduce_mean``; less: ``reduce_sum`` partials accumulated, then ``mul 1/size``); ``cost``
    in element-equivalents."""

    planes: int
    chunk: int
    cost: float


def _reduce_footprint(p: ReduceShape, q: int, chunk: int) -> int:
    if chunk == p.size:  # in (q, size) double + out (q, 1) double
        return 2 * p.elem_bytes * q * (p.size + 1)
    return 2 * p.elem_bytes * q * chunk + 8 * p.elem_bytes * q  # + partial, acc, 1/size


def _reduce_plan(p: ReduceShape, q: int, chunk: int) -> ReducePlan:
    q_need = math.ceil(p.planes / N_CPE)
    tp = p.planes if q == q_need else N_CPE * q
    if chunk == p.size:
        cost = (math.ceil(q_need / q) + 1) * (TILE_OVERHEAD + q * (p.size + 1))
    else:
        cost = (math.ceil(p.planes / tp) * math.ceil(p.size / chunk) + 1) * (TILE_OVERHEAD + q * chunk)
    return ReducePlan(tp, chunk, cost)


def reduce_space(p: ReduceShape, budget: int) -> Iterator[ReducePlan]:
    """Whole planes, ``q`` per CPE from the fewest tiles that fit to one plane per CPE; or, when
    not one plane fits, one plane per CPE in the fewest balanced chunks that fit."""
    q_need = math.ceil(p.planes / N_CPE)
    q_fit = budget // (2 * p.elem_bytes * (p.size + 1))
    if q_fit >= 1:
        n_min = math.ceil(q_need / q_fit)
        for n in range(n_min, max(n_min, q_need) + 1):
            yield _reduce_plan(p, _balanced(q_need, n), p.size)
        return
    hc = max(1, (budget - 2 * p.elem_bytes * 4) // (2 * p.elem_bytes))
    yield _reduce_plan(p, 1, _balanced(p.size, math.ceil(p.size / hc)))


def _reduce_plan_for(p: ReduceShape, budget: int, schedule: Schedule) -> ReducePlan:
    d = _take(schedule, ("chunk", "planes"))
    planes, chunk = _int(d, "planes"), _int(d, "chunk")
    _rows("planes", planes, p.planes, "planes (N*C)")
    _at_most("chunk", chunk, p.size, "plane size")
    q = _planes_q(planes, p.planes)
    _fits(_reduce_footprint(p, q, chunk), budget)
    return _reduce_plan(p, q, chunk)


# --------------------------------------------------------------------------------------------
# Axis ops: softmax, lrn
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AxisShape:
    """softmax / lrn on the ``(outer, axis, inner)`` view, elements of ``elem_bytes``; ``halo``
    = LRN size - 1 (channel chunks carry it), -1 for softmax (the whole axis in every tile)."""

    outer: int
    axis: int
    inner: int
    elem_bytes: int
    halo: int


@dataclass(frozen=True)
class AxisPlan:
    """Tile ``(rows, channels, cols)`` of the view; ``split`` = the tile dim split over the CPEs
    (0: rows of outer; 1: LRN channel blocks, dist ``cpe1``; 2: inner columns, dist ``cpe2``);
    ``halo`` = extra input channels of the tile (LRN window); ``cost`` in element-equivalents."""

    rows: int
    channels: int
    cols: int
    split: int
    halo: int
    cost: float


def _axis_eval(p: AxisShape, to: int, ca: int, ti: int, split: int, halo: int) -> tuple[int, AxisPlan]:
    """(LDM bytes, plan) of one tiling."""
    eb = p.elem_bytes
    in_rows = ca + halo
    if split == 0:
        q = math.ceil(to / N_CPE)
        local_in, local_out = q * in_rows * ti, q * ca * ti
        run = (q * in_rows * ti if ti == p.inner else ti) * eb
    elif split == 1:  # channel blocks of q (+ the halo) per CPE
        q = math.ceil(ca / N_CPE)
        local_in, local_out = to * (q + halo) * ti, to * q * ti
        run = ((q + halo) * ti if ti == p.inner else ti) * eb
    else:
        w = math.ceil(ti / N_CPE)
        local_in, local_out = to * in_rows * w, to * ca * w
        run = w * eb
    iters = math.ceil(p.outer / to) * math.ceil(p.axis / ca) * math.ceil(p.inner / ti)
    cost = (iters + 1) * (TILE_OVERHEAD + (local_in + local_out) * run_penalty(run))
    if split == 2 and p.inner % w:
        # a CPE holding part of its w columns: its piece is not contiguous in LDM (one DMA
        # per row, synchronous dispatch); w dividing `inner` leaves only full / empty pieces
        cost *= 1.5
    return 2 * eb * (local_in + local_out), AxisPlan(to, ca, ti, split, halo, cost)


def axis_space(p: AxisShape, budget: int) -> Iterator[AxisPlan]:
    """Rows of ``outer`` over the CPEs with the whole axis (``inner`` chunked when needed); at
    small ``outer``, ``inner`` columns over the CPEs (balanced chunks and the divisors of inner;
    LRN channel chunks; the largest row tile that fits); LRN channel blocks over the CPEs."""
    A, outer, inner, eb = p.axis, p.outer, p.inner, p.elem_bytes
    per = 2 * 2 * eb * A
    if per <= budget:
        ti_max = budget // per
        q_need = math.ceil(outer / N_CPE)
        if inner <= ti_max:
            q = _balanced(q_need, math.ceil(q_need / max(1, ti_max // inner)))
            cand = (outer if q == q_need else N_CPE * q, A, inner, 0, 0)
        else:
            cand = (min(outer, N_CPE), A, _balanced(inner, math.ceil(inner / ti_max)), 0, 0)
        nbytes, plan = _axis_eval(p, *cand)
        if nbytes <= budget:
            yield plan
    if outer < N_CPE and inner > 1:
        w_full = math.ceil(inner / N_CPE)
        ws = {_balanced(w_full, n) for n in range(1, w_full + 1)}
        ws |= {w for w in range(1, 2 * w_full + 1) if inner % w == 0}
        for w in sorted(ws, reverse=True):
            ti = inner if w == w_full else N_CPE * w
            chunks = [A] if p.halo < 0 else sorted({_balanced(A, n) for n in range(1, A + 1)}, reverse=True)
            for ca in chunks:
                h = p.halo if (p.halo > 0 and ca < A) else 0
                for to in sorted({_balanced(outer, n) for n in range(1, outer + 1)}, reverse=True):
                    nbytes, plan = _axis_eval(p, to, ca, ti, 2, h)
                    if nbytes <= budget:
                        yield plan
                        break  # the largest `to` that fits
    if p.halo > 0 and outer < N_CPE:
        qa = math.ceil(A / N_CPE)
        for q in sorted({_balanced(qa, n) for n in range(1, qa + 1)}):
            ca = A if q == qa else N_CPE * q
            for ti in sorted({_balanced(inner, n) for n in range(1, min(inner, 64) + 1)}, reverse=True):
                nbytes, plan = _axis_eval(p, 1, ca, ti, 1, p.halo)
                if nbytes <= budget:
                    yield plan
                    break  # the longest rows that fit


def _axis_schedule(plan: AxisPlan) -> Schedule:
    return Schedule.make("axis", split=plan.split, rows=plan.rows, channels=plan.channels, cols=plan.cols)


def _axis_plan_for(p: AxisShape, budget: int, schedule: Schedule) -> AxisPlan:
    d = _take(schedule, ("channels", "cols", "rows", "split"))
    split = d["split"]
    if split not in (0, 1, 2) or isinstance(split, bool):
        raise IllegalSchedule(f"split={split} must be 0 (outer rows), 1 (LRN channel blocks) or 2 (inner columns)")
    to, ca, ti = _int(d, "rows"), _int(d, "channels"), _int(d, "cols")
    halo = 0
    if split != 0:
        _at_most("rows", to, p.outer, "outer extent")
    if split != 2:
        _at_most("cols", ti, p.inner, "inner extent")
    if split != 1:
        _at_most("channels", ca, p.axis, "axis")
    if split == 0:
        _rows("rows", to, p.outer, "outer extent")
        if ca != p.axis:
            raise IllegalSchedule(f"channels={ca}: split=0 tiles hold the whole axis ({p.axis})")
    elif split == 1:
        if p.halo <= 0:
            raise IllegalSchedule("split=1 (channel blocks with a halo) is LRN's; softmax needs the whole axis")
        if to != 1:
            raise IllegalSchedule(f"rows={to}: split=1 tiles hold one outer row")
        _rows("channels", ca, p.axis, "axis")
        halo = p.halo
    else:
        _rows("cols", ti, p.inner, "inner extent", past_end=True)
        if ca != p.axis and p.halo < 0:
            raise IllegalSchedule(f"channels={ca}: softmax tiles hold the whole axis ({p.axis})")
        halo = p.halo if (p.halo > 0 and ca < p.axis) else 0
    nbytes, plan = _axis_eval(p, to, ca, ti, split, halo)
    _fits(nbytes, budget)
    return plan


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------

MapShape = ElementwiseShape | TransposeShape | PoolShape | ReduceShape | AxisShape
MapPlan = ElementwisePlan | TransposePlan | PoolPlan | ReducePlan | AxisPlan
#: the problem and plan classes (for ``isinstance``)
MAP_SHAPES = (ElementwiseShape, TransposeShape, PoolShape, ReduceShape, AxisShape)
MAP_PLANS = (ElementwisePlan, TransposePlan, PoolPlan, ReducePlan, AxisPlan)


@dataclass(frozen=True)
class _Family:
    algorithm: str
    space: Callable[..., Iterator]
    schedule_of: Callable[..., Schedule]
    plan_for: Callable[..., MapPlan]


_FAMILIES: dict[type, _Family] = {
    ElementwiseShape: _Family("map", elementwise_space, _ew_schedule, _ew_plan_for),
    TransposeShape: _Family("transpose", transpose_space, _tr_schedule, _tr_plan_for),
    PoolShape: _Family("window", pool_space,
                       lambda plan: Schedule.make("window", planes=plan.planes, rows=plan.rows), _pool_plan_for),
    ReduceShape: _Family("reduce", reduce_space,
                         lambda plan: Schedule.make("reduce", planes=plan.planes, chunk=plan.chunk), _reduce_plan_for),
    AxisShape: _Family("axis", axis_space, _axis_schedule, _axis_plan_for),
}
_PLAN_FAMILY: dict[type, _Family] = {
    ElementwisePlan: _FAMILIES[ElementwiseShape], TransposePlan: _FAMILIES[TransposeShape],
    PoolPlan: _FAMILIES[PoolShape], ReducePlan: _FAMILIES[ReduceShape], AxisPlan: _FAMILIES[AxisShape],
}


def map_algorithm(p: MapShape) -> str:
    """The schedule algorithm of ``p``'s family (``map``, ``transpose``, ``window``, ...)."""
    return _FAMILIES[type(p)].algorithm


def map_space(p: MapShape, budget: int) -> Iterator[MapPlan]:
    """Every tile the planner of ``p`` considers that fits ``budget`` B per CPE, lazily."""
    return _FAMILIES[type(p)].space(p, budget)


def map_model_plan(p: MapShape, budget: int) -> MapPlan:
    """The planner's pick: the first cheapest plan of :func:`map_space`. ``ValueError`` when no
    tile fits the budget."""
    best: MapPlan | None = None
    for plan in map_space(p, budget):
        if best is None or plan.cost < best.cost:
            best = plan
    if best is None:
        raise ValueError(_no_fit(p, budget))
    return best


def _no_fit(p: MapShape, budget: int) -> str:
    if isinstance(p, PoolShape):
        return f"one output row of a {p.w}-wide plane does not fit {budget} B of LDM"
    if isinstance(p, AxisShape):
        return f"axis of {p.axis} elements does not fit {budget} B of LDM per CPE"
    if isinstance(p, ReduceShape):
        return f"no tile of {p.planes} planes of {p.size} elements fits {budget} B of LDM per CPE"
    return f"no tile of {list(p.dims)} fits {budget} B of LDM"


def map_schedule_of(plan: MapPlan) -> Schedule:
    """The schedule of a plan (module docstring)."""
    return _PLAN_FAMILY[type(plan)].schedule_of(plan)


def map_plan_for(p: MapShape, budget: int, schedule: Schedule) -> MapPlan:
    """Exactly the plan ``schedule`` names for ``p``; :class:`IllegalSchedule` saying why not."""
    fam = _FAMILIES[type(p)]
    if schedule.algorithm != fam.algorithm:
        raise IllegalSchedule(f'algorithm "{schedule.algorithm}" does not apply: the op\'s schedule is "{fam.algorithm}"')
    return fam.plan_for(p, budget, schedule)


def map_cycles(plan: MapPlan, p: MapShape, machine: Machine) -> int:
    """The plan's cost as cycles of ``machine``: its element-equivalents of ``p.elem_bytes`` on
    every CPE moved at the DMA peak (``peak_bw_cg`` GB/s at ``f_clk_ghz``); a DMA-bound
    estimate for ranking and records, not a simulation."""
    total_bytes = plan.cost * N_CPE * p.elem_bytes
    return round(total_bytes / (machine.peak_bw_cg / machine.f_clk_ghz))
