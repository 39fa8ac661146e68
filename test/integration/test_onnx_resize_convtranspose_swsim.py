"""Resize linear / nearest at any scale (two matmuls with constant interpolation matrices) and
ConvTranspose with output_shape / auto_pad, lowered by taihu-lower, simulated on swsim and compared
with onnxruntime on the same ONNX model (rtol 1e-4, atol 1e-5)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from taihu.frontends.onnx import import_model
from taihu.tools.run import run_swsim

ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-4, 1e-5


def _model(nodes, x_shape, inits, opset) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _check(m: onnx.ModelProto, x_shape) -> dict:
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    want = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    res = run_swsim(import_model(m), {"x": x})
    np.testing.assert_allclose(res.outputs["y"].reshape(want.shape), want, rtol=RTOL, atol=ATOL)
    return res.report


@pytest.mark.parametrize("attrs, scales", [
    ({"mode": "linear"}, (1, 1, 2, 2)),                                                   # half_pixel (torch bilinear)
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, (1, 1, 1.5, 2.5)),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, (1, 1, 0.5, 0.75)),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}, (1, 1, 0.5, 1.5)),
])
def test_resize_lowers_to_gemms(attrs, scales) -> None:
    sc = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    m = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)], (1, 3, 8, 12), [sc], 13)
    report = _check(m, (1, 3, 8, 12))
    kinds = {k["algorithm"] for k in report["kernels"]}
    assert kinds <= {"gemm", "map"} and "gemm" in kinds, kinds


def test_resize_linear_sizes_in_a_small_network() -> None:
    """conv -> relu -> bilinear upsampling to a given size (FPN / U-Net style) -> conv."""
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * 0.3, "w2")
    sizes = numpy_helper.from_array(np.array([1, 8, 15, 21], np.int64), "sizes")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Resize", ["r", "", "", "sizes"], ["u"], mode="linear"),
             helper.make_node("Conv", ["u", "w2"], ["y"])]
    _check(_model(nodes, (1, 3, 7, 9), [w1, w2, sizes], 18), (1, 3, 7, 9))


@pytest.mark.parametrize("attrs", [
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 1]},
    {"output_shape": [10, 11], "strides": [2, 2]},
    {"output_shape": [8, 10], "strides": [2, 2], "output_padding": [1, 0]},
])
def test_conv_transpose_output_shape_and_auto_pad(attrs) -> None:
    rng = np.random.default_rng(4)
    w = numpy_helper.from_array(rng.standard_normal((4, 6, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "b")
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    _check(_model([node], (1, 4, 5, 5), [w, b], 17), (1, 4, 5, 5))
