"""The ``swsim-run`` xDSL target from Python: options, the stream it writes to, its errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import DiagnosticException

from taihu.passes.pipelines import default_context
from taihu.tools.run import simulate_module
from taihu.tools.sim_target import SwsimRunTarget

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sw"


def _module(name: str):
    return Parser(default_context(), (EXAMPLES / name).read_text(), name).parse_module()


def test_options_are_taihu_runs_flags_and_round_trip() -> None:
    target = SwsimRunTarget.from_spec(parse_spec(
        'swsim-run{report="r.json" trace="t.json" timing-only=true inputs="x.npz" seed=4 machine=sw26010}'))
    assert target == SwsimRunTarget(report="r.json", trace="t.json", timing_only=True, inputs="x.npz",
                                    seed=4, machine="sw26010")
    assert SwsimRunTarget.from_spec(target.spec()) == target
    assert SwsimRunTarget.from_spec(parse_spec("swsim-run")) == SwsimRunTarget()


@pytest.mark.parametrize("spec, message", [
    ("swsim-run{speed=1}", "unknown option 'speed'"),
    ("swsim-run{seed=abc}", "option seed=abc: expected an integer >= 0"),
    ("swsim-run{seed=true}", "option seed=true: expected an integer >= 0"),
    ("swsim-run{timing-only=yes}", "option timing-only=yes: expected true or false"),
    ("swsim-run{report=3}", "option report=3: expected a quoted path"),
    ('swsim-run{timing-only=true output="y.npz"}', "cannot be combined with output"),
])
def test_bad_options_are_diagnostics(spec: str, message: str) -> None:
    with pytest.raises(DiagnosticException, match="^swsim-run: ") as info:
        SwsimRunTarget.from_spec(parse_spec(spec))
    assert message in str(info.value)


def test_emit_writes_the_table_to_its_stream_and_the_files(tmp_path, capsys) -> None:
    out = io.StringIO()
    report, output = tmp_path / "r.json", tmp_path / "y.npz"
    SwsimRunTarget(report=str(report), output=str(output), seed=5).emit(
        default_context(), _module("overlap.mlir"), out)
    assert capsys.readouterr().out == ""  # nothing on stdout: everything went to the stream
    text = out.getvalue().splitlines()
    written = json.loads(report.read_text())
    assert text[0] == (f"module on the simulated core group ({written['machine']}): "
                       f"{written['total_cycles']} cycles = {written['seconds'] * 1e3:.3f} ms")
    layers = [line.split()[0] for line in text[2:7]]
    assert layers == [k["name"] for k in written["kernels"]]
    assert text[7].split()[:5] == ["total", "(5", "layers)", "5", "kernels"]
    assert int(text[7].split()[5]) == written["total_cycles"]
    # the outputs are the simulator's on the same seed (taihu-run's simulate_module)
    expected = simulate_module(_module("overlap.mlir"), {}, seed=5).outputs
    with np.load(output) as saved:
        assert list(saved.files) == list(expected)
        for key in expected:
            np.testing.assert_array_equal(saved[key], expected[key])


def test_module_without_kernels_is_a_diagnostic_naming_its_level() -> None:
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = graph.relu %x : tensor<4xf32> -> tensor<4xf32>
      func.return %y : tensor<4xf32>
    }"""
    module = Parser(default_context(), text, "g.mlir").parse_module()
    with pytest.raises(DiagnosticException, match=r"graph level \(graph.relu\).*-p taihu-lower"):
        SwsimRunTarget().emit(default_context(), module, io.StringIO())


def test_unwritable_file_is_a_diagnostic_and_writes_nothing(tmp_path) -> None:
    out = io.StringIO()
    with pytest.raises(DiagnosticException, match="swsim-run: cannot write .*missing/r.json"):
        SwsimRunTarget(report=str(tmp_path / "missing" / "r.json")).emit(
            default_context(), _module("rlc_p2p.mlir"), out)
    assert out.getvalue() == ""
