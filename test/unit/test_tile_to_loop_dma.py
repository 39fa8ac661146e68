"""DMA inference helpers of convert-tile-to-loop (passes/conversion/tile_to_loop/dma.py).

Property tests (hypothesis): every DMA of a split is ONE athread DMA whose element order equals
the packed LDM order, the DMAs of a box cover each of its elements exactly once and nothing else;
clip cases agree with brute force; the CPE blocks of every distribution partition the tile.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taihu.dialects.loop import dma_pattern
from taihu.passes.conversion.tile_to_loop import dma as D


@given(st.integers(-60, 160), st.integers(1, 20), st.integers(1, 4), st.integers(1, 100))
def test_valid_range_brute_force(start: int, n: int, stride: int, dim: int) -> None:
    lo, hi = D.valid_range(start, n, stride, dim)
    ok = [i for i in range(n) if 0 <= start + i * stride < dim]
    assert list(range(lo, hi)) == ok


@given(st.lists(st.integers(-40, 120), min_size=1, max_size=12), st.integers(1, 16), st.integers(1, 3), st.integers(1, 90))
def test_clip_cases_group_starts(starts: list[int], n: int, stride: int, dim: int) -> None:
    cases = D.clip_cases(starts, n, stride, dim)
    # intervals are sorted and disjoint, and every start falls in the case of its valid range
    for a, b in zip(cases, cases[1:]):
        assert a.s_hi < b.s_lo
    for s in starts:
        (c,) = [c for c in cases if c.s_lo <= s <= c.s_hi]
        assert (c.lo, c.hi) == D.valid_range(s, n, stride, dim)


@st.composite
def boxes(draw):  # type: ignore[no-untyped-def]
    r = draw(st.integers(1, 4))
    n = [draw(st.integers(1, 6)) for _ in range(r)]
    strides = [draw(st.sampled_from([1, 1, 2, 3])) for _ in range(r)]
    start = [draw(st.integers(0, 3)) for _ in range(r)]
    extra = [draw(st.integers(0, 3)) for _ in range(r)]
    mem = [s + (k - 1) * x + 1 + e for s, k, x, e in zip(start, n, strides, extra)]
    lo = [draw(st.integers(0, k - 1)) for k in n]
    hi = [draw(st.integers(l + 1, k)) for l, k in zip(lo, n)]
    order = list(range(r))
    if r >= 2 and draw(st.booleans()):
        i, j = sorted(draw(st.lists(st.integers(0, r - 1), min_size=2, max_size=2, unique=True)))
        order[i], order[j] = order[j], order[i]
    eb = draw(st.sampled_from([4, 8]))
    return mem, strides, n, start, lo, hi, order, eb


@settings(max_examples=300, deadline=None)
@given(boxes())
def test_split_box_covers_exactly_once(case) -> None:  # type: ignore[no-untyped-def]
    mem, strides, n, start, lo, hi, order, eb = case
    r = len(mem)
    plan = D.split_box(mem, strides, n, lo, hi, order, eb)
    pitch = D.ldm_pitches(n, order)
    seen: dict[tuple[int, ...], int] = {}
    dmas = D.expand_plan(plan, lo, hi)
    assert len(dmas) == plan.count(lo, hi)
    for first, ldm_off in dmas:
        assert dma_pattern(mem, plan.sizes, eb, strides) is not None  # ONE athread DMA
        for k, u in enumerate(itertools.product(*(range(s) for s in plan.sizes))):  # DMA element order
            idx = tuple(f + x for f, x in zip(first, u))
            assert all(lo[d] <= idx[d] < hi[d] for d in range(r)), "outside the box"
            memix = [start[d] + idx[d] * strides[d] for d in range(r)]
            assert all(0 <= memix[d] < mem[d] for d in range(r))
            assert ldm_off + k == sum(i * p for i, p in zip(idx, pitch)), "LDM side not packed in layout order"
            assert idx not in seen, "element moved twice"
            seen[idx] = k
    assert len(seen) == math.prod(h - l for l, h in zip(lo, hi))


def test_split_box_prefers_one_dma() -> None:
    # a whole row-major block of full rows is one contiguous DMA; a col-layout block of a
    # row-major array needs one strided DMA per LDM row (one column of the window each)
    p = D.split_box((64, 64), (1, 1), (8, 64), (0, 0), (8, 64), (0, 1), 8)
    assert p.lead == () and p.sizes == (8, 64)
    p = D.split_box((64, 64), (1, 1), (8, 16), (0, 0), (8, 16), (1, 0), 8)
    assert p.lead == (1,) and p.sizes == (8, 1)
    # a clipped inner dim: one DMA per row (LDM rows are longer than the valid run)
    p = D.split_box((64, 64), (1, 1), (8, 16), (0, 0), (8, 10), (0, 1), 4)
    assert p.lead == (0,) and p.count((0, 0), (8, 10)) == 8


@pytest.mark.parametrize(
    "dist,shape",
    [("rc", (16, 24)), ("cr", (64, 8)), ("cpe", (130, 3)), ("cpe", (64, 2, 2)), ("cpe", (5, 4)), ("cpe", (1, 7)), ("rep", (3, 5))],
)
def test_cpe_blocks_partition(dist: str, shape: tuple[int, ...]) -> None:
    blocks, classes = D.cpe_blocks(dist, shape)
    count = np.zeros(shape, dtype=int)
    for cid in range(D.N_CPE):
        row, col = divmod(cid, D.MESH)
        (cls,) = [c for c in classes if c.id_lo <= cid <= c.id_hi]
        sl = []
        for t, b in enumerate(blocks):
            n = cls.dim0_n if t == 0 else b.n
            s = b.a * row + b.b * col
            sl.append(slice(s, s + n))
        if cls.dim0_n == 0:
            continue
        count[tuple(sl)] += 1
    want = D.N_CPE if dist == "rep" else 1
    assert (count == want).all()


@pytest.mark.parametrize("dist,shape", [("cpe1", (3, 130, 2)), ("cpe2", (2, 3, 64)), ("cpe1", (2, 5))])
def test_cpe_d_blocks_partition(dist: str, shape: tuple[int, ...]) -> None:
    """cpe<d>: the pieces of the CPEs partition the tile along dim d, the other dims whole."""
    sd = int(dist[3:])
    blocks, classes = D.cpe_blocks(dist, shape)
    count = np.zeros(shape, dtype=int)
    for cid in range(D.N_CPE):
        row, col = divmod(cid, D.MESH)
        (cls,) = [c for c in classes if c.id_lo <= cid <= c.id_hi]
        if cls.dim0_n == 0:
            continue
        sl = [slice(b.a * row + b.b * col, b.a * row + b.b * col + (cls.dim0_n if t == sd else b.n))
              for t, b in enumerate(blocks)]
        count[tuple(sl)] += 1
    assert (count == 1).all()


@pytest.mark.parametrize("dist,shape", [("cpe+4", (100, 7)), ("cpe1+4", (2, 260, 3)), ("cpe+2", (66, 1)), ("cpe1+4", (1, 7))])
def test_cpe_halo_blocks(dist: str, shape: tuple[int, ...]) -> None:
    """cpe<d>+h: CPE p holds [p*q, p*q + q + h) of the split dim (clipped), q = ceil((d - h)/64);
    the CPEs without outputs hold nothing; every index is held at least once."""
    base, _, h = dist.partition("+")
    sd, halo = (int(base[3:]) if base[3:] else 0), int(h)
    blocks, classes = D.cpe_blocks(dist, shape)
    q = -(-(shape[sd] - halo) // D.N_CPE)
    covered = np.zeros(shape[sd], dtype=int)
    for cid in range(D.N_CPE):
        row, col = divmod(cid, D.MESH)
        (cls,) = [c for c in classes if c.id_lo <= cid <= c.id_hi]
        b = blocks[sd]
        start = b.a * row + b.b * col
        assert start == cid * q
        outputs = min(q, shape[sd] - halo - cid * q)
        if outputs <= 0:
            assert cls.dim0_n == 0
            continue
        assert cls.dim0_n == outputs + halo and start + cls.dim0_n <= shape[sd]
        covered[start : start + cls.dim0_n] += 1
    assert (covered >= 1).all()


def test_tile_dims_of_window() -> None:
    assert D.tile_dims_of_window((1, 32, 1, 128), (32, 128)) == [None, 0, None, 1]
    assert D.tile_dims_of_window((64, 1, 1), (64, 1, 1)) == [0, None, None]
    with pytest.raises(D.DmaInferenceError):
        D.tile_dims_of_window((32, 64), (64, 32))
