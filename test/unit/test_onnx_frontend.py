"""ONNX frontend: old-opset forms and attribute resolution differentially tested against
onnxruntime, plus the importer's error contract (ONNX's node conformance cases are mostly opset
13+, so the opset 9-12 forms are covered here)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from taihu.frontends.onnx import OnnxImportError, import_model


def _model(nodes, inputs, outputs, inits=(), opset=13) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    return m


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _vs_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol=1e-5, atol=1e-6):
    import onnxruntime as ort

    from taihu.backends.reference import run_module

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = run_module(import_model(model), feeds)
    assert list(got) == [o.name for o in model.graph.output]
    for w, g in zip(want, got.values()):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---- opset < 13 forms -------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
@pytest.mark.parametrize("opset", [9, 11, 13])
def test_softmax_axis_semantics(axis: int, opset: int) -> None:
    m = _model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=axis)],
        [_vi("x", [2, 3, 4, 5])],
        [_vi("y", [2, 3, 4, 5])],
        opset=opset,
    )
    _vs_onnxruntime(m, {"x": _x(2, 3, 4, 5)})


def test_softmax_opset9_coerces_to_2d_with_reshapes() -> None:
    m = _model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=1)],
        [_vi("x", [2, 3, 4])],
        [_vi("y", [2, 3, 4])],
        opset=9,
    )
    ops = [op.name for op in import_model(m).walk()]
    assert ops.count("graph.reshape") == 2 and "graph.softmax" in ops


@pytest.mark.parametrize("opset", [9, 10])
def test_clip_attribute_form(opset: int) -> None:
    m = _model(
        [helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25)],
        [_vi("x", [3, 4])],
        [_vi("y", [3, 4])],
        opset=opset,
    )
    _vs_onnxruntime(m, {"x": _x(3, 4)})


def test_clip_input_form_with_one_bound() -> None:
    m = _model(
        [helper.make_node("Clip", ["x", "", "hi"], ["y"])],
        [_vi("x", [3, 4])],
        [_vi("y", [3, 4])],
        [numpy_helper.from_array(np.array(0.1, np.float32), "hi")],
        opset=12,
    )
    _vs_onnxruntime(m, {"x": _x(3, 4)})


@pytest.mark.parametrize("opset", [9, 11, 18])
def test_pad_forms(opset: int) -> None:
    pads = [0, 1, 2, 0, 0, 2, -1, 1]
    if opset < 11:
        node = helper.make_node("Pad", ["x"], ["y"], pads=pads, value=1.5)
        inits = []
    else:
        node = helper.make_node("Pad", ["x", "pads", "cv"], ["y"], mode="constant")
        inits = [
            numpy_helper.from_array(np.array(pads, np.int64), "pads"),
            numpy_helper.from_array(np.array(1.5, np.float32), "cv"),
        ]
    m = _model([node], [_vi("x", [1, 2, 4, 4])], [_vi("y", [1, 5, 5, 5])], inits, opset=opset)
    _vs_onnxruntime(m, {"x": _x(1, 2, 4, 4)})


def test_pad_with_axes_input() -> None:
    inits = [
        numpy_helper.from_array(np.array([1, 0, 2, 3], np.int64), "pads"),
        numpy_helper.from_array(np.array([1, -1], np.int64), "axes"),
    ]
    m = _model(
        [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])],
        [_vi("x", [1, 2, 4, 4])],
        [_vi("y", [1, 5, 4, 7])],
        inits,
        opset=18,
    )
    _vs_onnxruntime(m, {"x": _x(1, 2, 4, 4)})


@pytest.mark.parametrize("opset", [9, 13])
def test_unsqueeze_forms(opset: int) -> None:
    if opset < 13:
        node, inits = helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0, 3]), []
    else:
        node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"])
        inits = [numpy_helper.from_array(np.array([0, -1], np.int64), "axes")]
    out = [1, 3, 4, 1]
    m = _model([node], [_vi("x", [3, 4])], [_vi("y", out)], inits, opset=opset)
    _vs_onnxruntime(m, {"x": _x(3, 4)})


@pytest.mark.parametrize("opset", [9, 10, 12, 13])
def test_dropout_is_identity_and_unused_mask_is_fine(opset: int) -> None:
    outs = ["y", "mask"]
    if opset < 12:
        node = helper.make_node("Dropout", ["x"], outs, ratio=0.3)
    else:
        node = helper.make_node("Dropout", ["x"], outs)
    m = _model(
        [node, helper.make_node("Relu", ["y"], ["z"])],
        [_vi("x", [3, 4])],
        [_vi("z", [3, 4])],
        opset=opset,
    )
    _vs_onnxruntime(m, {"x": _x(3, 4)})


def test_reshape_zero_and_minus_one_and_flatten_negative_axis() -> None:
    m = _model(
        [
            helper.make_node("Reshape", ["x", "s"], ["r"]),
            helper.make_node("Flatten", ["r"], ["y"], axis=-1),
        ],
        [_vi("x", [2, 3, 4])],
        [_vi("y", [12, 2])],
        [numpy_helper.from_array(np.array([0, -1, 2, 2], np.int64), "s")],
        opset=13,
    )
    _vs_onnxruntime(m, {"x": _x(2, 3, 4)})


def test_gemm_opset9_and_batchnorm_opset9() -> None:
    inits = [
        numpy_helper.from_array(_x(2, 4), "b"),
        numpy_helper.from_array(_x(2), "c"),
        numpy_helper.from_array(np.array([3, 2, 1, 1], np.int64), "shape"),
        numpy_helper.from_array(_x(2), "s"),
        numpy_helper.from_array(_x(2), "bb"),
        numpy_helper.from_array(_x(2), "m"),
        numpy_helper.from_array(np.abs(_x(2)) + 0.5, "v"),
    ]
    m = _model(
        [
            helper.make_node("Gemm", ["a", "b", "c"], ["g"], transB=1, alpha=0.5, beta=2.0),
            helper.make_node("Reshape", ["g", "shape"], ["g4"]),
            helper.make_node("BatchNormalization", ["g4", "s", "bb", "m", "v"], ["y"], epsilon=1e-3),
        ],
        [_vi("a", [3, 4])],
        [_vi("y", [3, 2, 1, 1])],
        inits,
        opset=9,
    )
    _vs_onnxruntime(m, {"a": _x(3, 4)})


# ---- auto_pad resolution, differential --------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from(["Conv", "MaxPool", "AveragePool"]),
    auto_pad=st.sampled_from(["SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"]),
    h=st.integers(3, 9),
    w=st.integers(3, 9),
    k=st.integers(1, 3),
    s=st.integers(1, 3),
)
def test_auto_pad_matches_onnxruntime(op, auto_pad, h, w, k, s) -> None:
    if auto_pad.startswith("SAME"):
        # onnxruntime rejects SAME with a negative total pad (kernel < stride); taihu clamps to 0.
        assume(all((-(-n // s) - 1) * s + k - n >= 0 for n in (h, w)))
    attrs = dict(auto_pad=auto_pad, strides=[s, s])
    inits = []
    ins = ["x"]
    if op == "Conv":
        inits = [numpy_helper.from_array(_x(3, 2, k, k), "w")]
        ins.append("w")
    else:
        attrs["kernel_shape"] = [k, k]
    node = helper.make_node(op, ins, ["y"], **attrs)
    m = _model([node], [_vi("x", [1, 2, h, w])], [_vi("y", None)], inits, opset=11)
    m.graph.output[0].type.tensor_type.ClearField("shape")
    m = onnx.shape_inference.infer_shapes(m)
    _vs_onnxruntime(m, {"x": _x(1, 2, h, w)})


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("dilations,pads", [([2, 2], [0, 0, 0, 0]), ([2, 3], [1, 2, 1, 0])])
def test_averagepool_19_dilations(dilations, pads, count_include_pad) -> None:
    node = helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=[2, 3], strides=[1, 2], dilations=dilations,
        pads=pads, count_include_pad=count_include_pad,
    )
    m = _model([node], [_vi("x", [1, 2, 7, 9])], [_vi("y", None)], opset=19)
    m = onnx.shape_inference.infer_shapes(m)
    pool = [op for op in import_model(m).walk() if op.name == "graph.avg_pool"]
    assert len(pool) == 1 and pool[0].dilations == tuple(dilations)
    _vs_onnxruntime(m, {"x": _x(1, 2, 7, 9)})


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("opset", [12, 19])
def test_ceil_mode_window_starting_in_end_padding_is_dropped(op: str, opset: int) -> None:
    # W: size 6, end pad 1, kernel 2, stride 2, ceil_mode: the 4th window would start at 6, in the
    # end padding; onnxruntime and ONNX's reference drop it (3 outputs). onnx's C++ shape
    # inference says 4: the importer must follow the semantics, not refuse the model.
    node = helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1, pads=[1, 0, 1, 1])
    m = _model([node], [_vi("x", [2, 3, 7, 6])], [_vi("y", None)], opset=opset)
    m.graph.output[0].type.tensor_type.ClearField("shape")
    _vs_onnxruntime(m, {"x": _x(2, 3, 7, 6)})


# ---- errors -----------------------------------------------------------------------------------


def test_old_opset_is_refused() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])], opset=8)
    with pytest.raises(OnnxImportError, match="opset 8; opset 9 or newer"):
        import_model(m)


def test_unknown_attribute_is_refused() -> None:
    m = _model(
        [helper.make_node("Relu", ["x"], ["y"], name="r", foo=1)], [_vi("x", [2])], [_vi("y", [2])]
    )
    with pytest.raises(OnnxImportError, match="^Relu node 'r': unsupported attribute 'foo'$"):
        import_model(m)


def test_declared_shape_mismatch_is_refused() -> None:
    m = _model(
        [helper.make_node("Transpose", ["x"], ["t"], name="tr"), helper.make_node("Relu", ["t"], ["y"])],
        [_vi("x", [2, 3])],
        [_vi("y", [3, 2])],
    )
    m.graph.value_info.append(_vi("t", [2, 3]))
    with pytest.raises(OnnxImportError, match=r"Transpose node 'tr': output 't' has shape \(3, 2\)"):
        import_model(m)


def test_custom_domain_and_unsupported_lstm() -> None:
    m = _model([helper.make_node("Foo", ["x"], ["y"], domain="com.x")], [_vi("x", [2])], [_vi("y", [2])])
    m.opset_import.append(helper.make_opsetid("com.x", 1))
    with pytest.raises(OnnxImportError, match="Foo node #0: unsupported op \\(domain 'com.x'"):
        import_model(m)


def test_used_optional_output_is_refused() -> None:
    m = _model(
        [helper.make_node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2], name="mp")],
        [_vi("x", [1, 1, 4, 4])],
        [_vi("y", [1, 1, 3, 3]), _vi("idx", [1, 1, 3, 3], TensorProto.INT64)],
    )
    with pytest.raises(OnnxImportError, match="MaxPool node 'mp': the Indices output"):
        import_model(m)


def test_constant_inputs_must_name_graph_inputs() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
    with pytest.raises(OnnxImportError, match="'z', which is not a graph input"):
        import_model(m, constant_inputs={"z": np.zeros(2, np.float32)})


# ---- element types ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "elem,dtype", [(TensorProto.FLOAT16, np.float16), (TensorProto.DOUBLE, np.float64)]
)
def test_f16_and_f64_models(elem, dtype) -> None:
    from onnx.reference import ReferenceEvaluator

    from taihu.backends.reference import run_module

    inits = [
        numpy_helper.from_array(_x(4, 3, 3, 3).astype(dtype), "w"),
        numpy_helper.from_array(_x(5, 4 * 3 * 3).astype(dtype), "fc"),
    ]
    m = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 0, 0]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("Flatten", ["r"], ["f"]),
            helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1),
        ],
        [_vi("x", [1, 3, 4, 4], elem)],
        [_vi("y", [1, 5], elem)],
        inits,
    )
    module = import_model(m)
    assert f"tensor<1x5x{'f16' if dtype == np.float16 else 'f64'}>" in str(module)
    x = _x(1, 3, 4, 4).astype(dtype)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    (got,) = run_module(module, {"x": x}).values()
    assert got.dtype == dtype
    tol = 2e-2 if dtype == np.float16 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
