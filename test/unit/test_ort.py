"""``taihu.tools.ort``: onnxruntime as an optional dependency. Without it, ``taihu-run --check``
on an ONNX model and ``benchmarks/end_to_end.py --check`` stop at once with the install hint;
with it, the helper runs a model."""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from taihu.tools import ort
from taihu.tools import run as run_tool


def _relu_model() -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.fixture()
def without_onnxruntime(monkeypatch):
    """``importlib.util.find_spec`` as if onnxruntime were not installed."""
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "onnxruntime" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_outputs_with_onnxruntime() -> None:
    assert ort.onnxruntime_available()
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    (name, y), = ort.onnxruntime_outputs(_relu_model(), {"x": x}).items()
    assert name == "y"
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_missing_onnxruntime_is_a_clear_error(without_onnxruntime) -> None:
    assert not ort.onnxruntime_available()
    with pytest.raises(ort.OnnxRuntimeMissing, match="pip install onnxruntime"):
        ort.inference_session(_relu_model())


def test_run_check_without_onnxruntime(tmp_path, capsys, without_onnxruntime) -> None:
    model = tmp_path / "relu.onnx"
    onnx.save(_relu_model(), model)
    code = run_tool.main([str(model), "--level", "graph", "--check", "--output", str(tmp_path / "y.npz")])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    assert err.strip() == "taihu-run: error: --check compares with onnxruntime: pip install onnxruntime"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["relu.onnx"]
    # without --check onnxruntime is not needed
    assert run_tool.main([str(model), "--level", "graph", "--quiet"]) == 0


def test_end_to_end_benchmark_check_without_onnxruntime(capsys, without_onnxruntime) -> None:
    from taihu.benchmarks import end_to_end

    with pytest.raises(SystemExit) as info:
        end_to_end.main(["--networks", "squeezenet", "--check"])
    assert info.value.code == 2
    assert "--check compares with onnxruntime: pip install onnxruntime" in capsys.readouterr().err
