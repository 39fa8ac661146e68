"""ONNX frontend: an ONNX ``ModelProto`` becomes one ``func.func`` of ``graph`` dialect ops.

``import_model(path_or_model, name="main")`` returns a ``builtin.module`` holding one
``func.func @main``:

* its arguments are the graph inputs that are not initializers, in ONNX order, each with the
  argument attribute ``{graph.name = "<onnx input name>"}``;
* its results are the graph outputs in ONNX order, each with the result attribute
  ``{graph.name = "<onnx output name>"}``;
* initializers, ``Constant`` and ``ConstantOfShape`` results are compile-time values: they are
  materialized as ``graph.constant`` (via :func:`taihu.dialects.graph.constant`: splat for uniform
  tensors, inline for small ones, ``dense_resource`` blobs for large ones) only where a tensor
  operand needs them; shape-like inputs (Reshape shape, Unsqueeze axes, Pad pads, Clip bounds)
  are read from them directly and never become IR.

Supported: default-domain opsets 9-25 (the op versions listed in ``_SUPPORTED_VERSIONS``;
versions 22-25 of these ops only widen type constraints) for Conv, MatMul, Gemm, Add, Sub, Mul,
Div, Sum, Relu, Sigmoid, Tanh, Clip, LeakyRelu, MaxPool, AveragePool, GlobalAveragePool,
BatchNormalization, LRN, Softmax, Concat, Reshape, Flatten, Transpose, Unsqueeze, Pad, Dropout,
Constant, ConstantOfShape, Identity, LSTM, GRU; 2-D (NCHW) convolution and pooling; element types
f16/f32/f64; static shapes. Decomposed into graph ops: HardSigmoid (mul, add, clip), HardSwish
(x * HardSigmoid(x)), GlobalMaxPool (a whole-plane max_pool), ReduceMean / ReduceSum / ReduceMax /
ReduceMin over any axes (transpose the reduced axes last, reshape to (1, P, R), global_avg_pool;
sum = mean x R; max: a (1, R) max_pool; min = -max(-x)), Slice and Split (cropping pads; a
positive step s: the axis padded to a multiple of s, viewed as (P * k, s * Q), the first Q
columns cropped), Einsum (operands contracted left to right, each pair one batched matmul
between transposes / views, labels of one operand only summed as ReduceSum; no diagonals), ConvTranspose (2-D, constant weight: zeros inserted between the pixels, a stride-1
convolution with the flipped weight; pads explicit or from output_shape / auto_pad), Resize
(nearest and linear on H and W, any scales or sizes: two matmuls with constant interpolation
matrices; nearest integer upsampling: a broadcast multiply),
Squeeze (a reshape view), Gather at constant indices (crops of the index runs, concatenated).

float16 models are stored in f16 and computed in f32: f16 initializers and other compile-time
values become f32 constants at import (exactly: every f16 is an f32), each f16 graph input is an
f16 function argument followed by ``graph.cast`` to f32, and each graph output the model declares
f16 is a ``graph.cast`` of the f32 result to f16 (round to nearest even). So the function
signature keeps the model's f16 types, everything between is f32, and the results are rounded to
f16 once, where onnxruntime may round after every node (hence f16 tolerances when comparing).

Shape sub-graphs (the exporters' ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``, int64
``Mul``/``Div``, ``Slice``/``Squeeze``/``Cast``/``Expand``/``Equal``/``Where``/``Mod``/``Range`` on
shape values, any opset onnx knows): a node whose inputs are all compile-time values (for
``Shape``/``Size``: whose input's shape is known, i.e. always) and that either has no converter
or reads a non-float value is evaluated at import by onnx's reference implementation
(:mod:`taihu.frontends.onnx_fold`); its result is a compile-time value again. Such an op on a
computed tensor is an error naming it. A converted op on float compile-time values (a Transpose
of a weight) still becomes graph ops, but is also evaluated at import, on demand, when a node
that needs compile-time values reads its result: swin_t's attention mask, ConstantOfShape ->
ScatterND -> Reshape -> Transpose -> Sub -> Equal -> Where, is one constant.

Result types come from the graph op constructors' own shape inference; every result whose shape
ONNX shape inference (or the model's ``value_info``) declares statically is checked against it.

Errors: anything unsupported or malformed raises :class:`OnnxImportError` with one line naming the
op type, the node and the reason (``Conv node 'conv1': auto_pad ... ``), or the file.

"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from taihu.dialects import graph
from taihu.dialects.graph_flops import USEFUL_FLOPS_ATTR
from taihu.frontends.onnx_fold import SHAPE_ONLY, FoldError, evaluate_node, shape_stand_in

__all__ = [
    "CONSTANT_SLOTS",
    "SUPPORTED_OPS",
    "OnnxImportError",
    "constant_slot_inputs",
    "import_model",
    "load_model",
    "uses_float16",
]


class OnnxImportError(Exception):
    """An ONNX model the frontend cannot import (one-line message naming op, node and reason)."""


MIN_OPSET = 9
"""Oldest default-domain opset accepted (ONNX opset 9, ONNX 1.4)."""

# op type -> the schema versions (``since_version``) whose semantics this importer implements.
_SUPPORTED_VERSIONS: dict[str, frozenset[int]] = {
    k: frozenset(v)
    for k, v in {
        "Conv": (1, 11, 22),
        "MatMul": (1, 9, 13),
        "Gemm": (9, 11, 13),
        "Add": (7, 13, 14),
        "Sub": (7, 13, 14),
        "Mul": (7, 13, 14),
        "Div": (7, 13, 14),
        "Sum": (8, 13),
        "Relu": (6, 13, 14),
        "Sigmoid": (6, 13),
        "Tanh": (6, 13),
        "Clip": (6, 11, 12, 13),
        "LeakyRelu": (6, 16),
        "MaxPool": (8, 10, 11, 12, 22),
        "AveragePool": (7, 10, 11, 19, 22),
        "GlobalAveragePool": (1, 22),
        "BatchNormalization": (9, 14, 15),
        "LRN": (1, 13),
        "Softmax": (1, 11, 13),
        "Concat": (4, 11, 13),
        "Reshape": (5, 13, 14, 19, 21, 23, 24, 25),
        "Flatten": (9, 11, 13, 21, 23, 24, 25),
        "Transpose": (1, 13, 21, 23, 24, 25),
        "Unsqueeze": (1, 11, 13, 21, 23, 24, 25),
        "Pad": (2, 11, 13, 18, 19, 21, 23, 24, 25),
        "Dropout": (7, 10, 12, 13, 22),
        "Constant": (9, 11, 12, 13, 19, 21, 23, 24, 25),
        "ConstantOfShape": (9, 20, 21, 23, 24, 25),
        "Identity": (1, 13, 14, 16, 19, 21, 23, 24, 25),
        "LSTM": (7, 14, 22),
        "GRU": (7, 14, 22),
        "ConvTranspose": (1, 11, 22),
        "Squeeze": (1, 11, 13, 21, 23, 24, 25),
        "Gather": (1, 11, 13),
        "Expand": (8, 13),
        "Resize": (10, 11, 13, 18, 19),
        "Sqrt": (6, 13),
        "Erf": (9, 13),
        "Pow": (7, 12, 13, 15),
        "Gelu": (20,),
        "LayerNormalization": (17,),
        "HardSigmoid": (6, 22),
        "HardSwish": (14, 22),
        "GlobalMaxPool": (1, 22),
        "ReduceMean": (1, 11, 13, 18),
        "ReduceSum": (1, 11, 13),
        "ReduceL2": (1, 11, 13, 18),
        "ReduceMax": (1, 11, 12, 13, 18, 20),
        "ReduceMin": (1, 11, 12, 13, 18, 20),
        "Slice": (1, 10, 11, 13),
        "Split": (2, 11, 13, 18),
        "Cast": (6, 9, 13, 19, 21, 23, 24, 25, 28),
        "Einsum": (12, 28),
    }.items()
}

_ELEM_TYPES: dict[int, Any] = {
    TensorProto.FLOAT: f32,
    TensorProto.FLOAT16: f16,
    TensorProto.DOUBLE: f64,
}
_NP_TO_ELEM: dict[np.dtype, Any] = {
    np.dtype(np.float32): f32,
    np.dtype(np.float16): f16,
    np.dtype(np.float64): f64,
}
_ELEM_TO_NP: dict[Any, np.dtype] = {e: d for d, e in _NP_TO_ELEM.items()}


def _onnx_type_name(elem_type: int) -> str:
    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type#{elem_type}"


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load_model(path_or_model: str | os.PathLike[str] | ModelProto) -> ModelProto:
    """Return the ``ModelProto`` (reading the file, external data included, if a path is given).

    Raises ``OnnxImportError`` for a missing/unreadable/non-ONNX file or a model without a graph.
    """
    if isinstance(path_or_model, ModelProto):
        model = path_or_model
        where = "model"
    else:
        where = os.fspath(path_or_model)
        if not os.path.isfile(where):
            raise OnnxImportError(f"{where}: no such file")
        try:
            model = onnx.load(where)
        except Exception as e:  # protobuf DecodeError, external-data errors, ...
            raise OnnxImportError(f"{where}: not a readable ONNX model ({_one_line(e)})") from None
    if not model.HasField("graph") or (len(model.graph.node) == 0 and len(model.graph.output) == 0):
        raise OnnxImportError(f"{where}: not an ONNX model (no graph)")
    return model


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# Declared value types
# --------------------------------------------------------------------------------------------


def _declared_types(model: ModelProto) -> dict[str, tuple[int, tuple[int, ...] | None]]:
    """name -> (onnx elem type, static shape or None) of the values the model itself declares
    (``graph.value_info`` and ``graph.output``).

    ONNX's C++ shape inference is deliberately not consulted: it is not the semantics. For
    example onnx 1.23 infers 4 for a ceil_mode MaxPool/AveragePool whose last window would start
    in the end padding, where the operator spec's reference implementation, onnxruntime and
    PyTorch drop that window (3); the graph dialect follows the latter
    (:func:`taihu.dialects.graph.pool_output_size`).
    """
    g = model.graph
    out: dict[str, tuple[int, tuple[int, ...] | None]] = {}
    for vi in list(g.value_info) + list(g.output):
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        shape: tuple[int, ...] | None = None
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shape = tuple(d.dim_value for d in tt.shape.dim)
        out[vi.name] = (tt.elem_type, shape)
    return out


# --------------------------------------------------------------------------------------------
# Importer
# --------------------------------------------------------------------------------------------


@dataclass
class _NodeCtx:
    node: NodeProto
    index: int
    since: int  # since_version of the resolved schema
    opset: int
    attrs: dict[str, Any] = field(default_factory=dict)
    consumed: frozenset[str] = frozenset()  # names read by some node or returned

    def where(self) -> str:
        name = f"'{self.node.name}'" if self.node.name else f"#{self.index}"
        return f"{self.node.op_type} node {name}"

    def error(self, reason: str) -> OnnxImportError:
        return OnnxImportError(f"{self.where()}: {reason}")

    def attr(self, name: str, default: Any = None) -> Any:
        v = self.attrs.get(name, default)
        if isinstance(v, bytes):
            return v.decode()
        return v

    def input_name(self, i: int) -> str:
        """Name of input i, "" if absent (optional input omitted)."""
        return self.node.input[i] if i < len(self.node.input) else ""

    def output_used(self, i: int) -> bool:
        """Output i exists and is read by a later node or is a graph output."""
        return i < len(self.node.output) and self.node.output[i] in self.consumed


class _Importer:
    def __init__(
        self,
        model: ModelProto,
        func_name: str,
        constant_inputs: Mapping[str, np.ndarray] | None = None,
    ):
        self.model = model
        self.constant_inputs = dict(constant_inputs or {})
        self.func_name = func_name
        self.opset = self._default_opset(model)
        self.values: dict[str, SSAValue] = {}
        self.consts: dict[str, np.ndarray] = {}
        # outputs of converted nodes whose inputs were all compile-time (a float chain such as
        # the exporters' attention-mask ConstantOfShape -> ScatterND -> Reshape -> Transpose ->
        # Sub): built as graph ops, and evaluated at import as well, on demand, when a node that
        # needs a compile-time value (an op without converter, a shape input) reads one.
        self.lazy: dict[str, tuple[int, NodeProto]] = {}
        self.block: Block | None = None
        self.declared: dict[str, tuple[int, tuple[int, ...] | None]] = {}
        # graph inputs the graph dialect cannot hold (int, bool, sequence...): name -> reason;
        # reported at their first use, so the message names the consuming node.
        self.bad_inputs: dict[str, str] = {}
        self.consumed: frozenset[str] = frozenset()
        # f16 graph inputs not yet cast to f32 (each is cast once, at its first use)
        self.f16_args: set[str] = set()

    @staticmethod
    def _default_opset(model: ModelProto) -> int:
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                v = imp.version
                if v < MIN_OPSET:
                    raise OnnxImportError(
                        f"model uses default-domain opset {v}; opset {MIN_OPSET} or newer is"
                        " required"
                    )
                if v > onnx.defs.onnx_opset_version():
                    raise OnnxImportError(
                        f"model uses default-domain opset {v}, newer than this onnx package knows"
                        f" ({onnx.defs.onnx_opset_version()})"
                    )
                return v
        raise OnnxImportError("model imports no default-domain (ai.onnx) opset")

    # ---- values -------------------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        assert self.block is not None
        op.verify()  # VerifyException -> OnnxImportError naming the node (see import_node)
        self.block.add_op(op)
        return op

    def has(self, name: str) -> bool:
        return name in self.values or name in self.consts or name in self.bad_inputs

    def const(self, ctx: _NodeCtx, i: int, what: str) -> np.ndarray:
        """Compile-time value of input i (initializer, Constant, ConstantOfShape)."""
        name = ctx.input_name(i)
        if name in self.consts:
            return self.consts[name]
        if name in self.lazy:
            return self.lazy_const(name)
        if name in self.values or name in self.bad_inputs:
            raise ctx.error(
                f"{what} input '{name}' must be a constant (initializer or Constant), not a"
                " graph input or computed value"
            )
        raise ctx.error(f"input '{name}' is not defined before its use")

    def value(self, ctx: _NodeCtx | None, name: str) -> SSAValue:
        """SSA value of a tensor operand; materializes compile-time values as graph.constant."""
        v = self.values.get(name)
        if v is not None and name in self.f16_args:  # f16 storage, f32 compute
            self.f16_args.discard(name)
            v = self.values[name] = self.emit(graph.CastOp(v, f32)).results[0]
            v.name_hint = _hint(name) + "_f32"
        if v is not None:
            return v
        if name in self.bad_inputs:
            msg = self.bad_inputs[name]
            raise ctx.error(msg) if ctx is not None else OnnxImportError(msg)
        arr = self.consts.get(name)
        if arr is None:
            msg = f"value '{name}' is not defined before its use"
            raise ctx.error(msg) if ctx is not None else OnnxImportError(msg)
        if arr.dtype not in _NP_TO_ELEM:
            msg = (
                f"tensor '{name}' has element type {arr.dtype}; the graph dialect only holds"
                " f16/f32/f64 tensors"
            )
            raise ctx.error(msg) if ctx is not None else OnnxImportError(msg)

        op = self.emit(graph.constant(arr, name_hint=_hint(name)))
        v = op.results[0]
        self.values[name] = v
        return v

    def opt_value(self, ctx: _NodeCtx, i: int) -> SSAValue | None:
        name = ctx.input_name(i)
        return self.value(ctx, name) if name else None

    # ---- driver ---------------------------------------------------------------------------------

    def run(self) -> ModuleOp:
        g = self.model.graph
        self.declared = _declared_types(self.model)
        init_names = set()
        for init in g.initializer:
            init_names.add(init.name)
            self.consts[init.name] = _compute_array(_tensor_to_array(init))
        for sp in g.sparse_initializer:
            raise OnnxImportError(f"sparse initializer '{sp.values.name}' is not supported")

        input_names = {vi.name for vi in g.input}
        for cname, cval in self.constant_inputs.items():
            if cname not in input_names or cname in init_names:
                raise OnnxImportError(
                    f"constant_inputs names '{cname}', which is not a graph input"
                )
            self.consts[cname] = _compute_array(np.asarray(cval))
        arg_types: list[TensorType] = []
        arg_names: list[str] = []
        for vi in g.input:
            if vi.name in init_names or vi.name in self.constant_inputs:
                continue
            try:
                arg_types.append(_value_info_type(vi))
            except OnnxImportError as e:
                self.bad_inputs[vi.name] = str(e)
                continue
            arg_names.append(vi.name)
        self.block = Block(arg_types=arg_types)
        for name, arg in zip(arg_names, self.block.args):
            self.values[name] = arg
            arg.name_hint = _hint(name)
            if isinstance(arg.type, TensorType) and arg.type.element_type == f16:  # f16 storage, f32 compute
                self.f16_args.add(name)  # cast to f32 at its first use (self.value)

        self.consumed = frozenset(
            [n for node in g.node for n in node.input if n] + [o.name for o in g.output]
        )
        for index, node in enumerate(g.node):
            self.import_node(index, node)
        for reason in self.bad_inputs.values():  # unused, but still a function argument
            raise OnnxImportError(reason)

        results: list[SSAValue] = []
        for vi in g.output:
            if not self.has(vi.name):
                raise OnnxImportError(f"graph output '{vi.name}' is not produced by any node")
            v = self.value(None, vi.name)
            if (vi.type.tensor_type.elem_type == TensorProto.FLOAT16 and isinstance(v.type, TensorType)
                    and v.type.element_type != f16):
                v = self.emit(graph.CastOp(v, f16)).results[0]  # back to the model's f16 storage
                v.name_hint = _hint(vi.name)
            results.append(v)
            declared = _value_info_type_or_none(vi)
            if declared is not None and declared != v.type:
                raise OnnxImportError(
                    f"graph output '{vi.name}' is declared {declared} but computes {v.type}"
                )
        ret = ReturnOp(*results)
        self.block.add_op(ret)  # verified with the module below

        func = FuncOp(
            self.func_name,
            ([a.type for a in self.block.args], [r.type for r in results]),
            Region(self.block),
            arg_attrs=ArrayAttr([_name_dict(n) for n in arg_names]),
            res_attrs=ArrayAttr([_name_dict(vi.name) for vi in g.output]),
        )
        module = ModuleOp([func])
        try:
            # graph ops were verified one by one as they were built (errors name the node);
            # here only the module, the function and its return.
            module.verify(verify_nested_ops=False)
            func.verify(verify_nested_ops=False)
            ret.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise OnnxImportError(f"imported module does not verify: {_one_line(e)}") from None
        return module

    def import_node(self, index: int, node: NodeProto) -> None:
        op_type = node.op_type
        name = f"'{node.name}'" if node.name else f"#{index}"
        if node.domain not in ("", "ai.onnx"):
            raise OnnxImportError(
                f"{op_type} node {name}: unsupported op (domain '{node.domain}' is not ai.onnx)"
            )
        folded = self.fold(index, node)
        if folded is not None:
            self.bind_outputs(_NodeCtx(node, index, 0, self.opset, {}, self.consumed), folded)
            return
        conv = _CONVERTERS.get(op_type)
        if conv is None:
            computed = [i for i in node.input if i and i not in self.consts]
            why = (f" (its input '{computed[0]}' is not a compile-time value, so the node is not evaluated at "
                   "import)" if computed and all(self.has(i) for i in node.input if i) else "")
            raise OnnxImportError(f"{op_type} node {name}: unsupported op{why}")
        try:
            since = onnx.defs.get_schema(op_type, self.opset, "").since_version
        except Exception:
            raise OnnxImportError(
                f"{op_type} node {name}: op is not defined in opset {self.opset}"
            ) from None
        if since not in _SUPPORTED_VERSIONS[op_type]:
            raise OnnxImportError(
                f"{op_type} node {name}: version {since} of the op (opset {self.opset}) is not"
                " supported"
            )
        attrs: dict[str, Any] = {}
        for a in node.attribute:
            if a.ref_attr_name:
                raise OnnxImportError(
                    f"{op_type} node {name}: attribute '{a.name}' refers to a function attribute"
                )
            if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                raise OnnxImportError(f"{op_type} node {name}: subgraph attribute '{a.name}'")
            if a.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.SPARSE_TENSOR):
                attrs[a.name] = a  # decoded by the converter (a.t)
            else:
                attrs[a.name] = helper.get_attribute_value(a)
        ctx = _NodeCtx(node, index, since, self.opset, attrs, self.consumed)
        allowed = conv.attrs(since) if callable(conv.attrs) else conv.attrs
        for a in attrs:
            if a not in allowed:
                raise ctx.error(f"unsupported attribute '{a}'")
        for inp in node.input:
            if inp and not self.has(inp):
                raise ctx.error(f"input '{inp}' is not defined before its use")
        try:
            outs = conv.fn(self, ctx)
        except OnnxImportError:
            if not self.deferred(node):
                raise
            # the converter cannot build this node (e.g. a Gather of 4096 index runs) but its
            # inputs are compile-time values: evaluated at import instead
            outs = [self.lazy_const(o) if o else None for o in node.output]
            for o in node.output:  # bound below, as a converter's arrays are
                self.consts.pop(o, None)
        except (VerifyException, ValueError, TypeError, IndexError, KeyError) as e:
            raise ctx.error(_one_line(e)) from None
        self.bind_outputs(ctx, outs)

    def fold(self, index: int, node: NodeProto) -> list[np.ndarray] | None:
        """The node's outputs evaluated at import (:mod:`taihu.frontends.onnx_fold`), or None
        when it is not folded: folded are nodes whose inputs are all compile-time values (for
        ``Shape`` / ``Size``: whose input's shape is known) and that either have no converter or
        read a non-float value (int64 shape arithmetic, bool masks); ``Constant``,
        ``ConstantOfShape`` and ``Identity`` keep their converters. A converted node whose inputs
        are all compile-time or deferred is deferred (:meth:`defer`): a node folded later may read
        its outputs, evaluated then (:meth:`lazy_const`)."""
        names = [n for n in node.input if n]
        if node.op_type in ("Constant", "ConstantOfShape", "Identity"):
            if node.op_type == "Identity" and names and names[0] in self.lazy:
                self.defer(index, node)
            return None
        if not names or not all(self.has(n) for n in names):
            return None
        shape_only = node.op_type in SHAPE_ONLY
        if any(n not in self.consts and n not in self.lazy and not (shape_only and n in self.values)
               for n in names):
            return None  # a computed tensor: the converter builds graph ops
        to_float = node.op_type != "Cast" or any(
            a.name == "to" and a.i in _ELEM_TYPES for a in node.attribute)
        if node.op_type in _CONVERTERS and (
                (to_float and any(n not in self.consts for n in names))
                or (node.op_type != "Cast" and all(self.consts[n].dtype in _NP_TO_ELEM for n in names))):
            # float constants or deferred values: the converter builds graph ops (folded later by
            # the passes); the outputs are evaluated here only if a node needing compile-time
            # values reads them
            self.defer(index, node)
            return None
        inputs: list[np.ndarray | None] = []
        for n in node.input:
            if not n:
                inputs.append(None)
            elif n in self.consts:
                inputs.append(self.consts[n])
            elif shape_only and n in self.values:  # only the shape of a computed tensor is read
                t = self.values[n].type
                assert isinstance(t, TensorType)
                inputs.append(shape_stand_in(t.get_shape(), _ELEM_TO_NP[t.element_type]))
            else:
                inputs.append(self.lazy_const(n))
        return self.evaluate(index, node, inputs)

    def evaluate(self, index: int, node: NodeProto, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
        name = f"'{node.name}'" if node.name else f"#{index}"
        try:
            return evaluate_node(node, inputs, self.opset)
        except FoldError as e:
            raise OnnxImportError(f"{node.op_type} node {name}: cannot evaluate at import: {e}") from None

    def defer(self, index: int, node: NodeProto) -> None:
        """Mark the outputs of a node on compile-time (or deferred) inputs that its converter
        builds as graph ops: :meth:`lazy_const` evaluates them when a compile-time value is
        needed."""
        for o in node.output:
            if o:
                self.lazy[o] = (index, node)

    def deferred(self, node: NodeProto) -> bool:
        """Whether ``node`` was deferred (:meth:`defer`): its outputs can be evaluated at import."""
        return any(o and self.lazy.get(o, (None, None))[1] is node for o in node.output)

    def lazy_const(self, name: str) -> np.ndarray:
        """The compile-time value of a deferred output (its producer and, first, the deferred
        producers of its inputs evaluated at import), kept in ``consts``."""
        if name in self.consts:
            return self.consts[name]
        order: list[tuple[int, NodeProto]] = []  # producers to evaluate, inputs first
        seen: set[int] = set()  # node indices
        stack = [(name, False)]
        while stack:
            n, ready = stack.pop()
            index, node = self.lazy[n]
            if ready:
                if index not in seen:
                    seen.add(index)
                    order.append((index, node))
                continue
            stack.append((n, True))
            stack.extend((i, False) for i in node.input
                         if i and i not in self.consts and i in self.lazy)
        for index, node in order:
            if all(o in self.consts for o in node.output if o):
                continue
            outs = self.evaluate(index, node, [self.consts[i] if i else None for i in node.input])
            for o, a in zip(node.output, outs):
                if o:
                    self.consts.setdefault(o, _compute_array(a))
        return self.consts[name]

    def bind_outputs(self, ctx: _NodeCtx, outs: Sequence[Any]) -> None:
        """Record a node's outputs (SSA values or compile-time arrays), checked against the
        types the model declares for them."""
        node = ctx.node
        for out in node.output:
            if out and self.has(out):
                raise ctx.error(f"output '{out}' is already defined (ONNX graphs are SSA)")
        for i, out in enumerate(outs):
            if i >= len(node.output) or not node.output[i]:
                continue
            oname = node.output[i]
            if isinstance(out, np.ndarray):
                out = self.consts[oname] = _compute_array(out)
                got_shape, got_elem = out.shape, _NP_TO_ELEM.get(out.dtype)
            else:
                self.values[oname] = out
                if out.name_hint is None:
                    out.name_hint = _hint(oname)
                assert isinstance(out.type, TensorType)
                got_shape, got_elem = tuple(out.type.get_shape()), out.type.element_type
            decl = self.declared.get(oname)
            if decl is not None:
                elem_type, shape = decl
                want_elem = _COMPUTE_ELEM.get(_ELEM_TYPES.get(elem_type), _ELEM_TYPES.get(elem_type))
                if want_elem is not None and got_elem is not None and want_elem != got_elem:
                    raise ctx.error(
                        f"output '{oname}' has element type {got_elem} but the model declares"
                        f" {want_elem}"
                    )
                if shape is not None and tuple(shape) != tuple(got_shape):
                    raise ctx.error(
                        f"output '{oname}' has shape {_fmt(got_shape)} but the model declares"
                        f" {_fmt(shape)}"
                    )
        for i in range(len(outs), len(node.output)):
            if ctx.output_used(i):
                raise ctx.error(f"optional output {i} ('{node.output[i]}') is not supported")


_COMPUTE_ELEM: dict[Any, Any] = {f16: f32}
"""Element type a model's tensors of a storage type are computed in (f16 storage, f32 compute)."""


def _compute_array(arr: np.ndarray) -> np.ndarray:
    """A compile-time value in its compute type: float16 becomes float32 (exactly)."""
    return arr.astype(np.float32) if arr.dtype == np.float16 else arr


def _fmt(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _hint(name: str) -> str:
    """An SSA name hint from an ONNX value name (MLIR-legal characters only)."""
    h = re.sub(r"[^A-Za-z0-9_$.-]", "_", name)
    if not h or h[0].isdigit() or h[0] in "$.-":
        h = "v" + h
    return h


def _name_dict(name: str) -> DictionaryAttr:
    return DictionaryAttr({"graph.name": StringAttr(name)})


_NP_DTYPES: dict[int, np.dtype] = {
    TensorProto.FLOAT: np.dtype("<f4"),
    TensorProto.FLOAT16: np.dtype("<f2"),
    TensorProto.DOUBLE: np.dtype("<f8"),
    TensorProto.INT64: np.dtype("<i8"),
    TensorProto.INT32: np.dtype("<i4"),
}


def _tensor_to_array(t: TensorProto) -> np.ndarray:
    if t.data_location == TensorProto.EXTERNAL and not t.raw_data:
        raise OnnxImportError(f"tensor '{t.name}' has unloaded external data")
    np_dtype = _NP_DTYPES.get(t.data_type)
    # (every read of the protobuf field copies its bytes: read it once)
    raw = t.raw_data if np_dtype is not None and t.data_location != TensorProto.EXTERNAL else b""
    if raw and np_dtype is not None:
        # Fast path: one copy (the bytes object), no per-element work.
        count = math.prod(t.dims)
        if len(raw) != count * np_dtype.itemsize:
            raise OnnxImportError(
                f"tensor '{t.name}' holds {len(raw)} bytes but dims {list(t.dims)} need"
                f" {count * np_dtype.itemsize}"
            )
        return np.frombuffer(raw, dtype=np_dtype).reshape(tuple(t.dims))
    try:
        return numpy_helper.to_array(t)
    except Exception as e:
        raise OnnxImportError(f"tensor '{t.name}' cannot be decoded ({_one_line(e)})") from None


def _value_info_type_or_none(vi: onnx.ValueInfoProto) -> TensorType | None:
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    elem = _ELEM_TYPES.get(tt.elem_type)
    if elem is None or not tt.HasField("shape"):
        return None
    if not all(d.HasField("dim_value") for d in tt.shape.dim):
        return None
    return TensorType(elem, [d.dim_value for d in tt.shape.dim])


def _value_info_type(vi: onnx.ValueInfoProto) -> TensorType:
    if not vi.type.HasField("tensor_type"):
        raise OnnxImportError(f"graph input '{vi.name}' is not a tensor")
    tt = vi.type.tensor_type
    elem = _ELEM_TYPES.get(tt.elem_type)
    if elem is None:
        raise OnnxImportError(
            f"graph input '{vi.name}' has element type {_onnx_type_name(tt.elem_type)};"
            " only float16/float/double are supported"
        )
    if not tt.HasField("shape"):
        raise OnnxImportError(f"graph input '{vi.name}' has no shape (static shapes required)")
    dims = []
    for k, d in enumerate(tt.shape.dim):
        if not d.HasField("dim_value"):
            raise OnnxImportError(
                f"graph input '{vi.name}' dim {k} is dynamic ('{d.dim_param}');"
                " static shapes are required"
            )
        dims.append(d.dim_value)
    return TensorType(elem, dims)


# --------------------------------------------------------------------------------------------
# Converters: fn(importer, ctx) -> list of output values (SSAValue or np.ndarray constant)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Conv:
    fn: Callable[[_Importer, _NodeCtx], list[Any]]
    attrs: frozenset[str] | Callable[[int], frozenset[str]]


_CONVERTERS: dict[str, _Conv] = {}


def _converter(*op_types: str, attrs: Sequence[str] = ()):
    def deco(fn: Callable[[_Importer, _NodeCtx], list[Any]]):
        for t in op_types:
            _CONVERTERS[t] = _Conv(fn, frozenset(attrs))
        return fn

    return deco


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType)
    return tuple(v.type.get_shape())


def _ints(x: Any) -> tuple[int, ...]:
    return tuple(int(i) for i in x)


def _require_rank(ctx: _NodeCtx, v: SSAValue, rank: int, what: str = "input") -> tuple[int, ...]:
    s = _shape(v)
    if len(s) != rank:
        raise ctx.error(f"{what} has rank {len(s)} ({_fmt(s)}); only rank {rank} is supported")
    return s


def _resolve_pads(
    ctx: _NodeCtx,
    in_hw: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, int, int, int]:
    """Explicit (top, left, bottom, right) pads from ``auto_pad`` / ``pads`` (ONNX rules)."""
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    pads = ctx.attr("pads")
    if auto_pad == "NOTSET":
        if pads is None:
            return (0, 0, 0, 0)
        if len(pads) != 4:
            raise ctx.error(f"pads {list(pads)} must have 4 entries for 2-D spatial input")
        return _ints(pads)  # type: ignore[return-value]
    if pads is not None and any(pads):
        raise ctx.error(f"pads {list(pads)} given together with auto_pad={auto_pad}")
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.error(f"unsupported auto_pad value '{auto_pad}'")
    begin, end = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        if auto_pad == "SAME_UPPER":
            begin.append(small)
            end.append(big)
        else:
            begin.append(big)
            end.append(small)
    return (begin[0], begin[1], end[0], end[1])


def _spatial_attrs(ctx: _NodeCtx, name: str, default: int = 1) -> tuple[int, int]:
    v = ctx.attr(name)
    if v is None:
        return (default, default)
    if len(v) != 2:
        raise ctx.error(f"{name} {list(v)} must have 2 entries for 2-D spatial input")
    return (int(v[0]), int(v[1]))


@_converter("Conv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def _conv(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    w = imp.value(ctx, ctx.input_name(1))
    b = imp.opt_value(ctx, 2)
    xs = _require_rank(ctx, x, 4)
    ws = _require_rank(ctx, w, 4, "weight")
    kernel = ws[2:]
    ks = ctx.attr("kernel_shape")
    if ks is not None and _ints(ks) != kernel:
        raise ctx.error(f"kernel_shape {list(ks)} does not match weight shape {_fmt(ws)}")
    strides = _spatial_attrs(ctx, "strides")
    dilations = _spatial_attrs(ctx, "dilations")
    pads = _resolve_pads(ctx, xs[2:], kernel, strides, dilations)
    op = imp.emit(
        graph.Conv2dOp(
            x,
            w,
            b,
            strides=strides,
            pads=pads,
            dilations=dilations,
            group=int(ctx.attr("group", 1)),
        )
    )
    return [op.results[0]]


def _upsample_zeros(imp: _Importer, x: SSAValue, sh: int, sw: int) -> SSAValue:
    """``x`` (N, C, H, W) with ``sh - 1`` / ``sw - 1`` zero rows / columns between its rows /
    columns: (N, C, (H-1) sh + 1, (W-1) sw + 1), as view (N, C, H, 1, W, 1) -> pad the unit dims
    -> view (N, C, H sh, W sw) -> crop the trailing zeros (graph.reshape and graph.pad only)."""
    n, c, h, w = _shape(x)
    v = imp.emit(graph.ReshapeOp(x, (n, c, h, 1, w, 1))).results[0]
    v = imp.emit(graph.PadOp(v, pads=[0] * 6 + [0, 0, 0, sh - 1, 0, sw - 1])).results[0]
    v = imp.emit(graph.ReshapeOp(v, (n, c, h * sh, w * sw))).results[0]
    return imp.emit(graph.PadOp(v, pads=[0, 0, 0, 0, 0, 0, 1 - sh, 1 - sw])).results[0]


def _conv_transpose_pads(ctx: _NodeCtx, xs: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                         dilations: Sequence[int], out_pad: Sequence[int], cout: int) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) pads of a ConvTranspose: explicit ``pads`` (default 0), or, when
    ``output_shape`` is given or ``auto_pad`` is SAME_UPPER / SAME_LOWER (``output_shape = input *
    stride``), the ONNX spec's rule: ``total = stride (in - 1) + output_padding + (k - 1) d + 1 -
    out``; SAME_UPPER puts ``total // 2`` at the start and the rest at the end, SAME_LOWER and NOTSET
    the larger half at the start. A negative total (an output larger than the full transposed
    convolution) is taken as 0 and the output extended at the end (zeros + bias), as onnxruntime
    does (and ONNX's ``test_convtranspose_output_shape`` expects); the end pad is then negative.
    ``output_shape`` wins over ``pads`` (the spec ignores them); VALID means no pads."""
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise ctx.error(f"unsupported auto_pad value '{auto_pad}'")
    out_shape = ctx.attr("output_shape")
    pads = ctx.attr("pads")
    if out_shape is None and auto_pad in ("NOTSET", "VALID"):
        if pads is None or auto_pad == "VALID":
            return (0, 0, 0, 0)
        if len(pads) != 4:
            raise ctx.error(f"pads {list(pads)} must have 4 entries for 2-D spatial input")
        return _ints(pads)  # type: ignore[return-value]
    if out_shape is None:
        if pads is not None and any(pads):
            raise ctx.error(f"pads {list(pads)} given together with auto_pad={auto_pad}")
        out = [xs[2] * strides[0], xs[3] * strides[1]]
    else:
        out = list(_ints(out_shape))
        if len(out) == 4 and out[:2] == [xs[0], cout]:
            out = out[2:]
        if len(out) != 2 or any(o < 1 for o in out):
            raise ctx.error(f"output_shape {list(out_shape)} must give the 2 positive spatial sizes (H, W)")
    begin, end = [], []
    for size, k, s, d, op, o in zip(xs[2:], kernel, strides, dilations, out_pad, out):
        total = s * (size - 1) + op + (k - 1) * d + 1 - o
        if total <= -s:
            raise ctx.error(f"output_shape {list(out_shape)} is {-total} beyond the full output {o + total} of an "
                            f"axis: at most stride - 1 = {s - 1} (as onnxruntime)")
        p = max(0, total)
        head = p // 2 if auto_pad == "SAME_UPPER" else p - p // 2
        begin.append(head)
        end.append(total - head)
    return (begin[0], begin[1], end[0], end[1])


@_converter("ConvTranspose", attrs=("auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                                    "output_shape", "pads", "strides"))
def _conv_transpose(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """The transposed convolution as a direct one: the input with ``stride - 1`` zeros inserted
    between its pixels (:func:`_upsample_zeros`), padded by ``d (k - 1) - pad`` on each side
    (+ ``output_padding`` at the end; negative: cropped), convolved at stride 1 with the weight
    flipped in space and its two channel dims swapped per group (constant weight, transformed at
    import); the pads come from :func:`_conv_transpose_pads`. The inserted zeros are multiplied too: a stride-s layer does s^2 x the useful work."""
    x = imp.value(ctx, ctx.input_name(0))
    xs = _require_rank(ctx, x, 4)
    w_np = imp.const(ctx, 1, "weight")
    if w_np.ndim != 4:
        raise ctx.error(f"weight has rank {w_np.ndim}; only 2-D (rank 4) transposed convolution is supported")
    g = int(ctx.attr("group", 1))
    cin, cout_g, kh, kw = w_np.shape
    if cin != xs[1] or cin % g:
        raise ctx.error(f"weight {_fmt(w_np.shape)} does not match {xs[1]} input channels in {g} groups")
    ks = ctx.attr("kernel_shape")
    if ks is not None and _ints(ks) != (kh, kw):
        raise ctx.error(f"kernel_shape {list(ks)} does not match weight shape {_fmt(w_np.shape)}")
    (sh, sw), (dh, dw) = _spatial_attrs(ctx, "strides"), _spatial_attrs(ctx, "dilations")
    oph, opw = _spatial_attrs(ctx, "output_padding", 0)
    pt, pl, pb, pr = _conv_transpose_pads(ctx, xs, (kh, kw), (sh, sw), (dh, dw), (oph, opw), g * cout_g)
    # (Cin, Cout/g, kh, kw) -> (Cout, Cin/g, kh, kw), flipped in space
    wt = w_np.reshape(g, cin // g, cout_g, kh, kw).transpose(0, 2, 1, 3, 4).reshape(g * cout_g, cin // g, kh, kw)
    wt = np.ascontiguousarray(wt[:, :, ::-1, ::-1])
    w = imp.emit(graph.constant(wt, name_hint=_hint(ctx.input_name(1)) + "_t")).results[0]
    b = imp.opt_value(ctx, 2)
    v = _upsample_zeros(imp, x, sh, sw) if (sh, sw) != (1, 1) else x
    ph, pw = dh * (kh - 1), dw * (kw - 1)
    edge = [ph - pt, pw - pl, ph - pb + oph, pw - pr + opw]
    if any(edge):
        v = imp.emit(graph.PadOp(v, pads=[0, 0, edge[0], edge[1], 0, 0, edge[2], edge[3]])).results[0]
    return [imp.emit(graph.Conv2dOp(v, w, b, dilations=(dh, dw), group=g)).results[0]]


_RESIZE_COORDS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_source_coords(coord: str, in_len: int, out_len: int, scale: float) -> np.ndarray:
    """Source coordinate ``x_original`` of every output index along one axis, the ONNX Resize
    spec's ``coordinate_transformation_mode`` formulas (``scale``: the axis's scale, given or
    ``out / in`` when sizes are given; ``length_resized`` = ``out_len``), evaluated in float32 as
    onnxruntime does (a nearest tie such as ``1.5 / 0.6f - 0.5`` rounds as there)."""
    f = np.float32
    y = np.arange(out_len, dtype=f)
    s = f(scale)
    if coord == "asymmetric":
        return y / s
    if coord == "align_corners":
        return np.zeros(out_len, f) if out_len == 1 else y * f(in_len - 1) / f(out_len - 1)
    if coord == "pytorch_half_pixel" and out_len == 1:
        return np.zeros(out_len, f)
    offset = f(0)
    if coord == "half_pixel_symmetric":  # the centre of the input maps to the centre of the output
        offset = f(in_len / 2) * (f(1) - f(out_len) / (s * f(in_len)))
    return offset + (y + f(0.5)) / s - f(0.5)


def _resize_matrix(mode: str, coord: str, nearest: str, antialias: bool, exclude_outside: bool,
                   in_len: int, out_len: int, scale: float) -> np.ndarray:
    """The (out_len, in_len) float64 matrix ``A`` of a 1-D ONNX Resize along one axis: ``y = A x``.

    ``nearest``: ``A[o, clamp(round(x_o))] = 1``, rounded per ``nearest_mode`` (an integer
    ``x_o`` is itself). ``linear``: the triangle filter ``max(0, 1 - |p - x_o| s)`` over the
    input indices p, normalised to sum 1, with ``s = 1`` (two taps: ``1 - r`` and ``r``) or, with
    ``antialias`` when downsampling, ``s = scale`` (a filter stretched over ``1 / scale`` pixels).
    Indices outside ``[0, in_len)`` are clamped (the spec's edge padding), or their taps dropped
    and the rest renormalised with ``exclude_outside``. Same coefficients as onnx's reference
    implementation (``onnx/reference/ops/op_resize.py``)."""
    x = _resize_source_coords(coord, in_len, out_len, scale).astype(np.float64)
    a = np.zeros((out_len, in_len))
    rows = np.arange(out_len)
    if mode == "nearest":
        lo = np.floor(x)
        frac = x - lo
        up = {"round_prefer_floor": frac > 0.5, "round_prefer_ceil": frac >= 0.5, "floor": np.zeros(out_len, bool),
              "ceil": frac > 0}[nearest]
        idx = np.clip(lo + up, 0, in_len - 1).astype(np.int64)
        a[rows, idx] = 1.0
        return a
    s = min(scale, 1.0) if antialias else 1.0
    reach = int(math.ceil(1.0 / s))
    for k in range(-reach, reach + 1):
        p = np.floor(x).astype(np.int64) + k
        wgt = np.maximum(0.0, 1.0 - np.abs(p - x) * s)
        inside = (p >= 0) & (p < in_len)
        if exclude_outside:
            wgt = np.where(inside, wgt, 0.0)
        np.add.at(a, (rows, np.clip(p, 0, in_len - 1)), wgt)
    total = a.sum(axis=1, keepdims=True)
    return a / np.where(total == 0, 1.0, total)


def _resize_plan(imp: _Importer, ctx: _NodeCtx, xs: Sequence[int]) -> tuple[list[int], list[float]]:
    """(output sizes, scales) of the four dims of a Resize node: ``scales`` (output
    ``floor(in * scale)``) or ``sizes`` (scale ``out / in``; ``keep_aspect_ratio_policy``
    not_larger / not_smaller: one scale, the min / max over ``axes``, sizes ``round(in * scale)``),
    each over ``axes`` (default all four), the spec's rules."""
    rank = len(xs)
    ax_attr = ctx.attr("axes")
    axes = [_norm_axis(ctx, int(a), rank, "axes entry") for a in ax_attr] if ax_attr is not None else list(range(rank))
    if len(set(axes)) != len(axes):
        raise ctx.error(f"axes {list(ax_attr)} repeat an axis")
    sizes_in = ctx.since >= 11 and ctx.input_name(3)
    if sizes_in:  # (X, roi, scales, sizes)
        given = [int(v) for v in imp.const(ctx, 3, "sizes").reshape(-1)]
    else:  # (X, scales), or (X, roi, scales)
        given_f = [float(v) for v in imp.const(ctx, 1 if ctx.since < 11 else 2, "scales").reshape(-1)]
    if len(given if sizes_in else given_f) != len(axes):
        what = "sizes" if sizes_in else "scales"
        raise ctx.error(f"{what} has {len(given if sizes_in else given_f)} entries for {len(axes)} axes")
    out, scales = list(xs), [1.0] * rank
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise ctx.error(f"keep_aspect_ratio_policy='{policy}' is not stretch, not_larger or not_smaller")
    if sizes_in:
        for a, size in zip(axes, given):
            out[a], scales[a] = size, size / xs[a]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            common = pick(scales[a] for a in axes)
            for a in axes:
                scales[a], out[a] = common, int(common * xs[a] + 0.5)
    else:
        for a, sc in zip(axes, given_f):
            if not sc > 0:
                raise ctx.error(f"scales {given_f}: every scale must be positive")
            scales[a], out[a] = sc, int(math.floor(sc * xs[a]))
    if any(o < 1 for o in out):
        raise ctx.error(f"output shape {_fmt(out)} is empty: empty tensors are not supported")
    return out, scales


@_converter("Resize", attrs=("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                             "exclude_outside", "extrapolation_value", "antialias", "axes",
                             "keep_aspect_ratio_policy"))
def _resize(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """Resize of the spatial dims of (N, C, H, W), modes nearest and linear (bilinear), every
    coordinate_transformation_mode but tf_crop_and_resize, any scales or sizes (``axes``,
    ``keep_aspect_ratio_policy``, linear ``antialias`` and ``exclude_outside`` included).

    Resize is linear and separable: ``Y = A_h X A_w^T`` per (n, c) plane with constant
    interpolation matrices (:func:`_resize_matrix`, at most 2 non-zeros per row for
    nearest / bilinear). So it is two ``graph.matmul`` with constant operands -- ``X A_w^T``
    (X's batch dims fold into M: one GEMM) and ``A_h (.)`` (the constant broadcast over the
    N*C planes: batched GEMMs) -- in the order that multiplies less; an axis that is not
    resized (identity matrix) is skipped. That keeps the op on the mesh GEMM the lowering already
    has, at the price of dense arithmetic: each output of an axis costs ``in_len`` multiply-adds
    where 2 would do (a gathering map kind would be cheaper on large planes; there is none). The
    nearest integer-factor upsampling (``out[i] = in[i // s]``) keeps its copy-only form: the
    view (N, C, H, 1, W, 1) times ones (1, 1, 1, s, 1, t). Refused with a message naming the
    attribute: mode cubic, tf_crop_and_resize, resizing N or C, nearest with antialias."""
    x = imp.value(ctx, ctx.input_name(0))
    xs = _require_rank(ctx, x, 4)
    n, c, h, w = xs
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ctx.error(f"mode='{mode}' is not supported (nearest and linear only)")
    coord = ctx.attr("coordinate_transformation_mode", "half_pixel" if ctx.since >= 11 else "asymmetric")
    if coord not in _RESIZE_COORDS:
        raise ctx.error(f"coordinate_transformation_mode='{coord}' is not supported ({', '.join(_RESIZE_COORDS)})")
    near = ctx.attr("nearest_mode", "round_prefer_floor" if ctx.since >= 11 else "floor")
    if near not in _NEAREST_MODES:
        raise ctx.error(f"nearest_mode='{near}' is not one of {', '.join(_NEAREST_MODES)}")
    antialias = bool(ctx.attr("antialias", 0))
    if antialias and mode == "nearest":
        raise ctx.error("antialias=1 with mode='nearest' is not defined (linear or cubic only)")
    out, scales = _resize_plan(imp, ctx, xs)
    if out[:2] != [n, c]:
        raise ctx.error(f"output shape {_fmt(out)} resizes N or C: only H and W are resized")
    excl = bool(ctx.attr("exclude_outside", 0))
    a_h, a_w = (_resize_matrix(mode, coord, near, antialias, excl, xs[i], out[i], scales[i]) for i in (2, 3))
    t_ = x.type
    assert isinstance(t_, TensorType)
    dt = _ELEM_TO_NP[t_.element_type]
    sh, sw = out[2] // h, out[3] // w
    if (mode == "nearest" and out[2] == h * sh and out[3] == w * sw
            and np.array_equal(a_h, np.repeat(np.eye(h), sh, axis=0))
            and np.array_equal(a_w, np.repeat(np.eye(w), sw, axis=0))):
        if (sh, sw) == (1, 1):
            return [x]
        u = imp.emit(graph.ReshapeOp(x, (n, c, h, 1, w, 1))).results[0]
        ones = np.ones((1, 1, 1, sh, 1, sw), dtype=dt)
        u = imp.emit(graph.MulOp(u, imp.emit(graph.constant(ones, name_hint="ones")).results[0])).results[0]
        return [imp.emit(graph.ReshapeOp(u, (n, c, h * sh, w * sw))).results[0]]
    eye_h = out[2] == h and np.array_equal(a_h, np.eye(h))
    eye_w = out[3] == w and np.array_equal(a_w, np.eye(w))
    planes = n * c
    w_first = planes * (h * w * out[3] + out[2] * h * out[3]) <= planes * (out[2] * h * w + out[2] * w * out[3])
    v = x
    rows_h = h if w_first else out[2]  # the H extent while the W pass runs
    for axis in ((3, 2) if w_first else (2, 3)):
        if axis == 3 and not eye_w:
            aw = imp.emit(graph.constant(np.ascontiguousarray(a_w.T).astype(dt), name_hint="resize_w")).results[0]
            mm = imp.emit(graph.MatMulOp(v, aw))
            _state_resize_flops(mm, mode, a_w, planes * rows_h)
            v = mm.results[0]
        elif axis == 2 and not eye_h:
            ah = imp.emit(graph.constant(a_h.astype(dt), name_hint="resize_h")).results[0]
            mm = imp.emit(graph.MatMulOp(ah, v))
            _state_resize_flops(mm, mode, a_h, planes * (out[3] if w_first else w))
            v = mm.results[0]
    return [v]


def _state_resize_flops(op: Operation, mode: str, a: np.ndarray, lines: int) -> None:
    """The Resize's own arithmetic on the matmul of one axis (``graph_flops.USEFUL_FLOPS_ATTR``):
    2 per nonzero interpolation weight of ``a`` (out_len, in_len) per 1-D line resized
    (``lines``); nearest selects, 0."""
    flops = 0 if mode == "nearest" else 2 * int(np.count_nonzero(a)) * lines
    op.attributes[USEFUL_FLOPS_ATTR] = IntegerAttr(flops, 64)


#: ONNX element type (an int) -> the graph element type a computed tensor is cast to
_CAST_TARGETS: dict[int, Attribute] = {int(TensorProto.FLOAT16): f32, int(TensorProto.FLOAT): f32,
                                       int(TensorProto.DOUBLE): f64}


@_converter("Cast", attrs=("to", "saturate", "round_mode"))
def _cast(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """Cast of a computed float tensor to float16, float or double (a Cast of compile-time values
    is evaluated at import, :meth:`_Importer.fold`). float16 tensors are computed in f32 (module
    docstring), so a Cast between float and float16 is the identity here: the value stays f32, not
    rounded to f16 in between, until an f16 graph output rounds it (the form of
    onnxconverter_common's half models with ``keep_io_types``: f32 inputs cast to f16, f16 outputs
    cast to f32); float <-> double is a ``graph.cast``."""
    to = int(ctx.attr("to", 0))
    target = _CAST_TARGETS.get(to)
    if target is None:
        raise ctx.error(f"to={_onnx_type_name(to)}: a computed tensor is cast only to float16, float or double "
                        "(the graph dialect computes f32 / f64)")
    x = imp.value(ctx, ctx.input_name(0))
    assert isinstance(x.type, TensorType)
    if x.type.element_type == target:
        return [x]
    return [imp.emit(graph.CastOp(x, target)).results[0]]


@_converter("MatMul")
def _matmul(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    a = imp.value(ctx, ctx.input_name(0))
    b = imp.value(ctx, ctx.input_name(1))
    return [imp.emit(graph.MatMulOp(a, b)).results[0]]


@_converter("Gemm", attrs=("alpha", "beta", "transA", "transB"))
def _gemm(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    a = imp.value(ctx, ctx.input_name(0))
    b = imp.value(ctx, ctx.input_name(1))
    c = imp.opt_value(ctx, 2)
    _require_rank(ctx, a, 2, "A")
    _require_rank(ctx, b, 2, "B")
    op = graph.GemmOp(
        a,
        b,
        c,
        alpha=float(ctx.attr("alpha", 1.0)),
        beta=float(ctx.attr("beta", 1.0)),
        trans_a=bool(ctx.attr("transA", 0)),
        trans_b=bool(ctx.attr("transB", 0)),
    )
    return [imp.emit(op).results[0]]


@_converter("Add", "Sub", "Mul", "Div")
def _binary(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    cls = {"Add": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "Div": graph.DivOp}[
        ctx.node.op_type
    ]
    a = imp.value(ctx, ctx.input_name(0))
    b = imp.value(ctx, ctx.input_name(1))
    if a.type.element_type != b.type.element_type:  # type: ignore[attr-defined]
        raise ctx.error(f"operand element types differ ({a.type} vs {b.type})")
    return [imp.emit(cls(a, b)).results[0]]


@_converter("Sum")
def _sum(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    ins = [imp.value(ctx, n) for n in ctx.node.input if n]
    if not ins:
        raise ctx.error("Sum needs at least one input")
    return [imp.emit(graph.SumOp(ins)).results[0]]


@_converter("Relu", "Sigmoid", "Tanh", "Sqrt", "Erf")
def _unary(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    cls = {"Relu": graph.ReluOp, "Sigmoid": graph.SigmoidOp, "Tanh": graph.TanhOp, "Sqrt": graph.SqrtOp,
           "Erf": graph.ErfOp}[ctx.node.op_type]
    return [imp.emit(cls(imp.value(ctx, ctx.input_name(0)))).results[0]]


def _clip_attrs(since: int) -> frozenset[str]:
    return frozenset(("min", "max")) if since < 11 else frozenset()


@_converter("Clip")
def _clip(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    if ctx.since < 11:
        lo = float(ctx.attr("min", -np.inf))
        hi = float(ctx.attr("max", np.inf))
    else:
        lo, hi = -np.inf, np.inf
        for i, what in ((1, "min"), (2, "max")):
            if ctx.input_name(i):
                arr = imp.const(ctx, i, what)
                if arr.size != 1:
                    raise ctx.error(f"{what} must be a scalar, got shape {_fmt(arr.shape)}")
                if i == 1:
                    lo = float(arr.reshape(()))
                else:
                    hi = float(arr.reshape(()))
    if lo > hi:  # ONNX: min > max sets every element to max
        lo = hi
    return [imp.emit(graph.ClipOp(x, min=lo, max=hi)).results[0]]


_CONVERTERS["Clip"] = _Conv(_clip, _clip_attrs)


@_converter("LeakyRelu", attrs=("alpha",))
def _leaky_relu(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    return [imp.emit(graph.LeakyReluOp(x, alpha=float(ctx.attr("alpha", 0.01)))).results[0]]


def _pool_common(ctx: _NodeCtx, x: SSAValue) -> dict[str, Any]:
    xs = _require_rank(ctx, x, 4)
    ks = ctx.attr("kernel_shape")
    if ks is None:
        raise ctx.error("kernel_shape attribute is required")
    if len(ks) != 2:
        raise ctx.error(f"kernel_shape {list(ks)}: only 2-D pooling is supported")
    kernel = _ints(ks)
    strides = _spatial_attrs(ctx, "strides")
    dilations = _spatial_attrs(ctx, "dilations")
    pads = _resolve_pads(ctx, xs[2:], kernel, strides, dilations)
    return dict(
        kernel_shape=kernel,
        strides=strides,
        pads=pads,
        dilations=dilations,
        ceil_mode=bool(ctx.attr("ceil_mode", 0)),
    )


@_converter(
    "MaxPool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "dilations",
        "kernel_shape",
        "pads",
        "storage_order",
        "strides",
    ),
)
def _max_pool(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    if ctx.output_used(1):
        raise ctx.error("the Indices output is not supported")
    if ctx.attr("storage_order", 0) != 0:
        raise ctx.error("storage_order=1 is not supported")
    x = imp.value(ctx, ctx.input_name(0))
    p = _pool_common(ctx, x)
    return [imp.emit(graph.MaxPoolOp(x, **p)).results[0]]


@_converter(
    "AveragePool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "count_include_pad",
        "dilations",
        "kernel_shape",
        "pads",
        "strides",
    ),
)
def _avg_pool(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    p = _pool_common(ctx, x)  # dilations: AveragePool-19
    op = graph.AvgPoolOp(x, count_include_pad=bool(ctx.attr("count_include_pad", 0)), **p)
    return [imp.emit(op).results[0]]


@_converter("GlobalAveragePool")
def _global_avg_pool(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    _require_rank(ctx, x, 4)
    return [imp.emit(graph.GlobalAvgPoolOp(x)).results[0]]


def _bn_attrs(since: int) -> frozenset[str]:
    return frozenset(("epsilon", "momentum") + (("training_mode",) if since >= 14 else ()))


@_converter("BatchNormalization")
def _batch_norm(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    if ctx.attr("training_mode", 0):
        raise ctx.error("training_mode=1 is not supported (inference only)")
    for i in range(1, len(ctx.node.output)):
        if ctx.output_used(i):
            raise ctx.error(f"training output {i} ('{ctx.node.output[i]}') is not supported")
    x, scale, bias, mean, var = (imp.value(ctx, ctx.input_name(i)) for i in range(5))
    op = graph.BatchNormOp(x, scale, bias, mean, var, epsilon=float(ctx.attr("epsilon", 1e-5)))
    return [imp.emit(op).results[0]]


_CONVERTERS["BatchNormalization"] = _Conv(_batch_norm, _bn_attrs)


@_converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def _lrn(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    size = ctx.attr("size")
    if size is None:
        raise ctx.error("size attribute is required")
    op = graph.LRNOp(
        x,
        size=int(size),
        alpha=float(ctx.attr("alpha", 1e-4)),
        beta=float(ctx.attr("beta", 0.75)),
        bias=float(ctx.attr("bias", 1.0)),
    )
    return [imp.emit(op).results[0]]


def _norm_axis(ctx: _NodeCtx, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ctx.error(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def _reshape(imp: _Importer, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    elem = x.type.element_type  # type: ignore[attr-defined]
    return imp.emit(graph.ReshapeOp(x, TensorType(elem, list(shape)))).results[0]


@_converter("Softmax", attrs=("axis",))
def _softmax(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    rank = len(s)
    if ctx.since >= 13:
        axis = _norm_axis(ctx, int(ctx.attr("axis", -1)), rank)
        return [imp.emit(graph.SoftmaxOp(x, axis=axis)).results[0]]
    # opset < 13: softmax over the input coerced to 2-D (prod(s[:axis]), prod(s[axis:])).
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    if axis < rank and math.prod(s[axis + 1 :]) == 1:
        return [imp.emit(graph.SoftmaxOp(x, axis=axis)).results[0]]
    flat = _reshape(imp, x, (math.prod(s[:axis]), math.prod(s[axis:])))
    y = imp.emit(graph.SoftmaxOp(flat, axis=1)).results[0]
    return [_reshape(imp, y, s)]


@_converter("Concat", attrs=("axis",))
def _concat(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    ins = [imp.value(ctx, n) for n in ctx.node.input if n]
    if ctx.attr("axis") is None:
        raise ctx.error("axis attribute is required")
    axis = _norm_axis(ctx, int(ctx.attr("axis")), len(_shape(ins[0])))
    return [imp.emit(graph.ConcatOp(ins, axis=axis)).results[0]]


def _reshape_attrs(since: int) -> frozenset[str]:
    return frozenset(("allowzero",)) if since >= 14 else frozenset()


@_converter("Reshape")
def _reshape_node(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    target = [int(d) for d in imp.const(ctx, 1, "shape").reshape(-1)]
    allowzero = bool(ctx.attr("allowzero", 0))
    out: list[int] = []
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if i >= len(s):
                raise ctx.error(f"shape entry {i} is 0 but the input has rank {len(s)}")
            out.append(s[i])
        else:
            out.append(d)
    if out.count(-1) > 1:
        raise ctx.error(f"shape {target} has more than one -1")
    if any(d < -1 for d in out):
        raise ctx.error(f"shape {target} has a negative entry other than -1")
    total = math.prod(s)
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise ctx.error(f"cannot reshape {_fmt(s)} to {target}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise ctx.error(f"cannot reshape {_fmt(s)} ({total} elements) to {_fmt(out)}")
    if 0 in out:
        raise ctx.error(f"zero-size result shape {_fmt(out)} is not supported")
    return [_reshape(imp, x, out)]


_CONVERTERS["Reshape"] = _Conv(_reshape_node, _reshape_attrs)


@_converter("Flatten", attrs=("axis",))
def _flatten(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    rank = len(_shape(x))
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    return [imp.emit(graph.FlattenOp(x, axis=axis)).results[0]]


@_converter("Transpose", attrs=("perm",))
def _transpose(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    perm = ctx.attr("perm")
    rank = len(_shape(x))
    perm = tuple(range(rank - 1, -1, -1)) if perm is None else _ints(perm)
    if sorted(perm) != list(range(rank)):
        raise ctx.error(f"perm {list(perm)} is not a permutation of rank {rank}")
    return [imp.emit(graph.TransposeOp(x, perm=perm)).results[0]]


def _unsqueeze_attrs(since: int) -> frozenset[str]:
    return frozenset(("axes",)) if since < 13 else frozenset()


@_converter("Unsqueeze")
def _unsqueeze(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    name = ctx.input_name(0)
    if ctx.since < 13:
        axes = ctx.attr("axes")
        if axes is None:
            raise ctx.error("axes attribute is required")
        axes = _ints(axes)
    else:
        axes = _ints(imp.const(ctx, 1, "axes").reshape(-1))
    if name in imp.consts and name not in imp.values:  # fold: keeps shape tensors compile-time
        arr = imp.consts[name]
        out_rank = arr.ndim + len(axes)
        norm = sorted(a % out_rank for a in axes)
        if len(set(norm)) != len(norm) or any(not -out_rank <= a < out_rank for a in axes):
            raise ctx.error(f"axes {list(axes)} are invalid for output rank {out_rank}")
        return [np.expand_dims(arr, tuple(norm))]
    x = imp.value(ctx, name)
    return [imp.emit(graph.UnsqueezeOp(x, axes=axes)).results[0]]


_CONVERTERS["Unsqueeze"] = _Conv(_unsqueeze, _unsqueeze_attrs)


def _squeeze_attrs(since: int) -> frozenset[str]:
    return frozenset(("axes",)) if since < 13 else frozenset()


@_converter("Squeeze")
def _squeeze(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """Size-1 dims dropped (``axes``, or every size-1 dim): a ``graph.reshape`` view."""
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    if ctx.since < 13:
        attr = ctx.attr("axes")
        axes = _ints(attr) if attr is not None else None
    else:
        axes = _ints(imp.const(ctx, 1, "axes").reshape(-1)) if ctx.input_name(1) else None
    if axes is None:
        drop = {i for i, d in enumerate(s) if d == 1}
    else:
        drop = set()
        for a in axes:
            a = _norm_axis(ctx, a, len(s))
            if s[a] != 1:
                raise ctx.error(f"axis {a} has size {s[a]}, not 1")
            drop.add(a)
    return [imp.emit(graph.ReshapeOp(x, tuple(d for i, d in enumerate(s) if i not in drop))).results[0]]


_CONVERTERS["Squeeze"] = _Conv(_squeeze, _squeeze_attrs)


def _pad_attrs(since: int) -> frozenset[str]:
    return frozenset(("mode", "pads", "value")) if since < 11 else frozenset(("mode",))


@_converter("Pad")
def _pad(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    mode = ctx.attr("mode", "constant")
    if mode != "constant":
        raise ctx.error(f"mode '{mode}' is not supported (only 'constant')")
    x = imp.value(ctx, ctx.input_name(0))
    rank = len(_shape(x))
    if ctx.since < 11:
        pads = ctx.attr("pads")
        if pads is None:
            raise ctx.error("pads attribute is required")
        pads = list(_ints(pads))
        value = float(ctx.attr("value", 0.0))
    else:
        pads = [int(p) for p in imp.const(ctx, 1, "pads").reshape(-1)]
        value = 0.0
        if ctx.input_name(2):
            cv = imp.const(ctx, 2, "constant_value")
            if cv.size != 1:
                raise ctx.error(f"constant_value must be a scalar, got shape {_fmt(cv.shape)}")
            value = float(cv.reshape(()))
        if ctx.input_name(3):
            axes = [int(a) for a in imp.const(ctx, 3, "axes").reshape(-1)]
            if len(pads) != 2 * len(axes):
                raise ctx.error(f"pads has {len(pads)} entries for {len(axes)} axes")
            full = [0] * (2 * rank)
            for k, a in enumerate(axes):
                a = _norm_axis(ctx, a, rank, "axes entry")
                full[a] = pads[k]
                full[rank + a] = pads[len(axes) + k]
            pads = full
    if len(pads) != 2 * rank:
        raise ctx.error(f"pads has {len(pads)} entries; expected {2 * rank} for rank {rank}")
    return [imp.emit(graph.PadOp(x, pads=tuple(pads), value=value)).results[0]]


_CONVERTERS["Pad"] = _Conv(_pad, _pad_attrs)


def _dropout_attrs(since: int) -> frozenset[str]:
    return frozenset(("ratio",)) if since < 12 else frozenset(("seed",))


@_converter("Dropout")
def _dropout(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    if ctx.output_used(1):
        raise ctx.error("the mask output is not supported (the graph dialect has no bool tensors)")
    x = imp.value(ctx, ctx.input_name(0))
    ratio = 0.5
    if ctx.since < 12:
        ratio = float(ctx.attr("ratio", 0.5))
    else:
        if ctx.input_name(1):
            r = imp.const(ctx, 1, "ratio")
            ratio = float(r.reshape(()))
        if ctx.input_name(2):
            if bool(imp.const(ctx, 2, "training_mode").reshape(())):
                raise ctx.error("training_mode=true (random dropout) is not supported")
    return [imp.emit(graph.DropoutOp(x, ratio=ratio)).results[0]]


_CONVERTERS["Dropout"] = _Conv(_dropout, _dropout_attrs)


@_converter(
    "Constant",
    attrs=(
        "value",
        "value_float",
        "value_floats",
        "value_int",
        "value_ints",
        "sparse_value",
        "value_string",
        "value_strings",
    ),
)
def _constant(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    if len(ctx.attrs) != 1:
        raise ctx.error("exactly one value attribute is required")
    (key, val), = ctx.attrs.items()
    if key == "value":
        return [_tensor_to_array(val.t)]
    if key == "value_float":
        return [np.array(val, dtype=np.float32)]
    if key == "value_floats":
        return [np.array(val, dtype=np.float32)]
    if key == "value_int":
        return [np.array(val, dtype=np.int64)]
    if key == "value_ints":
        return [np.array(val, dtype=np.int64)]
    raise ctx.error(f"unsupported attribute '{key}'")


@_converter("ConstantOfShape", attrs=("value",))
def _constant_of_shape(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    shape = [int(d) for d in imp.const(ctx, 0, "shape").reshape(-1)]
    if any(d < 0 for d in shape):
        raise ctx.error(f"shape {shape} has a negative entry")
    v = ctx.attrs.get("value")
    fill = np.zeros((), np.float32) if v is None else _tensor_to_array(v.t).reshape(())
    return [np.broadcast_to(fill, shape)]


@_converter("Identity")
def _identity(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    name = ctx.input_name(0)
    if name in imp.consts and name not in imp.values:
        return [imp.consts[name]]  # stays a compile-time value
    return [imp.value(ctx, name)]


# ---- decompositions into graph ops (the exporters' activation, pooling and slicing forms) -----


def _scalar(imp: _Importer, like: SSAValue, value: float, hint: str) -> SSAValue:
    """A (1,) ``graph.constant`` of ``like``'s element type (broadcasts against any rank)."""
    t = like.type
    assert isinstance(t, TensorType)
    arr = np.array([value], dtype=_ELEM_TO_NP[t.element_type])
    return imp.emit(graph.constant(arr, name_hint=hint)).results[0]


@_converter("Expand")
def _expand(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """Expand of a computed tensor (``F.normalize``'s ``norm.expand_as(x)``) to the broadcast of
    its shape and the constant ``shape``: x times a ones constant holding only the expanded dims
    (the graph's binary ops broadcast as numpy's do). (Expand on compile-time data is evaluated
    at import.)"""
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    want = tuple(int(d) for d in imp.const(ctx, 1, "shape").reshape(-1))
    try:
        out = tuple(int(d) for d in np.broadcast_shapes(s, want))
    except ValueError:
        raise ctx.error(f"shape {list(want)} does not broadcast with the input's {_fmt(s)}") from None
    if out == s:
        return [x]
    xs = (1,) * (len(out) - len(s)) + s
    t = x.type
    assert isinstance(t, TensorType)
    ones = np.ones(tuple(o if d == 1 else 1 for d, o in zip(xs, out)), dtype=_ELEM_TO_NP[t.element_type])
    return [imp.emit(graph.MulOp(x, imp.emit(graph.constant(ones, name_hint="ones")).results[0])).results[0]]


def _hard_sigmoid(imp: _Importer, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    """``clip(alpha x + beta, 0, 1)``."""
    ax = imp.emit(graph.MulOp(x, _scalar(imp, x, alpha, "alpha"))).results[0]
    axb = imp.emit(graph.AddOp(ax, _scalar(imp, x, beta, "beta"))).results[0]
    return imp.emit(graph.ClipOp(axb, min=0.0, max=1.0)).results[0]


@_converter("HardSigmoid", attrs=("alpha", "beta"))
def _hardsigmoid(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    return [_hard_sigmoid(imp, x, float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5)))]


@_converter("HardSwish")
def _hardswish(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """``x * HardSigmoid(x)`` with alpha = 1/6, beta = 0.5 (the operator's definition)."""
    x = imp.value(ctx, ctx.input_name(0))
    return [imp.emit(graph.MulOp(x, _hard_sigmoid(imp, x, 1.0 / 6.0, 0.5))).results[0]]


@_converter("Pow")
def _pow(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """``x ** y`` for a constant scalar exponent y in {1, 2, 3, 0.5, -0.5, -1, -2} (the exporters'
    LayerNorm and GELU-tanh forms) as muls, sqrt and a reciprocal."""
    x = imp.value(ctx, ctx.input_name(0))
    e = imp.const(ctx, 1, "exponent")
    if e.size != 1:
        raise ctx.error(f"exponent must be a scalar, got shape {_fmt(e.shape)}")
    p = float(e.reshape(()))
    if p not in (1.0, 2.0, 3.0, 0.5, -0.5, -1.0, -2.0):
        raise ctx.error(f"exponent {p:g}: only 1, 2, 3, 0.5, -0.5, -1 and -2 are supported")
    mag = abs(p)
    y: SSAValue
    if mag == 0.5:
        y = imp.emit(graph.SqrtOp(x)).results[0]
    else:
        y = x
        for _ in range(int(mag) - 1):
            y = imp.emit(graph.MulOp(y, x)).results[0]
    if p < 0:
        y = imp.emit(graph.DivOp(_scalar(imp, y, 1.0, "one"), y)).results[0]
    return [y]


@_converter("Gelu", attrs=("approximate",))
def _gelu(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """``0.5 x (1 + erf(x / sqrt 2))``, or with ``approximate="tanh"``
    ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`` (the operator's definitions)."""
    x = imp.value(ctx, ctx.input_name(0))
    approx = ctx.attr("approximate", "none")
    if approx == "none":
        inner = imp.emit(graph.ErfOp(imp.emit(graph.MulOp(x, _scalar(imp, x, 2 ** -0.5, "rsqrt2"))).results[0]))
    elif approx == "tanh":
        x3 = imp.emit(graph.MulOp(imp.emit(graph.MulOp(x, x)).results[0], x)).results[0]
        u = imp.emit(graph.AddOp(x, imp.emit(graph.MulOp(x3, _scalar(imp, x, 0.044715, "c"))).results[0])).results[0]
        inner = imp.emit(graph.TanhOp(imp.emit(graph.MulOp(u, _scalar(imp, x, math.sqrt(2 / math.pi), "k"))).results[0]))
    else:
        raise ctx.error(f"approximate='{approx}' is not 'none' or 'tanh'")
    h = imp.emit(graph.AddOp(inner.results[0], _scalar(imp, x, 1.0, "one"))).results[0]
    xh = imp.emit(graph.MulOp(x, h)).results[0]
    return [imp.emit(graph.MulOp(xh, _scalar(imp, x, 0.5, "half"))).results[0]]


@_converter("LayerNormalization", attrs=("axis", "epsilon", "stash_type"))
def _layer_norm(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """``(x - mean) * inv_std_dev * scale + bias`` over the dims from ``axis`` on, with
    ``inv_std_dev = 1 / sqrt(var + epsilon)``; the mean and variance are Reduce-means
    (:func:`_reduce`). The optional outputs Mean and InvStdDev (reduced dims kept as 1) are
    those values."""
    x = imp.value(ctx, ctx.input_name(0))
    scale = imp.value(ctx, ctx.input_name(1))
    bias = imp.opt_value(ctx, 2)
    s = _shape(x)
    axis = _norm_axis(ctx, int(ctx.attr("axis", -1)), len(s))
    if int(ctx.attr("stash_type", 1)) != 1:
        raise ctx.error("stash_type other than 1 (float32 statistics) is not supported")
    axes = tuple(range(axis, len(s)))
    mean = _reduce(imp, ctx, x, axes, "mean")
    d = imp.emit(graph.SubOp(x, mean)).results[0]
    var = _reduce(imp, ctx, imp.emit(graph.MulOp(d, d)).results[0], axes, "mean")
    ve = imp.emit(graph.AddOp(var, _scalar(imp, var, float(ctx.attr("epsilon", 1e-5)), "eps"))).results[0]
    inv = imp.emit(graph.DivOp(_scalar(imp, ve, 1.0, "one"), imp.emit(graph.SqrtOp(ve)).results[0])).results[0]
    y = imp.emit(graph.MulOp(imp.emit(graph.MulOp(d, inv)).results[0], scale)).results[0]
    if bias is not None:
        y = imp.emit(graph.AddOp(y, bias)).results[0]
    return [y, mean, inv]


def _reduce_axes(imp: _Importer, ctx: _NodeCtx, rank: int) -> tuple[int, ...] | None:
    """The sorted, normalized axes of a Reduce* node (attribute or, in newer versions, input 1);
    None for "no reduction" (empty axes with ``noop_with_empty_axes``)."""
    if ctx.input_name(1):
        axes = [int(a) for a in imp.const(ctx, 1, "axes").reshape(-1)]
    else:
        attr = ctx.attr("axes")
        axes = [int(a) for a in attr] if attr is not None else []
    if not axes:
        return None if int(ctx.attr("noop_with_empty_axes", 0)) else tuple(range(rank))
    out = [_norm_axis(ctx, a, rank) for a in axes]
    if len(set(out)) != len(out):
        raise ctx.error(f"axes {axes} repeat an axis")
    return tuple(sorted(out))


def _reduce_attrs(since: int) -> frozenset[str]:
    return frozenset(("axes", "keepdims", "noop_with_empty_axes"))


def _reduce(imp: _Importer, ctx: _NodeCtx, x: SSAValue, axes: Sequence[int], kind: str) -> SSAValue:
    """Reduce ``x`` over ``axes`` with ``kind`` (mean, sum, max, min), keeping the reduced
    dims as 1: the reduced axes are moved last (``graph.transpose`` unless they already are), the
    tensor is viewed as (1, P, R) and reduced by ``graph.global_avg_pool`` (mean; sum = mean x R)
    or, as (1, P, 1, R), by a (1, R) ``graph.max_pool`` (max; min = -max(-x))."""
    s = _shape(x)
    if 0 in s:
        raise ctx.error(f"input has a zero-size dim ({_fmt(s)}): empty tensors are not supported")
    kept = [i for i in range(len(s)) if i not in axes]
    perm = kept + list(axes)
    if perm != list(range(len(s))):
        x = imp.emit(graph.TransposeOp(x, perm=perm)).results[0]
    p = math.prod(s[i] for i in kept)
    r = math.prod(s[i] for i in axes)
    if kind in ("mean", "sum"):
        v = imp.emit(graph.ReshapeOp(x, (1, p, r))).results[0]
        y = imp.emit(graph.GlobalAvgPoolOp(v)).results[0]
        if kind == "sum" and r != 1:
            y = imp.emit(graph.MulOp(y, _scalar(imp, y, float(r), "count"))).results[0]
    else:
        if kind == "min":
            x = imp.emit(graph.MulOp(x, _scalar(imp, x, -1.0, "neg"))).results[0]
        v = imp.emit(graph.ReshapeOp(x, (1, p, 1, r))).results[0]
        y = imp.emit(graph.MaxPoolOp(v, kernel_shape=(1, r))).results[0]
        if kind == "min":
            y = imp.emit(graph.MulOp(y, _scalar(imp, y, -1.0, "neg"))).results[0]
    return imp.emit(graph.ReshapeOp(y, tuple(1 if i in axes else d for i, d in enumerate(s)))).results[0]


@_converter("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2")
def _reduce_node(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """Reduce* by :func:`_reduce`; ReduceL2 (``F.normalize``'s norm) = sqrt(sum(x * x)); "no
    reduction" (empty axes with ``noop_with_empty_axes``) gives x (ReduceL2: |x|)."""
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    axes = _reduce_axes(imp, ctx, len(s))
    kind = ctx.node.op_type[len("Reduce"):].lower()
    if kind == "l2":
        x = imp.emit(graph.MulOp(x, x)).results[0]
    if axes is None:
        return [imp.emit(graph.SqrtOp(x)).results[0] if kind == "l2" else x]
    y = _reduce(imp, ctx, x, axes, "sum" if kind == "l2" else kind)
    if kind == "l2":
        y = imp.emit(graph.SqrtOp(y)).results[0]
    if not int(ctx.attr("keepdims", 1)):
        y = imp.emit(graph.ReshapeOp(y, tuple(d for i, d in enumerate(s) if i not in axes))).results[0]
    return [y]


for _op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2"):
    _CONVERTERS[_op] = _Conv(_reduce_node, _reduce_attrs)


def _einsum_terms(ctx: _NodeCtx, equation: str, ranks: Sequence[int]) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand and of the output of an Einsum ``equation`` for operands of
    ``ranks``: letters stand for themselves, the dims an ellipsis covers get the labels "0",
    "1", ... aligned to the right (so they broadcast as numpy's do); without ``->`` the output is
    the ellipsis dims then the letters used once, in alphabetical order (numpy's implicit mode)."""
    what = f"equation '{equation}'"
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"{what} has {len(terms)} operand terms for {len(ranks)} inputs")

    def split(term: str, where: str) -> tuple[str, bool, str]:
        head, dots, tail = term.partition("...")
        for c in head + tail:
            if not (c.isascii() and c.isalpha()):
                raise ctx.error(f"{what}: {where} term '{term}' holds '{c}' (letters and one '...' only)")
        return head, bool(dots), tail

    parts = [split(t, f"operand {k}") for k, t in enumerate(terms)]
    ells: list[int] = []
    for k, ((head, dots, tail), rank) in enumerate(zip(parts, ranks)):
        ell = rank - len(head) - len(tail)
        if ell < 0 or (not dots and ell):
            raise ctx.error(f"{what}: operand {k} term '{terms[k]}' names {len(head) + len(tail)} dims but "
                            f"the input has rank {rank}")
        ells.append(ell)
    n_ell = max(ells)
    ins = [list(head) + [str(n_ell - ell + j) for j in range(ell)] + list(tail)
           for (head, _, tail), ell in zip(parts, ells)]
    ell_labels = [str(j) for j in range(n_ell)]
    if arrow:
        head, dots, tail = split(rhs, "output")
        if n_ell and not dots:
            raise ctx.error(f"{what}: the output omits the ellipsis dims")
        out = list(head) + (ell_labels if dots else []) + list(tail)
    else:
        used = [lb for t in ins for lb in t if not lb.isdigit()]
        out = ell_labels + sorted(lb for lb in set(used) if used.count(lb) == 1)
    if len(set(out)) != len(out):
        raise ctx.error(f"{what}: an output label repeats")
    for lb in out:
        if not any(lb in t for t in ins):
            raise ctx.error(f"{what}: output label '{lb}' is in no operand")
    return ins, out


def _einsum_sum_out(imp: _Importer, ctx: _NodeCtx, x: SSAValue, labels: list[str],
                    keep: Sequence[str]) -> tuple[SSAValue, list[str]]:
    """Sum ``x`` over its labels not in ``keep`` (dropping those dims)."""
    axes = [i for i, lb in enumerate(labels) if lb not in keep]
    if not axes:
        return x, labels
    s = _shape(x)
    rest = [lb for lb in labels if lb in keep]
    if all(s[i] == 1 for i in axes):
        return _reshape(imp, x, [s[i] for i, lb in enumerate(labels) if lb in keep]), rest
    y = _reduce(imp, ctx, x, axes, "sum")
    return _reshape(imp, y, [s[i] for i, lb in enumerate(labels) if lb in keep]), rest


def _einsum_permute(imp: _Importer, x: SSAValue, labels: list[str], order: Sequence[str]) -> SSAValue:
    perm = [labels.index(lb) for lb in order]
    if perm == list(range(len(perm))):
        return x
    return imp.emit(graph.TransposeOp(x, perm=perm)).results[0]


def _einsum_pair(imp: _Importer, ctx: _NodeCtx, a: SSAValue, la: list[str], b: SSAValue, lb_: list[str],
                 keep: Sequence[str]) -> tuple[SSAValue, list[str]]:
    """Contract ``a`` (labels ``la``) with ``b`` (``lb_``), keeping the labels in ``keep``: as one
    (batched) ``graph.matmul`` of a viewed (batch..., L, K) by b viewed (batch..., K, R), batch the
    shared kept labels, K the shared others, L and R the kept labels of one operand only (labels
    of one operand only that are not kept are summed first). Returns the result and its labels
    (batch, left, right)."""
    sa, sb = dict(zip(la, _shape(a))), dict(zip(lb_, _shape(b)))
    for lbl in [x for x in la if x in sb]:
        if sa[lbl] != sb[lbl]:  # broadcasting: a size-1 dim is dropped from its operand
            if sa[lbl] == 1:
                a, la = _einsum_sum_out(imp, ctx, a, la, [x for x in la if x != lbl])
            elif sb[lbl] == 1:
                b, lb_ = _einsum_sum_out(imp, ctx, b, lb_, [x for x in lb_ if x != lbl])
            else:
                raise ctx.error(f"equation '{ctx.attr('equation')}': label '{lbl}' has size {sa[lbl]} in one "
                                f"operand and {sb[lbl]} in the other")
    a, la = _einsum_sum_out(imp, ctx, a, la, [x for x in la if x in keep or x in lb_])
    b, lb_ = _einsum_sum_out(imp, ctx, b, lb_, [x for x in lb_ if x in keep or x in la])
    sa, sb = dict(zip(la, _shape(a))), dict(zip(lb_, _shape(b)))
    batch = [x for x in la if x in lb_ and x in keep]
    contract = [x for x in la if x in lb_ and x not in keep]
    left = [x for x in la if x not in lb_]
    right = [x for x in lb_ if x not in la]
    bdims = [sa[x] for x in batch]
    lsz, ksz, rsz = (math.prod(sa[x] for x in left), math.prod(sa[x] for x in contract),
                     math.prod(sb[x] for x in right))
    a = _einsum_permute(imp, a, la, batch + left + contract)
    if len(left) != 1 or len(contract) != 1:
        a = _reshape(imp, a, [*bdims, lsz, ksz])
    b = _einsum_permute(imp, b, lb_, batch + contract + right)
    if len(contract) != 1 or len(right) != 1:
        b = _reshape(imp, b, [*bdims, ksz, rsz])
    y: SSAValue = imp.emit(graph.MatMulOp(a, b)).results[0]
    out = [*bdims, *(sa[x] for x in left), *(sb[x] for x in right)]
    if list(_shape(y)) != out:
        y = _reshape(imp, y, out)
    return y, batch + left + right


@_converter("Einsum", attrs=("equation",))
def _einsum(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """Einsum as graph ops: operands contracted left to right, each pair by one batched
    ``graph.matmul`` between transposes / views (:func:`_einsum_pair`), labels of one operand
    only summed (a ReduceSum decomposition), the result transposed to the output order. Not
    supported (an error naming the node and equation): a label repeated within one term
    (diagonals, traces)."""
    equation = ctx.attr("equation")
    if equation is None:
        raise ctx.error("attribute 'equation' is required")
    xs = [imp.value(ctx, n) for n in ctx.node.input if n]
    if not xs:
        raise ctx.error("needs at least one input")
    ins, out = _einsum_terms(ctx, equation, [len(_shape(x)) for x in xs])
    for k, t in enumerate(ins):
        if len(set(t)) != len(t):
            rep = next(lb for lb in t if t.count(lb) > 1)
            raise ctx.error(f"equation '{equation}': label '{rep}' repeats in operand {k} (diagonals and "
                            "traces are not supported)")
    y, labels = xs[0], ins[0]
    for k in range(1, len(xs)):
        later = {lb for t in ins[k + 1:] for lb in t}
        y, labels = _einsum_pair(imp, ctx, y, labels, xs[k], ins[k], [*out, *later])
    y, labels = _einsum_sum_out(imp, ctx, y, labels, out)
    return [_einsum_permute(imp, y, labels, out)]


@_converter("GlobalMaxPool")
def _global_max_pool(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """max over every spatial dim (a whole-plane ``graph.max_pool`` for 2-D)."""
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    if len(s) < 3:
        raise ctx.error(f"input has rank {len(s)} ({_fmt(s)}); GlobalMaxPool needs (N, C, spatial...)")
    if len(s) == 4:
        return [imp.emit(graph.MaxPoolOp(x, kernel_shape=s[2:])).results[0]]
    return [_reduce(imp, ctx, x, tuple(range(2, len(s))), "max")]


def _slice_window(ctx: _NodeCtx, s: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                  axes: Sequence[int], steps: Sequence[int]) -> tuple[list[tuple[int, int]], dict[int, int]]:
    """(begin, end) per dim of a Slice (ONNX clamping of negative / out-of-range bounds) and
    the steps > 1 by axis (the elements begin, begin + step, ... < end are taken)."""
    win = [(0, d) for d in s]
    if not (len(starts) == len(ends) == len(axes) == len(steps)):
        raise ctx.error("starts, ends, axes and steps must have the same length")
    seen = set()
    strided: dict[int, int] = {}
    for b, e, a, st in zip(starts, ends, axes, steps):
        a = _norm_axis(ctx, a, len(s))
        if a in seen:
            raise ctx.error(f"axis {a} is sliced twice")
        seen.add(a)
        if st < 1:
            raise ctx.error(f"step {st} on axis {a}: only positive steps are supported")
        d = s[a]
        b = min(max(b + d if b < 0 else b, 0), d)
        e = min(max(e + d if e < 0 else e, 0), d)
        if e <= b:
            raise ctx.error(f"axis {a}: the slice [{b}, {e}) is empty: empty tensors are not supported")
        win[a] = (b, e)
        if st > 1:
            strided[a] = st
    return win, strided


def _stride_axis(imp: _Importer, x: SSAValue, axis: int, step: int) -> SSAValue:
    """Every ``step``-th element of ``x`` along ``axis`` from the first (ONNX Slice with a step,
    torch's ``x[..., 0::2, :]``): zero-pad the axis to a multiple k * step, view it as
    (P * k, step * Q) with P, Q the products of the dims before and after the axis, crop the
    first Q columns and view the result as ``x``'s shape with k on the axis."""
    s = _shape(x)
    k = -(-s[axis] // step)
    if k * step != s[axis]:
        pads = [0] * (2 * len(s))
        pads[len(s) + axis] = k * step - s[axis]
        x = imp.emit(graph.PadOp(x, pads=pads)).results[0]
    p, q = math.prod(s[:axis]), math.prod(s[axis + 1:])
    y = _reshape(imp, x, (p * k, step * q))
    if step * q != q:
        y = _crop(imp, y, [(0, p * k), (0, q)])
    return _reshape(imp, y, s[:axis] + (k,) + s[axis + 1:])


def _crop(imp: _Importer, x: SSAValue, win: Sequence[tuple[int, int]]) -> SSAValue:
    """The window ``win`` of ``x`` as a cropping ``graph.pad`` (negative pads); x itself when
    the window is the whole tensor."""
    s = _shape(x)
    if all(b == 0 and e == d for (b, e), d in zip(win, s)):
        return x
    pads = [-b for b, _ in win] + [e - d for (_, e), d in zip(win, s)]
    return imp.emit(graph.PadOp(x, pads=pads)).results[0]


@_converter("Gather", attrs=("axis",))
def _gather(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """Gather of a tensor at constant indices (torch's ``x[:, 0]``, ``x[..., 1:3]``): each
    maximal run of consecutive indices is a cropping pad, several runs are concatenated along
    the axis, and a view gives the indices' shape (a scalar index drops the axis). (Gather on
    compile-time data is evaluated at import.)"""
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    axis = _norm_axis(ctx, int(ctx.attr("axis", 0)), len(s))
    idx = imp.const(ctx, 1, "indices")
    if idx.dtype.kind not in "iu":
        raise ctx.error(f"indices have element type {idx.dtype}, not an integer type")
    flat = [int(i) + s[axis] if int(i) < 0 else int(i) for i in idx.reshape(-1)]
    if not flat or any(not 0 <= i < s[axis] for i in flat):
        raise ctx.error(f"indices {idx.reshape(-1).tolist()} are empty or out of range for axis {axis} of "
                        f"{_fmt(s)}")
    runs: list[tuple[int, int]] = []
    for i in flat:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    if len(runs) > 64:
        raise ctx.error(f"{len(runs)} separate index runs: at most 64 are supported")
    parts = []
    for b, e in runs:
        win = [(0, d) for d in s]
        win[axis] = (b, e)
        parts.append(_crop(imp, x, win))
    y = parts[0] if len(parts) == 1 else imp.emit(graph.ConcatOp(parts, axis=axis)).results[0]
    out = s[:axis] + tuple(idx.shape) + s[axis + 1:]
    if out != _shape(y):
        y = imp.emit(graph.ReshapeOp(y, out)).results[0]
    return [y]


def _slice_attrs(since: int) -> frozenset[str]:
    return frozenset(("starts", "ends", "axes")) if since < 10 else frozenset()


@_converter("Slice")
def _slice(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    if ctx.since < 10:
        starts, ends = _ints(ctx.attr("starts")), _ints(ctx.attr("ends"))
        axes = _ints(ctx.attr("axes")) if ctx.attr("axes") is not None else tuple(range(len(starts)))
        steps: tuple[int, ...] = (1,) * len(starts)
    else:
        starts = _ints(imp.const(ctx, 1, "starts").reshape(-1))
        ends = _ints(imp.const(ctx, 2, "ends").reshape(-1))
        axes = _ints(imp.const(ctx, 3, "axes").reshape(-1)) if ctx.input_name(3) else tuple(range(len(starts)))
        steps = _ints(imp.const(ctx, 4, "steps").reshape(-1)) if ctx.input_name(4) else (1,) * len(starts)
    win, strided = _slice_window(ctx, s, starts, ends, axes, steps)
    y = _crop(imp, x, win)
    for axis, step in sorted(strided.items()):
        y = _stride_axis(imp, y, axis, step)
    return [y]


_CONVERTERS["Slice"] = _Conv(_slice, _slice_attrs)


def _split_attrs(since: int) -> frozenset[str]:
    return frozenset(("axis", "split") if since < 13 else ("axis", "num_outputs") if since >= 18 else ("axis",))


@_converter("Split")
def _split(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """One cropping ``graph.pad`` per output (``split`` sizes, or ``num_outputs`` / the number
    of outputs in equal parts, the last one smaller: the operator's rule)."""
    x = imp.value(ctx, ctx.input_name(0))
    s = _shape(x)
    axis = _norm_axis(ctx, int(ctx.attr("axis", 0)), len(s))
    n = len(ctx.node.output)
    if ctx.since < 13 and ctx.attr("split") is not None:
        sizes = list(_ints(ctx.attr("split")))
    elif ctx.since >= 13 and ctx.input_name(1):
        sizes = list(_ints(imp.const(ctx, 1, "split").reshape(-1)))
    else:
        parts = int(ctx.attr("num_outputs", n))
        each = -(-s[axis] // parts)
        sizes = [min(each, s[axis] - i * each) for i in range(parts)]
    if len(sizes) != n or sum(sizes) != s[axis] or any(z <= 0 for z in sizes):
        raise ctx.error(f"split sizes {sizes} do not cut axis {axis} of {_fmt(s)} into {n} non-empty outputs")
    outs, at = [], 0
    for z in sizes:
        win = [(0, d) for d in s]
        win[axis] = (at, at + z)
        outs.append(_crop(imp, x, win))
        at += z
    return outs


_CONVERTERS["Split"] = _Conv(_split, _split_attrs)


def _lstm_attrs(since: int) -> frozenset[str]:
    base = (
        "activation_alpha",
        "activation_beta",
        "activations",
        "clip",
        "direction",
        "hidden_size",
        "input_forget",
    )
    return frozenset(base + (("layout",) if since >= 14 else ()))


def _recurrent(imp: _Importer, ctx: _NodeCtx, acts: Sequence[str], slots: Sequence[int],
               make: Callable[[SSAValue, list[SSAValue | None], int], Operation]) -> list[Any]:
    """LSTM / GRU: the checks they share (direction, layout 0, the default ``acts``, no clip or
    activation parameters, full-length sequences), then per direction d ``make(x_d, inputs_d,
    hidden)`` on the inputs at ``slots`` (W, R, B, initial states: their slice d for reverse /
    bidirectional), the reverse direction on the time-reversed input (:func:`_reverse_time`) with
    its Y reversed back; the directions' outputs concatenated (Y on axis 1, the states on 0)."""
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.error(f"direction '{direction}' is not one of forward, reverse, bidirectional")
    if ctx.attr("layout", 0) != 0:
        raise ctx.error("layout=1 (batch-major) is not supported")
    given = ctx.attr("activations")
    if given is not None and [a.decode() if isinstance(a, bytes) else a for a in given] != \
            list(acts) * (2 if direction == "bidirectional" else 1):
        raise ctx.error(f"activations {given} are not supported (only {', '.join(acts)})")
    for a in ("activation_alpha", "activation_beta", "clip"):
        if a in ctx.attrs:
            raise ctx.error(f"unsupported attribute '{a}'")
    x = imp.value(ctx, ctx.input_name(0))
    xs = _require_rank(ctx, x, 3, "X")
    if ctx.input_name(4):
        lens = imp.const(ctx, 4, "sequence_lens").reshape(-1)
        if not np.all(lens == xs[0]):
            raise ctx.error("sequence_lens shorter than the sequence length are not supported")
    ins = [imp.opt_value(ctx, i) for i in slots]
    hidden = ctx.attr("hidden_size")
    hidden = int(hidden) if hidden is not None else _shape(ins[1] or x)[-1]
    outs: list[list[SSAValue]] = []
    for d in ([0, 1] if direction == "bidirectional" else [0]):
        rev = direction == "reverse" or d == 1
        op = make(_reverse_time(imp, x) if rev else x,
                  [_direction(imp, v, d) for v in ins] if direction != "forward" else ins, hidden)
        res = list(op.results)
        outs.append([_reverse_time(imp, res[0]) if rev else res[0], *res[1:]])
    if len(outs) == 1:
        return list(outs[0])
    return [imp.emit(graph.ConcatOp([o[i] for o in outs], axis=1 if i == 0 else 0)).results[0]
            for i in range(len(outs[0]))]


@_converter("LSTM")
def _lstm(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """ONNX LSTM (default activations, no peepholes, no input_forget) as ``graph.lstm``
    (:func:`_recurrent`)."""
    if ctx.attr("input_forget", 0):
        raise ctx.error("input_forget=1 is not supported")
    if ctx.input_name(7):
        raise ctx.error("peephole weights (input P) are not supported")

    def make(x: SSAValue, v: list[SSAValue | None], hidden: int) -> Operation:
        w, r, b, h0, c0 = v
        assert w is not None and r is not None
        return imp.emit(graph.LSTMOp(x, w, r, b, h0, c0, hidden_size=hidden))

    return _recurrent(imp, ctx, ("Sigmoid", "Tanh", "Tanh"), (1, 2, 3, 5, 6), make)


_CONVERTERS["LSTM"] = _Conv(_lstm, _lstm_attrs)


def _gru_attrs(since: int) -> frozenset[str]:
    base = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
            "linear_before_reset")
    return frozenset(base + (("layout",) if since >= 14 else ()))


@_converter("GRU")
def _gru(imp: _Importer, ctx: _NodeCtx) -> list[Any]:
    """ONNX GRU (default activations) as ``graph.gru`` (:func:`_recurrent`)."""
    lbr = int(ctx.attr("linear_before_reset", 0))

    def make(x: SSAValue, v: list[SSAValue | None], hidden: int) -> Operation:
        w, r, b, h0 = v
        assert w is not None and r is not None
        return imp.emit(graph.GRUOp(x, w, r, b, h0, hidden_size=hidden, linear_before_reset=lbr))

    return _recurrent(imp, ctx, ("Sigmoid", "Tanh"), (1, 2, 3, 5), make)


_CONVERTERS["GRU"] = _Conv(_gru, _gru_attrs)


def _direction(imp: _Importer, v: SSAValue | None, d: int) -> SSAValue | None:
    """Direction ``d``'s slice (1, ...) of an LSTM / GRU weight, bias or initial state (None: absent)."""
    if v is None:
        return None
    win = [(0, n) for n in _shape(v)]
    win[0] = (d, d + 1)
    return _crop(imp, v, win)


def _reverse_time(imp: _Importer, v: SSAValue) -> SSAValue:
    """``v`` with its first (time) axis reversed: the anti-diagonal permutation matrix times the
    (seq, rest) view -- products with 1 and sums with 0, so exact -- viewed back."""
    s = _shape(v)
    seq, rest = s[0], math.prod(s[1:])
    t = v.type
    assert isinstance(t, TensorType)
    perm = np.eye(seq, dtype=_ELEM_TO_NP[t.element_type])[::-1].copy()
    p = imp.emit(graph.constant(perm, name_hint="reverse")).results[0]
    flat = imp.emit(graph.ReshapeOp(v, (seq, rest))).results[0]
    return imp.emit(graph.ReshapeOp(imp.emit(graph.MatMulOp(p, flat)).results[0], s)).results[0]


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def import_model(
    path_or_model: str | os.PathLike[str] | ModelProto,
    *,
    name: str = "main",
    constant_inputs: Mapping[str, np.ndarray] | None = None,
) -> ModuleOp:
    """Import an ONNX model (a path or a ``ModelProto``) as a ``builtin.module``.

    The module holds one ``func.func @<name>`` of ``graph`` ops (see the module docstring for the
    conventions). ``constant_inputs`` binds graph inputs to fixed values (specialization, like an
    initializer): they become compile-time constants instead of function arguments, which lets
    shape-like inputs (Reshape shape, Pad pads, Clip bounds, ...; see ``CONSTANT_SLOTS``) be
    supplied at import time.

    Raises ``OnnxImportError`` (one line: op type, node, reason) for unsupported ops, attributes,
    opsets, element types or dynamic shapes, and for missing/malformed files.
    """
    model = load_model(path_or_model)
    return _Importer(model, name, constant_inputs).run()


CONSTANT_SLOTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Unsqueeze": (1,),
    "Pad": (1, 2, 3),
    "Clip": (1, 2),
    "Dropout": (1, 2),
    "ConstantOfShape": (0,),
    "LSTM": (4,),
    "GRU": (4,),
    "ReduceMean": (1,),
    "ReduceSum": (1,),
    "ReduceL2": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "Slice": (1, 2, 3, 4),
    "Pow": (1,),
    "Resize": (1, 2, 3),
    "ConvTranspose": (1,),
    "Squeeze": (1,),
    "Gather": (1,),
    "Expand": (1,),
    "Split": (1,),
}
"""op type -> input slots the importer needs as compile-time constants (opset >= 11/12/13 forms)."""


def constant_slot_inputs(model: ModelProto) -> set[str]:
    """Names of graph inputs that feed a slot of ``CONSTANT_SLOTS`` (must be bound to import)."""
    g = model.graph
    inputs = {vi.name for vi in g.input} - {i.name for i in g.initializer}
    out: set[str] = set()
    for node in g.node:
        for slot in CONSTANT_SLOTS.get(node.op_type, ()):
            if slot < len(node.input) and node.input[slot] in inputs:
                out.add(node.input[slot])
    return out


def uses_float16(model: ModelProto) -> bool:
    """Whether a model stores a tensor in float16 (an initializer, a graph input, output or
    ``value_info``, a ``Cast`` / ``Constant`` to float16): taihu computes it in f32 where
    onnxruntime may round every f16 intermediate, so comparisons use f16 tolerances."""
    g = model.graph
    if any(t.data_type == TensorProto.FLOAT16 for t in g.initializer):
        return True
    for vi in (*g.input, *g.output, *g.value_info):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type == TensorProto.FLOAT16:
            return True
    for node in g.node:
        for a in node.attribute:
            if (a.name == "to" and a.i == TensorProto.FLOAT16) or (a.type == onnx.AttributeProto.TENSOR
                                                                  and a.t.data_type == TensorProto.FLOAT16):
                return True
    return False


SUPPORTED_OPS: frozenset[str] = frozenset(_CONVERTERS)
"""ONNX op types (default domain) the importer converts."""
