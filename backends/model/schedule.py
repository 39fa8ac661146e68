"""Schedules as data: every free decision of one op's plan as a value (issue 12).

A :class:`Schedule` is an algorithm name and its parameters -- the decisions the planners of
:mod:`taihu.backends.model` make for a convolution or a GEMM (block sizes, vector dimension,
SUMMA or overlapping distribution, double buffering, fusion of a residual sum, GEMM form); the
values the plan derives from them (hoisted operands, staging buffers, LDM bytes, padded sizes,
costs) are not parameters. For every op this module gives:

* ``*_schedule_of(plan)``: the schedule of a plan;
* ``*_space(shape, machine)``: every legal plan the planner considers, lazily, each with its
  modelled cost (``plan.cost``); the planner's pick (``choose_conv_schedule`` / ``plan_gemm``) is
  the minimum of the space under the planner's key (:func:`conv_ranked`, :func:`gemm_ranked`);
* ``*_plan_for(shape, machine, schedule)``: exactly the plan of a schedule, or
  :class:`IllegalSchedule` saying in one line why it cannot run the op on the machine (LDM
  overflow, a block not a multiple of its unit, an inapplicable algorithm, an unknown or
  missing parameter). Block sizes need not be among the planner's candidates: any multiple of
  the unit up to the padded dim is legal.

Parameters (every schedule carries all of its algorithm's, sorted by name):

========== ==================================================================================
gemm       the SUMMA GEMM kernel (MatMul / Gemm / FC): ``vec`` ("m" | "n"), ``bm``, ``bn``,
           ``bk``, ``double_c`` (the stored C tile double-buffered), ``trans_a``, ``trans_b``
           (the storage order of A / B: free for a constant operand, else the shape's)
overlap    (nested only) the overlapping-distribution GEMM: ``vec``, ``bm`` (64 x rows per CPE),
           ``bn``, ``bk``, ``double_c``
implicit   ``vec``, ``bm``, ``bn``, ``bk``, ``b_b`` (images), ``b_ro`` (output rows) per weight tile
unfold     the unfolded implicit convolution: ``vec``, ``bm``, ``cb`` (input channels per K block),
           and ``residual_fused`` for a layer with a residual sum
im2col     ``overlap``, ``batched``, ``pointwise`` (the GEMM reads x: 1x1/s1/p0 layers), the GEMM's
           ``vec``, ``bm``, ``bn``, ``bk``, ``double_c``, and ``residual_fused`` for a layer with a
           residual sum
winograd   ``tiles_per_cpe`` (m', the input transform's tiles per task wanted), ``overlap``, the
           16 GEMMs' ``vec``, ``bm``, ``bn``, ``bk``, ``double_c`` (P is padded to ``bm``)
depthwise  (group = C = M) ``planes`` (channels per tile: C or a multiple of 64, split over the
           CPEs), ``rows`` (output rows per tile; Ho: whole planes)
grouped    (group > 1, C/g > 1 or M/g > 1) ``groups`` (groups per tile: G or a multiple of 64,
           split over the CPEs), ``rows`` (output rows per tile; Ho: whole planes), ``direct``
           (kw column-shifted input copies, 4 x 4 register blocks; stride 1 along W)
========== ==================================================================================

Machines: as in :func:`~taihu.backends.model.conv.choose_conv`, ``machine`` is the machine the
GEMM-like kernels are planned for (its ``ldm_user_bytes`` is their budget: convert-graph-to-tile's
``plan_machine``) and ``mem_budget`` the LDM bytes of the memory-primitive kernels (im2col,
Winograd transforms; default ``machine.ldm_user_bytes``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from taihu.backends.model.choice import Cheapest, Key, Preferred, Space
from taihu.backends.model.conv import (
    ExplicitPlan,
    GemmPlan,
    GemmShape,
    ImplicitPlan,
    ConvShape,
    NotApplicable,
    WinogradPlan,
    applicability,
    check_gemm_shape,
    choose_conv,
    explicit_gemm_shape,
    explicit_needs_im2col,
    explicit_plan,
    explicit_residual_apart,
    explicit_space,
    gemm_candidates,
    gemm_plan,
    gemm_storages,
    im2col_cost,
    implicit_group_shapes,
    implicit_plan,
    implicit_space,
    is_pointwise,
    n_border_clean,
    winograd_gemm_shapes,
    winograd_plan,
    winograd_space,
    winograd_tiles,
    winograd_transforms_fit,
)
from taihu.backends.model.depthwise_conv import (
    DepthwisePlan,
    depthwise_applicability,
    depthwise_footprint,
    depthwise_plan,
    depthwise_space,
)
from taihu.backends.model.grouped_conv import (
    GroupedPlan,
    direct_applicability,
    direct_footprint,
    grouped_applicability,
    grouped_footprint,
    grouped_plan,
    grouped_space,
)
from taihu.backends.model.gemm_blocking import K_UNIT, OTHER_UNIT, VEC_UNIT
from taihu.backends.model.overlap_gemm import overlap_applicability, overlap_plan, overlap_vecs
from taihu.backends.model.unfold_conv import (
    UnfoldPlan,
    plan_unfold,
    unfold_applicability,
    unfold_plan,
    unfold_row_length,
    unfold_space,
)
from taihu.target.machine import Machine

__all__ = [
    "CONV_ALGORITHMS",
    "ConvPlan",
    "IllegalSchedule",
    "Schedule",
    "choose_conv_schedule",
    "conv_plan_for",
    "conv_ranked",
    "conv_schedule_of",
    "conv_space",
    "gemm_plan_for",
    "gemm_ranked",
    "gemm_schedule_of",
    "gemm_space",
    "plan_footprint",
    "space_size",
]

Value = int | str | bool
ConvPlan = ExplicitPlan | ImplicitPlan | UnfoldPlan | WinogradPlan | DepthwisePlan | GroupedPlan
#: the convolution algorithms of a schedule (``unfold``: the unfolded implicit convolution;
#: ``depthwise``: the per-plane kernel of group = C = M layers; ``grouped``: its groups form)
CONV_ALGORITHMS = ("im2col", "implicit", "unfold", "winograd", "depthwise", "grouped")


class IllegalSchedule(ValueError):
    """A schedule that cannot run the op on the machine; the message says why in one line,
    naming the parameter: 'bm=96 is not a multiple of 128 (vec=m)', 'LDM footprint 61440 B >
    57344 B (ldm_user_bytes)', 'winograd: not applicable: Winograd F(2x2,3x3) needs stride 1
    (got [2, 2])', 'unknown parameter "foo" for implicit (expected: b_b, b_ro, bk, bm, bn, vec)'."""


def _fmt(v: Value) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


@dataclass(frozen=True)
class Schedule:
    """Every decision of one op's plan: the algorithm and its parameters (ints, strs, bools),
    sorted by name, without duplicates (use :meth:`make`)."""

    algorithm: str
    params: tuple[tuple[str, Value], ...]

    def __post_init__(self) -> None:
        names = [k for k, _ in self.params]
        if names != sorted(set(names)):
            raise ValueError(f"schedule parameters must be sorted by name without duplicates, got {names}")

    @classmethod
    def make(cls, algorithm: str, **params: Value) -> Schedule:
        """The schedule of ``algorithm`` with ``params`` (sorted)."""
        return cls(algorithm, tuple(sorted(params.items())))

    def as_dict(self) -> dict[str, Value]:
        return dict(self.params)

    def describe(self) -> str:
        """One line: ``ALGORITHM k=v ...`` (bools as true/false), e.g.
        ``implicit b_b=1 b_ro=2 bk=64 bm=64 bn=56 vec=n``; :meth:`parse` reads it back."""
        return " ".join([self.algorithm] + [f"{k}={_fmt(v)}" for k, v in self.params])

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """The schedule of a :meth:`describe` line (values: true/false, integers, else strings).
        Raises :class:`IllegalSchedule` naming the malformed word."""
        words = text.split()
        if not words or "=" in words[0]:
            raise IllegalSchedule(f"a schedule starts with its algorithm name, got {text!r}")
        params: dict[str, Value] = {}
        for w in words[1:]:
            k, eq, v = w.partition("=")
            if not eq or not k or not v:
                raise IllegalSchedule(f"schedule parameter {w!r} is not NAME=VALUE")
            if k in params:
                raise IllegalSchedule(f'duplicate parameter "{k}"')
            params[k] = True if v == "true" else False if v == "false" else int(v) if v.lstrip("-").isdigit() else v
        return cls.make(words[0], **params)


# --------------------------------------------------------------------------------------------
# Parameter checks
# --------------------------------------------------------------------------------------------


def _take(schedule: Schedule, expected: Sequence[str]) -> dict[str, Value]:
    """The schedule's parameters, exactly ``expected`` (else IllegalSchedule naming the first
    unknown / missing one and listing the expected ones)."""
    d = schedule.as_dict()
    exp = ", ".join(sorted(expected))
    for k in d:
        if k not in expected:
            raise IllegalSchedule(f'unknown parameter "{k}" for {schedule.algorithm} (expected: {exp})')
    for k in sorted(expected):
        if k not in d:
            raise IllegalSchedule(f'missing parameter "{k}" for {schedule.algorithm} (expected: {exp})')
    return d


def _int(d: dict[str, Value], k: str) -> int:
    v = d[k]
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise IllegalSchedule(f"{k}={_fmt(v)} must be a positive integer")
    return v


def _bool(d: dict[str, Value], k: str) -> bool:
    v = d[k]
    if not isinstance(v, bool):
        raise IllegalSchedule(f"{k}={_fmt(v)} must be true or false")
    return v


def _vec(d: dict[str, Value]) -> str:
    v = d["vec"]
    if v not in ("m", "n"):
        raise IllegalSchedule(f"vec={_fmt(v)} must be m or n")
    return str(v)


def _block(name: str, value: int, unit: int, dim: int, dim_name: str, why: str = "") -> None:
    """``value`` a multiple of ``unit`` not above ``dim`` rounded up to ``unit``."""
    if value % unit:
        raise IllegalSchedule(f"{name}={value} is not a multiple of {unit}" + (f" ({why})" if why else ""))
    top = -(-dim // unit) * unit
    if value > top:
        raise IllegalSchedule(f"{name}={value} exceeds {dim_name} = {dim} rounded up to {unit} ({top})")


def _fits(ldm_bytes: int, machine: Machine, what: str) -> None:
    if ldm_bytes > machine.ldm_user_bytes:
        raise IllegalSchedule(f"{what}: LDM footprint {ldm_bytes} B > {machine.ldm_user_bytes} B (ldm_user_bytes)")


def _summa(p: GemmShape, machine: Machine, d: dict[str, Value], n_clean: bool = False, name: str = "gemm") -> GemmPlan:
    """The SUMMA GEMM plan of ``p`` (storage resolved) with ``d``'s vec, bm, bn, bk, double_c."""
    vec, bm, bn, bk, double_c = _vec(d), _int(d, "bm"), _int(d, "bn"), _int(d, "bk"), _bool(d, "double_c")
    um, un = (VEC_UNIT, OTHER_UNIT) if vec == "m" else (OTHER_UNIT, VEC_UNIT)
    _block("bm", bm, um, p.m, "M", f"vec={vec}")
    _block("bn", bn, un, p.n, "N", f"vec={vec}")
    _block("bk", bk, K_UNIT, p.k, "K")
    if double_c and p.c_full:
        raise IllegalSchedule("double_c=true: the full C operand is loaded into the stored tile, which is then "
                              "single-buffered")
    if n_clean and not n_border_clean(p.n, bn):
        raise IllegalSchedule(f"bn={bn}: the GEMM reads x directly (pointwise=true) and its last N block "
                              f"({p.n} % {bn}) would end inside a CPE's piece of {bn // 8} columns; "
                              "use pointwise=false "
                              "(a 1x1 im2col pads the columns)")
    plan = gemm_plan(p, machine, vec, bm, bn, bk, double_c, name)
    _fits(plan.ldm_bytes, machine, f"gemm bm={bm} bn={bn} bk={bk}")
    return plan


def _overlap(p: GemmShape, machine: Machine, d: dict[str, Value]) -> GemmPlan:
    """The overlapping-distribution GEMM plan of ``p`` with ``d``'s vec, bm, bn, bk, double_c."""
    why = overlap_applicability(p)
    if why:
        raise IllegalSchedule(f"overlap=true: the overlapping distribution does not apply: {why}")
    vec, bm, bn, bk, double_c = _vec(d), _int(d, "bm"), _int(d, "bn"), _int(d, "bk"), _bool(d, "double_c")
    if vec not in overlap_vecs(p):
        raise IllegalSchedule("vec=m: the overlapping GEMM on columns padded to 4 is vec n only" if p.pad_n else
                              "vec=m: the overlapping GEMM with vec m needs constant weights (stored (K, M))")
    if bm % 64:
        raise IllegalSchedule(f"bm={bm} is not a multiple of 64 (the overlapping distribution gives each CPE "
                              "bm/64 rows)")
    if vec == "m" and bm % 256:
        raise IllegalSchedule(f"bm={bm} is not a multiple of 256 (vec=m: 4 rows per CPE)")
    if bm > -(-p.m // 64) * 64:
        raise IllegalSchedule(f"bm={bm} exceeds M = {p.m} rounded up to 64 ({-(-p.m // 64) * 64})")
    if bk % 8 or p.k % bk:
        raise IllegalSchedule(f"bk={bk} is not a multiple of 8 dividing K = {p.k}")
    n4 = -(-p.n // 4) * 4
    if p.pad_n:
        if bn != n4:
            raise IllegalSchedule(f"bn={bn}: the columns padded to 4 are one N block of {n4}")
    elif bn != p.n and (p.n % bn or bn % 4 or bn < 16):
        raise IllegalSchedule(f"bn={bn} is neither N = {p.n} nor a multiple of 4 >= 16 dividing it")
    elif vec == "n" and bn % 4:
        raise IllegalSchedule(f"bn={bn} is not a multiple of 4 (vec=n)")
    nn = 1 if p.pad_n else -(-p.n // bn)
    if double_c and -(-p.m // bm) * nn * p.batch == 1:
        raise IllegalSchedule("double_c=true: there is a single C block (no next block for its store to overlap)")
    plan = overlap_plan(p, machine, vec, bm, bn, bk, double_c)
    _fits(plan.ldm_bytes, machine, f"overlap bm={bm} bn={bn} bk={bk}")
    return plan


def _gemm_params(g: GemmPlan) -> dict[str, Value]:
    return {"vec": g.vec, "bm": g.bm, "bn": g.bn, "bk": g.bk, "double_c": g.double_c}


# --------------------------------------------------------------------------------------------
# GEMM
# --------------------------------------------------------------------------------------------

_GEMM_PARAMS = ("bk", "bm", "bn", "double_c", "trans_a", "trans_b", "vec")


def gemm_schedule_of(plan: GemmPlan) -> Schedule:
    """The schedule of a GEMM plan: ``gemm`` (SUMMA; with the operands' storage orders) or
    ``overlap`` (the overlapping distribution)."""
    if plan.overlap:
        return Schedule.make("overlap", **_gemm_params(plan))
    return Schedule.make("gemm", trans_a=plan.trans_a, trans_b=plan.trans_b, **_gemm_params(plan))


def gemm_space(p: GemmShape, machine: Machine, name: str = "gemm") -> Iterator[GemmPlan]:
    """Every SUMMA GEMM plan of ``p`` on ``machine``, lazily
    (:func:`~taihu.backends.model.conv.gemm_candidates`); its minimum under the planner's key
    is :func:`~taihu.backends.model.conv.plan_gemm`. ``name``: the plans' cost name. Raises
    ValueError for a bad shape (:func:`~taihu.backends.model.conv.check_gemm_shape`)."""
    for _, plan in gemm_candidates(p, machine, name=name):
        yield plan


def gemm_ranked(p: GemmShape, machine: Machine, name: str = "gemm") -> Iterator[tuple[Key, GemmPlan]]:
    """:func:`gemm_space` with the planner's key of every plan (``min`` = ``plan_gemm``)."""
    return gemm_candidates(p, machine, name=name)


def gemm_plan_for(p: GemmShape, machine: Machine, schedule: Schedule, name: str = "gemm") -> GemmPlan:
    """The SUMMA GEMM plan of ``p`` on ``machine`` with exactly ``schedule`` (a ``gemm`` schedule:
    MatMul / Gemm / FC lower to the SUMMA kernel), costed; ``name``: its cost name. Raises
    :class:`IllegalSchedule`."""
    if schedule.algorithm != "gemm":
        raise IllegalSchedule(f'unknown algorithm "{schedule.algorithm}" for a GEMM (expected: gemm; the overlapping '
                              "distribution is planned inside convolutions)")
    try:
        check_gemm_shape(p)
    except ValueError as e:
        raise IllegalSchedule(str(e)) from None
    d = _take(schedule, _GEMM_PARAMS)
    ta, tb = _bool(d, "trans_a"), _bool(d, "trans_b")
    for flag, given, const, op in ((ta, p.trans_a, p.const_a, "A"), (tb, p.trans_b, p.const_b, "B")):
        if flag != bool(given) and not const:
            which = "trans_a" if op == "A" else "trans_b"
            raise IllegalSchedule(f"{which}={_fmt(flag)}: {op} is not a constant, its storage is fixed "
                                  f"({which}={_fmt(bool(given))})")
    fixed = next(q for q in gemm_storages(p) if (q.trans_a, q.trans_b) == (ta, tb))
    return _summa(fixed, machine, d, name=name)


# --------------------------------------------------------------------------------------------
# Convolution
# --------------------------------------------------------------------------------------------


def conv_schedule_of(plan: ConvPlan) -> Schedule:
    """The schedule of a convolution plan (``implicit``, ``unfold``, ``im2col`` or ``winograd``)."""
    s = plan.shape
    if isinstance(plan, DepthwisePlan):
        return Schedule.make("depthwise", planes=plan.planes, rows=plan.rows)
    if isinstance(plan, GroupedPlan):
        return Schedule.make("grouped", groups=plan.groups, rows=plan.rows, direct=plan.direct)
    res: dict[str, Value] = {"residual_fused": plan.residual_fused} if s.residual and not isinstance(
        plan, (ImplicitPlan, WinogradPlan)) else {}
    if isinstance(plan, UnfoldPlan):
        return Schedule.make("unfold", vec=plan.vec, bm=plan.bm, cb=plan.cb, **res)
    if isinstance(plan, ImplicitPlan):
        return Schedule.make("implicit", vec=plan.vec, bm=plan.bm, bn=plan.bn, bk=plan.bk, b_b=plan.b_b, b_ro=plan.b_ro)
    if isinstance(plan, ExplicitPlan):
        return Schedule.make("im2col", overlap=plan.gemm.overlap, batched=plan.batched, pointwise=plan.pointwise,
                             **_gemm_params(plan.gemm), **res)
    return Schedule.make("winograd", overlap=plan.gemm.overlap, tiles_per_cpe=plan.tiles_per_cpe,
                         **_gemm_params(plan.gemm))


def plan_footprint(plan: ConvPlan | GemmPlan) -> int:
    """Per-CPE LDM bytes of the plan's GEMM-like kernel (to compare with the planning machine's
    ``ldm_user_bytes``; the memory primitives fit ``mem_budget`` by construction)."""
    if isinstance(plan, (ExplicitPlan, WinogradPlan)):
        return plan.gemm.ldm_bytes
    return plan.ldm_bytes


def _conv_tree(s: ConvShape, machine: Machine, algorithm: str, mem_budget: int | None) -> Space[ConvPlan]:
    """The space of ``s`` whose pick is :func:`choose_conv_schedule`'s: ``auto`` = the cheapest of
    implicit, unfold, im2col, winograd, depthwise (in this order on ties); ``implicit`` = the
    unfolded variant when it has a plan, else the implicit one."""
    implicit: list[Space] = []
    if applicability(s, "implicit") is None:
        implicit = [implicit_space(s, machine)]
    unfold: list[Space] = [unfold_space(s, machine)] if implicit and unfold_applicability(s) is None else []
    im2col: list[Space] = [explicit_space(s, machine, mem_budget)]
    winograd: list[Space] = []
    if applicability(s, "winograd") is None and winograd_transforms_fit(s, machine, mem_budget) is None:
        winograd = [winograd_space(s, machine, mem_budget)]
    depthwise: list[Space] = []
    if depthwise_applicability(s) is None:
        depthwise = [depthwise_space(s, machine, machine.ldm_user_bytes)]
    if grouped_applicability(s) is None:
        depthwise.append(grouped_space(s, machine, machine.ldm_user_bytes))
    if algorithm == "auto":
        return Cheapest(implicit + unfold + im2col + winograd + depthwise)
    if algorithm in ("depthwise", "grouped"):
        why = depthwise_applicability(s) if algorithm == "depthwise" else grouped_applicability(s)
        if why is not None:
            raise NotApplicable(why)
        return Cheapest(depthwise)
    if algorithm == "implicit":
        return Preferred(unfold + implicit)
    if algorithm == "im2col":
        return Cheapest(im2col)
    if algorithm == "winograd":
        return Cheapest(winograd)
    raise NotApplicable(applicability(s, algorithm) or algorithm)


def conv_space(s: ConvShape, machine: Machine, mem_budget: int | None = None,
               algorithm: str = "auto") -> Iterator[ConvPlan]:
    """Every legal plan of ``s`` on ``machine``, lazily, each with its model cost: all
    applicable algorithms (``auto``; implicit includes the unfolded variant) or the forced one
    (``implicit``, ``im2col``, ``winograd``, ``depthwise``: the ``conv-algorithm`` option);
    nothing for a forced algorithm that does not apply (a forced ``depthwise`` that does not
    apply raises :class:`~taihu.backends.model.conv.NotApplicable`). Every plan fits ``machine.ldm_user_bytes``
    (:func:`plan_footprint`) and its memory primitives ``mem_budget``. Raises
    :class:`~taihu.backends.model.conv.NotApplicable` for an unknown ``algorithm``."""
    yield from _conv_tree(s, machine, algorithm, mem_budget)


def conv_ranked(s: ConvShape, machine: Machine, mem_budget: int | None = None,
                algorithm: str = "auto") -> Iterator[tuple[Key, ConvPlan]]:
    """:func:`conv_space` with the planner's key of every plan: ``min`` by key is
    :func:`choose_conv_schedule` (the key is the path of the planners' choices: at every choice
    the cost of the option's pick and its rank, then the blocking's own key; ranking costs every
    candidate)."""
    return _conv_tree(s, machine, algorithm, mem_budget).ranked()


@functools.lru_cache(maxsize=512)
def choose_conv_schedule(s: ConvShape, machine: Machine, algorithm: str = "auto",
                         mem_budget: int | None = None) -> ConvPlan:
    """The plan convert-graph-to-tile uses for ``s`` when no schedule is given (the ``model``
    strategy): :func:`~taihu.backends.model.conv.choose_conv`'s pick, replaced by the unfolded
    implicit convolution (:func:`~taihu.backends.model.unfold_conv.plan_unfold`) when it applies
    and is cheaper (``auto``) or whenever it applies (``algorithm="implicit"``). Equal to the
    minimum of :func:`conv_ranked`. Raises :class:`~taihu.backends.model.conv.NotApplicable`
    (the reason) when a forced algorithm cannot run the layer. Memoised like ``choose_conv``.
    The depthwise kernel (:mod:`~taihu.backends.model.depthwise_conv`) competes last (``auto``)
    or is forced (``algorithm="depthwise"``)."""
    dw: ConvPlan | None = None
    if algorithm in ("auto", "depthwise", "grouped"):
        kind = "grouped" if depthwise_applicability(s) else "depthwise"
        why = depthwise_applicability(s) if kind == "depthwise" else grouped_applicability(s)
        dw = _conv_tree(s, machine, kind, mem_budget).best() if why is None else None
        if algorithm in ("depthwise", "grouped"):
            if algorithm != kind:
                raise NotApplicable(depthwise_applicability(s) if algorithm == "depthwise" else grouped_applicability(s)
                                    or algorithm)
            if dw is None:
                raise NotApplicable(why or f"no tile of the {kind} kernel of {s.describe()} fits in LDM")
            return dw
    plan: ConvPlan = choose_conv(s, machine, algorithm, mem_budget=mem_budget).plan
    if algorithm in ("auto", "implicit") and unfold_applicability(s) is None:
        try:
            alt = plan_unfold(s, machine)
        except NotApplicable:
            alt = None
        if alt is not None and (algorithm == "implicit" or alt.cost.t_total < plan.cost.t_total):
            plan = alt
    if dw is not None and dw.cost.t_total < plan.cost.t_total:
        plan = dw
    return plan


def conv_plan_for(s: ConvShape, machine: Machine, schedule: Schedule, mem_budget: int | None = None) -> ConvPlan:
    """Exactly the plan of ``schedule`` for ``s`` on ``machine`` (``mem_budget``: the memory
    primitives' LDM bytes, default ``machine.ldm_user_bytes``), costed; ``conv_plan_for(s, m,
    conv_schedule_of(p)) == p`` for every plan of :func:`conv_space`. Raises
    :class:`IllegalSchedule`."""
    bud = machine.ldm_user_bytes if mem_budget is None else mem_budget
    alg = schedule.algorithm
    if alg not in CONV_ALGORITHMS:
        raise IllegalSchedule(f'unknown algorithm "{alg}" for a convolution (expected: {", ".join(CONV_ALGORITHMS)})')
    why = (depthwise_applicability(s) if alg == "depthwise" else grouped_applicability(s) if alg == "grouped"
           else applicability(s, "implicit" if alg == "unfold" else alg))
    if why is None and alg == "unfold":
        why = unfold_applicability(s)
    if why is None and alg == "winograd":
        why = winograd_transforms_fit(s, machine, bud)
    if why:
        raise IllegalSchedule(f"{alg}: not applicable: {why}")
    if alg == "implicit":
        return _implicit_for(s, machine, schedule)
    if alg == "unfold":
        return _unfold_for(s, machine, schedule)
    if alg == "im2col":
        return _im2col_for(s, machine, schedule, bud)
    if alg == "depthwise":
        return _depthwise_for(s, machine, schedule)
    if alg == "grouped":
        return _grouped_for(s, machine, schedule)
    return _winograd_for(s, machine, schedule, bud)


def _depthwise_for(s: ConvShape, machine: Machine, schedule: Schedule) -> DepthwisePlan:
    d = _take(schedule, ("planes", "rows"))
    planes, rows = _int(d, "planes"), _int(d, "rows")
    if planes != s.c and planes % 64:
        raise IllegalSchedule(f"planes={planes} is neither the channels C = {s.c} nor a multiple of 64 (the CPEs)")
    if planes > -(-s.c // 64) * 64:
        raise IllegalSchedule(f"planes={planes} exceeds the channels C = {s.c} rounded up to 64")
    if rows > s.ho:
        raise IllegalSchedule(f"rows={rows} exceeds the output rows Ho = {s.ho}")
    q = -(-planes // 64)
    _fits(depthwise_footprint(s, q, rows), machine, f"depthwise planes={planes} rows={rows}")
    return depthwise_plan(s, machine, planes, rows)


def _grouped_for(s: ConvShape, machine: Machine, schedule: Schedule) -> GroupedPlan:
    d = _take(schedule, ("direct", "groups", "rows"))
    groups, rows, direct = _int(d, "groups"), _int(d, "rows"), _bool(d, "direct")
    if groups != s.group and groups % 64:
        raise IllegalSchedule(f"groups={groups} is neither the groups G = {s.group} nor a multiple of 64 (the CPEs)")
    if groups > -(-s.group // 64) * 64:
        raise IllegalSchedule(f"groups={groups} exceeds the groups G = {s.group} rounded up to 64")
    if rows > s.ho:
        raise IllegalSchedule(f"rows={rows} exceeds the output rows Ho = {s.ho}")
    if direct and (why := direct_applicability(s)):
        raise IllegalSchedule(f"direct=true: {why}")
    q = -(-groups // 64)
    fp = direct_footprint(s, q, rows) if direct else grouped_footprint(s, q, rows)
    _fits(fp, machine, f"grouped groups={groups} rows={rows}{' direct' if direct else ''}")
    return grouped_plan(s, machine, groups, rows, direct)


def _implicit_for(s: ConvShape, machine: Machine, schedule: Schedule) -> ImplicitPlan:
    d = _take(schedule, ("b_b", "b_ro", "bk", "bm", "bn", "vec"))
    vec, bm, bn, bk, b_b, b_ro = _vec(d), _int(d, "bm"), _int(d, "bn"), _int(d, "bk"), _int(d, "b_b"), _int(d, "b_ro")
    um, un = (VEC_UNIT, OTHER_UNIT) if vec == "m" else (OTHER_UNIT, VEC_UNIT)
    _block("bm", bm, um, s.m, "M", f"vec={vec}")
    _block("bn", bn, un, s.wo, "Wo", f"vec={vec}")
    _block("bk", bk, K_UNIT, s.c, "C")
    if (b_b, b_ro) not in implicit_group_shapes(s):
        raise IllegalSchedule(f"b_b={b_b} b_ro={b_ro}: b_b * b_ro must be 1, 2, 4 or 8 with b_b a power of two "
                              f"<= N = {s.n} and b_ro <= Ho = {s.ho}")
    plan = implicit_plan(s, machine, vec, bm, bn, bk, b_b, b_ro)
    _fits(plan.ldm_bytes, machine, f"implicit bm={bm} bn={bn} bk={bk} b_b={b_b} b_ro={b_ro}")
    return plan


def _unfold_for(s: ConvShape, machine: Machine, schedule: Schedule) -> UnfoldPlan:
    d = _take(schedule, ("bm", "cb", "vec") + (("residual_fused",) if s.residual else ()))
    vec, bm, cb = _vec(d), _int(d, "bm"), _int(d, "cb")
    fused = _bool(d, "residual_fused") if s.residual else False
    if vec == "m" and s.m < 128:
        raise IllegalSchedule(f"vec=m: the unfolded convolution with vec m needs M >= 128 (got {s.m})")
    unit = 128 if vec == "m" else 32
    if bm % unit:
        raise IllegalSchedule(f"bm={bm} is not a multiple of {unit} (vec={vec})")
    if bm > max(unit, s.m):
        raise IllegalSchedule(f"bm={bm} exceeds M = {s.m}")
    if cb % 8 or s.c % cb:
        raise IllegalSchedule(f"cb={cb} is not a multiple of 8 dividing C = {s.c}")
    wo_p = unfold_row_length(s, vec)
    if fused and wo_p != s.wo:
        raise IllegalSchedule(f"residual_fused=true: vec={vec} pads the output rows (Wo = {s.wo} -> {wo_p}), the sum "
                              "cannot be added in their store")
    plan = unfold_plan(s, machine, vec, bm, cb, fused)
    _fits(plan.ldm_bytes, machine, f"unfold bm={bm} cb={cb}")
    return plan


def _explicit_form(s: ConvShape, d: dict[str, Value]) -> str:
    """The :data:`~taihu.backends.model.conv.EXPLICIT_FORMS` member of an im2col schedule."""
    overlap, batched, pointwise = _bool(d, "overlap"), _bool(d, "batched"), _bool(d, "pointwise")
    pw, hw = is_pointwise(s), s.ho * s.wo
    if batched:
        if overlap or pointwise:
            raise IllegalSchedule("batched=true: the batched GEMM is a SUMMA GEMM on col (overlap=false, "
                                  "pointwise=false)")
        if pw:
            raise IllegalSchedule("batched=true: a pointwise layer (1x1, stride 1, no padding) has no col to batch "
                                  "over")
        if s.n == 1:
            raise IllegalSchedule("batched=true needs more than one image (N = 1)")
        return "batched"
    if pointwise:
        if not pw:
            raise IllegalSchedule(f"pointwise=true needs a 1x1 kernel, stride 1 and no padding (got {s.describe()})")
        return "overlap" if overlap else "direct"
    if not overlap:
        return "copy" if pw else "image"
    if pw and hw % 4 == 0:
        raise IllegalSchedule(f"pointwise=false with overlap=true copies x only to pad Ho*Wo = {hw} to 4, which it is; "
                              "use pointwise=true")
    return "overlap_pad" if pw or _int(d, "bn") > hw else "overlap"


def _im2col_for(s: ConvShape, machine: Machine, schedule: Schedule, bud: int) -> ExplicitPlan:
    d = _take(schedule, ("batched", "bk", "bm", "bn", "double_c", "overlap", "pointwise", "vec")
              + (("residual_fused",) if s.residual else ()))
    form = _explicit_form(s, d)
    fused = _bool(d, "residual_fused") if s.residual else False
    if fused and form == "batched":
        raise IllegalSchedule("residual_fused=true: the batched GEMM stores an (M, N, Ho*Wo) buffer, the sum is a "
                              "separate kernel")
    if explicit_needs_im2col(s, form):
        try:
            im2col_cost(s, machine, bud)
        except NotApplicable as e:
            raise IllegalSchedule(f"im2col: not applicable: {e}") from None
    sep = s.residual and not fused and form != "batched"
    s_eff = replace(s, residual=False) if sep else s
    p = explicit_gemm_shape(s_eff, form)
    if form in ("overlap", "overlap_pad"):
        g = _overlap(p, machine, d)
    else:
        g = _summa(gemm_storages(p)[0], machine, d, n_clean=form == "direct")
    plan = explicit_plan(s_eff, machine, bud, form, g)
    return explicit_residual_apart(s, machine)(plan) if sep else plan


def _winograd_for(s: ConvShape, machine: Machine, schedule: Schedule, bud: int) -> WinogradPlan:
    d = _take(schedule, ("bk", "bm", "bn", "double_c", "overlap", "tiles_per_cpe", "vec"))
    tiles = _int(d, "tiles_per_cpe")
    tc = winograd_tiles(s.ho, s.wo)[1]
    if tiles > max(1, tc):
        raise IllegalSchedule(f"tiles_per_cpe={tiles} exceeds the {tc} 4x4 tiles of an output tile row")
    summa, ov = winograd_gemm_shapes(s)
    if _bool(d, "overlap"):
        if ov is None:
            raise IllegalSchedule("overlap=true: the overlapping Winograd GEMM needs constant weights (U^T stored "
                                  "(16, C, M) at compile time)")
        g = _overlap(ov, machine, d)
    else:
        g = _summa(gemm_storages(summa)[0], machine, d)
    return winograd_plan(s, machine, g, tiles, bud)


def space_size(s: ConvShape | GemmShape, machine: Machine, mem_budget: int | None = None) -> int:
    """The number of plans of :func:`conv_space` (``auto``) or :func:`gemm_space` of ``s``."""
    if isinstance(s, GemmShape):
        return sum(1 for _ in gemm_space(s, machine))
    return sum(1 for _ in conv_space(s, machine, mem_budget))

