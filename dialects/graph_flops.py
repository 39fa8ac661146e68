"""Useful floating-point operations of a ``graph`` op: the op's own arithmetic.

The simulator counts the flops its micro-kernels *execute* (padding rows, Winograd transforms,
im2col copies and zero tiles included). :func:`useful_flops` counts what the graph op itself
asks for, independently of how it is lowered, so that GFLOPS and % of peak measure the work
the network needs (issue 14 item 5). Conventions (``numel(y)`` = elements of the result):

==============================================  ===============================================
op                                              useful flops
==============================================  ===============================================
``graph.conv2d``                                ``2 * N*M*Ho*Wo * (C/group)*kH*kW`` (2 per
                                                multiply-add, every algorithm -- implicit,
                                                im2col, Winograd -- counted as the direct
                                                convolution) ``+ numel(y)`` with a bias
``graph.gemm``                                  ``2*M*N*K``; ``+ M*N`` if ``alpha != 1``;
                                                with C: ``+ M*N`` (the add) ``+ M*N`` if
                                                ``beta != 1``
``graph.matmul``                                ``2 * K * numel(y)`` (batch dims included)
``graph.add/sub/mul/div``                       ``numel(y)``
``graph.sum`` (n inputs)                        ``(n - 1) * numel(y)``
``graph.relu/leaky_relu/clip/sigmoid/tanh``     ``numel(y)`` (one function evaluation = 1)
``graph.batch_norm`` (inference)                ``2 * numel(y)`` (``x * a + b``, ``a``, ``b``
                                                per channel)
``graph.max_pool``, ``graph.avg_pool``          ``kH*kW * numel(y)`` (per output: the window's
                                                kH*kW - 1 max/adds and the first compare with
                                                -inf or the average's scale)
``graph.global_avg_pool``                       ``H*W * numel(y)``
``graph.lrn`` (window ``size``)                 ``(2*size + 3) * numel(y)`` (squares and sums
                                                of the window, scale + bias, power, divide)
``graph.softmax``                               ``3 * numel(y)`` (exp, sum, divide: ONNX's
                                                definition; the max subtraction is an
                                                implementation detail)
``graph.lstm`` (seq S, batch B, input I, H)     ``S*B * (8H*(I+H) + 9H)`` (the four gate
                                                GEMMs, 2 per multiply-add; the cell: 4
                                                activations, ``c = f*c + i*g`` 3, ``h = o *
                                                tanh(c)`` 2 per hidden unit) ``+ S*B*8H`` with
                                                the biases Wb and Rb
constant, concat, reshape, flatten, transpose,  0 (data movement only)
unsqueeze, pad, layout_transform, dropout
==============================================  ===============================================

An op carrying the discardable attribute ``graph.useful_flops`` (:data:`USEFUL_FLOPS_ATTR`, i64)
counts that value instead of its rule: a frontend that expresses an operator through other ops
states the operator's own arithmetic there (ONNX Resize becomes two ``graph.matmul`` with
constant interpolation matrices, mostly zeros: each counts 2 per nonzero weight per output,
0 for nearest's selections).

Ops of other dialects (e.g. a ``memref.copy`` lowered as a kernel) count 0. A ``graph`` op with
no rule above returns ``None`` (no count is made up); :data:`COUNTED_OPS` lists the op classes
with a rule (a unit test checks it covers the whole dialect).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation

from taihu.dialects import graph


def _dims(t: Attribute) -> tuple[int, ...]:
    if not isinstance(t, TensorType):
        raise TypeError(f"graph_flops: expected a tensor type, got {t}")
    return tuple(int(d) for d in t.get_shape())


def _numel(t: Attribute) -> int:
    return math.prod(_dims(t))


def _conv2d(op: graph.Conv2dOp) -> int:
    _m, cg, kh, kw = _dims(op.weight.type)
    out = _numel(op.result.type)
    return 2 * out * cg * kh * kw + (out if op.bias is not None else 0)


def _gemm(op: graph.GemmOp) -> int:
    a = _dims(op.a.type)
    k = a[0] if op.trans_a else a[1]
    mn = _numel(op.result.type)
    flops = 2 * mn * k + (mn if op.alpha != 1.0 else 0)
    if op.c is not None:
        flops += mn + (mn if op.beta != 1.0 else 0)
    return flops


def _matmul(op: graph.MatMulOp) -> int:
    return 2 * _dims(op.lhs.type)[-1] * _numel(op.result.type)


def _per_element(n: int) -> Callable[[Operation], int]:
    return lambda op: n * _numel(op.results[0].type)


def _sum(op: graph.SumOp) -> int:
    return (len(op.operands) - 1) * _numel(op.result.type)


def _pool(op: graph.MaxPoolOp | graph.AvgPoolOp) -> int:
    return math.prod(op.kernel_shape) * _numel(op.result.type)


def _global_avg_pool(op: graph.GlobalAvgPoolOp) -> int:
    return math.prod(_dims(op.input.type)[2:]) * _numel(op.result.type)


def _lrn(op: graph.LRNOp) -> int:
    return (2 * op.size + 3) * _numel(op.result.type)


def _lstm(op: graph.LSTMOp) -> int:
    seq, batch, inp = _dims(op.x.type)
    h = op.hidden_size
    per_row = 8 * h * (inp + h) + 9 * h + (8 * h if op.b is not None else 0)
    return seq * batch * per_row


def _gru(op: graph.GRUOp) -> int:
    """Per row and step: the 3 input and 3 recurrent products (2 flops per multiply-add), the
    biases, and the cell: 2 sigmoids, a tanh, the reset product, 1-z, two products and a sum."""
    seq, batch, inp = _dims(op.x.type)
    h = op.hidden_size
    per_row = 6 * h * (inp + h) + 7 * h + (6 * h if op.b is not None else 0)
    return seq * batch * per_row


_ZERO: Callable[[Operation], int] = lambda op: 0  # noqa: E731 - data movement only

#: graph op class -> its useful flops (see the module docstring)
_RULES: dict[type[Operation], Callable] = {
    graph.Conv2dOp: _conv2d,
    graph.GemmOp: _gemm,
    graph.MatMulOp: _matmul,
    graph.AddOp: _per_element(1),
    graph.SubOp: _per_element(1),
    graph.MulOp: _per_element(1),
    graph.DivOp: _per_element(1),
    graph.SumOp: _sum,
    graph.ReluOp: _per_element(1),
    graph.LeakyReluOp: _per_element(1),
    graph.ClipOp: _per_element(1),
    graph.SigmoidOp: _per_element(1),
    graph.TanhOp: _per_element(1),
    graph.SqrtOp: _per_element(1),
    graph.ErfOp: _per_element(1),
    graph.BatchNormOp: _per_element(2),
    graph.MaxPoolOp: _pool,
    graph.AvgPoolOp: _pool,
    graph.GlobalAvgPoolOp: _global_avg_pool,
    graph.LRNOp: _lrn,
    graph.SoftmaxOp: _per_element(3),
    graph.LSTMOp: _lstm,
    graph.GRUOp: _gru,
    graph.ConstantOp: _ZERO,
    graph.ConcatOp: _ZERO,
    graph.ReshapeOp: _ZERO,
    graph.FlattenOp: _ZERO,
    graph.TransposeOp: _ZERO,
    graph.UnsqueezeOp: _ZERO,
    graph.PadOp: _ZERO,
    graph.LayoutTransformOp: _ZERO,
    graph.DropoutOp: _ZERO,
    graph.CastOp: _ZERO,  # a conversion, no arithmetic (f16 boundary casts: done by the host)
}

#: the graph op classes :func:`useful_flops` has a rule for
COUNTED_OPS: frozenset[type[Operation]] = frozenset(_RULES)


#: discardable attribute (i64) overriding a graph op's rule (module docstring)
USEFUL_FLOPS_ATTR = "graph.useful_flops"


def useful_flops(op: Operation) -> int | None:
    """The useful flops of ``op`` (module docstring): its :data:`USEFUL_FLOPS_ATTR` when set, else
    an int >= 0 for a graph op with a rule and 0 for an op of another dialect; ``None`` for a
    ``graph`` op without a rule."""
    stated = op.attributes.get(USEFUL_FLOPS_ATTR)
    if isinstance(stated, IntegerAttr):
        return int(stated.value.data)
    rule = _RULES.get(type(op))
    if rule is not None:
        return int(rule(op))
    return None if isinstance(op, graph.GraphOperation) else 0


__all__ = ["COUNTED_OPS", "USEFUL_FLOPS_ATTR", "useful_flops"]
