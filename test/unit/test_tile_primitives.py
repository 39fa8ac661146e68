"""Schedule primitives as tile-level passes (:mod:`taihu.passes.tile`): FT-1 exactly (001 eq
4.2-4.3), semantics preservation on real programs lowered by ``convert-graph-to-tile`` (a ReLU
map, a GEMM, an implicit convolution), evaluated before and after each primitive with the numpy
evaluator of tile modules on random data, refusals on those programs, and -- for at least one
program per primitive -- the primitive's output lowered through ``convert-tile-to-loop,
convert-loop-to-sw,sw-to-swsim`` and simulated to the same numbers as the original schedule."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import PassFailedException

from taihu.backends.sim.runner import simulate
from taihu.dialects import graph, tile
from taihu.passes.conversion.graph_to_tile import ConvertGraphToTilePass
from taihu.passes.pipelines import default_context
from taihu.passes.registry import get_all_passes
from taihu.test.unit.graph_builder import G
from taihu.test.unit.tile_numpy import run_tile_module

#: the primitives keep the numbers exactly, except a reordered/fused GEMM reduction whose fp64
#: sum is reassociated before the f32 store
RTOL, ATOL = 1e-6, 1e-6


def run(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply a pass pipeline (``taihu-opt -p`` syntax) and verify the module."""
    passes = get_all_passes()
    for p in parse_pipeline(spec):
        passes[p.name]().from_pass_spec(p).apply(default_context(), module)
    module.verify()
    return module


def loops(module: ModuleOp) -> dict[str, tuple[int, int, int]]:
    """name -> (lb, ub, step) of every tile.for."""
    return {lp.iter_name.data: (lp.lb_value, lp.ub_value, lp.step_value)
            for lp in module.walk() if isinstance(lp, tile.ForOp) and lp.iter_name is not None}


# --------------------------------------------------------------------------------------------
# Programs: real convert-graph-to-tile output
# --------------------------------------------------------------------------------------------


def relu() -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """ReLU on a ResNet-sized activation: one loop i0 of 2 chunks of 100352 elements."""
    g = G((1, 64, 56, 56))
    y = g(graph.ReluOp(g.args[0]))
    return g.module(y), g.inputs(1)


def gemm() -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """256x256 <- 256x512 * 512x256: loops cM (4 blocks of 64) and cK (2 blocks of 256)."""
    g = G((256, 512), (512, 256))
    y = g(graph.MatMulOp(g.args[0], g.args[1]))
    return g.module(y), g.inputs(2)


def conv() -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """3x3 conv 64 -> 64 on 8x8, pads 1, weights an input (implicit, per-image variant: a
    weight relayout kernel, then loops cRo, cKr, cKc around the GEMM primitives)."""
    g = G((1, 64, 8, 8), (64, 64, 3, 3))
    y = g(graph.Conv2dOp(g.args[0], g.args[1], None, pads=(1, 1, 1, 1)))
    return g.module(y), g.inputs(3)


PROGRAMS: dict[str, tuple[Callable[[], tuple[ModuleOp, dict[str, np.ndarray]]], dict[str, str]]] = {
    "relu": (relu, {}),
    "gemm": (gemm, {}),
    "conv": (conv, {"conv_algorithm": "implicit"}),
}


def lowered(name: str) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    build, options = PROGRAMS[name]
    module, inputs = build()
    ConvertGraphToTilePass(**options).apply(Context(), module)  # type: ignore[arg-type]
    module.verify()
    want = {"relu": {"i0"}, "gemm": {"cM", "cK"}, "conv": {"cRo", "cKr", "cKc"}}[name]
    assert want <= loops(module).keys(), f"{name}: the schedules below name the loops {sorted(want)}"
    return module, inputs


CASES = [
    ("relu", "tile-split{loop=i0 factor=2}"),
    ("relu", "tile-split{loop=i0 factor=2},tile-reorder{loops=i0_i,i0_o}"),
    ("relu", "tile-split{loop=i0 factor=2},tile-fuse{outer=i0_o inner=i0_i}"),
    ("relu", "tile-fuse{loop=i0}"),
    ("gemm", "tile-split{loop=cK factor=2},tile-reorder{loops=cK_i,cK_o}"),
    ("gemm", "tile-split{loop=cM factor=2},tile-fuse{outer=cM_o inner=cM_i}"),
    ("gemm", "tile-fuse{loop=cM}"),
    ("gemm", "tile-fuse{loop=cK}"),
    ("gemm", "tile-fuse{loop=cM},tile-vectorize{dim=m}"),
    ("gemm", "tile-layout{buffer=c_s layout=col}"),
    ("conv", "tile-reorder{loops=cKc,cKr}"),
    ("conv", "tile-fuse{outer=cKr inner=cKc}"),
    ("conv", "tile-split{loop=cKc factor=3},tile-reorder{loops=cKc_i,cKr,cKc_o}"),
    ("conv", "tile-fuse{outer=cKr inner=cKc},tile-split{loop=cKr_cKc factor=3}"),
]


@pytest.mark.parametrize("name,spec", CASES, ids=[f"{n}:{s}" for n, s in CASES])
def test_semantics_preserved(name: str, spec: str) -> None:
    """The tile program computes the same outputs before and after the primitives."""
    module, inputs = lowered(name)
    before = run_tile_module(module.clone(), inputs)  # (tile_numpy caches a kernel's closures per op)
    after = run_tile_module(run(module, spec), inputs)
    assert before.keys() == after.keys()
    for k in before:
        assert np.isfinite(before[k]).all()
        np.testing.assert_allclose(after[k], before[k], rtol=RTOL, atol=ATOL, err_msg=k)


def test_semantics_preserved_on_other_data() -> None:
    """The same on several random inputs for a reassociated reduction (conv, K loops swapped)."""
    module, _ = lowered("conv")
    other, _ = lowered("conv")
    run(other, "tile-reorder{loops=cKc,cKr},tile-fuse{outer=cKc inner=cKr}")
    for seed in (4, 5):
        rng = np.random.default_rng(seed)
        x = {"x0": rng.standard_normal((1, 64, 8, 8)).astype(np.float32),
             "x1": rng.standard_normal((64, 64, 3, 3)).astype(np.float32)}
        a, b = run_tile_module(module, x), run_tile_module(other, x)
        np.testing.assert_allclose(b["y0"], a["y0"], rtol=RTOL, atol=ATOL)


# --------------------------------------------------------------------------------------------
# FT-1 (reproduction-targets.md): split(<0,64,1>, 8) -> <0,8,1>, <0,8,1>; fuse(<0,4,1>, <0,8,1>) -> <0,32,1>
# --------------------------------------------------------------------------------------------

FT1 = """
func.func @main(%x: memref<64x256xf32> {graph.name = "x"}) -> (memref<64x256xf32> {graph.name = "y"}) {
  %y = memref.alloc() : memref<64x256xf32>
  %x3 = memref.expand_shape %x [[0, 1], [2]] output_shape [4, 16, 256] : memref<64x256xf32> into memref<4x16x256xf32>
  %y3 = memref.expand_shape %y [[0, 1], [2]] output_shape [4, 16, 256] : memref<64x256xf32> into memref<4x16x256xf32>
  tile.kernel "split" (%xa = %x : memref<64x256xf32>, %ya = %y : memref<64x256xf32>) {
    %t = tile.alloc double : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %i = 0 to 64 step 1 name "i" {
      tile.move %xa[%i, %c0] sizes [1, 256] -> %t : memref<64x256xf32> -> !tile.buf<256xf32, cpe>
      tile.map relu ins(%t : !tile.buf<256xf32, cpe>) out(%t : !tile.buf<256xf32, cpe>)
      tile.move %t -> %ya[%i, %c0] sizes [1, 256] : !tile.buf<256xf32, cpe> -> memref<64x256xf32>
    }
  }
  tile.kernel "fuse" (%xa = %x3 : memref<4x16x256xf32>, %ya = %y3 : memref<4x16x256xf32>) {
    %t = tile.alloc double : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    tile.for %a = 0 to 4 step 1 name "a" {
      tile.for %b = 0 to 8 step 1 name "b" {
        %r = arith.addi %b, %c8 : index
        tile.move %ya[%a, %r, %c0] sizes [1, 1, 256] -> %t : memref<4x16x256xf32> -> !tile.buf<256xf32, cpe>
        tile.map sigmoid ins(%t : !tile.buf<256xf32, cpe>) out(%t : !tile.buf<256xf32, cpe>)
        tile.move %t -> %ya[%a, %b, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<4x16x256xf32>
      }
    }
  }
  func.return %y : memref<64x256xf32>
}
"""


def _ft1() -> ModuleOp:
    return Parser(default_context(), FT1).parse_module()


def test_ft1_split_exact() -> None:
    """split(<0,64,1>, 8): outer <0,64,8> (8 iterations) and inner <0,8,1> (8), i = i_o + i_i."""
    m = run(_ft1(), "tile-split{loop=i factor=8}")
    got = loops(m)
    assert got["i_o"] == (0, 64, 8) and got["i_i"] == (0, 8, 1)
    trip = {n: -(-(ub - lb) // s) for n, (lb, ub, s) in got.items()}
    assert (trip["i_o"], trip["i_i"]) == (64 // 8, 8)  # eq 4.2: <0, end/f, 1>, <0, f, 1>
    x = {"x": np.random.default_rng(7).standard_normal((64, 256)).astype(np.float32)}
    np.testing.assert_array_equal(run_tile_module(m, x)["y"], run_tile_module(_ft1(), x)["y"])


def test_ft1_fuse_exact() -> None:
    """fuse(<0,4,1>, <0,8,1>) = <0,32,1>; iterators recovered by div/mod (eq 4.3)."""
    m = run(_ft1(), "tile-fuse{outer=a inner=b}")
    got = loops(m)
    assert got["a_b"] == (0, 32, 1) and "a" not in got and "b" not in got
    fused = next(lp for lp in m.walk() if isinstance(lp, tile.ForOp) and lp.iter_name.data == "a_b")  # type: ignore[union-attr]
    kinds = [op.name for op in fused.body.block.ops][:2]
    assert kinds == ["arith.divui", "arith.remui"]
    x = {"x": np.random.default_rng(8).standard_normal((64, 256)).astype(np.float32)}
    np.testing.assert_array_equal(run_tile_module(m, x)["y"], run_tile_module(_ft1(), x)["y"])


def test_split_then_fuse_is_the_original_iteration_space() -> None:
    """fuse(split(l, f)) visits <0, T, 1> again: FlexTensor's two primitives are inverse in the
    trip-count view (split keeps lb/step in the outer loop; fusion normalises to step 1)."""
    m = run(_ft1(), "tile-split{loop=i factor=8},tile-fuse{outer=i_o inner=i_i fused=i}")
    assert loops(m)["i"] == (0, 64, 1)


# --------------------------------------------------------------------------------------------
# Refusals on the real programs (lit covers the full list of diagnostics)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,spec,message", [
    ("conv", "tile-reorder{loops=cKr,cRo}", "not a perfect nest: 'tile.map' between loop 'cRo'"),
    ("conv", "tile-fuse{loop=cKc}", "not consecutive along dim 3"),
    ("conv", "tile-fuse{loop=cRo}", "not consecutive along dim 2"),
    ("gemm", "tile-reorder{loops=cK,cM}", "not a perfect nest"),
    ("gemm", "tile-vectorize{dim=m}", "vectorised dim M = 64 must be a multiple of 128"),
    ("gemm", "tile-layout{buffer=c layout=col}", "must store the vectorised dim N contiguously"),
    ("relu", "tile-split{loop=i0 factor=3}", "factor 3 does not divide the trip count 2"),
])
def test_refusals(name: str, spec: str, message: str) -> None:
    module, _ = lowered(name)
    with pytest.raises(PassFailedException, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(module, spec)


# --------------------------------------------------------------------------------------------
# Through the whole pipeline: the simulator's numbers are the same
# --------------------------------------------------------------------------------------------

_SIMULATED: dict[str, dict[str, np.ndarray]] = {}


def _simulate(module: ModuleOp, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    run(module, "convert-tile-to-loop,convert-loop-to-sw,sw-to-swsim")
    return {k: np.array(v) for k, v in simulate(module, inputs=inputs).outputs.items()}


def _simulated_before(name: str) -> dict[str, np.ndarray]:
    if name not in _SIMULATED:
        module, inputs = lowered(name)
        _SIMULATED[name] = _simulate(module, inputs)
    return _SIMULATED[name]


SIM_CASES = [
    ("relu", "tile-split{loop=i0 factor=2}"),  # split
    ("gemm", "tile-split{loop=cK factor=2},tile-reorder{loops=cK_i,cK_o}"),  # reorder (a reduction)
    ("gemm", "tile-split{loop=cM factor=2},tile-fuse{outer=cM_o inner=cM_i}"),  # fuse (div/mod)
    ("relu", "tile-fuse{loop=i0}"),  # fuse into moves and maps
    ("gemm", "tile-fuse{loop=cM},tile-vectorize{dim=m}"),  # fuse into the GEMM's M, then vectorise M
    ("gemm", "tile-layout{buffer=c_s layout=col}"),  # layout
]


@pytest.mark.parametrize("name,spec", SIM_CASES, ids=[f"{n}:{s}" for n, s in SIM_CASES])
def test_simulated_numbers_preserved(name: str, spec: str) -> None:
    before = _simulated_before(name)
    module, inputs = lowered(name)
    reference = run_tile_module(module.clone(), inputs)
    after = _simulate(run(module, spec), inputs)
    assert before.keys() == after.keys() and after
    for k in before:
        np.testing.assert_allclose(after[k], before[k], rtol=RTOL, atol=ATOL, err_msg=k)
        np.testing.assert_allclose(after[k].reshape(reference[k].shape), reference[k], rtol=1e-5, atol=1e-5,
                                   err_msg=k)


# --------------------------------------------------------------------------------------------
# Every permutation and every divisor of a small 3-deep nest
# --------------------------------------------------------------------------------------------

NEST = """
func.func @main(%x: memref<2x3x4x64xf32> {graph.name = "x"}) -> (memref<2x3x4x64xf32> {graph.name = "y"}) {
  %y = memref.alloc() : memref<2x3x4x64xf32>
  tile.kernel "k" (%xa = %x : memref<2x3x4x64xf32>, %ya = %y : memref<2x3x4x64xf32>) {
    %t = tile.alloc : !tile.buf<64xf32, cpe>
    %u = tile.alloc : !tile.buf<64xf32, cpe>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    tile.for %a = 0 to 2 step 1 name "a" {
      %a2 = arith.subi %c1, %a : index
      tile.for %b = 0 to 3 step 1 name "b" {
        tile.for %c = 0 to 4 step 1 name "c" {
          %c2 = arith.subi %c3, %c : index
          tile.move %xa[%a2, %b, %c2, %c0] sizes [1, 1, 1, 64] -> %t : memref<2x3x4x64xf32> -> !tile.buf<64xf32, cpe>
          tile.map tanh ins(%t : !tile.buf<64xf32, cpe>) out(%u : !tile.buf<64xf32, cpe>)
          tile.map mul ins(%u, %t : !tile.buf<64xf32, cpe>, !tile.buf<64xf32, cpe>) out(%u : !tile.buf<64xf32, cpe>)
          tile.move %u -> %ya[%a, %b, %c, %c0] sizes [1, 1, 1, 64] : !tile.buf<64xf32, cpe> -> memref<2x3x4x64xf32>
        }
      }
    }
  }
  func.return %y : memref<2x3x4x64xf32>
}
"""

_ORDERS = [("a", "b", "c"), ("a", "c", "b"), ("b", "a", "c"), ("b", "c", "a"), ("c", "a", "b"), ("c", "b", "a")]
_NEST_SPECS = (
    [f"tile-reorder{{loops={','.join(o)}}}" for o in _ORDERS]
    + [f"tile-split{{loop={n} factor={f}}}" for n, t in (("a", 2), ("b", 3), ("c", 4)) for f in range(1, t + 1)
       if t % f == 0]
    + ["tile-fuse{outer=a inner=b},tile-fuse{outer=a_b inner=c}", "tile-fuse{outer=b inner=c},tile-reorder{loops=b_c,a}",
       "tile-split{loop=c factor=2},tile-reorder{loops=c_i,a,b,c_o},tile-fuse{outer=a inner=b}"]
)


@pytest.mark.parametrize("spec", _NEST_SPECS)
def test_nest_every_schedule(spec: str) -> None:
    """Each permutation (3! orders), each divisor factor, fusions of a 3-deep perfect nest whose
    index arithmetic sits between the loops (reading x backwards along a and c, so loop c cannot
    be fused into the moves): the same array."""
    x = {"x": np.random.default_rng(9).standard_normal((2, 3, 4, 64)).astype(np.float32)}
    want = run_tile_module(Parser(default_context(), NEST).parse_module(), x)["y"]
    got = run_tile_module(run(Parser(default_context(), NEST).parse_module(), spec), x)["y"]
    np.testing.assert_array_equal(got, want)
