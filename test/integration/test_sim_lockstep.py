"""Lockstep (cohort) execution equals per-CPE execution: reports, traces and outputs are
identical on every examples/sw program and on DMA-heavy kernels (double-buffered get/compute/put
loops, waits, barriers inside loops, divergent branches), see backends/sim/lockstep.py."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.parser import Parser

from taihu.backends.sim.engine import DeadlockError
from taihu.backends.sim.runner import simulate
from taihu.passes.pipelines import default_context

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sw")


def _ctx() -> Context:
    return default_context()


def parse(text: str):
    mod = Parser(_ctx(), text).parse_module()
    mod.verify()
    return mod


def _generator(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


double_buffer_mlir = _generator("double_buffer").double_buffer_mlir


def _events(res) -> list[tuple]:
    """Trace spans and instants (flow ids depend on posting order, not compared)."""
    return sorted(tuple(str(x) for x in ev[:6]) for ev in res.engine.trace.events if ev[0] in "Xi")


def assert_same(text: str, inputs: dict | None = None, **kw):
    a = simulate(parse(text), inputs=inputs, trace=True, lockstep=True, **kw)
    b = simulate(parse(text), inputs=inputs, trace=True, lockstep=False, **kw)
    assert json.dumps(a.report) == json.dumps(b.report)
    assert _events(a) == _events(b)
    assert a.outputs.keys() == b.outputs.keys()
    for k in a.outputs:
        np.testing.assert_array_equal(a.outputs[k], b.outputs[k])
    np.testing.assert_array_equal(a.engine.regs, b.engine.regs)
    return a


EXAMPLE_FILES = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".mlir") and "deadlock" not in f)


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_examples_lockstep_equals_per_cpe(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        assert_same(f.read())


@pytest.mark.parametrize("barrier", [None, "array", "row", "col"])
def test_double_buffer_lockstep_equals_per_cpe(barrier):
    x = np.random.default_rng(1).standard_normal((5, 64, 256))
    r = assert_same(double_buffer_mlir(5, 2048, barrier=barrier), {"X": x})
    np.testing.assert_array_equal(r.outputs["Y"], x * x + x)
    k = r.report["kernels"][0]
    assert k["dma_requests"] == 64 * 5 * 2
    assert k["dma_bytes"] == 2 * x.nbytes


def test_dma_only_stream_lockstep_equals_per_cpe():
    assert_same(double_buffer_mlir(4, 1024, compute=False))


# per-CPE programs with lane-dependent control flow around DMA, waits, resets and barriers
DIVERGENT = """
sw.global @X : tensor<64x64xf64> io input
sw.global @Y : tensor<64x64xf64> io output
sw.kernel @k(%x: i64, %y: i64) {
  %buf = sw.ldm_alloc 512 align 128
  %out = sw.ldm_alloc 512 align 128
  %rw = sw.reply_alloc
  %rp = sw.reply_alloc
  %id = sw.cpe_id
  %row = sw.row_id
  %col = sw.col_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %c8 = arith.constant 8 : i64
  %c64 = arith.constant 64 : i64
  %c512 = arith.constant 512 : i64
  %off = arith.muli %id, %c512 : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  // row-dependent number of passes (row barriers only), each: get in 64-B pieces, wait,
  // compute (x + x on odd columns, x * x and a barrier of the even columns on even ones), put
  %n = arith.remsi %row, %c3 : i64
  %n1 = arith.addi %n, %c1 : i64
  scf.for %p = %c0 to %n1 step %c1 : i64 {
    sw.reply_reset %rw
    scf.for %q = %c0 to %c8 step %c1 : i64 {
      %o = arith.muli %q, %c64 : i64
      %s = arith.addi %src, %o : i64
      %l = arith.addi %buf, %o : i64
      sw.dma_get %s -> %l, %rw size 64
    }
    sw.dma_wait %rw, 8
    %odd = arith.remsi %col, %c2 : i64
    %isodd = arith.cmpi eq, %odd, %c1 : i64
    scf.if %isodd {
      sw.microkernel trip 16 (%buf step 32, %out step 32) {
        sw.vldd r0, 0(p0)
        sw.vaddd r0, r0, r1
        sw.vstd r1, 0(p1)
      }
    } else {
      sw.microkernel trip 16 (%buf step 32, %out step 32) {
        sw.vldd r0, 0(p0)
        sw.vmuld r0, r0, r1
        sw.vstd r1, 0(p1)
      }
      sw.barrier row mask 85
    }
    sw.barrier row
    sw.dma_put %out -> %dst, %rp size 512
    %np = arith.addi %p, %c1 : i64
    sw.dma_wait %rp, %np
  }
}
func.func @main() {
  %x = sw.global_addr @X
  %y = sw.global_addr @Y
  sw.spawn @k(%x, %y)
  sw.join
  sw.spawn @k(%x, %y)
  sw.join
  func.return
}
"""


def test_divergent_dma_loops_lockstep_equals_per_cpe():
    x = np.random.default_rng(2).standard_normal((64, 64))
    r = assert_same(DIVERGENT, {"X": x})
    col = np.arange(64) % 8
    want = np.where((col % 2 == 1)[:, None], x + x, x * x)
    np.testing.assert_array_equal(r.outputs["Y"], want)


def test_channel_buffer_full_lockstep_equals_per_cpe():
    """Eight gets without waiting: the fifth of each CPE stalls on the channel buffer (rule 1)."""
    text = double_buffer_mlir(1, 256, compute=False)
    extra = "\n".join("  sw.dma_get %x0 -> %in1, %rg size 256" for _ in range(7))
    text = text.replace("  scf.for %t", extra + "\n  scf.for %t", 1)
    r = assert_same(text)
    assert r.report["kernels"][0]["dma_requests"] == 64 * 9


def test_lockstep_deadlock_on_wait_names_every_cpe():
    text = """
sw.global @X : tensor<64x4xf64> io input
sw.kernel @k(%x: i64) {
  %buf = sw.ldm_alloc 32
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c5 = arith.constant 5 : i64
  %late = arith.cmpi sge, %id, %c5 : i64
  sw.dma_get %x -> %buf, %rw size 32
  scf.if %late {
    sw.dma_wait %rw, 2
  }
}
func.func @main() {
  %x = sw.global_addr @X
  sw.spawn @k(%x)
  sw.join
  func.return
}
"""
    msgs = []
    for ls in (True, False):
        with pytest.raises(DeadlockError) as e:
            simulate(parse(text), lockstep=ls)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "CPE 63 (7,7): dma_wait: reply word 0 = 1 < 2" in msgs[0]
    assert "CPE 4 " not in msgs[0]


@pytest.mark.parametrize("lockstep", [True, False])
def test_timing_only_gives_the_same_report(lockstep):
    """numerics=False skips micro-kernel arithmetic and DMA data movement; cycles, counters and
    trace are those of the full run."""
    progs = [double_buffer_mlir(4, 2048, barrier="row"), DIVERGENT]
    for name in ("mesh_gemm.mlir", "overlap.mlir", "rlc_send_full.mlir"):
        with open(os.path.join(EXAMPLES, name)) as f:
            progs.append(f.read())
    for text in progs:
        a = simulate(parse(text), trace=True, lockstep=lockstep)
        b = simulate(parse(text), trace=True, lockstep=lockstep, numerics=False)
        assert json.dumps(a.report) == json.dumps(b.report)
        assert _events(a) == _events(b)
        assert a.outputs and b.outputs == {}
        assert not b.engine.tasks and b.engine.memory._data.size == 0


PARTIAL = """
sw.global @IN : tensor<4xf64> io input
sw.global @OUT : tensor<64x4xf64> io output
sw.kernel @k(%in: i64, %out: i64) {
  %buf = sw.ldm_alloc 32
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %col = sw.col_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c32 = arith.constant 32 : i64
  %first = arith.cmpi eq, %col, %c0 : i64
  %second = arith.cmpi eq, %col, %c1 : i64
  scf.if %first {
    sw.dma_get %in -> %buf, %rw size 32
    sw.dma_wait %rw, 1
    sw.microkernel trip 1 (%buf step 0) {
      sw.vldd r0, 0(p0)
    }
    // 20 messages to column 1 (held back by the link depth), then 5 + 5: consumed in pieces
    // of 7 and 13 (partial slices of one batch), then 7 (5 + 2: two batches) and 3
    sw.microkernel trip 20 () {
      sw.putr r0, 1
    }
    sw.microkernel trip 5 () {
      sw.vaddd r0, r0, r0
      sw.putr r0, 1
    }
    sw.microkernel trip 5 () {
      sw.vaddd r0, r0, r0
      sw.putr r0, 1
    }
  }
  scf.if %second {
    sw.microkernel trip 7 () {
      sw.getr r1
      sw.vaddd r1, r2, r2
    }
    sw.microkernel trip 13 () {
      sw.getr r1
      sw.vaddd r1, r2, r2
    }
    sw.microkernel trip 7 () {
      sw.getr r1
      sw.vaddd r1, r2, r2
    }
    sw.microkernel trip 3 () {
      sw.getr r1
      sw.vaddd r1, r2, r2
    }
    %o = arith.muli %id, %c32 : i64
    %dst = arith.addi %out, %o : i64
    sw.microkernel trip 1 (%buf step 0) {
      sw.vstd r2, 0(p0)
    }
    sw.dma_put %buf -> %dst, %rw size 32
    sw.dma_wait %rw, 1
  }
}
func.func @main() {
  %in = sw.global_addr @IN
  %out = sw.global_addr @OUT
  sw.spawn @k(%in, %out)
  sw.join
  func.return
}
"""


def test_partial_consumption_with_back_pressure_lockstep_equals_per_cpe():
    """Receivers take a sender's batches in pieces (partial slices, slices across batches)
    while the sender is held back by the link depth (spec §5 rule 6)."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    r = assert_same(PARTIAL, {"IN": x})
    want = x * (20 + sum(2.0 ** i for i in range(1, 11)))
    for row in range(8):
        np.testing.assert_array_equal(r.outputs["OUT"][row * 8 + 1], want)
    assert r.report["kernels"][0]["rlc_messages"] == 8 * 30


def test_default_mode_chooses_per_kernel_with_identical_results():
    """simulate(lockstep=None): lockstep for kernels with RLC or vector-FMA micro-kernels,
    per-CPE for the others; the results equal both forced modes."""
    from taihu.backends.sim.runner import KernelProgram, ensure_swsim
    from taihu.dialects import sw

    with open(os.path.join(EXAMPLES, "mesh_gemm.mlir")) as f:
        text = f.read()
    mod = parse(text)
    ensure_swsim(mod)
    uses = {k.sym_name.data: KernelProgram(k).uses_rlc for k in mod.walk()
            if isinstance(k, sw.KernelOp)}
    assert uses == {"load": False, "gemm": True, "store": False}
    a = assert_same(text)
    c = simulate(parse(text), trace=True)
    assert json.dumps(c.report) == json.dumps(a.report)
    assert _events(c) == _events(a)
    np.testing.assert_array_equal(c.outputs["CT"], a.outputs["CT"])
    # CPE-local vmad micro-kernels without RLC (a k-loop GEMM): lockstep too
    with open(os.path.join(EXAMPLES, "kloop_naive.mlir")) as f:
        text = f.read()
    mod = parse(text)
    ensure_swsim(mod)
    modes = {k.sym_name.data: (KernelProgram(k).uses_rlc, KernelProgram(k).prefers_lockstep)
             for k in mod.walk() if isinstance(k, sw.KernelOp)}
    assert modes and all(m == (False, True) for m in modes.values())
    a = assert_same(text)
    c = simulate(parse(text), trace=True)
    assert json.dumps(c.report) == json.dumps(a.report)
    assert _events(c) == _events(a)
