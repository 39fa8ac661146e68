"""``taihu.tools.weights.randomize_weights``: which tensors are weights, value ranges, and that
the randomized model still runs the same on taihu's reference and on onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from taihu.tools.weights import randomize_weights


def _model(nodes, inputs, outputs, inits=(), opset=13) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _x(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _vs_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol=1e-5, atol=1e-6):
    import onnxruntime as ort

    from taihu.backends.reference import run_module
    from taihu.frontends.onnx import import_model

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = run_module(import_model(model), feeds)
    for w, g in zip(want, got.values(), strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def test_batchnorm_variance_read_through_identity_stays_positive() -> None:
    """torch's legacy exporter shares equal weights through Identity nodes (maxvit_t's BN
    parameters): the shared initializer keeps its BN role, so the variance stays positive
    (it was drawn from U(-0.5, 0.5) and onnxruntime's output became NaN)."""
    c = 64
    inits = [numpy_helper.from_array(np.ones(c, np.float32), n) for n in ("s", "b", "m", "v")]
    nodes = [helper.make_node("Identity", [n], [f"{n}_id"]) for n in ("s", "b", "m", "v")]
    nodes.append(helper.make_node("BatchNormalization", ["x", "s_id", "b_id", "m_id", "v_id"], ["y"]))
    m = _model(nodes, [_vi("x", [1, c, 3, 3])], [_vi("y", [1, c, 3, 3])], inits)
    arrays = {i.name: numpy_helper.to_array(i) for i in randomize_weights(m, seed=0).graph.initializer}
    assert not np.all(arrays["v"] == 1) and np.all(arrays["v"] >= 0.5) and np.all(arrays["s"] >= 0.5)
    _vs_onnxruntime(randomize_weights(m, seed=0), {"x": _x(1, c, 3, 3)})


def test_randomize_weights_slots_and_positive_variance() -> None:
    inits = [
        numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "w"),
        numpy_helper.from_array(np.ones(1, np.float32), "one"),  # 1 element, no weight slot
        numpy_helper.from_array(np.array([1, -1], np.int64), "shape"),
        numpy_helper.from_array(np.array(0.5, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("ConstantOfShape", ["cs"], ["var"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        helper.make_node("BatchNormalization", ["c", "var", "var", "var", "var"], ["b"]),
        helper.make_node("Clip", ["b", "", "hi"], ["cl"]),
        helper.make_node("Add", ["cl", "one"], ["a"]),
        helper.make_node("Reshape", ["a", "shape"], ["y"]),
    ]
    inits.append(numpy_helper.from_array(np.array([4], np.int64), "cs"))
    m = _model(nodes, [_vi("x", [1, 2, 5, 5])], [_vi("y", [1, 36])], inits, opset=13)
    r = randomize_weights(m, seed=3)
    arrays = {i.name: numpy_helper.to_array(i) for i in r.graph.initializer}
    assert not np.all(arrays["w"] == 1)
    np.testing.assert_array_equal(arrays["shape"], [1, -1])  # shape tensor kept
    assert arrays["hi"] == np.float32(0.5)  # scalar Clip bound kept
    assert arrays["one"] == np.float32(1.0)  # 1-element tensor outside weight slots kept
    (var_node,) = [n for n in r.graph.node if n.output[0] == "var"]
    assert var_node.op_type == "Constant"
    var = numpy_helper.to_array(var_node.attribute[0].t)
    assert var.shape == (4,) and np.all(var > 0)
    _vs_onnxruntime(r, {"x": _x(1, 2, 5, 5)})
