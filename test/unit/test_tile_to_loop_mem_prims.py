"""tile.im2col / tile.winograd_* -> loop (passes/conversion/tile_to_loop/mem_prims.py).

1. numpy references of the loop-only map kinds against direct computations (im2col by index
   loops, F(2x2,3x3) Winograd against a direct 3x3 convolution);
2. whole-op references (tile-level semantics) against direct convolutions;
3. the lowering through convert-tile-to-loop, run per CPE by test/unit/loop_numpy.py, against
   the whole-op references (hypothesis over shapes, strides, pads, dilations, layouts, knobs).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from taihu.dialects import loop
from taihu.dialects.mapkind import MapKind, check_map
from taihu.dialects.target import machine_of
from taihu.dialects.tile import DataLayout, Im2colOp
from taihu.passes.pipelines import default_context
from taihu.passes.conversion.tile_to_loop.mem_prims import (
    im2col_reference,
    map_reference,
    plan_im2col,
    winograd_filter_full_reference,
    winograd_filter_reference,
    winograd_input_full_reference,
    winograd_input_reference,
    winograd_output_full_reference,
    winograd_output_reference,
)
from taihu.test.unit.test_tile_to_loop_moves import lower_and_compare


@settings(max_examples=60, deadline=None)
@given(
    w=st.integers(1, 12),
    kw=st.integers(1, 4),
    s=st.integers(1, 3),
    pl=st.integers(0, 2),
    pr=st.integers(0, 2),
    d=st.integers(1, 2),
)
def test_im2col_rows_reference_matches_index_loops(w, kw, s, pl, pr, d) -> None:
    wo = (w + pl + pr - d * (kw - 1) - 1) // s + 1
    params = {"kernel": (kw,), "strides": (s,), "pads": (pl, pr), "dilations": (d,)}
    x = np.random.default_rng(w).standard_normal((2, w)).astype(np.float32)
    if wo < 1:
        assert check_map(MapKind.IM2COL, [x.shape], ["f32"], (2, kw, 1), "f32", params) is not None
        return
    assert check_map(MapKind.IM2COL, [x.shape], ["f32"], (2, kw, wo), "f32", params) is None
    y = map_reference(MapKind.IM2COL, x, (2, kw, wo), params)
    want = np.zeros((2, kw, wo), np.float32)
    for r in range(2):
        for j in range(kw):
            for o in range(wo):
                src = o * s + j * d - pl
                if 0 <= src < w:
                    want[r, j, o] = x[r, src]
    np.testing.assert_array_equal(y, want)


def _direct_conv3x3(x: np.ndarray, w: np.ndarray, pads) -> np.ndarray:
    """x (C, H, W), w (K, C, 3, 3), pads (pt, pl, pb, pr) -> (K, Ro, Co), stride 1."""
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.float64), [(0, 0), (pt, pb), (pl, pr)])
    ro, co = xp.shape[1] - 2, xp.shape[2] - 2
    y = np.zeros((w.shape[0], ro, co))
    for i in range(3):
        for j in range(3):
            y += np.einsum("kc,chw->khw", w[:, :, i, j], xp[:, i : i + ro, j : j + co])
    return y


@settings(max_examples=30, deadline=None)
@given(
    c=st.integers(1, 4),
    k=st.integers(1, 3),
    h=st.integers(2, 9),
    w=st.integers(2, 9),
    pads=st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 1), st.integers(0, 1)),
)
def test_winograd_references_compose_to_a_3x3_convolution(c, k, h, w, pads) -> None:
    pt, pl, pb, pr = pads
    ro, co = h + pt + pb - 2, w + pl + pr - 2
    if ro < 1 or co < 1:
        return
    rng = np.random.default_rng(h * 10 + w)
    x = rng.standard_normal((c, h, w))
    wt = rng.standard_normal((k, c, 3, 3))
    tr_n, tc_n = -(-ro // 2), -(-co // 2)
    u = winograd_filter_reference(wt.reshape(k * c, 3, 3)).reshape(16, k, c)
    # zero-pad to whole 4x4 tiles: (2*tr_n + 2) x (2*tc_n + 2) padded frame
    hwc = x.transpose(1, 2, 0)
    y = np.zeros((k, ro, co))
    for tr in range(tr_n):
        r0 = 2 * tr - pt
        lo, hi = max(r0, 0), min(r0 + 4, h)
        d = hwc[lo:hi]
        top, bottom = lo - r0, r0 + 4 - hi
        right = 2 * tc_n + 2 - pl - w
        if right < 0:  # the frame ends inside the image: drop the unused columns
            d, right = d[:, : w + right], 0
        v = winograd_input_reference(d, tc_n, (top, pl, bottom, right))  # (16, tc_n, c)
        m = np.einsum("xtc,xkc->xtk", v, u)  # 16 batched GEMMs (B*T, N_i) x (N_o, N_i)^T
        rows = min(2, ro - 2 * tr)
        out = winograd_output_reference(m, rows, co)  # (rows, co, k)
        y[:, 2 * tr : 2 * tr + rows, :] = out.transpose(2, 0, 1)
    np.testing.assert_allclose(y, _direct_conv3x3(x, wt, pads), rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------------------------
# 2. whole-op references (tile semantics) against direct convolutions
# --------------------------------------------------------------------------------------------


def _direct_conv(x, w, strides, pads, dil):
    """x (N, C, H, W), w (M, C, kh, kw) -> (N, M, Ho, Wo) by loops over the kernel taps."""
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = strides, pads, dil
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pt, pb), (pl, pr)])
    ho = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, m, ho, wo))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh : i * dh + (ho - 1) * sh + 1 : sh, j * dw : j * dw + (wo - 1) * sw + 1 : sw]
            y += np.einsum("mc,nchw->nmhw", w[:, :, i, j], patch)
    return y


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 8), w=st.integers(1, 8),
    kh=st.integers(1, 3), kw=st.integers(1, 3), sh=st.integers(1, 2), sw=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 2)] * 4), dh=st.integers(1, 2), dw=st.integers(1, 2), nhwc=st.booleans(),
)
def test_im2col_reference_times_weights_is_the_convolution(n, c, h, w, kh, kw, sh, sw, pads, dh, dw, nhwc) -> None:
    ho = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (w + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    if ho < 1 or wo < 1:
        return
    rng = np.random.default_rng(n + 10 * c + 100 * h)
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((2, c, kh, kw))
    xin = x.transpose(0, 2, 3, 1) if nhwc else x
    col = im2col_reference(xin, (kh, kw), (sh, sw), pads, (dh, dw), DataLayout.NHWC if nhwc else DataLayout.NCHW)
    y = (wt.reshape(2, -1) @ col).reshape(2, n, ho, wo).transpose(1, 0, 2, 3)
    np.testing.assert_allclose(y, _direct_conv(x, wt, (sh, sw), pads, (dh, dw)), rtol=1e-10, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(
    b=st.integers(1, 2), c=st.integers(1, 3), k=st.integers(1, 3), h=st.integers(2, 9), w=st.integers(2, 9),
    pads=st.tuples(*[st.integers(0, 1)] * 4), nhwc=st.booleans(), extra=st.integers(0, 3),
)
def test_winograd_full_references_are_the_convolution(b, c, k, h, w, pads, nhwc, extra) -> None:
    ro, co = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    if ro < 1 or co < 1:
        return
    lay = DataLayout.NHWC if nhwc else DataLayout.NCHW
    rng = np.random.default_rng(h * 16 + w)
    x = rng.standard_normal((b, c, h, w))
    wt = rng.standard_normal((k, c, 3, 3))
    p_rows = b * (-(-ro // 2)) * (-(-co // 2)) + extra
    v = winograd_input_full_reference(x.transpose(0, 2, 3, 1) if nhwc else x, pads, p_rows, lay)
    assert v.shape == (16, p_rows, c) and np.isnan(v[:, p_rows - extra :]).all()  # padding rows: not written
    u = winograd_filter_full_reference(wt)
    m = np.einsum("xpc,xkc->xpk", v, u)
    out_shape = (b, ro, co, k) if nhwc else (b, k, ro, co)
    y = winograd_output_full_reference(m, out_shape, lay)
    want = _direct_conv(x, wt, (1, 1), pads, (1, 1))
    np.testing.assert_allclose(y.transpose(0, 3, 1, 2) if nhwc else y, want, rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------------------------
# 3. the lowering (E1's convert-tile-to-loop calling mem_prims) against the references, run by
#    the per-CPE numpy evaluator (test/unit/loop_numpy.py: window/buffer bounds, waits)
# --------------------------------------------------------------------------------------------


def _lower_and_run(text: str, seed: int = 0) -> ModuleOp:
    """Lower a tile module, run tile and loop levels on the same random inputs, compare (within
    2e-6: the transforms reassociate); returns the lowered module."""
    return lower_and_compare(text, seed, tol=2e-6)


def _ctx() -> Context:
    return default_context()


def _kernel(name: str, xin: tuple[int, ...], out: tuple[int, ...], body: str) -> str:
    ti = f"memref<{'x'.join(map(str, xin))}xf32>"
    to = f"memref<{'x'.join(map(str, out))}xf32>"
    return f"""
func.func @main(%X: {ti} {{graph.name = "x"}}) -> ({to} {{graph.name = "y"}}) {{
  %Y = memref.alloc() {{alignment = 128 : i64}} : {to}
  tile.kernel "{name}" (%x = %X : {ti}, %y = %Y : {to}) {{
    {body.format(ti=ti, to=to)}
  }}
  func.return %Y : {to}
}}
"""


def _arr(v) -> str:
    return "array<i64: " + ", ".join(map(str, v)) + ">"


def im2col_text(n, c, h, w, k, s, pads, d, rpt, nhwc) -> str | None:
    ho = (h + pads[0] + pads[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (w + pads[1] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if ho < 1 or wo < 1:
        return None
    xin = (n, h, w, c) if nhwc else (n, c, h, w)
    attrs = f"kernel = {_arr(k)}, strides = {_arr(s)}, pads = {_arr(pads)}, dilations = {_arr(d)}"
    if rpt:  # 0: absent, the lowering chooses
        attrs += f", rows_per_task = {rpt} : i64"
    if nhwc:
        attrs += ", layout = #tile<data_layout nhwc>"
    return _kernel("im2col", xin, (c * k[0] * k[1], n * ho * wo), "tile.im2col %x -> %y {{" + attrs + "}} : {ti} -> {to}")


def test_im2col_lowering_resnet_conv1_like() -> None:
    """7x7 stride 2 pad 3 (ResNet conv1 geometry, small image): the loop output is the col matrix."""
    m = _lower_and_run(im2col_text(1, 3, 20, 18, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1, False))
    spmd = next(o for o in m.walk() if isinstance(o, loop.SpmdOp))
    kinds = [o.kind.data.value for o in spmd.walk() if isinstance(o, loop.MapOp)]
    # row groups: the two stride residues of the interior rows (kernel rows {0,2,4,6} / {1,3,5})
    # plus the edge rows; no guards, every put unconditional
    assert kinds[0] == "fill" and set(kinds[1:]) == {"im2col"} and 3 <= len(kinds) - 1 <= 10
    assert not any(isinstance(o, scf.IfOp) for o in spmd.walk())
    puts = [o for o in spmd.walk() if isinstance(o, loop.DmaStartOp) and not o.is_get]
    assert all(o.size_values[0] == 7 for o in puts)


def test_im2col_row_groups() -> None:
    """Stride 1, 3x3, pad 1: interior rows feed all 3 kernel rows and form one group; rows_per_task
    rows of it go in one DMA and leave as one kw x (R*Wo) DMA per kernel row."""
    c = _ctx()
    m = Parser(c, im2col_text(1, 2, 10, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4, False)).parse_module()
    op = next(o for o in m.walk() if isinstance(o, Im2colOp))
    p = plan_im2col(op, machine_of(op).ldm_user_bytes)
    assert [(g.r0, g.step, g.count, g.rows, g.kernel_rows) for g in p.groups] == [
        (0, 1, 1, 1, (0, 1)),
        (1, 1, 8, 4, (0, 1, 2)),
        (9, 1, 1, 1, (1, 2)),
    ]
    assert p.zero_ranges == (((0, 1),), (), ((9, 1),))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 7), w=st.integers(1, 9),
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)), s=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pads=st.tuples(*[st.integers(0, 2)] * 4), d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    rpt=st.integers(0, 3), nhwc=st.booleans(),
)
def test_im2col_lowering_matches_reference(n, c, h, w, k, s, pads, d, rpt, nhwc) -> None:
    text = im2col_text(n, c, h, w, k, s, pads, d, rpt, nhwc)
    if text is not None:
        _lower_and_run(text, seed=h * 10 + w)


@pytest.mark.parametrize(
    "shape",
    [(2, 8, 12, 10, (3, 3), (1, 1), (1, 1, 1, 1)), (1, 16, 13, 9, (3, 3), (2, 2), (1, 0, 1, 1)), (1, 24, 9, 9, (5, 5), (1, 1), (2, 2, 2, 2))],
)
def test_im2col_lowering_default_rows_per_task(shape) -> None:
    """Without rows_per_task the lowering batches rows (>= 64 tasks left) and stays exact."""
    n, c, h, w, k, s, pads = shape
    text = im2col_text(n, c, h, w, k, s, pads, (1, 1), 0, False)
    m = Parser(_ctx(), text).parse_module()
    op = next(o for o in m.walk() if isinstance(o, Im2colOp))
    assert plan_im2col(op, machine_of(op).ldm_user_bytes).R > 1
    _lower_and_run(text, seed=c)


@pytest.mark.parametrize(
    "shape",
    [
        (1, 4, 7, 7, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # stride 1: one unfold per kernel row
        (2, 200, 7, 7, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # 7 channels per task, ragged last chunk, 2 images
        (1, 16, 14, 14, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1)),  # 1x1 stride 2: no transpose
        (1, 12, 9, 8, (3, 5), (1, 2), (2, 1, 0, 2), (2, 1)),  # dilation 2, asymmetric pads
    ],
)
def test_im2col_whole_plane_tasks(shape) -> None:
    """Small maps without rows_per_task: whole-plane tasks (tasks.im2col_planes: fewer bytes
    moved) -- zero-padded LDM planes, one put of q channels' kh*kw col rows; exact."""
    n, c, h, w, k, s, pads, d = shape
    m = _lower_and_run(im2col_text(n, c, h, w, k, s, pads, d, 0, False), seed=c)
    names = {o.buffer_name.data for o in m.walk() if isinstance(o, loop.LdmBufferOp)}
    assert "im2col_planes" in names and "im2col_in" not in names


def wino_filter_text(no, ni) -> str:
    return _kernel("wf", (no, ni, 3, 3), (16, no, ni), "tile.winograd_filter %x -> %y : {ti} -> {to}")


def wino_input_text(b, ni, h, w, pads, nhwc, tpc, extra) -> str | None:
    ro, co = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    if ro < 1 or co < 1:
        return None
    p = b * (-(-ro // 2)) * (-(-co // 2)) + extra
    xin = (b, h, w, ni) if nhwc else (b, ni, h, w)
    attrs = f"pads = {_arr(pads)}, tiles_per_cpe = {tpc} : i64"
    if nhwc:
        attrs += ", layout = #tile<data_layout nhwc>"
    return _kernel("wi", xin, (16, p, ni), "tile.winograd_input %x -> %y {{" + attrs + "}} : {ti} -> {to}")


def wino_output_text(b, no, ro, co, nhwc, extra) -> str:
    p = b * (-(-ro // 2)) * (-(-co // 2)) + extra
    out = (b, ro, co, no) if nhwc else (b, no, ro, co)
    attrs = " {{layout = #tile<data_layout nhwc>}}" if nhwc else ""
    return _kernel("wo", (16, p, no), out, "tile.winograd_output %x -> %y" + attrs + " : {ti} -> {to}")


@pytest.mark.parametrize("no,ni", [(1, 1), (3, 5), (70, 3), (2, 700), (130, 64)])
def test_winograd_filter_lowering(no, ni) -> None:
    _lower_and_run(wino_filter_text(no, ni))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    b=st.integers(1, 2), ni=st.integers(1, 5), h=st.integers(2, 11), w=st.integers(2, 11),
    pads=st.tuples(*[st.integers(0, 1)] * 4), nhwc=st.booleans(), tpc=st.integers(1, 4), extra=st.integers(0, 5),
)
def test_winograd_input_lowering_matches_reference(b, ni, h, w, pads, nhwc, tpc, extra) -> None:
    text = wino_input_text(b, ni, h, w, pads, nhwc, tpc, extra)
    if text is not None:
        _lower_and_run(text, seed=h + 13 * w)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b=st.integers(1, 2), no=st.integers(1, 5), ro=st.integers(1, 11), co=st.integers(1, 11), nhwc=st.booleans(), extra=st.integers(0, 3))
def test_winograd_output_lowering_matches_reference(b, no, ro, co, nhwc, extra) -> None:
    _lower_and_run(wino_output_text(b, no, ro, co, nhwc, extra), seed=ro + 17 * co)


@pytest.mark.parametrize("nhwc", [False, True])
def test_winograd_large_channels_split_into_channel_groups(nhwc) -> None:
    """N_i = 600 channels do not fit one LDM per task: full tile rows with channel groups."""
    _lower_and_run(wino_input_text(1, 600, 6, 6, (1, 1, 1, 1), nhwc, 2, 0))
    _lower_and_run(wino_output_text(1, 600, 6, 6, nhwc, 0))


def test_winograd_task_shape_choice() -> None:
    """The task shape with the smaller modelled DMA time wins: NCHW input of a 56x56x64 layer ->
    whole tile rows of channel groups (4 whole image rows per DMA); its output transform -> all
    channels, several tiles (one DMA of 16 large blocks from m); NHWC input -> the seed's m'
    consecutive tiles with all channels (tiles_per_cpe honoured)."""
    from taihu.dialects.tile import WinogradInputOp, WinogradOutputOp
    from taihu.passes.conversion.tile_to_loop.mem_prims import plan_winograd_input, plan_winograd_output

    def plan(text, cls, fn):
        m = Parser(_ctx(), text).parse_module()
        op = next(o for o in m.walk() if isinstance(o, cls))
        return fn(op, machine_of(op).ldm_user_bytes, machine_of(op)).tiling

    t_in = plan(wino_input_text(1, 64, 56, 56, (1, 1, 1, 1), False, 4, 0), WinogradInputOp, plan_winograd_input)
    assert t_in.full_width and t_in.t == 28 and 8 <= t_in.g < 64
    t_in_nhwc = plan(wino_input_text(1, 64, 56, 56, (1, 1, 1, 1), True, 4, 0), WinogradInputOp, plan_winograd_input)
    assert not t_in_nhwc.full_width and (t_in_nhwc.t, t_in_nhwc.g) == (4, 64)
    t_out = plan(wino_output_text(1, 64, 56, 56, False, 0), WinogradOutputOp, plan_winograd_output)
    assert not t_out.full_width and t_out.g == 64 and t_out.t >= 4
