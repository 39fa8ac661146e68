"""Report entries carry the kernel's taihu.layer/op/algorithm/shape, bound and time breakdown;
``simulate(progress=...)`` reports every join."""

from __future__ import annotations

import numpy as np
from xdsl.parser import Parser

from taihu.backends.sim.report import bound_of, breakdown
from taihu.backends.sim.runner import simulate
from taihu.passes.pipelines import default_context
from taihu.test.unit.sw_programs import scale_copy

PROGRAM = scale_copy(scale_attrs='attributes {taihu.layer = "conv1", taihu.op = "graph.mul", '
                              'taihu.algorithm = "map", taihu.shape = "64x512 <- 64x512 * 1"}')


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
