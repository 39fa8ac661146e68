"""The schedule of an LSTM layer (004 §5.2, Algorithm 6, L1229-1244; algorithms.md §D).

``convert-graph-to-tile`` lowers ``graph.lstm`` to two kernels: ONE memory-level GEMM for the
input projection of every time step, XW (seq*batch, 4H) = X W^T + Wb + Rb (Table 4.2 row 5,
GEPB/GEMP), and the recurrence, whose h, c and four gate tiles stay in LDM for the whole
sequence (fp64 tiles (Bp, Hp): batch padded to 32, H to 128), with per time step and gate the
mesh GEMM ``gates_j += h R_j^T``. Its free decisions are the input projection's GEMM schedule
(:func:`~taihu.backends.model.schedule.gemm_schedule_of`, parameters prefixed ``x.``) and
``hoist_r``: the four R_j loaded into LDM once (when they fit) or streamed per time step and
gate (004 L1333: then they cannot be double-buffered), and ``r_block``: when even one R_j does
not fit beside the state, R_j is streamed in (r_block, r_block) blocks (module section "Blocked
recurrence"; omitted = whole R_j, the form above)::

    #tile.schedule<"lstm" {hoist_r = true, x.bk = 64 : i64, x.bm = 32 : i64, x.bn = 512 : i64,
                           x.double_c = false, x.trans_a = false, x.trans_b = true, x.vec = "n"}>

LDM per CPE (fp64, ``per(r, c)`` = an (r, c) tile's share of one CPE, rounded up to 32 B):
``7 per(Bp, Hp)`` (h, c, 4 gates, tmp) + ``2 per(Bp, Hp) eb/8`` (the double-buffered staging
tile) + ``n_R per(Hp, Hp)`` (n_R = 4 hoisted, else 1) + ``per(Hp, Hp) eb/8`` (R's staging tile).

Blocked recurrence (``r_block`` = b, a multiple of 128 dividing Hp, ``hoist_r`` false): the
state is split into Hp/b column blocks of (Bp, b) tiles -- h_k, c_n and the new h hn_n -- and per
time step, block n of the outputs and gate j: g_j = XW[t, :, j, n] then ``g_j += h_k R_j[n, k]^T``
for every K-block k (one mesh GEMM of (Bp, b, b) per R block), the cell on block n into hn_n,
y[t, :, n] stored; hn copied to h after the last block. The R blocks of a step stream through two
staging tiles when they fit (block i+1's DMA issued before block i's conversion and GEMM, so it
overlaps them), else one. LDM per CPE: ``3 per(Bp, Hp)`` (h, hn, c) + ``5 per(Bp, b)`` (4 gates,
tmp) + ``2 per(Bp, b) eb/8`` (staging) + ``per(b, b)`` + ``n_s per(b, b) eb/8`` (n_s = 2 or 1
staging tiles). The model takes the largest b that fits (double-buffered first); a hidden size
whose state does not fit even with b = 128 is a diagnostic.

Cost (cycles, for ranking and records; not a simulation): the GEMM's model time, plus the
recurrence's ``seq x 4`` mesh GEMMs of ``2 Bp Hp Hp`` flops at the core group's peak
(``peak_cg_gflops``), plus, when streamed, ``seq x 4`` loads of R_j (``Hp^2 eb`` bytes) at the
DMA peak (``peak_bw_cg``, not hidden: single-buffered); blocked: per step and R block
``max(gemm, dma)`` with two staging tiles (the step's first block exposed), ``gemm + dma`` with one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from taihu.backends.model.conv import GemmPlan, GemmShape, plan_gemm
from taihu.backends.model.schedule import IllegalSchedule, Schedule, _bool, _int, _take, gemm_plan_for, gemm_schedule_of, gemm_space
from taihu.target.machine import Machine

__all__ = ["BlockedTiles", "LstmPlan", "LstmShape", "blocked_bytes", "lstm_cycles", "pick_r_block", "r_blocks", "per_cpe_bytes", "lstm_model_plan", "lstm_plan_for", "lstm_schedule_of",
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

    @property
    def elem_bytes(self) -> int:
        return 4 if self.dtype == "f32" else 8

    def recurrence_bytes(self, hoist_r: bool, r_block: int | None = None) -> int:
        """LDM bytes per CPE of the recurrence kernel (module docstring); ``r_block``: the blocked
        form with two R staging tiles."""
        bp, hp = self.padded
        eb = self.elem_bytes
        if r_block is not None:
            return blocked_bytes(bp, hp, r_block, eb, BlockedTiles(3, 5), double=True)
        state = 7 * per_cpe_bytes(bp, hp) + 2 * per_cpe_bytes(bp, hp) * eb // 8
        r = per_cpe_bytes(hp, hp)
        return state + (4 if hoist_r else 1) * r + r * eb // 8


@dataclass(frozen=True)
class BlockedTiles:
    """The fp64 tiles of a blocked recurrence: ``full`` (Bp, Hp) state tiles (each split in column
    blocks) and ``block`` (Bp, b) temporaries, plus ``extra`` bytes per CPE (GRU's Rbh row)."""

    full: int
    block: int
    extra: int = 0


def blocked_bytes(bp: int, hp: int, b: int, eb: int, tiles: BlockedTiles, double: bool) -> int:
    """LDM bytes per CPE of a blocked recurrence (module section "Blocked recurrence") with R
    blocks of (b, b) through two (``double``) or one staging tiles of ``eb``-byte elements."""
    state = tiles.full * per_cpe_bytes(bp, hp) + tiles.block * per_cpe_bytes(bp, b) + 2 * per_cpe_bytes(bp, b) * eb // 8
    r = per_cpe_bytes(b, b)
    return state + tiles.extra + r + (2 if double else 1) * r * eb // 8


def r_blocks(hp: int) -> list[int]:
    """The legal ``r_block`` values for a padded hidden size ``hp``, largest first: multiples of
    128 (the mesh GEMM's vectorised N, 004 L885) dividing ``hp``."""
    return [b for b in range(hp, 0, -128) if hp % b == 0]


def pick_r_block(bp: int, hp: int, eb: int, tiles: BlockedTiles, budget: int) -> tuple[int, bool] | None:
    """The model's block: (b, double) with the largest b whose recurrence fits ``budget`` with two
    staging tiles, else with one; None when not even b = 128 fits (the state is too large)."""
    for double in (True, False):
        for b in r_blocks(hp):
            if blocked_bytes(bp, hp, b, eb, tiles, double) <= budget:
                return b, double
    return None


def per_cpe_bytes(r: int, c: int) -> int:
    """Per-CPE fp64 bytes of an (r, c) tile on the 64 CPEs, rounded up to 32 B."""
    return -(-(r * c * 8 // 64) // 32) * 32


LSTM_TILES = BlockedTiles(3, 5)  # h, hn, c; 4 gates, tmp


@dataclass(frozen=True)
class LstmPlan:
    """The input projection's GEMM plan, whether the four R_j stay in LDM and the R block
    (``r_block``: None = whole R_j; ``double_r``: two R staging tiles, blocked form only)."""

    xw: GemmPlan
    hoist_r: bool
    r_block: int | None = None
    double_r: bool = False


def _check_recurrence(s: LstmShape, budget: int, hoist_r: bool, prefix: str) -> None:
    need = s.recurrence_bytes(hoist_r)
    if need > budget:
        bp, hp = s.padded
        what = "the four R_j" if hoist_r else f"one R_j of {hp}x{hp}"
        raise IllegalSchedule(f"{prefix}the LDM-resident recurrence (h, c, gates and {what}) needs {need} B per CPE "
                              f"> {budget}")


def _state_too_large(s: LstmShape, budget: int) -> IllegalSchedule:
    bp, hp = s.padded
    need = blocked_bytes(bp, hp, 128, s.elem_bytes, LSTM_TILES, double=False)
    return IllegalSchedule(f"hidden_size {s.hidden}: the LDM-resident recurrence state (h, c and the new h, "
                           f"fp64 {bp}x{hp} each, with 128x128 R blocks) needs {need} B per CPE > {budget}")


def _blocked_plans(s: LstmShape, budget: int) -> list[tuple[int, bool]]:
    """Every legal (r_block, double_r), the largest blocks first; double_r wherever it fits."""
    bp, hp = s.padded
    out = []
    for b in r_blocks(hp):
        for double in (True, False):
            if blocked_bytes(bp, hp, b, s.elem_bytes, LSTM_TILES, double) <= budget:
                out.append((b, double))
                break
    return out


def lstm_model_plan(s: LstmShape, machine: Machine, budget: int, name: str = "lstm_x") -> LstmPlan:
    """The model's pick: :func:`~taihu.backends.model.conv.plan_gemm` for XW, R hoisted when it
    fits; else, when one R_j fits, the faster by :func:`lstm_cycles` of R_j streamed whole per
    step and gate (kept on a tie) and the one-block form ``r_block = Hp`` with two staging tiles
    (the same GEMMs, the next R_j's DMA overlapping the GEMM: H = 384 at batch 1, swsim 373 333
    instead of 516 949 cycles for 2 steps); smaller blocks are not candidates then, the model's
    GEMM at peak overrates them (batch 40, H = 300: r_block = 128 modelled 378 688 < 593 682, but
    simulated 847 633 > 804 888). Else R_j streams in the largest blocks that fit (module section
    "Blocked recurrence"). ``IllegalSchedule`` (a ``ValueError``) when not even the state with
    128x128 R blocks fits."""
    xw = plan_gemm(s.xw, machine, name=name)
    if s.recurrence_bytes(True) <= budget:
        return LstmPlan(xw, True)
    bp, hp = s.padded
    if s.recurrence_bytes(False) <= budget:
        whole = LstmPlan(xw, False)
        if blocked_bytes(bp, hp, hp, s.elem_bytes, LSTM_TILES, True) > budget:
            return whole
        one = LstmPlan(xw, False, hp, True)
        return one if lstm_cycles(one, s, machine) < lstm_cycles(whole, s, machine) else whole
    pick = pick_r_block(bp, hp, s.elem_bytes, LSTM_TILES, budget)
    if pick is None:
        raise _state_too_large(s, budget)
    return LstmPlan(xw, False, *pick)


def lstm_space(s: LstmShape, machine: Machine, budget: int, name: str = "lstm_x") -> Iterator[LstmPlan]:
    """Every legal plan: each SUMMA plan of XW with each legal ``hoist_r`` and, streamed, each
    legal ``r_block``."""
    hoists = [h for h in (True, False) if s.recurrence_bytes(h) <= budget]
    blocks = _blocked_plans(s, budget)
    for g in gemm_space(s.xw, machine, name=name):
        for h in hoists:
            yield LstmPlan(g, h)
        for b, double in blocks:
            yield LstmPlan(g, False, b, double)


def lstm_schedule_of(plan: LstmPlan) -> Schedule:
    """The plan as a ``tile.schedule``; ``r_block`` only for the blocked form (older records,
    without it, name the whole-R_j forms)."""
    g = gemm_schedule_of(plan.xw)
    extra = {} if plan.r_block is None else {"r_block": plan.r_block}
    return Schedule.make("lstm", hoist_r=plan.hoist_r, **extra, **{X_PREFIX + k: v for k, v in g.params})


def lstm_plan_for(s: LstmShape, machine: Machine, budget: int, schedule: Schedule, name: str = "lstm_x") -> LstmPlan:
    """Exactly the plan ``schedule`` names; :class:`IllegalSchedule` naming the parameter."""
    if schedule.algorithm != "lstm":
        raise IllegalSchedule(f'algorithm "{schedule.algorithm}" does not apply: the op\'s schedule is "lstm"')
    d = schedule.as_dict()
    gemm = {k[len(X_PREFIX):]: v for k, v in d.items() if k.startswith(X_PREFIX)}
    own = {k: v for k, v in d.items() if not k.startswith(X_PREFIX)}
    _take(Schedule.make("lstm", **own), ("hoist_r", "r_block") if "r_block" in own else ("hoist_r",))
    hoist = _bool(d, "hoist_r")
    block, double = None, False
    if "r_block" in own:
        block = _int(d, "r_block")
        bp, hp = s.padded
        if hoist:
            raise IllegalSchedule(f"r_block={block} streams R in blocks: it needs hoist_r=false")
        if block not in r_blocks(hp):
            raise IllegalSchedule(f"r_block={block} must be a multiple of 128 dividing the padded hidden size {hp}")
        double = blocked_bytes(bp, hp, block, s.elem_bytes, LSTM_TILES, True) <= budget
        need = blocked_bytes(bp, hp, block, s.elem_bytes, LSTM_TILES, double)
        if need > budget:
            raise IllegalSchedule(f"r_block={block}: the LDM-resident recurrence (h, c, the new h, gates and one "
                                  f"{block}x{block} R block) needs {need} B per CPE > {budget}")
    else:
        _check_recurrence(s, budget, hoist, f"hoist_r={'true' if hoist else 'false'}: ")
    try:
        xw = gemm_plan_for(s.xw, machine, Schedule.make("gemm", **gemm), name=name)
    except IllegalSchedule as e:
        raise IllegalSchedule(f"the input projection (parameters {X_PREFIX}*): {e}") from None
    return LstmPlan(xw, hoist, block, double)


def lstm_cycles(plan: LstmPlan, s: LstmShape, machine: Machine) -> int:
    """The plan's modelled cycles on ``machine`` (module docstring)."""
    bp, hp = s.padded
    f = machine.f_clk_ghz
    eb = s.elem_bytes
    if plan.r_block is not None:
        b = plan.r_block
        n = 4 * (hp // b) ** 2  # R blocks per step
        gemm = 2 * bp * b * b / machine.peak_cg_gflops * f
        dma = b * b * eb / machine.peak_bw_cg * f
        step = dma + (n - 1) * max(gemm, dma) + gemm if plan.double_r else n * (gemm + dma)
        return round(plan.xw.cost.t_total * f * 1e9 + s.seq * step)
    recurrence = s.seq * 4 * 2 * bp * hp * hp / machine.peak_cg_gflops * f
    if not plan.hoist_r:
        recurrence += s.seq * 4 * hp * hp * eb / machine.peak_bw_cg * f
    return round(plan.xw.cost.t_total * f * 1e9 + recurrence)
