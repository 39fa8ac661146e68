"""Plan and cost of the depthwise convolution kernel (``tile.map depthwise``; lowering:
``passes/conversion/graph_to_tile/depthwise.py`` and ``passes/conversion/loop_to_sw/depthwise.py``).

A depthwise convolution (``group == C == M``: every output plane is one input plane convolved
with its own kh x kw filter) has kh*kw multiply-adds per output element: it is memory-bound
(algorithms.md §A0 R6, 004 L1225-1246), so it runs like a pool -- planes over the CPEs, a
sliding window of input rows in LDM -- not as per-group im2col + GEMM (a GEMM with M = K/9 = 1)::

    for n (image) / c0 (planes channels per tile, 64 | C or all) / r0 (rows output rows per tile):
      w <- w[c0:+planes, kh*kw]  [b <- b[c0:+planes]]     per CPE its q channels' filters (double)
      x <- x[n, c0:+planes, r0*sh - pt : +in_rows, :]     whole input rows (pad 0.0 rows), double
      y  = depthwise(x, w, b)                             per CPE, vector micro-kernels (below)
      [fused relu / clip ...] -> y[n, c0:+planes, r0:+rows, :]

Whole planes (``rows == Ho``) are loaded with their top / bottom pads applied by the map (taps
skipped), so every CPE moves its q planes as one contiguous DMA.

Micro-kernel (per CPE and plane; :func:`register_plan`): a *unit* is 4 adjacent outputs of a row
(the SIMD lanes, vectorised along W). Input element ``x[r, 4*t*sw - pl + d]`` contributes to lane
l with the tap ``j`` such that ``d = l*sw + j*dw``; so with ``nd`` distinct ``d`` per kernel row
(6 for 3x3 s1, 9 for s2) a unit is ``kh * nd`` VMADs of a scalar-broadcast load (LDDE / LDSE)
with a *shifted weight vector* ``Wv[i][d] = (w[i, (d - l*sw)/dw])_l`` (zero lanes where no tap
falls), e.g. 18 VMADs for 4 outputs of a 3x3 s1 filter instead of 36 scalar ones. The weight
vectors of a plane are built once in registers (LDSE + VINSF lane inserts); when they do not fit
beside the units' registers the kernel rows go in *passes* (each pass adds its rows' taps to the
partial sums in the output tile). Units of a row (and of several rows when rows are short) form
one micro-kernel body run over the output rows of the tile.

Cost (seconds; :func:`depthwise_cost`): per tile (iteration) the larger of the DMA time of its
loads and store (eq 3-2 with 128-B transactions: the CG's 30.94 GB/s, its busiest bus, or one
CPE's start-ups and transfers) and the busiest CPE's compute (:func:`plane_cycles`: the runs of
:func:`row_runs` -- exactly the lowering's micro-kernels -- at :func:`pass_unit_cycles` per unit:
the busier pipe's instructions or the register banks' occupancy by the VMAD chains, 004 L530;
plus the fused maps); double buffering overlaps them (tile-to-loop, 004 Alg 8), a synchronous
boundary load does not; bounded below by the last tile's loads + compute + store and by the
busiest CPE's path (its first loads, all its compute, its last store). Against the simulator
(every plan of MobileNetV2's ten depthwise layers, 270 plans): mean |error| 2.2 %, the model's
pick is the simulator's best or within 2 %; EfficientNet-B0's 5x5 and ConvNeXt's 7x7 layers
within 6 % (one 7x7-plane layer 12 %).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from taihu.backends.model.conv import ConvShape, KernelCost, _avg_moved
from taihu.backends.model.choice import Enumerated, Space
from taihu.target.machine import Machine

__all__ = [
    "DepthwisePlan",
    "RegisterPlan",
    "Run",
    "TiledWork",
    "depthwise_applicability",
    "depthwise_cost",
    "depthwise_footprint",
    "depthwise_plan",
    "depthwise_space",
    "in_rows",
    "pass_unit_cycles",
    "plane_cycles",
    "plan_depthwise",
    "register_plan",
    "row_pads",
    "row_runs",
    "tiled_cost",
    "unit_taps",
    "whole_planes",
]

N_CPE = 64
LANES = 4
#: allocatable vector registers r0..r30 (r31 reads 0, 004 L821)
N_REGS = 31
#: per unit: partial accumulators (independent VMAD chains) and scalar-load temporaries
UNIT_ACCS = 2
UNIT_TEMPS = 2
UNIT_REGS = UNIT_ACCS + UNIT_TEMPS
#: unit register sets kept free beside the weight vectors (units in flight)
MIN_BANKS = 3
#: kernel rows at most (a pass and up to 2 boundary row runs per kernel row and plane: bounded code)
MAX_KERNEL = 11
#: units wanted in one micro-kernel body (R output rows of short rows): enough independent
#: chains to hide the 7-cycle VMAD latency across the register banks (004 L530-532)
UNITS_PER_BODY = 8
#: units of one body at most (a longer row is split over several bodies: bounded body size)
MAX_UNITS_PER_BODY = 32


def depthwise_applicability(s: ConvShape) -> str | None:
    """None when the depthwise kernel runs ``s``, else the reason (one line)."""
    if not (s.group == s.c == s.m):
        return (f"the depthwise kernel needs group = C = M (one filter per channel; got C = {s.c}, M = {s.m}, "
                f"group = {s.group}); use im2col")
    if s.kh > MAX_KERNEL:
        return f"the depthwise kernel takes at most {MAX_KERNEL} kernel rows (got {s.kh}); use im2col"
    if register_plan(s.kw, s.strides[1], s.dilations[1], s.bias) is None:
        return (f"the depthwise kernel's weight vectors of one kernel row ({len(_taps(s.kw, s.strides[1], s.dilations[1]))}"
                f" for kw = {s.kw}, stride {s.strides[1]}, dilation {s.dilations[1]}) do not fit the registers; use im2col")
    return None


# --------------------------------------------------------------------------------------------
# Registers
# --------------------------------------------------------------------------------------------


def _taps(kw: int, sw: int, dw: int) -> tuple[int, ...]:
    """The column offsets ``d = l*sw + j*dw`` (lane l < 4, tap j < kw) of a unit's inputs."""
    return tuple(sorted({l * sw + j * dw for l in range(LANES) for j in range(kw)}))


@dataclass(frozen=True)
class RegisterPlan:
    """Registers of the micro-kernel for one kernel row's weight vectors: ``taps`` (the offsets
    d, one weight vector each), ``rows_per_pass`` (kernel rows whose vectors are held at once),
    ``bias`` (one register for the bias)."""

    taps: tuple[int, ...]
    rows_per_pass: int
    bias: bool

    def passes(self, kh: int) -> tuple[tuple[int, ...], ...]:
        """The kernel rows of every pass (consecutive, the first passes the largest)."""
        n = -(-kh // self.rows_per_pass)
        base, extra = divmod(kh, n)
        out, r = [], 0
        for p in range(n):
            k = base + (1 if p < extra else 0)
            out.append(tuple(range(r, r + k)))
            r += k
        return tuple(out)

    def weight_regs(self, rows: int) -> int:
        return rows * len(self.taps) + (1 if self.bias else 0)

    def banks(self, rows: int) -> int:
        """Unit register sets beside the weight vectors of ``rows`` kernel rows."""
        return (N_REGS - self.weight_regs(rows)) // UNIT_REGS


def register_plan(kw: int, sw: int, dw: int, bias: bool) -> RegisterPlan | None:
    """The register plan of a kw-wide filter at stride ``sw``, dilation ``dw`` (None: one kernel
    row's weight vectors leave no register set for a unit)."""
    taps = _taps(kw, sw, dw)
    free = N_REGS - (1 if bias else 0) - MIN_BANKS * UNIT_REGS
    rows = free // len(taps)
    if rows < 1:
        if N_REGS - (1 if bias else 0) - len(taps) < UNIT_REGS:
            return None
        rows = 1
    return RegisterPlan(taps, rows, bias)


# --------------------------------------------------------------------------------------------
# Micro-kernel runs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One micro-kernel run of a pass over a plane: output rows ``start`` + ``count * i`` for
    ``i < trips`` (``count`` rows per body iteration), reading the kernel rows ``valid``; units
    ``t_lo .. t_hi - 1`` of each row."""

    start: int
    count: int
    trips: int
    valid: tuple[int, ...]
    t_lo: int
    t_hi: int


def row_runs(tho: int, wo: int, thi: int, sh: int, dh: int, pt: int, rows: Sequence[int], first: bool) -> list[Run]:
    """The row runs of one pass over kernel rows ``rows`` on a tile of ``tho`` x ``wo`` outputs
    from ``thi`` input rows, the map's top pad ``pt``: runs of output rows whose in-bounds kernel
    rows are the same (the boundary rows one by one, the interior together; a later pass skips
    rows none of its kernel rows reach), ``R`` rows per body when rows are short (at least
    :data:`UNITS_PER_BODY` units), rows of more than :data:`MAX_UNITS_PER_BODY` units split."""
    units = -(-wo // LANES)
    n_chunks = -(-units // MAX_UNITS_PER_BODY)
    chunks = [(units * k // n_chunks, units * (k + 1) // n_chunks) for k in range(n_chunks)]
    segs: list[tuple[int, int, tuple[int, ...]]] = []
    for r in range(tho):
        valid = tuple(i for i in rows if 0 <= r * sh + i * dh - pt < thi)
        if segs and segs[-1][2] == valid and segs[-1][1] == r:
            segs[-1] = (segs[-1][0], r + 1, valid)
        else:
            segs.append((r, r + 1, valid))
    out: list[Run] = []
    for r_lo, r_hi, valid in segs:
        if not valid and not first:
            continue  # nothing to add to the partial sums
        n = r_hi - r_lo
        per = max(1, min(n, -(-UNITS_PER_BODY // units)))
        trips, rem = divmod(n, per)
        for start, count, k in ((r_lo, per, trips), (r_lo + trips * per, rem, 1 if rem else 0)):
            if k:
                out.extend(Run(start, count, k, valid, t_lo, t_hi) for t_lo, t_hi in chunks)
    return out


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


def whole_planes(s: ConvShape, rows: int) -> bool:
    """A tile of ``rows`` output rows loads whole planes (the top/bottom pads in the map)."""
    return rows >= s.ho


def in_rows(s: ConvShape, rows: int) -> int:
    """Input rows of a tile of ``rows`` output rows."""
    if whole_planes(s, rows):
        return s.h
    return (rows - 1) * s.strides[0] + (s.kh - 1) * s.dilations[0] + 1


def row_pads(s: ConvShape, rows: int) -> tuple[int, int, int, int]:
    """The map's pads (top, left, bottom, right) of a tile of ``rows`` output rows: the column
    pads always (whole rows are loaded), the row pads when whole planes are (else the DMA fills
    the rows outside the plane with 0.0)."""
    pt, pl, pb, pr = s.pads
    dh, dw = s.dilations
    right = max(0, (s.wo - 1) * s.strides[1] + (s.kw - 1) * dw + 1 - pl - s.w)
    if not whole_planes(s, rows):
        return (0, pl, 0, right)
    bottom = max(0, (s.ho - 1) * s.strides[0] + (s.kh - 1) * dh + 1 - pt - s.h)
    return (pt, pl, bottom, right)


def depthwise_footprint(s: ConvShape, q: int, rows: int) -> int:
    """Per-CPE LDM bytes of the kernel with ``q`` planes per CPE and ``rows`` output rows per
    tile: input and output tiles double-buffered, the filter (and bias) tiles too when there are
    several channel tiles; each rounded to 32 B."""
    def r(n: int) -> int:
        return -(-n * s.elem // 32) * 32

    wb = 2 if N_CPE * q < s.c else 1
    return 2 * (r(q * in_rows(s, rows) * s.w) + r(q * rows * s.wo)) + wb * (r(q * s.kh * s.kw) + (r(q) if s.bias else 0))


# --------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DepthwisePlan:
    """``planes`` channels per tile (C, or a multiple of 64), ``rows`` output rows per tile;
    ``q`` planes per CPE; ``ldm_bytes`` per CPE; ``cost`` (:func:`depthwise_cost`)."""

    shape: ConvShape
    planes: int
    rows: int
    ldm_bytes: int
    cost: KernelCost
    algorithm: str = "depthwise"
    residual_fused: bool = False

    @property
    def q(self) -> int:
        return -(-self.planes // N_CPE)

    @property
    def kernels(self) -> tuple[KernelCost, ...]:
        return (self.cost,)


def _q_of(s: ConvShape, planes: int) -> int:
    return -(-planes // N_CPE)


def depthwise_plan(s: ConvShape, machine: Machine, planes: int, rows: int) -> DepthwisePlan:
    """The plan with ``planes`` channels and ``rows`` output rows per tile, costed (no checks:
    :func:`depthwise_space` / the schedule builder check)."""
    q = _q_of(s, planes)
    return DepthwisePlan(s, planes, rows, depthwise_footprint(s, q, rows), depthwise_cost(s, machine, planes, rows))


def _balanced(n: int, parts: int) -> int:
    return -(-n // parts)


def depthwise_candidates(s: ConvShape, machine: Machine, budget: int) -> Iterator[tuple[tuple, DepthwisePlan]]:
    """Balanced channel tiles (C, or 64*q) x balanced output-row tiles that fit ``budget``, with
    the planner's key (modelled time, then fewer tiles)."""
    q_need = _balanced(s.c, N_CPE)
    for m in range(1, q_need + 1):
        q = _balanced(q_need, m)
        if m > 1 and q == _balanced(q_need, m - 1):
            continue
        planes = s.c if q == q_need else N_CPE * q
        for n in range(1, s.ho + 1):
            rows = _balanced(s.ho, n)
            if n > 1 and rows == _balanced(s.ho, n - 1):
                continue
            if depthwise_footprint(s, q, rows) > budget:
                continue
            plan = depthwise_plan(s, machine, planes, rows)
            yield (plan.cost.t_total, -planes, -rows), plan


def depthwise_space(s: ConvShape, machine: Machine, budget: int) -> Space[DepthwisePlan]:
    """Every depthwise plan of ``s`` that fits ``budget`` B of LDM per CPE, lazily."""
    return Enumerated(lambda: depthwise_candidates(s, machine, budget))


def plan_depthwise(s: ConvShape, machine: Machine, budget: int) -> DepthwisePlan | None:
    """The planner's pick (None: no tile fits)."""
    return depthwise_space(s, machine, budget).best()


# --------------------------------------------------------------------------------------------
# Cost
# --------------------------------------------------------------------------------------------

#: VMAD result latency (cycles; 004 L819, Table 3.2): a unit's chains issue one VMAD per latency
VMAD_LATENCY = 7
#: [measured] cycles a unit holds its register bank beyond its chains (the combining VADDD and
#: the store; simulator, :mod:`taihu.passes.conversion.loop_to_sw.depthwise` bodies)
UNIT_TAIL = 14
#: [measured] issue cycles per instruction of the busier pipe in a list-scheduled body (dual
#: issue is not perfect: in-order pairs, 004 L504-512)
ISSUE_SLACK = 1.07
#: [measured] cycles a later pass's partial-sum load adds to a unit's occupancy (vector load
#: latency; twice that for a lane-by-lane gather), and lane-by-lane stores of unaligned rows
PARTIAL_LOAD = 4
LANE_STORES = 4
#: [measured] cycles per micro-kernel run (issue of the first iteration, pipeline drain)
RUN_CYCLES = 20
#: [measured] cycles per element of a fused element-wise map on the output tile
EPILOGUE_CYCLES_PER_ELEM = 0.75
#: [measured] fraction of a tile's compute exposed when its input load is not prefetched (a
#: boundary tile of several planes per CPE whose pad rows split the load into one DMA per plane:
#: tile-to-loop loads it synchronously; other CPEs' transfers hide the rest)
SYNC_EXPOSED = 0.6


def unit_taps(s: ConvShape, t: int) -> int:
    """Weight vectors (VMADs per kernel row) of unit ``t`` of a row: the offsets d that a lane
    inside the row uses and whose input column lies inside the plane (the column pads skip)."""
    rp = register_plan(s.kw, s.strides[1], s.dilations[1], s.bias)
    assert rp is not None
    nl = min(LANES, s.wo - LANES * t)
    sw, dw, pl = s.strides[1], s.dilations[1], s.pads[1]
    used = {lane * sw + j * dw for lane in range(nl) for j in range(s.kw)}
    return sum(1 for d in used if 0 <= LANES * t * sw - pl + d < s.w)


def pass_unit_cycles(s: ConvShape, v: int, banks: int, first: bool, lanes: bool) -> float:
    """Cycles of a unit (4 outputs) with ``v`` VMADs in one pass with ``banks`` register banks:
    the largest of the P0 and P1 instruction counts and the bank occupancy (two VMAD chains of
    ``v / 2``, then combine and store) over the banks in flight; ``lanes``: stored (and, in a
    later pass, loaded) lane by lane (rows not 4-element aligned, or the row's last lanes)."""
    if not v:
        return 2.0 if first else 0.0  # the bias (or 0) stored
    p0 = v + 1 + (LANES - 1 if lanes else 0) + (0 if first else (LANES - 1 if lanes else 0))
    p1 = v + (LANES if lanes else 1) + (0 if first else (LANES if lanes else 1))
    # a later pass first loads the partial sums (lane by lane into one register when the rows
    # are not 4-element aligned), and unaligned rows store lane by lane: the bank is held longer
    occupancy = (-(-v // 2) * VMAD_LATENCY + UNIT_TAIL + (0 if first else (2 if lanes else 1) * PARTIAL_LOAD)
                 + (LANE_STORES if lanes else 0))
    return max(ISSUE_SLACK * max(p0, p1), occupancy / banks)


def plane_cycles(s: ConvShape, rows: int, first_pass: bool = True) -> float:
    """Compute cycles of one plane of a tile of ``rows`` output rows on one CPE: per pass the
    weight vectors (LDSE + 4 VINSF per tap) and the runs of :func:`row_runs` (their units at
    :func:`pass_unit_cycles` for the kernel rows and columns in bounds; a run's last chains
    drain while the next run issues). ``first_pass`` False: every pass adds to partial sums
    already in the output tile (the later input channels of a grouped convolution,
    :mod:`taihu.backends.model.grouped_conv`)."""
    rp = register_plan(s.kw, s.strides[1], s.dilations[1], s.bias)
    assert rp is not None
    thi, pt = in_rows(s, rows), row_pads(s, rows)[0]
    taps = [unit_taps(s, t) for t in range(_balanced(s.wo, LANES))]
    aligned = s.wo % LANES == 0
    total = 0.0
    for k, prs in enumerate(rp.passes(s.kh)):
        first, banks = k == 0 and first_pass, rp.banks(len(prs))
        total += LANES * len(prs) * s.kw + RUN_CYCLES
        for run in row_runs(rows, s.wo, thi, s.strides[0], s.dilations[0], pt, prs, first):
            nv = len(run.valid)
            row = sum(pass_unit_cycles(s, nv * taps[t], banks, first, not aligned or LANES * (t + 1) > s.wo)
                      for t in range(run.t_lo, run.t_hi))
            total += run.trips * run.count * row + RUN_CYCLES
    return total


@dataclass(frozen=True)
class _Tile:
    """One (channel tile, row tile) iteration: active CPEs, planes per CPE, input rows moved per
    plane, output rows, whether its load is synchronous."""

    cpes: int
    q: int
    in_rows: int
    out_rows: int
    rows: int
    sync: bool


def _tiles(s: ConvShape, planes: int, rows: int, units: int | None = None,
           cin: int = 1, rows_only: bool = False) -> list[tuple[int, list[_Tile]]]:
    """Per channel tile (its channels) the row tiles of one image, as the lowering emits them;
    ``units`` (default C) split in tiles of ``planes``, each with ``cin`` input planes (the
    grouped kernel's groups: C/g); ``rows_only``: input row windows even for whole planes."""
    total = s.c if units is None else units
    q_full = _balanced(planes, N_CPE)
    whole = whole_planes(s, rows) and not rows_only
    thi = in_rows(s, rows) if whole or not rows_only else (rows - 1) * s.strides[0] + (s.kh - 1) * s.dilations[0] + 1
    sh, pt = s.strides[0], s.pads[0]
    out = []
    for c0 in range(0, total, planes):
        ck = min(planes, total - c0)
        cpes = _balanced(ck, q_full)
        q = min(q_full, ck)
        rts = []
        for r0 in range(0, s.ho, rows):
            lo = 0 if whole else r0 * sh - pt
            a, b = max(0, lo), min(s.h, lo + thi)
            boundary = not whole and (lo < 0 or lo + thi > s.h)
            rts.append(_Tile(cpes, q, b - a, min(rows, s.ho - r0), rows, boundary and q * cin > 1))
        out.append((ck, rts))
    return out


@dataclass(frozen=True)
class TiledWork:
    """What one unit of a (units x rows) tiled plane kernel moves and computes: ``units`` in
    all (C planes for depthwise, the groups for grouped), ``planes`` per tile; per unit ``cin``
    input planes, ``cout`` output planes, ``weights`` filter elements and ``bias`` elements;
    ``unit_cycles``: a CPE's compute cycles of one unit of a tile of ``rows`` output rows;
    ``sync_exposed``: the fraction of a synchronously loaded tile's compute that is exposed;
    ``in_width``: the columns of an input plane's rows as loaded (default W); ``rows_only``: the
    tiles load input row windows even when ``rows`` is Ho (the pad rows filled by the DMA)."""

    name: str
    units: int
    planes: int
    cin: int
    cout: int
    weights: int
    bias: int
    unit_cycles: Callable[[int], float]
    sync_exposed: float = SYNC_EXPOSED
    in_width: int | None = None
    rows_only: bool = False


def depthwise_cost(s: ConvShape, machine: Machine, planes: int, rows: int) -> KernelCost:
    """Modelled time of the depthwise kernel with ``planes`` x ``rows`` tiles (module docstring):
    per iteration the larger of its DMA time (128-B transactions of every CPE's runs at the
    30.94 GB/s of the core group, or of its busiest bus, or one CPE's start-ups and transfers)
    and the busiest CPE's compute; a synchronous load adds part of the compute; one start-up; at
    least the time until the last tile's loads, its compute and one CPE's store, and the busiest
    CPE's path: the first tiles' loads, all its compute, a store."""
    work = TiledWork("depthwise", s.c, planes, 1, 1, s.kh * s.kw, 1 if s.bias else 0,
                     lambda r: plane_cycles(s, r))
    return tiled_cost(s, machine, work, rows)


def tiled_cost(s: ConvShape, machine: Machine, work: TiledWork, rows: int) -> KernelCost:
    """:func:`depthwise_cost` of the units of ``work`` (a depthwise plane, or a group of the
    grouped kernel: :mod:`taihu.backends.model.grouped_conv`) in tiles of ``work.planes`` units
    x ``rows`` output rows."""
    e = s.elem
    bw = machine.peak_bw_cg * 1e9
    bus_bw = machine.dma_bus_bw * 1e9
    lat = machine.cycles_to_seconds(machine.dma_latency)
    txn = machine.mem_txn_bytes
    whole = whole_planes(s, rows) and not work.rows_only
    ci, co = work.cin, work.cout
    w_in = s.w if work.in_width is None else work.in_width

    def dma(cpes: int, runs: Sequence[tuple[int, float]]) -> tuple[float, float]:
        """(seconds, moved bytes) of one round in which each of ``cpes`` CPEs moves ``runs``
        (count, bytes) in one request each kind."""
        cpe_moved = sum(n * _avg_moved(b, txn) for n, b in runs)
        moved = cpes * cpe_moved
        busiest = _balanced(cpes, machine.n_dma_bus)  # CPEs of the busiest bus (spread over the columns)
        t = max(moved / bw, busiest * cpe_moved / bus_bw, len(runs) * lat + cpe_moved / bus_bw)
        return t, moved

    t_total = lat
    t_dma = t_comp = moved_all = tail = path = d_out_cpe = 0.0
    first = True
    epi = EPILOGUE_CYCLES_PER_ELEM if s.relu else 0.0
    for _ in range(s.n):
        for _ck, rts in _tiles(s, work.planes, rows, work.units, ci, work.rows_only):
            q0 = rts[0].q
            tw, mw = dma(rts[0].cpes, [(1, q0 * work.weights * e)] + ([(1, q0 * work.bias * e)] if work.bias else []))
            t_total += tw
            t_dma += tw
            moved_all += mw
            for t in rts:
                runs_in = [(1, t.q * ci * s.h * s.w * e)] if whole else [(t.q * ci, t.in_rows * w_in * e)]
                runs_out = [(1, t.q * co * s.ho * s.wo * e)] if whole else [(t.q * co, t.out_rows * s.wo * e)]
                d, mv = dma(t.cpes, runs_in + runs_out)
                c = machine.cycles_to_seconds(t.q * (work.unit_cycles(t.rows) + co * epi * t.rows * s.wo))
                # the last CPE to receive its tile still computes and stores it after the loads
                # (of this tile when it is not prefetched: the kernel's first or a synchronous one)
                d_in = dma(t.cpes, runs_in)[0] if t.sync or first else 0.0
                d_out_cpe = lat + sum(n * _avg_moved(b, txn) for n, b in runs_out) / bus_bw
                tail = t_total + d_in + c + d_out_cpe
                if first:  # the busiest CPE (in every tile) computes once its first tile is in
                    path = lat + d_in
                path += c
                first = False
                t_total += d + work.sync_exposed * c if t.sync else max(d, c)
                t_dma += d
                t_comp += c
                moved_all += mv
    t_total = max(t_total, tail, path + d_out_cpe)
    useful = (s.n * (s.c * s.h * s.w + s.m * s.ho * s.wo) + work.units * (work.weights + work.bias)) * e
    return KernelCost(work.name, t_total, t_dma, t_comp, moved_all, useful, s.flops)
