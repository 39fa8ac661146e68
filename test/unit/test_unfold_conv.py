"""The unfolded implicit convolution (tile.unfold + compile-time weight re-layout): the K order of
:func:`taihu.backends.model.unfold_conv.unfold_weights` and of
:func:`taihu.passes.conversion.tile_to_loop.mem_prims.unfold_reference` agree, so that one GEMM
of the re-laid weights with the unfolded rows is the convolution (numpy, exact in fp64); and the
planner's choices respect the LDM budget and the mesh GEMM's multiples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taihu.backends.model.conv import ConvShape, NotApplicable
from taihu.backends.model.unfold_conv import footprint, plan_unfold, unfold_applicability, unfold_weights
from taihu.target.machine import default_machine
from taihu.passes.conversion.tile_to_loop.mem_prims import unfold_reference


def _direct_conv(x, w, stride, pads, dil):
    """NCHW direct convolution (fp64), pads = (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    ho = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, m, ho, wo))
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dil[0], j * dil[1]
            win = xp[:, :, r0: r0 + stride[0] * (ho - 1) + 1: stride[0], c0: c0 + stride[1] * (wo - 1) + 1: stride[1]]
            y += np.einsum("mc,nchw->nmhw", w[:, :, i, j], win)
    return y


@settings(max_examples=40, deadline=None)
@given(
    g=st.integers(1, 3),
    blocks=st.integers(1, 2),
    m=st.integers(1, 5),
    k=st.sampled_from([(1, 1), (3, 3), (2, 3), (5, 5)]),
    stride=st.integers(1, 2),
    pad=st.integers(0, 2),
    dil=st.integers(1, 2),
    h=st.integers(6, 12),
    w=st.integers(6, 12),
    extra_cols=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_unfold_times_reordered_weights_is_the_convolution(g, blocks, m, k, stride, pad, dil, h, w, extra_cols, seed):
    """Per K block of cb = 8g channels and per group of 8 output rows: B = unfold(row tiles)
    (kh tiles of (cb, 8, W)) and C = W'[:, block] @ B summed over the blocks equals the direct
    convolution on those rows (extra columns from a larger right pad are extra output columns
    of the same formula: the lowering drops them)."""
    kh, kw = k
    cb = 8 * g
    c = cb * blocks
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c, h, w))
    wt = rng.standard_normal((m, c, kh, kw))
    ho = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    wo = (w + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    if ho < 1 or wo < 1:
        return
    ref = _direct_conv(x, wt, (stride, stride), (pad,) * 4, (dil, dil))
    wu = unfold_weights(wt, g)  # (M, C*kh*kw)
    ro0 = 0
    xpad_rows = np.pad(x, [(0, 0), (0, 0), (pad, pad + 8 * stride + dil * kh), (0, 0)])
    c_acc = np.zeros((m, 8 * (wo + extra_cols)))
    for blk in range(blocks):
        rows = []
        for kr in range(kh):
            ri = (ro0 + np.arange(8)) * stride + kr * dil  # rows of the padded input
            rows.append(xpad_rows[0, blk * cb:(blk + 1) * cb][:, ri, :])  # (cb, 8, W)
        b = unfold_reference(rows, kw, stride, (pad, pad + extra_cols * stride), dil)
        assert b.shape == (kh * cb * kw, 8 * (wo + extra_cols))
        c_acc += wu[:, blk * cb * kh * kw:(blk + 1) * cb * kh * kw] @ b
    got = c_acc.reshape(m, 8, wo + extra_cols)
    n_rows = min(8, ho)
    np.testing.assert_allclose(got[:, :n_rows, :wo], ref[0, :, :n_rows, :], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "shape,why",
    [
        (ConvShape(1, 64, 8, 8, 64, 3, 3, pads=(1, 1, 1, 1)), "constant weights"),
        (ConvShape(1, 64, 8, 8, 64, 3, 3, group=2, const_weights=True), "group = 1"),
        (ConvShape(1, 32, 8, 8, 64, 3, 3, const_weights=True), ">= 64 input and output channels"),
        (ConvShape(1, 68, 8, 8, 64, 3, 3, const_weights=True), "C % 8 == 0"),
    ],
)
def test_applicability(shape, why) -> None:
    assert why in (unfold_applicability(shape) or "")
    with pytest.raises(NotApplicable, match="unfolded implicit"):
        plan_unfold(shape, default_machine())


@pytest.mark.parametrize(
    "shape",
    [
        ConvShape(1, 128, 28, 28, 128, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True),
        ConvShape(1, 64, 56, 56, 64, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True),
        ConvShape(1, 512, 7, 7, 512, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True),
        ConvShape(32, 256, 56, 56, 512, 1, 1, strides=(2, 2), bias=True, const_weights=True),
    ],
)
def test_plan_fits_and_follows_the_gemm_multiples(shape) -> None:
    m = default_machine()
    p = plan_unfold(shape, m)
    assert p.ldm_bytes == footprint(shape, p.vec, p.bm, p.cb, p.cb >= shape.c, p.wo_p) <= m.ldm_user_bytes
    v, o = (p.bm, p.bn) if p.vec == "m" else (p.bn, p.bm)
    assert v % 128 == 0 and o % 32 == 0 and p.bk % 8 == 0  # §A5
    assert shape.c % p.cb == 0 and p.cb % 8 == 0
    assert p.wo_p >= shape.wo and p.wo_p % (4 if p.vec == "m" else 16) == 0
    assert p.padded == (p.wo_p != shape.wo) and len(p.kernels) == (2 if p.padded else 1)
    assert 0 < p.cost.gflops() < m.peak_cg_gflops
