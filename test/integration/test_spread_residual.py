"""The overlapping-distribution GEMM of a 1x1 convolution: constant weights stored K-blocked when
they are streamed in K blocks (graph_to_tile ``_explicit``, model ``overlap_gemm.kblocked_a``),
the fused residual window's get spread over the K loop and each block's C put over the next
block's K loop (tile-to-loop ``spread``, model ``overlap_gemm.residual_spread`` /
``put_spread``): the loop IR has the chunks, the simulated outputs match the graph reference,
and the model tracks the simulator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from xdsl.context import Context

from taihu.backends.model.conv import ConvShape, choose_conv
from taihu.backends.reference import run_module
from taihu.dialects import loop
from taihu.passes.conversion.graph_to_tile import LDM_RESERVE
from taihu.target.machine import default_machine
from taihu.test.integration.test_conv_residual import ATOL, RTOL, residual_graph


def _plan(c: int, hw: int, m: int, residual: bool):
    mach = default_machine()
    s = ConvShape(1, c, hw, hw, m, 1, 1, bias=True, relu=True, const_weights=True, residual=residual)
    plan_mach = dataclasses.replace(mach, ldm_user_bytes=mach.ldm_user_bytes - LDM_RESERVE)
    return choose_conv(s, plan_mach, "auto", mem_budget=mach.ldm_user_bytes).plan


def test_model_spreads_where_the_steps_have_slack() -> None:
    """ResNet-50's 1x1 256->1024 on 14x14 + shortcut (K steps of 16, compute-bound, 4 blocks of
    256 rows): the window and the puts spread into 12 chunks each (4 rows x 3 column pieces over
    the 15 pipelined K iterations); 512->2048 on 7x7 + shortcut (one block, DMA-bound steps: each
    chunk would wait a round-robin round): one get; 512->256 on 28x28 (7 blocks of 112 columns):
    the puts only."""
    g = _plan(256, 14, 1024, True).gemm
    assert g.overlap and g.bk < 256 and g.double_c and (g.spread_res, g.spread_put) == (12, 12)
    g = _plan(512, 7, 2048, True).gemm
    assert (g.spread_res, g.spread_put) == (0, 0)
    g = _plan(512, 28, 256, False).gemm
    assert g.overlap and (g.spread_res, g.spread_put) == (0, 12)


@pytest.mark.parametrize("residual", [True, False], ids=["residual", "plain"])
def test_spread_and_kblocked_simulated(residual: bool) -> None:
    from taihu.backends.sim.runner import simulate
    from taihu.passes.pipelines import build_pipeline, lower_to_swsim, run_pipeline

    c, hw, m = 256, 14, 1024
    plan = _plan(c, hw, m, residual)
    assert plan.gemm.overlap and not plan.gemm.trans_a and not plan.gemm.hoist_a and plan.gemm.bk < c
    g, out = residual_graph(1, c, hw, hw, m, 1, const_w=True)
    if not residual:  # relu(conv(x) + b) only: drop the shortcut sum
        from taihu.dialects import graph
        from taihu.test.unit.graph_builder import G

        rng = np.random.default_rng(0)
        g = G((1, c, hw, hw))
        wt = (rng.standard_normal((m, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
        y = g(graph.Conv2dOp(g.args[0], g.cst(wt, "w"), g.cst(rng.standard_normal(m).astype(np.float32), "b")), "conv")
        out = g(graph.ReluOp(y), "out")
    module = g.module(out)
    inputs = g.inputs(1)
    ref = run_module(module.clone(), inputs)

    at_loop = module.clone()
    run_pipeline(build_pipeline({}, stop_after="convert-tile-to-loop"), at_loop, Context())
    gets = [o for o in at_loop.walk() if isinstance(o, loop.DmaStartOp) and o.is_get]
    res_gets = [o for o in gets if o.memref.name_hint == "res"]
    if residual:  # the peeled first block's own window and its prefetch of the next one, spread
        # over its K loop, and the loop's prefetch (12 row pieces each)
        assert len(res_gets) == 36 and all(o.size_values[-2] == 1 for o in res_gets)
        assert not any("taihu.spread_residual" in o.attributes for o in at_loop.walk())
    else:
        assert not res_gets
    # the puts of blocks 0 .. 2 in 12 chunks each (loop body and the last block), block 3's whole
    puts = [o for o in at_loop.walk() if isinstance(o, loop.DmaStartOp) and not o.is_get]
    assert sorted(o.size_values[-1] < 196 for o in puts) == [False] + [True] * 24
    assert not any("taihu.spread_put" in o.attributes for o in at_loop.walk())
    # the weights are read K-blocked: one contiguous run (4 rows x bk) per CPE
    w_gets = [o for o in gets if o.memref.name_hint == "w"]
    assert w_gets and all(o.size_values[-1] == plan.gemm.bk and o.descriptor()[1] == 0 for o in w_gets)

    lower_to_swsim(module)
    got = simulate(module, inputs=inputs).outputs
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=k)


def test_spread_model_tracks_the_simulator() -> None:
    """Timing only: the spread plan's GEMM kernel against the simulator, within 6 %."""
    from taihu.backends.sim.runner import simulate
    from taihu.passes.pipelines import lower_to_swsim

    mach = default_machine()
    plan = _plan(256, 14, 1024, True)
    g, out = residual_graph(1, 256, 14, 14, 1024, 1, const_w=True)
    module = g.module(out)
    lower_to_swsim(module)
    rep = simulate(module, inputs=g.inputs(0), numerics=False).report
    sim = sum(k["cycles"] for k in rep["kernels"])
    model = plan.cost.t_total * mach.f_clk_ghz * 1e9
    print(f"spread residual 256->1024 14x14: sim {sim}, model {model:.0f} ({100 * (model - sim) / sim:+.1f} %)")
    assert abs(model - sim) < 0.06 * sim


def test_im2col_planes_one_get_per_task_simulated() -> None:
    """A 1x1 conv on 7x7 whose GEMM reads a col padded to 52 columns: the im2col copy's tasks
    get their q planes (no vertical padding) with ONE DMA each (tile-to-loop mem_prims, model
    ``_im2col_planes_cost``), and the simulated outputs match the reference."""
    from taihu.backends.sim.runner import simulate
    from taihu.dialects import graph
    from taihu.passes.pipelines import build_pipeline, lower_to_swsim, run_pipeline
    from taihu.test.unit.graph_builder import G

    c, hw, m = 256, 7, 128
    rng = np.random.default_rng(1)
    g = G((1, c, hw, hw))
    wt = (rng.standard_normal((m, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
    y = g(graph.Conv2dOp(g.args[0], g.cst(wt, "w"), g.cst(rng.standard_normal(m).astype(np.float32), "b")), "conv")
    module = g.module(g(graph.ReluOp(y), "out"))
    inputs = g.inputs(1)
    ref = run_module(module.clone(), inputs)
    at_loop = module.clone()
    run_pipeline(build_pipeline({}, stop_after="convert-tile-to-loop"), at_loop, Context())
    spmd = [o for o in at_loop.walk() if isinstance(o, loop.SpmdOp) and o.kernel_name.data.endswith("_im2col")]
    assert len(spmd) == 1
    gets = [o for o in spmd[0].walk() if isinstance(o, loop.DmaStartOp) and o.is_get]
    assert len(gets) == 1 and gets[0].size_values[1] > 1 and gets[0].size_values[2:] == (hw, hw)
    lower_to_swsim(module)
    got = simulate(module, inputs=inputs).outputs
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=k)


@pytest.mark.parametrize("c,m", [(256, 256), (256, 512)], ids=["one_block", "two_blocks"])
def test_spread_one_or_two_blocks_simulated(c: int, m: int) -> None:
    """1x1 conv + shortcut on 14x14 with one resp. two blocks of 256 rows (no block loop: the
    residual windows are spread over the K loops of the straight-line blocks): the chunks are in
    the loop IR, the outputs match the reference and the kernel's cycles the model within 6 %."""
    from taihu.backends.sim.runner import simulate
    from taihu.passes.pipelines import build_pipeline, lower_to_swsim, run_pipeline

    mach = default_machine()
    plan = _plan(c, 14, m, True)
    assert plan.gemm.overlap and plan.gemm.spread_res > 1
    g, out = residual_graph(1, c, 14, 14, m, 1, const_w=True)
    module = g.module(out)
    inputs = g.inputs(1)
    ref = run_module(module.clone(), inputs)
    at_loop = module.clone()
    run_pipeline(build_pipeline({}, stop_after="convert-tile-to-loop"), at_loop, Context())
    res_gets = [o for o in at_loop.walk() if isinstance(o, loop.DmaStartOp) and o.is_get and o.memref.name_hint == "res"]
    assert len(res_gets) == (m // 256) * plan.gemm.spread_res
    lower_to_swsim(module)
    got = simulate(module, inputs=inputs).outputs
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    g2, out2 = residual_graph(1, c, 14, 14, m, 1, const_w=True)
    timed = g2.module(out2)
    lower_to_swsim(timed)
    sim = sum(k["cycles"] for k in simulate(timed, inputs=g2.inputs(0), numerics=False).report["kernels"])
    model = plan.cost.t_total * mach.f_clk_ghz * 1e9
    print(f"spread residual {c}->{m} 14x14: sim {sim}, model {model:.0f} ({100 * (model - sim) / sim:+.1f} %)")
    assert abs(model - sim) < 0.06 * sim
