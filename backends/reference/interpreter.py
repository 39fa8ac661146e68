"""xDSL interpreter functions for the ``graph`` dialect (values are ``np.ndarray``).

``GraphFunctions`` registers one ``@impl(graph.XxxOp)`` per op; each reads the op's properties
through the dialect's Python accessors and calls the matching pure kernel in
:mod:`taihu.backends.reference.kernels`. Register it together with xDSL's ``FuncFunctions`` and
run ``func.func @main`` with ``Interpreter.call_op`` (see :func:`taihu.backends.reference.run_module`).

Every result is checked against the op's declared result type (shape and element type): a kernel
that disagrees with the verifier's shape inference is an ``InterpretationError`` naming the op,
not a silently wrong tensor downstream.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import InterpretationError

from taihu.backends.reference import kernels as K
from taihu.dialects import graph
from taihu.dialects.resources import element_dtype


def _checked(op: Operation, *values: np.ndarray) -> PythonValues:
    """Return ``values`` after checking each against the op's result types."""
    for i, (res, value) in enumerate(zip(op.results, values, strict=True)):
        ty = res.type
        if not isinstance(ty, TensorType):
            continue
        shape = tuple(ty.get_shape())
        dtype = element_dtype(ty.element_type)
        if value.shape != shape or value.dtype != dtype:
            raise InterpretationError(
                f"{op.name}: result {i} computed as {value.dtype}{list(value.shape)} but the IR "
                f"declares {dtype}{list(shape)}"
            )
    return values


def _opt(interpreter: Interpreter, value: SSAValue | None) -> Any:
    """The Python value of an optional operand, or None when the operand is absent."""
    return None if value is None else interpreter.get_values((value,))[0]


@register_impls
class GraphFunctions(InterpreterFunctions):
    """numpy implementations of every ``graph`` op (the golden model)."""

    @impl(graph.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: graph.ConstantOp, args: PythonValues):
        return _checked(op, graph.constant_value(op))

    # ---------------------------------------------------------------- convolution / products

    @impl(graph.Conv2dOp)
    def run_conv2d(self, interpreter: Interpreter, op: graph.Conv2dOp, args: PythonValues):
        x, w = args[0], args[1]
        b = _opt(interpreter, op.bias)
        y = K.conv2d(x, w, b, strides=op.strides, pads=op.pads, dilations=op.dilations, group=op.group)
        return _checked(op, y)

    @impl(graph.MatMulOp)
    def run_matmul(self, interpreter: Interpreter, op: graph.MatMulOp, args: PythonValues):
        return _checked(op, K.matmul(args[0], args[1]))

    @impl(graph.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: graph.GemmOp, args: PythonValues):
        c = _opt(interpreter, op.c)
        y = K.gemm(args[0], args[1], c, alpha=op.alpha, beta=op.beta, trans_a=op.trans_a, trans_b=op.trans_b)
        return _checked(op, y)

    # ---------------------------------------------------------------------------- elementwise

    @impl(graph.AddOp)
    def run_add(self, interpreter: Interpreter, op: graph.AddOp, args: PythonValues):
        return _checked(op, K.add(*args))

    @impl(graph.SubOp)
    def run_sub(self, interpreter: Interpreter, op: graph.SubOp, args: PythonValues):
        return _checked(op, K.sub(*args))

    @impl(graph.MulOp)
    def run_mul(self, interpreter: Interpreter, op: graph.MulOp, args: PythonValues):
        return _checked(op, K.mul(*args))

    @impl(graph.DivOp)
    def run_div(self, interpreter: Interpreter, op: graph.DivOp, args: PythonValues):
        return _checked(op, K.div(*args))

    @impl(graph.SumOp)
    def run_sum(self, interpreter: Interpreter, op: graph.SumOp, args: PythonValues):
        return _checked(op, K.sum(args))

    @impl(graph.ReluOp)
    def run_relu(self, interpreter: Interpreter, op: graph.ReluOp, args: PythonValues):
        return _checked(op, K.relu(args[0]))

    @impl(graph.SigmoidOp)
    def run_sigmoid(self, interpreter: Interpreter, op: graph.SigmoidOp, args: PythonValues):
        return _checked(op, K.sigmoid(args[0]))

    @impl(graph.TanhOp)
    def run_tanh(self, interpreter: Interpreter, op: graph.TanhOp, args: PythonValues):
        return _checked(op, K.tanh(args[0]))

    @impl(graph.SqrtOp)
    def run_sqrt(self, interpreter: Interpreter, op: graph.SqrtOp, args: PythonValues):
        return _checked(op, K.sqrt(args[0]))

    @impl(graph.ErfOp)
    def run_erf(self, interpreter: Interpreter, op: graph.ErfOp, args: PythonValues):
        return _checked(op, K.erf(args[0]))

    @impl(graph.ClipOp)
    def run_clip(self, interpreter: Interpreter, op: graph.ClipOp, args: PythonValues):
        return _checked(op, K.clip(args[0], min=op.min, max=op.max))

    @impl(graph.LeakyReluOp)
    def run_leaky_relu(self, interpreter: Interpreter, op: graph.LeakyReluOp, args: PythonValues):
        return _checked(op, K.leaky_relu(args[0], alpha=op.alpha))

    @impl(graph.DropoutOp)
    def run_dropout(self, interpreter: Interpreter, op: graph.DropoutOp, args: PythonValues):
        return _checked(op, K.dropout(args[0], ratio=op.ratio))

    @impl(graph.CastOp)
    def run_cast(self, interpreter: Interpreter, op: graph.CastOp, args: PythonValues):
        ty = op.result.type
        assert isinstance(ty, TensorType)
        return _checked(op, K.cast(args[0], element_dtype(ty.element_type)))

    # ------------------------------------------------------------------ pools / normalization

    @impl(graph.MaxPoolOp)
    def run_max_pool(self, interpreter: Interpreter, op: graph.MaxPoolOp, args: PythonValues):
        y = K.max_pool(
            args[0],
            kernel_shape=op.kernel_shape,
            strides=op.strides,
            pads=op.pads,
            dilations=op.dilations,
            ceil_mode=op.ceil_mode,
        )
        return _checked(op, y)

    @impl(graph.AvgPoolOp)
    def run_avg_pool(self, interpreter: Interpreter, op: graph.AvgPoolOp, args: PythonValues):
        y = K.avg_pool(
            args[0],
            kernel_shape=op.kernel_shape,
            strides=op.strides,
            pads=op.pads,
            dilations=op.dilations,
            ceil_mode=op.ceil_mode,
            count_include_pad=op.count_include_pad,
        )
        return _checked(op, y)

    @impl(graph.GlobalAvgPoolOp)
    def run_global_avg_pool(self, interpreter: Interpreter, op: graph.GlobalAvgPoolOp, args: PythonValues):
        return _checked(op, K.global_avg_pool(args[0]))

    @impl(graph.BatchNormOp)
    def run_batch_norm(self, interpreter: Interpreter, op: graph.BatchNormOp, args: PythonValues):
        return _checked(op, K.batch_norm(*args, epsilon=op.epsilon))

    @impl(graph.LRNOp)
    def run_lrn(self, interpreter: Interpreter, op: graph.LRNOp, args: PythonValues):
        return _checked(op, K.lrn(args[0], size=op.size, alpha=op.alpha, beta=op.beta, bias=op.bias))

    @impl(graph.SoftmaxOp)
    def run_softmax(self, interpreter: Interpreter, op: graph.SoftmaxOp, args: PythonValues):
        return _checked(op, K.softmax(args[0], axis=op.axis))

    # -------------------------------------------------------------------------- data movement

    @impl(graph.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: graph.ConcatOp, args: PythonValues):
        return _checked(op, K.concat(args, axis=op.axis))

    @impl(graph.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: graph.ReshapeOp, args: PythonValues):
        return _checked(op, K.reshape(args[0], op.shape))

    @impl(graph.FlattenOp)
    def run_flatten(self, interpreter: Interpreter, op: graph.FlattenOp, args: PythonValues):
        return _checked(op, K.flatten(args[0], axis=op.axis))

    @impl(graph.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: graph.TransposeOp, args: PythonValues):
        return _checked(op, K.transpose(args[0], perm=op.perm))

    @impl(graph.UnsqueezeOp)
    def run_unsqueeze(self, interpreter: Interpreter, op: graph.UnsqueezeOp, args: PythonValues):
        return _checked(op, K.unsqueeze(args[0], axes=op.axes))

    @impl(graph.PadOp)
    def run_pad(self, interpreter: Interpreter, op: graph.PadOp, args: PythonValues):
        return _checked(op, K.pad(args[0], pads=op.pads, value=op.value))

    @impl(graph.LayoutTransformOp)
    def run_layout_transform(self, interpreter: Interpreter, op: graph.LayoutTransformOp, args: PythonValues):
        y = K.layout_transform(args[0], from_layout=op.from_layout, to_layout=op.to_layout)
        return _checked(op, y)

    # ------------------------------------------------------------------------------ recurrent

    @impl(graph.GRUOp)
    def run_gru(self, interpreter: Interpreter, op: graph.GRUOp, args: PythonValues):
        y = K.gru(args[0], args[1], args[2], _opt(interpreter, op.b), _opt(interpreter, op.initial_h),
                  hidden_size=op.hidden_size, linear_before_reset=op.linear_before_reset)
        return _checked(op, *y)

    @impl(graph.LSTMOp)
    def run_lstm(self, interpreter: Interpreter, op: graph.LSTMOp, args: PythonValues):
        x, w, r = args[0], args[1], args[2]
        y = K.lstm(
            x,
            w,
            r,
            _opt(interpreter, op.b),
            _opt(interpreter, op.initial_h),
            _opt(interpreter, op.initial_c),
            hidden_size=op.hidden_size,
        )
        return _checked(op, *y)
