"""``loop.map`` -> SW-64 register micro-kernels on one CPE's LDM buffers (part of
``convert-loop-to-sw``).

Entry point (called by :class:`KernelLowering` for every ``loop.map``)::

    lower_map(op: loop.MapOp, addr: Callable[[SSAValue], SSAValue], machine: Machine) -> list[Operation]

returns the ops to insert before ``op`` (in order) that compute it; ``addr(v)`` is the i64 LDM
byte address of the buffer operand ``v`` (defined at the insertion point); ``machine`` is the
module's target (:func:`taihu.dialects.target.machine_of`), whose instruction table schedules
the bodies. The result is a few
``sw.microkernel`` runs, ``arith`` i64 address arithmetic and, only for outer dimensions that
cannot be folded into micro-kernel pointer strides, ``scf.for`` loops (the simulator pays Python
time per micro-kernel run, so the lowering prefers few, long runs).

Structure: every kind is an *iteration nest* over output elements (:func:`_nest`): per buffer an
access with one byte stride per nest dimension (0 = broadcast), plus a *unit program* written
once with virtual registers (:class:`Unit`). Adjacent dimensions that are contiguous for every
access are merged; the innermost dimension is processed in *vector units* (4 elements: VLDD/VLDS,
LDDE/LDSE for broadcast operands, VSTD/VSTS) when every access is contiguous or broadcast along it
and 32-B (f64) / 16-B (f32) aligned, else in *packed units* (4 elements loaded one by one with
LDDE/LDSE and moved into lanes with VINSF, stored lane by lane with VEXTF + FSTD/FSTS) when the
unit's arithmetic outweighs the lane moves (:func:`_packing_pays`), else in *scalar units*
(LDDE/LDSE replicate one element, FSTD/FSTS store lane 0). A micro-kernel body holds several
units (disjoint register sets, at most UNITS_MAX beyond one row) and is list-scheduled for the
dual-issue P0/P1 pipeline (:func:`_schedule`), so independent units hide the 7-cycle fp latency
(004 L530-532); it iterates either the innermost dimension or, when one row of units fits a body,
the next outer one. Scheduled bodies are cached (a network repeats a few bodies many times).

Buffers may be processed past their logical end up to the next 32-B boundary (vector tails of a
flat buffer): ``loop.ldm_buffer`` slots are rounded up to 32 B (dialects/loop.py), so those bytes
belong to the buffer.

Kinds (mapkind.py; f32 data are widened by the loads and computed with the fp64 instructions, the
stores round once, so add/sub/mul are correctly rounded; divides and square roots of f32 nests use
the shorter fp32 VDIVS/VSQRTS of the non-pipelined divide unit):

* copy / convert / fill / transpose: loads + stores (a transpose is a strided copy nest).
* relu = VFSELLT x, 0, x; leaky_relu = VFSELLT x, alpha*x, x; clip / max = VFCMPLT + VFSELEQ.
* add / sub / mul / div / affine (one VMAD): numpy broadcasting = stride-0 accesses.
* sqrt: VSQRTD (VSQRTS for f32 nests); erf: Abramowitz & Stegun 7.1.26 on ``|x|`` (a reciprocal,
  a degree-5 polynomial by VMADs, ``exp(-x^2)`` as below; |error| <= 1.5e-7), the sign restored
  by a select.
* sigmoid / tanh / softmax: ``exp`` is a degree-6 Taylor polynomial of VMADs (swDNN's Taylor exp,
  004 L1352; spec sw26010-model.md L222) with range reduction by multiplications only:
  ``exp(x) = p(x / 2^k)^(2^k)`` for ``x`` in ``[-X, 0]`` (``X`` = 87, k = 10 for f32 data; 708,
  13 for f64: |relative error| < 1e-7; Horner in x with coefficients 2^(-jk)/j!), evaluated on
  ``-|x|`` only (sigmoid(x) = s or t*s with
  t = exp(-|x|), s = 1/(1+t); tanh|x| = (1-t)/(1+t) with t = exp(-2|x|)), so it never overflows.
* max_pool / avg_pool / reduce_sum / reduce_max / reduce_mean: per output element a list of taps
  (byte offsets) combined with 1..8 partial accumulators (more when few outputs share a body);
  pools with ``pads`` skip the taps outside the input (one nest per distinct clipped window:
  the boundary outputs, then the interior);
  more than ``TAP_CHUNK`` taps are combined over several runs with the output element as
  accumulator; taps contiguous and aligned along a row are combined 4 per vector, then across
  the lanes (VEXTF).
* softmax along ``axis`` (length L): max into y[.., L-1], y = exp(x - max) for the main taps,
  1 / sum into y[.., L-2], y *= 1/sum, then the last taps (5 runs of nests over the rows).
* lrn: square sums over the clipped channel window (one nest per distinct window; one nest in
  the halo form, whose input holds the window's neighbours of the first/last channels), ``d^beta``
  with SQRT/MUL for beta in {0.25, 0.5, ..., 2} (``d^-beta`` = 1 / product), else a diagnostic.
* loop-only kinds of tile_to_loop/mem_prims.py: im2col (per tap row a strided copy nest over the
  valid outputs + zero-fill nests for the padding), winograd_filter / winograd_input /
  winograd_output (F(2x2, 3x3) transforms as +-1 adds and VMADs; input/output tiles in vector
  units along the channels, one nest per run of tiles with the same clipping).

Registers (fixed allocation, every map clobbers r0..r30): the constants of a nest live in r30,
r29, ... (loaded by a trip-1 micro-kernel of ``sw.ldfi`` before the nest); unit register sets are
r0.. upward (unit j of a body uses ``j*S .. j*S+S-1``, S = registers of the unit program after
linear-scan allocation); r31 reads 0 (004 L821).

Errors: ``DiagnosticException`` naming the op (``lrn`` with an unsupported beta, an output that
aliases an input for kinds that read inputs after writing outputs).
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f64, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import loop, sw
from taihu.dialects.mapkind import MapKind
from taihu.target.machine import Machine

__all__ = ["lower_map", "BODY_MAX", "TAP_CHUNK"]

#: maximum instructions per micro-kernel body (bodies are timed once and cached; the numerics
#: cost per run grows with the body)
BODY_MAX = 384
#: units per body beyond a row: 8 independent vectors nearly hide the 7-cycle fp latency (004
#: L530; relu 0.59 cycles/element vs 0.50 with 16); more only lengthen the body, i.e. IR size
#: (lowering time) and simulator work per run
UNITS_MAX = 8
#: scheduled micro-kernel bodies (instruction classes and properties) by everything a body
#: depends on, the machine included: a memo of a pure function, bounded to 1024 entries
_BODY_CACHE: dict[tuple, list] = {}
#: maximum taps combined per unit and run (window / reduction / softmax sums)
TAP_CHUNK = 64
#: independent partial accumulators per unit in a reduction
PARTIALS = 4
ZERO_REG = 31  # reads 0.0, never written (004 L821)
N_ALLOC = 31  # r0..r30 are allocatable

# exp range reduction per element type: (clamp X, k squarings), see the module docstring
_EXP = {4: (87.0, 10), 8: (708.0, 13)}
_EXP_DEGREE = 6


def _err(op: Operation, msg: str) -> DiagnosticException:
    return DiagnosticException(f"convert-loop-to-sw: '{op.name}': {msg}")


def _round(v: float, eb: int) -> float:
    """A parameter as the element type holds it (numpy semantics of the reference)."""
    return float(np.float32(v)) if eb == 4 else float(v)


# --------------------------------------------------------------------------------------------
# Unit programs (virtual registers)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _T:
    """One template instruction: ``kind`` "ld" | "vld" (a vector of 4 consecutive elements,
    whatever the unit kind) | "st" | "op"; ``mn`` the mnemonic of "op" (``tap`` = lane of vextf);
    ``dst`` the defined virtual register; ``srcs`` virtual registers (>= 0) or constants (< 0);
    ``acc``/``tap`` the access index and byte offset of loads/stores."""

    kind: str
    mn: str = ""
    dst: int | None = None
    srcs: tuple[int, ...] = ()
    acc: int = -1
    tap: int = 0


class Unit:
    """Builder of a unit program: the computation of one vector (4 elements) or one scalar
    element, with virtual registers. Constants are negative ids (``-1 - index`` into
    :attr:`consts`); :attr:`ZERO` is r31."""

    ZERO = -(10**6)

    def __init__(self, partials: int = PARTIALS, fp32: bool = False) -> None:
        self.code: list[_T] = []
        self.n = 0
        self.consts: list[float] = []
        self.partials = partials
        #: all data of the nest are f32: divides and square roots use the shorter fp32
        #: instructions (VDIVS/VSQRTS; the result is rounded to f32 by the store anyway)
        self.fp32 = fp32

    # -- primitives ---------------------------------------------------------------------
    def _new(self) -> int:
        self.n += 1
        return self.n - 1

    def const(self, v: float) -> int:
        v = float(v)
        if v == 0.0 and math.copysign(1.0, v) > 0:
            return Unit.ZERO
        for i, c in enumerate(self.consts):
            if c == v and math.copysign(1.0, c) == math.copysign(1.0, v):
                return -1 - i
        self.consts.append(v)
        return -len(self.consts)

    def load(self, acc: int, tap: int = 0) -> int:
        d = self._new()
        self.code.append(_T("ld", dst=d, acc=acc, tap=tap))
        return d

    def vload(self, acc: int, tap: int = 0) -> int:
        """The 4 consecutive elements at ``tap`` of this unit's position (caller: aligned)."""
        d = self._new()
        self.code.append(_T("vld", dst=d, acc=acc, tap=tap))
        return d

    def extract(self, v: int, lane: int) -> int:
        """Lane ``lane`` of ``v`` in every lane (VEXTF)."""
        d = self._new()
        self.code.append(_T("op", "vextf", d, (v,), tap=lane))
        return d

    def store(self, acc: int, v: int, tap: int = 0) -> None:
        self.code.append(_T("st", srcs=(v,), acc=acc, tap=tap))

    def op(self, mn: str, *srcs: int) -> int:
        d = self._new()
        self.code.append(_T("op", mn, d, tuple(srcs)))
        return d

    # -- arithmetic (fp64 instructions on widened lanes) ----------------------------------
    def add(self, a: int, b: int) -> int:
        return self.op("vaddd", a, b)

    def sub(self, a: int, b: int) -> int:
        return self.op("vsubd", a, b)

    def mul(self, a: int, b: int) -> int:
        return self.op("vmuld", a, b)

    def div(self, a: int, b: int) -> int:
        return self.op("vdivs" if self.fp32 else "vdivd", a, b)

    def sqrt(self, a: int) -> int:
        return self.op("vsqrts" if self.fp32 else "vsqrtd", a)

    def fma(self, a: int, b: int, c: int) -> int:
        """a*b + c (4-operand VMAD)."""
        return self.op("vmad", a, b, c)

    def sel_lt(self, c: int, a: int, b: int) -> int:
        """c < 0 ? a : b (VFSELLT)."""
        return self.op("vfsellt", c, a, b)

    def max(self, a: int, b: int) -> int:
        """max(a, b) = VFSELEQ(VFCMPLT(a, b), a, b) (a NaN in ``a`` propagates)."""
        return self.op("vfseleq", self.op("vfcmplt", a, b), a, b)

    def min(self, a: int, b: int) -> int:
        return self.op("vfseleq", self.op("vfcmplt", b, a), a, b)

    def neg_abs(self, x: int) -> int:
        """-|x| = x < 0 ? x : 0 - x."""
        return self.sel_lt(x, x, self.sub(Unit.ZERO, x))

    def combine(self, how: str, a: int, b: int) -> int:
        return self.max(a, b) if how == "max" else self.add(a, b)

    def reduce(self, n: int, get: Callable[[int], int], how: str) -> int:
        """Combine ``get(0..n-1)`` with up to ``self.partials`` independent partial accumulators
        (each value is produced and folded in before the next one is requested: few live
        registers; more partials = shorter dependence chains, fewer units per body)."""
        parts: list[int] = []
        pn = max(1, self.partials)
        for i in range(n):
            v = get(i)
            if i < pn:
                parts.append(v)
            else:
                parts[i % pn] = self.combine(how, parts[i % pn], v)
        while len(parts) > 1:
            parts = [self.combine(how, parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                     for i in range(0, len(parts), 2)]
        return parts[0]

    def exp_neg(self, x: int, eb: int) -> int:
        """exp(x) for x <= 0 (x below -X is clamped: exp(-X) is below every tolerance)."""
        lim, k = _EXP[eb]
        nl = self.const(-lim)
        xc = self.op("vfseleq", self.op("vfcmplt", x, nl), x, nl)  # max(x, -X)
        # p(x / 2^k) by Horner in x itself: coefficient j = 2^(-j*k) / j! (a power-of-two
        # scaling, exact: the same roundings as Horner in r = x / 2^k, one multiply less)
        def c(j: int) -> int:
            return self.const(2.0 ** (-j * k) / math.factorial(j))

        p = self.fma(c(_EXP_DEGREE), xc, c(_EXP_DEGREE - 1))
        for j in range(_EXP_DEGREE - 2, -1, -1):
            p = self.fma(p, xc, c(j))
        for _ in range(k):
            p = self.mul(p, p)
        return p


def _allocate(code: list[_T], budget: int = 0) -> tuple[dict[int, int], int]:
    """Linear-scan allocation of a unit's virtual registers to slots 0..S-1 (a source whose
    last use is an instruction frees its slot for that instruction's result). Without a
    ``budget`` the fewest slots (lowest free slot first); with one, new slots up to ``budget``
    and then the least recently freed slot, which keeps false (WAR/WAW) dependences between
    independent chains rare so that the scheduler can overlap them."""
    last: dict[int, int] = {}
    for i, t in enumerate(code):
        for s in t.srcs:
            if s >= 0:
                last[s] = i
    slot: dict[int, int] = {}
    free: list[int] = []
    n = 0
    for i, t in enumerate(code):
        for s in set(t.srcs):
            if s >= 0 and last.get(s) == i:
                free.append(slot[s])
        if t.dst is not None:
            if budget and n < budget or not free:
                slot[t.dst] = n
                n += 1
            elif budget:
                slot[t.dst] = free.pop(0)  # least recently freed
            else:
                free.sort()
                slot[t.dst] = free.pop(0)
            if t.dst not in last:  # dead result: its slot is free again
                free.append(slot[t.dst])
    return slot, max(n, 1)


# --------------------------------------------------------------------------------------------
# Register instructions
# --------------------------------------------------------------------------------------------

_LOAD_VEC: dict[int, type[sw.RegInstr]] = {8: sw.VlddOp, 4: sw.VldsOp}
_LOAD_REP: dict[int, type[sw.RegInstr]] = {8: sw.LddeOp, 4: sw.LdseOp}
_STORE_VEC: dict[int, type[sw.RegInstr]] = {8: sw.VstdOp, 4: sw.VstsOp}
_STORE_SCALAR: dict[int, type[sw.RegInstr]] = {8: sw.FstdOp, 4: sw.FstsOp}
_OPS: dict[str, type[sw.RegInstr]] = {
    "vaddd": sw.VadddOp, "vsubd": sw.VsubdOp, "vmuld": sw.VmuldOp, "vdivd": sw.VdivdOp,
    "vmad": sw.VmadOp, "vsqrtd": sw.VsqrtdOp, "vdivs": sw.VdivsOp, "vsqrts": sw.VsqrtsOp, "vfcmplt": sw.VfcmpltOp, "vfcmple": sw.VfcmpleOp,
    "vfcmpeq": sw.VfcmpeqOp, "vfseleq": sw.VfseleqOp, "vfsellt": sw.VfselltOp,
}
_FIELDS = {1: ("ra", "rc"), 2: ("ra", "rb", "rc"), 3: ("ra", "rb", "rc", "rd")}


@functools.cache
def _i64(v: int) -> IntegerAttr:
    """Shared i64 attributes (building IntegerAttr dominates IR construction time)."""
    return IntegerAttr(v, i64)


def _reg_op(mn: str, regs: Sequence[int], dst: int) -> sw.RegInstr:
    names = _FIELDS[len(regs)]
    props: dict[str, Attribute] = {n: _i64(r) for n, r in zip(names, list(regs) + [dst])}
    return sw.new_instr(_OPS[mn], props)  # no IRDL init checks: the module is verified later


def _mem_op(cls: type[sw.RegInstr], reg: int, ptr: int, off: int, store: bool) -> sw.RegInstr:
    return sw.new_instr(cls, {"rs" if store else "rd": _i64(reg), "ptr": _i64(ptr), "offset": _i64(off)})


def _lane_op(mn: str, srcs: Sequence[int], lane: int, dst: int) -> sw.RegInstr:
    """``sw.vinsf rA, rB, lane, rC`` / ``sw.vextf rA, lane, rC``."""
    props: dict[str, Attribute] = {"ra": _i64(srcs[0]), "lane": _i64(lane), "rc": _i64(dst)}
    if mn == "vinsf":
        props["rb"] = _i64(srcs[1])
        return sw.new_instr(sw.VinsfOp, props)
    return sw.new_instr(sw.VextfOp, props)


def _ldfi(reg: int, value: float) -> sw.LdfiOp:
    return sw.new_instr(sw.LdfiOp, {"rd": _i64(reg), "value": FloatAttr(float(value), f64)})


def _schedule(body: list[sw.RegInstr], m: Machine, disjoint_ptrs: bool = False) -> list[sw.RegInstr]:
    """Reorder a straight-line body for the in-order dual-issue P0/P1 pipeline (spec §6.1):
    cycle-driven list scheduling, at most one instruction per pipe and cycle, highest
    latency-weighted critical path first; the non-pipelined divide/sqrt unit (table ``repeat``)
    is tracked. Kept: register RAW (with latency), WAR and WAW order, and memory order (a store
    after every earlier load/store, a load after every earlier store: pointers may alias; with
    ``disjoint_ptrs`` -- the caller's pointers address disjoint buffers -- only between accesses
    through the same pointer whose byte ranges overlap).
    Latencies, pipes and repeat rates: ``m``'s instruction table (Table 3.2, 004)."""
    n = len(body)
    if n < 3:
        return body
    tim = [m.instruction(i.mnemonic) for i in body]
    lat = [t.latency for t in tim]
    zero = m.zero_reg
    dep: list[dict[int, int]] = [{} for _ in range(n)]  # j -> {pred: latency}
    last_w: dict[int, int] = {}
    reads_since: dict[int, list[int]] = {}
    last_store = -1
    loads_since_store: list[int] = []
    # disjoint_ptrs: the earlier (stores, loads) per pointer: (index, byte range)
    by_ptr: dict[int, tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]] = {}
    for j, ins in enumerate(body):
        d = dep[j]
        rd = ins.reads()
        wr = ins.writes()
        for r in rd:
            w = last_w.get(r)
            if w is not None and r != zero:
                d[w] = max(d.get(w, 0), lat[w])
        for r in wr:
            w = last_w.get(r)
            if w is not None:
                d.setdefault(w, 0)
            for i in reads_since.get(r, ()):
                d.setdefault(i, 0)
        kind = ins.kind
        if disjoint_ptrs and kind in ("load", "store"):
            mo = ins.mem()
            assert mo is not None  # loads and stores are memory instructions
            lo, hi = mo.offset, mo.offset + mo.nbytes
            st_, ld_ = by_ptr.setdefault(mo.ptr, ([], []))
            for i, a, b in st_ + ld_ if kind == "store" else st_:
                if a < hi and lo < b:
                    d.setdefault(i, 0)
            (st_ if kind == "store" else ld_).append((j, lo, hi))
        elif kind == "store":
            for i in loads_since_store:
                d.setdefault(i, 0)
            if last_store >= 0:
                d.setdefault(last_store, 0)
            last_store = j
            loads_since_store = []
        elif kind == "load":
            if last_store >= 0:
                d.setdefault(last_store, 0)
            loads_since_store.append(j)
        for r in rd:
            reads_since.setdefault(r, []).append(j)
        for r in wr:
            last_w[r] = j
            reads_since[r] = []
    succs: list[list[int]] = [[] for _ in range(n)]
    for j, d in enumerate(dep):
        for i in d:
            succs[i].append(j)
    prio = [0] * n
    for j in range(n - 1, -1, -1):
        prio[j] = lat[j] + max((prio[k] for k in succs[j]), default=0)
    npred = [len(d) for d in dep]
    issue = [0] * n
    avail: list[tuple[int, int]] = [(-prio[j], j) for j in range(n) if npred[j] == 0]  # issuable now
    heapq.heapify(avail)
    waiting: list[tuple[int, int]] = []  # (earliest cycle, j)
    order: list[int] = []
    cycle = 0
    unit_free = 0
    while len(order) < n:
        while waiting and waiting[0][0] <= cycle:
            _, j = heapq.heappop(waiting)
            heapq.heappush(avail, (-prio[j], j))
        if not avail:
            cycle = waiting[0][0]
            continue
        used: set[int] = set()
        skipped = []
        picked = []
        while avail and len(used) < 2:
            item = heapq.heappop(avail)
            j = item[1]
            free = [p for p in tim[j].pipes if p not in used]
            if not free or (tim[j].repeat > 1 and unit_free > cycle):
                skipped.append(item)
                continue
            used.add(free[0])
            picked.append(j)
            issue[j] = cycle
            if tim[j].repeat > 1:
                unit_free = cycle + tim[j].repeat
        for item in skipped:
            heapq.heappush(avail, item)
        for j in picked:
            order.append(j)
            for k in succs[j]:
                npred[k] -= 1
                if npred[k] == 0:  # order-only edges: the next cycle at the earliest
                    heapq.heappush(waiting, (max(issue[i] + max(l, 1) for i, l in dep[k].items()), k))
        cycle += 1
    return [body[j] for j in order]


# --------------------------------------------------------------------------------------------
# Iteration nests
# --------------------------------------------------------------------------------------------


@dataclass
class Access:
    """A buffer as seen by a nest: i64 LDM base address, element bytes, one byte stride per
    nest dimension (0 = broadcast), a constant byte offset and the known alignment of the base
    address (bytes: 32 for buffers and slots, less for some ``loop.view`` s)."""

    base: SSAValue
    eb: int
    strides: list[int]
    offset: int = 0
    align: int = 32


@dataclass
class _Emitter:
    """Collects the ops of one ``lower_map`` call; i64 constants are created once, first.
    ``machine``: the target (instruction timings for scheduling the bodies)."""

    machine: Machine
    ops: list[Operation] = field(default_factory=list)
    consts: dict[int, SSAValue] = field(default_factory=dict)
    name: str = "map"
    stack: list[list[Operation]] = field(default_factory=list)
    n_runs: int = 0

    def emit(self, op: Operation) -> Operation:
        (self.stack[-1] if self.stack else self.ops).append(op)
        return op

    def i64(self, v: int) -> SSAValue:
        c = self.consts.get(v)
        if c is None:
            op = arith.ConstantOp(IntegerAttr(v, i64))
            op.result.name_hint = f"c{v}" if v >= 0 else f"cm{-v}"
            self.ops.insert(0, op)
            c = self.consts[v] = op.result
        return c

    def add(self, a: SSAValue, b: int | SSAValue) -> SSAValue:
        if isinstance(b, int):
            if b == 0:
                return a
            b = self.i64(b)
        return self.emit(arith.AddiOp(a, b)).results[0]

    def mul(self, a: SSAValue, b: int) -> SSAValue:
        if b == 1:
            return a
        return self.emit(arith.MuliOp(a, self.i64(b))).results[0]

    def microkernel(self, trip: int, ptrs: list[SSAValue], strides: list[int],
                    body: list[sw.RegInstr], label: str) -> None:
        mk = sw.MicrokernelOp(trip, ptrs, strides, Region(Block(body)))
        mk.attributes["name"] = StringAttr(f"{self.name}.{label}" if label else self.name)
        self.emit(mk)
        self.n_runs += 1

    def loop(self, n: int, body: Callable[[SSAValue], None]) -> None:
        """``scf.for %i = 0 to n step 1 : i64`` around ``body(%i)`` (inline for n == 1)."""
        if n == 1:
            body(self.i64(0))
            return
        lb, ub, st = self.i64(0), self.i64(n), self.i64(1)
        blk = Block(arg_types=[i64])
        blk.args[0].name_hint = "i"
        self.stack.append([])
        body(blk.args[0])
        inner = self.stack.pop()
        for op in inner:
            blk.add_op(op)
        blk.add_op(scf.YieldOp())
        self.emit(scf.ForOp(lb, ub, st, [], blk))


def _merge(sizes: Sequence[int], accs: list[Access]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims, merge adjacent dims contiguous for every access."""
    dims = [(n, [a.strides[d] for a in accs]) for d, n in enumerate(sizes) if n != 1]
    if not dims:
        return [1], [[0] for _ in accs]
    out = [dims[0]]
    for n, st in dims[1:]:
        pn, pst = out[-1]
        if all(p == s * n for p, s in zip(pst, st)):
            out[-1] = (pn * n, st)
        else:
            out.append((n, st))
    return [n for n, _ in out], [[st[i] for _, st in out] for i in range(len(accs))]


def _valign(eb: int) -> int:
    """Alignment of a vector access (32 B for VLDD/VSTD, 16 B for VLDS/VSTS; spec §11 param)."""
    return 32 if eb == 8 else 16


def _units_per_body(units: int, kmax: int) -> int:
    """Units per body of an inner-dimension micro-kernel: a divisor of ``units`` in
    [kmax/2, kmax] if there is one (one run), else ``kmax`` balanced over the bodies."""
    if units <= kmax:
        return units
    for g in range(kmax, (kmax + 1) // 2 - 1, -1):
        if units % g == 0:
            return g
    n_bodies = -(-units // kmax)
    return -(-units // n_bodies)


def _packing_pays(code: list[_T], strides: list[list[int]], inner: int, m: Machine) -> bool:
    """Packed units (four scalar-loaded elements moved into one vector with VINSF, results
    stored lane by lane with VEXTF) instead of scalar units, when the per-element cost estimate
    max(P0, P1, divide unit) drops (scalar units are also latency-bound, which the estimate
    ignores): pays for divides, square roots, exp polynomials, max chains; not for a copy.
    Divide-unit repeat rates: ``m``'s instruction table."""
    ops = [t for t in code if t.kind == "op"]
    div = sum(m.instruction(t.mn).repeat for t in ops if m.instruction(t.mn).repeat > 1)
    moved = sum(1 for t in code if t.kind in ("ld", "st") and strides[t.acc][inner] != 0)
    bcast = sum(1 for t in code if t.kind == "ld" and strides[t.acc][inner] == 0)
    scalar = max(len(ops), moved + bcast, div)
    packed = max((len(ops) + 3 * moved) / 4, (4 * moved + bcast) / 4, div / 4)
    return packed < scalar


def _partials(sizes: Sequence[int]) -> int:
    """Partial accumulators per reduction: enough independent chains in a body (~8, spec §6:
    7-cycle fp latency) between the units (one per output position) and inside a unit."""
    return max(1, min(8, -(-8 // max(1, math.prod(sizes)))))


def _nest(em: _Emitter, sizes: Sequence[int], accs: list[Access], unit_fn: Callable[[Unit], None],
          label: str = "", tail_ok: bool = False) -> None:
    """Emit micro-kernels computing ``unit_fn`` for every element of the nest ``sizes``.

    ``tail_ok``: the nest covers whole buffers from offset 0, so a flat (one-dim) nest may be
    processed in vector units past its end (into the buffer's 32-B padding)."""
    u = Unit(_partials(sizes), fp32=all(a.eb == 4 for a in accs))
    unit_fn(u)
    code = u.code
    dims, strides = _merge(sizes, accs)
    k = len(dims)
    inner = k - 1
    n_inner = dims[inner]
    used = sorted({t.acc for t in code if t.kind in ("ld", "vld", "st")})
    taps: dict[int, set[int]] = {}
    for t in code:
        if t.kind in ("ld", "vld", "st"):
            taps.setdefault(t.acc, set()).add(t.tap)
    # vector units?
    vec = True
    contiguous: set[int] = set()
    for a in used:
        s, eb = strides[a][inner], accs[a].eb
        if s == eb:
            contiguous.add(a)
        elif s != 0 or any(t.kind == "st" and t.acc == a for t in code):
            vec = False
    if not contiguous:
        vec = False
    if vec:
        flat_tail = k == 1 and tail_ok
        if not flat_tail and n_inner % 4:
            vec = False
        for a in contiguous:
            va = _valign(accs[a].eb)
            if accs[a].align % va or accs[a].offset % va or any(t % va for t in taps[a]):
                vec = False
            if any(s % va for s in strides[a][:inner]):
                vec = False
    if any(t.kind == "vld" for t in code):  # vectors along the taps: one position per unit
        vec = False
    packed = not vec and not any(t.kind == "vld" for t in code) and _packing_pays(code, strides, inner, em.machine)
    units = -(-n_inner // 4) if vec or packed else n_inner
    lanes_last = n_inner - 4 * (units - 1) if packed else 4
    step = [strides[a][inner] * (4 if vec or packed else 1) for a in range(len(accs))]
    _, s_min = _allocate(code)
    extra = 1 if packed else 0  # packed units: one temporary register for lane moves
    nc = len(u.consts)
    kmax = (N_ALLOC - nc) // (s_min + extra)
    if kmax < 1:
        raise DiagnosticException(
            f"convert-loop-to-sw: map {em.name}: unit program needs {s_min} registers + {nc} constants > {N_ALLOC}")
    L = len(code) if not packed else len(code) + sum(
        6 for t in code if t.kind in ("ld", "st") and strides[t.acc][inner] != 0)
    allocs: dict[int, tuple[dict[int, int], int]] = {}

    def alloc(group: int) -> tuple[dict[int, int], int]:
        """Slots of a unit when ``group`` units share the registers not holding constants
        (the per-unit register count includes the lane-move temporary of packed units)."""
        if group not in allocs:
            slot, S = _allocate(code, max(s_min, (N_ALLOC - nc) // group - extra))
            allocs[group] = (slot, S + extra)
        return allocs[group]

    def reg(v: int, j: int, group: int = 1) -> int:
        if v == Unit.ZERO:
            return ZERO_REG
        if v < 0:
            return N_ALLOC - 1 - (-1 - v)  # r30, r29, ...
        slot, S = alloc(group)
        return j * S + slot[v]

    def temp(j: int, group: int) -> int:
        _, S = alloc(group)
        return j * S + S - 1

    ptr_of = {a: i for i, a in enumerate(used)}

    def body(n_rows: int, n_cols: int, row_stride: list[int], last: int = 4) -> list[sw.RegInstr]:
        """Units (row r, column c) for r < n_rows, c < n_cols (row r at ``r*row_stride``; the
        last column of packed units has ``last`` lanes), in groups of up to ``kmax`` units that
        share the registers (disjoint sets inside a group), then list-scheduled. Bodies are
        cached by everything they depend on (maps of one network repeat a few bodies)."""
        key = (em.machine, tuple(code), nc, vec, packed, n_rows, n_cols, last,
               tuple((ptr_of[a], accs[a].offset, accs[a].eb, step[a], strides[a][inner], row_stride[a],
                      a in contiguous) for a in used))
        recipe = _BODY_CACHE.get(key)
        if recipe is None:
            ops = build_body(n_rows, n_cols, row_stride, last)
            if len(_BODY_CACHE) >= 1024:
                _BODY_CACHE.clear()
            _BODY_CACHE[key] = [(type(o), dict(o.properties)) for o in ops]
            return ops
        return [sw.new_instr(cls, dict(props)) for cls, props in recipe]

    def build_body(n_rows: int, n_cols: int, row_stride: list[int], last: int) -> list[sw.RegInstr]:
        pos = [(r, c) for r in range(n_rows) for c in range(n_cols)]
        n = len(pos)
        g = min(n, kmax)
        out: list[sw.RegInstr] = []
        for g0 in range(0, n, g):
            js = range(g0, min(n, g0 + g))
            key = len(js)
            for t in code:
                for j in js:
                    r = j - g0
                    if t.kind == "op":
                        assert t.dst is not None  # Unit.op / Unit.extract define a register
                        if t.mn == "vextf":
                            out.append(_lane_op("vextf", (reg(t.srcs[0], r, key),), t.tap, reg(t.dst, r, key)))
                        else:
                            out.append(_reg_op(t.mn, [reg(s, r, key) for s in t.srcs], reg(t.dst, r, key)))
                        continue
                    a = t.acc
                    acc = accs[a]
                    rr, cc = pos[j]
                    off = acc.offset + rr * row_stride[a] + cc * step[a] + t.tap
                    v = vec and a in contiguous
                    lanes = (last if cc == n_cols - 1 else 4) if packed and strides[a][inner] else 1
                    es = strides[a][inner]
                    if t.kind == "vld":
                        assert t.dst is not None  # Unit.vload defines a register
                        out.append(_mem_op(_LOAD_VEC[acc.eb], reg(t.dst, r, key), ptr_of[a], off, False))
                    elif t.kind == "ld":
                        assert t.dst is not None  # Unit.load defines a register
                        cls = (_LOAD_VEC if v else _LOAD_REP)[acc.eb]
                        d = reg(t.dst, r, key)
                        out.append(_mem_op(cls, d, ptr_of[a], off, False))
                        for ln in range(1, lanes):  # packed: the other lanes through the temporary
                            tr = temp(r, key)
                            out.append(_mem_op(cls, tr, ptr_of[a], off + ln * es, False))
                            out.append(_lane_op("vinsf", (tr, d), ln, d))
                    else:
                        cls = (_STORE_VEC if v else _STORE_SCALAR)[acc.eb]
                        src = reg(t.srcs[0], r, key)
                        out.append(_mem_op(cls, src, ptr_of[a], off, True))
                        for ln in range(1, lanes):
                            tr = temp(r, key)
                            out.append(_lane_op("vextf", (src,), ln, tr))
                            out.append(_mem_op(cls, tr, ptr_of[a], off + ln * es, True))
        return _schedule(out, em.machine)

    if u.consts:
        em.microkernel(1, [], [], [_ldfi(reg(-1 - i, 0), c) for i, c in enumerate(u.consts)],
                       f"{label}.consts" if label else "consts")
    row = k >= 2 and units * L <= BODY_MAX
    n_loop = k - 2 if row else k - 1
    zero = [0] * len(accs)

    def run(bases: list[SSAValue]) -> None:
        ptrs = [bases[a] for a in used]
        if row:  # a body = whole rows of units; the micro-kernel iterates dimension k-2
            rs = [strides[a][k - 2] for a in range(len(accs))]
            per = _units_per_body(dims[k - 2], max(1, min(BODY_MAX // (units * L), -(-min(kmax, UNITS_MAX) // units))))
            trip, rem = divmod(dims[k - 2], per)
            if trip:
                em.microkernel(trip, ptrs, [rs[a] * per for a in used], body(per, units, rs, lanes_last), label)
            if rem:
                moved = [em.add(bases[a], trip * per * rs[a]) for a in used]
                em.microkernel(1, moved, [0] * len(used), body(rem, units, rs, lanes_last), label)
            return
        full = units if lanes_last == 4 else units - 1  # a partial packed unit goes last
        per = _units_per_body(full, max(1, min(kmax, UNITS_MAX, BODY_MAX // L))) if full else 1
        trip, rem = divmod(full, per)
        if trip:
            em.microkernel(trip, ptrs, [step[a] * per for a in used], body(1, per, zero), label)
        tail = rem + (units - full)
        if tail:
            moved = [em.add(bases[a], trip * per * step[a]) for a in used]
            em.microkernel(1, moved, [0] * len(used), body(1, tail, zero, lanes_last), label)

    def level(d: int, bases: list[SSAValue]) -> None:
        if d == n_loop:
            run(bases)
            return

        def inside(i: SSAValue) -> None:
            nb = [b if strides[a][d] == 0 else em.add(b, em.mul(i, strides[a][d])) for a, b in enumerate(bases)]
            level(d + 1, nb)

        em.loop(dims[d], inside)

    level(0, [a.base for a in accs])


# --------------------------------------------------------------------------------------------
# Shapes -> accesses
# --------------------------------------------------------------------------------------------


def _row_major(shape: Sequence[int], eb: int) -> list[int]:
    st = [eb] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        st[d] = st[d + 1] * shape[d + 1]
    return st


def _bcast(b: _Buf, out_shape: Sequence[int]) -> Access:
    """Access of an input broadcast (numpy rules, right-aligned) to ``out_shape``."""
    rm = _row_major(b.shape, b.eb)
    lead = len(out_shape) - len(b.shape)
    st = [0] * lead + [0 if d == 1 else s for d, s in zip(b.shape, rm)]
    return Access(b.addr, b.eb, st, align=b.align)


def _index_multiple(v: SSAValue, depth: int = 0) -> int:
    """A known divisor of an ``index`` value (constants, muli, addi/subi; else 1)."""
    o = v.owner
    if depth > 16 or not isinstance(o, Operation):
        return 1
    if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr):
        return abs(o.value.value.data) or 1 << 20
    if isinstance(o, arith.MuliOp):
        return _index_multiple(o.lhs, depth + 1) * _index_multiple(o.rhs, depth + 1)
    if isinstance(o, (arith.AddiOp, arith.SubiOp)):
        return math.gcd(_index_multiple(o.lhs, depth + 1), _index_multiple(o.rhs, depth + 1))
    return 1


def _align_of(v: SSAValue, depth: int = 0) -> int:
    """Known alignment (bytes, <= 32) of the LDM address of a loop buffer value: buffers and
    slots are 32-B aligned (LDM_ALIGN); a view adds ``offset * elem_bytes``; a buffer carried by
    ``scf`` block arguments is as aligned as every value flowing into it."""
    t = v.type
    assert isinstance(t, loop.LdmBufType)
    o = v.owner
    if depth > 8:
        return t.elem_bytes
    if isinstance(o, (loop.LdmBufferOp, loop.SlotOp)):
        return loop.LDM_ALIGN
    if isinstance(o, loop.ViewOp):
        return math.gcd(_align_of(o.buffer, depth + 1), _index_multiple(o.offset) * t.elem_bytes)
    if isinstance(o, Block):  # a block argument: scf.for iter_arg
        assert isinstance(v, BlockArgument)  # the values owned by a block
        parent = o.parent_op()
        if isinstance(parent, scf.ForOp) and v.index > 0:
            k = v.index - 1
            srcs = [parent.iter_args[k]]
            yld = o.last_op
            if isinstance(yld, scf.YieldOp):
                srcs.append(yld.arguments[k])
            return min(_align_of(x, depth + 1) if x is not v else loop.LDM_ALIGN for x in srcs)
        return t.elem_bytes
    if isinstance(o, (scf.ForOp, scf.IfOp)):  # a result: every yielded value
        assert isinstance(v, OpResult)  # the values owned by an op
        k = v.index
        al = loop.LDM_ALIGN
        for r in o.regions:
            for b in r.blocks:
                if isinstance(b.last_op, scf.YieldOp):
                    al = min(al, _align_of(b.last_op.arguments[k], depth + 1))
        return al
    return t.elem_bytes


@dataclass
class _Buf:
    v: SSAValue
    addr: SSAValue
    shape: tuple[int, ...]
    eb: int
    align: int = 32
    #: a whole allocation (not a view): may be processed up to its 32-B-rounded end
    whole: bool = True

    def access(self) -> Access:
        return Access(self.addr, self.eb, _row_major(self.shape, self.eb), align=self.align)

    def acc(self, strides: Sequence[int], offset: int = 0) -> Access:
        return Access(self.addr, self.eb, list(strides), offset, self.align)


def _buf(v: SSAValue, addr: Callable[[SSAValue], SSAValue]) -> _Buf:
    t = v.type
    assert isinstance(t, loop.LdmBufType)
    align = _align_of(v)
    whole = align >= loop.LDM_ALIGN and not isinstance(v.owner, loop.ViewOp)
    return _Buf(v, addr(v), t.get_shape(), t.elem_bytes, align, whole)


# --------------------------------------------------------------------------------------------
# Kinds
# --------------------------------------------------------------------------------------------


def _elementwise(em: _Emitter, out: _Buf, ins: list[_Buf], f: Callable[[Unit, list[int]], int]) -> None:
    accs = [_bcast(b, out.shape) for b in ins] + [out.access()]
    o = len(ins)

    def unit(u: Unit) -> None:
        u.store(o, f(u, [u.load(i) for i in range(o)]))

    _nest(em, out.shape, accs, unit, tail_ok=out.whole)


def _exp_unit(kind: MapKind, eb: int) -> Callable[[Unit, list[int]], int]:
    one = 1.0

    def sigmoid(u: Unit, x: list[int]) -> int:
        t = u.exp_neg(u.neg_abs(x[0]), eb)  # exp(-|x|)
        s = u.div(u.const(one), u.add(t, u.const(one)))
        return u.sel_lt(x[0], u.mul(t, s), s)

    def tanh(u: Unit, x: list[int]) -> int:
        m = u.neg_abs(x[0])
        t = u.exp_neg(u.add(m, m), eb)  # exp(-2|x|)
        q = u.div(u.sub(u.const(one), t), u.add(u.const(one), t))
        return u.sel_lt(x[0], u.sub(Unit.ZERO, q), q)

    return sigmoid if kind == MapKind.SIGMOID else tanh


#: erf by Abramowitz & Stegun, Handbook of Mathematical Functions, eq. 7.1.26:
#: erf(z) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-z^2), t = 1 / (1 + p z), z >= 0,
#: |error| <= 1.5e-7 (plus exp_neg's < 1e-7 relative)
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf_unit(eb: int) -> Callable[[Unit, list[int]], int]:
    def erf(u: Unit, x: list[int]) -> int:
        m = u.neg_abs(x[0])  # -|x|
        z = u.sub(Unit.ZERO, m)  # |x|
        one = u.const(1.0)
        t = u.div(one, u.fma(u.const(_ERF_P), z, one))
        a1, a2, a3, a4, a5 = (u.const(a) for a in _ERF_A)
        poly = u.mul(u.fma(u.fma(u.fma(u.fma(a5, t, a4), t, a3), t, a2), t, a1), t)
        y = u.sub(one, u.mul(poly, u.exp_neg(u.mul(z, m), eb)))  # exp(-x^2)
        return u.sel_lt(x[0], u.sub(Unit.ZERO, y), y)

    return erf


def _window_segments(n_out: int, k: int, s: int, pb: int, size: int) -> list[tuple[int, int, int, int]]:
    """Output index ranges ``[o_lo, o_hi)`` of one window dim whose taps ``[j_lo, j_hi)`` inside
    the input ``[0, size)`` are the same (input index ``o*s - pb + j``): the boundary outputs
    one by one, the interior as one range."""
    segs: list[tuple[int, int, int, int]] = []
    for o in range(n_out):
        jl, jh = max(0, pb - o * s), min(k, size + pb - o * s)
        if segs and segs[-1][2:] == (jl, jh) and segs[-1][1] == o:
            segs[-1] = (segs[-1][0], o + 1, jl, jh)
        else:
            segs.append((o, o + 1, jl, jh))
    return segs


def _windowed(em: _Emitter, op: loop.MapOp, out: _Buf, ins: list[_Buf], params: dict) -> None:
    x = ins[0]
    kernel = tuple(params["kernel"])
    strides = tuple(params["strides"])
    nk = len(kernel)
    pads = tuple(params.get("pads") or (0,) * (2 * nk))
    xs = _row_major(x.shape, x.eb)
    ys = _row_major(out.shape, out.eb)
    lead = len(x.shape) - nk
    in_st = xs[:lead] + [xs[lead + i] * strides[i] for i in range(nk)]
    how = "max" if op.kind.data == MapKind.MAX_POOL else "add"

    def fin(u: Unit, s: int) -> int:
        if how == "max":
            return s
        if len(ins) == 2:
            return u.mul(s, u.load(2))
        return u.mul(s, u.const(1.0 / math.prod(kernel)))

    # per window dim: output ranges with the same in-bounds taps (one range without pads); a
    # nest per combination, the taps outside the input skipped (= pad -inf / 0)
    segs = [_window_segments(out.shape[lead + i], kernel[i], strides[i], pads[i], x.shape[lead + i])
            if any(pads) else [(0, out.shape[lead + i], 0, kernel[i])] for i in range(nk)]
    bc = _bcast(ins[1], out.shape) if len(ins) == 2 else None
    combos: list[list[tuple[int, int, int, int]]] = [[]]
    for sg in segs:
        combos = [c + [g] for c in combos for g in sg]
    for combo in combos:
        sizes = tuple(out.shape[:lead]) + tuple(oh - ol for ol, oh, _, _ in combo)
        x_off = sum((ol * strides[i] - pads[i] + jl) * xs[lead + i] for i, (ol, _, jl, _) in enumerate(combo))
        y_off = sum(ol * ys[lead + i] for i, (ol, _, _, _) in enumerate(combo))
        accs = [x.acc(in_st, x_off), out.acc(ys, y_off)]
        if bc is not None:
            accs.append(Access(bc.base, bc.eb, bc.strides,
                               sum(ol * bc.strides[lead + i] for i, (ol, _, _, _) in enumerate(combo)), bc.align))
        taps = [0]
        for i, (_, _, jl, jh) in enumerate(combo):
            taps = [t + (j - jl) * xs[lead + i] for t in taps for j in range(jl, jh)]
        _tap_reduce(em, sizes, accs, 1, 0, taps, how, fin)


def _tap_reduce(em: _Emitter, sizes: Sequence[int], accs: list[Access], out_i: int, src_i: int,
                taps: list[int], how: str, fin: Callable[[Unit, int], int] | None = None,
                label: str = "") -> None:
    """out = fin(combine over taps of src), in chunks of TAP_CHUNK taps; later chunks fold into
    the partial result stored in ``out``. Contiguous, aligned taps of positions that are not
    contiguous themselves (a reduction along the innermost axis) are combined as vectors (4 taps
    per load and per op) and then across the lanes (VEXTF)."""
    if _vector_taps(sizes, accs, src_i, taps):
        _tap_reduce_vector(em, sizes, accs, out_i, src_i, taps, how, fin, label)
        return
    chunks = [taps[i : i + TAP_CHUNK] for i in range(0, len(taps), TAP_CHUNK)]
    for ci, ch in enumerate(chunks):

        def unit(u: Unit, ch=ch, ci=ci) -> None:
            r = u.reduce(len(ch), lambda i: u.load(src_i, ch[i]), how)
            if ci:
                r = u.combine(how, u.load(out_i), r)
            if ci == len(chunks) - 1 and fin is not None:
                r = fin(u, r)
            u.store(out_i, r)

        _nest(em, sizes, accs, unit, label=label or (how if len(chunks) == 1 else f"{how}{ci}"))


def _vector_taps(sizes: Sequence[int], accs: list[Access], src_i: int, taps: list[int]) -> bool:
    """Taps = >= 8 consecutive elements starting 32-B (f64) / 16-B (f32) aligned at every
    position, and positions not contiguous (else the positions are the better vector lanes)."""
    a = accs[src_i]
    eb, va = a.eb, _valign(a.eb)
    if len(taps) < 8 or any(t != taps[0] + i * eb for i, t in enumerate(taps)):
        return False
    dims, strides = _merge(sizes, accs)
    if strides[src_i][-1] == eb and dims[-1] > 1:
        return False
    return (a.align % va == 0 and (a.offset + taps[0]) % va == 0
            and all(st % va == 0 for st, n in zip(strides[src_i], dims) if n > 1))


def _tap_reduce_vector(em: _Emitter, sizes: Sequence[int], accs: list[Access], out_i: int, src_i: int,
                       taps: list[int], how: str, fin: Callable[[Unit, int], int] | None, label: str) -> None:
    """:func:`_tap_reduce` with 4 taps per vector load: per chunk of up to 4*TAP_CHUNK taps the
    vectors are combined lane-wise, then the 4 lanes (VEXTF); the last < 4 taps as scalars."""
    nv = len(taps) // 4
    vec_taps = [taps[4 * q] for q in range(nv)]
    rest = taps[4 * nv :]
    chunks = [vec_taps[i : i + TAP_CHUNK] for i in range(0, nv, TAP_CHUNK)]
    for ci, ch in enumerate(chunks):
        last = ci == len(chunks) - 1

        def unit(u: Unit, ch=ch, ci=ci, last=last) -> None:
            v = u.reduce(len(ch), lambda i: u.vload(src_i, ch[i]), how)
            r = u.combine(how, u.combine(how, u.extract(v, 0), u.extract(v, 1)),
                          u.combine(how, u.extract(v, 2), u.extract(v, 3)))
            if last and rest:
                r = u.combine(how, r, u.reduce(len(rest), lambda i: u.load(src_i, rest[i]), how))
            if ci:
                r = u.combine(how, u.load(out_i), r)
            if last and fin is not None:
                r = fin(u, r)
            u.store(out_i, r)

        _nest(em, sizes, accs, unit, label=label or (how if len(chunks) == 1 else f"{how}{ci}"))


def _reduce(em: _Emitter, kind: MapKind, out: _Buf, x: _Buf, axis: int) -> None:
    xs = _row_major(x.shape, x.eb)
    L = x.shape[axis]
    accs = [x.acc(xs), out.acc(_row_major(out.shape, out.eb))]
    how = "max" if kind == MapKind.REDUCE_MAX else "add"
    fin = (lambda u, s: u.mul(s, u.const(1.0 / L))) if kind == MapKind.REDUCE_MEAN else None
    _tap_reduce(em, out.shape, accs, 1, 0, [t * xs[axis] for t in range(L)], how, fin)


def _softmax(em: _Emitter, out: _Buf, x: _Buf, axis: int) -> None:
    L = x.shape[axis]
    eb = x.eb
    if L == 1:  # softmax of one element
        _nest(em, out.shape, [out.access()], lambda u: u.store(0, u.const(1.0)), tail_ok=out.whole)
        return
    xs = _row_major(x.shape, eb)
    sa = xs[axis]
    pos = tuple(1 if d == axis else n for d, n in enumerate(x.shape))
    # accesses of the position nests: x, y, M = y[.., L-1], R = y[.., L-2]
    px = x.acc(xs)
    m_acc = out.acc(list(xs), (L - 1) * sa)
    r_acc = out.acc(list(xs), (L - 2) * sa)
    contiguous_axis = all(n == 1 for n in x.shape[axis + 1 :])
    lm = ((L - 2) // 4) * 4 if contiguous_axis else L - 2
    extra = list(range(lm, L))
    # P1: M = max over all taps -> y[.., L-1]
    _tap_reduce(em, pos, [px, m_acc], 1, 0, [t * sa for t in range(L)], "max", label="max")
    # the main taps [0, lm): a nest over positions x taps, M and R broadcast along the axis
    main = tuple(lm if d == axis else n for d, n in enumerate(x.shape))
    bc = [0 if d == axis else s for d, s in enumerate(xs)]
    if lm:

        def p2(u: Unit) -> None:
            u.store(1, u.exp_neg(u.sub(u.load(0), u.load(2)), eb))

        _nest(em, main, [px, out.acc(list(xs)), out.acc(bc, (L - 1) * sa)], p2, "exp")
    # P3: R = 1 / (sum of the main taps of y + exp(x - M) of the extra taps) -> y[.., L-2]
    py = out.acc(list(xs))
    taps = [t * sa for t in range(lm)]
    vt = _vector_taps(pos, [px, py, m_acc, r_acc], 1, taps)  # 4 main taps per load
    if vt:
        taps = taps[::4]
    chunks = [taps[i : i + TAP_CHUNK] for i in range(0, len(taps), TAP_CHUNK)] or [[]]
    for ci, ch in enumerate(chunks):

        def p3(u: Unit, ch=ch, ci=ci) -> None:
            parts = []
            if ch and vt:
                v = u.reduce(len(ch), lambda i: u.vload(1, ch[i]), "add")
                parts.append(u.add(u.add(u.extract(v, 0), u.extract(v, 1)), u.add(u.extract(v, 2), u.extract(v, 3))))
            elif ch:
                parts.append(u.reduce(len(ch), lambda i: u.load(1, ch[i]), "add"))
            if ci == 0:
                m = u.load(2)
                parts.append(u.reduce(len(extra), lambda i: u.exp_neg(u.sub(u.load(0, extra[i] * sa), m), eb), "add"))
            else:
                parts.append(u.load(3))
            s = parts[0] if len(parts) == 1 else u.add(parts[0], parts[1])
            if ci == len(chunks) - 1:
                s = u.div(u.const(1.0), s)
            u.store(3, s)

        _nest(em, pos, [px, py, m_acc, r_acc], p3, label=f"sum{ci}" if len(chunks) > 1 else "sum")
    # P4: y *= R on the main taps
    if lm:

        def p4(u: Unit) -> None:
            u.store(0, u.mul(u.load(0), u.load(1)))

        _nest(em, main, [out.acc(list(xs)), out.acc(bc, (L - 2) * sa)], p4, "scale")

    # P5: the extra taps (incl. the two scratch positions) = exp(x - M) * R
    def p5(u: Unit) -> None:
        m, r = u.load(2), u.load(3)
        vals = [u.mul(u.exp_neg(u.sub(u.load(0, t * sa), m), eb), r) for t in extra]
        for t, v in zip(extra, vals):
            u.store(1, v, t * sa)

    _nest(em, pos, [px, py, m_acc, r_acc], p5, "tail")


def _pow_beta(op: loop.MapOp, beta: float) -> tuple[int, int, int]:
    """beta = a + b/2 + c/4 with a in 0..2, b, c in {0, 1}: d^beta = d^a * sqrt(d)^b * d^(c/4)."""
    q = beta * 4
    if q != round(q) or not 1 <= q <= 8:
        raise _err(op, f"loop.map lrn: beta = {beta} is not supported (d^beta is lowered with SQRT and "
                       "MUL only: beta must be a multiple of 0.25 in [0.25, 2])")
    q = int(round(q))
    return q // 4, (q % 4) // 2, q % 2


def _lrn(em: _Emitter, op: loop.MapOp, out: _Buf, x: _Buf, p: dict) -> None:
    axis, size = int(p["axis"]), int(p["size"])
    alpha, beta, bias = float(p["alpha"]), float(p["beta"]), float(p["bias"])
    a, b, c = _pow_beta(op, beta)
    if size > TAP_CHUNK:
        raise _err(op, f"loop.map lrn: size {size} > {TAP_CHUNK} taps per unit")
    lo = (size - 1) // 2
    hi = size - 1 - lo
    C = out.shape[axis]
    xs = _row_major(x.shape, x.eb)
    ys = _row_major(out.shape, out.eb)
    sa = xs[axis]
    # halo form (x holds lo channels before and hi after the output's): every window is whole
    shift = lo if x.shape[axis] != C else 0
    # channel ranges with the same clipped window [c - lo, c + hi] ∩ [0, C)
    runs: list[tuple[int, int, int, int]] = []
    for ch in range(C):
        w = (-lo, hi) if shift else (max(-lo, -ch), min(hi, C - 1 - ch))
        if runs and runs[-1][2:] == w:
            runs[-1] = (runs[-1][0], ch + 1, *w)
        else:
            runs.append((ch, ch + 1, *w))
    for c0, c1, o0, o1 in runs:
        sizes = tuple(c1 - c0 if d == axis else n for d, n in enumerate(out.shape))
        accs = [x.acc(xs, (c0 + shift) * sa), out.acc(ys, c0 * ys[axis])]
        offs = [o * sa for o in range(o0, o1 + 1) if o != 0]

        def unit(u: Unit, offs=offs) -> None:
            xc = u.load(0)
            sq = u.mul(xc, xc)

            def get(i: int) -> int:
                if i == 0:
                    return sq
                v = u.load(0, offs[i - 1])
                return u.mul(v, v)

            s = u.reduce(len(offs) + 1, get, "add")
            d = u.fma(s, u.const(alpha / size), u.const(bias))
            den = None
            for _ in range(a):
                den = d if den is None else u.mul(den, d)
            if b or c:
                sd = u.sqrt(d)
                if b:
                    den = sd if den is None else u.mul(den, sd)
                if c:
                    qd = u.sqrt(sd)
                    den = qd if den is None else u.mul(den, qd)
            assert den is not None
            u.store(1, u.div(xc, den))

        _nest(em, sizes, accs, unit, label="lrn")


def _transpose(em: _Emitter, out: _Buf, x: _Buf, perm: Sequence[int]) -> None:
    xs = _row_major(x.shape, x.eb)
    accs = [x.acc([xs[p] for p in perm]), out.access()]
    _nest(em, out.shape, accs, lambda u: u.store(1, u.load(0)))


def _lin(u: Unit, terms: Sequence[tuple[float, int]]) -> int:
    """sum(coef * v): +-1 coefficients with adds/subtracts, others with VMAD (a ZERO term drops)."""
    terms = [(c, v) for c, v in terms if c != 0 and v != Unit.ZERO]
    if not terms:
        return Unit.ZERO
    pos = [v for c, v in terms if c == 1.0]
    acc: int | None = None
    for v in pos:
        acc = v if acc is None else u.add(acc, v)
    for c, v in terms:
        if c == 1.0:
            continue
        if c == -1.0:
            acc = u.sub(Unit.ZERO if acc is None else acc, v)
        else:
            acc = u.mul(v, u.const(c)) if acc is None else u.fma(v, u.const(c), acc)
    assert acc is not None
    return acc


def _segments(n: int, key: Callable[[int], object]) -> list[tuple[int, int, object]]:
    """Maximal runs [a, b) of 0..n-1 with equal ``key``."""
    out: list[tuple[int, int, object]] = []
    for i in range(n):
        k = key(i)
        if out and out[-1][2] == k:
            out[-1] = (out[-1][0], i + 1, k)
        else:
            out.append((i, i + 1, k))
    return out


def _im2col(em: _Emitter, out: _Buf, x: _Buf, p: dict) -> None:
    """y[..., j, wo] = x[..., wo*s + j*d - pl] (0 outside): per tap row j one copy nest over the
    valid wo range plus zero-fill nests for the padded ends."""
    kw, s = int(p["kernel"][0]), int(p["strides"][0])
    pl = int(tuple(p.get("pads", (0, 0)))[0])
    d = int(tuple(p.get("dilations", (1,)))[0])
    W = x.shape[-1]
    wo = out.shape[-1]
    lead = x.shape[:-1]
    xs = _row_major(x.shape, x.eb)
    ys = _row_major(out.shape, out.eb)
    y_lead = ys[: len(lead)]
    for j in range(kw):
        a = max(0, -(-(pl - j * d) // s))
        b = min(wo, (W - 1 + pl - j * d) // s + 1)
        a, b = min(a, wo), max(min(b, wo), min(a, wo))
        if b > a:
            accs = [x.acc(xs[:-1] + [s * x.eb], (a * s + j * d - pl) * x.eb),
                    out.acc(y_lead + [out.eb], (j * wo + a) * out.eb)]
            _nest(em, lead + (b - a,), accs, lambda u: u.store(1, u.load(0)), "copy")
        for z0, z1 in ((0, a), (b, wo)):
            if z1 > z0:
                acc = out.acc(y_lead + [out.eb], (j * wo + z0) * out.eb)
                _nest(em, lead + (z1 - z0,), [acc], lambda u: u.store(0, Unit.ZERO), "pad")


_WG = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))  # G of F(2x2, 3x3)
_WBT = ((1.0, 0.0, -1.0, 0.0), (0.0, 1.0, 1.0, 0.0), (0.0, -1.0, 1.0, 0.0), (0.0, 1.0, 0.0, -1.0))  # B^T
_WAT = ((1.0, 1.0, 1.0, 0.0), (0.0, 1.0, -1.0, -1.0))  # A^T
# (Lavin & Gray 2016, algorithms.md §C4; the same matrices as tile_to_loop/mem_prims.py)


def _winograd_filter(em: _Emitter, out: _Buf, x: _Buf) -> None:
    """y[4*xi+nu, f] = (G x[f] G^T)[xi, nu]: one scalar unit per filter f."""
    n = x.shape[0]
    accs = [x.acc([9 * x.eb]), out.acc([out.eb])]

    def unit(u: Unit) -> None:
        for xi in range(4):
            row = [_lin(u, [(_WG[xi][i], u.load(0, (3 * i + jj) * x.eb)) for i in range(3) if _WG[xi][i]])
                   for jj in range(3)]  # (G x)[xi, jj]
            for nu in range(4):
                u.store(1, _lin(u, [(_WG[nu][jj], row[jj]) for jj in range(3)]), (4 * xi + nu) * n * out.eb)

    _nest(em, (n,), accs, unit, "wfilter")


def _winograd_input(em: _Emitter, out: _Buf, x: _Buf, p: dict) -> None:
    """y[4*xi+nu, k, c] = (B^T D_k B)[xi, nu], D_k = pad(x)[:, 2k:2k+4, c]: units over (k, c)
    (vector along the channels), one nest per run of tiles with the same valid columns."""
    top, left, _, _ = (int(v) for v in tuple(p.get("pads", (0, 0, 0, 0))))
    R, Wc, C = x.shape
    t = out.shape[1]
    eb = x.eb

    def valid_cols(k: int) -> tuple[bool, ...]:
        return tuple(0 <= 2 * k + col - left < Wc for col in range(4))

    for k0, k1, cols in _segments(t, valid_cols):
        accs = [x.acc([2 * C * eb, eb], 2 * k0 * C * eb),
                out.acc([C * out.eb, out.eb], k0 * C * out.eb)]

        def unit(u: Unit, cols=cols) -> None:
            def d(r: int, col: int) -> int:
                if not (0 <= r - top < R) or not cols[col]:
                    return Unit.ZERO
                return u.load(0, ((r - top) * Wc + col - left) * C * eb)

            for xi in range(4):
                rows = [r for r in range(4) if _WBT[xi][r]]
                tmp = [_lin(u, [(_WBT[xi][r], d(r, col)) for r in rows]) for col in range(4)]
                for nu in range(4):
                    v = _lin(u, [(_WBT[nu][col], tmp[col]) for col in range(4)])
                    u.store(1, v, (4 * xi + nu) * t * C * out.eb)

        _nest(em, (k1 - k0, C), accs, unit, "winput")


def _winograd_output(em: _Emitter, out: _Buf, x: _Buf) -> None:
    """y[dy, 2k+dx, c] = (A^T M_k A)[dy, dx] (M_k[xi, nu] = x[4*xi+nu, k, c]) clipped to y."""
    _, t, C = x.shape
    R, Wc, _ = out.shape
    eb = x.eb

    def n_dx(k: int) -> int:
        return min(2, Wc - 2 * k)

    for k0, k1, ndx in _segments(t, n_dx):
        accs = [x.acc([C * eb, eb], k0 * C * eb),
                out.acc([2 * C * out.eb, out.eb], 2 * k0 * C * out.eb)]

        def unit(u: Unit, ndx=ndx) -> None:
            for dy in range(R):
                tmp = [_lin(u, [(_WAT[dy][xi], u.load(0, (4 * xi + nu) * t * C * eb)) for xi in range(4)
                                if _WAT[dy][xi]]) for nu in range(4)]
                for dx in range(ndx):
                    v = _lin(u, [(_WAT[dx][nu], tmp[nu]) for nu in range(4)])
                    u.store(1, v, (dy * Wc + dx) * C * out.eb)

        _nest(em, (k1 - k0, C), accs, unit, "woutput")


_BINARY = {MapKind.ADD: Unit.add, MapKind.SUB: Unit.sub, MapKind.MUL: Unit.mul, MapKind.DIV: Unit.div,
           MapKind.MAX: Unit.max}
#: kinds that read inputs after writing the output: the output must not alias an input
_NO_ALIAS = {MapKind.MAX_POOL, MapKind.AVG_POOL, MapKind.REDUCE_SUM, MapKind.REDUCE_MAX, MapKind.REDUCE_MEAN,
             MapKind.SOFTMAX, MapKind.LRN, MapKind.TRANSPOSE, MapKind.IM2COL, MapKind.WINOGRAD_FILTER,
             MapKind.WINOGRAD_INPUT, MapKind.WINOGRAD_OUTPUT}


def lower_map(op: loop.MapOp, addr: Callable[[SSAValue], SSAValue], machine: Machine) -> list[Operation]:
    """The ops (in order, to insert before ``op``) computing the ``loop.map`` ``op`` with
    register micro-kernels; ``addr(v)`` = i64 LDM byte address of buffer operand ``v``;
    ``machine``: the target the bodies are scheduled for (its instruction table).

    Raises ``DiagnosticException`` (naming the op) for an unsupported LRN ``beta`` and for an
    output aliasing an input of a kind in ``_NO_ALIAS``."""
    kind = op.kind.data
    # values typed by parameter name (MapParamsOp.params): floats, ints, int tuples
    p: dict[str, Any] = op.params()
    em = _Emitter(machine, name=kind.value)
    if kind in _NO_ALIAS and any(v is op.out for v in op.inputs):
        raise _err(op, f"loop.map {kind.value}: the output must be a different buffer from the input")
    ins = [_buf(v, addr) for v in op.inputs]
    out = _buf(op.out, addr)
    eb = out.eb
    if kind == MapKind.COPY:
        if op.inputs[0] is op.out:
            return []
        _elementwise(em, out, ins, lambda u, x: x[0])
    elif kind == MapKind.CONVERT:
        _elementwise(em, out, ins, lambda u, x: x[0])
    elif kind == MapKind.FILL:
        v = _round(float(p["value"]), eb)
        _nest(em, out.shape, [out.access()], lambda u: u.store(0, u.const(v)), tail_ok=out.whole)
    elif kind == MapKind.RELU:
        _elementwise(em, out, ins, lambda u, x: u.sel_lt(x[0], Unit.ZERO, x[0]))
    elif kind == MapKind.LEAKY_RELU:
        al = _round(float(p["alpha"]), eb)
        _elementwise(em, out, ins, lambda u, x: u.sel_lt(x[0], u.mul(x[0], u.const(al)), x[0]))
    elif kind == MapKind.CLIP:
        lo, hi = p.get("lo"), p.get("hi")

        def clip(u: Unit, x: list[int]) -> int:
            y = x[0]
            if lo is not None:
                y = u.max(y, u.const(_round(float(lo), eb)))
            if hi is not None:
                y = u.min(y, u.const(_round(float(hi), eb)))
            return y

        if lo is None and hi is None:
            if op.inputs[0] is op.out:
                return []
        _elementwise(em, out, ins, clip)
    elif kind in (MapKind.SIGMOID, MapKind.TANH):
        _elementwise(em, out, ins, _exp_unit(kind, eb))
    elif kind == MapKind.ERF:
        _elementwise(em, out, ins, _erf_unit(eb))
    elif kind == MapKind.SQRT:
        _elementwise(em, out, ins, lambda u, x: u.sqrt(x[0]))
    elif kind in _BINARY:
        f = _BINARY[kind]
        _elementwise(em, out, ins, lambda u, x: f(u, x[0], x[1]))
    elif kind == MapKind.AFFINE:
        _elementwise(em, out, ins, lambda u, x: u.fma(x[0], x[1], x[2]))
    elif kind in (MapKind.MAX_POOL, MapKind.AVG_POOL):
        _windowed(em, op, out, ins, p)
    elif kind in (MapKind.REDUCE_SUM, MapKind.REDUCE_MAX, MapKind.REDUCE_MEAN):
        _reduce(em, kind, out, ins[0], int(p["axis"]))
    elif kind == MapKind.SOFTMAX:
        _softmax(em, out, ins[0], int(p["axis"]))
    elif kind == MapKind.LRN:
        _lrn(em, op, out, ins[0], p)
    elif kind == MapKind.TRANSPOSE:
        _transpose(em, out, ins[0], tuple(p["perm"]))
    elif kind == MapKind.IM2COL:
        _im2col(em, out, ins[0], p)
    elif kind == MapKind.WINOGRAD_FILTER:
        _winograd_filter(em, out, ins[0])
    elif kind == MapKind.WINOGRAD_INPUT:
        _winograd_input(em, out, ins[0], p)
    elif kind == MapKind.WINOGRAD_OUTPUT:
        _winograd_output(em, out, ins[0])
    else:  # pragma: no cover - every MapKind is handled above
        raise _err(op, f"loop.map {kind.value}: no lowering")
    return em.ops
