"""Spread a multi-row get over the K loop that follows it (``convert-tile-to-loop``, after a
kernel is lowered; issue 12).

A residual window of a GEMM kernel with the overlapping distribution (``emit_gemm``'s
``prefetch_fused``: the shortcut tile added in the C store) is one get of the CPE's ``R`` rows,
issued at the block start (or, for the next block, as a cross-iteration prefetch) just before the
block's pipelined K loop. Every CPE issues it at the same moment, and a CPE has one DMA in flight
(spec sw26010-model.md §4.3 rule 2, the channel buffer is FIFO): the K loop's next A / B loads
queue behind it until all 64 windows crossed the buses, so the window is exposed instead of
overlapping the block's compute (ResNet-50 1x1 256->1024 on 14x14 + shortcut: +42k cycles, the
whole window's transfer time). Here the get becomes ``n`` gets of chunks of the window (whole
rows, or pieces of a row), chunk ``j`` issued in iteration ``j`` of the K loop (peeled) right
after that iteration's own prefetches: each chunk crosses the buses during one K step, behind the
loads it would have delayed (that one: 327k -> 302k cycles).

Applies (:func:`spread_gets`, in kernels that ``emit_gemm`` marks with :data:`SPREAD_ATTR` when
the plan's ``spread_res`` says so: the model spreads only when a K step's compute covers its
loads plus a chunk, else the chunks lengthen DMA-bound steps) to a ``loop.dma_start`` get ``P``
of the residual memref (no broadcast, unit strides,
window ``[1, .., 1, R, L]`` with ``R >= 2`` into a single-slot LDM block of ``R * L`` elements)
followed in its block by an ``scf.for`` ``I`` with constant bounds, ``T >= 2`` iterations and a
``loop.gemm_block`` in its body (the overlapping-distribution K loop), when no op between them
touches ``P``'s LDM block or token and ``P``'s token is only waited after ``I`` in the same block
or carried to the next iteration of the enclosing ``scf.for`` (whose initial value, the prologue
get of the same window shape, is split alike and whose waits wait for every chunk). The chunks:
:func:`taihu.backends.model.overlap_gemm.chunk_rows` of (R, L, T), shared with the model
(:func:`~taihu.backends.model.overlap_gemm.residual_spread`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue

from taihu.backends.model.overlap_gemm import chunk_rows
from taihu.dialects import loop
from taihu.dialects.loop import DmaMode, LdmBufType

from .common import addi, dma_start, view_op

__all__ = ["SPREAD_ATTR", "spread_gets"]

#: discardable attribute of a GEMM ``tile.kernel`` (then ``loop.spmd``) whose residual window's
#: get is spread: the index of the residual memref among the kernel's arguments (emit_gemm sets
#: it when the plan's ``spread_res`` is non-zero; :func:`spread_gets` consumes it)
SPREAD_ATTR = "taihu.spread_residual"


def _const(v: int, before: Operation) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(v, IndexType()))
    assert before.parent is not None
    before.parent.insert_op_before(c, before)
    return c.result


def _const_int(v: SSAValue) -> int | None:
    o = v.owner
    if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr):
        return o.value.value.data
    return None


def _window(p: loop.DmaStartOp) -> tuple[int, int] | None:
    """(R, L) of a spreadable get, else None."""
    if not p.is_get or p.dma_mode != DmaMode.PE or any(s != 1 for s in p.stride_values):
        return None
    sizes = p.size_values
    if len(sizes) < 2 or any(s != 1 for s in sizes[:-2]) or sizes[-2] < 2:
        return None
    t = p.buffer.type
    if not isinstance(t, LdmBufType) or t.is_double:
        return None
    n = 1
    for d in t.get_shape():
        n *= d
    if n != sizes[-2] * sizes[-1]:
        return None
    return sizes[-2], sizes[-1]


def _touches(op: Operation, values: set[SSAValue]) -> bool:
    return any(o in values for w in op.walk() for o in w.operands)


def _split(p: loop.DmaStartOp, chunks: Sequence[tuple[int, int, int, int]], before: Operation) -> list[loop.DmaStartOp]:
    """The chunk gets of ``p`` (:func:`chunk_rows`), inserted before ``before``."""
    l = p.size_values[-1]
    t = p.buffer.type
    assert isinstance(t, LdmBufType)
    blk = before.parent
    assert blk is not None
    out: list[loop.DmaStartOp] = []
    for r0, nr, c0, nc in chunks:
        offs = list(p.offsets)
        for dim, k in ((-2, r0), (-1, c0)):
            if k:
                add = addi(offs[dim], _const(k, before))
                blk.insert_op_before(add, before)
                offs[dim] = add.result
        shape = (nr, nc) if nr > 1 else (nc,)
        v = view_op(p.buffer, _const(r0 * l + c0, before), LdmBufType(shape, t.element_type))
        blk.insert_op_before(v, before)
        get = dma_start(p.memref, v.result, offs, list(p.size_values[:-2]) + [nr, nc])
        blk.insert_op_before(get, before)
        out.append(get)
    return out


def _expand_waits(v: SSAValue, toks: Sequence[SSAValue]) -> None:
    """Every ``loop.dma_wait`` of ``v`` waits for ``toks`` instead."""
    for use in list(v.uses):
        w = use.operation
        assert isinstance(w, loop.DmaWaitOp)
        new = loop.DmaWaitOp([t for o in w.tokens for t in (toks if o is v else [o])])
        assert w.parent is not None
        w.parent.insert_op_before(new, w)
        w.detach()
        w.erase()


def _waits_only(v: SSAValue) -> bool:
    return all(isinstance(u.operation, loop.DmaWaitOp) for u in v.uses)


def _loop_trips(f: scf.ForOp) -> int | None:
    lb, ub, st = (_const_int(x) for x in (f.lb, f.ub, f.step))
    if lb is None or ub is None or st is None or st <= 0:
        return None
    return max(0, -(-(ub - lb) // st))


def _peel(i_loop: scf.ForOp, n: int, chunks: Sequence[loop.DmaStartOp]) -> None:
    """Peel the first ``n`` iterations of ``i_loop`` before it; ``chunks[j]`` (moved) is issued in
    peeled iteration ``j`` right after its last ``loop.dma_start`` (at its end if none)."""
    blk = i_loop.parent
    assert blk is not None
    lb, st = _const_int(i_loop.lb), _const_int(i_loop.step)
    trips = _loop_trips(i_loop)
    assert lb is not None and st is not None and trips is not None and trips >= n
    body = i_loop.body.block
    cur: list[SSAValue] = list(i_loop.iter_args)
    for j in range(n):
        mapper: dict[SSAValue, SSAValue] = {body.args[0]: _const(lb + j * st, i_loop)}
        mapper.update(zip(body.args[1:], cur))
        last_dma: Operation | None = None
        for op in body.ops:
            if isinstance(op, scf.YieldOp):
                cur = [mapper.get(a, a) for a in op.arguments]
                continue
            new = op.clone(value_mapper=mapper)
            for a, b in zip(op.results, new.results):
                mapper[a] = b
            blk.insert_op_before(new, i_loop)
            if isinstance(new, loop.DmaStartOp):
                last_dma = new
        c = chunks[j]
        c.detach()
        if last_dma is not None:
            nxt = last_dma.next_op
            assert nxt is not None
            blk.insert_op_before(c, nxt)
        else:
            blk.insert_op_before(c, i_loop)
    if trips == n:
        for r, v in zip(i_loop.results, cur):
            r.replace_all_uses_with(v)
        i_loop.detach()
        i_loop.erase()
        return
    new_lb = _const(lb + n * st, i_loop)
    region = i_loop.detach_region(i_loop.body)
    new = scf.ForOp(new_lb, i_loop.ub, i_loop.step, cur, region)
    blk.insert_op_before(new, i_loop)
    for a, b in zip(i_loop.results, new.results):
        a.replace_all_uses_with(b)
    i_loop.detach()
    i_loop.erase()


def _carried(p: loop.DmaStartOp) -> tuple[scf.ForOp, int] | None:
    """(enclosing scf.for, iter_arg index) when ``p``'s token is yielded to the next iteration."""
    blk = p.parent
    outer = blk.parent_op() if blk is not None else None
    if not isinstance(outer, scf.ForOp):
        return None
    y = outer.body.block.last_op
    if not isinstance(y, scf.YieldOp):
        return None
    idx = [k for k, a in enumerate(y.arguments) if a is p.token]
    return (outer, idx[0]) if len(idx) == 1 else None


def _try(p: loop.DmaStartOp) -> bool:
    win = _window(p)
    blk = p.parent
    if win is None or blk is None:
        return False
    r, l = win
    # the K loop: the first scf.for after p, nothing in between touching p's block or token
    i_loop: scf.ForOp | None = None
    watched = {p.token, p.buffer}
    op = p.next_op
    while op is not None:
        if isinstance(op, scf.ForOp):
            i_loop = op
            break
        if _touches(op, watched):
            return False
        op = op.next_op
    if i_loop is None or _touches(i_loop, watched):
        return False
    if not any(isinstance(o, loop.GemmBlockOp) for o in i_loop.body.block.ops):
        return False
    trips = _loop_trips(i_loop)
    if trips is None or trips < 2:
        return False
    carried = _carried(p)
    for u in p.token.uses:
        w = u.operation
        if carried is not None and w is carried[0].body.block.last_op:
            continue
        if not isinstance(w, loop.DmaWaitOp) or w.parent is not blk or blk.get_operation_index(w) < blk.get_operation_index(i_loop):
            return False
    rows = chunk_rows(r, l, trips)
    if len(rows) < 2:
        return False
    pro: loop.DmaStartOp | None = None
    if carried is not None:
        outer, k = carried
        init = outer.iter_args[k]
        pro = init.owner if isinstance(init.owner, loop.DmaStartOp) else None
        barg = outer.body.block.args[k + 1]
        if (pro is None or pro.size_values != p.size_values or _window(pro) is None
                or len(list(init.uses)) != 1 or not _waits_only(barg) or not _waits_only(outer.results[k])):
            return False
    chunks = _split(p, rows, p)
    toks = [c.token for c in chunks]
    if carried is None:
        _expand_waits(p.token, toks)
    else:
        assert pro is not None
        _widen_carried(carried[0], carried[1], pro, rows, toks)
    p.detach()
    p.erase()
    _peel(i_loop, len(chunks), chunks)
    return True


def _widen_carried(outer: scf.ForOp, k: int, pro: loop.DmaStartOp, rows: Sequence[tuple[int, int, int, int]], toks: Sequence[SSAValue]) -> None:
    """Carry ``toks`` (the chunk tokens of the yielded get) through ``outer`` in place of its
    iter_arg ``k``: the prologue get ``pro`` split alike, the waits expanded."""
    n = len(toks)
    pro_chunks = _split(pro, rows, pro)
    body = outer.body.block
    y = body.last_op
    assert isinstance(y, scf.YieldOp)
    inits = list(outer.iter_args)
    inits[k: k + 1] = [c.token for c in pro_chunks]
    barg = body.args[k + 1]
    new_args = [barg] + [body.insert_arg(barg.type, k + 2 + j) for j in range(n - 1)]
    _expand_waits(barg, new_args)
    ys = list(y.arguments)
    ys[k: k + 1] = list(toks)
    new_y = scf.YieldOp(*ys)
    body.insert_op_before(new_y, y)
    y.detach()
    y.erase()
    blk = outer.parent
    assert blk is not None
    region = outer.detach_region(outer.body)
    new = scf.ForOp(outer.lb, outer.ub, outer.step, inits, region)
    blk.insert_op_before(new, outer)
    old = list(outer.results)
    for a, b in zip(old[:k], new.results[:k]):
        a.replace_all_uses_with(b)
    for a, b in zip(old[k + 1:], new.results[k + n:]):
        a.replace_all_uses_with(b)
    _expand_waits(old[k], list(new.results[k: k + n]))
    outer.detach()
    outer.erase()
    pro.detach()
    pro.erase()


def spread_gets(spmd: loop.SpmdOp) -> int:
    """Spread the residual window's gets of ``spmd`` (module docstring) when the kernel carries
    :data:`SPREAD_ATTR` (removed here); returns how many gets were spread."""
    attr = spmd.attributes.pop(SPREAD_ATTR, None)
    if not isinstance(attr, IntegerAttr):
        return 0
    mem = spmd.memref_args[attr.value.data]
    done = 0
    while True:
        cand = [o for o in spmd.walk() if isinstance(o, loop.DmaStartOp) and o.is_get and o.memref is mem
                and _window(o) is not None]
        for p in cand:
            if _try(p):
                done += 1
                break
        else:
            return done
