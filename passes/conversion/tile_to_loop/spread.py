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

__all__ = ["SPREAD_ATTR", "SPREAD_PUT_ATTR", "spread_gets"]

#: discardable attribute of a GEMM ``tile.kernel`` (then ``loop.spmd``) whose residual window's
#: get is spread: the index of the residual memref among the kernel's arguments (emit_gemm sets
#: it when the plan's ``spread_res`` is non-zero; :func:`spread_gets` consumes it)
SPREAD_ATTR = "taihu.spread_residual"
#: discardable unit attribute of a GEMM kernel whose C puts are spread over the next block's K
#: loop (emit_gemm sets it when the plan's ``spread_put`` is non-zero)
SPREAD_PUT_ATTR = "taihu.spread_put"


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


def _window(p: loop.DmaStartOp, get: bool = True) -> tuple[int, int] | None:
    """(R, L) of a spreadable get (``get``) or put, else None."""
    if p.is_get != get or p.dma_mode != DmaMode.PE or any(s != 1 for s in p.stride_values):
        return None
    sizes = p.size_values
    if len(sizes) < 2 or any(s != 1 for s in sizes[:-2]) or (sizes[-2] < 2 and get):
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
    """The chunk DMAs of ``p`` (:func:`chunk_rows`), inserted before ``before``."""
    return _split_window(p.buffer, p.memref, list(p.offsets), p.size_values, p.is_get, chunks, before)


def _split_window(buf: SSAValue, mem: SSAValue, offsets: Sequence[SSAValue], sizes: Sequence[int], is_get: bool,
                  chunks: Sequence[tuple[int, int, int, int]], before: Operation) -> list[loop.DmaStartOp]:
    """The chunk DMAs (gets or puts) of the window ``mem[offsets] sizes`` <-> LDM block ``buf``
    (``sizes[-2]`` x ``sizes[-1]``), inserted before ``before``."""
    l = sizes[-1]
    t = buf.type
    assert isinstance(t, LdmBufType)
    blk = before.parent
    assert blk is not None
    out: list[loop.DmaStartOp] = []
    for r0, nr, c0, nc in chunks:
        offs = list(offsets)
        for dim, k in ((-2, r0), (-1, c0)):
            if k:
                add = addi(offs[dim], _const(k, before))
                blk.insert_op_before(add, before)
                offs[dim] = add.result
        shape = (nr, nc) if nr > 1 else (nc,)
        v = view_op(buf, _const(r0 * l + c0, before), LdmBufType(shape, t.element_type))
        blk.insert_op_before(v, before)
        win = list(sizes[:-2]) + [nr, nc]
        dma = dma_start(mem, v.result, offs, win) if is_get else dma_start(v.result, mem, offs, win)
        blk.insert_op_before(dma, before)
        out.append(dma)
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


#: chunk DMAs to issue per K loop: one list per spread DMA, chunk j in the loop's iteration j
Schedule = dict[scf.ForOp, list[list[loop.DmaStartOp]]]


def _peel_all(plan: Schedule) -> None:
    """Peel every K loop of ``plan`` as many iterations as its longest chunk list and issue the
    chunks there (:func:`_peel`)."""
    for i_loop, lists in plan.items():
        n = max(len(lst) for lst in lists)
        _peel(i_loop, n, [[lst[j] for lst in lists if j < len(lst)] for j in range(n)])


def _peel(i_loop: scf.ForOp, n: int, chunks: Sequence[Sequence[loop.DmaStartOp]]) -> None:
    """Peel the first ``n`` iterations of ``i_loop`` before it; ``chunks[j]`` (moved) are issued in
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
        at = last_dma.next_op if last_dma is not None else i_loop
        assert at is not None
        for c in chunks[j]:
            c.detach()
            blk.insert_op_before(c, at)
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


def _slot_of(v: SSAValue) -> tuple[SSAValue, int | None] | None:
    """(LDM buffer, constant slot index or None) of a ``loop.slot`` view."""
    o = v.owner
    if isinstance(o, loop.SlotOp):
        return o.buffer, _const_int(o.index)
    return None


def _sink_early_wait(p: loop.DmaStartOp) -> None:
    """A get waited right away (a peeled first block's own residual window: the double buffer's
    wait of the current slot) whose slot nothing reads before the K loop that follows: its wait
    moves after that loop, so the get can overlap (and be spread over) the loop."""
    blk = p.parent
    uses = [u.operation for u in p.token.uses]
    slot = _slot_of(p.buffer)
    if blk is None or len(uses) != 1 or slot is None or slot[1] is None:
        return
    w = uses[0]
    if not isinstance(w, loop.DmaWaitOp) or w.parent is not blk or list(w.tokens) != [p.token]:
        return
    op = w.next_op
    while op is not None and not isinstance(op, scf.ForOp):
        for inner in op.walk():
            if isinstance(inner, (loop.SlotOp, loop.ViewOp)):  # views: their users are checked
                continue
            for v in inner.operands:
                sv = _slot_of(v)
                if v is slot[0] or v is p.buffer or (sv is not None and sv[0] is slot[0] and sv[1] in (None, slot[1])):
                    return
        op = op.next_op
    if op is None or _gemm_loop(op) is None or _touches(op, {p.buffer, slot[0]}):
        return
    nxt = op.next_op
    assert nxt is not None
    w.detach()
    blk.insert_op_before(w, nxt)


def _try(p: loop.DmaStartOp, plan: Schedule) -> bool:
    _sink_early_wait(p)
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
        _widen_carried(carried[0], carried[1], pro, rows, toks, plan)
    p.detach()
    p.erase()
    plan.setdefault(i_loop, []).append(chunks)
    return True


def _widen_carried(outer: scf.ForOp, k: int, pro: loop.DmaStartOp, rows: Sequence[tuple[int, int, int, int]],
                   toks: Sequence[SSAValue], plan: Schedule) -> None:
    """Carry ``toks`` (the chunk tokens of the yielded get) through ``outer`` in place of its
    iter_arg ``k``: the prologue get ``pro`` split alike (its chunks spread over the K loop that
    follows it in its block when there is one -- a peeled first block --, else issued in a row),
    the waits expanded."""
    n = len(toks)
    pro_chunks = _split(pro, rows, pro)
    i0 = _gemm_loop(pro.next_op, outer)
    if i0 is not None and (_loop_trips(i0) or 0) >= n and not any(
            _touches(o, {pro.token, pro.buffer}) for o in _between(pro, i0)) and not _touches(i0, {pro.buffer}):
        plan.setdefault(i0, []).append(pro_chunks)
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


def _between(a: Operation, b: Operation) -> list[Operation]:
    """The ops strictly between ``a`` and ``b`` in their block."""
    out = []
    op = a.next_op
    while op is not None and op is not b:
        out.append(op)
        op = op.next_op
    return out


def _gemm_loop(first: Operation | None, stop: Operation | None = None) -> scf.ForOp | None:
    """The first ``scf.for`` from ``first`` on (before ``stop``) that is a pipelined K loop of a
    ``loop.gemm_block`` with >= 2 iterations."""
    op = first
    while op is not None and op is not stop:
        if isinstance(op, scf.ForOp):
            trips = _loop_trips(op)
            if (trips is not None and trips >= 2
                    and any(isinstance(o, loop.GemmBlockOp) for o in op.body.block.ops)):
                return op
            return None
        op = op.next_op
    return None


def _try_put(outer: scf.ForOp, k: int, plan: Schedule) -> bool:
    """Spread the C puts of the block loop ``outer`` (double-buffered staging tile: its first
    block peeled before it, the put token carried as iter_arg ``k`` and waited before the next
    put, the last block after it): the put of block i is issued in chunks in the K loop of block
    i + 1 and waited after it (before block i + 2 rewrites its slot), the peeled first block's put
    in the loop's first iteration and the last loop iteration's put in the last block's K loop."""
    blk = outer.parent
    body = outer.body.block
    y = body.last_op
    s0 = outer.iter_args[k].owner
    if blk is None or not isinstance(y, scf.YieldOp) or not isinstance(s0, loop.DmaStartOp):
        return False
    s = y.arguments[k].owner
    if not isinstance(s, loop.DmaStartOp) or s.parent is not body or s0.parent is not blk:
        return False
    win = _window(s, get=False)
    if win is None or _window(s0, get=False) != win or s.size_values != s0.size_values or s.memref is not s0.memref:
        return False
    if len(list(s0.token.uses)) != 1 or len(list(s.token.uses)) != 1:
        return False
    barg = body.args[k + 1]
    w = [u.operation for u in barg.uses]
    res_uses = [u.operation for u in outer.results[k].uses]
    if len(w) != 1 or not isinstance(w[0], loop.DmaWaitOp) or w[0].parent is not body:
        return False
    if len(res_uses) != 1 or not isinstance(res_uses[0], loop.DmaWaitOp) or res_uses[0].parent is not blk:
        return False
    w_body, w_last = w[0], res_uses[0]
    i_body = _gemm_loop(body.first_op, s)  # (after a residual spread: the loop's remaining part)
    if i_body is None:
        return False
    i_last = _gemm_loop(outer.next_op, w_last)
    if i_last is None:
        return False
    r, l = win
    rows = chunk_rows(r, l, _loop_trips(i_body) or 0)
    if len(rows) < 2 or len(rows) > (_loop_trips(i_last) or 0):
        return False
    # the put's operands defined in the loop body travel to the next iteration
    opnds = list(s.operands)
    carried = [j for j, v in enumerate(opnds) if isinstance(v.owner, Operation) and outer.is_ancestor(v.owner)
               or v in body.args]
    inits = [s0.operands[j] for j in carried]
    # -- the loop: iter_arg k (the put token) replaced by the put's carried operands
    new_args = [body.insert_arg(opnds[j].type, len(body.args)) for j in carried]
    prev = list(opnds)
    for j, a in zip(carried, new_args):
        prev[j] = a
    nxt_body = i_body.next_op
    assert nxt_body is not None
    chunks = _split_window(prev[0], prev[1], prev[2:], s.size_values, False, rows, i_body)
    plan.setdefault(i_body, []).append(chunks)
    body.insert_op_before(loop.DmaWaitOp([c.token for c in chunks]), nxt_body)
    toks_w = [t for t in w_body.tokens if t is not barg]
    if toks_w:
        body.insert_op_before(loop.DmaWaitOp(toks_w), w_body)
    w_body.detach()
    w_body.erase()
    ys = [a for j, a in enumerate(y.arguments) if j != k] + [opnds[j] for j in carried]
    body.insert_op_before(scf.YieldOp(*ys), y)
    y.detach()
    y.erase()
    s.detach()
    s.erase()
    body.erase_arg(barg)
    old_inits = list(outer.iter_args)
    new_inits = [v for j, v in enumerate(old_inits) if j != k] + inits
    region = outer.detach_region(outer.body)
    new = scf.ForOp(outer.lb, outer.ub, outer.step, new_inits, region)
    blk.insert_op_before(new, outer)
    old = list(outer.results)
    nres = list(new.results)
    for j, res_old in enumerate(old):
        if j < k:
            res_old.replace_all_uses_with(nres[j])
        elif j > k:
            res_old.replace_all_uses_with(nres[j - 1])
    last_vals = list(opnds)
    for j, v in zip(carried, nres[len(old) - 1:]):
        last_vals[j] = v
    # -- after the loop: the last loop iteration's put in the last block's K loop
    toks_l = [t for t in w_last.tokens if t is not old[k]]
    nxt_last = i_last.next_op
    assert nxt_last is not None
    chunks_l = _split_window(last_vals[0], last_vals[1], last_vals[2:], s0.size_values, False, rows, i_last)
    plan.setdefault(i_last, []).append(chunks_l)
    blk.insert_op_before(loop.DmaWaitOp([c.token for c in chunks_l]), nxt_last)
    if toks_l:
        blk.insert_op_before(loop.DmaWaitOp(toks_l), w_last)
    w_last.detach()
    w_last.erase()
    outer.detach()
    outer.erase()
    s0.detach()
    s0.erase()
    return True


def spread_gets(spmd: loop.SpmdOp) -> int:
    """Spread the residual window's gets (:data:`SPREAD_ATTR`) and then the C puts
    (:data:`SPREAD_PUT_ATTR`) of ``spmd`` as its marks say (module docstring; the marks are
    removed); returns how many DMAs were spread."""
    attr = spmd.attributes.pop(SPREAD_ATTR, None)
    put = spmd.attributes.pop(SPREAD_PUT_ATTR, None) is not None
    done = 0
    plan: Schedule = {}
    if isinstance(attr, IntegerAttr):
        mem = spmd.memref_args[attr.value.data]
        # the kernel's own gets only (not the chunks made here); a prologue get split with its
        # loop's prefetch is gone when its turn comes
        for p in [o for o in spmd.walk() if isinstance(o, loop.DmaStartOp) and o.is_get and o.memref is mem
                  and _window(o) is not None]:
            if p.parent is not None and _try(p, plan):
                done += 1
    if put:
        for f in [o for o in spmd.walk() if isinstance(o, scf.ForOp)]:
            for k, init in enumerate(f.iter_args):
                if isinstance(init.owner, loop.DmaStartOp) and not init.owner.is_get and _try_put(f, k, plan):
                    done += 1
                    break
    _peel_all(plan)
    return done
