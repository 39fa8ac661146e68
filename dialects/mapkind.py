"""Element-wise / window / reduction map kinds shared by ``tile.map`` and ``loop.map``.

Memory-bound operators (activations, binary arithmetic, batch-norm affine, pooling, reductions,
softmax, LRN, transposes, fp32<->fp64 conversion) run data-parallel per CPE, without RLC, on
LDM-resident buffers (004 L1225-1246, L983; algorithms.md §A0 R6, §D). Both levels describe such
a computation by a :class:`MapKind` plus a few numeric parameters; this module holds the kind
enum, the parameter table and the shape rule, so that ``tile.map`` (whole distributed tiles) and
``loop.map`` (one CPE's local buffers) verify identically.

Shapes are logical (row-major) shapes of the operands; element types are ``f32`` or ``f64``.
:func:`check_map` raises nothing: it returns an error message (``str``) or ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from xdsl.utils.str_enum import StrEnum


class MapKind(StrEnum):
    """What a map computes (``y`` = the single output, ``x, a, b`` = inputs)."""

    COPY = "copy"  # y = x
    CONVERT = "convert"  # y = x cast to y's element type (fp32 <-> fp64 in LDM, 004 L823)
    FILL = "fill"  # y = value (no input)
    RELU = "relu"  # y = max(x, 0)
    LEAKY_RELU = "leaky_relu"  # y = x if x >= 0 else alpha * x
    CLIP = "clip"  # y = min(max(x, lo), hi) (lo / hi optional)
    SIGMOID = "sigmoid"  # y = 1 / (1 + exp(-x))
    TANH = "tanh"  # y = tanh(x)
    SQRT = "sqrt"  # y = sqrt(x)
    ERF = "erf"  # y = erf(x) (the Gauss error function; GELU, 2016 Hendrycks & Gimpel)
    ADD = "add"  # y = a + b   (numpy broadcasting of the inputs to y)
    SUB = "sub"  # y = a - b
    MUL = "mul"  # y = a * b
    DIV = "div"  # y = a / b
    MAX = "max"  # y = max(a, b)
    AFFINE = "affine"  # y = x * scale + shift (inference batch-norm after folding, 003/004)
    MAX_POOL = "max_pool"  # window max over the last 1-2 dims (input padded, or `pads`: taps skipped)
    AVG_POOL = "avg_pool"  # window sum * (1 / (kh*kw)) or * inv_count (2nd input); `pads` as max_pool
    DEPTHWISE = "depthwise"  # per-plane 2-D convolution: y[p] = sum_ij w[p, 0, i*kw+j] * x[p] window (+ b[p]); see check_map
    GROUPED = "grouped"  # per-group convolution: y[p, m] = sum_c depthwise(x[p, c], w[p, m, c*kh*kw:]) (+ b[p, m]); see check_map
    GROUPED_DIRECT = "grouped_direct"  # grouped via kw column-shifted copies of the rows (aligned vectors along W); see check_map
    REDUCE_SUM = "reduce_sum"  # y = sum over `axis` (kept as size 1)
    REDUCE_MAX = "reduce_max"
    REDUCE_MEAN = "reduce_mean"
    SOFTMAX = "softmax"  # softmax along `axis`
    LRN = "lrn"  # ONNX LRN along `axis` (size, alpha, beta, bias); halo form: see check_map
    TRANSPOSE = "transpose"  # y = x.transpose(perm) (cast to y's element type when it differs)
    # Loop-level only (made by convert-tile-to-loop from tile.im2col / tile.winograd_*; see
    # LOOP_ONLY_KINDS and the rules in check_map):
    IM2COL = "im2col"  # unfold the last dim: y[..., j, wo] = pad(x)[..., wo*s + j*d]
    WINOGRAD_FILTER = "winograd_filter"  # y[4*xi+nu, f] = (G x[f] G^T)[xi, nu]
    WINOGRAD_INPUT = "winograd_input"  # y[4*xi+nu, k, c] = (B^T D_k B)[xi, nu], D_k = pad(x)[:, 2k:2k+4, c]
    WINOGRAD_OUTPUT = "winograd_output"  # y[dy, 2k+dx, c] = (A^T M_k A)[dy, dx], clipped to y's shape


@dataclass(frozen=True)
class KindInfo:
    """Static signature of a map kind: accepted input counts and parameter names."""

    arities: tuple[int, ...]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    shape_rule: str = "elementwise"  # elementwise | window | reduce | axis | transpose | fill | <own kind>
    loop_only: bool = False  # only loop.map takes it (made by convert-tile-to-loop)


_UNARY = KindInfo((1,))
_BINARY = KindInfo((2,))

KIND_INFO: dict[MapKind, KindInfo] = {
    MapKind.COPY: _UNARY,
    MapKind.CONVERT: _UNARY,
    MapKind.FILL: KindInfo((0,), required=("value",), shape_rule="fill"),
    MapKind.RELU: _UNARY,
    MapKind.LEAKY_RELU: KindInfo((1,), required=("alpha",)),
    MapKind.CLIP: KindInfo((1,), optional=("lo", "hi")),
    MapKind.SIGMOID: _UNARY,
    MapKind.TANH: _UNARY,
    MapKind.SQRT: _UNARY,
    MapKind.ERF: _UNARY,
    MapKind.ADD: _BINARY,
    MapKind.SUB: _BINARY,
    MapKind.MUL: _BINARY,
    MapKind.DIV: _BINARY,
    MapKind.MAX: _BINARY,
    MapKind.AFFINE: KindInfo((3,)),
    MapKind.MAX_POOL: KindInfo((1,), required=("kernel", "strides"), optional=("pads",), shape_rule="window"),
    MapKind.AVG_POOL: KindInfo((1, 2), required=("kernel", "strides"), optional=("pads",), shape_rule="window"),
    MapKind.DEPTHWISE: KindInfo(
        (2, 3), required=("kernel", "strides"), optional=("pads", "dilations"), shape_rule="depthwise"
    ),
    MapKind.GROUPED: KindInfo(
        (2, 3), required=("kernel", "strides"), optional=("pads", "dilations"), shape_rule="grouped"
    ),
    MapKind.GROUPED_DIRECT: KindInfo(tuple(range(3, 16)), required=("kernel", "strides"),
                                     optional=("pads", "dilations"), shape_rule="grouped_direct"),
    MapKind.REDUCE_SUM: KindInfo((1,), required=("axis",), shape_rule="reduce"),
    MapKind.REDUCE_MAX: KindInfo((1,), required=("axis",), shape_rule="reduce"),
    MapKind.REDUCE_MEAN: KindInfo((1,), required=("axis",), shape_rule="reduce"),
    MapKind.SOFTMAX: KindInfo((1,), required=("axis",), shape_rule="axis"),
    MapKind.LRN: KindInfo((1,), required=("axis", "size", "alpha", "beta", "bias"), shape_rule="axis"),
    MapKind.TRANSPOSE: KindInfo((1,), required=("perm",), shape_rule="transpose"),
    MapKind.IM2COL: KindInfo(
        (1,), required=("kernel", "strides"), optional=("pads", "dilations"), shape_rule="im2col", loop_only=True
    ),
    MapKind.WINOGRAD_FILTER: KindInfo((1,), shape_rule="winograd_filter", loop_only=True),
    MapKind.WINOGRAD_INPUT: KindInfo((1,), optional=("pads",), shape_rule="winograd_input", loop_only=True),
    MapKind.WINOGRAD_OUTPUT: KindInfo((1,), shape_rule="winograd_output", loop_only=True),
}

#: kinds only ``loop.map`` accepts: the per-CPE compute steps of ``tile.im2col`` (004 §5.1.1
#: L1045-1049) and ``tile.winograd_*`` (Algorithm 5, L1130-1196; matrices G, B^T, A^T of
#: F(2x2, 3x3) from Lavin & Gray 2016, algorithms.md §C4), on one CPE's LDM buffers:
#:
#: * ``im2col`` {kernel = [kw], strides = [s], pads = [pl, pr] (default 0), dilations = [d]
#:   (default 1)}: x (..., W) -> y (..., kw, Wo), ``y[..., j, wo] = xp[..., wo*s + j*d]`` with
#:   ``xp`` = x zero-padded by pl / pr on its last dim, ``Wo = (W + pl + pr - d*(kw-1) - 1)//s + 1``
#:   (one input row unfolded into the kw col rows it feeds, 004 L1045-1047); x and y may
#:   differ in element type (f32 rows unfolded into an f64 GEMM operand: ``tile.unfold``);
#: * ``winograd_filter``: x (n, 3, 3) -> y (16, n), ``y[4*xi+nu, f] = (G x[f] G^T)[xi, nu]``;
#: * ``winograd_input`` {pads = [top, left, bottom, right] (default 0)}: x (R, Wc, C) channels
#:   last -> y (16, t, C); ``D`` = x zero-padded to (4, 2t+2, C) (top + R + bottom = 4,
#:   left + Wc + right = 2t + 2), ``y[4*xi+nu, k, c] = (B^T D[:, 2k:2k+4, c] B)[xi, nu]``
#:   (t overlapping 4x4 tiles, stride 2, L1138-1175);
#: * ``winograd_output``: x (16, t, C) -> y (R, Wc, C) with R <= 2 and 2t-2 < Wc <= 2t;
#:   ``full[dy, 2k+dx, c] = (A^T M_k A)[dy, dx]`` with ``M_k[xi, nu] = x[4*xi+nu, k, c]``,
#:   ``y = full[:R, :Wc]`` (clipped odd edges, L1164-1168, L1183).
#:
#: numpy references: :mod:`taihu.passes.conversion.tile_to_loop.mem_prims` (``map_reference``).
LOOP_ONLY_KINDS = tuple(k for k, i in KIND_INFO.items() if i.loop_only)

#: every parameter name a map may carry (the union of KIND_INFO's required/optional).
ALL_PARAMS = (
    "value", "alpha", "beta", "bias", "lo", "hi", "size", "axis", "kernel", "strides", "perm", "pads", "dilations",
)


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """numpy rule: ``shape`` (right-aligned) broadcasts to ``target`` without changing it."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            return False
    return True


def window_shape(in_shape: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 pads: Sequence[int] | None = None) -> tuple[int, ...] | None:
    """Output shape of a window over the last ``len(kernel)`` dims (floor division) of the input
    padded by ``pads`` (ONNX order: the begins of the window dims, then their ends; default
    none), or None when the window does not fit."""
    k = len(kernel)
    if k > len(in_shape):
        return None
    pads = tuple(pads) if pads else (0,) * (2 * k)
    lead = tuple(in_shape[: len(in_shape) - k])
    out = []
    for i, (d, kk, s) in enumerate(zip(in_shape[len(in_shape) - k :], kernel, strides)):
        d = d + pads[i] + pads[k + i]
        if d < kk:
            return None
        out.append((d - kk) // s + 1)
    return lead + tuple(out)


def check_map(
    kind: MapKind,
    in_shapes: Sequence[Sequence[int]],
    in_elems: Sequence[str],
    out_shape: Sequence[int],
    out_elem: str,
    params: dict[str, object],
) -> str | None:
    """Check a map's arity, parameters, element types and shapes.

    ``in_elems``/``out_elem`` are element type names (``"f32"``/``"f64"``); ``params`` maps the
    parameter names present to Python values (floats, ints, tuples). Returns an error message or
    None.
    """
    info = KIND_INFO[kind]
    n = len(in_shapes)
    if n not in info.arities:
        arities = " or ".join(str(a) for a in info.arities)
        return f"kind {kind.value} takes {arities} input(s), got {n}"
    for p in info.required:
        if p not in params:
            return f"kind {kind.value} needs parameter '{p}'"
    allowed = set(info.required) | set(info.optional)
    for p in params:
        if p not in allowed:
            return f"kind {kind.value} does not take parameter '{p}'"
    for e in list(in_elems) + [out_elem]:
        if e not in ("f32", "f64"):
            return f"element type must be f32 or f64, got {e}"
    if kind == MapKind.CONVERT:
        if in_elems[0] == out_elem:
            return f"convert must change the element type (both {out_elem})"
    elif kind in (MapKind.TRANSPOSE, MapKind.IM2COL):
        pass  # may convert on the way (f32 <-> f64: convert + re-layout / unfold, 004 L823)
    elif any(e != out_elem for e in in_elems):
        return f"inputs and output must share the element type {out_elem} (got {', '.join(in_elems)})"
    rule = info.shape_rule
    rank = len(out_shape)
    if rule == "fill":
        return None
    x = tuple(in_shapes[0])
    if rule == "elementwise":
        if kind in (MapKind.COPY, MapKind.CONVERT) or KIND_INFO[kind] is _UNARY or kind in (
            MapKind.LEAKY_RELU,
            MapKind.CLIP,
        ):
            if x != tuple(out_shape):
                return f"input shape {list(x)} != output shape {list(out_shape)}"
            return None
        for i, s in enumerate(in_shapes):
            if not broadcasts_to(s, out_shape):
                return f"input #{i} shape {list(s)} does not broadcast to the output shape {list(out_shape)}"
        if not any(tuple(s) == tuple(out_shape) for s in in_shapes):
            return f"no input has the output shape {list(out_shape)}"
        return None
    if rule == "window":
        kernel = tuple(cast("Sequence[int]", params["kernel"]))  # array parameters are int tuples
        strides = tuple(cast("Sequence[int]", params["strides"]))  # array parameters are int tuples
        if len(kernel) != len(strides) or not 1 <= len(kernel) <= 2:
            return "kernel and strides must have the same length (1 or 2)"
        if any(k < 1 for k in kernel) or any(s < 1 for s in strides):
            return "kernel and strides must be >= 1"
        pads = tuple(cast("Sequence[int]", params.get("pads", ())))  # array parameters are int tuples
        if pads and (len(pads) != 2 * len(kernel) or any(p < 0 for p in pads)
                     or any(p >= k for p, k in zip(pads, kernel + kernel))):
            return (f"pads {list(pads)} must hold {2 * len(kernel)} values (begins, then ends) in "
                    "[0, kernel): every window keeps a tap inside the input")
        want = window_shape(x, kernel, strides, pads)
        if want is None:
            return f"window {list(kernel)} does not fit the input shape {list(x)}"
        if want != tuple(out_shape):
            return f"output shape {list(out_shape)} != window output {list(want)} of input {list(x)}"
        if n == 2 and not broadcasts_to(in_shapes[1], out_shape):
            return f"inv_count shape {list(in_shapes[1])} does not broadcast to the output shape {list(out_shape)}"
        return None
    if rule == "depthwise":
        return _check_depthwise(in_shapes, out_shape, params)
    if rule == "grouped":
        return _check_grouped(in_shapes, out_shape, params)
    if rule == "grouped_direct":
        return _check_grouped_direct(in_shapes, out_shape, params)
    axis = params.get("axis")
    if rule in ("reduce", "axis"):
        assert isinstance(axis, int)
        if not 0 <= axis < len(x):
            return f"axis {axis} out of range for rank {len(x)}"
        want = tuple(1 if i == axis else d for i, d in enumerate(x)) if rule == "reduce" else x
        if kind == MapKind.LRN:
            size = int(cast(int, params["size"]))  # an integer parameter
            if size < 1:
                return "lrn size must be >= 1"
            # halo form: the input carries (size-1)//2 extra channels before and size-1-(size-1)//2
            # after the output's along the axis (zero outside the tensor: equal to the clipped sum)
            halo = tuple(d - (size - 1) if i == axis else d for i, d in enumerate(x))
            if tuple(out_shape) == halo and size > 1:
                return None
        if want != tuple(out_shape):
            extra = ""
            if kind == MapKind.LRN:
                extra = " (or the halo form: the input's axis size - 1 elements longer)"
            return f"output shape {list(out_shape)} != expected {list(want)}{extra}"
        return None
    if rule in ("im2col", "winograd_filter", "winograd_input", "winograd_output"):
        return _check_mem_prim_map(rule, x, out_shape, params)
    if rule == "transpose":
        perm = tuple(cast("Sequence[int]", params["perm"]))  # array parameters are int tuples
        if sorted(perm) != list(range(len(x))):
            return f"perm {list(perm)} is not a permutation of 0..{len(x) - 1}"
        want = tuple(x[p] for p in perm)
        if want != tuple(out_shape) or rank != len(x):
            return f"output shape {list(out_shape)} != transposed input {list(want)}"
        return None
    raise AssertionError(rule)


def depthwise_shape(in_shape: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                    pads: Sequence[int], dilations: Sequence[int]) -> tuple[int, ...] | None:
    """Output shape of ``depthwise`` on x (P, H, W): (P, Ho, Wo) with ONNX's convolution rule
    ``Ho = (H + top + bottom - dh*(kh-1) - 1) // sh + 1`` (likewise Wo); None when empty."""
    out = [in_shape[0]]
    for i in range(2):
        n = in_shape[1 + i] + pads[i] + pads[2 + i] - dilations[i] * (kernel[i] - 1) - 1
        if n < 0:
            return None
        out.append(n // strides[i] + 1)
    return tuple(out)


def _check_depthwise(in_shapes: Sequence[Sequence[int]], out: Sequence[int], params: dict[str, object]) -> str | None:
    """``depthwise`` {kernel = [kh, kw], strides = [sh, sw], pads = [top, left, bottom, right]
    (default 0), dilations = [dh, dw] (default 1)}: x (P, H, W), w (P, 1, kh*kw) (the taps of
    plane p row-major), optional b (P, 1, 1) -> y (P, Ho, Wo),
    ``y[p, r, c] = b[p] + sum_ij w[p, 0, i*kw + j] * x[p, r*sh + i*dh - top, c*sw + j*dw - left]``
    with the taps outside x skipped (zero padding; a window may lie wholly in the padding)."""
    kernel = tuple(cast("Sequence[int]", params["kernel"]))  # array parameters are int tuples
    strides = tuple(cast("Sequence[int]", params["strides"]))  # array parameters are int tuples
    pads = tuple(cast("Sequence[int]", params.get("pads", (0, 0, 0, 0))))  # array parameters are int tuples
    dil = tuple(cast("Sequence[int]", params.get("dilations", (1, 1))))  # array parameters are int tuples
    if len(kernel) != 2 or len(strides) != 2 or len(dil) != 2 or len(pads) != 4:
        return "depthwise takes kernel = [kh, kw], strides = [sh, sw], dilations = [dh, dw], pads = [t, l, b, r]"
    if min(kernel + strides + dil) < 1 or min(pads) < 0:
        return "depthwise: kernel, strides and dilations must be >= 1, pads >= 0"
    x = tuple(in_shapes[0])
    if len(x) != 3 or len(out) != 3:
        return f"depthwise takes x (P, H, W) -> y (P, Ho, Wo), got {list(x)} -> {list(out)}"
    want = depthwise_shape(x, kernel, strides, pads, dil)
    if want is None or want != tuple(out):
        return f"output shape {list(out)} != the convolution's {list(want) if want else 'empty output'} of {list(x)}"
    if tuple(in_shapes[1]) != (x[0], 1, kernel[0] * kernel[1]):
        return f"weights shape {list(in_shapes[1])} != (P, 1, kh*kw) = {[x[0], 1, kernel[0] * kernel[1]]}"
    if len(in_shapes) == 3 and tuple(in_shapes[2]) != (x[0], 1, 1):
        return f"bias shape {list(in_shapes[2])} != (P, 1, 1) = {[x[0], 1, 1]}"
    return None


def _check_grouped(in_shapes: Sequence[Sequence[int]], out: Sequence[int], params: dict[str, object]) -> str | None:
    """``grouped`` {kernel, strides, pads, dilations as ``depthwise``}: x (P, cg, H, W), w (P, mg,
    cg, kh*kw) (per output plane its cg filters, taps row-major), optional b (P, mg, 1, 1) -> y
    (P, mg, Ho, Wo), ``y[p, m, r, c] = b[p, m] + sum_{k, i, j} w[p, m, k, i*kw + j] *
    x[p, k, r*sh + i*dh - top, c*sw + j*dw - left]`` (taps outside x skipped): P groups of a
    grouped convolution, cg input and mg output channels each."""
    x, o = tuple(in_shapes[0]), tuple(out)
    if len(x) != 4 or len(o) != 4 or x[0] != o[0]:
        return f"grouped takes x (P, cg, H, W) -> y (P, mg, Ho, Wo), got {list(x)} -> {list(o)}"
    kernel = tuple(cast("Sequence[int]", params["kernel"]))  # array parameters are int tuples
    kk = kernel[0] * kernel[1] if len(kernel) == 2 else 1
    err = _check_depthwise([(x[0] * x[1], x[2], x[3]), (x[0] * x[1], 1, kk)], (x[0] * x[1], o[2], o[3]), params)
    if err:
        return err.replace("depthwise", "grouped").replace("(P, H, W)", "(P, cg, H, W)")
    want = (o[0], o[1], x[1], kernel[0] * kernel[1])
    if tuple(in_shapes[1]) != want:
        return f"weights shape {list(in_shapes[1])} != (P, mg, cg, kh*kw) = {list(want)}"
    if len(in_shapes) == 3 and tuple(in_shapes[2]) != (o[0], o[1], 1, 1):
        return f"bias shape {list(in_shapes[2])} != (P, mg, 1, 1) = {[o[0], o[1], 1, 1]}"
    return None


def _check_grouped_direct(in_shapes: Sequence[Sequence[int]], out: Sequence[int],
                          params: dict[str, object]) -> str | None:
    """``grouped_direct`` {kernel = [kh, kw], strides = [sh, sw], dilations = [dh, dw] (default 1),
    pads = [left, right] (the column pads)}: x (P, cg, R, W) (input rows, the pad rows included),
    w (P, mg, cg, kh*kw), optional b (P, mg, 1, 1), then kw scratch tiles u_0 .. u_{kw-1} (P, cg,
    R, U) (the map writes them: ``u_j[p, k, r, c] = x[p, k, r, c*sw + j*dw - left]``, 0 outside x)
    -> y (P, mg, Ho, Wo) with ``Ho = (R - dh*(kh-1) - 1) // sh + 1``, ``Wo = (W + left + right -
    dw*(kw-1) - 1) // sw + 1 <= U``, ``y[p, m, r, c] = b[p, m] + sum_{k, i, j} w[p, m, k, i*kw +
    j] * u_j[p, k, r*sh + i*dh, c]``: the grouped convolution from kw column-shifted copies of
    its input rows (so that vectors along W are aligned loads)."""
    kernel = tuple(cast("Sequence[int]", params["kernel"]))  # array parameters are int tuples
    strides = tuple(cast("Sequence[int]", params["strides"]))  # array parameters are int tuples
    dil = tuple(cast("Sequence[int]", params.get("dilations", (1, 1))))  # array parameters are int tuples
    pads = tuple(cast("Sequence[int]", params.get("pads", (0, 0))))  # array parameters are int tuples
    if (len(kernel) != 2 or len(strides) != 2 or len(dil) != 2 or len(pads) != 2 or min(kernel + strides + dil) < 1
            or min(pads) < 0):
        return ("grouped_direct takes kernel = [kh, kw], strides = [sh, sw], dilations = [dh, dw] (>= 1), "
                "pads = [left, right] (>= 0)")
    kh, kw = kernel
    n = len(in_shapes)
    if n not in (kw + 2, kw + 3):
        return f"grouped_direct takes x, w, an optional b and {kw} scratch copies (kw): {kw + 2} or {kw + 3} inputs, got {n}"
    nb = n - kw
    x, o = tuple(in_shapes[0]), tuple(out)
    if len(x) != 4 or len(o) != 4 or x[0] != o[0]:
        return f"grouped_direct takes x (P, cg, R, W) -> y (P, mg, Ho, Wo), got {list(x)} -> {list(o)}"
    ho = (x[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    wo = (x[3] + pads[0] + pads[1] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    if o[2:] != (ho, wo):
        return f"output shape {list(o)} != [P, mg, {ho}, {wo}] (of {x[2]} input rows and {x[3]} columns)"
    u = tuple(in_shapes[nb])
    if len(u) != 4 or u[:3] != x[:3] or u[3] < wo or any(tuple(t) != u for t in in_shapes[nb:]):
        return f"the {kw} scratch copies must be (P, cg, R, U) with U >= Wo = {wo}, got {[list(t) for t in in_shapes[nb:]]}"
    want = (o[0], o[1], x[1], kh * kw)
    if tuple(in_shapes[1]) != want:
        return f"weights shape {list(in_shapes[1])} != (P, mg, cg, kh*kw) = {list(want)}"
    if nb == 3 and tuple(in_shapes[2]) != (o[0], o[1], 1, 1):
        return f"bias shape {list(in_shapes[2])} != (P, mg, 1, 1) = {[o[0], o[1], 1, 1]}"
    return None


def _check_mem_prim_map(rule: str, x: tuple[int, ...], out: Sequence[int], params: dict[str, object]) -> str | None:
    """Shape rules of the loop-only kinds (see LOOP_ONLY_KINDS)."""
    out = tuple(out)
    if rule == "im2col":
        kernel = tuple(cast("Sequence[int]", params["kernel"]))  # array parameters are int tuples
        strides = tuple(cast("Sequence[int]", params["strides"]))  # array parameters are int tuples
        pads = tuple(cast("Sequence[int]", params.get("pads", (0, 0))))  # array parameters are int tuples
        dil = tuple(cast("Sequence[int]", params.get("dilations", (1,))))  # array parameters are int tuples
        if len(kernel) != 1 or len(strides) != 1 or len(dil) != 1 or len(pads) != 2:
            return "im2col takes kernel = [kw], strides = [s], dilations = [d] and pads = [pl, pr]"
        if kernel[0] < 1 or strides[0] < 1 or dil[0] < 1 or min(pads) < 0:
            return "im2col: kernel, strides, dilations must be >= 1 and pads >= 0"
        wo = (x[-1] + pads[0] + pads[1] - dil[0] * (kernel[0] - 1) - 1) // strides[0] + 1
        if wo < 1:
            return f"im2col: the window does not fit the padded row of {x[-1]} elements"
        want = x[:-1] + (kernel[0], wo)
        if out != want:
            return f"output shape {list(out)} != unfolded input {list(want)}"
        return None
    if rule == "winograd_filter":
        if len(x) != 3 or x[1:] != (3, 3):
            return f"winograd_filter takes (n, 3, 3) filters, got {list(x)}"
        if out != (16, x[0]):
            return f"output shape {list(out)} != (16, n) = {[16, x[0]]}"
        return None
    if rule == "winograd_input":
        if len(x) != 3 or len(out) != 3:
            return f"winograd_input takes (R, Wc, C) -> (16, t, C), got {list(x)} -> {list(out)}"
        pads = tuple(cast("Sequence[int]", params.get("pads", (0, 0, 0, 0))))  # array parameters are int tuples
        if len(pads) != 4 or min(pads) < 0:
            return "winograd_input: pads must be [top, left, bottom, right] >= 0"
        t = out[1]
        if out[0] != 16 or out[2] != x[2] or t < 1:
            return f"output shape {list(out)} must be (16, t, C = {x[2]})"
        if pads[0] + x[0] + pads[2] != 4 or pads[1] + x[1] + pads[3] != 2 * t + 2:
            return (
                f"the padded input must be (4, 2t+2) = (4, {2 * t + 2}): top {pads[0]} + R {x[0]} + bottom {pads[2]}, "
                f"left {pads[1]} + Wc {x[1]} + right {pads[3]}"
            )
        return None
    if rule == "winograd_output":
        if len(x) != 3 or len(out) != 3 or x[0] != 16:
            return f"winograd_output takes (16, t, C) -> (R, Wc, C), got {list(x)} -> {list(out)}"
        t = x[1]
        if out[2] != x[2] or not 1 <= out[0] <= 2 or not 2 * t - 2 < out[1] <= 2 * t:
            return f"output shape {list(out)} must be (R <= 2, 2t-2 < Wc <= 2t, C) with t = {t}, C = {x[2]}"
        return None
    raise AssertionError(rule)
