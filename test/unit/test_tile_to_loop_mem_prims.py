"""tile.im2col / tile.winograd_* -> loop (passes/conversion/tile_to_loop/mem_prims.py).

1. numpy references of the loop-only map kinds against direct computations (im2col by index
   loops, F(2x2,3x3) Winograd against a direct 3x3 convolution).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from taihu.dialects.mapkind import MapKind, check_map
from taihu.passes.conversion.tile_to_loop.mem_prims import (
    im2col_rows_reference,
    map_reference,
    winograd_filter_reference,
    winograd_input_reference,
    winograd_output_reference,
)


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
