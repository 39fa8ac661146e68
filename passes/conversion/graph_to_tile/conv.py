"""``graph.conv2d`` -> ``tile.kernel``s: implicit GEMM, explicit im2col + GEMM, Winograd F(2x2,3x3).

The algorithm is chosen per layer by the analytic model
(:func:`taihu.backends.model.schedule.choose_conv_schedule`, algorithms.md §C5, 004 L1320/L1674) unless the
pass option ``conv-algorithm`` forces one; forcing an algorithm that cannot run the layer is a
diagnostic naming the op and the reason (e.g. "implicit GEMM convolution needs >= 64 input and
output channels ... 004 L1266"). Layouts are the graph's: NCHW activations, (M, C/g, kh, kw)
weights, f32 (or f64) in main memory; the mesh GEMM runs in fp64 on converted LDM tiles (A7).

**implicit** (§C3, Algorithms 3/4; kernel ``NAME``, ``taihu.algorithm = "implicit"``)::

    for n0 (images, step b_B) / ro0 (output rows, step b_Ro) / m0 (out channels, step BM) / co0 (out columns, step BN):
      fill C_g                                            g < b_B*b_Ro C tiles (BM x BN) in LDM
      for kr, kc, k0 (input channels, step BK):           K innermost (004 L863)
        W   <- wt[m0:+BM, kr, kc, k0:+BK]                 weights re-laid (M, kh, kw, C)
        for g: D_i <- x[n_g, k0:+BK, ro_g*s + kr*d - p, co0*s + kc*d - p : stride s]  (pad 0.0)
               C_g += W x D_i                             tile.gemm
      for g: [+ bias] [fused relu ...] -> y[n_g, m0:+BM, ro_g, co0:+BN]  (clip)

  One weight tile is shared by the b_B x b_Ro C tiles: over images (``b_B`` > 1, the
  Batch-Size-Aware reuse of Algorithm 3, RBW ~ 1/N_o + 1/B, eq 5-5) or over output rows
  (Image-Size-Aware, Algorithm 4, RBW ~ 1/(b_Co b_B) + 1/N_o, eq 5-6). Constant weights are
  re-laid at compile time; otherwise a ``NAME_weights`` kernel transposes them
  (``tile.map transpose``). Needs group = 1 and >= 64 channels (004 L1266).

**implicit, unfolded** (constant weights, C % 8 == 0; :mod:`taihu.backends.model.unfold_conv`,
``taihu.blocking = "... variant=unfold"``): the kernel taps are concatenated along K, so ONE
mesh GEMM per K block reduces over cb channels x kh*kw taps (k_local = cb*kh*kw/8 instead of
cb/8 per tap: the ~32-cycle SUMMA step boundary per register tile amortises, and the run count
falls)::

    for m0 (BM out channels) / n / ro0 (8 output rows, one per mesh column):
      fill C                                              (BM x 8*Wo_p)
      for k0 (cb input channels):
        W   <- wu[m0, k0*kh*kw : +cb*kh*kw]               re-laid (M, C/g, kh, g, kw), g = cb/8
        P_kr <- x[n, k0:+cb, (ro0+q)*sh + kr*dh - pt, :]   kh row tiles (cb, 8, W), pad 0.0
        B   <- tile.unfold(P_0 .. P_kh-1)                 in LDM, per CPE (loop.map im2col)
        C  += W x B                                       tile.gemm, k = cb*kh*kw
      [+ bias] [relu ...] -> y[n, m0, ro0*Wo : +8*Wo] (y viewed (N, M, Ho*Wo); clip)

  Output rows are Wo_p = Wo rounded up to the register tile (4 pixels with vec m, 16 with vec n);
  when Wo_p > Wo, C goes to a (N, M, Ho*Wo_p) buffer and ``NAME_relayout`` keeps Wo of every
  Wo_p. With vec m the weights are stored K-major (a plain fp32 -> fp64 convert of a ``cr``
  tile, ``trans_a``).

**im2col** (§C2; kernels ``NAME_im2col`` (``tile.im2col``) + ``NAME`` (GEMM)): col
(C*kh*kw, N*Ho*Wo) viewed (group, C/g*kh*kw, N, Ho*Wo); the memory-level GEMM
(:func:`~taihu.passes.conversion.graph_to_tile.gemm.emit_gemm`), bias and fused activations in
its epilogue, in one of three forms chosen by the model (:func:`taihu.backends.model.conv.plan_explicit`):

* per image: for every group g and image n, W_g (M/g, C/g*kh*kw) x col[g, :, n, :] ->
  y[n, g*M/g : (g+1)*M/g] (M/g, Ho*Wo), straight into the NCHW output;
* batched (N > 1): per group one GEMM over all N*Ho*Wo columns into an (M, N, Ho*Wo) buffer,
  then a ``NAME_relayout`` copy kernel to NCHW (no per-image padding, long DMA blocks);
* pointwise (1x1, stride 1, no padding): no im2col kernel, the GEMM reads x itself -- unless
  Ho*Wo is not a multiple of the GEMM's N block (then a 1x1 im2col copies x into a padded col).

Any of them may use the GEMM with the overlapping distribution (``plan.gemm.overlap``, chosen by
the model for small maps such as 7x7 / 14x14: the CPEs split the output channels, every CPE
gets all Ho*Wo columns by broadcast, no padding of the columns to the mesh); with vec m the
constant weights are stored transposed ((group, C/g*kh*kw, M/g), a new global) so each CPE's
output channels are one contiguous run per k; with vec n and Ho*Wo % 4 != 0 the col's image
columns are padded to 4.

Per-image col buffers pad each image's Ho*Wo columns to the GEMM's N block (``tile.im2col
image_columns``, 004 L865 padded allocation): no B window crosses the border, so every B load
is one full strided DMA per CPE and prefetched (a column-clipped piece would need per-row DMAs
and be loaded synchronously).

Every layer: groups (depthwise too), strides, pads, dilations, any kernel size.

**winograd** (§C4, Algorithm 5; kernels ``NAME_filter`` (when the weights are not constants,
else U is computed at compile time), ``NAME_input``, ``NAME`` (16 GEMMs), ``NAME_output``,
and ``NAME_bias`` when there is a bias or an absorbed activation): U = G w G^T (16, M, C),
V = B^T d B (16, P_pad, C), M^(xi) = V^(xi) U^(xi)^T (P_pad, M) per xi, y = A^T m A. P = N *
ceil(Ho/2) * ceil(Wo/2) is padded to the GEMM's M block (004 L1194-1196). 3x3, stride 1,
dilation 1, group 1.

**Residual sums** (ResNet's shortcut: ``relu(conv(x) + s)``, an ``add`` / 2-input ``sum`` with a
same-shape tensor computed before the conv; common.py ``absorb_elementwise_consumers(...,
residual=True)``): the plan is chosen for the shape with ``residual`` (the model reserves the
residual tile's LDM and costs it, :func:`taihu.backends.model.conv.fuses_residual`). Plans whose
kernel stores the NCHW output from LDM -- per-image / pointwise im2col GEMMs (the GEMM epilogue)
and the unfolded implicit convolution without padded rows -- load the residual window at the
C block's start (before its K loop, prefetched) and add it to the fp32 tile after the f64 -> f32
convert (``store_fused``: the conv result rounds first, like the reference), then the maps after
it. The others (Winograd, implicit, the batched GEMM, padded unfold rows, or a clipped C window
when a separate pass is cheaper) drop the sum from the absorbed list: it stays a map kernel.

**depthwise** (``group == C == M``; :mod:`.depthwise`, kernel ``NAME``, ``tile.map depthwise``):
channels over the CPEs, a sliding window of input rows in LDM, vector micro-kernels along W
(:mod:`taihu.backends.model.depthwise_conv`); no im2col, no GEMM. **grouped** (other group > 1
layers; :mod:`.grouped`, ``tile.map grouped``): the same with whole groups over the CPEs.

Errors: ``PassFailedException`` "convert-graph-to-tile: graph.conv2d: <reason>".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, Float64Type, IntegerAttr, MemRefType, TensorType, f64, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.dialects.builtin import StringAttr

from taihu.backends.model.conv import (
    ConvShape,
    ExplicitPlan,
    ImplicitPlan,
    NotApplicable,
    Plan,
    WinogradPlan,
    fuses_residual,
    gemm_operand_layouts,
    relayout_rows,
)
from taihu.backends.model.depthwise_conv import DepthwisePlan
from taihu.backends.model.grouped_conv import GroupedPlan
from taihu.backends.model.schedule import IllegalSchedule, choose_conv_schedule, conv_plan_for
from taihu.backends.model.unfold_conv import (
    UnfoldPlan,
    crop_rows_per_task,
    unfold_weights,
)
from taihu.dialects import graph, tile
from taihu.dialects.mapkind import MapKind
from taihu.passes.conversion.graph_to_tile.common import (
    FusedMap,
    GraphToTilePattern,
    Idx,
    KernelBuilder,
    LoweringState,
    absorb_elementwise_consumers,
    constant_array,
    shape_of,
)
from taihu.passes.conversion.graph_to_tile.depthwise import emit_depthwise
from taihu.passes.conversion.graph_to_tile.grouped import emit_grouped
from taihu.passes.conversion.graph_to_tile.gemm import GemmAccess, GemmEpilogue, emit_gemm, plan_machine
from taihu.passes.conversion.graph_to_tile.schedule_attr import op_schedule

__all__ = ["ConvPattern", "patterns", "winograd_filter_transform"]

N_CPE = 64
MESH = 8

# Lavin & Gray 2016 F(2x2, 3x3) (algorithms.md §C4)
_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])


def winograd_filter_transform(w: np.ndarray) -> np.ndarray:
    """U = G w G^T for every 3x3 filter of ``w`` (M, C, 3, 3) -> (16, M, C), U[xi*4 + nu, k, c]
    (tile.winograd_filter semantics, Algorithm 5 step 1; done at compile time for constants)."""
    u = np.einsum("ai,kcij,bj->abkc", _G, w.astype(np.float64), _G)
    return u.reshape(16, w.shape[0], w.shape[1]).astype(w.dtype)


def _i64s(v: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(v))


def _add(kb: KernelBuilder, *terms: Idx) -> Idx:
    """Sum of index terms (ints folded, SSA values added with arith.addi); a sum already built
    in the current block is reused (no duplicate index arithmetic in the unrolled bodies)."""
    const = sum(t for t in terms if isinstance(t, int))
    vals = [t for t in terms if not isinstance(t, int)]
    if not vals:
        return const
    block = kb.builder.insertion_point.block
    cache: dict = kb.__dict__.setdefault("_sum_cache", {})
    key = (id(block), tuple(sorted(id(v) for v in vals)), const)
    hit = cache.get(key)
    if hit is not None:
        return hit
    cur: SSAValue = vals[0]
    for v in vals[1:]:
        cur = kb.builder.insert(arith.AddiOp(cur, v)).result
    out = kb.affine(cur, 1, const)
    cache[key] = out
    return out


def _scaled(kb: KernelBuilder, v: Idx, scale: int) -> Idx:
    """``v * scale`` built once per block (see :func:`_add`)."""
    if isinstance(v, int) or scale == 1:
        return kb.affine(v, scale)
    block = kb.builder.insertion_point.block
    cache: dict = kb.__dict__.setdefault("_sum_cache", {})
    key = (id(block), "mul", id(v), scale)
    if key not in cache:
        cache[key] = kb.affine(v, scale)
    return cache[key]


def _div(kb: KernelBuilder, v: Idx, d: int) -> Idx:
    """``v / d`` (unsigned; folded for ints)."""
    if isinstance(v, int) or d == 1:
        return v if d == 1 else v // d  # type: ignore[operator]
    return kb.builder.insert(arith.DivUIOp(v, kb.const(d))).result


def _elem(mem: SSAValue) -> Attribute:
    t = mem.type
    assert isinstance(t, MemRefType)
    return t.get_element_type()


def conv_op_shape(op: graph.Conv2dOp, fused: Sequence[FusedMap]) -> ConvShape:
    """The convolution problem of ``op`` whose trailing element-wise ``fused`` ops (and a
    residual sum) are absorbed (:func:`absorb_elementwise_consumers`): NCHW input, weights,
    strides/pads/dilations/groups, bias, relu, residual, element type, constant weights."""
    xs, ws = shape_of(op.input), shape_of(op.weight)
    t_in = op.input.type
    assert isinstance(t_in, (TensorType, MemRefType))  # shape_of checked it
    el = t_in.get_element_type()
    r0 = next((i for i, f in enumerate(fused) if f.is_residual), len(fused))
    return ConvShape(
        xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3],
        strides=tuple(op.strides), pads=tuple(op.pads), dilations=tuple(op.dilations),  # type: ignore[arg-type]
        group=op.group, bias=op.bias is not None, relu=any(not f.is_residual for f in fused),
        dtype="f64" if isinstance(el, Float64Type) else "f32", const_weights=constant_array(op.weight) is not None,
        residual=r0 < len(fused),
    )


def _family(algorithm: str) -> str:
    """The ``conv-algorithm`` a schedule's algorithm belongs to (``unfold`` is an implicit one)."""
    return "implicit" if algorithm == "unfold" else algorithm


class ConvPattern(GraphToTilePattern):
    """``graph.conv2d`` -> the kernels of the chosen algorithm (module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.Conv2dOp, rewriter: PatternRewriter) -> None:
        name = self.state.layer_name(op)
        # a residual sum (ResNet's shortcut) + what follows is absorbed too; plans that cannot
        # add it in the store of the final NCHW tile drop it again (fuses_residual) and the sum
        # stays a separate kernel
        fused = absorb_elementwise_consumers(self.state, op.result, residual=True)
        r0 = next((i for i, f in enumerate(fused) if f.is_residual), len(fused))
        w_np = constant_array(op.weight)
        shape = conv_op_shape(op, fused)
        algorithm = str(self.state.options.get("conv_algorithm", "auto"))
        mach = plan_machine(self.state)
        schedule = op_schedule(op)
        try:
            # the memory primitives (im2col, Winograd transforms) get the machine's whole LDM in
            # tile-to-loop (ldm_free_bytes), the GEMM plans the pass budget (plan_machine)
            plan: Plan | UnfoldPlan | DepthwisePlan | GroupedPlan
            if schedule is not None:
                if algorithm != "auto" and _family(schedule.algorithm) != algorithm:
                    raise self.fail(op, f"the tile.schedule is {schedule.algorithm} but conv-algorithm={algorithm}")
                plan = conv_plan_for(shape, mach, schedule, mem_budget=self.state.machine.ldm_user_bytes)
            else:
                plan = choose_conv_schedule(shape, mach, algorithm, mem_budget=self.state.machine.ldm_user_bytes)
        except IllegalSchedule as e:
            raise self.fail(op, f"illegal tile.schedule: {e}") from e
        except NotApplicable as e:
            raise self.fail(op, f"conv-algorithm={algorithm}: {e}") from e
        if not fuses_residual(plan):
            fused = fused[:r0]
        X = self.buffer(rewriter, op.input)
        Y = self.alloc_like(rewriter, op.result, name)
        bias = self.buffer(rewriter, op.bias) if op.bias is not None else None
        if isinstance(plan, UnfoldPlan):
            assert w_np is not None
            self._unfold(rewriter, op, name, plan, X, Y, bias, w_np, fused)
        elif isinstance(plan, ImplicitPlan):
            self._implicit(rewriter, op, name, plan, X, Y, bias, w_np, fused)
        elif isinstance(plan, ExplicitPlan):
            W = self.buffer(rewriter, op.weight)
            self._explicit(rewriter, op, name, plan, X, W, Y, bias, fused)
        elif isinstance(plan, DepthwisePlan):
            emit_depthwise(self, rewriter, op, name, plan, X, self.buffer(rewriter, op.weight), Y, bias, fused)
        elif isinstance(plan, GroupedPlan):
            emit_grouped(self, rewriter, op, name, plan, X, self.buffer(rewriter, op.weight), Y, bias, fused)
        else:
            assert isinstance(plan, WinogradPlan)
            self._winograd(rewriter, op, name, plan, X, Y, bias, w_np, fused)
        self.replace(rewriter, op, [Y], fused)

    # -- helpers -------------------------------------------------------------------------------

    def _kb(self, name: str, op, shape: ConvShape, algorithm: str, layer: str, fused: Sequence[FusedMap] = (),
            suffix: str = "") -> KernelBuilder:
        kb = KernelBuilder(self.state, name + suffix, op, algorithm=algorithm, shape=shape.describe(),
                           layer=layer, fused=fused)
        return kb

    # -- explicit ------------------------------------------------------------------------------

    def _explicit(self, rewriter: PatternRewriter, op, name: str, plan: ExplicitPlan, X: SSAValue, W: SSAValue,
                  Y: SSAValue, bias: SSAValue | None, fused: Sequence[FusedMap]) -> None:
        s = plan.shape
        el = _elem(X)
        kk = s.cg * s.kh * s.kw
        hw = s.ho * s.wo
        g = plan.gemm
        # pointwise layers whose B windows would be clipped inside a CPE's piece at the image
        # border are planned as a 1x1 im2col into a padded col (plan_explicit, model cost: the
        # clipped piece needs per-row DMAs, loaded synchronously); the lowering follows the plan
        pointwise = plan.pointwise
        if plan.pointwise and not pointwise:
            plan = replace(plan, pointwise=False)
        if pointwise:  # col = x itself: (N, C, H*W) viewed (N, group, C/g, HW)
            bsrc = self.view(rewriter, X, (s.n, s.group, kk, hw))
        else:
            # per-image GEMMs: each image's columns padded to the GEMM's N block (image_columns,
            # 004 L865 padded allocation) so that no B window crosses the border: every B load
            # is one full strided DMA per CPE and double-buffered (a column-clipped piece would
            # need per-row DMAs and be loaded synchronously)
            pc = hw if plan.batched or hw % g.bn == 0 else -(-hw // g.bn) * g.bn
            col = self.alloc(rewriter, (s.c * s.kh * s.kw, s.n * pc), el, f"{name}_col")
            kb = self._kb(name, op, s, "im2col", name, suffix="_im2col")
            x, c = kb.arg(X, "x"), kb.arg(col, "col")
            props: dict[str, Attribute] = {"kernel": _i64s((s.kh, s.kw))}
            if s.strides != (1, 1):
                props["strides"] = _i64s(s.strides)
            if any(s.pads):
                props["pads"] = _i64s(s.pads)
            if s.dilations != (1, 1):
                props["dilations"] = _i64s(s.dilations)
            if pc != hw:
                props["image_columns"] = IntegerAttr(pc, i64)
            kb.insert(tile.Im2colOp.build(operands=[x, c], properties=props))
            kb.finish(rewriter)
            bsrc = self.view(rewriter, col, (s.group, kk, s.n * hw) if plan.batched else (s.group, kk, s.n, pc))
        # overlapping distribution with vec n streaming constant weights in K blocks: stored
        # K-blocked (group, K/bk, M/g, bk) so that each CPE's rows of a block are one run
        # (model: overlap_gemm.kblocked_a)
        kblocked = g.overlap and not g.trans_a and not g.hoist_a and g.bk < kk and s.const_weights
        if kblocked:
            w_np = constant_array(op.weight)
            assert w_np is not None
            wb = w_np.reshape(s.group, s.mg, kk // g.bk, g.bk).transpose(0, 2, 1, 3)
            wv: SSAValue = self.state.new_global(
                rewriter, np.ascontiguousarray(wb).reshape(s.group, kk // g.bk * s.mg, g.bk), f"{name}_wk").memref
        elif g.overlap and g.trans_a:
            # overlapping-distribution GEMM with vec m: A stored (K, M) so that each CPE's rows of
            # M are one contiguous run per k (constant weights, transposed at compile time)
            w_np = constant_array(op.weight)
            assert w_np is not None
            wt = np.ascontiguousarray(w_np.reshape(s.group, s.mg, kk).transpose(0, 2, 1))
            wv = self.state.new_global(rewriter, wt, f"{name}_wt").memref
        else:
            wv = self.view(rewriter, W, (s.group, s.mg, kk))
        if plan.batched:
            ybuf = self.alloc(rewriter, (s.m, s.n * hw), el, f"{name}_gemm")
            yv = self.view(rewriter, ybuf, (s.group, s.mg, s.n * hw))
        else:
            yv = self.view(rewriter, Y, (s.n, s.group, s.mg, hw))
        kb = self._kb(name, op, s, "im2col", name, fused)
        kb.attrs["taihu.blocking"] = StringAttr(
            f"bm={g.bm} bn={g.bn} bk={g.bk} scheme={g.scheme} vec={g.vec}" + (" hoist_a" if g.hoist_a else "")
            + (" hoist_b" if g.hoist_b else "") + (" overlap" if g.overlap else "") + (" pointwise" if plan.pointwise else "")
            + (" batched" if plan.batched else ""))
        w, cm, y = kb.arg(wv, "w"), kb.arg(bsrc, "col" if not plan.pointwise else "x"), kb.arg(yv, "y")
        # outer loops: (group[, image]); ivs[0] = group, ivs[1] = image
        if kblocked:
            acc_a = GemmAccess(w, lambda iv, r, k: [iv[0], _add(kb, _scaled(kb, _div(kb, k, g.bk), s.mg), r), 0],
                               [1, g.bm, g.bk])
        else:
            acc_a = GemmAccess(w, lambda iv, r, k: [iv[0], r, k], [1, g.bk, g.bm] if g.trans_a else [1, g.bm, g.bk])
        if plan.batched:
            acc_b = GemmAccess(cm, lambda iv, k, j: [iv[0], k, j], [1, g.bk, g.bn])
            acc_c = GemmAccess(y, lambda iv, r, j: [iv[0], r, j], [1, g.bm, g.bn])
            outer = [(s.group, "g")]
        elif plan.pointwise:
            acc_b = GemmAccess(cm, lambda iv, k, j: [iv[1], iv[0], k, j], [1, 1, g.bk, g.bn])
            acc_c = GemmAccess(y, lambda iv, r, j: [iv[1], iv[0], r, j], [1, 1, g.bm, g.bn])
            outer = [(s.group, "g"), (s.n, "n")]
        else:
            acc_b = GemmAccess(cm, lambda iv, k, j: [iv[0], k, iv[1], j], [1, g.bk, 1, g.bn])
            acc_c = GemmAccess(y, lambda iv, r, j: [iv[1], iv[0], r, j], [1, 1, g.bm, g.bn])
            outer = [(s.group, "g"), (s.n, "n")]
        # a residual sum is bound to the NCHW output view (per-image / pointwise GEMMs store y
        # itself; fuses_residual): emit_gemm prefetches its window at the block start and adds
        # it to the stored fp32 tile
        epi = GemmEpilogue(fused=self.bind_fused(rewriter, kb, fused, y))
        if bias is not None:
            bv = kb.arg(self.view(rewriter, bias, (s.group, s.mg, 1)), "bias")
            epi.bias = GemmAccess(bv, lambda iv, r, j: [iv[0], r, 0], [1, g.bm, 1])
            epi.bias_shape = (g.bm, 1)
        emit_gemm(kb, g, acc_a, acc_b, acc_c, outer=outer, epilogue=epi, elem=el)
        kb.finish(rewriter)
        if plan.batched:
            self._relayout(rewriter, op, name, s, ybuf, Y)

    def _relayout(self, rewriter: PatternRewriter, op, name: str, s: ConvShape, src: SSAValue, Y: SSAValue) -> None:
        """(M, N, Ho*Wo) -> NCHW (N, M, Ho*Wo): per image, ``q`` output channels (rows of Ho*Wo
        contiguous elements) per CPE per step, double-buffered."""
        hw = s.ho * s.wo
        el = _elem(src)
        eb = 4 if s.dtype == "f32" else 8
        q = relayout_rows(hw, eb, self.state.ldm_budget)
        rows = min(N_CPE * q, s.m)
        sv = self.view(rewriter, src, (s.m, s.n, hw))
        yv = self.view(rewriter, Y, (s.n, s.m, hw))
        kb = KernelBuilder(self.state, f"{name}_relayout", op, algorithm="relayout",
                           shape=f"{s.n}x{s.m}x{hw} <- {s.m}x{s.n}x{hw}", layer=name)
        a, b = kb.arg(sv, "src"), kb.arg(yv, "y")
        t = kb.alloc((rows, hw), el, tile.Dist.CPE, double=True, name="t")
        with kb.loop(0, s.n, 1, "n") as n:
            with kb.loop(0, s.m, rows, "m") as m0:
                kb.load(a, [m0, n, 0], [rows, 1, hw], t)
                kb.store(t, b, [n, m0, 0], [1, rows, hw])
        kb.finish(rewriter)

    # -- implicit ------------------------------------------------------------------------------

    def _weights_mkkc(self, rewriter: PatternRewriter, op, name: str, s: ConvShape, w_np: np.ndarray | None) -> SSAValue:
        """Weights as (M, kh, kw, C): a compile-time transpose of constants, else a
        ``NAME_weights`` kernel (per-CPE output channels, ``tile.map transpose`` in LDM)."""
        W = self.buffer(rewriter, op.weight)
        if s.kh * s.kw == 1:
            return self.view(rewriter, W, (s.m, 1, 1, s.c))
        if w_np is not None:
            arr = np.ascontiguousarray(np.transpose(w_np, (0, 2, 3, 1)))
            return self.state.new_global(rewriter, arr, f"{name}_wt").memref
        el = _elem(W)
        kk = s.kh * s.kw
        wt = self.alloc(rewriter, (s.m, kk, s.c), el, f"{name}_wt")
        wv = self.view(rewriter, W, (s.m, s.c, kk))
        kb = KernelBuilder(self.state, f"{name}_weights", op, algorithm="relayout",
                           shape=f"{s.m}x{s.kh}x{s.kw}x{s.c} <- {s.m}x{s.c}x{s.kh}x{s.kw}", layer=name)
        src, dst = kb.arg(wv, "w"), kb.arg(wt, "wt")
        eb = 4 if s.dtype == "f32" else 8
        # q output channels per CPE, whole (C, kk) planes; 2 buffers (in, out), double-buffered
        per = s.c * kk * eb
        q = max(1, min(math.ceil(s.m / N_CPE), self.state.ldm_budget // (4 * per)))
        cb = s.c
        if 4 * per > self.state.ldm_budget:  # split C
            cb = max(1, self.state.ldm_budget // (4 * kk * eb))
            q = 1
        tm = N_CPE * q
        t_in = kb.alloc((tm, cb, kk), el, tile.Dist.CPE, double=True, name="t_in")
        t_out = kb.alloc((tm, kk, cb), el, tile.Dist.CPE, double=True, name="t_out")
        with kb.loop(0, s.m, tm, "m") as m0:
            with kb.loop(0, s.c, cb, "c") as c0:
                kb.load(src, [m0, c0, 0], [tm, cb, kk], t_in)
                kb.map(MapKind.TRANSPOSE, [t_in], t_out, perm=(0, 2, 1))
                kb.store(t_out, dst, [m0, 0, c0], [tm, kk, cb])
        kb.finish(rewriter)
        return self.view(rewriter, wt, (s.m, s.kh, s.kw, s.c))

    def _implicit(self, rewriter: PatternRewriter, op, name: str, plan: ImplicitPlan, X: SSAValue, Y: SSAValue,
                  bias: SSAValue | None, w_np: np.ndarray | None, fused: Sequence[FusedMap]) -> None:
        s = plan.shape
        el = _elem(X)
        wt = self._weights_mkkc(rewriter, op, name, s, w_np)
        kb = self._kb(name, op, s, "implicit", name, fused)
        kb.attrs["taihu.blocking"] = StringAttr(
            f"bm={plan.bm} bn={plan.bn} bk={plan.bk} b_b={plan.b_b} b_ro={plan.b_ro} scheme={plan.scheme} "
            f"vec={plan.vec} variant={plan.variant}")
        x, w, y = kb.arg(X, "x"), kb.arg(wt, "w"), kb.arg(Y, "y")
        bv = kb.arg(self.view(rewriter, bias, (s.m, 1)), "bias") if bias is not None else None
        lay = gemm_operand_layouts(plan.vec, False, False)
        bm, bn, bk, G = plan.bm, plan.bn, plan.bk, plan.groups
        a_s = kb.alloc((bm, bk), el, lay["A"][0], double=True, name="w_s")
        a = kb.alloc((bm, bk), f64, lay["A"][0], layout=lay["A"][1], name="w_t")
        b_s = kb.alloc((bk, bn), el, lay["B"][0], double=True, name="x_s")
        b = kb.alloc((bk, bn), f64, lay["B"][0], layout=lay["B"][1], name="x_t")
        cs = [kb.alloc((bm, bn), f64, lay["C"][0], layout=lay["C"][1], name=f"y{g}") for g in range(G)]
        c_s = kb.alloc((bm, bn), el, lay["C"][0], double=True, name="y_s")
        bias_s = bias_t = None
        if bv is not None:
            bias_s = kb.alloc((bm, 1), el, tile.Dist.REP, name="bias_s")
            bias_t = kb.alloc((bm, 1), f64, tile.Dist.REP, name="bias")
        conv = MapKind.CONVERT if s.dtype == "f32" else MapKind.COPY
        sh, sw = s.strides
        dh, dw = s.dilations
        pt, pl = s.pads[0], s.pads[1]
        members = [(gb, gr) for gb in range(plan.b_b) for gr in range(plan.b_ro)]
        with kb.loop(0, s.n, plan.b_b, "cB") as n0:
            with kb.loop(0, s.ho, plan.b_ro, "cRo") as ro0:
                with kb.loop(0, s.m, bm, "cNo") as m0:
                    with kb.loop(0, s.wo, bn, "cCo") as co0:
                        for c in cs:
                            kb.map(MapKind.FILL, [], c, value=0.0)
                        with kb.loop(0, s.kh, 1, "cKr") as kr:
                            with kb.loop(0, s.kw, 1, "cKc") as kc:
                                with kb.loop(0, s.c, bk, "cNi") as k0:
                                    kb.load(w, [m0, kr, kc, k0], [bm, 1, 1, bk], a_s)
                                    kb.map(conv, [a_s], a)
                                    ci = _add(kb, _scaled(kb, co0, sw), _scaled(kb, kc, dw), -pl)
                                    for (gb, gr), c in zip(members, cs):
                                        n = _add(kb, n0, gb)
                                        ri = _add(kb, _scaled(kb, ro0, sh), gr * sh - pt, _scaled(kb, kr, dh))
                                        kb.load(x, [n, k0, ri, ci], [1, bk, 1, bn], b_s,
                                                strides=[1, 1, 1, sw])
                                        kb.map(conv, [b_s], b)
                                        kb.insert(tile.GemmOp(a, b, c, bm, bn, bk, plan.scheme))
                        if bv is not None:
                            assert bias_s is not None and bias_t is not None
                            kb.load(bv, [m0, 0], [bm, 1], bias_s)
                            kb.map(conv, [bias_s], bias_t)
                        for (gb, gr), c in zip(members, cs):
                            if bias_t is not None:
                                kb.map(MapKind.ADD, [c, bias_t], c)
                            kb.apply_fused(fused, c)
                            kb.map(conv, [c], c_s)
                            kb.store(c_s, y, [_add(kb, n0, gb), m0, _add(kb, ro0, gr), co0], [1, bm, 1, bn])
        kb.finish(rewriter)

    # -- implicit, unfolded in LDM ---------------------------------------------------------

    def _unfold(self, rewriter: PatternRewriter, op, name: str, plan: UnfoldPlan, X: SSAValue, Y: SSAValue,
                bias: SSAValue | None, w_np: np.ndarray, fused: Sequence[FusedMap]) -> None:
        """The implicit convolution with the taps concatenated along K (module docstring of
        :mod:`taihu.backends.model.unfold_conv`): per (bm output channels, image, 8 output rows)
        C block, per K block of cb channels: the weight tile, kh input-row tiles (one output
        row per mesh column, pad 0.0 at the image border), ``tile.unfold`` into B, ``tile.gemm``."""
        s = plan.shape
        el = _elem(X)
        kk = s.kh * s.kw
        # vec m: A is vector-loaded along M, stored (k, m) in LDM: keep the weights K-major in
        # memory (a compile-time transpose) so that the fp32 -> fp64 conversion is a plain
        # convert, not a transposing one (~0.5 instead of ~2.4 cycles per element)
        trans_a = plan.vec == "m"
        wu = unfold_weights(w_np, plan.g)
        wt = self.state.new_global(rewriter, np.ascontiguousarray(wu.T) if trans_a else wu, f"{name}_wu").memref
        wo_p = plan.wo_p or s.wo
        # padded output rows (Wo_p > Wo, the register tile's multiple): C blocks go to a
        # (N, M, Ho*Wo_p) buffer, a relayout kernel keeps the Wo valid columns of every row
        ybuf = self.alloc(rewriter, (s.n, s.m, s.ho * wo_p), el, f"{name}_rows") if wo_p != s.wo else None
        yv = ybuf if ybuf is not None else self.view(rewriter, Y, (s.n, s.m, s.ho * s.wo))
        kb = self._kb(name, op, s, "implicit", name, fused)
        kb.attrs["taihu.blocking"] = StringAttr(
            f"bm={plan.bm} bn={plan.bn} bk={plan.bk} cb={plan.cb} scheme={plan.scheme} vec={plan.vec} variant=unfold")
        x, w, y = kb.arg(X, "x"), kb.arg(wt, "w"), kb.arg(yv, "y")
        bv = kb.arg(self.view(rewriter, bias, (s.m, 1)), "bias") if bias is not None else None
        # a residual sum (rows not padded: y is the NCHW output, fuses_residual) and what
        # follows it act on the stored fp32 tile; its window is loaded at the block start
        r0 = next((i for i, f in enumerate(fused) if f.is_residual), len(fused))
        pre, post = list(fused[:r0]), self.bind_fused(rewriter, kb, fused[r0:], y)
        lay = gemm_operand_layouts(plan.vec, trans_a, False)
        bm, bn, bk, cb = plan.bm, plan.bn, plan.bk, plan.cb
        hoist_a = cb >= s.c
        a_shape = (bk, bm) if trans_a else (bm, bk)
        a_s = kb.alloc(a_shape, el, lay["A"][0], double=not hoist_a, name="w_s")
        a = kb.alloc(a_shape, f64, lay["A"][0], layout=lay["A"][1], name="w_t")
        rows = [kb.alloc((cb, MESH, s.w), el, tile.Dist.RC, double=True, name=f"x_r{i}") for i in range(s.kh)]
        b = kb.alloc((bk, bn), f64, tile.Dist.RC, name="x_u")
        c = kb.alloc((bm, bn), f64, lay["C"][0], layout=lay["C"][1], name="y_t")
        c_s = kb.alloc((bm, bn), el, lay["C"][0], double=True, name="y_s")
        bias_s = bias_t = None
        if bv is not None:
            bias_s = kb.alloc((bm, 1), el, tile.Dist.REP, name="bias_s")
            bias_t = kb.alloc((bm, 1), f64, tile.Dist.REP, name="bias")
        conv = MapKind.CONVERT if s.dtype == "f32" else MapKind.COPY
        sh, sw = s.strides
        dh, dw = s.dilations
        pt, pl, _, pr = s.pads
        with kb.loop(0, s.m, bm, "cNo") as m0:
            with kb.loop(0, s.n, 1, "cB") as n:
                with kb.loop(0, s.ho, MESH, "cRo") as ro0:
                    if post:
                        kb.prefetch_fused(c_s.type, post, [n, m0, _scaled(kb, ro0, wo_p)], [1, bm, bn])  # type: ignore[arg-type]
                    kb.map(MapKind.FILL, [], c, value=0.0)
                    with kb.loop(0, s.c, cb, "cNi") as k0:
                        if trans_a:
                            kb.load(w, [_scaled(kb, k0, kk), m0], [bk, bm], a_s)
                        else:
                            kb.load(w, [m0, _scaled(kb, k0, kk)], [bm, bk], a_s)
                        kb.map(conv, [a_s], a)
                        for kr, r in enumerate(rows):
                            ri = _add(kb, _scaled(kb, ro0, sh), kr * dh - pt)
                            kb.load(x, [n, k0, ri, 0], [1, cb, MESH, s.w], r, strides=[1, 1, sh, 1])
                        kb.insert(tile.UnfoldOp(rows, b, s.kw, sw, (pl, pr + (wo_p - s.wo) * sw), dw))
                        kb.insert(tile.GemmOp(a, b, c, bm, bn, bk, plan.scheme, trans_a=trans_a))
                    if bv is not None:
                        assert bias_s is not None and bias_t is not None
                        kb.load(bv, [m0, 0], [bm, 1], bias_s)
                        kb.map(conv, [bias_s], bias_t)
                        kb.map(MapKind.ADD, [c, bias_t], c)
                    kb.apply_fused(pre, c)
                    kb.map(conv, [c], c_s)
                    kb.store_fused(c_s, post, y, [n, m0, _scaled(kb, ro0, wo_p)], [1, bm, bn])
        kb.finish(rewriter)
        if ybuf is not None:
            self._crop_rows(rewriter, op, name, s, ybuf, Y, wo_p)

    def _crop_rows(self, rewriter: PatternRewriter, op, name: str, s: ConvShape, src: SSAValue, Y: SSAValue,
                   wo_p: int) -> None:
        """(N*M*Ho, Wo_p) -> (N*M*Ho, Wo): ``q`` rows per CPE per step, read as one strided DMA
        (Wo of every Wo_p elements) and written contiguously, double-buffered."""
        el = _elem(src)
        rows = s.n * s.m * s.ho
        q = crop_rows_per_task(rows, s.wo, s.elem, self.state.ldm_budget)
        tm = N_CPE * q
        sv = self.view(rewriter, src, (rows, wo_p))
        yv = self.view(rewriter, Y, (rows, s.wo))
        kb = KernelBuilder(self.state, f"{name}_relayout", op, algorithm="relayout",
                           shape=f"{rows}x{s.wo} <- {rows}x{wo_p}", layer=name)
        a, b = kb.arg(sv, "src"), kb.arg(yv, "y")
        t = kb.alloc((tm, s.wo), el, tile.Dist.CPE, double=True, name="t")
        with kb.loop(0, rows, tm, "r") as r0:
            kb.load(a, [r0, 0], [tm, s.wo], t)
            kb.store(t, b, [r0, 0], [tm, s.wo])
        kb.finish(rewriter)

    # -- winograd ------------------------------------------------------------------------------

    def _winograd(self, rewriter: PatternRewriter, op, name: str, plan: WinogradPlan, X: SSAValue, Y: SSAValue,
                  bias: SSAValue | None, w_np: np.ndarray | None, fused: Sequence[FusedMap]) -> None:
        s = plan.shape
        el = _elem(X)
        # 1. filter transform U (16, M, C)
        g = plan.gemm
        if w_np is not None:
            u_np = winograd_filter_transform(w_np)
            if g.overlap:  # the overlapping-distribution GEMM reads U^T (16, C, M): M contiguous (vec n)
                u_np = np.ascontiguousarray(u_np.transpose(0, 2, 1))
            U: SSAValue = self.state.new_global(rewriter, u_np, f"{name}_u").memref
        else:
            W = self.buffer(rewriter, op.weight)
            U = self.alloc(rewriter, (16, s.m, s.c), el, f"{name}_u")
            kb = self._kb(name, op, s, "winograd", name, suffix="_filter")
            kb.insert(tile.WinogradFilterOp.build(operands=[kb.arg(W, "w"), kb.arg(U, "u")]))
            kb.finish(rewriter)
        # 2. input transform V (16, P_pad, C)
        V = self.alloc(rewriter, (16, plan.p_pad, s.c), el, f"{name}_v")
        kb = self._kb(name, op, s, "winograd", name, suffix="_input")
        props: dict[str, Attribute] = {"tiles_per_cpe": IntegerAttr(plan.tiles_per_cpe, i64)}
        if any(s.pads):
            props["pads"] = _i64s(s.pads)
        kb.insert(tile.WinogradInputOp.build(operands=[kb.arg(X, "x"), kb.arg(V, "v")], properties=props))
        kb.finish(rewriter)
        # 3. 16 GEMMs M^(xi) (P_pad, M) = V^(xi) (P_pad, C) x U^(xi)^T
        Mw = self.alloc(rewriter, (16, plan.p_pad, s.m), el, f"{name}_m")
        kb = self._kb(name, op, s, "winograd", name)
        kb.attrs["taihu.blocking"] = StringAttr(
            f"bm={g.bm} bn={g.bn} bk={g.bk} scheme={g.scheme} vec={g.vec}" + (" hoist_a" if g.hoist_a else "")
            + (" hoist_b" if g.hoist_b else "") + (" overlap" if g.overlap else "") + f" p_pad={plan.p_pad}")
        v, u, m = kb.arg(V, "v"), kb.arg(U, "u"), kb.arg(Mw, "m")
        emit_gemm(
            kb, g,
            GemmAccess(v, lambda iv, r, k: [iv[0], r, k], [1, g.bm, g.bk]),
            GemmAccess(u, lambda iv, k, j: [iv[0], k, j], [1, g.bk, g.bn]) if not g.trans_b else
            GemmAccess(u, lambda iv, j, k: [iv[0], j, k], [1, g.bn, g.bk]),
            GemmAccess(m, lambda iv, r, j: [iv[0], r, j], [1, g.bm, g.bn]),
            outer=[(16, "xi")], elem=el,
        )
        kb.finish(rewriter)
        # 4. output transform y = A^T m A; the bias and a single parameter-less activation are
        # applied in LDM before the store (no extra pass over y)
        acts = [f for f in fused if f.kind != MapKind.COPY]
        in_output = all(f.operand is None for f in fused) and (
            not acts or (len(acts) == 1 and acts[0].kind in tile.WINOGRAD_OUTPUT_ACTIVATIONS and not acts[0].params))
        kb = self._kb(name, op, s, "winograd", name, fused if in_output else (), suffix="_output")
        m_arg, y_arg = kb.arg(Mw, "m"), kb.arg(Y, "y")
        b_arg = kb.arg(self.view(rewriter, bias, (s.m,)), "bias") if in_output and bias is not None else None
        kb.insert(tile.WinogradOutputOp(m_arg, y_arg, b_arg, acts[0].kind if in_output and acts else None))
        kb.finish(rewriter)
        # 5. otherwise bias and absorbed activations (the output is no longer in LDM): one
        # in-place map kernel
        if not in_output and (bias is not None or fused):
            from taihu.passes.conversion.graph_to_tile.maps import Access, Step, emit_elementwise

            hw = s.ho * s.wo
            yv = self.view(rewriter, Y, (s.n, s.m, hw))
            kb = self._kb(name, op, s, "map", name, fused, suffix="_bias")
            ya = Access(kb.arg(yv, "y"), (True, True, True))
            ins = [ya]
            steps = []
            if bias is not None:
                ins.append(Access(kb.arg(self.view(rewriter, bias, (1, s.m, 1)), "bias"), (False, True, False)))
                steps.append(Step(MapKind.ADD, (0, 1)))
            emit_elementwise(self.state, kb, (s.n, s.m, hw), ins, ya, steps, fused)
            kb.finish(rewriter)


def patterns(state: LoweringState) -> list[RewritePattern]:
    """The patterns of this module."""
    return [ConvPattern(state)]
