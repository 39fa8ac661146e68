"""The ``convert-tile-to-loop`` pass (package docstring): every ``tile.kernel`` -> ``loop.spmd``,
structurally identical kernels lowered once."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException, VerifyException

from taihu.dialects import loop, tile
from taihu.dialects.target import machine_of
from taihu.passes.conversion.kernel_key import structural_key
from taihu.target.machine import MachineConfigError

from .common import fail
from .kernel import clone_lowered, lower_kernel


@dataclass(frozen=True)
class ConvertTileToLoopPass(ModulePass):
    """Lower every ``tile.kernel`` to a ``loop.spmd`` (package docstring).

    Options: ``double_buffer`` (bool, default true), ``max_unrolled_dmas`` (int, default 64),
    ``rep_bcast`` (bool, default true)."""

    name = "convert-tile-to-loop"

    double_buffer: bool = True
    max_unrolled_dmas: int = 64
    rep_bcast: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            machine = machine_of(op)
        except MachineConfigError as e:
            raise PassFailedException(f"convert-tile-to-loop: {e}") from None
        kernels = [k for k in op.walk() if isinstance(k, tile.KernelOp)]
        lowered: dict[tuple, loop.SpmdOp] = {}  # structural key -> first lowering
        for k in kernels:
            key = structural_key(k)
            first = lowered.get(key)
            if first is not None:
                spmd = clone_lowered(first, k)
            else:
                spmd = lower_kernel(k, self, machine)
                lowered[key] = spmd
            parent = k.parent_block()
            assert parent is not None
            parent.insert_op_before(spmd, k)
            # the LDM footprint (the module is verified as a whole after the pass); the full
            # verify_ (operand types, isolation walk; in the module: for its machine) only for
            # its message on overflow
            if first is None and spmd.ldm_bytes() > machine.ldm_user_bytes:
                try:
                    spmd.verify_()
                except VerifyException as e:
                    raise fail(k, f"the lowered kernel does not verify: {e}") from e
            k.detach()
            k.erase(safe_erase=False)
