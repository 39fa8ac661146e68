"""``sw-check-deadlock``: refuse a kernel that must block, before simulating it (issue 15).

For every ``sw.kernel``, :func:`taihu.passes.sw.effects.analyze` counts per CPE (statically: trip
counts of ``scf.for`` with known bounds, conditions on the CPE id) the RLC messages delivered into
each row / column receive FIFO against the ``getr`` / ``getc`` popping them, the DMA completions
of every reply word against each ``sw.dma_wait``, and the arrivals at every barrier. In the spirit
of mlir-aie's check that every acquire of an object FIFO is matched by releases of its producer,
a CPE *must* block when

* a ``sw.dma_wait %rw, N`` asks for more completions than its DMAs on ``%rw`` (since the last
  ``sw.reply_reset``) give before the wait (a wait stalls the CPE, spec §4.3 rule 6);
* its k-th ``getr`` / ``getc`` comes after at most k - 1 messages can arrive in that FIFO, even if
  every other CPE ran to its end (a get blocks on an empty FIFO, 004 L496, spec §5 rule 5);
* its k-th arrival at a barrier has a member arriving at most k - 1 times (spec §7).

Blocked CPEs send nothing more, so the check repeats until no further CPE must block. The
diagnostic is raised at the op the first blocked CPE waits in (``taihu-opt`` prefixes its
``file:line:col``) and lists every blocked CPE with the op it waits in. A kernel whose CPEs all
finish but leave RLC messages unreceived in a FIFO is refused too (the messages would be popped by
the next kernel's gets). Nothing is claimed where a count is not statically known (a loop bound or
branch depending on a kernel argument): the check has no false positives, not full coverage
(a cycle of gets that are each matched by a put issued after the other get is not found).

Runs on ``sw`` and ``swsim`` modules; options: none. Errors: ``DiagnosticException``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import sw
from taihu.passes.sw.effects import KernelEffects, analyze, cpe_name

__all__ = ["SwCheckDeadlockPass", "deadlock_message"]


def _cpes(cpes: tuple[int, ...], cols: int, limit: int = 8) -> str:
    names = [cpe_name(c, cols) for c in cpes[:limit]]
    more = f" and {len(cpes) - limit} more" if len(cpes) > limit else ""
    return ", ".join(names) + more


def deadlock_message(eff: KernelEffects) -> str | None:
    """The diagnostic for ``eff`` (blocked CPEs, else messages never received), or None."""
    name = eff.kernel.sym_name.data
    cols = eff.machine.mesh_cols
    if eff.blocked:
        parts = [f"{_cpes(b.cpes, cols)} wait{'s' if len(b.cpes) == 1 else ''} forever in {b.op.name} "
                 f"({b.reason})" for b in eff.blocked]
        n = sum(len(b.cpes) for b in eff.blocked)
        return f"sw-check-deadlock: kernel @{name} must block ({n} CPE(s)): " + "; ".join(parts)
    if eff.leftover:
        parts = [f"{cpe_name(c, cols)} receives {got} {axis} message(s) and pops {popped}"
                 for c, axis, got, popped in eff.leftover[:8]]
        more = f" and {len(eff.leftover) - 8} more FIFOs" if len(eff.leftover) > 8 else ""
        return (f"sw-check-deadlock: kernel @{name} ends with RLC messages never received: "
                + "; ".join(parts) + more)
    return None


@dataclass(frozen=True)
class SwCheckDeadlockPass(ModulePass):
    """``sw-check-deadlock`` (module docstring). The module is not changed."""

    name = "sw-check-deadlock"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in op.walk():
            if not isinstance(k, sw.KernelOp):
                continue
            eff = analyze(k, dma=False)
            msg = deadlock_message(eff)
            if msg is None:
                continue
            at = eff.blocked[0].op if eff.blocked else k
            at.emit_error(msg, DiagnosticException(msg))
