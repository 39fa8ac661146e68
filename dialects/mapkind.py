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
    ADD = "add"  # y = a + b   (numpy broadcasting of the inputs to y)
    SUB = "sub"  # y = a - b
    MUL = "mul"  # y = a * b
    DIV = "div"  # y = a / b
    MAX = "max"  # y = max(a, b)
    AFFINE = "affine"  # y = x * scale + shift (inference batch-norm after folding, 003/004)
    MAX_POOL = "max_pool"  # window max over the last two dims (input already padded)
    AVG_POOL = "avg_pool"  # window sum * (1 / (kh*kw)) or * inv_count (2nd input)
    REDUCE_SUM = "reduce_sum"  # y = sum over `axis` (kept as size 1)
    REDUCE_MAX = "reduce_max"
    REDUCE_MEAN = "reduce_mean"
    SOFTMAX = "softmax"  # softmax along `axis`
    LRN = "lrn"  # ONNX LRN along `axis` (size, alpha, beta, bias)
    TRANSPOSE = "transpose"  # y = x.transpose(perm)


@dataclass(frozen=True)
class KindInfo:
    """Static signature of a map kind: accepted input counts and parameter names."""

    arities: tuple[int, ...]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    shape_rule: str = "elementwise"  # elementwise | window | reduce | axis | transpose | fill


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
    MapKind.ADD: _BINARY,
    MapKind.SUB: _BINARY,
    MapKind.MUL: _BINARY,
    MapKind.DIV: _BINARY,
    MapKind.MAX: _BINARY,
    MapKind.AFFINE: KindInfo((3,)),
    MapKind.MAX_POOL: KindInfo((1,), required=("kernel", "strides"), shape_rule="window"),
    MapKind.AVG_POOL: KindInfo((1, 2), required=("kernel", "strides"), shape_rule="window"),
    MapKind.REDUCE_SUM: KindInfo((1,), required=("axis",), shape_rule="reduce"),
    MapKind.REDUCE_MAX: KindInfo((1,), required=("axis",), shape_rule="reduce"),
    MapKind.REDUCE_MEAN: KindInfo((1,), required=("axis",), shape_rule="reduce"),
    MapKind.SOFTMAX: KindInfo((1,), required=("axis",), shape_rule="axis"),
    MapKind.LRN: KindInfo((1,), required=("axis", "size", "alpha", "beta", "bias"), shape_rule="axis"),
    MapKind.TRANSPOSE: KindInfo((1,), required=("perm",), shape_rule="transpose"),
}

#: every parameter name a map may carry (the union of KIND_INFO's required/optional).
ALL_PARAMS = ("value", "alpha", "beta", "bias", "lo", "hi", "size", "axis", "kernel", "strides", "perm")


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """numpy rule: ``shape`` (right-aligned) broadcasts to ``target`` without changing it."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            return False
    return True


def window_shape(in_shape: Sequence[int], kernel: Sequence[int], strides: Sequence[int]) -> tuple[int, ...] | None:
    """Output shape of a VALID window over the last ``len(kernel)`` dims (floor division), or
    None when the window does not fit."""
    k = len(kernel)
    if k > len(in_shape):
        return None
    lead = tuple(in_shape[: len(in_shape) - k])
    out = []
    for d, kk, s in zip(in_shape[len(in_shape) - k :], kernel, strides):
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
        want = " or ".join(str(a) for a in info.arities)
        return f"kind {kind.value} takes {want} input(s), got {n}"
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
        kernel = tuple(params["kernel"])  # type: ignore[arg-type]
        strides = tuple(params["strides"])  # type: ignore[arg-type]
        if len(kernel) != len(strides) or not 1 <= len(kernel) <= 2:
            return "kernel and strides must have the same length (1 or 2)"
        if any(k < 1 for k in kernel) or any(s < 1 for s in strides):
            return "kernel and strides must be >= 1"
        want = window_shape(x, kernel, strides)
        if want is None:
            return f"window {list(kernel)} does not fit the input shape {list(x)}"
        if want != tuple(out_shape):
            return f"output shape {list(out_shape)} != window output {list(want)} of input {list(x)}"
        if n == 2 and not broadcasts_to(in_shapes[1], out_shape):
            return f"inv_count shape {list(in_shapes[1])} does not broadcast to the output shape {list(out_shape)}"
        return None
    axis = params.get("axis")
    if rule in ("reduce", "axis"):
        assert isinstance(axis, int)
        if not 0 <= axis < len(x):
            return f"axis {axis} out of range for rank {len(x)}"
        want = tuple(1 if i == axis else d for i, d in enumerate(x)) if rule == "reduce" else x
        if want != tuple(out_shape):
            return f"output shape {list(out_shape)} != expected {list(want)}"
        if kind == MapKind.LRN and int(params["size"]) < 1:  # type: ignore[arg-type]
            return "lrn size must be >= 1"
        return None
    if rule == "transpose":
        perm = tuple(params["perm"])  # type: ignore[arg-type]
        if sorted(perm) != list(range(len(x))):
            return f"perm {list(perm)} is not a permutation of 0..{len(x) - 1}"
        want = tuple(x[p] for p in perm)
        if want != tuple(out_shape) or rank != len(x):
            return f"output shape {list(out_shape)} != transposed input {list(want)}"
        return None
    raise AssertionError(rule)
