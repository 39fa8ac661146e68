"""Fuzz: mutated ``.mlir`` programs of every level (graph, tile, loop, sw, swsim) through
``taihu-opt`` (the seed's own pass, or the next conversion) and ``taihu-run`` (reference,
lowering + simulation, timing only): exit 0 or a diagnostic (test/fuzz/harness.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from taihu.test.fuzz import profiles
from taihu.test.fuzz.harness import assert_ok, run_main, tool_mains
from taihu.test.fuzz.mutate import mlir_mutants, mutated_text

NEXT_PASS = {"graph": "taihu-lower", "tile": "convert-tile-to-loop", "loop": "convert-loop-to-sw",
             "sw": "sw-to-swsim"}


def check_mlir(seed, text: str, applied: list[str], data: st.DataObject) -> None:
    note(f"seed {seed.name} ({seed.level}), mutations {applied}")
    mains = tool_mains()
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.mlir"
        src.write_text(text)
        tools = ["opt"]
        if seed.level in ("sw", "swsim"):
            tools += ["run", "run-timing"]
        elif seed.level == "graph":
            tools += ["run-graph", "run-timing", "run"]
        tool = data.draw(st.sampled_from(tools), label="tool")
        if tool == "opt":
            passes = data.draw(st.sampled_from([p for p in (seed.passes, NEXT_PASS.get(seed.level)) if p] or [None]),
                               label="passes")
            if passes is not None and "{" in passes and data.draw(st.booleans(), label="mutate options"):
                passes, _ = data.draw(mutated_text(passes, max_mutations=1), label="options")
                passes = passes.strip()
            out = Path(d) / "out.mlir"
            argv = [src, "-o", out] + (["-p", passes] if passes else [])
            outcome = run_main(mains["taihu-opt"], argv, [out])
        else:
            report, output = Path(d) / "r.json", Path(d) / "y.npz"
            argv = [src, "--quiet"]
            outputs = []
            if tool == "run-graph":
                argv += ["--level", "graph", "--output", output]
                outputs = [output]
            elif tool == "run-timing":
                argv += ["--timing-only", "--report", report]
                outputs = [report]
            else:
                argv += ["--output", output, "--report", report]
                outputs = [output, report]
            outcome = run_main(mains["taihu-run"], argv, outputs)
        assert_ok(outcome, f"seed {seed.name} ({seed.level}), mutations {applied}\n--- mutant ---\n{text[:6000]}")


@profiles.default(800)
@given(mlir_mutants(), st.data())
def test_mlir_mutants(mutant, data) -> None:
    check_mlir(*mutant, data)


@pytest.mark.fuzz
@profiles.long()
@given(mlir_mutants(), st.data())
def test_mlir_mutants_long(mutant, data) -> None:
    check_mlir(*mutant, data)
