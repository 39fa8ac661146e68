"""Micro-kernels: straight-line register bodies run for a trip count (timing + numerics).

A :class:`MicroKernel` is one loop iteration of register instructions (:class:`Instr`) plus one
per-iteration byte stride per LDM pointer. Running it for ``n`` iterations on a CPE:

* **Timing** comes from the cached static schedule (``pipeline.schedule_body``): steady-state
  cycles per iteration incl. loop-carried dependences. Structural stalls are applied at run level:
  the body's start is shifted until every GET of the run finds its message (get issue >= arrival),
  and a sender is held back when a link has more than ``rlc_send_depth + rlc_recv_depth``
  unconsumed messages (spec §5 rules 3-6).
* **Numerics** are vectorised over all iterations with numpy (no Python work per iteration):
  every register value is an ``(n, 4)`` array (one row per iteration). Loads gather over
  iterations; a register read before it is written in the body takes the previous iteration's
  value (the live-in value in iteration 0); an FMA/add that accumulates into a loop-carried
  register reduces over iterations (``sum``, or ``cumsum`` when its per-iteration values are
  read); accumulations of one body are evaluated together with one ``einsum``. Bodies whose
  iterations depend on each other in other ways (non-additive recurrences, loads that read what a
  store of the same run wrote) are evaluated iteration by iteration (exact, slower).

Scalar integer and control instructions (``addl``, ``subw``, ``cmp*``, ``bgt``, ``nop``,
``vinsw``...) are timed but have no numeric effect: addresses are given by the micro-kernel
pointers, not by register arithmetic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from taihu.backends.sim.memory import MemoryBoundsError, SimError
from taihu.backends.sim.pipeline import (
    FMA,
    FP_BINARY,
    FUSED_SEND,
    GETS,
    LOADS,
    LOADS_F32_REP,
    LOADS_F32_VEC,
    LOADS_F64_REP,
    LOADS_F64_VEC,
    PUTS,
    STORES,
    Instr,
    rlc_direction,
)


@dataclass(frozen=True)
class MicroKernel:
    """A register-level loop: ``body`` = one iteration; ``strides[p]`` = bytes pointer ``p``
    advances per iteration. ``name`` labels trace spans."""

    body: tuple[Instr, ...]
    strides: tuple[int, ...] = ()
    name: str = "microkernel"


LANES = 4
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


def flops_of(ins: Instr) -> int:
    """Floating-point operations of one instruction (vector FMA = 4 lanes x 2)."""
    op = ins.op
    if op in ("vmad", "vmas"):
        return 2 * LANES
    if op in ("fmad", "fmas"):
        return 2
    if op in FP_BINARY:
        return LANES if op.startswith("v") else 1
    return 0


@dataclass(frozen=True)
class BodyPlan:
    """Static analysis of a body for the vectorised numerics (cached per body)."""

    order: tuple[int, ...]  # evaluation order of instructions (topological), or () = sequential
    src_kind: tuple[tuple[tuple[str, int], ...], ...]  # per instr, per src: (kind, ref)
    last_writer: dict[int, int] = field(hash=False)
    acc: frozenset[int] = frozenset()  # instructions evaluated as reductions over iterations
    acc_cumsum: frozenset[int] = frozenset()  # ... whose per-iteration values are also read
    gets: dict[str, tuple[int, ...]] = field(default_factory=dict, hash=False)  # dir -> instrs
    puts: tuple[int, ...] = ()
    flops_per_iter: int = 0
    has_rlc: bool = False
    has_store: bool = False
    has_load: bool = False


def _addend_index(ins: Instr) -> int | None:
    """Index in ``ins.src`` of the accumulated operand of an additive instruction."""
    if ins.op in FMA:
        return 2
    if ins.op in ("vaddd", "vadds", "faddd", "fadds", "vadd"):
        return 0 if ins.src[0] in ins.dst else 1
    if ins.op in ("vsubd", "vsubs", "fsubd", "fsubs", "vsub"):
        return 0
    return None


@functools.lru_cache(maxsize=4096)
def plan_body(body: tuple[Instr, ...], zero_reg: int = 31) -> BodyPlan:
    nb = len(body)
    writers: dict[int, list[int]] = {}
    for j, ins in enumerate(body):
        for r in ins.dst:
            writers.setdefault(r, []).append(j)
    last_writer = {r: w[-1] for r, w in writers.items()}
    src_kind = []
    deps: list[set[int]] = [set() for _ in range(nb)]
    carried_readers: dict[int, list[int]] = {}
    for j, ins in enumerate(body):
        kinds = []
        for r in ins.src:
            if r == zero_reg:
                kinds.append(("zero", r))
                continue
            prev = [w for w in writers.get(r, []) if w < j]
            if prev:
                kinds.append(("local", prev[-1]))
                deps[j].add(prev[-1])
            elif r in writers:
                kinds.append(("carried", r))
                carried_readers.setdefault(r, []).append(j)
            else:
                kinds.append(("livein", r))
        src_kind.append(tuple(kinds))
    # accumulators: single writer j that reads its own register carried as the addend
    acc: set[int] = set()
    acc_cumsum: set[int] = set()
    for r, ws in writers.items():
        if len(ws) != 1:
            continue
        j = ws[0]
        ins = body[j]
        ai = _addend_index(ins)
        if ai is None or ins.src[ai] != r or src_kind[j][ai][0] != "carried":
            continue
        if carried_readers.get(r) != [j]:
            continue
        if any(s == r for k, s in enumerate(ins.src) if k != ai):
            continue
        acc.add(j)
        if any(("local", j) in src_kind[k] for k in range(nb)):
            acc_cumsum.add(j)
    # carried dependences (value of the last writer, previous iteration), except accumulators
    for r, readers in carried_readers.items():
        w = last_writer[r]
        for j in readers:
            if j == w and w in acc:
                continue
            deps[j].add(w)
    # topological order (Kahn, ties by body order); a cycle => sequential evaluation
    indeg = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in range(nb)]
    for j, d in enumerate(deps):
        for w in d:
            users[w].append(j)
    ready = [j for j in range(nb) if indeg[j] == 0]
    order: list[int] = []
    import heapq

    heapq.heapify(ready)
    while ready:
        j = heapq.heappop(ready)
        order.append(j)
        for u in users[j]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != nb:
        order = []
    gets: dict[str, list[int]] = {}
    puts: list[int] = []
    for j, ins in enumerate(body):
        if ins.op in GETS:
            gets.setdefault(rlc_direction(ins.op), []).append(j)
        if ins.op in PUTS or ins.op in FUSED_SEND:
            puts.append(j)
    return BodyPlan(
        order=tuple(order),
        src_kind=tuple(src_kind),
        last_writer=last_writer,
        acc=frozenset(acc),
        acc_cumsum=frozenset(acc_cumsum),
        gets={d: tuple(v) for d, v in gets.items()},
        puts=tuple(puts),
        flops_per_iter=sum(flops_of(i) for i in body),
        has_rlc=bool(gets or puts),
        has_store=any(i.op in STORES for i in body),
        has_load=any(i.op in LOADS for i in body),
    )


class NumericsError(SimError):
    """A micro-kernel access that is misaligned or outside the LDM."""


def _width(op: str) -> int:
    if op in LOADS_F64_VEC or op == "vstd":
        return 32
    if op in LOADS_F32_VEC or op == "vsts":
        return 16
    if op in LOADS_F64_REP:
        return 8
    if op in LOADS_F32_REP:
        return 4
    return 0


class MicroKernelNumerics:
    """Evaluate a body's numerics for one CPE.

    ``regs``: the CPE's register file (list of 32 ``(4,)`` arrays); ``ldm``: ``LDMArray``;
    ``inputs``: direction -> ``(n, m, 4)`` payload array of the run's GETs (m GETs per
    iteration in body order). Returns the payloads sent by every put instruction:
    instr index -> ``(n, 4)``.
    """

    def __init__(self, body: tuple[Instr, ...], plan: BodyPlan, cpe: int, regs: list,
                 ldm, n: int, addrs: list[np.ndarray], inputs: dict[str, np.ndarray],
                 vector_align: int = 32) -> None:
        self.body, self.plan, self.cpe, self.regs, self.ldm, self.n = body, plan, cpe, regs, ldm, n
        self.addrs = addrs  # per pointer: (n,) byte addresses of iteration i
        self.inputs = inputs
        self.align = vector_align

    # -- addresses ----------------------------------------------------------------------
    def _address(self, ins: Instr) -> np.ndarray:
        if ins.ptr is None:
            raise NumericsError(f"CPE {self.cpe}: '{ins.op}' has no LDM pointer")
        if ins.ptr >= len(self.addrs):
            raise NumericsError(f"CPE {self.cpe}: '{ins.op}' uses pointer {ins.ptr} of "
                                f"{len(self.addrs)}")
        a = self.addrs[ins.ptr] + ins.offset
        w = _width(ins.op)
        lo, hi = int(a.min()), int(a.max()) + w
        if lo < 0 or hi > self.ldm.ldm_bytes:
            raise MemoryBoundsError(
                f"CPE {self.cpe}: '{ins.op}' accesses LDM [{lo}, {hi}) outside the "
                f"{self.ldm.ldm_bytes}-byte LDM"
            )
        need = self.align if w in (16, 32) else w
        if (a % need).any():
            bad = int(a[(a % need) != 0][0])
            raise NumericsError(f"CPE {self.cpe}: '{ins.op}' at LDM address {bad} is not "
                                f"{need}-byte aligned")
        return a

    def _load(self, ins: Instr, a: np.ndarray) -> np.ndarray:
        op = ins.op
        c = self.cpe
        if op in LOADS_F64_VEC:
            return self.ldm.f64[c][(a // 8)[:, None] + np.arange(4)]
        if op in LOADS_F64_REP:
            v = self.ldm.f64[c][a // 8]
            return np.repeat(v[:, None], 4, axis=1)
        if op in LOADS_F32_VEC:
            return self.ldm.f32[c][(a // 4)[:, None] + np.arange(4)]
        v = self.ldm.f32[c][a // 4]
        return np.repeat(v[:, None], 4, axis=1)

    def _store(self, ins: Instr, a: np.ndarray, val: np.ndarray) -> None:
        c = self.cpe
        if val.ndim == 1:
            val = np.broadcast_to(val, (a.shape[0], 4))
        if ins.op == "vstd":
            self.ldm.f64[c][(a // 8)[:, None] + np.arange(4)] = val
        else:
            self.ldm.f32[c][(a // 4)[:, None] + np.arange(4)] = val.astype(np.float32)

    @staticmethod
    def _compute(op: str, x: list[np.ndarray]) -> np.ndarray:
        if op in ("vmad", "fmad"):
            return x[0] * x[1] + x[2]
        if op in ("vmas", "fmas"):
            return (x[0].astype(np.float32) * x[1].astype(np.float32) + x[2].astype(np.float32))
        if op.startswith(("vadd", "fadd")):
            return x[0] + x[1]
        if op.startswith(("vsub", "fsub")):
            return x[0] - x[1]
        if op.startswith(("vmul", "fmul")):
            return x[0] * x[1]
        raise NumericsError(f"no numerics for '{op}'")

    def _livein(self, r: int) -> np.ndarray:
        return self.regs[r]

    # -- vectorised evaluation ----------------------------------------------------------
    def run(self) -> dict[int, np.ndarray]:
        if not self.plan.order or self._memory_hazard():
            return self.run_sequential()
        body, plan, n = self.body, self.plan, self.n
        val: dict[int, np.ndarray] = {}
        sends: dict[int, np.ndarray] = {}
        get_pos = {d: {j: k for k, j in enumerate(js)} for d, js in plan.gets.items()}
        deferred: list[int] = []
        stores: list[tuple[Instr, np.ndarray, int]] = []

        def operand(j: int, k: int) -> np.ndarray:
            kind, ref = plan.src_kind[j][k]
            if kind == "local":
                return val[ref]
            if kind == "livein":
                return self._livein(ref)
            if kind == "zero":
                return np.zeros(4)
            # carried: previous iteration's value of the last writer, live-in for iteration 0
            r = ref
            w = plan.last_writer[r]
            cur = val[w]
            if cur.ndim == 1:
                cur = np.broadcast_to(cur, (n, 4))
            return np.concatenate([np.broadcast_to(self.regs[r], (1, 4)).astype(cur.dtype),
                                   cur[:-1]])

        for j in plan.order:
            ins = body[j]
            op = ins.op
            if op in LOADS:
                v = self._load(ins, self._address(ins))
                val[j] = v
                if op in FUSED_SEND:
                    sends[j] = v
            elif op in STORES:
                stores.append((ins, self._address(ins), j))
            elif op in GETS:
                d = "row" if op == "getr" else "col"
                val[j] = self.inputs[d][:, get_pos[d][j]]
            elif op in PUTS:
                sends[j] = np.broadcast_to(operand(j, 0), (n, 4))
            elif op in FMA or op in FP_BINARY:
                if j in plan.acc and j not in plan.acc_cumsum:
                    deferred.append(j)
                    continue
                if j in plan.acc:
                    ai = _addend_index(ins)
                    xs = [operand(j, k) for k in range(len(ins.src)) if k != ai]
                    inc = self._increment(op, xs, n)
                    r = ins.src[ai]
                    val[j] = self.regs[r] + np.cumsum(inc, axis=0) * (-1 if op.startswith(("vsub", "fsub")) else 1)
                else:
                    val[j] = np.broadcast_to(self._compute(op, [operand(j, k) for k in range(len(ins.src))]), (n, 4))
            # scalar/control instructions: timing only
        # all stores read values computed above
        for ins, a, j in stores:
            v = operand(j, 0)
            if v.ndim == 2 and v.shape[0] == n:
                # equal addresses across iterations: the last iteration wins
                if n > 1 and a[0] == a[-1] and (a == a[0]).all():
                    self._store(ins, a[-1:], v[-1:])
                    continue
            self._store(ins, a, v)
        self._reduce_deferred(deferred, operand, val)
        # live-out: last iteration of the last writer of every register
        for r, w in plan.last_writer.items():
            if r == 31 or w not in val:
                continue
            v = val[w]
            self.regs[r] = np.array(v[-1] if v.ndim == 2 else v)
        return sends

    @staticmethod
    def _increment(op: str, xs: list[np.ndarray], n: int) -> np.ndarray:
        if op in FMA:
            p = xs[0] * xs[1]
            if op in ("vmas", "fmas"):
                p = p.astype(np.float32)
        else:
            p = xs[0]
        return np.broadcast_to(p, (n, 4))

    def _reduce_deferred(self, deferred: list[int], operand, val: dict) -> None:
        """Reductions over iterations; FMAs with (n,4) operands are grouped into one einsum."""
        if not deferred:
            return
        body = self.body
        n = self.n
        fma = [j for j in deferred if body[j].op == "vmad"]
        rest = [j for j in deferred if j not in fma]
        if fma:
            # unique operand arrays on each side
            left, right, pairs = [], [], []
            lid: dict[int, int] = {}
            rid: dict[int, int] = {}
            for j in fma:
                a, b = operand(j, 0), operand(j, 1)
                if a.ndim == 1:
                    a = np.broadcast_to(a, (n, 4))
                if b.ndim == 1:
                    b = np.broadcast_to(b, (n, 4))
                ka, kb = id(a), id(b)
                if ka not in lid:
                    lid[ka] = len(left)
                    left.append(a)
                if kb not in rid:
                    rid[kb] = len(right)
                    right.append(b)
                pairs.append((lid[ka], rid[kb]))
            L = np.stack(left)  # (na, n, 4)
            R = np.stack(right)  # (nb, n, 4)
            S = np.einsum("anl,bnl->abl", L, R, optimize=False)
            for j, (ia, ib) in zip(fma, pairs):
                r = body[j].src[2]
                val[j] = self.regs[r] + S[ia, ib]
        for j in rest:
            ins = body[j]
            ai = _addend_index(ins)
            xs = [operand(j, k) for k in range(len(ins.src)) if k != ai]
            inc = self._increment(ins.op, xs, n).sum(axis=0)
            r = ins.src[ai]
            sign = -1 if ins.op.startswith(("vsub", "fsub")) else 1
            val[j] = (self.regs[r] + sign * inc).astype(self.regs[r].dtype if ins.op not in ("vmas", "fmas") else np.float32)

    def _memory_hazard(self) -> bool:
        """True if a store of this run may write bytes a load of this run reads."""
        if not (self.plan.has_store and self.plan.has_load):
            return False
        ld, st = [], []
        for ins in self.body:
            if ins.op in LOADS or ins.op in STORES:
                a = self.addrs[ins.ptr] + ins.offset
                rng = (int(a.min()), int(a.max()) + _width(ins.op))
                (ld if ins.op in LOADS else st).append(rng)
        return any(s0 < l1 and l0 < s1 for s0, s1 in st for l0, l1 in ld)

    # -- exact iteration-by-iteration evaluation ------------------------------------------
    def run_sequential(self) -> dict[int, np.ndarray]:
        body, n = self.body, self.n
        sends: dict[int, list[np.ndarray]] = {}
        get_pos = {d: {j: k for k, j in enumerate(js)} for d, js in self.plan.gets.items()}
        regs = self.regs
        for i in range(n):
            for j, ins in enumerate(body):
                op = ins.op
                if op in LOADS:
                    a = self._address(ins)[i : i + 1]
                    v = self._load(ins, a)[0]
                    regs[ins.dst[0]] = v
                    if op in FUSED_SEND:
                        sends.setdefault(j, []).append(v)
                elif op in STORES:
                    a = self._address(ins)[i : i + 1]
                    self._store(ins, a, np.asarray(regs[ins.src[0]])[None, :])
                elif op in GETS:
                    d = "row" if op == "getr" else "col"
                    regs[ins.dst[0]] = self.inputs[d][i, get_pos[d][j]]
                elif op in PUTS:
                    sends.setdefault(j, []).append(np.array(regs[ins.src[0]]))
                elif op in FMA or op in FP_BINARY:
                    x = [np.asarray(regs[r]) if r != 31 else np.zeros(4) for r in ins.src]
                    regs[ins.dst[0]] = self._compute(op, x)
        return {j: np.stack(v) for j, v in sends.items()}
