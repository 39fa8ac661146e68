"""The ops whose lowering has a plan, as problems with a schedule space (issue "schedules as data").

``graph-schedule`` and ``taihu-tune`` see a graph module through this module: every
``graph.conv2d`` / ``graph.gemm`` / ``graph.matmul`` is a :class:`Problem` (its canonical shape as
the analytic model plans it, with the trailing element-wise ops ``convert-graph-to-tile`` would
fuse), whose legal plans form a lazily enumerated space (:func:`space`), of which the model picks
one (:func:`model_plan`, today's lowering) and which ``convert-graph-to-tile`` follows when the op
carries a ``tile.schedule`` (:func:`plan_for`). The plans are made for the module's machine with
the pass's LDM budget (:func:`lowering_state`, :func:`~.gemm.plan_machine`), exactly as
``convert-graph-to-tile`` makes them, so a schedule chosen here lowers unchanged.

The memory-bound ops -- element-wise maps (unary, binary, sum, batch_norm, pad), transposes,
pools, global average pools, softmax / lrn -- are problems too (:func:`~.maps.map_problem`,
:mod:`taihu.backends.model.map_plans`): their schedule is the tile (split dim, rows, chunks),
made with the pass's LDM budget.

An LSTM is a problem too (:mod:`taihu.backends.model.lstm_plan`): its input projection's GEMM
schedule and whether the recurrence keeps R in LDM.

Not covered yet: concat copies and the memory primitives inside a convolution's plan
(im2col task sizes, Winograd transforms, relayouts) keep the model's choice inside
``convert-graph-to-tile``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.ir import Operation

from taihu.backends.model.conv import ConvShape, GemmPlan, GemmShape, plan_gemm
from taihu.backends.model.lstm_plan import (
    LstmPlan,
    LstmShape,
    lstm_cycles,
    lstm_model_plan,
    lstm_plan_for,
    lstm_schedule_of,
    lstm_space,
)
from taihu.backends.model.map_plans import (
    MAP_PLANS,
    MAP_SHAPES,
    MapPlan,
    MapShape,
    map_algorithm,
    map_cycles,
    map_model_plan,
    map_plan_for,
    map_schedule_of,
    map_space,
)
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
from taihu.passes.conversion.graph_to_tile.gemm import gemm_op_problem, lstm_op_shape, matmul_op_problem, plan_machine
from taihu.passes.conversion.graph_to_tile.maps import map_problem
from taihu.passes.conversion.graph_to_tile.schedule_attr import SCHEDULE_ATTR, from_attr, to_attr

__all__ = ["MAP_KINDS", "SCHEDULE_ATTR", "Problem", "absorbed_ops", "from_attr", "kernel_ops", "lowering_state", "to_attr", "model_plan", "op_problem", "plan_cycles", "plan_for", "schedule_of",
           "space"]

#: planned compute ops -> problem kind
KINDS: dict[type[Operation], str] = {graph.Conv2dOp: "conv2d", graph.GemmOp: "gemm", graph.MatMulOp: "matmul"}
#: the problem kind of a memory-bound op: its schedule's algorithm family
MAP_KINDS = ("map", "transpose", "window", "reduce", "axis")

Shape = ConvShape | GemmShape | LstmShape | MapShape
Plan = ConvPlan | GemmPlan | LstmPlan | MapPlan


@dataclass(frozen=True)
class Problem:
    """One planned op: ``kind`` ("conv2d", "gemm", "matmul", "lstm", or a memory-bound family of
    :data:`MAP_KINDS`), its ``shape`` as the model plans it, and ``layer`` (the op's result
    name, for tables and kernel names)."""

    kind: str
    shape: Shape
    layer: str


def op_problem(state: LoweringState, op: Operation) -> Problem | None:
    """The problem of ``op`` (None for ops without a schedule). Raises ``ValueError`` for an
    op the model cannot plan (element type, unsupported form)."""
    kind = KINDS.get(type(op))
    layer = op.results[0].name_hint or op.name if op.results else op.name
    if isinstance(op, graph.LSTMOp):
        return Problem("lstm", lstm_op_shape(op), layer)
    if kind is None:
        mshape = map_problem(state, op)
        if mshape is None:
            return None
        return Problem(map_algorithm(mshape), mshape, layer)
    shape: ConvShape | GemmShape
    if isinstance(op, graph.Conv2dOp):
        shape = conv_op_shape(op, absorb_elementwise_consumers(state, op.result, residual=True))
    elif isinstance(op, graph.GemmOp):
        shape = gemm_op_problem(op, absorb_elementwise_consumers(state, op.result, residual=True))
    else:
        assert isinstance(op, graph.MatMulOp)
        shape = matmul_op_problem(op, absorb_elementwise_consumers(state, op.result))
    return Problem(kind, shape, layer)


#: producers that absorb their trailing element-wise consumers (value: a residual sum too), as
#: their convert-graph-to-tile patterns do (:func:`~.common.absorb_elementwise_consumers`)
_ABSORBING: dict[type[Operation], bool] = {
    graph.Conv2dOp: True, graph.GemmOp: True, graph.MatMulOp: False,
    graph.AddOp: True, graph.SubOp: True, graph.MulOp: True, graph.DivOp: True, graph.SumOp: True,
    graph.BatchNormOp: True, graph.ReluOp: True, graph.LeakyReluOp: True, graph.ClipOp: True,
    graph.SigmoidOp: True, graph.TanhOp: True, graph.SqrtOp: True, graph.ErfOp: True,
    graph.PadOp: False, graph.ConcatOp: False, graph.TransposeOp: False, graph.LayoutTransformOp: False,
    graph.MaxPoolOp: False, graph.AvgPoolOp: False, graph.GlobalAvgPoolOp: False, graph.SoftmaxOp: False,
    graph.LRNOp: False,
}


def absorbed_ops(state: LoweringState, root: Operation) -> set[Operation]:
    """The ops under ``root`` that ``convert-graph-to-tile`` fuses into their producer's kernel
    (a relu after a conv, ResNet's shortcut sum, ...): they have no kernel, hence no schedule, of
    their own. (A convolution plan that cannot add a residual in its store leaves the sum to a
    kernel of its own, planned by the model.)"""
    out: set[Operation] = set()
    for op in root.walk():
        residual = _ABSORBING.get(type(op))
        if residual is None or op in out or not op.results:
            continue
        out.update(f.op for f in absorb_elementwise_consumers(state, op.results[0], residual=residual))
    return out


def kernel_ops(state: LoweringState, root: Operation) -> list[Operation]:
    """``root`` and the consumers its kernel absorbs (:func:`absorbed_ops`), in program order:
    what one kernel of ``convert-graph-to-tile`` computes."""
    residual = _ABSORBING.get(type(root))
    if residual is None or not root.results:
        return [root]
    ops = [root, *(f.op for f in absorb_elementwise_consumers(state, root.results[0], residual=residual))]
    block = root.parent_block()
    if block is not None and all(op.parent_block() is block for op in ops):
        ops.sort(key=block.get_operation_index)
    return ops


def model_plan(state: LoweringState, problem: Problem, algorithm: str = "auto") -> Plan:
    """The model's choice (today's lowering); ``algorithm`` forces a convolution algorithm."""
    if isinstance(problem.shape, LstmShape):
        return lstm_model_plan(problem.shape, plan_machine(state), state.ldm_budget, name=f"{problem.layer}_x")
    if not isinstance(problem.shape, (ConvShape, GemmShape)):
        return map_model_plan(problem.shape, state.ldm_budget)
    machine = plan_machine(state)
    if isinstance(problem.shape, ConvShape):
        return choose_conv_schedule(problem.shape, machine, algorithm, mem_budget=state.machine.ldm_user_bytes)
    return plan_gemm(problem.shape, machine, name=problem.layer)


def space(state: LoweringState, problem: Problem) -> Iterator[Plan]:
    """Every legal plan of ``problem`` on the state's machine, lazily, each with its model cost."""
    if isinstance(problem.shape, LstmShape):
        return lstm_space(problem.shape, plan_machine(state), state.ldm_budget, name=f"{problem.layer}_x")
    if not isinstance(problem.shape, (ConvShape, GemmShape)):
        return map_space(problem.shape, state.ldm_budget)
    machine = plan_machine(state)
    if isinstance(problem.shape, ConvShape):
        return conv_space(problem.shape, machine, mem_budget=state.machine.ldm_user_bytes)
    return gemm_space(problem.shape, machine)


def plan_for(state: LoweringState, problem: Problem, schedule: Schedule) -> Plan:
    """Exactly the plan ``schedule`` names; ``IllegalSchedule`` (a ``ValueError``) saying why not."""
    if isinstance(problem.shape, LstmShape):
        return lstm_plan_for(problem.shape, plan_machine(state), state.ldm_budget, schedule, name=f"{problem.layer}_x")
    if not isinstance(problem.shape, (ConvShape, GemmShape)):
        return map_plan_for(problem.shape, state.ldm_budget, schedule)
    machine = plan_machine(state)
    if isinstance(problem.shape, ConvShape):
        return conv_plan_for(problem.shape, machine, schedule, mem_budget=state.machine.ldm_user_bytes)
    return gemm_plan_for(problem.shape, machine, schedule)


def schedule_of(problem: Problem, plan: Plan) -> Schedule:
    """The schedule of one of ``problem``'s plans."""
    if isinstance(plan, MAP_PLANS):
        return map_schedule_of(plan)
    if isinstance(plan, LstmPlan):
        return lstm_schedule_of(plan)
    if isinstance(plan, GemmPlan):
        return gemm_schedule_of(plan)
    return conv_schedule_of(plan)


def plan_cycles(state: LoweringState, problem: Problem, plan: Plan) -> int:
    """The model's time of ``plan`` in cycles of the state's machine (for a memory-bound op the
    DMA-bound estimate :func:`~taihu.backends.model.map_plans.map_cycles`)."""
    if isinstance(plan, MAP_PLANS):
        assert isinstance(problem.shape, MAP_SHAPES)
        return map_cycles(plan, problem.shape, state.machine)
    if isinstance(plan, LstmPlan):
        assert isinstance(problem.shape, LstmShape)
        return lstm_cycles(plan, problem.shape, plan_machine(state))
    return round(plan.cost.t_total * state.machine.f_clk_ghz * 1e9)
