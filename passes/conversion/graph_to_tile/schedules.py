"""The ops whose lowering has a plan, as problems with a schedule space (issue "schedules as data").

``graph-schedule`` and ``taihu-tune`` see a graph module through this module: every
``graph.conv2d`` / ``graph.gemm`` / ``graph.matmul`` is a :class:`Problem` (its canonical shape as
the analytic model plans it, with the trailing element-wise ops ``convert-graph-to-tile`` would
fuse), whose legal plans form a lazily enumerated space (:func:`space`), of which the model picks
one (:func:`model_plan`, today's lowering) and which ``convert-graph-to-tile`` follows when the op
carries a ``tile.schedule`` (:func:`plan_for`). The plans are made for the module's machine with
the pass's LDM budget (:func:`lowering_state`, :func:`~.gemm.plan_machine`), exactly as
``convert-graph-to-tile`` makes them, so a schedule chosen here lowers unchanged.

Not covered yet: LSTM, pools, element-wise maps and the memory primitives keep the model's choice
inside ``convert-graph-to-tile``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.ir import Operation

from taihu.backends.model.conv import ConvShape, GemmPlan, GemmShape, plan_gemm
from taihu.backends.model.schedule import (
    ConvPlan,
    Schedule,
    choose_conv_schedule,
    conv_plan_for,
    conv_schedule_of,
    conv_space,
    gemm_plan_for,
    gemm_schedule_of,
    gemm_space,
)
from taihu.dialects import graph
from taihu.passes.conversion.graph_to_tile.common import LoweringState, absorb_elementwise_consumers, lowering_state
from taihu.passes.conversion.graph_to_tile.conv import conv_op_shape
from taihu.passes.conversion.graph_to_tile.gemm import gemm_op_problem, matmul_op_problem, plan_machine
from taihu.passes.conversion.graph_to_tile.schedule_attr import SCHEDULE_ATTR, from_attr, to_attr

__all__ = ["SCHEDULE_ATTR", "Problem", "from_attr", "lowering_state", "to_attr", "model_plan", "op_problem", "plan_cycles", "plan_for", "schedule_of",
           "space"]

#: planned ops -> problem kind
KINDS: dict[type[Operation], str] = {graph.Conv2dOp: "conv2d", graph.GemmOp: "gemm", graph.MatMulOp: "matmul"}

@dataclass(frozen=True)
class Problem:
    """One planned op: ``kind`` ("conv2d", "gemm", "matmul"), its ``shape`` as the model plans
    it, and ``layer`` (the op's result name, for tables and kernel names)."""

    kind: str
    shape: ConvShape | GemmShape
    layer: str


def op_problem(state: LoweringState, op: Operation) -> Problem | None:
    """The problem of ``op`` (None for ops without a schedule). Raises ``ValueError`` for an
    op the model cannot plan (element type)."""
    kind = KINDS.get(type(op))
    if kind is None:
        return None
    layer = op.results[0].name_hint or op.name
    shape: ConvShape | GemmShape
    if isinstance(op, graph.Conv2dOp):
        shape = conv_op_shape(op, absorb_elementwise_consumers(state, op.result, residual=True))
    elif isinstance(op, graph.GemmOp):
        shape = gemm_op_problem(op, absorb_elementwise_consumers(state, op.result, residual=True))
    else:
        assert isinstance(op, graph.MatMulOp)
        shape = matmul_op_problem(op, absorb_elementwise_consumers(state, op.result))
    return Problem(kind, shape, layer)


def model_plan(state: LoweringState, problem: Problem, algorithm: str = "auto") -> ConvPlan | GemmPlan:
    """The model's choice (today's lowering); ``algorithm`` forces a convolution algorithm."""
    machine = plan_machine(state)
    if isinstance(problem.shape, ConvShape):
        return choose_conv_schedule(problem.shape, machine, algorithm, mem_budget=state.machine.ldm_user_bytes)
    return plan_gemm(problem.shape, machine, name=problem.layer)


def space(state: LoweringState, problem: Problem) -> Iterator[ConvPlan | GemmPlan]:
    """Every legal plan of ``problem`` on the state's machine, lazily, each with its model cost."""
    machine = plan_machine(state)
    if isinstance(problem.shape, ConvShape):
        return conv_space(problem.shape, machine, mem_budget=state.machine.ldm_user_bytes)
    return gemm_space(problem.shape, machine)


def plan_for(state: LoweringState, problem: Problem, schedule: Schedule) -> ConvPlan | GemmPlan:
    """Exactly the plan ``schedule`` names; ``IllegalSchedule`` (a ``ValueError``) saying why not."""
    machine = plan_machine(state)
    if isinstance(problem.shape, ConvShape):
        return conv_plan_for(problem.shape, machine, schedule, mem_budget=state.machine.ldm_user_bytes)
    return gemm_plan_for(problem.shape, machine, schedule)


def schedule_of(problem: Problem, plan: ConvPlan | GemmPlan) -> Schedule:
    """The schedule of one of ``problem``'s plans."""
    if isinstance(problem.shape, ConvShape):
        assert not isinstance(plan, GemmPlan)
        return conv_schedule_of(plan)
    assert isinstance(plan, GemmPlan)
    return gemm_schedule_of(plan)


def plan_cycles(state: LoweringState, plan: ConvPlan | GemmPlan) -> int:
    """The model's time of ``plan`` in cycles of the state's machine."""
    return round(plan.cost.t_total * state.machine.f_clk_ghz * 1e9)
