"""Lowering plans and per-layer algorithm choice (backends/model/conv.py; algorithms.md §B, §C, E7)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taihu.backends.model.conv import (
    ALGORITHMS,
    ConvShape,
    GemmBlocking,
    GemmShape,
    NotApplicable,
    applicability,
    choose_conv,
    gemm_footprint,
    gemm_operand_layouts,
    gemm_sweep,
    is_pointwise,
    memory_bound_cost,
    plan_explicit,
    plan_gemm,
    plan_implicit,
    plan_winograd,
    winograd_tiles,
)
from taihu.backends.model.gemm_blocking import StructuralPrimitiveModel
from taihu.target.machine import default_machine
from taihu.dialects.common import scheme_info

M = default_machine()
PEAK = M.peak_cg_gflops


def conv(n=1, c=64, h=14, w=14, m=64, k=3, s=1, p=1, d=1, g=1, **kw) -> ConvShape:
    return ConvShape(n, c, h, w, m, k, k, (s, s), (p, p, p, p), (d, d), g, **kw)


# ------------------------------------------------------------------------------------------
# GEMM plans
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("vec", ["m", "n"])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_operand_layouts_satisfy_the_tile_gemm_rules(vec: str, trans_a: bool, trans_b: bool) -> None:
    """The (dist, layout) the lowering uses obey tile.gemm's verifier (Table 4.1 travel
    directions, vectorised dim contiguous in the vector-loaded operand and C)."""
    lay = gemm_operand_layouts(vec, trans_a, trans_b)
    scheme = 4 if vec == "n" else 2
    v, a_axis, _ = scheme_info(scheme)
    assert v.value == vec
    dims = {"A": ("k", "m") if trans_a else ("m", "k"), "B": ("n", "k") if trans_b else ("k", "n"), "C": ("m", "n")}
    on_rows = {"A": "m", "B": "k", "C": "m"} if a_axis == "row" else {"A": "k", "B": "n", "C": "n"}
    for name, (dist, layout) in lay.items():
        row_dim = 0 if dist == "rc" else 1
        assert dims[name][row_dim] == on_rows[name], (name, dist)
        if name in ("C", "A" if vec == "m" else "B"):
            contiguous = dims[name][0 if layout == "col" else 1]
            assert contiguous == vec, (name, layout)


def test_plan_gemm_respects_multiples_and_ldm() -> None:
    for (m, n, k, dt) in [(1024, 1024, 1024, "f64"), (300, 500, 200, "f32"), (1, 1000, 2048, "f32"), (4096, 49, 512, "f32")]:
        p = plan_gemm(GemmShape(m, n, k, dt), M)
        um, un = (128, 32) if p.vec == "m" else (32, 128)
        assert p.bm % um == 0 and p.bn % un == 0 and p.bk % 8 == 0
        assert p.ldm_bytes <= M.ldm_user_bytes
        blk = GemmBlocking(p.bm, p.bn, p.bk, p.staged, p.hoist_a, p.hoist_b, p.double_c)
        assert p.ldm_bytes == gemm_footprint(blk, dt)
        # blocks never exceed the padded dims
        assert p.bm <= -(-m // um) * um and p.bn <= -(-n // un) * un and p.bk <= -(-k // 8) * 8
        assert 0 < p.cost.gflops() < PEAK


def test_plan_gemm_is_the_minimum_of_the_sweep() -> None:
    """E7 / §B item 7: the chosen blocking is the fastest modelled candidate."""
    cube = GemmShape(1024, 1024, 1024, "f32")
    pick = plan_gemm(cube, M, vec="n")
    sweep = gemm_sweep(cube, M, min_bk=8)
    assert sweep and all(pick.cost.t_total <= p.cost.t_total + 1e-15 for p in sweep)
    # spread of the sweep (GM-1, 004 L869: > 5x between worst and best on hardware)
    g = [p.cost.gflops() for p in gemm_sweep(cube, M, min_bk=32)]
    assert max(g) / min(g) > 5


def test_dgemm_efficiency() -> None:
    """Compiler's own choices for DGEMM: 4096^3 >= 90 % of peak, 1024^3 >= 80 % (the model
    follows tile-to-loop's prefetch: within a K loop, and across blocks when K is a multiple of
    the K block (Alg 8's wrap); checked against the simulator in
    test/integration/test_lowering_conv.py), and bigger is never slower per flop."""
    g1 = plan_gemm(GemmShape(1024, 1024, 1024, "f64"), M).cost.gflops()
    g4 = plan_gemm(GemmShape(4096, 4096, 4096, "f64"), M).cost.gflops()
    assert g4 >= 0.90 * PEAK and g1 >= 0.80 * PEAK and g4 >= g1


def test_wrap_prefetch_only_when_k_is_not_split() -> None:
    """A K loop split at a boundary (K % bk != 0) exposes its first DMA in every block."""
    even = plan_gemm(GemmShape(512, 512, 512, "f64"), M, blocking=(128, 128, 128), vec="n")
    odd = plan_gemm(GemmShape(512, 512, 500, "f64"), M, blocking=(128, 128, 128), vec="n")
    assert odd.cost.t_total > even.cost.t_total * 0.99


def test_gemm_cost_terms() -> None:
    """The cost is bounded below by the pure DMA and the pure compute of the steps and above by
    their sum (+ epilogues), and its flop count is 2MNK x batch."""
    p = plan_gemm(GemmShape(512, 512, 512, "f32", batch=3), M)
    c = p.cost
    assert c.flops == 2 * 512**3 * 3
    prim = StructuralPrimitiveModel(M)
    steps = 3 * math.prod(p.blocks)
    assert c.t_total >= steps * prim(p.bm, p.bn, p.bk, p.vec)
    assert c.t_total <= c.t_dma + c.t_compute + 1e-12
    assert 0 < c.dma_efficiency <= 1


def test_hoisting_of_a_loop_invariant_panel() -> None:
    """GEMP with a small K x N panel: B is loaded once (one K block and one N block)."""
    p = plan_gemm(GemmShape(4096, 64, 64, "f32"), M)
    assert p.hoist_b and p.blocks[1] == 1 and p.blocks[2] == 1
    assert p.shape_class == "GEMP"


def test_fp64_natural_layout_is_not_staged() -> None:
    p = plan_gemm(GemmShape(1024, 1024, 1024, "f64"), M, vec="n")
    assert "A" not in p.staged and "B" not in p.staged
    assert plan_gemm(GemmShape(256, 256, 256, "f32"), M).staged >= {"A", "B", "C"}


def test_fp64_c_is_double_buffered_in_place() -> None:
    """fp64 C in its natural layout: the put of a block overlaps the next block through a
    double-buffered fp64 C tile (no staging copy): 2 C blocks of LDM instead of 3, so 256^3
    blocks fit the pass's budget (ldm_user_bytes - 512)."""
    import dataclasses

    mach = dataclasses.replace(M, ldm_user_bytes=M.ldm_user_bytes - 512)
    p = plan_gemm(GemmShape(1024, 1024, 1024, "f64"), mach)
    assert (p.bm, p.bn, p.bk) == (256, 256, 256) and p.double_c and "C" not in p.staged
    c = 256 * 256 * 8 // 64
    assert p.ldm_bytes == 2 * 2 * (256 * 256 * 8 // 64) + 2 * c <= mach.ldm_user_bytes
    # a full C operand is loaded into the stored tile: no delayed store, single C
    q = plan_gemm(GemmShape(1024, 1024, 1024, "f64", c_full=True), mach)
    assert not q.double_c


def test_plan_gemm_errors() -> None:
    with pytest.raises(ValueError, match="positive"):
        plan_gemm(GemmShape(0, 4, 4), M)
    with pytest.raises(ValueError, match="dtype"):
        plan_gemm(GemmShape(4, 4, 4, "f16"), M)
    with pytest.raises(ValueError, match="no GEMM blocking fits"):
        plan_gemm(GemmShape(1024, 1024, 1024, "f64"), M, blocking=(1024, 1024, 1024))


# ------------------------------------------------------------------------------------------
# Convolution
# ------------------------------------------------------------------------------------------


def test_conv_shape_geometry_and_flops() -> None:
    s = conv(n=2, c=3, h=224, w=224, m=64, k=7, s=2, p=3)
    assert (s.ho, s.wo) == (112, 112)
    assert s.flops == 2 * 2 * 64 * 112 * 112 * 3 * 49
    assert s.describe() == "2x64x112x112 <- 2x3x224x224 * 64x3x7x7 s2 p3,3,3,3"
    dw = conv(c=32, m=32, g=32)
    assert (dw.cg, dw.mg) == (1, 1) and dw.flops == 2 * 32 * 14 * 14 * 9


@pytest.mark.parametrize(
    "shape,alg,reason",
    [
        (conv(c=32), "implicit", "needs >= 64 input and output channels"),
        (conv(m=16), "implicit", "needs >= 64 input and output channels"),
        (conv(g=2), "implicit", "needs group = 1"),
        (conv(k=5, p=2), "winograd", "needs a 3x3 kernel"),
        (conv(s=2), "winograd", "needs stride 1"),
        (conv(d=2, p=2), "winograd", "needs dilation 1"),
        (conv(g=4), "winograd", "needs group = 1"),
        (conv(), "fft", "unknown convolution algorithm"),
    ],
)
def test_applicability(shape: ConvShape, alg: str, reason: str) -> None:
    assert reason in (applicability(shape, alg) or "")
    with pytest.raises(NotApplicable, match=reason):
        choose_conv(shape, M, alg)


def test_every_layer_has_im2col() -> None:
    for s in (conv(c=3, m=8, k=11, s=4, p=2), conv(c=32, m=32, g=32), conv(c=8, m=8, k=5, d=2, p=4)):
        assert applicability(s, "im2col") is None
        assert choose_conv(s, M).algorithm == "im2col"


def test_choice_is_the_fastest_candidate() -> None:
    for s in (conv(n=32, c=256, m=256, h=56, w=56), conv(n=1, c=512, m=512, h=14, w=14), conv(c=64, m=256, k=1, p=0)):
        ch = choose_conv(s, M)
        plans = [p for p in ch.candidates.values() if not isinstance(p, str)]
        assert ch.plan.cost.t_total == min(p.cost.t_total for p in plans)
        assert set(ch.candidates) == set(ALGORITHMS)


def test_forced_algorithm_is_used() -> None:
    s = conv(n=2, c=64, m=64, h=10, w=10)
    for alg in ALGORITHMS:
        assert choose_conv(s, M, alg).algorithm == alg


def test_implicit_plan_fits_and_reuses_weights() -> None:
    s = conv(n=32, c=128, m=128, h=28, w=28, bias=True, relu=True)
    p = plan_implicit(s, M)
    assert p.ldm_bytes <= M.ldm_user_bytes
    um, un = (128, 32) if p.vec == "m" else (32, 128)
    assert p.bm % um == 0 and p.bn % un == 0 and p.bk % 8 == 0
    assert 1 <= p.groups <= 8 and p.b_b <= s.n and p.b_ro <= s.ho
    assert p.variant == ("batch" if p.b_b > 1 else "image")
    # non-constant kxk weights need the re-layout kernel, constant ones are folded
    assert [k.name for k in p.kernels] == ["weights", "conv"]
    assert [k.name for k in plan_implicit(ConvShape(**{**s.__dict__, "const_weights": True}), M).kernels] == ["conv"]


def test_implicit_group_sharing_reduces_weight_traffic() -> None:
    """Batch-size-aware reuse (Alg 3, eq 5-5): more C tiles per weight tile -> fewer bytes."""
    from taihu.backends.model.conv import _implicit_cost

    s = conv(n=8, c=256, m=256, h=14, w=14)
    one = _implicit_cost(s, "m", 256, 32, 64, 1, 1, M)
    four = _implicit_cost(s, "m", 256, 32, 64, 4, 1, M)
    assert four.moved_bytes < one.moved_bytes


def test_explicit_forms() -> None:
    pw = plan_explicit(conv(n=4, c=256, m=1024, k=1, p=0), M)
    assert pw.pointwise and [k.name for k in pw.kernels] == ["gemm"]
    assert is_pointwise(conv(k=1, p=0)) and not is_pointwise(conv(k=1, p=0, s=2))
    one = plan_explicit(conv(n=1, c=64, m=64), M)
    assert not one.batched and [k.name for k in one.kernels] == ["im2col", "gemm"]
    many = plan_explicit(conv(n=32, c=128, m=128, h=28, w=28), M)
    if many.batched:
        assert [k.name for k in many.kernels] == ["im2col", "gemm", "relayout"]
        assert many.gemm.n == 32 * 28 * 28
    else:
        assert many.gemm.n == 28 * 28 and many.gemm.batch == 32


def test_winograd_plan() -> None:
    s = conv(n=2, c=64, m=64, h=10, w=12, const_weights=False)
    p = plan_winograd(s, M)
    tr, tc = winograd_tiles(s.ho, s.wo)
    assert p.p == 2 * tr * tc and p.p_pad % p.gemm.bm == 0 and p.p_pad >= p.p
    assert p.gemm.batch == 16 and p.gemm.trans_b
    assert [k.name for k in p.kernels] == ["filter", "input", "gemm", "output"]
    # effective GFLOPS: direct flops over the time (may exceed the GEMM's own rate)
    assert p.cost.flops == s.flops
    assert [k.name for k in plan_winograd(ConvShape(**{**s.__dict__, "const_weights": True}), M).kernels] == [
        "input", "gemm", "output"]


def test_memory_bound_cost_is_eq_3_1_summed() -> None:
    c = memory_bound_cost("x", [(64, 1024, False)], dmas_per_cpe=1, machine=M)
    lat = M.cycles_to_seconds(M.dma_latency)
    moved = ((1024 - 4) / 128 + 1) * 128  # expected whole transactions, unaligned 4-B start
    assert c.t_total == pytest.approx(lat + 64 * moved / (M.peak_bw_cg * 1e9))
    assert c.dma_efficiency == pytest.approx(1024 / moved)


@settings(max_examples=40, deadline=None)
@given(
    n=st.sampled_from([1, 2, 32]),
    c=st.sampled_from([3, 16, 64, 128, 512]),
    hw=st.sampled_from([7, 14, 28, 56]),
    m=st.sampled_from([16, 64, 256, 1024]),
    k=st.sampled_from([1, 3, 5, 7]),
    s=st.sampled_from([1, 2]),
)
def test_choose_conv_always_finds_a_plan(n, c, hw, m, k, s) -> None:
    """Property: every layer gets a plan (im2col at least), within the LDM budget, with a
    positive finite time; implicit only when it applies."""
    shape = conv(n=n, c=c, h=hw, w=hw, m=m, k=k, s=s, p=k // 2)
    ch = choose_conv(shape, M)
    assert 0 < ch.plan.cost.t_total < math.inf
    if ch.algorithm == "implicit":
        assert min(c, m) >= 64
    for alg, plan in ch.candidates.items():
        if isinstance(plan, str):
            assert applicability(shape, alg) is not None or "fits" in plan
        else:
            assert plan.cost.gflops() > 0


def _lowered_buffers(mod, algorithm: str) -> dict[str, tuple[int, ...]]:
    """LDM buffer name -> shape of the conv module lowered to the loop level with ``algorithm``."""
    from taihu.dialects import loop
    from taihu.passes.pipelines import build_pipeline, run_pipeline

    run_pipeline(build_pipeline({"conv_algorithm": algorithm}, stop_after="convert-tile-to-loop"), mod)
    return {op.buffer_name.data: op.buffer_type.get_shape() for op in mod.walk() if isinstance(op, loop.LdmBufferOp)}


def _conv_graph(n, c, h, w, m, kh, kw, st=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1)):
    import numpy as np

    from taihu.dialects import graph
    from taihu.test.unit.graph_builder import G

    g = G((n, c, h, w))
    wt = g.cst(np.zeros((m, c, kh, kw), np.float32), "w")
    return g.module(g(graph.Conv2dOp(g.args[0], wt, None, strides=st, pads=pads, dilations=dil, group=1), "conv"))


@pytest.mark.parametrize(
    "shape",
    [
        (1, 64, 56, 56, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
        (1, 512, 14, 14, 512, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1)),
        (2, 16, 13, 11, 8, 3, 5, (1, 2), (2, 1, 0, 2), (2, 1)),
    ],
)
def test_im2col_model_tasks_are_the_lowered_ones(shape) -> None:
    """The model prices the im2col kernel the lowering emits: its task decomposition (shared
    backends/model/tasks.py, called with the model's geometry and LDM budget) sizes the LDM
    buffers tile-to-loop allocates (rows x W input, rows x kw x Wo unfolded)."""
    from taihu.backends.model import tasks
    from taihu.backends.model.conv import im2col_tasks

    n, c, h, w, m, kh, kw, st, pads, dil = shape
    bufs = _lowered_buffers(_conv_graph(n, c, h, w, m, kh, kw, st, pads, dil), "im2col")
    s = ConvShape(n, c, h, w, m, kh, kw, st, pads, dil)
    if "im2col_planes" in bufs:  # whole-plane tasks (tasks.im2col_planes): q channels per task
        hows = {s.ho * s.wo, -(-s.ho * s.wo // 4) * 4}
        x = tasks.Im2colShape(n, c, h, w, (kh, kw), st, pads, dil, 4)
        pls = [tasks.im2col_planes(x, M.ldm_user_bytes, how) for how in hows]
        assert any(pl is not None and bufs["im2col_planes"] == (pl.q, pl.hp, w)
                   and bufs["im2col_block"] == (pl.q, kh * kw, s.ho * s.wo) for pl in pls)
        return
    t = im2col_tasks(s, M.ldm_user_bytes)
    assert bufs["im2col_in"] == (t.rows_max, w) and bufs["im2col_col"] == (t.rows_max, kw, s.wo)


def test_n_border_clean_and_pointwise_copy_choice() -> None:
    """A border N block that ends at a CPE piece boundary keeps the pointwise GEMM reading x
    (3136 = 12 x 256 + 64, pieces of 32); a 196-column image is clean with vec m bn = 224
    (pieces of 28) but not with vec n bn = 256 (pieces of 32): the planner avoids the copy."""
    from taihu.backends.model.conv import n_border_clean

    assert n_border_clean(3136, 256) and n_border_clean(196, 224) and n_border_clean(512, 256)
    assert not n_border_clean(196, 256) and not n_border_clean(49, 64)
    p = plan_explicit(ConvShape(1, 64, 56, 56, 64, 1, 1, bias=True, relu=True, const_weights=True), M)
    assert p.pointwise and len(p.kernels) == 1 and n_border_clean(56 * 56, p.gemm.bn)
    q = plan_explicit(ConvShape(1, 256, 14, 14, 1024, 1, 1, bias=True, relu=True, const_weights=True), M)
    assert q.pointwise and n_border_clean(196, q.gemm.bn)
    # 7x7 outputs: every SUMMA N block would be clipped inside a piece -> the overlapping
    # distribution (N not split over the mesh) reads x itself: vec m, bn = 49
    r = plan_explicit(ConvShape(1, 512, 7, 7, 2048, 1, 1, bias=True, relu=True, const_weights=True), M)
    assert r.pointwise and r.gemm.overlap and (r.gemm.vec, r.gemm.bn) == ("m", 49) and len(r.kernels) == 1
    # ... or, without the vec m form (M = 512: 8 rows per CPE), vec n on a copy padded to 52
    t = plan_explicit(ConvShape(1, 2048, 7, 7, 512, 1, 1, bias=True, relu=True, const_weights=True), M)
    assert t.gemm.overlap and (t.gemm.vec, t.gemm.bn) == ("n", 52) and [k.name for k in t.kernels] == ["im2col", "gemm"]


@pytest.mark.parametrize("shape", [(1, 256, 14, 14, 256), (32, 256, 14, 14, 256), (2, 64, 9, 11, 96)])
def test_winograd_model_tasks_are_the_lowered_ones(shape) -> None:
    """The model prices the Winograd transforms the lowering emits: the shared tilings, called
    with the model's geometry, P padding, m' and LDM budget, size tile-to-loop's task buffers
    ((16, t, g) transformed tiles of the input and output transforms)."""
    from taihu.backends.model.conv import plan_winograd, winograd_input_tasks, winograd_output_tasks

    n, c, h, w, m = shape
    bufs = _lowered_buffers(_conv_graph(n, c, h, w, m, 3, 3, pads=(1, 1, 1, 1)), "winograd")
    s = ConvShape(n, c, h, w, m, 3, 3, pads=(1, 1, 1, 1), const_weights=True)
    p = plan_winograd(s, M)
    ti = winograd_input_tasks(s, p.p_pad, p.tiles_per_cpe, M.ldm_user_bytes, M)
    to = winograd_output_tasks(s, p.p_pad, M.ldm_user_bytes, M)
    assert bufs["wino_in_v"] == (16, ti.t, ti.g) and bufs["wino_out_m"] == (16, to.t, to.g)
