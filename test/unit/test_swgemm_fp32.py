"""The seed's fp32 SGEMM cost model (A7 strategy 2 in swGEMM's blocked loop; GM-1, 004 L869)."""

from __future__ import annotations

import pytest

from taihu.backends.model.gemm_blocking import Blocking, GemmProblem, StructuralPrimitiveModel
from taihu.backends.model.swgemm_fp32 import (
    EQ42_C_FITTED,
    A7LoopCosts,
    a7_cost,
    a7_sweep,
    seed_blockings,
    seed_fitted_primitive,
    seed_ldm_bytes,
)
from taihu.target.machine import default_machine

M = default_machine()
P = GemmProblem(1024, 1024, 1024, "f32")


def test_feasible_set_is_the_seeds_81() -> None:
    blks = seed_blockings(P, M)
    assert len(blks) == 81  # 004 L869
    # the public sweep's own limit (fp64 footprint < 60 KiB) gives the same set for 1024^3
    public = {
        Blocking(bm, bn, bk)
        for bn in (128, 256, 512, 1024)
        for bm in (32, 64, 128, 256, 512, 1024)
        for bk in (32, 64, 128, 256, 512, 1024)
        if 8 * (2 * bn * bk + 2 * bk * bm + bn * bm) / 64 < 60 * 1024
    }
    assert set(blks) == public
    assert seed_ldm_bytes(Blocking(128, 256, 512)) == 53248
    assert seed_ldm_bytes(Blocking(32, 128, 32)) == 1792


def test_loop_costs_match_the_simulated_pipeline() -> None:
    from taihu.benchmarks.calibration import a7_loop_cycles

    lc = A7LoopCosts.from_machine(M)
    sim = a7_loop_cycles()
    assert lc.convert_per_vec == sim["f32->f64"] == sim["f64->f32"] == 6.0  # lat_ldm_load + 2
    assert lc.zero_per_elem == sim["zero C"] == 2.0


def test_cost_terms_of_the_worst_blocking() -> None:
    c = a7_cost(P, Blocking(32, 128, 32), M)
    cyc = M.cycles_to_seconds
    assert (c.steps, c.blocks) == (8192, 256)
    assert c.t_convert_step == pytest.approx(cyc(120))  # 6 x (32*32 + 32*128) / 64 / 4
    assert c.t_zero_c == pytest.approx(cyc(128))  # 2 x 32*128/64
    assert c.t_convert_c == pytest.approx(cyc(96))  # 6 x 64 / 4
    # A: 4 rows x 16 B per CPE, B: 4 rows x 64 B, every block one 128-B transaction
    assert c.t_dma_step == pytest.approx(cyc(200) + 2 * 64 * 4 * 128 / 30.94e9)
    assert c.bound == "dma"
    t_comp = c.t_convert_step + c.t_prim_step
    assert c.total == pytest.approx(c.t_dma_step * 8192 + t_comp + 256 * (c.t_zero_c + c.t_convert_c + c.t_put_c))
    seed = a7_cost(P, Blocking(32, 128, 32), M, overlap="seed")  # memory-bound: only T_DMA/16 gained
    step = t_comp + c.t_dma_step * 15 / 16
    assert seed.total == pytest.approx(c.t_dma_step + 8191 * step + t_comp + 256 * (c.t_zero_c + c.t_convert_c + c.t_put_c))
    assert seed.gflops < c.gflops
    serial = a7_cost(P, Blocking(32, 128, 32), M, overlap="none")  # the no-overlap bound
    assert serial.total == pytest.approx(
        c.t_dma_step + 8191 * (t_comp + c.t_dma_step) + t_comp + 256 * (c.t_zero_c + c.t_convert_c + c.t_put_c))


def test_cost_terms_of_the_best_blocking() -> None:
    c = a7_cost(P, Blocking(128, 256, 512), M)
    cyc = M.cycles_to_seconds
    assert (c.steps, c.blocks, c.ldm_bytes) == (64, 32, 53248)
    assert c.t_convert_step == pytest.approx(cyc(4608))  # 6 x (128*512 + 512*256) / 64 / 4
    assert c.t_prim_step == pytest.approx(cyc(StructuralPrimitiveModel(M).cycles(128, 256, 512)))
    assert c.t_zero_c == pytest.approx(cyc(1024)) and c.t_convert_c == pytest.approx(cyc(768))
    assert c.bound == "compute"
    # compute-bound: both overlap rules hide the DMA
    assert a7_cost(P, Blocking(128, 256, 512), M, overlap="seed").total == pytest.approx(c.total)
    t_comp = c.t_convert_step + c.t_prim_step
    assert c.total == pytest.approx(c.t_dma_step + 64 * t_comp + 32 * (c.t_zero_c + c.t_convert_c + c.t_put_c))
    assert c.gflops == pytest.approx(2 * 1024**3 / c.total / 1e9)


def test_seed_fitted_primitive_leading_term() -> None:
    sp = seed_fitted_primitive(M)
    big = M.cycles_to_seconds(sp.cycles(1024, 1024, 1024)) / 1024**3
    assert EQ42_C_FITTED < big < EQ42_C_FITTED * 1.03  # leading term = c, plus the per-tile terms
    assert a7_cost(P, Blocking(128, 256, 512), M, prim=sp).t_prim_step > a7_cost(P, Blocking(128, 256, 512), M).t_prim_step


def test_sweep_spread() -> None:
    g = sorted(c.gflops for c in a7_sweep(P, M))
    assert len(g) == 81 and g[-1] / g[0] > 5  # the seed's "more than 5x" (004 L869)


@pytest.mark.parametrize(
    "problem, blk, kw",
    [
        (GemmProblem(1024, 1024, 1024, "f64"), Blocking(32, 128, 32), {}),
        (GemmProblem(1024, 1024, 1024, "f32", vec="m"), Blocking(32, 128, 32), {}),
        (P, Blocking(48, 128, 32), {}),
        (P, Blocking(32, 128, 24), {}),
        (GemmProblem(1000, 1024, 1024, "f32"), Blocking(32, 128, 32), {}),
        (P, Blocking(32, 128, 32), {"overlap": "serial"}),
    ],
)
def test_bad_input_is_a_value_error(problem, blk, kw) -> None:
    with pytest.raises(ValueError):
        a7_cost(problem, blk, M, **kw)
