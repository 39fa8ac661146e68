"""``tile.kernel`` -> ``loop.spmd`` (``convert-tile-to-loop``): :func:`lower_kernel` builds the
spmd of a kernel (its LDM buffers, then the body, :mod:`.body`); :func:`clone_lowered` copies
the lowering of a structurally identical kernel."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from taihu.dialects import loop, tile
from taihu.dialects.loop import LdmBufType
from taihu.target.machine import Machine

from .body import lower_block
from .common import local_buffer_shape
from .context import LowerCtx, LowerOptions
from .maps import padded_rep_buffers
from .spread import spread_gets


def _written_memrefs(region_op: Operation) -> set[SSAValue]:
    out: set[SSAValue] = set()
    for o in region_op.walk():
        if isinstance(o, tile.MoveOp) and not o.is_load:
            out.add(o.memref)
        elif isinstance(o, (tile.Im2colOp, tile.WinogradFilterOp, tile.WinogradInputOp, tile.WinogradOutputOp)):
            out.add(o.output)
    return out


def lower_kernel(k: tile.KernelOp, options: LowerOptions, machine: Machine) -> loop.SpmdOp:
    """Build the ``loop.spmd`` of a ``tile.kernel`` (not inserted) for ``machine`` (the
    module's target: the LDM budget of the task buffers of :mod:`.mem_prims`)."""
    spmd = loop.SpmdOp(k.kernel_name.data, list(k.args))
    spmd.attributes |= dict(k.attributes)
    spmd.row.name_hint = "row"
    spmd.col.name_hint = "col"
    ctx = LowerCtx(k, spmd, options, machine)
    for a, b in zip(k.body.block.args, spmd.memref_args):
        ctx.vmap[a] = b
        b.name_hint = a.name_hint
    for f in k.walk():
        if isinstance(f, tile.ForOp):
            ctx.loop_writes[f] = _written_memrefs(f)
    padded = padded_rep_buffers(k)
    for i, al in enumerate(k.allocs()):
        t = al.tile_type
        shape = padded.get(al.result, local_buffer_shape(t))
        lt = LdmBufType(shape, t.element_type, al.is_double and options.double_buffer)
        buf = ctx.new_buffer(al.result.name_hint or f"buf{i}", lt)
        ctx.ldm[al.result] = buf
    lower_block(ctx, k.body.block)
    ctx.finish()
    spread_gets(spmd)
    return spmd


def clone_lowered(first: loop.SpmdOp, k: tile.KernelOp) -> loop.SpmdOp:
    """The ``loop.spmd`` of ``k``, a kernel whose body is structurally identical to the one
    ``first`` was lowered from (:func:`~taihu.passes.conversion.kernel_key.structural_key`):
    a copy of ``first``'s body on ``k``'s operands, with ``k``'s name and attributes. The LDM
    buffers of ``k``'s allocations (the first ``loop.ldm_buffer`` ops, in allocation order) are
    renamed as :func:`lower_kernel` names them; value names stay those of ``first``."""
    spmd = loop.SpmdOp(k.kernel_name.data, list(k.args), first.body.clone())
    spmd.attributes |= dict(k.attributes)
    for a, arg in zip(k.body.block.args, spmd.memref_args):
        arg.name_hint = a.name_hint
    bufs = [o for o in spmd.body.block.ops if isinstance(o, loop.LdmBufferOp)]
    allocs = list(k.allocs())
    used: set[str] = set()
    for i, b in enumerate(bufs):
        base = (allocs[i].result.name_hint or f"buf{i}") if i < len(allocs) else b.buffer_name.data
        base = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in base) or "buf"
        nm, j = base, 1
        while nm in used:
            nm = f"{base}_{j}"
            j += 1
        used.add(nm)
        if nm != b.buffer_name.data:
            b.properties["name"] = StringAttr(nm)
            b.result.name_hint = nm
    return spmd
