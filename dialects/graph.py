"""The ``graph`` dialect: ONNX-level tensor operators with value semantics.

Every op consumes and produces statically shaped builtin ``tensor<...>`` values (element type
f16/f32/f64 for arithmetic ops; data-movement ops also accept integer tensors). Parameters are
*properties* (``<{...}>`` in generic form); the custom form prints them as an attribute
dictionary that omits ONNX defaults, e.g.::

    %y = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>}
        : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<1x64x112x112xf32>

Each op class offers a constructor that infers its result type (``infer_type`` static method,
``result_type=`` override), ``verify_`` that re-infers the result shape and raises
``VerifyException`` naming the offending dimension, and Python accessors returning plain values.

Semantics follow the ONNX operator specification (opset 13+ unless noted); layouts are NCHW,
convolution weights are (M, C/group, kH, kW), pads are in ONNX order
(x1_begin, x2_begin, ..., x1_end, x2_end, ...).

Constants: ``graph.constant`` holds a ``DenseIntOrFPElementsAttr`` (splat or small inline value)
or a ``DenseResourceAttr`` whose blob lives in the file's ``dialect_resources`` section (see
:mod:`taihu.dialects.resources`); build them with :func:`constant`, read them with
:func:`constant_value`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
    f16,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    ParamAttrConstraint,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    IRDLOperation,
    IRDLOption,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from taihu.dialects.resources import blob_nbytes, declare_blob, element_dtype, resource_value

__all__ = [
    "AddOp",
    "AvgPoolOp",
    "BatchNormOp",
    "CastOp",
    "ClipOp",
    "ConcatOp",
    "ConstantOp",
    "Conv2dOp",
    "DivOp",
    "DropoutOp",
    "FlattenOp",
    "GemmOp",
    "GlobalAvgPoolOp",
    "Graph",
    "LRNOp",
    "LSTMOp",
    "GRUOp",
    "LayoutTransformOp",
    "LeakyReluOp",
    "MatMulOp",
    "MaxPoolOp",
    "MulOp",
    "PadOp",
    "ReluOp",
    "ReshapeOp",
    "SigmoidOp",
    "SoftmaxOp",
    "SubOp",
    "SumOp",
    "TanhOp",
    "SqrtOp",
    "ErfOp",
    "TransposeOp",
    "UnsqueezeOp",
    "broadcast_shapes",
    "constant",
    "constant_value",
    "pool_output_size",
]

# --------------------------------------------------------------------------------------------
# Attribute helpers
# --------------------------------------------------------------------------------------------

_FLOAT_TYPES = (Float16Type, Float32Type, Float64Type)


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _i64(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def _f32(value: float) -> FloatAttr:
    return FloatAttr(float(value), f32)


def _ints(attr: DenseArrayBase[IntegerType] | None) -> tuple[int, ...]:
    return () if attr is None else tuple(int(v) for v in attr.get_values())


_I64_ARRAY = DenseArrayBase.constr(I64)
_I64_ATTR = IntegerAttr.constr(type=I64)
_F32_ATTR = FloatAttr.constr(Float32Type)


def _fail(op_name: str, message: str) -> VerifyException:
    return VerifyException(f"{op_name}: {message}")


def _tensor(op_name: str, what: str, ty: Attribute) -> TensorType:
    """Check ``ty`` is a statically shaped tensor; return it."""
    if not isinstance(ty, TensorType):
        raise _fail(op_name, f"{what} must be a tensor, got {ty}")
    if any(d < 0 for d in ty.get_shape()):
        raise _fail(op_name, f"{what} must have a static shape, got {ty}")
    return ty


def _float_tensor(op_name: str, what: str, ty: Attribute) -> TensorType:
    t = _tensor(op_name, what, ty)
    if not isinstance(t.element_type, _FLOAT_TYPES):
        raise _fail(op_name, f"{what} element type must be f16, f32 or f64, got {t.element_type}")
    return t


def _same_element(op_name: str, named: Sequence[tuple[str, TensorType]]) -> Attribute:
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.element_type != first.element_type:
            raise _fail(
                op_name,
                f"{name} element type {t.element_type} differs from {first_name} element type "
                f"{first.element_type}",
            )
    return first.element_type


def _shape(t: TensorType) -> tuple[int, ...]:
    return tuple(t.get_shape())


def _check_result(op_name: str, what: str, actual: Attribute, expected: TensorType) -> None:
    """Compare a result type with the inferred one; message names the first bad dimension."""
    got = _tensor(op_name, what, actual)
    if got.element_type != expected.element_type:
        raise _fail(
            op_name,
            f"{what} element type {got.element_type} but inferred {expected.element_type}",
        )
    gs, es = _shape(got), _shape(expected)
    if len(gs) != len(es):
        raise _fail(op_name, f"{what} rank is {len(gs)} but inferred {len(es)} ({expected})")
    for i, (g, e) in enumerate(zip(gs, es)):
        if g != e:
            raise _fail(op_name, f"{what} dim {i} is {g} but inferred {e}")


def _normalize_axis(op_name: str, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise _fail(op_name, f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def broadcast_shapes(
    shapes: Sequence[Sequence[int]], op_name: str = "graph", names: Sequence[str] | None = None
) -> tuple[int, ...]:
    """numpy (multidirectional) broadcasting of static shapes.

    Raises ``VerifyException`` naming the result dimension whose extents conflict.
    """
    names = names or [f"operand #{i}" for i in range(len(shapes))]
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    owner = [""] * rank
    for name, s in zip(names, shapes):
        for j, d in enumerate(s):
            k = rank - len(s) + j
            if d == 1:
                continue
            if out[k] == 1:
                out[k], owner[k] = d, name
            elif out[k] != d:
                raise _fail(
                    op_name,
                    f"operands are not broadcastable: result dim {k} is {out[k]} in {owner[k]} "
                    f"but {d} in {name}",
                )
    return tuple(out)


def pool_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_begin: int,
    pad_end: int,
    dilation: int = 1,
    ceil_mode: bool = False,
) -> int:
    """ONNX MaxPool/AveragePool/Conv output extent of one spatial dimension.

    ``out = floor_or_ceil((size + pad_begin + pad_end - dilation*(kernel-1) - 1) / stride) + 1``;
    with ``ceil_mode`` the last window must start inside the input or its begin padding
    (``(out-1)*stride < size + pad_begin``), as ONNX/PyTorch require. May return <= 0.
    """
    span = size + pad_begin + pad_end - dilation * (kernel - 1) - 1
    if span < 0:
        return 0
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad_begin:
            out -= 1
        return out
    return span // stride + 1


# --------------------------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------------------------


class GraphOperation(IRDLOperation):
    """Base of graph ops: ``verify_`` compares the result types with :meth:`infer_result_types`."""

    traits = traits_def(Pure())
    irdl_options: tuple[IRDLOption, ...] = (ParsePropInAttrDict(),)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        """Result types implied by the operand types and properties (raises VerifyException)."""
        raise NotImplementedError

    def verify_(self) -> None:
        expected = self.infer_result_types()
        results = self.results
        names = _result_names(self)
        for name, res, exp in zip(names, results, expected):
            _check_result(self.name, name, res.type, exp)
        _check_not_empty(self)


def _check_not_empty(op: Operation) -> None:
    """``VerifyException`` for an operand tensor with a zero dimension (e.g. a zero batch):
    zero-size inputs are not supported (the ONNX importer refuses zero-size shapes; the planners
    would divide by the empty extent). An op may still produce an empty result (a pad cropping
    everything lowers to an empty buffer) as long as no graph op consumes it."""
    for i, v in enumerate(op.operands):
        t = v.type
        if isinstance(t, TensorType) and 0 in t.get_shape():
            raise VerifyException(f"{op.name}: operand #{i} has the zero-size shape "
                                  f"{list(t.get_shape())}: zero-size tensors are not supported")


def _result_names(op: Operation) -> list[str]:
    if len(op.results) == 1:
        return ["result"]
    defs = type(op).get_irdl_definition().results  # type: ignore[attr-defined]
    return [f"result {name}" for name, _ in defs]


_UNARY_FORMAT = "$input attr-dict `:` type($input) `->` type($result)"
_OPERANDS_FORMAT = "operands attr-dict `:` functional-type(operands, results)"


class _UnaryFloatOp(GraphOperation):
    """Elementwise ``f(x)``: result has the shape and element type of the input."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = _UNARY_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        result_type: Attribute | None = None,
        properties: dict[str, Attribute] | None = None,
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input],
            result_types=[result_type or self.infer_type(input.type)],
            properties=properties or {},
        )

    @classmethod
    def infer_type(cls, input_type: Attribute) -> TensorType:
        return _float_tensor(cls.name, "input", input_type)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type(self.input.type),)


class _TwoOperandOp(GraphOperation):
    """``lhs, rhs -> result``; the result type is inferred by the subclass's ``infer_type``."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        *,
        result_type: Attribute | None = None,
    ):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type or self.infer_type(lhs.type, rhs.type)],
        )

    @classmethod
    def infer_type(cls, lhs: Attribute, rhs: Attribute) -> TensorType:
        """Result type for operand types ``lhs``, ``rhs``; raises ``VerifyException``."""
        raise NotImplementedError

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type(self.lhs.type, self.rhs.type),)


class _BinaryOp(_TwoOperandOp):
    """Elementwise binary op with numpy broadcasting; both operands share the element type."""

    @classmethod
    def infer_type(cls, lhs: Attribute, rhs: Attribute) -> TensorType:
        a = _float_tensor(cls.name, "lhs", lhs)
        b = _float_tensor(cls.name, "rhs", rhs)
        el = _same_element(cls.name, [("lhs", a), ("rhs", b)])
        return TensorType(el, broadcast_shapes([_shape(a), _shape(b)], cls.name, ["lhs", "rhs"]))


# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(GraphOperation):
    """``graph.constant``: a tensor literal (inline ``dense<...>`` or ``dense_resource<key>``)."""

    name = "graph.constant"

    _T: ClassVar = VarConstraint("T", base(TensorType))
    value = prop_def(
        ParamAttrConstraint(DenseIntOrFPElementsAttr, (_T, AnyAttr()))
        | ParamAttrConstraint(DenseResourceAttr, (AnyAttr(), _T))
    )
    result = result_def(_T)

    traits = traits_def(Pure(), ConstantLike())

    assembly_format = "$value attr-dict"

    def __init__(
        self,
        value: DenseIntOrFPElementsAttr | DenseResourceAttr,
        *,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            result_types=[result_type or value.get_type()], properties={"value": value}
        )

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (_tensor(self.name, "value", self.value.get_type()),)

    def verify_(self) -> None:
        super().verify_()
        ty = self.value.get_type()
        assert isinstance(ty, TensorType)
        count = math.prod(ty.get_shape())
        if isinstance(self.value, DenseIntOrFPElementsAttr):
            if len(self.value) not in (1, count):
                raise _fail(self.name, f"value holds {len(self.value)} elements, type needs {count}")
            return
        key = self.value.resource_handle.data
        nbytes = blob_nbytes(key)
        if nbytes is None:
            raise _fail(self.name, f"dense_resource<{key}> has no blob in dialect_resources")
        try:
            need = count * element_dtype(ty.element_type).itemsize
        except ValueError as e:
            raise _fail(self.name, f"dense_resource<{key}>: {e}") from None
        if nbytes != need:
            raise _fail(
                self.name,
                f"dense_resource<{key}> blob holds {nbytes} bytes but {ty} needs {need}",
            )

    @property
    def numpy(self) -> np.ndarray:
        """The value as a read-only numpy array (see :func:`constant_value`)."""
        return constant_value(self)


def _numpy_element_type(dtype: np.dtype) -> Attribute:
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return f16
    if dtype == np.float32:
        return f32
    if dtype == np.float64:
        return f64
    if dtype == np.bool_:
        return i1
    if dtype.kind in "iu":
        sign = Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS
        return IntegerType(dtype.itemsize * 8, sign)
    raise ValueError(f"graph.constant: unsupported numpy dtype {dtype}")


def constant(
    array: np.ndarray | float | int,
    *,
    name_hint: str = "cst",
    inline_limit: int = 16,
    element_type: Attribute | None = None,
) -> ConstantOp:
    """Build a ``graph.constant`` holding ``array`` (any shape; f16/f32/f64/bool/int dtypes).

    - all elements equal (and size > 1): ``dense<v>`` splat;
    - ``size <= inline_limit``: inline ``dense<[...]>``;
    - otherwise: ``dense_resource<key>`` with the bytes stored in the builtin dialect's resource
      table under a fresh key derived from ``name_hint`` (printed in ``dialect_resources``).

    ``element_type`` overrides the element type implied by the dtype (the array is cast).
    Raises ``ValueError`` for unsupported dtypes.
    """
    arr = np.asarray(array)
    if element_type is None:
        element_type = _numpy_element_type(arr.dtype)
    else:
        arr = arr.astype(element_dtype(element_type))
    dtype = element_dtype(element_type)
    # element_dtype accepted it, so it is an integer or f16/f32/f64 type
    assert isinstance(element_type, (IntegerType, Float16Type, Float32Type, Float64Type))
    arr = np.asarray(arr, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d 1-d)
    ty = TensorType(element_type, arr.shape)
    flat = arr.reshape(-1)
    # (two first elements compared first: a weight tensor is rejected without a full pass)
    is_splat = flat.size > 1 and flat[1] == flat[0] and bool(np.all(flat == flat[0])) and not np.isnan(flat[0])
    if is_splat or flat.size <= inline_limit:
        if is_splat:
            flat = flat[:1]  # a splat stores one element (xDSL prints it as dense<v>)
        le = flat.astype(dtype.newbyteorder("<"), copy=False) if dtype.itemsize > 1 else flat
        if dtype == np.bool_:
            le = flat.astype(np.int8)  # i1 stored as one byte per element by xDSL
        value: DenseIntOrFPElementsAttr | DenseResourceAttr = DenseIntOrFPElementsAttr(
            ty, BytesAttr(le.tobytes())
        )
    else:
        key = declare_blob(name_hint, arr)
        value = DenseResourceAttr.from_params(key, ty)
    return ConstantOp(value)


def constant_value(op_or_attr: ConstantOp | DenseIntOrFPElementsAttr | DenseResourceAttr) -> np.ndarray:
    """Read-only numpy array (dtype/shape of the tensor type) of a constant op or attribute.

    Splat ``dense`` values are broadcast to the full shape. Raises ``KeyError`` if a
    ``dense_resource`` blob is missing.
    """
    attr = op_or_attr.value if isinstance(op_or_attr, ConstantOp) else op_or_attr
    if isinstance(attr, DenseResourceAttr):
        return resource_value(attr)
    ty = attr.get_type()
    assert isinstance(ty, TensorType)
    dtype = element_dtype(ty.element_type)
    shape = tuple(ty.get_shape())
    raw = attr.data.data
    if dtype == np.bool_:
        flat = np.frombuffer(raw, dtype=np.int8).astype(np.bool_)
    else:
        flat = np.frombuffer(raw, dtype=dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype)
        flat = flat.astype(dtype, copy=False)
    count = math.prod(shape)
    if flat.size == 1 and count != 1:
        out = np.broadcast_to(flat.reshape(()), shape)
    else:
        out = flat.reshape(shape)
    out = out.view()
    out.flags.writeable = False
    return out


# --------------------------------------------------------------------------------------------
# Convolution / matrix products
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class Conv2dOp(GraphOperation):
    """``graph.conv2d``: ONNX Conv on NCHW input.

    input (N, C, H, W), weight (M, C/group, kH, kW), optional bias (M,) -> (N, M, Ho, Wo) with
    ``Ho = (H + pad_top + pad_bottom - dil_h*(kH-1) - 1) // stride_h + 1`` (same for W).
    pads = (top, left, bottom, right). ``group == C == M`` is depthwise convolution.
    """

    name = "graph.conv2d"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    strides_attr = prop_def(_I64_ARRAY, _i64_array((1, 1)), prop_name="strides")
    pads_attr = prop_def(_I64_ARRAY, _i64_array((0, 0, 0, 0)), prop_name="pads")
    dilations_attr = prop_def(_I64_ARRAY, _i64_array((1, 1)), prop_name="dilations")
    group_attr = prop_def(_I64_ATTR, _i64(1), prop_name="group")

    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        group: int = 1,
        result_type: Attribute | None = None,
    ):
        input, weight = SSAValue.get(input), SSAValue.get(weight)
        b = SSAValue.get(bias) if bias is not None else None
        if result_type is None:
            result_type = self.infer_type(
                input.type,
                weight.type,
                b.type if b is not None else None,
                strides=strides,
                pads=pads,
                dilations=dilations,
                group=group,
            )
        super().__init__(
            operands=[input, weight, [b] if b is not None else []],
            result_types=[result_type],
            properties={
                "strides": _i64_array(strides),
                "pads": _i64_array(pads),
                "dilations": _i64_array(dilations),
                "group": _i64(group),
            },
        )

    @property
    def strides(self) -> tuple[int, ...]:
        return _ints(self.strides_attr)

    @property
    def pads(self) -> tuple[int, ...]:
        return _ints(self.pads_attr)

    @property
    def dilations(self) -> tuple[int, ...]:
        return _ints(self.dilations_attr)

    @property
    def group(self) -> int:
        return self.group_attr.value.data

    @classmethod
    def infer_type(
        cls,
        input_type: Attribute,
        weight_type: Attribute,
        bias_type: Attribute | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        group: int = 1,
    ) -> TensorType:
        n = cls.name
        x = _float_tensor(n, "input", input_type)
        w = _float_tensor(n, "weight", weight_type)
        named = [("input", x), ("weight", w)]
        if bias_type is not None:
            named.append(("bias", _float_tensor(n, "bias", bias_type)))
        el = _same_element(n, named)
        xs, ws = _shape(x), _shape(w)
        if len(xs) != 4:
            raise _fail(n, f"input must be 4-D (N, C, H, W), got rank {len(xs)}")
        if len(ws) != 4:
            raise _fail(n, f"weight must be 4-D (M, C/group, kH, kW), got rank {len(ws)}")
        _check_spatial_params(n, 2, strides, pads, dilations)
        if group < 1:
            raise _fail(n, f"group must be >= 1, got {group}")
        if xs[1] != ws[1] * group:
            raise _fail(
                n,
                f"input channel dim 1 (={xs[1]}) must equal weight dim 1 (={ws[1]}) "
                f"* group (={group})",
            )
        if ws[0] % group:
            raise _fail(n, f"weight dim 0 (={ws[0]}) must be divisible by group (={group})")
        if bias_type is not None:
            bs = _shape(named[2][1])
            if len(bs) != 1 or bs[0] != ws[0]:
                raise _fail(n, f"bias shape {list(bs)} must be [{ws[0]}] (weight dim 0)")
        out = [xs[0], ws[0]]
        for i in range(2):
            o = pool_output_size(
                xs[2 + i], ws[2 + i], strides[i], pads[i], pads[2 + i], dilations[i]
            )
            if o < 1:
                raise _fail(
                    n,
                    f"output dim {2 + i} is empty: input dim {2 + i} (={xs[2 + i]}) + pads "
                    f"(={pads[i]}+{pads[2 + i]}) is smaller than the dilated kernel "
                    f"(={dilations[i] * (ws[2 + i] - 1) + 1})",
                )
            out.append(o)
        return TensorType(el, out)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (
            self.infer_type(
                self.input.type,
                self.weight.type,
                self.bias.type if self.bias is not None else None,
                strides=self.strides,
                pads=self.pads,
                dilations=self.dilations,
                group=self.group,
            ),
        )


def _check_spatial_params(
    n: str,
    rank: int,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    kernel: Sequence[int] | None = None,
) -> None:
    if kernel is not None:
        if len(kernel) != rank:
            raise _fail(n, f"kernel_shape has {len(kernel)} entries, expected {rank}")
        if any(k < 1 for k in kernel):
            raise _fail(n, f"kernel_shape entries must be >= 1, got {list(kernel)}")
    if len(strides) != rank:
        raise _fail(n, f"strides has {len(strides)} entries, expected {rank}")
    if len(pads) != 2 * rank:
        raise _fail(n, f"pads has {len(pads)} entries, expected {2 * rank}")
    if len(dilations) != rank:
        raise _fail(n, f"dilations has {len(dilations)} entries, expected {rank}")
    if any(s < 1 for s in strides):
        raise _fail(n, f"strides must be >= 1, got {list(strides)}")
    if any(p < 0 for p in pads):
        raise _fail(n, f"pads must be >= 0, got {list(pads)}")
    if any(d < 1 for d in dilations):
        raise _fail(n, f"dilations must be >= 1, got {list(dilations)}")


@irdl_op_definition
class MatMulOp(_TwoOperandOp):
    """``graph.matmul``: ``numpy.matmul`` (1-D operands promoted, batch dims broadcast)."""

    name = "graph.matmul"

    @classmethod
    def infer_type(cls, lhs: Attribute, rhs: Attribute) -> TensorType:
        n = cls.name
        a = _float_tensor(n, "lhs", lhs)
        b = _float_tensor(n, "rhs", rhs)
        el = _same_element(n, [("lhs", a), ("rhs", b)])
        as_, bs = _shape(a), _shape(b)
        if not as_ or not bs:
            raise _fail(n, "operands must have rank >= 1")
        a2 = (1, *as_) if len(as_) == 1 else as_
        b2 = (*bs, 1) if len(bs) == 1 else bs
        if a2[-1] != b2[-2]:
            raise _fail(
                n,
                f"contraction dim: lhs dim {len(as_) - 1} (={as_[-1]}) must equal rhs dim "
                f"{max(len(bs) - 2, 0)} (={b2[-2]})",
            )
        batch = broadcast_shapes([a2[:-2], b2[:-2]], n, ["lhs batch dims", "rhs batch dims"])
        out = [*batch]
        if len(as_) > 1:
            out.append(a2[-2])
        if len(bs) > 1:
            out.append(b2[-1])
        return TensorType(el, out)


@irdl_op_definition
class GemmOp(GraphOperation):
    """``graph.gemm``: ONNX Gemm ``Y = alpha * A' @ B' + beta * C``.

    A (M, K) or (K, M) if ``trans_a``; B (K, N) or (N, K) if ``trans_b``; optional C
    unidirectionally broadcastable to (M, N); result (M, N).
    """

    name = "graph.gemm"

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    result = result_def(TensorType)

    alpha_attr = prop_def(_F32_ATTR, _f32(1.0), prop_name="alpha")
    beta_attr = prop_def(_F32_ATTR, _f32(1.0), prop_name="beta")
    trans_a_attr = opt_prop_def(UnitAttr, prop_name="trans_a")
    trans_b_attr = opt_prop_def(UnitAttr, prop_name="trans_b")

    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        a: SSAValue | Operation,
        b: SSAValue | Operation,
        c: SSAValue | Operation | None = None,
        *,
        alpha: float = 1.0,
        beta: float = 1.0,
        trans_a: bool = False,
        trans_b: bool = False,
        result_type: Attribute | None = None,
    ):
        a, b = SSAValue.get(a), SSAValue.get(b)
        cv = SSAValue.get(c) if c is not None else None
        if result_type is None:
            result_type = self.infer_type(
                a.type, b.type, cv.type if cv is not None else None, trans_a=trans_a, trans_b=trans_b
            )
        props: dict[str, Attribute] = {"alpha": _f32(alpha), "beta": _f32(beta)}
        if trans_a:
            props["trans_a"] = UnitAttr()
        if trans_b:
            props["trans_b"] = UnitAttr()
        super().__init__(
            operands=[a, b, [cv] if cv is not None else []],
            result_types=[result_type],
            properties=props,
        )

    @property
    def alpha(self) -> float:
        return self.alpha_attr.value.data

    @property
    def beta(self) -> float:
        return self.beta_attr.value.data

    @property
    def trans_a(self) -> bool:
        return self.trans_a_attr is not None

    @property
    def trans_b(self) -> bool:
        return self.trans_b_attr is not None

    @classmethod
    def infer_type(
        cls,
        a_type: Attribute,
        b_type: Attribute,
        c_type: Attribute | None = None,
        *,
        trans_a: bool = False,
        trans_b: bool = False,
    ) -> TensorType:
        n = cls.name
        a = _float_tensor(n, "a", a_type)
        b = _float_tensor(n, "b", b_type)
        named = [("a", a), ("b", b)]
        if c_type is not None:
            named.append(("c", _float_tensor(n, "c", c_type)))
        el = _same_element(n, named)
        as_, bs = _shape(a), _shape(b)
        if len(as_) != 2:
            raise _fail(n, f"a must be 2-D, got rank {len(as_)}")
        if len(bs) != 2:
            raise _fail(n, f"b must be 2-D, got rank {len(bs)}")
        m, ka = (as_[1], as_[0]) if trans_a else as_
        kb, nn = (bs[1], bs[0]) if trans_b else bs
        if ka != kb:
            raise _fail(
                n,
                f"contraction dim: a dim {0 if trans_a else 1} (={ka}) must equal "
                f"b dim {1 if trans_b else 0} (={kb})",
            )
        if c_type is not None:
            cs = _shape(named[2][1])
            if len(cs) > 2:
                raise _fail(n, f"c must have rank <= 2, got rank {len(cs)}")
            target = (m, nn)
            for j, d in enumerate(cs):
                k = 2 - len(cs) + j
                if d not in (1, target[k]):
                    raise _fail(
                        n,
                        f"c dim {j} (={d}) is not broadcastable to result dim {k} (={target[k]})",
                    )
        return TensorType(el, [m, nn])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (
            self.infer_type(
                self.a.type,
                self.b.type,
                self.c.type if self.c is not None else None,
                trans_a=self.trans_a,
                trans_b=self.trans_b,
            ),
        )


# --------------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class AddOp(_BinaryOp):
    """``graph.add``: ``lhs + rhs`` with numpy broadcasting."""

    name = "graph.add"


@irdl_op_definition
class SubOp(_BinaryOp):
    """``graph.sub``: ``lhs - rhs`` with numpy broadcasting."""

    name = "graph.sub"


@irdl_op_definition
class MulOp(_BinaryOp):
    """``graph.mul``: ``lhs * rhs`` with numpy broadcasting."""

    name = "graph.mul"


@irdl_op_definition
class DivOp(_BinaryOp):
    """``graph.div``: ``lhs / rhs`` with numpy broadcasting."""

    name = "graph.div"


@irdl_op_definition
class SumOp(GraphOperation):
    """``graph.sum``: elementwise sum of one or more tensors with numpy broadcasting."""

    name = "graph.sum"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(
        self, inputs: Sequence[SSAValue | Operation], *, result_type: Attribute | None = None
    ):
        vals = [SSAValue.get(v) for v in inputs]
        super().__init__(
            operands=[vals],
            result_types=[result_type or self.infer_type([v.type for v in vals])],
        )

    @classmethod
    def infer_type(cls, input_types: Sequence[Attribute]) -> TensorType:
        n = cls.name
        if not input_types:
            raise _fail(n, "expects at least one input")
        ts = [_float_tensor(n, f"input #{i}", t) for i, t in enumerate(input_types)]
        names = [f"input #{i}" for i in range(len(ts))]
        el = _same_element(n, list(zip(names, ts)))
        return TensorType(el, broadcast_shapes([_shape(t) for t in ts], n, names))

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type([v.type for v in self.inputs]),)


@irdl_op_definition
class ReluOp(_UnaryFloatOp):
    """``graph.relu``: ``max(x, 0)``."""

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(_UnaryFloatOp):
    """``graph.sigmoid``: ``1 / (1 + exp(-x))``."""

    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(_UnaryFloatOp):
    """``graph.tanh``: hyperbolic tangent."""

    name = "graph.tanh"


@irdl_op_definition
class SqrtOp(_UnaryFloatOp):
    """``graph.sqrt``: square root (NaN below 0, as ONNX Sqrt)."""

    name = "graph.sqrt"


@irdl_op_definition
class ErfOp(_UnaryFloatOp):
    """``graph.erf``: the Gauss error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``
    (ONNX Erf; GELU's ``0.5 x (1 + erf(x / sqrt 2))``)."""

    name = "graph.erf"


@irdl_op_definition
class ClipOp(_UnaryFloatOp):
    """``graph.clip``: ``min(max(x, min), max)``; bounds are f32 properties (default ∓inf)."""

    name = "graph.clip"

    min_attr = prop_def(_F32_ATTR, _f32(-math.inf), prop_name="min")
    max_attr = prop_def(_F32_ATTR, _f32(math.inf), prop_name="max")

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        min: float = -math.inf,
        max: float = math.inf,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            input, result_type=result_type, properties={"min": _f32(min), "max": _f32(max)}
        )

    @property
    def min(self) -> float:
        return self.min_attr.value.data

    @property
    def max(self) -> float:
        return self.max_attr.value.data

    def verify_(self) -> None:
        super().verify_()
        if self.min > self.max:
            raise _fail(self.name, f"min (={self.min}) must be <= max (={self.max})")


@irdl_op_definition
class LeakyReluOp(_UnaryFloatOp):
    """``graph.leaky_relu``: ``x if x >= 0 else alpha * x``."""

    name = "graph.leaky_relu"

    alpha_attr = prop_def(_F32_ATTR, _f32(0.01), prop_name="alpha")

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        alpha: float = 0.01,
        result_type: Attribute | None = None,
    ):
        super().__init__(input, result_type=result_type, properties={"alpha": _f32(alpha)})

    @property
    def alpha(self) -> float:
        return self.alpha_attr.value.data


@irdl_op_definition
class DropoutOp(_UnaryFloatOp):
    """``graph.dropout``: identity at inference (``ratio`` kept for reference)."""

    name = "graph.dropout"

    ratio_attr = prop_def(_F32_ATTR, _f32(0.5), prop_name="ratio")

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        ratio: float = 0.5,
        result_type: Attribute | None = None,
    ):
        super().__init__(input, result_type=result_type, properties={"ratio": _f32(ratio)})

    @property
    def ratio(self) -> float:
        return self.ratio_attr.value.data

    def verify_(self) -> None:
        super().verify_()
        if not 0.0 <= self.ratio < 1.0:
            raise _fail(self.name, f"ratio (={self.ratio}) must be in [0, 1)")


@irdl_op_definition
class CastOp(GraphOperation):
    """``graph.cast``: the input converted to the result's float element type, same shape
    (``numpy.ndarray.astype``: round to nearest even when narrowing; f16 <-> f32 <-> f64).

    The ONNX frontend puts one at each float16 graph input (f16 -> f32) and output (f32 -> f16):
    float16 models are stored in f16 at their boundary and computed in f32 ("f16 storage, f32
    compute"). ``convert-graph-to-tile`` lowers exactly those boundary casts (the conversion is
    the host's, see :mod:`taihu.passes.conversion.graph_to_tile.cast`)::

        %x32 = graph.cast %x : tensor<1x3x8x8xf16> -> tensor<1x3x8x8xf32>
    """

    name = "graph.cast"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = _UNARY_FORMAT

    def __init__(self, input: SSAValue | Operation, element_type: Attribute):
        input = SSAValue.get(input)
        t = _float_tensor(self.name, "input", input.type)
        super().__init__(operands=[input], result_types=[TensorType(element_type, _shape(t))])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        x = _float_tensor(self.name, "input", self.input.type)
        r = _float_tensor(self.name, "result", self.result.type)
        if x.element_type == r.element_type:
            raise _fail(self.name, f"input and result have the same element type {r.element_type}: nothing to cast")
        return (TensorType(r.element_type, _shape(x)),)


# --------------------------------------------------------------------------------------------
# Pooling / normalization
# --------------------------------------------------------------------------------------------


class _PoolOp(GraphOperation):
    input = operand_def(TensorType)
    result = result_def(TensorType)

    kernel_shape_attr = prop_def(_I64_ARRAY, prop_name="kernel_shape")
    strides_attr = opt_prop_def(_I64_ARRAY, prop_name="strides")
    pads_attr = opt_prop_def(_I64_ARRAY, prop_name="pads")
    dilations_attr = opt_prop_def(_I64_ARRAY, prop_name="dilations")
    ceil_mode_attr = opt_prop_def(UnitAttr, prop_name="ceil_mode")

    assembly_format = _UNARY_FORMAT

    def _init(
        self,
        input: SSAValue | Operation,
        kernel_shape: Sequence[int],
        strides: Sequence[int] | None,
        pads: Sequence[int] | None,
        dilations: Sequence[int] | None,
        ceil_mode: bool,
        extra: dict[str, Attribute],
        result_type: Attribute | None,
    ) -> None:
        input = SSAValue.get(input)
        k = len(kernel_shape)
        strides = tuple(strides) if strides is not None else (1,) * k
        pads = tuple(pads) if pads is not None else (0,) * (2 * k)
        dilations = tuple(dilations) if dilations is not None else (1,) * k
        if result_type is None:
            result_type = self.infer_type(
                input.type,
                kernel_shape=kernel_shape,
                strides=strides,
                pads=pads,
                dilations=dilations,
                ceil_mode=ceil_mode,
            )
        props: dict[str, Attribute] = {"kernel_shape": _i64_array(kernel_shape)}
        if any(s != 1 for s in strides):
            props["strides"] = _i64_array(strides)
        if any(p != 0 for p in pads):
            props["pads"] = _i64_array(pads)
        if any(d != 1 for d in dilations):
            props["dilations"] = _i64_array(dilations)
        if ceil_mode:
            props["ceil_mode"] = UnitAttr()
        IRDLOperation.__init__(
            self, operands=[input], result_types=[result_type], properties=props | extra
        )

    @property
    def kernel_shape(self) -> tuple[int, ...]:
        return _ints(self.kernel_shape_attr)

    @property
    def strides(self) -> tuple[int, ...]:
        return _ints(self.strides_attr) or (1,) * len(self.kernel_shape)

    @property
    def pads(self) -> tuple[int, ...]:
        return _ints(self.pads_attr) or (0,) * (2 * len(self.kernel_shape))

    @property
    def dilations(self) -> tuple[int, ...]:
        return _ints(self.dilations_attr) or (1,) * len(self.kernel_shape)

    @property
    def ceil_mode(self) -> bool:
        return self.ceil_mode_attr is not None

    @classmethod
    def infer_type(
        cls,
        input_type: Attribute,
        *,
        kernel_shape: Sequence[int],
        strides: Sequence[int] | None = None,
        pads: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        ceil_mode: bool = False,
    ) -> TensorType:
        n = cls.name
        x = _float_tensor(n, "input", input_type)
        xs = _shape(x)
        k = len(kernel_shape)
        strides = tuple(strides) if strides is not None else (1,) * k
        pads = tuple(pads) if pads is not None else (0,) * (2 * k)
        dilations = tuple(dilations) if dilations is not None else (1,) * k
        if len(xs) != k + 2:
            raise _fail(
                n,
                f"input rank {len(xs)} must be 2 + kernel_shape rank ({k}) (N, C, spatial...)",
            )
        _check_spatial_params(n, k, strides, pads, dilations, kernel_shape)
        out = [xs[0], xs[1]]
        for i in range(k):
            if pads[i] >= kernel_shape[i] * dilations[i] or pads[k + i] >= kernel_shape[i] * dilations[i]:
                raise _fail(
                    n,
                    f"pads of spatial dim {2 + i} (={pads[i]}, {pads[k + i]}) must be smaller "
                    f"than the kernel (={kernel_shape[i]})",
                )
            o = pool_output_size(
                xs[2 + i], kernel_shape[i], strides[i], pads[i], pads[k + i], dilations[i], ceil_mode
            )
            if o < 1:
                raise _fail(
                    n,
                    f"output dim {2 + i} is empty: input dim {2 + i} (={xs[2 + i]}) + pads "
                    f"(={pads[i]}+{pads[k + i]}) is smaller than the dilated kernel "
                    f"(={dilations[i] * (kernel_shape[i] - 1) + 1})",
                )
            out.append(o)
        return TensorType(x.element_type, out)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (
            self.infer_type(
                self.input.type,
                kernel_shape=self.kernel_shape,
                strides=self.strides,
                pads=self.pads,
                dilations=self.dilations,
                ceil_mode=self.ceil_mode,
            ),
        )


@irdl_op_definition
class MaxPoolOp(_PoolOp):
    """``graph.max_pool``: ONNX MaxPool (N, C, spatial...) -> (N, C, out...), padding = -inf.

    Output size per spatial dim: :func:`pool_output_size` (floor, or ceil with ``ceil_mode``).
    """

    name = "graph.max_pool"

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        kernel_shape: Sequence[int],
        strides: Sequence[int] | None = None,
        pads: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        ceil_mode: bool = False,
        result_type: Attribute | None = None,
    ):
        self._init(input, kernel_shape, strides, pads, dilations, ceil_mode, {}, result_type)


@irdl_op_definition
class AvgPoolOp(_PoolOp):
    """``graph.avg_pool``: ONNX AveragePool; ``count_include_pad`` counts padded cells.

    Output size as :class:`MaxPoolOp`. ``dilations`` (opset 19) is accepted as an extension.
    """

    name = "graph.avg_pool"

    count_include_pad_attr = opt_prop_def(UnitAttr, prop_name="count_include_pad")

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        kernel_shape: Sequence[int],
        strides: Sequence[int] | None = None,
        pads: Sequence[int] | None = None,
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        dilations: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        extra: dict[str, Attribute] = {"count_include_pad": UnitAttr()} if count_include_pad else {}
        self._init(input, kernel_shape, strides, pads, dilations, ceil_mode, extra, result_type)

    @property
    def count_include_pad(self) -> bool:
        return self.count_include_pad_attr is not None


@irdl_op_definition
class GlobalAvgPoolOp(GraphOperation):
    """``graph.global_avg_pool``: mean over all spatial dims, (N, C, H, W) -> (N, C, 1, 1)."""

    name = "graph.global_avg_pool"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = _UNARY_FORMAT

    def __init__(self, input: SSAValue | Operation, *, result_type: Attribute | None = None):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input], result_types=[result_type or self.infer_type(input.type)]
        )

    @classmethod
    def infer_type(cls, input_type: Attribute) -> TensorType:
        x = _float_tensor(cls.name, "input", input_type)
        xs = _shape(x)
        if len(xs) < 3:
            raise _fail(cls.name, f"input must have rank >= 3 (N, C, spatial...), got {len(xs)}")
        return TensorType(x.element_type, [xs[0], xs[1], *([1] * (len(xs) - 2))])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type(self.input.type),)


@irdl_op_definition
class BatchNormOp(GraphOperation):
    """``graph.batch_norm``: inference-mode BatchNormalization over channel dim 1.

    ``y = scale * (x - mean) / sqrt(var + epsilon) + bias``; x (N, C, ...), the other operands (C,).
    """

    name = "graph.batch_norm"

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    result = result_def(TensorType)

    epsilon_attr = prop_def(_F32_ATTR, _f32(1e-5), prop_name="epsilon")

    assembly_format = _OPERANDS_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        scale: SSAValue | Operation,
        bias: SSAValue | Operation,
        mean: SSAValue | Operation,
        var: SSAValue | Operation,
        *,
        epsilon: float = 1e-5,
        result_type: Attribute | None = None,
    ):
        vals = [SSAValue.get(v) for v in (input, scale, bias, mean, var)]
        super().__init__(
            operands=vals,
            result_types=[result_type or self.infer_type(*[v.type for v in vals])],
            properties={"epsilon": _f32(epsilon)},
        )

    @property
    def epsilon(self) -> float:
        return self.epsilon_attr.value.data

    @classmethod
    def infer_type(
        cls, input: Attribute, scale: Attribute, bias: Attribute, mean: Attribute, var: Attribute
    ) -> TensorType:
        n = cls.name
        names = ("input", "scale", "bias", "mean", "var")
        ts = [_float_tensor(n, nm, t) for nm, t in zip(names, (input, scale, bias, mean, var))]
        el = _same_element(n, list(zip(names, ts)))
        xs = _shape(ts[0])
        if len(xs) < 2:
            raise _fail(n, f"input must have rank >= 2 (N, C, ...), got {len(xs)}")
        for nm, t in zip(names[1:], ts[1:]):
            s = _shape(t)
            if len(s) != 1 or s[0] != xs[1]:
                raise _fail(n, f"{nm} shape {list(s)} must be [{xs[1]}] (input channel dim 1)")
        return TensorType(el, xs)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (
            self.infer_type(
                self.input.type, self.scale.type, self.bias.type, self.mean.type, self.var.type
            ),
        )


@irdl_op_definition
class LRNOp(_UnaryFloatOp):
    """``graph.lrn``: ONNX LRN across channels (dim 1) of an (N, C, ...) tensor.

    ``y = x / (bias + alpha/size * sum_{window of size channels} x^2) ^ beta``.
    """

    name = "graph.lrn"

    size_attr = prop_def(_I64_ATTR, prop_name="size")
    alpha_attr = prop_def(_F32_ATTR, _f32(1e-4), prop_name="alpha")
    beta_attr = prop_def(_F32_ATTR, _f32(0.75), prop_name="beta")
    bias_attr = prop_def(_F32_ATTR, _f32(1.0), prop_name="bias")

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        size: int,
        alpha: float = 1e-4,
        beta: float = 0.75,
        bias: float = 1.0,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            input,
            result_type=result_type,
            properties={
                "size": _i64(size),
                "alpha": _f32(alpha),
                "beta": _f32(beta),
                "bias": _f32(bias),
            },
        )

    @property
    def size(self) -> int:
        return self.size_attr.value.data

    @property
    def alpha(self) -> float:
        return self.alpha_attr.value.data

    @property
    def beta(self) -> float:
        return self.beta_attr.value.data

    @property
    def bias(self) -> float:
        return self.bias_attr.value.data

    @classmethod
    def infer_type(cls, input_type: Attribute) -> TensorType:
        x = _float_tensor(cls.name, "input", input_type)
        if len(_shape(x)) < 2:
            raise _fail(cls.name, f"input must have rank >= 2 (N, C, ...), got {len(_shape(x))}")
        return x

    def verify_(self) -> None:
        super().verify_()
        if self.size < 1:
            raise _fail(self.name, f"size must be >= 1, got {self.size}")


@irdl_op_definition
class SoftmaxOp(_UnaryFloatOp):
    """``graph.softmax``: opset-13 Softmax along one ``axis`` (default -1)."""

    name = "graph.softmax"

    axis_attr = prop_def(_I64_ATTR, _i64(-1), prop_name="axis")

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        axis: int = -1,
        result_type: Attribute | None = None,
    ):
        super().__init__(input, result_type=result_type, properties={"axis": _i64(axis)})

    @property
    def axis(self) -> int:
        return self.axis_attr.value.data

    def verify_(self) -> None:
        super().verify_()
        rank = len(_shape(self.input.type))  # type: ignore[arg-type]
        if rank == 0:
            raise _fail(self.name, "input must have rank >= 1")
        _normalize_axis(self.name, self.axis, rank)


# --------------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class ConcatOp(GraphOperation):
    """``graph.concat``: concatenation along ``axis``; other dims must agree."""

    name = "graph.concat"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    axis_attr = prop_def(_I64_ATTR, prop_name="axis")

    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        *,
        axis: int,
        result_type: Attribute | None = None,
    ):
        vals = [SSAValue.get(v) for v in inputs]
        super().__init__(
            operands=[vals],
            result_types=[result_type or self.infer_type([v.type for v in vals], axis=axis)],
            properties={"axis": _i64(axis)},
        )

    @property
    def axis(self) -> int:
        return self.axis_attr.value.data

    @classmethod
    def infer_type(cls, input_types: Sequence[Attribute], *, axis: int) -> TensorType:
        n = cls.name
        if not input_types:
            raise _fail(n, "expects at least one input")
        ts = [_tensor(n, f"input #{i}", t) for i, t in enumerate(input_types)]
        el = _same_element(n, [(f"input #{i}", t) for i, t in enumerate(ts)])
        s0 = _shape(ts[0])
        ax = _normalize_axis(n, axis, len(s0))
        total = 0
        for i, t in enumerate(ts):
            s = _shape(t)
            if len(s) != len(s0):
                raise _fail(n, f"input #{i} has rank {len(s)}, input #0 has rank {len(s0)}")
            for d in range(len(s)):
                if d != ax and s[d] != s0[d]:
                    raise _fail(
                        n, f"input #{i} dim {d} (={s[d]}) must equal input #0 dim {d} (={s0[d]})"
                    )
            total += s[ax]
        out = list(s0)
        out[ax] = total
        return TensorType(el, out)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type([v.type for v in self.inputs], axis=self.axis),)


@irdl_op_definition
class ReshapeOp(GraphOperation):
    """``graph.reshape``: same elements, static target shape given by the result type."""

    name = "graph.reshape"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = _UNARY_FORMAT

    def __init__(self, input: SSAValue | Operation, result_type: Attribute | Sequence[int]):
        input = SSAValue.get(input)
        if not isinstance(result_type, Attribute):
            assert isinstance(input.type, TensorType)
            result_type = TensorType(input.type.element_type, list(result_type))
        super().__init__(operands=[input], result_types=[result_type])

    @property
    def shape(self) -> tuple[int, ...]:
        return _shape(self.result.type)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        x = _tensor(self.name, "input", self.input.type)
        r = _tensor(self.name, "result", self.result.type)
        if x.element_type != r.element_type:
            raise _fail(
                self.name,
                f"result element type {r.element_type} differs from input {x.element_type}",
            )
        a, b = math.prod(_shape(x)), math.prod(_shape(r))
        if a != b:
            raise _fail(
                self.name,
                f"result has {b} elements ({list(_shape(r))}) but input has {a} "
                f"({list(_shape(x))})",
            )
        return (r,)


@irdl_op_definition
class FlattenOp(GraphOperation):
    """``graph.flatten``: (d0..dn) -> (prod(d0..d_{axis-1}), prod(d_axis..dn)); axis in [-r, r]."""

    name = "graph.flatten"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    axis_attr = prop_def(_I64_ATTR, _i64(1), prop_name="axis")

    assembly_format = _UNARY_FORMAT

    def __init__(
        self, input: SSAValue | Operation, *, axis: int = 1, result_type: Attribute | None = None
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input],
            result_types=[result_type or self.infer_type(input.type, axis=axis)],
            properties={"axis": _i64(axis)},
        )

    @property
    def axis(self) -> int:
        return self.axis_attr.value.data

    @classmethod
    def infer_type(cls, input_type: Attribute, *, axis: int = 1) -> TensorType:
        x = _tensor(cls.name, "input", input_type)
        s = _shape(x)
        r = len(s)
        if not -r <= axis <= r:
            raise _fail(cls.name, f"axis {axis} is out of range [{-r}, {r}]")
        ax = axis + r if axis < 0 else axis
        return TensorType(x.element_type, [math.prod(s[:ax]), math.prod(s[ax:])])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type(self.input.type, axis=self.axis),)


@irdl_op_definition
class TransposeOp(GraphOperation):
    """``graph.transpose``: ``result.shape[i] = input.shape[perm[i]]``; default perm reverses."""

    name = "graph.transpose"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    perm_attr = opt_prop_def(_I64_ARRAY, prop_name="perm")

    assembly_format = _UNARY_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        perm: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        input = SSAValue.get(input)
        props = {"perm": _i64_array(perm)} if perm is not None else {}
        super().__init__(
            operands=[input],
            result_types=[result_type or self.infer_type(input.type, perm=perm)],
            properties=props,
        )

    @property
    def perm(self) -> tuple[int, ...]:
        """The permutation (resolved: the reversal when the property is absent)."""
        if self.perm_attr is not None:
            return _ints(self.perm_attr)
        rank = len(_shape(self.input.type))  # type: ignore[arg-type]
        return tuple(range(rank - 1, -1, -1))

    @classmethod
    def infer_type(cls, input_type: Attribute, *, perm: Sequence[int] | None = None) -> TensorType:
        x = _tensor(cls.name, "input", input_type)
        s = _shape(x)
        if perm is None:
            perm = tuple(range(len(s) - 1, -1, -1))
        if sorted(perm) != list(range(len(s))):
            raise _fail(cls.name, f"perm {list(perm)} is not a permutation of 0..{len(s) - 1}")
        return TensorType(x.element_type, [s[p] for p in perm])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type(self.input.type, perm=self.perm),)


@irdl_op_definition
class UnsqueezeOp(GraphOperation):
    """``graph.unsqueeze``: insert size-1 dims at ``axes`` (relative to the output rank)."""

    name = "graph.unsqueeze"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    axes_attr = prop_def(_I64_ARRAY, prop_name="axes")

    assembly_format = _UNARY_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        axes: Sequence[int],
        result_type: Attribute | None = None,
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input],
            result_types=[result_type or self.infer_type(input.type, axes=axes)],
            properties={"axes": _i64_array(axes)},
        )

    @property
    def axes(self) -> tuple[int, ...]:
        return _ints(self.axes_attr)

    @classmethod
    def infer_type(cls, input_type: Attribute, *, axes: Sequence[int]) -> TensorType:
        x = _tensor(cls.name, "input", input_type)
        s = _shape(x)
        r = len(s) + len(axes)
        norm = [_normalize_axis(cls.name, a, r, "axes entry") for a in axes]
        if len(set(norm)) != len(norm):
            raise _fail(cls.name, f"axes {list(axes)} contain duplicates")
        it = iter(s)
        return TensorType(x.element_type, [1 if d in norm else next(it) for d in range(r)])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type(self.input.type, axes=self.axes),)


@irdl_op_definition
class PadOp(GraphOperation):
    """``graph.pad``: constant-mode Pad; pads (x1_begin..xn_begin, x1_end..xn_end), may be < 0."""

    name = "graph.pad"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    pads_attr = prop_def(_I64_ARRAY, prop_name="pads")
    value_attr = prop_def(_F32_ATTR, _f32(0.0), prop_name="value")

    assembly_format = _UNARY_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        pads: Sequence[int],
        value: float = 0.0,
        result_type: Attribute | None = None,
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input],
            result_types=[result_type or self.infer_type(input.type, pads=pads)],
            properties={"pads": _i64_array(pads), "value": _f32(value)},
        )

    @property
    def pads(self) -> tuple[int, ...]:
        return _ints(self.pads_attr)

    @property
    def value(self) -> float:
        return self.value_attr.value.data

    @classmethod
    def infer_type(cls, input_type: Attribute, *, pads: Sequence[int]) -> TensorType:
        x = _tensor(cls.name, "input", input_type)
        s = _shape(x)
        r = len(s)
        if len(pads) != 2 * r:
            raise _fail(cls.name, f"pads has {len(pads)} entries, expected {2 * r} (2 * rank)")
        out = []
        for d in range(r):
            o = s[d] + pads[d] + pads[r + d]
            if o < 0:
                raise _fail(
                    cls.name,
                    f"dim {d} (={s[d]}) padded by {pads[d]}+{pads[r + d]} would be negative",
                )
            out.append(o)
        return TensorType(x.element_type, out)

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (self.infer_type(self.input.type, pads=self.pads),)


@irdl_op_definition
class LayoutTransformOp(GraphOperation):
    """``graph.layout_transform``: relayout, e.g. ``NCHW`` -> ``NHWC``.

    Layouts are strings of distinct dimension letters with the same letter set; semantics are a
    transpose with ``perm = [from_layout.index(c) for c in to_layout]``.
    """

    name = "graph.layout_transform"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    from_layout_attr = prop_def(StringAttr, prop_name="from_layout")
    to_layout_attr = prop_def(StringAttr, prop_name="to_layout")

    assembly_format = _UNARY_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        from_layout: str,
        to_layout: str,
        result_type: Attribute | None = None,
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input],
            result_types=[
                result_type
                or self.infer_type(input.type, from_layout=from_layout, to_layout=to_layout)
            ],
            properties={"from_layout": StringAttr(from_layout), "to_layout": StringAttr(to_layout)},
        )

    @property
    def from_layout(self) -> str:
        return self.from_layout_attr.data

    @property
    def to_layout(self) -> str:
        return self.to_layout_attr.data

    @property
    def perm(self) -> tuple[int, ...]:
        return tuple(self.from_layout.index(c) for c in self.to_layout)

    @classmethod
    def infer_type(cls, input_type: Attribute, *, from_layout: str, to_layout: str) -> TensorType:
        n = cls.name
        x = _tensor(n, "input", input_type)
        s = _shape(x)
        for what, lay in (("from_layout", from_layout), ("to_layout", to_layout)):
            if len(set(lay)) != len(lay) or not lay.isalpha():
                raise _fail(n, f"{what} \"{lay}\" must be distinct dimension letters")
        if sorted(from_layout) != sorted(to_layout):
            raise _fail(
                n, f"layouts \"{from_layout}\" and \"{to_layout}\" have different dimension letters"
            )
        if len(from_layout) != len(s):
            raise _fail(n, f"layout \"{from_layout}\" has {len(from_layout)} dims, input has rank {len(s)}")
        return TensorType(x.element_type, [s[from_layout.index(c)] for c in to_layout])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return (
            self.infer_type(self.input.type, from_layout=self.from_layout, to_layout=self.to_layout),
        )


# --------------------------------------------------------------------------------------------
# Recurrent
# --------------------------------------------------------------------------------------------


def _check_shapes(op_name: str, named: Sequence[tuple[str, TensorType]], expected: Mapping[str, Sequence[int]]) -> None:
    """Each named operand has exactly its expected shape (a recurrent op's weights and states);
    else a VerifyException naming the operand and the dim."""
    for nm, t in named:
        s, e = _shape(t), expected[nm]
        if len(s) != len(e):
            raise _fail(op_name, f"{nm} must have rank {len(e)} {list(e)}, got {list(s)}")
        for d, (got, want) in enumerate(zip(s, e)):
            if got != want:
                raise _fail(op_name, f"{nm} dim {d} is {got}, expected {want} (shape {list(e)})")


@irdl_op_definition
class LSTMOp(GraphOperation):
    """``graph.lstm``: ONNX LSTM, forward direction, activations (sigmoid, tanh, tanh).

    x (seq, batch, input), w (1, 4H, input), r (1, 4H, H), optional b (1, 8H) [Wb, Rb],
    initial_h / initial_c (1, batch, H); gate order i, o, f, c (ONNX).
    Results y (seq, 1, batch, H), y_h (1, batch, H), y_c (1, batch, H). Seed 004 §5.2.
    """

    name = "graph.lstm"

    x = operand_def(TensorType)
    w = operand_def(TensorType)
    r = operand_def(TensorType)
    b = opt_operand_def(TensorType)
    initial_h = opt_operand_def(TensorType)
    initial_c = opt_operand_def(TensorType)

    y = result_def(TensorType)
    y_h = result_def(TensorType)
    y_c = result_def(TensorType)

    hidden_size_attr = prop_def(_I64_ATTR, prop_name="hidden_size")

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())

    assembly_format = (
        "$x `,` $w `,` $r"
        " (`bias` `(` $b^ `:` type($b) `)`)?"
        " (`initial_h` `(` $initial_h^ `:` type($initial_h) `)`)?"
        " (`initial_c` `(` $initial_c^ `:` type($initial_c) `)`)?"
        " attr-dict `:` `(` type($x) `,` type($w) `,` type($r) `)`"
        " `->` `(` type($y) `,` type($y_h) `,` type($y_c) `)`"
    )

    def __init__(
        self,
        x: SSAValue | Operation,
        w: SSAValue | Operation,
        r: SSAValue | Operation,
        b: SSAValue | Operation | None = None,
        initial_h: SSAValue | Operation | None = None,
        initial_c: SSAValue | Operation | None = None,
        *,
        hidden_size: int,
        result_types: Sequence[Attribute] | None = None,
    ):
        xv, wv, rv = SSAValue.get(x), SSAValue.get(w), SSAValue.get(r)
        opt = [SSAValue.get(v) if v is not None else None for v in (b, initial_h, initial_c)]
        if result_types is None:
            result_types = self.infer_types(
                xv.type,
                wv.type,
                rv.type,
                *[v.type if v is not None else None for v in opt],
                hidden_size=hidden_size,
            )
        super().__init__(
            operands=[xv, wv, rv, *[[v] if v is not None else [] for v in opt]],
            result_types=list(result_types),
            properties={"hidden_size": _i64(hidden_size)},
        )

    @property
    def hidden_size(self) -> int:
        return self.hidden_size_attr.value.data

    @classmethod
    def infer_types(
        cls,
        x: Attribute,
        w: Attribute,
        r: Attribute,
        b: Attribute | None = None,
        initial_h: Attribute | None = None,
        initial_c: Attribute | None = None,
        *,
        hidden_size: int,
    ) -> tuple[TensorType, TensorType, TensorType]:
        """Types of (y, y_h, y_c)."""
        n = cls.name
        h = hidden_size
        if h < 1:
            raise _fail(n, f"hidden_size must be >= 1, got {h}")
        named = [(nm, _float_tensor(n, nm, t)) for nm, t in (("x", x), ("w", w), ("r", r))]
        for nm, t in (("b", b), ("initial_h", initial_h), ("initial_c", initial_c)):
            if t is not None:
                named.append((nm, _float_tensor(n, nm, t)))
        el = _same_element(n, named)
        xs = _shape(named[0][1])
        if len(xs) != 3:
            raise _fail(n, f"x must be 3-D (seq, batch, input), got rank {len(xs)}")
        seq, batch, inp = xs
        expected = {
            "w": (1, 4 * h, inp),
            "r": (1, 4 * h, h),
            "b": (1, 8 * h),
            "initial_h": (1, batch, h),
            "initial_c": (1, batch, h),
        }
        _check_shapes(n, named[1:], expected)
        return (
            TensorType(el, [seq, 1, batch, h]),
            TensorType(el, [1, batch, h]),
            TensorType(el, [1, batch, h]),
        )

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return self.infer_types(
            self.x.type,
            self.w.type,
            self.r.type,
            self.b.type if self.b is not None else None,
            self.initial_h.type if self.initial_h is not None else None,
            self.initial_c.type if self.initial_c is not None else None,
            hidden_size=self.hidden_size,
        )


@irdl_op_definition
class GRUOp(GraphOperation):
    """``graph.gru``: ONNX GRU, forward direction, activations (sigmoid, tanh).

    x (seq, batch, input), w (1, 3H, input), r (1, 3H, H), optional b (1, 6H) [Wb, Rb],
    initial_h (1, batch, H); gate order z, r, h (ONNX); ``linear_before_reset`` (0 or 1)
    applies the reset gate after (1) or before (0) the recurrent product of the h gate.
    Results y (seq, 1, batch, H), y_h (1, batch, H).
    """

    name = "graph.gru"

    x = operand_def(TensorType)
    w = operand_def(TensorType)
    r = operand_def(TensorType)
    b = opt_operand_def(TensorType)
    initial_h = opt_operand_def(TensorType)

    y = result_def(TensorType)
    y_h = result_def(TensorType)

    hidden_size_attr = prop_def(_I64_ATTR, prop_name="hidden_size")
    linear_before_reset_attr = prop_def(_I64_ATTR, _i64(0), prop_name="linear_before_reset")

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())

    assembly_format = (
        "$x `,` $w `,` $r"
        " (`bias` `(` $b^ `:` type($b) `)`)?"
        " (`initial_h` `(` $initial_h^ `:` type($initial_h) `)`)?"
        " attr-dict `:` `(` type($x) `,` type($w) `,` type($r) `)`"
        " `->` `(` type($y) `,` type($y_h) `)`"
    )

    def __init__(
        self,
        x: SSAValue | Operation,
        w: SSAValue | Operation,
        r: SSAValue | Operation,
        b: SSAValue | Operation | None = None,
        initial_h: SSAValue | Operation | None = None,
        *,
        hidden_size: int,
        linear_before_reset: int = 0,
        result_types: Sequence[Attribute] | None = None,
    ):
        xv, wv, rv = SSAValue.get(x), SSAValue.get(w), SSAValue.get(r)
        opt = [SSAValue.get(v) if v is not None else None for v in (b, initial_h)]
        if result_types is None:
            result_types = self.infer_types(xv.type, wv.type, rv.type, *[v.type if v is not None else None for v in opt],
                                            hidden_size=hidden_size, linear_before_reset=linear_before_reset)
        super().__init__(
            operands=[xv, wv, rv, *[[v] if v is not None else [] for v in opt]],
            result_types=list(result_types),
            properties={"hidden_size": _i64(hidden_size), "linear_before_reset": _i64(linear_before_reset)},
        )

    @property
    def hidden_size(self) -> int:
        return self.hidden_size_attr.value.data

    @property
    def linear_before_reset(self) -> int:
        return self.linear_before_reset_attr.value.data

    @classmethod
    def infer_types(
        cls,
        x: Attribute,
        w: Attribute,
        r: Attribute,
        b: Attribute | None = None,
        initial_h: Attribute | None = None,
        *,
        hidden_size: int,
        linear_before_reset: int = 0,
    ) -> tuple[TensorType, TensorType]:
        """Types of (y, y_h)."""
        n = cls.name
        h = hidden_size
        if h < 1:
            raise _fail(n, f"hidden_size must be >= 1, got {h}")
        if linear_before_reset not in (0, 1):
            raise _fail(n, f"linear_before_reset must be 0 or 1, got {linear_before_reset}")
        named = [(nm, _float_tensor(n, nm, t)) for nm, t in (("x", x), ("w", w), ("r", r))]
        for nm, t in (("b", b), ("initial_h", initial_h)):
            if t is not None:
                named.append((nm, _float_tensor(n, nm, t)))
        el = _same_element(n, named)
        xs = _shape(named[0][1])
        if len(xs) != 3:
            raise _fail(n, f"x must be 3-D (seq, batch, input), got rank {len(xs)}")
        seq, batch, inp = xs
        expected = {"w": (1, 3 * h, inp), "r": (1, 3 * h, h), "b": (1, 6 * h), "initial_h": (1, batch, h)}
        _check_shapes(n, named[1:], expected)
        return TensorType(el, [seq, 1, batch, h]), TensorType(el, [1, batch, h])

    def infer_result_types(self) -> tuple[TensorType, ...]:
        return self.infer_types(
            self.x.type, self.w.type, self.r.type,
            self.b.type if self.b is not None else None,
            self.initial_h.type if self.initial_h is not None else None,
            hidden_size=self.hidden_size, linear_before_reset=self.linear_before_reset,
        )


Graph = Dialect(
    "graph",
    [
        ConstantOp,
        Conv2dOp,
        MatMulOp,
        GemmOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        SumOp,
        ReluOp,
        SigmoidOp,
        TanhOp,
        SqrtOp,
        ErfOp,
        ClipOp,
        LeakyReluOp,
        MaxPoolOp,
        AvgPoolOp,
        GlobalAvgPoolOp,
        BatchNormOp,
        LRNOp,
        SoftmaxOp,
        ConcatOp,
        ReshapeOp,
        FlattenOp,
        TransposeOp,
        UnsqueezeOp,
        PadOp,
        DropoutOp,
        CastOp,
        LayoutTransformOp,
        LSTMOp,
        GRUOp,
    ],
    [],
)
