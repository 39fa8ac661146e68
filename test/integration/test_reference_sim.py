"""``taihu-run --reference-sim`` (issue 16 item 2): the event-by-event path -- one interpreter per
CPE, no lockstep cohorts, no launch memo -- gives byte-identical reports, traces and outputs to
the default fast path, on every ``examples/sw`` program, on a lowered convolution of every
algorithm and (``slow``) on two whole networks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from taihu.tools import run as run_tool

ROOT = Path(__file__).resolve().parents[2]
SW = sorted(p for p in (ROOT / "examples" / "sw").glob("*.mlir") if p.name != "deadlock_getr.mlir")

CONV = """
func.func @main(%x: tensor<1x64x10x10xf32> {graph.name = "x"}) -> (tensor<1x64x10x10xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.01> : tensor<64x64x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<64xf32>
  %y = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x10x10xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x10x10xf32>
  %r = graph.relu %y : tensor<1x64x10x10xf32> -> tensor<1x64x10x10xf32>
  func.return %r : tensor<1x64x10x10xf32>
}
"""
DEPTHWISE = """
func.func @main(%x: tensor<1x64x10x10xf32> {graph.name = "x"}) -> (tensor<1x64x10x10xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.1> : tensor<64x1x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, group = 64 : i64} : (tensor<1x64x10x10xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x10x10xf32>
  func.return %y : tensor<1x64x10x10xf32>
}
"""


def _both(tmp_path: Path, src: str | os.PathLike[str], *extra: str, numerics: bool = True) -> None:
    """Run ``src`` both ways; the report, the trace and (with numerics) the outputs must be equal."""
    files = {}
    for tag, flags in (("fast", []), ("ref", ["--reference-sim"])):
        out = [] if not numerics else ["--output", str(tmp_path / f"{tag}.npz")]
        argv = [str(src), "--quiet", "--report", str(tmp_path / f"{tag}.json"), "--trace",
                str(tmp_path / f"{tag}.trace.json"), *out, *flags, *extra]
        if not numerics:
            argv.append("--timing-only")
        assert run_tool.main(argv) == 0, argv
        files[tag] = tag
    assert (tmp_path / "fast.json").read_bytes() == (tmp_path / "ref.json").read_bytes()
    assert (tmp_path / "fast.trace.json").read_bytes() == (tmp_path / "ref.trace.json").read_bytes()
    if numerics:
        fast, ref = np.load(tmp_path / "fast.npz"), np.load(tmp_path / "ref.npz")
        assert sorted(fast.files) == sorted(ref.files)
        for k in fast.files:
            np.testing.assert_array_equal(fast[k], ref[k])


@pytest.mark.parametrize("program", SW, ids=lambda p: p.name)
def test_every_sw_example(tmp_path: Path, program: Path) -> None:
    _both(tmp_path, program)


@pytest.mark.parametrize("algorithm", ["im2col", "implicit", "winograd", "depthwise"])
def test_a_lowered_convolution_of_every_algorithm(tmp_path: Path, algorithm: str) -> None:
    src = tmp_path / "conv.mlir"
    src.write_text(DEPTHWISE if algorithm == "depthwise" else CONV)
    _both(tmp_path, src, "--option", f"conv-algorithm={algorithm}")


def test_the_small_cnn_and_its_timing_only_run(tmp_path: Path) -> None:
    _both(tmp_path, ROOT / "examples" / "graph" / "small_cnn.mlir")
    _both(tmp_path, ROOT / "examples" / "graph" / "small_cnn.mlir", numerics=False)


def test_reference_sim_excludes_workers(tmp_path: Path, capsys) -> None:
    src = ROOT / "examples" / "graph" / "small_cnn.mlir"
    assert run_tool.main([str(src), "--timing-only", "--reference-sim", "--workers", "2"]) == 1
    assert "--reference-sim simulates in this process, event by event: it excludes --workers" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("network", ["squeezenet", "alexnet"])
def test_whole_networks_timing_only(tmp_path: Path, network: str) -> None:
    """Reports equal on two whole networks (timing only, no trace: the per-CPE interpreter takes
    minutes on a network)."""
    for tag, flags in (("fast", []), ("ref", ["--reference-sim"])):
        assert run_tool.main(["--example", network, "--random-weights", "0", "--timing-only", "--quiet",
                              "--report", str(tmp_path / f"{tag}.json"), *flags]) == 0
    assert (tmp_path / "fast.json").read_bytes() == (tmp_path / "ref.json").read_bytes()
