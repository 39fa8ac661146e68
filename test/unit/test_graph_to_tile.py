"""convert-graph-to-tile: numerics of the tile IR (numpy evaluation, :mod:`tile_numpy`) against
the graph reference for every memory-bound op family (:mod:`lowering_cases`), random shapes
(hypothesis), the tiling planner's LDM/contiguity choices, fusion, the bufferized function form
and the diagnostics. Independent of the downstream passes."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.utils.exceptions import PassFailedException

from taihu.backends.reference import run_module
from taihu.target.machine import default_machine
from taihu.dialects import graph, tile
from taihu.dialects.mapkind import MapKind
from taihu.passes.conversion.graph_to_tile import ConvertGraphToTilePass
from taihu.passes.conversion.graph_to_tile.maps import (
    canonicalize_broadcast,
    canonicalize_pad,
    canonicalize_perm,
    pool_counts,
)
from taihu.test.unit.graph_builder import G
from taihu.test.unit.lowering_cases import CASES, OPTIONS
from taihu.test.unit.tile_numpy import run_tile_module

RTOL, ATOL = 1e-4, 1e-5


def lower(module: ModuleOp, **options) -> ModuleOp:
    ConvertGraphToTilePass(**options).apply(Context(), module)
    module.verify()
    return module


def kernels(module: ModuleOp) -> list[tile.KernelOp]:
    return [k for k in module.walk() if isinstance(k, tile.KernelOp)]


def check_numerics(g: G, outs, seed: int = 0, **options) -> ModuleOp:
    module = g.module(*outs)
    inputs = g.inputs(seed)
    ref = run_module(module, inputs)
    lower(module, **options)
    got = run_tile_module(module, inputs)
    assert ref.keys() == got.keys()
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=RTOL, atol=ATOL, err_msg=k)
    return module


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_numerics(name: str) -> None:
    g, outs = CASES[name]()
    options = OPTIONS.get(name, {})
    module = check_numerics(g, outs, **options)
    limit = options.get("ldm_budget", default_machine().ldm_user_bytes)
    for k in kernels(module):
        assert sum(b for _, b in k.ldm_footprint()) <= limit
        for key in ("taihu.layer", "taihu.op", "taihu.algorithm", "taihu.shape"):
            assert key in k.attributes, (k.kernel_name.data, key)


# --------------------------------------------------------------------------------------------
# Random shapes
# --------------------------------------------------------------------------------------------

dims = st.integers(1, 9)


@st.composite
def broadcast_pair(draw):
    rank = draw(st.integers(1, 4))
    out = [draw(dims) for _ in range(rank)]
    a = [d if draw(st.booleans()) else 1 for d in out]
    b = [d if draw(st.booleans()) else 1 for d in out]
    b = b[draw(st.integers(0, rank - 1)):]  # numpy: b may have a lower rank
    if not a:
        a = [1]
    if not b:
        b = [1]
    return tuple(a), tuple(b)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broadcast_pair(), st.sampled_from([graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp]), st.booleans())
def test_binary_broadcast_random(shapes, op, relu) -> None:
    a, b = shapes
    g = G(a, b)
    y = g(op(*g.args))
    if relu:
        y = g(graph.ReluOp(y))
    check_numerics(g, [y])


@st.composite
def pool_params(draw):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.integers(0, k[i % 2] - 1)) for i in range(4))
    h = draw(st.integers(k[0], 9))
    w = draw(st.integers(k[1], 9))
    ceil = draw(st.booleans())
    return (draw(st.integers(1, 2)), draw(st.integers(1, 5)), h, w), k, s, pads, ceil


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool_params(), st.booleans(), st.booleans())
def test_pool_random(params, is_max, include_pad) -> None:
    shape, k, s, pads, ceil = params
    g = G(shape)
    if is_max:
        y = g(graph.MaxPoolOp(g.args[0], kernel_shape=k, strides=s, pads=pads, ceil_mode=ceil))
    else:
        y = g(graph.AvgPoolOp(g.args[0], kernel_shape=k, strides=s, pads=pads, ceil_mode=ceil,
                              count_include_pad=include_pad))
    check_numerics(g, [y])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dims, min_size=1, max_size=4), st.data())
def test_transpose_softmax_pad_random(shape, data) -> None:
    shape = tuple(shape)
    r = len(shape)
    perm = tuple(data.draw(st.permutations(range(r))))
    axis = data.draw(st.integers(-r, r - 1))
    # crop at most one element per side of dims > 2 (no empty result: the simulator has no 0-byte buffers)
    pads = tuple(data.draw(st.integers(-1, 2)) if shape[i % r] > 2 else data.draw(st.integers(0, 2)) for i in range(2 * r))
    g = G(shape)
    t = g(graph.TransposeOp(g.args[0], perm=perm))
    sm = g(graph.SoftmaxOp(g.args[0], axis=axis))
    p = g(graph.PadOp(g.args[0], pads=pads, value=-1.0))
    check_numerics(g, [t, sm, p])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dims, min_size=1, max_size=3), st.integers(1, 3), st.data())
def test_concat_random(shape, n, data) -> None:
    r = len(shape)
    axis = data.draw(st.integers(0, r - 1))
    shapes = []
    for _ in range(n):
        s = list(shape)
        s[axis] = data.draw(st.integers(1, 5))
        shapes.append(tuple(s))
    g = G(*shapes)
    check_numerics(g, [g(graph.ConcatOp(g.args, axis=axis))])


# --------------------------------------------------------------------------------------------
# Planner and canonicalisation
# --------------------------------------------------------------------------------------------


def test_canonicalize_broadcast_merges_dims() -> None:
    D, pats = canonicalize_broadcast((1, 64, 56, 56), [(1, 64, 56, 56), (1, 64, 1, 1)])
    assert D == (64, 3136)
    assert pats == [(True, True), (True, False)]
    D, pats = canonicalize_broadcast((4, 5), [(4, 1), (5,)])
    assert D == (4, 5) and pats == [(True, False), (False, True)]
    assert canonicalize_broadcast((1, 1), [(1,)]) == ((1,), [(True,)])


def test_canonicalize_pad_and_perm() -> None:
    assert canonicalize_pad((2, 3, 4), (0, 1, 0, 0, 2, 0)) == ((2, 12), (0, 4), (2, 24))
    assert canonicalize_perm((1, 64, 56, 56), (0, 2, 3, 1)) == ((64, 3136), (1, 0))
    assert canonicalize_perm((2, 3, 4), (0, 1, 2)) == ((24,), (0,))


def test_pool_counts_match_reference_divisor() -> None:
    # ONNX: 3-wide window, stride 2, pads 1/1 on 5 inputs, excluding pads
    assert list(pool_counts(5, 3, 2, 1, 1, 3, False)) == [2, 3, 2]
    assert list(pool_counts(5, 3, 2, 1, 1, 3, True)) == [3, 3, 3]


# --------------------------------------------------------------------------------------------
# Structure of the output
# --------------------------------------------------------------------------------------------


def test_bufferized_function_form() -> None:
    g, outs = CASES["fused_chain"]()
    module = check_numerics(g, outs)
    f = next(o for o in module.walk() if isinstance(o, func.FuncOp))
    assert all(isinstance(t, MemRefType) for t in f.function_type.inputs.data)
    assert all(isinstance(t, MemRefType) for t in f.function_type.outputs.data)
    assert not [o for o in module.walk() if o.dialect_name() in ("graph", "bufferization")]
    allocs = [o for o in module.walk() if isinstance(o, memref.AllocOp)]
    assert allocs and all(a.alignment is not None and a.alignment.value.data == 128 for a in allocs)
    ret = next(o for o in module.walk() if isinstance(o, func.ReturnOp))
    assert all(isinstance(v.owner, memref.AllocOp) for v in ret.operands)
    ks = kernels(module)
    # add + relu + clip fused into one kernel, then the pool; flatten is a view (+ output copy)
    assert [k.attributes["taihu.op"].data for k in ks[:2]] == ["graph.add", "graph.max_pool"]
    assert [a.data for a in ks[0].attributes["taihu.fused"].data] == ["graph.relu", "graph.clip"]
    maps = [o.map_kind for o in ks[0].walk() if isinstance(o, tile.MapOp)]
    assert maps == [MapKind.ADD, MapKind.RELU, MapKind.CLIP]


def test_fusion_option_off_and_fanout() -> None:
    g, outs = CASES["fused_chain"]()
    module = check_numerics(g, outs, fuse=False)
    assert [k.attributes["taihu.op"].data for k in kernels(module)][:3] == ["graph.add", "graph.relu", "graph.clip"]
    g, outs = CASES["fanout"]()
    module = check_numerics(g, outs)
    assert len(kernels(module)) == 3  # sigmoid has two uses: nothing fused


def test_kernel_names_unique_and_from_name_hints() -> None:
    g = G((4, 4))
    a = g(graph.ReluOp(g.args[0]), "act")
    b = g(graph.TanhOp(g(graph.SigmoidOp(a), "act")), "t")
    module = lower(g.module(b), fuse=False)
    names = [k.kernel_name.data for k in kernels(module)]
    assert names[:3] == ["act", "act_1", "t"]


def test_constants_become_globals() -> None:
    g, outs = CASES["const_operand"]()
    module = check_numerics(g, outs)
    globals_ = [o for o in module.body.block.ops if isinstance(o, memref.GlobalOp)]
    assert len(globals_) == 1 and globals_[0].sym_name.data == "w"
    assert "taihu.initial_value" in globals_[0].attributes  # 33 elements: dense_resource blob


def test_unsupported_op_and_element_type_diagnostics() -> None:
    g = G((1, 3, 8, 8))
    y = g(graph.MaxPoolOp(g.args[0], kernel_shape=(2, 2), dilations=(2, 2)))
    with pytest.raises(PassFailedException, match="dilated pooling"):
        lower(g.module(y))
    g = G((2, 2), dtype=np.float64)
    module = lower(g.module(g(graph.ReluOp(g.args[0]))))  # f64 is supported
    assert kernels(module)
    with pytest.raises(PassFailedException, match="conv-algorithm"):
        lower(G((2,)).module(), conv_algorithm="fft")


def test_pad_cropping_everything_is_an_empty_buffer() -> None:
    g = G((2, 3))
    y = g(graph.PadOp(g.args[0], pads=(-1, 0, -1, 0)))
    module = check_numerics(g, [y])
    assert not kernels(module)


def test_batch_norm_needs_constant_parameters() -> None:
    g = G((1, 2, 3, 3), (2,), (2,), (2,), (2,))
    y = g(graph.BatchNormOp(*g.args))
    with pytest.raises(PassFailedException, match="must be graph.constant"):
        lower(g.module(y))


def test_small_ldm_budget_still_fits() -> None:
    g = G((1, 3, 40, 40))
    y = g(graph.MaxPoolOp(g.args[0], kernel_shape=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1)))
    module = check_numerics(g, [y], ldm_budget=4096)
    for k in kernels(module):
        assert sum(b for _, b in k.ldm_footprint()) <= 4096
    assert any(isinstance(o, tile.ForOp) for o in kernels(module)[0].walk())
