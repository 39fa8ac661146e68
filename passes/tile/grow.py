"""Fusing a ``tile.for`` into the primitives of its body (swAutoDNN's ``fuse(l, op, inM)``, 004
L1441, L1482: "remove the loop and modify the tensorised primitive's attributes"): the analysis
and the rewrite behind ``tile-fuse{loop=NAME}``.

A loop ``%i = LB to UB step S`` (T iterations) disappears when every iteration works on its own
*slice* of a larger tile, so that one execution of the body on the larger tiles does all T:

* a ``tile.move`` whose window advances with ``%i`` along one memref dim d (offset ``c*%i +
  invariant``, consecutive windows: ``c*S = size_d * stride_d``) becomes one move of
  ``size_d * T`` elements along d; its tile *grows* by T along the tile dim that carries d (the
  dims are matched as tile-to-loop does: the window's non-unit dims onto the tile's non-unit
  dims; a unit window dim becomes a new tile dim, or grows a unit tile dim at that place);
* an element-wise ``tile.map`` (and ``fill``) grows with its output; its same-shaped inputs
  grow the same way, smaller (broadcast) inputs must not grow;
* a ``tile.gemm`` grows along one of its dims: M (A and C grow along M), N (B and C along N) or
  K (A and B along K, C unchanged: ``C += sum_i A_i B_i`` becomes ``C += A B``, equal up to the
  reassociation of the fp64 sum); ``m``/``n``/``k`` are multiplied by T;
* ``index`` arithmetic is kept, with ``%i`` replaced by the constant LB; nested ``tile.for``
  loops are kept (their bodies follow the same rules).

Growth is inferred by propagation over these constraints; it is legal only if (checked, each
refusal names the op or buffer):

* each buffer grows one way; a growing buffer is used only inside the loop, and its first access
  there overwrites it (no value flows between iterations through it);
* a buffer that does not grow is read-only in the loop, or overwritten before any read by ops
  that do not depend on ``%i`` (the same value in every iteration), or only accumulated into by
  K-grown ``tile.gemm`` ops;
* a ``tile.gemm`` grows (one that does not would add its product T times);
* main memory: no datum is read and written in the loop, and a datum is stored by at most one
  ``tile.move`` there;
* no other op in the loop (window / reduction maps, ``tile.unfold``, im2col, Winograd: their
  parameters tie the tile shape to the loop).

The verifiers then decide whether the larger tiles are legal (distribution multiples, GEMM
multiples, LDM footprint); the caller reports their rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64
from xdsl.ir import Operation, SSAValue

from taihu.dialects import tile
from taihu.dialects.mapkind import KIND_INFO
from taihu.passes.tile.common import const_index, index_const, is_index_op, new_type, replace_buffer_type, walk_ops
from taihu.passes.tile.deps import body_accesses, memref_root

__all__ = ["Growth", "GrowPlan", "apply_grow", "plan_grow"]


@dataclass(frozen=True)
class Growth:
    """How a tile grows by the trip count: a new dim at ``dim`` (``insert``) or dim ``dim``
    multiplied."""

    dim: int
    insert: bool

    def shape(self, shape: Sequence[int], t: int) -> tuple[int, ...]:
        s = list(shape)
        if self.insert:
            s.insert(self.dim, t)
        else:
            s[self.dim] *= t
        return tuple(s)


NONE = Growth(-1, False)  # the buffer does not grow


@dataclass
class GrowPlan:
    """The rewrite: buffers to re-type, moves to widen (memref dim), gemms to enlarge (dim)."""

    loop: tile.ForOp
    trips: int
    buffers: dict[SSAValue, Growth]
    moves: dict[tile.MoveOp, int]
    gemms: dict[tile.GemmOp, str]


class Refusal(Exception):
    """Why the loop cannot be fused into its primitives."""


def _name(v: SSAValue) -> str:
    return f"%{v.name_hint or '?'}"


def _coefficient(v: SSAValue, iv: SSAValue, inside: tile.ForOp) -> int | None:
    """c when ``v = c * iv + (a value not depending on iv)``; 0 when v does not depend on iv;
    None when it depends on iv otherwise."""
    if v is iv:
        return 1
    o = v.owner
    if not isinstance(o, Operation) or not inside.is_ancestor(o) or not is_index_op(o):
        return 0
    if not o.operands:
        return 0
    a = _coefficient(o.operands[0], iv, inside)
    b = _coefficient(o.operands[1], iv, inside)
    if a is None or b is None:
        return None
    if isinstance(o, arith.AddiOp):
        return a + b
    if isinstance(o, arith.SubiOp):
        return a - b
    if isinstance(o, arith.MuliOp):
        if a and b:
            return None
        c = const_index(o.operands[1] if a else o.operands[0])
        if a == 0 and b == 0:
            return 0
        return None if c is None else (a or b) * c
    return 0 if a == 0 and b == 0 else None  # divui / remui of iv: not a slice


def _move_growth(op: tile.MoveOp, d: int) -> Growth:
    """The growth of the tile of ``op`` when its window grows along memref dim ``d``."""
    sizes = op.size_values
    tt = op.tile.type
    assert isinstance(tt, tile.TileBufType)
    ts = tt.get_shape()
    wdims = [e for e, s in enumerate(sizes) if s != 1]
    tdims = [j for j, s in enumerate(ts) if s != 1]
    if sizes[d] != 1:
        return Growth(tdims[wdims.index(d)], False)
    k = sum(1 for e in wdims if e < d)
    lo = tdims[k - 1] + 1 if k > 0 else 0
    hi = tdims[k] if k < len(tdims) else len(ts)
    if hi > lo:  # a unit tile dim at that place: it grows
        return Growth(lo, False)
    return Growth(hi, True)


def _gemm_dim(op: tile.GemmOp, which: str, g: Growth) -> str | None:
    """The GEMM dim (m/n/k) a growth of operand ``which`` (A/B/C) runs along."""
    if g == NONE:
        return ""
    if g.insert:
        return None
    return op.operand_dims()[which][g.dim]


def _gemm_growth(op: tile.GemmOp, which: str, dim: str) -> Growth:
    """The growth of operand ``which`` when the GEMM grows along ``dim`` (NONE if unaffected)."""
    dims = op.operand_dims()[which]
    return Growth(dims.index(dim), False) if dim in dims else NONE


_GEMM_OPERANDS = ("A", "B", "C")


def plan_grow(loop: tile.ForOp) -> GrowPlan:
    """The rewrite fusing ``loop`` into its primitives (module docstring); raises
    :class:`Refusal` with the reason."""
    iv, s, t = loop.iv, loop.step_value, loop.trip_count
    ops = list(walk_ops(loop.body.block))
    moves: dict[tile.MoveOp, int] = {}
    fixed: dict[SSAValue, Growth] = {}
    for op in ops:
        if is_index_op(op) or isinstance(op, tile.ForOp):
            continue
        if isinstance(op, tile.MoveOp):
            coef = [_coefficient(o, iv, loop) for o in op.offsets]
            dep = [d for d, c in enumerate(coef) if c != 0]
            if len(dep) > 1:
                raise Refusal(f"the window of a 'tile.move' on {_name(op.tile)} advances with the loop along "
                              f"{len(dep)} dims (one at most)")
            if dep:
                d = dep[0]
                c = coef[d]
                n, st = op.size_values[d], op.stride_values[d]
                if c is None or c * s != n * st:
                    raise Refusal(f"the windows of a 'tile.move' on {_name(op.tile)} are not consecutive along "
                                  f"dim {d} (offset step {'?' if c is None else c * s}, window {n} x stride {st})")
                moves[op] = d
                g = _move_growth(op, d)
            else:
                g = NONE
            if fixed.get(op.tile, g) != g:
                raise Refusal(f"buffer {_name(op.tile)} would grow in two ways (two 'tile.move' windows)")
            fixed[op.tile] = g
        elif isinstance(op, tile.MapOp):
            rule = KIND_INFO[op.map_kind].shape_rule
            if rule not in ("elementwise", "fill"):
                raise Refusal(f"'tile.map {op.map_kind.value}' ({rule}) ties its shape to the loop; only "
                              "element-wise maps can grow")
        elif not isinstance(op, tile.GemmOp):
            raise Refusal(f"'{op.name}' in the loop cannot grow (only tile.move, element-wise tile.map and tile.gemm)")
    growth = dict(fixed)
    gemm_dims: dict[tile.GemmOp, str] = {}

    def assign(v: SSAValue, g: Growth, why: str) -> bool:
        old = growth.get(v)
        if old is None:
            growth[v] = g
            return True
        if old != g:
            raise Refusal(f"buffer {_name(v)} would grow in two ways ({why})")
        return False

    changed = True
    while changed:
        changed = False
        for op in ops:
            if isinstance(op, tile.MapOp):
                out = op.out.type
                assert isinstance(out, tile.TileBufType)
                same = [v for v in op.inputs
                        if isinstance(v.type, tile.TileBufType) and v.type.get_shape() == out.get_shape()]
                group = [op.out, *same]
                known = [growth[v] for v in group if v in growth]
                if known:
                    for v in group:
                        changed |= assign(v, known[0], f"'tile.map {op.map_kind.value}'")
                for v in op.inputs:
                    if v not in same:
                        changed |= assign(v, NONE, f"broadcast input of 'tile.map {op.map_kind.value}'")
            elif isinstance(op, tile.GemmOp):
                vals = dict(zip(_GEMM_OPERANDS, (op.a, op.b, op.c)))
                dims = {w: _gemm_dim(op, w, growth[v]) for w, v in vals.items() if v in growth}
                if any(d is None for d in dims.values()):
                    raise Refusal("a 'tile.gemm' operand would gain a dim")
                if op in gemm_dims:
                    dim = gemm_dims[op]
                else:
                    along = {d for d in dims.values() if d}
                    if len(along) > 1:
                        raise Refusal(f"a 'tile.gemm' would grow along {' and '.join(sorted(d.upper() for d in along))}")
                    if not along:
                        continue
                    dim = along.pop()
                    gemm_dims[op] = dim
                    changed = True
                for w, v in vals.items():
                    changed |= assign(v, _gemm_growth(op, w, dim), f"'tile.gemm' along {dim.upper()}")
    for op in ops:
        if isinstance(op, tile.GemmOp) and op not in gemm_dims:
            raise Refusal(f"'tile.gemm' into {_name(op.c)} does not depend on the loop: fused, it would add "
                          f"its product once instead of {t} times")
    _check_effects(loop, ops, growth, gemm_dims)
    buffers = {v: g for v, g in growth.items() if g != NONE}
    return GrowPlan(loop, t, buffers, moves, gemm_dims)


def _check_effects(loop: tile.ForOp, ops: list[Operation], growth: dict[SSAValue, Growth],
                   gemm_dims: dict[tile.GemmOp, str]) -> None:
    accesses, bad = body_accesses(loop.body.block)
    if bad is not None:
        raise Refusal(f"cannot analyse '{bad.name}'")
    per: dict[SSAValue, list] = {}
    for a in accesses:
        if a.is_tile:
            per.setdefault(a.value, []).append(a)
    for v, accs in per.items():
        g = growth.get(v, NONE)
        first = accs[0]
        if g != NONE:
            outside = [u.operation for u in v.uses if not loop.is_ancestor(u.operation)]
            if outside:
                raise Refusal(f"buffer {_name(v)} would grow but is also used outside the loop "
                              f"('{outside[0].name}')")
            if not (first.writes and not first.reads):
                raise Refusal(f"buffer {_name(v)} would grow but its first access in the loop "
                              f"('{first.op.name}') reads it")
            continue
        if all(not a.writes for a in accs):
            continue  # read-only: the same in every iteration
        if all(a.accumulates for a in accs):
            if all(isinstance(a.op, tile.GemmOp) and gemm_dims.get(a.op) == "k" for a in accs):
                continue
            raise Refusal(f"buffer {_name(v)} accumulates over the loop but its tile.gemm does not grow along K")
        if first.writes and not first.reads:
            continue  # overwritten by ops that do not grow: the same value in every iteration
        raise Refusal(f"buffer {_name(v)} carries a value from one iteration to the next "
                      f"('{first.op.name}' reads it first)")
    reads: dict[SSAValue, str] = {}
    writes: dict[SSAValue, list[Operation]] = {}
    for a in accesses:
        if a.is_tile:
            continue
        root = memref_root(a.value)
        if a.writes:
            writes.setdefault(root, []).append(a.op)
        else:
            reads.setdefault(root, a.op.name)
    for root, ws in writes.items():
        if root in reads:
            raise Refusal(f"main-memory data {_name(root)} are both read ('{reads[root]}') and written in the loop")
        if len(ws) > 1:
            raise Refusal(f"main-memory data {_name(root)} are stored by {len(ws)} ops in the loop (one at most)")


def apply_grow(plan: GrowPlan) -> None:
    """Rewrite: re-type the growing buffers, widen the moves, enlarge the gemms, replace the
    iterator by its first value and dissolve the loop into its parent block."""
    loop, t = plan.loop, plan.trips
    for v, g in plan.buffers.items():
        alloc = v.owner
        assert isinstance(alloc, tile.AllocOp)
        tt = alloc.tile_type
        dist = tt.dist.data
        sd = tt.split_dim
        if g.insert and sd is not None and sd >= g.dim:  # keep splitting the same logical dim
            base, plus, h = dist.partition("+")
            dist = tile.cpe_dist(sd + 1) + (f"+{h}" if plus else "")
        replace_buffer_type(alloc, new_type(tt, shape=g.shape(tt.get_shape(), t), dist=dist))
    for mv, d in plan.moves.items():
        sizes = list(mv.size_values)
        sizes[d] *= t
        mv.properties["sizes"] = DenseArrayBase.from_list(i64, sizes)
    for gm, dim in plan.gemms.items():
        size = dict(zip("mnk", gm.mnk))[dim]
        gm.properties[dim] = IntegerAttr(size * t, i64)
    block = loop.parent_block()
    assert block is not None
    first = index_const(loop.lb_value, loop.iv.name_hint)
    block.insert_op_before(first, loop)
    loop.iv.replace_all_uses_with(first.result)
    for op in list(loop.body.block.ops):
        op.detach()
        block.insert_op_before(op, loop)
    block.erase_op(loop)
