"""The LSTM's schedule (backends/model/lstm_plan.py): the input projection's GEMM schedule and
whether R stays in LDM; the model's pick, the space, the round trip, the diagnostics, and a
non-default schedule lowering to a tile program with the reference's numbers."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from xdsl.context import Context

from taihu.backends.model.lstm_plan import LstmShape, lstm_cycles, lstm_model_plan, lstm_plan_for, lstm_schedule_of, lstm_space
from taihu.backends.model.schedule import IllegalSchedule, Schedule
from taihu.dialects import graph, tile
from taihu.passes.conversion.graph_to_tile.common import lowering_state
from taihu.passes.conversion.graph_to_tile.schedule_attr import op_schedule, set_op_schedule
from taihu.passes.conversion.graph_to_tile.schedules import model_plan, op_problem
from taihu.passes.graph_schedule import GraphSchedulePass
from taihu.test.integration.test_lowering_conv import check_tile_multi, kernels, lstm_graph
from taihu.target.machine import default_machine

MACHINE = default_machine()
BUDGET = 56_832  # convert-graph-to-tile's default budget on sw26010 (ldm_user_bytes - the reserve)


def test_model_hoists_r_when_it_fits_and_streams_it_otherwise() -> None:
    small = LstmShape(5, 3, 20, 24, "f32", True)
    assert lstm_model_plan(small, MACHINE, BUDGET).hoist_r
    big = LstmShape(5, 3, 20, 300, "f32", True)  # Hp = 384: four R_j do not fit
    assert not lstm_model_plan(big, MACHINE, BUDGET).hoist_r
    with pytest.raises(IllegalSchedule, match="hidden_size 1024: the LDM-resident recurrence"):
        lstm_model_plan(LstmShape(2, 2, 8, 1024, "f32", True), MACHINE, BUDGET)


def test_space_round_trips() -> None:
    s = LstmShape(5, 3, 20, 24, "f32", True)
    plans = list(itertools.islice(lstm_space(s, MACHINE, BUDGET), 60))
    assert {p.hoist_r for p in plans} == {True, False}
    assert lstm_model_plan(s, MACHINE, BUDGET) in list(lstm_space(s, MACHINE, BUDGET))
    for p in plans:
        sched = lstm_schedule_of(p)
        assert sched.algorithm == "lstm" and all(k == "hoist_r" or k.startswith("x.") for k, _ in sched.params)
        assert lstm_plan_for(s, MACHINE, BUDGET, sched) == p
        assert lstm_cycles(p, s, MACHINE) > 0
    hoisted = next(p for p in plans if p.hoist_r)
    assert lstm_cycles(hoisted, s, MACHINE) < lstm_cycles(dataclasses.replace(hoisted, hoist_r=False), s, MACHINE)


@pytest.mark.parametrize("edit, message", [
    ({"hoist_r": 1}, "hoist_r=1 must be true or false"),
    ({"x.bm": 48}, r"the input projection \(parameters x\.\*\): bm=48 is not a multiple of"),
    ({"foo": 1}, 'unknown parameter "foo" for lstm'),
])
def test_illegal_lstm_schedules(edit, message) -> None:
    s = LstmShape(5, 3, 20, 24, "f32", True)
    base = lstm_schedule_of(lstm_model_plan(s, MACHINE, BUDGET)).as_dict()
    with pytest.raises(IllegalSchedule, match=message):
        lstm_plan_for(s, MACHINE, BUDGET, Schedule.make("lstm", **{**base, **edit}))
    big = LstmShape(5, 3, 20, 300, "f32", True)
    bad = lstm_schedule_of(lstm_model_plan(big, MACHINE, BUDGET)).as_dict() | {"hoist_r": True}
    with pytest.raises(IllegalSchedule, match="hoist_r=true: the LDM-resident recurrence .* four R_j"):
        lstm_plan_for(big, MACHINE, BUDGET, Schedule.make("lstm", **bad))


def _model_schedule(dt) -> Schedule:
    """graph-schedule's annotation of the test LSTM (checked against the model's plan)."""
    g, outs = lstm_graph(dt)
    module = g.module(*outs)
    GraphSchedulePass().apply(Context(), module)
    op = next(o for o in module.walk() if isinstance(o, graph.LSTMOp))
    problem = op_problem(lowering_state(module), op)
    assert problem is not None and problem.kind == "lstm"
    sched = op_schedule(op)
    assert sched is not None and sched == lstm_schedule_of(model_plan(lowering_state(module), problem))
    return sched


def _streamed(dt):
    """The test LSTM annotated with the model's schedule but R streamed (hoist_r=false)."""
    sched = _model_schedule(dt)
    assert sched.as_dict()["hoist_r"] is True
    g, outs = lstm_graph(dt)
    op = next(o for o in g.block.ops if isinstance(o, graph.LSTMOp))
    set_op_schedule(op, Schedule.make("lstm", **(sched.as_dict() | {"hoist_r": False})))
    return g, outs


def test_a_streamed_r_schedule_lowers_to_the_reference_numbers() -> None:
    lowered = check_tile_multi(_streamed)
    rec = next(k for k in kernels(lowered) if k.kernel_name.data == "lstm")
    r_tiles = [o for o in rec.walk() if isinstance(o, tile.AllocOp) and o.results[0].name_hint in ("r0", "r1", "r2", "r3")]
    assert len(r_tiles) == 1  # one R_j tile, reloaded per step and gate
