"""Static per-CPE effects of a ``sw.kernel``: the analysis behind ``sw-check-deadlock`` and
``sw-check-dma``.

A kernel's control flow and addresses never depend on time or on data (no op reads the LDM into
an SSA value; ``backends/sim/runner.py`` relies on the same fact), only on the CPE id and the
kernel's arguments. :func:`analyze` therefore interprets the body once for all CPEs at a time
(values are Python ints when uniform, ``(n_cpes,)`` int64 arrays when they depend on the CPE id)
and counts, per CPE (spec sw26010-model.md §4.3, §5, §7):

* RLC messages delivered into every CPE's row and column receive FIFO (``putr``/``putc``: one
  target, or the other CPEs of the row/column for index ``mesh_cols``/``mesh_rows``; the fused
  ``vldr``/``vldc``/``ldder``/``lddec`` broadcast) and the ``getr``/``getc`` popping them;
* DMA completions per reply word (each ``sw.dma_get``/``sw.dma_put`` adds 1 to its issuer's reply
  word, ``sw.reply_reset`` clears it; words start at 0 at every launch) and every ``sw.dma_wait``
  against them, in program order;
* arrivals at every barrier (``sw.barrier``, ``sw.synr``, ``sw.sync``) by scope and mask;
* the static addresses of every DMA (LDM side; main memory relative to the allocation a kernel
  argument points to when every ``sw.spawn`` passes the address of a ``sw.global``/``sw.mem_alloc``).

What is not statically known stays unknown, and the analysis is conservative: kernel arguments
are unknown (except as main-memory bases), so is every value computed from them; a CPE whose path
depends on an unknown value in a region with effects is *tainted* (its counts are no longer
exact), and nothing is claimed about it or about the CPEs it could send to. Loops whose effects
do not depend on their induction variable or loop-carried values are run twice and their
counters extrapolated (counters only grow between resets, so the checks of later iterations
follow from the second one); other loops are stepped. Work is bounded by :data:`STEP_BUDGET`
op evaluations per kernel; past it, every CPE is tainted.

Results (:class:`KernelEffects`): ``blocked`` -- CPEs that must block forever, each with the op it
waits in (a ``sw.dma_wait`` whose count can never be reached, the first ``sw.getr``/``sw.getc``
popping more messages than can ever arrive, the first barrier arrival more than the other
members make); ``leftover`` -- messages that arrive but are never popped; ``dma_errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.traits import SymbolTable

from taihu.dialects import sw
from taihu.dialects.swsim import LdmAddrOp, ReplySlotOp
from taihu.dialects.target import machine_of
from taihu.target.machine import Machine

__all__ = ["DMA_GRANULE", "STEP_BUDGET", "Blocked", "DmaIssue", "KernelEffects", "analyze",
           "arg_bases", "cpe_name"]

#: most op evaluations (one per op and lane group) spent on one kernel before giving up
STEP_BUDGET = 400_000

#: bytes of the smallest element ``sw`` moves (f32 / i32, 4 B; ``sw.ldw``/``sw.ldse``): DMA sizes,
#: block sizes, gaps and addresses are multiples of it (``sw.dma_get`` verifier, sw-check-dma)
DMA_GRANULE = sw.DMA_GRANULE

ROW, COL = 0, 1
_AXIS = {"row": ROW, "col": COL}

Val = Any  # int | bool | np.ndarray | Rel | None (unknown) | a reply key (tuple)


@dataclass(frozen=True)
class Rel:
    """A main-memory address: kernel argument ``arg`` plus ``off`` bytes (int or per-CPE array)."""

    arg: int
    off: Any


@dataclass(frozen=True)
class Blocked:
    """CPEs that must block forever in ``op`` (``reason`` says why, for all of them)."""

    op: Operation
    cpes: tuple[int, ...]
    reason: str


@dataclass(frozen=True)
class DmaIssue:
    """A DMA (or RLC put) that breaks a rule on the CPEs ``cpes``."""

    op: Operation
    cpes: tuple[int, ...]
    message: str


@dataclass
class KernelEffects:
    """What :func:`analyze` found for one kernel (see the module docstring)."""

    kernel: sw.KernelOp
    machine: Machine
    blocked: list[Blocked] = field(default_factory=list)
    #: (cpe, axis "row"|"col", messages delivered, messages popped), delivered > popped
    leftover: list[tuple[int, str, int, int]] = field(default_factory=list)
    dma_errors: list[DmaIssue] = field(default_factory=list)
    exhausted: bool = False  # the step budget ran out (nothing claimed about RLC / barriers)
    steps: int = 0


def cpe_name(cpe: int, cols: int) -> str:
    """``CPE 9 (1,1)``: id and mesh (row, column), as the simulator names CPEs."""
    return f"CPE {cpe} ({cpe // cols},{cpe % cols})"


# --------------------------------------------------------------------------------------------
# integer arithmetic (the simulator's semantics, backends/sim/runner.py; None = unknown)
# --------------------------------------------------------------------------------------------


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_SCALAR: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _tdiv,
    arith.DivUIOp: lambda a, b: a // b,
    arith.RemSIOp: lambda a, b: a - b * _tdiv(a, b),
    arith.RemUIOp: lambda a, b: a % b,
    arith.FloorDivSIOp: lambda a, b: a // b,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
    arith.XOrIOp: lambda a, b: a ^ b,
    arith.ShLIOp: lambda a, b: a << b,
    arith.ShRSIOp: lambda a, b: a >> b,
}
_VECTOR: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: np.add,
    arith.SubiOp: np.subtract,
    arith.MuliOp: np.multiply,
    arith.DivSIOp: lambda a, b: np.fix(np.true_divide(a, b)).astype(np.int64),
    arith.DivUIOp: np.floor_divide,
    arith.RemSIOp: np.fmod,
    arith.RemUIOp: np.mod,
    arith.FloorDivSIOp: np.floor_divide,
    arith.MinSIOp: np.minimum,
    arith.MaxSIOp: np.maximum,
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    arith.ShLIOp: np.left_shift,
    arith.ShRSIOp: np.right_shift,
}
_DIVS = (arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp, arith.FloorDivSIOp)
_SHIFTS = (arith.ShLIOp, arith.ShRSIOp)
_CMP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
        np.less, np.less_equal, np.greater, np.greater_equal]
_CASTS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
_BARRIERS = (sw.BarrierOp, sw.SynrOp, sw.SyncOp)
_DMAS = (sw.DmaGetOp, sw.DmaPutOp)
_EFFECT_OPS = (sw.DmaGetOp, sw.DmaPutOp, sw.DmaWaitOp, sw.ReplyResetOp, *_BARRIERS)
_RLC_KINDS = frozenset({"rlc_put", "rlc_get", "load_send"})


def _binary(t: type[Operation], a: Val, b: Val) -> Val:
    if a is None or b is None:
        return None
    if type(a) is Rel or type(b) is Rel:
        if t is arith.AddiOp and (type(a) is Rel) != (type(b) is Rel):
            r, k = (a, b) if type(a) is Rel else (b, a)
            return Rel(r.arg, r.off + k)
        if t is arith.SubiOp and type(a) is Rel and type(b) is not Rel:
            return Rel(a.arg, a.off - b)
        return None
    if not isinstance(a, (int, np.ndarray)) or not isinstance(b, (int, np.ndarray)):
        return None  # a reply word used as an integer (not valid IR)
    vec = isinstance(a, np.ndarray) or isinstance(b, np.ndarray)
    if t in _DIVS and (np.any(b == 0) if vec else b == 0):
        return None  # the simulator refuses it at run time
    if t in _SHIFTS and (np.any((b < 0) | (b >= 64)) if vec else not 0 <= b < 64):
        return None
    if vec:
        with np.errstate(all="ignore"):
            return _VECTOR[t](a, b)
    return _SCALAR[t](int(a), int(b))


def _const(v: Val) -> Val:
    """``v`` as an int when every lane holds the same value."""
    if isinstance(v, np.ndarray) and v.size and (v == v[0]).all():
        return int(v[0]) if v.dtype != bool else bool(v[0])
    return v


# --------------------------------------------------------------------------------------------
# host side: what the kernel arguments point to
# --------------------------------------------------------------------------------------------


def _host_base(v: SSAValue, module: ModuleOp) -> tuple[int, int, str] | None:
    """(allocation bytes, offset, name) of a host value ``sw.global_addr`` / ``sw.mem_alloc``
    plus constants, or None."""
    off = 0
    while True:
        owner = v.owner
        if isinstance(owner, arith.AddiOp):
            lhs, rhs = sw._const_int(owner.lhs), sw._const_int(owner.rhs)
            if rhs is not None:
                off, v = off + rhs, owner.lhs
                continue
            if lhs is not None:
                off, v = off + lhs, owner.rhs
                continue
            return None
        if isinstance(owner, sw.GlobalAddrOp):
            sym = SymbolTable.lookup_symbol(module, owner.global_name)
            if not isinstance(sym, sw.GlobalOp):
                return None
            return sym.nbytes, off, f"@{sym.sym_name.data}"
        if isinstance(owner, sw.MemAllocOp):
            return owner.bytes.value.data, off, "sw.mem_alloc"
        return None


def arg_bases(module: ModuleOp) -> dict[str, list[tuple[int, int, str] | None]]:
    """Per kernel name, per argument: (allocation bytes, offset, name) when every ``sw.spawn``
    of the kernel passes the same allocation at the same offset, else None. Allocations are
    ``mem_txn_bytes``-aligned (``sw.global``, ``sw.mem_alloc``)."""
    seen: dict[str, list[tuple[int, int, str] | None]] = {}
    for op in module.walk():
        if not isinstance(op, sw.SpawnOp):
            continue
        name = op.kernel.root_reference.data
        bases = [_host_base(a, module) for a in op.args]
        old = seen.get(name)
        seen[name] = bases if old is None else [a if a == b else None for a, b in zip(old, bases)]
    return seen


# --------------------------------------------------------------------------------------------
# the interpreter
# --------------------------------------------------------------------------------------------


class _Budget(Exception):
    pass


class _Kernel:
    """One interpretation of a kernel body for all CPEs (see :func:`analyze`)."""

    def __init__(self, kernel: sw.KernelOp, m: Machine, bases: Sequence[tuple[int, int, str] | None],
                 limits: dict[str, Any] | None, effectful: dict[Operation, bool],
                 mk_info: dict[Operation, Any], invariant: dict[Operation, bool],
                 ldm_base: dict[sw.LdmAllocOp, int], dma_root: dict[Operation, tuple[int, int] | None],
                 issues: dict[Operation, DmaIssue] | None) -> None:
        self.k = kernel
        self.m = m
        n = self.n = m.n_cpes
        self.cols, self.rows = m.mesh_cols, m.mesh_rows
        ids = np.arange(n, dtype=np.int64)
        self.ids, self.row, self.col = ids, ids // self.cols, ids % self.cols
        self.bases = bases
        self.limits = limits  # None: counting pass; else the bounds of the blocking pass
        self.exact = limits is not None  # step every loop (locates the blocking op)
        self.effectful, self.mk_info, self.invariant = effectful, mk_info, invariant
        self.ldm_base, self.dma_root = ldm_base, dma_root
        self.issues = issues
        self.cnt: dict[Any, np.ndarray] = {}
        self.rlc_in = np.zeros((2, n), dtype=np.int64)
        self.rlc_get = np.zeros((2, n), dtype=np.int64)
        self.bar: dict[tuple, np.ndarray] = {}
        self.taint = np.zeros(n, dtype=bool)
        self.alive = np.ones(n, dtype=bool)
        self.blocked: dict[int, tuple[Operation, str]] = {}
        self.steps = 0
        self.exhausted = False
        self.env: dict[SSAValue, Val] = {}

    # -- helpers ------------------------------------------------------------------------------
    def _block(self, lanes: np.ndarray, op: Operation, reason: Callable[[int], str]) -> None:
        for c in np.flatnonzero(lanes):
            self.blocked[int(c)] = (op, reason(int(c)))
        self.alive &= ~lanes

    def _counters(self) -> tuple:
        return ({k: v.copy() for k, v in self.cnt.items()}, self.rlc_in.copy(), self.rlc_get.copy(),
                {k: v.copy() for k, v in self.bar.items()})

    def _issue(self, op: Operation, lanes: np.ndarray, message: str) -> None:
        if self.issues is not None and op not in self.issues and lanes.any():
            self.issues[op] = DmaIssue(op, tuple(int(c) for c in np.flatnonzero(lanes)), message)

    # -- blocks -------------------------------------------------------------------------------
    def run(self) -> None:
        env = self.env
        for i, a in enumerate(self.k.body.block.args):
            env[a] = Rel(i, 0) if i < len(self.bases) and self.bases[i] is not None else None
        try:
            self.block(self.k.body.block.ops, self.alive.copy())
        except _Budget:
            self.taint[:] = True
            self.exhausted = True

    def block(self, ops: Any, mask: np.ndarray) -> list[Val] | None:
        env = self.env
        for op in ops:
            self.steps += 1
            if self.steps > STEP_BUDGET:
                raise _Budget
            t = type(op)
            if t is arith.ConstantOp:
                v = op.value
                env[op.results[0]] = v.value.data if isinstance(v, IntegerAttr) else None
            elif t in _SCALAR:
                env[op.results[0]] = _binary(t, env.get(op.operands[0]), env.get(op.operands[1]))
            elif t is arith.CmpiOp:
                a, b = env.get(op.operands[0]), env.get(op.operands[1])
                ok = isinstance(a, (int, np.ndarray)) and isinstance(b, (int, np.ndarray))
                r = _CMP[op.predicate.value.data](a, b) if ok else None
                env[op.results[0]] = bool(r) if isinstance(r, np.bool_) else r
            elif t is arith.SelectOp:
                c, a, b = (env.get(x) for x in op.operands)
                if c is None or a is None or b is None or type(a) is Rel or type(b) is Rel:
                    env[op.results[0]] = a if a is b else None
                elif isinstance(c, np.ndarray):
                    env[op.results[0]] = _const(np.where(c, a, b))
                else:
                    env[op.results[0]] = a if c else b
            elif t in _CASTS:
                env[op.results[0]] = env.get(op.operands[0])
            elif t is sw.CpeIdOp:
                env[op.results[0]] = self.ids
            elif t is sw.RowIdOp:
                env[op.results[0]] = self.row
            elif t is sw.ColIdOp:
                env[op.results[0]] = self.col
            elif t is LdmAddrOp:
                env[op.results[0]] = op.address.value.data
            elif t is sw.LdmAllocOp:
                env[op.results[0]] = self.ldm_base.get(op)
            elif t is ReplySlotOp:
                env[op.results[0]] = ("slot", op.slot.value.data)
            elif t is sw.ReplyAllocOp:
                env[op.results[0]] = ("alloc", id(op))
            elif t is scf.YieldOp:
                return [env.get(a) for a in op.operands]
            elif t is scf.IfOp:
                self.if_(op, mask)
            elif t is scf.ForOp:
                self.for_(op, mask)
            elif t is sw.MicrokernelOp:
                if op in self.mk_info:
                    self.microkernel(op, mask)
            elif t in _DMAS:
                self.dma(op, mask)
            elif t is sw.DmaWaitOp:
                self.wait(op, mask)
            elif t is sw.ReplyResetOp:
                key = env.get(op.operands[0])
                if key is not None:
                    self.cnt.setdefault(key, np.zeros(self.n, dtype=np.int64))[mask & self.alive] = 0
                else:
                    self.taint |= mask
            elif t in _BARRIERS:
                self.barrier(op, mask)
            else:  # an op the analysis does not know: unknown results, tainted if it has effects
                for r in op.results:
                    env[r] = None
                if op.regions and self.effectful.get(op, True):
                    self.taint |= mask
        return None

    # -- control flow -------------------------------------------------------------------------
    def if_(self, op: scf.IfOp, mask: np.ndarray) -> None:
        env = self.env
        c = env.get(op.cond)
        eff = self.effectful[op]
        if isinstance(c, np.ndarray):
            live = mask & self.alive
            if not (c & live).any():
                c = False
            elif not (~c & live).any():
                c = True
        if c is None or not isinstance(c, (bool, int, np.ndarray)):
            if eff:
                self.taint |= mask
            for r in op.results:
                env[r] = None
            return
        if not isinstance(c, np.ndarray):
            region = op.true_region if c else op.false_region
            ys = self.block(region.block.ops, mask) if region.blocks else None
            for r, y in zip(op.results, ys or [None] * len(op.results)):
                env[r] = y
            return
        yt = self.block(op.true_region.block.ops, mask & c) if op.true_region.blocks else None
        ye = self.block(op.false_region.block.ops, mask & ~c) if op.false_region.blocks else None
        for i, r in enumerate(op.results):
            a = yt[i] if yt else None
            b = ye[i] if ye else None
            ok = isinstance(a, (int, np.ndarray)) and isinstance(b, (int, np.ndarray))
            env[r] = _const(np.where(c, a, b)) if ok else None

    def for_(self, op: scf.ForOp, mask: np.ndarray) -> None:
        env = self.env
        results = op.results
        if not self.effectful[op]:
            for r in results:
                env[r] = None
            return
        lb: Any = env.get(op.lb)
        ub: Any = env.get(op.ub)
        st: Any = env.get(op.step)
        if not all(isinstance(x, (int, np.ndarray)) for x in (lb, ub, st)) or np.any(st <= 0):
            self.taint |= mask  # unknown bounds, or a step the simulator refuses
            for r in results:
                env[r] = None
            return
        with np.errstate(all="ignore"):
            trips = _const(np.maximum(-(-(np.asarray(ub) - lb) // st), 0))
        body = op.body.block
        iv, bargs = body.args[0], body.args[1:]
        carried = [env.get(a) for a in op.iter_args]
        uniform = not isinstance(trips, np.ndarray)
        n_iter = int(trips) if uniform else int(trips[mask].max(initial=0))
        fast = uniform and n_iter > 2 and not self.exact and self.invariant[op]
        before = None
        for k in range(2 if fast else n_iter):
            act = mask if uniform else mask & (trips > k)
            if not (act & self.alive).any():
                break
            if fast and k == 1:
                before = self._counters()
            env[iv] = _const(lb + k * st) if isinstance(lb, np.ndarray) or isinstance(st, np.ndarray) \
                else lb + k * st
            for a, v in zip(bargs, carried):
                env[a] = v
            ys = self.block(body.ops, act) or []
            if uniform:
                carried = list(ys)
            else:
                carried = [_const(np.where(act, y, c)) if isinstance(y, (int, np.ndarray)) and
                           isinstance(c, (int, np.ndarray)) else None for y, c in zip(ys, carried)]
        if fast and before is not None:
            self._extrapolate(before, mask, n_iter - 2)
            carried = [None] * len(carried)
        for r, v in zip(results, carried):
            env[r] = v

    def _extrapolate(self, before: tuple, mask: np.ndarray, times: int) -> None:
        """Repeat the last iteration's counter increments ``times`` more times (an
        iteration-invariant loop; lanes that blocked in it keep their counters)."""
        cnt0, in0, get0, bar0 = before
        own = (mask & self.alive).astype(np.int64) * times
        for key, v in self.cnt.items():
            old = cnt0.get(key)
            d = v - (0 if old is None else old)
            # a word reset in the body reaches the same value every iteration (d = 0 then)
            v += np.where(d > 0, d, 0) * own
        self.rlc_in += (self.rlc_in - in0) * times
        self.rlc_get += (self.rlc_get - get0) * own
        for key, v in self.bar.items():
            old = bar0.get(key)
            v += (v - (0 if old is None else old)) * own

    # -- effects ------------------------------------------------------------------------------
    def microkernel(self, op: sw.MicrokernelOp, mask: np.ndarray) -> None:
        puts, gets, order, body_len = self.mk_info[op]
        trip = op.trip
        if trip == 0:
            return
        live = mask & self.alive
        if not live.any():
            return
        if self.limits is not None and any(gets):
            # (a CPE blocked inside the run is counted with all of its puts: an upper bound)
            self._get_limits(op, live, gets, order, body_len, trip)
        for (axis, dst, ins), k in puts.items():
            total = k * trip
            if axis == ROW:
                own, other, size, line = self.col, self.row, self.cols, self.rows
            else:
                own, other, size, line = self.row, self.col, self.rows, self.cols
            if dst == size:  # broadcast to the other CPEs of the row / column
                per_line = np.bincount(other[live], minlength=line) * total
                self.rlc_in[axis] += per_line[other] - live * total
                continue
            bad = live & (own == dst)
            if bad.any():
                what = "column" if axis == ROW else "row"
                self._issue(ins, bad, f"{ins.name} {dst}: sends to the CPE's own {what} {dst} (RLC targets "
                            "another CPE of the same row/column, spec §5 rule 2)")
            ok = live & (own != dst)
            tgt = other * self.cols + dst if axis == ROW else dst * self.cols + other
            self.rlc_in[axis] += np.bincount(tgt[ok], minlength=self.n) * total
        live &= self.alive
        for axis in (ROW, COL):
            if gets[axis]:
                self.rlc_get[axis][live] += gets[axis] * trip

    def _get_limits(self, op: sw.MicrokernelOp, live: np.ndarray, gets: tuple[int, int],
                    order: tuple, body_len: int, trip: int) -> None:
        """Blocking pass: block the CPEs whose gets in this run exceed what can arrive, at the
        first get that finds no message (its position in the run decides between axes)."""
        assert self.limits is not None
        first: dict[int, tuple[int, Operation, int, int, int]] = {}
        for axis in (ROW, COL):
            g = gets[axis]
            if not g:
                continue
            lim = self.limits["get"][axis]
            have = self.rlc_get[axis]
            over = live & ~self.limits["unknown_in"][axis] & (have + g * trip > lim)
            for c in np.flatnonzero(over):
                j = int(lim[c] - have[c])  # index (in this run) of the get that finds nothing
                it, nth = divmod(max(j, 0), g)
                pos, ins = [(p, i) for a, p, i in order if a == axis][nth]
                key = it * body_len + pos
                if int(c) not in first or key < first[int(c)][0]:
                    first[int(c)] = (key, ins, axis, int(lim[c]), int(have[c]) + j + 1)
        for c_, (_, ins, axis, lim_c, nth_get) in first.items():
            fifo = "row" if axis == ROW else "column"
            self.blocked[c_] = (ins, f"{ins.name} number {nth_get} on its {fifo} FIFO, which receives "
                                f"at most {lim_c} message(s)")
            self.alive[c_] = False

    def dma(self, op: sw.DmaGetOp | sw.DmaPutOp, mask: np.ndarray) -> None:
        env = self.env
        live = mask & self.alive
        key = env.get(op.reply)
        if key is None:
            self.taint |= mask
        elif live.any():
            self.cnt.setdefault(key, np.zeros(self.n, dtype=np.int64))[live] += 1
        if self.issues is None or not live.any() or op in self.issues:
            return
        size = op.size.value.data
        mode = op.dma_mode
        if mode == sw.DmaMode.ROW:
            self._issue(op, live, f"{op.name}: mode row is not modelled (the simulator runs pe and bcast "
                        "transfers; spec §10: row-distributed modes are out of scope)")
            return
        ldm = env.get(op.ldm)
        if isinstance(ldm, (int, np.ndarray)):
            a = np.asarray(ldm)
            lim = self.m.ldm_bytes
            bad = live & ((a < 0) | (a + size > lim))
            if bad.any():
                c = int(np.flatnonzero(bad)[0])
                at = int(a if a.ndim == 0 else a[c])
                self._issue(op, bad, f"{op.name}: {size} B at LDM address {at} exceed the "
                            f"{lim}-byte LDM (spec §4.3 rule 8)")
                return
            root = self.dma_root.get(op)
            if root is not None:
                base, nbytes = root
                bad = live & ((a < base) | (a + size > base + nbytes))
                if bad.any():
                    c = int(np.flatnonzero(bad)[0])
                    at = int(a if a.ndim == 0 else a[c])
                    self._issue(op, bad, f"{op.name}: {size} B at LDM offset {at - base} overrun "
                                f"their {nbytes}-byte LDM buffer (spec §4.3 rule 8)")
                    return
            bad = live & (a % DMA_GRANULE != 0)
            if bad.any():
                c = int(np.flatnonzero(bad)[0])
                at = int(a if a.ndim == 0 else a[c])
                self._issue(op, bad, f"{op.name}: LDM address {at} is not a multiple of {DMA_GRANULE} B "
                            "(DMA moves whole 4-byte words)")
                return
        mem = env.get(op.mem)
        if type(mem) is Rel and isinstance(mem.off, (int, np.ndarray)):
            known = self.bases[mem.arg]
            assert known is not None  # Rel only for arguments with a known base
            nbytes, host_off, name = known
            off = np.asarray(mem.off) + host_off
            bsize = sw._int(op.bsize) or 0
            stride = sw._int(op.stride) or 0
            ext = size if not bsize else (size // bsize - 1) * (bsize + stride) + bsize
            bad = live & ((off < 0) | (off + ext > nbytes))
            if bad.any():
                c = int(np.flatnonzero(bad)[0])
                at = int(off if off.ndim == 0 else off[c])
                self._issue(op, bad, f"{op.name}: main-memory bytes [{at}, {at + ext}) of {name} lie "
                            f"outside its {nbytes} bytes (spec §4.3 rule 8)")
                return
            bad = live & (off % DMA_GRANULE != 0)
            if bad.any():
                c = int(np.flatnonzero(bad)[0])
                at = int(off if off.ndim == 0 else off[c])
                self._issue(op, bad, f"{op.name}: main-memory address {name} + {at} is not a multiple "
                            f"of {DMA_GRANULE} B (DMA moves whole 4-byte words)")

    def wait(self, op: sw.DmaWaitOp, mask: np.ndarray) -> None:
        env = self.env
        key = env.get(op.reply)
        n = op.count.value.data if op.count is not None else \
            env.get(op.count_val) if op.count_val is not None else None
        if key is None or not isinstance(n, (int, np.ndarray)):
            return
        have = self.cnt.get(key)
        if have is None:
            have = self.cnt[key] = np.zeros(self.n, dtype=np.int64)
        stuck = mask & self.alive & ~self.taint & (have < n)
        if stuck.any():
            need = np.broadcast_to(np.asarray(n), (self.n,))
            word = op.reply.name_hint or "reply"
            self._block(stuck, op, lambda c: f"sw.dma_wait %{word}, {int(need[c])}: its DMAs complete "
                        f"{int(have[c])} time(s) before it")

    def barrier(self, op: Operation, mask: np.ndarray) -> None:
        live = mask & self.alive
        if not live.any():
            return
        if isinstance(op, sw.BarrierOp):
            scope = op.scope.data.value
        else:
            scope = "row" if isinstance(op, sw.SynrOp) else "col"
        mk = sw._int(op.mask)  # type: ignore[attr-defined]
        if scope == "array":
            key: tuple = ("array", None if mk in (None, 0xFF, 0xFFFF, 0xFFFFFFFFFFFFFFFF) else mk)
        else:
            key = (scope, 0xFF if mk is None else mk)
        v = self.bar.setdefault(key, np.zeros(self.n, dtype=np.int64))
        if self.limits is not None:
            lim = self.limits["bar"].get(key)
            if lim is not None:
                over = live & (v + 1 > lim)
                if over.any():
                    self._block(over, op, lambda c: f"{op.name} arrival number {int(v[c]) + 1}: another "
                                f"member arrives at most {int(lim[c])} time(s)")
                    live = mask & self.alive
        v[live] += 1


# --------------------------------------------------------------------------------------------
# precomputation
# --------------------------------------------------------------------------------------------


def _mk_summary(op: sw.MicrokernelOp, m: Machine) -> tuple | None:
    """RLC effects of one iteration: puts {(axis, dst, first op): count}, gets (row, col), the
    gets in body order [(axis, position, op)], the body length; None without RLC."""
    puts: dict[tuple[int, int, Operation], int] = {}
    gets = [0, 0]
    order = []
    seen: dict[tuple[int, int], Operation] = {}
    ops = op.body.block.ops
    n = 0
    for pos, ins in enumerate(ops):
        n += 1
        if getattr(type(ins), "KIND", None) not in _RLC_KINDS:
            continue
        info = ins.rlc()  # type: ignore[attr-defined]
        axis = _AXIS[info.axis]
        if info.role == "get":
            gets[axis] += 1
            order.append((axis, pos, ins))
        else:
            dst = info.dst if info.dst is not None else 8
            if dst == 8:  # broadcast: the fused sends use 8 (spec §5 rule 2)
                dst = m.mesh_cols if axis == ROW else m.mesh_rows
            first = seen.setdefault((axis, dst), ins)
            puts[(axis, dst, first)] = puts.get((axis, dst, first), 0) + 1
    if not puts and not any(gets):
        return None
    return puts, (gets[0], gets[1]), tuple(order), n


def _precompute(kernel: sw.KernelOp, m: Machine) -> tuple[dict, dict, dict]:
    """Per op: has effects; per RLC micro-kernel: its summary; per effectful scf.for: its
    effects do not depend on the induction variable or loop-carried values."""
    effectful: dict[Operation, bool] = {}
    mk_info: dict[Operation, Any] = {}

    def visit(op: Operation) -> bool:
        if isinstance(op, sw.MicrokernelOp):
            s = _mk_summary(op, m)
            if s is not None:
                mk_info[op] = s
            return s is not None
        if isinstance(op, _EFFECT_OPS):
            return True
        if not op.regions:
            return False
        e = False
        for region in op.regions:
            for block in region.blocks:
                for o in block.ops:
                    e = visit(o) or e
        effectful[op] = e
        return e

    for o in kernel.body.block.ops:
        visit(o)
    invariant: dict[Operation, bool] = {}
    for op, e in effectful.items():
        if e and isinstance(op, scf.ForOp):
            invariant[op] = _invariant(op, effectful)
    return effectful, mk_info, invariant


def _invariant(loop: scf.ForOp, effectful: dict[Operation, bool]) -> bool:
    """No effect-relevant operand (the condition or bounds of a region with effects, a wait
    count, a reply word) depends on the loop's induction variable or carried values."""
    dep: set[SSAValue] = set(loop.body.block.args)

    def walk(ops: Any) -> bool:
        for op in ops:
            if isinstance(op, sw.MicrokernelOp):
                continue  # static trip count; its pointers only address data
            touched = any(o in dep for o in op.operands)
            if touched:
                if isinstance(op, (sw.DmaWaitOp, sw.ReplyResetOp)):
                    return False
                if isinstance(op, _DMAS) and op.reply in dep:
                    return False
                if isinstance(op, scf.IfOp) and effectful.get(op, False) and op.cond in dep:
                    return False
                if isinstance(op, scf.ForOp) and effectful.get(op, False) and \
                        any(v in dep for v in (op.lb, op.ub, op.step)):
                    return False
            if not op.regions:
                if touched:
                    dep.update(op.results)
                continue
            if touched and isinstance(op, scf.ForOp):
                dep.update(op.body.block.args)
            for region in op.regions:
                for block in region.blocks:
                    if not walk(block.ops):
                        return False
            yields = any(o in dep for region in op.regions for block in region.blocks
                         for y in block.ops if isinstance(y, scf.YieldOp) for o in y.operands)
            if touched or yields:
                dep.update(op.results)
        return True

    return walk(loop.body.block.ops)


def _ldm_roots(kernel: sw.KernelOp) -> tuple[dict[sw.LdmAllocOp, int],
                                               dict[Operation, tuple[int, int] | None]]:
    """LDM address of every ``sw.ldm_alloc`` (the kernel's bump layout) and, per DMA, the
    buffer (base, bytes) its LDM operand points into when it is the buffer plus offsets."""
    base = {s.op: s.offset for s in kernel.ldm_layout()}
    roots: dict[Operation, tuple[int, int] | None] = {}
    for op in sw.walk_control(kernel):
        if not isinstance(op, _DMAS):
            continue
        v = op.ldm
        root = None
        for _ in range(64):
            owner = v.owner
            if isinstance(owner, LdmAddrOp):
                root = (owner.address.value.data, owner.bytes.value.data)
                break
            if isinstance(owner, sw.LdmAllocOp):
                root = (base[owner], owner.bytes.value.data)
                break
            if isinstance(owner, (arith.AddiOp, arith.SubiOp)):
                ls, rs = _ldm_derived(owner.lhs), _ldm_derived(owner.rhs)
                if ls and not rs:
                    v = owner.lhs
                    continue
                if rs and not ls and isinstance(owner, arith.AddiOp):
                    v = owner.rhs
                    continue
            break
        roots[op] = root
    return base, roots


def _ldm_derived(v: SSAValue) -> bool:
    """``v`` is an LDM buffer or computed from one by additions."""
    for _ in range(64):
        owner = v.owner
        if isinstance(owner, (LdmAddrOp, sw.LdmAllocOp)):
            return True
        if isinstance(owner, (arith.AddiOp, arith.SubiOp)):
            if _ldm_derived(owner.lhs):
                return True
            v = owner.rhs
            continue
        return False
    return False


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def analyze(kernel: sw.KernelOp, bases: Sequence[tuple[int, int, str] | None] = (),
            dma: bool = True) -> KernelEffects:
    """The static effects of ``kernel`` (module docstring). ``bases``: per kernel argument, the
    allocation it points to (:func:`arg_bases`); ``dma``: also check the DMA addresses.
    Raises ``MachineConfigError`` for an invalid machine description."""
    m = machine_of(kernel)
    effectful, mk_info, invariant = _precompute(kernel, m)
    ldm_base, roots = _ldm_roots(kernel)
    issues: dict[Operation, DmaIssue] | None = {} if dma else None
    out = KernelEffects(kernel, m)

    def once(limits: dict[str, Any] | None, keep_issues: bool) -> _Kernel:
        k = _Kernel(kernel, m, bases, limits, effectful, mk_info, invariant, ldm_base, roots,
                    issues if keep_issues else None)
        k.run()
        out.steps += k.steps
        return k

    first = once(None, True)
    if issues:
        out.dma_errors = list(issues.values())
    out.exhausted = first.exhausted
    cur = first
    blocked = dict(first.blocked)
    for _ in range(m.n_cpes):  # each round: blocks certain given the previous round's blocks
        limits = _limits(cur, m)
        if limits is None:
            break
        nxt = once(limits, False)
        new = {c: b for c, b in nxt.blocked.items() if c not in blocked}
        blocked.update(new)
        cur = nxt
        if not new:
            break
    out.blocked = _group(blocked)
    if not blocked:
        out.leftover = _leftover(first, m)
    return out


def _unknown_senders(k: _Kernel, m: Machine) -> np.ndarray:
    """(2, n): the CPEs whose row / column FIFO some tainted CPE may send to."""
    rows_t = np.bincount(k.row[k.taint], minlength=m.mesh_rows) > 0
    cols_t = np.bincount(k.col[k.taint], minlength=m.mesh_cols) > 0
    return np.stack([rows_t[k.row], cols_t[k.col]])


def _limits(k: _Kernel, m: Machine) -> dict[str, Any] | None:
    """Bounds for the blocking pass, or None when no CPE exceeds one: per axis the messages that
    can reach each FIFO, per barrier key the arrivals of the other members."""
    unknown_in = _unknown_senders(k, m)
    ok = ~k.taint
    over = False
    for axis in (ROW, COL):
        if (ok & ~unknown_in[axis] & (k.rlc_get[axis] > k.rlc_in[axis])).any():
            over = True
    bar_lim: dict[tuple, np.ndarray] = {}
    for key, v in k.bar.items():
        lim = np.full(k.n, np.iinfo(np.int64).max, dtype=np.int64)
        for c in range(k.n):
            if k.taint[c]:
                continue
            members = _members(key, c, m)
            if c not in members or k.taint[members].any():
                continue
            others = [x for x in members if x != c]
            if others:
                lim[c] = int(v[others].min())
                if v[c] > lim[c]:
                    over = True
        bar_lim[key] = lim
    if not over:
        return None
    return {"get": k.rlc_in, "unknown_in": unknown_in | k.taint[None, :], "bar": bar_lim}


def _members(key: tuple, c: int, m: Machine) -> list[int]:
    cols = m.mesh_cols
    scope, mk = key
    if scope == "array":
        return [x for x in range(m.n_cpes) if mk is None or (mk >> (x // cols)) & 1]
    r, col = divmod(c, cols)
    if scope == "row":
        return [r * cols + j for j in range(cols) if (mk >> j) & 1]
    return [i * cols + col for i in range(m.mesh_rows) if (mk >> i) & 1]


def _group(blocked: dict[int, tuple[Operation, str]]) -> list[Blocked]:
    by_op: dict[tuple[int, str], list[int]] = {}
    ops: dict[int, Operation] = {}
    for c, (op, why) in sorted(blocked.items()):
        by_op.setdefault((id(op), why), []).append(c)
        ops[id(op)] = op
    return [Blocked(ops[i], tuple(cs), why) for (i, why), cs in by_op.items()]


def _leftover(k: _Kernel, m: Machine) -> list[tuple[int, str, int, int]]:
    unknown_in = _unknown_senders(k, m)
    out = []
    for axis, name in ((ROW, "row"), (COL, "col")):
        extra = ~k.taint & ~unknown_in[axis] & (k.rlc_in[axis] > k.rlc_get[axis])
        for c in np.flatnonzero(extra):
            out.append((int(c), name, int(k.rlc_in[axis][c]), int(k.rlc_get[axis][c])))
    return out

