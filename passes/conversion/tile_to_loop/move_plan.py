"""Static analysis of a ``tile.move`` (``convert-tile-to-loop``; 004 Alg. 7 L1514-1534,
algorithms.md §E4/§E6): the tile dims of the window, the per-CPE blocks, the CPE classes of the
distribution and, for boundary (``pad``/``clip``) moves, the possible in-bounds sub-ranges of each
piece (:class:`MovePlan`, :func:`plan_move`; DMA rules in :mod:`.dma`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType

from taihu.dialects import tile
from taihu.dialects.tile import Dist, Layout, TileBufType

from . import dma as dmaplan
from .common import fail
from .facts import index_values


@dataclass
class MovePlan:
    op: tile.MoveOp
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    tdims: list[int | None]
    blocks: list[dmaplan.DimBlock]
    order: tuple[int, ...]
    elem_bytes: int
    # per class: list of per-dim case lists (each ClipCase), only dims with >1 case are tested
    classes: list[tuple[dmaplan.CpeClass, tuple[int, ...], list[list[dmaplan.ClipCase]]]]
    full_n: tuple[int, ...] = ()  # extents of the full local block per memref dim (LDM layout)
    bcast: bool = False

    @property
    def uniform(self) -> bool:
        """One variant for every CPE: no dispatch (DMAs may be asynchronous)."""
        if len(self.classes) != 1:
            return False
        cls, _, cases = self.classes[0]
        return cls.id_lo == 0 and cls.id_hi == dmaplan.N_CPE - 1 and all(len(c) == 1 for c in cases)

    @property
    def interior(self) -> bool:
        """Uniform and every piece whole (no boundary at all)."""
        if not self.uniform:
            return False
        _, n, cases = self.classes[0]
        return all(c[0].lo == 0 and c[0].hi == e for c, e in zip(cases, n))

    def cpe_coef(self, d: int) -> tuple[int, int]:
        """(a, b): the piece start along memref dim d is offset_d + stride_d*(a*row + b*col)."""
        t = self.tdims[d]
        if t is None:
            return (0, 0)
        blk = self.blocks[t]
        return (blk.a * self.strides[d], blk.b * self.strides[d])


def plan_move(
    op: tile.MoveOp, rep_bcast: bool = True, iv_values: dict[tile.ForOp, list[int]] | None = None
) -> MovePlan:
    """Static analysis of a ``tile.move`` (see package docstring); ``iv_values`` restricts the
    iterator values of loops lowered piecewise (boundary iterations peeled)."""
    mt = op.memref.type
    tt = op.tile.type
    assert isinstance(mt, MemRefType) and isinstance(tt, TileBufType)
    shape = tuple(mt.get_shape())
    sizes = op.size_values
    strides = op.stride_values
    r = len(shape)
    try:
        tdims = dmaplan.tile_dims_of_window(sizes, tt.get_shape())
        blocks, classes = dmaplan.cpe_blocks(tt.dist.data, tt.get_shape())
    except dmaplan.DmaInferenceError as e:
        raise fail(op, str(e)) from e
    dist = tt.dist_kind
    sd = tt.split_dim or 0  # the tile dim whose extent varies by CPE class (cpe<d>: d)
    if dist == Dist.REP and not op.is_load:
        classes = [dmaplan.CpeClass(0, 0, tt.get_shape()[0]), dmaplan.CpeClass(1, dmaplan.N_CPE - 1, 0)]
    order = list(range(r))
    if tt.layout_kind == Layout.COL:
        d0 = tdims.index(0) if 0 in tdims else None
        d1 = tdims.index(1) if 1 in tdims else None
        if d0 is not None and d1 is not None:
            order[d0], order[d1] = order[d1], order[d0]
    boundary = op.pad is not None or op.clip is not None
    offs_vals: list[list[int] | None] = [None] * r
    if boundary:
        for d, o in enumerate(op.offsets):
            offs_vals[d] = index_values(o, iv_values=iv_values)
            if offs_vals[d] is None:
                raise fail(op, f"cannot bound offset #{d} of a boundary (pad/clip) move statically")
    out_classes = []
    for cls in classes:
        n = []
        for d in range(r):
            t = tdims[d]
            if t is None:
                ext = sizes[d]
                if cls.dim0_n == 0 and dist == Dist.CPE and tt.get_shape()[sd] == 1:
                    ext = 0
            elif t == sd and dist in (Dist.CPE, Dist.REP):
                ext = cls.dim0_n
            else:
                ext = blocks[t].n
            n.append(ext)
        if dist == Dist.REP and not op.is_load and cls.dim0_n == 0:
            n = [0] * r
        if any(e == 0 for e in n):
            out_classes.append((cls, tuple(n), [[dmaplan.ClipCase(0, 0, 0, 0)] for _ in range(r)]))
            continue
        cases: list[list[dmaplan.ClipCase]] = []
        for d in range(r):
            if not boundary:
                cases.append([dmaplan.ClipCase(0, 0, 0, n[d])])
                continue
            t = tdims[d]
            cpe_offs = [0] if t is None else dmaplan.class_cpe_offsets(blocks[t], cls)
            starts = sorted({o + c * strides[d] for o in offs_vals[d] or [0] for c in cpe_offs})
            cases.append(dmaplan.clip_cases(starts, n[d], strides[d], shape[d]))
        out_classes.append((cls, tuple(n), cases))
    eb = mt.get_element_type().bitwidth // 8
    full_n = tuple(sizes[d] if tdims[d] is None else blocks[tdims[d]].n for d in range(r))  # type: ignore[index]
    plan = MovePlan(op, shape, strides, tdims, blocks, tuple(order), eb, out_classes, full_n)
    if rep_bcast and dist == Dist.REP and op.is_load and plan.uniform:
        _, _, cases = out_classes[0]
        lo = tuple(c[0].lo for c in cases)
        hi = tuple(c[0].hi for c in cases)
        if all(h > l for l, h in zip(lo, hi)):
            sp = dmaplan.split_box(shape, strides, full_n, lo, hi, order, eb)
            plan.bcast = sp.count(lo, hi) == 1
    return plan
