"""``graph-fold-batchnorm``: fold per-channel affine ops (batch_norm, mul/add/sub/div by a
per-channel constant) into the neighbouring conv2d / gemm, and consecutive gemms into one.

This is CDUCA's graph-engine linear folding (seed 003 L23-45, spec algorithms.md §M1-M4):
conv, FC (gemm), inference batch-norm and scale are all ``Y = X·W + B`` with constant W, B, so
a run of them folds into one op with new constants.

Forward fold (an affine op *after* a conv2d / gemm), per output channel c (spec §M3)::

    y = k_c · x + t_c               (batch_norm: k = γ/√(σ²+ε), t = β − k·μ;
                                     mul s: k = s, t = 0; add t: k = 1; sub: t = −s;
                                     div s: k = 1/s)
    W'[c, ...] = k_c · W[c, ...]    b'_c = k_c · b_c + t_c      (bias created when absent)

Applied one op at a time, conv → BN → scale(mul) → add(t) composes to 003's
``k_c = s_c·γ_c/√(σ_c²+ε)``, ``b'_c = k_c·(b_c − μ_c) + s_c·β_c + t_c`` (spec §M3, DO-2).
For gemm (``Y = α·A'·B' + β·C``, channel = column n): B' columns scaled by k, ``C' = k·β·C + t``
and β' = 1.

Backward fold (an affine op *before* a conv2d, per input channel; option ``fold-backward``)::

    W'[m, c, ...] = W[m, c, ...] · k_c      b'_m = b_m + Σ_{c,h,w} W[m, c, h, w] · t_c

Gemm-chain fold (option ``fold-gemm-chains``, 003 eq. 6-7 with eq. 3 corrected):
``Y1 = X·W1 + B1``, ``Y2 = Y1·W2 + B2``  →  ``W' = W1·W2``, ``B' = B1·W2 + B2`` (DO-1).

Guards (spec §M4; a refused fold leaves the IR unchanged):

* fan-out: the value between the two folded ops has exactly one use (DO-6);
* padding: an affine op that *precedes* a zero-padded conv is never folded into it — the padded
  border would see the folded bias instead of zero (DO-7: corner 8 vs 13);
* profitability (gemm chains only): the folded gemm must not have more MACs per row nor more
  constant elements than the pair (DO-3 folds 192 → 32 MACs; DO-4, 512→16→512, is refused);
* dtype: every operand, constant and result has the same float element type (f16/f32/f64); the
  fold is computed in float64 and rounded once to that type, and refused if a folded constant is
  not finite in it (f16 overflow: 300·300 > 65504);
* constants only: weights, biases and affine parameters must be ``graph.constant``; the affine
  parameter must broadcast over the channel dim 1 only (shape (1, C, 1, 1), (C, 1, 1), scalar…),
  and the affine op must not broadcast its result beyond its tensor input's type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from taihu.dialects import graph
from taihu.passes.graph.utils import (
    ensure_builtin_loaded,
    constant_array,
    erase_dead_constants,
    has_single_use,
    numpy_dtype,
    shape_of,
)

# --------------------------------------------------------------------------------------------
# Fold arithmetic (pure numpy, no IR). All results are float64; callers cast once.
# --------------------------------------------------------------------------------------------


def channel_vector(param: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray | None:
    """The per-channel vector (C,) of a constant broadcast against a tensor of ``out_shape``
    whose channel dim is 1, or None if ``param`` varies along any other dim.

    numpy broadcasting aligns trailing dims, so for a rank-4 tensor (N, C, H, W) the accepted
    shapes are (), (1,), (C, 1, 1), (1, C, 1, 1), (1, 1, 1) ... ; a (C,) vector is only per-channel
    for a rank-2 tensor (gemm output (M, N), channel = N).
    """
    rank = len(out_shape)
    if rank < 2 or param.ndim > rank:
        return None
    channels = out_shape[1]
    full: np.ndarray = param.reshape((1,) * (rank - param.ndim) + param.shape)
    for d, n in enumerate(full.shape):
        if d == 1:
            if n not in (1, channels):
                return None
        elif n != 1:
            return None
    return np.broadcast_to(full.reshape(-1).astype(np.float64), (channels,)).copy()


def batchnorm_affine(
    gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, var: np.ndarray, epsilon: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Inference batch-norm as ``y = k·x + t`` per channel: ``k = γ/√(σ²+ε)``, ``t = β − k·μ``.

    Returns None if some ``σ² + ε`` is not positive (the op would produce inf/nan).
    """
    denom = np.asarray(var, np.float64) + float(epsilon)
    if not np.all(denom > 0):
        return None
    k = np.asarray(gamma, np.float64) / np.sqrt(denom)
    t = np.asarray(beta, np.float64) - k * np.asarray(mean, np.float64)
    return k, t


def fold_affine_after_conv(
    weight: np.ndarray, bias: np.ndarray | None, k: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Conv (weight (M, C/g, kH, kW), bias (M,) or None) followed by per-output-channel
    ``y = k·x + t`` (k, t of shape (M,)): returns ``(k·W, k·b + t)``."""
    w = np.array(weight, np.float64)  # a copy, scaled in place (one pass over the weights)
    b = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, np.float64)
    w *= k.reshape((-1,) + (1,) * (w.ndim - 1))
    return w, k * b + t


def fold_affine_after_gemm(
    b_mat: np.ndarray,
    c_mat: np.ndarray | None,
    beta: float,
    trans_b: bool,
    k: np.ndarray,
    t: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Gemm ``Y = α·A'·B' + β·C`` (B (K, N), or (N, K) if trans_b) followed by per-column
    ``y = k·Y + t`` (k, t (N,)): returns ``(B scaled per column, C' = k·β·C + t)``; the folded
    gemm keeps α and uses β' = 1. C' has the broadcast shape of C and (N,)."""
    bm = np.asarray(b_mat, np.float64)
    b_new = bm * (k[:, None] if trans_b else k[None, :])
    if c_mat is None:
        c_new = t.copy()
    else:
        c_new = k * (float(beta) * np.asarray(c_mat, np.float64)) + t
    return b_new, c_new


def fold_affine_before_conv(
    weight: np.ndarray, bias: np.ndarray | None, k: np.ndarray, t: np.ndarray, group: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-input-channel ``x' = k·x + t`` (k, t (C,)) followed by an *unpadded* conv with
    weight (M, C/g, kH, kW), bias (M,) or None, ``group`` g. Returns
    ``W'[m,c] = W[m,c]·k_c`` and ``b'_m = b_m + Σ_{c,h,w} W[m,c,h,w]·t_c`` (channels of m's group).

    Only valid when the conv has no padding (see the module docstring, DO-7)."""
    w = np.asarray(weight, np.float64)
    m, cg, kh, kw = w.shape
    wr = w.reshape(group, m // group, cg, kh, kw)
    kk = k.reshape(group, cg)
    tt = t.reshape(group, cg)
    w_new = (wr * kk[:, None, :, None, None]).reshape(w.shape)
    extra = np.einsum("gmchw,gc->gm", wr, tt).reshape(m)
    b = np.zeros(m) if bias is None else np.asarray(bias, np.float64)
    return w_new, b + extra


def fold_gemm_chain(
    b1: np.ndarray,
    c1: np.ndarray | None,
    alpha1: float,
    beta1: float,
    trans_b1: bool,
    b2: np.ndarray,
    c2: np.ndarray | None,
    alpha2: float,
    beta2: float,
    trans_b2: bool,
    m: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Fold ``Y1 = α1·A'·B1' + β1·C1`` (Y1 (m, H)) and ``Y2 = α2·Y1·B2' + β2·C2`` into
    ``Y2 = A'·W' + B'`` (α = β = 1): ``W' = α1·α2·B1'·B2'`` (K, N),
    ``B' = α2·β1·C1·B2' + β2·C2`` (seed 003 eq. 6). B' is (N,) unless C1 or C2 vary along rows,
    then (m, N)."""
    p1 = np.asarray(b1, np.float64)
    p1 = p1.T if trans_b1 else p1
    p2 = np.asarray(b2, np.float64)
    p2 = p2.T if trans_b2 else p2
    h, n = p2.shape
    w_new = float(alpha1) * float(alpha2) * (p1 @ p2)
    bias = np.zeros(n)
    if c1 is not None:
        cb = float(beta1) * np.asarray(c1, np.float64)
        if cb.ndim == 2 and cb.shape[0] != 1:
            cfull = np.broadcast_to(cb, (m, h))
        else:
            cfull = np.broadcast_to(cb.reshape(cb.shape[-1:]), (h,))
        bias = float(alpha2) * (cfull @ p2)
    if c2 is not None:
        bias = bias + float(beta2) * np.asarray(c2, np.float64)
    return w_new, bias


def gemm_chain_profitable(k: int, h: int, n: int, consts_before: int, consts_after: int) -> bool:
    """Spec §M4(c): fold only if neither the MACs per row (K·H + H·N → K·N) nor the constant
    element count grow. DO-3: 192 → 32 MACs, 212 → 36 constants; DO-4 (512→16→512): refused."""
    return k * n <= k * h + h * n and consts_after <= consts_before


# --------------------------------------------------------------------------------------------
# Matching affine ops in IR.
# --------------------------------------------------------------------------------------------


@dataclass
class Affine:
    """A per-channel affine op ``y = k·x + t`` found in the IR."""

    op: Operation
    x: SSAValue
    k: np.ndarray
    t: np.ndarray
    params: tuple[SSAValue, ...]


def _same_element_type(*values: SSAValue | None) -> bool:
    types = {
        v.type.element_type
        for v in values
        if v is not None and isinstance(v.type, TensorType)
    }
    return len(types) <= 1 and all(
        v is None or isinstance(v.type, TensorType) for v in values
    )


def match_affine(op: Operation) -> Affine | None:
    """Recognise ``op`` as a per-channel affine op with constant parameters, or None.

    batch_norm (any rank ≥ 2); mul/add by a constant on either side; ``x − c``, ``c − x``;
    ``x / c`` (c nonzero). Requires: result type == the tensor input's type (no broadcast
    growth), equal element types, and a parameter that varies along dim 1 only."""
    if len(op.results) != 1:
        return None
    out_type = op.results[0].type
    if isinstance(op, graph.BatchNormOp):
        x = op.input
        params = (op.scale, op.bias, op.mean, op.var)
        if x.type != out_type or not _same_element_type(x, *params):
            return None
        shape = shape_of(x)
        if len(shape) < 2:
            return None
        arrays = [constant_array(p) for p in params]
        present = [a for a in arrays if a is not None and a.shape == (shape[1],)]
        if len(present) != len(arrays):
            return None
        gamma, beta, mean, var = present
        kt = batchnorm_affine(gamma, beta, mean, var, epsilon=float(op.epsilon))
        if kt is None:
            return None
        return Affine(op, x, kt[0], kt[1], params)
    if not isinstance(op, (graph.MulOp, graph.AddOp, graph.SubOp, graph.DivOp)):
        return None
    lhs, rhs = op.lhs, op.rhs
    lc, rc = constant_array(lhs), constant_array(rhs)
    if (lc is None) == (rc is None):
        return None  # both constant (fold-constants' job) or neither
    x, p, pval, x_first = (lhs, rhs, rc, True) if rc is not None else (rhs, lhs, lc, False)
    assert pval is not None
    if x.type != out_type or not _same_element_type(x, p):
        return None
    vec = channel_vector(pval, shape_of(x))
    if vec is None:
        return None
    ones, zeros = np.ones_like(vec), np.zeros_like(vec)
    if isinstance(op, graph.MulOp):
        k, t = vec, zeros
    elif isinstance(op, graph.AddOp):
        k, t = ones, vec
    elif isinstance(op, graph.SubOp):
        k, t = (ones, -vec) if x_first else (-ones, vec)
    else:  # DivOp
        if not x_first or not np.all(vec != 0):
            return None
        k, t = 1.0 / vec, zeros
    return Affine(op, x, k, t, (p,))


class _ConvAttrs(TypedDict):
    """The keyword arguments of :class:`graph.Conv2dOp` besides its operands."""

    strides: tuple[int, ...]
    pads: tuple[int, ...]
    dilations: tuple[int, ...]
    group: int


def _conv_attrs(conv: graph.Conv2dOp) -> _ConvAttrs:
    return _ConvAttrs(
        strides=tuple(conv.strides),
        pads=tuple(conv.pads),
        dilations=tuple(conv.dilations),
        group=int(conv.group),
    )


def _fitting_constants(dtype: np.dtype, *named: tuple[np.ndarray, str]) -> list[graph.ConstantOp] | None:
    """The ``graph.constant`` ops of the folded arrays ``(array, name hint)`` rounded to
    ``dtype`` (as :func:`~taihu.passes.graph.utils.make_constant` builds them), or None when
    guard (d) refuses the fold: some folded constant is not finite once rounded to the element
    type (an f16 fold such as ``300·W`` with W = 300 would overflow to inf). Each array is
    rounded once, for the check and the constant."""
    with np.errstate(over="ignore"):
        rounded = [np.ascontiguousarray(np.asarray(a).astype(dtype)) for a, _ in named]
    if not all(bool(np.all(np.isfinite(r))) for r in rounded):
        return None
    return [graph.constant(r, name_hint=hint) for r, (_, hint) in zip(rounded, named)]


def _dtype_of(value: SSAValue) -> np.dtype | None:
    dt = numpy_dtype(value.type)
    return dt if dt is not None and dt.kind == "f" else None


# --------------------------------------------------------------------------------------------
# Rewrite patterns.
# --------------------------------------------------------------------------------------------


class FoldAffineIntoPrecedingOp(RewritePattern):
    """``affine(conv2d(...))`` / ``affine(gemm(...))`` → one conv2d / gemm with new constants."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        aff = match_affine(op)
        if aff is None or not isinstance(aff.x, OpResult):
            return
        producer = aff.x.op
        if not isinstance(producer, (graph.Conv2dOp, graph.GemmOp)):
            return
        # Guard (a) fan-out: the producer's result feeds only this affine op.
        if not has_single_use(aff.x, op):
            return
        dtype = _dtype_of(aff.x)
        if dtype is None:
            return
        if isinstance(producer, graph.Conv2dOp):
            w = constant_array(producer.weight)
            b = constant_array(producer.bias) if producer.bias is not None else None
            if w is None or (producer.bias is not None and b is None):
                return
            if not _same_element_type(producer.input, producer.weight, producer.bias, aff.x):
                return
            w_new, b_new = fold_affine_after_conv(w, b, aff.k, aff.t)
            consts = _fitting_constants(dtype, (w_new, "folded_weight"), (b_new, "folded_bias"))
            if consts is None:
                return
            cw, cb = consts
            new: graph.Conv2dOp | graph.GemmOp = graph.Conv2dOp(
                producer.input, cw.results[0], cb.results[0], **_conv_attrs(producer)
            )
            old_consts = (producer.weight, producer.bias, *aff.params)
        else:
            gemm = producer
            bm = constant_array(gemm.b)
            cm = constant_array(gemm.c) if gemm.c is not None else None
            if bm is None or (gemm.c is not None and cm is None):
                return
            if not _same_element_type(gemm.a, gemm.b, gemm.c, aff.x):
                return
            b_new, c_new = fold_affine_after_gemm(
                bm, cm, float(gemm.beta), bool(gemm.trans_b), aff.k, aff.t
            )
            consts = _fitting_constants(dtype, (b_new, "folded_weight"), (c_new, "folded_bias"))
            if consts is None:
                return
            cb, cc = consts
            new = graph.GemmOp(
                gemm.a,
                cb.results[0],
                cc.results[0],
                alpha=float(gemm.alpha),
                beta=1.0,
                trans_a=bool(gemm.trans_a),
                trans_b=bool(gemm.trans_b),
            )
            cw = cb
            cb = cc
            old_consts = (gemm.b, gemm.c, *aff.params)
        if new.results[0].type != op.results[0].type:
            return
        rewriter.insert([cw, cb], InsertPoint.before(producer))
        rewriter.replace(op, new)
        rewriter.erase(producer)
        erase_dead_constants(rewriter, old_consts)


class FoldAffineIntoFollowingConv(RewritePattern):
    """``conv2d(affine(x))`` with an unpadded conv → ``conv2d(x)`` with new constants.

    Refused (IR unchanged) when the conv has any nonzero pad: the zero border of the padded
    input would otherwise see ``t`` through the folded bias (spec §M4(b), DO-7)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: graph.Conv2dOp, rewriter: PatternRewriter, /) -> None:
        inp = conv.input
        if not isinstance(inp, OpResult):
            return
        aff = match_affine(inp.op)
        if aff is None:
            return
        # Guard (b) padding: never fold backward into a zero-padded conv.
        if any(int(p) != 0 for p in conv.pads):
            return
        # Guard (a) fan-out: the affine result feeds only this conv.
        if not has_single_use(inp, conv):
            return
        dtype = _dtype_of(inp)
        if dtype is None or not _same_element_type(aff.x, conv.weight, conv.bias, conv.results[0]):
            return
        w = constant_array(conv.weight)
        b = constant_array(conv.bias) if conv.bias is not None else None
        if w is None or (conv.bias is not None and b is None):
            return
        w_new, b_new = fold_affine_before_conv(w, b, aff.k, aff.t, int(conv.group))
        consts = _fitting_constants(dtype, (w_new, "folded_weight"), (b_new, "folded_bias"))
        if consts is None:
            return
        cw, cb = consts
        new = graph.Conv2dOp(aff.x, cw.results[0], cb.results[0], **_conv_attrs(conv))
        if new.results[0].type != conv.results[0].type:
            return
        rewriter.insert([cw, cb], InsertPoint.before(conv))
        rewriter.replace(conv, new)
        rewriter.erase(aff.op)
        erase_dead_constants(rewriter, (conv.weight, conv.bias, *aff.params))


class FoldGemmChain(RewritePattern):
    """``gemm(gemm(A, W1, B1), W2, B2)`` → ``gemm(A, W1·W2, B1·W2 + B2)`` when profitable."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, g2: graph.GemmOp, rewriter: PatternRewriter, /) -> None:
        y1 = g2.a
        if not isinstance(y1, OpResult) or not isinstance(y1.op, graph.GemmOp):
            return
        g1 = y1.op
        if bool(g2.trans_a) or not has_single_use(y1, g2):
            return
        dtype = _dtype_of(y1)
        if dtype is None or not _same_element_type(
            g1.a, g1.b, g1.c, g2.b, g2.c, g2.results[0]
        ):
            return
        b1, b2 = constant_array(g1.b), constant_array(g2.b)
        c1 = constant_array(g1.c) if g1.c is not None else None
        c2 = constant_array(g2.c) if g2.c is not None else None
        if b1 is None or b2 is None:
            return
        if (g1.c is not None and c1 is None) or (g2.c is not None and c2 is None):
            return
        m, h = shape_of(y1)
        n = shape_of(g2.results[0])[1]
        k = b1.shape[1] if bool(g1.trans_b) else b1.shape[0]
        w_new, bias = fold_gemm_chain(
            b1, c1, float(g1.alpha), float(g1.beta), bool(g1.trans_b),
            b2, c2, float(g2.alpha), float(g2.beta), bool(g2.trans_b), m,
        )  # fmt: skip
        before = sum(a.size for a in (b1, b2, c1, c2) if a is not None)
        if not gemm_chain_profitable(k, h, n, before, w_new.size + bias.size):
            return
        consts = _fitting_constants(dtype, (w_new, "folded_weight"), (bias, "folded_bias"))
        if consts is None:
            return
        cw, cb = consts
        new = graph.GemmOp(
            g1.a, cw.results[0], cb.results[0],
            alpha=1.0, beta=1.0, trans_a=bool(g1.trans_a), trans_b=False,
        )  # fmt: skip
        if new.results[0].type != g2.results[0].type:
            return
        rewriter.insert([cw, cb], InsertPoint.before(g1))
        rewriter.replace(g2, new)
        rewriter.erase(g1)
        erase_dead_constants(rewriter, (g1.b, g1.c, g2.b, g2.c))


@dataclass(frozen=True)
class GraphFoldBatchNormPass(ModulePass):
    """Fold batch_norm / per-channel scale and bias into conv2d and gemm (seed 003 linear
    folding), with the fan-out, padding, profitability and dtype guards of spec §M4.

    Options (``-p 'graph-fold-batchnorm{fold-backward=false}'``):

    * ``fold_backward`` (default true): also fold an affine op into a *following* conv2d
      when that conv has no padding (never when padded, DO-7).
    * ``fold_gemm_chains`` (default true): fold ``gemm → gemm`` with constant weights into one
      gemm when neither MACs nor constant elements grow (DO-1, DO-3, DO-4).
    """

    name = "graph-fold-batchnorm"

    fold_backward: bool = True
    fold_gemm_chains: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ensure_builtin_loaded(ctx)
        patterns: list[RewritePattern] = [FoldAffineIntoPrecedingOp()]
        if self.fold_backward:
            patterns.append(FoldAffineIntoFollowingConv())
        if self.fold_gemm_chains:
            patterns.append(FoldGemmChain())
        PatternRewriteWalker(
            # No blanket trivial-DCE: only the constants a fold orphans are erased, so a
            # refused fold leaves the module exactly as it was.
            GreedyRewritePatternApplier(patterns, dce_enabled=False),
            apply_recursively=True,
        ).rewrite_module(op)
