"""``sw-to-swsim``: bind a machine and make every CPE resource concrete.

For each ``sw.kernel``: every ``sw.ldm_alloc`` becomes ``swsim.ldm_addr A size S`` at the offset
given by ``KernelOp.ldm_layout()`` (bump allocation in program order, each aligned to its
``align``; ``sw.ldm_free`` is dropped — space is not reused), every ``sw.reply_alloc`` becomes
``swsim.reply_slot N`` (slots numbered in program order). The kernel gets the attributes
``swsim.ldm_high_water`` (bytes) and ``swsim.reply_slots``. The total must fit in the machine's
``ldm_user_bytes`` (57 344 B by default, 64 KB hard limit 004 L460): otherwise the pass fails
with a diagnostic listing the allocations. The machine is the module's ``target.machine``
(:func:`~taihu.dialects.target.machine_of`; ``sw26010`` when the module has none) or, when the
option ``machine`` names one (shipped name or TOML path), that machine, which then also becomes
the module's ``target.machine``. A ``swsim.target`` op carrying every parameter of the machine is
inserted at the top of the module (replacing an existing one): the swsim form is self-contained.

Example: ``taihu-opt prog.mlir -p 'sw-to-swsim{machine=sw26010pro}'``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import sw
from taihu.dialects.swsim import LdmAddrOp, ReplySlotOp, TargetOp
from taihu.dialects.target import MODULE_ATTR, machine_attr, machine_of
from taihu.target.machine import Machine, MachineConfigError, resolve_machine


_REPLY = sw.ReplyType()


class _ConcretizeKernel(RewritePattern):
    # (the swsim ops are built with create(): no IRDL constructor checks, the module is
    # verified after the pipeline)
    def __init__(self, machine: Machine) -> None:
        self.machine = machine

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sw.KernelOp, rewriter: PatternRewriter) -> None:
        if "swsim.ldm_high_water" in op.attributes:
            return
        slots = op.ldm_layout(self.machine)
        used = 0 if not slots else slots[-1].offset + slots[-1].bytes
        if used > self.machine.ldm_user_bytes:
            listing = ", ".join(f"%{s.name} {s.bytes} B at {s.offset}" for s in slots)
            raise DiagnosticException(
                f"sw-to-swsim: kernel @{op.sym_name.data} needs {used} bytes of LDM > "
                f"ldm_user_bytes = {self.machine.ldm_user_bytes}: {listing}"
            )
        for s in slots:
            new: Operation = LdmAddrOp.create(
                properties={"address": IntegerAttr(s.offset, i64), "bytes": IntegerAttr(s.bytes, i64)},
                result_types=[i64],
            )
            new.results[0].name_hint = s.op.result.name_hint
            rewriter.replace(s.op, new)
        n_reply = 0
        for o in list(sw.walk_control(op)):
            if isinstance(o, sw.ReplyAllocOp):
                slot: Operation = ReplySlotOp.create(properties={"slot": IntegerAttr(n_reply, i64)},
                                                     result_types=[_REPLY])
                slot.results[0].name_hint = o.result.name_hint
                rewriter.replace(o, slot)
                n_reply += 1
            elif isinstance(o, sw.LdmFreeOp):
                rewriter.erase_op(o)
        op.attributes["swsim.ldm_high_water"] = IntegerAttr(used, i64)
        op.attributes["swsim.reply_slots"] = IntegerAttr(n_reply, i64)


@dataclass(frozen=True)
class SwToSwsimPass(ModulePass):
    """Lower an ``sw`` module to the runnable ``swsim`` form (see module docstring).

    Option ``machine``: a shipped name or a machine TOML path ("" = the module's target).
    """

    name = "sw-to-swsim"

    machine: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            if self.machine:
                m = resolve_machine(self.machine)
                op.attributes[MODULE_ATTR] = machine_attr(m)
            else:
                m = machine_of(op)
        except MachineConfigError as e:
            raise DiagnosticException(f"sw-to-swsim: {e}") from None
        # kernels are top-level ops: apply the pattern to them directly (a walker would queue
        # every register instruction of every micro-kernel body)
        pattern = _ConcretizeKernel(m)
        for kernel in [o for o in op.body.block.ops if isinstance(o, sw.KernelOp)]:
            pattern.match_and_rewrite(kernel, PatternRewriter(kernel))
        block = op.body.block
        for o in list(block.ops):
            if isinstance(o, TargetOp):
                o.detach()
                o.erase()
        target = TargetOp(m)
        if block.first_op is None:
            block.add_op(target)
        else:
            block.insert_op_before(target, block.first_op)


@dataclass(frozen=True)
class ConvertSwToSwsimPass(SwToSwsimPass):
    """``convert-sw-to-swsim``: ``sw-to-swsim`` under the ``convert-X-to-Y`` name of the other
    conversions."""

    name = "convert-sw-to-swsim"
