"""The memory-level GEMM's (M, N) block loops as ONE loop over the blocks (graph_to_tile/gemm.py,
backends/model/conv.py ``flat_blocks``): index analysis of ``arith.divui``/``remui`` offsets
(tile.index_range, tile-to-loop's index_values) and the effect on the simulator (only the
nest's first A/B DMA is exposed: tile-to-loop's Alg. 8 wrap prefetches across every block)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block

from taihu.backends.model.conv import GemmShape, flat_blocks, plan_gemm
from taihu.target.machine import default_machine
from taihu.dialects import graph, tile
from taihu.passes.conversion.tile_to_loop import index_values
from taihu.test.unit.graph_builder import G


def _const(block: Block, v: int):
    c = arith.ConstantOp(IntegerAttr(v, IndexType()))
    block.add_op(c)
    return c.result


def test_index_analysis_of_divui_remui() -> None:
    f = tile.ForOp(0, 16, 1, name="cMN")
    blk = f.body.block
    four = _const(blk, 4)
    q = arith.DivUIOp(f.iv, four)
    r = arith.RemUIOp(f.iv, four)
    blk.add_ops([q, r])
    rows = arith.MuliOp(q.result, _const(blk, 256))
    blk.add_op(rows)
    assert tile.index_range(q.result) == (0, 3)
    assert tile.index_range(r.result) == (0, 3)
    assert tile.index_range(rows.result) == (0, 768)
    assert index_values(q.result) == [0, 1, 2, 3]
    assert index_values(r.result) == [0, 1, 2, 3]
    assert index_values(rows.result) == [0, 256, 512, 768]
    # within one period the remainder keeps its exact range; a non-constant divisor is unknown
    g = tile.ForOp(8, 11, 1)
    r2 = arith.RemUIOp(g.iv, _const(g.body.block, 8))
    g.body.block.add_op(r2)
    assert tile.index_range(r2.result) == (0, 2)
    bad = arith.DivUIOp(g.iv, f.iv)
    g.body.block.add_op(bad)
    assert tile.index_range(bad.result) is None


def test_flat_blocks_rule() -> None:
    assert flat_blocks(1024, 1024, 256, 256)
    assert not flat_blocks(1024, 256, 256, 256)  # one N block: cM{cK} already wraps
    assert not flat_blocks(1000, 1024, 256, 256)  # boundary blocks keep the nest (peeling)
    p = plan_gemm(GemmShape(1024, 1024, 1024, "f64"), default_machine())
    assert p.flat_blocks


def test_flat_blocks_expose_one_prologue_on_the_simulator() -> None:
    """512x512x1024 fp64 (2x2 blocks of 256^3, 4 K steps): the simulator's exposed DMA is ONE
    A+B prologue (~49k cycles: 2 x 512 KB at 30.94 GB/s), not one per M row of blocks; the
    model is within 6 %."""
    from taihu.backends.sim.runner import simulate
    from taihu.passes.pipelines import lower_to_swsim

    g = G((512, 1024), (1024, 512), dtype=np.float64)
    mod = g.module(g(graph.MatMulOp(*g.args)))
    lower_to_swsim(mod)
    blocking = [op.attributes["taihu.blocking"].data for op in mod.walk() if "taihu.blocking" in op.attributes]
    assert blocking and blocking[0].startswith("bm=256 bn=256 bk=256")
    rep = simulate(mod, inputs=g.inputs(0), numerics=False).report
    k = rep["kernels"][0]
    assert k["breakdown"]["dma"] < 60_000, k["breakdown"]
    import dataclasses

    m = default_machine()
    plan = plan_gemm(GemmShape(512, 512, 1024, "f64"), dataclasses.replace(m, ldm_user_bytes=m.ldm_user_bytes - 512))
    model_cycles = plan.cost.t_total * m.f_clk_ghz * 1e9
    assert abs(model_cycles - k["cycles"]) / k["cycles"] < 0.06
