"""``tile-split{loop=NAME factor=F [outer=NAME_o] [inner=NAME_i] [kernel=K]}``: split a ``tile.for``.

swAutoDNN's loop split (004 L1482: one ``for`` node becomes two and ``i = i_out * factor + i_in``
is inserted in the inner body; DSL ``split(cCo, cCo_out, cCo_in, Sco)``, L1439) and FlexTensor's
``split`` (001 eq 4.2, L1367: ``l1 <0, end/f, 1>, l2 <0, f, 1> = split(l <0, end, 1>, f)``)::

    tile.for %i = LB to UB step S name "i" { body(%i) }
      ==>
    tile.for %i_o = LB to UB step S*F name "i_o" {
      tile.for %i_i = 0 to S*F step S name "i_i" {
        %i = arith.addi %i_o, %i_i : index
        body(%i)
      }
    }

In the trip-count view of 001 the outer loop makes T/F iterations and the inner one F (FT-1:
``split(<0,64,1>, 8)`` = ``<0,64,8>, <0,8,1>``, trip counts 8 and 8). The iterations run in the
same order as before, so the split never changes what the kernel computes; the loop's
discardable attributes go to the outer loop.

Options: ``loop`` (required) the loop's ``name`` (or its iterator's SSA name); ``factor`` F >= 1,
a divisor of the trip count T (FlexTensor prunes split factors to divisors, 001 L1440; a ragged
remainder would need a second copy of the body and is not offered); ``outer``/``inner`` the new
loops' names (default ``NAME_o`` / ``NAME_i``); ``kernel`` restricts the rewrite to one
``tile.kernel`` (default: every kernel with a loop of that name).

Errors (one line naming the loop): no such loop, several loops of that name in one kernel, F < 1,
F not dividing T, a new name already used by another loop of the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from taihu.dialects import tile
from taihu.passes.tile.common import fail, find_loops, loop_label, loop_name, walk_ops

__all__ = ["TileSplitPass", "split_loop"]

NAME = "tile-split"


def split_loop(loop: tile.ForOp, factor: int, outer_name: str, inner_name: str) -> tuple[tile.ForOp, tile.ForOp]:
    """Split ``loop`` (F = ``factor`` must divide its trip count); returns (outer, inner)."""
    lb, ub, s = loop.lb_value, loop.ub_value, loop.step_value
    outer = tile.ForOp(lb, ub, s * factor, name=outer_name)
    inner = tile.ForOp(0, s * factor, s, name=inner_name)
    outer.attributes |= loop.attributes
    outer.iv.name_hint = outer_name if outer.iv.is_valid_name(outer_name) else None
    inner.iv.name_hint = inner_name if inner.iv.is_valid_name(inner_name) else None
    outer.body.block.add_op(inner)
    iv = arith.AddiOp(outer.iv, inner.iv)
    iv.result.name_hint = loop.iv.name_hint
    inner.body.block.add_op(iv)
    for op in list(loop.body.block.ops):
        op.detach()
        inner.body.block.add_op(op)
    loop.iv.replace_all_uses_with(iv.result)
    block = loop.parent_block()
    assert block is not None
    block.insert_op_before(outer, loop)
    block.erase_op(loop)
    return outer, inner


def _divisors(t: int, shown: int = 16) -> str:
    """The divisors of ``t`` (at most ``shown`` of them, then '...')."""
    small = [d for d in range(1, int(t**0.5) + 1) if t % d == 0]
    ds = sorted(set(small + [t // d for d in small]))
    return ", ".join(map(str, ds[:shown])) + (", ..." if len(ds) > shown else "")


@dataclass(frozen=True)
class TileSplitPass(ModulePass):
    """Split a named ``tile.for`` into an outer and an inner loop (module docstring)."""

    name = "tile-split"

    loop: str = ""
    factor: int = 0
    outer: str = ""
    inner: str = ""
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = find_loops(NAME, op, self.kernel, self.loop)
        outer_name = self.outer or f"{self.loop}_o"
        inner_name = self.inner or f"{self.loop}_i"
        if outer_name == inner_name:
            raise fail(NAME, "options", f"outer and inner loops need different names, got '{outer_name}' twice")
        for lp in loops:
            where = loop_label(lp)
            t = lp.trip_count
            if self.factor < 1:
                raise fail(NAME, where, f"factor must be >= 1, got {self.factor}")
            if t % self.factor:
                raise fail(NAME, where, f"factor {self.factor} does not divide the trip count {t} "
                           f"({lp.lb_value} to {lp.ub_value} step {lp.step_value}); divisors: {_divisors(t)}")
            k = tile.enclosing_kernel(lp)
            assert k is not None
            taken = {loop_name(o) for o in walk_ops(k.body.block) if isinstance(o, tile.ForOp) and o is not lp}
            for n in (outer_name, inner_name):
                if n in taken:
                    raise fail(NAME, where, f"the kernel already has a loop named '{n}' (choose outer=/inner=)")
            split_loop(lp, self.factor, outer_name, inner_name)
