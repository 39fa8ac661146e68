"""Regenerate the small ONNX models used by the frontend lit tests (deterministic, seed 0).

Run from anywhere: ``python test/filecheck/frontends/Inputs/make_inputs.py``; the .onnx files are
written next to this script and committed.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def _init(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(arr, name)


def _rand(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _save(model: onnx.ModelProto, name: str, check: bool = True) -> None:
    if check:
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, name))


def small_cnn() -> None:
    """opset 13: Conv(SAME_UPPER) BN Relu MaxPool Reshape Gemm Softmax; weights as initializers."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn", epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["g"], name="fc", transB=1),
        helper.make_node("Softmax", ["g"], ["y"], name="prob"),
    ]
    inits = [
        _init("w", _rand(4, 3, 3, 3)),
        _init("b", _rand(4)),
        _init("s", np.ones(4, np.float32)),
        _init("bb", np.zeros(4, np.float32)),
        _init("m", _rand(4)),
        _init("v", np.abs(_rand(4)) + 0.5),
        _init("shape", np.array([0, -1], np.int64)),
        _init("fc_w", _rand(10, 16)),
        _init("fc_b", _rand(10)),
    ]
    g = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "small_cnn.onnx")


def opset9_ops() -> None:
    """opset 9 attribute forms: Clip/Pad/Unsqueeze attrs, 2-D-coerced Softmax, LRN, AveragePool
    SAME_LOWER, Dropout, ConstantOfShape splat, Identity, Concat, Transpose, Sum, LeakyRelu."""
    shape4 = np.array([1, 2, 4, 4], np.int64)
    nodes = [
        helper.make_node("Clip", ["x"], ["c"], name="clip", min=-1.0, max=6.0),
        helper.make_node("Pad", ["c"], ["p"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.5),
        helper.make_node(
            "AveragePool", ["p"], ["a"], name="avg", kernel_shape=[3, 3], auto_pad="SAME_LOWER", strides=[2, 2]
        ),
        helper.make_node("LRN", ["a"], ["l"], name="lrn", size=3),
        helper.make_node("ConstantOfShape", ["shape4"], ["k"], name="fill",
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.25])),
        helper.make_node("Sum", ["l", "k", "l"], ["s"], name="sum"),
        helper.make_node("LeakyRelu", ["s"], ["lr"], name="leaky", alpha=0.2),
        helper.make_node("Concat", ["lr", "k"], ["cat"], name="cat", axis=1),
        helper.make_node("Transpose", ["cat"], ["t"], name="tr", perm=[0, 2, 3, 1]),
        helper.make_node("Softmax", ["t"], ["sm"], name="softmax", axis=2),
        helper.make_node("Dropout", ["sm"], ["d"], name="drop", ratio=0.3),
        helper.make_node("Identity", ["d"], ["id"], name="ident"),
        helper.make_node("Unsqueeze", ["id"], ["y"], name="unsq", axes=[0]),
    ]
    g = helper.make_graph(
        nodes,
        "opset9_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4, 4])],
        [_init("shape4", shape4)],
    )
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]), "opset9_ops.onnx")


def lstm() -> None:
    """opset 14: forward LSTM with bias and initial state; MatMul + Tanh on its Y_h."""
    seq, batch, inp, hid = 5, 2, 3, 4
    nodes = [
        helper.make_node(
            "LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["Y", "Y_h", "Y_c"], name="lstm", hidden_size=hid
        ),
        helper.make_node("MatMul", ["Y_h", "proj"], ["mm"], name="proj"),
        helper.make_node("Tanh", ["mm"], ["out"], name="tanh"),
    ]
    inits = [
        _init("W", _rand(1, 4 * hid, inp)),
        _init("R", _rand(1, 4 * hid, hid)),
        _init("B", _rand(1, 8 * hid)),
        _init("h0", np.zeros((1, batch, hid), np.float32)),
        _init("c0", np.zeros((1, batch, hid), np.float32)),
        _init("proj", _rand(hid, 2)),
    ]
    g = helper.make_graph(
        nodes,
        "lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, [seq, 1, batch, hid]),
            helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, batch, 2]),
        ],
        inits,
    )
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), "lstm.onnx")


def normalize() -> None:
    """opset 18: F.normalize(q, dim=-1) as torch's dynamo exporter writes it (swin_v2_t's cosine
    attention): ReduceL2 with keepdims, Clip (clamp_min), Expand to q's shape, Div."""
    nodes = [
        helper.make_node("ReduceL2", ["q", "axes"], ["n"], name="norm", keepdims=1),
        helper.make_node("Clip", ["n", "eps"], ["c"], name="clamp_min"),
        helper.make_node("Expand", ["c", "shape"], ["e"], name="expand"),
        helper.make_node("Div", ["q", "e"], ["y"], name="div"),
    ]
    inits = [
        _init("axes", np.array([-1], np.int64)),
        _init("eps", np.array(1e-12, np.float32)),
        _init("shape", np.array([2, 3, 16, 8], np.int64)),
    ]
    g = helper.make_graph(
        nodes,
        "normalize",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 3, 16, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 16, 8])],
        inits,
    )
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), "normalize.onnx")


def errors() -> None:
    """Models the importer must reject with a one-line message."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])
    g = helper.make_graph([helper.make_node("Celu", ["x"], ["y"], name="celu0")], "unsupported_op", [x], [y])
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "unsupported_op.onnx")

    g = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad0", mode="reflect")],
        "unsupported_attr",
        [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6])],
        [_init("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))],
    )
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "unsupported_attr.onnx")

    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape0")],
        "dynamic_shape",
        [x, helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])],
    )
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "nonconstant_shape.onnx")

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        "dynamic_input",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 4, 4])],
    )
    _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "dynamic_input.onnx")

    with open(os.path.join(HERE, "not_a_model.onnx"), "wb") as f:
        f.write(b"\x08\x07this is not a protobuf \xff\xfe\x00 model")


if __name__ == "__main__":
    small_cnn()
    opset9_ops()
    lstm()
    normalize()
    errors()
