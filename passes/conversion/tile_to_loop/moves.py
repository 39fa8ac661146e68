"""``tile.move`` -> DMAs (``convert-tile-to-loop``; 004 Alg. 7 L1514-1534, algorithms.md §E4/§E6):
each CPE's piece of the window as ``loop.dma_start`` windows that are one athread DMA each,
boundary / ragged / ``rep``-store variants dispatched with ``scf.if`` (token-balanced with dummy
gets when they can stay asynchronous), waits recorded as pending in the :class:`LowerCtx`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float64Type, IndexType, MemRefType
from xdsl.ir import Block, Region, SSAValue

from taihu.dialects import loop, tile
from taihu.dialects.loop import DmaMode, LdmBufType
from taihu.dialects.mapkind import MapKind

from . import dma as dmaplan
from .common import dma_start, ldm_type, view_op
from .context import LowerCtx
from .move_plan import MovePlan


def _piece_starts(ctx: LowerCtx, plan: MovePlan, offsets: Sequence[SSAValue]) -> list[SSAValue]:
    out = []
    for d, o in enumerate(offsets):
        a, b = plan.cpe_coef(d)
        out.append(ctx.add(o, ctx.cpe_term(a, b)))
    return out


def _view(ctx: LowerCtx, buf: SSAValue, off: int | SSAValue, count: int, whole: bool) -> SSAValue:
    bt = buf.type
    assert isinstance(bt, LdmBufType)
    if whole and isinstance(off, int) and off == 0:
        return buf
    o = ctx.const(off) if isinstance(off, int) else off
    v = view_op(buf, o, ldm_type((count,), bt.element_type))
    ctx.emit(v)
    return v.result


def _emit_box(
    ctx: LowerCtx,
    plan: MovePlan,
    n: Sequence[int],
    lo: Sequence[int],
    hi: Sequence[int],
    starts: Sequence[SSAValue],
    mem: SSAValue,
    buf: SSAValue,
    mode: DmaMode | None = None,
) -> tuple[list[SSAValue], bool]:
    """DMAs of the valid box of one piece. Returns (tokens, complete): when the DMAs are in an
    ``scf.for`` (more than ``max_unrolled_dmas``), they are waited inside and no token is
    returned."""
    op = plan.op
    r = len(plan.shape)
    sp = dmaplan.split_box(plan.shape, plan.strides, plan.full_n, lo, hi, plan.order, plan.elem_bytes)
    per = math.prod(sp.sizes)
    bt = buf.type
    assert isinstance(bt, LdmBufType)
    whole = per == bt.n_elems
    lead = list(sp.lead)
    # the innermost lead dims are unrolled (up to max_unrolled_dmas), the others become scf.for
    unrolled: list[int] = []
    cnt = 1
    for d in reversed(lead):
        e = hi[d] - lo[d]
        if cnt * e > ctx.options.max_unrolled_dmas:
            break
        unrolled.insert(0, d)
        cnt *= e
    looped = [d for d in lead if d not in unrolled]

    def issue(idx_vals: dict[int, SSAValue]) -> list[SSAValue]:
        toks: list[SSAValue] = []
        for combo in dmaplan.product([range(lo[d], hi[d]) for d in unrolled]):
            idx: dict[int, int] = {d: lo[d] for d in range(r)}
            for d, i in zip(unrolled, combo):
                idx[d] = i
            offs = []
            ldm_static = 0
            ldm_dyn: list[SSAValue] = []
            for d in range(r):
                if d in idx_vals:
                    iv = idx_vals[d]
                    offs.append(ctx.add(starts[d], ctx.mulc(iv, plan.strides[d])))
                    ldm_dyn.append(ctx.mulc(iv, sp.ldm_pitch[d]))
                else:
                    offs.append(ctx.addc(starts[d], idx[d] * plan.strides[d]))
                    ldm_static += idx[d] * sp.ldm_pitch[d]
            ldm_off: int | SSAValue = ldm_static
            if ldm_dyn:
                acc = ctx.const(ldm_static)
                for x in ldm_dyn:
                    acc = ctx.add(acc, x)
                ldm_off = acc
            v = _view(ctx, buf, ldm_off, per, whole)
            if op.is_load:
                d_op = dma_start(mem, v, offs, sp.sizes, plan.strides, mode)
            else:
                d_op = dma_start(v, mem, offs, sp.sizes, plan.strides)
            ctx.emit(d_op)
            toks.append(d_op.token)
        return toks

    if not looped:
        return issue({}), True
    # scf.for nest over the looped lead dims; each iteration waits its own DMAs
    saved_block = ctx.block
    idx_vals: dict[int, SSAValue] = {}
    fors: list[tuple[scf.ForOp, Block]] = []
    for d in looped:
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = f"s{d}"
        f = scf.ForOp(ctx.const(lo[d]), ctx.const(hi[d]), ctx.const(1), [], body)
        ctx.emit(f)
        ctx.block = body
        idx_vals[d] = body.args[0]
        fors.append((f, body))
    toks = issue(idx_vals)
    ctx.emit(loop.DmaWaitOp(toks))
    for _, body in reversed(fors):
        body.add_op(scf.YieldOp())
    ctx.block = saved_block
    return [], False


def _cmp(ctx: LowerCtx, x: SSAValue, pred: str, c: int) -> SSAValue:
    return ctx.emit(arith.CmpiOp(x, ctx.const(c), pred)).results[0]


def _emit_if(
    ctx: LowerCtx,
    cond: SSAValue,
    then: Callable[[], list[SSAValue]],
    other: Callable[[], list[SSAValue]],
    n_tokens: int = 0,
) -> list[SSAValue]:
    """``scf.if`` whose branches yield ``n_tokens`` DMA tokens each (0: no results)."""
    blocks = []
    for fn in (then, other):
        blk = Block()
        saved = ctx.push(blk)
        toks = fn()
        ctx.pop(saved)
        assert len(toks) == n_tokens
        blk.add_op(scf.YieldOp(*toks))
        blocks.append(blk)
    op = scf.IfOp(cond, [loop.TokenType()] * n_tokens, Region(blocks[0]), Region(blocks[1]))
    ctx.emit(op)
    return list(op.results)


def _emit_leaf(
    ctx: LowerCtx, plan: MovePlan, n: Sequence[int], lo: Sequence[int], hi: Sequence[int],
    starts: Sequence[SSAValue], mem: SSAValue, buf: SSAValue, sync: bool,
) -> list[SSAValue]:
    op = plan.op
    full = all(l == 0 and h == e for l, h, e in zip(lo, hi, n))
    empty = any(h <= l for l, h in zip(lo, hi))
    if op.is_load and op.pad is not None and not full:
        ctx.emit(loop.MapOp(MapKind.FILL, [], buf, value=op.pad.value.data))
    if empty:
        return []
    mode = DmaMode.BCAST if plan.bcast else None
    toks, _ = _emit_box(ctx, plan, n, lo, hi, starts, mem, buf, mode)
    if sync and toks:
        ctx.emit(loop.DmaWaitOp(toks))
        return []
    return toks


def _leaves(plan: MovePlan) -> list[tuple[dmaplan.CpeClass, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """Every variant (CPE class, piece extents, valid box lo/hi) of a move."""
    out = []

    def rec(cls: dmaplan.CpeClass, n: tuple[int, ...], cases, d: int, lo: list[int], hi: list[int]) -> None:
        r = len(cases)
        if d == r:
            out.append((cls, n, tuple(lo), tuple(hi)))
            return
        for c in cases[d]:
            if c.hi <= c.lo:
                out.append((cls, n, (0,) * r, (0,) * r))
            else:
                rec(cls, n, cases, d + 1, lo + [c.lo], hi + [c.hi])

    for cls, n, cases in plan.classes:
        rec(cls, n, cases, 0, [], [])
    return out


def balanced_tokens(ctx: LowerCtx, plan: MovePlan) -> int | None:
    """For a dispatched (non-uniform) move: the number K of DMAs every variant issues when the
    variants with fewer DMAs are padded with 1-element dummy gets into a scratch buffer, so that
    the dispatch can yield K tokens and the move stays asynchronous (and prefetchable). None when
    that is not worth it: a variant needs more DMAs than the whole piece (clipped inner dims),
    or more than ``max_unrolled_dmas``."""
    if plan.uniform or plan.bcast:
        return None
    mt = plan.op.memref.type
    assert isinstance(mt, MemRefType)  # checked by plan_move
    et = mt.get_element_type()
    if ("f64" if isinstance(et, Float64Type) else "f32") not in ctx._scratch and ctx.ldm_free_bytes() < loop.LDM_ALIGN:
        return None  # no room for the scratch buffer of the dummy DMAs
    r = len(plan.shape)
    full = dmaplan.split_box(plan.shape, plan.strides, plan.full_n, (0,) * r, plan.full_n, plan.order, plan.elem_bytes)
    k_full = full.count((0,) * r, plan.full_n)
    k = 0
    for _, _, lo, hi in _leaves(plan):
        if any(h <= l for l, h in zip(lo, hi)):
            continue
        sp = dmaplan.split_box(plan.shape, plan.strides, plan.full_n, lo, hi, plan.order, plan.elem_bytes)
        k = max(k, sp.count(lo, hi))
    k = max(k, 1)
    if k > k_full or k > ctx.options.max_unrolled_dmas:
        return None
    return k


def _dummy_dmas(ctx: LowerCtx, mem: SSAValue, n: int) -> list[SSAValue]:
    """``n`` one-element gets of element 0 of ``mem`` into this CPE's scratch buffer (token
    padding of a dispatched move; the data are never read)."""
    mt = mem.type
    assert isinstance(mt, MemRefType)
    scratch = ctx.scratch(mt.get_element_type())
    zeros = [ctx.const(0)] * len(mt.get_shape())
    toks: list[SSAValue] = []
    for _ in range(n):
        d = dma_start(mem, scratch, zeros, [1] * len(zeros))
        ctx.emit(d)
        toks.append(d.token)
    return toks


def emit_move(ctx: LowerCtx, op: tile.MoveOp, offsets: Sequence[SSAValue], buf: SSAValue, sync: bool) -> list[SSAValue]:
    """Emit the DMAs of ``op`` with the given loop-level offsets into/from LDM buffer ``buf``.
    Returns the tokens still in flight (none when ``sync``): uniform plans issue their DMAs
    directly, dispatched plans (boundary / ragged / rep-store variants, ``scf.if`` on the piece
    start or the CPE id) yield :func:`balanced_tokens` tokens from every branch, or wait inside
    the branches when they cannot be balanced."""
    plan = ctx.plan(op)
    mem = ctx.value(op.memref)
    starts = _piece_starts(ctx, plan, offsets)
    if plan.uniform:
        cls, n, cases = plan.classes[0]
        lo = tuple(c[0].lo for c in cases)
        hi = tuple(c[0].hi for c in cases)
        return _emit_leaf(ctx, plan, n, lo, hi, starts, mem, buf, sync)
    k = None if sync else balanced_tokens(ctx, plan)
    n_tok = k or 0

    def leaf(n: Sequence[int], lo: Sequence[int], hi: Sequence[int]) -> list[SSAValue]:
        toks = _emit_leaf(ctx, plan, n, lo, hi, starts, mem, buf, k is None)
        if k is None:
            return []
        return toks + _dummy_dmas(ctx, mem, k - len(toks))

    def by_dims(n: tuple[int, ...], cases: list[list[dmaplan.ClipCase]], d: int, lo: list[int], hi: list[int]) -> list[SSAValue]:
        if d == len(cases):
            return leaf(n, lo, hi)
        cs = cases[d]

        def one(j: int) -> list[SSAValue]:
            c = cs[j]
            if c.hi <= c.lo:  # nothing valid along this dim: the other dims do not matter
                r = len(cases)
                return leaf(n, [0] * r, [0] * r)
            return by_dims(n, cases, d + 1, lo + [c.lo], hi + [c.hi])

        def chain(j: int) -> list[SSAValue]:
            if j == len(cs) - 1:
                return one(j)
            cond = _cmp(ctx, starts[d], "sle", cs[j].s_hi)
            return _emit_if(ctx, cond, lambda: one(j), lambda: chain(j + 1), n_tok)

        return chain(0)

    classes = list(plan.classes)

    def by_class(j: int) -> list[SSAValue]:
        cls, n, cases = classes[j]
        if j == len(classes) - 1:
            return by_dims(n, cases, 0, [], [])
        cond = _cmp(ctx, ctx.cpe_id, "sle", cls.id_hi)
        return _emit_if(ctx, cond, lambda: by_dims(n, cases, 0, [], []), lambda: by_class(j + 1), n_tok)

    return by_class(0)


def move_prologue_checks(ctx: LowerCtx, op: tile.MoveOp) -> None:
    ctx.sync_buffers([op.tile])
    ctx.sync_memrefs_for(ctx.value(op.memref), op.is_load)
    if op.is_load:
        ctx.barrier_before_read(op.memref)


def lower_move(ctx: LowerCtx, op: tile.MoveOp) -> None:
    move_prologue_checks(ctx, op)
    offsets = [ctx.value(o) for o in op.offsets]
    buf = ctx.value(op.tile)
    toks = emit_move(ctx, op, offsets, buf, sync=False)
    mem = ctx.value(op.memref)
    ctx.add_pending(toks, op.tile, mem, op.is_load)
    if not op.is_load:
        ctx.note_memref_write(op.memref)
