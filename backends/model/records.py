"""Tuning records: the best schedule found for one problem on one machine, as JSON lines.

TVM's tuning logs are the anchor: one line per (canonical problem signature, target), so records
transfer between networks that share layer shapes (ResNet-50's 53 convolutions have ~20 distinct
signatures) and between runs. ``taihu-tune`` writes them; ``graph-schedule{strategy=records}``
(``taihu-lower{tuning=FILE}``, ``taihu-run --tuning FILE``) reads them::

    {"op": "conv2d", "signature": "ConvShape n=1 c=64 h=56 w=56 m=64 kh=3 kw=3 ...",
     "target": "#target.machine<\\"sw26010\\">", "schedule": {"algorithm": "implicit",
     "params": {"bm": 64, "bn": 56, ...}}, "model_cycles": 654000, "sim_cycles": 654414}

``model_cycles``: the analytic model's cycles for the schedule; ``sim_cycles``: the simulated
(timing-only) cycles of the layer's kernels, or null when the record was chosen by the model alone.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass

from taihu.backends.model.conv import ConvShape, GemmShape
from taihu.backends.model.lstm_plan import LstmShape
from taihu.backends.model.map_plans import MAP_SHAPES, MapShape
from taihu.backends.model.schedule import Schedule

__all__ = ["TuningRecord", "normalize_signature", "problem_signature", "read_records", "records_text"]

_KEYS = ("op", "signature", "target", "schedule", "model_cycles", "sim_cycles")


def problem_signature(shape: ConvShape | GemmShape | LstmShape | MapShape) -> str:
    """The canonical text of a problem: the class name and every field that is not at its
    default, in declaration order (``ConvShape n=1 c=64 h=56 ...``; nested tuples in parentheses,
    ``ElementwiseShape dims=64,3136 operands=(True,True),(True,False) ...``). Two ops share records
    exactly when their signatures are equal. Leaving defaults out keeps records valid when a
    problem class gains a field with a default (:func:`normalize_signature` reads older,
    complete signatures)."""
    parts = [f"{f.name}={_canon(getattr(shape, f.name))}" for f in dataclasses.fields(shape)
             if f.default is dataclasses.MISSING or getattr(shape, f.name) != f.default]
    return " ".join([type(shape).__name__, *parts])


#: the problem classes by name (signatures start with it)
_PROBLEMS: dict[str, type] = {c.__name__: c for c in (ConvShape, GemmShape, LstmShape, *MAP_SHAPES)}


def normalize_signature(signature: str) -> str:
    """``signature`` with the fields at their class's default left out (records written with
    every field, or before a field was added, match :func:`problem_signature`); unknown classes
    and fields are kept as they are."""
    name, *pairs = signature.split(" ")
    cls = _PROBLEMS.get(name)
    if cls is None:
        return signature
    defaults = {f.name: _canon(f.default) for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    kept = [p for p in pairs if p.partition("=")[0] not in defaults or p.partition("=")[2] != defaults[p.partition("=")[0]]]
    return " ".join([name, *kept])


def _canon(v: object) -> str:
    if isinstance(v, tuple):
        return ",".join(f"({_canon(x)})" if isinstance(x, tuple) else str(x) for x in v)
    return str(v)


@dataclass(frozen=True)
class TuningRecord:
    """The schedule kept for one (signature, target) (module docstring)."""

    op: str
    signature: str
    target: str
    schedule: Schedule
    model_cycles: int
    sim_cycles: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.signature, self.target)

    @property
    def rank(self) -> tuple[int, int, str]:
        """Smaller is better: simulated cycles when known, else modelled; ties by schedule text."""
        cycles = self.sim_cycles if self.sim_cycles is not None else self.model_cycles
        return (cycles, self.model_cycles, self.schedule.describe())

    def to_json(self) -> str:
        """One JSON line (keys in a fixed order)."""
        return json.dumps({
            "op": self.op,
            "signature": self.signature,
            "target": self.target,
            "schedule": {"algorithm": self.schedule.algorithm, "params": self.schedule.as_dict()},
            "model_cycles": self.model_cycles,
            "sim_cycles": self.sim_cycles,
        })

    @staticmethod
    def from_json(line: str, where: str) -> TuningRecord:
        """Parse one line; ``ValueError`` naming ``where`` (``file:line``) and the key."""
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not a JSON record ({e.msg})") from None
        if not isinstance(d, dict):
            raise ValueError(f"{where}: a record is a JSON object")
        for k in _KEYS:
            if k not in d:
                raise ValueError(f"{where}: key '{k}' missing")
        for k in ("op", "signature", "target"):
            if not isinstance(d[k], str):
                raise ValueError(f"{where}: key '{k}': expected a string")
        sched = d["schedule"]
        if (not isinstance(sched, dict) or not isinstance(sched.get("algorithm"), str)
                or not isinstance(sched.get("params"), dict)):
            raise ValueError(f"{where}: key 'schedule': expected {{\"algorithm\": ..., \"params\": {{...}}}}")
        for pk, pv in sched["params"].items():
            if not isinstance(pv, (int, str, bool)):
                raise ValueError(f"{where}: key 'schedule.params.{pk}': expected an integer, a string or a boolean")
        mc, sc = d["model_cycles"], d["sim_cycles"]
        if isinstance(mc, bool) or not isinstance(mc, int) or mc < 0:
            raise ValueError(f"{where}: key 'model_cycles': expected an integer >= 0")
        if sc is not None and (isinstance(sc, bool) or not isinstance(sc, int) or sc < 0):
            raise ValueError(f"{where}: key 'sim_cycles': expected an integer >= 0 or null")
        return TuningRecord(d["op"], normalize_signature(d["signature"]), d["target"],
                            Schedule.make(sched["algorithm"], **sched["params"]), mc, sc)


def read_records(text: str, source: str) -> dict[tuple[str, str], TuningRecord]:
    """(signature, target) -> the best record of ``text`` (JSON lines; blank lines ignored; for a
    key given several times the best :attr:`TuningRecord.rank` wins). Raises ``ValueError``
    naming ``source:line`` and the key."""
    out: dict[tuple[str, str], TuningRecord] = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        r = TuningRecord.from_json(line, f"{source}:{i}")
        cur = out.get(r.key)
        if cur is None or r.rank < cur.rank:
            out[r.key] = r
    return out


def records_text(records: Iterable[TuningRecord]) -> str:
    """JSON lines, one per record, sorted by (target, signature)."""
    rows = sorted(records, key=lambda r: (r.target, r.signature))
    return "".join(r.to_json() + "\n" for r in rows)
