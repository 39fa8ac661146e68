"""The exporters' operator forms the frontend decomposes (HardSigmoid, HardSwish, GlobalMaxPool,
ReduceMean/Sum/Max/Min, Slice, Split, shape sub-graphs) lowered by taihu-lower, simulated on
swsim and compared with onnxruntime on the same ONNX model (rtol 1e-4, atol 1e-5): the
decompositions lower, not only import."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from taihu.frontends.onnx import import_model
from taihu.tools.run import run_swsim

RTOL, ATOL = 1e-4, 1e-5


def _model(nodes, x_shape, outputs, inits=(), opset=18) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _i64(name, *v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def _check(m: onnx.ModelProto, x_shape) -> None:
    import onnxruntime as ort

    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    want = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = run_swsim(import_model(m), {"x": x}).outputs
    for o, w in zip(m.graph.output, want):
        np.testing.assert_allclose(got[o.name].reshape(w.shape), w, rtol=RTOL, atol=ATOL, err_msg=o.name)


def test_squeeze_excitation_with_hard_sigmoid_and_hard_swish() -> None:
    """MobileNetV3's SE block: ReduceMean over H, W (keepdims) -> 1x1 convs -> HardSigmoid ->
    broadcast Mul; HardSwish after it."""
    c, r = 16, 4
    rng = np.random.default_rng(1)
    inits = [_i64("axes", 2, 3),
             numpy_helper.from_array(rng.standard_normal((r, c, 1, 1)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((c, r, 1, 1)).astype(np.float32), "w2")]
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1),
        helper.make_node("Conv", ["m", "w1"], ["s1"]),
        helper.make_node("Relu", ["s1"], ["s2"]),
        helper.make_node("Conv", ["s2", "w2"], ["s3"]),
        helper.make_node("HardSigmoid", ["s3"], ["g"], alpha=1 / 6, beta=0.5),
        helper.make_node("Mul", ["x", "g"], ["e"]),
        helper.make_node("HardSwish", ["e"], ["y"]),
    ]
    _check(_model(nodes, (1, c, 9, 9), ["y"], inits), (1, c, 9, 9))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean"])
@pytest.mark.parametrize("axes, keepdims", [((1,), 1), ((-1,), 0), ((0, 2), 1), ((1, 2, 3), 0)])
def test_reductions(op: str, axes, keepdims: int) -> None:
    opset = 13 if op == "ReduceSum" else 18
    m = _model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)], (2, 5, 6, 7), ["y"],
               [_i64("axes", *axes)], opset=opset)
    _check(m, (2, 5, 6, 7))


def test_global_max_pool_and_channel_slice_split() -> None:
    nodes = [
        helper.make_node("GlobalMaxPool", ["x"], ["g"]),
        helper.make_node("Slice", ["x", "s0", "s1", "ax"], ["sl"]),
        helper.make_node("Split", ["x", "sizes"], ["p0", "p1"], axis=1),
        helper.make_node("Relu", ["p1"], ["q1"]),
    ]
    inits = [_i64("s0", 2), _i64("s1", -1), _i64("ax", 1), _i64("sizes", 3, 5)]
    _check(_model(nodes, (1, 8, 5, 6), ["g", "sl", "p0", "q1"], inits), (1, 8, 5, 6))


def test_legacy_flatten_shape_chain_lowers() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "a0"], ["b1"]),
        helper.make_node("Concat", ["b1", "m1"], ["shp"], axis=0),
        helper.make_node("Reshape", ["x", "shp"], ["f"]),
        helper.make_node("Softmax", ["f"], ["y"], axis=-1),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "i0"), _i64("a0", 0), _i64("m1", -1)]
    _check(_model(nodes, (2, 3, 4, 5), ["y"], inits, opset=13), (2, 3, 4, 5))


def _encoder_block(t: int = 16, d: int = 32, heads: int = 2, hidden: int = 64, opset: int = 20) -> onnx.ModelProto:
    """A ViT-style pre-norm encoder block: LayerNorm, multi-head attention as batched MatMuls +
    Softmax, residual, LayerNorm, a GELU MLP, residual."""
    rng = np.random.default_rng(3)
    dh = d // heads

    def w(name, *shape, s=0.2):
        return numpy_helper.from_array((s * rng.standard_normal(shape)).astype(np.float32), name)

    inits = [w("g1", d, s=1.0), w("b1", d), w("g2", d, s=1.0), w("b2", d),
             w("wq", d, d), w("wk", d, d), w("wv", d, d), w("wo", d, d),
             w("w1", d, hidden), w("c1", hidden), w("w2", hidden, d), w("c2", d),
             _i64("heads_shape", 1, t, heads, dh), _i64("merge_shape", 1, t, d),
             numpy_helper.from_array(np.array(dh ** -0.5, np.float32), "scale")]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "g1", "b1"], ["h"], axis=-1, epsilon=1e-5),
        *[n("MatMul", ["h", f"w{k}"], [f"{k}0"]) for k in "qkv"],
        *[n("Reshape", [f"{k}0", "heads_shape"], [f"{k}1"]) for k in "qkv"],
        n("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
        n("Transpose", ["k1"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["v1"], ["v"], perm=[0, 2, 1, 3]),
        n("MatMul", ["q", "kt"], ["s0"]),
        n("Mul", ["s0", "scale"], ["s1"]),
        n("Softmax", ["s1"], ["p"], axis=-1),
        n("MatMul", ["p", "v"], ["a0"]),
        n("Transpose", ["a0"], ["a1"], perm=[0, 2, 1, 3]),
        n("Reshape", ["a1", "merge_shape"], ["a2"]),
        n("MatMul", ["a2", "wo"], ["a3"]),
        n("Add", ["x", "a3"], ["r1"]),
        n("LayerNormalization", ["r1", "g2", "b2"], ["h2"], axis=-1, epsilon=1e-5),
        n("MatMul", ["h2", "w1"], ["m0"]),
        n("Add", ["m0", "c1"], ["m1"]),
        n("Gelu", ["m1"], ["m2"]),
        n("MatMul", ["m2", "w2"], ["m3"]),
        n("Add", ["m3", "c2"], ["m4"]),
        n("Add", ["r1", "m4"], ["y"]),
    ]
    return _model(nodes, (1, t, d), ["y"], inits, opset=opset)


def test_vit_style_encoder_block() -> None:
    _check(_encoder_block(), (1, 16, 32))


@pytest.mark.parametrize("exponent", [2.0, 0.5, -0.5, 3.0])
def test_pow_forms_and_erf_sqrt(exponent: float) -> None:
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Pow", ["s", "e"], ["p"]),
             helper.make_node("Erf", ["x"], ["f"]), helper.make_node("Sqrt", ["s"], ["q"])]
    inits = [numpy_helper.from_array(np.array(exponent, np.float32), "e")]
    _check(_model(nodes, (2, 3, 40), ["p", "f", "q"], inits, opset=13), (2, 3, 40))


@pytest.mark.parametrize("strides, pads, out_pad, group, dil", [
    ((2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1)),
    ((1, 1), (0, 0, 0, 0), (0, 0), 2, (1, 1)),
    ((2, 3), (0, 1, 2, 0), (1, 0), 2, (2, 1)),
])
def test_conv_transpose(strides, pads, out_pad, group, dil) -> None:
    rng = np.random.default_rng(4)
    w = numpy_helper.from_array(rng.standard_normal((4, 6 // group, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b")
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=strides, pads=pads,
                            output_padding=out_pad, group=group, dilations=dil)
    _check(_model([node], (1, 4, 5, 6), ["y"], [w, b], opset=13), (1, 4, 5, 6))


@pytest.mark.parametrize("opset, attrs, scales", [
    (13, {"mode": "nearest"}, (1, 1, 2, 2)),                                  # half_pixel, round_prefer_floor
    (13, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, (1, 1, 3, 2)),
    (10, {"mode": "nearest"}, (1, 1, 2, 3)),
])
def test_resize_nearest(opset, attrs, scales) -> None:
    sc = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    inputs = ["x", "scales"] if opset == 10 else ["x", "", "scales"]
    _check(_model([helper.make_node("Resize", inputs, ["y"], **attrs)], (1, 3, 4, 5), ["y"], [sc], opset=opset),
           (1, 3, 4, 5))


def test_two_layer_lstm_classifier() -> None:
    """torch's nn.LSTM(num_layers=2) + Linear as its exporter writes it: two LSTM nodes, the
    first one's Y (seq, 1, batch, H) squeezed into the second's X, the last Y_h squeezed into a
    Gemm."""
    seq, batch, inp, hid, classes = 6, 3, 10, 16, 5
    rng = np.random.default_rng(5)

    def w(name, *shape):
        return numpy_helper.from_array((0.3 * rng.standard_normal(shape)).astype(np.float32), name)

    inits = [w("W0", 1, 4 * hid, inp), w("R0", 1, 4 * hid, hid), w("B0", 1, 8 * hid),
             w("W1", 1, 4 * hid, hid), w("R1", 1, 4 * hid, hid), w("B1", 1, 8 * hid),
             w("fc_w", classes, hid), w("fc_b", classes), _i64("ax1", 1), _i64("ax0", 0)]
    n = helper.make_node
    nodes = [
        n("LSTM", ["x", "W0", "R0", "B0"], ["y0", "", ""], hidden_size=hid),
        n("Squeeze", ["y0", "ax1"], ["x1"]),
        n("LSTM", ["x1", "W1", "R1", "B1"], ["", "h1", ""], hidden_size=hid),
        n("Squeeze", ["h1", "ax0"], ["h"]),
        n("Gemm", ["h", "fc_w", "fc_b"], ["y"], transB=1),
    ]
    _check(_model(nodes, (seq, batch, inp), ["y"], inits, opset=14), (seq, batch, inp))


@pytest.mark.parametrize("direction", ["bidirectional", "reverse"])
def test_lstm_directions(direction: str) -> None:
    """A reverse / bidirectional LSTM: per direction a forward graph.lstm (the reverse one on the
    time-reversed input, its Y reversed back), outputs concatenated."""
    seq, batch, inp, hid = 5, 2, 6, 8
    nd = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(6)

    def w(name, *shape):
        return numpy_helper.from_array((0.4 * rng.standard_normal(shape)).astype(np.float32), name)

    inits = [w("W", nd, 4 * hid, inp), w("R", nd, 4 * hid, hid), w("B", nd, 8 * hid),
             w("h0", nd, batch, hid), w("c0", nd, batch, hid)]
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "yh", "yc"], hidden_size=hid,
                            direction=direction)
    _check(_model([node], (seq, batch, inp), ["y", "yh", "yc"], inits, opset=14), (seq, batch, inp))


@pytest.mark.parametrize("indices, axis", [(0, 1), ([[2, 3], [0, 1]], 2), ([4, 5, 1, -1], 3)])
def test_gather_at_constant_indices(indices, axis) -> None:
    """x[:, 0] (ViT's class token) and index lists: crops of the index runs, concatenated."""
    idx = numpy_helper.from_array(np.array(indices, np.int64), "idx")
    _check(_model([helper.make_node("Gather", ["x", "idx"], ["y"], axis=axis)], (1, 5, 6, 7), ["y"], [idx]),
           (1, 5, 6, 7))


@pytest.mark.parametrize("direction, lbr", [("forward", 0), ("forward", 1), ("bidirectional", 0)])
def test_gru(direction: str, lbr: int) -> None:
    """graph.gru: the input projection as one GEMM, the recurrence with h in LDM (both reset
    forms); bidirectional as two forward GRUs, the second on the time-reversed input."""
    seq, batch, inp, hid = 5, 3, 7, 9
    nd = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(7)

    def w(name, *shape):
        return numpy_helper.from_array((0.4 * rng.standard_normal(shape)).astype(np.float32), name)

    inits = [w("W", nd, 3 * hid, inp), w("R", nd, 3 * hid, hid), w("B", nd, 6 * hid), w("h0", nd, batch, hid)]
    node = helper.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "yh"], hidden_size=hid,
                            direction=direction, linear_before_reset=lbr)
    _check(_model([node], (seq, batch, inp), ["y", "yh"], inits, opset=14), (seq, batch, inp))
