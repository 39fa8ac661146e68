"""tile.gemm -> loop (passes/conversion/tile_to_loop/gemm.py): the lowered ops verify, and the
per-CPE SUMMA form computes the product.

Every (scheme, trans_a, trans_b, distribution, layout) combination the tile verifier accepts is
lowered with a stand-in for the pass context; a numpy emulation of the loop-level semantics
(``loop.summa_step`` as documented in dialects/loop.py: at step T the CPE in column T of each row
sends the operand travelling along rows, the CPE in row T of each column the one travelling
along columns; buffers hold local blocks, ``trans_x`` = stored transposed) then runs the 8 steps
on all 64 CPEs and must reproduce ``op(A) @ op(B)``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, f32, f64
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException, VerifyException

from taihu.dialects import loop, tile
from taihu.dialects.common import scheme_info
from taihu.passes.conversion.tile_to_loop.gemm import local_buffer_shape, lower_gemm, summa_blocks

MESH = 8


class FakeCtx:
    """Minimal stand-in for convert-tile-to-loop's LowerCtx: buffers made on demand."""

    def __init__(self, spmd: loop.SpmdOp):
        self.spmd = spmd
        self.row, self.col = spmd.row, spmd.col
        self.map: dict[SSAValue, SSAValue] = {}
        self.consts: dict[int, SSAValue] = {}
        self.block = spmd.body.block

    def value(self, v: SSAValue) -> SSAValue:
        if v not in self.map:
            t = v.type
            assert isinstance(t, tile.TileBufType)
            op = loop.LdmBufferOp(v.name_hint or f"b{len(self.map)}", loop.LdmBufType(local_buffer_shape(t), t.element_type))
            self.block.add_op(op)
            self.map[v] = op.result
        return self.map[v]

    def const(self, n: int) -> SSAValue:
        if n not in self.consts:
            c = arith.ConstantOp.from_int_and_width(n, IndexType())
            self.block.add_op(c)
            self.consts[n] = c.result
        return self.consts[n]


def _tile_gemm(shapes, dists, layouts, m, n, k, scheme, ta, tb, elem=f64):
    """A module with func @f holding a tile.kernel of three allocs and one tile.gemm (not yet
    verified)."""
    arg_t = MemRefType(elem, [8])
    f = func.FuncOp("f", ([arg_t], []))
    body = Block(arg_types=[arg_t])
    allocs = [tile.AllocOp(tile.TileBufType(s, elem, d, lay)) for s, d, lay in zip(shapes, dists, layouts)]
    for a, nm in zip(allocs, "abc"):
        a.result.name_hint = nm
    g = tile.GemmOp(*allocs, m=m, n=n, k=k, scheme=scheme, trans_a=ta, trans_b=tb)
    body.add_ops([*allocs, g])
    kern = tile.KernelOp("k", [f.body.block.args[0]], Region(body))
    f.body.block.add_ops([kern, func.ReturnOp()])
    return ModuleOp([f]), kern, g


def _legal_configs():
    out = []
    for scheme in (1, 2, 3, 4):
        vec = scheme_info(scheme)[0]
        m, n, k = (128, 32, 16) if vec.value == "m" else (32, 128, 16)
        for ta, tb in itertools.product((False, True), repeat=2):
            shapes = [(k, m) if ta else (m, k), (n, k) if tb else (k, n), (m, n)]
            for dists in itertools.product(("rc", "cr"), repeat=3):
                for layouts in itertools.product(("row", "col"), repeat=3):
                    mod, _, g = _tile_gemm(shapes, dists, layouts, m, n, k, scheme, ta, tb)
                    try:
                        mod.verify()
                    except VerifyException:
                        continue
                    out.append((scheme, ta, tb, dists, layouts, (m, n, k)))
    return out


LEGAL = _legal_configs()


def test_every_scheme_and_transpose_has_legal_configs() -> None:
    seen = {(s, ta, tb) for s, ta, tb, *_ in LEGAL}
    assert seen == set(itertools.product((1, 2, 3, 4), (False, True), (False, True)))


def _lower(mod: ModuleOp, g: tile.GemmOp):
    spmd = loop.SpmdOp("k", [])
    ctx = FakeCtx(spmd)
    ops = lower_gemm(g, ctx)
    spmd.body.block.add_ops(ops)
    wrapper = ModuleOp([spmd])
    wrapper.verify()
    return spmd, ctx, ops


def _blocks(x: np.ndarray, dist: str) -> dict[tuple[int, int], np.ndarray]:
    """CPE (r, c) -> its local block of tile contents ``x`` (module docstring of tile.py)."""
    b0, b1 = x.shape[0] // MESH, x.shape[1] // MESH
    out = {}
    for r in range(MESH):
        for c in range(MESH):
            i, j = (r, c) if dist == "rc" else (c, r)
            out[(r, c)] = x[i * b0 : (i + 1) * b0, j * b1 : (j + 1) * b1]
    return out


def _emulate_summa(scheme, flags, bufs):
    """Run the 8 loop.summa_step on all CPEs (numpy), returns C buffers."""
    _, a_axis, b_axis = scheme_info(scheme)
    fa, fb, fc = flags
    cbuf = {p: bufs["C"][p].copy() for p in bufs["C"]}
    for t in range(MESH):
        for (r, c) in cbuf:
            src_a = (r, t) if a_axis == "row" else (t, c)
            src_b = (r, t) if b_axis == "row" else (t, c)
            am = bufs["A"][src_a].T if fa else bufs["A"][src_a]
            bm = bufs["B"][src_b].T if fb else bufs["B"][src_b]
            prod = am @ bm
            cbuf[(r, c)] += prod.T if fc else prod
    return cbuf


@pytest.mark.parametrize("cfg", LEGAL, ids=lambda c: f"s{c[0]}-ta{int(c[1])}-tb{int(c[2])}-{'/'.join(c[3])}-{'/'.join(c[4])}")
def test_summa_lowering_computes_the_product(cfg) -> None:
    scheme, ta, tb, dists, layouts, (m, n, k) = cfg
    shapes = [(k, m) if ta else (m, k), (n, k) if tb else (k, n), (m, n)]
    mod, _, g = _tile_gemm(shapes, dists, layouts, m, n, k, scheme, ta, tb)
    spmd, ctx, ops = _lower(mod, g)
    assert len(ops) == 1 and isinstance(ops[0], scf.ForOp)
    steps = [o for o in ops[0].body.block.ops if isinstance(o, loop.SummaStepOp)]
    assert len(steps) == 1 and steps[0].step is ops[0].body.block.args[0]
    st = steps[0]
    assert st.scheme.value.data == scheme
    # trip count 8 from constant bounds
    assert [ctx.consts[v] for v in (0, 8, 1)] == [ops[0].lb, ops[0].ub, ops[0].step]
    flags = st.flags()
    rng = np.random.default_rng(scheme * 16 + ta * 4 + tb)
    A = rng.standard_normal((m, k))
    B = rng.standard_normal((k, n))
    tiles = {"A": A.T if ta else A, "B": B.T if tb else B, "C": np.zeros((m, n))}
    bufs = {}
    for (name, x), d, lay in zip(tiles.items(), dists, layouts):
        blocks = _blocks(x, d)
        bufs[name] = {p: (b.T if lay == "col" else b).copy() for p, b in blocks.items()}
        want = local_buffer_shape(tile.TileBufType(x.shape, f64, d, lay))
        assert all(b.shape == want for b in bufs[name].values())
    cbuf = _emulate_summa(scheme, flags, bufs)
    # reassemble C from the CPE buffers
    C = np.zeros((m, n))
    b0, b1 = m // MESH, n // MESH
    for (r, c), blk in cbuf.items():
        i, j = (r, c) if dists[2] == "rc" else (c, r)
        C[i * b0 : (i + 1) * b0, j * b1 : (j + 1) * b1] = blk.T if layouts[2] == "col" else blk
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scheme", [1, 2, 3, 4])
def test_summa_blocks_accumulate_the_product(scheme) -> None:
    """summa_blocks (documented block algebra) covers every (i_m, i_n, i_k) exactly once."""
    seen = set()
    for r, c, t in itertools.product(range(MESH), repeat=3):
        b = summa_blocks(scheme, r, c, t)
        assert b["A"][0] == b["C"][0] and b["B"][1] == b["C"][1] and b["A"][1] == b["B"][0] == t
        seen.add((b["C"][0], b["C"][1], t))
    assert len(seen) == MESH**3


def test_overlapping_distribution_lowers_to_gemm_block() -> None:
    m, n, k = 256, 8, 16
    for scheme, layouts, elem in ((3, ("row", "row", "row"), f32), (1, ("col", "row", "col"), f64), (1, ("col", "col", "col"), f64)):
        mod, _, g = _tile_gemm([(m, k), (k, n), (m, n)], ("cpe", "rep", "cpe"), layouts, m, n, k, scheme, False, False, elem)
        mod.verify()
        spmd, ctx, ops = _lower(mod, g)
        assert len(ops) == 1 and isinstance(ops[0], loop.GemmBlockOp)
        gb = ops[0]
        assert gb.vec.data == scheme_info(scheme)[0]
        fa, fb, fc = gb.flags()
        # numpy: CPE p owns rows [4p, 4p+4) of A and C, all of B
        rng = np.random.default_rng(scheme)
        A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        C = np.zeros((m, n))
        q = m // 64
        for p in range(64):
            a_buf = A[p * q : (p + 1) * q]
            a_buf = a_buf.T if layouts[0] == "col" else a_buf
            c_buf = np.zeros((n, q) if fc else (q, n))
            b_buf = B.T if layouts[1] == "col" else B
            prod = (a_buf.T if fa else a_buf) @ (b_buf.T if fb else b_buf)
            c_buf += prod.T if fc else prod
            C[p * q : (p + 1) * q] = c_buf.T if fc else c_buf
        np.testing.assert_allclose(C, A @ B, rtol=1e-12)


def test_buffer_shape_mismatch_is_a_pass_error() -> None:
    mod, _, g = _tile_gemm([(128, 16), (16, 32), (128, 32)], ("cr", "cr", "cr"), ("col", "row", "col"), 128, 32, 16, 1, False, False)
    mod.verify()
    spmd = loop.SpmdOp("k", [])
    ctx = FakeCtx(spmd)
    wrong = loop.LdmBufferOp("a", loop.LdmBufType((16, 2), f64))  # row-major block, not swapped
    spmd.body.block.add_op(wrong)
    ctx.map[g.a] = wrong.result
    with pytest.raises(PassFailedException, match=r"tile.gemm operand A \(%a: .*\) must map to a single-slot !loop.ldm<2x16xf64> buffer"):
        lower_gemm(g, ctx)


@settings(max_examples=30, deadline=None)
@given(
    idx=st.integers(0, len(LEGAL) - 1),
    fm=st.integers(1, 2),
    fn=st.integers(1, 3),
    fk=st.integers(1, 4),
)
def test_summa_lowering_random_sizes(idx, fm, fn, fk) -> None:
    """Any legal configuration scaled to other multiples of the §A5 sizes still computes op(A) op(B)."""
    scheme, ta, tb, dists, layouts, (m, n, k) = LEGAL[idx]
    m, n, k = m * fm, n * fn, 8 * fk
    shapes = [(k, m) if ta else (m, k), (n, k) if tb else (k, n), (m, n)]
    mod, _, g = _tile_gemm(shapes, dists, layouts, m, n, k, scheme, ta, tb)
    mod.verify()
    _, _, ops = _lower(mod, g)
    st_op = next(o for o in ops[0].body.block.ops if isinstance(o, loop.SummaStepOp))
    rng = np.random.default_rng(idx)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    tiles = {"A": A.T if ta else A, "B": B.T if tb else B, "C": np.zeros((m, n))}
    bufs = {nm: {p: (b.T if lay == "col" else b).copy() for p, b in _blocks(x, d).items()}
            for (nm, x), d, lay in zip(tiles.items(), dists, layouts)}
    cbuf = _emulate_summa(scheme, st_op.flags(), bufs)
    C = np.zeros((m, n))
    b0, b1 = m // MESH, n // MESH
    for (r, c), blk in cbuf.items():
        i, j = (r, c) if dists[2] == "rc" else (c, r)
        C[i * b0 : (i + 1) * b0, j * b1 : (j + 1) * b1] = blk.T if layouts[2] == "col" else blk
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)
