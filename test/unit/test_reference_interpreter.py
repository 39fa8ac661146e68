"""The graph-dialect interpreter: op coverage, property plumbing, run_module's input/output contract.

Modules are built with the dialect's Python constructors; each op's interpreted result must equal
the kernel called directly with the same Python parameters (so a property read wrongly in an
``@impl`` shows up), and run_module must name/validate inputs and outputs as documented.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType, f32, f64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import InterpretationError

from taihu.backends.reference import (
    GraphFunctions,
    ReferenceInputError,
    input_specs,
    output_names,
    run_module,
)
from taihu.backends.reference import kernels as K
from taihu.dialects import graph

_EL = {np.dtype(np.float32): f32, np.dtype(np.float64): f64}


def build(
    arrays: Sequence[np.ndarray],
    body: Callable[[list[SSAValue]], list[Operation]],
    *,
    arg_names: Sequence[str] | None = None,
    result_names: Sequence[str | None] | None = None,
    n_results: int = 1,
    verify: bool = True,
) -> ModuleOp:
    """``func.func @main`` with one argument per array; returns the last ``n_results`` results."""
    block = Block(arg_types=[TensorType(_EL[a.dtype], a.shape) for a in arrays])
    ops = body(list(block.args))
    results = [r for op in ops for r in op.results][-n_results:]
    block.add_ops([*ops, ReturnOp(*results)])
    arg_attrs = res_attrs = None
    if arg_names is not None:
        arg_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(n)}) for n in arg_names])
    if result_names is not None:
        res_attrs = ArrayAttr(
            [DictionaryAttr({} if n is None else {"graph.name": StringAttr(n)}) for n in result_names]
        )
    fn = FuncOp(
        "main",
        ([a.type for a in block.args], [r.type for r in results]),
        Region(block),
        arg_attrs=arg_attrs,
        res_attrs=res_attrs,
    )
    module = ModuleOp([fn])
    if verify:
        module.verify()
    return module


def interpret(arrays, body, n_results=1):
    module = build(arrays, body, n_results=n_results)
    out = run_module(module, {f"arg{i}": a for i, a in enumerate(arrays)})
    return list(out.values())


RNG = np.random.default_rng(11)


def r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def test_every_graph_op_has_an_implementation():
    implemented = {op for op, _ in GraphFunctions._impls()}
    missing = [op.name for op in graph.Graph.operations if op not in implemented]
    assert not missing, f"graph ops without an @impl: {missing}"


# ------------------------------------------------------------------ property plumbing per op

CASES: dict[str, tuple[list[np.ndarray], Callable, Callable]] = {
    "conv2d_bias_grouped": (
        [r(2, 4, 7, 6), r(6, 2, 3, 2), r(6)],
        lambda a: [graph.Conv2dOp(a[0], a[1], a[2], strides=(2, 1), pads=(1, 0, 2, 1), dilations=(1, 2), group=2)],
        lambda x, w, b: K.conv2d(x, w, b, strides=(2, 1), pads=(1, 0, 2, 1), dilations=(1, 2), group=2),
    ),
    "conv2d_depthwise_no_bias": (
        [r(1, 3, 5, 5), r(3, 1, 3, 3)],
        lambda a: [graph.Conv2dOp(a[0], a[1], pads=(1, 1, 1, 1), group=3)],
        lambda x, w: K.conv2d(x, w, None, pads=(1, 1, 1, 1), group=3),
    ),
    "matmul_batched": ([r(2, 1, 3, 4), r(3, 4, 5)], lambda a: [graph.MatMulOp(a[0], a[1])], K.matmul),
    "gemm_full": (
        [r(4, 3), r(5, 4), r(5)],
        lambda a: [graph.GemmOp(a[0], a[1], a[2], alpha=0.5, beta=2.0, trans_a=True, trans_b=True)],
        lambda x, y, c: K.gemm(x, y, c, alpha=0.5, beta=2.0, trans_a=True, trans_b=True),
    ),
    "gemm_no_c": ([r(3, 4), r(4, 2)], lambda a: [graph.GemmOp(a[0], a[1], alpha=-1.5)], lambda x, y: K.gemm(x, y, alpha=-1.5)),
    "add": ([r(2, 3), r(3)], lambda a: [graph.AddOp(a[0], a[1])], K.add),
    "sub": ([r(2, 3), r(2, 1)], lambda a: [graph.SubOp(a[0], a[1])], K.sub),
    "mul": ([r(2, 3), r(1)], lambda a: [graph.MulOp(a[0], a[1])], K.mul),
    "div": ([r(2, 3), r(2, 3)], lambda a: [graph.DivOp(a[0], a[1])], K.div),
    "sum": ([r(2, 3), r(3), r(1, 3)], lambda a: [graph.SumOp(a)], lambda *xs: K.sum(xs)),
    "relu": ([r(4, 5)], lambda a: [graph.ReluOp(a[0])], K.relu),
    "sigmoid": ([r(4, 5)], lambda a: [graph.SigmoidOp(a[0])], K.sigmoid),
    "tanh": ([r(4, 5)], lambda a: [graph.TanhOp(a[0])], K.tanh),
    "sqrt": ([r(4, 5)], lambda a: [graph.SqrtOp(a[0])], K.sqrt),
    "erf": ([r(4, 5)], lambda a: [graph.ErfOp(a[0])], K.erf),
    "clip": ([r(4, 5)], lambda a: [graph.ClipOp(a[0], min=-0.5, max=0.75)], lambda x: K.clip(x, min=-0.5, max=0.75)),
    "leaky_relu": ([r(4, 5)], lambda a: [graph.LeakyReluOp(a[0], alpha=0.125)], lambda x: K.leaky_relu(x, alpha=0.125)),
    "max_pool": (
        [r(1, 2, 7, 8)],
        lambda a: [graph.MaxPoolOp(a[0], kernel_shape=(3, 2), strides=(2, 2), pads=(1, 0, 1, 1), dilations=(1, 2), ceil_mode=True)],
        lambda x: K.max_pool(x, kernel_shape=(3, 2), strides=(2, 2), pads=(1, 0, 1, 1), dilations=(1, 2), ceil_mode=True),
    ),
    "avg_pool": (
        [r(1, 2, 7, 8)],
        lambda a: [graph.AvgPoolOp(a[0], kernel_shape=(3, 3), strides=(2, 3), pads=(1, 1, 1, 2), ceil_mode=True, count_include_pad=True)],
        lambda x: K.avg_pool(x, kernel_shape=(3, 3), strides=(2, 3), pads=(1, 1, 1, 2), ceil_mode=True, count_include_pad=True),
    ),
    "global_avg_pool": ([r(2, 3, 4, 5)], lambda a: [graph.GlobalAvgPoolOp(a[0])], K.global_avg_pool),
    "batch_norm": (
        [r(2, 3, 4, 4), r(3), r(3), r(3), np.abs(r(3)) + 0.5],
        lambda a: [graph.BatchNormOp(*a, epsilon=2.0**-10)],
        lambda *xs: K.batch_norm(*xs, epsilon=2.0**-10),
    ),
    "lrn": (
        [r(1, 6, 3, 3)],
        lambda a: [graph.LRNOp(a[0], size=3, alpha=0.5, beta=0.75, bias=2.0)],
        lambda x: K.lrn(x, size=3, alpha=0.5, beta=0.75, bias=2.0),
    ),
    "softmax": ([r(3, 4, 5)], lambda a: [graph.SoftmaxOp(a[0], axis=1)], lambda x: K.softmax(x, axis=1)),
    "concat": ([r(2, 1, 3), r(2, 4, 3), r(2, 2, 3)], lambda a: [graph.ConcatOp(a, axis=1)], lambda *xs: K.concat(xs, axis=1)),
    "reshape": ([r(2, 3, 4)], lambda a: [graph.ReshapeOp(a[0], (4, 6))], lambda x: K.reshape(x, (4, 6))),
    "flatten": ([r(2, 3, 4, 5)], lambda a: [graph.FlattenOp(a[0], axis=2)], lambda x: K.flatten(x, axis=2)),
    "transpose": ([r(2, 3, 4)], lambda a: [graph.TransposeOp(a[0], perm=(1, 2, 0))], lambda x: K.transpose(x, perm=(1, 2, 0))),
    "transpose_default": ([r(2, 3, 4)], lambda a: [graph.TransposeOp(a[0])], K.transpose),
    "unsqueeze": ([r(2, 3)], lambda a: [graph.UnsqueezeOp(a[0], axes=(-1, 0))], lambda x: K.unsqueeze(x, axes=(-1, 0))),
    "pad": (
        [r(3, 4)],
        lambda a: [graph.PadOp(a[0], pads=(1, -1, -2, 2), value=1.5)],
        lambda x: K.pad(x, pads=(1, -1, -2, 2), value=1.5),
    ),
    "dropout": ([r(3, 4)], lambda a: [graph.DropoutOp(a[0], ratio=0.25)], lambda x: x),
    "layout_transform": (
        [r(2, 3, 4, 5)],
        lambda a: [graph.LayoutTransformOp(a[0], from_layout="NCHW", to_layout="CHWN")],
        lambda x: K.layout_transform(x, from_layout="NCHW", to_layout="CHWN"),
    ),
    "f64_chain": (
        [r(1, 2, 4, 4, dtype=np.float64), r(3, 2, 1, 1, dtype=np.float64)],
        lambda a: (lambda c: [c, graph.ReluOp(c)])(graph.Conv2dOp(a[0], a[1])),
        lambda x, w: K.relu(K.conv2d(x, w)),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_kernel(name):
    arrays, body, kernel = CASES[name]
    (got,) = interpret(arrays, body)
    expected = kernel(*arrays)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_constant_op():
    dense = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7  # > inline limit: dense_resource
    splat = np.full((3, 4), 0.5, np.float32)
    (got_dense, got_splat) = interpret(
        [r(1)], lambda a: [graph.constant(dense), graph.constant(splat)], n_results=2
    )
    np.testing.assert_array_equal(got_dense, dense)
    np.testing.assert_array_equal(got_splat, splat)


@pytest.mark.parametrize("optional", [(), ("b",), ("h", "c"), ("b", "c"), ("h",), ("b", "h", "c")])
def test_lstm_optional_operands(optional):
    seq, batch, inp, hid = 3, 2, 4, 5
    x, w, rr = r(seq, batch, inp), r(1, 4 * hid, inp), r(1, 4 * hid, hid)
    extra = {"b": r(1, 8 * hid), "h": r(1, batch, hid), "c": r(1, batch, hid)}
    arrays = [x, w, rr, *(extra[k] for k in optional)]

    def body(a):
        given = dict(zip(optional, a[3:]))
        return [graph.LSTMOp(a[0], a[1], a[2], given.get("b"), given.get("h"), given.get("c"), hidden_size=hid)]

    got = interpret(arrays, body, n_results=3)
    expected = K.lstm(x, w, rr, extra["b"] if "b" in optional else None, extra["h"] if "h" in optional else None,
                      extra["c"] if "c" in optional else None, hidden_size=hid)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


def test_result_type_mismatch_is_an_interpretation_error():
    # unverified IR: the interpreter still refuses to hand on a tensor of the wrong type
    module = build([r(2, 3)], lambda a: [graph.ReluOp(a[0], result_type=TensorType(f32, [3, 2]))], verify=False)
    with pytest.raises(InterpretationError, match=r"graph.relu: result 0 computed as float32\[2, 3\]"):
        run_module(module, {"arg0": r(2, 3)})


# ------------------------------------------------------------------------- run_module contract


@pytest.fixture()
def named_module() -> ModuleOp:
    return build(
        [r(2, 3), r(3)],
        lambda a: [graph.AddOp(a[0], a[1]), graph.SubOp(a[0], a[1]), graph.ReluOp(a[0])],
        arg_names=["images", "offset"],
        result_names=["sum_out", None, "relu_out"],
        n_results=3,
    )


def test_names_and_specs(named_module):
    specs = input_specs(named_module)
    assert [(s.name, s.shape, s.dtype) for s in specs] == [
        ("images", (2, 3), np.dtype(np.float32)),
        ("offset", (3,), np.dtype(np.float32)),
    ]
    assert output_names(named_module) == ["sum_out", "out1", "relu_out"]


def test_inputs_by_name_or_position(named_module):
    x, y = r(2, 3), r(3)
    by_name = run_module(named_module, {"images": x, "offset": y})
    by_pos = run_module(named_module, {"arg0": x, "arg1": y})
    mixed = run_module(named_module, {"images": x, "arg1": y})
    assert list(by_name) == ["sum_out", "out1", "relu_out"]
    for out in (by_pos, mixed):
        for k in by_name:
            np.testing.assert_array_equal(out[k], by_name[k])
    np.testing.assert_array_equal(by_name["out1"], x - y)


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"images": r(2, 3)}, r"missing input 'offset' \(argument 1, float32\[3\]\)"),
        ({"images": r(2, 3), "offset": r(3), "bias": r(3)}, r"unexpected input 'bias' \(graph inputs: 'images', 'offset'\)"),
        ({"images": r(3, 2), "offset": r(3)}, r"input 'images' has shape \[3, 2\], expected \[2, 3\]"),
        ({"images": r(2, 3, dtype=np.float64), "offset": r(3)}, r"input 'images' has dtype float64, expected float32"),
        ({"images": r(2, 3), "arg0": r(2, 3), "offset": r(3)}, r"input 'images' given twice"),
    ],
)
def test_input_errors_name_the_input(named_module, inputs, message):
    with pytest.raises(ReferenceInputError, match=message):
        run_module(named_module, inputs)


def test_module_without_main():
    fn_a = FuncOp("a", ([], []), Region(Block([ReturnOp()])))
    fn_b = FuncOp("b", ([], []), Region(Block([ReturnOp()])))
    with pytest.raises(ReferenceInputError, match=r"no func.func @main .*@a, @b"):
        run_module(ModuleOp([fn_a, fn_b]), {})
