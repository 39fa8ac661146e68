"""Schedules of the memory-bound ops (backends/model/map_plans.py, graph-schedule on them).

The planner's pick is the first cheapest of its space; every plan of the space round-trips
through its schedule and fits the budget; an illegal schedule names its parameter; and a
non-default legal schedule of every memory-bound op in the lowering cases lowers to a tile
program that computes the same numbers as the graph reference (numpy evaluation of the tile IR).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from taihu.backends.model.map_plans import (
    AxisShape,
    ElementwisePlan,
    ElementwiseShape,
    PoolShape,
    ReduceShape,
    TransposeShape,
    map_cycles,
    map_model_plan,
    map_plan_for,
    map_schedule_of,
    map_space,
)
from taihu.backends.model.schedule import IllegalSchedule, Schedule
from taihu.backends.reference import run_module
from taihu.dialects import graph
from taihu.passes.conversion.graph_to_tile import ConvertGraphToTilePass
from taihu.passes.conversion.graph_to_tile.common import lowering_state
from taihu.passes.conversion.graph_to_tile.schedule_attr import SCHEDULE_ATTR, op_schedule, set_op_schedule
from taihu.passes.conversion.graph_to_tile.schedules import MAP_KINDS, absorbed_ops, op_problem, plan_for, space
from taihu.passes.graph_schedule import GraphSchedulePass
from taihu.target.machine import default_machine
from taihu.test.unit.graph_builder import G
from taihu.test.unit.lowering_cases import CASES, OPTIONS
from taihu.test.unit.tile_numpy import run_tile_module

RTOL, ATOL = 1e-4, 1e-5
BUDGET = default_machine().ldm_user_bytes

SHAPES = [
    ElementwiseShape((802816,), ((True,), (True,)), 0, 4),
    ElementwiseShape((64, 12544), ((True, True), (True, False)), 0, 4),
    ElementwiseShape((3, 5, 7), ((True, True, True),), 1, 8),
    TransposeShape((64, 3136), (1, 0), 4),
    TransposeShape((2, 3, 4), (2, 0, 1), 4),
    PoolShape(64, 112, 112, 56, 56, 3, 3, 2, 2, 1, 1, 4, False),
    PoolShape(6, 7, 7, 4, 4, 3, 3, 2, 2, 1, 1, 4, True),
    ReduceShape(2048, 49, 4),
    ReduceShape(3, 100_000, 4),
    AxisShape(1, 1000, 1, 4, -1),
    AxisShape(1, 64, 3025, 4, 4),
    AxisShape(32, 10, 7, 8, -1),
]


def test_plan_same_shape_is_one_contiguous_run_per_cpe() -> None:
    p = map_model_plan(ElementwiseShape((802816,), ((True,), (True,)), 0, 4), BUDGET)
    assert isinstance(p, ElementwisePlan) and p.split == 0
    q = p.tiles[0] // 64
    assert p.tiles[0] % 64 == 0 and q % 32 == 0  # 128-B aligned per-CPE runs
    assert 2 * 2 * 4 * q <= BUDGET


def test_plan_channel_bias_splits_channels_and_chunks_planes() -> None:
    p = map_model_plan(ElementwiseShape((64, 12544), ((True, True), (True, False)), 0, 4), BUDGET)
    assert isinstance(p, ElementwisePlan)
    assert p.split == 0 and p.tiles[0] == 64 and p.tiles[1] < 12544  # one channel per CPE


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: type(s).__name__)
def test_space_round_trips_and_the_pick_is_its_first_minimum(shape) -> None:
    plans = list(map_space(shape, BUDGET))
    assert plans
    pick = map_model_plan(shape, BUDGET)
    assert pick == min(plans, key=lambda p: p.cost)  # min() keeps the first of equal costs
    for plan in plans:
        schedule = map_schedule_of(plan)
        assert map_plan_for(shape, BUDGET, schedule) == plan
        assert map_plan_for(shape, BUDGET, Schedule.parse(schedule.describe())) == plan  # "window=0" parses as 0
        assert map_cycles(plan, shape, default_machine()) > 0


@pytest.mark.parametrize("shape, schedule, message", [
    (SHAPES[0], Schedule.make("map", split=0, rows=100), "rows=100 is neither the whole dim 0 .* nor a multiple of 64"),
    (SHAPES[0], Schedule.make("map", split=1, rows=64), r"split=1 is not a dim"),
    (SHAPES[0], Schedule.make("map", split=0, rows=802816), r"LDM footprint \d+ B per CPE > the budget"),
    (SHAPES[1], Schedule.make("map", split=0, rows=64), 'missing parameter "chunk"'),
    (SHAPES[1], Schedule.make("map", split=0, rows=64, chunk=100, foo=1), 'unknown parameter "foo"'),
    (SHAPES[1], Schedule.make("window", planes=64, rows=1), 'algorithm "window" does not apply'),
    (SHAPES[3], Schedule.make("transpose", window="1,0", split=0, rows=64), "distinct input dims in increasing order"),
    (SHAPES[3], Schedule.make("transpose", window="1", split=0, rows=64), r"split=0 is not a dim of the window"),
    (SHAPES[5], Schedule.make("window", planes=64, rows=57), r"rows=57 exceeds the output rows \(56\)"),
    (SHAPES[8], Schedule.make("reduce", planes=3, chunk=100_000), "LDM footprint"),
    (SHAPES[9], Schedule.make("axis", split=1, rows=1, channels=1000, cols=1), "split=1 .* is LRN's"),
    (SHAPES[9], Schedule.make("axis", split=0, rows=1, channels=500, cols=1), "split=0 tiles hold the whole axis"),
])
def test_illegal_schedules_name_the_parameter(shape, schedule, message) -> None:
    with pytest.raises(IllegalSchedule, match=message):
        map_plan_for(shape, BUDGET, schedule)


def test_no_tile_fits_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="axis of 100000 elements does not fit"):
        map_model_plan(AxisShape(1, 100_000, 1, 4, -1), BUDGET)


# --------------------------------------------------------------------------------------------
# graph-schedule on memory-bound ops, and lowering with non-default schedules
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_memory_bound_op_gets_a_schedule_and_any_of_its_space_lowers(name: str) -> None:
    g, outs = CASES[name]()
    options = OPTIONS.get(name, {})
    module = g.module(*outs)
    inputs = g.inputs(0)
    ref = run_module(module, inputs)
    GraphSchedulePass(**options).apply(Context(), module)  # type: ignore[arg-type]
    state = lowering_state(module, **options)  # type: ignore[arg-type]
    annotated = [o for o in module.walk() if SCHEDULE_ATTR in o.attributes]
    fused = absorbed_ops(state, module)
    for o in module.walk():
        p = op_problem(state, o)
        if p is not None and p.kind in MAP_KINDS:
            assert (o in annotated) != (o in fused), o.name  # a kernel of its own: a schedule
    # every memory-bound op: the last plan of its space (usually not the model's pick)
    for o in annotated:
        p = op_problem(state, o)
        assert p is not None
        if p.kind not in MAP_KINDS:
            continue
        plans = list(itertools.islice(space(state, p), 200))
        alt = map_schedule_of(plans[-1])
        assert plan_for(state, p, alt) == plans[-1]
        set_op_schedule(o, alt)
    ConvertGraphToTilePass(**options).apply(Context(), module)  # type: ignore[arg-type]
    module.verify()
    got = run_tile_module(module, inputs)
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=RTOL, atol=ATOL, err_msg=k)


def test_graph_schedule_model_strategy_keeps_the_lowering() -> None:
    def build() -> ModuleOp:
        g = G((1, 8, 9, 9))
        y = g(graph.MaxPoolOp(g.args[0], kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "p")
        y = g(graph.SoftmaxOp(g(graph.ReluOp(y), "r"), axis=1), "s")
        return g.module(y)

    plain, scheduled = build(), build()
    GraphSchedulePass().apply(Context(), scheduled)
    assert [op_schedule(o).algorithm for o in scheduled.walk() if SCHEDULE_ATTR in o.attributes] == \
        ["window", "axis"]  # the relu is fused into the pool's kernel
    for m in (plain, scheduled):
        ConvertGraphToTilePass().apply(Context(), m)
    assert str(plain) == str(scheduled)


def test_an_illegal_map_schedule_is_a_diagnostic_at_the_op() -> None:
    g = G((1, 8, 9, 9))
    y = g(graph.MaxPoolOp(g.args[0], kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "p")
    module = g.module(y)
    pool = next(o for o in module.walk() if isinstance(o, graph.MaxPoolOp))
    set_op_schedule(pool, Schedule.make("window", planes=8, rows=9))
    with pytest.raises(PassFailedException, match=r"graph.max_pool: illegal tile.schedule: rows=9 exceeds the output rows \(5\)"):
        ConvertGraphToTilePass().apply(Context(), module)
