"""``tile-fuse{outer=A inner=B [fused=A_B] [kernel=K]}`` and ``tile-fuse{loop=A [kernel=K]}``:
fuse two nested ``tile.for`` loops into one, or a loop into the primitives of its body.

**Two loops** (swAutoDNN's fusion of two loops, 004 L1482; FlexTensor's ``fuse``, 001 eq 4.3,
L1371: ``l <0, f1*f2, 1> = fuse(l1 <0, f1, 1>, l2 <0, f2, 1>)``; FT-1: ``fuse(<0,4,1>, <0,8,1>)
-> <0,32,1>``)::

    tile.for %a = LA to UA step SA name "A" {           tile.for %A_B = 0 to TA*TB step 1 name "A_B" {
      tile.for %b = LB to UB step SB name "B" {   ==>     %q = arith.divui %A_B, %cTB : index
        body(%a, %b)                                        %r = arith.remui %A_B, %cTB : index
      }                                                     %a = q*SA + LA ; %b = r*SB + LB
    }                                                       body(%a, %b)
                                                          }

(TA, TB the trip counts; the multiplications and additions are left out when SA = 1 / LA = 0.)
``B`` must be the only op of ``A``'s body apart from pure ``index`` arithmetic, which is sunk
into the fused body. The fused loop visits the iterations in the same order, so fusion never
changes what the kernel computes; it is the single (M, N) block loop graph-to-tile builds for
square GEMMs (``cMN``), whose one loop lets tile-to-loop's Alg. 8 prefetch across every block.

**A loop into its primitives** (swAutoDNN's ``fuse(cCo_out, "op1", inM)``, 004 L1441: the loop
disappears and the primitive's M/N/K grows, L1482): ``loop=A`` removes loop A and makes every
primitive of its body do all of A's iterations at once -- moves of consecutive windows become
one larger move, element-wise maps and GEMMs work on tiles T times larger (T = A's trip count).
The analysis and its legality rules are in :mod:`taihu.passes.tile.grow`; the verifiers then
decide whether the larger tiles are legal (e.g. the LDM footprint), and their rule is reported.
Not expressible (refused with the reason): windows that overlap or leave gaps between
iterations (e.g. a convolution's sliding input rows), window/reduction maps, ``tile.unfold``,
im2col/Winograd, a GEMM that does not depend on the loop.

Options: ``outer`` and ``inner`` (two-loop form) or ``loop`` (into the primitives), each a
loop's ``name`` or its iterator's SSA name; ``fused``: the fused loop's name (default ``A_B``);
``kernel`` restricts the rewrite to one ``tile.kernel`` (default: every kernel with the loops).

Errors (one line naming the loop): missing/contradictory options, no such loop, B not perfectly
nested in A, a fused name already used, a loop that cannot be fused into its primitives (why),
a result the verifiers reject (their rule).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from taihu.dialects import tile
from taihu.passes.tile.common import (
    fail,
    find_loops,
    index_const,
    loop_label,
    loop_name,
    only_inner_loop,
    verify_kernel,
    walk_ops,
)
from taihu.passes.tile.grow import Refusal, apply_grow, plan_grow

__all__ = ["TileFusePass", "fuse_loops"]

NAME = "tile-fuse"


class _Consts:
    """``index`` constants placed before ``anchor``, one per value."""

    def __init__(self, anchor: tile.ForOp):
        self.anchor = anchor
        self.made: dict[int, SSAValue] = {}

    def __call__(self, value: int) -> SSAValue:
        if value not in self.made:
            c = index_const(value)
            block = self.anchor.parent_block()
            assert block is not None
            block.insert_op_before(c, self.anchor)
            self.made[value] = c.result
        return self.made[value]


def _recover(fused: tile.ForOp, part: SSAValue, loop: tile.ForOp, const: _Consts) -> SSAValue:
    """``part * step + lb`` of ``loop`` inside ``fused``."""
    v = part
    if loop.step_value != 1:
        mul = arith.MuliOp(v, const(loop.step_value))
        fused.body.block.add_op(mul)
        v = mul.result
    if loop.lb_value != 0:
        add = arith.AddiOp(v, const(loop.lb_value))
        fused.body.block.add_op(add)
        v = add.result
    return v


def fuse_loops(outer: tile.ForOp, inner: tile.ForOp, name: str) -> tile.ForOp:
    """Fuse the perfectly nested ``inner`` into ``outer`` (module docstring); returns the loop."""
    ta, tb = outer.trip_count, inner.trip_count
    fused = tile.ForOp(0, ta * tb, 1, name=name)
    fused.attributes |= inner.attributes | outer.attributes
    fused.iv.name_hint = name if fused.iv.is_valid_name(name) else None
    block = outer.parent_block()
    assert block is not None
    const = _Consts(outer)
    q = arith.DivUIOp(fused.iv, const(tb))
    r = arith.RemUIOp(fused.iv, const(tb))
    fused.body.block.add_ops([q, r])
    a = _recover(fused, q.result, outer, const)
    b = _recover(fused, r.result, inner, const)
    a.name_hint = outer.iv.name_hint
    b.name_hint = inner.iv.name_hint
    for op in list(outer.body.block.ops) + list(inner.body.block.ops):
        if op is inner:
            continue
        op.detach()
        fused.body.block.add_op(op)
    outer.iv.replace_all_uses_with(a)
    inner.iv.replace_all_uses_with(b)
    block.insert_op_before(fused, outer)
    block.erase_op(outer)
    return fused


@dataclass(frozen=True)
class TileFusePass(ModulePass):
    """Fuse two nested loops, or a loop into its primitives (module docstring)."""

    name = "tile-fuse"

    outer: str = ""
    inner: str = ""
    fused: str = ""
    loop: str = ""
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.loop and (self.outer or self.inner):
            raise fail(NAME, "options", "give either loop=A (into the primitives) or outer=A inner=B, not both")
        if self.loop:
            self._into_primitives(op)
            return
        if not (self.outer and self.inner):
            raise fail(NAME, "options", "give outer=A inner=B (two loops) or loop=A (a loop into its primitives)")
        self._two_loops(op)

    def _two_loops(self, module: ModuleOp) -> None:
        fused_name = self.fused or f"{self.outer}_{self.inner}"
        for outer in find_loops(NAME, module, self.kernel, self.outer, "outer"):
            where = loop_label(outer)
            inner, blocker = only_inner_loop(outer)
            if inner is None or loop_name(inner) != self.inner:
                if inner is not None:
                    why = f"its body is loop '{loop_name(inner)}'"
                elif blocker is not None:
                    why = f"'{blocker.name}' sits beside the loops in its body (only index arithmetic may)"
                else:
                    why = "its body has no loop"
                raise fail(NAME, where, f"loop '{self.inner}' is not perfectly nested in it: {why}")
            k = tile.enclosing_kernel(outer)
            assert k is not None
            taken = {loop_name(o) for o in walk_ops(k.body.block)
                     if isinstance(o, tile.ForOp) and o is not outer and o is not inner}
            if fused_name in taken:
                raise fail(NAME, where, f"the kernel already has a loop named '{fused_name}' (choose fused=)")
            fuse_loops(outer, inner, fused_name)

    def _into_primitives(self, module: ModuleOp) -> None:
        for lp in find_loops(NAME, module, self.kernel, self.loop):
            where = loop_label(lp)
            k = tile.enclosing_kernel(lp)
            assert k is not None
            try:
                plan = plan_grow(lp)
            except Refusal as e:
                raise fail(NAME, where, f"cannot fuse the loop into its primitives: {e}") from None
            try:
                apply_grow(plan)
            except VerifyException as e:  # a grown buffer type itself
                raise fail(NAME, where, f"the result is not a legal tile program: {e}") from None
            verify_kernel(NAME, k, where)
