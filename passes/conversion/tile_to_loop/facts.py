"""Static facts about tile-level values (``convert-tile-to-loop``): the values an ``index`` takes
(:func:`index_values`, from loop bounds and ``arith``), and where a value is used."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from taihu.dialects import tile

_MAX_ENUM = 1 << 16  # possible offsets enumerated per dim before giving up


def index_values(
    v: SSAValue, limit: int = _MAX_ENUM, iv_values: dict[tile.ForOp, list[int]] | None = None
) -> list[int] | None:
    """Superset of the values an ``index`` value takes (from ``tile.for`` bounds -- or the
    values in ``iv_values`` for the loops being lowered piecewise --, constants and
    ``arith.addi/subi/muli``, ``arith.divui/remui`` by a positive constant), sorted; None when
    unknown or larger than ``limit``."""
    owner = v.owner
    if isinstance(v, BlockArgument):
        op = owner.parent_op() if isinstance(owner, Block) else None
        if isinstance(op, tile.ForOp):
            if iv_values is not None and op in iv_values:
                return iv_values[op]
            vals = list(range(op.lb_value, op.ub_value, op.step_value))
            return vals if len(vals) <= limit else None
        return None
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return [owner.value.value.data]
    if isinstance(owner, (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivUIOp, arith.RemUIOp)):
        a, b = index_values(owner.lhs, limit, iv_values), index_values(owner.rhs, limit, iv_values)
        if a is None or b is None or len(a) * len(b) > limit * 4:
            return None
        if isinstance(owner, (arith.DivUIOp, arith.RemUIOp)) and (min(b) <= 0 or min(a) < 0):
            return None
        f: Callable[[int, int], int] = {
            arith.AddiOp: lambda x, y: x + y,
            arith.SubiOp: lambda x, y: x - y,
            arith.MuliOp: lambda x, y: x * y,
            arith.DivUIOp: lambda x, y: x // y,
            arith.RemUIOp: lambda x, y: x % y,
        }[type(owner)]
        out = sorted({f(x, y) for x in a for y in b})
        return out if len(out) <= limit else None
    r = tile.index_range(v)
    if r is not None and r[1] - r[0] < limit:
        return list(range(r[0], r[1] + 1))
    return None


def uses_in(v: SSAValue, root: Operation) -> bool:
    """Is every use of ``v`` inside ``root``?"""
    return all(root.is_ancestor(u.operation) for u in v.uses)


def touches(op: Operation, v: SSAValue) -> bool:
    return any(o is v for o in op.operands) or any(
        any(o is v for o in inner.operands) for r in op.regions for inner in r.walk()
    )
