"""The schedule of an LSTM layer (004 §5.2, Algorithm 6, L1229-1244; algorithms.md §D).

``convert-graph-to-tile`` lowers ``graph.lstm`` to two kernels: ONE memory-level GEMM for the
input projection of every time step, XW (seq*batch, 4H) = X W^T + Wb + Rb (Table 4.2 row 5,
GEPB/GEMP), and the recurrence, whose h, c and four gate tiles stay in LDM for the whole
sequence (fp64 tiles (Bp, Hp): batch padded to 32, H to 128), with per time step and gate the
mesh GEMM ``gates_j += h R_j^T``. Its free decisions are the input projection's GEMM schedule
(:func:`~taihu.backends.model.schedule.gemm_schedule_of`, parameters prefixed ``x.``) and
``hoist_r``: the four R_j loaded into LDM once (when they fit) or streamed per time step and
gate (004 L1333: then they cannot be double-buffered)::

    #tile.schedule<"lstm" {hoist_r = true, x.bk = 64 : i64, x.bm = 32 : i64, x.bn = 512 : i64,
                           x.double_c = false, x.trans_a = false, x.trans_b = true, x.vec = "n"}>

LDM per CPE (fp64, ``per(r, c)`` = an (r, c) tile's share of one CPE, rounded up to 32 B):
``7 per(Bp, Hp)`` (h, c, 4 gates, tmp) + ``2 per(Bp, Hp) eb/8`` (the double-buffered staging
tile) + ``n_R per(Hp, Hp)`` (n_R = 4 hoisted, else 1) + ``per(Hp, Hp) eb/8`` (R's staging tile).

Cost (cycles, for ranking and records; not a simulation): the GEMM's model time, plus the
recurrence's ``seq x 4`` mesh GEMMs of ``2 Bp Hp Hp`` flops at the core group's peak
(``peak_cg_gflops``), plus, when streamed, ``seq x 4`` loads of R_j (``Hp^2 eb`` bytes) at the
DMA peak (``peak_bw_cg``, not hidden: single-buffered).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from taihu.backends.model.conv import GemmPlan, GemmShape, plan_gemm
from taihu.backends.model.schedule import IllegalSchedule, Schedule, _bool, _take, gemm_plan_for, gemm_schedule_of, gemm_space
from taihu.target.machine import Machine

__all__ = ["LstmPlan", "LstmShape", "lstm_cycles", "per_cpe_bytes", "lstm_model_plan", "lstm_plan_for", "lstm_schedule_of",
           "lstm_space"]

#: the prefix of the input projection's GEMM parameters in an ``lstm`` schedule
X_PREFIX = "x."


@dataclass(frozen=True)
class LstmShape:
    """A forward LSTM of ``seq`` steps, ``batch`` sequences, ``input`` features, ``hidden`` units
    (``dtype`` "f32" | "f64"; ``bias``: ONNX's B is given)."""

    seq: int
    batch: int
    input: int
    hidden: int
    dtype: str
    bias: bool

    @property
    def xw(self) -> GemmShape:
        """The input projection XW (seq*batch, 4H) = X (seq*batch, input) W^T (W: (4H, input))."""
        return GemmShape(self.seq * self.batch, 4 * self.hidden, self.input, self.dtype, trans_b=True,
                         bias_along="n" if self.bias else None)

    @property
    def padded(self) -> tuple[int, int]:
        """(Bp, Hp): the batch padded to 32, the hidden size to 128."""
        return -(-self.batch // 32) * 32, -(-self.hidden // 128) * 128

    def recurrence_bytes(self, hoist_r: bool) -> int:
        """LDM bytes per CPE of the recurrence kernel (module docstring)."""
        bp, hp = self.padded
        eb = 4 if self.dtype == "f32" else 8
        state = 7 * per_cpe_bytes(bp, hp) + 2 * per_cpe_bytes(bp, hp) * eb // 8
        r = per_cpe_bytes(hp, hp)
        return state + (4 if hoist_r else 1) * r + r * eb // 8


def per_cpe_bytes(r: int, c: int) -> int:
    """Per-CPE fp64 bytes of an (r, c) tile on the 64 CPEs, rounded up to 32 B."""
    return -(-(r * c * 8 // 64) // 32) * 32


@dataclass(frozen=True)
class LstmPlan:
    """The input projection's GEMM plan and whether the four R_j stay in LDM."""

    xw: GemmPlan
    hoist_r: bool


def _check_recurrence(s: LstmShape, budget: int, hoist_r: bool, prefix: str) -> None:
    need = s.recurrence_bytes(hoist_r)
    if need > budget:
        bp, hp = s.padded
        what = "the four R_j" if hoist_r else f"one R_j of {hp}x{hp}"
        raise IllegalSchedule(f"{prefix}the LDM-resident recurrence (h, c, gates and {what}) needs {need} B per CPE "
                              f"> {budget}")


def lstm_model_plan(s: LstmShape, machine: Machine, budget: int, name: str = "lstm_x") -> LstmPlan:
    """The model's pick: :func:`~taihu.backends.model.conv.plan_gemm` for XW, R hoisted when it
    fits. ``IllegalSchedule`` (a ``ValueError``) when not even one R_j fits beside the state."""
    hoist = s.recurrence_bytes(True) <= budget
    _check_recurrence(s, budget, hoist, f"hidden_size {s.hidden}: ")
    return LstmPlan(plan_gemm(s.xw, machine, name=name), hoist)


def lstm_space(s: LstmShape, machine: Machine, budget: int, name: str = "lstm_x") -> Iterator[LstmPlan]:
    """Every legal plan: each SUMMA plan of XW with each legal ``hoist_r``."""
    hoists = [h for h in (True, False) if s.recurrence_bytes(h) <= budget]
    for g in gemm_space(s.xw, machine, name=name):
        for h in hoists:
            yield LstmPlan(g, h)


def lstm_schedule_of(plan: LstmPlan) -> Schedule:
    g = gemm_schedule_of(plan.xw)
    return Schedule.make("lstm", hoist_r=plan.hoist_r, **{X_PREFIX + k: v for k, v in g.params})


def lstm_plan_for(s: LstmShape, machine: Machine, budget: int, schedule: Schedule, name: str = "lstm_x") -> LstmPlan:
    """Exactly the plan ``schedule`` names; :class:`IllegalSchedule` naming the parameter."""
    if schedule.algorithm != "lstm":
        raise IllegalSchedule(f'algorithm "{schedule.algorithm}" does not apply: the op\'s schedule is "lstm"')
    d = schedule.as_dict()
    gemm = {k[len(X_PREFIX):]: v for k, v in d.items() if k.startswith(X_PREFIX)}
    _take(Schedule.make("lstm", **{k: v for k, v in d.items() if not k.startswith(X_PREFIX)}), ("hoist_r",))
    hoist = _bool(d, "hoist_r")
    _check_recurrence(s, budget, hoist, f"hoist_r={'true' if hoist else 'false'}: ")
    try:
        xw = gemm_plan_for(s.xw, machine, Schedule.make("gemm", **gemm), name=name)
    except IllegalSchedule as e:
        raise IllegalSchedule(f"the input projection (parameters {X_PREFIX}*): {e}") from None
    return LstmPlan(xw, hoist)


def lstm_cycles(plan: LstmPlan, s: LstmShape, machine: Machine) -> int:
    """The plan's modelled cycles on ``machine`` (module docstring)."""
    bp, hp = s.padded
    f = machine.f_clk_ghz
    recurrence = s.seq * 4 * 2 * bp * hp * hp / machine.peak_cg_gflops * f
    if not plan.hoist_r:
        eb = 4 if s.dtype == "f32" else 8
        recurrence += s.seq * 4 * hp * hp * eb / machine.peak_bw_cg * f
    return round(plan.xw.cost.t_total * f * 1e9 + recurrence)
