"""Python API of the tile and loop dialects (used by the conversion passes): builders, type
helpers, static offset ranges, DMA descriptors of loop.dma_start, and the module docstrings'
examples (they must parse and verify)."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, f32, f64
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from taihu.target.machine import default_machine
from taihu.dialects import loop, tile
from taihu.dialects.mapkind import MapKind


def _ctx() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, scf.Scf, tile.Tile, loop.Loop):
        ctx.load_dialect(d)
    return ctx


def _parse(text: str) -> ModuleOp:
    m = Parser(_ctx(), text).parse_module()
    m.verify()
    return m


def _docstring_example(mod) -> str:
    doc = mod.__doc__
    body = doc.split("::\n\n", 1)[1]
    lines = []
    for line in body.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines)


def test_docstring_examples_verify() -> None:
    _parse(_docstring_example(tile))
    ex = _docstring_example(loop)
    _parse("func.func @f(%X: memref<64x1024xf32>) {\n" + ex + "\nfunc.return\n}")


def test_tile_buf_type_helpers() -> None:
    t = tile.TileBufType([256, 64], f64, "cr", "col")
    assert t.local_shape() == (32, 8) and t.per_cpe_bytes() == 32 * 8 * 8
    assert t.contiguous_dim() == 0 and t.mesh_row_dim() == 1
    c = tile.TileBufType([100, 3, 7], f32, "cpe")
    assert c.local_shape() == (2, 3, 7) and c.per_cpe_bytes() == 2 * 3 * 7 * 4 and c.mesh_row_dim() is None
    r = tile.TileBufType([5], f32, "rep")
    assert r.local_shape() == (5,) and r.contiguous_dim() == 0


def _kernel_with_gemm(double: bool = True) -> tuple[ModuleOp, tile.KernelOp]:
    """Build the docstring GEMM with the Python constructors."""
    mt = MemRefType(f64, [1024, 1024])
    fn = func.FuncOp("mm", ([mt, mt, mt], []))
    A, B, C = fn.body.block.args
    k = tile.KernelOp("mm", [A, B, C])
    a, b, c = k.body.block.args
    ta = tile.AllocOp(tile.TileBufType([256, 64], f64, "cr", "col"), double=double)
    tb = tile.AllocOp(tile.TileBufType([64, 256], f64, "cr"), double=double)
    tc = tile.AllocOp(tile.TileBufType([256, 256], f64, "cr", "col"))
    fi, fj, fk = tile.ForOp(0, 1024, 256, name="cM"), tile.ForOp(0, 1024, 256), tile.ForOp(0, 1024, 64, name="cK")
    i, j, kk = fi.iv, fj.iv, fk.iv
    fk.body.block.add_ops(
        [
            tile.MoveOp(a, ta.result, [i, kk], [256, 64]),
            tile.MoveOp(b, tb.result, [kk, j], [64, 256]),
            tile.GemmOp(ta.result, tb.result, tc.result, 256, 256, 64, scheme=1),
        ]
    )
    fj.body.block.add_ops(
        [tile.MapOp(MapKind.FILL, [], tc.result, value=0.0), fk, tile.MoveOp(tc.result, c, [i, j], [256, 256])]
    )
    fi.body.block.add_op(fj)
    k.body.block.add_ops([ta, tb, tc, fi])
    fn.body.block.add_ops([k, func.ReturnOp()])
    m = ModuleOp([fn])
    return m, k


def test_builders_produce_verifying_ir_that_round_trips() -> None:
    m, k = _kernel_with_gemm()
    m.verify()
    assert k.ldm_footprint() == [("alloc0", 4096), ("alloc1", 4096), ("alloc2", 8192)]
    text = str(m)
    again = _parse(text)
    assert str(again) == text
    gemm = next(op for op in m.walk() if isinstance(op, tile.GemmOp))
    assert gemm.mnk == (256, 256, 64) and gemm.flops == 2 * 256 * 256 * 64
    assert gemm.vec_dim == tile.VecDim.M and gemm.operand_dims()["A"] == ("m", "k")
    move = next(op for op in m.walk() if isinstance(op, tile.MoveOp))
    assert move.is_load and move.size_values == (256, 64) and move.stride_values == (1, 1)
    fors = [op for op in m.walk() if isinstance(op, tile.ForOp)]
    assert [f.trip_count for f in fors] == [4, 4, 16] and fors[2].last_value == 960


def test_builders_are_verified_like_parsed_ir() -> None:
    m, k = _kernel_with_gemm()
    gemm = next(op for op in m.walk() if isinstance(op, tile.GemmOp))
    gemm.properties["k"] = IntegerAttr(60, builtin.i64)
    with pytest.raises(VerifyException, match="operand A has shape"):
        m.verify()


def test_index_range() -> None:
    m = _parse(
        """
func.func @f(%A: memref<128xf64>) {
  tile.kernel "k" (%a = %A : memref<128xf64>) {
    %c3 = arith.constant 3 : index
    tile.for %i = 8 to 100 step 16 {
      tile.for %j = 0 to 4 step 1 {
        %s = arith.addi %i, %j : index
        %p = arith.muli %s, %c3 : index
        %d = arith.subi %p, %i : index
      }
    }
  }
  func.return
}"""
    )
    vals = {op.result.name_hint: op.result for op in m.walk() if isinstance(op, (arith.AddiOp, arith.MuliOp, arith.SubiOp))}
    assert tile.index_range(vals["s"]) == (8, 88 + 3)
    assert tile.index_range(vals["p"]) == (24, 273)
    assert tile.index_range(vals["d"]) == (24 - 88, 273 - 8)


def _window_offsets(shape, sizes) -> np.ndarray:
    """Element offsets (row-major) of a window at the origin."""
    grids = np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij")
    strides = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
    return np.sort(sum(g * st for g, st in zip(grids, strides)).ravel())


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_dma_pattern_describes_exactly_the_window(data) -> None:
    rank = data.draw(st.integers(1, 4))
    shape = data.draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank))
    sizes = [data.draw(st.integers(1, d)) for d in shape]
    pat = loop.dma_pattern(shape, sizes, 1)
    offs = _window_offsets(shape, sizes)
    if pat is None:
        # not one (block, gap) pattern: the gaps between contiguous runs are not all equal
        runs = np.split(offs, np.where(np.diff(offs) != 1)[0] + 1)
        starts = [r[0] for r in runs]
        lens = {len(r) for r in runs}
        assert len(lens) > 1 or len(set(np.diff(starts))) > 1
        return
    size, bsize, gap = pat
    assert size == len(offs)
    if bsize == 0:
        assert np.array_equal(offs, np.arange(size))
    else:
        blocks = size // bsize
        want = (np.arange(blocks)[:, None] * (bsize + gap) + np.arange(bsize)[None, :]).ravel()
        assert np.array_equal(offs, want)


def test_dma_start_descriptor_and_spmd_footprint() -> None:
    m = _parse(
        """
func.func @f(%X: memref<1024x1024xf32>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<1024x1024xf32>) {
    %a = loop.ldm_buffer "A" : !loop.ldm<32x64xf32, double>
    %s = loop.ldm_buffer "s" : !loop.ldm<3xf64>
    %c0 = arith.constant 0 : index
    %v = loop.slot %a[%c0] : !loop.ldm<32x64xf32, double>
    %t = loop.dma_start %x[%r, %c] sizes [32, 64] -> %v : memref<1024x1024xf32> -> !loop.ldm<32x64xf32>
    %u = loop.dma_start %x[%r, %c0] sizes [2, 1024] -> %v : memref<1024x1024xf32> -> !loop.ldm<32x64xf32>
    loop.dma_wait %t, %u
  }
  func.return
}"""
    )
    spmd = next(op for op in m.walk() if isinstance(op, loop.SpmdOp))
    assert spmd.ldm_footprint() == [("A", 2 * 32 * 64 * 4), ("s", 32)]
    assert spmd.ldm_bytes() <= default_machine().ldm_user_bytes
    d1, d2 = (op for op in m.walk() if isinstance(op, loop.DmaStartOp))
    # 32 blocks of 64 fp32 = 256 B, gap (1024 - 64) * 4 B (algorithms.md §B item 6 form)
    assert d1.descriptor() == (32 * 64 * 4, 256, (1024 - 64) * 4)
    assert d2.descriptor() == (2 * 1024 * 4, 0, 0) and d1.is_get and d1.dma_mode == loop.DmaMode.PE


def test_loop_builders() -> None:
    mt = MemRefType(f64, [256, 256])
    fn = func.FuncOp("mm", ([mt], []))
    s = loop.SpmdOp("mm", [fn.body.block.args[0]])
    x = s.memref_args[0]
    ba = loop.LdmBufferOp("A", loop.LdmBufType([8, 32], f64, double=True))
    bb = loop.LdmBufferOp("B", loop.LdmBufType([32, 8], f64))
    bc = loop.LdmBufferOp("C", loop.LdmBufType([32, 32], f64))
    c0 = arith.ConstantOp(IntegerAttr(0, IndexType()))
    sl = loop.SlotOp(ba.result, c0.result)
    dma = loop.DmaStartOp(x, sl.result, [s.row, s.col], [8, 32])
    wait = loop.DmaWaitOp([dma.token])
    step = loop.SummaStepOp(c0.result, sl.result, bb.result, bc.result, 1, trans_a=True, trans_b=True, trans_c=True)
    s.body.block.add_ops([ba, bb, bc, c0, sl, dma, wait, step, loop.BarrierOp()])
    fn.body.block.add_ops([s, func.ReturnOp()])
    m = ModuleOp([fn])
    m.verify()
    assert step.block_mnk() == (32, 32, 8)
    assert sl.result.type == loop.LdmBufType([8, 32], f64)
    assert str(_parse(str(m))) == str(m)
