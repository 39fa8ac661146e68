"""Whole networks end to end through the CLIs (issues 4 and 5).

- ``taihu-run --example NAME --random-weights 0 --check`` for each of the five light networks
  (slow: minutes each on the simulator; ``pytest -m slow``). Besides the tool's own ``--check``
  (reference and onnxruntime, rtol 1e-4 / atol 1e-5), the outputs written with ``--output`` are
  compared here with onnxruntime on the same randomized model and inputs.
- The textual pipeline path: ``taihu-import`` -> ``taihu-opt -p taihu-lower`` -> a swsim module
  file -> ``taihu-run OUT.mlir --inputs x.npz --output y.npz``, compared with onnxruntime: on a
  small CNN built here (fast, default suite) and on ResNet-50 (slow).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from taihu.tools.weights import randomize_weights
from taihu.tools import importer as import_tool
from taihu.tools import opt as opt_tool
from taihu.tools import run as run_tool

RTOL, ATOL = 1e-4, 1e-5
NETWORKS = ["squeezenet", "resnet50", "alexnet", "inception_v1", "vgg19"]


def _graph_input(model: onnx.ModelProto) -> tuple[str, list[int]]:
    init = {i.name for i in model.graph.initializer}
    (vi,) = [i for i in model.graph.input if i.name not in init]
    return vi.name, [d.dim_value for d in vi.type.tensor_type.shape.dim]


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _assert_matches(y_file: Path, expected: list[np.ndarray]) -> None:
    with np.load(y_file) as y:
        assert len(y.files) == len(expected)
        for name, want in zip(y.files, expected):
            got = y[name]
            assert got.shape == want.shape and got.dtype == want.dtype, name
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)


def small_cnn(path: Path) -> onnx.ModelProto:
    """x (1,3,16,16) -> conv3x3+BN+relu -> maxpool 2x2 -> conv3x3 + residual add -> relu ->
    global avg pool -> flatten -> gemm (8 -> 10): the op mix of the real networks, in small."""
    rng = np.random.default_rng(11)

    def t(name, shape, scale=0.5):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        t("w1", (8, 3, 3, 3)), t("b1", (8,)),
        t("g", (8,)), t("beta", (8,)), t("mean", (8,)),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float32), "var"),
        t("w2", (8, 8, 3, 3), 0.2), t("b2", (8,)),
        t("wf", (10, 8)), t("bf", (10,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


def _textual_path(model: onnx.ModelProto, model_file: Path, tmp_path: Path) -> None:
    """import -> taihu-opt -p taihu-lower -> taihu-run on the swsim file, vs onnxruntime."""
    name, shape = _graph_input(model)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    np.savez(tmp_path / "x.npz", **{name: x})
    graph_file, lowered, y_file = tmp_path / "in.mlir", tmp_path / "out.mlir", tmp_path / "y.npz"

    assert import_tool.main([str(model_file), "-o", str(graph_file)]) == 0
    assert opt_tool.main(["-p", "taihu-lower", str(graph_file), "-o", str(lowered)]) == 0
    text = lowered.read_text()
    # a self-contained swsim module: the machine, the kernels, the io globals and the weights
    assert "swsim.target" in text and "sw.kernel" in text and "dialect_resources" in text
    assert not re.search(r"^\s*(%\S+ = )?\"?graph\.", text, re.M)  # no graph-level op left
    assert run_tool.main([str(lowered), "--inputs", str(tmp_path / "x.npz"), "--output", str(y_file),
                          "--quiet"]) == 0
    _assert_matches(y_file, _onnxruntime(model, {name: x}))


def test_textual_pipeline_small_cnn(tmp_path):
    model = small_cnn(tmp_path / "small_cnn.onnx")
    _textual_path(model, tmp_path / "small_cnn.onnx", tmp_path)


@pytest.mark.slow
def test_textual_pipeline_resnet50(tmp_path):
    model = randomize_weights(onnx.load(str(run_tool.example_path("resnet50"))), seed=0)
    onnx.save(model, tmp_path / "resnet50.onnx")
    _textual_path(model, tmp_path / "resnet50.onnx", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", NETWORKS)
def test_network_random_weights_check(name, tmp_path, capsys):
    """``taihu-run --example NAME --random-weights 0 --check`` exits 0; its outputs match
    onnxruntime here too, and the report covers every kernel with cycles."""
    model = randomize_weights(onnx.load(str(run_tool.example_path(name))), seed=0)
    in_name, shape = _graph_input(model)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    np.savez(tmp_path / "x.npz", **{in_name: x})
    code = run_tool.main(["--example", name, "--random-weights", "0", "--check", "--quiet",
                          "--inputs", str(tmp_path / "x.npz"), "--output", str(tmp_path / "y.npz"),
                          "--report", str(tmp_path / "r.json")])
    out, err = capsys.readouterr()
    assert code == 0, err
    _assert_matches(tmp_path / "y.npz", _onnxruntime(model, {in_name: x}))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["total_cycles"] > 0
    assert report["kernels"] and all(k["cycles"] > 0 for k in report["kernels"])
