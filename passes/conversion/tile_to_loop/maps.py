"""``tile.map`` -> ``loop.map`` (``convert-tile-to-loop``): the local buffers of the map, a
layout-changing ``copy``/``convert`` as a ``transpose``, and a ``rep`` broadcast input of a
CPE-split output as a ``loop.view`` of this CPE's block of it."""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from taihu.dialects import loop, tile
from taihu.dialects.loop import LdmBufType
from taihu.dialects.mapkind import MapKind, check_map
from taihu.dialects.tile import Dist, Layout, TileBufType

from . import dma as dmaplan
from .common import elem_name, fail, local_buffer_shape
from .context import LowerCtx


def _broadcast_slices(op: tile.MapOp, v: SSAValue) -> list[tuple[int, int]]:
    """For a ``rep`` broadcast input of a map whose output is split over the CPEs: the
    (input dim, output dim) pairs along which the input varies with a split output dim (so each
    CPE needs only its block of the input)."""
    ti, to = v.type, op.out.type
    assert isinstance(ti, TileBufType) and isinstance(to, TileBufType)
    if ti.dist_kind != Dist.REP or to.dist_kind == Dist.REP or ti.get_shape() == to.get_shape():
        return []
    si, so = ti.get_shape(), to.get_shape()
    shift = len(so) - len(si)
    split = {Dist.RC: (0, 1), Dist.CR: (0, 1), Dist.CPE: (to.split_dim or 0,)}[to.dist_kind]
    return [(k, k + shift) for k in range(len(si)) if si[k] != 1 and k + shift in split and so[k + shift] != 1]


def padded_rep_buffers(k: tile.KernelOp) -> dict[SSAValue, tuple[int, ...]]:
    """``rep`` tiles sliced per CPE by a map with a ragged ``cpe`` output get dim rows up to
    64*q, so that every CPE's slice (also the empty CPEs') lies inside the buffer."""
    out: dict[SSAValue, tuple[int, ...]] = {}
    for op in k.walk():
        if not isinstance(op, tile.MapOp):
            continue
        to = op.out.type
        assert isinstance(to, TileBufType)
        if to.dist_kind != Dist.CPE:
            continue
        q = to.local_shape()[to.split_dim or 0]
        for v in op.inputs:
            for ki, _ in _broadcast_slices(op, v):
                t = v.type
                assert isinstance(t, TileBufType)
                shape = list(out.get(v, local_buffer_shape(t)))
                shape[ki] = max(shape[ki], q * dmaplan.N_CPE)
                out[v] = tuple(shape)
    return out


def _map_input(ctx: LowerCtx, op: tile.MapOp, v: SSAValue) -> SSAValue:
    """The loop-level input of a map: the local buffer, or for a ``rep`` broadcast input of a
    split output the view of this CPE's block of it."""
    lv = ctx.value(v)
    sl = _broadcast_slices(op, v)
    if not sl:
        ti, to = v.type, op.out.type
        assert isinstance(ti, TileBufType) and isinstance(to, TileBufType)
        if (ti.dist_kind == Dist.CPE and to.layout_kind == Layout.COL and ti.layout_kind == Layout.ROW
                and len(ti.get_shape()) == 2 and ti.get_shape() != to.get_shape() and 1 in ti.get_shape()):
            # a cpe-split (rows, 1) / (1, cols) broadcast operand of a col-stored output: the
            # output's LDM block is (dim 1, dim 0), so the operand broadcasts as its transpose
            # (same bytes: one dim is 1)
            lt = lv.type
            assert isinstance(lt, LdmBufType)
            view = loop.ViewOp(lv, ctx.const(0), LdmBufType(list(lt.get_shape())[::-1], lt.element_type))
            view.result.name_hint = f"{lv.name_hint or 'b'}_t"
            ctx.emit(view)
            return view.result
        return lv
    ti, to = v.type, op.out.type
    assert isinstance(ti, TileBufType) and isinstance(to, TileBufType)
    blocks, _ = dmaplan.cpe_blocks(to.dist.data, to.get_shape())
    lt = lv.type
    assert isinstance(lt, LdmBufType)
    bshape = lt.get_shape()
    pitch = [math.prod(bshape[i + 1 :]) for i in range(len(bshape))]
    shape = list(ti.get_shape())
    off: SSAValue = ctx.const(0)
    for ki, ko in sl:
        blk = blocks[ko]
        if any(bshape[j] != 1 for j in range(ki)) and len(sl) == 1 and ki > 0:
            raise fail(op, f"broadcast input %{v.name_hint or 'tile'} slice along dim {ki} is not contiguous in LDM")
        off = ctx.add(off, ctx.cpe_term(blk.a * pitch[ki], blk.b * pitch[ki]))
        shape[ki] = blk.n
    if len(sl) > 1:
        raise fail(op, f"broadcast input %{v.name_hint or 'tile'} varies along two split dims")
    if to.layout_kind == Layout.COL:
        shape = shape[::-1]
    view = loop.ViewOp(lv, off, LdmBufType(shape, ti.element_type))
    view.result.name_hint = f"{lv.name_hint or 'b'}_blk"
    ctx.emit(view)
    return view.result


def lower_map(ctx: LowerCtx, op: tile.MapOp) -> None:
    bufs = list(op.inputs) + [op.out]
    ctx.sync_buffers(bufs)
    ins = [_map_input(ctx, op, v) for v in op.inputs]
    out = ctx.value(op.out)
    kind = op.map_kind
    props = {k: v for k, v in op.properties.items() if k != "kind"}
    ot = op.out.type
    assert isinstance(ot, TileBufType)
    if kind in (MapKind.COPY, MapKind.CONVERT) and len(ot.get_shape()) == 2:
        it = op.inputs[0].type
        assert isinstance(it, TileBufType)
        if it.layout_kind != ot.layout_kind:
            # a transposing copy / convert (the col buffer is the swapped local block)
            new = loop.MapOp(MapKind.TRANSPOSE, ins, out, perm=(1, 0))
            lin, lout = ins[0].type, out.type
            assert isinstance(lin, LdmBufType) and isinstance(lout, LdmBufType)
            err = check_map(
                MapKind.TRANSPOSE, [lin.get_shape()], [elem_name(lin)], lout.get_shape(), elem_name(lout), {"perm": (1, 0)}
            )
            if err:
                raise fail(op, f"{kind.value} with a layout change becomes loop.map transpose: {err}")
            ctx.emit(new)
            return
    new = loop.MapOp.build(
        operands=[ins, out], properties={"kind": loop.MapKindAttr(kind), **props}
    )
    ctx.emit(new)
