"""The ``sw.kernel`` body being built from one ``loop.spmd`` (``convert-loop-to-sw``):
:class:`SwKernelBuilder`, the insertion point, value map and i64 helpers that the op lowerings
(:mod:`.kernel`, :mod:`.gemm`, :mod:`.maps`) share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from taihu.dialects import loop, sw
from taihu.target.machine import Machine

from .common import const_index, fail, int_attr, int_binop


@dataclass
class SwKernelBuilder:
    """The ``sw.kernel`` body of one ``loop.spmd`` under construction (the base of
    :class:`~taihu.passes.conversion.loop_to_sw.kernel.KernelLowering`).

    Public helpers for the op lowerings (:mod:`.gemm`, :mod:`.maps`): :meth:`addr` (i64 LDM
    address of a buffer operand), :meth:`value` (the i64 value of an index operand),
    :meth:`const` (a kernel-level i64 constant), :meth:`emit` (append an op at the insertion
    point ``block``), ``row`` / ``col`` / ``cpe`` (i64 mesh coordinates), ``n_microkernels``
    (micro-kernels built so far, for their names), ``machine`` (the module's target,
    :func:`taihu.dialects.target.machine_of`, computed once per pass run)."""

    spmd: loop.SpmdOp
    kernel: sw.KernelOp
    machine: Machine
    vmap: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.top = self.kernel.body.block
        self.block = self.top
        self._consts: dict[int, SSAValue] = {}
        self._cpe: SSAValue | None = None
        self.n_microkernels = 0
        for a, b in zip(self.spmd.memref_args, self.kernel.body.block.args):
            self.vmap[a] = b
            b.name_hint = a.name_hint
        r = self.emit(sw.RowIdOp.build(result_types=[i64]))
        c = self.emit(sw.ColIdOp.build(result_types=[i64]))
        r.results[0].name_hint, c.results[0].name_hint = "row", "col"
        self.vmap[self.spmd.row] = self.row = r.results[0]
        self.vmap[self.spmd.col] = self.col = c.results[0]

    # -- helpers for op lowerings ------------------------------------------------------------
    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, v: int) -> SSAValue:
        """A kernel-level i64 constant (hoisted to the top of the kernel, shared)."""
        c = self._consts.get(v)
        if c is None:
            op = arith.ConstantOp.create(properties={"value": int_attr(v)}, result_types=[i64])
            op.result.name_hint = f"c{v}" if v >= 0 else f"cm{-v}"
            Rewriter.insert_op(op, InsertPoint.at_start(self.top))
            c = self._consts[v] = op.result
        return c

    @property
    def cpe(self) -> SSAValue:
        if self._cpe is None:
            op = sw.CpeIdOp.build(result_types=[i64])
            op.results[0].name_hint = "cpe"
            Rewriter.insert_op(op, InsertPoint.at_start(self.top))
            self._cpe = op.results[0]
        return self._cpe

    def value(self, v: SSAValue) -> SSAValue:
        """The sw value of a loop-level value (index -> i64, buffer -> LDM address)."""
        try:
            return self.vmap[v]
        except KeyError:
            raise fail(v.owner if isinstance(v.owner, Operation) else None,
                       f"value %{v.name_hint or '?'} used before its definition was lowered") from None

    def addr(self, v: SSAValue) -> SSAValue:
        """i64 LDM byte address of the buffer operand ``v`` (a single-slot ``!loop.ldm``)."""
        return self.value(v)

    def const_value(self, v: SSAValue) -> int | None:
        """The integer of a kernel-level constant made by :meth:`const`, else None."""
        o = v.owner
        if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr) and o.value.type == i64:
            return o.value.value.data
        return None

    def add(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        """``a + b`` in i64 (constants folded)."""
        ca = self.const_value(a)
        cb = b if isinstance(b, int) else self.const_value(b)
        if ca is not None and cb is not None:
            return self.const(ca + cb)
        if cb == 0:
            return a
        if ca == 0 and not isinstance(b, int):
            return b
        return self.emit(int_binop(arith.AddiOp, a, self.const(b) if isinstance(b, int) else b)).results[0]

    def mul(self, a: SSAValue, b: int) -> SSAValue:
        """``a * b`` in i64 (constants folded)."""
        ca = self.const_value(a)
        if ca is not None:
            return self.const(ca * b)
        if b == 1:
            return a
        if b == 0:
            return self.const(0)
        return self.emit(int_binop(arith.MuliOp, a, self.const(b))).results[0]

    def linear(self, terms: Sequence[tuple[SSAValue, int]], base: SSAValue | None = None) -> SSAValue:
        """``base + sum(value * factor)`` in i64; ``terms`` are loop-level index values (constants
        folded), ``base`` an sw value."""
        cst = 0
        acc = base
        for v, f in terms:
            c = const_index(v)
            if c is not None:
                cst += c * f
                continue
            t = self.mul(self.value(v), f)
            acc = t if acc is None else self.add(acc, t)
        if acc is None:
            return self.const(cst)
        return self.add(acc, cst)
