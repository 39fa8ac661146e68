"""The ``convert-loop-to-sw`` pass (package docstring): :func:`.host.lower_module` on the module."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from .host import lower_module


@dataclass(frozen=True)
class ConvertLoopToSwPass(ModulePass):
    """``convert-loop-to-sw``: loop level + host program -> ``sw`` (see package docstring)."""

    name = "convert-loop-to-sw"

    #: lower structurally identical kernels once and spawn the shared ``sw.kernel`` (module
    #: docstring, "Kernel deduplication"); ``false``: one ``sw.kernel`` per ``loop.spmd``
    dedup_kernels: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, self.dedup_kernels)
