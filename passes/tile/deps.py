"""What the ops of a tile-level loop body read and write, for the legality of the schedule
primitives that change the order of iterations (``tile-reorder``) or merge them
(``tile-fuse`` into a primitive).

An op's effects (:func:`op_accesses`), in program order over a body (:func:`body_accesses`):

* ``tile.move`` load: reads its memref window, overwrites the whole tile; store: reads the
  tile, writes the window (``clip``: only the part inside the memref);
* ``tile.map``: reads its inputs, overwrites its output (an output that is also an input is read
  first);
* ``tile.gemm``: reads A and B, *accumulates* into C (``C += A x B``: reading and writing C,
  commutative with the other accumulations into C);
* ``tile.unfold``: reads its row tiles, overwrites its output;
* ``tile.im2col`` / ``tile.winograd_*``: read the input memref (and the bias), write the whole
  output memref;
* pure ``index`` arithmetic: nothing. Any other op is unknown (the callers refuse it).

Main-memory data are compared per *root* allocation (:func:`memref_root`: through the kernel's
operands and the host's ``memref.collapse_shape`` / ``expand_shape`` / ``reinterpret_cast``
views), so two kernel arguments viewing one buffer are one datum.

:func:`reorder_hazard` is the conservative legality test of a loop permutation (see there).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from taihu.dialects import tile
from taihu.passes.tile.common import eval_index, is_index_op

__all__ = ["Access", "body_accesses", "memref_root", "op_accesses", "reorder_hazard"]

#: iteration points enumerated to prove the windows stored by a nest disjoint
MAX_POINTS = 1 << 14

_MEM_PRIMITIVES = (tile.Im2colOp, tile.WinogradFilterOp, tile.WinogradInputOp, tile.WinogradOutputOp)
_VIEWS = (memref.CollapseShapeOp, memref.ExpandShapeOp, memref.ReinterpretCastOp)


@dataclass(frozen=True)
class Access:
    """One effect of ``op`` on ``value`` (a ``!tile.buf`` or a memref)."""

    op: Operation
    value: SSAValue
    reads: bool = False
    writes: bool = False  # tiles: the whole tile is overwritten; memrefs: a window is written
    accumulates: bool = False  # tile.gemm's C

    @property
    def is_tile(self) -> bool:
        return isinstance(self.value.type, tile.TileBufType)


def op_accesses(op: Operation) -> list[Access] | None:
    """The effects of one op (module docstring); None for an op this analysis does not know."""
    if is_index_op(op):
        return []
    if isinstance(op, tile.MoveOp):
        if op.is_load:
            return [Access(op, op.memref, reads=True), Access(op, op.tile, writes=True)]
        return [Access(op, op.tile, reads=True), Access(op, op.memref, writes=True)]
    if isinstance(op, tile.MapOp):
        ins = [Access(op, v, reads=True) for v in op.inputs if v is not op.out]
        return ins + [Access(op, op.out, reads=any(v is op.out for v in op.inputs), writes=True)]
    if isinstance(op, tile.GemmOp):
        return [Access(op, op.a, reads=True), Access(op, op.b, reads=True),
                Access(op, op.c, reads=True, writes=True, accumulates=True)]
    if isinstance(op, tile.UnfoldOp):
        return [Access(op, v, reads=True) for v in op.inputs] + [Access(op, op.out, writes=True)]
    if isinstance(op, _MEM_PRIMITIVES):
        out = [Access(op, op.input, reads=True), Access(op, op.output, writes=True)]
        if isinstance(op, tile.WinogradOutputOp) and op.bias is not None:
            out.append(Access(op, op.bias, reads=True))
        return out
    return None


def body_accesses(block: Block) -> tuple[list[Access], Operation | None]:
    """The accesses of every op in ``block`` and its nested ``tile.for`` bodies, in program order
    (a nested loop runs at least once: its body's first iteration is its program order);
    ``(accesses, op)`` with the first unknown op, or None."""
    out: list[Access] = []
    for op in block.ops:
        if isinstance(op, tile.ForOp):
            inner, bad = body_accesses(op.body.block)
            out.extend(inner)
            if bad is not None:
                return out, bad
            continue
        acc = op_accesses(op)
        if acc is None:
            return out, op
        out.extend(acc)
    return out, None


def _kernel_operand(arg: BlockArgument) -> SSAValue | None:
    """The ``tile.kernel`` operand bound to ``arg`` (None: ``arg`` is not a kernel argument)."""
    parent = arg.owner.parent_op() if isinstance(arg.owner, Block) else None
    return parent.args[arg.index] if isinstance(parent, tile.KernelOp) else None


def memref_root(v: SSAValue) -> SSAValue:
    """The main-memory allocation a memref value views (kernel argument -> operand -> host views)."""
    while True:
        if isinstance(v, BlockArgument):
            bound = _kernel_operand(v)
            if bound is None:
                return v
            v = bound
            continue
        if isinstance(v.owner, _VIEWS):
            v = v.owner.operands[0]
            continue
        return v


def _root_offset(v: SSAValue) -> int | None:
    """Static element offset of a memref view from its root (None: not known)."""
    off = 0
    while True:
        if isinstance(v, BlockArgument):
            bound = _kernel_operand(v)
            if bound is None:
                return off
            v = bound
            continue
        o = v.owner
        if isinstance(o, memref.ReinterpretCastOp):
            offs = [int(x) for x in o.static_offsets.get_values()]
            if len(offs) != 1 or offs[0] < 0:
                return None
            off += offs[0]
        elif not isinstance(o, (memref.CollapseShapeOp, memref.ExpandShapeOp)):
            return off
        v = o.operands[0]


def _enclosing_loops(op: Operation, outermost: tile.ForOp) -> list[tile.ForOp]:
    """The ``tile.for`` ops from ``outermost`` down to the innermost one containing ``op``."""
    out: list[tile.ForOp] = []
    p = op.parent_op()
    while p is not None:
        if isinstance(p, tile.ForOp):
            out.append(p)
        if p is outermost:
            break
        p = p.parent_op()
    return out[::-1]


Box = tuple[tuple[int, int], ...]


def _window(op: Operation, ivs: dict[SSAValue, int]) -> Box | None:
    """The index box [lo, hi] per dim written by a store for the iterator values ``ivs``
    (``clip`` windows clipped to the memref; an empty box -> ``()``); None if not evaluable."""
    if isinstance(op, tile.MoveOp):
        t = op.memref.type
        assert isinstance(t, MemRefType)
        box = []
        for off, n, st, dim in zip(op.offsets, op.size_values, op.stride_values, t.get_shape()):
            o = eval_index(off, ivs)
            if o is None:
                return None
            lo, hi = o, o + (n - 1) * st
            if op.clip is not None:
                lo, hi = max(lo, 0), min(hi, dim - 1)
                if lo > hi:
                    return ()
            box.append((lo, hi))
        return tuple(box)
    assert isinstance(op, _MEM_PRIMITIVES)
    t = op.output.type  # im2col / winograd_*: the whole output
    assert isinstance(t, MemRefType)
    return tuple((0, d - 1) for d in t.get_shape())


def _linear(box: Box, shape: Sequence[int], base: int) -> Box:
    """A box as the interval of row-major element offsets it spans (plus ``base``)."""
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    lo = sum(a * s for (a, _), s in zip(box, strides))
    hi = sum(b * s for (_, b), s in zip(box, strides))
    return ((base + lo, base + hi),)


def _overlap(a: Box, b: Box) -> bool:
    return all(x0 <= y1 and y0 <= x1 for (x0, x1), (y0, y1) in zip(a, b))


def _first_overlap(boxes: list[tuple[tuple[int, ...], Box, Operation]]) -> tuple[Operation, Operation] | None:
    """Two boxes of different iteration points that overlap (grid hashing: boxes that overlap lie
    in neighbouring cells of a grid whose cells are as large as the largest box)."""
    boxes = [b for b in boxes if b[1]]
    if not boxes:
        return None
    rank = len(boxes[0][1])
    ext = [max(b[1][d][1] - b[1][d][0] + 1 for b in boxes) for d in range(rank)]
    grid: dict[tuple[int, ...], list[tuple[tuple[int, ...], Box, Operation]]] = {}
    for entry in boxes:
        key, box, _ = entry
        cell = tuple(box[d][0] // ext[d] for d in range(rank))
        for delta in itertools.product((-1, 0, 1), repeat=rank):
            for other in grid.get(tuple(c + e for c, e in zip(cell, delta)), ()):
                if other[0] != key and _overlap(other[1], box):
                    return other[2], entry[2]
        grid.setdefault(cell, []).append(entry)
    return None


def _points(loops: Sequence[tile.ForOp]) -> Iterator[dict[SSAValue, int]]:
    ranges = [range(lp.lb_value, lp.ub_value, lp.step_value) for lp in loops]
    for vals in itertools.product(*ranges):
        yield {lp.iv: v for lp, v in zip(loops, vals)}


def _name(v: SSAValue) -> str:
    return f"%{v.name_hint or '?'}"


def reorder_hazard(nest: Sequence[tile.ForOp]) -> str | None:
    """Why permuting the perfect nest ``nest`` (outermost first) could change what the kernel
    computes, or None when every permutation is safe. Conservative: it proves that

    * every tile buffer used in the innermost body is read-only there, or *private* to an
      iteration (its first access in the body overwrites it: a load, or a map whose output is not
      one of its inputs), or only *accumulated* into by ``tile.gemm`` (a sum over the nest, equal
      in any order up to the reassociation of the floating-point additions); the value a
      private buffer holds after the nest is the last iteration's, and the last iteration
      point is the same in every order;
    * no main-memory datum is both read and written in the body, and the windows written by
      different iteration points are disjoint (enumerated over at most :data:`MAX_POINTS` points;
      windows of different views of one allocation are compared as row-major intervals).

    Anything else (a buffer carried from one iteration to the next, an in-place map
    accumulation, an unknown op, overlapping stores) is refused with the reason."""
    body = nest[-1].body.block
    accesses, bad = body_accesses(body)
    if bad is not None:
        return f"cannot analyse '{bad.name}' in the body"
    tiles: dict[SSAValue, list[Access]] = {}
    mem_reads: dict[SSAValue, Access] = {}
    mem_writes: dict[SSAValue, list[Access]] = {}
    for a in accesses:
        if a.is_tile:
            tiles.setdefault(a.value, []).append(a)
        elif a.writes:
            mem_writes.setdefault(memref_root(a.value), []).append(a)
        else:
            mem_reads.setdefault(memref_root(a.value), a)
    for v, accs in tiles.items():
        if all(not a.writes for a in accs) or all(a.accumulates for a in accs):
            continue
        first = accs[0]
        if first.writes and not first.reads:
            continue
        why = "accumulates into it" if first.accumulates else "reads it"
        return (f"buffer {_name(v)} carries a value from one iteration to the next (the first access in "
                f"the body, '{first.op.name}', {why} before it is overwritten)")
    for root, writes in mem_writes.items():
        r = mem_reads.get(root)
        if r is not None:
            return (f"main-memory data {_name(root)} are both read ('{r.op.name}') and written "
                    f"('{writes[0].op.name}') in the body")
        hazard = _stores_overlap(nest, writes)
        if hazard is not None:
            return hazard
    return None


def _stores_overlap(nest: Sequence[tile.ForOp], writes: list[Access]) -> str | None:
    mems = {a.value for a in writes}
    linear = len(mems) > 1
    boxes: list[tuple[tuple[int, ...], Box, Operation]] = []
    seen_ops: set[Operation] = set()
    for a in writes:
        if a.op in seen_ops:
            continue
        seen_ops.add(a.op)
        loops = _enclosing_loops(a.op, nest[0])
        n_pts = math.prod(lp.trip_count for lp in loops)
        if n_pts * len(writes) > MAX_POINTS:
            return (f"too many iteration points ({n_pts}) to prove the windows stored into "
                    f"{_name(memref_root(a.value))} disjoint")
        t = a.value.type
        assert isinstance(t, MemRefType)
        base = _root_offset(a.value) if linear else 0
        if base is None:
            return f"cannot place the view {_name(a.value)} inside its allocation"
        for ivs in _points(loops):
            box = _window(a.op, ivs)
            if box is None:
                return f"cannot evaluate the window of '{a.op.name}' into {_name(a.value)}"
            if box and linear:
                box = _linear(box, t.get_shape(), base)
            boxes.append((tuple(ivs[lp.iv] for lp in nest), box, a.op))
    hit = _first_overlap(boxes)
    if hit is not None:
        return (f"different iterations write overlapping windows of {_name(memref_root(writes[0].value))} "
                f"('{hit[0].name}' and '{hit[1].name}'): the last write would change")
    return None
