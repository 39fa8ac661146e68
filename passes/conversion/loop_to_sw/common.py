"""Shared helpers of ``convert-loop-to-sw``: symbol names, the pass diagnostic, element sizes,
and construction of the i64 ``arith`` ops and register instructions without IRDL's constructor
checks (the module is verified after the pass)."""

from __future__ import annotations

import functools
import re

from collections.abc import Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import sw

_NAME_OK = re.compile(r"[^A-Za-z0-9_.]")


def sanitize(name: str) -> str:
    """A symbol name from a graph/kernel name: characters outside ``[A-Za-z0-9_.]`` -> ``_``."""
    s = _NAME_OK.sub("_", name) or "_"
    return s


@functools.cache
def int_attr(v: int) -> IntegerAttr:
    """Shared ``IntegerAttr(v, i64)`` (attributes are immutable; building one is slow)."""
    return IntegerAttr(v, i64)


_NO_OVERFLOW = arith.IntegerOverflowAttr("none")
_CMP = {name: IntegerAttr(i, i64) for i, name in enumerate(("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"))}


def int_binop(cls: type[Operation], a: SSAValue, b: SSAValue) -> Operation:
    """``cls(a, b)`` on i64 (``arith.addi``/``muli``/``andi``/``divui``/``remui``...) without
    IRDL's constructor checks (shared property attributes; the module is verified after the pass)."""
    return cls.create(operands=[a, b], result_types=[i64], properties=_binop_props(cls))


@functools.cache
def _binop_props(cls: type[Operation]) -> dict[str, Attribute]:
    has_flags = "overflowFlags" in cls.get_irdl_definition().properties  # type: ignore[attr-defined]
    return {"overflowFlags": _NO_OVERFLOW} if has_flags else {}


def reg_instr(cls: type[Operation], properties: dict[str, Attribute]) -> Operation:
    """A new register instruction (operand-less, result-less ``sw`` op) of class ``cls``
    holding ``properties`` (taken over): :func:`taihu.dialects.sw.new_instr`, the same op as
    ``cls.create(properties=properties)`` at ~1/10 of the cost (82 % of the ops this pass
    builds are such instructions). Not verified (the module is verified after the pass)."""
    return sw.new_instr(cls, properties)


def cmpi(a: SSAValue, b: SSAValue, predicate: str) -> Operation:
    """``arith.cmpi predicate, a, b`` (i1) without IRDL's constructor checks."""
    return arith.CmpiOp.create(operands=[a, b], result_types=[i1], properties={"predicate": _CMP[predicate]})


def yield_op(*values: SSAValue) -> scf.YieldOp:
    """``scf.yield values`` without IRDL's constructor checks."""
    return scf.YieldOp.create(operands=values)


def if_op(cond: SSAValue, then_ops: Sequence[Operation], else_ops: Sequence[Operation] = ()) -> scf.IfOp:
    """``scf.if cond`` without results: ``then_ops`` then ``scf.yield``, else ``else_ops`` then
    ``scf.yield``; without IRDL's constructor checks."""
    return scf.IfOp.create(operands=[cond], regions=[Region(Block([*then_ops, yield_op()])),
                                                     Region(Block([*else_ops, yield_op()]))])


def array_barrier() -> sw.BarrierOp:
    """``sw.barrier`` of the whole CPE array (scope ``array``)."""
    return sw.BarrierOp.create(properties={"scope": _ARRAY_SCOPE})


_ARRAY_SCOPE = sw.BarrierScopeAttr(sw.BarrierScope.ARRAY)


def fail(op: Operation | None, msg: str) -> DiagnosticException:
    where = f"'{op.name}': " if op is not None else ""
    return DiagnosticException(f"convert-loop-to-sw: {where}{msg}")


def elem_bytes(t: MemRefType) -> int:
    et = t.get_element_type()
    bw = getattr(et, "bitwidth", None)
    if bw is None:
        bw = getattr(getattr(et, "width", None), "data", None)
    if not bw:
        raise fail(None, f"unsupported element type {et}")
    return bw // 8


def const_index(v: SSAValue) -> int | None:
    o = v.owner
    if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr):
        return o.value.value.data
    return None
