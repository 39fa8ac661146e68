"""Dual-issue in-order P0/P1 scoreboard of one CPE (spec sw26010-model.md §6; 004 L500-541).

A micro-kernel body (straight-line register instructions = one loop iteration) is timed once:
:func:`schedule_body` issues several back-to-back iterations on the two pipes and extracts the
steady state (cycles per iteration, including loop-carried RAW dependences through registers)
plus the issue cycle of every instruction in every iteration. The result is cached by body
identity (:class:`Instr` is frozen and hashable) and by machine.

Issue rules (spec §6.1):

* Each cycle the two next instructions in program order form a pair (leader, trailer).
* An instruction can enter pipe P iff P is in its pipe set (machine table, 004 Table 3.2) and its
  source registers are ready (a consumer may issue ``latency`` cycles after its producer issued).
* (a) If the leader cannot issue, nothing issues (in order).  (b) A leader that can enter only
  one pipe takes it; the trailer may take the other.  (c) If the leader can enter both, the
  trailer chooses first; if both can enter both, leader -> P1, trailer -> P0
  (``dual_tie = "leader-p1"``).  The trailer never issues with a leader it depends on (RAW).
* ``nop`` takes an issue slot but counts as idle (spec §6.3).
* Instructions whose table row has ``repeat > 1`` (fp divide / sqrt, ``param``) share one
  non-pipelined unit: such an instruction cannot issue before ``repeat`` cycles after the
  previous one issued; other instructions are unaffected.
* Fused load-and-send (``vldr/vldc/ldder/lddec``): the local destination is ready after
  ``lat_ldm_load`` (spec §5 rule 6 [reconstructed]); the table latency is the issue latency.

Structural stalls (GET on an empty FIFO, full send buffer, full DMA channel) are not part of the
static schedule: the engine applies them when it runs a body (see ``microkernel.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from taihu.target.machine import Machine

# Classification of mnemonics used by the numerics and by the RLC machinery.
LOADS_F64_VEC = frozenset({"vldd", "vldr", "vldc"})
LOADS_F64_REP = frozenset({"ldde", "ldder", "lddec"})
LOADS_F32_VEC = frozenset({"vlds"})
LOADS_F32_REP = frozenset({"ldse"})
LOADS = LOADS_F64_VEC | LOADS_F64_REP | LOADS_F32_VEC | LOADS_F32_REP
STORES = frozenset({"vstd", "vsts", "fstd", "fsts"})
STORES_SCALAR = frozenset({"fstd", "fsts"})  # lane 0 only
#: fp constants (``sw.ldfi``: value in ``Instr.imm``, all 4 lanes; no memory access modelled)
CONSTS = frozenset({"ldfi"})
FUSED_SEND = frozenset({"vldr", "vldc", "ldder", "lddec"})
PUTS = frozenset({"putr", "putc"})
GETS = frozenset({"getr", "getc"})
FMA = frozenset({"vmad", "vmas", "fmad", "fmas"})
FP_BINARY = frozenset(
    {"vaddd", "vadds", "vsubd", "vsubs", "vmuld", "vmuls", "faddd", "fadds", "fsubd", "fsubs",
     "fmuld", "fmuls", "vadd", "vsub", "vmul", "vdivd", "vdivs"}
)
#: fp compare (lane = 2.0 if true else 0.0), select (4 operands), unary (sqrt): SW-64 ops
#: outside Table 3.2 (machine table ``param`` rows); divides are in FP_BINARY.
FP_CMP = frozenset({"vfcmpeq", "vfcmple", "vfcmplt"})
FP_SEL = frozenset({"vfseleq", "vfsellt"})
FP_UNARY = frozenset({"vsqrtd", "vsqrts"})
#: fp64 lane insert / extract (lane index in ``Instr.offset``): vinsf (ra, rb) -> rb with lane
#: ``offset`` = ra[0]; vextf (ra,) -> ra[offset] in every lane
LANE_OPS = frozenset({"vinsf", "vextf"})
FP_OTHER = FP_CMP | FP_SEL | FP_UNARY | LANE_OPS
ROW_OPS = frozenset({"putr", "getr", "vldr", "ldder"})
COL_OPS = frozenset({"putc", "getc", "vldc", "lddec"})


def rlc_direction(op: str) -> str | None:
    """``"row"`` / ``"col"`` for RLC instructions, else ``None``."""
    if op in ROW_OPS:
        return "row"
    if op in COL_OPS:
        return "col"
    return None


@dataclass(frozen=True)
class Instr:
    """One register-level instruction of a micro-kernel body.

    ``dst``/``src``: register numbers written/read (``src`` includes address registers for
    timing; for ``vmad`` the order is ``(a, b, c)`` with ``dst = c`` normally).
    ``ptr``/``offset``: LDM address = micro-kernel pointer ``ptr`` (advanced by its per-iteration
    stride) + ``offset`` bytes, for loads/stores.  ``rlc_dst``: RLC target index 0..7 or 8 =
    broadcast (``putr/putc``; fused sends default to 8).  ``imm``: the constant of ``ldfi``.
    """

    op: str
    dst: tuple[int, ...] = ()
    src: tuple[int, ...] = ()
    ptr: int | None = None
    offset: int = 0
    rlc_dst: int | None = None
    imm: float | None = None


@dataclass(frozen=True)
class BodyTiming:
    """Static schedule of a body.

    ``issue``: ``(k, len(body))`` issue cycles of the first ``k`` iterations (cold start at 0,
    live-in registers ready at 0).  ``ii_num / ii_den`` cycles per iteration in steady state
    (a rational so that periodic schedules with a multi-iteration period extrapolate exactly).
    ``p0_valid``/``p1_valid``: useful instructions per iteration on each pipe.
    ``first_use``: register -> earliest relative issue cycle of a reader in iteration 0
    (used to honour registers still in flight from a previous micro-kernel).
    ``last_writer``: register -> (index of its last writer in the body, result latency), used to
    update the CPE's register scoreboard after a run.
    """

    issue: np.ndarray
    ii_num: int
    ii_den: int
    p0_valid: int
    p1_valid: int
    pipe: tuple[int, ...]
    first_use: dict[int, int] = field(hash=False)
    last_writer: dict[int, tuple[int, int]] = field(hash=False)

    @property
    def ii(self) -> float:
        """Steady-state cycles per iteration."""
        return self.ii_num / self.ii_den

    def issue_times(self, j: int, n: int) -> np.ndarray:
        """Relative issue cycles of instruction ``j`` in iterations ``0..n-1`` (int64)."""
        k = self.issue.shape[0]
        if n <= k:
            return self.issue[:n, j].copy()
        extra = np.arange(1, n - k + 1, dtype=np.int64)
        base = self.issue[k - 1, j]
        tail = base + (extra * self.ii_num) // self.ii_den
        return np.concatenate([self.issue[:, j], tail])

    def start_of(self, i: int) -> int:
        """Relative issue cycle of the first instruction of iteration ``i``."""
        k = self.issue.shape[0]
        if i < k:
            return int(self.issue[i].min())
        return int(self.issue[k - 1].min()) + ((i - k + 1) * self.ii_num) // self.ii_den

    def cycles(self, n: int) -> int:
        """Issue cycles of ``n`` iterations: from the first issue to one past the last issue."""
        if n <= 0:
            return 0
        k = self.issue.shape[0]
        if n <= k:
            return int(self.issue[n - 1].max()) + 1
        return int(self.issue[k - 1].max()) + 1 + ((n - k) * self.ii_num) // self.ii_den


N_SIM_ITER = 24  # iterations issued to find the steady state (period up to 8 iterations)


def _latency(machine: Machine, ins: Instr) -> int:
    if ins.op in FUSED_SEND:
        return machine.lat_ldm_load
    return machine.instruction(ins.op).latency


def _pipes(machine: Machine, op: str) -> tuple[int, ...]:
    return machine.instruction(op).pipes


def simulate_issue(
    body: tuple[Instr, ...], n_iter: int, machine: Machine
) -> tuple[np.ndarray, np.ndarray]:
    """Issue ``n_iter`` back-to-back iterations; returns (issue cycles ``(n_iter, len(body))``,
    pipe of each body instruction in the last iteration)."""
    nb = len(body)
    zero = machine.zero_reg
    ready = [0] * machine.n_regs
    pipes = [_pipes(machine, ins.op) for ins in body]
    lats = [_latency(machine, ins) for ins in body]
    reps = [machine.instruction(ins.op).repeat for ins in body]
    unit_free = 0  # cycle at which the non-pipelined divide/sqrt unit accepts the next op
    issue = np.zeros((n_iter, nb), dtype=np.int64)
    pipe_of = np.zeros(nb, dtype=np.int64)
    total = n_iter * nb
    i = 0
    cycle = 0

    def srcs_ready(ins: Instr) -> bool:
        for r in ins.src:
            if r != zero and ready[r] > cycle:
                return False
        return True

    while i < total:
        li = i % nb
        leader = body[li]
        if not srcs_ready(leader) or (reps[li] > 1 and unit_free > cycle):
            cycle += 1
            continue
        lp = pipes[li]
        taken_leader: int
        issued_trailer = False
        t_pipe = -1
        if i + 1 < total:
            ti = (i + 1) % nb
            trailer = body[ti]
            tp = pipes[ti]
            dep = any(r in leader.dst for r in trailer.src if r != zero)
            t_ok = (not dep) and srcs_ready(trailer) and (reps[ti] == 1 or (reps[li] == 1 and unit_free <= cycle))
        else:
            ti, tp, t_ok = -1, (), False
        if len(lp) == 1:
            taken_leader = lp[0]
            if t_ok:
                other = [p for p in tp if p != taken_leader]
                if other:
                    t_pipe = other[0]
                    issued_trailer = True
        else:
            if t_ok:
                if len(tp) >= 2:
                    t_pipe, taken_leader = 0, 1  # dual_tie: leader -> P1, trailer -> P0
                else:
                    t_pipe = tp[0]
                    taken_leader = 1 - t_pipe
                issued_trailer = True
            else:
                taken_leader = 1  # "this instruction prefers pipeline 1" (004 L512)
        it = i // nb
        issue[it, li] = cycle
        pipe_of[li] = taken_leader
        for r in leader.dst:
            ready[r] = cycle + lats[li]
        if reps[li] > 1:
            unit_free = cycle + reps[li]
        i += 1
        if issued_trailer:
            issue[(i) // nb, ti] = cycle
            pipe_of[ti] = t_pipe
            for r in body[ti].dst:
                ready[r] = cycle + lats[ti]
            if reps[ti] > 1:
                unit_free = cycle + reps[ti]
            i += 1
        cycle += 1
    return issue, pipe_of


@functools.lru_cache(maxsize=4096)
def schedule_body(body: tuple[Instr, ...], machine: Machine) -> BodyTiming:
    """Time ``body`` on the dual-issue model (cached by body and machine)."""
    if not body:
        raise ValueError("empty micro-kernel body")
    k = N_SIM_ITER
    issue, pipe_of = simulate_issue(body, k, machine)
    starts = issue.min(axis=1)
    # steady state: the smallest period p (iterations) with a constant start difference
    ii_num, ii_den = int(starts[-1] - starts[-2]), 1
    for p in range(1, 9):
        d = starts[k - 1] - starts[k - 1 - p]
        if k - 1 - 2 * p >= 0 and starts[k - 1 - p] - starts[k - 1 - 2 * p] == d:
            ii_num, ii_den = int(d), p
            break
    p0 = sum(1 for j, ins in enumerate(body) if pipe_of[j] == 0 and ins.op != "nop")
    p1 = sum(1 for j, ins in enumerate(body) if pipe_of[j] == 1 and ins.op != "nop")
    first_use: dict[int, int] = {}
    written: set[int] = set()
    for j, ins in enumerate(body):
        for r in ins.src:
            if r != machine.zero_reg and r not in written and r not in first_use:
                first_use[r] = int(issue[0, j])
        written.update(ins.dst)
    last_writer: dict[int, tuple[int, int]] = {}
    for j, ins in enumerate(body):
        for r in ins.dst:
            last_writer[r] = (j, _latency(machine, ins))
    return BodyTiming(
        issue=issue,
        ii_num=ii_num,
        ii_den=ii_den,
        p0_valid=p0,
        p1_valid=p1,
        pipe=tuple(int(p) for p in pipe_of),
        first_use=first_use,
        last_writer=last_writer,
    )
