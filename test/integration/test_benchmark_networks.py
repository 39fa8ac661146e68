"""benchmarks/networks.py on small ONNX files: a network that imports and matches onnxruntime,
one the importer refuses (its row carries the error, the run goes on), the JSON rows."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from taihu.benchmarks import networks as N


def _save(path, nodes, inits, elem=TensorProto.FLOAT):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", elem, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)


def test_networks_table_and_json(tmp_path, capsys) -> None:
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    good, bad = tmp_path / "good.onnx", tmp_path / "bad.onnx"
    _save(good, [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                 helper.make_node("HardSwish", ["c"], ["y"])], [w])
    _save(bad, [helper.make_node("Celu", ["x"], ["y"], name="c0")], [])
    out = tmp_path / "rows.json"
    assert N.main([str(good), str(bad), "--json", str(out)]) == 0
    rows = {r["network"]: r for r in json.loads(out.read_text())}
    g, b = rows[str(good)], rows[str(bad)]
    assert g["imported"] and g["matches"] and g["cycles"] > 0 and 0 < g["useful_percent_of_peak"] < 100
    assert g["max_abs_err"] < 1e-4 and g["error"] is None
    assert not b["imported"] and "Celu node 'c0': unsupported op" in b["error"]
    text = capsys.readouterr().out
    assert "1/2 imported, 1 matched onnxruntime" in text


def test_timing_only_has_no_comparison(tmp_path) -> None:
    path = tmp_path / "relu.onnx"
    _save(path, [helper.make_node("Relu", ["x"], ["y"])], [])
    out = tmp_path / "rows.json"
    assert N.main([str(path), "--timing-only", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["imported"] and row["matches"] is None and row["cycles"] > 0
