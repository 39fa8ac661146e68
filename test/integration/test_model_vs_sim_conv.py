"""The analytic model of the convolution kernels (backends/model/conv.py) against the simulator
on small layers, per kernel: the im2col kernel (task decomposition of tile-to-loop) and the
explicit GEMM; the error is printed (pytest -s) and bounded."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from taihu.backends.model.conv import ConvShape, choose_conv
from taihu.target.machine import default_machine
from taihu.backends.sim.runner import simulate
from taihu.dialects import graph
from taihu.passes.conversion.graph_to_tile import LDM_RESERVE
from taihu.passes.pipelines import lower_to_swsim
from taihu.test.unit.graph_builder import G


def _conv_module(s: ConvShape):
    rng = np.random.default_rng(0)
    g = G((s.n, s.c, s.h, s.w))
    w = g.cst(rng.standard_normal((s.m, s.c, s.kh, s.kw)).astype(np.float32) * 0.1, "w")
    b = g.cst(rng.standard_normal((s.m,)).astype(np.float32), "b")
    y = g(graph.Conv2dOp(g.args[0], w, b, strides=s.strides, pads=s.pads), "conv")
    return g.module(g(graph.ReluOp(y))), g.inputs(0)


@pytest.mark.parametrize(
    "shape,bound",
    [
        (ConvShape(1, 64, 28, 28, 64, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True), 0.12),
        (ConvShape(1, 128, 14, 14, 128, 3, 3, (2, 2), (1, 1, 1, 1), bias=True, relu=True, const_weights=True), 0.12),
    ],
)
def test_im2col_conv_kernels_track_the_simulator(shape: ConvShape, bound: float) -> None:
    m = default_machine()
    mach = dataclasses.replace(m, ldm_user_bytes=m.ldm_user_bytes - LDM_RESERVE)
    plan = choose_conv(shape, mach, "im2col", mem_budget=m.ldm_user_bytes).plan
    mod, inputs = _conv_module(shape)
    lower_to_swsim(mod, conv_algorithm="im2col")
    rep = simulate(mod, inputs=inputs, numerics=False).report
    sim = {k["name"].removeprefix("conv_") if k["name"] != "conv" else "gemm": k["cycles"] for k in rep["kernels"]}
    f = m.f_clk_ghz * 1e9
    for k in plan.kernels:
        model = k.t_total * f
        err = (model - sim[k.name]) / sim[k.name]
        print(f"{shape.describe()} {k.name}: sim {sim[k.name]} cycles, model {model:.0f} ({100 * err:+.1f} %)")
        assert abs(err) < bound, k.name
