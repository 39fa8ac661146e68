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
from taihu.passes.conversion.graph_to_tile.gemm import lstm_op_shape
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


def test_model_streams_r_in_blocks_when_one_r_j_does_not_fit() -> None:
    # H = 384: one R_j fits, but the model finds the double-buffered single block faster
    h384 = LstmShape(5, 1, 20, 384, "f32", True)
    p = lstm_model_plan(h384, MACHINE, BUDGET)
    assert (p.hoist_r, p.r_block, p.double_r) == (False, 384, True)
    whole = dataclasses.replace(p, r_block=None, double_r=False)
    assert lstm_cycles(p, h384, MACHINE) < lstm_cycles(whole, h384, MACHINE)
    # batch 40: the one-block form does not fit with two staging tiles; smaller blocks are not
    # candidates while one R_j fits (swsim: r_block = 128 is slower), so R_j streams whole
    p40 = lstm_model_plan(LstmShape(3, 40, 50, 300, "f32", True), MACHINE, BUDGET)
    assert (p40.hoist_r, p40.r_block) == (False, None)
    for hidden in (512, 1000, 1024):  # one R_j does not fit: 256x256 blocks, two staging tiles
        s = LstmShape(2, 2, 8, hidden, "f32", True)
        p = lstm_model_plan(s, MACHINE, BUDGET)
        assert (p.hoist_r, p.r_block, p.double_r) == (False, 256, True)
        assert s.recurrence_bytes(False, 256) <= BUDGET < s.recurrence_bytes(False)
    # the new limit: the state itself (h, c and the new h in fp64) does not fit
    with pytest.raises(IllegalSchedule, match="hidden_size 6000: the LDM-resident recurrence state"):
        lstm_model_plan(LstmShape(2, 2, 8, 6000, "f32", True), MACHINE, BUDGET)
    with pytest.raises(IllegalSchedule, match="hidden_size 1024: the LDM-resident recurrence state .* 256x1024"):
        lstm_model_plan(LstmShape(2, 256, 8, 1024, "f32", True), MACHINE, BUDGET)


def test_space_round_trips() -> None:
    s = LstmShape(5, 3, 20, 24, "f32", True)
    plans = list(itertools.islice(lstm_space(s, MACHINE, BUDGET), 60))
    assert {p.hoist_r for p in plans} == {True, False}
    assert {p.r_block for p in plans} == {None, 128}
    assert lstm_model_plan(s, MACHINE, BUDGET) in list(lstm_space(s, MACHINE, BUDGET))
    for p in plans:
        sched = lstm_schedule_of(p)
        assert sched.algorithm == "lstm" and all(k in ("hoist_r", "r_block") or k.startswith("x.") for k, _ in sched.params)
        assert ("r_block" in sched.as_dict()) == (p.r_block is not None)
        assert lstm_plan_for(s, MACHINE, BUDGET, sched) == p
        assert lstm_cycles(p, s, MACHINE) > 0
    hoisted = next(p for p in plans if p.hoist_r)
    assert lstm_cycles(hoisted, s, MACHINE) < lstm_cycles(dataclasses.replace(hoisted, hoist_r=False), s, MACHINE)


@pytest.mark.parametrize("edit, message", [
    ({"hoist_r": 1}, "hoist_r=1 must be true or false"),
    ({"x.bm": 48}, r"the input projection \(parameters x\.\*\): bm=48 is not a multiple of"),
    ({"foo": 1}, 'unknown parameter "foo" for lstm'),
    ({"r_block": 128}, "r_block=128 streams R in blocks: it needs hoist_r=false"),
    ({"r_block": 64, "hoist_r": False}, "r_block=64 must be a multiple of 128 dividing the padded hidden size 128"),
    ({"r_block": 0, "hoist_r": False}, "r_block=0 must be a positive integer"),
])
def test_illegal_lstm_schedules(edit, message) -> None:
    s = LstmShape(5, 3, 20, 24, "f32", True)
    base = lstm_schedule_of(lstm_model_plan(s, MACHINE, BUDGET)).as_dict()
    with pytest.raises(IllegalSchedule, match=message):
        lstm_plan_for(s, MACHINE, BUDGET, Schedule.make("lstm", **{**base, **edit}))
    big = LstmShape(5, 3, 20, 300, "f32", True)
    bad = {k: v for k, v in lstm_schedule_of(lstm_model_plan(big, MACHINE, BUDGET)).as_dict().items()
           if k != "r_block"} | {"hoist_r": True}
    with pytest.raises(IllegalSchedule, match="hoist_r=true: the LDM-resident recurrence .* four R_j"):
        lstm_plan_for(big, MACHINE, BUDGET, Schedule.make("lstm", **bad))
    h1024 = LstmShape(2, 1, 8, 1024, "f32", True)
    base = lstm_schedule_of(lstm_model_plan(h1024, MACHINE, BUDGET)).as_dict()
    with pytest.raises(IllegalSchedule, match=r"r_block=512: the LDM-resident recurrence .* one 512x512 R block\) needs"):
        lstm_plan_for(h1024, MACHINE, BUDGET, Schedule.make("lstm", **(base | {"r_block": 512})))
    # an older record without r_block names the whole-R_j form: for H = 1024 that does not fit
    old = {k: v for k, v in base.items() if k != "r_block"}
    with pytest.raises(IllegalSchedule, match="hoist_r=false: the LDM-resident recurrence .* one R_j of 1024x1024"):
        lstm_plan_for(h1024, MACHINE, BUDGET, Schedule.make("lstm", **old))


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


@pytest.mark.parametrize("hidden, r_block", [(24, 128), (300, 128)])
def test_a_blocked_r_schedule_lowers_to_the_reference_numbers(hidden, r_block) -> None:
    """r_block on an LSTM whose R_j would fit: (Hp/b)^2 R blocks per gate and step through two
    staging tiles, the state in Hp/b column blocks (H = 300: three blocks, the last padded)."""
    def build(dt):
        g, outs = lstm_graph(dt, hidden=hidden)
        op = next(o for o in g.block.ops if isinstance(o, graph.LSTMOp))
        s = lstm_op_shape(op)
        base = lstm_schedule_of(lstm_model_plan(s, MACHINE, BUDGET)).as_dict()
        set_op_schedule(op, Schedule.make("lstm", **(base | {"hoist_r": False, "r_block": r_block})))
        return g, outs

    lowered = check_tile_multi(build)
    rec = next(k for k in kernels(lowered) if k.kernel_name.data == "lstm")
    names = [o.results[0].name_hint for o in rec.walk() if isinstance(o, tile.AllocOp)]
    nb = -(-hidden // 128) * 128 // r_block
    assert {"r", "r_s0", "r_s1"} <= set(names) and sum(n.startswith("hn") for n in names) == nb
    gemms = [o for o in rec.walk() if isinstance(o, tile.GemmOp)]
    assert len(gemms) == 4 * nb * nb and all(g.mnk == (32, r_block, r_block) for g in gemms)
