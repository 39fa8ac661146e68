"""Regression tests of the cases the fuzz harness found (issue 15): each is one bad input that
once crashed a tool (a catch-all "internal error", a traceback, a hang or a partial output) and
now gets a located diagnostic (or runs). Each case runs through the harness invariant and checks
the diagnostic's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from taihu.test.fuzz.harness import assert_ok, run_main, tool_mains


def run_text(tmp_path: Path, tool: str, text: str | bytes, *argv: str, outputs: tuple[str, ...] = ()):
    src = tmp_path / "in.mlir"
    src.write_bytes(text if isinstance(text, bytes) else text.encode())
    outs = [tmp_path / o for o in outputs]
    flags = []
    for o in outs:
        flags += (["-o", o] if tool == "taihu-opt" else ["--output" if o.suffix == ".npz" else "--report", o])
    outcome = run_main(tool_mains()[tool], [src, *argv, *flags], outs)
    assert_ok(outcome)
    return outcome


# --------------------------------------------------------------------------------------------
# parsing: attribute constructors' ValueError/OverflowError, forward references, binary input

PARSE_CASES = {
    "i64 overflow in a tile.move size": (
        """func.func @f(%x: memref<64x64xf32>) {
  tile.kernel "k" (%a = %x : memref<64x64xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf32, rc>
    %c0 = arith.constant 0 : index
    tile.move %a[%c0, %c0] sizes [18446744073709551616, 64] -> %t : memref<64x64xf32> -> !tile.buf<64x64xf32, rc>
  }
  func.return
}
""", "in.mlir:5:", "Integer value 18446744073709551616 is out of range for type i64"),
    "i64 overflow in a loop.dma_start size": (
        """func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 1000000000000000000000000000000] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64>
  }
  func.return
}
""", "in.mlir:5:", "is out of range for type i64"),
    "an f16 constant too large": (
        """func.func @f() -> tensor<2xf16> {
  %3 = graph.constant dense<[1.5, 1.0e+308]> : tensor<2xf16>
  func.return %3 : tensor<2xf16>
}
""", "in.mlir:", "float too large"),
    "a value used before its definition": (
        """func.func @main(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %v = graph.reshape %r : tensor<2x3xf32> -> tensor<6xf32>
  %r = graph.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %v : tensor<6xf32>
}
""", "in.mlir:2:22", "%r of 'graph.reshape' is used before its definition (by 'graph.relu')"),
    "a loop variable used outside its loop": (
        """func.func @f(%x: memref<64x64xf32>) {
  tile.kernel "k" (%a = %x : memref<64x64xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf32, cpe>
    tile.move %a[%k, %k] sizes [64, 64] -> %t : memref<64x64xf32> -> !tile.buf<64x64xf32, cpe>
    tile.for %k = 0 to 64 step 64 {
      tile.map relu ins(%t : !tile.buf<64x64xf32, cpe>) out(%t : !tile.buf<64x64xf32, cpe>)
    }
  }
  func.return
}
""", "in.mlir:4:18", "%k of 'tile.move' is used outside the region that defines it (by 'tile.for')"),
    "a condition defined only inside its scf.if": (
        """sw.kernel @k(%a: i64) {
  %id = sw.cpe_id
  %c10 = arith.constant 10 : i64
  scf.if %ne {
    %ne = arith.cmpi ne, %id, %c10 : i64
  }
}
""", "in.mlir:4:10", "%ne of 'scf.if' is used but defined only in a nested region"),
    "a binary file": (b"\xff\xfe\x00 func.func", "in.mlir", "not a text MLIR file"),
}


@pytest.mark.parametrize("tool", ["taihu-opt", "taihu-run"])
@pytest.mark.parametrize("case", sorted(PARSE_CASES))
def test_parse_errors_are_located(tmp_path: Path, tool: str, case: str) -> None:
    text, where, what = PARSE_CASES[case]
    outcome = run_text(tmp_path, tool, text, outputs=("out.mlir",) if tool == "taihu-opt" else ("y.npz",))
    assert outcome.status == 1
    assert where in outcome.err and what in outcome.err, outcome.err


def test_a_forward_reference_across_blocks_is_still_accepted(tmp_path: Path) -> None:
    text = """func.func @f(%c: i1) -> i32 {
  cf.cond_br %c, ^a, ^b
^a:
  cf.br ^b
^b:
  %x = arith.constant 1 : i32
  func.return %x : i32
}
"""
    assert run_text(tmp_path, "taihu-opt", text).status == 0


# --------------------------------------------------------------------------------------------
# the graph reference


def test_lrn_with_a_huge_size_runs_on_the_reference(tmp_path: Path) -> None:
    """``graph.lrn {size = 10^12}`` padded the input by 10^12 channels (MemoryError) and looped
    10^12 times: the window is clipped to the channels (the rest adds zeros)."""
    import numpy as np

    from taihu.backends.reference.kernels import lrn

    text = """func.func @main(%a: tensor<1x4x2x2xf32> {graph.name = "a"}) -> (tensor<1x4x2x2xf32> {graph.name = "y"}) {
  %0 = graph.lrn %a {size = 1000000000000 : i64} : tensor<1x4x2x2xf32> -> tensor<1x4x2x2xf32>
  func.return %0 : tensor<1x4x2x2xf32>
}
"""
    assert run_text(tmp_path, "taihu-run", text, "--level", "graph", "--quiet", outputs=("y.npz",)).status == 0
    x = np.random.default_rng(0).standard_normal((1, 4, 2, 2)).astype(np.float32)
    for size in (1, 3, 4, 7, 9, 100):  # beyond 2c-1 the window covers every channel: same sums
        ref = x / (1.0 + 1e-4 / size * np.stack(
            [np.sum(x[:, max(0, c - (size - 1) // 2): c + size // 2 + 1] ** 2, axis=1) for c in range(4)],
            axis=1)) ** 0.75
        np.testing.assert_allclose(lrn(x, size=size), ref, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# options

ROOT = Path(__file__).resolve().parents[2]
GRAPH = ROOT / "examples" / "graph" / "small_cnn.mlir"
SW = ROOT / "examples" / "sw" / "rlc_p2p.mlir"


@pytest.mark.parametrize(("spec", "expected"), [
    ("convert-tile-to-loop{double-buffer=banana}", "convert-tile-to-loop: option double-buffer: expected true or false, got banana"),
    ("taihu-lower{double-buffer=banana}", "convert-tile-to-loop: option double-buffer: expected true or false, got banana"),
    ("taihu-lower{ldm-budget=-1}", "graph-schedule: ldm-budget must be >= 0 bytes, got -1"),
    ("tile-split{loop=1}", "tile-split: option loop: expected a string, got 1"),
    ("set-target{machine=1}", "set-target: option machine: expected a string, got 1"),
    ("convert-graph-to-tile{ldm-budget=banana}", "convert-graph-to-tile: option ldm-budget: expected an integer, got banana"),
])
def test_bad_pass_option_values(tmp_path: Path, spec: str, expected: str) -> None:
    out = tmp_path / "out.mlir"
    outcome = run_main(tool_mains()["taihu-opt"], [GRAPH, "-p", spec, "-o", out], [out])
    assert_ok(outcome)
    assert outcome.status == 1 and f"taihu-opt: error: {expected}" in outcome.err, outcome.err


def test_bad_option_value_through_taihu_run(tmp_path: Path) -> None:
    out = tmp_path / "y.npz"
    outcome = run_main(tool_mains()["taihu-run"], [GRAPH, "--option", "double-buffer=banana", "--output", out], [out])
    assert_ok(outcome)
    assert "option double-buffer: expected true or false, got banana" in outcome.err


@pytest.mark.parametrize("tool", ["taihu-run", "taihu-import"])
@pytest.mark.parametrize("value", ["-1", "18446744073709551616", "x"])
def test_negative_or_huge_seeds_are_usage_errors(tmp_path: Path, tool: str, value: str) -> None:
    from taihu.test.fuzz.mutate import base_model

    model = tmp_path / "m.onnx"
    model.write_bytes(base_model().SerializeToString())
    flag = "--randomize-weights" if tool == "taihu-import" else "--seed"
    outcome = run_main(tool_mains()[tool], [model, flag, value])
    assert_ok(outcome)
    assert outcome.status == 2 and f"argument {flag}: expected an integer" in outcome.err, outcome.err


@pytest.mark.parametrize("array", ["str", "complex"])
def test_non_numeric_inputs_of_an_sw_program(tmp_path: Path, array: str) -> None:
    import numpy as np

    inputs = tmp_path / "x.npz"
    np.savez(inputs, IN=np.array(["a", "b", "c", "d"]) if array == "str" else np.ones(4, np.complex64))
    out = tmp_path / "y.npz"
    outcome = run_main(tool_mains()["taihu-run"], [SW, "--inputs", inputs, "--output", out], [out])
    assert_ok(outcome)
    assert "--inputs: input 'IN' has dtype" in outcome.err and "expected booleans, integers or floats" in outcome.err


# --------------------------------------------------------------------------------------------
# outputs all or nothing (item 5)


def test_a_run_failing_on_report_writes_no_output(tmp_path: Path) -> None:
    (tmp_path / "r.json").mkdir()
    out = tmp_path / "y.npz"
    outcome = run_main(tool_mains()["taihu-run"], [SW, "--quiet", "--output", out, "--report", tmp_path / "r.json"],
                       [out])
    assert_ok(outcome)
    assert outcome.status == 1 and "cannot write" in outcome.err and not out.exists()


def test_opt_checks_its_output_before_a_target_writes_files(tmp_path: Path) -> None:
    """``taihu-opt -t swsim-run{report=R} -o DIR``: -o was found unwritable only after the
    target had written R."""
    (tmp_path / "out").mkdir()
    report_path = tmp_path / "r.json"
    outcome = run_main(tool_mains()["taihu-opt"],
                       [SW, "-t", f'swsim-run{{report="{report_path}"}}', "-o", tmp_path / "out"], [report_path])
    assert_ok(outcome)
    assert outcome.status == 1 and "Is a directory" in outcome.err and not report_path.exists()


# --------------------------------------------------------------------------------------------
# graph: a zero batch (ZeroDivisionError in the model's planners)


def test_zero_batch_is_a_verifier_diagnostic(tmp_path: Path) -> None:
    from taihu.test.fuzz.mutate import base_model

    model = tmp_path / "m.onnx"
    model.write_bytes(base_model(0).SerializeToString())
    report_path = tmp_path / "r.json"
    outcome = run_main(tool_mains()["taihu-run"], [model, "--timing-only", "--report", report_path], [report_path])
    assert_ok(outcome)
    assert "graph.conv2d: operand #0 has the zero-size shape [0, 3, 8, 8]: zero-size tensors are not supported" \
        in outcome.err
    text = GRAPH.read_text().replace("tensor<1x", "tensor<0x")
    outcome = run_text(tmp_path, "taihu-opt", text, "-p", "taihu-lower", outputs=("out.mlir",))
    assert "zero-size tensors are not supported" in outcome.err


# --------------------------------------------------------------------------------------------
# the simulator: refused up front or at the op, never an exception or a hang

HOST = """
func.func @main() {{
  %in = sw.global_addr @IN
  {host}
  func.return
}}
"""


def sim_program(kernel_body: str, host: str = "sw.spawn @k(%in)\n  sw.join", global_type: str = "tensor<64xf64>") -> str:
    return (f"sw.global @IN : {global_type} io input\n"
            f"sw.kernel @k(%in: i64) {{\n{kernel_body}\n}}\n" + HOST.format(host=host))


SIM_CASES = {
    "join without spawn": (sim_program("  %id = sw.cpe_id", host="sw.join"),
                           "sw.join: no sw.spawn before it in the host program"),
    "a second join": (sim_program("  %id = sw.cpe_id", host="sw.spawn @k(%in)\n  sw.join\n  sw.join"),
                      "sw.join: no kernel is running (no sw.spawn since the last join)"),
    "integer division by zero": (sim_program("""  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %q = arith.divsi %id, %c0 : i64"""), "arith.divsi: integer division by zero"),
    "remainder by zero": (sim_program("""  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %q = arith.remui %id, %c0 : i64"""), "arith.remui: integer division by zero"),
    "a shift by 2^40": (sim_program("""  %id = sw.cpe_id
  %c = arith.constant 1099511627776 : i64
  %q = arith.shli %id, %c : i64"""), "arith.shli: shift amount 1099511627776 outside [0, 64)"),
    "a huge sw.global": (sim_program("  %id = sw.cpe_id", global_type="tensor<1000000000000xf64>"),
                         "allocation 'IN' of 8000000000000 bytes does not fit in main memory"),
    "a 10^9-trip micro-kernel": (sim_program("""  %buf = sw.ldm_alloc 4096
  sw.microkernel trip 1000000000 (%buf step 0) {
    sw.vldd r0, 0(p0)
    sw.vmad r0, r0, r1
  }"""), "kernel @k: sw.microkernel trip 1000000000 x 2 instructions exceeds the simulator's bound"),
    "an scf.for of 10^9 iterations": (sim_program("""  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000000000 : index
  scf.for %i = %c0 to %n step %c1 {
    sw.sync
  }"""), "kernel @k: scf.for from 0 to 1000000000 step 1 runs 1000000000 iterations"),
    "nested loops of 2^20 x 2^20 iterations": (sim_program("""  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1048576 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      sw.sync
    }
  }"""), "operations (its heaviest scf.for nest runs 1,048,576 x 1,048,576 iterations), more than the "
         "simulator's bound of 1,073,741,824 per launch"),
    "an scf.for with step 0": (sim_program("""  %c0 = arith.constant 0 : index
  %n = arith.constant 4 : index
  scf.for %i = %c0 to %n step %c0 {
    sw.sync
  }"""), "kernel @k: scf.for with step 0: the step must be > 0"),
}


@pytest.mark.parametrize("timing_only", [False, True])
@pytest.mark.parametrize("case", sorted(SIM_CASES))
def test_simulator_refuses_with_a_diagnostic(tmp_path: Path, case: str, timing_only: bool) -> None:
    text, expected = SIM_CASES[case]
    flags = ["--timing-only"] if timing_only else []
    outcome = run_text(tmp_path, "taihu-run", text, "--quiet", *flags, outputs=("r.json",))
    assert outcome.status == 1 and expected in outcome.err, outcome.err


# --------------------------------------------------------------------------------------------
# machine files (validated at load since 848b7f2; here through the tools, under the harness)

SHIPPED = ROOT / "target" / "configs" / "sw26010.toml"
KLOOP = ROOT / "examples" / "sw" / "kloop_listing41.mlir"


def _machine_variant(old: str, new: str) -> bytes:
    text = SHIPPED.read_text()
    assert old in text
    return text.replace(old, new, 1).encode()


MACHINE_CASES = {
    "n_regs = 1": (_machine_variant("n_regs = 32 ", "n_regs = 1 "), "key 'n_regs'"),
    "dma_latency = inf": (_machine_variant("dma_latency = 200 ", "dma_latency = inf "), "key 'dma_latency'"),
    "dma_latency = 2^63": (_machine_variant("dma_latency = 200 ", "dma_latency = 9223372036854775808 "),
                           "key 'dma_latency'"),
    "a binary file": (b"\x00\x01\x02" + SHIPPED.read_bytes()[:100], "binary file"),
    "vmad missing from the table": (_machine_variant('vmad = { pipes = "P0", latency = "lat_fp" }', ""),
                                    "key 'instructions.vmad': missing"),
    "a latency of 10^12 cycles": (_machine_variant('vmad = { pipes = "P0", latency = "lat_fp" }',
                                                   'vmad = { pipes = "P0", latency = 1000000000000 }'),
                                  "key 'instructions.vmad.latency'"),
}


@pytest.mark.parametrize("case", sorted(MACHINE_CASES))
def test_bad_machine_files_through_taihu_run(tmp_path: Path, case: str) -> None:
    content, expected = MACHINE_CASES[case]
    machine = tmp_path / "m.toml"
    machine.write_bytes(content)
    report_path = tmp_path / "r.json"
    outcome = run_main(tool_mains()["taihu-run"], [KLOOP, "--machine", machine, "--report", report_path],
                       [report_path])
    assert_ok(outcome)
    assert outcome.status == 1 and expected in outcome.err, outcome.err


def test_the_largest_latency_simulates_in_bounded_time(tmp_path: Path) -> None:
    """A latency of 10000 cycles (the bound) on every vmad of the k-loop: the issue loop does not
    step through the stalls one cycle at a time (the harness bounds the case's wall time)."""
    machine = tmp_path / "m.toml"
    machine.write_bytes(_machine_variant('vmad = { pipes = "P0", latency = "lat_fp" }',
                                         'vmad = { pipes = "P0", latency = 10000 }'))
    report_path = tmp_path / "r.json"
    outcome = run_main(tool_mains()["taihu-run"], [KLOOP, "--quiet", "--machine", machine, "--report", report_path],
                       [report_path], seconds=20)
    assert_ok(outcome)
    assert outcome.status == 0


def test_an_ldm_budget_no_blocking_fits_is_a_diagnostic(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    outcome = run_main(tool_mains()["taihu-opt"], [GRAPH, "-p", "convert-graph-to-tile{ldm-budget=1}", "-o", out], [out])
    assert_ok(outcome)
    assert "convert-graph-to-tile: no GEMM blocking of the explicit convolution" in outcome.err, outcome.err


TILE_FOR = """func.func @f(%X: memref<64x64xf32>) {{
  tile.kernel "k" (%x = %X : memref<64x64xf32>) {{
    %t = tile.alloc : !tile.buf<64x64xf32, rc>
    %c0 = arith.constant 0 : index
    tile.for %i = 0 to {ub} step {step} {{
      tile.move %x[%i, %c0] sizes [64, 64] pad 0.0 -> %t : memref<64x64xf32> -> !tile.buf<64x64xf32, rc>
    }}
  }}
  func.return
}}
"""


@pytest.mark.parametrize(("ub", "step", "expected"), [
    (2147483648, 1, "tile.for: 2147483648 iterations (0 to 2147483648 step 1), more than 1048576"),  # MemoryError
    (4, 0, "tile.for: step must be > 0, got 0"),  # ZeroDivisionError in a body op's verifier
])
def test_tile_for_bounds(tmp_path: Path, ub: int, step: int, expected: str) -> None:
    outcome = run_text(tmp_path, "taihu-opt", TILE_FOR.format(ub=ub, step=step), "-p", "convert-tile-to-loop",
                       outputs=("out.mlir",))
    assert outcome.status == 1 and expected in outcome.err, outcome.err


@pytest.mark.parametrize("level", ["graph", "swsim"])
def test_an_input_larger_than_main_memory_is_refused_before_drawing_it(tmp_path: Path, level: str) -> None:
    """A batch of 2^31 (3 TiB of random input values: MemoryError while drawing them)."""
    from taihu.test.fuzz.mutate import base_model

    m = base_model(1)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2**31
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 2**31
    model = tmp_path / "m.onnx"
    model.write_bytes(m.SerializeToString())
    out = tmp_path / "y.npz"
    outcome = run_main(tool_mains()["taihu-run"], [model, "--level", level, "--output", out], [out])
    assert_ok(outcome)
    assert "input 'x' of shape [2147483648, 3, 8, 8] holds 1649267441664 bytes, more than the 34359738368 bytes " \
           "of main memory" in outcome.err, outcome.err


def test_a_host_program_without_a_body(tmp_path: Path) -> None:
    text = "sw.kernel @k(%a: i64) {\n}\nfunc.func @main() {\n}\n"
    outcome = run_text(tmp_path, "taihu-run", text, "--timing-only", outputs=("r.json",))
    assert "func.func @main (the MPE host program) must have a body of one block, it has 0" in outcome.err


@pytest.mark.parametrize("tool", ["taihu-opt", "taihu-run"])
def test_verifier_diagnostics_name_the_position_of_the_op(tmp_path: Path, tool: str) -> None:
    """An op of the input that does not verify is named with its file:line:col (SourceMap)."""
    text, _ = SIM_CASES["join without spawn"]
    line = text.splitlines().index("  sw.join") + 1
    outcome = run_text(tmp_path, tool, text, outputs=("out.mlir",) if tool == "taihu-opt" else ())
    assert f"in.mlir:{line}:3: sw.join: no sw.spawn before it" in outcome.err, outcome.err
