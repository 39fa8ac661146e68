"""Kernel deduplication (``convert-loop-to-sw{dedup-kernels}``, ``convert-tile-to-loop``):
a network with repeated identical layers lowers each distinct kernel body once; the simulated
outputs, and every report entry (launch name, layer, op, algorithm, shape, cycles, counters),
are those of the lowering without deduplication."""

import numpy as np
import pytest

from taihu.backends.sim.runner import simulate
from taihu.dialects import graph, sw
from taihu.passes.pipelines import lower_to_swsim
from taihu.test.unit.graph_builder import G


def _net():
    """conv3x3+relu twice on the same shapes (weights as inputs: identical kernel bodies), then
    a residual sum + relu and a different conv (a kernel of its own)."""
    g = G((1, 64, 6, 6), (64, 64, 3, 3), (64,), (64, 64, 3, 3), (64,), (32, 64, 1, 1))
    x, w1, b1, w2, b2, w3 = g.args
    y1 = g(graph.ReluOp(g(graph.Conv2dOp(x, w1, b1, pads=(1, 1, 1, 1)), "c1")), "r1")
    y2 = g(graph.ReluOp(g(graph.Conv2dOp(y1, w2, b2, pads=(1, 1, 1, 1)), "c2")), "r2")
    s = g(graph.ReluOp(g(graph.AddOp(y1, y2), "s")), "sr")
    out = g(graph.Conv2dOp(s, w3, None), "c3")
    return g, out


def _run(dedup: bool):
    g, out = _net()
    module = g.module(out)
    lower_to_swsim(module, dedup_kernels=dedup)
    n_kernels = sum(isinstance(o, sw.KernelOp) for o in module.body.block.ops)
    n_spawns = sum(isinstance(o, sw.SpawnOp) for o in module.walk())
    return simulate(module, inputs=g.inputs(3)), n_kernels, n_spawns


@pytest.fixture(scope="module")
def runs():
    return _run(False), _run(True)


def test_fewer_kernels_same_launches(runs):
    (_, k0, s0), (_, k1, s1) = runs
    assert s0 == s1 == k0
    assert k1 < k0


def test_outputs_bitwise_equal(runs):
    (r0, _, _), (r1, _, _) = runs
    assert r0.outputs.keys() == r1.outputs.keys()
    for k in r0.outputs:
        np.testing.assert_array_equal(r0.outputs[k], r1.outputs[k])


def test_reports_equal(runs):
    (r0, _, _), (r1, _, _) = runs
    assert r0.report["kernels"] == r1.report["kernels"]
    assert r0.report["total_cycles"] == r1.report["total_cycles"]
    layers = [k["layer"] for k in r1.report["kernels"]]
    assert len(set(k["name"] for k in r1.report["kernels"])) == len(layers)  # one entry per launch
