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
from xdsl.dialects import arith, func
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
from taihu.backends.sim.memo import Recording, TimingMemo
from taihu.backends.sim.memory import SimError
from taihu.backends.sim.dma import DMARequest
from taihu.backends.sim.pipeline import FUSED_SEND, GETS, PUTS
from taihu.backends.sim.program import (
    CMP,
    INT_BIN,
    INT_CASTS,
    SCALAR,
    Barrier,
    BranchEntry,
    Compiler,
    Dma,
    DmaEntry,
    DmaWait,
    For,
    If,
    MAX_LAUNCH_OPS,
    MicroKernelRun,
    MkEntry,
    ReplyReset,
    ResetEntry,
    SimDecodeError,
    Taint,
    WaitEntry,
    Yield,
    decode_microkernel,
    loop_range,
    reads,
    static_work,
    taint,
    uses,
)
from taihu.backends.sim.report import KERNEL_INFO_ATTRS, USEFUL_FLOPS_ATTR, build_report
from taihu.dialects import sw
from taihu.dialects.swsim import TargetOp, kernel_ldm_high_water


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


_RLC_OPS = GETS | PUTS | FUSED_SEND
_CHUNK = 16  # tape entries produced per resumption of the producer (KernelProgram._produce)
_VECTOR_FMA = frozenset({"vmad", "vmas"})


def eval_host_op(op: Operation, env: dict[SSAValue, Any]) -> bool:
    """Evaluate an arith op into ``env``; False if ``op`` is not a supported pure op."""
    t = type(op)
    if type(op) is arith.ConstantOp:
        v = op.value
        env[op.result] = v.value.data if hasattr(v, "value") else v
        return True
    f = INT_BIN.get(t)
    if f is not None:
        assert isinstance(op, arith.SignlessIntegerBinaryOperation)  # the keys of INT_BIN
        env[op.result] = f(env[op.lhs], env[op.rhs])
        return True
    if type(op) is arith.CmpiOp:
        env[op.result] = bool(CMP[op.predicate.value.data](env[op.lhs], env[op.rhs]))
        return True
    if type(op) is arith.SelectOp:
        env[op.result] = env[op.lhs] if env[op.cond] else env[op.rhs]
        return True
    if t in INT_CASTS:
        assert isinstance(op, INT_CASTS)
        env[op.result] = env[op.input]
        return True
    return False


class KernelProgram:
    """A decoded ``sw.kernel``: ``run(cpe, *args)`` is the per-CPE generator, ``tape(...)`` the
    lockstep form.

    The body is compiled once into typed records (``program.py``) with SSA values replaced by
    integer slots, so the 64 CPE interpreters do no xDSL attribute access at run time; the
    per-CPE path (``_exec``) and the lockstep tape (``_produce``) read the same records and
    share the scalar semantics (``record.eval``) and the machine rules (the engine's).
    """

    def __init__(self, kernel: sw.KernelOp) -> None:
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.ldm_high_water = kernel_ldm_high_water(kernel)
        for op in kernel.walk():
            if isinstance(op, sw.LdmAllocOp):
                raise SimDecodeError(f"kernel @{self.name}: sw.ldm_alloc left (run sw-to-swsim)")
        comp = Compiler(self.name)
        self.args = [comp.slot(a) for a in kernel.body.block.args]
        self.code = comp.block(list(kernel.body.block.ops))
        self.n_slots = len(comp.slots)
        self._reads_cache: dict[int, tuple[tuple, tuple[int, ...]]] = {}
        #: set while a launch is recorded for the timing memo (``memo.py``): DMA ranges are
        #: checked against the allocations of their base arguments: (DMA record id -> base
        #: argument, argument -> (start, end) of its allocation, [still memoisable])
        self.memo_check: tuple[dict[int, int], dict[int, tuple[int, int]], list[bool]] | None \
            = None
        self._memo_plan: tuple | None = None
        #: some micro-kernel of the body sends or receives RLC messages
        self.uses_rlc = uses(self.code, _RLC_OPS)
        #: ``simulate(lockstep=None)`` runs the kernel in lockstep mode: RLC (SUMMA) or vector
        #: FMA micro-kernels (GEMM / conv bodies: many runs per CPE, batched per cohort)
        self.prefers_lockstep = self.uses_rlc or uses(self.code, _VECTOR_FMA)
        self._signature: tuple | None = None
        self._checked_launches: set[tuple] = set()

    #: attributes that stay in this process when a program is pickled (``parallel.py`` sends
    #: programs to Dask workers): the xDSL op and the caches keyed by ``id()`` of records or
    #: filled per launch; :meth:`__setstate__` re-creates them empty
    _PROCESS_LOCAL = ("kernel", "_reads_cache", "memo_check", "_memo_plan", "_signature", "_checked_launches")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k not in self._PROCESS_LOCAL}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(kernel=None, _reads_cache={}, memo_check=None, _memo_plan=None, _signature=None,
                          _checked_launches=set())
        vars(self).update(state)

    def check_launch(self, args: tuple) -> None:
        """Refuse a launch on ``args`` whose loops execute more than
        :data:`~taihu.backends.sim.program.MAX_LAUNCH_OPS` operations per CPE (``SimError`` naming
        the kernel and its heaviest loop nest), before anything is simulated."""
        if args in self._checked_launches:
            return
        w = static_work(self.code, dict(zip(self.args, args)))
        if w.ops > MAX_LAUNCH_OPS:
            nest = " x ".join(f"{n:,}" for n in w.nest)
            raise SimError(f"kernel @{self.name}: one CPE would execute {w.ops:,} operations (its heaviest "
                           f"scf.for nest runs {nest} iterations), more than the simulator's bound of "
                           f"{MAX_LAUNCH_OPS:,} per launch")
        self._checked_launches.add(args)

    # -- timing memo support (memo.py) --------------------------------------------------------
    def fingerprint(self) -> tuple:
        """A cheap summary of the body: equal signatures have equal fingerprints."""
        return (len(self.args), self.n_slots, len(self.code), self.ldm_high_water)

    def signature(self) -> tuple:
        """A hashable structural form of the compiled body: two kernels with equal signatures
        execute the same operations for the same argument values (the kernel's name is not
        part of it; records compare by value)."""
        if self._signature is None:
            self._signature = (len(self.args), tuple(self.args), self.code)
        return self._signature

    def memo_plan(self) -> tuple[frozenset, frozenset, dict[int, int]] | None:
        """How the launch's timing depends on its arguments (``program.taint``: an abstract
        interpretation of the compiled body over the lattice "independent of the arguments"
        (None) < "argument i plus an argument-independent value" (int i) < "some other function
        of the arguments" (frozenset of argument indices)).

        Returns ``(exact, pointers, dma_base)``: the arguments whose exact value matters (used
        in loop bounds, conditions, LDM addresses, reply words, micro-kernel bases or
        non-additive arithmetic), the arguments used only as main-memory base addresses of
        DMA descriptors, and the base argument of every DMA record (``id(record)``). None if
        a DMA address is not "one argument plus an argument-independent offset" (absolute or
        mixed addresses: such kernels are not memoised)."""
        if self._memo_plan is None:
            kinds: dict[int, Any] = {s: i for i, s in enumerate(self.args)}
            t = Taint(set(), set(), {})
            taint(self.code, kinds, t)
            self._memo_plan = (frozenset(t.exact), frozenset(t.pointers), t.dma_base) if t.ok \
                else (None,)
        return None if self._memo_plan[0] is None else self._memo_plan

    def _memo_dma(self, rec: Dma, mem) -> None:
        """Recording a launch: the DMA of ``rec`` at ``mem`` (scalar or per-lane array) must
        lie inside its base argument's allocation (else the launch is not memoised)."""
        assert self.memo_check is not None  # the callers run this only while recording
        base, ranges, state = self.memo_check
        lo_a, hi_a = ranges[base[id(rec)]]
        ext = rec.extent()
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

    def _produce(self, code: tuple, seq: Seq, env: list) -> Generator[None, None, list]:
        """Append ``code``'s operations for ``seq``'s lanes to ``seq.entries`` (yields after
        every ``_CHUNK`` appends: production runs ahead of the replay by less than a chunk;
        returns the values of a terminating ``scf.yield``)."""
        out = seq.entries
        ids = (seq.lanes, seq.rows, seq.cols)
        for rec in code:
            t = rec.__class__
            if t in SCALAR:
                rec.eval(env, ids)
                continue
            if t is MicroKernelRun:
                ptrs = rec.ptrs
                bases = np.empty((len(seq.lanes), len(ptrs)), dtype=np.int64)
                for j, p in enumerate(ptrs):
                    bases[:, j] = env[p]
                # [bounds of every row checked] (lockstep._mk)
                out.append(MkEntry(rec.mk, rec.trip, bases, [False]))
            elif t is Dma:
                if self.memo_check is not None:
                    self._memo_dma(rec, env[rec.mem])
                out.append(DmaEntry(rec, env[rec.mem], env[rec.ldm], env[rec.reply]))
            elif t is DmaWait:
                out.append(WaitEntry(env[rec.reply],
                                     rec.count if rec.count_slot is None else env[rec.count_slot]))
            elif t is ReplyReset:
                out.append(ResetEntry(env[rec.reply]))
            elif t is Barrier:
                out.append(rec)
            elif t is For:
                bounds = [env[rec.lb], env[rec.ub], env[rec.step]]
                if any(isinstance(x, np.ndarray) for x in bounds):
                    G = len(seq.lanes)
                    arrs = [np.broadcast_to(np.asarray(x), (G,)) for x in bounds]
                    keys = np.stack(arrs, axis=1)
                    uniq = np.unique(keys, axis=0)
                    if len(uniq) == 1:
                        bounds = [int(v) for v in uniq[0]]
                    else:
                        parts = [((keys == u).all(axis=1), (rec,)) for u in uniq]
                        yield from self._branch(seq, env, parts, rec.results, True)
                        continue
                carried = [env[a] for a in rec.inits]
                iv, bargs, body = rec.iv, rec.bargs, rec.body
                for i in loop_range(self.name, bounds[0], bounds[1], bounds[2]):
                    env[iv] = i
                    for a, v in zip(bargs, carried):
                        env[a] = v
                    carried = yield from self._produce(body, seq, env)
                for r, v in zip(rec.results, carried):
                    env[r] = v
                continue
            elif t is If:
                cond = env[rec.cond]
                if isinstance(cond, np.ndarray):
                    if cond.all():
                        cond = True
                    elif not cond.any():
                        cond = False
                    else:
                        yield from self._branch(seq, env, [(cond, rec.then), (~cond, rec.els)],
                                                rec.results, False)
                        continue
                res = yield from self._produce(rec.then if cond else rec.els, seq, env)
                for r, v in zip(rec.results, res or []):
                    env[r] = v
                continue
            elif t is Yield:
                return [env[a] for a in rec.values]
            else:  # pragma: no cover - Compiler emits only the records above
                raise SimDecodeError(f"kernel @{self.name}: unknown record {rec!r}")
            if not len(out) % _CHUNK:  # an entry was appended
                yield
        return []

    def _region(self, code: tuple, seq: Seq, env: list,
                result_slots: tuple | None) -> Generator[None, None, list]:
        res = yield from self._produce(code, seq, env)
        return [env[r] for r in result_slots] if result_slots is not None else (res or [])

    def _branch(self, seq: Seq, env: list, parts: list[tuple[np.ndarray, tuple]],
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
            for k in reads(code, self._reads_cache):  # only the slots the region reads
                v = env[k]
                sub[k] = v[mask] if isinstance(v, np.ndarray) else v
            ch.gen = self._region(code, ch, sub, result_slots if from_slots else None)
            children.append(ch)
        seq.entries.append(BranchEntry(children))
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

    # -- per-CPE execution -----------------------------------------------------------------
    def run(self, cpe: CPE, *args: int) -> Generator:
        env: list[Any] = [None] * self.n_slots
        for k, v in zip(self.args, args):
            env[k] = v
        yield from self._exec(self.code, cpe, env, (cpe.id, cpe.row, cpe.col))

    def _exec(self, code: tuple, cpe: CPE, env: list, ids: tuple[int, int, int]) \
            -> Generator[Any, None, list]:
        for rec in code:
            t = rec.__class__
            if t in SCALAR:
                rec.eval(env, ids)
            elif t is MicroKernelRun:
                yield from cpe.run(rec.mk, rec.trip, tuple(env[p] for p in rec.ptrs))
            elif t is For:
                carried = [env[a] for a in rec.inits]
                iv, bargs, body = rec.iv, rec.bargs, rec.body
                for i in loop_range(self.name, env[rec.lb], env[rec.ub], env[rec.step]):
                    env[iv] = i
                    for a, v in zip(bargs, carried):
                        env[a] = v
                    carried = yield from self._exec(body, cpe, env, ids)
                for r, v in zip(rec.results, carried):
                    env[r] = v
            elif t is If:
                res = yield from self._exec(rec.then if env[rec.cond] else rec.els, cpe, env, ids)
                for r, v in zip(rec.results, res or []):
                    env[r] = v
            elif t is Yield:
                return [env[a] for a in rec.values]
            elif t is Dma:
                mem = env[rec.mem]
                if self.memo_check is not None:
                    self._memo_dma(rec, mem)
                yield from cpe.dma(DMARequest(cpe.id, rec.kind, mem, env[rec.ldm], rec.size,
                                              rec.bsize, rec.stride, env[rec.reply], rec.mode,
                                              rec.mask, rec.ldm_limit))
            elif t is DmaWait:
                n = rec.count if rec.count_slot is None else env[rec.count_slot]
                yield from cpe.dma_wait(env[rec.reply], n)
            elif t is ReplyReset:
                cpe.reply_reset(env[rec.reply])
            elif t is Barrier:
                yield from cpe.barrier(rec.scope, rec.mask)
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
             numerics: bool = True, memo: bool | None = None, client: Any = None) -> SimResult:
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
    data effects is re-based on the new arguments and executed).
    ``client``: a ``distributed.Client``; timing-only runs with the memo on then simulate
    launches ahead on its workers (``parallel.py``: same report and trace); ignored with
    numerics or ``memo=False``."""
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
                if not (isinstance(nxt, arith.ConstantOp) or type(nxt) in INT_BIN
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
        # (with workers every launch may be replayed: from a worker's record, parallel.py)
        par = client is not None and not numerics
        joins_next = {i for ii in by_body.values() if len(ii) > 1 or par for i in ii}
    spec = None
    if tm is not None and client is not None and not numerics:
        from taihu.backends.sim.parallel import HostView, Speculator

        spec = Speculator(client, eng, HostView(host_ops, kernels, {n: a for n, (a, _) in globals_.items()},
                                                frozenset(joins_next)), lockstep)

    def host(mpe: MPE) -> Generator:
        env: dict[SSAValue, Any] = {}
        recording: tuple[Recording, list[tuple[int, int]]] | None = None
        replayed: bool | None = None
        n_joined, launch = 0, ""  # joins so far, the name of the last launch
        for i, op in enumerate(host_ops):
            if eval_host_op(op, env):
                continue
            if isinstance(op, sw.GlobalAddrOp):
                env[op.results[0]] = globals_[op.global_name.root_reference.data][0]
            elif isinstance(op, sw.MemAllocOp):
                env[op.results[0]] = eng.memory.alloc(op.bytes.value.data)
            elif isinstance(op, sw.SpawnOp):
                kp = kernels[op.kernel.root_reference.data]
                args = tuple(env[a] for a in op.args)
                kp.check_launch(args)
                name = launch_name(op, kp.name)
                launch = name
                if tm is not None and i in joins_next:
                    yield from mpe.sync()  # global time catches up: the state the key reads
                    k = tm.key(kp, args)
                    if k is not None:
                        if spec is not None:
                            spec.fill(tm, i, k[0])
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

    try:
        eng.run_host(host)
    finally:
        if spec is not None:
            spec.close()
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
