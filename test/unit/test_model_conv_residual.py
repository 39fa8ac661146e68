"""Model of a residual sum after a convolution (backends/model/conv.py ``ConvShape.residual``,
``fuses_residual``, ``residual_cost``; unfold_conv.py): which plans add it in their C store, what
the fused tile costs in LDM and time, and the separate add kernel of the others."""

from __future__ import annotations

from dataclasses import replace

import pytest

from taihu.backends.model.conv import (
    ConvShape,
    ExplicitPlan,
    choose_conv,
    fuses_residual,
    plan_explicit,
    plan_implicit,
    plan_winograd,
    residual_cost,
)
from taihu.backends.model.unfold_conv import footprint, plan_unfold
from taihu.target.machine import default_machine

M = default_machine()
F_CLK = M.f_clk_ghz * 1e9


def _cycles(t: float) -> float:
    return t * F_CLK


def resnet_1x1(c: int, hw: int, m: int, stride: int = 1, residual: bool = True) -> ConvShape:
    return ConvShape(1, c, hw, hw, m, 1, 1, strides=(stride, stride), bias=True, relu=True, const_weights=True,
                     residual=residual)


@pytest.mark.parametrize("m,hw,sim_cycles", [(256, 56, 451_784), (512, 28, 225_992), (1024, 14, 113_096),
                                             (2048, 7, 57_800)])
def test_residual_cost_tracks_the_simulated_sum_kernels(m: int, hw: int, sim_cycles: int) -> None:
    """[measured] ResNet-50 B=1 ``graph.sum`` + relu kernels (1 x m x hw x hw) on the simulator
    (timing-only report, HEAD 43faa80)."""
    s = ConvShape(1, 64, hw, hw, m, 1, 1)
    assert abs(_cycles(residual_cost(s, M).t_total) - sim_cycles) / sim_cycles < 0.05


def test_choose_conv_memo_keys_on_the_residual_flag() -> None:
    s = resnet_1x1(64, 56, 256, residual=False)
    plain, res = choose_conv(s, M).plan, choose_conv(replace(s, residual=True), M).plan
    assert plain is not res and not fuses_residual(plain) and fuses_residual(res)
    assert isinstance(res, ExplicitPlan) and res.gemm.ldm_bytes > plain.gemm.ldm_bytes  # the residual tile
    assert res.shape.residual and not plain.shape.residual


@pytest.mark.parametrize("c,hw,m,stride", [(64, 56, 256, 1), (128, 28, 512, 1), (256, 14, 1024, 1),
                                            (256, 56, 512, 2), (512, 28, 1024, 2)])
def test_resnet_shortcut_convs_fuse_the_sum(c: int, hw: int, m: int, stride: int) -> None:
    """ResNet-50's 1x1 expand / projection convs up to 14x14 outputs: per-image or pointwise
    GEMMs storing the NCHW output, the sum in their epilogue, cheaper than conv + add pass."""
    s = resnet_1x1(c, hw, m, stride)
    p = choose_conv(s, M).plan
    assert isinstance(p, ExplicitPlan) and not p.batched and fuses_residual(p)
    assert [k.name for k in p.kernels if k.name == "residual"] == []
    apart = choose_conv(replace(s, residual=False), M).plan.cost.t_total + residual_cost(s, M).t_total
    assert p.cost.t_total < apart


def test_7x7_output_fuses_the_sum_in_the_overlapping_gemm() -> None:
    """1x1 -> 7x7x2048: a SUMMA GEMM would clip N = 49 inside the CPE pieces of a 64-column block
    (the residual window synchronous: a separate pass was cheaper, simulator fused 601k vs
    505k + 58k cycles); the overlapping-distribution GEMM keeps all 49 columns on every CPE, so
    the window is one contiguous DMA per CPE and the sum is fused."""
    s = resnet_1x1(512, 7, 2048)
    p = plan_explicit(s, M)
    assert p.gemm.overlap and fuses_residual(p) and [k.name for k in p.kernels] == ["gemm"]
    apart = plan_explicit(replace(s, residual=False), M).cost.t_total + residual_cost(s, M).t_total
    assert p.cost.t_total < apart


def test_other_algorithms_pay_a_separate_kernel() -> None:
    s = ConvShape(1, 256, 14, 14, 256, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True,
                  residual=True)
    for plan in (plan_winograd(s, M), plan_implicit(s, M)):
        assert not fuses_residual(plan) and plan.kernels[-1].name == "residual"
        base = {"winograd": plan_winograd, "implicit": plan_implicit}[plan.algorithm](replace(s, residual=False), M)
        assert plan.cost.t_total == pytest.approx(base.cost.t_total + residual_cost(s, M).t_total)
    batched = plan_explicit(replace(s, n=4, c=16, m=32, h=8, w=8), M)
    if batched.batched:
        assert not fuses_residual(batched) and batched.kernels[-1].name == "residual"


def test_unfold_reserves_and_costs_the_residual_tile() -> None:
    s = ConvShape(1, 128, 28, 28, 128, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True)
    r = replace(s, residual=True)
    for vec, bm, cb in (("m", 128, 32), ("n", 64, 16)):
        wo_p = -(-28 // (4 if vec == "m" else 16)) * (4 if vec == "m" else 16)
        extra = footprint(r, vec, bm, cb, False, wo_p) - footprint(s, vec, bm, cb, False, wo_p)
        c_local = bm * 8 * wo_p // 64
        assert extra == (2 * -(-4 * c_local // 32) * 32 if wo_p == 28 else 0)  # padded rows: no tile
    # the cheaper of the fused plan and the plain one + a separate add kernel
    p, apart = plan_unfold(r, M), plan_unfold(s, M).cost.t_total + residual_cost(r, M).t_total
    if fuses_residual(p):
        assert not p.padded and p.cost.t_total <= apart
    else:
        assert p.kernels[-1].name == "residual" and p.cost.t_total == pytest.approx(apart)
    padded = plan_unfold(replace(r, h=7, w=7), M)  # Wo = 7 -> 8: always padded
    assert padded.padded and not fuses_residual(padded) and padded.kernels[-1].name == "residual"
