"""``taihu-run`` on sw/swsim modules: report and trace files, --machine, clean errors."""

from __future__ import annotations

import json
import os

import pytest

from taihu.tools.run import main

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "examples", "sw")
CONFIG = os.path.join(os.path.dirname(EXAMPLES), "..", "target", "configs", "sw26010.toml")

REPORT_KEYS = {"total_cycles", "seconds", "flops", "gflops", "percent_of_peak", "kernels"}
KERNEL_KEYS = {"name", "cycles", "flops", "percent_of_peak", "dma_bytes", "dma_waste_bytes",
               "rlc_messages", "p0_valid", "p0_idle", "p1_valid", "p1_idle", "ee", "t_dma",
               "t_compute", "t_overlap", "ldm_high_water"}


def test_report_and_trace(tmp_path, capsys):
    rep, tr = tmp_path / "r.json", tmp_path / "t.json"
    assert main([os.path.join(EXAMPLES, "rlc_broadcast.mlir"), "--report", str(rep),
                 "--trace", str(tr)]) == 0
    out = capsys.readouterr().out
    assert "rlc_broadcast" in out and "GFLOPS" in out
    r = json.loads(rep.read_text())
    assert REPORT_KEYS <= set(r) and KERNEL_KEYS <= set(r["kernels"][0])
    assert r["kernels"][0]["rlc_messages"] == 2
    t = json.loads(tr.read_text())
    names = {e["args"]["name"] for e in t["traceEvents"] if e.get("name") == "thread_name"}
    assert {"CPE 0 (0,0)", "DMA bus 3", "RLC row 3", "RLC col 2", "MPE"} <= names
    phases = {e["ph"] for e in t["traceEvents"]}
    assert {"X", "s", "f", "M"} <= phases
    flows = [e for e in t["traceEvents"] if e["ph"] in ("s", "f")]
    assert {e["id"] for e in flows if e["ph"] == "s"} == {e["id"] for e in flows if e["ph"] == "f"}


def test_machine_override_changes_timing(tmp_path):
    text = open(CONFIG).read().replace("dma_latency = 200 ", "dma_latency = 100 ")
    cfg = tmp_path / "fast.toml"
    cfg.write_text(text)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    prog = os.path.join(EXAMPLES, "dma_contiguous.mlir")
    assert main([prog, "--quiet", "--report", str(a)]) == 0
    assert main([prog, "--quiet", "--report", str(b), "--machine", str(cfg)]) == 0
    ca = json.loads(a.read_text())["total_cycles"]
    cb = json.loads(b.read_text())["total_cycles"]
    assert ca - cb == 5 * 100  # 4 gets + 1 put, each one start-up shorter


def test_bad_machine_is_one_error(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("f_clk_ghz = 1.45\n")
    rep = tmp_path / "r.json"
    assert main([os.path.join(EXAMPLES, "rlc_p2p.mlir"), "--machine", str(cfg), "--report", str(rep)]) == 1
    err = capsys.readouterr().err
    assert "missing key" in err and "Traceback" not in err
    assert not rep.exists()


def test_dma_overrunning_ldm_buffer(tmp_path, capsys):
    prog = tmp_path / "bad.mlir"
    prog.write_text("""
sw.global @X : tensor<1024xf64> io input
sw.kernel @k(%x: i64) {
  %b = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %x -> %b, %rw size 2048
  sw.dma_wait %rw, 1
}
func.func @main() {
  %x = sw.global_addr @X
  sw.spawn @k(%x)
  sw.join
  func.return
}
""")
    assert main([str(prog)]) == 1
    err = capsys.readouterr().err
    assert "overruns its LDM buffer" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", ["kloop_listing41.mlir", "mesh_gemm.mlir"])
def test_swsim_form_runs_like_sw_form(tmp_path, name):
    """sw-to-swsim output (printed, re-parsed) runs to the same report as the sw module."""
    import subprocess
    import sys

    lowered = tmp_path / "low.mlir"
    subprocess.run([sys.executable, "-m", "taihu.tools.opt", os.path.join(EXAMPLES, name), "-p",
                    "sw-to-swsim", "-o", str(lowered)], check=True)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main([os.path.join(EXAMPLES, name), "--quiet", "--report", str(a)]) == 0
    assert main([str(lowered), "--quiet", "--report", str(b)]) == 0
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    ra.pop("machine"), rb.pop("machine")
    assert ra == rb


def test_dense_resource_initializer_is_loaded():
    """sw.global initial values from dense_resource blobs (what convert-graph-to-tile emits for
    weights) are loaded into main memory; a missing blob is a clear error naming the global."""
    import numpy as np
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects as xdsl_dialects
    from xdsl.dialects.builtin import DenseResourceAttr, Float32Type, TensorType
    from xdsl.parser import Parser

    from taihu.backends.sim.memory import SimError
    from taihu.backends.sim.runner import simulate
    from taihu.dialects import sw
    from taihu.dialects.resources import declare_blob
    from taihu.tools.universe import get_all_dialects

    w = np.arange(8, dtype=np.float32).reshape(2, 4) - 3.5
    text = """
sw.global @W : tensor<2x4xf32>
func.func @main() {
  func.return
}
"""
    ctx = Context()
    for name, f in {**xdsl_dialects(), **get_all_dialects()}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, f)
    ty = TensorType(Float32Type(), [2, 4])
    for key, ok in ((declare_blob("sim_w", w), True), ("sim_no_such_blob", False)):
        mod = Parser(ctx, text).parse_module()
        g = next(o for o in mod.walk() if isinstance(o, sw.GlobalOp))
        g.properties["initial_value"] = DenseResourceAttr.from_params(key, ty)
        if ok:
            np.testing.assert_array_equal(simulate(mod).outputs["W"], w)
        else:
            with pytest.raises(SimError, match="sw.global @W: .*sim_no_such_blob"):
                simulate(mod)
