"""float16 models ("f16 storage, f32 compute"): import (f16 signature, boundary graph.cast, f32
constants), the reference and swsim vs onnxruntime within f16 tolerances, ``taihu-run --check``,
and what the lowered program stores (f32 only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import Float16Type, MemRefType, TensorType

from taihu.backends.reference import run_module
from taihu.dialects import graph
from taihu.frontends.onnx import import_model
from taihu.tools.run import RTOL_F16, ATOL_F16, compare, main, run_swsim

ort = pytest.importorskip("onnxruntime")


def _half_cnn() -> onnx.ModelProto:
    """A half model as onnxconverter_common's float16 conversion writes one: f16 input, initializers
    and outputs (conv -> relu -> bilinear upsampling -> conv + BN -> max pool -> flatten -> gemm ->
    softmax; the logits are a second output) and an f16 Constant."""
    rng = np.random.default_rng(0)

    def h(name, shape, s=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float16), name)

    inits = [h("w1", (8, 3, 3, 3)), h("b1", (8,)), h("w2", (8, 8, 3, 3), 0.1), h("sc", (8,), 1), h("bi", (8,)),
             h("mu", (8,)), numpy_helper.from_array((np.abs(rng.standard_normal(8)) + 0.5).astype(np.float16), "var"),
             h("fw", (10, 8 * 16 * 16), 0.05), h("fb", (10,)),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Resize", ["r1", "", "scales"], ["u"], mode="linear"),
             helper.make_node("Conv", ["u", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c2", "sc", "bi", "mu", "var"], ["bn"]),
             helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.array(0.5, np.float16))),
             helper.make_node("Mul", ["bn", "half"], ["m"]),
             helper.make_node("MaxPool", ["m"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "half_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 10]),
                           helper.make_tensor_value_info("logits", TensorProto.FLOAT16, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m, full_check=True)
    return m


def _x() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float16)


def _ort(m: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})


def _within_f16(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float16 and want.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=RTOL_F16, atol=ATOL_F16)


def test_import_keeps_the_f16_interface_and_computes_in_f32():
    module = import_model(_half_cnn())
    fn = next(o for o in module.walk() if o.name == "func.func")
    assert [str(t) for t in fn.function_type.inputs.data] == ["tensor<1x3x32x32xf16>"]
    assert [str(t) for t in fn.function_type.outputs.data] == ["tensor<1x10xf16>"] * 2
    casts = [o for o in module.walk() if isinstance(o, graph.CastOp)]
    assert [(str(c.input.type), str(c.result.type)) for c in casts] == [
        ("tensor<1x3x32x32xf16>", "tensor<1x3x32x32xf32>"),
        ("tensor<1x10xf32>", "tensor<1x10xf16>"), ("tensor<1x10xf32>", "tensor<1x10xf16>")]
    # every initializer and the f16 Constant became an f32 constant (exactly); no other op sees f16
    for o in module.walk():
        if o.dialect_name() == "graph" and not isinstance(o, graph.CastOp):
            assert all(not isinstance(r.type.element_type, Float16Type) for r in o.results), o.name
    w1 = next(o for o in module.walk() if isinstance(o, graph.ConstantOp) and o.results[0].type.get_shape() == (8, 3, 3, 3))
    stored = numpy_helper.to_array(next(i for i in _half_cnn().graph.initializer if i.name == "w1"))
    np.testing.assert_array_equal(graph.constant_value(w1), stored.astype(np.float32))


def test_reference_matches_onnxruntime_within_f16_tolerances():
    m = _half_cnn()
    got = run_module(import_model(m), {"x": _x()})
    for have, want in zip(got.values(), _ort(m, _x())):
        _within_f16(have, want)


def test_swsim_matches_onnxruntime_and_stores_no_f16():
    m = _half_cnn()
    module = import_model(m)
    res = run_swsim(module, {"x": _x()})
    for have, want in zip(res.outputs.values(), _ort(m, _x())):
        _within_f16(have, want)
    # the lowered program: f32 io buffers and weights, no f16 anywhere
    for o in res.module.walk():
        for v in [*o.results, *o.operands]:
            t = v.type
            if isinstance(t, (TensorType, MemRefType)):
                assert not isinstance(t.element_type, Float16Type), (o.name, t)


def test_taihu_run_check_on_a_half_model(tmp_path: Path, capsys):
    path = tmp_path / "model_f16.onnx"
    onnx.save(_half_cnn(), path)
    assert main([str(path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "float16 outputs rtol 0.01, atol 0.001" in out
    assert "MISMATCH" not in out and out.count(" ok") == 4  # y and logits vs the reference and onnxruntime


def test_f16_tolerances_apply_to_f16_outputs_only():
    a = np.array([1.0, 2.0], np.float32)
    b = a * (1 + 3e-3)
    rows = compare({"h": a.astype(np.float16), "s": a}, {"h": b.astype(np.float16), "s": b}, "x")
    assert [r.ok for r in rows] == [True, False]


def test_an_f16_input_returned_directly():
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "t",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(2).standard_normal((2, 64)).astype(np.float16)
    np.testing.assert_array_equal(run_module(import_model(m), {"x": x})["y"], x)
    np.testing.assert_array_equal(run_swsim(import_model(m), {"x": x}).outputs["y"], x)


def _keep_io_types() -> onnx.ModelProto:
    """onnxconverter_common's ``keep_io_types=True`` form: f32 input and output, Casts to / from
    f16 around an f16 body (f16 weights)."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array((rng.standard_normal((6, 4, 3, 3)) * 0.3).astype(np.float16), "w")
    nodes = [helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16),
             helper.make_node("Conv", ["xh", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "keep_io", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 6, 6])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_keep_io_types_casts_are_f32_compute(tmp_path: Path, capsys):
    """The Casts between float and float16 are identities (the body is computed in f32, not
    rounded to f16 in between): no graph.cast, f32 signature; within f16 tolerances of
    onnxruntime (which rounds the f16 body), and taihu-run --check uses them for such a model."""
    m = _keep_io_types()
    module = import_model(m)
    assert not [o for o in module.walk() if isinstance(o, graph.CastOp)]
    x = np.random.default_rng(4).standard_normal((1, 4, 6, 6)).astype(np.float32)
    got = run_module(module, {"x": x})["y"]
    want = _ort(m, x)[0]
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=RTOL_F16, atol=ATOL_F16)
    path = tmp_path / "keep_io.onnx"
    onnx.save(m, path)
    assert main([str(path), "--check"]) == 0
    assert "float16 outputs rtol 0.01, atol 0.001" in capsys.readouterr().out


def test_cast_to_double_is_a_graph_cast_refused_by_the_lowering():
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.DOUBLE)], "t",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    y = run_module(import_model(m), {"x": x})["y"]
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x.astype(np.float64))
    from taihu.tools.run import RunError

    with pytest.raises(RunError, match="graph.cast tensor<2x3xf32> -> tensor<2x3xf64> inside @main has no lowering"):
        run_swsim(import_model(m), {"x": x})
