"""``tile-reorder{loops=A,B,... [kernel=K]}``: permute a perfect nest of ``tile.for`` loops.

swAutoDNN's loop reorder (004 L1482: the ``for`` nodes of the AST are re-ordered; DSL
``reorder({cRo, cCo_out, cKr, cKc, cCo_in})``, L1440) and FlexTensor's ``reorder`` (001 Table 4.1,
L1353; with ``split`` it makes the tiling of eq 4.4-4.5, L1375-1379)::

    tile.for %a ... name "A" {                 tile.for %b ... name "B" {
      %t = arith.addi %a, %c1 : index            tile.for %a ... name "A" {
      tile.for %b ... name "B" {       ==>          %t = arith.addi %a, %c1 : index
        body(%a, %b, %t)                           body(%a, %b, %t)
      }                                          }
    }                                          }

``loops`` lists every loop of the nest, outermost first in the *new* order. The listed loops
must form a perfect nest: each one's body is the next loop plus, at most, pure ``index``
arithmetic (``arith.constant/addi/subi/muli/divui/remui`` on index values, e.g. the ``i =
i_o + i_i`` of ``tile-split``), which is sunk into the innermost body; any other op between two
listed loops is refused, naming it.

Legality (:func:`taihu.passes.tile.deps.reorder_hazard`; conservative, a refusal names the
buffer or memref and why): every tile buffer of the body is read-only, private to an iteration,
or only accumulated into by ``tile.gemm`` (a reduction such as the kernel rows/columns of an
implicit convolution: its result is the same sum in any order, up to the reassociation of the
fp64 additions); no main-memory datum is both read and written in the body; the windows stored
by different iterations are disjoint. So a K loop accumulating into an LDM-resident C can move
freely among loops that only accumulate into that same C, whereas a C that is filled or stored
between the loops makes the nest imperfect and is refused.

Options: ``loops`` (required, >= 2 distinct names: a loop's ``name`` or its iterator's SSA
name), ``kernel`` (default: every kernel that has the loops; a kernel with only some of them is
an error).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from taihu.dialects import tile
from taihu.passes.tile.common import (
    fail,
    kernel_label,
    loop_label,
    loop_name,
    only_inner_loop,
    select_kernels,
    walk_ops,
)
from taihu.passes.tile.deps import reorder_hazard

__all__ = ["TileReorderPass", "perfect_nest", "reorder_nest"]

NAME = "tile-reorder"


def perfect_nest(outermost: tile.ForOp, depth: int) -> tuple[list[tile.ForOp], Operation | None]:
    """The ``depth`` loops of the perfect nest rooted at ``outermost``, or the loops found so far
    and the op that breaks perfect nesting (None when the nest is simply shallower)."""
    nest = [outermost]
    while len(nest) < depth:
        inner, blocker = only_inner_loop(nest[-1])
        if inner is None:
            return nest, blocker
        nest.append(inner)
    return nest, None


def reorder_nest(nest: list[tile.ForOp], order: list[int]) -> list[tile.ForOp]:
    """Rebuild the perfect ``nest`` (outermost first) with loop ``nest[order[0]]`` outermost,
    ``nest[order[1]]`` next, ...; the index ops between the loops are sunk (in their order)
    to the top of the innermost body. Returns the new loops, outermost first."""
    new: list[tile.ForOp] = []
    for i in order:
        old = nest[i]
        lp = tile.ForOp(old.lb_value, old.ub_value, old.step_value, name=loop_name(old) if old.iter_name else None)
        lp.attributes |= old.attributes
        lp.iv.name_hint = old.iv.name_hint
        if new:
            new[-1].body.block.add_op(lp)
        new.append(lp)
    body = new[-1].body.block
    for old in nest:
        for op in list(old.body.block.ops):
            if old is not nest[-1] and isinstance(op, tile.ForOp):
                continue
            op.detach()
            body.add_op(op)
    for i, old in zip(order, new):
        nest[i].iv.replace_all_uses_with(old.iv)
    top = nest[0]
    block = top.parent_block()
    assert block is not None
    block.insert_op_before(new[0], top)
    block.erase_op(top)  # the old loops are empty shells now
    return new


@dataclass(frozen=True)
class TileReorderPass(ModulePass):
    """Permute a perfect nest of named ``tile.for`` loops (module docstring)."""

    name = "tile-reorder"

    loops: tuple[str, ...] = ()
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = list(self.loops)
        if len(names) < 2:
            raise fail(NAME, "options", f"option 'loops' needs at least two loop names, got '{','.join(names)}'")
        if len(set(names)) != len(names):
            raise fail(NAME, "options", f"option 'loops' names a loop twice: {', '.join(names)}")
        done = 0
        for k in select_kernels(NAME, op, self.kernel):
            found = {n: [lp for lp in walk_ops(k.body.block) if isinstance(lp, tile.ForOp) and loop_name(lp) == n]
                     for n in names}
            present = [n for n in names if found[n]]
            if not present:
                continue
            missing = [n for n in names if not found[n]]
            if missing:
                raise fail(NAME, kernel_label(k), f"no tile.for named {', '.join(repr(n) for n in missing)}")
            dup = [n for n in names if len(found[n]) > 1]
            if dup:
                raise fail(NAME, kernel_label(k), f"several tile.for loops are named '{dup[0]}'; name them apart")
            loops = [found[n][0] for n in names]
            outer = [lp for lp in loops if all(lp is o or lp.is_ancestor(o) for o in loops)]
            if not outer:
                raise fail(NAME, kernel_label(k), f"the loops {', '.join(names)} are not nested in one another")
            nest, blocker = perfect_nest(outer[0], len(names))
            where = loop_label(outer[0])
            if len(nest) < len(names) or any(loop_name(lp) not in names for lp in nest):
                stray = next((lp for lp in nest if loop_name(lp) not in names), None)
                if stray is not None:
                    why = f"loop '{loop_name(stray)}' lies between the listed loops (list it too)"
                elif blocker is not None:
                    why = (f"'{blocker.name}' between loop '{loop_name(nest[-1])}' and the loops inside it "
                           "(only index arithmetic may sit between the loops of a perfect nest)")
                else:
                    why = f"loop '{loop_name(nest[-1])}' has no loop inside it"
                raise fail(NAME, where, f"the loops {', '.join(names)} are not a perfect nest: {why}")
            order = [next(i for i, lp in enumerate(nest) if loop_name(lp) == n) for n in names]
            done += 1
            if order == list(range(len(nest))):
                continue
            hazard = reorder_hazard(nest)
            if hazard is not None:
                raise fail(NAME, where, f"reordering to {', '.join(names)} is not provably safe: {hazard}")
            reorder_nest(nest, order)
        if not done:
            raise fail(NAME, "module", f"no tile.kernel has the loops {', '.join(names)}")
