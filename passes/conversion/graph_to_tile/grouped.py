"""``graph.conv2d`` with ``group > 1`` that is not depthwise (C/g > 1 or M/g > 1: ResNeXt,
RegNet) -> one ``tile.kernel`` of ``tile.map grouped`` (the plan of
:mod:`taihu.backends.model.grouped_conv`; called by :class:`.conv.ConvPattern`).

The kernel (NCHW, any strides, pads, dilations and kernel size; weights and bias read from
their memrefs: constant or not; G = group, cg = C/G, mg = M/G)::

    for n (image) / g0 (groups groups, split over the CPEs) / r0 (rows output rows):
      w_t <- w[g0:+groups, 0:mg, 0:cg, kh*kw]   (G, mg, cg, kh*kw) view of the weights
      b_t <- b[g0:+groups, 0:mg, 0, 0]          (G, mg, 1, 1) view of the bias
      x_t <- x[n, g0:+groups, 0:cg, r0*sh - pt:+in_rows, :]   (N, G, cg, H, W) view; pad 0.0
      y_t  = grouped(x_t, w_t, b_t)             kernel, strides, dilations, pads of the map
      [fused maps on y_t] -> y[n, g0:+groups, 0:mg, r0:+rows, :]   (N, G, mg, Ho, Wo) view

Whole planes (``rows == Ho``): the map applies the top / bottom pads; else the DMA fills the
rows outside the planes with 0.0 and the map applies the column pads only (as
:mod:`.depthwise`). A residual sum is not fused (it stays a kernel of its own).

With the schedule's ``direct`` the x tile is always an input-row window (pad rows 0.0 by the
DMA) and the map is ``tile.map grouped_direct ins(x_t, w_t, [b_t], u0_t .. u{kw-1}_t)`` with kw
single-buffered scratch tiles (groups, C/g, in_rows, Wo rounded up to 4) that the map fills with
the column-shifted copies of the rows (``loop_to_sw/depthwise.py`` lower_grouped_direct).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from taihu.backends.model.depthwise_conv import in_rows, row_pads, whole_planes
from taihu.backends.model.grouped_conv import GroupedPlan, direct_in_rows, direct_width
from taihu.dialects import graph
from taihu.dialects.mapkind import MapKind
from taihu.dialects.tile import Dist
from taihu.passes.conversion.graph_to_tile.common import FusedMap, GraphToTilePattern, KernelBuilder

__all__ = ["emit_grouped"]


def emit_grouped(p: GraphToTilePattern, rewriter: PatternRewriter, op: graph.Conv2dOp, name: str,
                 plan: GroupedPlan, X: SSAValue, W: SSAValue, Y: SSAValue, B: SSAValue | None,
                 fused: Sequence[FusedMap]) -> None:
    """The grouped kernel of ``op`` (module docstring): input ``X`` (N, C, H, W), weights ``W``
    (M, C/g, kh, kw), bias ``B`` (M,) or None, output ``Y`` (N, M, Ho, Wo), absorbing ``fused``
    (no residual sum among them)."""
    s = plan.shape
    t = X.type
    assert isinstance(t, MemRefType)
    elem = t.get_element_type()
    g, cg, mg = s.group, s.cg, s.mg
    kk = s.kh * s.kw
    tg, rows = plan.groups, plan.rows
    thi = in_rows(s, rows)
    whole = whole_planes(s, rows)
    sh, pt = s.strides[0], s.pads[0]
    kb = KernelBuilder(p.state, name, op, algorithm="grouped", shape=s.describe(), layer=name, fused=fused)
    x = kb.arg(p.view(rewriter, X, (s.n, g, cg, s.h, s.w)), "x")
    w = kb.arg(p.view(rewriter, W, (g, mg, cg, kk)), "w")
    b = kb.arg(p.view(rewriter, B, (g, mg, 1, 1)), "b") if B is not None else None
    y = kb.arg(p.view(rewriter, Y, (s.n, g, mg, s.ho, s.wo)), "y")
    several = tg < g  # several group tiles: the filters of the next one are prefetched
    w_t = kb.alloc([tg, mg, cg, kk], elem, Dist.CPE, double=several, name="w_t")
    b_t = kb.alloc([tg, mg, 1, 1], elem, Dist.CPE, double=several, name="b_t") if b is not None else None
    y_t = kb.alloc([tg, mg, rows, s.wo], elem, Dist.CPE, double=True, name="y_t")
    params: dict[str, object] = {"kernel": (s.kh, s.kw), "strides": tuple(s.strides)}
    scratch: list = []
    if plan.direct:
        # input-row windows (the DMA fills the pad rows), kw scratch tiles for their
        # column-shifted copies (written by the map)
        thi, whole = direct_in_rows(s, rows), False
        x_t = kb.alloc([tg, cg, thi, s.w], elem, Dist.CPE, double=True, name="x_t")
        scratch = [kb.alloc([tg, cg, thi, direct_width(s)], elem, Dist.CPE, name=f"u{j}_t") for j in range(s.kw)]
        params["pads"] = (s.pads[1], s.pads[3])
    else:
        x_t = kb.alloc([tg, cg, thi, s.w], elem, Dist.CPE, double=True, name="x_t")
        pads = row_pads(s, rows)
        if any(pads):
            params["pads"] = pads
    if s.dilations != (1, 1):
        params["dilations"] = tuple(s.dilations)
    with kb.loop(0, s.n, 1, "n") as n:
        with kb.loop(0, g, tg, "g") as g0:
            kb.load(w, [g0, 0, 0, 0], [tg, mg, cg, kk], w_t)
            if b is not None and b_t is not None:
                kb.load(b, [g0, 0, 0, 0], [tg, mg, 1, 1], b_t)
            with kb.loop(0, s.ho, rows, "r") as r0:
                kb.load(x, [n, g0, 0, 0 if whole else kb.affine(r0, sh, -pt), 0], [1, tg, cg, thi, s.w], x_t, pad=0.0)
                ins = [x_t, w_t] + ([b_t] if b_t is not None else []) + scratch
                kb.map(MapKind.GROUPED_DIRECT if plan.direct else MapKind.GROUPED, ins, y_t, **params)
                kb.apply_fused(fused, y_t)
                kb.store(y_t, y, [n, g0, 0, r0, 0], [1, tg, mg, rows, s.wo])
    kb.finish(rewriter)
