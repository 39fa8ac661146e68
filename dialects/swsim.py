"""The ``swsim`` dialect: the runnable, self-contained form of an ``sw`` module.

``sw-to-swsim`` turns an ``sw`` module into this form (``taihu-run`` executes it with the
core-group simulator of ``backends/sim``)::

    builtin.module {
      swsim.target "sw26010.toml" {f_clk_ghz = 1.45 : f64, dma_latency = 200 : i64, ...,
                                   instructions = {vmad = {latency = 7 : i64, pipes = "P0"}, ...}}
      sw.global @A : tensor<64x64xf64> io input
      sw.kernel @k(%a : i64) attributes {swsim.ldm_high_water = 4096 : i64, swsim.reply_slots = 1 : i64} {
        %buf = swsim.ldm_addr 0 size 4096          // concrete LDM byte address (was sw.ldm_alloc)
        %rw = swsim.reply_slot 0                   // reply-word slot (was sw.reply_alloc)
        sw.dma_get %a -> %buf, %rw size 4096
        ...
      }
      func.func @main() { ... sw.spawn @k(%p) ... sw.join ... }
    }

* ``swsim.target``: the machine description bound to the module — every parameter of
  ``target/configs/*.toml`` (spec sw26010-model.md §3 and Table 3.2) as a dictionary, plus the
  name of the file it came from. Verified by the same validation as the TOML loader.
* ``swsim.ldm_addr A size S``: an LDM buffer at byte address ``A`` of ``S`` bytes (the simulator
  checks DMA transfers against it, spec §4.3 rule 8). Verified: inside a ``sw.kernel``,
  ``0 <= A``, ``A + S <= ldm_bytes``.
* ``swsim.reply_slot N``: reply word number ``N`` of the CPE (a counter in LDM, 004 L487).
"""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import (
    I64,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Dialect, Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.utils.exceptions import VerifyException

from taihu.dialects.target import BindsMachine, machine_from_dict, machine_of, machine_to_dict
from taihu.target.machine import Machine, MachineConfigError
from taihu.dialects.sw import KernelOp, ReplyType, enclosing_kernel

@functools.lru_cache(maxsize=16)
def _machine_of(machine: DictionaryAttr, source: str) -> Machine:
    return machine_from_dict(machine, source)


class _TargetBinding(BindsMachine):
    """``swsim.target`` binds the machine of its module (:func:`taihu.dialects.target.machine_of`)."""

    def machine(self, op: Operation) -> Machine:
        assert isinstance(op, TargetOp)
        return op.get_machine()


@irdl_op_definition
class TargetOp(IRDLOperation):
    """``swsim.target "file.toml" {params}``: the machine the module runs on (one per module)."""

    name = "swsim.target"
    traits = traits_def(_TargetBinding())
    source = prop_def(StringAttr)
    machine = prop_def(DictionaryAttr)
    assembly_format = "$source $machine attr-dict"

    def __init__(self, m: Machine):
        import os

        super().__init__(properties={"source": StringAttr(os.path.basename(m.source)),
                                     "machine": machine_to_dict(m)})

    def get_machine(self) -> Machine:
        """The bound :class:`Machine`, validated; raises ``MachineConfigError``.

        Memoised on the (hashable, immutable) machine attribute and source name: verifying a
        lowered network asks for it once per ``swsim.ldm_addr`` (thousands of times), and
        validating the dictionary costs ~1 ms. ``Machine`` is a frozen dataclass, so sharing it is
        safe; invalid descriptions are not cached and raise on every call.
        """
        return _machine_of(self.machine, self.source.data)

    def verify_(self) -> None:
        try:
            self.get_machine()
        except MachineConfigError as e:
            raise VerifyException(f"swsim.target: invalid machine description: {e}") from None
        parent = self.parent_op()
        if parent is not None:
            others = [o for o in parent.regions[0].block.ops if isinstance(o, TargetOp)]
            if len(others) > 1:
                raise VerifyException("swsim.target: a module binds exactly one machine")


@irdl_op_definition
class LdmAddrOp(IRDLOperation):
    """``%b = swsim.ldm_addr A size S``: the concrete LDM buffer ``[A, A + S)`` (bytes)."""

    name = "swsim.ldm_addr"
    address = prop_def(IntegerAttr[I64])
    bytes = prop_def(IntegerAttr[I64])
    result = result_def(i64)
    assembly_format = "$address `size` $bytes attr-dict"

    def verify_(self) -> None:
        if enclosing_kernel(self) is None:
            raise VerifyException("swsim.ldm_addr must be inside a sw.kernel")
        a, s = self.address.value.data, self.bytes.value.data
        try:
            limit = machine_of(self).ldm_bytes
        except MachineConfigError as e:
            raise VerifyException(f"swsim.ldm_addr: the module's machine is invalid: {e}") from None
        if a < 0 or s <= 0 or a + s > limit:
            raise VerifyException(
                f"swsim.ldm_addr: buffer [{a}, {a + s}) does not fit in the {limit}-byte LDM"
            )


@irdl_op_definition
class ReplySlotOp(IRDLOperation):
    """``%rw = swsim.reply_slot N``: reply word ``N`` of the executing CPE."""

    name = "swsim.reply_slot"
    slot = prop_def(IntegerAttr[I64])
    result = result_def(ReplyType())
    assembly_format = "$slot attr-dict"

    def verify_(self) -> None:
        if enclosing_kernel(self) is None:
            raise VerifyException("swsim.reply_slot must be inside a sw.kernel")
        if self.slot.value.data < 0:
            raise VerifyException("swsim.reply_slot: slot must be >= 0")


def kernel_ldm_high_water(k: KernelOp) -> int:
    """LDM bytes used by a converted kernel (``swsim.ldm_high_water`` attribute or computed)."""
    a = k.attributes.get("swsim.ldm_high_water")
    if isinstance(a, IntegerAttr):
        return a.value.data
    return max((o.address.value.data + o.bytes.value.data for o in k.walk() if isinstance(o, LdmAddrOp)),
               default=0)


Swsim = Dialect("swsim", [TargetOp, LdmAddrOp, ReplySlotOp])

__all__ = ["Swsim", "TargetOp", "LdmAddrOp", "ReplySlotOp", "machine_to_dict", "machine_from_dict",
           "kernel_ldm_high_water"]
