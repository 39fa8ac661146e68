"""A kernel's compiled code: one typed record per op kind, shared by every execution path.

``compile_body`` turns an ``sw.kernel`` body into a tuple of records with SSA values replaced by
integer *slots* of an environment list, so no interpreter touches xDSL attributes at run time.
One record class per op kind (frozen, slotted; equal records = the same operation, so a body's
records are its structural signature):

* scalar records (:data:`SCALAR`: ``Const``, ``Bin``, ``Select``, ``Copy``, ``LaneId``) have one
  ``eval(env, ids)``, valid for a CPE (int values) and for a set of lanes (``(lanes,)`` int
  arrays: the lockstep tape, ``lockstep.py``);
* operations with a machine effect (``MicroKernelRun``, ``Dma``, ``DmaWait``, ``ReplyReset``,
  ``Barrier``) are executed per CPE by ``runner.KernelProgram._exec`` and become tape entries
  (:class:`MkEntry`, :class:`DmaEntry`, :class:`WaitEntry`, :class:`ResetEntry`, the
  ``Barrier`` record itself, :class:`BranchEntry`) in ``KernelProgram._produce``; the rules they
  obey (DMA issue and channel buffer, reply words, barriers) live once in the engine
  (``Engine.dma_issue``, ``Engine.reply_short``, ``Engine.barrier_register``);
* structure: ``For``, ``If``, ``Yield``.

The static analyses walk the same records: :func:`reads` (slots a block reads), :func:`uses`
(micro-kernel instructions of a block) and :func:`taint` (how a launch's timing depends on its
arguments, for the launch memo, ``memo.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from taihu.backends.sim.memory import SimError
from taihu.backends.sim.microkernel import MicroKernel
from taihu.backends.sim.pipeline import Instr
from taihu.dialects import sw
from taihu.dialects.swsim import LdmAddrOp, ReplySlotOp


class SimDecodeError(SimError):
    """An op the simulator cannot execute (names the op)."""


# -- integer semantics (CPE scalar code and the MPE host program) ----------------------------
def _int_div(name: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``f`` refusing a zero divisor (scalar or any lane) with a diagnostic naming ``name``."""

    def checked(a: Any, b: Any) -> Any:
        if (b == 0).any() if isinstance(b, np.ndarray) else b == 0:
            raise SimError(f"{name}: integer division by zero")
        return f(a, b)

    return checked


def _shift(name: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``f`` refusing a shift amount outside [0, 64) with a diagnostic naming ``name``."""

    def checked(a: Any, b: Any) -> Any:
        if ((b < 0) | (b >= 64)).any() if isinstance(b, np.ndarray) else not 0 <= b < 64:
            shown = b.tolist() if isinstance(b, np.ndarray) else b
            raise SimError(f"{name}: shift amount {shown} outside [0, 64)")
        return f(a, b)

    return checked


INT_BIN: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _int_div("arith.divsi", lambda a, b: int(a / b)),
    arith.DivUIOp: _int_div("arith.divui", lambda a, b: a // b),
    arith.RemSIOp: _int_div("arith.remsi", lambda a, b: a - b * int(a / b)),
    arith.RemUIOp: _int_div("arith.remui", lambda a, b: a % b),
    arith.FloorDivSIOp: _int_div("arith.floordivsi", lambda a, b: a // b),
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
    arith.XOrIOp: lambda a, b: a ^ b,
    arith.ShLIOp: _shift("arith.shli", lambda a, b: a << b),
    arith.ShRSIOp: _shift("arith.shrsi", lambda a, b: a >> b),
}
INT_BIN_NP: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: np.add,
    arith.SubiOp: np.subtract,
    arith.MuliOp: np.multiply,
    arith.DivSIOp: _int_div("arith.divsi", lambda a, b: np.fix(np.true_divide(a, b)).astype(np.int64)),
    arith.DivUIOp: _int_div("arith.divui", np.floor_divide),
    arith.RemSIOp: _int_div("arith.remsi", np.fmod),
    arith.RemUIOp: _int_div("arith.remui", np.mod),
    arith.FloorDivSIOp: _int_div("arith.floordivsi", np.floor_divide),
    arith.MinSIOp: np.minimum,
    arith.MaxSIOp: np.maximum,
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    arith.ShLIOp: _shift("arith.shli", np.left_shift),
    arith.ShRSIOp: _shift("arith.shrsi", np.right_shift),
}
CMP_NP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
          np.less, np.less_equal, np.greater, np.greater_equal]
CMP = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
       lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
       lambda a, b: a > b, lambda a, b: a >= b]
#: integer casts: the simulator's integers are unbounded (the value is copied)
INT_CASTS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
ADD, SUB = INT_BIN[arith.AddiOp], INT_BIN[arith.SubiOp]

#: most iterations one ``scf.for`` of a kernel may run (per CPE, per entry): the simulator
#: interprets every iteration (an event per op and CPE), so a longer loop would not finish in
#: any useful time; refused with a diagnostic instead (issue 15: a 10^9-trip loop hung)
MAX_LOOP_TRIPS = 1 << 20

#: most instruction issues one micro-kernel run may have (trip count x body length, per CPE):
#: the run's timing plan holds one issue time per issue (8 B each, 128 MiB at the bound)
MAX_MICROKERNEL_ISSUES = 1 << 24


def loop_range(kernel: str, lb: int, ub: int, step: int) -> range:
    """The iterations of an ``scf.for`` of kernel ``kernel``; ``SimError`` for a step <= 0
    (an endless loop on the machine) or more than :data:`MAX_LOOP_TRIPS` iterations."""
    if step <= 0:
        raise SimError(f"kernel @{kernel}: scf.for with step {step}: the step must be > 0")
    r = range(lb, ub, step)
    if len(r) > MAX_LOOP_TRIPS:
        raise SimError(f"kernel @{kernel}: scf.for from {lb} to {ub} step {step} runs {len(r)} "
                       f"iterations, more than the simulator's bound of {MAX_LOOP_TRIPS}")
    return r


# -- micro-kernel decoding ------------------------------------------------------------------
def _decode_instr(ins) -> Instr:
    mem = ins.mem()
    rlc = ins.rlc()
    if mem is not None and mem.space == "mem":
        raise SimDecodeError(f"{ins.name}: gld/gstd numerics are not simulated (use DMA, 004 L655)")
    return Instr(
        op=ins.mnemonic,
        dst=ins.writes(),
        src=ins.reads(),
        ptr=None if mem is None else mem.ptr,
        offset=getattr(ins, "lane_index", 0) if mem is None else mem.offset,
        rlc_dst=None if rlc is None or rlc.role != "put" else rlc.dst,
        imm=getattr(ins, "imm", None),
    )


#: decoded instructions by (op class, properties, attributes): an instruction op without
#: operands, results or regions is a function of those (networks repeat few instruction forms)
_INSTR_CACHE: dict[tuple, Instr] = {}


def decode_microkernel(op: sw.MicrokernelOp) -> MicroKernel:
    """``sw.microkernel`` -> :class:`MicroKernel` (register numbers, pointer offsets)."""
    body = []
    cache = _INSTR_CACHE
    for ins in op.instructions():
        if ins.operands or ins.results or ins.regions:
            body.append(_decode_instr(ins))
            continue
        key = (type(ins), tuple(ins.properties.items()), tuple(ins.attributes.items()))
        d = cache.get(key)
        if d is None:
            d = _decode_instr(ins)
            if len(cache) < 1 << 16:
                cache[key] = d
        body.append(d)
    name = op.attributes.get("name")
    label = name.data if name is not None and hasattr(name, "data") else f"microkernel x{op.trip}"
    return MicroKernel(tuple(body), op.pointer_strides(), label)


# -- the records ------------------------------------------------------------------------------
#: ids of the lanes a scalar record is evaluated for: ``(cpe id, mesh row, mesh column)``, each
#: an int (one CPE) or a ``(lanes,)`` int64 array (a lockstep tape)
Ids = tuple[Any, Any, Any]


@dataclass(frozen=True, slots=True)
class Const:
    """``arith.constant``, ``swsim.ldm_addr``, ``swsim.reply_slot``: ``env[out] = value``."""

    out: int
    value: Any

    def eval(self, env: list, ids: Ids) -> None:
        env[self.out] = self.value


@dataclass(frozen=True, slots=True)
class Bin:
    """An integer binary op or ``arith.cmpi``: ``fn`` on ints, ``fn_np`` when an operand is a
    per-lane array."""

    out: int
    lhs: int
    rhs: int
    fn: Callable[[Any, Any], Any]
    fn_np: Callable[[Any, Any], Any]

    def eval(self, env: list, ids: Ids) -> None:
        a, b = env[self.lhs], env[self.rhs]
        if a.__class__ is np.ndarray or b.__class__ is np.ndarray:
            env[self.out] = self.fn_np(a, b)
        else:
            env[self.out] = self.fn(a, b)


@dataclass(frozen=True, slots=True)
class Select:
    """``arith.select``."""

    out: int
    cond: int
    lhs: int
    rhs: int

    def eval(self, env: list, ids: Ids) -> None:
        c = env[self.cond]
        if c.__class__ is np.ndarray:
            env[self.out] = np.where(c, env[self.lhs], env[self.rhs])
        else:
            env[self.out] = env[self.lhs] if c else env[self.rhs]


@dataclass(frozen=True, slots=True)
class Copy:
    """An integer cast (``arith.index_cast``, ``extsi``, ``extui``, ``trunci``): the value."""

    out: int
    src: int

    def eval(self, env: list, ids: Ids) -> None:
        env[self.out] = env[self.src]


@dataclass(frozen=True, slots=True)
class LaneId:
    """``sw.cpe_id`` (axis 0), ``sw.row_id`` (1), ``sw.col_id`` (2)."""

    out: int
    axis: int

    def eval(self, env: list, ids: Ids) -> None:
        env[self.out] = ids[self.axis]


@dataclass(frozen=True, slots=True)
class MicroKernelRun:
    """``sw.microkernel``: ``trip`` iterations of ``mk`` with LDM pointers from ``ptrs``."""

    mk: MicroKernel
    trip: int
    ptrs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Dma:
    """``sw.dma_get`` / ``sw.dma_put``: slots ``mem``, ``ldm``, ``reply``; the descriptor's
    static fields (bytes; ``ldm_limit`` = end of the LDM buffer when known; ``mode``/``mask``
    for gets: ``"pe"`` or ``"bcast"`` to the mesh rows of ``mask``)."""

    kind: str  # "get" | "put"
    mem: int
    ldm: int
    reply: int
    size: int
    bsize: int
    stride: int
    ldm_limit: int | None
    mode: str = "pe"
    mask: int = 0xFF

    def extent(self) -> int:
        """Bytes from the first to the last main-memory byte the descriptor touches."""
        size, bsize, stride = self.size, self.bsize, self.stride
        if bsize == 0 or (bsize == size and stride == 0):
            return size
        return (size // bsize - 1) * (bsize + stride) + bsize


@dataclass(frozen=True, slots=True)
class DmaWait:
    """``sw.dma_wait``: until reply word ``env[reply]`` >= the count (slot ``count_slot``, else
    the constant ``count``)."""

    reply: int
    count_slot: int | None
    count: int


@dataclass(frozen=True, slots=True)
class ReplyReset:
    """``sw.reply_reset``: reply word ``env[reply]`` = 0."""

    reply: int


@dataclass(frozen=True, slots=True)
class Barrier:
    """``sw.barrier`` (scope ``array``/``row``/``col``), ``sw.synr`` / ``sw.sync``; also its own
    tape entry (no per-lane operands)."""

    scope: str
    mask: int | None


@dataclass(frozen=True, slots=True)
class For:
    """``scf.for``: bounds slots, induction variable ``iv``, iteration arguments (initial values
    ``inits``, block arguments ``bargs``), ``results`` and the ``body``."""

    lb: int
    ub: int
    step: int
    iv: int
    inits: tuple[int, ...]
    bargs: tuple[int, ...]
    results: tuple[int, ...]
    body: tuple


@dataclass(frozen=True, slots=True)
class If:
    """``scf.if``: ``then`` / ``els`` blocks yielding into ``results``."""

    cond: int
    then: tuple
    els: tuple
    results: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Yield:
    """``scf.yield``: the block's results."""

    values: tuple[int, ...]


#: records evaluated by ``eval(env, ids)`` (no machine effect)
SCALAR = (Const, Bin, Select, Copy, LaneId)


# -- tape entries (lockstep.py) ----------------------------------------------------------------
# Operands are per lane of the entry's Seq: an int when uniform, else a (lanes,) int64 array.
@dataclass(slots=True, eq=False)
class MkEntry:
    """A micro-kernel run: ``bases`` (lanes, pointers); ``checked[0]``: the LDM bounds of every
    row were checked (``Lockstep._mk``)."""

    mk: MicroKernel
    trip: int
    bases: np.ndarray
    checked: list


@dataclass(slots=True, eq=False)
class DmaEntry:
    """A DMA issue of ``rec`` at main-memory ``mem``, LDM ``ldm``, reply word ``reply``."""

    rec: Dma
    mem: Any
    ldm: Any
    reply: Any


@dataclass(slots=True, eq=False)
class WaitEntry:
    reply: Any
    n: Any


@dataclass(slots=True, eq=False)
class ResetEntry:
    reply: Any


@dataclass(slots=True, eq=False)
class BranchEntry:
    """Lanes of a lane-dependent ``scf.if`` / ``scf.for`` continue in one child Seq per subset."""

    children: list


# -- compiling ---------------------------------------------------------------------------------
class Compiler:
    """Compiles ``sw.kernel`` bodies to records; ``slot(v)`` numbers the SSA values."""

    def __init__(self, kernel_name: str) -> None:
        self.kernel = kernel_name
        self.slots: dict[SSAValue, int] = {}

    def slot(self, v: SSAValue) -> int:
        k = self.slots.get(v)
        if k is None:
            k = self.slots[v] = len(self.slots)
        return k

    def block(self, ops: list[Operation]) -> tuple:
        code: list = []
        S = self.slot
        for op in ops:
            t = type(op)
            if type(op) is arith.ConstantOp:
                v = op.value
                code.append(Const(S(op.result), v.value.data if hasattr(v, "value") else v))
            elif t in INT_BIN:
                assert isinstance(op, arith.SignlessIntegerBinaryOperation)  # the keys of INT_BIN
                code.append(Bin(S(op.result), S(op.lhs), S(op.rhs), INT_BIN[t], INT_BIN_NP[t]))
            elif type(op) is arith.CmpiOp:
                pr = op.predicate.value.data
                code.append(Bin(S(op.result), S(op.lhs), S(op.rhs), CMP[pr], CMP_NP[pr]))
            elif type(op) is arith.SelectOp:
                code.append(Select(S(op.result), S(op.cond), S(op.lhs), S(op.rhs)))
            elif t in INT_CASTS:
                assert isinstance(op, INT_CASTS)
                code.append(Copy(S(op.result), S(op.input)))
            elif type(op) is sw.MicrokernelOp:
                if op.trip * len(op.body.block.ops) > MAX_MICROKERNEL_ISSUES:
                    raise SimDecodeError(
                        f"kernel @{self.kernel}: sw.microkernel trip {op.trip} x "
                        f"{len(op.body.block.ops)} instructions exceeds the simulator's bound of "
                        f"{MAX_MICROKERNEL_ISSUES} issues per run (split the trip count with an scf.for)")
                code.append(MicroKernelRun(decode_microkernel(op), op.trip,
                                           tuple(S(p) for p in op.pointers)))
            elif type(op) is scf.ForOp:
                body = op.body.block
                code.append(For(S(op.lb), S(op.ub), S(op.step), S(body.args[0]),
                                tuple(S(a) for a in op.iter_args), tuple(S(a) for a in body.args[1:]),
                                tuple(S(r) for r in op.results), self.block(list(body.ops))))
            elif type(op) is scf.IfOp:
                then = self.block(list(op.true_region.block.ops)) if op.true_region.blocks else ()
                els = self.block(list(op.false_region.block.ops)) if op.false_region.blocks else ()
                code.append(If(S(op.cond), then, els, tuple(S(r) for r in op.results)))
            elif type(op) is scf.YieldOp:
                code.append(Yield(tuple(S(a) for a in op.arguments)))
            elif type(op) is sw.DmaGetOp or type(op) is sw.DmaPutOp:
                owner = op.ldm.owner
                limit = None
                if isinstance(owner, LdmAddrOp):
                    limit = owner.address.value.data + owner.bytes.value.data
                common = (S(op.mem), S(op.ldm), S(op.reply), op.size.value.data,
                          sw._int(op.bsize) or 0, sw._int(op.stride) or 0, limit)
                if isinstance(op, sw.DmaGetOp):
                    code.append(Dma("get", *common, str(op.dma_mode.value), sw._int(op.mask) or 0xFF))
                else:
                    code.append(Dma("put", *common))
            elif type(op) is sw.DmaWaitOp:
                if op.count is not None:
                    code.append(DmaWait(S(op.reply), None, op.count.value.data))
                else:
                    assert op.count_val is not None  # the verifier: count or count_val
                    code.append(DmaWait(S(op.reply), S(op.count_val), 0))
            elif type(op) is LdmAddrOp:
                code.append(Const(S(op.result), op.address.value.data))
            elif type(op) is ReplySlotOp:
                code.append(Const(S(op.result), op.slot.value.data))
            elif type(op) is sw.ReplyResetOp:
                code.append(ReplyReset(S(op.reply)))
            elif type(op) is sw.CpeIdOp:
                code.append(LaneId(S(op.results[0]), 0))
            elif type(op) is sw.RowIdOp:
                code.append(LaneId(S(op.results[0]), 1))
            elif type(op) is sw.ColIdOp:
                code.append(LaneId(S(op.results[0]), 2))
            elif type(op) is sw.BarrierOp:
                code.append(Barrier(str(op.scope.data.value), sw._int(op.mask)))
            elif type(op) is sw.SynrOp or type(op) is sw.SyncOp:
                code.append(Barrier("row" if type(op) is sw.SynrOp else "col", sw._int(op.mask)))
            elif type(op) is sw.LdmFreeOp:
                continue
            else:
                raise SimDecodeError(f"kernel @{self.kernel}: the simulator cannot execute '{op.name}'")
        return tuple(code)


# -- static analyses ---------------------------------------------------------------------------
def reads(code: tuple, cache: dict[int, tuple[tuple, tuple[int, ...]]]) -> tuple[int, ...]:
    """Env slots read anywhere in ``code`` (sorted; ``cache`` keyed by the block's id)."""
    hit = cache.get(id(code))
    if hit is not None:
        return hit[1]
    out: set[int] = set()
    for rec in code:
        t = rec.__class__
        if t is Bin:
            out.update((rec.lhs, rec.rhs))
        elif t is Select:
            out.update((rec.cond, rec.lhs, rec.rhs))
        elif t is Copy:
            out.add(rec.src)
        elif t is MicroKernelRun:
            out.update(rec.ptrs)
        elif t is Dma:
            out.update((rec.mem, rec.ldm, rec.reply))
        elif t is DmaWait:
            out.add(rec.reply)
            if rec.count_slot is not None:
                out.add(rec.count_slot)
        elif t is ReplyReset:
            out.add(rec.reply)
        elif t is Yield:
            out.update(rec.values)
        elif t is For:
            out.update((rec.lb, rec.ub, rec.step))
            out.update(rec.inits)
            out.update(reads(rec.body, cache))
        elif t is If:
            out.add(rec.cond)
            out.update(reads(rec.then, cache))
            out.update(reads(rec.els, cache))
    res = tuple(sorted(out))
    cache[id(code)] = (code, res)
    return res


def uses(code: tuple, ops: frozenset) -> bool:
    """Some micro-kernel of ``code`` has an instruction of ``ops``."""
    for rec in code:
        t = rec.__class__
        if t is MicroKernelRun and any(ins.op in ops for ins in rec.mk.body):
            return True
        if t is For and uses(rec.body, ops):
            return True
        if t is If and (uses(rec.then, ops) or uses(rec.els, ops)):
            return True
    return False


#: most operations (records: scalar ops, DMA, waits, micro-kernel runs, loop iterations) one CPE
#: may execute in one launch, from the static trip counts of its loop nests: the simulator
#: interprets each one (~1 us of host time per operation and lane cohort), so a larger launch
#: would not finish in any useful time and is refused before it starts (issue 15 item 2: nested
#: loops of 2^20 iterations each passed MAX_LOOP_TRIPS and hung)
MAX_LAUNCH_OPS = 1 << 30


@dataclass
class Work:
    """The result of :func:`static_work`: operations per CPE (a lower bound where a loop bound
    is not known before the launch: such a loop is counted once) and the heaviest loop nest's
    trip counts, outermost first."""

    ops: int = 0
    nest: tuple[int, ...] = ()
    nest_ops: int = 0


def static_work(code: tuple, known: dict[int, int]) -> Work:
    """Operations one CPE executes in ``code`` given the slots ``known`` before the launch (the
    kernel's arguments; constants and integer ops on known values are folded; lane ids, loop
    induction variables and iteration arguments are unknown). A loop with known bounds counts its
    trip count times its body, nested loops multiply; a loop whose bounds are unknown counts its
    body once (never an over-estimate: no launch is refused on a guess)."""
    w = Work()
    for rec in code:
        t = rec.__class__
        if t is Yield:
            continue
        w.ops += 1
        if t is Const:
            known[rec.out] = rec.value
        elif t is Bin or t is Copy or t is Select:
            try:
                if t is Bin:
                    if rec.lhs in known and rec.rhs in known:
                        known[rec.out] = int(rec.fn(known[rec.lhs], known[rec.rhs]))
                    else:
                        known.pop(rec.out, None)
                elif t is Copy:
                    if rec.src in known:
                        known[rec.out] = known[rec.src]
                    else:
                        known.pop(rec.out, None)
                else:
                    known.pop(rec.out, None)
            except (SimError, ArithmeticError, ValueError):
                known.pop(rec.out, None)
        elif t is LaneId:
            known.pop(rec.out, None)
        elif t is For:
            for a in (rec.iv, *rec.bargs):
                known.pop(a, None)
            body = static_work(rec.body, known)
            for r in rec.results:
                known.pop(r, None)
            bounds = (rec.lb, rec.ub, rec.step)
            trips = 1
            if all(b in known for b in bounds) and known[rec.step] > 0:
                trips = len(range(known[rec.lb], known[rec.ub], known[rec.step]))
            loop_ops = trips * body.ops
            w.ops += loop_ops
            if loop_ops > w.nest_ops:
                w.nest, w.nest_ops = (trips, *body.nest), loop_ops
        elif t is If:
            a, b = static_work(rec.then, known), static_work(rec.els, known)
            for r in rec.results:
                known.pop(r, None)
            heavier = a if a.ops >= b.ops else b
            w.ops += heavier.ops
            if heavier.nest_ops > w.nest_ops:
                w.nest, w.nest_ops = heavier.nest, heavier.nest_ops
    return w


def _deps(k) -> frozenset:
    return frozenset() if k is None else frozenset((k,)) if isinstance(k, int) else k


def _join(a, b):
    return a if a == b else _deps(a) | _deps(b)


@dataclass
class Taint:
    """The result of :func:`taint`: arguments whose exact value matters, arguments used only
    as DMA main-memory bases, the base argument of each DMA record (by ``id``), and ``ok``
    (False: some DMA address is not one argument plus an argument-independent offset)."""

    exact: set[int]
    pointers: set[int]
    dma_base: dict[int, int]
    ok: bool = True


def taint(code: tuple, kinds: dict, out: Taint) -> list | None:
    """Abstract interpretation of ``code`` for ``KernelProgram.memo_plan`` (kinds: slot ->
    None (argument-independent) | int i (argument i plus an argument-independent value) |
    frozenset (another function of those arguments); absent slots are argument-independent).
    Returns the kinds of a terminating ``scf.yield``."""
    K = kinds.get
    exact = out.exact
    for rec in code:
        t = rec.__class__
        if t is Bin:
            ka, kb = K(rec.lhs), K(rec.rhs)
            if ka is None and kb is None:
                k = None
            elif rec.fn is ADD and (ka is None or kb is None) and \
                    isinstance(ka if kb is None else kb, int):
                k = ka if kb is None else kb
            elif rec.fn is SUB and kb is None and isinstance(ka, int):
                k = ka
            else:
                k = _deps(ka) | _deps(kb)
            kinds[rec.out] = k
        elif t is Const or t is LaneId:
            kinds[rec.out] = None
        elif t is Copy:
            kinds[rec.out] = K(rec.src)
        elif t is Select:
            exact.update(_deps(K(rec.cond)))
            kinds[rec.out] = _join(K(rec.lhs), K(rec.rhs))
        elif t is MicroKernelRun:
            for p in rec.ptrs:
                exact.update(_deps(K(p)))
        elif t is Dma:
            km = K(rec.mem)
            if isinstance(km, int):
                out.pointers.add(km)
                out.dma_base[id(rec)] = km
            else:  # an absolute or mixed main-memory address
                out.ok = False
            exact.update(_deps(K(rec.ldm)) | _deps(K(rec.reply)))
        elif t is DmaWait:
            exact.update(_deps(K(rec.reply)))
            if rec.count_slot is not None:
                exact.update(_deps(K(rec.count_slot)))
        elif t is ReplyReset:
            exact.update(_deps(K(rec.reply)))
        elif t is For:
            for s_ in (rec.lb, rec.ub, rec.step):
                exact.update(_deps(K(s_)))
            kinds[rec.iv] = None
            carried = [K(a) for a in rec.inits]
            for _ in range(8):  # fixpoint over the loop-carried kinds (lattice height 3)
                for a, k in zip(rec.bargs, carried):
                    kinds[a] = k
                ys = taint(rec.body, kinds, out) or []
                new = [_join(c, y) for c, y in zip(carried, ys)]
                if new == carried:
                    break
                carried = new
            else:  # pragma: no cover - the lattice is finite
                out.ok = False
            for r, k in zip(rec.results, carried):
                kinds[r] = k
        elif t is If:
            exact.update(_deps(K(rec.cond)))
            yt = taint(rec.then, kinds, out) or []
            ye = taint(rec.els, kinds, out) or []
            for r, a, b in zip(rec.results, yt, ye):
                kinds[r] = _join(a, b)
        elif t is Yield:
            return [K(a) for a in rec.values]
    return None


__all__ = ["SimDecodeError", "decode_microkernel", "Compiler", "reads", "uses", "taint", "Taint", "static_work",
           "Work", "MAX_LAUNCH_OPS",
           "loop_range", "MAX_LOOP_TRIPS", "MAX_MICROKERNEL_ISSUES", "INT_BIN", "CMP", "INT_CASTS"]
