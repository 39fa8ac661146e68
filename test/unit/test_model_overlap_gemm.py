"""The overlapping-distribution GEMM model (backends/model/overlap_gemm.py): register-tile cycle
counts against the simulator's measurements, the planner's choices on ResNet-50's 7x7 / 56x56
1x1 layers, LDM budgets, and the cost terms that follow the lowering (hoisting, aligned runs,
the put queued before the next loads)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from taihu.backends.model.conv import ConvShape, GemmShape, choose_conv, plan_explicit
from taihu.backends.model.overlap_gemm import (
    TILE_OVERHEAD,
    block_cycles,
    block_strips,
    overlap_blocking,
    overlap_cost,
    overlap_footprint,
    plan_overlap_gemm,
)
from taihu.target.machine import default_machine

M = default_machine()


@pytest.mark.parametrize("vlen,olen,k,measured", [
    (32, 49, 32, 13563), (32, 49, 56, 23055), (52, 8, 64, 7121),
    (32, 2, 128, 2089), (112, 2, 32, 1999), (48, 1, 128, 2015), (4, 8, 128, 1491), (8, 8, 128, 2341),
])
def test_block_cycles_match_the_simulated_gemm_block(vlen: int, olen: int, k: int, measured: int) -> None:
    """Simulator, one loop.gemm_block per CPE (test_loop_to_sw's module, f32 A/B, f64 C):
    32 x 49 (24 full tiles + one 8-vector x 1 row tile), 52 x 8 (vec n: 6 full tiles + one
    1-vector x 8-row tile), the wide / tall tiles of the remainder strips (8 x 2, 8 x 2 x 3 +
    4 x 2, 12 x 1, 1 x 8, 2 x 8)."""
    assert block_cycles(vlen, olen, k) == pytest.approx(measured, rel=0.03)


@pytest.mark.parametrize("nvec,olen", [(28, 2), (13, 8), (8, 49), (12, 1), (5, 12), (30, 5), (2, 20), (3, 3)])
def test_block_strips_cover_the_block_once(nvec: int, olen: int) -> None:
    """The strips tile the (vectors x rows) block exactly (the lowering's gemm_block_strips)."""
    from taihu.passes.conversion.loop_to_sw.gemm import gemm_block_strips

    strips = gemm_block_strips(nvec, olen)
    assert sorted((n_vt * n_st, nv, ns) for n_vt, nv, _, n_st, ns, _ in strips if n_vt and n_st) == sorted(
        block_strips(nvec, olen))
    cover = [[0] * olen for _ in range(nvec)]
    for n_vt, nv, vbase, n_st, ns, sbase in strips:
        for i in range(n_vt * nv):
            for j in range(n_st * ns):
                cover[vbase + i][sbase + j] += 1
    assert all(c == 1 for row in cover for c in row)


def test_full_tiles_cost_16_cycles_per_k_step_plus_the_tile_overhead() -> None:
    assert block_cycles(16, 4, 10) == 16 * 10 + TILE_OVERHEAD
    assert block_cycles(64, 8, 10) == 8 * (16 * 10 + TILE_OVERHEAD)


def test_resnet_7x7_pointwise_plans() -> None:
    """1x1 512 -> 2048 on 7x7 (L19): vec m on the (K, M)-stored weights, all 49 columns on every
    CPE (no padding), 32 rows per CPE (128-B weight runs); 2048 -> 512 (L21): vec n on a copy
    whose columns are padded to 52."""
    s = ConvShape(1, 512, 7, 7, 2048, 1, 1, bias=True, relu=True, const_weights=True)
    g = plan_explicit(s, M).gemm
    assert g.overlap and (g.vec, g.bm, g.bn, g.trans_a) == ("m", 2048, 49, True)
    assert g.ldm_bytes <= M.ldm_user_bytes
    t = plan_explicit(ConvShape(1, 2048, 7, 7, 512, 1, 1, bias=True, relu=True, const_weights=True), M).gemm
    assert t.overlap and (t.vec, t.bn) == ("n", 52)


def test_vec_m_needs_constant_weights_and_pad_n_gives_vec_n_only() -> None:
    assert plan_overlap_gemm(GemmShape(2048, 49, 512, const_a=False), M) is None  # 49 % 4: no vec n either
    p = plan_overlap_gemm(GemmShape(2048, 49, 512, pad_n=True, ldb=52), M)
    assert p is not None and p.vec == "n" and p.bn == 52


def test_hoisted_weights_for_a_single_k_step() -> None:
    """1x1 64 -> 256 on 56x56 (L3): K = 64 in one step, the weight block is invariant over the N
    blocks -> loaded once (hoist_a), single-buffered in the footprint."""
    s = ConvShape(1, 64, 56, 56, 256, 1, 1, bias=True, relu=True, const_weights=True)
    g = choose_conv(s, M).plan.gemm
    assert g.overlap and g.hoist_a and not g.hoist_b and g.bk == 64
    p = GemmShape(g.m, g.n, g.k, bias_along="m")
    hoisted = overlap_blocking(p, g.vec, g.bm, g.bn, g.bk, g.double_c)
    assert hoisted.hoist_a and overlap_footprint(p, hoisted) == g.ldm_bytes
    assert overlap_footprint(p, hoisted) < overlap_footprint(p, replace(hoisted, hoist_a=False))


def test_aligned_runs_move_exactly_their_transactions() -> None:
    """B blocks of 64 floats (256 B) at 128-B aligned offsets of 12 544-B rows move 256 B each;
    with an unaligned row pitch the expected moved bytes are larger."""
    def cost(n: int):
        p = GemmShape(256, n, 64, lda=64, ldb=n, ldc=3136)
        return overlap_cost(p, "n", overlap_blocking(p, "n", 256, 64, 64), M)

    aligned, unaligned = cost(3136), cost(3135)
    assert aligned.moved_bytes < unaligned.moved_bytes


def test_the_put_delays_the_next_step() -> None:
    """One DMA in flight per CPE: a large C block's put delays the next block's first loads, so
    more (smaller-put) blocks are not free."""
    p = GemmShape(1024, 196, 256, lda=256, ldb=196, ldc=196, bias_along="m", maps=1)
    c = overlap_cost(p, "n", overlap_blocking(p, "n", 512, 196, 16, double_c=True), M)
    comp = c.t_compute
    assert c.t_total > comp  # the puts are not fully hidden


def test_window_runs_move_the_transactions_of_their_offsets() -> None:
    """_grid_bytes: 64-B runs at 64-B steps never straddle a 128-B transaction (one each, where
    a random start costs 1.5); aligned rows and steps: whole transactions; 112-B runs of rows
    3136 B apart (ResNet-50 28x28 output rows, f32) average the real phases."""
    from taihu.backends.model.overlap_gemm import _grid_bytes

    assert _grid_bytes(3136, 64, 64, 128) == 128.0
    assert _grid_bytes(4096, 256, 256, 128) == 256.0
    assert _grid_bytes(4096, 200, 256, 128) == 256.0
    off = [(r * 3136 + c * 112) % 128 for r in range(2) for c in range(8)]
    want = sum((-(-(o + 112) // 128) - o // 128) * 128 for o in off) / len(off)
    assert _grid_bytes(3136, 112, 112, 128) == pytest.approx(want)
