"""``graph.conv2d`` with ``group == C == M`` -> one ``tile.kernel`` of ``tile.map depthwise``
(the plan of :mod:`taihu.backends.model.depthwise_conv`; called by :class:`.conv.ConvPattern`).

The kernel (NCHW, any strides, pads, dilations and kernel size; weights and bias read from
their memrefs: constant or not)::

    for n (image) / c0 (planes channels, split over the CPEs) / r0 (rows output rows):
      w_t <- w[c0:+planes, 0, kh*kw]          (C, 1, kh*kw) view of the weights
      b_t <- b[c0:+planes, 0, 0]              (C, 1, 1) view of the bias
      x_t <- x[n, c0:+planes, r0*sh - pt:+in_rows, :]   pad 0.0 (rows, channels past C)
      y_t  = depthwise(x_t, w_t, b_t)         kernel, strides, dilations, pads of the map
      [fused maps on y_t] -> y[n, c0:+planes, r0:+rows, :]   (clipped at C and Ho)

With whole planes (``rows == Ho``) the x tile is the planes themselves (one contiguous DMA per
CPE) and the map applies the top / bottom pads; else the DMA fills the rows outside the plane
with 0.0 and the map applies only the column pads. A residual sum is not fused (the plan says
so: ``residual_fused`` is false; the sum stays a kernel of its own).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from taihu.backends.model.depthwise_conv import DepthwisePlan, in_rows, row_pads, whole_planes
from taihu.dialects import graph
from taihu.dialects.mapkind import MapKind
from taihu.dialects.tile import Dist
from taihu.passes.conversion.graph_to_tile.common import FusedMap, GraphToTilePattern, KernelBuilder

__all__ = ["emit_depthwise"]


def emit_depthwise(p: GraphToTilePattern, rewriter: PatternRewriter, op: graph.Conv2dOp, name: str,
                   plan: DepthwisePlan, X: SSAValue, W: SSAValue, Y: SSAValue, B: SSAValue | None,
                   fused: Sequence[FusedMap]) -> None:
    """The depthwise kernel of ``op`` (module docstring): input ``X`` (N, C, H, W), weights ``W``
    (C, 1, kh, kw), bias ``B`` (C,) or None, output ``Y`` (N, C, Ho, Wo), absorbing ``fused``
    (no residual sum among them)."""
    s = plan.shape
    t = X.type
    assert isinstance(t, MemRefType)
    elem = t.get_element_type()
    kk = s.kh * s.kw
    tp, rows = plan.planes, plan.rows
    thi = in_rows(s, rows)
    whole = whole_planes(s, rows)
    sh = s.strides[0]
    pt = s.pads[0]
    kb = KernelBuilder(p.state, name, op, algorithm="depthwise", shape=s.describe(), layer=name, fused=fused)
    x = kb.arg(X, "x")
    w = kb.arg(p.view(rewriter, W, (s.c, 1, kk)), "w")
    b = kb.arg(p.view(rewriter, B, (s.c, 1, 1)), "b") if B is not None else None
    y = kb.arg(Y, "y")
    several = tp < s.c  # several channel tiles: the filters of the next one are prefetched
    w_t = kb.alloc([tp, 1, kk], elem, Dist.CPE, double=several, name="w_t")
    b_t = kb.alloc([tp, 1, 1], elem, Dist.CPE, double=several, name="b_t") if b is not None else None
    x_t = kb.alloc([tp, thi, s.w], elem, Dist.CPE, double=True, name="x_t")
    y_t = kb.alloc([tp, rows, s.wo], elem, Dist.CPE, double=True, name="y_t")
    params: dict[str, object] = {"kernel": (s.kh, s.kw), "strides": tuple(s.strides)}
    pads = row_pads(s, rows)
    if any(pads):
        params["pads"] = pads
    if s.dilations != (1, 1):
        params["dilations"] = tuple(s.dilations)
    with kb.loop(0, s.n, 1, "n") as n:
        with kb.loop(0, s.c, tp, "c") as c0:
            kb.load(w, [c0, 0, 0], [tp, 1, kk], w_t)
            if b is not None and b_t is not None:
                kb.load(b, [c0, 0, 0], [tp, 1, 1], b_t)
            with kb.loop(0, s.ho, rows, "r") as r0:
                kb.load(x, [n, c0, 0 if whole else kb.affine(r0, sh, -pt), 0], [1, tp, thi, s.w], x_t, pad=0.0)
                ins = [x_t, w_t] + ([b_t] if b_t is not None else [])
                kb.map(MapKind.DEPTHWISE, ins, y_t, **params)
                kb.apply_fused(fused, y_t)
                kb.store(y_t, y, [n, c0, r0, 0], [1, tp, rows, s.wo])
    kb.finish(rewriter)
