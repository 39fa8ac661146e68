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

Cost: :func:`~taihu.backends.model.depthwise_conv.tiled_cost` with a group as the unit (C/g
input planes, M/g output planes, M/g * C/g * kh*kw weights). Schedule ``grouped`` {``groups``
(groups per tile: G or a multiple of 64), ``rows`` (output rows per tile; Ho: whole planes)}.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from taihu.backends.model.choice import Enumerated, Space
from taihu.backends.model.conv import ConvShape, KernelCost
from taihu.backends.model.depthwise_conv import (
    MAX_KERNEL,
    N_CPE,
    TiledWork,
    in_rows,
    plane_cycles,
    register_plan,
    tiled_cost,
)
from taihu.target.machine import Machine

__all__ = [
    "GroupedPlan",
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
    groups per CPE; ``ldm_bytes`` per CPE; ``cost`` (:func:`grouped_cost`)."""

    shape: ConvShape
    groups: int
    rows: int
    ldm_bytes: int
    cost: KernelCost
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


def grouped_cost(s: ConvShape, machine: Machine, groups: int, rows: int) -> KernelCost:
    """Modelled time of the grouped kernel with ``groups`` x ``rows`` tiles (module docstring)."""
    kk = s.kh * s.kw
    work = TiledWork("grouped", s.group, groups, s.cg, s.mg, s.mg * s.cg * kk, s.mg if s.bias else 0,
                     lambda r: group_cycles(s, r), GROUPED_SYNC_EXPOSED)
    return tiled_cost(s, machine, work, rows)


def grouped_plan(s: ConvShape, machine: Machine, groups: int, rows: int) -> GroupedPlan:
    """The plan with ``groups`` groups and ``rows`` output rows per tile, costed (no checks:
    :func:`grouped_space` / the schedule builder check)."""
    q = -(-groups // N_CPE)
    return GroupedPlan(s, groups, rows, grouped_footprint(s, q, rows), grouped_cost(s, machine, groups, rows))


def _balanced(n: int, parts: int) -> int:
    return -(-n // parts)


def grouped_candidates(s: ConvShape, machine: Machine, budget: int) -> Iterator[tuple[tuple, GroupedPlan]]:
    """Balanced group tiles (G, or 64*q) x balanced output-row tiles that fit ``budget``, with
    the planner's key (modelled time, then fewer tiles)."""
    q_need = _balanced(s.group, N_CPE)
    for m in range(1, q_need + 1):
        q = _balanced(q_need, m)
        if m > 1 and q == _balanced(q_need, m - 1):
            continue
        groups = s.group if q == q_need else N_CPE * q
        for n in range(1, s.ho + 1):
            rows = _balanced(s.ho, n)
            if n > 1 and rows == _balanced(s.ho, n - 1):
                continue
            if grouped_footprint(s, q, rows) > budget:
                continue
            plan = grouped_plan(s, machine, groups, rows)
            yield (plan.cost.t_total, -groups, -rows), plan


def grouped_space(s: ConvShape, machine: Machine, budget: int) -> Space[GroupedPlan]:
    """Every grouped plan of ``s`` that fits ``budget`` B of LDM per CPE, lazily."""
    return Enumerated(lambda: grouped_candidates(s, machine, budget))


def plan_grouped(s: ConvShape, machine: Machine, budget: int) -> GroupedPlan | None:
    """The planner's pick (None: no tile fits)."""
    return grouped_space(s, machine, budget).best()
