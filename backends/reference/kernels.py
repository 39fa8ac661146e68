"""Pure numpy kernels for every ``graph`` dialect op (the golden model).

One side-effect-free function per op, named after the op (``conv2d``, ``max_pool``, ``lstm``...).
They take and return ``np.ndarray`` and never modify their inputs, so constant-folding passes can
call them directly without any IR. Semantics follow the ONNX operator specification
(https://onnx.ai/onnx/operators/) for the attribute set of the ``graph`` dialect; where ONNX's own
Python reference and onnxruntime disagree (the ``ceil_mode`` tail of pools) onnxruntime's
behaviour is used, see :func:`avg_pool`.

Conventions
- Tensors are NCHW / channel-first: ``(N, C, *spatial)``; the kernels accept any number of spatial
  dimensions, the ``graph`` dialect uses two.
- ``pads`` are in ONNX order ``(x1_begin, x2_begin, ..., x1_end, x2_end, ...)``.
- Results keep the input element type (f16, f32 or f64). Dot products and reductions (conv2d,
  matmul, gemm, avg/global-avg pool, batch_norm, LRN, softmax, LSTM) of f16 and f32 tensors are
  accumulated in float64 (f64 BLAS) and rounded to the input type once, so the golden result is
  the correctly rounded one to within the f64 accumulation error (~1e-16 relative, far below one
  f32 ulp) instead of carrying an f32 accumulation error that grows with K (a 256x512 @ 512x256
  std-normal f32 matmul is up to 5e-5 off when accumulated in f32 — larger than ``--check``'s
  atol 1e-5). Element-wise ops compute in the input type (they are exactly rounded already).
- Vectorized: convolution is im2col (an ``as_strided`` window view copied once) + BLAS GEMMs
  (one per image and group); pools and LRN loop over the *kernel taps* / window offsets only
  (``prod(kernel_shape)`` vectorized slices), never over tensor elements. The only other Python
  loop is LSTM's loop over time steps, which is inherent to the recurrence.

Errors: shape mismatches surface as ``ValueError`` (from numpy or from the explicit checks here);
the ``graph`` verifiers reject such IR before it reaches the interpreter.
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from taihu.dialects.graph import pool_output_size

__all__ = [
    "add",
    "avg_pool",
    "batch_norm",
    "cast",
    "clip",
    "concat",
    "conv2d",
    "div",
    "dropout",
    "flatten",
    "gemm",
    "global_avg_pool",
    "layout_transform",
    "leaky_relu",
    "lrn",
    "gru",
    "lstm",
    "matmul",
    "max_pool",
    "mul",
    "pad",
    "pool_output_shape",
    "conv_output_shape",
    "relu",
    "reshape",
    "sigmoid",
    "softmax",
    "sub",
    "sum",
    "tanh",
    "sqrt",
    "erf",
    "transpose",
    "unsqueeze",
]


# --------------------------------------------------------------------------------------------
# helpers


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """Accumulation type of dot products and reductions: float64 for every float type (f16, f32,
    f64), so the one final rounding to ``dtype`` gives the correctly rounded result (up to the
    f64 error); non-float types are returned unchanged."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float64) if dtype.kind == "f" else dtype


def _spatial(values: Sequence[int] | None, rank: int, default: int, what: str) -> tuple[int, ...]:
    if values is None:
        return (default,) * rank
    values = tuple(int(v) for v in values)
    if len(values) != rank:
        raise ValueError(f"{what} has {len(values)} entries, expected {rank}")
    return values


def _pads(pads: Sequence[int] | None, rank: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if pads is None:
        return (0,) * rank, (0,) * rank
    pads = tuple(int(p) for p in pads)
    if len(pads) != 2 * rank:
        raise ValueError(f"pads has {len(pads)} entries, expected {2 * rank}")
    return pads[:rank], pads[rank:]


def conv_output_shape(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, ...]:
    """Convolution output spatial sizes: ``(S + pb + pe - d*(k-1) - 1) // s + 1`` per dim.

    The formula is :func:`taihu.dialects.graph.pool_output_size` (the one the verifiers use).
    Raises ``ValueError`` if an output extent would be empty.
    """
    return pool_output_shape(spatial, kernel, strides, pads, dilations, ceil_mode=False)


def pool_output_shape(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> tuple[int, ...]:
    """ONNX pool output sizes, one per spatial dim, from :func:`taihu.dialects.graph.pool_output_size`.

    ``floor`` (or ``ceil`` when ``ceil_mode``) of ``(S + pb + pe - d*(k-1) - 1) / s + 1``; with
    ``ceil_mode`` the last window must start inside the input plus its begin padding, otherwise it
    is dropped (ONNX shape inference / onnxruntime rule). Raises ``ValueError`` if an output
    extent would be empty (the padded input is smaller than the dilated kernel).
    """
    rank = len(spatial)
    begin, end = _pads(pads, rank)
    out = tuple(
        pool_output_size(spatial[i], kernel[i], strides[i], begin[i], end[i], dilations[i], ceil_mode)
        for i in range(rank)
    )
    if any(o <= 0 for o in out):
        raise ValueError(f"convolution/pool output spatial shape {out} is empty")
    return out


def _pad_spatial(x: np.ndarray, begin: Sequence[int], end: Sequence[int], value: float) -> np.ndarray:
    """Pad the trailing spatial dims of ``x``; negative amounts crop."""
    if not any(begin) and not any(end):
        return x
    lead = x.ndim - len(begin)
    return pad(x, pads=(0,) * lead + tuple(begin) + (0,) * lead + tuple(end), value=value)


def _taps(
    xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out: Sequence[int]
):
    """Yield, per kernel tap, the strided view of ``xp`` (N, C, *S) that the tap reads."""
    lead = (slice(None),) * (xp.ndim - len(kernel))
    for tap in itertools.product(*(range(k) for k in kernel)):
        index = tuple(
            slice(t * d, t * d + s * (o - 1) + 1, s)
            for t, d, s, o in zip(tap, dilations, strides, out)
        )
        yield xp[lead + index]


# --------------------------------------------------------------------------------------------
# linear algebra


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    strides: Sequence[int] | None = (1, 1),
    pads: Sequence[int] | None = (0, 0, 0, 0),
    dilations: Sequence[int] | None = (1, 1),
    group: int = 1,
) -> np.ndarray:
    """ONNX Conv (cross-correlation), NCHW.

    x: (N, C, *S); w: (M, C/group, *K); b: (M,) or None -> (N, M, *O) with
    ``O = (S + pb + pe - dil*(K-1) - 1) // stride + 1``. ``group == C == M`` is depthwise.
    im2col: a zero-copy ``as_strided`` view (N, G, C/G, *K, *O) of the padded input is copied
    once into (N, G, C/G*prod(K), prod(O)) and multiplied by the weights (G, M/G, C/G*prod(K)):
    one 2-D BLAS GEMM per (image, group) (numpy's stacked matmul is up to 10x slower for these
    shapes), or one ``einsum`` when every group has a single output channel (depthwise).
    Raises ``ValueError`` on a channel/group or bias-shape mismatch or an empty output.
    """
    if x.ndim < 3 or w.ndim != x.ndim:
        raise ValueError(f"conv2d: input rank {x.ndim} and weight rank {w.ndim} must match (>= 3)")
    rank = x.ndim - 2
    strides = _spatial(strides, rank, 1, "strides")
    dilations = _spatial(dilations, rank, 1, "dilations")
    begin, end = _pads(pads, rank)
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    kernel = w.shape[2:]
    if group <= 0 or c % group or m % group or c // group != cg:
        raise ValueError(
            f"conv2d: input channels {c} must equal weight dim 1 ({cg}) * group ({group}), "
            f"and output channels {m} must be divisible by group"
        )
    dtype = x.dtype
    cdt = _compute_dtype(dtype)
    out = conv_output_shape(x.shape[2:], kernel, strides, (*begin, *end), dilations)
    xp = _pad_spatial(x.astype(cdt, copy=False), begin, end, 0.0)
    mg = m // group
    k = cg * math.prod(kernel)
    p = math.prod(out)
    sn, sc, *ss = xp.strides
    view = as_strided(
        xp,
        shape=(n, group, cg, *kernel, *out),
        strides=(sn, cg * sc, sc, *(s * d for s, d in zip(ss, dilations)), *(s * t for s, t in zip(ss, strides))),
        writeable=False,
    )
    cols = view.reshape(n, group, k, p)  # copies (once) unless the view is already contiguous
    wm = w.astype(cdt, copy=False).reshape(group, mg, k)
    if mg == 1 and group > 1:
        # depthwise-like: a matmul per group would be a matrix-vector product; einsum is faster
        y = np.einsum("gk,ngkp->ngp", wm[:, 0, :], cols, optimize=True)
    else:
        # one plain 2-D GEMM per (image, group): numpy's broadcasting (stacked) matmul is up to
        # 10x slower than the 2-D BLAS call for these shapes
        y = np.empty((n, group, mg, p), cdt)
        for i, g in itertools.product(range(n), range(group)):
            np.matmul(wm[g], cols[i, g], out=y[i, g])
    y = y.reshape(n, m, *out)
    if b is not None:
        if b.shape != (m,):
            raise ValueError(f"conv2d: bias shape {b.shape} must be ({m},)")
        y = y + b.astype(cdt, copy=False).reshape((m,) + (1,) * rank)
    return y.astype(dtype, copy=False)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy.matmul / ONNX MatMul: 1-D promotion and batch broadcasting."""
    dtype = np.result_type(a.dtype, b.dtype)
    cdt = _compute_dtype(dtype)
    y = np.matmul(a.astype(cdt, copy=False), b.astype(cdt, copy=False))
    return np.asarray(y).astype(dtype, copy=False)  # 1-D @ 1-D is a numpy scalar: keep an array


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    trans_a: bool = False,
    trans_b: bool = False,
) -> np.ndarray:
    """ONNX Gemm: ``Y = alpha * A' @ B' + beta * C``; A' (M, K), B' (K, N), C broadcastable to (M, N)."""
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"gemm: A and B must be 2-D, got shapes {a.shape} and {b.shape}")
    dtype = a.dtype
    cdt = _compute_dtype(dtype)
    a2 = a.astype(cdt, copy=False)
    b2 = b.astype(cdt, copy=False)
    if trans_a:
        a2 = a2.T
    if trans_b:
        b2 = b2.T
    y = a2 @ b2
    if alpha != 1.0:
        y *= cdt.type(alpha)
    if c is not None and beta != 0.0:
        cc = c.astype(cdt, copy=False)
        y += cc if beta == 1.0 else cc * cdt.type(beta)
    return y.astype(dtype, copy=False)


# --------------------------------------------------------------------------------------------
# elementwise


def add(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Elementwise ``lhs + rhs`` with numpy broadcasting."""
    return np.asarray(np.add(lhs, rhs))


def sub(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Elementwise ``lhs - rhs`` with numpy broadcasting."""
    return np.asarray(np.subtract(lhs, rhs))


def mul(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Elementwise ``lhs * rhs`` with numpy broadcasting."""
    return np.asarray(np.multiply(lhs, rhs))


def div(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Elementwise ``lhs / rhs`` with numpy broadcasting (IEEE: x/0 = ±inf, 0/0 = nan)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.divide(lhs, rhs))


def sum(inputs: Sequence[np.ndarray]) -> np.ndarray:  # noqa: A001 - named after graph.sum
    """ONNX Sum: elementwise sum of one or more tensors with numpy broadcasting."""
    if len(inputs) == 0:
        raise ValueError("sum: needs at least one input")
    shape = np.broadcast_shapes(*(i.shape for i in inputs))
    acc = np.array(np.broadcast_to(inputs[0], shape), dtype=inputs[0].dtype)  # fresh buffer
    for other in inputs[1:]:
        np.add(acc, other, out=acc)
    return acc


def relu(x: np.ndarray) -> np.ndarray:
    """``max(x, 0)``."""
    return np.asarray(np.maximum(x, x.dtype.type(0)))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic ``1 / (1 + exp(-x))``, evaluated without overflow: ``e = exp(-|x|)``."""
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return np.where(x >= 0, one / (one + e), e / (one + e)).astype(x.dtype, copy=False)


def tanh(x: np.ndarray) -> np.ndarray:
    """Hyperbolic tangent."""
    return np.asarray(np.tanh(x))


def sqrt(x: np.ndarray) -> np.ndarray:
    """Square root (NaN below 0)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(np.sqrt(x))


_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The Gauss error function, element by element with :func:`math.erf` (correctly rounded
    to double, then to x's type)."""
    return np.asarray(_ERF(x.astype(np.float64)), dtype=np.float64).astype(x.dtype, copy=False).reshape(x.shape)


def clip(x: np.ndarray, *, min: float = -math.inf, max: float = math.inf) -> np.ndarray:  # noqa: A002
    """ONNX Clip: ``min(max(x, min), max)`` (when min > max every element becomes max)."""
    t = x.dtype.type
    return np.asarray(np.minimum(np.maximum(x, t(min)), t(max)))


def leaky_relu(x: np.ndarray, *, alpha: float = 0.01) -> np.ndarray:
    """``x if x >= 0 else alpha * x``."""
    return np.where(x >= 0, x, x * x.dtype.type(alpha))


def dropout(x: np.ndarray, *, ratio: float = 0.5) -> np.ndarray:
    """Inference-mode Dropout: the identity (``ratio`` is ignored)."""
    del ratio
    return x


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``x`` converted to the float ``dtype`` (round to nearest even when narrowing, as numpy and
    IEEE 754: f32 -> f16 overflows to inf beyond 65504)."""
    with np.errstate(over="ignore"):
        return x.astype(dtype)


# --------------------------------------------------------------------------------------------
# pools and normalizations


def max_pool(
    x: np.ndarray,
    *,
    kernel_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    ceil_mode: bool = False,
) -> np.ndarray:
    """ONNX MaxPool (single output), x (N, C, *S) -> (N, C, *O), O from :func:`pool_output_shape`.

    Padding (explicit and the ceil_mode tail) never wins: it is ``-inf``.
    """
    g = _PoolGeometry.of(x, kernel_shape, strides, pads, dilations, ceil_mode)
    return g.reduce_taps(_pad_spatial(x, g.begin, g.tail, -math.inf), np.maximum)


def _ceil_tail(spatial, kernel, strides, begin, end, dilations, out) -> tuple[int, ...]:
    """End padding so every window of the ``out`` grid lies inside the padded input."""
    return tuple(
        builtins.max(end[i], (out[i] - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1 - spatial[i] - begin[i])
        for i in range(len(spatial))
    )


@dataclass(frozen=True)
class _PoolGeometry:
    """Normalized window parameters of a pool over x (N, C, *S): ``out`` grid and paddings.

    ``tail`` is the end padding actually needed (explicit end pads plus the ceil_mode tail).
    """

    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]
    tail: tuple[int, ...]

    @staticmethod
    def of(x, kernel_shape, strides, pads, dilations, ceil_mode) -> _PoolGeometry:
        rank = x.ndim - 2
        kernel = _spatial(kernel_shape, rank, 1, "kernel_shape")
        strides = _spatial(strides, rank, 1, "strides")
        dilations = _spatial(dilations, rank, 1, "dilations")
        begin, end = _pads(pads, rank)
        spatial = tuple(x.shape[2:])
        out = pool_output_shape(spatial, kernel, strides, (*begin, *end), dilations, ceil_mode)
        tail = _ceil_tail(spatial, kernel, strides, begin, end, dilations, out)
        return _PoolGeometry(spatial, kernel, strides, dilations, begin, end, out, tail)

    def reduce_taps(self, xp: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
        """``ufunc``-reduce the kernel taps of the padded input ``xp`` into (N, C, *out)."""
        result = None
        for view in _taps(xp, self.kernel, self.strides, self.dilations, self.out):
            if result is None:
                result = view.copy()
            else:
                ufunc(result, view, out=result)
        assert result is not None  # kernel dims are >= 1 (op verifiers): at least one tap
        return result


def avg_pool(
    x: np.ndarray,
    *,
    kernel_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> np.ndarray:
    """ONNX AveragePool, x (N, C, *S) -> (N, C, *O), O from :func:`pool_output_shape`.

    Divisor per output element: the number of taps inside the input (``count_include_pad``
    false) or inside input + explicit pads (true). Taps in the ceil_mode tail beyond the end pad
    are never counted (onnxruntime's rule; ONNX's Python reference recentres that tail instead).
    The divisor is separable, so it is built per dimension and broadcast.
    """
    g = _PoolGeometry.of(x, kernel_shape, strides, pads, dilations, ceil_mode)
    cdt = _compute_dtype(x.dtype)
    total = g.reduce_taps(_pad_spatial(x.astype(cdt, copy=False), g.begin, g.tail, 0.0), np.add)
    count = np.ones((), dtype=cdt)
    for i in range(len(g.spatial)):
        # position (in unpadded coordinates) of tap t of output o along dim i
        pos = (np.arange(g.out[i])[:, None] * g.strides[i] + np.arange(g.kernel[i])[None, :] * g.dilations[i]) - g.begin[i]
        lo, hi = (-g.begin[i], g.spatial[i] + g.end[i]) if count_include_pad else (0, g.spatial[i])
        per_dim = ((pos >= lo) & (pos < hi)).sum(axis=1).astype(cdt)
        count = np.multiply.outer(count, per_dim)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (total / count).astype(x.dtype, copy=False)


def global_avg_pool(x: np.ndarray) -> np.ndarray:
    """ONNX GlobalAveragePool: mean over all spatial dims, kept as size 1: (N, C, *S) -> (N, C, 1...)."""
    axes = tuple(range(2, x.ndim))
    return np.mean(x, axis=axes, keepdims=True, dtype=_compute_dtype(x.dtype)).astype(x.dtype, copy=False)


def batch_norm(
    x: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    *,
    epsilon: float = 1e-5,
) -> np.ndarray:
    """Inference BatchNormalization over channel dim 1: ``(x - mean) / sqrt(var + eps) * scale + bias``.

    Evaluated as ``x * a + (bias - mean * a)`` with ``a = scale / sqrt(var + eps)`` per channel.
    """
    cdt = _compute_dtype(x.dtype)
    shape = (x.shape[1],) + (1,) * (x.ndim - 2)
    a = scale.astype(cdt) / np.sqrt(var.astype(cdt) + cdt.type(epsilon))
    shift = bias.astype(cdt) - mean.astype(cdt) * a
    y = x.astype(cdt, copy=False) * a.reshape(shape)
    y += shift.reshape(shape)
    return y.astype(x.dtype, copy=False)


def lrn(x: np.ndarray, *, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0) -> np.ndarray:
    """ONNX LRN across channels (dim 1).

    ``square_sum[c] = sum(x[c']**2 for c' in [c - floor((size-1)/2), c + ceil((size-1)/2)])``,
    ``y = x / (bias + alpha / size * square_sum) ** beta``.
    """
    cdt = _compute_dtype(x.dtype)
    xc = x.astype(cdt, copy=False)
    c = x.shape[1]
    # window offsets more than c - 1 channels away only add zeros: clipped (a huge size would
    # otherwise pad by size channels and loop size times)
    lo = min((size - 1) // 2, max(c - 1, 0))
    hi = min(size - 1 - (size - 1) // 2, max(c - 1, 0))
    sq = _pad_spatial(xc * xc, (lo,) + (0,) * (x.ndim - 2), (hi,) + (0,) * (x.ndim - 2), 0.0)
    square_sum = sq[:, 0:c].copy()
    for j in range(1, lo + hi + 1):  # loop over the window offsets, vectorized over the tensor
        square_sum += sq[:, j : j + c]
    y = xc / (cdt.type(bias) + cdt.type(alpha / size) * square_sum) ** cdt.type(beta)
    return y.astype(x.dtype, copy=False)


def softmax(x: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """Opset-13 Softmax along one axis, numerically stable (the max is subtracted first)."""
    cdt = _compute_dtype(x.dtype)
    xc = x.astype(cdt, copy=False)
    e = np.exp(xc - np.max(xc, axis=axis, keepdims=True))
    e /= np.sum(e, axis=axis, keepdims=True)
    return e.astype(x.dtype, copy=False)


# --------------------------------------------------------------------------------------------
# data movement


def concat(inputs: Sequence[np.ndarray], *, axis: int) -> np.ndarray:
    """ONNX Concat along ``axis`` (negative counts from the end)."""
    return np.concatenate(list(inputs), axis=axis)


def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Reshape to the static ``shape`` (row-major; element counts must agree)."""
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"reshape: cannot reshape {x.shape} ({x.size} elements) to {shape}")
    return x.reshape(shape)


def flatten(x: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """ONNX Flatten: (d0..d_{axis-1}) x (d_axis..) -> 2-D; negative ``axis`` counts from the end."""
    if axis < 0:
        axis += x.ndim
    if not 0 <= axis <= x.ndim:
        raise ValueError(f"flatten: axis {axis} out of range for rank {x.ndim}")
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


def transpose(x: np.ndarray, *, perm: Sequence[int] | None = None) -> np.ndarray:
    """ONNX Transpose: output dim i is input dim ``perm[i]`` (default: reversed)."""
    return np.transpose(x, None if perm is None else tuple(perm))


def unsqueeze(x: np.ndarray, *, axes: Sequence[int]) -> np.ndarray:
    """ONNX Unsqueeze: insert size-1 dims at ``axes`` (relative to the output rank, may be negative)."""
    return np.expand_dims(x, tuple(int(a) for a in axes))


def pad(x: np.ndarray, *, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    """ONNX Pad, constant mode: pads (x1_begin, ..., xn_begin, x1_end, ..., xn_end).

    Negative amounts crop; the result has ``d + begin + end`` elements along each dim.
    """
    rank = x.ndim
    pads = tuple(int(p) for p in pads)
    if len(pads) != 2 * rank:
        raise ValueError(f"pad: pads has {len(pads)} entries, expected {2 * rank}")
    begin, end = pads[:rank], pads[rank:]
    if any(x.shape[i] + begin[i] + end[i] < 0 for i in range(rank)):
        raise ValueError(f"pad: pads {pads} crop more than the shape {x.shape}")
    crop = tuple(
        slice(builtins.max(0, -begin[i]), x.shape[i] - builtins.max(0, -end[i])) for i in range(rank)
    )
    cropped = x[crop]
    widths = [(builtins.max(0, begin[i]), builtins.max(0, end[i])) for i in range(rank)]
    if not any(a or b for a, b in widths):
        return cropped
    return np.pad(cropped, widths, mode="constant", constant_values=x.dtype.type(value))


def layout_transform(x: np.ndarray, *, from_layout: str, to_layout: str) -> np.ndarray:
    """Permute dims named by letters: perm = [from_layout.index(c) for c in to_layout]."""
    if sorted(from_layout) != sorted(to_layout) or len(set(from_layout)) != len(from_layout):
        raise ValueError(f"layout_transform: {from_layout!r} and {to_layout!r} must be permutations of distinct letters")
    if len(from_layout) != x.ndim:
        raise ValueError(f"layout_transform: layout {from_layout!r} has rank {len(from_layout)}, tensor has {x.ndim}")
    return np.transpose(x, [from_layout.index(c) for c in to_layout])


# --------------------------------------------------------------------------------------------
# recurrent


def gru(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    *,
    hidden_size: int,
    linear_before_reset: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """ONNX GRU, forward direction, layout 0, default activations (sigmoid, tanh).

    x (seq, batch, input); w (1, 3H, input); r (1, 3H, H); b (1, 6H) = [Wb, Rb]; initial_h
    (1, batch, H). Gate order z, r, h: ``z = σ(Xt Wzᵀ + H Rzᵀ + Wbz + Rbz)``, likewise r;
    ``h̃ = tanh(Xt Whᵀ + (r ⊙ H) Rhᵀ + Rbh + Wbh)`` (``linear_before_reset=0``) or
    ``tanh(Xt Whᵀ + r ⊙ (H Rhᵀ + Rbh) + Wbh)`` (1); ``H = (1 - z) ⊙ h̃ + z ⊙ H``.
    Returns (y (seq, 1, batch, H), y_h (1, batch, H))."""
    hs = int(hidden_size)
    seq, batch, _ = x.shape
    if w.shape[:2] != (1, 3 * hs) or r.shape != (1, 3 * hs, hs):
        raise ValueError(f"gru: W {w.shape} / R {r.shape} do not match hidden_size {hs}")
    dtype = x.dtype
    cdt = _compute_dtype(dtype)
    wt, rt = w[0].astype(cdt).T, r[0].astype(cdt).T  # (input, 3H), (H, 3H)
    wb = np.zeros(3 * hs, cdt) if b is None else b[0, : 3 * hs].astype(cdt)
    rb = np.zeros(3 * hs, cdt) if b is None else b[0, 3 * hs :].astype(cdt)
    h = np.zeros((batch, hs), cdt) if initial_h is None else initial_h[0].astype(cdt)
    xw = np.matmul(x.astype(cdt, copy=False), wt) + wb
    y = np.empty((seq, 1, batch, hs), cdt)
    for t in range(seq):
        zr = sigmoid(xw[t, :, : 2 * hs] + h @ rt[:, : 2 * hs] + rb[: 2 * hs])
        z, rg = zr[:, :hs], zr[:, hs:]
        if linear_before_reset:
            n = np.tanh(xw[t, :, 2 * hs :] + rg * (h @ rt[:, 2 * hs :] + rb[2 * hs :]))
        else:
            n = np.tanh(xw[t, :, 2 * hs :] + (rg * h) @ rt[:, 2 * hs :] + rb[2 * hs :])
        h = (1 - z) * n + z * h
        y[t, 0] = h
    return y.astype(dtype, copy=False), h[None].astype(dtype, copy=False)


def lstm(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    initial_c: np.ndarray | None = None,
    *,
    hidden_size: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX LSTM, forward direction, layout 0, default activations (sigmoid, tanh, tanh), no peepholes.

    x (seq, batch, input); w (1, 4H, input); r (1, 4H, H); b (1, 8H) = [Wb, Rb];
    initial_h / initial_c (1, batch, H). Gate order in w/r/b is i, o, f, c:
    ``i = σ(Xt Wiᵀ + H Riᵀ + Wbi + Rbi)``, likewise o, f; ``c̃ = tanh(...)``;
    ``C = f ⊙ C + i ⊙ c̃``; ``H = o ⊙ tanh(C)``.
    Returns (y (seq, 1, batch, H), y_h (1, batch, H), y_c (1, batch, H)).
    """
    hs = int(hidden_size)
    seq, batch, _ = x.shape
    if w.shape[:2] != (1, 4 * hs) or r.shape != (1, 4 * hs, hs):
        raise ValueError(f"lstm: W {w.shape} / R {r.shape} do not match hidden_size {hs}")
    dtype = x.dtype
    cdt = _compute_dtype(dtype)
    wt = w[0].astype(cdt).T  # (input, 4H)
    rt = r[0].astype(cdt).T  # (H, 4H)
    bias = np.zeros(4 * hs, cdt) if b is None else (b[0, : 4 * hs].astype(cdt) + b[0, 4 * hs :].astype(cdt))
    h = np.zeros((batch, hs), cdt) if initial_h is None else initial_h[0].astype(cdt)
    c = np.zeros((batch, hs), cdt) if initial_c is None else initial_c[0].astype(cdt)
    # the input projection of every step at once: (seq, batch, 4H)
    xw = np.matmul(x.astype(cdt, copy=False), wt) + bias
    y = np.empty((seq, 1, batch, hs), cdt)
    for t in range(seq):  # the recurrence is sequential in t
        gates = xw[t] + h @ rt
        i = sigmoid(gates[:, 0:hs])
        o = sigmoid(gates[:, hs : 2 * hs])
        f = sigmoid(gates[:, 2 * hs : 3 * hs])
        g = np.tanh(gates[:, 3 * hs :])
        c = f * c + i * g
        h = o * np.tanh(c)
        y[t, 0] = h
    return (
        y.astype(dtype, copy=False),
        h[None].astype(dtype, copy=False),
        c[None].astype(dtype, copy=False),
    )
