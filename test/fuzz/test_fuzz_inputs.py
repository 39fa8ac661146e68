"""Fuzz: malformed machine files (``--machine``, ``sw-to-swsim{machine=...}``), malformed ONNX
models (``taihu-import``, ``taihu-run`` at the graph and swsim levels) and abused command-line
options of ``taihu-opt`` / ``taihu-run``, pass options (``taihu-lower`` and every registered
pass) and ``swsim-run`` target options: exit 0 or a diagnostic, never a catch-all, a hang or a
partial output (test/fuzz/harness.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from taihu.test.fuzz import profiles
from taihu.test.fuzz.harness import assert_ok, run_main, tool_mains
from taihu.test.fuzz.mutate import ROOT, machine_mutants, onnx_mutants

EXAMPLES = ROOT / "examples"
#: programs a machine file is tried on: DMA, a micro-kernel (the instruction table), RLC
MACHINE_PROGRAMS = ("sw/dma_contiguous.mlir", "sw/kloop_listing41.mlir", "sw/rlc_p2p.mlir")


def check_machine(name: str, content: bytes, applied: list[str], data: st.DataObject) -> None:
    note(f"machine {name}, mutations {applied}")
    mains = tool_mains()
    with tempfile.TemporaryDirectory() as d:
        machine = Path(d) / "m.toml"
        machine.write_bytes(content)
        program = EXAMPLES / data.draw(st.sampled_from(MACHINE_PROGRAMS), label="program")
        how = data.draw(st.sampled_from(("run", "run-timing", "opt")), label="tool")
        report = Path(d) / "r.json"
        if how == "opt":
            out = Path(d) / "out.mlir"
            outcome = run_main(mains["taihu-opt"], [program, "-p", f"sw-to-swsim{{machine=\"{machine}\"}}", "-o", out],
                               [out])
        else:
            argv = [program, "--quiet", "--machine", machine, "--report", report]
            outcome = run_main(mains["taihu-run"], argv + (["--timing-only"] if how == "run-timing" else []), [report])
        assert_ok(outcome, f"machine {name}, mutations {applied}\n--- file ---\n{content[:3000]!r}")


@profiles.default(150)
@given(machine_mutants(), st.data())
def test_machine_mutants(mutant, data) -> None:
    check_machine(*mutant, data)


@pytest.mark.fuzz
@profiles.long()
@given(machine_mutants(), st.data())
def test_machine_mutants_long(mutant, data) -> None:
    check_machine(*mutant, data)


def check_onnx(content: bytes, applied: list[str], data: st.DataObject) -> None:
    note(f"onnx mutations {applied}")
    mains = tool_mains()
    with tempfile.TemporaryDirectory() as d:
        model = Path(d) / "m.onnx"
        model.write_bytes(content)
        how = data.draw(st.sampled_from(("import", "run-graph", "run-timing")), label="tool")
        if how == "import":
            out = Path(d) / "m.mlir"
            outcome = run_main(mains["taihu-import"], [model, "-o", out], [out])
        elif how == "run-graph":
            out = Path(d) / "y.npz"
            outcome = run_main(mains["taihu-run"], [model, "--quiet", "--level", "graph", "--output", out], [out])
        else:
            out = Path(d) / "r.json"
            outcome = run_main(mains["taihu-run"], [model, "--quiet", "--timing-only", "--report", out], [out])
        assert_ok(outcome, f"onnx mutations {applied}")


@profiles.default(150)
@given(onnx_mutants(), st.data())
def test_onnx_mutants(mutant, data) -> None:
    check_onnx(*mutant, data)


@pytest.mark.fuzz
@profiles.long()
@given(onnx_mutants(), st.data())
def test_onnx_mutants_long(mutant, data) -> None:
    check_onnx(*mutant, data)


# --------------------------------------------------------------------------------------------
# command-line options

BAD_VALUES = ("banana", "-1", "0", "1", "true", "2147483648", "9223372036854775808", "1e12", "nan", "",
              "[1]", "\"x\"", "-0", "99999999999999999999")
GRAPH = EXAMPLES / "graph" / "small_cnn.mlir"
SW = EXAMPLES / "sw" / "dma_contiguous.mlir"


@st.composite
def pass_options(draw) -> str:
    """``PASS{key=value}`` of a registered pass with one of its options (or a made-up one) set to
    a boundary value."""
    import dataclasses

    from taihu.tools.universe import get_all_passes

    passes = get_all_passes()
    name = draw(st.sampled_from(sorted(passes)))
    keys = [f.name.replace("_", "-") for f in dataclasses.fields(passes[name]())] + ["no-such-option"]
    if name == "taihu-lower":  # options of every stage pass are accepted
        keys += ["double-buffer", "ldm-budget", "conv-algorithm", "max-elements", "machine", "stop-after",
                 "max-unrolled-dmas", "fuse", "dedup-kernels", "strategy", "tuning", "records"]
    key = draw(st.sampled_from(keys))
    return f"{name}{{{key}={draw(st.sampled_from(BAD_VALUES))}}}"


@st.composite
def npz_inputs(draw) -> dict[str, np.ndarray]:
    """An ``--inputs`` archive: right or wrong names, string / object-free odd dtypes, wrong
    shapes, zero-size or scalar arrays."""
    name = draw(st.sampled_from(("image", "arg0", "IN", "arg1", "nope")))
    kind = draw(st.sampled_from(("str", "bool", "int64", "complex", "f64", "f32-shape", "empty", "scalar", "f16")))
    value = {
        "str": np.array(["a", "b"]), "bool": np.ones((1, 3, 8, 8), bool), "int64": np.ones((1, 3, 8, 8), np.int64),
        "complex": np.ones((1, 3, 8, 8), np.complex64), "f64": np.ones((1, 3, 8, 8)),
        "f32-shape": np.ones((2, 2), np.float32), "empty": np.zeros((0,), np.float32),
        "scalar": np.float32(1.0), "f16": np.ones((1, 3, 8, 8), np.float16),
    }[kind]
    return {name: value}


@st.composite
def run_options(draw) -> tuple[list[str], dict[str, np.ndarray] | None]:
    """``taihu-run`` flags with abused values (seed, option, machine, inputs, level, tuning)."""
    argv: list[str] = []
    inputs = None
    for _ in range(draw(st.integers(1, 3))):
        flag = draw(st.sampled_from(("--seed", "--option", "--machine", "--inputs", "--level", "--random-weights",
                                     "--tuning", "--timing-only", "--verify")))
        if flag == "--seed" or flag == "--random-weights":
            argv += [flag, draw(st.sampled_from(("-1", "0", "18446744073709551616", "banana", "1e3", "-9223372036854775809")))]
        elif flag == "--option":
            key = draw(st.sampled_from(("double-buffer", "ldm-budget", "conv-algorithm", "max-elements", "stop-after",
                                        "machine", "nope", "=", "")))
            argv += [flag, f"{key}={draw(st.sampled_from(BAD_VALUES))}"]
        elif flag == "--machine":
            argv += [flag, draw(st.sampled_from(("sw26010", "nope", "", ".", "/", "sw26010pro")))]
        elif flag == "--inputs":
            inputs = draw(npz_inputs())
        elif flag == "--level":
            argv += [flag, draw(st.sampled_from(("graph", "swsim", "tile")))]
        elif flag == "--tuning":
            argv += [flag, draw(st.sampled_from((".", "nope.json")))]
        else:
            argv.append(flag)
    return argv, inputs


def check_cli(tool: str, argv: list, inputs: dict[str, np.ndarray] | None) -> None:
    note(f"{tool} {argv} inputs={inputs and {k: (v.dtype, v.shape) for k, v in inputs.items()}}")
    with tempfile.TemporaryDirectory() as d:
        outputs = []
        argv = list(argv)
        if inputs is not None:
            path = Path(d) / "x.npz"
            np.savez(path, **inputs)
            argv += ["--inputs", path]
        if tool == "taihu-run":
            out = Path(d) / "r.json"
            argv += ["--quiet", "--report", out]
            outputs.append(out)
        else:
            out = Path(d) / "out.mlir"
            argv += ["-o", out]
            outputs.append(out)
        assert_ok(run_main(tool_mains()[tool], argv, outputs), f"{tool} {argv}")


@st.composite
def target_options(draw) -> str:
    """``swsim-run{key=value}`` (taihu-opt's simulation target) with abused values."""
    key = draw(st.sampled_from(("seed", "machine", "timing-only", "inputs", "report", "output", "trace", "nope")))
    return f"swsim-run{{{key}={draw(st.sampled_from(BAD_VALUES + ('sw26010', '.', '/')))}}}"


@st.composite
def cli_cases(draw) -> tuple[str, list, dict[str, np.ndarray] | None]:
    which = draw(st.sampled_from(("pass", "pass", "target", "run", "run")))
    if which == "pass":
        return "taihu-opt", [draw(st.sampled_from((GRAPH, SW))), "-p", draw(pass_options())], None
    if which == "target":
        return "taihu-opt", [SW, "-t", draw(target_options())], None
    argv, inputs = draw(run_options())
    return "taihu-run", [draw(st.sampled_from((GRAPH, SW))), *argv], inputs


@profiles.default(200)
@given(cli_cases())
def test_cli_options(case) -> None:
    check_cli(*case)


@pytest.mark.fuzz
@profiles.long()
@given(cli_cases())
def test_cli_options_long(case) -> None:
    check_cli(*case)
