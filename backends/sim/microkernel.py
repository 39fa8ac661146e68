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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from taihu.backends.sim.memory import MemoryBoundsError, SimError
from taihu.backends.sim.pipeline import (
    CONSTS,
    FMA,
    FP_BINARY,
    FP_OTHER,
    FP_UNARY,
    FUSED_SEND,
    GETS,
    LOADS,
    LOADS_F32_REP,
    LOADS_F32_VEC,
    LOADS_F64_REP,
    LOADS_F64_VEC,
    PUTS,
    STORES,
    STORES_SCALAR,
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
    if op in FP_UNARY:
        return LANES
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
    unsupported: str = ""
    #: loads / stores of the same kind through the same pointer, executed as one gather /
    #: scatter: ((mnemonic, pointer, ((instr index, offset), ...)), ...), only groups of >= 2
    load_groups: tuple = ()
    store_groups: tuple = ()
    #: structures derived once per body by the batched numerics (``BatchNumerics``)
    derived: dict = field(default_factory=dict, hash=False, compare=False, repr=False)


def _addend_index(ins: Instr) -> int | None:
    """Index in ``ins.src`` of the accumulated operand of an additive instruction."""
    if ins.op in FMA:
        return 2
    if ins.op in ("vaddd", "vadds", "faddd", "fadds", "vadd"):
        return 0 if ins.src[0] in ins.dst else 1
    if ins.op in ("vsubd", "vsubs", "fsubd", "fsubs", "vsub"):
        return 0
    return None


def numeric_sources(ins: Instr) -> tuple[int, ...]:
    """The source registers whose *values* an instruction uses (address registers excluded)."""
    op = ins.op
    if op in STORES or op in PUTS:
        return ins.src[:1]
    if op in FMA or op in FP_BINARY or op in FP_OTHER:
        return ins.src
    return ()


def is_numeric(ins: Instr) -> bool:
    """True for instructions with a numeric effect (loads, stores, fp, RLC)."""
    op = ins.op
    return (op in LOADS or op in STORES or op in FMA or op in FP_BINARY or op in FP_OTHER
            or op in PUTS or op in GETS or op in CONSTS)


@functools.lru_cache(maxsize=4096)
def plan_body(body: tuple[Instr, ...], zero_reg: int = 31) -> BodyPlan:
    nb = len(body)
    numeric = [is_numeric(ins) for ins in body]
    writers: dict[int, list[int]] = {}
    other_writers: dict[int, int] = {}
    for j, ins in enumerate(body):
        for r in ins.dst:
            if numeric[j]:
                writers.setdefault(r, []).append(j)
            else:
                other_writers[r] = j
    last_writer = {r: w[-1] for r, w in writers.items()}
    src_kind = []
    deps: list[set[int]] = [set() for _ in range(nb)]
    carried_readers: dict[int, list[int]] = {}
    unsupported = ""
    for j, ins in enumerate(body):
        kinds = []
        for r in numeric_sources(ins):
            if r == zero_reg:
                kinds.append(("zero", r))
                continue
            if r in other_writers and not unsupported:
                unsupported = (f"'{ins.op}' reads r{r}, which '{body[other_writers[r]].op}' writes "
                               f"in the same body: integer/shuffle values are not simulated")
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
    ready = [j for j in range(nb) if indeg[j] == 0 and numeric[j]]
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
    if len(order) != sum(numeric):
        order = []
    gets: dict[str, list[int]] = {}
    puts: list[int] = []
    for j, ins in enumerate(body):
        if ins.op in GETS:
            direction = rlc_direction(ins.op)
            assert direction is not None  # a GET has a direction
            gets.setdefault(direction, []).append(j)
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
        unsupported=unsupported,
        load_groups=_groups(body, LOADS, False),
        store_groups=_groups(body, STORES, True),
    )


def _groups(body: tuple[Instr, ...], kinds: frozenset, disjoint: bool) -> tuple:
    """Memory instructions of the same mnemonic and pointer (>= 2 per group). For stores the
    accesses of one iteration must not overlap (their order then does not matter)."""
    by: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for j, ins in enumerate(body):
        if ins.op in kinds and ins.ptr is not None:
            by.setdefault((ins.op, ins.ptr), []).append((j, ins.offset))
    out = []
    for (op, ptr), members in by.items():
        if len(members) < 2:
            continue
        if disjoint:
            offs = sorted(o for _, o in members)
            w = _width(op)
            if any(b - a < w for a, b in zip(offs, offs[1:])):
                continue
            # a store of another kind through the same pointer overlapping a member: the
            # group would be executed out of program order with respect to it
            mine = {j for j, _ in members}
            if any(j not in mine and ins.op in kinds and ins.ptr == ptr
                   and any(o < ins.offset + _width(ins.op) and ins.offset < o + w for _, o in members)
                   for j, ins in enumerate(body)):
                continue
        out.append((op, ptr, tuple(members)))
    return tuple(out)


def _overlaps(ba, bb, sa: int, sb: int, wa: int, wb: int, n: int, dmin: int, dmax: int, skip_zero: bool):
    """Vectorised over CPEs (``ba``/``bb`` int or int arrays of start addresses): does
    iteration i of access a (bytes [ba + i*sa, +wa)) overlap iteration i + d of access b for
    some d in [dmin, dmax] (d != 0 if ``skip_zero``), 0 <= i, i + d < n?"""
    if dmin > dmax:
        return False
    if sa != sb or n == 1:
        if n == 1 and (dmin > 0 or dmax < 0 or skip_zero):
            return False
        ea, eb = ba + (n - 1) * sa, bb + (n - 1) * sb
        a0, a1 = np.minimum(ba, ea), np.maximum(ba, ea) + wa
        b0, b1 = np.minimum(bb, eb), np.maximum(bb, eb) + wb
        return (a0 < b1) & (b0 < a1)
    lo = ba - bb - wb  # b at i + d overlaps a at i  <=>  lo < d*s < hi
    hi = ba - bb + wa
    s = sa
    if s == 0:
        ok = (lo < 0) & (hi > 0)
        return ok & (not (skip_zero and dmin == dmax == 0))
    if s < 0:
        lo, hi, s = -hi, -lo, -s
    d_lo = np.maximum(lo // s + 1, dmin)
    d_hi = np.minimum(-((-hi) // s) - 1, dmax)
    ok = d_lo <= d_hi
    if skip_zero:
        ok = ok & ~((d_lo == 0) & (d_hi == 0))
    return ok


def _overlaps_all(ba, bb, sa: int, sb: int, wa, wb, n: int, dmin, dmax, skip) -> bool:
    """:func:`_overlaps` for many access pairs of two pointers at once (rows: pairs, columns:
    CPEs; ``wa``..``skip`` one row per pair): is any pair overlapping on any CPE?"""
    valid = dmin <= dmax
    if sa != sb or n == 1:
        if n == 1:
            valid = valid & ~((dmin > 0) | (dmax < 0) | skip)
        ea, eb = ba + (n - 1) * sa, bb + (n - 1) * sb
        a0, a1 = np.minimum(ba, ea), np.maximum(ba, ea) + wa
        b0, b1 = np.minimum(bb, eb), np.maximum(bb, eb) + wb
        return bool(((a0 < b1) & (b0 < a1) & valid).any())
    lo = ba - bb - wb
    hi = ba - bb + wa
    s = sa
    if s == 0:
        ok = (lo < 0) & (hi > 0) & ~(skip & (dmin == 0) & (dmax == 0))
        return bool((ok & valid).any())
    if s < 0:
        lo, hi, s = -hi, -lo, -s
    d_lo = np.maximum(lo // s + 1, dmin)
    d_hi = np.minimum(-((-hi) // s) - 1, dmax)
    ok = (d_lo <= d_hi) & ~(skip & (d_lo == 0) & (d_hi == 0))
    return bool((ok & valid).any())


@dataclass(frozen=True)
class HazardPairs:
    """Static part of the memory-hazard test of a body (see :func:`_hazard_pairs`)."""

    static: bool  # a conflict between two accesses through the same pointer
    cross: dict = field(hash=False)  # (p, q) -> ((a, b, dmin, dmax, skip_zero), ...)
    extent: dict = field(hash=False)  # pointer -> (min offset, max offset + width)
    #: results of BatchNumerics._memory_hazard by base array (a pure function of the bases
    #: for this body, store groups, strides and trip count)
    seen: dict = field(hash=False, compare=False, default_factory=dict)


@functools.lru_cache(maxsize=4096)
def _hazard_pairs(body: tuple[Instr, ...], store_groups: tuple, strides: tuple[int, ...], n: int,
                  fused_only: bool = False) -> HazardPairs:
    """The conflicting-pair candidates of the vectorised evaluation of ``body`` for ``n``
    iterations: a store S and a load L conflict iff some iteration of S writes bytes L reads in a
    later iteration (or the same one, L after S in the body); two stores conflict iff the one
    the vectorised order executes later also writes, in an earlier iteration (or the same one,
    earlier in the body), bytes the other one writes (members of one coalesced group: any overlap
    across iterations). Pairs through the same
    pointer are decided here (exact: equal stride, known offset difference). ``fused_only``:
    only the pairs of a store and a fused-send load (are the fused loads exact when executed
    ahead of the body, ``BatchNumerics.fused_sends``)."""
    rank: dict[int, int] = {}
    r = 0
    for _op, ptr, members in store_groups:
        if n > 1 and strides[ptr] == 0:
            continue
        for jj, _ in members:
            rank[jj] = r
        r += 1
    for jj, ins in enumerate(body):
        if ins.op in STORES and jj not in rank:
            rank[jj] = r
            r += 1
    acc = [(jj, ins) for jj, ins in enumerate(body) if _width(ins.op)]
    extent: dict[int, tuple[int, int]] = {}
    for _, ins in acc:
        assert ins.ptr is not None  # a memory access (width > 0)
        lo, hi = extent.get(ins.ptr, (ins.offset, ins.offset + _width(ins.op)))
        extent[ins.ptr] = (min(lo, ins.offset), max(hi, ins.offset + _width(ins.op)))
    stores = [(jj, ins) for jj, ins in acc if ins.op in STORES]
    loads = [(jj, ins) for jj, ins in acc if ins.op in LOADS
             and (not fused_only or ins.op in FUSED_SEND)]
    pairs: list[tuple[Instr, Instr, int, int, bool]] = []
    for js, st in stores:
        for jl, ld in loads:
            pairs.append((st, ld, 0 if js < jl else 1, n - 1, False))
        for jb, other in stores if not fused_only else ():
            if jb == js:
                continue
            if rank[jb] > rank[js]:  # `other` wins the vectorised order; S wins the sequential
                # one when its iteration is later, or the same with S later in the body
                pairs.append((st, other, -(n - 1), 0 if js > jb else -1, False))
            elif rank[jb] == rank[js] and jb > js:
                pairs.append((st, other, -(n - 1), n - 1, True))
    cross: dict[tuple[int, int], list] = {}
    for a, b, dmin, dmax, skip in pairs:
        assert a.ptr is not None and b.ptr is not None  # loads and stores
        if a.ptr == b.ptr:
            if _overlaps(a.offset, b.offset, strides[a.ptr], strides[b.ptr], _width(a.op), _width(b.op),
                         n, dmin, dmax, skip):
                return HazardPairs(True, {}, extent)
        else:
            cross.setdefault((a.ptr, b.ptr), []).append((a, b, dmin, dmax, skip))
    return HazardPairs(False, {k: tuple(v) for k, v in cross.items()}, extent)


class NumericsError(SimError):
    """A micro-kernel access that is misaligned or outside the LDM."""


def _width(op: str) -> int:
    if op in LOADS_F64_VEC or op == "vstd":
        return 32
    if op in LOADS_F32_VEC or op == "vsts":
        return 16
    if op in LOADS_F64_REP or op == "fstd":
        return 8
    if op in LOADS_F32_REP or op == "fsts":
        return 4
    return 0


def memory_accesses(body: tuple[Instr, ...]) -> tuple[tuple[str, int | None, int, int], ...]:
    """(mnemonic, pointer, offset, width in bytes) of every LDM access of a body."""
    return tuple((i.op, i.ptr, i.offset, _width(i.op)) for i in body if _width(i.op))


def check_run_addresses(accesses, cpe: int, bases: tuple[int, ...], strides: tuple[int, ...],
                        n: int, ldm_bytes: int, align: int) -> None:
    """Bounds and alignment of every LDM access of a run (integer arithmetic, no arrays).

    ``accesses``: :func:`memory_accesses` of the body. Raises :class:`MemoryBoundsError` /
    :class:`NumericsError` naming the CPE and the instruction.
    """
    for op, ptr, off, w in accesses:
        if ptr is None or ptr >= len(bases):
            raise NumericsError(f"CPE {cpe}: '{op}' uses pointer p{ptr} of a micro-kernel "
                                f"with {len(bases)} pointer(s)")
        b, st = bases[ptr] + off, strides[ptr]
        last = b + (n - 1) * st
        lo, hi = (b, last + w) if st >= 0 else (last, b + w)
        if lo < 0 or hi > ldm_bytes:
            raise MemoryBoundsError(f"CPE {cpe}: '{op}' accesses LDM [{lo}, {hi}) outside the "
                                    f"{ldm_bytes}-byte LDM")
        need = w if w < align else align
        if b % need or (n > 1 and st % need):
            raise NumericsError(f"CPE {cpe}: '{op}' at LDM address {b} (stride {st}) is not "
                                f"{need}-byte aligned")


_AR4 = np.arange(4)
_REP_LOADS = LOADS_F64_REP | LOADS_F32_REP  # scalar loads: the value in all 4 lanes


def _bc(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``np.broadcast_to`` that returns ``a`` itself when it already has ``shape``."""
    return a if a.shape == shape else np.broadcast_to(a, shape)


#: SW-64 fp compare (true = 2.0), select, divide, square root (lane-wise; IEEE inf/NaN rules)
_SW64_FP = {
    "vfcmpeq": lambda x: np.where(x[0] == x[1], 2.0, 0.0),
    "vfcmple": lambda x: np.where(x[0] <= x[1], 2.0, 0.0),
    "vfcmplt": lambda x: np.where(x[0] < x[1], 2.0, 0.0),
    "vfseleq": lambda x: np.where(x[0] == 0.0, x[1], x[2]),
    "vfsellt": lambda x: np.where(x[0] < 0.0, x[1], x[2]),
    "vdivd": lambda x: x[0] / x[1],
    "vdivs": lambda x: x[0] / x[1],
    "vsqrtd": lambda x: np.sqrt(x[0]),
    "vsqrts": lambda x: np.sqrt(x[0]),
}


def _compute(op: str, x: list[np.ndarray], lane: int = 0) -> np.ndarray:
    if op == "vinsf":  # x[1] with lane `lane` = x[0][0]
        shape = np.broadcast_shapes(x[0].shape, x[1].shape)
        r = np.array(np.broadcast_to(x[1], shape))
        r[..., lane] = np.broadcast_to(x[0][..., 0], shape[:-1])
        return r
    if op == "vextf":  # lane `lane` of x[0] in every lane
        return np.repeat(x[0][..., lane : lane + 1], 4, axis=-1)
    if op in ("vmad", "fmad"):
        return x[0] * x[1] + x[2]
    if op in ("vmas", "fmas"):
        f = np.float32
        return (x[0].astype(f) * x[1].astype(f) + x[2].astype(f)).astype(np.float64)
    single = op.endswith("s") and op not in ("vadd", "vsub", "vmul")
    if op.startswith(("vadd", "fadd")):
        r = x[0] + x[1]
    elif op.startswith(("vsub", "fsub")):
        r = x[0] - x[1]
    elif op.startswith(("vmul", "fmul")):
        r = x[0] * x[1]
    elif op in _SW64_FP:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _SW64_FP[op](x)
    else:
        raise NumericsError(f"no numerics for '{op}'")
    return r.astype(np.float32).astype(np.float64) if single else r


def _fma_layout(body: tuple, plan: BodyPlan, fma: list[int]) -> tuple:
    """Per-body layout of the deferred ``vmad`` reductions (``BatchNumerics._reduce_deferred``):
    one (instr, src) site per distinct left / right operand (``plan.src_kind``), in first-use
    order; per accumulator its (left, right) operand indices ``ia`` / ``ib``; the accumulator
    registers; ``grid``: when the accumulators are the whole left x right grid (any order) with
    distinct registers, (instrs, registers) in row-major grid order (results need no gather)."""
    lid: dict[tuple, int] = {}
    rid: dict[tuple, int] = {}
    lsites: list[tuple[int, int]] = []
    rsites: list[tuple[int, int]] = []
    ia: list[int] = []
    ib: list[int] = []
    for j in fma:
        ka, kb = plan.src_kind[j][0], plan.src_kind[j][1]
        if ka not in lid:
            lid[ka] = len(lsites)
            lsites.append((j, 0))
        if kb not in rid:
            rid[kb] = len(rsites)
            rsites.append((j, 1))
        ia.append(lid[ka])
        ib.append(rid[kb])
    A, B = len(lsites), len(rsites)
    acc_regs = [body[j].src[2] for j in fma]
    grid = None
    flat = [a * B + b for a, b in zip(ia, ib)]
    if len(fma) == A * B and len(set(flat)) == len(flat) and len(set(acc_regs)) == len(fma):
        at = {p: k for k, p in enumerate(flat)}
        grid = ([fma[at[p]] for p in range(A * B)], [acc_regs[at[p]] for p in range(A * B)])
    return tuple(lsites), tuple(rsites), ia, ib, grid, acc_regs


def _word_index(mem: np.ndarray, es: int, lanes: int, cpes: np.ndarray, base: np.ndarray,
                stride: int, n: int, offsets: np.ndarray) -> np.ndarray:
    """``(C, n*k*L)`` indices into ``mem.reshape(-1)`` (``mem``: the ``(n_cpes, words)`` LDM
    view of element size ``es``) of the words at byte addresses ``base[c] + i * stride +
    offsets[k]`` of CPE ``cpes[c]``: ``lanes`` = 4 (the 4 consecutive words of a vector), 1
    (the word), or 0 (the word repeated in 4 lanes: a scalar load's replicated value). The
    per-(iteration, access, lane) pattern is cached; every address is a multiple of ``es``
    (alignment checked by the timing pass)."""
    key = (es, lanes, stride, n, offsets.tobytes())
    pat = _WORD_PATTERNS.get(key)
    if pat is None:
        w = (np.arange(n, dtype=np.int64)[:, None] * stride + offsets) // es
        pat = (w[..., None] + (_AR4 if lanes == 4 else 0 * _AR4[:max(lanes, 1) if lanes else 4]))
        pat = pat.reshape(-1)
        if len(_WORD_PATTERNS) > 4096:
            _WORD_PATTERNS.clear()
        _WORD_PATTERNS[key] = pat
    if (base & (es - 1)).any():  # pragma: no cover - pointer bases not element-aligned
        w = ((base[:, None] + np.arange(n, dtype=np.int64) * stride)[:, :, None] + offsets) // es
        w = w[..., None] + (_AR4 if lanes == 4 else 0 * _AR4[:max(lanes, 1) if lanes else 4])
        return (cpes * mem.shape[1])[:, None] + w.reshape(len(cpes), -1)
    return (cpes * mem.shape[1] + base // es)[:, None] + pat


#: _word_index's patterns by (element size, lanes, stride, n, offsets)
_WORD_PATTERNS: dict[tuple, np.ndarray] = {}


def load_scalars(ldm, op: str, cpes: np.ndarray, base: np.ndarray, stride: int, n: int,
                 offsets: np.ndarray) -> np.ndarray:
    """``(C, n, k)`` float64 values of ``k`` scalar loads (``LOADS_F64_REP``/``LOADS_F32_REP``)
    at the addresses of :func:`load_group` (which returns them replicated in 4 lanes)."""
    f64 = op in LOADS_F64_REP
    mem = ldm.f64 if f64 else ldm.f32
    idx = _word_index(mem, 8 if f64 else 4, 1, cpes, base, stride, n, offsets)
    v = np.take(mem.reshape(-1), idx).reshape(len(cpes), n, len(offsets))
    return v if f64 else v.astype(np.float64)


def load_group(ldm, op: str, cpes: np.ndarray, base: np.ndarray, stride: int, n: int,
               offsets: np.ndarray) -> np.ndarray:
    """``(C, n, k, 4)`` float64 values of ``k`` loads of kind ``op`` (a vector: 4 lanes; a
    scalar: replicated to 4 lanes) at LDM byte addresses ``base[c] + i * stride + offsets[k]``
    of CPE ``cpes[c]``, iteration ``i < n`` (addresses bounds-checked by the timing pass):
    one 1-D take from the flattened (n_cpes * words) LDM view."""
    f64 = op in LOADS_F64_VEC or op in LOADS_F64_REP
    mem = ldm.f64 if f64 else ldm.f32
    vec = op in LOADS_F64_VEC or op in LOADS_F32_VEC
    idx = _word_index(mem, 8 if f64 else 4, 4 if vec else 0, cpes, base, stride, n, offsets)
    v = np.take(mem.reshape(-1), idx).reshape(len(cpes), n, len(offsets), 4)
    return v if f64 else v.astype(np.float64)


@dataclass(frozen=True)
class _FastProgram:
    """A body that only loads, GETs and accumulates a whole grid of ``vmad`` products
    (SUMMA micro-kernels: the k-loop, the next-step operand fetch), as
    :meth:`BatchNumerics._run_fast` executes it. ``srcs``: value arrays ``(C, n, m, 4)``:
    ``(None, direction)`` = the GET payloads, ``(op, pointer, offsets)`` = a load group;
    ``sends``: (put instr, (source, column)); ``sides``: left / right FMA operands: (source,
    columns of the ``(C, n-1, 2m, 4)`` shifted view for iterations 1.., then the iteration-0
    values: positions + live-in registers of the carried ones, positions + columns of the local
    ones, is-right); ``acc_regs``: the accumulators in grid order (None: no FMA);
    ``writeback``: (source, registers, columns) of the other registers' final values."""

    srcs: tuple
    sends: tuple
    sides: tuple
    acc_regs: slice | np.ndarray | None
    writeback: tuple
    n1_only: bool = False  # stores / cumulative accumulators / live-in operands: trip 1 only
    cumsum: bool = False  # every vmad is one c = a*b + c (trip 1: read in the body, or c rewritten)
    stores: tuple = ()  # (op, pointer, members, k, (dst, grid pos), (dst, regs), ((src, dst, col)))


def _fast_program(body: tuple, plan: BodyPlan) -> _FastProgram | None:
    """The :class:`_FastProgram` of a body, None when it does something else (other fp
    arithmetic, explicit puts, operands not from loads/GETs/registers...)."""
    if plan.unsupported or not plan.order:
        return None
    srcs: list[tuple] = []
    width: list[int] = []
    where: dict[int, tuple[int, int]] = {}
    for d, js in plan.gets.items():
        for k, j in enumerate(js):
            where[j] = (len(srcs), k)
        srcs.append((None, d))
        width.append(len(js))
    for op, ptr, members in plan.load_groups:
        for k, (j, _) in enumerate(members):
            where[j] = (len(srcs), k)
        srcs.append((op, ptr, np.array([o for _, o in members], dtype=np.int64)))
        width.append(len(members))
    fma: list[int] = []
    plain: set[int] = set()
    stores: list[int] = []
    for j in plan.order:
        ins = body[j]
        if ins.op in LOADS:
            if j not in where:
                where[j] = (len(srcs), 0)
                srcs.append((ins.op, ins.ptr, np.array([ins.offset], dtype=np.int64)))
                width.append(1)
        elif ins.op in GETS:
            pass
        elif ins.op == "vmad" and j in plan.acc:
            fma.append(j)
        elif ins.op == "vmad" and ins.src[2] == ins.dst[0] and \
                plan.src_kind[j][2][0] in ("carried", "livein"):
            fma.append(j)  # c = a*b + c, c's register written again later (trip 1 only)
            plain.add(j)
        elif ins.op in STORES:
            stores.append(j)
        else:
            return None
    # stores, accumulators whose values are read in the body, live-in operands: trip count 1
    # only, where every vmad of the grid is one a*b + c
    cumsum = bool(fma) and (fma[0] in plan.acc_cumsum or fma[0] in plain)
    if any((j in plan.acc_cumsum or j in plain) != cumsum for j in fma):
        return None
    n1_only = bool(stores) or cumsum
    sends = []
    for j in plan.puts:
        if j not in where:
            return None
        sends.append((j, where[j]))
    sides: list[tuple] = []
    acc_regs = None
    gpos: dict[int, int] = {}
    if fma:
        lsites, rsites, _, _, grid, _ = _fma_layout(body, plan, fma)
        if grid is None:
            return None
        gpos = {j: k for k, j in enumerate(grid[0])}
        acc_regs = _index(list(grid[1]))
        for sites, right in ((lsites, False), (rsites, True)):
            si0 = None
            cols, f_idx, f_regs = [], [], []
            loc: dict[int, tuple[list, list]] = {}
            for a, (j, k) in enumerate(sites):
                kind, ref = plan.src_kind[j][k]
                if kind == "livein":
                    n1_only = True  # the same value in every iteration: no operand column
                    si0 = -1
                    f_idx.append(a)
                    f_regs.append(ref)
                    continue
                if kind == "local":
                    w, shift = ref, 1
                elif kind == "carried":
                    w, shift = plan.last_writer[ref], 0
                else:
                    return None
                if w not in where:
                    return None
                si, col = where[w]
                if si0 is None:
                    si0 = si
                elif si != si0:
                    n1_only = True  # operands of several arrays: no one operand matrix
                    si0 = -1
                cols.append(shift * width[si] + col)
                if kind == "carried":
                    f_idx.append(a)
                    f_regs.append(ref)
                else:
                    g = loc.setdefault(si, ([], []))
                    g[0].append(a)
                    g[1].append(col)
            ar = lambda x: _index(x) if x else None  # noqa: E731
            sides.append((si0, np.array(cols, dtype=np.int64), ar(f_idx), ar(f_regs),
                          tuple((si, _index(d), _index(c)) for si, (d, c) in loc.items()),
                          right, len(sites)))
    fset = set(fma)
    wb: dict[int, tuple[list, list]] = {}
    for r, w in plan.last_writer.items():
        if w in fset:
            continue
        if w not in where:
            return None
        si, col = where[w]
        g = wb.setdefault(si, ([], []))
        g[0].append(r)
        g[1].append(col)
    writeback = tuple((si, _index(rl), _index(cl)) for si, (rl, cl) in wb.items())
    # stores (trip count 1): coalesced groups, then the others in program order, each value
    # taken from an accumulator (grid position), a loaded/received value or a live-in register
    st: list[tuple] = []
    grouped: set[int] = set()
    units = [(op, ptr, members) for op, ptr, members in plan.store_groups]
    for _, _, members in units:
        grouped.update(j for j, _ in members)
    units += [(body[j].op, body[j].ptr, ((j, body[j].offset),)) for j in sorted(stores)
              if j not in grouped]
    for op, ptr, members in units:
        acc_d, acc_s, reg_d, reg_s = [], [], [], []
        xsrc: dict[int, tuple[list, list]] = {}
        for i, (j, _) in enumerate(members):
            kind, ref = plan.src_kind[j][0]
            if kind == "local" and ref in gpos:
                acc_d.append(i)
                acc_s.append(gpos[ref])
            elif kind == "local" and ref in where:
                si, col = where[ref]
                g = xsrc.setdefault(si, ([], []))
                g[0].append(i)
                g[1].append(col)
            elif kind in ("carried", "livein"):
                reg_d.append(i)
                reg_s.append(ref)
            else:
                return None
        st.append((op, ptr, members, len(members),
                   (_index(acc_d), _index(acc_s)) if acc_d else None,
                   (_index(reg_d), _index(reg_s)) if reg_d else None,
                   tuple((si, _index(d), _index(c)) for si, (d, c) in xsrc.items())))
    return _FastProgram(tuple(srcs), tuple(sends), tuple(sides), acc_regs, writeback,
                        n1_only, cumsum, tuple(st))


def _fma_chain(vl: np.ndarray, vr: np.ndarray, cl: np.ndarray, cr: np.ndarray,
               scalar_left: bool, rl: np.ndarray | None = None,
               rr: np.ndarray | None = None) -> np.ndarray:
    """``S[c, a, b, l] = sum_i vl[c, i, cl[a], l] * vr[c, i, cr[b], l]`` (``(C, n, w, 4)``
    operand views) as one fused multiply-add chain per element over ``i``, starting from 0 --
    the SW26010 ``vmad`` order and what the general path's matmul gives. numpy's matmul
    computes exactly that for these operand layouts (a C-ordered left copy, both matrix sides
    >= 2); other layouts and shapes (numpy's vector special cases, some BLAS paths) sum in
    other orders, so the values would depend on how the runs are batched.
    ``test_sim_numerics.py::test_fma_chain_is_exact`` checks it against an exact FMA
    reference. ``scalar_left``: ``vl`` holds one value in all 4 lanes (scalar loads): one
    (a x n) @ (n x 4b) product per CPE instead of one (a x n) @ (n x b) per lane, same values.
    ``rl`` / ``rr``: row c of the left / right operands is row ``rl[c]`` of ``vl`` (merged
    SUMMA receivers take the senders' rows). Returns ``(C, a, b, 4)``."""
    A, B = len(cl), len(cr)
    if A < 2:  # pad: a 1-row product is one of numpy's vector special cases
        cl = np.concatenate([cl, cl])
    if B < 2:
        cr = np.concatenate([cr, cr])
    n = vl.shape[1]
    if scalar_left:
        bl = np.ascontiguousarray(vl[..., 0][:, :, cl])  # (C, n, a), C order
        if rl is not None:
            bl = bl[rl]
        C = len(bl)
        lo = int(cr[0])
        if rr is None and len(cr) > 1 and _consecutive(cr):
            # consecutive right columns: one window view of vr (lanes merged), no copy
            br = vr[:, :, lo:lo + len(cr)].reshape(C, n, len(cr) * 4)
        else:
            br = np.take(vr, cr, axis=2)
            if rr is not None:
                br = br[rr]
            br = br.reshape(C, n, len(cr) * 4)
        S = np.matmul(bl.transpose(0, 2, 1), br).reshape(C, len(cl), len(cr), 4)
    else:
        br = np.take(vr, cr, axis=2)  # (C, n, b, 4) C order
        bl = np.take(vl, cl, axis=2)
        if rl is not None:
            bl = bl[rl]
        if rr is not None:
            br = br[rr]
        S = np.matmul(bl.transpose(0, 3, 2, 1), br.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)
    return S[:, :A, :B] if (A < 2 or B < 2) else S


def _consecutive(xs: np.ndarray) -> bool:
    """Is ``xs`` a run of consecutive increasing integers? (cached by value)"""
    key = xs.tobytes()
    hit = _CONSECUTIVE.get(key)
    if hit is None:
        hit = _CONSECUTIVE[key] = bool((np.diff(xs) == 1).all())
    return hit


_CONSECUTIVE: dict[bytes, bool] = {}


def _index(xs: list[int]) -> slice | np.ndarray:
    """A slice when ``xs`` is a run of consecutive integers (basic indexing: views, no
    gathers), else an index array."""
    if xs and xs == list(range(xs[0], xs[0] + len(xs))):
        return slice(xs[0], xs[0] + len(xs))
    return np.array(xs, dtype=np.int64)


class BatchNumerics:
    """Numerics of one micro-kernel body run by ``C`` CPEs at once (SPMD batching).

    Every value is an array ``(C, n, 4)`` (CPE, iteration, lane) of float64 (fp32 values are
    rounded to fp32 and held in float64 lanes). ``regs``: the engine's register files
    ``(64, 32, 4)``; ``ldm``: :class:`LDMArray`; ``bases``: ``(C, P)`` pointer start addresses;
    ``inputs``: direction -> ``(C, n, m, 4)`` payloads of the run's GETs (m per iteration, body
    order), or ``(Y, rows)`` whose row ``c`` is ``Y[rows[c]]`` (``Engine._merged_inputs``).
    :meth:`run` returns ``{put instruction index: (C, n, 4)}``. Floating-point overflow
    and invalid operations give IEEE inf/nan like the FPU: callers run it under
    ``np.errstate(over="ignore", invalid="ignore")`` as ``Engine.flush_numerics`` does (no
    per-run context switch here).
    """

    #: vmad accumulators of :meth:`run` (set by ``_reduce_deferred``): (instructions, their
    #: registers, ``(C, f, 4)`` final values), scattered at once; else None
    acc_out: tuple[Sequence[int], Any, np.ndarray] | None

    def __init__(self, body: tuple[Instr, ...], plan: BodyPlan, cpes: np.ndarray, regs: np.ndarray,
                 ldm, n: int, bases: np.ndarray, strides: tuple[int, ...],
                 inputs: Mapping[str, np.ndarray | tuple[np.ndarray, np.ndarray]]) -> None:
        self.body, self.plan, self.cpes, self.regs, self.ldm, self.n = body, plan, cpes, regs, ldm, n
        self.bases = bases
        self.strides = strides
        self.inputs = inputs
        #: GET directions whose payloads are known to hold one value in all 4 lanes (messages
        #: of scalar loads, ``Engine._merged_inputs``): the fast path multiplies lane 0 only
        self.rep: frozenset[str] | set[str] = frozenset()
        self._it = np.arange(n, dtype=np.int64)

    def _addr(self, ins: Instr) -> np.ndarray:
        """(C, n) byte addresses of ``ins``."""
        ptr = cast(int, ins.ptr)  # a load or store: it has a pointer
        return (self.bases[:, ptr] + ins.offset)[:, None] + self._it[None, :] * self.strides[ptr]

    def _load(self, ins: Instr) -> np.ndarray:
        op = ins.op
        a = self._addr(ins)
        c = self.cpes[:, None]
        if op in LOADS_F64_VEC:
            return self.ldm.f64[c[:, :, None], (a // 8)[:, :, None] + _AR4]
        if op in LOADS_F32_VEC:
            return self.ldm.f32[c[:, :, None], (a // 4)[:, :, None] + _AR4].astype(np.float64)
        if op in LOADS_F64_REP:
            v = self.ldm.f64[c, a // 8]
        else:
            v = self.ldm.f32[c, a // 4].astype(np.float64)
        return np.repeat(v[:, :, None], 4, axis=2)

    def _group_addr(self, ptr: int, members: tuple) -> np.ndarray:
        """(C, n, k) byte addresses of k accesses through pointer ``ptr``."""
        base = self.bases[:, ptr][:, None] + self._it[None, :] * self.strides[ptr]
        return base[:, :, None] + np.array([o for _, o in members], dtype=np.int64)

    def _load_group(self, op: str, ptr: int, members: tuple) -> np.ndarray:
        """(C, n, k, 4) values of k loads of kind ``op`` through pointer ``ptr``."""
        return load_group(self.ldm, op, self.cpes, self.bases[:, ptr], self.strides[ptr], self.n,
                          np.array([o for _, o in members], dtype=np.int64))

    def _store_group(self, op: str, ptr: int, members: tuple, vals: np.ndarray) -> None:
        """Store ``vals`` ``(C, n, k, 4)`` (scalar stores: lane 0) of k stores of kind ``op``
        through pointer ``ptr``: one flat fancy assignment, elements in (CPE, iteration, store,
        lane) order (a later one wins on a repeated address)."""
        f64 = op in ("vstd", "fstd")
        mem = self.ldm.f64 if f64 else self.ldm.f32
        scalar = op in STORES_SCALAR
        idx = _word_index(mem, 8 if f64 else 4, 1 if scalar else 4, self.cpes,
                          self.bases[:, ptr], self.strides[ptr], self.n,
                          np.array([o for _, o in members], dtype=np.int64))
        v = vals[..., :1] if scalar else vals
        mem.reshape(-1)[idx] = (v if f64 else v.astype(np.float32)).reshape(len(self.cpes), -1)

    def _store(self, ins: Instr, val: np.ndarray) -> None:
        a = self._addr(ins)
        n = self.n
        val = _bc(val, (len(self.cpes), n, 4))
        # same address every iteration: the last one wins (cast: a store has a pointer)
        if n > 1 and self.strides[cast(int, ins.ptr)] == 0:
            a, val = a[:, -1:], val[:, -1:]
        if ins.op in STORES_SCALAR:  # lane 0
            c1 = self.cpes[:, None]
            if ins.op == "fstd":
                self.ldm.f64[c1, a // 8] = val[..., 0]
            else:
                self.ldm.f32[c1, a // 4] = val[..., 0].astype(np.float32)
            return
        c = self.cpes[:, None, None]
        if ins.op == "vstd":
            self.ldm.f64[c, (a // 8)[:, :, None] + _AR4] = val
        else:
            self.ldm.f32[c, (a // 4)[:, :, None] + _AR4] = val.astype(np.float32)

    def _memory_hazard(self) -> bool:
        """True if the vectorised evaluation (all loads first, then the stores: coalesced
        groups, then the others in program order, each over all iterations) could differ from
        executing the iterations in order (rule: :func:`_hazard_pairs`). Pairs through the same
        pointer are decided once per body (cached); pairs through two pointers only when the
        address ranges of the two pointers overlap in this run."""
        return self._hazard(False)

    def fused_hazard(self) -> bool:
        """True if some store of the body may write, in an earlier iteration (or the same one,
        earlier in the body), bytes a fused-send load reads: :meth:`fused_sends` would then
        differ from the loads of the sequential execution."""
        return self._hazard(True)

    def _hazard(self, fused_only: bool) -> bool:
        plan = self.plan
        if not plan.has_store:
            return False
        dkey = ("hazard", self.strides, self.n, fused_only)
        hp = plan.derived.get(dkey)
        if hp is None:
            hp = plan.derived[dkey] = _hazard_pairs(self.body, plan.store_groups, self.strides,
                                                    self.n, fused_only)
        if hp.static:
            return True
        if not hp.cross:
            return False
        key = (self.bases.shape, self.bases.tobytes())
        hit = hp.seen.get(key)
        if hit is None:
            if len(hp.seen) > 4096:
                hp.seen.clear()
            hit = hp.seen[key] = self._cross_hazard(hp)
        return hit

    def _cross_hazard(self, hp: HazardPairs) -> bool:
        n = self.n
        ext = hp.seen.get("ext")
        if ext is None:  # per pointer pair: p, q, byte ranges relative to the bases
            keys = list(hp.cross)
            lo_hi = []
            for p, q in keys:
                (p0, p1), (q0, q1) = hp.extent[p], hp.extent[q]
                sp, sq = self.strides[p], self.strides[q]
                lo_hi.append((p0 + min(0, (n - 1) * sp), p1 + max(0, (n - 1) * sp),
                              q0 + min(0, (n - 1) * sq), q1 + max(0, (n - 1) * sq)))
            r = np.array(lo_hi, dtype=np.int64).reshape(-1, 4)
            ext = (keys, np.array([k[0] for k in keys]), np.array([k[1] for k in keys]),
                   r[:, 0], r[:, 1], r[:, 2], r[:, 3])
            hp.seen["ext"] = ext
        keys, ps, qs, a0, a1, b0, b1 = ext
        bases = self.bases
        if len(bases) > 1 and (bases == bases[0]).all():
            bases = bases[:1]  # SPMD: the same pointers on every CPE
        bp, bq = bases[:, ps], bases[:, qs]
        hit = ((bp + a0 < bq + b1) & (bq + b0 < bp + a1)).any(axis=0)
        for i in np.flatnonzero(hit).tolist():
            p, q = keys[i]
            vec = hp.seen.get(("vec", p, q))
            if vec is None:  # the pairs of (p, q) as columns: offsets, widths, d range, skip
                pairs = hp.cross[(p, q)]
                col = lambda xs: np.array(xs, dtype=np.int64)[:, None]  # noqa: E731
                vec = hp.seen[("vec", p, q)] = (
                    col([a.offset for a, *_ in pairs]), col([b.offset for _, b, *_ in pairs]),
                    col([_width(a.op) for a, *_ in pairs]), col([_width(b.op) for _, b, *_ in pairs]),
                    col([x[2] for x in pairs]), col([x[3] for x in pairs]),
                    np.array([x[4] for x in pairs], dtype=bool)[:, None])
            oa, ob, wa, wb, dmin, dmax, skip = vec
            if _overlaps_all(bases[:, p] + oa, bases[:, q] + ob, self.strides[p], self.strides[q],
                             wa, wb, n, dmin, dmax, skip):
                return True
        return False

    def _overlap(self, a: Instr, b: Instr, dmin: int, dmax: int, skip_zero: bool = False) -> bool:
        """Does iteration i of ``a`` touch bytes of iteration i + d of ``b`` for some d in
        [dmin, dmax] (d != 0 if ``skip_zero``) and some i, on any CPE of the batch?"""
        n = self.n
        assert a.ptr is not None and b.ptr is not None  # loads and stores
        ba = self.bases[:, a.ptr] + a.offset
        bb = self.bases[:, b.ptr] + b.offset
        sa, sb = self.strides[a.ptr], self.strides[b.ptr]
        return bool(np.any(_overlaps(ba, bb, sa, sb, _width(a.op), _width(b.op), n, dmin, dmax, skip_zero)))

    def run(self) -> dict[int, np.ndarray]:
        plan = self.plan
        if plan.unsupported:
            raise NumericsError(f"CPE {int(self.cpes[0])}: {plan.unsupported}")
        if not plan.order or self._memory_hazard():
            return self.run_sequential()
        fast = plan.derived.get("fast", False)
        if fast is False:
            fast = plan.derived["fast"] = _fast_program(self.body, plan)
        if fast is not None and (self.n == 1 or not fast.n1_only) and not (
                fast.sends and self._indirect()):
            return self._run_fast(fast)
        gets = self._materialize()
        body, n = self.body, self.n
        C = len(self.cpes)
        regs = self.regs
        cpes = self.cpes
        val: dict[int, np.ndarray] = {}
        sends: dict[int, np.ndarray] = {}
        get_pos = {d: {j: k for k, j in enumerate(js)} for d, js in plan.gets.items()}
        deferred: list[int] = []
        stores: list[int] = []
        carried_cache: dict[int, np.ndarray] = {}
        livein_cache: dict[int, np.ndarray] = {}

        def livein(r: int) -> np.ndarray:
            v = livein_cache.get(r)
            if v is None:
                v = regs[cpes, r][:, None, :]  # (C, 1, 4)
                livein_cache[r] = v
            return v

        def operand(j: int, k: int) -> np.ndarray:
            kind, ref = plan.src_kind[j][k]
            if kind == "local":
                return val[ref]
            if kind == "livein":
                return livein(ref)
            if kind == "zero":
                return np.zeros((1, 1, 4))
            hit = carried_cache.get(ref)
            if hit is not None:
                return hit
            cur = _bc(val[plan.last_writer[ref]], (C, n, 4))
            out = np.empty((C, n, 4))
            out[:, 0] = regs[cpes, ref]
            out[:, 1:] = cur[:, :-1]
            carried_cache[ref] = out
            return out

        # provenance of values that are columns of one (C, n, m, 4) array (grouped loads, GETs):
        # the FMA reduction then multiplies views of that array instead of stacked copies
        prov: dict[int, tuple[np.ndarray, int]] = {}
        self.prov = prov
        for op, ptr, members in plan.load_groups:
            data = self._load_group(op, ptr, members)
            for k, (j, _) in enumerate(members):
                val[j] = data[:, :, k]
                prov[j] = (data, k)
                if op in FUSED_SEND:
                    sends[j] = val[j]
        for j in plan.order:
            ins = body[j]
            op = ins.op
            if op in LOADS:
                if j in val:
                    continue
                v = self._load(ins)
                val[j] = v
                if op in FUSED_SEND:
                    sends[j] = v
            elif op in STORES:
                stores.append(j)
            elif op in CONSTS:
                val[j] = np.full((1, 1, 4), ins.imm)
            elif op in GETS:
                d = "row" if op == "getr" else "col"
                val[j] = gets[d][:, :, get_pos[d][j]]
                prov[j] = (gets[d], get_pos[d][j])
            elif op in PUTS:
                sends[j] = _bc(operand(j, 0), (C, n, 4))
            elif j in plan.acc and j not in plan.acc_cumsum:
                deferred.append(j)
            elif j in plan.acc:
                ai = _addend_index(ins)
                xs = [operand(j, k) for k in range(len(ins.src)) if k != ai]
                inc = _bc(self._increment(op, xs), (C, n, 4))
                sign = -1.0 if op.startswith(("vsub", "fsub")) else 1.0
                # (cast: an accumulating instruction has an addend)
                val[j] = livein(ins.src[cast(int, ai)]) + sign * np.cumsum(inc, axis=1)
            else:
                val[j] = _compute(op, [operand(j, k) for k in range(len(ins.src))], ins.offset)
        done: set[int] = set()
        for op, ptr, members in plan.store_groups:
            if n > 1 and self.strides[ptr] == 0:
                continue
            vals = np.stack([_bc(operand(j, 0), (C, n, 4)) for j, _ in members], axis=2)
            self._store_group(op, ptr, members, vals)
            done.update(j for j, _ in members)
        for j in sorted(stores):  # program order: a later store to the same address wins
            if j not in done:
                self._store(body[j], operand(j, 0))
        self.acc_out = None
        self._reduce_deferred(deferred, operand, val, livein)
        skip: frozenset | tuple = ()
        if self.acc_out is not None:  # vmad accumulators: one scatter of their final values
            fma, acc_regs, res = self.acc_out
            regs[cpes[:, None], acc_regs] = res
            skip = frozenset(fma)
        for r, w in plan.last_writer.items():
            if w in skip:
                continue
            last = val.get(w)
            if last is None:
                continue
            last = _bc(last, (C, last.shape[1], 4))
            regs[cpes, r] = last[:, -1]
        return sends

    def _run_fast(self, prog: _FastProgram) -> dict[int, np.ndarray]:
        """:meth:`run` for a :class:`_FastProgram` body: the same operations on the same values
        in the same order (bit-identical), with the per-body structure derived once."""
        xs, comp, rows = self._fast_sources(prog)
        sends: dict[int, np.ndarray] = {}
        prov: dict[int, tuple[np.ndarray, int]] = {}
        self.prov = prov
        for j, (si, k) in prog.sends:
            x = xs[si]
            if si in comp:
                x = xs[si] = np.repeat(x[..., None], 4, axis=3)
                del comp[si]
            sends[j] = x[:, :, k]
            prov[j] = (x, k)
        rc = self.regs[self.cpes]  # (C, R, 4) the lanes' register files, written back at the end
        S = self._fast_partial(prog, xs, comp, rows) if prog.acc_regs is not None and \
            self.n > 1 else None
        self._fast_registers(prog, xs, comp, rows, rc, S)
        self.regs[self.cpes] = rc
        return sends

    def _fast_sources(self, prog: _FastProgram) -> tuple[list, dict, dict]:
        """The value arrays of a fast program's sources: ``(xs, comp, rows)`` -- ``xs[si]``
        ``(C, n, k, 4)`` (scalar loads: ``(C, n, k)``, listed in ``comp``; row-indirect GET
        payloads: the senders' array, row map in ``rows``)."""
        n = self.n
        cpes = self.cpes
        xs = []
        comp: dict[int, np.ndarray] = {}  # scalar loads: (C, n, k), one word per value
        rows: dict[int, np.ndarray] = {}  # GET payloads (Y, rows): row c is Y[rows[c]]
        one = self._trip1_loads(prog) if n == 1 and len(prog.srcs) > 2 else None
        for si, src in enumerate(prog.srcs):
            if one is not None and si in one:
                x = one[si]
                if x.ndim == 3:
                    comp[si] = x
                xs.append(x)
            elif src[0] is None:
                got = self.inputs[src[1]]
                if isinstance(got, tuple):
                    rows[si] = got[1]
                    got = got[0]
                xs.append(got)
            elif src[0] in _REP_LOADS:
                op, ptr, offs = src
                x1 = load_scalars(self.ldm, op, cpes, self.bases[:, ptr], self.strides[ptr], n,
                                  offs)
                comp[si] = x1
                xs.append(x1)  # (C, n, k): the value of all 4 lanes (x[..., None] broadcasts)
            else:
                op, ptr, offs = src
                xs.append(load_group(self.ldm, op, cpes, self.bases[:, ptr], self.strides[ptr], n,
                                     offs))
        return xs, comp, rows

    def _fast_partial(self, prog: _FastProgram, xs: list, comp: dict, rows: dict) -> np.ndarray:
        """``S[c, a, b, l]``: the vmad grid's products of iterations >= 1, summed (n > 1)."""
        views = []
        for si, _cols, _f_idx, _f_regs, _loc, right, _a in prog.sides:
            x = xs[si]
            if si in comp:  # lane-scalar values: one lane (the left side's form)
                x = comp[si][..., None] if not right else \
                    np.repeat(comp[si][..., None], 4, axis=3)
            elif not x.flags.c_contiguous:
                x = np.ascontiguousarray(x)
            Cx, nx, m, L = x.shape
            # V[:, i, s*m + k] = x[:, i + s, k] (s = 0: carried, 1: local operand)
            views.append(np.ndarray((Cx, nx - 1, 2 * m, L), x.dtype, x, 0, x.strides))
        # one FMA chain per element (see _fma_chain): the values do not depend on the batching
        return _fma_chain(views[0], views[1], prog.sides[0][1], prog.sides[1][1],
                          self._lane_scalar(prog, prog.sides[0][0]),
                          rows.get(prog.sides[0][0]), rows.get(prog.sides[1][0]))

    def _fast_registers(self, prog: _FastProgram, xs: list, comp: dict, rows: dict,
                        rc: np.ndarray, S) -> None:
        """A fast program's register effects on ``rc`` (the lanes' register files) and its
        stores, given its sources and partial sums ``S`` (None: trip 1)."""
        C = len(self.cpes)
        if prog.acc_regs is not None:
            first = []
            for _si, _cols, f_idx, f_regs, loc, _right, a in prog.sides:
                f = np.empty((C, a, 4))
                if f_idx is not None:
                    f[:, f_idx] = rc[:, f_regs]
                for sj, d, c in loc:
                    v = xs[sj][:, 0, c] if sj not in rows else xs[sj][:, 0, c][rows[sj]]
                    f[:, d] = v[..., None] if sj in comp else v
                first.append(f)
            fl, fr = first
            A, B = fl.shape[1], fr.shape[1]
            acc = prog.acc_regs
            # the iteration-0 products in grid order (a-major): fl[a] * fr[b], contiguous
            p0 = np.repeat(fl, B, axis=1)
            p0 *= np.concatenate([fr] * A, axis=1) if A > 1 else fr
            if prog.cumsum:  # trip 1: the accumulator's one value, acc + a*b
                res = rc[:, acc] + p0
            elif S is None:  # trip 1: no further iterations, acc + (0 + a*b)
                res = rc[:, acc] + (0.0 + p0)
            else:
                res = rc[:, acc] + (S.reshape(C, A * B, 4) + p0)
            if prog.stores:
                self._fast_stores(prog, xs, rc, res, rows, comp)
            rc[:, acc] = res
        elif prog.stores:
            self._fast_stores(prog, xs, rc, None, rows, comp)
        for si, rl, cl in prog.writeback:
            v = xs[si][:, -1, cl] if si not in rows else xs[si][:, -1, cl][rows[si]]
            rc[:, rl] = v[..., None] if si in comp else v

    def _indirect(self) -> bool:
        return any(isinstance(x, tuple) for x in self.inputs.values())

    def _materialize(self) -> Mapping[str, np.ndarray]:
        """Row-indirect GET payloads ``(Y, rows)`` (``Engine._merged_inputs``) as arrays; returns
        the payloads."""
        if self._indirect():
            self.inputs = {d: (x[0][x[1]] if isinstance(x, tuple) else x)
                           for d, x in self.inputs.items()}
        return cast(Mapping[str, np.ndarray], self.inputs)  # no (Y, rows) pair left

    def _trip1_loads(self, prog: _FastProgram) -> dict[int, np.ndarray] | None:
        """All load groups of a trip-1 fast program, one take per element size (a tile switch
        body loads ~10 groups): ``{source: (C, 1, k, 4) or (C, 1, k) scalar values}``."""
        key = ("trip1", self.strides)
        lay = self.plan.derived.get(key)
        if lay is None:
            per: dict[int, list] = {}
            for si, src in enumerate(prog.srcs):
                if src[0] is None:
                    continue
                op, ptr, offs = src
                f64 = op in LOADS_F64_VEC or op in LOADS_F64_REP
                es = 8 if f64 else 4
                lanes = 1 if op in _REP_LOADS else 4
                w = (offs // es)[:, None] + (_AR4 if lanes == 4 else 0)
                per.setdefault(es, []).append((si, ptr, len(offs), lanes, w.reshape(-1)))
            lay = []
            for es, groups in per.items():
                pat = np.concatenate([g[4] for g in groups])
                colptr = np.concatenate([np.full(len(g[4]), g[1], dtype=np.int64) for g in groups])
                spans, at = [], 0
                for si, _, k, lanes, w in groups:
                    spans.append((si, at, at + len(w), k, lanes))
                    at += len(w)
                lay.append((es, pat, colptr, spans))
            self.plan.derived[key] = lay
        bases = self.bases
        C = len(self.cpes)
        out: dict[int, np.ndarray] = {}
        for es, pat, colptr, spans in lay:
            if (bases & (es - 1)).any():  # pragma: no cover - pointer bases not aligned
                return None
            mem = self.ldm.f64 if es == 8 else self.ldm.f32
            idx = (bases // es)[:, colptr] + pat
            idx += (self.cpes * mem.shape[1])[:, None]
            v = np.take(mem.reshape(-1), idx)
            if es == 4:
                v = v.astype(np.float64)
            for si, a, b, k, lanes in spans:
                out[si] = v[:, a:b].reshape(C, 1, k, 4) if lanes == 4 else v[:, a:b].reshape(C, 1, k)
        return out

    def _lane_scalar(self, prog: _FastProgram, si: int) -> bool:
        """Do the values of source ``si`` hold one value in all 4 lanes (scalar loads, or GET
        payloads the engine knows to be messages of scalar loads)?"""
        src = prog.srcs[si]
        return src[1] in self.rep if src[0] is None else src[0] in _REP_LOADS

    def _fast_stores(self, prog: _FastProgram, xs: list, rc: np.ndarray, res,
                     rows: dict, comp: dict) -> None:
        """The stores of a trip-1 fast program (before any register is written back): values
        from the accumulators ``res`` (grid order), the loaded/received values, the live-in
        registers ``rc``."""
        C = len(self.cpes)
        for op, ptr, members, k, accs, regs_, xsrc in prog.stores:
            vals = np.empty((C, 1, k, 4))
            if accs is not None:
                vals[:, 0, accs[0]] = res[:, accs[1]]
            if regs_ is not None:
                vals[:, 0, regs_[0]] = rc[:, regs_[1]]
            for si, d, c in xsrc:
                v = xs[si][:, 0, c] if si not in rows else xs[si][:, 0, c][rows[si]]
                vals[:, 0, d] = v[..., None] if si in comp else v
            if len(members) > 1:
                self._store_group(op, ptr, members, vals)
            else:
                self._store(Instr(op, (), (), ptr, members[0][1]), vals[:, :, 0])

    def fused_sends(self) -> dict[int, np.ndarray]:
        """Only the sends of a body whose sends are all fused loads (``vldr``/``vldc``/
        ``ldder``/``lddec``, no ``putr``/``putc``): ``{instr: (C, n, 4)}`` loaded values (grouped
        loads as one gather; ``self.prov`` as in :meth:`run`). No register or LDM is written.
        Exact when :meth:`run` would be vectorised without a memory hazard (the loads then read
        what the sequential execution reads)."""
        plan, body = self.plan, self.body
        sends: dict[int, np.ndarray] = {}
        prov: dict[int, tuple[np.ndarray, int]] = {}
        self.prov = prov
        for op, ptr, members in plan.load_groups:
            if op in FUSED_SEND:
                data = self._load_group(op, ptr, members)
                for k, (j, _) in enumerate(members):
                    sends[j] = data[:, :, k]
                    prov[j] = (data, k)
        for j in plan.puts:
            if j not in sends:
                sends[j] = self._load(body[j])
        return sends

    @staticmethod
    def _increment(op: str, xs: list[np.ndarray]) -> np.ndarray:
        if op in FMA:
            p = xs[0] * xs[1]
            if op in ("vmas", "fmas"):
                p = p.astype(np.float32).astype(np.float64)
            return p
        return xs[0]

    def _reduce_deferred(self, deferred: list[int], operand, val: dict, livein) -> None:
        """Reductions over iterations; vmad products are grouped into one einsum."""
        if not deferred:
            return
        body = self.body
        C, n = len(self.cpes), self.n
        fma = [j for j in deferred if body[j].op == "vmad"]
        if fma:
            # Split every operand into its iteration-0 value and the values of iterations 1..n-1
            # (views: a carried operand is the live-in value, then the producer's values of
            # iterations 0..n-2), so no shifted copy is built. Sum = first*first + rest.rest.
            plan = self.plan
            regs, cpes = self.regs, self.cpes
            parts: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
            keep: list[np.ndarray] = []
            prov = getattr(self, "prov", {})
            # part -> (X, column of the (C, n-1, 2m, 4) view V[:, i, s*m + k] = X[:, i + s, k]):
            # a carried operand of iteration i + 1 is X[:, i, k], a local one X[:, i + 1, k]
            src: dict[tuple, tuple[np.ndarray, int] | None] = {}

            def split(j: int, k: int) -> tuple[tuple, np.ndarray, np.ndarray]:
                kind, ref = plan.src_kind[j][k]
                key = (kind, ref)
                hit = parts.get(key)
                if hit is None:
                    if kind == "carried":
                        w = plan.last_writer[ref]
                        cur = _bc(val[w], (C, n, 4))
                        hit = (regs[cpes, ref], cur[:, :-1])
                        p = prov.get(w)
                        src[key] = p if p is not None and p[0].shape[:2] == (C, n) else None
                    else:
                        x = _bc(operand(j, k), (C, n, 4))
                        keep.append(x)
                        hit = (x[:, 0], x[:, 1:])
                        p = prov.get(ref) if kind == "local" else None
                        src[key] = (p[0], p[0].shape[2] + p[1]) \
                            if p is not None and p[0].shape[:2] == (C, n) else None
                    parts[key] = hit
                return key, hit[0], hit[1]

            lay = plan.derived.get("fma")
            if lay is None:
                lay = plan.derived["fma"] = _fma_layout(body, plan, fma)
            lsites, rsites, ia, ib, grid, acc_regs = lay
            def operands(sites) -> tuple[list[np.ndarray], list[np.ndarray], list]:
                """Per operand site: its values in iterations 1.., in iteration 0, its source."""
                rest: list[np.ndarray] = []
                first: list[np.ndarray] = []
                srcs = []
                for j, k in sites:
                    key, f, r = split(j, k)
                    rest.append(r)
                    first.append(f)
                    srcs.append(src.get(key))
                return rest, first, srcs

            left, first_l, lsrc = operands(lsites)
            right, first_r, rsrc = operands(rsites)
            # S[c, a, b, l] = sum_i L[c, a, i, l] R[c, b, i, l] as one batched matmul over (c, l)
            Lm, lcols = self._operand_matrix(left, lsrc, False)
            Rm, rcols = self._operand_matrix(right, rsrc, True)
            S = np.matmul(Lm, Rm).transpose(0, 2, 3, 1)  # (C, a', b', l)
            if lcols is not None:
                S = S[:, lcols]
            if rcols is not None:
                S = S[:, :, rcols]
            # all accumulators at once: live-in + (S + first products), one gather each (none
            # when they are the whole (a, b) grid: taken in grid order)
            fl = np.stack(first_l, axis=1)
            fr = np.stack(first_r, axis=1)
            if grid is not None:
                fma_g, acc_regs = grid
                tot = (S + fl[:, :, None] * fr[:, None, :]).reshape(C, len(fma_g), 4)
            else:
                fma_g = fma
                tot = S[:, ia, ib] + fl[:, ia] * fr[:, ib]
            res = regs[cpes[:, None], acc_regs] + tot  # (C, f, 4)
            for k, j in enumerate(fma_g):
                val[j] = res[:, k, None]
            self.acc_out = (fma_g, acc_regs, res)
        for j in deferred:
            if j in fma:
                continue
            ins = body[j]
            ai = _addend_index(ins)
            xs = [operand(j, k) for k in range(len(ins.src)) if k != ai]
            inc = _bc(self._increment(ins.op, xs), (C, n, 4)).sum(axis=1)
            sign = -1.0 if ins.op.startswith(("vsub", "fsub")) else 1.0
            out = livein(ins.src[cast(int, ai)])[:, 0] + sign * inc  # (deferred: has an addend)
            if ins.op in ("vmas", "fmas") or (ins.op.endswith("s") and ins.op.startswith("v")):
                out = out.astype(np.float32).astype(np.float64)
            val[j] = out[:, None, :]

    @staticmethod
    def _operand_matrix(parts: list[np.ndarray], srcs: list, right: bool):
        """The iterations 1..n-1 of the FMA operands ``parts`` as a ``(C, l, a, n-1)`` (left) /
        ``(C, l, n-1, b)`` (right) matrix. When all come from one C-contiguous ``(C, n, m, 4)``
        array X (grouped loads / GETs; ``srcs``: (X, column) per part), a strided view of the
        ``2m`` columns ``V[:, i, s*m + k] = X[:, i + s, k]`` (s = 0: carried, 1: local operand)
        plus the column of each part; else the parts stacked (a copy)."""
        if srcs and all(p is not None for p in srcs):
            arr = srcs[0][0]
            cols = [p[1] for p in srcs]
            C, n, m, L = arr.shape
            if n > 1 and arr.flags.c_contiguous and all(p[0] is arr for p in srcs) and \
                    len(set(cols)) == len(cols):
                # as_strided without its Python overhead (arr is C-contiguous: the view's
                # last element (n-1, m-1) of row C-1 is arr's last one)
                v = np.ndarray((C, n - 1, 2 * m, L), arr.dtype, arr, 0, arr.strides)
                lo = min(cols)
                v = v[:, :, lo:max(cols) + 1]  # only the window of columns used
                cols = [c - lo for c in cols]
                return (v.transpose(0, 3, 1, 2) if right else v.transpose(0, 3, 2, 1)), cols
        st = np.stack(parts, axis=1)  # (C, a, n-1, l)
        return (st.transpose(0, 3, 2, 1) if right else st.transpose(0, 3, 1, 2)), None

    # -- exact iteration-by-iteration evaluation ------------------------------------------
    def run_sequential(self) -> dict[int, np.ndarray]:
        gets = self._materialize()
        body, n = self.body, self.n
        C = len(self.cpes)
        sends: dict[int, np.ndarray] = {}
        get_pos = {d: {j: k for k, j in enumerate(js)} for d, js in self.plan.gets.items()}
        for ci in range(C):
            c = int(self.cpes[ci])
            regs = self.regs[c]
            for i in range(n):
                for j, ins in enumerate(body):
                    op = ins.op
                    if op in LOADS or op in STORES:
                        # (cast: a load or store has a pointer)
                        a = int(self.bases[ci, ins.ptr]) + ins.offset + \
                            i * self.strides[cast(int, ins.ptr)]
                    if op in LOADS:
                        if op in LOADS_F64_VEC:
                            v = self.ldm.f64[c, a // 8 : a // 8 + 4].copy()
                        elif op in LOADS_F32_VEC:
                            v = self.ldm.f32[c, a // 4 : a // 4 + 4].astype(np.float64)
                        elif op in LOADS_F64_REP:
                            v = np.full(4, self.ldm.f64[c, a // 8])
                        else:
                            v = np.full(4, float(self.ldm.f32[c, a // 4]))
                        regs[ins.dst[0]] = v
                        if op in FUSED_SEND:
                            sends.setdefault(j, np.zeros((C, n, 4)))[ci, i] = v
                    elif op in CONSTS:
                        regs[ins.dst[0]] = ins.imm
                    elif op in STORES_SCALAR:
                        if op == "fstd":
                            self.ldm.f64[c, a // 8] = regs[ins.src[0]][0]
                        else:
                            self.ldm.f32[c, a // 4] = np.float32(regs[ins.src[0]][0])
                    elif op in STORES:
                        if op == "vstd":
                            self.ldm.f64[c, a // 8 : a // 8 + 4] = regs[ins.src[0]]
                        else:
                            self.ldm.f32[c, a // 4 : a // 4 + 4] = regs[ins.src[0]].astype(np.float32)
                    elif op in GETS:
                        d = "row" if op == "getr" else "col"
                        regs[ins.dst[0]] = gets[d][ci, i, get_pos[d][j]]
                    elif op in PUTS:
                        sends.setdefault(j, np.zeros((C, n, 4)))[ci, i] = regs[ins.src[0]]
                    elif op in FMA or op in FP_BINARY or op in FP_OTHER:
                        x = [regs[r] if r != 31 else np.zeros(4) for r in numeric_sources(ins)]
                        regs[ins.dst[0]] = _compute(op, x, ins.offset)
        return sends
