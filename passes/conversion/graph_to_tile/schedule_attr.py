"""The ``tile.schedule`` annotation of a graph op <-> the model's :class:`Schedule`.

``graph-schedule`` writes ``tile.schedule = #tile.schedule<"ALG" {...}>`` on the ops whose lowering
has a plan (convolutions, GEMMs, MatMuls); ``convert-graph-to-tile`` reads it back here and
follows it exactly (:func:`op_schedule`)."""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from taihu.backends.model.schedule import Schedule
from taihu.dialects.tile import ScheduleAttr

__all__ = ["SCHEDULE_ATTR", "from_attr", "op_schedule", "set_op_schedule", "to_attr"]

#: the discardable attribute holding an op's schedule
SCHEDULE_ATTR = "tile.schedule"


def to_attr(schedule: Schedule) -> ScheduleAttr:
    """``#tile.schedule<...>`` of ``schedule``."""
    return ScheduleAttr(schedule.algorithm, schedule.as_dict())


def from_attr(attr: ScheduleAttr) -> Schedule:
    """The :class:`Schedule` an attribute spells."""
    return Schedule.make(attr.algorithm.data, **attr.values())


def op_schedule(op: Operation) -> Schedule | None:
    """The schedule annotated on ``op`` (None: not annotated). Raises ``VerifyException`` if the
    ``tile.schedule`` attribute is not a ``#tile.schedule``."""
    attr = op.attributes.get(SCHEDULE_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, ScheduleAttr):
        raise VerifyException(f"{op.name}: '{SCHEDULE_ATTR}' must be a #tile.schedule, got {attr}")
    return from_attr(attr)


def set_op_schedule(op: Operation, schedule: Schedule) -> None:
    """Annotate ``op`` with ``schedule``."""
    op.attributes[SCHEDULE_ATTR] = to_attr(schedule)
