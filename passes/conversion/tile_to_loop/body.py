"""Lowering of a kernel body (``convert-tile-to-loop``): the op dispatch (:func:`lower_op`,
:func:`lower_block`) and ``tile.for`` -> ``scf.for``, plain or peeled at the array border or
double-buffered (004 Alg. 7 / Alg. 8; the package docstring). The two live together because a
loop body is lowered by the dispatch and the dispatch lowers loops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects import loop, tile

from .common import fail
from .context import LowerCtx
from .facts import touches, uses_in
from .gemm import lower_gemm
from .maps import lower_map
from .mem_prims import (
    lower_im2col,
    lower_unfold,
    lower_winograd_filter,
    lower_winograd_input,
    lower_winograd_output,
)
from .moves import balanced_tokens, emit_move, lower_move, move_prologue_checks


def lower_block(ctx: LowerCtx, block: Block) -> None:
    for op in block.ops:
        lower_op(ctx, op)


def lower_op(ctx: LowerCtx, op: Operation) -> None:
    if isinstance(op, tile.AllocOp):
        return
    if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
        assert isinstance(op.value, IntegerAttr)
        ctx.vmap[op.result] = ctx.const(op.value.value.data)
        return
    if isinstance(op, tile.ForOp):
        _lower_for(ctx, op)
        return
    if isinstance(op, tile.MoveOp):
        if op not in ctx.hoisted:
            lower_move(ctx, op)
        return
    if isinstance(op, tile.MapOp):
        lower_map(ctx, op)
        return
    if isinstance(op, tile.GemmOp):
        ctx.sync_buffers([op.a, op.b, op.c])
        for o in lower_gemm(op, ctx):
            ctx.emit(o)
        return
    mem_prim = _MEM_PRIMS.get(type(op))
    if mem_prim is not None:
        _lower_mem_prim(ctx, op, mem_prim)
        return
    if isinstance(op, tile.UnfoldOp):  # LDM-local (mem_prims.lower_unfold)
        ctx.sync_buffers([*op.inputs, op.out])
        for o in lower_unfold(op, ctx):
            ctx.emit(o)
        return
    if op.dialect_name() == "arith" and not op.regions:
        new = op.clone(value_mapper={o: ctx.value(o) for o in op.operands})
        ctx.emit(new)
        for a, b in zip(op.results, new.results):
            ctx.vmap[a] = b
        return
    raise fail(op, "unsupported op inside a tile.kernel")


#: The memory-to-memory primitives (:mod:`.mem_prims`): op class -> its lowering (the ops that
#: replace it, every DMA waited).
_MEM_PRIMS: dict[type[Operation], Callable[[Any, LowerCtx], list[Operation]]] = {
    tile.Im2colOp: lower_im2col,
    tile.WinogradFilterOp: lower_winograd_filter,
    tile.WinogradInputOp: lower_winograd_input,
    tile.WinogradOutputOp: lower_winograd_output,
}


def _lower_mem_prim(ctx: LowerCtx, op: Operation, lower: Callable[[Any, LowerCtx], list[Operation]]) -> None:
    """A memory-to-memory primitive: the pending DMAs waited, a barrier if its input may have
    been written by another CPE, then ``lower``'s ops; its output memref is noted as written."""
    assert isinstance(op, tile._MemPrimitive)
    ctx.flush()
    ctx.barrier_before_read(op.input)
    for o in lower(op, ctx):
        ctx.emit(o)
    ctx.note_memref_write(op.output)


def _remat(
    ctx: LowerCtx, v: SSAValue, loop_op: tile.ForOp, subst: dict[SSAValue, SSAValue], memo: dict[SSAValue, SSAValue]
) -> SSAValue:
    """Loop-level value of tile index ``v`` with the iterators in ``subst`` replaced (arith ops
    inside ``loop_op`` are re-materialised at the insertion point)."""
    if v in subst:
        return subst[v]
    if v in memo:
        return memo[v]
    owner = v.owner
    if isinstance(owner, Operation) and loop_op.is_ancestor(owner):
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            res = ctx.const(owner.value.value.data)
        elif owner.dialect_name() == "arith" and not owner.regions:
            new = owner.clone(value_mapper={o: _remat(ctx, o, loop_op, subst, memo) for o in owner.operands})
            ctx.emit(new)
            assert isinstance(v, OpResult)  # a value owned by an op
            res = new.results[list(owner.results).index(v)]
        else:
            raise fail(owner, "offset of a double-buffered move depends on an unsupported op")
        memo[v] = res
        return res
    return ctx.value(v)


def _prefetch_candidates(ctx: LowerCtx, f: tile.ForOp) -> tuple[list[tile.MoveOp], list[tile.MoveOp]]:
    loads: list[tile.MoveOp] = []
    stores: list[tile.MoveOp] = []
    if not ctx.options.double_buffer:
        return loads, stores
    body_ops = list(f.body.block.ops)
    for i, m in enumerate(body_ops):
        if not isinstance(m, tile.MoveOp):
            continue
        al = m.tile.owner
        if not isinstance(al, tile.AllocOp) or not al.is_double or not uses_in(m.tile, f):
            continue
        pl = ctx.plan(m)
        if not (pl.uniform or pl.bcast or balanced_tokens(ctx, pl) is not None):
            continue
        if any(isinstance(x, tile.MoveOp) and x is not m and x.tile is m.tile for x in f.walk()):
            continue
        if m.is_load:
            if any(touches(x, m.tile) for x in body_ops[:i]):
                continue
            if m.memref in ctx.loop_writes.get(f, set()):
                continue  # the next tile may not be written yet (read-after-write across iterations)
            loads.append(m)
        else:
            if any(touches(x, m.tile) for x in body_ops[i + 1 :]):
                continue
            stores.append(m)
    return loads, stores


_MAX_PEELED = 4  # boundary iterations peeled per loop (algorithms.md §E6 primitive switching)


def _depends_on(v: SSAValue, iv: SSAValue) -> bool:
    if v is iv:
        return True
    owner = v.owner
    return isinstance(owner, Operation) and owner.dialect_name() == "arith" and any(
        _depends_on(o, iv) for o in owner.operands
    )


def _boundary_iterations(ctx: LowerCtx, f: tile.ForOp, values: list[int]) -> set[int]:
    """Iterator values of ``f`` for which a boundary (pad/clip) move in its body has a piece
    that may cross the array border along a dim whose offset depends on ``f``'s iterator (given
    the values of the enclosing loops). Empty when peeling would not help: every boundary move
    can dispatch asynchronously inside the loop (:func:`balanced_tokens`), every value is a
    boundary one, more than ``_MAX_PEELED``, or fewer than two consecutive interior iterations
    would remain."""
    moves = []
    for m in f.walk():
        if isinstance(m, tile.MoveOp) and (m.pad is not None or m.clip is not None):
            dims = [d for d, o in enumerate(m.offsets) if _depends_on(o, f.iv)]
            if dims:
                moves.append((m, dims))
    if not moves or len(values) > 256:
        return set()
    bad: set[int] = set()
    saved = ctx.iv_values.get(f)
    try:
        ctx.iv_values[f] = values
        if all(ctx.plan(m).uniform or balanced_tokens(ctx, ctx.plan(m)) is not None for m, _ in moves):
            return set()  # the dispatch inside the loop stays asynchronous: nothing to gain
        for v in values:
            ctx.iv_values[f] = [v]
            for m, dims in moves:
                plan = ctx.plan(m)
                if any(
                    any(e > 0 for e in n) and any(len(cases[d]) != 1 or (cases[d][0].lo, cases[d][0].hi) != (0, n[d]) for d in dims)
                    for _, n, cases in plan.classes
                ):
                    bad.add(v)
                    break
    except PassFailedException:
        return set()
    finally:
        if saved is None:
            ctx.iv_values.pop(f, None)
        else:
            ctx.iv_values[f] = saved
    if len(bad) == len(values) or len(bad) > _MAX_PEELED:
        return set()
    run = best = 0
    for v in values:
        run = 0 if v in bad else run + 1
        best = max(best, run)
    if best < 2:  # no scf.for would remain: keep the loop (prefetching, dispatch inside)
        return set()
    return bad


def _writes_tile(op: Operation, b: SSAValue) -> bool:
    if isinstance(op, tile.MoveOp):
        return op.is_load and op.tile is b
    if isinstance(op, tile.MapOp):
        return op.out is b
    if isinstance(op, tile.GemmOp):
        return op.c is b
    if isinstance(op, tile.UnfoldOp):
        return op.out is b
    return False


def _hoistable_loads(ctx: LowerCtx, f: tile.ForOp) -> list[tile.MoveOp]:
    """Loads in ``f`` (at any depth) whose address does not depend on any loop inside ``f``
    (offsets defined outside ``f`` or constants), into a single-slot tile nothing else in ``f``
    writes, from a memref ``f`` does not write: 004 Alg. 7 places such a DMA before the loop."""
    out = []
    written = ctx.loop_writes.get(f, set())
    for m in f.walk():
        if not isinstance(m, tile.MoveOp) or not m.is_load or m in ctx.hoisted:
            continue
        al = m.tile.owner
        if isinstance(al, tile.AllocOp) and al.is_double:
            continue
        if m.memref in written:
            continue
        if any(
            isinstance(o.owner, Operation) and f.is_ancestor(o.owner) and not isinstance(o.owner, arith.ConstantOp)
            or isinstance(o, BlockArgument) and f.is_ancestor(o.owner)  # its block lies inside f
            for o in m.offsets
        ):
            continue
        if any(x is not m and _writes_tile(x, m.tile) for x in f.walk()):
            continue
        out.append(m)
    return out


def _lower_for(ctx: LowerCtx, f: tile.ForOp) -> None:
    """``tile.for`` -> ``scf.for``; loop-invariant loads are placed before it (Alg. 7);
    iterations whose boundary moves may cross the array border are peeled (lowered with the
    iterator as a constant, dispatching per CPE), so that the other iterations have uniform,
    asynchronous (and prefetchable) moves."""
    hoisted = _hoistable_loads(ctx, f)
    for m in hoisted:
        lower_move(ctx, m)
        ctx.hoisted.add(m)
    try:
        _lower_for_segments(ctx, f)
    finally:  # the body may be lowered again (an enclosing loop's peeled iteration)
        ctx.hoisted.difference_update(hoisted)


def _lower_for_segments(ctx: LowerCtx, f: tile.ForOp) -> None:
    values = ctx.iv_values.get(f, list(range(f.lb_value, f.ub_value, f.step_value)))
    bad = _boundary_iterations(ctx, f, values)
    segments: list[tuple[bool, list[int]]] = []  # (peeled, values)
    for v in values:
        if v in bad:
            segments.append((True, [v]))
        elif segments and not segments[-1][0]:
            segments[-1][1].append(v)
        else:
            segments.append((False, [v]))
    saved = ctx.iv_values.get(f)
    ctx.for_stack.append(f)
    try:
        for peeled, sg in segments:
            ctx.iv_values[f] = sg
            _lower_for_range(ctx, f, sg[0], len(sg), peeled)
    finally:
        ctx.for_stack.pop()
        if saved is None:
            ctx.iv_values.pop(f, None)
        else:
            ctx.iv_values[f] = saved


def _lower_for_range(ctx: LowerCtx, f: tile.ForOp, lb: int, n: int, peeled: bool = False) -> None:
    """Iterations ``lb, lb+step, ... (n of them)`` of ``f``. Pending DMAs are waited first,
    except gets whose tile the loop does not touch and whose memref it does not write (e.g. a
    GEMM block's residual window before its K loop: waited where the store adds it, so that it
    overlaps the loop; :mod:`.spread` then spreads it over the loop's iterations)."""
    written = {ctx.vmap.get(w, w) for w in ctx.loop_writes.get(f, ())}
    ctx.flush(lambda p: not (p.is_get and p.buf is not None and not touches(f, p.buf) and p.mem not in written))
    if peeled or n == 1:  # one iteration: inline, the iterator a constant
        assert n == 1
        ctx.vmap[f.iv] = ctx.const(lb)
        lower_block(ctx, f.body.block)
        ctx.flush()
        return
    loads, stores = _prefetch_candidates(ctx, f)
    inner = _wrap_candidate(ctx, f, n)
    if not loads and not stores and inner is None:
        _plain_for(ctx, f, lb, n)
    else:
        _double_buffered_for(ctx, f, loads, stores, lb, n, inner=inner)


def _remat_ok(v: SSAValue) -> bool:
    owner = v.owner
    if isinstance(v, BlockArgument) or not isinstance(owner, Operation):
        return True
    return owner.dialect_name() == "arith" and not owner.regions and all(_remat_ok(o) for o in owner.operands)


def _wrap_candidate(
    ctx: LowerCtx, f: tile.ForOp, n: int
) -> tuple[tile.ForOp, list[tile.MoveOp], list[tile.MoveOp]] | None:
    """Alg. 8's wrap: when ``f``'s body holds exactly one loop ``L`` with prefetchable loads
    (that ``L`` is not split at a boundary and ``f`` does not write their memrefs), prefetch
    ``L``'s first tile of ``f``'s next iteration during ``L``'s last iteration."""
    if not ctx.options.double_buffer or n < 2:
        return None
    fors = [o for o in f.body.block.ops if isinstance(o, tile.ForOp)]
    if len(fors) != 1:
        return None
    L = fors[0]
    if _boundary_iterations(ctx, L, list(range(L.lb_value, L.ub_value, L.step_value))):
        return None
    loads, stores = _prefetch_candidates(ctx, L)
    written = ctx.loop_writes.get(f, set())
    loads = [m for m in loads if m.memref not in written and all(_remat_ok(o) for o in m.offsets)]
    if not loads:
        return None
    return L, loads, stores


def _plain_for(ctx: LowerCtx, f: tile.ForOp, lb: int, n: int) -> None:
    body = Block(arg_types=[IndexType()])
    body.args[0].name_hint = f.iv.name_hint
    ctx.vmap[f.iv] = body.args[0]
    saved = ctx.push(body)
    lower_block(ctx, f.body.block)
    ctx.pop(saved)
    body.add_op(scf.YieldOp())
    step = f.step_value
    ctx.emit(scf.ForOp(ctx.const(lb), ctx.const(lb + n * step), ctx.const(step), [], body))


def _double_buffered_for(
    ctx: LowerCtx,
    f: tile.ForOp,
    loads: list[tile.MoveOp],
    stores: list[tile.MoveOp],
    lb: int,
    n: int,
    *,
    inner: tuple[tile.ForOp, list[tile.MoveOp], list[tile.MoveOp]] | None = None,
    incoming: dict[tile.MoveOp, list[SSAValue]] | None = None,
    counter0: SSAValue | None = None,
    wrap_next: Callable[[tile.MoveOp], list[SSAValue]] | None = None,
) -> tuple[dict[tile.MoveOp, list[SSAValue]], SSAValue]:
    """Iterations ``lb, lb+step, ...`` (``n``) of ``f`` with prefetched ``loads`` and delayed
    ``stores`` (004 Alg. 8; package docstring).

    Alg. 8's wrap to the outer loop: ``inner = (L, loads_L, stores_L)`` names the one loop of
    ``f``'s body whose ``loads_L`` are prefetched across ``f``'s iterations: the prologue fetches
    their first tile before ``f``, ``L`` runs with the tokens carried by ``f``
    (``incoming``, slot counter ``counter0``) and its last iteration prefetches the first tile
    of ``f``'s next iteration (``wrap_next`` gives those offsets; None in ``f``'s last
    iteration). Returns the tokens of loads still in flight (the wrap prefetch) and the slot
    counter after the last iteration."""
    step = f.step_value
    bufs = [m.tile for m in loads + stores]
    c_base = counter0 if counter0 is not None else ctx.const(0)

    def slot(b: SSAValue, c: SSAValue) -> SSAValue:
        s = loop.SlotOp(ctx.ldm[b], c)
        s.result.name_hint = f"{ctx.ldm[b].name_hint}_cur"
        ctx.emit(s)
        return s.result

    load_toks: dict[tile.MoveOp, list[SSAValue]] = {}
    if incoming is not None:
        load_toks.update(incoming)
    else:  # prologue: the first tile of every prefetched load into slot 0
        for m in loads:
            move_prologue_checks(ctx, m)
            offs = [_remat(ctx, o, f, {f.iv: ctx.const(lb)}, {}) for o in m.offsets]
            load_toks[m] = emit_move(ctx, m, offs, slot(m.tile, c_base), sync=False)
    store_toks: dict[tile.MoveOp, list[SSAValue]] = {m: [] for m in stores}
    inner_toks: dict[tile.MoveOp, list[SSAValue]] = {}
    inner_c: list[SSAValue] = []
    if inner is not None:
        L, inner_loads, _ = inner
        for m in inner_loads:
            move_prologue_checks(ctx, m)
            subst: dict[SSAValue, SSAValue] = {f.iv: ctx.const(lb), L.iv: ctx.const(L.lb_value)}
            offs = [_remat(ctx, o, f, subst, {}) for o in m.offsets]
            inner_toks[m] = emit_move(ctx, m, offs, slot(m.tile, ctx.const(0)), sync=False)
        inner_c.append(ctx.const(0))

    def iteration(iv: SSAValue, c: SSAValue, prefetch: bool, store_async: bool, last: bool) -> None:
        """Lower one iteration of the body at the current insertion point. ``prefetch``: start
        the next loads (in the last iteration: the wrap-around ones, if any)."""
        ctx.vmap[f.iv] = iv
        sc = ctx.scopes[-1]
        saved_views = dict(sc.views)
        for b in bufs:
            sc.views[b] = slot(b, c)
        for op in f.body.block.ops:
            if isinstance(op, tile.MoveOp) and op in load_toks:
                ctx.emit(loop.DmaWaitOp(load_toks[op])) if load_toks[op] else None
                load_toks[op] = []
                if prefetch and not last:
                    nxt = ctx.addc(iv, step)
                    offs = [_remat(ctx, o, f, {f.iv: nxt}, {}) for o in op.offsets]
                    load_toks[op] = emit_move(ctx, op, offs, slot(op.tile, ctx.addc(c, 1)), sync=False)
                elif prefetch and wrap_next is not None:
                    load_toks[op] = emit_move(ctx, op, wrap_next(op), slot(op.tile, ctx.addc(c, 1)), sync=False)
                continue
            if isinstance(op, tile.MoveOp) and op in store_toks:
                ctx.sync_buffers([op.tile])
                if store_toks[op]:
                    ctx.emit(loop.DmaWaitOp(store_toks[op]))
                offs = [ctx.value(o) for o in op.offsets]
                toks = emit_move(ctx, op, offs, ctx.value(op.tile), sync=False)
                ctx.note_memref_write(op.memref)
                if store_async:
                    store_toks[op] = toks
                else:
                    store_toks[op] = []
                    ctx.add_pending(toks, op.tile, ctx.value(op.memref), False)
                continue
            if inner is not None and op is inner[0]:
                _lower_inner_wrapped(ctx, f, iv, inner, inner_toks, inner_c, wrap=not last)
                continue
            lower_op(ctx, op)
        ctx.flush()
        sc.views = saved_views

    def at(k: int) -> SSAValue:
        return ctx.addc(c_base, k)

    if n == 1:
        iteration(ctx.const(lb), c_base, wrap_next is not None, False, last=True)
        return {m: t for m, t in load_toks.items() if t}, at(1)
    peel_first = bool(stores)
    peel_last = bool(loads) or inner is not None
    k0 = 0
    if peel_first:
        iteration(ctx.const(lb), c_base, prefetch=True, store_async=True, last=False)
        k0 = 1
    k1 = n - 1 if peel_last else n
    groups = (load_toks, store_toks, inner_toks)
    if k1 > k0:
        carried: list[tuple[int, tile.MoveOp, int]] = []
        inits: list[SSAValue] = []
        for g, d in enumerate(groups):
            for m, toks in d.items():
                for j, t in enumerate(toks):
                    carried.append((g, m, j))
                    inits.append(t)
        n_inner_c = len(inner_c)
        body = Block(arg_types=[IndexType()] + [loop.TokenType()] * len(inits) + [IndexType()] * (1 + n_inner_c))
        body.args[0].name_hint = f.iv.name_hint
        body.args[1 + len(inits)].name_hint = "slot"
        inits.append(at(k0))
        inits += inner_c
        saved = ctx.push(body)
        targs = body.args[1 : 1 + len(carried)]
        for (g, m, j), a in zip(carried, targs):
            groups[g][m][j] = a
        if n_inner_c:
            inner_c[0] = body.args[-1]
            inner_c[0].name_hint = "slot_in"
        iteration(body.args[0], body.args[1 + len(carried)], prefetch=True, store_async=True, last=False)
        outs: list[SSAValue] = []
        for g, m, j in carried:
            if len(groups[g][m]) != sum(1 for gg, mm, _ in carried if gg == g and mm is m):
                raise fail(m, "token count changed between iterations")
            outs.append(groups[g][m][j])
        nc = ctx.addc(body.args[1 + len(carried)], 1)
        ctx.pop(saved)
        body.add_op(scf.YieldOp(*outs, nc, *inner_c))
        loop_op = scf.ForOp(ctx.const(lb + k0 * step), ctx.const(lb + k1 * step), ctx.const(step), inits, body)
        ctx.emit(loop_op)
        res = list(loop_op.results)
        for (g, m, j), r in zip(carried, res):
            groups[g][m][j] = r
        if n_inner_c:
            inner_c[0] = res[-1]
    if peel_last:
        iteration(ctx.const(lb + (n - 1) * step), at(n - 1), prefetch=wrap_next is not None, store_async=True, last=True)
    rest = [t for toks in store_toks.values() for t in toks] + [t for toks in inner_toks.values() for t in toks]
    if wrap_next is None:
        rest += [t for toks in load_toks.values() for t in toks]
    if rest:
        ctx.emit(loop.DmaWaitOp(rest))
    return ({m: t for m, t in load_toks.items() if t} if wrap_next is not None else {}), at(n)


def _lower_inner_wrapped(
    ctx: LowerCtx,
    f: tile.ForOp,
    iv: SSAValue,
    inner: tuple[tile.ForOp, list[tile.MoveOp], list[tile.MoveOp]],
    inner_toks: dict[tile.MoveOp, list[SSAValue]],
    inner_c: list[SSAValue],
    wrap: bool,
) -> None:
    """The inner loop of an Alg. 8 wrap (see :func:`_double_buffered_for`), updating the
    carried tokens and slot counter in place."""
    L, loads_L, stores_L = inner
    ctx.flush()
    hoisted = _hoistable_loads(ctx, L)
    for m in hoisted:
        move_prologue_checks(ctx, m)
        lower_move(ctx, m)
        ctx.hoisted.add(m)
    ctx.flush()
    ctx.for_stack.append(L)
    try:
        wrap_next = None
        if wrap:
            def wrap_next(m: tile.MoveOp) -> list[SSAValue]:
                subst: dict[SSAValue, SSAValue] = {f.iv: ctx.addc(iv, f.step_value), L.iv: ctx.const(L.lb_value)}
                return [_remat(ctx, o, f, subst, {}) for o in m.offsets]
        out, c_after = _double_buffered_for(
            ctx, L, loads_L, stores_L, L.lb_value, L.trip_count,
            incoming=dict(inner_toks), counter0=inner_c[0], wrap_next=wrap_next,
        )
    finally:
        ctx.for_stack.pop()
        ctx.hoisted.difference_update(hoisted)
    for m in inner_toks:
        inner_toks[m] = out.get(m, [])
    inner_c[0] = c_after

