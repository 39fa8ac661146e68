"""``loop.map depthwise`` -> SW-64 register micro-kernels (part of ``convert-loop-to-sw``).

Entry point (called by :class:`~.kernel.KernelLowering` for a ``loop.map depthwise``)::

    lower_depthwise(op: loop.MapOp, addr, machine: Machine) -> list[Operation]

returns the ops to insert before ``op``, like :func:`.maps.lower_map` (whose emitter, buffer
accesses and list scheduler it uses). The map (``mapkind.py``): x (q, H, W), w (q, 1, kh*kw),
optional b (q, 1, 1) -> y (q, Ho, Wo) on one CPE's LDM buffers, every plane convolved with its
own filter.

Scheme (the register plan and its cost: :mod:`taihu.backends.model.depthwise_conv`): a *unit* is
4 adjacent outputs of a row, one per SIMD lane (vectorised along W). The input element at column
``4*t*sw - pl + d`` of kernel row i feeds lane l through tap ``j = (d - l*sw) / dw``, so a unit is
a sum over (i, d) of a scalar-broadcast load (LDSE / LDDE, any alignment) times a *weight vector*
``Wv[i][d]`` whose lane l holds ``w[i, j]`` (0 where no tap falls) -- one VMAD per (i, d): 18 for
4 outputs of a 3x3 s1 filter. Per plane (an ``scf.for`` over the q planes):

* per pass (kernel rows whose weight vectors fit the registers beside the unit banks): a trip-1
  micro-kernel builds the vectors in r30, r29, ... (LDSE each tap once, VINSF it into the 4
  vectors whose lane it occupies; the first insert into a vector starts from r31 = 0) and the
  bias register;
* per run of output rows with the same in-bounds kernel rows (the top / bottom rows of a tile
  whose pads the map applies, then the interior): one micro-kernel whose body holds the units of
  ``R`` output rows (R > 1 for short rows, so that enough units are in flight), iterated over
  the rows of the run. Unit u uses register bank ``u mod banks`` (2 VMAD chains + 2 load
  temporaries); the chains start from the bias (pass 0), 0, or the partial sums of the earlier
  passes loaded from y; taps outside the row (column pads) are skipped, so are lanes past Wo.
  Stores are vector stores when the rows are 4-element aligned (Wo % 4 == 0), else lane by lane
  (VEXTF + FSTS/FSTD). The body is list-scheduled with x and y known disjoint (the map's output
  never aliases an input), so a unit's loads overlap the previous units' chains.

Errors: ``DiagnosticException`` naming the op (the output aliasing an input; a register plan
that does not fit, which the model's applicability rules out).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import cast
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from taihu.backends.model.depthwise_conv import LANES, UNIT_ACCS, UNIT_REGS, UNIT_TEMPS, register_plan, row_runs
from taihu.dialects import loop, sw
from taihu.target.machine import Machine

from .maps import (
    ZERO_REG,
    _LOAD_REP,
    _LOAD_VEC,
    _STORE_SCALAR,
    _STORE_VEC,
    _buf,
    _Emitter,
    _err,
    _lane_op,
    _mem_op,
    _reg_op,
    _schedule,
    _valign,
)

__all__ = ["lower_depthwise", "lower_grouped"]

#: the highest allocatable register (r0..r30; r31 reads 0, 004 L821): weight vectors from here down
TOP_REG = 30


def lower_depthwise(op: loop.MapOp, addr: Callable[[SSAValue], SSAValue], machine: Machine) -> list[Operation]:
    """The ops (in order, to insert before ``op``) computing ``loop.map depthwise`` (module
    docstring); ``addr(v)``: i64 LDM byte address of buffer ``v``."""
    if any(v is op.out for v in op.inputs):
        raise _err(op, "loop.map depthwise: the output must be a different buffer from the inputs")
    p = op.params()

    def ints(key: str, default: Sequence[int]) -> list[int]:
        return [int(v) for v in cast("Sequence[int]", p.get(key) or default)]

    kh, kw = ints("kernel", ())
    sh, sw_ = ints("strides", ())
    pt, pl, _, _ = ints("pads", (0, 0, 0, 0))
    dh, dw = ints("dilations", (1, 1))
    x, w = _buf(op.inputs[0], addr), _buf(op.inputs[1], addr)
    b = _buf(op.inputs[2], addr) if len(op.inputs) == 3 else None
    out = _buf(op.out, addr)
    rp = register_plan(kw, sw_, dw, b is not None)
    if rp is None:
        raise _err(op, f"loop.map depthwise: the weight vectors of a {kw}-wide kernel row at stride {sw_} "
                       "do not fit the registers")
    q, thi, width = x.shape
    _, tho, wo = out.shape
    eb = x.eb
    geo = _Geo(kh, kw, sh, sw_, pt, pl, dh, dw, thi, width, tho, wo, eb, b is not None,
               wo % LANES == 0 and out.align % _valign(eb) == 0 and (q == 1 or (tho * wo * eb) % _valign(eb) == 0))
    em = _Emitter(machine, name="depthwise")

    def plane(i: SSAValue) -> None:
        def at(base: SSAValue, nbytes: int) -> SSAValue:  # plane i of a buffer of nbytes planes
            return base if q == 1 else em.add(base, em.mul(i, nbytes))

        xb, yb, wb = at(x.addr, thi * width * eb), at(out.addr, tho * wo * eb), at(w.addr, kh * kw * eb)
        bb = at(b.addr, eb) if b is not None else None
        _plane(em, geo, xb, yb, wb, bb, True, machine)

    em.loop(q, plane)
    return em.ops


def _plane(em: _Emitter, geo: _Geo, xb: SSAValue, yb: SSAValue, wb: SSAValue, bb: SSAValue | None,
           first_pass: bool, machine: Machine) -> None:
    """The micro-kernels of one plane: x plane at ``xb``, y plane at ``yb``, its kh*kw taps at
    ``wb``, its bias at ``bb``; ``first_pass`` False: every pass adds to the partial sums in y."""
    rp = register_plan(geo.kw, geo.sw, geo.dw, geo.bias)
    assert rp is not None
    width, eb, wo, sh, pt = geo.w, geo.eb, geo.wo, geo.sh, geo.pt
    for k, rows in enumerate(rp.passes(geo.kh)):
        first = k == 0 and first_pass
        ptrs = [wb] + ([bb] if bb is not None and first else [])
        em.microkernel(1, ptrs, [0] * len(ptrs), _instrs(_build_recipe(geo, rows, first, machine)), "weights")
        for run in row_runs(geo.tho, wo, geo.thi, sh, geo.dh, pt, rows, first):
            x0 = _first_row(geo, run.start, run.valid) if run.valid else 0
            px = em.add(xb, x0 * width * eb)
            py = em.add(yb, run.start * wo * eb)
            body = _instrs(_row_recipe(geo, rows, run.valid, run.count, run.start * sh - pt - x0, run.t_lo,
                                       run.t_hi, first, rp.banks(len(rows)), machine))
            em.microkernel(run.trips, [px, py], [run.count * sh * width * eb, run.count * wo * eb], body, "rows")


def lower_grouped(op: loop.MapOp, addr: Callable[[SSAValue], SSAValue], machine: Machine) -> list[Operation]:
    """The ops (in order, to insert before ``op``) computing ``loop.map grouped``: x (q, cg, H, W),
    w (q, mg, cg, kh*kw), optional b (q, mg, 1, 1) -> y (q, mg, Ho, Wo) (``mapkind.py``). Per
    group and output plane, the depthwise micro-kernels of :func:`lower_depthwise` once per input
    channel: the first from the bias (or 0), the others adding to the partial sums in y."""
    if any(v is op.out for v in op.inputs):
        raise _err(op, "loop.map grouped: the output must be a different buffer from the inputs")
    p = op.params()

    def ints(key: str, default: Sequence[int]) -> list[int]:
        return [int(v) for v in cast("Sequence[int]", p.get(key) or default)]

    kh, kw = ints("kernel", ())
    sh, sw_ = ints("strides", ())
    pt, pl, _, _ = ints("pads", (0, 0, 0, 0))
    dh, dw = ints("dilations", (1, 1))
    x, w = _buf(op.inputs[0], addr), _buf(op.inputs[1], addr)
    b = _buf(op.inputs[2], addr) if len(op.inputs) == 3 else None
    out = _buf(op.out, addr)
    if register_plan(kw, sw_, dw, b is not None) is None:
        raise _err(op, f"loop.map grouped: the weight vectors of a {kw}-wide kernel row at stride {sw_} "
                       "do not fit the registers")
    q, cg, thi, width = x.shape
    _, mg, tho, wo = out.shape
    eb = x.eb
    plane_y = tho * wo * eb
    geo = _Geo(kh, kw, sh, sw_, pt, pl, dh, dw, thi, width, tho, wo, eb, b is not None,
               wo % LANES == 0 and out.align % _valign(eb) == 0 and (q * mg == 1 or plane_y % _valign(eb) == 0))
    em = _Emitter(machine, name="grouped")
    px_plane, pw_plane = thi * width * eb, kh * kw * eb

    def group(gi: SSAValue) -> None:
        def at(base: SSAValue, nbytes: int) -> SSAValue:  # group gi of a buffer of nbytes groups
            return base if q == 1 else em.add(base, em.mul(gi, nbytes))

        xg, yg, wg = at(x.addr, cg * px_plane), at(out.addr, mg * plane_y), at(w.addr, mg * cg * pw_plane)
        bg = at(b.addr, mg * eb) if b is not None else None

        def plane(mi: SSAValue) -> None:
            def of(base: SSAValue, nbytes: int) -> SSAValue:
                return base if mg == 1 else em.add(base, em.mul(mi, nbytes))

            yb, wb = of(yg, plane_y), of(wg, cg * pw_plane)
            bb = of(bg, eb) if bg is not None else None
            _plane(em, geo, xg, yb, wb, bb, True, machine)
            if cg > 1:
                xc0, wc0 = em.add(xg, px_plane), em.add(wb, pw_plane)

                def channel(ci: SSAValue) -> None:  # input channel 1 + ci
                    xc = xc0 if cg == 2 else em.add(xc0, em.mul(ci, px_plane))
                    wc = wc0 if cg == 2 else em.add(wc0, em.mul(ci, pw_plane))
                    _plane(em, geo, xc, yb, wc, None, False, machine)

                em.loop(cg - 1, channel)

        em.loop(mg, plane)

    em.loop(q, group)
    return em.ops


@dataclass(frozen=True)
class _Geo:
    """The static geometry of one map (the key of the body recipes): kernel, strides, the map's
    top / left pads, dilations, the local x (thi x w) and y (tho x wo) planes, element bytes,
    a bias, whether full units store as vectors (4-element aligned rows)."""

    kh: int
    kw: int
    sh: int
    sw: int
    pt: int
    pl: int
    dh: int
    dw: int
    thi: int
    w: int
    tho: int
    wo: int
    eb: int
    bias: bool
    vec_store: bool


def _first_row(g: _Geo, r: int, valid: Sequence[int]) -> int:
    """The lowest input row output row ``r`` reads (its first valid kernel row)."""
    return r * g.sh + min(valid) * g.dh - g.pt if valid else 0


def _weight_regs(g: _Geo, rows: Sequence[int]) -> tuple[dict[tuple[int, int], int], int | None]:
    """Registers of the weight vectors (kernel row i, offset d) of ``rows`` and of the bias,
    from r30 down."""
    rp = register_plan(g.kw, g.sw, g.dw, g.bias)
    assert rp is not None
    reg = TOP_REG
    bias = None
    if g.bias:
        bias, reg = reg, reg - 1
    regs: dict[tuple[int, int], int] = {}
    for i in rows:
        for d in rp.taps:
            regs[(i, d)] = reg
            reg -= 1
    return regs, bias


Recipe = tuple[tuple[type, tuple], ...]


def _instrs(recipe: Recipe) -> list[sw.RegInstr]:
    return [sw.new_instr(cls, dict(props)) for cls, props in recipe]


def _recipe(ops: Sequence[sw.RegInstr]) -> Recipe:
    return tuple((type(o), tuple(o.properties.items())) for o in ops)


@functools.lru_cache(maxsize=256)
def _build_recipe(g: _Geo, rows: tuple[int, ...], first: bool, machine: Machine) -> Recipe:
    """The weight-building body of one pass: pointer 0 = this plane's w (kh*kw taps), pointer 1
    = its bias (pass 0 only)."""
    regs, bias = _weight_regs(g, rows)
    load = _LOAD_REP[g.eb]
    out: list[sw.RegInstr] = []
    started: set[int] = set()
    rp = register_plan(g.kw, g.sw, g.dw, g.bias)
    assert rp is not None
    temps = list(range(min(2 * UNIT_REGS, rp.banks(len(rows)) * UNIT_REGS)))  # the units' registers are free
    n = 0
    for i in rows:
        for j in range(g.kw):
            t = temps[n % len(temps)]
            n += 1
            out.append(_mem_op(load, t, 0, (i * g.kw + j) * g.eb, False))
            for lane in range(LANES):
                r = regs[(i, lane * g.sw + j * g.dw)]
                out.append(_lane_op("vinsf", (t, r if r in started else ZERO_REG), lane, r))
                started.add(r)
    if first and bias is not None:
        out.append(_mem_op(load, bias, 1, 0, False))
    return _recipe(_schedule(out, machine, disjoint_ptrs=True))


@functools.lru_cache(maxsize=1024)
def _row_recipe(g: _Geo, rows: tuple[int, ...], valid: tuple[int, ...], n_rows: int, row0: int, t_lo: int,
                t_hi: int, first: bool, banks: int, machine: Machine) -> Recipe:
    """The body computing units ``t_lo .. t_hi - 1`` of ``n_rows`` output rows for the kernel rows
    ``valid`` of a pass (weight vectors of ``rows`` in registers): pointer 0 = x at an input row
    x0, ``row0`` = the input row of the body's first output row and kernel row 0, minus x0;
    pointer 1 = y at the body's first output row. ``first``: the chains start from the bias (or
    0), else from the partial sums in y (every pass stores its sums)."""
    regs, bias = _weight_regs(g, rows)
    load, vload = _LOAD_REP[g.eb], _LOAD_VEC[g.eb]
    store_v, store_s = _STORE_VEC[g.eb], _STORE_SCALAR[g.eb]
    out: list[sw.RegInstr] = []
    u = 0
    for rr in range(n_rows):
        for t in range(t_lo, t_hi):
            base = (u % banks) * UNIT_REGS
            u += 1
            accs = [base + a for a in range(UNIT_ACCS)]
            temps = [base + UNIT_ACCS + k for k in range(UNIT_TEMPS)]
            nl = min(LANES, g.wo - LANES * t)
            lanes_d = {lane * g.sw + j * g.dw for lane in range(nl) for j in range(g.kw)}
            terms: list[tuple[int, int]] = []
            for i in valid:
                xr = rr * g.sh + i * g.dh + row0
                for d in sorted(lanes_d):
                    c = LANES * t * g.sw - g.pl + d
                    if 0 <= c < g.w:
                        terms.append(((xr * g.w + c) * g.eb, regs[(i, d)]))
            y_off = (rr * g.wo + LANES * t) * g.eb
            vec = g.vec_store and nl == LANES
            # the first chain's addend
            if first:
                init = bias if bias is not None else ZERO_REG
            else:
                init = accs[0]
                if vec:
                    out.append(_mem_op(vload, init, 1, y_off, False))
                else:
                    out.append(_mem_op(load, init, 1, y_off, False))
                    for lane in range(1, nl):
                        out.append(_mem_op(load, temps[0], 1, y_off + lane * g.eb, False))
                        out.append(_lane_op("vinsf", (temps[0], init), lane, init))
            cur = [init] + [ZERO_REG] * (UNIT_ACCS - 1)
            used = [False] * UNIT_ACCS
            for k, (x_off, wr) in enumerate(terms):
                a = k % UNIT_ACCS
                tmp = temps[k % UNIT_TEMPS]
                out.append(_mem_op(load, tmp, 0, x_off, False))
                out.append(_reg_op("vmad", [tmp, wr, cur[a]], accs[a]))
                cur[a] = accs[a]
                used[a] = True
            res = cur[0]
            for a in range(1, UNIT_ACCS):
                if used[a]:
                    out.append(_reg_op("vaddd", [res, cur[a]], accs[0]))
                    res = accs[0]
            if vec:
                out.append(_mem_op(store_v, res, 1, y_off, True))
            else:
                out.append(_mem_op(store_s, res, 1, y_off, True))
                for lane in range(1, nl):
                    if res == ZERO_REG:
                        out.append(_mem_op(store_s, ZERO_REG, 1, y_off + lane * g.eb, True))
                        continue
                    tmp = temps[lane % UNIT_TEMPS]
                    out.append(_lane_op("vextf", (res,), lane, tmp))
                    out.append(_mem_op(store_s, tmp, 1, y_off + lane * g.eb, True))
    return _recipe(_schedule(out, machine, disjoint_ptrs=True))
