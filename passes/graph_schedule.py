"""``graph-schedule``: put an explicit schedule on every op whose lowering has a plan.

``taihu-opt net.mlir -p 'set-target,graph-schedule'`` annotates every ``graph.conv2d``,
``graph.gemm``, ``graph.matmul`` and ``graph.lstm`` with ``tile.schedule = #tile.schedule<"ALG" {...}>``
(:class:`~taihu.dialects.tile.ScheduleAttr`): the algorithm and every decision of its plan
(blocks, vector dimension, distribution, double buffering, fusion, ...); and every memory-bound
op (element-wise maps, batch_norm, pad, transpose, pools, global_avg_pool, softmax, lrn) with its
tile (:mod:`taihu.backends.model.map_plans`: ``#tile.schedule<"map" {rows = 64, split = 1, ...}>``).
Ops fused into their producer's kernel (a relu after a conv, a residual sum) have no kernel and
no schedule of their own.
``convert-graph-to-tile`` then follows the annotation exactly, so a user can print the schedules
(``taihu-lower{stop-after=graph-schedule}``), edit one in the ``.mlir`` and lower the rest of
the pipeline with it; an illegal edit is a diagnostic at the op. ``taihu-lower`` runs this pass
after ``graph-simplify``.

Options:

* ``strategy`` (``model`` | ``records``): ``model`` (default) annotates the analytic model's
  choice, the schedule ``convert-graph-to-tile`` would pick itself (so ``taihu-lower``'s output is
  unchanged); ``records`` takes the schedule of the op's (problem signature, target) from the
  tuning records ``records=FILE`` (written by ``taihu-tune``; :mod:`taihu.backends.model.records`)
  and the model's choice for ops without a record.
* ``tuning=FILE``: the same as ``strategy=records records=FILE`` (the spelling of
  ``taihu-lower{tuning=FILE}`` and ``taihu-run --tuning FILE``).
* ``conv-algorithm``, ``fuse``, ``ldm-budget``: as for ``convert-graph-to-tile`` (``taihu-lower``
  hands them to both, so the schedules are made for the same problem).

Ops that already carry a ``tile.schedule`` keep it (a user's edit survives re-running the
pipeline). Errors (one diagnostic): an unknown strategy, an unreadable or malformed records file
(naming file, line and key), a record whose schedule is illegal for its op (naming the op).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from taihu.backends.model.records import TuningRecord, problem_signature, read_records
from taihu.dialects.target import MODULE_ATTR, MachineAttr
from taihu.passes.conversion.graph_to_tile.common import lowering_state
from taihu.passes.conversion.graph_to_tile.schedule_attr import SCHEDULE_ATTR, set_op_schedule
from taihu.passes.conversion.graph_to_tile.schedules import absorbed_ops, model_plan, op_problem, plan_for, schedule_of
from taihu.target.machine import DEFAULT_MACHINE_NAME, MachineConfigError

__all__ = ["GraphSchedulePass", "STRATEGIES", "load_records", "target_key"]

STRATEGIES = ("model", "records")


def target_key(module: ModuleOp) -> str:
    """The records' ``target`` of ``module``: its ``#target.machine`` as text (``sw26010`` when
    the module has none)."""
    attr = module.attributes.get(MODULE_ATTR)
    return str(attr if isinstance(attr, MachineAttr) else MachineAttr(DEFAULT_MACHINE_NAME))


def load_records(path: str) -> dict[tuple[str, str], TuningRecord]:
    """The records of the file ``path``; ``DiagnosticException`` naming the file (and line and
    key) when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise DiagnosticException(f"graph-schedule: cannot read tuning records {path}: {getattr(e, 'strerror', None) or e}") from None
    try:
        return read_records(text, path)
    except ValueError as e:
        raise DiagnosticException(f"graph-schedule: {e}") from None


@dataclass(frozen=True)
class GraphSchedulePass(ModulePass):
    """Annotate every planned op with its schedule (module docstring)."""

    name = "graph-schedule"

    strategy: str = "model"
    records: str = ""
    tuning: str = ""
    conv_algorithm: str = "auto"
    fuse: bool = True
    ldm_budget: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        strategy, path = ("records", self.tuning) if self.tuning else (self.strategy, self.records)
        if strategy not in STRATEGIES:
            raise DiagnosticException(f"graph-schedule: strategy must be one of {', '.join(STRATEGIES)}, got '{strategy}'")
        if strategy == "records" and not path:
            raise DiagnosticException("graph-schedule: strategy=records needs records=FILE")
        if self.ldm_budget < 0:
            raise DiagnosticException(f"graph-schedule: ldm-budget must be >= 0 bytes, got {self.ldm_budget}")
        records = load_records(path) if strategy == "records" else {}
        try:
            state = lowering_state(op, conv_algorithm=self.conv_algorithm, fuse=self.fuse, ldm_budget=self.ldm_budget)
        except MachineConfigError as e:
            raise DiagnosticException(f"graph-schedule: {e}") from None
        target = target_key(op)
        fused = absorbed_ops(state, op)
        for o in list(op.walk()):
            if SCHEDULE_ATTR in o.attributes or o in fused:
                continue
            problem = None
            try:
                problem = op_problem(state, o)
                if problem is None:
                    continue
                record = records.get((problem_signature(problem.shape), target))
                if record is not None:
                    plan_for(state, problem, record.schedule)  # legal for this op and machine?
                    schedule = record.schedule
                else:
                    schedule = schedule_of(problem, model_plan(state, problem, self.conv_algorithm))
            except ValueError as e:
                where = f" (record of {path})" if records else ""
                raise DiagnosticException(f"graph-schedule: {o.name} '{problem.layer if problem else ''}'{where}: {e}") from None
            set_op_schedule(o, schedule)
