"""convert-tile-to-loop: tile.move / tile.map / tile.for lowering, differential against the tile
semantics (test/unit/tile_numpy.py) with a per-CPE numpy evaluator of the loop output
(test/unit/loop_numpy.py, which also checks that every DMA stays inside its memref and buffer,
that no map touches LDM with a DMA in flight and that every token is waited).

Fixed kernels cover the boundary cases (pad -inf / 0, clip, ragged cpe, rep broadcast and rep
store, strided and split windows, col layouts, double buffering); hypothesis draws random
distributions, layouts, shapes, strides and offsets.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import builtin, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects import loop
from taihu.dialects.resources import element_dtype
from taihu.passes.conversion.tile_to_loop import ConvertTileToLoopPass
from taihu.passes.pipelines import default_context
from taihu.test.unit.loop_numpy import run_loop_module
from taihu.test.unit.tile_numpy import run_tile_module


def parse_tile_case(text: str, seed: int = 0) -> tuple[Context, ModuleOp, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(context, module, random inputs keyed by graph.name, tile-level reference outputs) of a
    tile module text."""
    c = default_context()
    m = Parser(c, text).parse_module()
    m.verify()
    fn = next(o for o in m.body.block.ops if isinstance(o, func.FuncOp))
    rng = np.random.default_rng(seed)
    inputs = {}
    for i, a in enumerate(fn.body.block.args):
        nm = fn.arg_attrs.data[i].data["graph.name"].data  # type: ignore[union-attr]
        t = a.type
        inputs[nm] = rng.standard_normal(t.get_shape()).astype(element_dtype(t.get_element_type()))  # type: ignore[union-attr]
    ref = run_tile_module(m, {k: v.copy() for k, v in inputs.items()})
    return c, m, inputs, ref


def lower_and_compare(text: str, seed: int = 0, tol: float = 0.0, **opts: object) -> ModuleOp:
    """Lower ``text`` (a tile module with a graph.name'd @main), run both levels on the same
    random inputs and compare every output (bit for bit, or within rtol = atol = ``tol`` where the
    lowering reassociates, e.g. the Winograd transforms); returns the lowered module."""
    c, m, inputs, ref = parse_tile_case(text, seed)
    ConvertTileToLoopPass(**opts).apply(c, m)  # type: ignore[arg-type]
    m.verify()
    assert not any(o.name.startswith("tile.") for o in m.walk())
    got = run_loop_module(m, {k: v.copy() for k, v in inputs.items()})
    assert ref.keys() == got.keys()
    for k in ref:
        if tol:
            np.testing.assert_allclose(got[k], ref[k], rtol=tol, atol=tol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(got[k], ref[k], err_msg=f"output {k}")
    return m


def _main(args: list[tuple[str, str]], outs: list[str], body: str) -> str:
    """@main: the memrefs ``args`` (name, type) not in ``outs`` are arguments, those in ``outs``
    are ``memref.alloc`` results (uninitialised: NaN in the numpy evaluators) returned by @main;
    all are bound to the kernel under their names."""
    ins = [(n, t) for n, t in args if n not in outs]
    ty = dict(args)
    sig = ", ".join(f'%{n.upper()}: {t} {{graph.name = "{n}"}}' for n, t in ins)
    res = ", ".join(f'{ty[o]} {{graph.name = "{o}"}}' for o in outs)
    allocs = "".join(f"    %{o.upper()} = memref.alloc() : {ty[o]}\n" for o in outs)
    bind = ", ".join(f"%{n} = %{n.upper()} : {t}" for n, t in args)
    ret = ", ".join(f"%{o.upper()}" for o in outs)
    rty = ", ".join(ty[o] for o in outs)
    return (
        f"builtin.module {{\n  func.func @main({sig}) -> ({res}) {{\n{allocs}"
        f'    tile.kernel "k" ({bind}) {{\n{body}\n    }}\n    func.return {ret} : {rty}\n  }}\n}}\n'
    )


CASES = {
    "rc_cr_col_f64": _main(
        [("a", "memref<512x256xf64>"), ("b", "memref<512x256xf64>"), ("c", "memref<512x256xf64>")],
        ["b", "c"],
        """
      %ta = tile.alloc double : !tile.buf<256x64xf64, cr, col>
      %tb = tile.alloc : !tile.buf<256x64xf64, rc>
      %tc = tile.alloc : !tile.buf<256x64xf64, rc, col>
      tile.for %i = 0 to 512 step 256 {
        tile.for %k = 0 to 256 step 64 {
          tile.move %a[%i, %k] sizes [256, 64] -> %ta : memref<512x256xf64> -> !tile.buf<256x64xf64, cr, col>
          tile.move %ta -> %b[%i, %k] sizes [256, 64] : !tile.buf<256x64xf64, cr, col> -> memref<512x256xf64>
          tile.move %a[%i, %k] sizes [256, 64] -> %tb : memref<512x256xf64> -> !tile.buf<256x64xf64, rc>
          tile.map copy ins(%tb : !tile.buf<256x64xf64, rc>) out(%tc : !tile.buf<256x64xf64, rc, col>)
          tile.move %tc -> %c[%i, %k] sizes [256, 64] : !tile.buf<256x64xf64, rc, col> -> memref<512x256xf64>
        }
      }""",
    ),
    "pad_neg_inf_3d": _main(
        [("x", "memref<64x30x30xf32>"), ("y", "memref<64x40x32xf32>")],
        ["y"],
        """
      %t = tile.alloc : !tile.buf<64x10x32xf32, cpe>
      %c0 = arith.constant 0 : index
      %cm1 = arith.constant -1 : index
      tile.for %h = 0 to 40 step 10 {
        %h1 = arith.addi %h, %cm1 : index
        tile.move %x[%c0, %h1, %cm1] sizes [64, 10, 32] pad -inf -> %t : memref<64x30x30xf32> -> !tile.buf<64x10x32xf32, cpe>
        tile.move %t -> %y[%c0, %h, %c0] sizes [64, 10, 32] : !tile.buf<64x10x32xf32, cpe> -> memref<64x40x32xf32>
      }""",
    ),
    "pad_clip_rc_col": _main(
        [("x", "memref<100x70xf32>"), ("y", "memref<100x70xf32>")],
        ["y"],
        """
      %t = tile.alloc : !tile.buf<64x64xf32, rc>
      %u = tile.alloc : !tile.buf<64x64xf32, rc, col>
      tile.for %i = 0 to 100 step 64 {
        tile.for %j = 0 to 70 step 64 {
          tile.move %x[%i, %j] sizes [64, 64] pad 0.0 -> %t : memref<100x70xf32> -> !tile.buf<64x64xf32, rc>
          tile.map copy ins(%t : !tile.buf<64x64xf32, rc>) out(%u : !tile.buf<64x64xf32, rc, col>)
          tile.move %u -> %y[%i, %j] sizes [64, 64] clip : !tile.buf<64x64xf32, rc, col> -> memref<100x70xf32>
        }
      }""",
    ),
    "ragged_cpe": _main(
        [("x", "memref<130x37xf32>"), ("y", "memref<130x37xf32>"), ("z", "memref<100x37xf32>")],
        ["y", "z"],
        """
      %t = tile.alloc : !tile.buf<130x37xf32, cpe>
      %u = tile.alloc : !tile.buf<100x37xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.move %x[%c0, %c0] sizes [130, 37] -> %t : memref<130x37xf32> -> !tile.buf<130x37xf32, cpe>
      tile.map relu ins(%t : !tile.buf<130x37xf32, cpe>) out(%t : !tile.buf<130x37xf32, cpe>)
      tile.move %t -> %y[%c0, %c0] sizes [130, 37] : !tile.buf<130x37xf32, cpe> -> memref<130x37xf32>
      tile.move %x[%c0, %c0] sizes [100, 37] -> %u : memref<130x37xf32> -> !tile.buf<100x37xf32, cpe>
      tile.move %u -> %z[%c0, %c0] sizes [100, 37] : !tile.buf<100x37xf32, cpe> -> memref<100x37xf32>""",
    ),
    "rep_bcast_and_store": _main(
        [("x", "memref<64x8x56xf32>"), ("s", "memref<56xf32>"), ("y", "memref<64x8x56xf32>"), ("r", "memref<56xf32>")],
        ["y", "r"],
        """
      %t = tile.alloc : !tile.buf<64x8x56xf32, cpe>
      %sh = tile.alloc : !tile.buf<1x1x56xf32, rep>
      %c0 = arith.constant 0 : index
      tile.move %x[%c0, %c0, %c0] sizes [64, 8, 56] -> %t : memref<64x8x56xf32> -> !tile.buf<64x8x56xf32, cpe>
      tile.move %s[%c0] sizes [56] -> %sh : memref<56xf32> -> !tile.buf<1x1x56xf32, rep>
      tile.map add ins(%t, %sh : !tile.buf<64x8x56xf32, cpe>, !tile.buf<1x1x56xf32, rep>) out(%t : !tile.buf<64x8x56xf32, cpe>)
      tile.move %t -> %y[%c0, %c0, %c0] sizes [64, 8, 56] : !tile.buf<64x8x56xf32, cpe> -> memref<64x8x56xf32>
      tile.move %sh -> %r[%c0] sizes [56] : !tile.buf<1x1x56xf32, rep> -> memref<56xf32>""",
    ),
    "rep_slice_ragged": _main(
        [("x", "memref<100x16xf32>"), ("b", "memref<100x1xf32>"), ("y", "memref<100x16xf32>")],
        ["y"],
        """
      %t = tile.alloc : !tile.buf<100x16xf32, cpe>
      %bb = tile.alloc : !tile.buf<100x1xf32, rep>
      %c0 = arith.constant 0 : index
      tile.move %x[%c0, %c0] sizes [100, 16] -> %t : memref<100x16xf32> -> !tile.buf<100x16xf32, cpe>
      tile.move %b[%c0, %c0] sizes [100, 1] -> %bb : memref<100x1xf32> -> !tile.buf<100x1xf32, rep>
      tile.map mul ins(%t, %bb : !tile.buf<100x16xf32, cpe>, !tile.buf<100x1xf32, rep>) out(%t : !tile.buf<100x16xf32, cpe>)
      tile.move %t -> %y[%c0, %c0] sizes [100, 16] : !tile.buf<100x16xf32, cpe> -> memref<100x16xf32>""",
    ),
    "rep_slice_rc": _main(
        [("x", "memref<32x128xf64>"), ("b", "memref<32x1xf64>"), ("y", "memref<32x128xf64>")],
        ["y"],
        """
      %t = tile.alloc : !tile.buf<32x128xf64, rc>
      %bb = tile.alloc : !tile.buf<32x1xf64, rep>
      %c0 = arith.constant 0 : index
      tile.move %x[%c0, %c0] sizes [32, 128] -> %t : memref<32x128xf64> -> !tile.buf<32x128xf64, rc>
      tile.move %b[%c0, %c0] sizes [32, 1] -> %bb : memref<32x1xf64> -> !tile.buf<32x1xf64, rep>
      tile.map add ins(%t, %bb : !tile.buf<32x128xf64, rc>, !tile.buf<32x1xf64, rep>) out(%t : !tile.buf<32x128xf64, rc>)
      tile.move %t -> %y[%c0, %c0] sizes [32, 128] : !tile.buf<32x128xf64, rc> -> memref<32x128xf64>""",
    ),
    "strided_and_split_double": _main(
        [("x", "memref<128x10x20xf32>"), ("w", "memref<64x128xf32>"), ("y", "memref<128x10x20xf32>"), ("v", "memref<64x64xf32>")],
        ["y", "v"],
        """
      %t = tile.alloc double : !tile.buf<128x4x20xf32, cpe>
      %u = tile.alloc double : !tile.buf<128x4x20xf32, cpe>
      %s = tile.alloc : !tile.buf<64x64xf32, cpe>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      tile.for %h = 0 to 8 step 4 {
        tile.move %x[%c0, %h, %c0] sizes [128, 4, 20] -> %t : memref<128x10x20xf32> -> !tile.buf<128x4x20xf32, cpe>
        tile.map relu ins(%t : !tile.buf<128x4x20xf32, cpe>) out(%u : !tile.buf<128x4x20xf32, cpe>)
        tile.move %u -> %y[%c0, %h, %c0] sizes [128, 4, 20] : !tile.buf<128x4x20xf32, cpe> -> memref<128x10x20xf32>
      }
      tile.move %w[%c0, %c1] sizes [64, 64] strides [1, 2] -> %s : memref<64x128xf32> -> !tile.buf<64x64xf32, cpe>
      tile.move %s -> %v[%c0, %c0] sizes [64, 64] : !tile.buf<64x64xf32, cpe> -> memref<64x64xf32>""",
    ),
    "double_buffered_map_loop": _main(
        [("x", "memref<64x4096xf32>"), ("y", "memref<64x4096xf32>")],
        ["y"],
        """
      %t = tile.alloc double : !tile.buf<64x512xf32, cpe>
      %u = tile.alloc double : !tile.buf<64x512xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.for %j = 0 to 4096 step 512 {
        tile.move %x[%c0, %j] sizes [64, 512] -> %t : memref<64x4096xf32> -> !tile.buf<64x512xf32, cpe>
        tile.map relu ins(%t : !tile.buf<64x512xf32, cpe>) out(%u : !tile.buf<64x512xf32, cpe>)
        tile.move %u -> %y[%c0, %j] sizes [64, 512] : !tile.buf<64x512xf32, cpe> -> memref<64x4096xf32>
      }""",
    ),
    "peeled_boundary_iteration": _main(
        [("a", "memref<128x576xf32>"), ("y", "memref<128x128xf32>")],
        ["y"],
        """
      %t = tile.alloc double : !tile.buf<128x128xf32, cpe>
      %acc = tile.alloc : !tile.buf<128x128xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.map fill out(%acc : !tile.buf<128x128xf32, cpe>) {value = 0.0 : f64}
      tile.for %k = 0 to 576 step 128 {
        tile.move %a[%c0, %k] sizes [128, 128] pad 0.0 -> %t : memref<128x576xf32> -> !tile.buf<128x128xf32, cpe>
        tile.map add ins(%acc, %t : !tile.buf<128x128xf32, cpe>, !tile.buf<128x128xf32, cpe>) out(%acc : !tile.buf<128x128xf32, cpe>)
      }
      tile.move %acc -> %y[%c0, %c0] sizes [128, 128] : !tile.buf<128x128xf32, cpe> -> memref<128x128xf32>""",
    ),
    "balanced_boundary_iteration": _main(
        [("a", "memref<64x576xf32>"), ("y", "memref<64x128xf32>")],
        ["y"],
        """
      %t = tile.alloc double : !tile.buf<64x128xf32, cpe>
      %acc = tile.alloc : !tile.buf<64x128xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.map fill out(%acc : !tile.buf<64x128xf32, cpe>) {value = 0.0 : f64}
      tile.for %k = 0 to 576 step 128 {
        tile.move %a[%c0, %k] sizes [64, 128] pad 0.0 -> %t : memref<64x576xf32> -> !tile.buf<64x128xf32, cpe>
        tile.map add ins(%acc, %t : !tile.buf<64x128xf32, cpe>, !tile.buf<64x128xf32, cpe>) out(%acc : !tile.buf<64x128xf32, cpe>)
      }
      tile.move %acc -> %y[%c0, %c0] sizes [64, 128] : !tile.buf<64x128xf32, cpe> -> memref<64x128xf32>""",
    ),
    "hoisted_invariant_load": _main(
        [("x", "memref<64x1024xf32>"), ("b", "memref<64x1xf32>"), ("y", "memref<64x1024xf32>")],
        ["y"],
        """
      %t = tile.alloc : !tile.buf<64x256xf32, cpe>
      %bb = tile.alloc : !tile.buf<64x1xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.for %j = 0 to 1024 step 256 {
        tile.move %x[%c0, %j] sizes [64, 256] -> %t : memref<64x1024xf32> -> !tile.buf<64x256xf32, cpe>
        tile.move %b[%c0, %c0] sizes [64, 1] -> %bb : memref<64x1xf32> -> !tile.buf<64x1xf32, cpe>
        tile.map add ins(%t, %bb : !tile.buf<64x256xf32, cpe>, !tile.buf<64x1xf32, cpe>) out(%t : !tile.buf<64x256xf32, cpe>)
        tile.move %t -> %y[%c0, %j] sizes [64, 256] : !tile.buf<64x256xf32, cpe> -> memref<64x1024xf32>
      }""",
    ),
    "balanced_prefetch": _main(
        [("a", "memref<1x1024xf32>"), ("y", "memref<1x1024xf32>")],
        ["y"],
        """
      %t = tile.alloc double : !tile.buf<32x256xf32, rc>
      %u = tile.alloc : !tile.buf<32x256xf32, rc>
      %c0 = arith.constant 0 : index
      tile.for %k = 0 to 1024 step 256 {
        tile.move %a[%c0, %k] sizes [32, 256] pad 0.0 -> %t : memref<1x1024xf32> -> !tile.buf<32x256xf32, rc>
        tile.map relu ins(%t : !tile.buf<32x256xf32, rc>) out(%u : !tile.buf<32x256xf32, rc>)
        tile.move %u -> %y[%c0, %k] sizes [32, 256] clip : !tile.buf<32x256xf32, rc> -> memref<1x1024xf32>
      }""",
    ),
    "wrap_nested": _main(
        [("x", "memref<192x512xf32>"), ("b", "memref<192x1xf32>"), ("y", "memref<192x128xf32>")],
        ["y"],
        """
      %t = tile.alloc double : !tile.buf<64x128xf32, cpe>
      %bb = tile.alloc double : !tile.buf<64x1xf32, cpe>
      %acc = tile.alloc double : !tile.buf<64x128xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.for %n = 0 to 192 step 64 {
        tile.move %b[%n, %c0] sizes [64, 1] -> %bb : memref<192x1xf32> -> !tile.buf<64x1xf32, cpe>
        tile.map fill out(%acc : !tile.buf<64x128xf32, cpe>) {value = 0.0 : f64}
        tile.for %k = 0 to 512 step 128 {
          tile.move %x[%n, %k] sizes [64, 128] -> %t : memref<192x512xf32> -> !tile.buf<64x128xf32, cpe>
          tile.map add ins(%acc, %t : !tile.buf<64x128xf32, cpe>, !tile.buf<64x128xf32, cpe>) out(%acc : !tile.buf<64x128xf32, cpe>)
        }
        tile.map add ins(%acc, %bb : !tile.buf<64x128xf32, cpe>, !tile.buf<64x1xf32, cpe>) out(%acc : !tile.buf<64x128xf32, cpe>)
        tile.move %acc -> %y[%n, %c0] sizes [64, 128] : !tile.buf<64x128xf32, cpe> -> memref<192x128xf32>
      }""",
    ),
    "read_after_write_barrier": _main(
        [("x", "memref<64x64xf32>"), ("y", "memref<64x64xf32>"), ("z", "memref<64x64xf32>")],
        ["y", "z"],
        """
      %t = tile.alloc : !tile.buf<64x64xf32, rc>
      %u = tile.alloc : !tile.buf<64x64xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.move %x[%c0, %c0] sizes [64, 64] -> %t : memref<64x64xf32> -> !tile.buf<64x64xf32, rc>
      tile.move %t -> %y[%c0, %c0] sizes [64, 64] : !tile.buf<64x64xf32, rc> -> memref<64x64xf32>
      tile.move %y[%c0, %c0] sizes [64, 64] -> %u : memref<64x64xf32> -> !tile.buf<64x64xf32, cpe>
      tile.move %u -> %z[%c0, %c0] sizes [64, 64] : !tile.buf<64x64xf32, cpe> -> memref<64x64xf32>""",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("double_buffer", [True, False])
def test_fixed_kernels(name: str, double_buffer: bool) -> None:
    lower_and_compare(CASES[name], double_buffer=double_buffer)


def test_double_buffering_form() -> None:
    m = lower_and_compare(CASES["double_buffered_map_loop"])
    fors = [o for o in m.walk() if isinstance(o, scf.ForOp)]
    assert len(fors) == 1
    f = fors[0]
    # tokens of the prefetched load and of the delayed store + the slot counter
    assert [type(a.type) for a in f.iter_args] == [loop.TokenType, loop.TokenType, builtin.IndexType]
    # the loop runs iterations 1..6 (first peeled for the store, last peeled for the load)
    assert f.lb.owner.value.value.data == 512 and f.ub.owner.value.value.data == 3584  # type: ignore[union-attr]
    m1 = lower_and_compare(CASES["double_buffered_map_loop"], double_buffer=False)
    (f1,) = [o for o in m1.walk() if isinstance(o, scf.ForOp)]
    assert not f1.iter_args


def test_boundary_iteration_is_peeled() -> None:
    # K = 576 in steps of 128 with 2 rows per CPE: the last window (k = 512) is half outside,
    # so each row is its own DMA there (2 > the 1 strided DMA of a whole piece): that iteration
    # is peeled (E6 primitive switching); iterations 0..3 stay interior, prefetched, async
    m = lower_and_compare(CASES["peeled_boundary_iteration"])
    (f,) = [o for o in m.walk() if isinstance(o, scf.ForOp)]
    assert len(f.iter_args) == 2  # load token + slot counter
    after = []
    op = f.next_op
    while op is not None:
        after.append(op)
        op = op.next_op
    assert [o.size_values for o in after if isinstance(o, loop.DmaStartOp)][:2] == [(1, 64), (1, 64)]
    assert any(isinstance(o, loop.MapOp) and o.kind.data.value == "fill" for o in after)
    assert f.ub.owner.value.value.data == 384  # type: ignore[union-attr]
    assert not any(isinstance(o, scf.IfOp) for o in m.walk())


def test_balanced_boundary_iteration_is_prefetched() -> None:
    # one row per CPE: the half-outside last window is still one DMA per CPE, so the move
    # dispatches inside the loop (scf.if yielding the token) and every iteration is prefetched
    m = lower_and_compare(CASES["balanced_boundary_iteration"])
    (f,) = [o for o in m.walk() if isinstance(o, scf.ForOp)]
    assert [type(a.type) for a in f.iter_args] == [loop.TokenType, builtin.IndexType]
    assert any(isinstance(o, scf.IfOp) and len(o.results) == 1 for o in f.walk())


def test_loop_invariant_load_is_hoisted() -> None:
    # 004 Alg. 7: the DMA of %b (address independent of %j) is placed before the loop
    m = lower_and_compare(CASES["hoisted_invariant_load"])
    (f,) = [o for o in m.walk() if isinstance(o, scf.ForOp)]
    inside = [o.memref.name_hint for o in f.walk() if isinstance(o, loop.DmaStartOp)]
    assert "b" not in inside and "x" in inside
    assert any(isinstance(o, loop.DmaStartOp) and o.memref.name_hint == "b" for o in m.walk())


def test_dispatched_move_with_balanced_tokens_is_prefetched() -> None:
    # a vector (1 x K) in 32-row rc tiles: only CPE row 0 has a valid row, the others only pad;
    # one DMA per variant (a dummy for the empty ones), so the dispatch yields its token and the
    # load is double-buffered like an interior one
    m = lower_and_compare(CASES["balanced_prefetch"])
    (f,) = [o for o in m.walk() if isinstance(o, scf.ForOp)]
    assert [type(a.type) for a in f.iter_args] == [loop.TokenType, builtin.IndexType]
    ifs = [o for o in f.walk() if isinstance(o, scf.IfOp)]
    assert any(len(o.results) == 1 for o in ifs)


def test_prefetch_wraps_to_the_outer_loop() -> None:
    # 004 Alg. 8: the last k iteration prefetches the first x tile of the next n iteration, so
    # only the very first tile is fetched before the nest (one prologue DMA of x, not three)
    m = lower_and_compare(CASES["wrap_nested"])
    spmd = next(o for o in m.walk() if isinstance(o, loop.SpmdOp))
    gets_x = [o for o in spmd.walk() if isinstance(o, loop.DmaStartOp) and o.memref.name_hint == "x"]
    in_k_loops = [o for o in gets_x if isinstance(o.parent_op(), scf.ForOp) and o.parent_op().parent_op() is not spmd]
    # n iterations 0 (peeled: delayed store of acc), 1 (scf.for) and 2 (peeled: no wrap); x DMAs
    # directly in the spmd body: the prologue and the wrap at the end of iteration 0's k loop
    top = [o for o in spmd.body.block.ops if isinstance(o, loop.DmaStartOp) and o.memref.name_hint == "x"]
    assert len(top) == 2, [str(o) for o in top]
    assert in_k_loops


def test_barrier_before_reading_written_memref() -> None:
    m = lower_and_compare(CASES["read_after_write_barrier"])
    names = [o.name for o in m.walk() if o.name in ("loop.barrier", "loop.dma_start", "loop.dma_wait")]
    i = names.index("loop.barrier")
    assert names[:i].count("loop.dma_start") == 2 and "loop.dma_wait" in names[:i]


def test_many_dma_split_uses_scf_for() -> None:
    # q = 16 rows per CPE; dims 1 and 2 partial, so each row is its own strided DMA:
    # 16 > max_unrolled_dmas -> scf.for
    text = _main(
        [("x", "memref<1024x8x16xf32>"), ("y", "memref<1024x8x16xf32>")],
        ["y"],
        """
      %t = tile.alloc : !tile.buf<1024x2x8xf32, cpe>
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      tile.for %h = 0 to 8 step 2 {
        tile.move %x[%c0, %h, %c4] sizes [1024, 2, 8] -> %t : memref<1024x8x16xf32> -> !tile.buf<1024x2x8xf32, cpe>
        tile.move %t -> %y[%c0, %h, %c4] sizes [1024, 2, 8] : !tile.buf<1024x2x8xf32, cpe> -> memref<1024x8x16xf32>
      }""",
    )
    m = lower_and_compare(text, max_unrolled_dmas=4)
    assert sum(isinstance(o, scf.ForOp) for o in m.walk()) == 3  # the tile loop + one per move


def test_unbounded_boundary_offset_is_an_error() -> None:
    text = _main(
        [("x", "memref<64x64xf32>"), ("y", "memref<64x64xf32>")],
        ["y"],
        """
      %t = tile.alloc : !tile.buf<64x64xf32, rc>
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      tile.for %i = 0 to 4 step 1 {
        %o = arith.maxui %i, %c3 : index
        tile.move %x[%o, %c0] sizes [64, 64] pad 0.0 -> %t : memref<64x64xf32> -> !tile.buf<64x64xf32, rc>
      }""",
    )
    c = default_context()
    m = Parser(c, text).parse_module()
    with pytest.raises(PassFailedException, match="cannot bound offset #0 of a boundary"):
        ConvertTileToLoopPass().apply(c, m)


# ---------------------------------------------------------------------------------------------
# Random moves
# ---------------------------------------------------------------------------------------------


@st.composite
def move_kernels(draw):  # type: ignore[no-untyped-def]
    dist = draw(st.sampled_from(["rc", "cr", "cpe", "rep"]))
    elem = draw(st.sampled_from(["f32", "f64"]))
    if dist in ("rc", "cr"):
        tshape = [8 * draw(st.integers(1, 3)), 8 * draw(st.integers(1, 3))]
    elif dist == "cpe":
        tshape = [draw(st.integers(1, 140))] + [draw(st.integers(1, 5)) for _ in range(draw(st.integers(1, 2)))]
    else:
        tshape = [draw(st.integers(1, 6)) for _ in range(draw(st.integers(1, 2)))]
    layout = draw(st.sampled_from(["row", "col"])) if len(tshape) == 2 else "row"
    # window: the tile dims with optional unit dims inserted; one dim is walked by a tile.for
    sizes = list(tshape)
    if draw(st.booleans()):
        sizes.insert(draw(st.integers(0, len(sizes))), 1)
    r = len(sizes)
    strides = [draw(st.sampled_from([1, 1, 2])) for _ in range(r)]
    ext = [(s - 1) * x + 1 for s, x in zip(sizes, strides)]
    walk = draw(st.integers(0, r - 1))
    trips = draw(st.integers(1, 3))
    lead = [draw(st.integers(-3, 3)) for _ in range(r)]
    step = sizes[walk] * strides[walk]
    span = [e for e in ext]
    span[walk] = step * (trips - 1) + ext[walk]
    # memref dims: sometimes smaller than the windows' span (boundary: pad / clip)
    shape = []
    boundary = False
    for d in range(r):
        hi = max(lead[d], 0) + span[d]
        dim = draw(st.integers(max(1, hi - 4), hi + 2))
        if lead[d] < 0 or dim < lead[d] + span[d]:
            boundary = True
        shape.append(dim)
    pad = draw(st.sampled_from(["0.0", "-inf", "1.5"]))
    out_layout = draw(st.sampled_from(["row", "col"])) if len(tshape) == 2 and dist != "rep" else layout
    tt = f"!tile.buf<{'x'.join(map(str, tshape))}x{elem}, {dist}{', col' if layout == 'col' else ''}>"
    ut = f"!tile.buf<{'x'.join(map(str, tshape))}x{elem}, {dist}{', col' if out_layout == 'col' else ''}>"
    mt = f"memref<{'x'.join(map(str, shape))}x{elem}>"
    double = draw(st.booleans())
    consts = sorted(set(lead) | {0})
    cdecl = "\n".join(f"      %k{i} = arith.constant {c} : index" for i, c in enumerate(consts))
    cname = {c: f"%k{i}" for i, c in enumerate(consts)}
    offs = [cname[lead[d]] if d != walk else "%o" for d in range(r)]
    st_txt = f" strides [{', '.join(map(str, strides))}]" if any(x != 1 for x in strides) else ""
    w = f"sizes [{', '.join(map(str, sizes))}]{st_txt}"
    body = f"""
      %t = tile.alloc{' double' if double else ''} : {tt}
      %u = tile.alloc{' double' if double else ''} : {ut}
{cdecl}
      tile.for %i = 0 to {step * trips} step {step} {{
        %o = arith.addi %i, {cname[lead[walk]]} : index
        tile.move %x[{', '.join(offs)}] {w}{' pad ' + pad if boundary else ''} -> %t : {mt} -> {tt}
        tile.map copy ins(%t : {tt}) out(%u : {ut})
        tile.move %u -> %y[{', '.join(offs)}] {w}{' clip' if boundary else ''} : {ut} -> {mt}
      }}"""
    return _main([("x", mt), ("y", mt)], ["y"], body)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(move_kernels(), st.booleans())
def test_random_moves(text: str, double_buffer: bool) -> None:
    lower_and_compare(text, double_buffer=double_buffer, max_unrolled_dmas=8)


@st.composite
def nested_kernels(draw):  # type: ignore[no-untyped-def]
    """Two-level tiled y = x + bias[row] with boundary tiles: exercises peeling, prefetching,
    delayed stores, hoisting and the interplay of their token chains."""
    dist = draw(st.sampled_from(["rc", "cpe"]))
    th = 8 * draw(st.integers(1, 3)) if dist == "rc" else draw(st.integers(1, 80))
    tw = 8 * draw(st.integers(1, 3))
    if draw(st.booleans()):  # no boundary: Alg. 8's wrap to the outer loop applies
        h, w = th * draw(st.integers(1, 3)), tw * draw(st.integers(1, 3))
    else:
        h = draw(st.integers(max(1, th // 2), 3 * th))
        w = draw(st.integers(max(1, tw // 2), 3 * tw))
    ni, nj = -(-h // th), -(-w // tw)
    dbl = " double" if draw(st.booleans()) else ""
    tt = f"!tile.buf<{th}x{tw}xf32, {dist}>"
    bt = f"!tile.buf<{th}x1xf32, {'cpe' if dist == 'cpe' else 'rep'}>"
    mt = f"memref<{h}x{w}xf32>"
    body = f"""
      %t = tile.alloc{dbl} : {tt}
      %u = tile.alloc{dbl} : {tt}
      %bb = tile.alloc : {bt}
      %c0 = arith.constant 0 : index
      tile.for %i = 0 to {ni * th} step {th} {{
        tile.for %j = 0 to {nj * tw} step {tw} {{
          tile.move %x[%i, %j] sizes [{th}, {tw}] pad 0.0 -> %t : {mt} -> {tt}
          tile.move %b[%i, %c0] sizes [{th}, 1] pad 0.0 -> %bb : memref<{h}x1xf32> -> {bt}
          tile.map add ins(%t, %bb : {tt}, {bt}) out(%u : {tt})
          tile.move %u -> %y[%i, %j] sizes [{th}, {tw}] clip : {tt} -> {mt}
        }}
      }}"""
    return _main([("x", mt), ("b", f"memref<{h}x1xf32>"), ("y", mt)], ["y"], body)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested_kernels(), st.booleans())
def test_random_nested_kernels(text: str, double_buffer: bool) -> None:
    lower_and_compare(text, double_buffer=double_buffer)
