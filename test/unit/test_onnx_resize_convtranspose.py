"""Resize (linear / nearest, any scales or sizes) and ConvTranspose (output_shape, auto_pad) in the
ONNX frontend: the imported graph on the numpy reference vs onnxruntime on the same model, the
graph ops they become, and the refusals (one line naming the node and the attribute)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from taihu.backends.reference import run_module
from taihu.dialects import graph
from taihu.frontends.onnx import OnnxImportError, import_model

ort = pytest.importorskip("onnxruntime")


def _model(node, x_shape, inits=(), opset=19) -> onnx.ModelProto:
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _ort(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _check(m: onnx.ModelProto, x_shape, rtol=1e-5, atol=1e-5):
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    module = import_model(m)
    got = run_module(module, {"x": x})["y"]
    want = _ort(m, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return module


def _ops(module) -> list[str]:
    return [o.name for o in module.walk() if o.dialect_name() == "graph" and o.name != "graph.constant"]


def _f32(name, *v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def _i64(name, *v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def _resize(x_shape, *, scales=None, sizes=None, opset=19, **attrs):
    if scales is not None:
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
        inits = [_f32("scales", *scales)]
    else:
        node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attrs)
        inits = [_i64("sizes", *sizes)]
    return _model(node, x_shape, inits, opset)


COORDS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("scales", [(1, 1, 2, 2), (1, 1, 1.5, 2.5), (1, 1, 0.5, 0.75), (1, 1, 0.6, 1.7), (1, 1, 3, 1)])
def test_linear_scales_match_onnxruntime(coord, scales):
    m = _resize((2, 3, 6, 10), scales=scales, mode="linear", coordinate_transformation_mode=coord)
    module = _check(m, (2, 3, 6, 10))
    assert set(_ops(module)) == {"graph.matmul"}  # constant interpolation matrices, no gathers
    assert len(_ops(module)) == (1 if scales[3] == 1 else 2)  # an axis not resized is skipped


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("sizes", [(1, 2, 13, 7), (1, 2, 3, 20), (1, 2, 1, 1), (1, 2, 8, 5)])
def test_linear_sizes_match_onnxruntime(coord, sizes):
    _check(_resize((1, 2, 8, 5), sizes=sizes, mode="linear", coordinate_transformation_mode=coord), (1, 2, 8, 5))


def test_linear_opset_10_and_11_defaults():
    """Resize-10 (X, scales) is asymmetric; Resize-11 (X, roi, scales) half_pixel."""
    node = helper.make_node("Resize", ["x", "scales"], ["y"], mode="linear")
    _check(_model(node, (1, 2, 4, 5), [_f32("scales", 1, 1, 2, 1.5)], opset=10), (1, 2, 4, 5))
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear")
    _check(_model(node, (1, 2, 4, 5), [_f32("roi"), _f32("scales", 1, 1, 2, 1.5)], opset=11), (1, 2, 4, 5))


def test_linear_antialias_axes_and_aspect_policy():
    _check(_resize((1, 2, 12, 9), scales=(1, 1, 0.4, 0.7), mode="linear", antialias=1), (1, 2, 12, 9))
    _check(_resize((1, 2, 12, 9), sizes=(5, 16), mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger"),
           (1, 2, 12, 9))
    _check(_resize((1, 2, 12, 9), scales=(1.5, 2), mode="linear", axes=[3, 2]), (1, 2, 12, 9))


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("coord", COORDS)
def test_nearest_any_scale_matches_onnxruntime(nearest_mode, coord):
    """Downsampling and fractional nearest resizes are 0/1 selection matrices (exact)."""
    m = _resize((1, 2, 7, 6), scales=(1, 1, 0.6, 1.5), mode="nearest", coordinate_transformation_mode=coord,
                nearest_mode=nearest_mode)
    _check(m, (1, 2, 7, 6), rtol=0, atol=0)


def test_nearest_integer_upsampling_keeps_the_broadcast_form():
    module = _check(_resize((1, 2, 3, 4), scales=(1, 1, 2, 3), mode="nearest"), (1, 2, 3, 4), rtol=0, atol=0)
    assert "graph.matmul" not in _ops(module) and "graph.mul" in _ops(module)


@pytest.mark.parametrize("attrs, fragment", [
    (dict(mode="cubic"), "mode='cubic' is not supported (nearest and linear only)"),
    (dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize"),
     "coordinate_transformation_mode='tf_crop_and_resize' is not supported"),
    (dict(mode="nearest", antialias=1), "antialias=1 with mode='nearest'"),
])
def test_resize_refusals_name_node_and_attribute(attrs, fragment):
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", **attrs)
    with pytest.raises(OnnxImportError, match="Resize node 'up': ") as e:
        import_model(_model(node, (1, 1, 4, 4), [_f32("scales", 1, 1, 2, 2)]))
    assert fragment in str(e.value)


def test_resize_of_channels_is_refused():
    with pytest.raises(OnnxImportError, match="resizes N or C: only H and W"):
        import_model(_resize((1, 2, 4, 4), scales=(1, 2, 2, 2), mode="linear"))


# ---- ConvTranspose: output_shape / auto_pad ------------------------------------------------------


def _convt(x_shape, w_shape, **attrs):
    w = np.random.default_rng(1).standard_normal(w_shape).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(w_shape[1] * attrs.get("group", 1)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    return _model(node, x_shape, [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")], opset=17)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("strides, kernel, dil", [((2, 2), (3, 3), (1, 1)), ((1, 2), (4, 3), (1, 1)),
                                                  ((3, 2), (2, 5), (2, 1)), ((2, 2), (2, 2), (1, 1))])
def test_convtranspose_auto_pad_matches_onnxruntime(auto_pad, strides, kernel, dil):
    m = _convt((1, 3, 5, 6), (3, 4, *kernel), auto_pad=auto_pad, strides=list(strides), dilations=list(dil))
    module = _check(m, (1, 3, 5, 6), rtol=1e-4)
    out = [o for o in module.walk() if isinstance(o, graph.Conv2dOp)][0].results[0].type.get_shape()
    assert list(out[2:]) == [5 * strides[0], 6 * strides[1]]


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("out_shape, out_pad", [((9, 11), (0, 0)), ((10, 12), (0, 0)), ((10, 12), (1, 1)),
                                                ((10, 11), (1, 0)), ((8, 9), (0, 0)), ((6, 5), (0, 0))])
def test_convtranspose_output_shape_matches_onnxruntime(auto_pad, out_shape, out_pad):
    """Smaller than the full output (pads from the spec's rule), equal, and larger by less than
    the stride (the output extended at the end, as onnxruntime)."""
    m = _convt((1, 2, 4, 5), (2, 3, 3, 3), strides=[2, 2], output_shape=list(out_shape),
               output_padding=list(out_pad), auto_pad=auto_pad, group=1)
    _check(m, (1, 2, 4, 5), rtol=1e-4)


def test_convtranspose_grouped_output_shape_and_full_output_shape_form():
    _check(_convt((1, 4, 3, 3), (4, 1, 3, 3), strides=[2, 2], output_shape=[6, 7], group=2), (1, 4, 3, 3), rtol=1e-4)
    m = _convt((1, 2, 3, 3), (2, 3, 3, 3), strides=[2, 2], output_shape=[1, 3, 6, 6])
    x = np.ones((1, 2, 3, 3), np.float32)
    y = run_module(import_model(m), {"x": x})["y"]
    assert y.shape == (1, 3, 6, 6)


def test_convtranspose_bad_output_shape_and_pads_with_same():
    with pytest.raises(OnnxImportError, match="ConvTranspose node #0: output_shape \\[5\\] must give"):
        import_model(_convt((1, 2, 3, 3), (2, 3, 3, 3), output_shape=[5]))
    with pytest.raises(OnnxImportError, match="given together with auto_pad=SAME_UPPER"):
        import_model(_convt((1, 2, 3, 3), (2, 3, 3, 3), auto_pad="SAME_UPPER", pads=[1, 1, 1, 1]))
    with pytest.raises(OnnxImportError, match="is 2 beyond the full output 7 of an axis: at most stride - 1 = 1"):
        import_model(_convt((1, 2, 3, 3), (2, 3, 3, 3), strides=[2, 2], output_shape=[9, 7]))


def test_resize_matmuls_count_the_resize_arithmetic_as_useful_flops():
    """The interpolation matmuls state the Resize's own arithmetic (graph.useful_flops: 2 per
    nonzero weight per resized line; nearest selects, 0), not the dense matmul's 2*K per output."""
    from taihu.dialects.graph_flops import useful_flops

    m = import_model(_resize((1, 3, 8, 10), scales=(1, 1, 2, 2), mode="linear"))
    w_pass, h_pass = [o for o in m.walk() if isinstance(o, graph.MatMulOp)]
    # half_pixel 2x: the two edge outputs of each axis take one clamped tap, the others two
    assert useful_flops(w_pass) == 2 * (2 * 20 - 2) * (3 * 8)  # W 10 -> 20 on 3 x 8 rows
    assert useful_flops(h_pass) == 2 * (2 * 16 - 2) * (3 * 20)  # H 8 -> 16 on 3 x 20 columns
    nearest = import_model(_resize((1, 3, 8, 10), scales=(1, 1, 1.5, 1.5), mode="nearest"))
    assert [useful_flops(o) for o in nearest.walk() if isinstance(o, graph.MatMulOp)] == [0, 0]
