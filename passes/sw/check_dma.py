"""``sw-check-dma``: the athread DMA rules on the static values of every DMA (issue 15).

The ``sw.dma_get`` / ``sw.dma_put`` verifiers check the descriptor (size > 0 and at most the
machine's ``ldm_bytes``, ``bsize`` dividing ``size``, a gap only with a block size, sizes, block
sizes and gaps multiples of :data:`taihu.dialects.sw.DMA_GRANULE`, ``bcast`` only for gets, its
mask). This pass checks what needs the values of the addresses, per CPE, where
:func:`taihu.passes.sw.effects.analyze` knows them statically (the CPE id, constants, loop
induction variables of known loops):

* the LDM range ``[ldm, ldm + size)`` lies inside the machine's ``ldm_bytes`` and inside the LDM
  buffer (``sw.ldm_alloc`` / ``swsim.ldm_addr``) the address is computed from (spec §4.3 rule 8);
* the main-memory range (``bsize``/``stride`` extent) lies inside the ``sw.global`` /
  ``sw.mem_alloc`` that every ``sw.spawn`` passes for the address's kernel argument (rule 8);
* both addresses are multiples of ``DMA_GRANULE`` (4 B);
* ``mode row`` is refused (the simulator runs ``pe`` and ``bcast``; spec §10);
* an RLC put does not target the sending CPE itself (spec §5 rule 2; the verifier catches it
  only when the enclosing ``scf.if`` fixes the CPE's coordinates).

The machine is the module's (``target.machine`` / ``swsim.target``). Values that are not static are
not checked. Options: none. Errors: ``DiagnosticException`` at the first offending op, naming
the CPEs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import sw
from taihu.passes.sw.effects import analyze, arg_bases, cpe_name

__all__ = ["SwCheckDmaPass"]


@dataclass(frozen=True)
class SwCheckDmaPass(ModulePass):
    """``sw-check-dma`` (module docstring). The module is not changed."""

    name = "sw-check-dma"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bases = arg_bases(op)
        for k in op.walk():
            if not isinstance(k, sw.KernelOp):
                continue
            eff = analyze(k, bases.get(k.sym_name.data, ()), dma=True)
            if not eff.dma_errors:
                continue
            issue = eff.dma_errors[0]
            cols = eff.machine.mesh_cols
            who = ", ".join(cpe_name(c, cols) for c in issue.cpes[:4])
            if len(issue.cpes) > 4:
                who += f" and {len(issue.cpes) - 4} more"
            msg = f"sw-check-dma: kernel @{k.sym_name.data}: {issue.message} (on {who})"
            issue.op.emit_error(msg, DiagnosticException(msg))
