"""Depthwise convolutions through the whole stack (issue 14 item 3): ``taihu-lower`` with the
depthwise kernel (graph_to_tile/depthwise.py, tile.map depthwise, loop_to_sw/depthwise.py) on the
simulator vs the graph reference (``backends/reference``; rtol 1e-4, atol 1e-5), and the
analytic model (backends/model/depthwise_conv.py) vs the simulated cycles."""

from __future__ import annotations

import numpy as np
import pytest

from taihu.backends.model.conv import ConvShape
from taihu.backends.reference import run_module
from taihu.backends.sim.runner import simulate
from taihu.dialects import graph
from taihu.passes.conversion.graph_to_tile.schedule_attr import set_op_schedule
from taihu.passes.conversion.graph_to_tile.schedules import lowering_state, model_plan, op_problem, plan_cycles
from taihu.passes.pipelines import lower_to_swsim
from taihu.backends.model.schedule import Schedule
from taihu.test.unit.graph_builder import G

RTOL, ATOL = 1e-4, 1e-5


def dw_graph(n, c, h, w, k, stride=1, pads=(0, 0, 0, 0), dil=1, bias=True, act=None, dtype=np.float32,
             const_w=True, schedule=None):
    """``x0`` (n, c, h, w) -> depthwise conv (one k x k filter per channel) [-> act]."""
    rng = np.random.default_rng(1)
    shapes = [(n, c, h, w)] + ([] if const_w else [(c, 1, k, k)])
    g = G(*shapes, dtype=dtype)
    wv = g.cst((rng.standard_normal((c, 1, k, k)) * 0.3).astype(dtype), "w") if const_w else g.args[1]
    b = g.cst(rng.standard_normal((c,)).astype(dtype), "b") if bias else None
    conv = graph.Conv2dOp(g.args[0], wv, b, strides=(stride, stride), pads=pads, dilations=(dil, dil), group=c)
    y = g(conv, "conv")
    if schedule is not None:
        set_op_schedule(conv, schedule)
    if act == "relu6":
        y = g(graph.ClipOp(y, min=0.0, max=6.0), "relu6")
    elif act == "relu":
        y = g(graph.ReluOp(y), "relu")
    return g, y


def kernel_algorithms(module) -> list[str]:
    return [op.attributes["taihu.algorithm"].data for op in module.walk() if "taihu.algorithm" in op.attributes]


CASES = {
    # name: (n, c, h, w, k, stride, pads, dilation, bias, act, dtype, const_w, schedule)
    "3x3_s1_relu6": (1, 32, 10, 10, 3, 1, (1, 1, 1, 1), 1, True, "relu6", np.float32, True, None),
    "3x3_s2_c70_batch2": (2, 70, 13, 11, 3, 2, (1, 1, 1, 1), 1, True, None, np.float32, True, None),
    "3x3_s1_f64_nobias": (1, 8, 9, 9, 3, 1, (1, 1, 1, 1), 1, False, "relu", np.float64, True, None),
    "5x5_s1_p2": (1, 16, 12, 12, 5, 1, (2, 2, 2, 2), 1, True, "relu", np.float32, True, None),
    "5x5_s2_batch2": (2, 24, 15, 14, 5, 2, (2, 2, 2, 2), 1, True, None, np.float32, True, None),
    "7x7_s1_p3": (1, 8, 11, 13, 7, 1, (3, 3, 3, 3), 1, True, None, np.float32, True, None),
    "3x3_asymmetric_pads": (1, 40, 11, 9, 3, 1, (0, 1, 2, 0), 1, True, None, np.float32, True, None),
    "3x3_dilation2": (1, 16, 12, 12, 3, 1, (2, 2, 2, 2), 2, True, None, np.float32, True, None),
    "3x3_weights_not_constant": (2, 20, 8, 8, 3, 1, (1, 1, 1, 1), 1, True, "relu6", np.float32, False, None),
    "1x1": (1, 64, 5, 6, 1, 1, (0, 0, 0, 0), 1, True, None, np.float32, True, None),
    # rows of 75 units: three bodies per row
    "3x3_long_rows": (1, 4, 3, 300, 3, 1, (1, 1, 1, 1), 1, True, None, np.float32, True, None),
    # windows wholly in the padding: those outputs are the bias
    "3x3_pad_beyond_plane": (1, 8, 2, 3, 3, 1, (2, 2, 2, 2), 1, True, None, np.float32, True, None),
    # several channel tiles (the last clipped at C = 130), two planes per CPE, row tiles with pad
    # rows (synchronous boundary loads), an edited schedule
    "row_tiles_two_planes_per_cpe": (1, 130, 20, 18, 3, 1, (1, 1, 1, 1), 1, True, "relu6", np.float32, True,
                                     Schedule.make("depthwise", planes=128, rows=6)),
    "row_tiles_s2": (2, 60, 30, 30, 3, 2, (1, 1, 1, 1), 1, True, None, np.float32, True,
                     Schedule.make("depthwise", planes=60, rows=4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_depthwise_matches_reference_on_the_simulator(name: str) -> None:
    n, c, h, w, k, st, pads, dil, bias, act, dtype, const_w, sched = CASES[name]
    g, y = dw_graph(n, c, h, w, k, st, pads, dil, bias, act, dtype, const_w, sched)
    module = g.module(y)
    inputs = g.inputs(0)
    ref = run_module(module.clone(), inputs)
    lower_to_swsim(module)
    assert kernel_algorithms(module) == ["depthwise"]
    got = simulate(module, inputs=inputs).outputs
    for key, want in ref.items():
        np.testing.assert_allclose(got[key], want, rtol=RTOL, atol=ATOL, err_msg=key)


def _layer(s: ConvShape):
    g, y = dw_graph(s.n, s.c, s.h, s.w, s.kh, s.strides[0], s.pads, bias=s.bias, act="relu6")
    return g.module(y), g.inputs(0)


@pytest.mark.parametrize(
    "s,bound",
    [
        # MobileNetV2's first depthwise layer (32 planes on 32 CPEs, row tiles) and its 14 -> 7 s2 one
        (ConvShape(1, 32, 112, 112, 32, 3, 3, pads=(1, 1, 1, 1), group=32, bias=True, relu=True), 0.04),
        (ConvShape(1, 576, 14, 14, 576, 3, 3, (2, 2), (1, 1, 1, 1), group=576, bias=True, relu=True), 0.06),
        (ConvShape(1, 144, 56, 56, 144, 3, 3, pads=(1, 1, 1, 1), group=144, bias=True, relu=True), 0.06),
        (ConvShape(2, 192, 28, 28, 192, 3, 3, pads=(1, 1, 1, 1), group=192, bias=True, relu=True), 0.06),
    ],
    ids=lambda v: v.describe() if isinstance(v, ConvShape) else str(v),
)
def test_model_tracks_the_simulator_and_the_dma_roofline(s: ConvShape, bound: float) -> None:
    """The model's cycles of its pick within ``bound`` of the simulator's; the layer takes at
    most 1 / 0.8 of its DMA roofline (input + output + filters + bias once at 30.94 GB/s)."""
    module, inputs = _layer(s)
    state = lowering_state(module)
    op = next(o for o in module.walk() if isinstance(o, graph.Conv2dOp))
    prob = op_problem(state, op)
    assert prob is not None
    plan = model_plan(state, prob)
    assert plan.algorithm == "depthwise"
    model = plan_cycles(state, prob, plan)
    lower_to_swsim(module)
    rep = simulate(module, inputs=inputs, numerics=False).report
    sim = sum(k["cycles"] for k in rep["kernels"])
    m = state.machine
    nbytes = (s.n * s.c * (s.h * s.w + s.ho * s.wo) + s.c * 9 + s.c) * 4
    roofline = nbytes / (m.peak_bw_cg * 1e9) * m.f_clk_ghz * 1e9
    print(f"{s.describe()}: sim {sim} model {model} ({100 * (model - sim) / sim:+.1f} %), "
          f"{100 * roofline / sim:.1f} % of the DMA roofline")
    assert abs(model - sim) <= bound * sim
    assert sim <= roofline / 0.8
