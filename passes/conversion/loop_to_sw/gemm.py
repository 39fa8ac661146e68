"""Register micro-kernels of the mesh GEMM (placeholder until the generator lands)."""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


def lower(k, op: Operation) -> None:
    raise DiagnosticException(f"convert-loop-to-sw: '{op.name}': not yet lowered")
