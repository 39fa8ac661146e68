"""taihu-tune's building blocks: the search algorithms (FT-2, DL-1..DL-3 exact), the single-layer
module builder, the Dask executor, records and the strategies on tiny layers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from taihu.backends.model.conv import ConvShape, GemmShape
from taihu.tools.layers import (
    LayerBuildError,
    conv_module,
    declared_blobs_released,
    gemm_module,
    layer_module,
    matmul_module,
)
from taihu.tools.search import (
    FcSegmentProblem,
    anneal,
    fc_segment_cost,
    fc_segments,
    greedy_segments,
    split_directions,
    split_neighbours,
)

# --------------------------------------------------------------------------------------------
# FT-2: FlexTensor's split neighbourhood (001 L1444)


def _splits(length: int, n: int) -> list[tuple[int, ...]]:
    divs = [d for d in range(1, length + 1) if length % d == 0]
    return [f for f in itertools.product(divs, repeat=n) if math.prod(f) == length]


def test_ft2_four_factors_of_64_have_six_directions():
    assert split_directions(4) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    for f in _splits(64, 4):
        nb = split_neighbours(f)
        assert sorted(nb) == split_directions(4)
        for (i, j), points in nb.items():
            for g in points:
                assert math.prod(g) == 64  # every neighbour keeps the product
                assert all(64 % x == 0 for x in g)  # divisor-only
                assert all(g[k] == f[k] for k in range(4) if k not in (i, j))
                assert (g[i] > f[i] and g[j] < f[j]) or (g[i] < f[i] and g[j] > f[j])


def test_ft2_neighbours_of_a_point():
    nb = split_neighbours((4, 4, 2, 2))
    assert nb[(0, 1)] == [(8, 2, 2, 2), (2, 8, 2, 2)]
    assert nb[(2, 3)] == [(4, 4, 4, 1), (4, 4, 1, 4)]
    # a factor 1 cannot shrink: only one sense along (0, 3) from (64, 1, 1, 1)
    assert split_neighbours((64, 1, 1, 1))[(0, 3)] == [(32, 1, 1, 2)]
    assert split_neighbours((64, 1, 1, 1))[(1, 2)] == []
    # non-powers of two: the smallest prime factor moves
    assert split_neighbours((6, 5))[(0, 1)] == [(30, 1), (3, 10)]
    with pytest.raises(ValueError, match="must be >= 1"):
        split_neighbours((0, 64))


def test_anneal_reproducible_and_finds_the_minimum_on_a_lattice():
    start = (64, 1, 1, 1)

    def cost(f):  # minimum at (4, 4, 2, 2)
        return 1.0 + sum(abs(math.log2(a) - math.log2(b)) for a, b in zip(f, (4, 4, 2, 2)))

    def neighbours(f):
        return [g for pts in split_neighbours(f).values() for g in pts]

    r1 = anneal([start], neighbours, cost, steps=200, seed=7)
    r2 = anneal([start], neighbours, cost, steps=200, seed=7)
    assert r1.costs == r2.costs and list(r1.costs) == list(r2.costs)
    assert r1.best == (4, 4, 2, 2)
    assert r1.steps <= 200
    # the space has 84 points: the search stops when every visited point is exhausted
    full = anneal([start], neighbours, cost, steps=10_000, seed=1)
    assert full.steps == len(_splits(64, 4)) == 84


# --------------------------------------------------------------------------------------------
# DL-2 / DL-3: DLIR's greedy segmentation search (000 L1628-1676), exact


@pytest.mark.parametrize("inputs,outputs,full,half", [
    (1024, 256, (1024, 256), (512, 256)),  # DL-2
    (9216, 4096, (64, 4096), (32, 4096)),  # DL-3
    (4096, 4096, (64, 4096), (32, 4096)),
    (4096, 1000, (256, 1000), (128, 1000)),
])
def test_dl2_dl3_fc_segments(inputs, outputs, full, half):
    assert fc_segments(FcSegmentProblem(inputs, outputs)).point == full
    assert fc_segments(FcSegmentProblem(inputs, outputs, half=True)).point == half


def test_dl1_greedy_takes_fewer_steps_than_exhaustive():
    p = FcSegmentProblem(1024, 256)
    r = fc_segments(p)
    lattice = [(2 ** a, 2 ** b) for a in range(11) for b in range(9)]
    best = min(lattice, key=lambda x: fc_segment_cost(p, x))
    assert r.point == best  # the greedy result is the exhaustive optimum here
    assert r.steps == 27 and len(lattice) == 99


def test_greedy_segments_respects_the_constraint_and_caps_at_the_extent():
    r = greedy_segments((10, 3), cost=lambda x: 100 / (x[0] * x[1]), fits=lambda x: x[0] * x[1] <= 16)
    assert r.point[0] * r.point[1] <= 16
    assert r.point[1] in (1, 2, 3)
    r = greedy_segments((5,), cost=lambda x: 1 / x[0], fits=lambda x: True)
    assert r.point == (5,)  # 1, 2, 4, then capped at 5


# --------------------------------------------------------------------------------------------
# single-layer modules


def test_conv_module_residual_relu():
    s = ConvShape(1, 8, 6, 6, 16, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True,
                  residual=True)
    layer = conv_module(s, seed=3)
    names = [op.name for op in layer.module.walk()]
    assert names.count("graph.conv2d") == 1 and "graph.add" in names and "graph.relu" in names
    assert layer.op.name == "graph.conv2d"
    assert sorted(layer.inputs) == ["x0", "x1"]
    assert layer.inputs["x1"].shape == (1, 16, 6, 6)
    again = conv_module(s, seed=3)
    assert all(np.array_equal(layer.inputs[k], again.inputs[k]) for k in layer.inputs)


def test_gemm_and_matmul_modules():
    fc = gemm_module(GemmShape(4, 1000, 2048, trans_b=True, bias_along="n", const_b=True, maps=1))
    assert layer_module("gemm", GemmShape(4, 8, 16)).op.name == "graph.gemm"
    assert fc.op.name == "graph.gemm" and list(fc.inputs) == ["x0"]
    mm = matmul_module(GemmShape(32, 16, 8, batch=3))
    assert mm.inputs["x0"].shape == (3, 32, 8) and mm.inputs["x1"].shape == (3, 8, 16)
    with pytest.raises(LayerBuildError, match="ldb=64"):
        gemm_module(GemmShape(4, 8, 16, ldb=64))
    with pytest.raises(LayerBuildError, match="batch=2"):
        matmul_module(GemmShape(4, 8, 16, batch=2, const_b=True))
    with pytest.raises(LayerBuildError, match="no single-layer module"):
        layer_module("lstm", GemmShape(4, 8, 16))


def test_declared_blobs_released():
    from taihu.dialects.resources import blob_storage

    storage = blob_storage()
    before = set(storage.keys())
    with declared_blobs_released():
        conv_module(ConvShape(1, 8, 6, 6, 16, 3, 3, const_weights=True, bias=True))
        assert len(set(storage.keys()) - before) >= 1
    assert set(storage.keys()) == before


# --------------------------------------------------------------------------------------------
# strategies on a synthetic space (pure: schedules and model cycles)


def _space():
    from taihu.backends.model.schedule import Schedule
    from taihu.tools.tune import Candidate

    cands = []
    for bm, bn, bk in itertools.product([32, 64, 128, 256], [32, 64, 128], [8, 16, 32, 64]):
        if bm * bn > 16384:  # "LDM": not every blocking is legal
            continue
        for dc in (False, True):
            cost = int(1e6 / math.sqrt(bm * bn) + 100 * abs(bk - 32) + (500 if dc else 0) + (bm * 7 + bn * 3 + bk) % 97)
            cands.append(Candidate(Schedule.make("gemm", bm=bm, bn=bn, bk=bk, double_c=dc), cost))
    for t in (1, 2, 4, 8):
        cands.append(Candidate(Schedule.make("winograd", tiles_per_cpe=t), 200_000 + 1000 * t))
    return cands


def test_select_strategies():
    from taihu.tools.tune import select

    cands = _space()
    best = min(cands, key=lambda c: c.model_key)
    default = sorted(cands, key=lambda c: c.model_key)[5]  # a default that is not the model's best
    assert select("model", cands, default).simulate == []
    assert select("model", cands, default).best_model == best
    sim = select("sim", cands, default, top_k=3)
    assert sim.simulate == sorted(cands, key=lambda c: c.model_key)[:3] + [default]
    ex = select("exhaustive", cands, default)
    assert len(ex.simulate) == len(cands) and ex.steps == len(cands)
    a1 = select("anneal", cands, default, top_k=3, steps=30, seed=4)
    a2 = select("anneal", cands, default, top_k=3, steps=30, seed=4)
    assert a1.simulate == a2.simulate and a1.steps == a2.steps <= 30
    assert default in a1.simulate and len(a1.simulate) <= 4
    assert a1.best_model.model_key <= default.model_key  # the default is a start point
    assert select("anneal", cands, default, steps=len(cands), seed=4).best_model == best
    g = select("greedy", cands, default, top_k=3)
    assert g.steps < len(cands) and default in g.simulate and all(c in cands for c in g.simulate)
    with pytest.raises(Exception, match="unknown strategy"):
        select("random", cands, default)


def test_schedule_lattice_neighbours():
    from taihu.tools.tune import ScheduleLattice

    cands = _space()
    lat = ScheduleLattice(cands)
    c = next(c for c in cands if c.schedule.as_dict() == {"bm": 64, "bn": 64, "bk": 16, "double_c": False})
    nb = {tuple(sorted(n.schedule.as_dict().items())) for n in lat.neighbours(c)}
    d = dict
    assert tuple(sorted(d(bm=128, bn=64, bk=16, double_c=False).items())) in nb  # one parameter one step up
    assert tuple(sorted(d(bm=32, bn=64, bk=16, double_c=False).items())) in nb  # ... down
    assert tuple(sorted(d(bm=128, bn=32, bk=16, double_c=False).items())) in nb  # two in opposite senses
    assert tuple(sorted(d(bm=64, bn=64, bk=16, double_c=True).items())) in nb  # a flag flipped
    assert tuple(sorted(d(tiles_per_cpe=1).items())) in nb  # the nearest point of the other algorithm
    assert tuple(sorted(d(bm=256, bn=64, bk=16, double_c=False).items())) not in nb  # two steps away


def test_executor_in_process_order_and_errors():
    from taihu.tools.executor import Executor, ExecutorError, JobError

    seen = []
    with Executor(workers=0) as ex:
        assert ex.map(math.factorial, [5, 3, 4], on_result=lambda i, r: seen.append(i)) == [120, 6, 24]
        assert seen == [0, 1, 2] and ex.where == "in-process"
        with pytest.raises(JobError, match="item -1: ValueError"):
            ex.map(math.factorial, [3, -1], describe=lambda x: f"item {x}")
        assert ex.map(math.factorial, [3, -1], on_error=lambda x, e: -type(e).__name__.__len__()) == [6, -10]
    with pytest.raises(ExecutorError, match="--workers -1"):
        Executor(workers=-1)


def test_extract_module_copies_constants_and_computes_what_the_ops_computed():
    """A batch norm with constant parameters and the relu after it, cut out of a module: the
    parameters are copied (not arguments), the outside input is x0, and the reference gives the
    original values."""
    from taihu.backends.reference import run_module
    from taihu.dialects import graph
    from taihu.tools.layers import GraphBuilder, extract_module

    g = GraphBuilder((1, 4, 3, 3))
    t = g(graph.TanhOp(g.args[0]), "t")
    params = [g.cst(np.linspace(0.5, 2.0, 4) + i, f"p{i}") for i in range(4)]
    bn = graph.BatchNormOp(t, *params)
    y = g(bn, "bn")
    r = g(graph.ReluOp(y), "r")
    module = g.module(r)
    x = g.inputs(3)["x0"]
    want = run_module(module, {"x0": x})["y0"]
    cut = extract_module([bn, r.owner])
    assert cut.op.name == "graph.batch_norm"
    assert sum(isinstance(o, graph.ConstantOp) for o in cut.module.walk()) == 4
    assert set(cut.inputs) == {"x0"}
    t_val = np.tanh(x)
    np.testing.assert_allclose(run_module(cut.module, {"x0": t_val})["y0"], want, rtol=1e-6)
