"""Discrete-event simulator of one SW26010 core group: MPE + 64 CPE agents (spec §1, §4-§7).

Agents are Python generators. Each agent keeps a local clock ``t``; work without shared state
(micro-kernels without RLC, scalar code) just advances ``t``; every interaction with shared
state (DMA issue, reply wait, RLC, barrier) first re-enters the global event queue at ``t`` so
that shared resources see requests in global time order. The queue orders events by
``(cycle, phase, key, sequence)``: DMA completions < DMA start-up ends < bus arbitration <
agent steps; agents by ascending CPE id (the MPE last) — fully deterministic.

Coarse events: one per DMA (start-up end, data phase end), one per micro-kernel run (RLC
messages travel in batches), one per barrier arrival. When every unfinished agent is blocked the
run stops with :class:`DeadlockError` naming each blocked agent and what it waits for.

Public API (used by ``runner.py`` and the tests)::

    eng = Engine(machine, trace=True)
    addr = eng.memory.alloc(nbytes, "A")
    def kernel(cpe, *args):          # generator run by every CPE (SPMD)
        yield from cpe.dma_get(mem, ldm, size, reply=0)
        yield from cpe.dma_wait(0, 1)
        yield from cpe.run(mk, trip, bases)
    def host(mpe):
        yield from mpe.spawn(kernel, args, name="k")
        yield from mpe.join()
    eng.run_host(host)
    eng.kernels  # per-kernel statistics (report.py)
"""

from __future__ import annotations

import gc
import heapq
import itertools
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, cast

import numpy as np

from taihu.backends.sim.dma import DMAEngine, DMARequest
from taihu.target.machine import Machine, default_machine
from taihu.backends.sim.memory import LDMArray, MainMemory, SimError
from taihu.backends.sim.microkernel import (
    BatchNumerics,
    MicroKernel,
    check_run_addresses,
    load_group,
    memory_accesses,
    plan_body,
)
from taihu.backends.sim.pipeline import (
    FUSED_SEND,
    GETS,
    LOADS_F32_REP,
    LOADS_F64_REP,
    PUTS,
    Instr,
    rlc_direction,
    schedule_body,
)
from taihu.backends.sim.rlc import Batch, RLCNetwork
from taihu.backends.sim.lockstep import Lockstep, Seq, WholeLinks
from taihu.backends.sim.trace import Trace

if TYPE_CHECKING:  # pragma: no cover
    from taihu.backends.sim.lockstep import _BPRun
    from taihu.backends.sim.memo import TimingMemo


class DeadlockError(SimError):
    """No agent can move. ``blocked``: list of (agent name, reason)."""

    def __init__(self, blocked: list[tuple[str, str]], cycle: int) -> None:
        self.blocked = blocked
        self.cycle = cycle
        lines = [f"deadlock at cycle {cycle}: no agent can make progress"]
        lines += [f"  {name}: {why}" for name, why in blocked]
        super().__init__("\n".join(lines))


_SYNC = ("sync",)


class _Block:
    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


PH_AGENT = 5
PH_MPE = 6


@dataclass
class KernelStats:
    """Counters of one kernel launch (see report.py for the JSON schema)."""

    name: str
    start: int
    end: int = 0
    launch_cycles: int = 0  # the MPE's athread_spawn/join cost before ``start`` (spawn_cycles)
    flops: int = 0
    dma_bytes: int = 0
    dma_moved: int = 0
    dma_count: int = 0
    rlc_messages: int = 0
    p0_valid: int = 0
    p1_valid: int = 0
    p_cycles: int = 0  # cycles spent issuing micro-kernel bodies (all CPEs)
    compute_per_cpe: np.ndarray = field(default_factory=lambda: np.zeros(64, dtype=np.int64))
    dma_intervals: list[tuple[int, int]] = field(default_factory=list)
    ldm_high_water: int = 0
    rlc_wait: int = 0  # cycles CPEs waited for RLC messages / send back-pressure (all CPEs)
    uses_rlc: bool = False
    uses_sync: bool = False


class Agent:
    """An MPE or CPE agent: a generator plus its local clock and blocking state."""

    def __init__(self, engine: Engine, aid: int, name: str) -> None:
        self.engine = engine
        self.id = aid
        self.name = name
        self.t = 0
        self.gen: Generator | None = None
        self.blocked: str | None = None
        self.done = False
        self.scheduled = False

    # the agent's side of blocking
    def _block(self, reason: str) -> _Block:
        return _Block(reason)

    def sync(self) -> Generator:
        """Re-enter the event queue at the local clock (global time catches up)."""
        if self.engine.now != self.t or self.engine.current is not self:
            yield _SYNC


class CPE(Agent):
    """One CPE: id, row/col, LDM, reply words, register file + scoreboard."""

    def __init__(self, engine: Engine, cid: int) -> None:
        m = engine.machine
        super().__init__(engine, cid, f"CPE {cid} ({cid // m.mesh_cols},{cid % m.mesh_cols})")
        self.row, self.col = divmod(cid, m.mesh_cols)
        self.replies: dict[int, int] = {}
        self.kernel: KernelStats | None = None
        # lockstep mode (lockstep.py): where this lane is blocked, its clock floor, back-pressure
        self.site: tuple | None = None
        self.floor = -1
        self.bp: _BPRun | None = None
        self.barrier_done = False

    # -- DMA (spec §4.3) --------------------------------------------------------------
    def dma(self, req: DMARequest) -> Generator:
        """Issue a DMA request (rule 1: stalls while the channel buffer is full)."""
        eng = self.engine
        req.cpe = self.id
        eng.dma.validate(req)
        yield from self.sync()
        while not eng.dma_issue(self, req, self.t):
            yield _Block(eng.chan_full_reason(req.kind))
        self.t += 1  # issues on P1 in one cycle

    def dma_get(self, mem: int, ldm: int, size: int, reply: int = 0, bsize: int = 0,
                stride: int = 0, mode: str = "pe", mask: int = 0xFF,
                ldm_limit: int | None = None) -> Generator:
        yield from self.dma(DMARequest(self.id, "get", mem, ldm, size, bsize, stride, reply,
                                       mode, mask, ldm_limit))

    def dma_put(self, ldm: int, mem: int, size: int, reply: int = 0, bsize: int = 0,
                stride: int = 0, ldm_limit: int | None = None) -> Generator:
        yield from self.dma(DMARequest(self.id, "put", mem, ldm, size, bsize, stride, reply,
                                       "pe", 0xFF, ldm_limit))

    def dma_wait(self, reply: int, n: int) -> Generator:
        """Stall until reply word ``reply`` >= ``n`` (rule 6)."""
        eng = self.engine
        yield from self.sync()
        while (reason := eng.reply_short(self, reply, n)) is not None:
            yield _Block(reason)

    def reply_reset(self, reply: int, value: int = 0) -> None:
        self.replies[reply] = value

    # -- barriers (spec §7) -----------------------------------------------------------
    def barrier(self, scope: str = "array", mask: int | None = None) -> Generator:
        yield from self.sync()
        yield from self.engine.barrier_arrive(self, scope, mask)

    # -- micro-kernels --------------------------------------------------------------------
    def run(self, mk: MicroKernel, trip: int, bases: tuple[int, ...] = ()) -> Generator:
        """Run ``mk`` for ``trip`` iterations with LDM pointers starting at ``bases``."""
        yield from self.engine.run_microkernel(self, mk, trip, bases)

    @property
    def reg_ready(self) -> np.ndarray:
        """Cycle at which each register's pending result is ready (scoreboard across runs)."""
        return self.engine.reg_ready[self.id]

    @property
    def regs(self) -> np.ndarray:
        """This CPE's register file ``(32, 4)`` (float64 lanes), after pending numerics ran."""
        self.engine.flush_numerics()
        return self.engine.regs[self.id]

    def advance(self, cycles: int) -> None:
        """Local work without shared state (scalar code)."""
        self.t += cycles


class MPE(Agent):
    """The management core: runs the host program (spawn/join). Its scalar work is cost-free
    (``mpe_model = "none"``); each launch costs ``spawn_cycles`` (the machine's
    athread_spawn + athread_join cost, see the machine file): the CPEs start that many cycles
    after the MPE reaches the spawn."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, 1 << 20, "MPE")
        self.running: list[CPE] = []
        self.current_kernel: KernelStats | None = None

    def spawn(self, kernel: Callable[..., Generator], args: tuple = (), name: str = "kernel",
              ldm_high_water: int = 0, tape: Callable[..., Seq] | None = None) -> Generator:
        """Start ``kernel(cpe, *args)`` on all 64 CPEs (athread_spawn) ``spawn_cycles`` after
        the MPE's clock (the launch's ``KernelStats.launch_cycles``).

        ``tape``: optional lockstep form ``tape(lanes, args, n_cpes, mesh_cols)`` returning the
        :class:`~taihu.backends.sim.lockstep.Seq` of the launch; the CPEs then replay it in
        cohorts (``lockstep.py``) instead of running one generator each (same results)."""
        eng = self.engine
        yield from self.sync()
        if self.running:
            assert self.current_kernel is not None  # CPEs run: a spawn set it
            raise SimError(f"spawn of '{name}' while kernel '{self.current_kernel.name}' runs "
                           f"(missing join)")
        m = eng.machine
        start = self.t + m.spawn_cycles
        ks = KernelStats(name=name, start=start, launch_cycles=m.spawn_cycles,
                         ldm_high_water=ldm_high_water)
        ks.compute_per_cpe = np.zeros(m.n_cpes, dtype=np.int64)
        eng.kernels.append(ks)
        self.current_kernel = ks
        self.running = []
        for c in eng.cpes:
            c.t = start
            c.done = False
            c.blocked = None
            c.site = None
            c.bp = None
            c.kernel = ks
            c.replies = {}
            c.gen = None if tape is not None else kernel(c, *args)
            self.running.append(c)
        eng.reg_ready[:] = start
        if tape is not None:
            root = tape(np.arange(m.n_cpes, dtype=np.int64), args, m.n_cpes, m.mesh_cols)
            eng.lockstep.start(root, start, ks)
        else:
            for c in self.running:
                eng.schedule_agent(c)

    def join(self) -> Generator:
        """Wait until every CPE finished (athread_join); ``SimError`` without a kernel running."""
        eng = self.engine
        if not self.running:
            raise SimError("sw.join: no kernel is running (no sw.spawn since the last join)")
        yield from self.sync()
        while any(not c.done for c in self.running):
            assert self.current_kernel is not None  # CPEs run: a spawn set it
            eng.join_waiter = self
            yield _Block("join: waiting for the CPEs of kernel "
                         f"'{self.current_kernel.name}'")
        ks = self.current_kernel
        if eng.memo is not None:
            eng.memo.before_flush()  # a recorded launch keeps its data-effect queue (memo.py)
        eng.flush_numerics()
        end = max(c.t for c in self.running)
        assert ks is not None  # CPEs ran (else max() raised): a spawn set it
        ks.end = end
        self.t = max(self.t, ks.end)
        eng.trace.span("MPE", 0, ks.name, ks.start, ks.end, {"kernel": ks.name})
        self.running = []


class Engine:
    """Event queue, shared resources and agents of one core group."""

    def __init__(self, machine: Machine | None = None, trace: bool = False,
                 numerics: bool = True) -> None:
        self.machine = m = machine or default_machine()
        #: False = timing only: no micro-kernel numerics, no DMA data movement, main memory
        #: not materialised (allocations and bounds checks only); same cycles and report
        self.numerics = numerics
        self.now = 0
        self._heap: list = []
        self._seq = itertools.count()
        self.memory = MainMemory(m.mem_txn_bytes, materialize=numerics)
        self.ldm = LDMArray(m.n_cpes, m.ldm_bytes)
        self.trace = Trace(m, enabled=trace)
        self.dma = DMAEngine(self)
        self.rlc = RLCNetwork(m.mesh_rows, m.mesh_cols, m.rlc_send_depth, m.rlc_recv_depth,
                              m.rlc_latency)
        self.cpes = [CPE(self, c) for c in range(m.n_cpes)]
        self.mpe = MPE(self)
        self.kernels: list[KernelStats] = []
        self.reply_waiters: dict[tuple[int, int], list[CPE]] = {}
        self.barriers: dict[tuple, dict] = {}
        self.join_waiter: MPE | None = None
        self.current: Agent | None = None
        self.sender_waiters: dict[int, list[CPE]] = {}
        self._maxdiff_cache: dict[tuple[int, int, int], tuple] = {}
        self.regs = np.zeros((m.n_cpes, m.n_regs, 4))
        self.reg_ready = np.zeros((m.n_cpes, m.n_regs), dtype=np.int64)
        self.lockstep = Lockstep(self)
        self.memo: TimingMemo | None = None  # the launch memo (memo.py), set by the runner
        #: queued data effects (micro-kernel numerics) in creation order, see flush_numerics
        self.tasks: list[_Task | _DataTask] = []
        #: (id(mk), trip) -> (mk, plan); (mk, trip) -> plan (structurally equal micro-kernels)
        self._run_plans: dict[tuple[int, int], tuple[MicroKernel, _RunPlan]] = {}
        self._run_plans_eq: dict[tuple[MicroKernel, int], _RunPlan] = {}
        self._families: dict[tuple, _Family] = {}

    # -- event queue ----------------------------------------------------------------------
    def schedule(self, time: int, phase: int, key: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (time, phase, key, next(self._seq), fn))

    def schedule_agent(self, agent: Agent) -> None:
        if agent.scheduled or agent.done:
            return
        agent.scheduled = True
        ph = PH_MPE if isinstance(agent, MPE) else PH_AGENT
        self.schedule(agent.t, ph, agent.id, lambda: self._step(agent))

    def wake(self, agent: Agent, at: int | None = None) -> None:
        """Unblock ``agent`` no earlier than ``at`` (default: now)."""
        if agent.done:
            return
        if agent.__class__ is CPE and agent.site is not None:
            self.lockstep.wake_lane(agent, at)
            return
        agent.blocked = None
        agent.t = max(agent.t, self.now if at is None else at)
        self.schedule_agent(agent)

    def _step(self, agent: Agent) -> None:
        agent.scheduled = False
        if agent.done or agent.blocked is not None:
            return
        self.current = agent
        gen = agent.gen
        assert gen is not None  # only agents running a generator are scheduled
        try:
            while True:
                cmd = next(gen)
                if cmd is _SYNC:
                    if agent.t == self.now:
                        continue
                    self.schedule_agent(agent)
                    return
                if isinstance(cmd, _Block):
                    agent.blocked = cmd.reason
                    return
                raise SimError(f"{agent.name}: unknown command {cmd!r}")
        except StopIteration:
            agent.done = True
            self._finished(agent)
        finally:
            self.current = None

    def _finished(self, agent: Agent) -> None:
        if isinstance(agent, CPE):
            self.trace.instant(agent.id, "end", agent.t)
            if self.join_waiter is not None and all(c.done for c in self.mpe.running):
                w, self.join_waiter = self.join_waiter, None
                self.wake(w, max(c.t for c in self.mpe.running))

    def lanes_finished(self) -> None:
        """Lockstep lanes finished (``lockstep.py``): wake the join when every CPE is done."""
        if self.join_waiter is not None and all(c.done for c in self.mpe.running):
            w, self.join_waiter = self.join_waiter, None
            self.wake(w, max(c.t for c in self.mpe.running))

    def run_host(self, host: Callable[[MPE], Generator]) -> None:
        """Run the host program to completion; raises ``DeadlockError`` if agents get stuck."""
        mpe = self.mpe
        mpe.gen = host(mpe)
        self.schedule_agent(mpe)
        heap = self._heap
        # the run allocates many short-lived acyclic objects (events, message batches): a high
        # first-generation threshold keeps the cyclic collector from rescanning them (~25 %)
        old_threshold = gc.get_threshold()
        gc.set_threshold(200_000, old_threshold[1], old_threshold[2])
        gc.freeze()  # the IR and the decoded program are long-lived: keep them out of GC scans
        # a trace keeps millions of event tuples alive, which every older-generation collection
        # would rescan: collect once at the end instead (SqueezeNet traced: 11.1 -> 9.5 CPU s,
        # peak memory +7 %)
        was_enabled = gc.isenabled()
        if self.trace.enabled:
            gc.disable()
        try:
            while heap:
                time, _, _, _, fn = heapq.heappop(heap)
                self.now = time
                fn()
            self.flush_numerics()
        finally:
            if was_enabled:
                gc.enable()
            gc.unfreeze()
            gc.set_threshold(*old_threshold)
        if not mpe.done:
            self.lockstep.bp_reasons()
            why: dict[int, str] = {c.id: c.blocked for c in self.cpes if not c.done and c.blocked}
            blocked = [(self.cpes[c].name, why[c]) for c in sorted(why)]
            if mpe.blocked:
                blocked.append((mpe.name, mpe.blocked))
            raise DeadlockError(blocked, self.now)

    # -- the DMA and reply-word rules of both execution paths (per CPE and lockstep) ----------
    def dma_issue(self, cpe: CPE, req: DMARequest, t: int) -> bool:
        """Issue the validated ``req`` of ``cpe`` at cycle ``t`` (spec §4.3; the kernel's DMA
        counters). False if the CPE's channel buffer is full (rule 1): nothing is issued and
        ``cpe`` is woken when a slot frees (``chan_full_reason`` says why it waits)."""
        dma = self.dma
        c = cpe.id
        if dma.channel_full(c):
            dma.chan_waiters[c].append(partial(self.wake, cpe))
            return False
        dma.issue(req, t)
        k = cpe.kernel
        if k is not None:
            k.dma_bytes += req.size
            k.dma_moved += req.moved
            k.dma_count += 1
        return True

    def chan_full_reason(self, kind: str) -> str:
        """Why a CPE cannot issue a DMA ``kind`` (its blocked reason, deadlock reports)."""
        return (f"DMA {kind} issue: channel buffer full "
                f"({self.machine.chan_buf_depth} requests waiting)")

    def reply_short(self, cpe: CPE, reply: int, n: int) -> str | None:
        """None if reply word ``reply`` of ``cpe`` is >= ``n`` (``sw.dma_wait`` may pass, rule
        6); else ``cpe`` is woken by the next completion on that word and the reason it waits
        is returned."""
        have = cpe.replies.get(reply, 0)
        if have >= n:
            return None
        c = cpe.id
        self.reply_waiters.setdefault((c, reply), []).append(cpe)
        inflight = self.dma.inflight[c] + len(self.dma.chan[c])
        return (f"dma_wait: reply word {reply} = {have} < {n} "
                f"({inflight} DMA requests of this CPE pending)")

    # -- DMA completion ---------------------------------------------------------------------
    def on_dma_complete(self, req: DMARequest) -> None:
        c = self.cpes[req.cpe]
        c.replies[req.reply] = c.replies.get(req.reply, 0) + 1
        k = c.kernel
        if k is not None:
            k.dma_intervals.append((req.accept_t, req.end_t))
        self.trace.dma(req, self.dma.bus_of[req.cpe])
        for w in self.reply_waiters.pop((req.cpe, req.reply), []):
            self.wake(w)

    # -- barriers ----------------------------------------------------------------------------
    def barrier_register(self, cpe: CPE, scope: str, mask: int | None,
                         t: int) -> tuple[int | None, list[int]]:
        """``cpe`` arrives at a barrier at cycle ``t`` (spec §7). Returns ``(release cycle,
        arrived CPE ids)`` when it is the last member (the barrier is then over), else
        ``(None, missing CPE ids)``."""
        m = self.machine
        key: tuple  # ("array", mask) | ("row", row, mask) | ("col", col, mask)
        if scope == "array":
            members = [c.id for c in self.mpe.running] if self.mpe.running else list(range(m.n_cpes))
            if mask is not None and mask not in (0xFF, 0xFFFF, 0xFFFFFFFFFFFFFFFF):
                members = [c for c in members if (mask >> (c // m.mesh_cols)) & 1]
            key, cost = ("array", mask), m.sync_array
        elif scope == "row":
            mk = 0xFF if mask is None else mask
            members = [cpe.row * m.mesh_cols + j for j in range(m.mesh_cols) if (mk >> j) & 1]
            key, cost = ("row", cpe.row, mk), m.sync_rowcol
        elif scope == "col":
            mk = 0xFF if mask is None else mask
            members = [i * m.mesh_cols + cpe.col for i in range(m.mesh_rows) if (mk >> i) & 1]
            key, cost = ("col", cpe.col, mk), m.sync_rowcol
        else:
            raise SimError(f"{cpe.name}: unknown barrier scope '{scope}'")
        if cpe.id not in members:
            raise SimError(f"{cpe.name}: barrier {scope} mask {mask:#x} excludes the CPE itself")
        if cpe.kernel is not None:
            cpe.kernel.uses_sync = True
        st = self.barriers.get(key)
        if st is None:
            st = self.barriers[key] = {"arrived": {}, "members": set(members)}
        st["arrived"][cpe.id] = t
        if len(st["arrived"]) == len(st["members"]):
            release = max(st["arrived"].values()) + cost
            del self.barriers[key]
            for cid, ta in st["arrived"].items():
                self.trace.span(cid, 1, f"barrier {scope}", ta, release)
            return release, list(st["arrived"])
        return None, sorted(st["members"] - set(st["arrived"]))

    def barrier_arrive(self, cpe: CPE, scope: str, mask: int | None) -> Generator:
        """Per-CPE barrier: arrive at the local clock, block until the last member arrives;
        every member continues at the release cycle (re-synchronised there)."""
        release, ids = self.barrier_register(cpe, scope, mask, cpe.t)
        if release is None:
            cpe.barrier_done = False
            while not cpe.barrier_done:
                yield _Block(f"barrier {scope}: waiting for CPEs {ids}")
            return
        for cid in ids:
            if cid != cpe.id:
                c = self.cpes[cid]
                c.barrier_done = True
                self.wake(c, release)
        cpe.t = release
        yield from cpe.sync()

    # -- RLC timing helpers (O(1) for whole batches: cached maxima over the rel. schedules) --
    def _maxdiff(self, a: np.ndarray, b: np.ndarray, shift: int = 0) -> int:
        """``max(a[:len(a)-shift] - b[shift:])``, cached by the identity of the arrays."""
        key = (id(a), id(b), shift)
        hit = self._maxdiff_cache.get(key)
        if hit is None:
            n = a.shape[0]
            hit = (a, b, int((a[: n - shift] - b[shift:]).max()))
            self._maxdiff_cache[key] = hit
        return hit[2]

    def _arrival_start(self, slices: list, rel: np.ndarray) -> int:
        """Earliest start of a receiving run: every GET issues at or after its message's arrival."""
        if len(slices) == 1:
            b, lo, hi = slices[0]
            if lo == 0 and hi == b.n and hi == rel.shape[0]:
                return b.arrival_base + self._maxdiff(b.put_rel, rel)
            return int((b.arrival_base + b.put_rel[lo:hi] - rel).max())
        arr = np.concatenate([b.arrival_base + b.put_rel[lo:hi] for b, lo, hi in slices])
        return int((arr - rel).max())

    def _record_gets(self, slices: list, rel: np.ndarray, start: int, cpe: int) -> None:
        pos = 0
        for b, lo, hi in slices:
            if lo == 0 and hi == b.n and pos == 0 and hi == rel.shape[0]:
                b.got_base, b.got_rel = start, rel
            else:
                if b.got is None:
                    b.got = np.empty(b.n, dtype=np.int64)
                b.got[lo:hi] = start + rel[pos : pos + hi - lo]
            pos += hi - lo
            if self.trace.enabled:
                self.trace.flow(b, cpe, start)
            ws = self.sender_waiters.pop(id(b), None)
            if ws:
                for w in ws:
                    self.wake(w)

    def _backpressure_delta(self, b: Batch, depth: int) -> int:
        """Cycles a sender loses because put ``j`` waits for get ``j - depth`` (+1)."""
        if b.got_rel is not None:
            return b.got_base + 1 - b.put_base + self._maxdiff(b.got_rel, b.put_rel, depth)
        k = b.n - depth
        got = b.got
        assert got is not None  # consumed in several slices: recorded per message
        return int((got[:k] + 1 - (b.put_base + b.put_rel[depth:])).max())

    # -- micro-kernels (timing + deferred, SPMD-batched numerics + RLC batches) ---------------
    def _run_plan(self, mk: MicroKernel, trip: int) -> _RunPlan:
        key = (id(mk), trip)
        hit = self._run_plans.get(key)
        if hit is None or hit[0] is not mk:
            # equal micro-kernels of different kernels (not deduplicated) share one plan
            skey = (mk, trip)
            rp = self._run_plans_eq.get(skey)
            if rp is None:
                rp = self._run_plans_eq[skey] = _RunPlan(mk, trip, self.machine)
            self._run_plans[key] = (mk, rp)
            return rp
        return hit[1]

    def run_microkernel(self, cpe: CPE, mk: MicroKernel, trip: int,
                        bases: tuple[int, ...]) -> Generator:
        """Time one run of ``mk`` on ``cpe`` and queue its numerics (see module docstring)."""
        m = self.machine
        if trip <= 0:
            return
        if len(bases) != len(mk.strides):
            raise SimError(f"{cpe.name}: micro-kernel '{mk.name}' has {len(mk.strides)} "
                           f"pointers but {len(bases)} bases were given")
        rp = self._run_plan(mk, trip)
        if bases not in rp.checked:
            check_run_addresses(rp.accesses, cpe.id, bases, mk.strides, trip, m.ldm_bytes,
                                m.vector_ldm_align)
            rp.checked.add(bases)
        t0 = cpe.t
        rr = cpe.reg_ready
        for r, off in rp.first_use:
            ready = int(rr[r]) - off
            if ready > t0:
                t0 = ready
        cpe.t = t0
        if rp.has_rlc:
            yield from cpe.sync()
            t0 = cpe.t
        start = t0
        rlc = self.rlc
        inputs: dict[str, list] = {}
        for d, (need, rel) in rp.gets.items():
            fifo = rlc.fifo[d][cpe.id]
            while fifo.available() < need:
                fifo.waiters.append(cpe)
                yield _Block(f"get{d[0]} in '{mk.name}': waiting for {need} messages on the "
                             f"{d} FIFO ({fifo.available()} posted)")
            slices = fifo.take(need)
            s = self._arrival_start(slices, rel)
            if s > start:
                start = s
            inputs[d] = slices
        for d, slices in inputs.items():
            self._record_gets(slices, rp.gets[d][1], start, cpe.id)
        k = cpe.kernel
        outputs: list[tuple[Batch, tuple[int, ...]]] = []
        if rp.puts:
            for d, tgt, js, put_rel in rp.targets(cpe.id, rlc):
                b = Batch(cpe.id, tgt, d, start, put_rel, m.rlc_latency)
                b.flow_id = rlc.next_flow
                rlc.next_flow += 1
                rlc.post(b)
                outputs.append((b, js))
                self.trace.flow_start(b, cpe.id, start)
                fifo = rlc.fifo[d][tgt]
                ws, fifo.waiters = fifo.waiters, []
                for w in ws:
                    self.wake(w)
            rlc.messages += rp.n_msgs
            if k is not None:
                k.rlc_messages += rp.n_msgs
        if k is not None and rp.has_rlc:
            k.uses_rlc = True
        # numerics: queued, executed in SPMD batches by flush_numerics()
        if self.numerics:
            self._queue_cpe_run(rp, cpe.id, bases, inputs, outputs)
        end = start + rp.cycles
        for r, off in rp.ready_after:
            rr[r] = start + off
        depth = rlc.depth
        bp = 0
        for b, _ in outputs:
            if b.n <= depth:
                continue
            while b.consumed < b.n - depth:
                self.sender_waiters.setdefault(id(b), []).append(cpe)
                yield _Block(f"put{b.direction[0]} in '{mk.name}': send buffer full — CPE "
                             f"{b.receiver} has consumed {b.consumed} of {b.n} messages "
                             f"(link depth {depth})")
            # the sender's puts form one instruction stream: it lags by the slowest link,
            # not by the sum over links (a broadcast feeds 7 links per axis)
            bp = max(bp, int(self._backpressure_delta(b, depth)))
        if bp > 0:
            end += bp
            if k is not None:
                k.rlc_wait += bp
        if end > cpe.t:
            cpe.t = end
        if k is not None:
            cyc = end - start
            k.flops += rp.flops
            k.p0_valid += rp.p0_valid
            k.p1_valid += rp.p1_valid
            k.p_cycles += cyc
            k.compute_per_cpe[cpe.id] += cyc
            k.rlc_wait += start - t0
        if self.trace.enabled:
            if start > t0:
                self.trace.span(cpe.id, 1, "rlc stall", t0, start)
            self.trace.span(cpe.id, 1, mk.name, start, end, {"trip": trip})

    def flush_numerics(self) -> None:
        """Execute every queued data effect (see :meth:`_flush_numerics`). Floating-point
        overflow, division by zero and invalid operations give IEEE inf/nan as the CPE's FPU does
        (no Python warnings)."""
        if self.tasks:
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                self._flush_numerics()

    def _flush_numerics(self) -> None:
        """Execute every queued data effect: micro-kernel numerics and DMA data movement are
        deferred until somebody needs the bytes (the join, a register read, a long queue).

        The queue (creation order) is the reference order. Effects are executed in any order
        that keeps every dependence of it: the effects on one CPE's LDM/registers in queue order,
        DMA reads/writes of one main-memory allocation in queue order (RAW/WAR/WAW), RLC
        producer runs before their consumers. Among the runs that are ready, those of the same
        (body, trip count) execute as one SPMD batch (``BatchNumerics``); DMA effects run as soon
        as they are ready (they unlock runs of other CPEs).

        Role variants (:class:`_Family`: bodies equal up to fused-send load <-> GET, e.g. the
        both / row / column senders and the receivers of one SUMMA step) are merged: the ready
        runs of a family plus every run of the family that becomes ready through them (RLC
        consumers on other CPEs) form one batch, executed by :meth:`_execute_merged`."""
        tasks = self.tasks
        if not tasks:
            return
        self.tasks = []
        # the same queue, seen through the indices of ready_dma (DMA effects) and of ready_run
        # (micro-kernel runs): push() files every index by its kind
        dmas = cast(list[_DataTask], tasks)
        runs = cast(list[_Task], tasks)
        n = len(tasks)
        indeg = [0] * n
        succ: list[list[int]] = [[] for _ in range(n)]
        ncpe = len(self.cpes)
        last_lane = [-1] * ncpe  # CPE -> last queued effect on it (-1: none)
        mem_w: dict[int, int] = {}  # allocation -> last DMA write in the queue
        mem_r: dict[int, list[int]] = {}  # allocation -> DMA reads since that write
        snaps: dict[int, int] = {}
        for i, t in enumerate(tasks):
            t.idx = i
            lanes = t.lanes
            if len(lanes) == ncpe:  # every CPE (lockstep SPMD runs)
                preds = set(last_lane)
                last_lane = [i] * ncpe
            else:
                preds = set(map(last_lane.__getitem__, lanes))
                for c in lanes:
                    last_lane[c] = i
            preds.discard(-1)
            if t.rp is None:
                if t.snap:
                    snaps[id(t.req)] = i
                else:
                    p = snaps.pop(id(t.req), None)  # a put's move after its snapshot
                    if p is not None:
                        preds.add(p)
                    a = t.alloc
                    w = mem_w.get(a)
                    if w is not None:
                        preds.add(w)
                    if t.req.kind == "get":
                        mem_r.setdefault(a, []).append(i)
                    else:
                        preds.update(mem_r.pop(a, ()))
                        mem_w[a] = i
            elif t.deps:
                for d in t.deps:
                    if not d.done:
                        preds.add(d.idx)
            indeg[i] = len(preds)
            for p in preds:
                succ[p].append(i)
        ready_dma: list[int] = []
        ready_run: dict[int, list[int]] = {}

        family = self._family

        def push(i: int) -> None:
            t = tasks[i]
            if t.rp is None:
                heapq.heappush(ready_dma, i)
            elif t.chain is not None:
                ready_run.setdefault(-id(t.rp), []).append(i)
            else:
                fam = t.rp.fam
                ready_run.setdefault(id(fam if fam is not None else family(t.rp)), []).append(i)

        for i in range(n):
            if indeg[i] == 0:
                push(i)
        done = 0
        dma = self.dma
        while True:
            while ready_dma:
                i = heapq.heappop(ready_dma)
                t = dmas[i]
                if t.snap:
                    dma.snapshot(t.req)
                else:
                    dma.move_data(t.req)
                t.done = True
                done += 1
                for s in succ[i]:
                    indeg[s] -= 1
                    if indeg[s] == 0:
                        push(s)
            if not ready_run:
                break
            key = min(ready_run, key=lambda k: min(ready_run[k]))  # the oldest ready run
            idxs = sorted(ready_run.pop(key))
            t0 = runs[idxs[0]]
            fam = t0.rp.fam  # set by push() (family) unless the runs are chains
            if t0.chain is not None or fam is None or not fam.mergeable:
                if t0.chain is not None:
                    self._execute_chains([runs[i] for i in idxs])
                else:
                    self._execute([runs[i] for i in idxs])
                done += len(idxs)
                for i in idxs:
                    for s in succ[i]:
                        indeg[s] -= 1
                        if indeg[s] == 0:
                            push(s)
                continue
            # the closure: runs of the family that only wait for runs of the batch (and use
            # other CPEs) join it, level by level; other successors are pushed after it ran
            levels = [idxs]
            later: list[int] = []
            busy: set[int] | None = None
            frontier = idxs
            while frontier:
                nxt = []
                for i in frontier:
                    for s in succ[i]:
                        indeg[s] -= 1
                        if indeg[s] == 0:
                            ts = tasks[s]
                            if ts.rp is not None and ts.rp.fam is fam and ts.chain is None:
                                if busy is None:
                                    busy = {c for i in idxs for c in tasks[i].lanes}
                                if busy.isdisjoint(ts.lanes):
                                    busy.update(ts.lanes)
                                    nxt.append(s)
                                    continue
                            later.append(s)
                if nxt:
                    nxt.sort()
                    levels.append(nxt)
                frontier = nxt
            if len(levels) == 1 and all(tasks[i].rp is t0.rp for i in idxs):
                self._execute([runs[i] for i in idxs])
            else:
                self._execute_merged([[runs[i] for i in lv] for lv in levels])
            done += sum(len(lv) for lv in levels)
            for s in later:
                push(s)
        if done != n:
            raise SimError("internal error: micro-kernel numerics wait for messages that no "
                           "earlier run produces")

    def _family(self, rp: _RunPlan) -> _Family:
        """The :class:`_Family` of a run plan (set as ``rp.fam``)."""
        body = rp.mk.body
        if any(ins.op in PUTS for ins in body):  # explicit puts: never merged
            fam = _Family(None, rp)
        else:
            key = (rp.trip, rp.mk.strides, tuple(
                ("rlc", rlc_direction(ins.op), ins.dst) if ins.op in FUSED_SEND or ins.op in GETS
                else ins for ins in body))
            hit = self._families.get(key)
            if hit is None:
                hit = self._families[key] = _Family(key, rp)
            fam = hit
        rp.fam = fam
        return fam

    @staticmethod
    def _bases(batch: list[_Task], P: int) -> np.ndarray:
        """(lanes, P) pointer bases of the tasks' lanes, in batch order."""
        if len(batch) == 1:
            t0 = batch[0]
            return t0.bases if isinstance(t0.bases, np.ndarray) else \
                np.array(t0.bases, dtype=np.int64).reshape(len(t0.lanes), P)
        if not P:
            return np.zeros((sum(len(t.lanes) for t in batch), 0), dtype=np.int64)
        if not any(isinstance(t.bases, np.ndarray) for t in batch):  # per-CPE runs: tuples
            return np.array([b for t in batch for b in t.bases], dtype=np.int64).reshape(-1, P)
        return np.concatenate([np.asarray(t.bases, dtype=np.int64).reshape(len(t.lanes), -1)
                               for t in batch])

    def _inputs(self, batch: list[_Task], d: str, C: int, trip: int, m: int) -> np.ndarray:
        """``(C, trip, m, 4)`` payloads of the tasks' GETs of direction ``d`` (batch order)."""
        x = self._gather_whole(batch, d, C, trip, m)
        if x is None:
            for t in batch:
                if isinstance(t.inputs, WholeLinks):
                    t.inputs = t.inputs.expand()
            inputs = batch[0].inputs if len(batch) == 1 else [x for t in batch for x in t.inputs]
            x = self._gather(inputs, d, C, trip, m)
        return x

    def _execute(self, batch: list[_Task]) -> None:
        rp = batch[0].rp
        mk, trip, plan = rp.mk, rp.trip, rp.plan
        cpes = batch[0].lanes if len(batch) == 1 else [c for t in batch for c in t.lanes]
        bases = self._bases(batch, len(mk.strides))
        C = len(cpes)
        ins = {d: self._inputs(batch, d, C, trip, len(js)) for d, js in plan.gets.items()}
        bn = BatchNumerics(mk.body, plan, np.array(cpes), self.regs, self.ldm, trip, bases,
                           mk.strides, ins)
        sends = bn.run()
        if plan.puts:
            self._post_sends(batch, sends, getattr(bn, "prov", None) or {}, C, trip)
        for t in batch:
            t.done = True
            t.inputs = t.outputs = t.deps = t.links = None

    @staticmethod
    def _post_sends(batch: list[_Task], sends: dict, prov: dict, C: int, trip: int) -> None:
        """Hand the tasks' sent values (``{put instr: (C, trip, 4)}``, rows in batch order) to
        their LinkSets (lockstep) / batches (per-CPE mode): one ``(C, trip*m, 4)`` array per
        distinct group of put instructions, shared by every target (a broadcast's 7 batches
        carry the same payload)."""
        packed: dict[tuple[int, ...], np.ndarray] = {}

        def pack(js: tuple[int, ...]) -> np.ndarray:
            arr = packed.get(js)
            if arr is None:
                if len(js) == 1:
                    arr = np.broadcast_to(sends[js[0]], (C, trip, 4))
                else:
                    src = [prov.get(j) for j in js]
                    x = src[0][0] if src[0] is not None else None
                    if x is not None and x.shape == (C, trip, len(js), 4) and \
                            x.flags.c_contiguous and all(
                            p is not None and p[0] is x and p[1] == i
                            for i, p in enumerate(src)):
                        arr = x.reshape(C, trip * len(js), 4)  # the grouped loads
                    else:
                        arr = np.stack([np.broadcast_to(sends[j], (C, trip, 4))
                                        for j in js], axis=2).reshape(C, trip * len(js), 4)
                packed[js] = arr
            return arr

        off = 0
        for t in batch:
            if t.links is not None:
                for ls, js in t.links:
                    ls.src = pack(js)
                    ls.src_off = off
            else:
                for ci, outs in enumerate(t.outputs):
                    for b, js in outs:
                        arr = pack(js)
                        b.data = arr[off + ci]
                        b.src = (arr, off + ci)
            off += len(t.lanes)

    def _execute_chains(self, batch: list[_Task]) -> None:
        """Execute chain tasks (``_Task.chain``, one CPE each, all ready): position by
        position, the runs of the same plan at that position as one SPMD batch."""
        regs, ldm = self.regs, self.ldm
        live: list[tuple[int, list[tuple[_RunPlan, tuple]]]] = []  # (CPE, chain) per task
        for t in batch:
            assert t.chain is not None  # chain tasks (flush_numerics files them apart)
            live.append((t.lanes[0], t.chain))
        pos = 0
        while live:
            groups: dict[int, list[tuple[int, list[tuple[_RunPlan, tuple]]]]] = {}
            for x in live:
                groups.setdefault(id(x[1][pos][0]), []).append(x)
            for g in groups.values():
                rp = g[0][1][pos][0]
                mk = rp.mk
                P = len(mk.strides)
                cpes = np.array([c for c, _ in g])
                bases = np.array([ch[pos][1] for _, ch in g], dtype=np.int64).reshape(len(g), P)
                BatchNumerics(mk.body, rp.plan, cpes, regs, ldm, rp.trip, bases, mk.strides,
                              {}).run()
            pos += 1
            live = [x for x in live if len(x[1]) > pos]
        for t in batch:
            t.done = True
            t.inputs = t.outputs = t.deps = t.links = t.chain = None

    def _execute_merged(self, levels: list[list[_Task]]) -> None:
        """Execute the runs of one :class:`_Family` (``levels``: the closure of
        ``flush_numerics``; a run of level ``L + 1`` consumes messages of runs of levels <= L)
        as one evaluation: (1) the senders' fused loads, handed to their receivers; (2) the
        family's all-GET body on every lane, the GETs of a sender's own fused loads taking the
        values it sent. Each lane computes exactly what its own body computes (same operations
        on the same values). Falls back to one batch per (level, body) when a sender's fused
        loads are not exact ahead of its body (a memory hazard, a sequential body)."""
        batch = [t for lv in levels for t in lv]
        rp0 = batch[0].rp
        groups: dict[int, list[_Task]] = {}
        for t in batch:
            groups.setdefault(id(t.rp), []).append(t)
        if len(groups) == 1 and len(levels) == 1:
            self._execute(batch)
            return
        fam = rp0.fam
        assert fam is not None  # the runs of a mergeable family (flush_numerics)
        mk, trip = rp0.mk, rp0.trip
        P = len(mk.strides)
        regs, ldm = self.regs, self.ldm
        parts = []  # (tasks, run plan, lanes, bases, first row)
        off = 0
        for g in groups.values():
            rp = g[0].rp
            lanes = g[0].lanes if len(g) == 1 else [c for t in g for c in t.lanes]
            bases = self._bases(g, P)
            plan = rp.plan
            if plan.puts and (plan.unsupported or not plan.order or plan.has_store and BatchNumerics(
                    rp.mk.body, plan, np.array(lanes), regs, ldm, trip, bases, rp.mk.strides,
                    {}).fused_hazard()):
                # the fused loads are not exact ahead of the body: one batch per body and level
                for lv in levels:
                    by: dict[int, list[_Task]] = {}
                    for t in lv:
                        by.setdefault(id(t.rp), []).append(t)
                    for sub in by.values():
                        self._execute(sub)
                return
            parts.append((g, rp, lanes, bases, off))
            off += len(lanes)
        C = off
        cbody, cplan = fam.canonical()
        cpes = np.array([c for p in parts for c in p[2]])
        bases = np.concatenate([p[3] for p in parts]) if len(parts) > 1 else parts[0][3]
        rep: set[str] = set()
        ins: Mapping[str, np.ndarray | tuple[np.ndarray, np.ndarray]] | None = \
            self._merged_inputs(parts, cplan, cpes, bases, C, trip, rep)
        if ins is None:
            ins = self._merged_inputs_general(parts, cplan, trip)
        bn = BatchNumerics(cbody, cplan, cpes, regs, ldm, trip, bases, mk.strides, ins)
        bn.rep = rep
        bn.run()
        for t in batch:
            t.done = True
            t.inputs = t.outputs = t.deps = t.links = None

    def _merged_inputs(self, parts: list, cplan, cpes: np.ndarray, bases: np.ndarray, C: int,
                       trip: int, rep: set[str]
                       ) -> dict[str, np.ndarray | tuple[np.ndarray, np.ndarray]] | None:
        """Inputs of the all-GET body of a merged batch when, per direction, every body either
        GETs all of that direction's messages or fused-loads all of them as one load group
        (the SUMMA case): one ``(C, trip, m, 4)`` array per direction; the senders' rows loaded
        with one gather, posted to their links (the array itself), the receivers' rows taken
        from it. None (nothing done) otherwise. Adds to ``rep`` the directions whose rows all
        come from scalar loads of the batch (the 4 lanes of every value equal)."""
        work = []
        for d, js in cplan.gets.items():
            m = len(js)
            spec = None
            senders, receivers = [], []
            for part in parts:
                rp = part[1]
                got = rp.plan.gets.get(d, ())
                if len(got) == m:
                    receivers.append(part)
                    continue
                if got:
                    return None
                sp = rp.fused_group(d)
                if sp is None or (spec is not None and sp[4] != spec[4]) or sp[3] != js:
                    return None
                for t in part[0]:
                    links = t.links if t.links is not None else [x for o in t.outputs for x in o]
                    if any(x[1] != js for x in links if x[0].direction == d):
                        return None
                spec = sp
                senders.append(part)
            work.append((d, m, spec, senders, receivers))
        ins: dict[str, np.ndarray | tuple[np.ndarray, np.ndarray]] = {}
        for d, m, spec, senders, _receivers in work:
            # the senders' rows: one gather into Y (S, trip, m, 4), posted to their links
            Y = Yf = None
            if senders:
                assert spec is not None  # the senders' load group
                op, ptr, offs = spec[:3]
                srows = np.concatenate([np.arange(p[4], p[4] + len(p[2])) for p in senders]) \
                    if len(senders) > 1 else np.arange(senders[0][4], senders[0][4] + len(senders[0][2]))
                Y = load_group(self.ldm, op, cpes[srows], bases[srows, ptr],
                               parts[0][1].mk.strides[ptr], trip, offs)
                Yf = Y.reshape(len(srows), trip * m, 4)
                r = 0
                for p in senders:
                    for t in p[0]:
                        if t.links is not None:
                            for ls, _ in t.links:
                                if ls.direction == d:
                                    ls.src = Yf
                                    ls.src_off = r
                        else:
                            for ci, outs in enumerate(t.outputs):
                                for b, _ in outs:
                                    if b.direction == d:
                                        b.data = Yf[r + ci]
                                        b.src = (Yf, r + ci)
                        r += len(t.lanes)
            # every row as a row of Y when the receivers take whole links of these senders
            rowmap = None
            sid = {id(p) for p in senders}
            if Y is not None:
                segs: list[np.ndarray] = []
                whole = True
                r = 0
                for p in parts:
                    if id(p) in sid:
                        segs.append(np.arange(r, r + len(p[2])))
                        r += len(p[2])
                        continue
                    for t in p[0]:
                        w = t.inputs
                        if not isinstance(w, WholeLinks) or w.by_dir[d][0].src is not Yf:
                            whole = False
                            break
                        ls, kk = w.by_dir[d]
                        segs.append(ls.src_off + ls.sidx[kk])
                    if not whole:
                        break
                if whole:
                    rowmap = np.concatenate(segs) if len(segs) > 1 else segs[0]
            if rowmap is not None:
                assert Y is not None and spec is not None  # the rows of the senders' gather
                if spec[0] in _REP_LOADS:
                    rep.add(d)
                ins[d] = (Y, rowmap)  # row c of the inputs = Y[rowmap[c]] (BatchNumerics)
                continue
            X = np.empty((C, trip, m, 4))
            sr = 0
            for p in parts:
                G = len(p[2])
                if id(p) in sid:
                    assert Y is not None  # the senders' rows
                    X[p[4]:p[4] + G] = Y[sr:sr + G]
                    sr += G
                else:
                    X[p[4]:p[4] + G] = self._inputs(p[0], d, G, trip, m)
            ins[d] = X
        return ins

    def _merged_inputs_general(self, parts: list, cplan, trip: int) -> dict[str, np.ndarray]:
        """``_merged_inputs`` for any mix: per body, its fused loads (``fused_sends``) posted,
        then per direction the rows of every body (its GETs or its own fused loads)."""
        regs, ldm = self.regs, self.ldm
        # per part: its fused sends and their provenance (BatchNumerics.prov), None without
        sent: list[tuple[dict[int, np.ndarray], dict[int, tuple[np.ndarray, int]]] | None] = []
        for g, rp, lanes, bases, _ in parts:
            if rp.plan.puts:
                bn = BatchNumerics(rp.mk.body, rp.plan, np.array(lanes), regs, ldm, trip, bases,
                                   rp.mk.strides, {})
                sv = bn.fused_sends()
                self._post_sends(g, sv, bn.prov, len(lanes), trip)
                sent.append((sv, bn.prov))
            else:
                sent.append(None)
        ins: dict[str, np.ndarray] = {}
        for d, js in cplan.gets.items():
            m = len(js)
            xs = []
            for (g, rp, lanes, _, _), sends in zip(parts, sent):
                G = len(lanes)
                got = rp.plan.gets.get(d, ())
                if len(got) == m:
                    xs.append(self._inputs(g, d, G, trip, m))
                    continue
                assert sends is not None  # not all GETs: a sender (fused loads)
                sv, prov = sends
                x = None
                if not got:
                    src = [prov.get(j) for j in js]
                    x = src[0][0] if src[0] is not None else None
                    if not (x is not None and x.shape == (G, trip, m, 4) and all(
                            p is not None and p[0] is x and p[1] == i for i, p in enumerate(src))):
                        x = None
                if x is None:
                    gx = self._inputs(g, d, G, trip, len(got)) if got else None
                    gpos = {j: k for k, j in enumerate(got)}
                    # (cast: gx is set when some j is in gpos)
                    x = np.stack([cast(np.ndarray, gx)[:, :, gpos[j]] if j in gpos else
                                  np.broadcast_to(sv[j], (G, trip, 4)) for j in js], axis=2)
                xs.append(x)
            ins[d] = xs[0] if len(xs) == 1 else np.concatenate(xs)
        return ins

    @staticmethod
    def _gather_whole(batch: list[_Task], d: str, C: int, trip: int, m: int) -> np.ndarray | None:
        """``_gather``'s fast path for lockstep tasks whose inputs are :class:`WholeLinks`
        of LinkSets packed in one payload array: the rows of the senders. None otherwise."""
        arr0 = None
        rows = []
        for t in batch:
            w = t.inputs
            if not isinstance(w, WholeLinks):
                return None
            ls, kk = w.by_dir[d]
            if arr0 is None:
                arr0 = ls.src
                if arr0 is None or arr0.shape[1] != trip * m:
                    return None
            elif ls.src is not arr0:
                return None
            rows.append(ls.src_off + ls.sidx[kk])
        r = rows[0] if len(rows) == 1 else np.concatenate(rows)
        if len(r) != C:  # pragma: no cover - one link per lane
            return None
        assert arr0 is not None  # the first task's payload array
        return arr0[r].reshape(C, trip, m, 4)

    @staticmethod
    def _gather(inputs: list, d: str, C: int, trip: int, m: int) -> np.ndarray:
        """``(C, trip, m, 4)`` payloads of the GETs of direction ``d`` from the lanes' slices:
        per-CPE ``(Batch, lo, hi)`` or lockstep ``(LinkSet, link, lo, hi)``."""
        first = inputs[0][d][0]
        if len(first) == 4:  # lockstep links
            arr0 = first[0].src
            rows: list[int] = []
            for inp in inputs:
                sl = inp[d]
                if len(sl) != 1:
                    break
                ls, k, lo, hi = sl[0]
                if lo or hi != ls.n or ls.src is not arr0:
                    break
                rows.append(ls.src_off + int(ls.sidx[k]))
            if len(rows) == C and arr0.shape[1] == trip * m:
                return arr0[rows].reshape(C, trip, m, 4)
            arrs = []
            for inp in inputs:
                parts = [ls.src[ls.src_off + int(ls.sidx[k])][lo:hi] for ls, k, lo, hi in inp[d]]
                data = parts[0] if len(parts) == 1 else np.concatenate(parts)
                arrs.append(data.reshape(trip, m, 4))
            return np.stack(arrs)
        # fast path: every lane consumes one whole batch, all packed in the same array
        arr0 = None
        rows = []
        for inp in inputs:
            sl = inp[d]
            if len(sl) != 1:
                break
            b, lo, hi = sl[0]
            src = b.src
            if src is None or lo or hi != b.n or (arr0 is not None and src[0] is not arr0):
                break
            arr0 = src[0]
            rows.append(src[1])
        if len(rows) == C and arr0.shape[1] == trip * m:
            return arr0[rows].reshape(C, trip, m, 4)
        arrs = []
        for inp in inputs:
            sl = inp[d]
            data = sl[0][0].data[sl[0][1]:sl[0][2]] if len(sl) == 1 else \
                np.concatenate([b.data[lo:hi] for b, lo, hi in sl])
            arrs.append(data.reshape(trip, m, 4))
        return np.stack(arrs)

    def _queue_cpe_run(self, rp: _RunPlan, c: int, bases: tuple, inputs: dict,
                       outputs: list) -> None:
        """Queue the numerics of one per-CPE run. Runs without RLC queued back to back on one
        CPE (nothing queued in between) form one task (``_Task.chain``): per-CPE kernels queue
        one task per CPE and stretch instead of one per run."""
        tasks = self.tasks
        if not rp.gets and not outputs:
            if tasks:
                t = tasks[-1]
                if t.chain is not None and t.lanes[0] == c:
                    t.chain.append((rp, bases))
                    return
            task = _Task(rp, (c,), (bases,), (inputs,), (outputs,))
            task.chain = [(rp, bases)]
            tasks.append(task)
            return
        task = _Task(rp, (c,), (bases,), (inputs,), (outputs,))
        tasks.append(task)
        if rp.gets:
            task.deps = {b.task for sl in inputs.values() for b, _, _ in sl if b.task is not None}
        for b, _ in outputs:
            b.task = task

    def queue_data(self, req: DMARequest, snap: bool) -> None:
        """Queue a DMA data effect: a put's LDM snapshot at issue (``snap``) or the data
        movement at completion. Effects run in queue order with the micro-kernel numerics, so
        every run sees exactly the bytes it would see if everything ran eagerly."""
        if not self.numerics:
            return
        t = _DataTask(req, snap, self.dma.targets(req) if (snap or req.kind == "get") else (),
                      self.memory.allocation_of(req.mem).addr)
        self.tasks.append(t)
        if len(self.tasks) > 200_000:  # bound the memory of long DMA-only stretches
            self.flush_numerics()

    def queue_run(self, rp: _RunPlan, lanes: list[int], bases: np.ndarray,
                  inputs: list | WholeLinks | None,
                  outputs: list | None, links: list) -> _Task | None:
        """Queue the numerics of one lockstep run on ``lanes`` (``lockstep.py``): ``inputs``
        per lane {direction: [(LinkSet, link, lo, hi)]}, ``links``: the run's
        ``[(LinkSet, put set)]``. The caller sets ``deps``. None in timing-only mode."""
        if not self.numerics:
            return None
        task = _Task(rp, lanes, bases, inputs, outputs)
        task.links = links
        self.tasks.append(task)
        for ls, _ in links:
            ls.task = task
        return task


class _Task:
    """A queued micro-kernel run of one or more CPEs (its numerics), see ``flush_numerics``.

    ``lanes``: CPE ids; ``bases``: per-lane pointer bases (``(G, P)`` array or tuples);
    ``inputs`` / ``outputs``: per lane, the RLC slices taken / the batches posted;
    ``deps``: the producer tasks of the inputs."""

    __slots__ = ("rp", "lanes", "bases", "inputs", "outputs", "deps", "done", "idx", "links",
                 "chain")

    def __init__(self, rp: _RunPlan, lanes, bases, inputs, outputs) -> None:
        self.rp = rp
        self.lanes = lanes
        self.bases = bases
        self.inputs = inputs
        self.outputs = outputs
        self.deps: set[_Task] | None = None
        self.done = False
        self.idx = 0
        #: lockstep: [(LinkSet, put set)] posted by this run (memo replays: stand-ins, memo.py)
        self.links: list[tuple] | None = None
        #: per-CPE runs without RLC queued back to back on this task's CPE: [(run plan,
        #: bases)] in order (the first is ``rp``/``bases``), else None
        self.chain: list[tuple[_RunPlan, tuple]] | None = None


class _DataTask:
    """A queued DMA data effect (see ``Engine.queue_data``); ``lanes``: CPEs whose LDM it
    reads or writes."""

    __slots__ = ("req", "snap", "lanes", "done", "alloc", "idx")
    rp = None
    deps = None
    chain = None

    def __init__(self, req: DMARequest, snap: bool, lanes, alloc: int) -> None:
        self.req = req
        self.snap = snap
        self.lanes = lanes
        self.alloc = alloc  # main-memory allocation (start address) the move reads / writes
        self.done = False
        self.idx = 0


_REP_LOADS = LOADS_F64_REP | LOADS_F32_REP  # scalar loads (value replicated in 4 lanes)


class _Family:
    """Run plans merged by ``Engine.flush_numerics``: bodies equal up to a fused-send load
    (``vldr``/``vldc``/``ldder``/``lddec``) <-> GET of the same direction into the same register,
    with the same trip count and pointer strides, and no explicit ``putr``/``putc`` (each body
    with one is a family of its own: ``mergeable`` False). The role variants of one SUMMA step
    (both / row / column senders, receivers) are one family."""

    __slots__ = ("key", "rp", "mergeable", "_canon")

    def __init__(self, key: tuple | None, rp: _RunPlan) -> None:
        self.key = key
        self.rp = rp
        self.mergeable = key is not None
        self._canon: tuple | None = None

    def canonical(self) -> tuple:
        """(body, plan) of the all-GET variant: every fused-send load replaced by the GET of its
        direction into the same register."""
        if self._canon is None:
            mk = self.rp.mk
            body = tuple(Instr("getr" if rlc_direction(ins.op) == "row" else "getc", ins.dst)
                         if ins.op in FUSED_SEND else ins for ins in mk.body)
            self._canon = (body, plan_body(body, self.rp.plan_zero_reg))
        return self._canon


class _RunPlan:
    """Everything about a (micro-kernel, trip count) pair that does not depend on the CPE."""

    def __init__(self, mk: MicroKernel, trip: int, machine: Machine) -> None:
        body = mk.body
        self.mk, self.trip = mk, trip
        self.accesses = memory_accesses(body)
        self.checked: set[tuple[int, ...]] = set()  # pointer bases already bounds-checked
        self.checked_arrays: set[bytes] = set()  # ... whole (lanes, P) base arrays (lockstep)
        timing = schedule_body(body, machine)
        plan = plan_body(body, machine.zero_reg)
        self.plan_zero_reg = machine.zero_reg
        self.timing, self.plan = timing, plan
        self.cycles = timing.cycles(trip)
        issue = np.stack([timing.issue_times(j, trip) for j in range(len(body))], axis=1)
        self.first_use = list(timing.first_use.items())
        self.ready_after = [(r, int(issue[-1, j]) + lat) for r, (j, lat) in timing.last_writer.items()]
        self.fu_regs = np.array([r for r, _ in self.first_use], dtype=np.int64)
        self.fu_offs = np.array([o for _, o in self.first_use], dtype=np.int64)
        self.ra_regs = np.array([r for r, _ in self.ready_after], dtype=np.int64)
        self.ra_offs = np.array([o for _, o in self.ready_after], dtype=np.int64)
        self.gets = {d: (trip * len(js), issue[:, list(js)].reshape(-1)) for d, js in plan.gets.items()}
        self.puts = plan.puts
        self.has_rlc = plan.has_rlc
        self.n_msgs = trip * len(plan.puts)
        self.flops = plan.flops_per_iter * trip
        self.p0_valid = timing.p0_valid * trip
        self.p1_valid = timing.p1_valid * trip
        self._issue = issue
        self._targets: dict[int, list] = {}
        self._rels: dict[tuple[int, ...], np.ndarray] = {}
        self._body = body
        self.fam: _Family | None = None  # numerics merge family (Engine._family)
        self._fused: dict[str, tuple | None] = {}

    def fused_group(self, d: str) -> tuple | None:
        """(op, pointer, offsets array, instrs, key) when the fused-send loads of direction
        ``d`` are exactly one load group of the plan (instrs in body order), else None."""
        if d in self._fused:
            return self._fused[d]
        js = tuple(j for j, ins in enumerate(self._body)
                   if ins.op in FUSED_SEND and rlc_direction(ins.op) == d)
        out = None
        for op, ptr, members in self.plan.load_groups:
            if tuple(j for j, _ in members) == js:
                offs = tuple(o for _, o in members)
                out = (op, ptr, np.array(offs, dtype=np.int64), js, (op, ptr, offs))
        self._fused[d] = out
        return out

    def targets(self, cpe: int, rlc: RLCNetwork) -> list:
        """[(direction, target CPE, put instruction indices, relative put cycles)] for ``cpe``."""
        t = self._targets.get(cpe)
        if t is None:
            per: dict[tuple[str, int], list[int]] = {}
            for j in self.puts:
                ins = self._body[j]
                d = "row" if ins.op in ("putr", "vldr", "ldder") else "col"
                dst = 8 if ins.rlc_dst is None else ins.rlc_dst
                for tgt in rlc.targets(cpe, d, dst):
                    per.setdefault((d, tgt), []).append(j)
            t = []
            for (d, tgt), jl in per.items():
                js = tuple(jl)
                rel = self._rels.get(js)  # one array per put set: shared by every sender
                if rel is None:
                    rel = self._rels[js] = self._issue[:, list(js)].reshape(-1)
                t.append((d, tgt, js, rel))
            self._targets[cpe] = t
        return t
