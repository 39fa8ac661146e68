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
from taihu.backends.model.grouped_conv import BLOCK_M, BLOCK_U
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

__all__ = ["lower_depthwise", "lower_grouped", "lower_grouped_direct"]

#: the highest allocatable register (r0..r30; r31 reads 0, 004 L821): weight vectors from here down
TOP_REG = 30


@dataclass(frozen=True)
class _Window:
    """The sliding window of a ``loop.map depthwise / grouped / grouped_direct``: kernel
    ``kh x kw``, strides, dilations and the pads (4: top, left, bottom, right; grouped_direct's 2:
    left, right) from the op's parameters."""

    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pads: tuple[int, ...]


def _window(op: loop.MapOp, n_pads: int) -> _Window:
    """``op``'s :class:`_Window`; a diagnostic at ``op`` when it writes one of its inputs."""
    kind = op.kind.data
    if any(v is op.out for v in op.inputs):
        raise _err(op, f"loop.map {kind}: the output must be a different buffer from the inputs")
    p = op.params()

    def ints(key: str, default: Sequence[int]) -> list[int]:
        return [int(v) for v in cast("Sequence[int]", p.get(key) or default)]

    kh, kw = ints("kernel", ())
    sh, sw_ = ints("strides", ())
    dh, dw = ints("dilations", (1, 1))
    return _Window(kh, kw, sh, sw_, dh, dw, tuple(ints("pads", (0,) * n_pads)))


def lower_depthwise(op: loop.MapOp, addr: Callable[[SSAValue], SSAValue], machine: Machine) -> list[Operation]:
    """The ops (in order, to insert before ``op``) computing ``loop.map depthwise`` (module
    docstring); ``addr(v)``: i64 LDM byte address of buffer ``v``."""
    win = _window(op, 4)
    kh, kw, sh, sw_, dh, dw = win.kh, win.kw, win.sh, win.sw, win.dh, win.dw
    pt, pl, _, _ = win.pads
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
    win = _window(op, 4)
    kh, kw, sh, sw_, dh, dw = win.kh, win.kw, win.sh, win.sw, win.dh, win.dw
    pt, pl, _, _ = win.pads
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


def lower_grouped_direct(op: loop.MapOp, addr: Callable[[SSAValue], SSAValue], machine: Machine) -> list[Operation]:
    """The ops (in order, to insert before ``op``) computing ``loop.map grouped_direct``: x (q, cg,
    R, W), w (q, mg, cg, kh*kw), optional b (q, mg, 1, 1), scratch u_0 .. u_{kw-1} (q, cg, R, U)
    -> y (q, mg, Ho, Wo) (``mapkind.py``; cost: :func:`taihu.backends.model.grouped_conv.direct_group_cycles`).

    Per group: one micro-kernel per kernel column j copies the group's input rows into u_j,
    ``u_j[c] = x[c*sw + j*dw - left]`` (scalar loads and stores, 0 outside x; none when that is
    x itself: shift 0, stride 1, U = W), so that the 4 outputs of a unit read 4 aligned inputs
    of u_j. Then per block of up to 4 output channels, output row and block of up to 4 units: one
    micro-kernel sets the accumulators (the bias broadcast, or 0), one runs C/g iterations
    (pointers stepping one input plane / one filter) of the kh*kw terms -- the units' vector
    loads of u_j at row ``r*sh + i*dh``, the channels' broadcast weights, a VMAD per (channel,
    unit): vectors along W at full width, the accumulators in registers across the iterations
    -- and one stores them (vector stores; lane by lane for a row's partial last unit)."""
    win = _window(op, 2)
    kh, kw, sh, sw_, dh, dw = win.kh, win.kw, win.sh, win.sw, win.dh, win.dw
    pl, _ = win.pads
    nb = len(op.inputs) - kw
    x, w = _buf(op.inputs[0], addr), _buf(op.inputs[1], addr)
    b = _buf(op.inputs[2], addr) if nb == 3 else None
    us = [_buf(v, addr) for v in op.inputs[nb:]]
    out = _buf(op.out, addr)
    q, cg, thi, width = x.shape
    uw = us[0].shape[3]
    _, mg, tho, wo = out.shape
    eb = out.eb
    kk = kh * kw
    va = _valign(eb)
    if uw % LANES or any(u.align % va for u in us):
        raise _err(op, f"loop.map grouped_direct: the copies' rows ({uw} columns) must be whole aligned vectors")
    # a copy whose shift is 0 is x itself when its rows are as long and aligned (stride 1)
    direct_x = [j * dw - pl == 0 and sw_ == 1 and uw == width and x.align % va == 0 for j in range(kw)]
    vec_store = out.align % va == 0 and (wo * eb) % va == 0
    em = _Emitter(machine, name="grouped_direct")
    units = -(-wo // LANES)
    ub_list = [(u0, min(BLOCK_U, units - u0)) for u0 in range(0, units, BLOCK_U)]
    mb_list = [(m0, min(BLOCK_M, mg - m0)) for m0 in range(0, mg, BLOCK_M)]
    plane_x, plane_u, plane_y = thi * width * eb, thi * uw * eb, tho * wo * eb

    def group(gi: SSAValue) -> None:
        def at(base: SSAValue, nbytes: int) -> SSAValue:
            return base if q == 1 else em.add(base, em.mul(gi, nbytes))

        xg = at(x.addr, cg * plane_x)
        src = []
        for j, u in enumerate(us):
            if direct_x[j]:
                src.append(xg)
                continue
            ug = at(u.addr, cg * plane_u)
            em.microkernel(cg * thi, [xg, ug], [width * eb, uw * eb],
                           _instrs(_copy_recipe(width, uw, sw_, j * dw - pl, eb, machine)), "copy")
            src.append(ug)
        yg, wg = at(out.addr, mg * plane_y), at(w.addr, mg * cg * kk * eb)
        bg = at(b.addr, mg * eb) if b is not None else None

        def row(ri: SSAValue) -> None:
            xr = [em.add(v, em.mul(ri, sh * uw * eb)) for v in src]
            yr = em.add(yg, em.mul(ri, wo * eb))
            for m0, mb in mb_list:
                wm = em.add(wg, m0 * cg * kk * eb)
                bm = em.add(bg, m0 * eb) if bg is not None else None
                ym = em.add(yr, m0 * plane_y)
                for u0, ub in ub_list:
                    nl = min(LANES * ub, wo - LANES * u0)
                    em.microkernel(1, [bm if bm is not None else ym], [0],
                                   _instrs(_direct_init(mb, ub, bm is not None, eb, machine)), "init")
                    ptrs = [em.add(v, u0 * LANES * eb) for v in xr] + [wm]
                    em.microkernel(cg, ptrs, [plane_u] * kw + [kk * eb],
                                   _instrs(_direct_body(kh, kw, dh, uw, cg, mb, ub, eb, machine)), "terms")
                    em.microkernel(1, [em.add(ym, u0 * LANES * eb)], [0],
                                   _instrs(_direct_store(mb, ub, nl, plane_y, vec_store, eb, machine)), "store")

        em.loop(tho, row)

    em.loop(q, group)
    return em.ops


#: scratch registers of the copy bodies (the loads of up to 8 elements in flight)
_COPY_TEMPS = 8


@functools.lru_cache(maxsize=64)
def _copy_recipe(width: int, uw: int, stride: int, shift: int, eb: int, machine: Machine) -> Recipe:
    """One row of a column copy: pointer 0 = an x row of ``width`` elements, pointer 1 = the
    copy's row of ``uw``: ``u[c] = x[c*stride + shift]`` (0 outside the row)."""
    out: list[sw.RegInstr] = []
    for c in range(uw):
        k = c * stride + shift
        if 0 <= k < width:
            t = c % _COPY_TEMPS
            out.append(_mem_op(_LOAD_REP[eb], t, 0, k * eb, False))
            out.append(_mem_op(_STORE_SCALAR[eb], t, 1, c * eb, True))
        else:
            out.append(_mem_op(_STORE_SCALAR[eb], ZERO_REG, 1, c * eb, True))
    return _recipe(_schedule(out, machine, disjoint_ptrs=True))


def _acc(a: int, u: int) -> int:
    """Accumulator register of output channel ``a`` and unit ``u`` of a block (r0 .. r15)."""
    return a * BLOCK_U + u


#: the direct kernel's load registers: 4 input vectors, 4 broadcast weights (after the 16 accumulators)
_DX, _DW = BLOCK_M * BLOCK_U, BLOCK_M * BLOCK_U + BLOCK_U


@functools.lru_cache(maxsize=64)
def _direct_init(mb: int, ub: int, bias: bool, eb: int, machine: Machine) -> Recipe:
    """Accumulators of a block from the bias (pointer 0 = the block's first channel's) or 0."""
    out: list[sw.RegInstr] = []
    for a in range(mb):
        for u in range(ub):
            if bias:
                out.append(_mem_op(_LOAD_REP[eb], _acc(a, u), 0, a * eb, False))
            else:
                out.append(_reg_op("vaddd", [ZERO_REG, ZERO_REG], _acc(a, u)))
    return _recipe(_schedule(out, machine, disjoint_ptrs=True))


@functools.lru_cache(maxsize=256)
def _direct_body(kh: int, kw: int, dh: int, uw: int, cg: int, mb: int, ub: int, eb: int, machine: Machine) -> Recipe:
    """One input channel's kh*kw terms: pointers 0 .. kw-1 = the copies x_j at the block's first
    unit of the row, pointer kw = the block's first channel's filter of this input channel."""
    kk = kh * kw
    out: list[sw.RegInstr] = []
    for i in range(kh):
        for j in range(kw):
            for u in range(ub):
                out.append(_mem_op(_LOAD_VEC[eb], _DX + u, j, (i * dh * uw + LANES * u) * eb, False))
            for a in range(mb):
                out.append(_mem_op(_LOAD_REP[eb], _DW + a, kw, (a * cg * kk + i * kw + j) * eb, False))
            for a in range(mb):
                for u in range(ub):
                    out.append(_reg_op("vmad", [_DX + u, _DW + a, _acc(a, u)], _acc(a, u)))
    return _recipe(_schedule(out, machine, disjoint_ptrs=True))


@functools.lru_cache(maxsize=256)
def _direct_store(mb: int, ub: int, nl: int, plane_y: int, vec: bool, eb: int, machine: Machine) -> Recipe:
    """Store a block's accumulators (pointer 0 = its first channel and unit in y): ``nl``
    outputs per channel, whole vectors when aligned, the rest lane by lane."""
    out: list[sw.RegInstr] = []
    tmp = _DX
    for a in range(mb):
        for u in range(ub):
            off = a * plane_y + LANES * u * eb
            lanes = min(LANES, nl - LANES * u)
            if vec and lanes == LANES:
                out.append(_mem_op(_STORE_VEC[eb], _acc(a, u), 0, off, True))
                continue
            out.append(_mem_op(_STORE_SCALAR[eb], _acc(a, u), 0, off, True))
            for lane in range(1, lanes):
                t = tmp + (lane % BLOCK_U)
                out.append(_lane_op("vextf", (_acc(a, u),), lane, t))
                out.append(_mem_op(_STORE_SCALAR[eb], t, 0, off + lane * eb, True))
    return _recipe(_schedule(out, machine, disjoint_ptrs=True))
