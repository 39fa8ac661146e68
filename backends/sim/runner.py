"""Run an ``sw`` / ``swsim`` module on the simulated core group (``taihu-run FILE.mlir``).

``simulate(module, machine=None, inputs=None, trace=False)`` lowers an ``sw`` module with
``sw-to-swsim`` if it has no ``swsim.target`` yet, decodes it and runs it on an
:class:`~taihu.backends.sim.engine.Engine`; returns a :class:`SimResult` (outputs, report
dictionary, engine). Decoding:

* ``sw.global``: a 128-B aligned main-memory buffer filled from its initializer, from
  ``inputs[name]`` (``io input``), or with seeded random numbers (``io input`` without a value),
  else zeros. ``io output`` globals (all globals if none is marked) are returned.
* ``func.func @main`` is the MPE program: ``sw.global_addr``, ``sw.mem_alloc``, ``arith``
  constants/integer ops, ``sw.spawn`` / ``sw.join``.
* ``sw.kernel``: interpreted per CPE (SPMD) by a generator: ``arith`` integer ops, ``scf.for``,
  ``scf.if``, ids, ``swsim.ldm_addr``, ``swsim.reply_slot``, DMA, waits, barriers and
  ``sw.microkernel`` (timed once per body, numerics vectorised, see ``microkernel.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Data, Operation, SSAValue

from taihu.backends.sim.engine import CPE, MPE, Engine
from taihu.backends.sim.lockstep import Seq
from taihu.target.machine import Machine
from taihu.backends.sim.memo import TimingMemo
from taihu.backends.sim.memory import SimError
from taihu.backends.sim.microkernel import MicroKernel
from taihu.backends.sim.pipeline import FUSED_SEND, GETS, PUTS, Instr
from taihu.backends.sim.report import KERNEL_INFO_ATTRS, USEFUL_FLOPS_ATTR, build_report
from taihu.dialects import sw
from taihu.dialects.swsim import LdmAddrOp, ReplySlotOp, TargetOp, kernel_ldm_high_water


class SimDecodeError(SimError):
    """An op the simulator cannot execute (names the op)."""


@dataclass
class SimResult:
    outputs: dict[str, np.ndarray]
    report: dict[str, Any]
    engine: Engine


def _np_dtype(t) -> np.dtype:
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, IntegerType):
        return np.dtype({64: np.int64, 32: np.int32, 16: np.int16, 8: np.int8}[t.width.data])
    raise SimDecodeError(f"unsupported element type {t}")


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


def _int_div(name: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``f`` (an integer division or remainder) refusing a zero divisor: a ``SimError``
    naming the op (the hardware result is undefined; Python would raise ZeroDivisionError,
    numpy return garbage)."""

    def checked(a: Any, b: Any) -> Any:
        if (b == 0).any() if isinstance(b, np.ndarray) else b == 0:
            raise SimError(f"{name}: integer division by zero")
        return f(a, b)

    return checked


def _shift(name: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``f`` (a shift) refusing a shift amount outside [0, 64) (poison in MLIR's arith; Python
    raises on a negative count and builds a huge integer for a large one)."""

    def checked(a: Any, b: Any) -> Any:
        if ((b < 0) | (b >= 64)).any() if isinstance(b, np.ndarray) else not 0 <= b < 64:
            shown = b.tolist() if isinstance(b, np.ndarray) else b
            raise SimError(f"{name}: shift amount {shown} outside [0, 64)")
        return f(a, b)

    return checked


_INT_BIN: dict[type[Operation], Callable[[Any, Any], Any]] = {
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
_INT_BIN_NP: dict[type[Operation], Callable[[Any, Any], Any]] = {
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
_CMP_NP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
           np.less, np.less_equal, np.greater, np.greater_equal]
_CMP = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b]


#: most iterations one ``scf.for`` of a kernel may run (per CPE, per entry): the simulator
#: interprets every iteration (an event per op and CPE), so a longer loop would not finish in
#: any useful time; refused with a diagnostic instead (issue 15: a 10^9-trip loop hung)
MAX_LOOP_TRIPS = 1 << 20

#: most instruction issues one micro-kernel run may have (trip count x body length, per CPE):
#: the run's timing plan holds one issue time per issue (8 B each, 128 MiB at the bound)
MAX_MICROKERNEL_ISSUES = 1 << 24


def _loop_range(kernel: str, lb: int, ub: int, step: int) -> range:
    """The iterations of an ``scf.for`` of kernel ``kernel``; ``SimError`` for a step <= 0
    (an endless loop on the machine) or more than :data:`MAX_LOOP_TRIPS` iterations."""
    if step <= 0:
        raise SimError(f"kernel @{kernel}: scf.for with step {step}: the step must be > 0")
    r = range(lb, ub, step)
    if len(r) > MAX_LOOP_TRIPS:
        raise SimError(f"kernel @{kernel}: scf.for from {lb} to {ub} step {step} runs {len(r)} "
                       f"iterations, more than the simulator's bound of {MAX_LOOP_TRIPS}")
    return r


def _freeze(x):
    """Hashable structural copy of compiled records (lists -> tuples, dicts -> item tuples)."""
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, dict):
        return ("{}",) + tuple((k, _freeze(v)) for k, v in sorted(x.items()))
    return x


#: integer casts: the simulator's integers are unbounded (the value is copied)
_INT_CASTS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
_ADD, _SUB = _INT_BIN[arith.AddiOp], _INT_BIN[arith.SubiOp]
_RLC_OPS = GETS | PUTS | FUSED_SEND
_CHUNK = 16  # tape entries produced per resumption of the producer (KernelProgram._produce)
_VECTOR_FMA = frozenset({"vmad", "vmas"})


def _code_uses(code: list[tuple], ops: frozenset) -> bool:
    """Some micro-kernel of ``code`` has an instruction of ``ops``."""
    for rec in code:
        tag = rec[0]
        if tag == "mk" and any(ins.op in ops for ins in rec[1].body):
            return True
        if tag == "for" and _code_uses(rec[8], ops):
            return True
        if tag == "if" and (_code_uses(rec[2], ops) or _code_uses(rec[3], ops)):
            return True
    return False


def _deps(k) -> frozenset:
    return frozenset() if k is None else frozenset((k,)) if isinstance(k, int) else k


def _join(a, b):
    return a if a == b else _deps(a) | _deps(b)


def _taint(code: list[tuple], kinds: dict, exact: set, pointers: set, dma_base: dict,
           ok: list) -> list | None:
    """Abstract interpretation of compiled ``code`` for ``KernelProgram.memo_plan`` (kinds:
    slot -> None | int | frozenset; absent slots are argument-independent). Returns the kinds
    of a terminating ``scf.yield``."""
    K = kinds.get
    for rec in code:
        tag = rec[0]
        if tag == "bin":
            ka, kb = K(rec[3]), K(rec[4])
            if ka is None and kb is None:
                k = None
            elif rec[2] is _ADD and (ka is None or kb is None) and \
                    isinstance(ka if kb is None else kb, int):
                k = ka if kb is None else kb
            elif rec[2] is _SUB and kb is None and isinstance(ka, int):
                k = ka
            else:
                k = _deps(ka) | _deps(kb)
            kinds[rec[1]] = k
        elif tag == "const" or tag == "id":
            kinds[rec[1]] = None
        elif tag == "copy":
            kinds[rec[1]] = K(rec[2])
        elif tag == "select":
            exact.update(_deps(K(rec[2])))
            kinds[rec[1]] = _join(K(rec[3]), K(rec[4]))
        elif tag == "mk":
            for p in rec[3]:
                exact.update(_deps(K(p)))
        elif tag == "get" or tag == "put":
            km = K(rec[1])
            if isinstance(km, int):
                pointers.add(km)
                dma_base[id(rec)] = km
            else:  # an absolute or mixed main-memory address
                ok[0] = False
            exact.update(_deps(K(rec[2])) | _deps(K(rec[3])))
        elif tag == "wait":
            exact.update(_deps(K(rec[1])))
            if rec[2] is not None:
                exact.update(_deps(K(rec[2])))
        elif tag == "reset":
            exact.update(_deps(K(rec[1])))
        elif tag == "for":
            _, lb, ub, st, iv, inits, bargs, results, body = rec
            for s_ in (lb, ub, st):
                exact.update(_deps(K(s_)))
            kinds[iv] = None
            carried = [K(a) for a in inits]
            for _ in range(8):  # fixpoint over the loop-carried kinds (lattice height 3)
                for a, k in zip(bargs, carried):
                    kinds[a] = k
                ys = _taint(body, kinds, exact, pointers, dma_base, ok) or []
                new = [_join(c, y) for c, y in zip(carried, ys)]
                if new == carried:
                    break
                carried = new
            else:  # pragma: no cover - the lattice is finite
                ok[0] = False
            for r, k in zip(results, carried):
                kinds[r] = k
        elif tag == "if":
            exact.update(_deps(K(rec[1])))
            yt = _taint(rec[2], kinds, exact, pointers, dma_base, ok) or []
            ye = _taint(rec[3], kinds, exact, pointers, dma_base, ok) or []
            for r, a, b in zip(rec[4], yt, ye):
                kinds[r] = _join(a, b)
        elif tag == "yield":
            return [K(a) for a in rec[1]]
    return None


def _eval_pure(op: Operation, env: dict[SSAValue, Any]) -> bool:
    """Evaluate an arith op into ``env``; False if ``op`` is not a supported pure op."""
    t = type(op)
    if type(op) is arith.ConstantOp:
        v = op.value
        env[op.result] = v.value.data if hasattr(v, "value") else v
        return True
    f = _INT_BIN.get(t)
    if f is not None:
        assert isinstance(op, arith.SignlessIntegerBinaryOperation)  # the keys of _INT_BIN
        env[op.result] = f(env[op.lhs], env[op.rhs])
        return True
    if type(op) is arith.CmpiOp:
        env[op.result] = bool(_CMP[op.predicate.value.data](env[op.lhs], env[op.rhs]))
        return True
    if type(op) is arith.SelectOp:
        env[op.result] = env[op.lhs] if env[op.cond] else env[op.rhs]
        return True
    if t in _INT_CASTS:
        assert isinstance(op, _INT_CASTS)
        env[op.result] = env[op.input]
        return True
    return False


class KernelProgram:
    """A decoded ``sw.kernel``: ``run(cpe, *args)`` is the per-CPE generator.

    The body is compiled once into records (tag, operands...) with SSA values replaced by
    integer slots, so the 64 CPE interpreters do no xDSL attribute access at run time.
    """

    def __init__(self, kernel: sw.KernelOp) -> None:
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.ldm_high_water = kernel_ldm_high_water(kernel)
        self._slot: dict[SSAValue, int] = {}
        for op in kernel.walk():
            if isinstance(op, sw.LdmAllocOp):
                raise SimDecodeError(f"kernel @{self.name}: sw.ldm_alloc left (run sw-to-swsim)")
        self.args = [self._s(a) for a in kernel.body.block.args]
        self.code = self._compile(list(kernel.body.block.ops))
        self.n_slots = len(self._slot)
        self._reads_cache: dict[int, tuple[list, tuple[int, ...]]] = {}
        #: set while a launch is recorded for the timing memo (``memo.py``): DMA ranges are
        #: checked against the allocations of their base arguments: (DMA record id -> base
        #: argument, argument -> (start, end) of its allocation, [still memoisable])
        self.memo_check: tuple[dict[int, int], dict[int, tuple[int, int]], list[bool]] | None \
            = None
        self._memo_plan: tuple | None = None
        #: some micro-kernel of the body sends or receives RLC messages
        self.uses_rlc = _code_uses(self.code, _RLC_OPS)
        #: ``simulate(lockstep=None)`` runs the kernel in lockstep mode: RLC (SUMMA) or vector
        #: FMA micro-kernels (GEMM / conv bodies: many runs per CPE, batched per cohort)
        self.prefers_lockstep = self.uses_rlc or _code_uses(self.code, _VECTOR_FMA)
        self._signature: tuple | None = None

    # -- timing memo support (memo.py) --------------------------------------------------------
    def fingerprint(self) -> tuple:
        """A cheap summary of the body: equal signatures have equal fingerprints."""
        return (len(self.args), self.n_slots, len(self.code), self.ldm_high_water)

    def signature(self) -> tuple:
        """A hashable structural form of the compiled body: two kernels with equal signatures
        execute the same operations for the same argument values (the kernel's name is not
        part of it)."""
        if self._signature is None:
            self._signature = (len(self.args), tuple(self.args), _freeze(self.code))
        return self._signature

    def memo_plan(self) -> tuple[frozenset, frozenset, dict[int, int]] | None:
        """How the launch's timing depends on its arguments (an abstract interpretation of the
        compiled body over the lattice "independent of the arguments" (None) < "argument i
        plus an argument-independent value" (int i) < "some other function of the arguments"
        (frozenset of argument indices)).

        Returns ``(exact, pointers, dma_base)``: the arguments whose exact value matters (used
        in loop bounds, conditions, LDM addresses, reply words, micro-kernel bases or
        non-additive arithmetic), the arguments used only as main-memory base addresses of
        DMA descriptors, and the base argument of every DMA record (``id(record)``). None if
        a DMA address is not "one argument plus an argument-independent offset" (absolute or
        mixed addresses: such kernels are not memoised)."""
        if self._memo_plan is None:
            kinds: dict[int, Any] = {s: i for i, s in enumerate(self.args)}
            exact: set[int] = set()
            pointers: set[int] = set()
            dma_base: dict[int, int] = {}
            ok = [True]
            _taint(self.code, kinds, exact, pointers, dma_base, ok)
            self._memo_plan = (frozenset(exact), frozenset(pointers), dma_base) if ok[0] \
                else (None,)
        return None if self._memo_plan[0] is None else self._memo_plan

    def _memo_dma(self, rec: tuple, mem) -> None:
        """Recording a launch: the DMA of ``rec`` at ``mem`` (scalar or per-lane array) must
        lie inside its base argument's allocation (else the launch is not memoised)."""
        assert self.memo_check is not None  # the callers run this only while recording
        base, ranges, state = self.memo_check
        lo_a, hi_a = ranges[base[id(rec)]]
        kw = rec[4]
        size, bsize, stride = kw["size"], kw["bsize"], kw["stride"]
        ext = size if bsize == 0 or (bsize == size and stride == 0) else \
            (size // bsize - 1) * (bsize + stride) + bsize
        if isinstance(mem, np.ndarray):
            lo, hi = int(mem.min()), int(mem.max()) + ext
        else:
            lo, hi = mem, mem + ext
        if lo < lo_a or hi > hi_a:
            state[0] = False

    # -- lockstep execution: the tape of per-lane operations ---------------------------------
    def tape(self, lanes: np.ndarray, args: tuple, n_cpes: int, mesh_cols: int) -> Seq:
        """The root :class:`~taihu.backends.sim.lockstep.Seq` of a launch on ``lanes``.

        Control flow and addresses of a kernel never depend on time or data (no op reads LDM
        into an SSA value), so the 64 CPEs' scalar code is interpreted once, vectorised over
        lanes (env values are scalars when uniform, else ``(lanes,)`` int arrays), producing the
        sequence of operations each CPE performs (micro-kernel runs, DMA, waits, barriers).
        The engine replays it per CPE at each CPE's own time (``lockstep.py``). Lane-dependent
        ``scf.if`` / ``scf.for`` bounds become ``branch`` entries with one child Seq per lane
        subset. Entries are produced lazily, as the replay needs them."""
        env: list[Any] = [None] * self.n_slots
        for k, v in zip(self.args, args):
            env[k] = v
        root = Seq(lanes, n_cpes, mesh_cols)
        root.gen = self._produce(self.code, root, env)
        return root

    def _produce(self, code: list[tuple], seq: Seq, env: list) -> Generator[None, None, list]:
        """Append ``code``'s operations for ``seq``'s lanes to ``seq.entries`` (yields after
        every ``_CHUNK`` appends: production runs ahead of the replay by less than a chunk;
        returns the values of a terminating ``scf.yield``)."""
        G = len(seq.lanes)
        out = seq.entries
        for rec in code:
            tag = rec[0]
            if tag == "bin":
                a, b = env[rec[3]], env[rec[4]]
                if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                    env[rec[1]] = rec[5](a, b)
                else:
                    env[rec[1]] = rec[2](a, b)
            elif tag == "const":
                env[rec[1]] = rec[2]
            elif tag == "mk":
                ptrs = rec[3]
                bases = np.empty((G, len(ptrs)), dtype=np.int64)
                for j, p in enumerate(ptrs):
                    bases[:, j] = env[p]
                # [bounds of every row checked] (lockstep._mk)
                out.append(("mk", rec[1], rec[2], bases, [False]))
                if not len(out) % _CHUNK:
                    yield
            elif tag == "get" or tag == "put":
                if self.memo_check is not None:
                    self._memo_dma(rec, env[rec[1]])
                out.append((tag, env[rec[1]], env[rec[2]], env[rec[3]], rec[4]))
                if not len(out) % _CHUNK:
                    yield
            elif tag == "wait":
                out.append(("wait", env[rec[1]], rec[3] if rec[2] is None else env[rec[2]]))
                if not len(out) % _CHUNK:
                    yield
            elif tag == "reset":
                out.append(("reset", env[rec[1]]))
                if not len(out) % _CHUNK:
                    yield
            elif tag == "barrier":
                out.append(("barrier", rec[1], rec[2]))
                if not len(out) % _CHUNK:
                    yield
            elif tag == "for":
                _, lb, ub, st, iv, inits, bargs, results, body = rec
                bounds = [env[lb], env[ub], env[st]]
                if any(isinstance(x, np.ndarray) for x in bounds):
                    arrs = [np.broadcast_to(np.asarray(x), (G,)) for x in bounds]
                    keys = np.stack(arrs, axis=1)
                    uniq = np.unique(keys, axis=0)
                    if len(uniq) == 1:
                        bounds = [int(v) for v in uniq[0]]
                    else:
                        parts = [((keys == u).all(axis=1), [rec]) for u in uniq]
                        yield from self._branch(seq, env, parts, results, True)
                        continue
                carried = [env[a] for a in inits]
                for i in _loop_range(self.name, bounds[0], bounds[1], bounds[2]):
                    env[iv] = i
                    for a, v in zip(bargs, carried):
                        env[a] = v
                    carried = yield from self._produce(body, seq, env)
                for r, v in zip(results, carried):
                    env[r] = v
            elif tag == "if":
                cond = env[rec[1]]
                if isinstance(cond, np.ndarray):
                    if cond.all():
                        cond = True
                    elif not cond.any():
                        cond = False
                    else:
                        yield from self._branch(seq, env, [(cond, rec[2]), (~cond, rec[3])],
                                                rec[4], False)
                        continue
                res = yield from self._produce(rec[2] if cond else rec[3], seq, env)
                for r, v in zip(rec[4], res or []):
                    env[r] = v
            elif tag == "yield":
                return [env[a] for a in rec[1]]
            elif tag == "id":
                env[rec[1]] = seq.lanes if rec[2] == "id" else seq.rows if rec[2] == "row" \
                    else seq.cols
            elif tag == "select":
                c = env[rec[2]]
                env[rec[1]] = np.where(c, env[rec[3]], env[rec[4]]) if isinstance(c, np.ndarray) \
                    else (env[rec[3]] if c else env[rec[4]])
            elif tag == "copy":
                env[rec[1]] = env[rec[2]]
            else:  # pragma: no cover - _compile emits only the tags above
                raise SimDecodeError(f"kernel @{self.name}: unknown record '{tag}'")
        return []

    def _reads(self, code: list[tuple]) -> tuple[int, ...]:
        """Env slots read anywhere in ``code`` (cached per code block)."""
        hit = self._reads_cache.get(id(code))
        if hit is not None:
            return hit[1]
        out: set[int] = set()
        for rec in code:
            tag = rec[0]
            if tag == "bin":
                out.update((rec[3], rec[4]))
            elif tag == "select":
                out.update(rec[2:5])
            elif tag == "copy":
                out.add(rec[2])
            elif tag == "mk":
                out.update(rec[3])
            elif tag in ("get", "put"):
                out.update(rec[1:4])
            elif tag == "wait":
                out.add(rec[1])
                if rec[2] is not None:
                    out.add(rec[2])
            elif tag == "reset":
                out.add(rec[1])
            elif tag == "yield":
                out.update(rec[1])
            elif tag == "for":
                out.update((rec[1], rec[2], rec[3]))
                out.update(rec[5])
                out.update(self._reads(rec[8]))
            elif tag == "if":
                out.add(rec[1])
                out.update(self._reads(rec[2]))
                out.update(self._reads(rec[3]))
        res = tuple(sorted(out))
        self._reads_cache[id(code)] = (code, res)
        return res

    def _region(self, code: list[tuple], seq: Seq, env: list,
                result_slots: tuple | None) -> Generator[None, None, list]:
        res = yield from self._produce(code, seq, env)
        return [env[r] for r in result_slots] if result_slots is not None else (res or [])

    def _branch(self, seq: Seq, env: list, parts: list[tuple[np.ndarray, list[tuple]]],
                result_slots: tuple, from_slots: bool) -> Generator[None, None, None]:
        """A ``branch`` entry: ``code`` of each part runs on the lanes of its mask (child Seq).
        Children are produced lazily unless their results are needed to continue here (the
        ``result_slots`` of an ``scf.if``, yielded by the regions, or of a divergent ``scf.for``,
        read from the env slots when ``from_slots``); then they are produced now and merged."""
        children = []
        idx = len(seq.entries)
        n_slots = self.n_slots
        for mask, code in parts:
            ch = seq.child(mask, idx)
            sub: list[Any] = [None] * n_slots
            for k in self._reads(code):  # only the slots the region reads
                v = env[k]
                sub[k] = v[mask] if isinstance(v, np.ndarray) else v
            ch.gen = self._region(code, ch, sub, result_slots if from_slots else None)
            children.append(ch)
        seq.entries.append(("branch", children))
        if result_slots:
            G = len(seq.lanes)
            merged: list[np.ndarray] = []
            for ch, (mask, _) in zip(children, parts):
                res = ch.drain()
                for r, v in enumerate(res):
                    if r == len(merged):
                        merged.append(np.zeros(G, dtype=np.int64))
                    merged[r][mask] = v
            for r, v in zip(result_slots, merged):
                env[r] = v
        yield

    def _s(self, v: SSAValue) -> int:
        k = self._slot.get(v)
        if k is None:
            k = len(self._slot)
            self._slot[v] = k
        return k

    def _compile(self, ops: list[Operation]) -> list[tuple]:
        code: list[tuple] = []
        S = self._s
        for op in ops:
            t = type(op)
            if type(op) is arith.ConstantOp:
                v = op.value
                code.append(("const", S(op.result), v.value.data if hasattr(v, "value") else v))
            elif t in _INT_BIN:
                assert isinstance(op, arith.SignlessIntegerBinaryOperation)  # the keys of _INT_BIN
                code.append(("bin", S(op.result), _INT_BIN[t], S(op.lhs), S(op.rhs), _INT_BIN_NP[t]))
            elif type(op) is arith.CmpiOp:
                pr = op.predicate.value.data
                code.append(("bin", S(op.result), _CMP[pr], S(op.lhs), S(op.rhs), _CMP_NP[pr]))
            elif type(op) is arith.SelectOp:
                code.append(("select", S(op.result), S(op.cond), S(op.lhs), S(op.rhs)))
            elif t in _INT_CASTS:
                assert isinstance(op, _INT_CASTS)
                code.append(("copy", S(op.result), S(op.input)))
            elif type(op) is sw.MicrokernelOp:
                if op.trip * len(op.body.block.ops) > MAX_MICROKERNEL_ISSUES:
                    raise SimDecodeError(
                        f"kernel @{self.name}: sw.microkernel trip {op.trip} x {len(op.body.block.ops)} "
                        f"instructions exceeds the simulator's bound of {MAX_MICROKERNEL_ISSUES} issues "
                        "per run (split the trip count with an scf.for)")
                code.append(("mk", decode_microkernel(op), op.trip, tuple(S(p) for p in op.pointers)))
            elif type(op) is scf.ForOp:
                body = op.body.block
                code.append(("for", S(op.lb), S(op.ub), S(op.step), S(body.args[0]),
                             tuple(S(a) for a in op.iter_args), tuple(S(a) for a in body.args[1:]),
                             tuple(S(r) for r in op.results), self._compile(list(body.ops))))
            elif type(op) is scf.IfOp:
                then = self._compile(list(op.true_region.block.ops)) if op.true_region.blocks else []
                els = self._compile(list(op.false_region.block.ops)) if op.false_region.blocks else []
                code.append(("if", S(op.cond), then, els, tuple(S(r) for r in op.results)))
            elif type(op) is scf.YieldOp:
                code.append(("yield", tuple(S(a) for a in op.arguments)))
            elif type(op) is sw.DmaGetOp or type(op) is sw.DmaPutOp:
                owner = op.ldm.owner
                limit = None
                if isinstance(owner, LdmAddrOp):
                    limit = owner.address.value.data + owner.bytes.value.data
                kw: dict[str, int | str | None] = dict(
                    size=op.size.value.data, bsize=sw._int(op.bsize) or 0,
                    stride=sw._int(op.stride) or 0, ldm_limit=limit)
                if t is sw.DmaGetOp:
                    kw["mode"] = str(op.dma_mode.value)
                    kw["mask"] = sw._int(op.mask) or 0xFF
                code.append(("get" if t is sw.DmaGetOp else "put", S(op.mem), S(op.ldm), S(op.reply), kw))
            elif type(op) is sw.DmaWaitOp:
                if op.count is not None:
                    code.append(("wait", S(op.reply), None, op.count.value.data))
                else:
                    assert op.count_val is not None  # the verifier: count or count_val
                    code.append(("wait", S(op.reply), S(op.count_val), 0))
            elif type(op) is LdmAddrOp:
                code.append(("const", S(op.result), op.address.value.data))
            elif type(op) is ReplySlotOp:
                code.append(("const", S(op.result), op.slot.value.data))
            elif type(op) is sw.ReplyResetOp:
                code.append(("reset", S(op.reply)))
            elif type(op) is sw.CpeIdOp:
                code.append(("id", S(op.results[0]), "id"))
            elif type(op) is sw.RowIdOp:
                code.append(("id", S(op.results[0]), "row"))
            elif type(op) is sw.ColIdOp:
                code.append(("id", S(op.results[0]), "col"))
            elif type(op) is sw.BarrierOp:
                code.append(("barrier", str(op.scope.data.value), sw._int(op.mask)))
            elif type(op) is sw.SynrOp or type(op) is sw.SyncOp:
                code.append(("barrier", "row" if t is sw.SynrOp else "col", sw._int(op.mask)))
            elif type(op) is sw.LdmFreeOp:
                continue
            else:
                raise SimDecodeError(f"kernel @{self.name}: the simulator cannot execute '{op.name}'")
        return code

    def run(self, cpe: CPE, *args: int) -> Generator:
        env: list[Any] = [None] * self.n_slots
        for k, v in zip(self.args, args):
            env[k] = v
        yield from self._exec(self.code, cpe, env)

    def _exec(self, code: list[tuple], cpe: CPE, env: list) -> Generator[Any, None, list]:
        for rec in code:
            tag = rec[0]
            if tag == "bin":
                env[rec[1]] = rec[2](env[rec[3]], env[rec[4]])
            elif tag == "const":
                env[rec[1]] = rec[2]
            elif tag == "mk":
                yield from cpe.run(rec[1], rec[2], tuple(env[p] for p in rec[3]))
            elif tag == "for":
                _, lb, ub, st, iv, inits, bargs, results, body = rec
                carried = [env[a] for a in inits]
                for i in _loop_range(self.name, env[lb], env[ub], env[st]):
                    env[iv] = i
                    for a, v in zip(bargs, carried):
                        env[a] = v
                    carried = yield from self._exec(body, cpe, env)
                for r, v in zip(results, carried):
                    env[r] = v
            elif tag == "if":
                res = yield from self._exec(rec[2] if env[rec[1]] else rec[3], cpe, env)
                for r, v in zip(rec[4], res or []):
                    env[r] = v
            elif tag == "yield":
                return [env[a] for a in rec[1]]
            elif tag == "id":
                env[rec[1]] = cpe.id if rec[2] == "id" else cpe.row if rec[2] == "row" else cpe.col
            elif tag == "select":
                env[rec[1]] = env[rec[3]] if env[rec[2]] else env[rec[4]]
            elif tag == "copy":
                env[rec[1]] = env[rec[2]]
            elif tag == "get":
                if self.memo_check is not None:
                    self._memo_dma(rec, env[rec[1]])
                yield from cpe.dma_get(env[rec[1]], env[rec[2]], reply=env[rec[3]], **rec[4])
            elif tag == "put":
                if self.memo_check is not None:
                    self._memo_dma(rec, env[rec[1]])
                yield from cpe.dma_put(env[rec[2]], env[rec[1]], reply=env[rec[3]], **rec[4])
            elif tag == "wait":
                n = rec[3] if rec[2] is None else env[rec[2]]
                yield from cpe.dma_wait(env[rec[1]], n)
            elif tag == "reset":
                cpe.reply_reset(env[rec[1]])
            elif tag == "barrier":
                yield from cpe.barrier(rec[1], rec[2])
        return []


def _global_value(g: sw.GlobalOp, inputs: Mapping[str, np.ndarray], seed: int) -> np.ndarray | None:
    name = g.sym_name.data
    t = g.type
    shape = tuple(t.get_shape())
    dt = _np_dtype(t.get_element_type())
    if name in inputs:
        v = np.asarray(inputs[name])
        if v.shape != shape:
            raise SimDecodeError(f"input '{name}': shape {v.shape} != {shape}")
        return v.astype(dt)
    init = g.initial_value
    if isinstance(init, DenseIntOrFPElementsAttr):
        vals = np.array(init.get_values(), dtype=dt)
        return np.full(shape, vals.reshape(-1)[0], dtype=dt) if vals.size == 1 else vals.reshape(shape)
    if isinstance(init, DenseResourceAttr):
        from taihu.dialects.resources import resource_value

        try:
            vals = resource_value(init)
        except (KeyError, ValueError) as e:
            raise SimDecodeError(f"sw.global @{name}: {e}") from None
        if vals.size == int(np.prod(shape)):
            return np.asarray(vals).reshape(shape).astype(dt)
        raise SimDecodeError(f"sw.global @{name}: dense_resource holds {vals.size} elements, "
                             f"the global {int(np.prod(shape))}")
    if init is not None:
        raise SimDecodeError(f"sw.global @{name}: unsupported initializer {init}")
    if g.io is not None and str(g.io.data.value) == "input":
        rng = np.random.default_rng([seed, sum(map(ord, name))])
        if dt.kind == "f":
            return rng.standard_normal(shape).astype(dt)
        return rng.integers(0, 10, shape).astype(dt)
    return None


def ensure_swsim(module: ModuleOp, machine_path: str | None = None) -> None:
    """Apply ``sw-to-swsim`` (in place) unless the module is already in swsim form (and no
    ``machine_path`` override is requested)."""
    has_target = any(isinstance(o, TargetOp) for o in module.body.block.ops)
    if has_target and machine_path is None:
        return
    from xdsl.context import Context

    from taihu.passes.conversion.sw_to_swsim import SwToSwsimPass

    SwToSwsimPass(machine=machine_path or "").apply(Context(), module)


def simulate(module: ModuleOp, machine_path: str | None = None,
             inputs: Mapping[str, np.ndarray] | None = None, trace: bool = False,
             seed: int = 0, machine: Machine | None = None, lockstep: bool | None = None,
             progress: Callable[[int, int, str], None] | None = None,
             numerics: bool = True, memo: bool | None = None) -> SimResult:
    """Run an sw/swsim ``module`` (modified in place by ``sw-to-swsim`` if needed).

    ``lockstep``: run each kernel's scalar code once for all 64 CPEs and replay the resulting
    operations in cohorts of CPEs (``lockstep.py``: SPMD batching of the interpretation, the
    timing and the numerics; DMA, waits and barriers at each CPE's own cycle). False = one
    interpreter per CPE (the reference; reports, traces and outputs are identical). None (the
    default) chooses per kernel, for speed only: lockstep for kernels with RLC or vector-FMA
    micro-kernels (SUMMA, CPE-local GEMM blocks: cohorts run their many micro-kernel runs
    together, 2-4x cheaper than per-CPE), per-CPE for the others (DMA-dominated kernels, whose
    timed entries are replayed lane by lane anyway; ~2-4x cheaper per CPE there).
    ``progress(done, total, kernel_name)``: called after each ``sw.join`` (``total`` = number
    of ``sw.spawn`` in ``@main``), e.g. to drive a progress bar.
    ``numerics=False``: timing only -- no micro-kernel arithmetic, no DMA data movement, main
    memory not materialised (global initial values and ``inputs`` are not read); the report
    and the trace are those of a full run, ``outputs`` is empty.
    ``memo`` (default on; False to simulate every launch): replay repeated launches of
    identical kernels on arguments of the same alignment class from the first one's record
    (``memo.py``: exact, same report, trace and outputs; with numerics the recorded queue of
    data effects is re-based on the new arguments and executed)."""
    ensure_swsim(module, machine_path)
    target = next(o for o in module.body.block.ops if isinstance(o, TargetOp))
    m = machine or target.get_machine()
    eng = Engine(m, trace=trace, numerics=numerics)
    inputs = inputs or {}
    globals_: dict[str, tuple[int, sw.GlobalOp]] = {}
    kernels: dict[str, KernelProgram] = {}
    main: func.FuncOp | None = None
    for op in module.body.block.ops:
        if isinstance(op, sw.GlobalOp):
            addr = eng.memory.alloc(op.nbytes, op.sym_name.data)
            v = _global_value(op, inputs, seed) if numerics else None
            if v is not None:
                eng.memory.write(addr, v)
            globals_[op.sym_name.data] = (addr, op)
        elif isinstance(op, sw.KernelOp):
            kernels[op.sym_name.data] = KernelProgram(op)
        elif isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            main = op
    if main is None:
        raise SimDecodeError("no func.func @main (the MPE host program)")
    if len(main.body.blocks) != 1:
        raise SimDecodeError(f"func.func @main (the MPE host program) must have a body of one block, "
                             f"it has {len(main.body.blocks)}")
    n_spawns = sum(isinstance(o, sw.SpawnOp) for o in main.body.block.ops)
    tm = TimingMemo(eng) if memo is not False else None
    eng.memo = tm
    # a spawn is memoisable when the next non-pure op of @main is its join
    host_ops = list(main.body.block.ops)
    joins_next: set[int] = set()
    for i, op in enumerate(host_ops):
        if isinstance(op, sw.SpawnOp):
            for nxt in host_ops[i + 1:]:
                if isinstance(nxt, sw.JoinOp):
                    joins_next.add(i)
                    break
                if not (isinstance(nxt, arith.ConstantOp) or type(nxt) in _INT_BIN
                        or isinstance(nxt, sw.GlobalAddrOp)):
                    break
    if tm is not None:  # a kernel body launched once is never replayed: not recorded
        tm.register(kernels.values())
        by_body: dict[tuple, list[int]] = {}
        for i in joins_next:
            spawn = host_ops[i]
            assert isinstance(spawn, sw.SpawnOp)  # joins_next holds indices of spawns
            kp = kernels.get(spawn.kernel.root_reference.data)
            if kp is not None:
                by_body.setdefault(tm.body_id(kp), []).append(i)
        joins_next = {i for ii in by_body.values() if len(ii) > 1 for i in ii}

    def host(mpe: MPE) -> Generator:
        env: dict[SSAValue, Any] = {}
        recording: tuple[list, list[tuple[int, int]]] | None = None
        replayed: bool | None = None
        n_joined, launch = 0, ""  # joins so far, the name of the last launch
        for i, op in enumerate(host_ops):
            if _eval_pure(op, env):
                continue
            if isinstance(op, sw.GlobalAddrOp):
                env[op.results[0]] = globals_[op.global_name.root_reference.data][0]
            elif isinstance(op, sw.MemAllocOp):
                env[op.results[0]] = eng.memory.alloc(op.bytes.value.data)
            elif isinstance(op, sw.SpawnOp):
                kp = kernels[op.kernel.root_reference.data]
                args = tuple(env[a] for a in op.args)
                name = launch_name(op, kp.name)
                launch = name
                if tm is not None and i in joins_next:
                    yield from mpe.sync()  # global time catches up: the state the key reads
                    k = tm.key(kp, args)
                    if k is not None:
                        if tm.replay(k[0], k[1], kp, name):
                            replayed = True
                            continue
                        recording = (tm.begin(kp, k[0], k[2], k[1]), k[1])
                ls_ = kp.prefers_lockstep if lockstep is None else lockstep
                yield from mpe.spawn(kp.run, args, name=name, ldm_high_water=kp.ldm_high_water,
                                     tape=kp.tape if ls_ else None)
            elif isinstance(op, sw.JoinOp):
                if replayed:
                    replayed = None
                else:
                    yield from mpe.join()
                    if recording is not None:
                        assert tm is not None  # recording only with the memo
                        tm.end(recording[0], eng.kernels[-1], recording[1])
                        recording = None
                n_joined += 1
                if progress is not None:
                    progress(n_joined, n_spawns, launch)
            elif isinstance(op, func.ReturnOp):
                break
            else:
                raise SimDecodeError(f"@main: the simulator cannot execute '{op.name}' on the MPE")

    eng.run_host(host)
    outs = [g for g in globals_.values() if g[1].io is not None and str(g[1].io.data.value) == "output"]
    if not numerics:
        outs = []
    elif not outs:
        outs = list(globals_.values())
    outputs = {}
    for addr, g in outs:
        t = g.type
        dt = _np_dtype(t.get_element_type())
        outputs[g.sym_name.data] = eng.memory.read(addr, g.nbytes).view(dt).reshape(tuple(t.get_shape()))
    return SimResult(outputs, build_report(eng, kernel_info(module)), eng)


#: Discardable attribute of ``sw.spawn``: the launch's name when the kernel is shared by several
#: launches (``convert-loop-to-sw{dedup-kernels}``); the launch's ``taihu.*`` attributes are on
#: the spawn too.
LAUNCH_NAME = "taihu.name"


def launch_name(spawn: sw.SpawnOp, kernel_name: str) -> str:
    """The report name of a launch: the spawn's ``taihu.name``, else the kernel's symbol."""
    a = spawn.attributes.get(LAUNCH_NAME)
    return a.data if isinstance(a, StringAttr) else kernel_name


def _info_attrs(op: Operation) -> dict[str, str | int | None]:
    """The ``taihu.layer/op/algorithm/shape`` string attributes of ``op`` and its integer
    ``taihu.useful_flops`` (key ``useful_flops``); None when absent."""
    info: dict[str, str | int | None] = {}
    for key, attr in KERNEL_INFO_ATTRS.items():
        a = op.attributes.get(attr)
        info[key] = a.data if isinstance(a, Data) and isinstance(a.data, str) else None
    uf = op.attributes.get(USEFUL_FLOPS_ATTR)
    info["useful_flops"] = uf.value.data if isinstance(uf, IntegerAttr) else None
    return info


def kernel_info(module: ModuleOp) -> dict[str, dict[str, Any]]:
    """``sw.kernel`` name -> its ``taihu.layer/op/algorithm/shape`` attributes (strings)."""
    out: dict[str, dict[str, Any]] = {}
    for op in module.body.block.ops:
        if isinstance(op, sw.KernelOp):
            out[op.sym_name.data] = _info_attrs(op)
    # launches of shared kernels (convert-loop-to-sw{dedup-kernels}): their own name and the
    # taihu.* attributes of their spawn
    for fn in module.body.block.ops:
        if not (isinstance(fn, func.FuncOp) and fn.sym_name.data == "main"):
            continue
        for op in fn.body.block.ops:
            if isinstance(op, sw.SpawnOp) and LAUNCH_NAME in op.attributes:
                out[launch_name(op, "")] = _info_attrs(op)
    return out


def is_sw_module(module: ModuleOp) -> bool:
    """True if the module holds sw kernels (i.e. it runs on the simulator directly)."""
    return any(isinstance(o, (sw.KernelOp, TargetOp)) for o in module.body.block.ops)


__all__ = ["simulate", "SimResult", "is_sw_module", "ensure_swsim", "decode_microkernel", "KernelProgram"]
