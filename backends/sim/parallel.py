"""Parallel kernel simulation on ``dask.distributed`` (``simulate(client=...)``, ``taihu-run
--workers N`` / ``--scheduler tcp://HOST:8786``).

A timing-only run (``numerics=False``) can simulate its launches on other processes; the report
and the trace are byte-identical to the sequential run for any number of workers.

**What a launch's timing depends on.** Not only on the kernel and its arguments: the four DMA
buses' round-robin pointers (``dma._Bus.last_local``, the local index of the CPE the bus served
last) survive a join, and the first arbitration of a launch among several ready requests reads
them. Measured on ResNet-50: 1x1 convolutions take up to 1.4 % more or fewer cycles from another
start state (``r144``: 549,990 to 558,630 cycles over four start states). Everything else is
reset by the spawn or must be idle for the launch memo (``memo.py``: empty event queue, no DMA in
flight, empty RLC FIFOs, no open barrier), so a launch's record is a function of the kernel, its
arguments' alignment classes and the four pointers -- exactly the memo's key. The pointers a
launch leaves behind are known only once it has been simulated, so launches cannot simply be
simulated independently.

**Speculation.** The run stays the sequential one: ``simulate``'s host program walks the
launches in order with the memo on, and every launch is replayed from a record whose key (bus
pointers included) equals the true state at its spawn, or simulated in this process. What the
workers add are records made in advance: :class:`Speculator` predicts the start state of the
coming launches and has the workers simulate ``(launch class, predicted start state)`` pairs;
when the host reaches a launch, a worker record made from exactly its start state becomes a memo
record and is replayed (``Speculator.fill``); one still running is waited for (the host runs
queued jobs itself meanwhile), anything else is simulated here as without workers. A wrong
prediction costs worker time, never exactness. ``taihu-run --workers N`` counts this process as
one of the N: its embedded cluster has N - 1 workers.

Predictions come from what the records showed: per launch class and bus, the end pointer of
every start pointer simulated so far; a bus that ended on one pointer from every start seen is
assumed to do so from any start (most GEMM and convolution kernels: their last transfers are
served in an order their own timing fixes), one whose end pointer always equalled its start
pointer is assumed to pass any pointer through (im2col and relayout kernels: every CPE moves the
same data, a whole round-robin turn), and a bus of a class not simulated yet is assumed to pass
its pointer through. The speculator keeps up to ``window`` simulations queued or running, the
earliest launches first (``window``: two per worker and one for the host), and re-predicts
whenever a record arrives or the host reaches a launch.

**What a worker receives** (:class:`LaunchJob`, pickled): the compiled kernel
(:func:`program_bytes`: ``KernelProgram`` records without the xDSL op; ~50 kB on ResNet-50,
cached per worker by digest), the machine parameters, the sizes of the main-memory allocations
(the worker re-creates the same addresses), the arguments and the start pointers. It simulates
the launch alone on a fresh engine from that state and returns the memo record
(:class:`LaunchOutcome`); a worker never parses IR.

With numerics the launches stay sequential in this process (a record's data effects must run in
launch order on the current data; the runner does not create a speculator then). Errors: a job
that fails or whose worker dies is simulated in this process, which reports the real error.
"""

from __future__ import annotations

import hashlib
import io
import logging
import pickle
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from taihu.backends.sim.engine import MPE, Engine
from taihu.backends.sim.memo import TimingMemo
from taihu.backends.sim.program import CMP, CMP_NP, INT_BIN, INT_BIN_NP
from taihu.backends.sim.runner import KernelProgram, eval_host_op, launch_name
from taihu.dialects import sw
from taihu.dialects.target import machine_from_dict, machine_to_dict
from taihu.target.machine import Machine

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.ir import Operation

__all__ = ["LaunchJob", "LaunchOutcome", "HostView", "Speculator", "simulate_launch",
           "program_bytes", "load_program", "DEFAULT_WINDOW"]

log = logging.getLogger(__name__)

#: simulations a :class:`Speculator` keeps queued or running per worker (plus one)
DEFAULT_WINDOW = 2

# -- kernels as bytes ---------------------------------------------------------------------------
#: the functions compiled records refer to (``program.Bin``): pickled as their index in these
#: tables so that the worker's records hold the very same objects (``program.taint`` compares
#: them by identity)
_FUNCS: tuple = (*INT_BIN.values(), *INT_BIN_NP.values(), *CMP, *CMP_NP)
_FUNC_INDEX: dict[int, int] = {}
for _i, _f in enumerate(_FUNCS):
    _FUNC_INDEX.setdefault(id(_f), _i)

class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> int | None:
        return _FUNC_INDEX.get(id(obj)) if callable(obj) else None


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        return _FUNCS[pid]


def program_bytes(kp: KernelProgram) -> bytes:
    """``kp`` as bytes for :func:`load_program` in another process (the compiled records, the
    name, the argument slots and the flags: ``KernelProgram.__getstate__``; not the xDSL op)."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(kp)
    return buf.getvalue()


def load_program(data: bytes) -> KernelProgram:
    """The :class:`KernelProgram` of :func:`program_bytes`' ``data`` (``kernel`` is None)."""
    kp = _Unpickler(io.BytesIO(data)).load()
    assert isinstance(kp, KernelProgram)  # what program_bytes pickled
    return kp


# -- the worker side ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchJob:
    """One launch to simulate alone from a given start state (picklable; see the module
    docstring). ``allocations``: main-memory allocation sizes in allocation order (bytes), so
    that ``args`` point where they do in the run; ``buses``: the DMA buses' round-robin pointers
    at the spawn; ``lockstep`` as ``simulate``'s."""

    program: bytes
    digest: str
    machine: Any  # machine_to_dict(machine): a picklable DictionaryAttr
    machine_source: str
    allocations: tuple[int, ...]
    args: tuple[int, ...]
    buses: tuple[int, ...]
    name: str
    trace: bool
    lockstep: bool | None


@dataclass(frozen=True)
class LaunchOutcome:
    """A :class:`LaunchJob`'s memo record (``memo._Record``; None when the launch cannot be
    memoised: its body or arguments, or it did not end idle), the key it was recorded under
    without the body id (``(argument classes, buses, trace)``), the pointers it left and the
    worker's seconds."""

    record: Any
    key: tuple | None
    end: tuple[int, ...] | None
    seconds: float
    started: float = 0.0  # time.time() at the start (for the debug log's timeline)


#: per worker process: compiled kernels by digest, machines by parameters (bounded)
_PROGRAMS: dict[str, KernelProgram] = {}
_MACHINES: dict[Any, Machine] = {}
_CACHE_LIMIT = 512


def _program(job: LaunchJob) -> KernelProgram:
    kp = _PROGRAMS.get(job.digest)
    if kp is None:
        if len(_PROGRAMS) >= _CACHE_LIMIT:
            _PROGRAMS.clear()
        kp = _PROGRAMS[job.digest] = load_program(job.program)
    return kp


def _machine(job: LaunchJob) -> Machine:
    m = _MACHINES.get(job.machine)
    if m is None:
        if len(_MACHINES) >= _CACHE_LIMIT:
            _MACHINES.clear()
        m = _MACHINES[job.machine] = machine_from_dict(job.machine, job.machine_source)
    return m


def simulate_launch(job: LaunchJob) -> LaunchOutcome:
    """Simulate ``job``'s launch alone (timing only) on a fresh engine whose main memory holds
    the same allocations and whose DMA buses start at ``job.buses``; its memo record."""
    t0 = time.perf_counter()
    started = time.time()
    kp = _program(job)
    eng = Engine(_machine(job), trace=job.trace, numerics=False)
    for n in job.allocations:
        eng.memory.alloc(n)
    for b, p in zip(eng.dma.buses, job.buses, strict=True):
        b.last_local = p
    tm = TimingMemo(eng)
    eng.memo = tm
    tm.register([kp])
    found: list = []

    def host(mpe: MPE) -> Generator:
        yield from mpe.sync()
        k = tm.key(kp, job.args)
        if k is None:
            return
        rec = tm.begin(kp, k[0], k[2], k[1])
        ls = kp.prefers_lockstep if job.lockstep is None else job.lockstep
        yield from mpe.spawn(kp.run, job.args, name=job.name, ldm_high_water=kp.ldm_high_water,
                             tape=kp.tape if ls else None)
        yield from mpe.join()
        tm.end(rec, eng.kernels[-1], k[1])
        found.append((k[0], tm.records.get(k[0])))

    eng.run_host(host)
    if not found or found[0][1] is None:
        return LaunchOutcome(None, None, None, time.perf_counter() - t0, started)
    key, record = found[0]
    return LaunchOutcome(record, key[1:], tuple(b.last_local for b in eng.dma.buses),
                         time.perf_counter() - t0, started)


# -- the host side ------------------------------------------------------------------------------
@dataclass(frozen=True)
class HostView:
    """What the speculator reads of ``simulate``'s setup: ``@main``'s ops, the compiled kernels
    by symbol, the globals' addresses by symbol and the indices (in ``host_ops``) of the spawns
    whose launches the memo records and replays."""

    host_ops: Sequence[Operation]
    kernels: Mapping[str, KernelProgram]
    globals_: Mapping[str, int]
    memoised: frozenset[int]


@dataclass
class _Launch:
    index: int  # of the spawn in host_ops
    kernel: str
    name: str
    args: tuple[int, ...]
    cls: tuple | None  # (body id, argument classes) in the speculator's memo; None: not memoised


@dataclass
class _Job:
    """A submitted :class:`LaunchJob`: its future, the job (the host may run it itself) and the
    position of the launch it was predicted for (the earliest first)."""

    future: Any
    job: LaunchJob
    position: int
    guessed: bool  # the predicted start state relies on a kernel not simulated yet


@dataclass
class SpeculatorStats:
    """Counters of one run (logged at debug level by :meth:`Speculator.close`)."""

    submitted: int = 0
    used: int = 0  # launches replayed from a worker's (or the host's speculative) record
    waited: float = 0.0  # seconds the host waited for a worker
    local: int = 0  # memoisable launches the host simulated in place (no record in time)
    taken: int = 0  # queued jobs the host ran itself while it waited
    cancelled: int = 0
    job_seconds: float = 0.0  # summed over every finished job
    unused: int = 0  # records never replayed
    failed: int = 0


class Speculator:
    """Simulates a run's launches ahead of the host on a Dask ``client`` (module docstring).

    Created by ``simulate`` before the host program runs, once the globals are allocated;
    ``fill`` is called at each memoised spawn, ``close`` at the end (cancels what is left).
    ``window``: jobs kept queued or running (default :data:`DEFAULT_WINDOW` per worker, plus one
    for the host)."""

    def __init__(self, client: Any, eng: Engine, host: HostView, lockstep: bool | None,
                 window: int | None = None) -> None:
        self.client = client
        self.eng = eng
        self.lockstep = lockstep
        n_workers = len(client.scheduler_info().get("workers", {}))
        self.window = window or DEFAULT_WINDOW * max(1, n_workers) + 1
        m = eng.machine
        self.machine = machine_to_dict(m)
        self.machine_source = m.source
        self.bus_size = list(eng.dma.bus_size)
        self.stats = SpeculatorStats()
        self.kernels = host.kernels
        self.launches, self.allocations = self._plan(host)
        self.position = {la.index: p for p, la in enumerate(self.launches)}
        self.known: dict[tuple, LaunchOutcome] = {}
        self.pending: dict[tuple, _Job] = {}  # (class, start pointers) -> its job
        self.used: set[tuple] = set()
        self.here: set[tuple] = set()  # pairs the host simulated in place (memo records there)
        #: per class, per bus: start pointer -> end pointer seen
        self.seen: dict[tuple, list[dict[int, int]]] = {}
        self.programs: dict[str, tuple[str, bytes]] = {}
        self._speculate(0, tuple(b.last_local for b in eng.dma.buses))

    # -- the plan --------------------------------------------------------------------------
    def _plan(self, host: HostView) -> tuple[list[_Launch], tuple[int, ...]]:
        """The launches of ``@main`` with their arguments (evaluated as ``simulate``'s host
        does: ``@main`` is one straight-line block) and the allocation sizes, in order; the
        classes are keys of a scratch engine's memo holding the same allocations."""
        scratch = Engine(self.eng.machine, trace=self.eng.trace.enabled, numerics=False)
        for a in self.eng.memory.allocations:
            scratch.memory.alloc(a.nbytes, a.name)
        tm = TimingMemo(scratch)
        tm.register(host.kernels.values())
        env: dict = {}
        out: list[_Launch] = []
        for i, op in enumerate(host.host_ops):
            if eval_host_op(op, env):
                continue
            if isinstance(op, sw.GlobalAddrOp):
                env[op.results[0]] = host.globals_[op.global_name.root_reference.data]
            elif isinstance(op, sw.MemAllocOp):
                env[op.results[0]] = scratch.memory.alloc(op.bytes.value.data)
            elif isinstance(op, sw.SpawnOp):
                kname = op.kernel.root_reference.data
                kp = host.kernels.get(kname)
                if kp is None:  # the host reports it when it gets there
                    break
                args = tuple(env[a] for a in op.args)
                cls = None
                if i in host.memoised and all(isinstance(a, int) for a in args):
                    k = tm.key(kp, args)
                    cls = None if k is None else k[0][:2]
                out.append(_Launch(i, kname, launch_name(op, kname), args, cls))
        return out, tuple(a.nbytes for a in scratch.memory.allocations)

    # -- predictions ------------------------------------------------------------------------
    def _next_state(self, cls: tuple | None, s: tuple[int, ...]) -> tuple[int, ...]:
        """The predicted pointers after a launch of class ``cls`` from ``s`` (exact when that
        pair was simulated; a launch not memoised, or of a class not simulated yet, is assumed
        to leave them as they are: see :meth:`_guessed`)."""
        done = self.known.get((cls, s))
        if done is not None and done.end is not None:
            return done.end
        seen = self.seen.get(cls) if cls is not None else None
        if seen is None:
            return s
        out = []
        for b, p in enumerate(s):
            n = self.bus_size[b]
            obs = seen[b]
            ends = set(obs.values())
            if p in obs:
                out.append(obs[p])
            elif all(e == x for x, e in obs.items()):
                out.append(p)
            elif all(e == x % n for x, e in obs.items()):
                out.append(p % n)
            elif len(ends) == 1:
                out.append(next(iter(ends)))
            else:
                out.append(p)
        return tuple(out)

    def _speculate(self, pos: int, s: tuple[int, ...]) -> None:
        """Predict the start states of the launches from position ``pos`` (whose start state
        is ``s``), keep the ``window`` earliest missing pairs queued or running, cancel the
        queued ones no longer predicted."""
        wanted: list[tuple[int, tuple, bool]] = []
        want_set: set[tuple] = set()
        guessed = False
        for p in range(pos, len(self.launches)):
            la = self.launches[p]
            if la.cls is not None:
                pair = (la.cls, s)
                if pair not in want_set and pair not in self.known and pair not in self.here:
                    wanted.append((p, pair, guessed))
                    want_set.add(pair)
                    if len(wanted) >= self.window:
                        break
            guessed = guessed or self._guessed(la.cls, s)
            s = self._next_state(la.cls, s)
        for pair in [q for q in self.pending if q not in want_set]:
            fut = self.pending[pair].future
            if fut.status == "pending":
                fut.cancel()
                del self.pending[pair]
                self.stats.cancelled += 1
        for p, pair, g in wanted:
            job = self.pending.get(pair)
            if job is None:
                self.pending[pair] = self._submit(p, pair[1], g)
            else:
                job.guessed = g

    def _guessed(self, cls: tuple | None, s: tuple[int, ...]) -> bool:
        """The pointers after a launch of class ``cls`` from ``s`` are a guess: neither that
        pair nor any other launch of the class was simulated (or it is not memoised)."""
        done = self.known.get((cls, s))
        return (done is None or done.end is None) and (cls is None or cls not in self.seen)

    def _submit(self, p: int, buses: tuple[int, ...], guessed: bool) -> _Job:
        la = self.launches[p]
        prog = self.programs.get(la.kernel)
        if prog is None:
            data = program_bytes(self.kernels[la.kernel])
            prog = self.programs[la.kernel] = (hashlib.sha1(data).hexdigest(), data)
        job = LaunchJob(prog[1], prog[0], self.machine, self.machine_source, self.allocations,
                        la.args, buses, la.name, self.eng.trace.enabled, self.lockstep)
        self.stats.submitted += 1
        # (``simulate_launch`` looked up now: tests replace it)
        return _Job(self.client.submit(simulate_launch, job, pure=False, priority=-p), job, p, guessed)

    # -- results ----------------------------------------------------------------------------
    def _store(self, pair: tuple, out: LaunchOutcome) -> None:
        self.known[pair] = out
        self.stats.job_seconds += out.seconds
        if out.end is not None:
            seen = self.seen.setdefault(pair[0], [{} for _ in self.bus_size])
            for b, (p, e) in enumerate(zip(pair[1], out.end)):
                seen[b][p] = e

    def _harvest(self) -> bool:
        """Move finished jobs to ``known``; True if any."""
        got = False
        for pair, job in list(self.pending.items()):
            fut = job.future
            if fut.status == "pending":
                continue
            del self.pending[pair]
            got = True
            if fut.status == "finished":
                self._store(pair, fut.result())
            else:  # an error or a lost worker: the host simulates the launch itself
                self.stats.failed += 1
                self.known[pair] = LaunchOutcome(None, None, None, 0.0)
        return got

    def fill(self, tm: TimingMemo, index: int, key: tuple) -> None:
        """The host reached the memoised spawn ``index`` of ``@main`` with memo key ``key``
        (the engine in its start state): make a record of exactly this launch from exactly
        this state the memo's record of ``key`` -- waiting for a worker that runs it, running
        queued jobs meanwhile --, then re-predict the following launches. Without one the host
        simulates the launch in place."""
        pos = self.position.get(index)
        if pos is None:
            return
        la = self.launches[pos]
        s = tuple(b.last_local for b in self.eng.dma.buses)
        self._harvest()
        pair = (la.cls, s)
        if la.cls is not None and key not in tm.records:
            job = self.pending.get(pair)
            if job is not None:
                if self._running({job.future.key}):
                    self._wait_for(pair, pos, s)
                else:  # still queued: simulated in place rather than behind other jobs
                    job.future.cancel()
                    del self.pending[pair]
                    self.stats.cancelled += 1
            out = self.known.get(pair)
            if out is not None and out.record is not None and out.key == key[1:]:
                tm.records[key] = out.record
                self.used.add(pair)
                self.stats.used += 1
            else:
                self.here.add(pair)
                self.stats.local += 1
        self._speculate(pos + 1, self._next_state(la.cls, s))

    def _running(self, keys: set) -> set:
        """Those of the job ``keys`` the scheduler has sent to a worker (running, or next)."""
        return {k for ks in self.client.processing().values() for k in ks if k in keys}

    def _wait_for(self, pair: tuple, pos: int, s: tuple[int, ...]) -> None:
        """Until ``pair``'s job finished: run here the earliest job no worker has taken yet
        (cancelled on the cluster; those whose start state is not a guess first), else wait for
        the next one to finish; re-predict as results come in."""
        from distributed import wait

        t0 = time.perf_counter()
        while pair in self.pending:
            queued = {j.future.key: q for q, j in self.pending.items() if j.future.status == "pending"}
            for k in self._running(set(queued)):
                del queued[k]
            if queued:
                q = min(queued.values(), key=lambda q: (self.pending[q].guessed, self.pending[q].position))
                job = self.pending.pop(q)
                job.future.cancel()
                self.stats.taken += 1
                try:
                    out = simulate_launch(job.job)
                except Exception:  # the host simulates that launch when it gets there: the error then
                    self.stats.failed += 1
                    out = LaunchOutcome(None, None, None, 0.0)
                self._store(q, out)
            else:
                wait([j.future for j in self.pending.values()], return_when="FIRST_COMPLETED")
            self._harvest()
            self._speculate(pos, s)
        self.stats.waited += time.perf_counter() - t0

    def close(self) -> None:
        """Cancel the jobs still queued or running; log the counters."""
        for job in self.pending.values():
            job.future.cancel()
        self.stats.cancelled += len(self.pending)
        self.pending.clear()
        self.stats.unused = sum(1 for p, o in self.known.items()
                                if o.record is not None and p not in self.used)
        log.debug("parallel simulation: %s", self.stats)
        if log.isEnabledFor(logging.DEBUG):
            names = {la.cls: la.name for la in reversed(self.launches)}
            t0 = min((o.started for o in self.known.values() if o.started), default=0.0)
            for p, o in sorted(self.known.items(), key=lambda x: x[1].started):
                log.debug("%s %s from %s: %.2f-%.2f s", "used  " if p in self.used else "UNUSED",
                          names[p[0]], p[1], o.started - t0, o.started - t0 + o.seconds)
