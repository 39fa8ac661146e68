"""Exact memoisation of kernel launches (``simulate(memo=True)``, the default).

Networks launch the same kernel body many times (ResNet-50's repeated bottleneck blocks): the
second launch of an identical body on arguments of the same *alignment class*, from the same
machine state, takes the same cycles, counters and trace as the first one, shifted in time. The
memo replays the recorded launch instead of simulating it again. It is exact, not an estimate:
a launch is replayed only when every input of its timing is provably equal.

What the timing of a launch depends on (and what the key holds):

* the kernel's compiled body (``KernelProgram.signature``: operations, micro-kernel bodies,
  DMA descriptors, constants; not the kernel's name);
* its argument values, through ``KernelProgram.memo_plan``'s abstract interpretation: an
  argument used in loop bounds, conditions, LDM addresses, reply words, micro-kernel pointers or
  non-additive arithmetic is keyed by its exact value; an argument used only as the base of
  main-memory DMA addresses (``arg + offset``, the offset independent of every argument) is keyed
  by its allocation's size and alignment (``addr mod mem_txn_bytes``), its offset in that
  allocation and which other pointer arguments share the allocation. The DMA timing depends on
  main-memory addresses only through the 128-B transactions they touch (``dma.moved``, spec
  §4.4) and the bounds check (``MainMemory.check_range``: inside one allocation); when the
  launch is recorded, every DMA range is checked to lie inside its base argument's
  allocation, so both are equal for any argument of the same class. Kernels with absolute or
  mixed DMA addresses are never memoised;
* the machine state at the spawn: launches are recorded and replayed only when the event queue
  is empty (no DMA in flight, no pending event), every RLC FIFO is empty and no barrier is open.
  The spawn resets clocks, reply words and the register scoreboard; the only state left that the
  timing reads is the DMA buses' round-robin pointers, which are part of the key (and restored
  from the record after a replay);
* nothing else: timing never depends on data (control flow and addresses do not read LDM or
  registers, ``lockstep.py``).

With numerics on, the data effects of a launch are not computed during the timing replay
anyway: it only queues them (``Engine.tasks``: micro-kernel runs with their lanes, LDM pointer
bases, RLC links and producer dependences; DMA snapshots / moves) and ``flush_numerics``
executes the queue at the join. That queue is as data-independent as the timing (its order is
the event order, its contents come from the tape), so a record also keeps it as a *template*
(``_Template``): a replay re-creates the queue for the new launch -- fresh RLC link objects,
DMA requests re-based on the new arguments' allocations (``group start + offset``; LDM
addresses, lanes and pointer bases are equal by the key) -- and flushes it. The flush then
computes exactly what the simulated launch would (same effects, same dependences, same SPMD
batches), on the current data. A launch whose queue was flushed before its join (a long
DMA-only stretch, ``Engine.queue_data``) is not stored.

The runner records only launches of kernel bodies that ``@main`` spawns more than once. A
launch is stored only if it also ends clean (empty event queue and FIFOs at the join), so the
replay leaves the engine in the state the simulation would; with numerics, the data-effect
queue must also be empty at the spawn. Replaying sets the kernel's
``KernelStats`` (counters, per-CPE compute cycles, DMA intervals), the CPEs' clocks and reply
words, the register scoreboard, the DMA buses' round-robin pointers and busy cycles, the RLC
counters and the trace events (times shifted, DMA addresses re-based on the new arguments'
allocations, RLC flow ids renumbered): reports, traces and outputs equal those of the full
simulation (``test/integration/test_sim_memo.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from taihu.backends.sim.dma import DMARequest
from taihu.backends.sim.lockstep import WholeLinks
from taihu.backends.sim.memory import MemoryBoundsError, SimError

if TYPE_CHECKING:  # pragma: no cover
    from taihu.backends.sim.engine import Engine, KernelStats
    from taihu.backends.sim.runner import KernelProgram


class _Links:
    """A replayed launch's stand-in for one RLC ``LinkSet`` (lockstep) or ``Batch`` (per-CPE
    mode): the fields the numerics read (``n`` messages per link, ``sidx`` sender rows,
    ``direction``) and fill (``src``/``src_off`` packed payloads, ``data``)."""

    __slots__ = ("n", "sidx", "direction", "src", "src_off", "data")

    def __init__(self, n: int, sidx, direction: str) -> None:
        self.n = n
        self.sidx = sidx
        self.direction = direction
        self.src = None
        self.src_off = 0
        self.data = None


class _Template:
    """A launch's queue of data effects (``Engine.tasks`` at its join), relocatable.

    ``links``: ``(n, sidx, direction)`` per RLC LinkSet / Batch; ``reqs``: per DMA request ``(group,
    offset)`` of its main-memory address in the argument allocations and its other fields;
    ``tasks``: in queue order, ``(0, request, snap, lanes)`` for DMA effects and ``(1, rp,
    lanes, bases, inputs, outputs, links, deps, chain)`` for micro-kernel runs, every LinkSet /
    Batch / task replaced by its index (``chain``: the ``(rp, bases)`` runs of a per-CPE task
    holding several back-to-back runs, ``Engine._queue_cpe_run``)."""

    __slots__ = ("links", "reqs", "tasks")

    def __init__(self, tasks: list, groups: list[tuple[int, int]]) -> None:
        index = {id(t): i for i, t in enumerate(tasks)}
        lidx: dict[int, int] = {}
        links: list[tuple] = []
        ridx: dict[int, int] = {}
        reqs: list[tuple] = []

        def L(o) -> int:
            i = lidx.get(id(o))
            if i is None:
                i = lidx[id(o)] = len(links)
                links.append((o.n, getattr(o, "sidx", None), o.direction))
            return i

        def slices(sl: list) -> tuple:
            return tuple((L(x[0]),) + tuple(x[1:]) for x in sl)

        out: list[tuple] = []
        for t in tasks:
            if t.rp is None:
                req = t.req
                r = ridx.get(id(req))
                if r is None:
                    r = ridx[id(req)] = len(reqs)
                    mem = req.mem
                    g = next((g for g, (lo, hi) in enumerate(groups) if lo <= mem < hi), None)
                    if g is None or groups[g][0] != t.alloc:  # pragma: no cover - memo_check
                        raise SimError("internal error: memoised DMA outside its argument")
                    reqs.append((g, mem - groups[g][0], req.cpe, req.kind, req.ldm, req.size,
                                 req.bsize, req.stride, req.reply, req.mode, req.mask,
                                 req.ldm_limit))
                out.append((0, r, t.snap, t.lanes))
                continue
            inp = t.inputs
            inputs: tuple[str, tuple] | None  # ("W", whole links) | ("L", per-lane slices)
            if inp is None:
                inputs = None
            elif isinstance(inp, WholeLinks):
                inputs = ("W", tuple((d, L(ls), kk) for d, (ls, kk) in inp.by_dir.items()))
            else:
                inputs = ("L", tuple(tuple((d, slices(sl)) for d, sl in x.items()) for x in inp))
            outputs = None if t.outputs is None else \
                tuple(tuple((L(b), js) for b, js in outs) for outs in t.outputs)
            lk = None if t.links is None else tuple((L(ls), js) for ls, js in t.links)
            deps = None
            if t.deps is not None:
                deps = tuple(sorted(index[id(d)] for d in t.deps))
            chain = getattr(t, "chain", None)  # per-CPE runs queued back to back on one CPE
            out.append((1, t.rp, t.lanes, t.bases, inputs, outputs, lk, deps,
                        None if chain is None else tuple(chain)))
        self.links = links
        self.reqs = reqs
        self.tasks = out

    def instantiate(self, starts: list[int]) -> list:
        """The queue of a replay whose argument allocation groups start at ``starts``."""
        from taihu.backends.sim.engine import _DataTask, _Task

        links = [_Links(*x) for x in self.links]
        reqs = [DMARequest(cpe, kind, starts[g] + off, ldm, size, bsize, stride, reply, mode,
                           mask, limit)
                for g, off, cpe, kind, ldm, size, bsize, stride, reply, mode, mask, limit
                in self.reqs]
        allocs = [starts[r[0]] for r in self.reqs]
        tasks: list = []
        for e in self.tasks:
            if e[0] == 0:
                tasks.append(_DataTask(reqs[e[1]], e[2], e[3], allocs[e[1]]))
                continue
            _, rp, lanes, bases, inputs, outputs, lk, deps, chain = e
            if inputs is not None:
                if inputs[0] == "W":
                    inputs = WholeLinks({d: (links[i], kk) for d, i, kk in inputs[1]})
                else:
                    inputs = [{d: [(links[x[0]],) + x[1:] for x in sl] for d, sl in lane}
                              for lane in inputs[1]]
            if outputs is not None:
                outputs = tuple([(links[i], js) for i, js in outs] for outs in outputs)
            t = _Task(rp, lanes, bases, inputs, outputs)
            if lk is not None:
                t.links = [(links[i], js) for i, js in lk]
            if deps is not None:
                t.deps = {tasks[i] for i in deps}
            if chain is not None:
                t.chain = list(chain)
            tasks.append(t)
        return tasks


@dataclass
class _Record:
    """One recorded launch, every time relative to the kernel's start cycle."""

    duration: int  # ks.end - ks.start
    mpe_t: int  # MPE clock after the join - start
    stats: dict[str, Any]  # KernelStats counters
    compute_per_cpe: np.ndarray
    dma_intervals: list[tuple[int, int]]
    cpe_t: list[int]
    replies: list[dict[int, int]]
    reg_ready: np.ndarray
    last_local: tuple[int, ...]  # DMA buses' round-robin pointers after the launch
    busy: list[int]  # DMA bus busy cycles added by the launch
    messages: int  # RLC messages added
    flows: int  # RLC flow ids used
    events: list[tuple] | None  # trace events (relative; None when recorded without trace)
    tasks: _Template | None  # the queued data effects (numerics on), else None


_COUNTERS = ("flops", "dma_bytes", "dma_moved", "dma_count", "rlc_messages", "p0_valid",
             "p1_valid", "p_cycles", "rlc_wait", "uses_rlc", "uses_sync")


@dataclass
class Recording:
    """A launch being recorded (``TimingMemo.begin`` .. ``end``): the engine's counters at the
    spawn (trace events, RLC messages and flow ids, DMA bus busy cycles), its data-effect queue
    (``tasks``), the argument allocations (``groups``) and ``state[0]`` (still memoisable;
    shared with ``KernelProgram.memo_check``)."""

    kp: KernelProgram
    key: tuple
    state: list[bool]
    n_events: int
    messages: int
    next_flow: int
    busy: list[int]
    tasks: list
    groups: list[tuple[int, int]]
    template: _Template | None = None


class TimingMemo:
    """The launch memo of one :class:`~taihu.backends.sim.engine.Engine`."""

    def __init__(self, engine: Engine) -> None:
        self.eng = engine
        self.records: dict[tuple, _Record] = {}
        self.hits = 0
        self.misses = 0
        self._active: Recording | None = None  # the launch being recorded (``begin``)
        self._sigs: dict[tuple, int] = {}
        self._body_ids: dict[int, tuple] = {}
        self._fp_count: dict[tuple, int] = {}

    # -- keys ------------------------------------------------------------------------------
    def _clean(self) -> bool:
        """No event pending, no DMA in flight, every RLC FIFO empty, no barrier open, no data
        effect queued."""
        eng = self.eng
        if eng._heap or eng.dma.pending or eng.barriers or eng.tasks:
            return False
        ls = eng.lockstep
        if any(c.any() for c in ls.cnt.values()):
            return False
        return not any(f.count for fifos in eng.rlc.fifo.values() for f in fifos)

    def key(self, kp: KernelProgram, args: tuple) -> tuple[tuple, list, dict] | None:
        """``(key, allocation groups [(start, end)], per pointer argument (start, end) of its
        allocation)`` of a launch of ``kp`` on ``args`` now, or None if it cannot be
        memoised."""
        plan = kp.memo_plan()
        if plan is None or not self._clean():
            return None
        exact, pointers, _ = plan
        mem = self.eng.memory
        txn = mem.txn_bytes
        groups: dict[int, int] = {}
        starts: list[tuple[int, int]] = []
        ranges: dict[int, tuple[int, int]] = {}
        akey: list[tuple | None] = []
        for i, v in enumerate(args):
            if i in exact:
                akey.append(("x", v))
            elif i in pointers:
                if not isinstance(v, int):
                    return None
                try:
                    a = mem.allocation_of(v)
                except MemoryBoundsError:
                    return None
                g = groups.get(a.addr)
                if g is None:
                    g = groups[a.addr] = len(starts)
                    starts.append((a.addr, a.addr + a.nbytes))
                akey.append(("p", g, v - a.addr, a.nbytes, a.addr % txn))
                ranges[i] = (a.addr, a.addr + a.nbytes)
            else:
                akey.append(None)
        buses = tuple(b.last_local for b in self.eng.dma.buses)
        return (self.body_id(kp), tuple(akey), buses, self.eng.trace.enabled), starts, ranges

    def register(self, kernels) -> None:
        """The module's kernels (``KernelProgram``): a kernel whose fingerprint no other one
        has cannot share its body, its signature is never computed (``body_id``)."""
        self._fp_count.clear()
        for kp in kernels:
            fp = kp.fingerprint()
            self._fp_count[fp] = self._fp_count.get(fp, 0) + 1

    def body_id(self, kp: KernelProgram) -> tuple:
        """A small id of ``kp``'s body: equal for kernels with equal signatures (computed and
        hashed once per kernel, only when another registered kernel has its fingerprint)."""
        hit = self._body_ids.get(id(kp))
        if hit is None or hit[0] is not kp:
            if self._fp_count.get(kp.fingerprint(), 2) == 1:
                n = ("kernel", len(self._body_ids))
            else:
                n = ("body", self._sigs.setdefault(kp.signature(), len(self._sigs)))
            hit = self._body_ids[id(kp)] = (kp, n)
        return hit[1]

    # -- recording ---------------------------------------------------------------------------
    def begin(self, kp: KernelProgram, key: tuple, ranges: dict,
              groups: Sequence[tuple[int, int]] = ()) -> Recording:
        """Start recording a launch (call before the spawn); ``groups``: the argument
        allocations (``key``'s second result), needed with numerics."""
        eng = self.eng
        state = [True]
        plan = kp.memo_plan()
        assert plan is not None  # key() gave the launch a key
        kp.memo_check = (plan[2], ranges, state)
        rec = Recording(kp, key, state, len(eng.trace.log), eng.rlc.messages,
                         eng.rlc.next_flow, [b.busy_cycles for b in eng.dma.buses], eng.tasks,
                         list(groups))
        self._active = rec
        return rec

    def before_flush(self) -> None:
        """The recorded launch joined and its queued data effects are about to run
        (``MPE.join``): keep them as the record's template, unless part of the queue already
        ran (a flush before the join: ``flush_numerics`` starts a new ``Engine.tasks`` list,
        so the list recorded at the spawn is no longer the engine's)."""
        rec = self._active
        eng = self.eng
        if rec is None or not eng.numerics or not rec.state[0]:
            return
        if eng.tasks is not rec.tasks:
            rec.state[0] = False
            return
        rec.template = _Template(eng.tasks, rec.groups)

    def end(self, rec: Recording, ks: KernelStats, groups: list[tuple[int, int]]) -> None:
        """The launch of ``rec`` joined: store it if it ran clean."""
        eng = self.eng
        kp, key, state, template = rec.kp, rec.key, rec.state, rec.template
        n_ev, msgs, flow, busy = rec.n_events, rec.messages, rec.next_flow, rec.busy
        kp.memo_check = None
        self._active = None
        self.misses += 1
        if not state[0] or not self._clean() or (eng.numerics and template is None):
            return
        t0 = ks.start
        events = None
        if eng.trace.enabled:
            events = []
            for ev in eng.trace.log[n_ev:-1]:  # the last one is the join's MPE span
                events.append(_shift_event(ev, -t0, -flow, groups, None))
        self.records[key] = _Record(
            duration=ks.end - t0, mpe_t=eng.mpe.t - t0,
            stats={k: getattr(ks, k) for k in _COUNTERS},
            compute_per_cpe=ks.compute_per_cpe.copy(),
            dma_intervals=[(a - t0, b - t0) for a, b in ks.dma_intervals],
            cpe_t=[c.t - t0 for c in eng.cpes], replies=[dict(c.replies) for c in eng.cpes],
            reg_ready=eng.reg_ready - t0,
            last_local=tuple(b.last_local for b in eng.dma.buses),
            busy=[b.busy_cycles - x for b, x in zip(eng.dma.buses, busy)],
            messages=eng.rlc.messages - msgs, flows=eng.rlc.next_flow - flow,
            events=events, tasks=template)

    # -- replay ----------------------------------------------------------------------------
    def replay(self, key: tuple, groups: list[tuple[int, int]], kp: KernelProgram,
               name: str) -> bool:
        """Replay the record of ``key`` as a launch of ``kp`` (named ``name``) by the MPE now,
        with its data effects (numerics on) on the arguments' allocations ``groups``; False if
        there is none."""
        r = self.records.get(key)
        if r is None:
            return False
        from taihu.backends.sim.engine import KernelStats

        eng = self.eng
        mpe = eng.mpe
        m = eng.machine
        start = mpe.t + m.spawn_cycles  # the launch cost, as MPE.spawn
        ks = KernelStats(name=name, start=start, launch_cycles=m.spawn_cycles,
                         ldm_high_water=kp.ldm_high_water)
        for k, v in r.stats.items():
            setattr(ks, k, v)
        ks.compute_per_cpe = r.compute_per_cpe.copy()
        ks.dma_intervals = [(a + start, b + start) for a, b in r.dma_intervals]
        ks.end = start + r.duration
        eng.kernels.append(ks)
        for c, t, rep in zip(eng.cpes, r.cpe_t, r.replies):
            c.t = start + t
            c.done = True
            c.blocked = None
            c.site = None
            c.bp = None
            c.kernel = ks
            c.replies = dict(rep)
            c.gen = None
        eng.reg_ready[:] = r.reg_ready + start
        for b, ll, busy in zip(eng.dma.buses, r.last_local, r.busy):
            b.last_local = ll
            b.busy_cycles += busy
        eng.rlc.messages += r.messages
        flow0 = eng.rlc.next_flow
        eng.rlc.next_flow += r.flows
        if r.events is not None:
            new = [g[0] for g in groups]
            eng.trace.log += [_shift_event(e, start, flow0, [], new) for e in r.events]
        mpe.current_kernel = ks
        mpe.running = []
        if r.tasks is not None:
            eng.tasks.extend(r.tasks.instantiate([g[0] for g in groups]))
            eng.flush_numerics()
        mpe.t = max(mpe.t, start + r.mpe_t)
        eng.trace.span("MPE", 0, ks.name, ks.start, ks.end, {"kernel": ks.name})
        self.hits += 1
        return True


def _shift_event(ev: tuple, dt: int, dflow: int, groups: list[tuple[int, int]],
                 new: list[int] | None) -> tuple:
    """A trace event or compact entry (``trace.Trace.log``) moved by ``dt`` cycles, its RLC
    flow ids by ``dflow``. DMA events' main-memory addresses: recording (``new`` None) ->
    ``(group, offset)`` in the argument allocation ``groups`` (start, end); replay ->
    ``hex(new[group] + offset)``."""
    ph, pid, lane, name, t0, t1, extra = ev
    if ph in ("s", "f"):
        return (ph, pid, lane, name, t0 + dt, t1 + dt, extra + dflow)
    if ph == "C":  # cohort runs (columns shared, their time shift: the last item)
        cols, trip, shift = extra
        return (ph, pid, lane, name, t0 + dt, t1 + dt, (cols, trip, shift + dt))
    if ph == "L":  # posted links: ..., first flow id, time shift
        *rest, flow0, shift = extra
        return (ph, pid, lane, name, t0 + dt, t1 + dt, (*rest, flow0 + dflow, shift + dt))
    if ph == "F":  # gets: columns, time shift, flow-id shift
        cols, shift, fshift = extra
        return (ph, pid, lane, name, t0 + dt, t1 + dt, (cols, shift + dt, fshift + dflow))
    if extra and "issue" in extra:  # a DMA data phase (trace.Trace.dma)
        a = dict(extra)
        for k in ("issue", "accept", "start", "end"):
            a[k] += dt
        if new is None:
            mem = int(a["mem"], 16)
            a["mem"] = next((g, mem - lo) for g, (lo, hi) in enumerate(groups) if lo <= mem < hi)
        else:
            g, off = a["mem"]
            a["mem"] = hex(new[g] + off)
        extra = a
    return (ph, pid, lane, name, t0 + dt, t1 + dt, extra)


__all__ = ["TimingMemo"]
