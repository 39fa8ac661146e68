"""``taihu-opt`` error contract: every failure is one ``taihu-opt: error:`` diagnostic, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from taihu.passes.graph.simplify import GraphSimplifyPass
from taihu.tools import opt

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "graph" / "small_cnn.mlir"


def test_a_crashing_pass_is_one_diagnostic_and_writes_nothing(monkeypatch, tmp_path, capsys) -> None:
    def boom(self, ctx, module) -> None:
        raise KeyError("no such value")

    monkeypatch.setattr(GraphSimplifyPass, "apply", boom)
    out = tmp_path / "out.mlir"
    assert opt.main([str(EXAMPLE), "-p", "graph-simplify", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("taihu-opt: error: internal error (KeyError): 'no such value'")
    assert "Traceback" not in captured.err + captured.out
    assert not out.exists()


@pytest.mark.parametrize("spec", ["graph-simplify{dce=true", "graph-fold-constants{max-elements=abc}", "nope"])
def test_bad_pipeline_spec_is_one_diagnostic(spec: str, capsys) -> None:
    assert opt.main([str(EXAMPLE), "-p", spec]) == 1
    err = capsys.readouterr().err
    assert err.startswith("taihu-opt: error: ") and "Traceback" not in err
