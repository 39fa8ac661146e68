"""The graph dialect's Python API: shape inference against ONNX/numpy, constants and blobs.

- conv2d / max_pool / avg_pool / lstm result shapes vs ``onnx.shape_inference`` on one-node models
  (hypothesis), ceil-mode pooling vs onnxruntime's actual output shape (ONNX's shape inference
  omits the "last window starts inside the input" rule that onnxruntime and the contract apply);
- matmul / gemm / broadcasting / flatten / transpose / unsqueeze / pad / concat / layout_transform
  vs numpy on zero-filled arrays (hypothesis), including numpy's errors <-> VerifyException;
- ``dense_resource`` blob encode/decode (MLIR hex format) for f16/f32/f64/i64, and ``constant()``
  choosing splat / inline / resource storage;
- print + reparse of a module holding a 25 MB ``dense_resource`` constant (values equal), and
  parsing the same text twice in one process (xDSL 0.74 resource-key renaming fix).
"""

from __future__ import annotations

import io
import math

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, DenseIntOrFPElementsAttr, DenseResourceAttr, ModuleOp
from xdsl.dialects.builtin import TensorType, f16, f32, f64, i64
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.dialects import test as xdsl_test
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from taihu.dialects import graph
from taihu.dialects.resources import decode_blob, encode_blob

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _value(shape, element_type=f32):
    """An SSA value of type tensor<shape x element_type> (result of a test.op)."""
    return xdsl_test.TestOp(result_types=[TensorType(element_type, list(shape))]).results[0]


def _onnx_infer(op_type, inputs, attrs, n_out=1, opset=19):
    """Output shapes ONNX shape inference gives a one-node model with float inputs."""
    names = [f"in{i}" if s is not None else "" for i, s in enumerate(inputs)]
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op_type, names, outs, **attrs)
    g = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
            for n, s in zip(names, inputs)
            if s is not None
        ],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    return [
        tuple(d.dim_value for d in o.type.tensor_type.shape.dim) for o in model.graph.output
    ]


# ------------------------------------------------------------------------------------------
# Convolution and pooling vs ONNX
# ------------------------------------------------------------------------------------------


@st.composite
def conv_cases(draw):
    group = draw(st.sampled_from([1, 1, 2, 3]))
    cpg = draw(st.integers(1, 3))
    mpg = draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    dil = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    pads = tuple(draw(st.integers(0, 3)) for _ in range(4))
    h = draw(st.integers(1, 20))
    w = draw(st.integers(1, 20))
    n = draw(st.integers(1, 2))
    assume(h + pads[0] + pads[2] >= dil[0] * (kh - 1) + 1)
    assume(w + pads[1] + pads[3] >= dil[1] * (kw - 1) + 1)
    return (n, cpg * group, h, w), (mpg * group, cpg, kh, kw), strides, pads, dil, group


@SETTINGS
@given(conv_cases(), st.booleans())
def test_conv2d_shape_matches_onnx(case, with_bias):
    xs, ws, strides, pads, dil, group = case
    x, w = _value(xs), _value(ws)
    b = _value((ws[0],)) if with_bias else None
    op = graph.Conv2dOp(x, w, b, strides=strides, pads=pads, dilations=dil, group=group)
    op.verify()
    (expected,) = _onnx_infer(
        "Conv",
        [xs, ws, (ws[0],) if with_bias else None],
        dict(strides=strides, pads=pads, dilations=dil, group=group, kernel_shape=ws[2:]),
    )
    assert tuple(op.result.type.get_shape()) == expected
    assert op.strides == tuple(strides) and op.pads == tuple(pads)
    assert op.dilations == tuple(dil) and op.group == group
    assert (op.bias is not None) == with_bias


@st.composite
def pool_cases(draw):
    rank = draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    pads = tuple(draw(st.integers(0, k - 1)) for k in kernel) + tuple(
        draw(st.integers(0, k - 1)) for k in kernel
    )
    spatial = tuple(draw(st.integers(1, 12)) for _ in range(rank))
    for i in range(rank):
        assume(spatial[i] + pads[i] + pads[rank + i] >= kernel[i])
    return (1, 2, *spatial), kernel, strides, pads


@SETTINGS
@given(pool_cases(), st.sampled_from(["MaxPool", "AveragePool"]))
def test_pool_floor_shape_matches_onnx(case, op_type):
    xs, kernel, strides, pads = case
    cls = graph.MaxPoolOp if op_type == "MaxPool" else graph.AvgPoolOp
    op = cls(_value(xs), kernel_shape=kernel, strides=strides, pads=pads)
    op.verify()
    (expected,) = _onnx_infer(
        op_type, [xs], dict(kernel_shape=kernel, strides=strides, pads=pads)
    )
    assert tuple(op.result.type.get_shape()) == expected
    assert op.kernel_shape == kernel and op.strides == strides and op.pads == pads
    assert not op.ceil_mode


@settings(max_examples=25, deadline=None, derandomize=True)
@given(pool_cases(), st.sampled_from(["MaxPool", "AveragePool"]))
def test_pool_ceil_shape_matches_onnxruntime(case, op_type):
    ort = pytest.importorskip("onnxruntime")
    xs, kernel, strides, pads = case
    cls = graph.MaxPoolOp if op_type == "MaxPool" else graph.AvgPoolOp
    op = cls(_value(xs), kernel_shape=kernel, strides=strides, pads=pads, ceil_mode=True)
    op.verify()
    node = helper.make_node(
        op_type, ["x"], ["y"], kernel_shape=kernel, strides=strides, pads=pads, ceil_mode=1
    )
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": np.zeros(xs, np.float32)})
    assert tuple(op.result.type.get_shape()) == y.shape


def test_pool_ceil_mode_last_window_rule():
    # size 5, kernel 2, stride 2, pads (1, 1): ceil gives 4 windows, but the 4th would start at
    # padded index 6 >= 5 + 1, i.e. entirely in the end padding, so ONNX runtimes produce 3.
    assert graph.pool_output_size(5, 2, 2, 1, 1, ceil_mode=True) == 3
    assert graph.pool_output_size(5, 2, 2, 1, 1, ceil_mode=False) == 3
    assert graph.pool_output_size(112, 3, 2, 0, 0, ceil_mode=True) == 56
    assert graph.pool_output_size(112, 3, 2, 0, 0, ceil_mode=False) == 55


def test_lstm_shapes_match_onnx():
    seq, batch, inp, h = 7, 3, 5, 4
    shapes = [(seq, batch, inp), (1, 4 * h, inp), (1, 4 * h, h), (1, 8 * h)]
    ops = [_value(s) for s in shapes]
    init = _value((1, batch, h))
    op = graph.LSTMOp(*ops, init, init, hidden_size=h)
    op.verify()
    expected = _onnx_infer("LSTM", shapes + [None, (1, batch, h), (1, batch, h)], dict(hidden_size=h), 3, 14)
    assert [tuple(r.type.get_shape()) for r in op.results] == expected
    assert op.hidden_size == h and op.b is not None and op.initial_h is not None


def test_global_avg_pool_batch_norm_lrn_softmax():
    x = _value((2, 4, 5, 6))
    c = _value((4,))
    assert graph.GlobalAvgPoolOp(x).result.type == TensorType(f32, [2, 4, 1, 1])
    bn = graph.BatchNormOp(x, c, c, c, c, epsilon=1e-3)
    assert bn.result.type == x.type and math.isclose(bn.epsilon, 1e-3, rel_tol=1e-6)
    lrn = graph.LRNOp(x, size=3, beta=0.5)
    assert (lrn.size, lrn.beta, lrn.bias) == (3, 0.5, 1.0)
    sm = graph.SoftmaxOp(x, axis=1)
    assert sm.axis == 1 and sm.result.type == x.type
    with pytest.raises(VerifyException, match="scale shape"):
        graph.BatchNormOp(x, _value((3,)), c, c, c)


# ------------------------------------------------------------------------------------------
# numpy semantics
# ------------------------------------------------------------------------------------------

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


def _np_result(fn, *arrays):
    try:
        return fn(*arrays).shape
    except ValueError:
        return None


@SETTINGS
@given(shapes, shapes, st.sampled_from([graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp]))
def test_binary_broadcasting_matches_numpy(a, b, cls):
    expected = _np_result(np.add, np.zeros(a), np.zeros(b))
    if expected is None:
        with pytest.raises(VerifyException, match="not broadcastable"):
            cls(_value(a), _value(b))
    else:
        op = cls(_value(a), _value(b))
        op.verify()
        assert tuple(op.result.type.get_shape()) == expected


@SETTINGS
@given(st.lists(shapes, min_size=1, max_size=4))
def test_sum_broadcasting_matches_numpy(shape_list):
    try:
        expected = np.broadcast_shapes(*shape_list)
    except ValueError:
        with pytest.raises(VerifyException, match="not broadcastable"):
            graph.SumOp([_value(s) for s in shape_list])
        return
    op = graph.SumOp([_value(s) for s in shape_list])
    op.verify()
    assert tuple(op.result.type.get_shape()) == expected


matmul_shapes = st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple)


@SETTINGS
@given(matmul_shapes, matmul_shapes)
def test_matmul_matches_numpy(a, b):
    expected = _np_result(np.matmul, np.zeros(a), np.zeros(b))
    if expected is None:
        with pytest.raises(VerifyException):
            graph.MatMulOp(_value(a), _value(b))
    else:
        op = graph.MatMulOp(_value(a), _value(b))
        op.verify()
        assert tuple(op.result.type.get_shape()) == expected


@SETTINGS
@given(
    st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.booleans(), st.booleans(),
    st.sampled_from([None, (), (1,), ("n",), ("m", 1), (1, "n"), ("m", "n"), (1, 1)]),
)
def test_gemm_matches_numpy(m, k, n, ta, tb, c_pattern):
    a = (k, m) if ta else (m, k)
    b = (n, k) if tb else (k, n)
    c = None if c_pattern is None else tuple({"m": m, "n": n}.get(d, d) for d in c_pattern)
    op = graph.GemmOp(
        _value(a), _value(b), _value(c) if c is not None else None,
        alpha=0.5, trans_a=ta, trans_b=tb,
    )
    op.verify()
    A, B = np.zeros(a), np.zeros(b)
    y = (A.T if ta else A) @ (B.T if tb else B)
    if c is not None:
        y = y + np.zeros(c)
    assert tuple(op.result.type.get_shape()) == y.shape
    assert (op.trans_a, op.trans_b, op.alpha, op.beta) == (ta, tb, 0.5, 1.0)


@SETTINGS
@given(shapes.filter(lambda s: len(s) >= 1), st.data())
def test_data_movement_matches_numpy(shape, data):
    x = np.zeros(shape)
    r = len(shape)
    v = _value(shape)
    axis = data.draw(st.integers(-r, r))
    ax = axis + r if axis < 0 else axis
    flat = graph.FlattenOp(v, axis=axis)
    assert flat.result.type.get_shape() == (math.prod(shape[:ax]), math.prod(shape[ax:]))

    perm = tuple(data.draw(st.permutations(range(r))))
    assert tuple(graph.TransposeOp(v, perm=perm).result.type.get_shape()) == x.transpose(perm).shape
    rev = graph.TransposeOp(v)
    assert tuple(rev.result.type.get_shape()) == x.T.shape and rev.perm == tuple(range(r))[::-1]

    n_new = data.draw(st.integers(1, 2))
    axes = data.draw(
        st.lists(st.integers(-(r + n_new), r + n_new - 1), min_size=n_new, max_size=n_new)
    )
    norm = [a % (r + n_new) for a in axes]
    if len(set(norm)) != len(norm):
        with pytest.raises(VerifyException, match="duplicates"):
            graph.UnsqueezeOp(v, axes=axes)
    else:
        expected = np.expand_dims(x, tuple(axes)).shape
        assert tuple(graph.UnsqueezeOp(v, axes=axes).result.type.get_shape()) == expected

    pads = data.draw(st.lists(st.integers(-1, 2), min_size=2 * r, max_size=2 * r))
    out = [d + pads[i] + pads[r + i] for i, d in enumerate(shape)]
    if min(out) < 0:
        with pytest.raises(VerifyException, match="would be negative"):
            graph.PadOp(v, pads=pads)
    else:
        p = graph.PadOp(v, pads=pads, value=2.0)
        assert list(p.result.type.get_shape()) == out and p.value == 2.0

    cax = data.draw(st.integers(-r, r - 1))
    other = list(shape)
    other[cax] = 3
    cat = graph.ConcatOp([v, _value(other), v], axis=cax)
    expected = np.concatenate([x, np.zeros(other), x], axis=cax).shape
    assert tuple(cat.result.type.get_shape()) == expected and cat.axis == cax


def test_layout_transform_and_reshape():
    x = _value((1, 3, 8, 5))
    lt = graph.LayoutTransformOp(x, from_layout="NCHW", to_layout="NHWC")
    assert lt.perm == (0, 2, 3, 1)
    assert lt.result.type == TensorType(f32, [1, 8, 5, 3])
    assert (lt.from_layout, lt.to_layout) == ("NCHW", "NHWC")
    back = graph.LayoutTransformOp(lt, from_layout="NHWC", to_layout="NCHW")
    assert back.result.type == x.type
    rs = graph.ReshapeOp(x, [15, 8])
    rs.verify()
    assert rs.shape == (15, 8)
    bad = graph.ReshapeOp(x, TensorType(f32, [4, 4]))
    with pytest.raises(VerifyException, match="result has 16 elements"):
        bad.verify()


def test_constructor_and_result_override_errors():
    x, w = _value((1, 3, 8, 8)), _value((4, 4, 3, 3))
    with pytest.raises(VerifyException, match=r"input channel dim 1 \(=3\) must equal weight dim 1"):
        graph.Conv2dOp(x, w)
    op = graph.Conv2dOp(x, _value((4, 3, 3, 3)), result_type=TensorType(f32, [1, 4, 6, 7]))
    with pytest.raises(VerifyException, match="result dim 3 is 7 but inferred 6"):
        op.verify()
    relu = graph.ReluOp(_value((2,), f16))
    assert relu.result.type == TensorType(f16, [2])
    clip = graph.ClipOp(x)
    assert (clip.min, clip.max) == (-math.inf, math.inf)
    assert graph.LeakyReluOp(x).alpha == pytest.approx(0.01)
    assert graph.DropoutOp(x).ratio == 0.5


# ------------------------------------------------------------------------------------------
# Constants and dense_resource blobs
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64])
def test_blob_encode_decode_round_trip(dtype):
    rng = np.random.default_rng(7)
    arr = (rng.standard_normal((3, 5, 2)) * 100).astype(dtype)
    blob = encode_blob(arr)
    itemsize = np.dtype(dtype).itemsize
    # MLIR format: "0x" + 4-byte little-endian alignment + little-endian data.
    assert blob[:10] == "0x" + itemsize.to_bytes(4, "little").hex()
    assert bytes.fromhex(blob[10:]) == arr.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    back = decode_blob(blob, dtype, arr.shape)
    assert back.dtype == dtype and np.array_equal(back, arr)
    with pytest.raises(ValueError, match="needs"):
        decode_blob(blob, dtype, (4, 5, 2))


def test_blob_matches_mlir_text():
    # MLIR prints dense_resource<blob> : tensor<2xf32> = [1.0, 2.0] as below.
    assert encode_blob(np.array([1.0, 2.0], np.float32)).upper() == "0X040000000000803F00000040"
    assert decode_blob("0x040000000000803F00000040", np.float32, (2,)).tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    "array, kind",
    [
        (np.full((64, 3), 0.5, np.float32), "splat"),
        (np.arange(12, dtype=np.float64).reshape(3, 4), "inline"),
        (np.arange(17, dtype=np.int64), "resource"),
        (np.linspace(-1, 1, 40).astype(np.float16).reshape(5, 8), "resource"),
        (np.array(3.0, np.float32), "inline"),
    ],
)
def test_constant_storage_kinds(array, kind):
    op = graph.constant(array, name_hint="w")
    op.verify()
    assert op.result.type == TensorType(op.result.type.element_type, list(array.shape))
    if kind == "resource":
        assert isinstance(op.value, DenseResourceAttr)
    else:
        assert isinstance(op.value, DenseIntOrFPElementsAttr)
        if kind == "splat":
            assert len(op.value) == 1
    value = graph.constant_value(op)
    assert value.dtype == array.dtype and value.shape == array.shape
    assert np.array_equal(value, array)
    assert not value.flags.writeable


def _print(module: ModuleOp, ctx: Context) -> str:
    out = io.StringIO()
    printer = Printer(stream=out)
    printer.print_op(module)
    printer.print_metadata(ctx.loaded_dialects)
    return out.getvalue()


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Func, graph.Graph):
        ctx.load_dialect(d)
    return ctx


def _module_of(*consts: graph.ConstantOp) -> ModuleOp:
    types = [c.result.type for c in consts]
    block = Block()
    block.add_ops([*consts, ReturnOp(*consts)])
    return ModuleOp([FuncOp("main", ([], types), Region(block))])


def _constants(module: ModuleOp) -> list[np.ndarray]:
    return [graph.constant_value(op) for op in module.walk() if isinstance(op, graph.ConstantOp)]


def test_large_resource_prints_and_reparses():
    rng = np.random.default_rng(0)
    big = rng.standard_normal((1600, 4096)).astype(np.float32)  # 25 MiB
    assert big.nbytes >= 25 * 2**20
    small = np.arange(20, dtype=np.float64)
    module = _module_of(graph.constant(big, name_hint="big"), graph.constant(small))
    ctx = _ctx()
    text = _print(module, ctx)
    assert "dialect_resources" in text and "dense_resource<big" in text
    reparsed = Parser(ctx, text).parse_module()
    reparsed.verify()
    got = _constants(reparsed)
    assert np.array_equal(got[0], big) and np.array_equal(got[1], small)


def test_same_text_parsed_twice_keeps_values():
    ctx = _ctx()
    text = _print(_module_of(graph.constant(np.arange(30.0, dtype=np.float32), name_hint="k")), ctx)
    for _ in range(3):
        module = Parser(ctx, text).parse_module()
        module.verify()
        (value,) = _constants(module)
        assert np.array_equal(value, np.arange(30.0, dtype=np.float32))


def test_constant_value_of_attribute_and_element_type_override():
    op = graph.constant(np.arange(4), element_type=f64)
    assert op.result.type == TensorType(f64, [4])
    assert graph.constant_value(op.value).dtype == np.float64
    op64 = graph.constant(np.arange(3))
    assert op64.result.type == TensorType(i64, [3])
