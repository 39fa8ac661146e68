"""Plan and cost of the grouped convolution kernel (``tile.map grouped``; lowering:
``passes/conversion/graph_to_tile/grouped.py`` and ``passes/conversion/loop_to_sw/depthwise.py``).

A grouped convolution with C/g > 1 input channels per group (ResNeXt's 32 groups of 4..32
channels, RegNet's group width 8) has C/g * kh * kw multiply-adds per output element: a few
times a depthwise layer's, still near the DMA roof for small C/g. Per-group im2col + GEMM runs
g GEMMs of M/g rows (a handful of the mesh's 32-row blocks, mostly padding) and unfolds every
input kh*kw times through memory; this kernel is the depthwise kernel
(:mod:`taihu.backends.model.depthwise_conv`) with whole groups over the CPEs::

    for n (image) / g0 (groups per tile, G or a multiple of 64) / r0 (rows output rows per tile):
      w <- w[g0:+groups, M/g, C/g*kh*kw]  [b <- b[g0:+groups, M/g]]  per CPE its q groups' filters
      x <- x[n, g0:+groups, 0:C/g, r0*sh - pt : +in_rows, :]        whole input rows, double
      y  = grouped(x, w, b)                                         per CPE, vector micro-kernels
      [fused relu / clip ...] -> y[n, g0:+groups, 0:M/g, r0:+rows, :]

Each CPE holds its q groups' C/g input planes (row window) once and computes the group's M/g
output planes from them; per output plane the depthwise micro-kernel (4 outputs along W per
unit, scalar-broadcast input loads x shifted weight vectors built in registers) runs once per
input channel of the group, the first from the bias, the others adding to the partial sums in
the output tile (:func:`~taihu.backends.model.depthwise_conv.plane_cycles` with
``first_pass=False``). No im2col, no GEMM; groups, not channels, are split over the CPEs, so a
layer with fewer than 64 groups leaves CPEs idle (the model weighs that against im2col).

The *direct* micro-kernel (schedule ``direct = true``) instead copies each group's input rows
into kw column-shifted scratch rows (``u_j[c] = x[c*sw + j*dw - left]``), so that the 4 outputs
of a unit read 4 aligned inputs, and keeps 4 output channels x 4 units of accumulators in
registers over the C/g x kh x kw terms (per term 4 vector loads, 4 broadcast weights, 16 full-
width VMADs: the mesh's peak rate, where the depthwise passes use 2 of 4 lanes at stride 1);
:func:`direct_group_cycles`.

Cost: :func:`~taihu.backends.model.depthwise_conv.tiled_cost` with a group as the unit (C/g
input planes, M/g output planes, M/g * C/g * kh*kw weights). Schedule ``grouped`` {``groups``
(groups per tile: G or a multiple of 64), ``rows`` (output rows per tile; Ho: whole planes),
``direct`` (the micro-kernel)}. Against the simulator (benchmarks/grouped.py --sweep: every plan
of ResNeXt-50's and RegNetY-400MF's grouped layers): the passes 79 plans, mean |error| 3.7 %
(max 11.5 %); the direct kernel 58 plans, mean |error| 3.1 % (max 15 %).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from taihu.backends.model.choice import Enumerated, Space
from taihu.backends.model.conv import ConvShape, KernelCost
from taihu.backends.model.depthwise_conv import (
    MAX_KERNEL,
    N_CPE,
    VMAD_LATENCY,
    TiledWork,
    in_rows,
    plane_cycles,
    register_plan,
    tiled_cost,
)
from taihu.target.machine import Machine

__all__ = [
    "GroupedPlan",
    "direct_applicability",
    "direct_block_cycles",
    "direct_copies",
    "direct_footprint",
    "direct_group_cycles",
    "direct_in_rows",
    "direct_width",
    "grouped_applicability",
    "grouped_cost",
    "grouped_footprint",
    "grouped_plan",
    "grouped_space",
    "plan_grouped",
]

#: input channels per group at most (a pass per input channel and kernel-row block, unrolled
#: per plane: bounded code; ResNeXt's widest groups have 32)
MAX_GROUP_CHANNELS = 64


def grouped_applicability(s: ConvShape) -> str | None:
    """None when the grouped kernel runs ``s``, else the reason (one line)."""
    if s.group == 1 or (s.group == s.c == s.m):
        return (f"the grouped kernel needs group > 1 and not depthwise (got group = {s.group}, C = {s.c}, "
                f"M = {s.m}); use im2col or depthwise")
    if s.cg > MAX_GROUP_CHANNELS:
        return f"the grouped kernel takes at most {MAX_GROUP_CHANNELS} input channels per group (got {s.cg}); use im2col"
    if s.kh > MAX_KERNEL:
        return f"the grouped kernel takes at most {MAX_KERNEL} kernel rows (got {s.kh}); use im2col"
    if register_plan(s.kw, s.strides[1], s.dilations[1], s.bias) is None:
        return (f"the grouped kernel's weight vectors of one kernel row (kw = {s.kw}, stride {s.strides[1]}, "
                f"dilation {s.dilations[1]}) do not fit the registers; use im2col")
    return None


def grouped_footprint(s: ConvShape, q: int, rows: int) -> int:
    """Per-CPE LDM bytes with ``q`` groups per CPE and ``rows`` output rows per tile: the C/g
    input row windows and M/g output tiles of each group double-buffered, the filter (and bias)
    tiles too when there are several group tiles; each rounded to 32 B."""
    def r(n: int) -> int:
        return -(-n * s.elem // 32) * 32

    wb = 2 if N_CPE * q < s.group else 1
    return (2 * (r(q * s.cg * in_rows(s, rows) * s.w) + r(q * s.mg * rows * s.wo))
            + wb * (r(q * s.mg * s.cg * s.kh * s.kw) + (r(q * s.mg) if s.bias else 0)))


@dataclass(frozen=True)
class GroupedPlan:
    """``groups`` groups per tile (G, or a multiple of 64), ``rows`` output rows per tile; ``q``
    groups per CPE; ``ldm_bytes`` per CPE; ``cost`` (:func:`grouped_cost`); ``direct``: the
    column-copies variant (:func:`direct_applicability`)."""

    shape: ConvShape
    groups: int
    rows: int
    ldm_bytes: int
    cost: KernelCost
    direct: bool = False
    algorithm: str = "grouped"
    residual_fused: bool = False

    @property
    def q(self) -> int:
        return -(-self.groups // N_CPE)

    @property
    def kernels(self) -> tuple[KernelCost, ...]:
        return (self.cost,)


#: [measured] cycles per (output plane, input channel) pass beyond its micro-kernels (the
#: channel loop's iteration and pointer arithmetic, the first body's issue after the weights)
PASS_CYCLES = 5.0
#: [measured] fraction of a synchronously loaded tile's compute that is exposed: all of it (a
#: boundary tile of C/g planes per group is one DMA per plane, all waited for before the compute,
#: and the next tile's load is not issued before it either)
GROUPED_SYNC_EXPOSED = 1.0


def group_cycles(s: ConvShape, rows: int) -> float:
    """A CPE's compute cycles of one group of a tile of ``rows`` output rows: per output plane
    the depthwise passes of its first input channel (from the bias) and of the C/g - 1 others
    (adding to the partial sums), :data:`PASS_CYCLES` each."""
    first = plane_cycles(s, rows)
    rest = plane_cycles(s, rows, first_pass=False) if s.cg > 1 else 0.0
    return s.mg * (first + (s.cg - 1) * rest + s.cg * PASS_CYCLES)


def grouped_cost(s: ConvShape, machine: Machine, groups: int, rows: int, direct: bool = False) -> KernelCost:
    """Modelled time of the grouped kernel with ``groups`` x ``rows`` tiles (module docstring;
    ``direct``: the column-copies variant)."""
    kk = s.kh * s.kw
    if direct:
        work = TiledWork("grouped", s.group, groups, s.cg, s.mg, s.mg * s.cg * kk, s.mg if s.bias else 0,
                         lambda r: direct_group_cycles(s, r), GROUPED_SYNC_EXPOSED, None, True)
    else:
        work = TiledWork("grouped", s.group, groups, s.cg, s.mg, s.mg * s.cg * kk, s.mg if s.bias else 0,
                         lambda r: group_cycles(s, r), GROUPED_SYNC_EXPOSED)
    return tiled_cost(s, machine, work, rows)


def grouped_plan(s: ConvShape, machine: Machine, groups: int, rows: int, direct: bool = False) -> GroupedPlan:
    """The plan with ``groups`` groups and ``rows`` output rows per tile, costed (no checks:
    :func:`grouped_space` / the schedule builder check)."""
    q = -(-groups // N_CPE)
    fp = direct_footprint(s, q, rows) if direct else grouped_footprint(s, q, rows)
    return GroupedPlan(s, groups, rows, fp, grouped_cost(s, machine, groups, rows, direct), direct)


def _balanced(n: int, parts: int) -> int:
    return -(-n // parts)


def grouped_candidates(s: ConvShape, machine: Machine, budget: int) -> Iterator[tuple[tuple, GroupedPlan]]:
    """Balanced group tiles (G, or 64*q) x balanced output-row tiles x both micro-kernels (the
    direct one where it applies) that fit ``budget``, with the planner's key (modelled time,
    then fewer tiles)."""
    q_need = _balanced(s.group, N_CPE)
    variants = (False, True) if direct_applicability(s) is None else (False,)
    for m in range(1, q_need + 1):
        q = _balanced(q_need, m)
        if m > 1 and q == _balanced(q_need, m - 1):
            continue
        groups = s.group if q == q_need else N_CPE * q
        for n in range(1, s.ho + 1):
            rows = _balanced(s.ho, n)
            if n > 1 and rows == _balanced(s.ho, n - 1):
                continue
            for direct in variants:
                fp = direct_footprint(s, q, rows) if direct else grouped_footprint(s, q, rows)
                if fp > budget:
                    continue
                plan = grouped_plan(s, machine, groups, rows, direct)
                yield (plan.cost.t_total, -groups, -rows, direct), plan


# --------------------------------------------------------------------------------------------
# The direct micro-kernel (column copies)
# --------------------------------------------------------------------------------------------

#: output channels x units (4 outputs along W) of the direct kernel's register block: 16
#: accumulators, 4 input vectors, 4 broadcast weights (004 L821: 31 registers)
BLOCK_M = 4
BLOCK_U = 4
#: [measured] cycles per micro-kernel run of the direct kernel (issue of the first iteration,
#: pipeline drain)
DIRECT_RUN_CYCLES = 20
#: [measured] issue cycles per instruction of the busier pipe in its list-scheduled body
DIRECT_SLACK = 1.07
#: [measured] cycles per element of a column copy (a scalar load and a scalar store on P1, the
#: load's latency not wholly hidden)
COPY_CYCLES = 3.0


def direct_applicability(s: ConvShape) -> str | None:
    """None when the direct micro-kernel runs ``s`` (every layer the grouped kernel runs: the
    column copies take any stride, dilation and pads), else the reason."""
    return grouped_applicability(s)


def direct_width(s: ConvShape) -> int:
    """Columns of the direct kernel's input copies: Wo rounded up to the 4 SIMD lanes."""
    return -(-s.wo // 4) * 4


def direct_in_rows(s: ConvShape, rows: int) -> int:
    """Input rows of the direct kernel's tile of ``rows`` output rows (pad rows included)."""
    return (rows - 1) * s.strides[0] + (s.kh - 1) * s.dilations[0] + 1


def direct_footprint(s: ConvShape, q: int, rows: int) -> int:
    """Per-CPE LDM bytes of the direct kernel: the C/g input-row windows and the M/g output
    tiles (double-buffered), kw scratch tiles for the column copies, the filters (and bias) as
    :func:`grouped_footprint`."""
    def r(n: int) -> int:
        return -(-n * s.elem // 32) * 32

    wb = 2 if N_CPE * q < s.group else 1
    thi = direct_in_rows(s, rows)
    return (2 * (r(q * s.cg * thi * s.w) + r(q * s.mg * rows * s.wo)) + s.kw * r(q * s.cg * thi * direct_width(s))
            + wb * (r(q * s.mg * s.cg * s.kh * s.kw) + (r(q * s.mg) if s.bias else 0)))


def direct_copies(s: ConvShape) -> int:
    """Column copies the direct kernel makes (a shift of 0 on rows of Wo = W reads x itself)."""
    return sum(1 for j in range(s.kw)
               if not (j * s.dilations[1] - s.pads[1] == 0 and s.strides[1] == 1 and direct_width(s) == s.w))


def _blocks(n: int, size: int) -> list[int]:
    return [min(size, n - i) for i in range(0, n, size)]


def direct_block_cycles(s: ConvShape, mb: int, ub: int) -> float:
    """Cycles of one register block (``mb`` output channels x ``ub`` units of a row): the
    accumulators set (bias or 0), C/g iterations of kh*kw terms (``ub`` vector loads, ``mb``
    broadcast loads, ``mb * ub`` VMADs; at least one VMAD latency per term: each accumulator
    is updated once per term), the stores (lane by lane for a row's partial last unit)."""
    kk = s.kh * s.kw
    term = max(DIRECT_SLACK * max(mb * ub, mb + ub), VMAD_LATENCY)
    lanes = s.wo % 4 != 0
    store = mb * ub + (mb * 2 * 3 if lanes else 0)
    return 3 * DIRECT_RUN_CYCLES + mb * ub + s.cg * kk * term + store


def direct_group_cycles(s: ConvShape, rows: int) -> float:
    """A CPE's compute cycles of one group of a tile of ``rows`` output rows with the direct
    micro-kernel: the column copies of its C/g input-row windows (a scalar load and store per
    element, :data:`COPY_CYCLES`), then every row's register blocks of every output-channel
    block."""
    units = -(-s.wo // 4)
    per_row = sum(direct_block_cycles(s, mb, ub) for mb in _blocks(s.mg, BLOCK_M) for ub in _blocks(units, BLOCK_U))
    copies = direct_copies(s) * (s.cg * direct_in_rows(s, rows) * direct_width(s) * COPY_CYCLES + DIRECT_RUN_CYCLES)
    return copies + rows * per_row


def grouped_space(s: ConvShape, machine: Machine, budget: int) -> Space[GroupedPlan]:
    """Every grouped plan of ``s`` that fits ``budget`` B of LDM per CPE, lazily."""
    return Enumerated(lambda: grouped_candidates(s, machine, budget))


def plan_grouped(s: ConvShape, machine: Machine, budget: int) -> GroupedPlan | None:
    """The planner's pick (None: no tile fits)."""
    return grouped_space(s, machine, budget).best()
