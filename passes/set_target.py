"""``set-target``: bind the module to a machine (``#target.machine``), the first pass of a pipeline.

``taihu-opt net.mlir -p 'set-target{machine=sw26010pro}'`` sets the module attribute
``target.machine`` (:mod:`taihu.dialects.target`) that every later verifier and planner reads
(:func:`~taihu.dialects.target.machine_of`): the LDM budgets of the tilings, the DMA and RLC costs
of the analytic model, the simulator's machine. ``taihu-lower{machine=...}`` and
``taihu-run --machine`` run it first.

Option ``machine``: a shipped name (``sw26010``, ``sw26010pro``: ``target/configs/*.toml``) or the
path of a machine TOML file; ``""`` (default) keeps the module's target if it has one and
otherwise sets the default ``sw26010`` (so a lowered module always names its machine).

Errors (``DiagnosticException``, one line naming the file and key): an unknown name, an unreadable
or invalid description (:class:`~taihu.target.machine.MachineConfigError`), and a description the
lowering cannot honour (:data:`LOWERING_REQUIRES`: the mesh GEMM and the overlapping distribution
assume an 8x8 mesh, 004 L460; the register micro-kernels are written for 32 registers of 256 bits
with r31 = 0 and 4 lanes, 004 L471, L765, L821).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects.target import MODULE_ATTR, MachineAttr, machine_attr
from taihu.target.machine import DEFAULT_MACHINE_NAME, Machine, MachineConfigError, resolve_machine

__all__ = ["LOWERING_REQUIRES", "SetTargetPass", "check_lowerable"]

#: key -> (test, what the lowering needs) for the machine parameters taihu's lowering assumes
LOWERING_REQUIRES: dict[str, tuple[Callable[[int], bool], str]] = {
    "mesh_rows": (lambda v: v == 8, "8 (the mesh GEMM and the 64-way distributions assume an 8x8 mesh)"),
    "mesh_cols": (lambda v: v == 8, "8 (the mesh GEMM and the 64-way distributions assume an 8x8 mesh)"),
    "reg_bits": (lambda v: v == 256, "256 (the register micro-kernels are 4 x f64 vectors)"),
    "vec_lanes_fp32": (lambda v: v == 4, "4 (the register micro-kernels load 4 x f32 per vector)"),
    "zero_reg": (lambda v: v == 31, "31 (the micro-kernels read 0.0 from r31)"),
}


def check_lowerable(m: Machine) -> None:
    """Raise ``MachineConfigError`` naming the first key of ``m`` the lowering cannot honour."""
    for key, (ok, need) in LOWERING_REQUIRES.items():
        value = getattr(m, key)
        if not ok(value):
            raise MachineConfigError(
                f"{m.source.rsplit('/', 1)[-1]}: key {key!r}: taihu's lowering needs {need}, got {value}")


@dataclass(frozen=True)
class SetTargetPass(ModulePass):
    """Set the module's ``target.machine`` (module docstring)."""

    name = "set-target"

    machine: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        current = op.attributes.get(MODULE_ATTR)
        if not self.machine and isinstance(current, MachineAttr):
            return
        try:
            m = resolve_machine(self.machine or DEFAULT_MACHINE_NAME)
            check_lowerable(m)
            op.attributes[MODULE_ATTR] = machine_attr(m)
        except MachineConfigError as e:
            raise DiagnosticException(f"set-target: {e}") from None
