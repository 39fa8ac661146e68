"""Report entries carry the kernel's taihu.layer/op/algorithm/shape, bound and time breakdown;
``simulate(progress=...)`` reports every join."""

from __future__ import annotations

import numpy as np
from xdsl.parser import Parser

from taihu.backends.sim.report import bound_of, breakdown
from taihu.backends.sim.runner import simulate
from taihu.passes.pipelines import default_context

PROGRAM = """
sw.global @X : tensor<64x512xf64> io input
sw.global @Y : tensor<64x512xf64> io output

sw.kernel @scale(%x: i64, %y: i64) attributes {taihu.layer = "conv1", taihu.op = "graph.mul",
    taihu.algorithm = "map", taihu.shape = "64x512 <- 64x512 * 1"} {
  %buf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  sw.dma_get %src -> %buf, %rw size 4096
  sw.dma_wait %rw, 1
  sw.microkernel trip 128 (%buf step 32) {
    sw.vldd r0, 0(p0)
    sw.vaddd r0, r0, r1
    sw.vstd r1, 0(p0)
  }
  sw.dma_put %buf -> %dst, %rw size 4096
  sw.dma_wait %rw, 2
}

sw.kernel @copy(%x: i64, %y: i64) {
  %buf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %y, %off : i64
  sw.dma_get %src -> %buf, %rw size 4096
  sw.dma_wait %rw, 1
}

func.func @main() {
  %x = sw.global_addr @X
  %y = sw.global_addr @Y
  sw.spawn @scale(%x, %y)
  sw.join
  sw.spawn @copy(%x, %y)
  sw.join
  func.return
}
"""


def test_report_fields_from_kernel_attributes_and_progress():
    module = Parser(default_context(), PROGRAM).parse_module()
    x = np.random.default_rng(0).standard_normal((64, 512))
    seen = []
    res = simulate(module, inputs={"X": x}, progress=lambda d, t, n: seen.append((d, t, n)))
    np.testing.assert_array_equal(res.outputs["Y"], 2 * x)
    assert seen == [(1, 2, "scale"), (2, 2, "copy")]
    scale, copy = res.report["kernels"]
    assert (scale["layer"], scale["op"], scale["algorithm"], scale["shape"]) == (
        "conv1", "graph.mul", "map", "64x512 <- 64x512 * 1")
    assert (copy["layer"], copy["op"], copy["algorithm"], copy["shape"]) == (None, None, None, None)
    for k in (scale, copy):
        assert sum(k["breakdown"].values()) == k["cycles"]
        assert k["bound"] == "DMA"  # 2 x 256 KB of DMA dominate a 128-iteration add
        assert k["rlc_wait"] == 0
        assert k["dma_gbps"] > 0
    assert scale["arithmetic_intensity"] == scale["flops"] / scale["dma_bytes"]
    assert scale["flops"] == 64 * 128 * 4
    assert copy["flops"] == 0 and copy["breakdown"]["compute"] == 0


def test_breakdown_priorities_and_bound():
    assert breakdown(100, 64 * 30, 64 * 10, 80, 64) == {"compute": 30, "rlc": 10, "dma": 60, "idle": 0}
    assert breakdown(100, 64 * 30, 0, 20, 64) == {"compute": 30, "rlc": 0, "dma": 20, "idle": 50}
    assert bound_of(10, 10, 3) == "compute"
    assert bound_of(5, 10, 3) == "DMA"
    assert bound_of(5, 4, 30.5) == "RLC"
