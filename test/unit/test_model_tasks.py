"""Task decompositions of the memory primitives (backends/model/tasks.py), shared by
tile-to-loop's mem_prims.py and the analytic model: coverage, LDM fit, the documented choices."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taihu.backends.model.analytic import t_cont_dma, t_stride_dma
from taihu.backends.model.tasks import (
    MIN_CHANNEL_GROUP,
    N_CPE,
    DmaWindow,
    DoesNotFit,
    Im2colShape,
    WinogradInput,
    WinogradOutput,
    chunk_starts,
    fits,
    im2col_tasks,
    ldm_bytes,
    winograd_filter_tasks,
    winograd_filter_windows,
    winograd_input_buffers,
    winograd_input_tiling,
    winograd_input_windows,
    winograd_output_buffers,
    winograd_output_tiling,
    winograd_output_windows,
)
from taihu.target.dma import dma_pattern
from taihu.target.machine import default_machine

M = default_machine()
BUDGET = M.ldm_user_bytes


@given(total=st.integers(1, 300), size=st.integers(1, 300))
def test_chunk_starts_cover_exactly_with_static_size(total, size) -> None:
    """Every element is in a chunk, every chunk lies inside [0, total) (the last one shifted
    left), starts are non-decreasing and ceil(total/size) of them."""
    size = min(size, total)
    cs = chunk_starts(total, size)
    assert len(cs) == -(-total // size)
    assert all(0 <= c <= total - size for c in cs) and cs == sorted(cs)
    covered = set()
    for c in cs:
        covered.update(range(c, c + size))
    assert covered == set(range(total))


def test_ldm_rounding() -> None:
    assert ldm_bytes(1, 4) == 32 and ldm_bytes(8, 4) == 32 and ldm_bytes(9, 4) == 64
    assert fits([8, 0, 8], 4, 64) and not fits([8, 9], 4, 64)


def _im2col_geometry(h, w, k, s, pads, d):
    ho = (h + pads[0] + pads[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (w + pads[1] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    return ho, wo


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(1, 3), c=st.integers(1, 70), h=st.integers(1, 40), w=st.integers(1, 40),
    k=st.tuples(st.integers(1, 7), st.integers(1, 7)), s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pads=st.tuples(*[st.integers(0, 3)] * 4), d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    rpt=st.one_of(st.none(), st.integers(1, 8)), nhwc=st.booleans(), budget=st.sampled_from([BUDGET, 8192, 2048]),
)
def test_im2col_tasks_cover_every_entry_once(n, c, h, w, k, s, pads, d, rpt, nhwc, budget) -> None:
    """Property: the main phase writes every (kernel row i, output row ho) fed by an input row
    exactly once over the groups' tasks, the zero phase exactly the entries fed by vertical
    padding; each task's rows feed consecutive output rows; the buffers fit the budget."""
    ho, wo = _im2col_geometry(h, w, k, s, pads, d)
    if ho < 1 or wo < 1:
        return
    kh, kw = k
    try:
        t = im2col_tasks(Im2colShape(n, c, h, w, k, s, pads, d, 4, nhwc), budget, rpt)
    except DoesNotFit:  # one row, its unfolded rows and (with vertical padding) one zero row do not fit
        pt, sh, dh = pads[0], s[0], d[0]
        padded = any(not 0 <= x * sh + i * dh - pt < h for i in range(kh) for x in range(ho))
        assert not fits([w, kw * wo, kw * wo if padded else 0], 4, budget)
        return
    pt, sh, dh = pads[0], s[0], d[0]
    main = []
    for g in t.groups:
        rows = [g.r0 + j * g.step for j in range(g.count)]
        assert all(0 <= r < h for r in rows)
        assert g.rows <= g.count and (g.rows == 1 or g.step == sh)
        if nhwc and g.step > 1:
            assert g.rows == 1  # a strided NHWC row DMA is not one athread DMA
        for r in rows:
            for i in g.kernel_rows:
                num = r + pt - i * dh
                assert num >= 0 and num % sh == 0
                main.append((i, num // sh))
    zero = [(i, h0) for i, rs in enumerate(t.zero_ranges) for h0_, cnt in rs for h0 in range(h0_, h0_ + cnt)]
    assert len(main) == len(set(main)) and len(zero) == len(set(zero))
    assert set(main) | set(zero) == {(i, x) for i in range(kh) for x in range(ho)}
    assert not set(main) & set(zero)
    for i, x in zero:
        assert not 0 <= x * sh + i * dh - pt < h
    rm = t.rows_max
    assert fits([rm * w, rm * kw * wo, rm * kw * wo if rm > 1 else 0, kw * t.zchunk * wo], 4, budget)
    if rpt is not None:
        assert rm <= rpt


def test_im2col_tasks_default_rows_and_budget_halving() -> None:
    """Default rows per task = N*C*H // 64 (>= 64 tasks); a small budget halves it until the
    buffers fit; one row that does not fit is DoesNotFit with the sizes in the message."""
    x = Im2colShape(1, 64, 56, 56, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4)
    t = im2col_tasks(x, BUDGET)
    interior = max(t.groups, key=lambda g: g.count)
    # 64*56 // 64 = 56 rows wanted; 54 rows (the whole interior group) do not fit, 28 do
    assert (interior.r0, interior.count, interior.kernel_rows, interior.rows) == (1, 54, (0, 1, 2), 28)
    assert not fits([54 * 56, 54 * 3 * 56, 54 * 3 * 56], 4, BUDGET)
    assert sum(64 * g.chunks for g in t.groups) >= N_CPE
    small = im2col_tasks(x, 16384)
    assert small.rows_max < t.rows_max
    assert fits([small.rows_max * 56, 2 * small.rows_max * 3 * 56, 3 * small.zchunk * 56], 4, 16384)
    with pytest.raises(DoesNotFit, match=r"one input row \(4000 elements\) and its unfolded rows \(3x4000\)"):
        im2col_tasks(Im2colShape(1, 1, 4, 4000, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 4), 8192)


def test_im2col_tasks_stride_residues() -> None:
    """7x7 stride 2 pad 3 (ResNet conv1): the interior rows split by stride residue (kernel rows
    {0,2,4,6} and {1,3,5}), rows of a task step by the stride."""
    t = im2col_tasks(Im2colShape(1, 3, 224, 224, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 4), BUDGET)
    big = sorted(t.groups, key=lambda g: -g.count)[:2]
    assert {g.kernel_rows for g in big} == {(0, 2, 4, 6), (1, 3, 5)}
    assert all(g.step == 2 for g in big)
    assert t.zero_ranges[0] == ((0, 2),) and t.zchunk >= 1


def test_dma_window_seconds_and_blocks_follow_eq_3_1_3_2() -> None:
    """A window's time is eq 3-1 (contiguous) / 3-2 (strided) averaged over its start offsets;
    its blocks are the descriptor's blocks with the transactions they touch."""
    eb = 4
    cont = DmaWindow((16, 100), (1, 100), 2, (0, 100))  # two 400-B rows, starts 0 and 400 B
    assert cont.pattern(eb) == (400, 0, 0)
    assert cont.seconds(eb, M) == pytest.approx(2 * (t_cont_dma(400, M) + t_cont_dma(400, M, addr=400)) / 2)
    assert cont.blocks(eb, tasks=3) == (6, 400, (512 + 512) / 2)  # [0,400): 4 txns; [400,800): 4 txns
    strided = DmaWindow((8, 16, 10), (1, 16, 4), 1, (0,))  # 16 blocks of 16 B, 24-B gaps
    assert strided.pattern(eb) == (256, 16, 24)
    assert strided.seconds(eb, M) == pytest.approx(t_stride_dma(256, 16, 24, M))
    count, bsize, mv = strided.blocks(eb, tasks=5)
    assert (count, bsize) == (80, 16) and 16 <= mv <= 256
    with pytest.raises(ValueError, match="is not one DMA"):
        DmaWindow((4, 4, 4), (2, 2, 2)).pattern(eb)
    assert dma_pattern((4, 4, 4), (2, 2, 2), eb) is None


def _cover(til) -> set[tuple[int, int, int, int]]:
    """(b, tr, tile column, channel) covered by the tiling's tasks."""
    out = set()
    for b in range(til.B):
        for tr in range(til.TR):
            for tc0 in til.col_starts:
                for c0 in chunk_starts(til.C, til.g):
                    for tc in range(tc0, tc0 + til.t):
                        out.update((b, tr, tc, c) for c in range(c0, c0 + til.g))
    return out


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 4), c=st.integers(1, 600), h=st.integers(3, 60), w=st.integers(3, 60),
    pads=st.sampled_from([(1, 1, 1, 1), (0, 0, 0, 0), (1, 0, 2, 1)]), nhwc=st.booleans(),
    tpc=st.integers(1, 8), budget=st.sampled_from([BUDGET, 16384]),
)
def test_winograd_tilings_cover_every_tile_and_fit(b, c, h, w, pads, nhwc, tpc, budget) -> None:
    """Property: input and output tilings cover every (image, tile, channel) with tasks of one
    static shape inside the grid, fit the LDM budget, and whole-tile-row tasks split the
    channels in groups of a multiple of 8 or at most the balanced count."""
    ro, co = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    tr, tc = -(-ro // 2), -(-co // 2)
    p_rows = b * tr * tc
    tins = winograd_input_tiling(WinogradInput(b, c, h, w, pads, p_rows, 4, nhwc), budget, M, tpc)
    touts = winograd_output_tiling(WinogradOutput(b, c, ro, co, p_rows, 4, nhwc), budget, M)
    for til, bufs in ((tins, winograd_input_buffers(w, tins.t, tins.g, nhwc)),
                      (touts, winograd_output_buffers(touts.t, touts.g, nhwc))):
        assert (til.B, til.C, til.TR, til.TC) == (b, c, tr, tc)
        assert 1 <= til.t <= tc and 1 <= til.g <= c and fits(bufs, 4, budget)
        if til.g < c:
            assert til.full_width
        if til.full_width:
            gbal = max(-(-c // -(-N_CPE // (b * tr))), min(c, MIN_CHANNEL_GROUP))  # >= 64 tasks, >= 8 channels
            assert til.t == tc and (til.g % MIN_CHANNEL_GROUP == 0 or til.g <= gbal)  # shrunk to fit LDM
        assert til.tasks == b * tr * len(til.col_starts) * len(chunk_starts(c, til.g))
        assert _cover(til) == {(i, r, x, ch) for i in range(b) for r in range(tr) for x in range(tc) for ch in range(c)}
    if not tins.full_width:
        assert tins.t <= tpc


def test_winograd_tiling_choices() -> None:
    """The documented choices: 1x256x14x14 NCHW input -> whole tile rows of 32 channels (56
    tasks = one round over the 64 CPEs, aligned 128-B blocks) rather than the balanced 26 (70
    tasks = two rounds); 56x56x64 NCHW input -> whole tile rows of channel groups; its output
    -> all channels, >= 4 tiles; NHWC input -> the seed's m' tiles with all channels."""
    t = winograd_input_tiling(WinogradInput(1, 256, 14, 14, (1, 1, 1, 1), 56), BUDGET, M, 4)
    assert (t.full_width, t.g, t.tasks) == (True, 32, 56)
    x56 = WinogradInput(1, 64, 56, 56, (1, 1, 1, 1), 28 * 28)
    t_in = winograd_input_tiling(x56, BUDGET, M, 4)
    assert t_in.full_width and t_in.t == 28 and MIN_CHANNEL_GROUP <= t_in.g < 64
    t_out = winograd_output_tiling(WinogradOutput(1, 64, 56, 56, 28 * 28), BUDGET, M)
    assert not t_out.full_width and t_out.g == 64 and t_out.t >= 4
    t_nhwc = winograd_input_tiling(replace(x56, nhwc=True), BUDGET, M, 4)
    assert (t_nhwc.full_width, t_nhwc.t, t_nhwc.g) == (False, 4, 64)
    with pytest.raises(DoesNotFit, match=r"a whole tile row \(28 tiles\) of one channel does not fit in 256 B"):
        winograd_input_tiling(x56, 256, M, 4)


def test_winograd_windows_are_the_tasks_dmas() -> None:
    """The DMA windows of a task: NCHW whole-row input = one window of g channels x 4 rows,
    offsets = every tile row's first input row x channel chunk; split channels -> 16 puts of
    t x g; the output transform is the mirror image (2 rows)."""
    get, put = winograd_input_windows(WinogradInput(1, 64, 56, 56, (1, 1, 1, 1), 784), 28, 16, True)
    assert get.sizes == (1, 16, 4, 56) and get.count == 1 and len(get.offsets) == 28 * 4
    assert get.offsets[:2] == (0, 16 * 56 * 56) and get.offsets[4] == 1 * 56  # tile row 1 starts at row 1
    assert put.sizes == (1, 28, 16) and put.count == 16 and put.mem_shape == (16, 784, 64)
    get_o, put_o = winograd_output_windows(WinogradOutput(1, 64, 56, 56, 784), 4, 64, False)
    assert get_o.sizes == (16, 4, 64) and get_o.count == 1
    assert put_o.sizes == (1, 64, 1, 8) and put_o.count == 2 and put_o.mem_shape == (1, 64, 56, 56)


@settings(max_examples=80, deadline=None)
@given(no=st.integers(1, 700), ni=st.integers(1, 700), budget=st.sampled_from([BUDGET, 4096, 600]))
def test_winograd_filter_tasks_cover_and_fit(no, ni, budget) -> None:
    """Property: the filter tasks cover every (output, input) channel pair, each task's
    (kk x g) filters and their 16 transformed planes fit the budget, no task takes more than an
    even 64-way share, and every task moves ONE DMA in and ONE DMA out."""
    t = winograd_filter_tasks(no, ni, 4, budget)
    assert t.g == ni or t.kk == 1
    assert fits([t.kk * t.g * 9, 16 * t.kk * t.g], 4, budget) or t.kk * t.g == 1
    assert t.kk * t.g <= -(-no * ni // N_CPE)  # at most an even 64-way share of the filters
    ks, cs = chunk_starts(no, t.kk), chunk_starts(ni, t.g)
    assert {(k, c) for k0 in ks for c0 in cs for k in range(k0, k0 + t.kk) for c in range(c0, c0 + t.g)} == {
        (k, c) for k in range(no) for c in range(ni)}
    get, put = winograd_filter_windows(t)
    assert get.pattern(4)[0] == t.kk * t.g * 36 and put.pattern(4)[0] == 16 * t.kk * t.g * 4
    assert len(get.offsets) == len(put.offsets) == t.tasks
