"""``taihu-run`` end to end: sources, inputs, outputs, levels and one-line errors.

Most tests call ``taihu.tools.run.main(argv)`` in-process on small ONNX models built with
onnx.helper (fast); one runs the installed console script on a shipped light model.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from taihu.tools import run as run_tool

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def small_model(path: Path) -> Path:
    """x (1,2,5,5), z (1,3,3,3) -> y0 = softmax(flatten(maxpool(relu(conv(x, w, b))))), y1 = z*2 + z."""
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    two = numpy_helper.from_array(np.array([2.0], np.float32), "two")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Softmax", ["f"], ["y0"], axis=1),
        helper.make_node("Mul", ["z", "two"], ["m"]),
        helper.make_node("Add", ["m", "z"], ["y1"]),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 3, 3, 3]),
        ],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None), helper.make_tensor_value_info("y1", TensorProto.FLOAT, None)],
        [w, b, two],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    return small_model(tmp_path / "small.onnx")


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {
        "x": rng.standard_normal((1, 2, 5, 5)).astype(np.float32),
        "z": rng.standard_normal((1, 3, 3, 3)).astype(np.float32),
    }


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = run_tool.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 1
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("taihu-run: error: ")
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_onnx_with_inputs_and_output_matches_onnxruntime(model, tmp_path, capsys):
    np.savez(tmp_path / "x.npz", **inputs())
    code, out, err = run([model, "--level", "graph", "--inputs", tmp_path / "x.npz", "--output", tmp_path / "y.npz"], capsys)
    assert code == 0, err
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    expected = sess.run(None, inputs())
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "y.npz").stat().st_mode & 0o777 == 0o666 & ~umask
    with np.load(tmp_path / "y.npz") as y:
        assert y.files == ["y0", "y1"]  # output order, ONNX output names
        for name, e in zip(y.files, expected):
            np.testing.assert_allclose(y[name], e, rtol=1e-5, atol=1e-6)
            assert y[name].dtype == e.dtype
    # the table: one row per output with shape, dtype and checksums
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["y0"][1:3] == ["1x27", "float32"]  # 5x5 -> pool 2, ceil -> 3x3, 3 channels
    assert rows["y1"][1:3] == ["1x3x3x3", "float32"]
    s, l2 = run_tool.checksums(expected[1])
    assert float(rows["y1"][3]) == pytest.approx(s, rel=1e-5, abs=1e-5)
    assert float(rows["y1"][4]) == pytest.approx(l2, rel=1e-5)


def test_positional_input_names_and_random_fill(model, tmp_path, capsys):
    given = inputs()
    np.savez(tmp_path / "x.npz", arg1=given["z"])  # x is missing: random from the seed
    code, _, err = run([model, "--level", "graph", "--inputs", tmp_path / "x.npz", "--output", tmp_path / "a.npz", "--quiet"], capsys)
    assert code == 0, err
    with np.load(tmp_path / "a.npz") as a:
        np.testing.assert_allclose(a["y1"], 3 * given["z"], rtol=1e-6)
        y0 = a["y0"]
    # same seed, same random x; another seed, another x
    run([model, "--level", "graph", "--inputs", tmp_path / "x.npz", "--output", tmp_path / "b.npz", "--quiet"], capsys)
    run([model, "--level", "graph", "--inputs", tmp_path / "x.npz", "--output", tmp_path / "c.npz", "--quiet", "--seed", "5"], capsys)
    with np.load(tmp_path / "b.npz") as b, np.load(tmp_path / "c.npz") as c:
        np.testing.assert_array_equal(b["y0"], y0)
        assert not np.array_equal(c["y0"], y0)
    # the random input is the documented one: default_rng([seed, index]) standard normal
    x = np.random.default_rng([0, 0]).standard_normal((1, 2, 5, 5)).astype(np.float32)
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(y0, sess.run(["y0"], {"x": x, "z": given["z"]})[0], rtol=1e-5, atol=1e-6)


def test_quiet_prints_nothing(model, capsys):
    code, out, err = run([model, "--level", "graph", "--quiet"], capsys)
    assert (code, out, err) == (0, "", "")


def test_mlir_input_round_trips_through_taihu_import(model, tmp_path, capsys):
    from taihu.tools import importer

    mlir = tmp_path / "small.mlir"
    assert importer.main([str(model), "-o", str(mlir)]) == 0
    capsys.readouterr()
    np.savez(tmp_path / "x.npz", **inputs())
    assert run([model, "--level", "graph", "--inputs", tmp_path / "x.npz", "--output", tmp_path / "a.npz", "--quiet"], capsys)[0] == 0
    assert run([mlir, "--level", "graph", "--inputs", tmp_path / "x.npz", "--output", tmp_path / "b.npz", "--quiet"], capsys)[0] == 0
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        assert a.files == b.files
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize(
    "case, needles",
    [
        ("extra", ["unexpected input", "'nope'", "'x'"]),
        ("shape", ["input 'x'", "[1, 2, 4, 4]", "[1, 2, 5, 5]"]),
        ("dtype", ["input 'z'", "float64", "float32"]),
        ("twice", ["given twice"]),
    ],
)
def test_bad_inputs_are_one_line_errors_and_leave_no_output(model, tmp_path, capsys, case, needles):
    arrays = inputs()
    if case == "extra":
        arrays["nope"] = np.zeros(3, np.float32)
    elif case == "shape":
        arrays["x"] = np.zeros((1, 2, 4, 4), np.float32)
    elif case == "dtype":
        arrays["z"] = arrays["z"].astype(np.float64)
    else:
        arrays["arg0"] = arrays["x"]
    np.savez(tmp_path / "x.npz", **arrays)
    out_file = tmp_path / "y.npz"
    code, out, err = run([model, "--inputs", tmp_path / "x.npz", "--output", out_file], capsys)
    assert_one_line_error(code, out, err, *needles)
    assert not out_file.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".taihu")] == []


def test_existing_output_untouched_on_error(model, tmp_path, capsys):
    out_file = tmp_path / "y.npz"
    out_file.write_bytes(b"previous")
    code, out, err = run([model, "--inputs", tmp_path / "missing.npz", "--output", out_file], capsys)
    assert_one_line_error(code, out, err, "missing.npz", "no such file")
    assert out_file.read_bytes() == b"previous"


def test_source_errors(tmp_path, capsys):
    assert_one_line_error(*run([tmp_path / "none.onnx"], capsys), "no such file")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not a model")
    assert_one_line_error(*run([bad], capsys), "bad.onnx")
    not_npz = tmp_path / "x.npz"
    not_npz.write_text("hello")
    small = small_model(tmp_path / "m.onnx")
    assert_one_line_error(*run([small, "--inputs", not_npz], capsys), "x.npz", "not an .npz archive")
    not_npz.write_bytes(b"\x93NUMPY")  # a .npy header is not an archive either
    assert_one_line_error(*run([small, "--inputs", not_npz], capsys), "x.npz", "not an .npz archive")
    assert_one_line_error(*run(["--example", "lenet"], capsys), "unknown example", "resnet50")


def test_unsupported_onnx_op_is_one_line(tmp_path, capsys):
    graph = helper.make_graph(
        [helper.make_node("Celu", ["x"], ["y"], name="the_celu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "celu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    assert_one_line_error(*run([path], capsys), "Celu")


def test_mlir_errors(tmp_path, capsys):
    bad_syntax = tmp_path / "syntax.mlir"
    bad_syntax.write_text("func.func @main( {\n")
    code, out, err = run([bad_syntax], capsys)
    assert code == 1 and err.startswith("taihu-run: error: ") and "Traceback" not in err

    wrong_shape = tmp_path / "verify.mlir"
    wrong_shape.write_text(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<3x3xf32> {\n"
        "  %y = graph.relu %x : tensor<2x3xf32> -> tensor<3x3xf32>\n"
        "  func.return %y : tensor<3x3xf32>\n"
        "}\n"
    )
    code, out, err = run([wrong_shape], capsys)
    assert code == 1 and err.startswith("taihu-run: error: ") and "graph.relu" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "signature, needles",
    [
        ("tensor<?x3xf32>", ["argument 0 (arg0) of @main", "dynamic shape", "tensor<?x3xf32>"]),
        ("tensor<2x3xbf16>", ["argument 0 (arg0) of @main", "bf16"]),
    ],
)
def test_unrunnable_main_arguments_are_one_line_errors(tmp_path, capsys, signature, needles):
    src = tmp_path / "arg.mlir"
    src.write_text(f"func.func @main(%x: {signature}) -> {signature} {{\n  func.return %x : {signature}\n}}\n")
    assert_one_line_error(*run([src], capsys), *needles)


def test_positional_names_for_unnamed_mlir(tmp_path, capsys):
    src = tmp_path / "plain.mlir"
    src.write_text(
        "func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {\n"
        "  %y = graph.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
        "  func.return %y : tensor<2x3xf32>\n"
        "}\n"
    )
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2, 3], np.float32)
    np.savez(tmp_path / "in.npz", arg0=a, arg1=b)
    code, out, err = run([src, "--level", "graph", "--inputs", tmp_path / "in.npz", "--output", tmp_path / "o.npz"], capsys)
    assert code == 0, err
    with np.load(tmp_path / "o.npz") as o:
        assert o.files == ["out0"]
        np.testing.assert_array_equal(o["out0"], a - b)
    assert "out0" in out and "2x3" in out
    code, out, err = run([src, "--level", "graph"], capsys)
    assert code == 0 and "out0" in out


def test_swsim_level_dispatch(model, tmp_path, capsys):
    """``--level swsim`` lowers with taihu-lower and simulates: outputs agree with the reference."""
    code, out, err = run([model, "--level", "swsim", "--output", tmp_path / "sim.npz"], capsys)
    assert code == 0, err
    assert run([model, "--level", "graph", "--output", tmp_path / "ref.npz", "--quiet"], capsys)[0] == 0
    with np.load(tmp_path / "sim.npz") as sim, np.load(tmp_path / "ref.npz") as ref:
        assert sim.files == ref.files
        for k in ref.files:
            np.testing.assert_allclose(sim[k], ref[k], rtol=1e-4, atol=1e-5)


def test_console_script_light_squeezenet_matches_shipped_output(tmp_path):
    """The installed ``taihu-run`` on a shipped light model reproduces ``*_output_0.pb``."""
    exe = Path(sys.executable).parent / "taihu-run"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "taihu.tools.run"]
    out_file = tmp_path / "y.npz"
    proc = subprocess.run(
        [*cmd, "--example", "squeezenet", "--level", "graph", "--output", str(out_file)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "softmaxout_1" in proc.stdout and "1x1000x1x1" in proc.stdout
    expected = onnx.TensorProto()
    expected.ParseFromString((LIGHT / "light_squeezenet_output_0.pb").read_bytes())
    with np.load(out_file) as y:
        np.testing.assert_allclose(y["softmaxout_1"], numpy_helper.to_array(expected), rtol=1e-4, atol=1e-5)


# ---- issue 5: default level, --random-weights, --check, --plot, sw programs, errors ----------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_default_level_lowers_and_simulates(model, tmp_path, capsys):
    """Without --level an ONNX model goes through taihu-lower and the simulator: the per-layer
    table, a passing --check and outputs that agree with onnxruntime."""
    np.savez(tmp_path / "x.npz", **inputs())
    code, out, err = run([model, "--inputs", tmp_path / "x.npz", "--output", tmp_path / "sim.npz",
                          "--check"], capsys)
    assert code == 0, err
    assert "total (" in out and "bound" in out and "GFLOPS" in out
    assert "reference" in out and "onnxruntime" in out and "MISMATCH" not in out
    ref = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, inputs())
    with np.load(tmp_path / "sim.npz") as sim:
        assert sim.files == ["y0", "y1"]
        for k, e in zip(sim.files, ref):
            np.testing.assert_allclose(sim[k], e, rtol=1e-4, atol=1e-5)


def test_random_weights_change_the_model_deterministically(model, tmp_path, capsys):
    from taihu.tools.weights import randomize_weights

    outs = {}
    for tag, extra in (("plain", []), ("r0", ["--random-weights", "0"]), ("r0b", ["--random-weights", "0"]),
                       ("r1", ["--random-weights", "1"])):
        np.savez(tmp_path / "x.npz", **inputs())
        code, _, err = run([model, "--level", "graph", "--inputs", tmp_path / "x.npz", "--output",
                            tmp_path / f"{tag}.npz", "--quiet", *extra], capsys)
        assert code == 0, err
        with np.load(tmp_path / f"{tag}.npz") as f:
            outs[tag] = f["y0"]
    np.testing.assert_array_equal(outs["r0"], outs["r0b"])
    assert not np.allclose(outs["r0"], outs["plain"]) and not np.allclose(outs["r0"], outs["r1"])
    randomized = randomize_weights(onnx.load(model), 0)
    sess = ort.InferenceSession(randomized.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(outs["r0"], sess.run(["y0"], inputs())[0], rtol=1e-5, atol=1e-6)


def test_check_at_graph_level_compares_with_onnxruntime(model, capsys):
    code, out, err = run([model, "--level", "graph", "--check", "--random-weights", "3"], capsys)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["y0"], ["y1"])]
    checked = [r for r in rows if len(r) == 5 and r[1] == "onnxruntime"]
    assert [r[0] for r in checked] == ["y0", "y1"] and all(r[4] == "ok" for r in checked)
    assert all(float(r[2]) <= 1e-5 for r in checked)  # max abs err


def test_check_mismatch_is_an_error_with_max_errors(model, capsys, monkeypatch):
    real = run_tool.onnxruntime_outputs

    def perturbed(m, feed):
        out = real(m, feed)
        out["y1"] = out["y1"] + np.float32(0.5)
        return out

    monkeypatch.setattr(run_tool, "onnxruntime_outputs", perturbed)
    code, out, err = run([model, "--level", "graph", "--check"], capsys)
    assert_one_line_error(code, out, err, "--check failed", "1 of 2", "'y1'", "onnxruntime",
                          "max abs err 0.5")
    assert "MISMATCH" in out


def test_check_needs_something_to_compare(tmp_path, capsys):
    assert_one_line_error(*run([EXAMPLES / "graph" / "small_cnn.mlir", "--level", "graph", "--check"], capsys),
                          "nothing to compare")
    assert_one_line_error(*run([EXAMPLES / "sw" / "dma_contiguous.mlir", "--check"], capsys),
                          "sw/swsim program")


def test_simulator_outputs_need_a_simulated_run(model, tmp_path, capsys):
    for flag, value in (("--report", "r.json"), ("--trace", "t.json"), ("--plot", "plots")):
        code, out, err = run([model, "--level", "graph", flag, tmp_path / value], capsys)
        assert_one_line_error(code, out, err, flag, "simulated run")
        assert not (tmp_path / value).exists()


def test_sw_program_layer_table_report_and_plots(tmp_path, capsys):
    code, out, err = run([EXAMPLES / "sw" / "overlap.mlir", "--report", tmp_path / "r.json",
                          "--plot", tmp_path / "plots"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("layer "))
    assert lines[header].split() == ["layer", "algorithm", "shape", "cycles", "launch", "ms", "MFLOP", "exec",
                                     "MFLOP", "GFLOPS", "%", "peak", "DMA", "GB/s", "bound"]
    rows = {line.split()[0]: line.split() for line in lines[header + 1:header + 6]}
    assert set(rows) == {"dma_only", "compute_only", "overlap_nosync", "overlap_sync", "overlap_rlc"}
    assert rows["dma_only"][-1] == "DMA" and rows["compute_only"][-1] == "compute"
    import json

    rep = json.loads((tmp_path / "r.json").read_text())
    total = next(line for line in lines if line.startswith("total ("))
    assert str(rep["total_cycles"]) in total.split()
    ms = {k["name"]: k["cycles"] / 1.45e6 for k in rep["kernels"]}
    assert int(rows["overlap_rlc"][3]) == next(k["cycles"] for k in rep["kernels"] if k["name"] == "overlap_rlc")
    assert int(rows["overlap_rlc"][4]) == rep["kernels"][-1]["launch_cycles"] == 2900
    assert float(rows["overlap_rlc"][5]) == pytest.approx(ms["overlap_rlc"], abs=1e-3)
    for png in ("roofline.png", "layers.png"):
        data = (tmp_path / "plots" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_sw_program_errors_are_one_line(tmp_path, capsys):
    code, out, err = run([EXAMPLES / "sw" / "deadlock_getr.mlir"], capsys)
    assert code == 1 and "deadlock" in err and "CPE 1 (0,1): getr" in err and "Traceback" not in err
    overflow = tmp_path / "ldm.mlir"
    overflow.write_text(
        "sw.kernel @big() {\n  %a = sw.ldm_alloc 40000 align 128\n  %b = sw.ldm_alloc 30000 align 128\n}\n"
        "func.func @main() {\n  sw.spawn @big()\n  sw.join\n  func.return\n}\n")
    code, out, err = run([overflow, "--report", tmp_path / "r.json"], capsys)
    assert code == 1 and "Traceback" not in err
    assert "LDM" in err and "@big" in err
    assert not (tmp_path / "r.json").exists()
    assert_one_line_error(*run([EXAMPLES / "sw" / "overlap.mlir", "--option", "x=1"], capsys), "--option")


def test_bad_option_and_missing_plot_folder(model, tmp_path, capsys):
    assert_one_line_error(*run([model, "--option", "novalue"], capsys), "--option", "KEY=VALUE")
    not_dir = tmp_path / "file"
    not_dir.write_text("")
    assert_one_line_error(*run([model, "--plot", not_dir], capsys), "--plot", "not a directory")
    assert_one_line_error(*run([model, "--option", "bogus-knob=1"], capsys), "unknown option", "bogus-knob")


def test_timing_only_gives_the_same_report_without_outputs(tmp_path, capsys):
    import json

    prog = EXAMPLES / "sw" / "overlap.mlir"
    assert run([prog, "--quiet", "--report", tmp_path / "full.json"], capsys)[0] == 0
    code, out, err = run([prog, "--timing-only", "--report", tmp_path / "timing.json"], capsys)
    assert code == 0, err
    assert "total (5 layers)" in out and "output" not in out.split("wall time")[0].split("total (")[1]
    full, timing = (json.loads((tmp_path / f).read_text()) for f in ("full.json", "timing.json"))
    assert full == timing
    assert_one_line_error(*run([prog, "--timing-only", "--output", tmp_path / "y.npz"], capsys),
                          "--timing-only", "--output")
    assert not (tmp_path / "y.npz").exists()


def test_sw_program_inputs_by_onnx_name_and_unknown_keys(tmp_path, capsys):
    """An sw program's --inputs key names an io input global by symbol, graph.name (the ONNX
    name), its sanitised form or argN; outputs are keyed by graph.name; a key naming no input is
    a one-line error (it used to be ignored and the global silently filled with random data)."""
    src = (EXAMPLES / "sw" / "dma_contiguous.mlir").read_text()
    prog = tmp_path / "p.mlir"
    prog.write_text(src.replace("sw.global @IN : tensor<1024xf64> io input",
                                'sw.global @gpu_0_data_0 : tensor<1024xf64> io input {graph.name = "gpu_0/data_0"}')
                       .replace("sw.global @OUT : tensor<512xf64> io output",
                                'sw.global @OUT : tensor<512xf64> io output {graph.name = "gpu_0/out"}')
                       .replace("sw.global_addr @IN", "sw.global_addr @gpu_0_data_0"))
    x = np.arange(1024, dtype=np.float64)
    for key in ("gpu_0/data_0", "gpu_0_data_0", "arg0"):
        np.savez(tmp_path / "x.npz", **{key: x})
        code, out, err = run([prog, "--inputs", tmp_path / "x.npz", "--output", tmp_path / "y.npz",
                              "--quiet"], capsys)
        assert code == 0, err
        with np.load(tmp_path / "y.npz") as y:
            assert y.files == ["gpu_0/out"]
            np.testing.assert_array_equal(y["gpu_0/out"], x[:512])
    np.savez(tmp_path / "bad.npz", data=x)
    assert_one_line_error(*run([prog, "--inputs", tmp_path / "bad.npz"], capsys),
                          "'data' is not an input", "gpu_0/data_0")
    np.savez(tmp_path / "two.npz", **{"gpu_0/data_0": x, "arg0": x})
    assert_one_line_error(*run([prog, "--inputs", tmp_path / "two.npz"], capsys), "two arrays")


def _written(folder: Path) -> list[str]:
    """Names in ``folder`` (temporaries ``.taihu-*`` included)."""
    return sorted(p.name for p in folder.iterdir())


def test_outputs_are_written_all_or_nothing(tmp_path, capsys):
    """The output files of a run are written together after everything succeeded: a run that
    fails on --report (unwritable path, or no simulated run) does not leave its --output, its
    --trace or its --plot folder; no temporary file is left; a successful run writes all."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    prog = EXAMPLES / "sw" / "overlap.mlir"
    files = ["--output", out_dir / "y.npz", "--trace", out_dir / "t.json", "--plot", out_dir / "plots"]
    code, out, err = run([prog, *files, "--report", tmp_path / "missing" / "r.json"], capsys)
    assert_one_line_error(code, out, err, "cannot write", "missing/r.json", "No such file")
    assert _written(out_dir) == []
    code, out, err = run([prog, *files, "--report", out_dir / "r.json", "--quiet"], capsys)
    assert code == 0, err
    assert _written(out_dir) == ["plots", "r.json", "t.json", "y.npz"]
    assert _written(out_dir / "plots") == ["layers.png", "roofline.png"]
    import json

    assert json.loads((out_dir / "t.json").read_text())["traceEvents"]
    assert (out_dir / "r.json").read_text().endswith("}\n")

    graph_dir = tmp_path / "graph"
    graph_dir.mkdir()
    code, out, err = run([EXAMPLES / "graph" / "small_cnn.mlir", "--level", "graph", "--output",
                          graph_dir / "y.npz", "--report", graph_dir / "r.json"], capsys)
    assert_one_line_error(code, out, err, "--report needs a simulated run")
    assert _written(graph_dir) == []


def test_failure_while_rendering_plots_writes_nothing(tmp_path, capsys, monkeypatch):
    from taihu.tools import plots

    def broken(report, title=""):
        raise RuntimeError("no backend")

    monkeypatch.setattr(plots, "render_plots", broken)
    code, out, err = run([EXAMPLES / "sw" / "overlap.mlir", "--output", tmp_path / "y.npz",
                          "--report", tmp_path / "r.json", "--plot", tmp_path / "plots"], capsys)
    assert_one_line_error(code, out, err, "internal error", "no backend")
    assert _written(tmp_path) == []


def test_failed_check_writes_no_output(model, tmp_path, capsys, monkeypatch):
    real = run_tool.onnxruntime_outputs

    def perturbed(m, feed):
        out = real(m, feed)
        out["y0"] = out["y0"] + np.float32(1.0)
        return out

    monkeypatch.setattr(run_tool, "onnxruntime_outputs", perturbed)
    out_file = tmp_path / "y.npz"
    out_file.write_bytes(b"previous")
    code, out, err = run([model, "--level", "graph", "--check", "--output", out_file], capsys)
    assert_one_line_error(code, out, err, "--check failed", "'y0'")
    assert out_file.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".taihu")] == []
