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
from collections.abc import Mapping
from typing import Any

from xdsl.dialects.builtin import (
    I64,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from taihu.target.machine import Machine, MachineConfigError, machine_from_mapping
from taihu.dialects.sw import KernelOp, ReplyType, enclosing_kernel

_PIPE_NAMES = {(0,): "P0", (1,): "P1", (0, 1): "P0/P1"}


def machine_to_dict(m: Machine) -> DictionaryAttr:
    """Every parameter of ``m`` as a ``DictionaryAttr`` (the ``swsim.target`` payload)."""
    import dataclasses

    entries: dict[str, Attribute] = {}
    for f in dataclasses.fields(m):
        if f.name in ("instructions", "source"):
            continue
        v = getattr(m, f.name)
        if isinstance(v, bool):
            entries[f.name] = IntegerAttr(int(v), IntegerType(1))
        elif isinstance(v, int):
            entries[f.name] = IntegerAttr(v, i64)
        elif isinstance(v, float):
            entries[f.name] = FloatAttr(v, f64)
        else:
            entries[f.name] = StringAttr(str(v))
    table = {
        k: DictionaryAttr(
            {"pipes": StringAttr(_PIPE_NAMES[t.pipes]), "latency": IntegerAttr(t.latency, i64)}
            | ({"repeat": IntegerAttr(t.repeat, i64)} if t.repeat != 1 else {})
        )
        for k, t in sorted(m.instructions.items())
    }
    entries["instructions"] = DictionaryAttr(table)
    return DictionaryAttr(entries)


def _py(attr: Attribute) -> Any:
    if isinstance(attr, IntegerAttr):
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DictionaryAttr):
        return {k: _py(v) for k, v in attr.data.items()}
    raise MachineConfigError(f"unsupported machine parameter value {attr}")


def machine_from_dict(d: DictionaryAttr | Mapping[str, Any], source: str = "swsim.target") -> Machine:
    """Rebuild and validate a :class:`Machine`; raises ``MachineConfigError`` naming the key."""
    data = _py(d) if isinstance(d, DictionaryAttr) else dict(d)
    return machine_from_mapping(data, source)


@functools.lru_cache(maxsize=16)
def _machine_of(machine: DictionaryAttr, source: str) -> Machine:
    return machine_from_dict(machine, source)


@irdl_op_definition
class TargetOp(IRDLOperation):
    """``swsim.target "file.toml" {params}``: the machine the module runs on (one per module)."""

    name = "swsim.target"
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


def module_machine(op: Operation) -> Machine | None:
    """The machine of the module containing ``op`` (its ``swsim.target``), if any."""
    top = op
    while top.parent_op() is not None:
        top = top.parent_op()
    for o in top.regions[0].block.ops if top.regions else ():
        if isinstance(o, TargetOp):
            try:
                return o.get_machine()
            except MachineConfigError:
                return None
    return None


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
        m = module_machine(self)
        limit = m.ldm_bytes if m is not None else 65536
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
           "module_machine", "kernel_ldm_high_water"]
