"""Lockstep (SPMD-batched) execution of CPE kernels: tapes and cohorts.

Per-CPE mode runs one generator per CPE (``runner.KernelProgram.run``). Lockstep mode splits that
work in two:

* **Tape** (:class:`Seq`): the kernel's scalar code is interpreted once for a set of lanes,
  vectorised over them (``runner.KernelProgram.tape``): control flow and addresses never depend
  on time or data, so this yields the exact sequence of operations every CPE performs -- entries
  (``program.py``) ``MkEntry`` (micro-kernel run), ``DmaEntry``, ``WaitEntry``, ``ResetEntry``,
  the ``Barrier`` record, with per-lane operands (scalars when uniform), and ``BranchEntry``
  (child Seqs) where a lane-dependent ``scf.if`` / ``scf.for`` bound splits the lanes. Entries
  are produced lazily. The DMA and reply-word rules are the engine's (``Engine.dma_issue``,
  ``Engine.reply_short``), shared with the per-CPE path.
* **Replay** (:class:`Lockstep`): *cohorts* -- lanes at the same tape position -- replay the tape
  with one clock per lane. Operations whose outcome depends on global event order (DMA issue,
  ``dma_wait``, barriers: the *timed* entries) are processed for each lane exactly at the lane's
  own cycle, as the per-CPE agent would (lanes at different cycles split into cohorts scheduled
  at their cycles; cohorts meeting at the same position and cycle merge again). Everything else
  (micro-kernel runs: their timing is computed from per-lane clocks, register scoreboards and
  message arrival cycles, spec §5/§6) is processed at once for the whole cohort.

  A lane that cannot proceed (reply word too small, channel buffer full, barrier, RLC messages not
  posted yet, send buffer full) leaves its cohort and is woken by the same events that wake a
  per-CPE agent, with the same clock update; woken lanes at the same position gather into one
  cohort. After a ``branch`` the children's lanes wait for each other at the join point (the
  next parent entry) unless waiting would let global time pass a lane's clock; then they go on
  separately.

Invariant that makes the replay exact: a cohort is only processed at an event time ``now`` <= every
lane clock, so a timed entry of a lane is never processed after events later than the lane's
cycle. Reports and traces equal those of per-CPE mode (test/integration/test_sim_lockstep.py);
micro-kernel numerics are queued per CPE in the same order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from taihu.backends.sim.dma import DMARequest
from taihu.backends.sim.memory import SimError
from taihu.backends.sim.microkernel import check_run_addresses
from taihu.backends.sim.program import (
    Barrier,
    BranchEntry,
    DmaEntry,
    MkEntry,
    ResetEntry,
    WaitEntry,
)

if TYPE_CHECKING:  # pragma: no cover
    from taihu.backends.sim.engine import CPE, Engine, KernelStats

PH_AGENT = 5
_NO_FLOOR = -1
_NO_LAG = np.iinfo(np.int64).min  # identity of the per-lane max of link lags


class Seq:
    """One region's tape for a set of lanes (CPE ids, ascending).

    ``pos[cpe]``: index of ``cpe`` in ``lanes`` (-1 if absent); per-lane operands of the entries
    are indexed by it. ``parent`` / ``parent_idx``: the Seq holding the ``branch`` entry this
    Seq is a child of (the replay continues at ``parent_idx + 1`` of the parent)."""

    __slots__ = ("lanes", "pos", "entries", "gen", "parent", "parent_idx", "n_cpes",
                 "mesh_cols")

    def __init__(self, lanes: np.ndarray, n_cpes: int, mesh_cols: int,
                 parent: Seq | None = None, parent_idx: int = 0) -> None:
        self.lanes = lanes
        self.n_cpes = n_cpes
        self.mesh_cols = mesh_cols
        self.pos = np.full(n_cpes, -1, dtype=np.int64)
        self.pos[lanes] = np.arange(len(lanes), dtype=np.int64)
        self.entries: list[Any] = []  # program.MkEntry, DmaEntry, ... (lazily produced)
        #: the producer appending to ``entries`` (``runner.KernelProgram._produce``), None once
        #: it returned
        self.gen: Generator[None, None, list] | None = None
        self.parent = parent
        self.parent_idx = parent_idx

    @property
    def rows(self) -> np.ndarray:
        return self.lanes // self.mesh_cols

    @property
    def cols(self) -> np.ndarray:
        return self.lanes % self.mesh_cols

    def child(self, mask: np.ndarray, idx: int) -> Seq:
        return Seq(self.lanes[mask], self.n_cpes, self.mesh_cols, self, idx)

    def entry(self, i: int) -> Any:
        """Entry ``i`` (produced on demand), None past the end."""
        entries = self.entries
        while i >= len(entries):
            if self.gen is None:
                return None
            try:
                next(self.gen)
            except StopIteration:
                self.gen = None
        return entries[i]

    def drain(self) -> list:
        """Produce every entry; the producer's return value (region results)."""
        res: list = []
        if self.gen is not None:
            try:
                while True:
                    next(self.gen)
            except StopIteration as e:
                res = e.value or []
            self.gen = None
        return res


class Cohort:
    """Lanes at the same tape position: ``lanes`` (ascending CPE ids), their clocks ``tl`` and
    clock floors ``floor`` (-1 = none; the per-CPE agent's clock after a wake, see
    ``Lockstep.wake_lane``)."""

    __slots__ = ("seq", "idx", "lanes", "tl", "floor", "pos", "lane_list", "key", "later")

    def __init__(self, seq: Seq, idx: int, lanes: np.ndarray, tl: np.ndarray,
                 floor: np.ndarray | None = None) -> None:
        self.seq = seq
        self.idx = idx
        self.set_lanes(lanes, tl, floor)
        self.key: tuple | None = None  # its key in Lockstep.ready while scheduled
        self.later: list[Cohort] | None = None  # cohorts to absorb before it runs (schedule)

    def set_lanes(self, lanes: np.ndarray, tl: np.ndarray, floor: np.ndarray | None) -> None:
        self.tl = tl
        self.floor = floor
        if lanes is getattr(self, "lanes", None):
            return
        self.lanes = lanes
        self.lane_list: list[int] = lanes.tolist()
        seq = self.seq
        self.pos = None if len(lanes) == len(seq.lanes) else seq.pos[lanes]

    def keep(self, mask: np.ndarray) -> None:
        self.set_lanes(self.lanes[mask], self.tl[mask],
                       None if self.floor is None else self.floor[mask])

    def arg(self, v):
        """A per-lane operand of an entry for this cohort's lanes (scalar or array)."""
        if isinstance(v, np.ndarray):
            return v if self.pos is None else v[self.pos]
        return v

    def absorb(self, others: list[Cohort]) -> None:
        """Add the lanes of ``others`` (same position; every lane in one cohort only)."""
        cos = [self] + others
        lanes = np.concatenate([c.lanes for c in cos])
        tl = np.concatenate([c.tl for c in cos])
        floor = None
        if any(c.floor is not None for c in cos):
            floor = np.concatenate([c.floor if c.floor is not None else
                                    np.full(len(c.lanes), _NO_FLOOR) for c in cos])
        order = np.argsort(lanes, kind="stable")
        self.set_lanes(lanes[order], tl[order], None if floor is None else floor[order])


class _Join:
    """Lanes of a ``branch`` entry gathering at its join point."""

    __slots__ = ("expected", "arrived", "waiting", "timer")

    def __init__(self) -> None:
        self.expected: set[int] = set()
        self.arrived: set[int] = set()
        self.waiting: list[Cohort] = []
        self.timer = -1


class LinkSet:
    """RLC messages of one lockstep micro-kernel run in one direction for one set of put
    instructions ``js``: ``K`` links (sender lane -> receiver CPE) of ``n`` messages each, all
    with the put schedule ``put_base[k] + put_rel`` (arrival ``+ rlc_latency``, spec §5).

    Per link: ``consumed`` messages, GET issue cycles ``got_base[k] + got_rel[k]`` when one run
    consumed the whole link (else element-wise in ``got[k]``). ``sidx[k]``: the sender's index
    in its run (row ``src_off + sidx[k]`` of the packed payload array ``src`` filled by the
    numerics); ``bp``: the sender run waiting for consumption (back-pressure), if any."""

    __slots__ = ("direction", "n", "put_rel", "sidx", "sender", "receiver", "put_base",
                 "arrival_base", "consumed", "got_base", "got_rel", "got", "task", "src",
                 "src_off", "bp", "flow0")

    def __init__(self, direction: str, put_rel: np.ndarray, sidx: np.ndarray,
                 sender: np.ndarray, receiver: np.ndarray, put_base: np.ndarray,
                 latency: int) -> None:
        self.direction = direction
        self.n = int(put_rel.shape[0])
        self.put_rel = put_rel
        self.sidx = sidx
        self.sender = sender
        self.receiver = receiver
        self.put_base = put_base
        self.arrival_base = put_base + latency
        K = len(receiver)
        self.consumed = [0] * K
        self.got_base = [0] * K
        self.got_rel: list = [None] * K
        self.got: dict[int, np.ndarray] | None = None
        self.task = None
        self.src: np.ndarray | None = None
        self.src_off = 0
        self.bp: _BPRun | None = None
        self.flow0 = 0

    def link(self, k: int) -> _LinkView:
        return _LinkView(self, k)


class WholeLinks:
    """Numerics inputs of a lockstep run in which, for every direction ``d``, each lane took
    one whole link of a single LinkSet: ``by_dir[d] = (LinkSet, links)`` (link of lane ``i``
    = ``links[i]``). Stands for the per-lane ``[{d: [(LinkSet, link, 0, n)]}]`` form
    (:meth:`expand`) without building it (``Engine._gather`` reads the rows directly)."""

    __slots__ = ("by_dir",)

    def __init__(self, by_dir: dict[str, tuple]) -> None:
        self.by_dir = by_dir

    def expand(self) -> list[dict]:
        out: list[dict] | None = None
        for d, (ls, kk) in self.by_dir.items():
            if out is None:
                out = [{} for _ in kk]
            n = ls.n
            for inp, k in zip(out, kk):
                inp[d] = [(ls, k, 0, n)]
        return out or []


class _LinkView:
    """One link seen as a per-CPE ``Batch`` (trace events and diagnostics)."""

    __slots__ = ("direction", "n", "receiver", "put_base", "put_rel", "arrival_base", "flow_id",
                 "consumed")

    def __init__(self, ls: LinkSet, k: int) -> None:
        self.direction = ls.direction
        self.n = ls.n
        self.receiver = int(ls.receiver[k])
        self.put_base = int(ls.put_base[k])
        self.put_rel = ls.put_rel
        self.arrival_base = int(ls.arrival_base[k])
        self.flow_id = ls.flow0 + k
        self.consumed = ls.consumed[k]


class _BPRun:
    """Sender lanes of one run waiting until their receivers consumed all but ``depth``
    messages of every link (spec §5 rule 6). Per lane ``i`` of the run: links still
    ``pending``, the ``extra`` cycles (max of the positive per-link delays, like the
    per-CPE runner) and ``proc``, the cycle at which the per-CPE agent would resume."""

    __slots__ = ("seq", "idx", "rp", "lanes", "start", "end", "t0", "pending", "extra", "proc",
                 "links")

    def __init__(self, seq, idx, rp, lanes, start, end, t0, proc) -> None:
        self.seq, self.idx, self.rp = seq, idx, rp
        self.lanes, self.start, self.end, self.t0 = lanes, start, end, t0
        G = len(lanes)
        self.pending = np.zeros(G, dtype=np.int64)
        self.extra = np.zeros(G, dtype=np.int64)
        self.proc = proc  # (G,) int64
        self.links: list[LinkSet] = []


class Lockstep:
    """Replays tapes for an :class:`~taihu.backends.sim.engine.Engine` (``engine.lockstep``)."""

    def __init__(self, engine: Engine) -> None:
        self.eng = engine
        self.ready: dict[tuple, Cohort] = {}
        self.joins: dict[tuple, _Join] = {}
        self.bp_due: dict[int, list[tuple[_BPRun, int]]] = {}
        self.kernel: KernelStats | None = None
        n = engine.machine.n_cpes
        # lockstep RLC FIFOs (persist across launches like the hardware's): per receiver the
        # posted (LinkSet, link) entries, the unconsumed message count, the waiting lanes
        self.q: dict[str, list[deque[tuple[LinkSet, int]]]] = {
            d: [deque() for _ in range(n)] for d in ("row", "col")}
        self.cnt = {d: np.zeros(n, dtype=np.int64) for d in ("row", "col")}
        self.qwait: dict[str, dict[int, list]] = {"row": {}, "col": {}}
        self.post_plans: dict[tuple, tuple] = {}
        #: the register scoreboard ``engine.reg_ready`` flattened (a view) and the indices
        #: into it of (run plan, first-use / ready-after, lanes), see ``_flat``
        self.rr_flat = engine.reg_ready.reshape(-1)
        self.n_regs = engine.reg_ready.shape[1]
        self.flat_idx: dict[tuple, np.ndarray] = {}
        self.retry: list[Cohort] = []  # RLC-starved cohorts of the current event (_drain)
        self.may_defer = True
        self.progress = 0  # micro-kernel runs processed (progress test of _drain)

    # -- scheduling ----------------------------------------------------------------------
    def start(self, root: Seq, t: int, kernel: KernelStats) -> None:
        self.kernel = kernel
        self.ready.clear()
        self.joins.clear()
        self.bp_due.clear()
        co = Cohort(root, 0, root.lanes.copy(), np.full(len(root.lanes), t, dtype=np.int64))
        self.schedule(co, t)

    def schedule(self, co: Cohort, t: int, key_lane: int | None = None) -> None:
        """Run ``co`` at event time ``t`` (merging with a cohort already due there); the event
        is ordered as an agent step of CPE ``key_lane`` (default: the cohort's first lane)."""
        key = (id(co.seq), co.idx, t)
        other = self.ready.get(key)
        if other is not None:  # merged when it runs (one sort for every cohort due there)
            if other.later is None:
                other.later = [co]
            else:
                other.later.append(co)
            return
        co.key = key
        self.ready[key] = co
        self.eng.schedule(t, PH_AGENT, co.lane_list[0] if key_lane is None else key_lane,
                          lambda: self._run(co))

    def _run(self, co: Cohort) -> None:
        key = co.key
        assert key is not None  # set by schedule()
        if self.ready.get(key) is co:
            del self.ready[key]
        co.key = None
        if co.later is not None:
            co.absorb(co.later)
            co.later = None
        self._drain([co])

    def _drain(self, work: list[Cohort]) -> None:
        """Advance cohorts until none can move at this event. A cohort whose micro-kernel
        misses RLC messages is retried after the others (a sender among them may post them);
        its lanes block only when a whole pass makes no progress. Same timing: RLC start cycles
        come from arrival cycles, not from the order cohorts are processed in."""
        retry = self.retry
        last = -1
        while True:
            while work:
                self._advance(work.pop(), work)
            if not retry:
                return
            before = self.progress
            pending = retry[::-1]
            retry.clear()
            if before == last:  # nothing moved during the last pass: block now
                self.may_defer = False
            work.extend(pending)
            last = before
            while work:
                self._advance(work.pop(), work)
            self.may_defer = True

    # -- waking blocked lanes -------------------------------------------------------------
    def block(self, cpe: CPE, co: Cohort, i: int, idx: int, mode: str, reason: str,
              t: int | None = None) -> None:
        """Lane ``i`` of ``co`` leaves it, blocked at entry ``idx`` of ``co.seq``."""
        cpe.site = (co.seq, idx, mode)
        cpe.t = int(co.tl[i]) if t is None else t
        cpe.floor = _NO_FLOOR if co.floor is None else int(co.floor[i])
        cpe.blocked = reason

    def wake_lane(self, cpe: CPE, at: int | None) -> None:
        """A blocked lane is woken (the per-CPE agent would be re-scheduled at
        ``max(t, at or now)`` and re-check its condition there)."""
        assert cpe.site is not None  # a blocked lane (Engine.wake checks)
        seq, idx, mode = cpe.site
        now = self.eng.now
        proc = max(cpe.t, now if at is None else at)
        if mode == "bp":  # pragma: no cover - back-pressure ends through _bp_satisfied
            return
        cpe.site = None
        cpe.blocked = None
        if mode == "rlc":  # re-check the run: same start base, clock floor = wake cycle
            floor = np.array([max(cpe.floor, proc)], dtype=np.int64)
            co = Cohort(seq, idx, np.array([cpe.id], dtype=np.int64),
                        np.array([cpe.t], dtype=np.int64), floor)
        else:  # dma_wait / channel buffer / barrier: the clock becomes the wake cycle
            co = Cohort(seq, idx, np.array([cpe.id], dtype=np.int64),
                        np.array([proc], dtype=np.int64))
        self.schedule(co, proc)

    # -- the replay loop -------------------------------------------------------------------
    def _advance(self, co: Cohort, work: list[Cohort]) -> None:
        eng = self.eng
        while len(co.lanes):
            seq = co.seq
            e = seq.entry(co.idx)
            if e is None:
                self._end_of_seq(co, work)
                return
            t = e.__class__
            if t is MkEntry:
                if self._mk(co, e) is False:
                    return  # deferred (retried later in this event)
                co.idx += 1
                continue
            if t is BranchEntry:
                self._branch(co, e.children, work)
                return
            if t is ResetEntry:
                r = co.arg(e.reply)
                for i, c in enumerate(co.lane_list):
                    eng.cpes[c].replies[int(r[i]) if isinstance(r, np.ndarray) else r] = 0
                co.idx += 1
                continue
            # timed entries: every lane exactly at its own cycle
            tl = co.tl
            tmin = int(tl.min())
            if tmin < eng.now:  # pragma: no cover - guarded by the invariant
                raise SimError(f"internal error: lockstep lane clock {tmin} behind event time "
                               f"{eng.now}")
            if len(co.lanes) > 1 and bool((tl != tmin).any()):
                later = tl != tmin
                for v in np.unique(tl[later]).tolist():
                    sel = tl == v
                    self.schedule(Cohort(seq, co.idx, co.lanes[sel], tl[sel],
                                         None if co.floor is None else co.floor[sel]), v)
                co.keep(~later)
            if tmin > eng.now:
                self.schedule(co, tmin)
                return
            if t is DmaEntry:
                self._dma(co, e)
            elif t is WaitEntry:
                self._wait(co, e)
            elif t is Barrier:
                self._barrier(co, e)
                return
            else:  # pragma: no cover
                raise SimError(f"internal error: unknown tape entry {e!r}")
            co.idx += 1

    def _end_of_seq(self, co: Cohort, work: list[Cohort]) -> None:
        seq = co.seq
        parent = seq.parent
        if parent is None:
            self._finish(co)
            return
        key = (id(parent), seq.parent_idx)
        j = self.joins.get(key)
        if j is None:  # pragma: no cover - created when the branch entry is processed
            j = self.joins[key] = _Join()
            j.expected.update(co.lane_list)
        cont = Cohort(parent, seq.parent_idx + 1, co.lanes, co.tl, co.floor)
        j.arrived.update(co.lane_list)
        j.waiting.append(cont)
        if len(j.arrived) >= len(j.expected):
            self._release(key, j, work)
            return
        # wait for the siblings, but never past a lane's clock (timer at the earliest clock)
        t = int(co.tl.min())
        if j.timer < 0 or t < j.timer:
            j.timer = t
            self.eng.schedule(max(t, self.eng.now), PH_AGENT, co.lane_list[0],
                              lambda: self._join_timeout(key, j, t))

    def _release(self, key: tuple, j: _Join, work: list[Cohort]) -> None:
        cos = j.waiting
        j.waiting = []
        j.timer = -1
        if len(j.arrived) >= len(j.expected):
            del self.joins[key]
        co = cos[0]
        if len(cos) > 1:
            co.absorb(cos[1:])
        work.append(co)

    def _join_timeout(self, key: tuple, j: _Join, t: int) -> None:
        if self.joins.get(key) is not j or j.timer != t or not j.waiting:
            return
        work: list[Cohort] = []
        self._release(key, j, work)
        self._drain(work)

    def _branch(self, co: Cohort, children: list[Seq], work: list[Cohort]) -> None:
        key = (id(co.seq), co.idx)
        j = self.joins.get(key)
        if j is None:
            j = self.joins[key] = _Join()
        j.expected.update(co.lane_list)
        for ch in reversed(children):
            mask = ch.pos[co.lanes] >= 0
            if mask.any():
                work.append(Cohort(ch, 0, co.lanes[mask], co.tl[mask],
                                   None if co.floor is None else co.floor[mask]))

    def _finish(self, co: Cohort) -> None:
        eng = self.eng
        for i, c in enumerate(co.lane_list):
            cpe = eng.cpes[c]
            cpe.t = int(co.tl[i])
            cpe.done = True
            eng.trace.instant(c, "end", cpe.t)
        eng.lanes_finished()

    # -- timed entries --------------------------------------------------------------------
    def _dma(self, co: Cohort, e: DmaEntry) -> None:
        eng = self.eng
        rec = e.rec
        mem, ldm, reply = co.arg(e.mem), co.arg(e.ldm), co.arg(e.reply)
        kind = rec.kind
        arr = [isinstance(x, np.ndarray) for x in (mem, ldm, reply)]
        tl = co.tl
        keep = None
        now = eng.now
        for i, c in enumerate(co.lane_list):
            req = DMARequest(c, kind, int(mem[i]) if arr[0] else mem,
                             int(ldm[i]) if arr[1] else ldm, rec.size, rec.bsize, rec.stride,
                             int(reply[i]) if arr[2] else reply, rec.mode, rec.mask, rec.ldm_limit)
            eng.dma.validate(req)
            cpe = eng.cpes[c]
            if not eng.dma_issue(cpe, req, now):
                self.block(cpe, co, i, co.idx, "chan", eng.chan_full_reason(kind))
                if keep is None:
                    keep = np.ones(len(co.lanes), dtype=bool)
                keep[i] = False
                continue
            tl[i] = now + 1
        if keep is not None:
            co.keep(keep)

    def _wait(self, co: Cohort, e: WaitEntry) -> None:
        eng = self.eng
        reply, n = co.arg(e.reply), co.arg(e.n)
        ra, na = isinstance(reply, np.ndarray), isinstance(n, np.ndarray)
        keep = None
        for i, c in enumerate(co.lane_list):
            cpe = eng.cpes[c]
            reason = eng.reply_short(cpe, int(reply[i]) if ra else reply, int(n[i]) if na else n)
            if reason is not None:
                self.block(cpe, co, i, co.idx, "wait", reason)
                if keep is None:
                    keep = np.ones(len(co.lanes), dtype=bool)
                keep[i] = False
        if keep is not None:
            co.keep(keep)

    def _barrier(self, co: Cohort, e: Barrier) -> None:
        """Every lane arrives (at ``now``); released lanes continue at the release cycle after
        the barrier (like per-CPE agents, which re-synchronise there)."""
        eng = self.eng
        scope, mask = e.scope, e.mask
        nxt = co.idx + 1
        for i, c in enumerate(co.lane_list):
            cpe = eng.cpes[c]
            self.block(cpe, co, i, nxt, "barrier", "")
            release, ids = eng.barrier_register(cpe, scope, mask, eng.now)
            if release is None:
                cpe.blocked = f"barrier {scope}: waiting for CPEs {ids}"
            else:
                self._release_barrier(ids, release)

    def _release_barrier(self, ids: list[int], release: int) -> None:
        """``eng.wake(cpe, release)`` for the lanes ``ids`` of a completed barrier (in that
        order), the woken lanes at the same position and cycle as one cohort scheduled as the
        first of them would be (``wake_lane``, mode "barrier")."""
        eng = self.eng
        groups: dict[tuple, list] = {}
        for cid in ids:
            cpe = eng.cpes[cid]
            if cpe.done:
                continue
            site = cpe.site
            if site is None or site[2] != "barrier":  # pragma: no cover - not a barrier lane
                eng.wake(cpe, release)
                continue
            seq, idx, _ = site
            proc = max(cpe.t, release)
            cpe.site = None
            cpe.blocked = None
            g = groups.get((id(seq), idx, proc))
            if g is None:
                groups[(id(seq), idx, proc)] = [seq, idx, proc, [cid]]
            else:
                g[3].append(cid)
        for seq, idx, proc, cids in groups.values():
            lanes = np.array(sorted(cids), dtype=np.int64)
            self.schedule(Cohort(seq, idx, lanes, np.full(len(lanes), proc, dtype=np.int64)),
                          proc, cids[0])

    # -- micro-kernel runs ---------------------------------------------------------------
    def _account(self, lanes: np.ndarray, start: np.ndarray, end: np.ndarray, rp,
                 t0: np.ndarray, cycles: int | None = None) -> None:
        """Kernel counters and trace spans of finished runs (``cycles``: every run's length
        when they are all ``rp.cycles`` long)."""
        k = self.kernel
        G = len(lanes)
        if not G:
            return
        if k is not None:
            k.flops += rp.flops * G
            k.p0_valid += rp.p0_valid * G
            k.p1_valid += rp.p1_valid * G
            if cycles is None:
                cyc = end - start
                k.p_cycles += int(cyc.sum())
                k.compute_per_cpe[lanes] += cyc
            else:
                k.p_cycles += cycles * G
                k.compute_per_cpe[lanes] += cycles
            if rp.gets:
                k.rlc_wait += int(start.sum()) - int(t0.sum())
        self.eng.trace.runs(lanes, rp.mk.name, rp.trip, t0, start, end)  # (one entry per cohort)

    def _mk(self, co: Cohort, e: MkEntry) -> bool | None:
        """Time one run of ``e``'s micro-kernel for every lane (spec §6: start = max(lane clock,
        register scoreboard, message arrivals); §5 back-pressure) and queue its numerics; lanes
        whose messages are not all posted yet block (re-run when woken), senders whose links
        hold more than ``depth`` unconsumed messages wait for their receivers. False: deferred
        (retried later in this event, ``_drain``), else None."""
        eng = self.eng
        m = eng.machine
        mk, trip, bases_all, checked = e.mk, e.trip, e.bases, e.checked
        if trip <= 0:
            return None
        if bases_all.shape[1] != len(mk.strides):
            raise SimError(f"CPEs {co.lane_list}: micro-kernel '{mk.name}' has "
                           f"{len(mk.strides)} pointers but {bases_all.shape[1]} bases were given")
        rp = eng._run_plan(mk, trip)
        bases = bases_all if co.pos is None else bases_all[co.pos]
        if checked[0] is False:
            # every lane of the entry valid: no check for later cohorts; else (None) check the
            # cohort's rows in lane order (the per-CPE error naming the first bad CPE)
            checked[0] = True
            bkey = bases_all.tobytes()
            if bkey not in rp.checked_arrays:
                try:
                    for row in {tuple(b) for b in bases_all.tolist()} - rp.checked:
                        check_run_addresses(rp.accesses, 0, row, mk.strides, trip, m.ldm_bytes,
                                            m.vector_ldm_align)
                        rp.checked.add(row)
                    rp.checked_arrays.add(bkey)
                except SimError:
                    checked[0] = None
        if checked[0] is None:
            for i, row in enumerate(tuple(b) for b in bases.tolist()):
                if row not in rp.checked:
                    check_run_addresses(rp.accesses, co.lane_list[i], row, mk.strides, trip,
                                        m.ldm_bytes, m.vector_ldm_align)
                    rp.checked.add(row)
        rrf = self.rr_flat
        lanes = co.lanes
        t0 = co.tl
        if rp.first_use:
            x = rrf.take(self._flat(rp, 0, lanes))
            x -= rp.fu_offs
            t0 = np.maximum(t0, x.max(axis=1))
        gets = rp.gets
        if gets:
            avail = {d: self.cnt[d][lanes] for d in gets}
            if self.may_defer:
                for d, (need, _rel) in gets.items():
                    if (avail[d] < need).any():
                        self.retry.append(co)
                        return False
            keep = None
            for d, (need, _rel) in gets.items():
                miss = avail[d] < need
                if keep is not None:
                    miss &= keep
                if miss.any():
                    waiting = self.qwait[d]
                    for i in np.flatnonzero(miss).tolist():
                        c = co.lane_list[i]
                        cpe = eng.cpes[c]
                        waiting.setdefault(c, []).append(cpe)
                        self.block(cpe, co, i, co.idx, "rlc",
                                   f"get{d[0]} in '{mk.name}': waiting for {need} messages on "
                                   f"the {d} FIFO ({int(self.cnt[d][c])} posted)", int(t0[i]))
                    keep = ~miss if keep is None else keep & ~miss
            if keep is not None:
                t0 = t0[keep]
                bases = bases[keep]
                co.keep(keep)
                lanes = co.lanes
                if not len(lanes):
                    return None
        self.progress += 1
        lane_list = co.lane_list
        G = len(lane_list)
        start = t0
        trace = eng.trace
        depth = eng.rlc.depth
        inputs: list[dict] | None = None
        run_inputs: list[dict] | WholeLinks | None = None  # the numerics' inputs (queue_run)
        deps: set = set()
        if gets:
            start = t0.copy()
            num = eng.numerics  # the slices taken are needed by the numerics only
            # per-lane {direction: slices}, built only when some direction is not taken as one
            # whole link per lane from a single LinkSet (``fast``: d -> (LinkSet, links))
            inputs = None
            fast: dict[str, tuple] = {}
            whole: list[tuple] = []  # (direction, rel, [(ls, lanes, links)]) whole links
            slow: list[tuple[int, str, list]] = []  # (lane, direction, slices) taken in pieces
            for d, (need, rel) in gets.items():
                q = self.q[d]
                self.cnt[d][lanes] -= need
                by: dict[int, list] = {}
                # fastest case: every lane's FIFO head is an untouched whole link of one LinkSet
                # (a SUMMA broadcast posted by one run) -> no per-lane branching
                dqs = [q[c] for c in lane_list]
                heads = [dq[0] for dq in dqs]
                ls0 = heads[0][0]
                kk0 = None
                if ls0.n == need and all(h[0] is ls0 for h in heads):
                    kk0 = [h[1] for h in heads]
                    cons = ls0.consumed
                    if any(cons[k] for k in kk0):
                        kk0 = None
                if kk0 is not None:
                    for dq in dqs:
                        dq.popleft()
                    for k in kk0:
                        cons[k] = need
                    if num:
                        fast[d] = (ls0, kk0)
                    by[id(ls0)] = [ls0, list(range(G)), kk0]
                    deps.add(ls0.task)
                for i, c in enumerate(lane_list if kk0 is None else ()):
                    dq = q[c]
                    ls, k = dq[0]
                    if ls.n == need and ls.consumed[k] == 0:  # one whole link: the common case
                        dq.popleft()
                        ls.consumed[k] = need
                        if num:
                            if inputs is None:
                                inputs = [{} for _ in range(G)]
                            inputs[i][d] = [(ls, k, 0, need)]
                        g = by.get(id(ls))
                        if g is None:
                            g = by[id(ls)] = [ls, [], []]
                            deps.add(ls.task)
                        g[1].append(i)
                        g[2].append(k)
                    else:
                        sl = self._take(dq, need)
                        if num:
                            if inputs is None:
                                inputs = [{} for _ in range(G)]
                            inputs[i][d] = sl
                        slow.append((i, d, sl))
                        s_ = self._arrival(sl, rel)
                        if s_ > start[i]:
                            start[i] = s_
                        for piece in sl:
                            deps.add(piece[0].task)
                if by:
                    for ls, ii, kk in by.values():
                        if ls.n == rel.shape[0]:
                            arr = ls.arrival_base[kk] + eng._maxdiff(ls.put_rel, rel)
                        else:  # pragma: no cover - a whole link of need messages
                            arr = np.array([self._arrival([(ls, k, 0, ls.n)], rel) for k in kk])
                        np.maximum(start[ii], arr, out=arr)
                        start[ii] = arr
                    whole.append((d, rel, list(by.values())))
            if num:
                if inputs is None:
                    run_inputs = WholeLinks(fast)
                else:
                    for d, (ls0, kk0) in fast.items():
                        n0 = ls0.n
                        for inp, k in zip(inputs, kk0):
                            inp[d] = [(ls0, k, 0, n0)]
                    run_inputs = inputs
            # GET issue cycles: traced; senders in back-pressure are notified (links consumed
            # whole need no per-link record: only _record's partial slices are read again)
            now = eng.now
            for _d, rel, groups in whole:
                for ls, ii, kk in groups:
                    if trace.enabled:
                        trace.gets(lanes[ii], start[ii], ls.flow0 + np.asarray(kk, dtype=np.int64))
                    if ls.bp is not None and ls.n > depth:
                        self._links_satisfied(ls, kk, start[ii], rel, now, depth)
            for i, d, sl in slow:
                self._record(sl, gets[d][1], int(start[i]), lane_list[i], depth)
        k_ = self.kernel
        links: list[tuple[LinkSet, tuple]] = []
        if rp.puts:
            lss = self._post(rp, co, lane_list, start)
            links = [(ls, js) for ls, js in lss]
            n_msgs = rp.n_msgs * G
            eng.rlc.messages += n_msgs
            if k_ is not None:
                k_.rlc_messages += n_msgs
        if k_ is not None and rp.has_rlc:
            k_.uses_rlc = True
        task = eng.queue_run(rp, lane_list, bases, run_inputs, None, links)
        if task is not None:
            task.deps = {d for d in deps if d is not None and not d.done} or None
        end = start + rp.cycles
        if rp.ready_after:
            rrf[self._flat(rp, 1, lanes)] = start[:, None] + rp.ra_offs
        bp_links = [ls for ls, _ in links if ls.n > depth]
        if bp_links:
            # at post time nothing is consumed yet: the senders wait for their receivers
            waiting_lanes = np.zeros(G, dtype=bool)
            for ls in bp_links:
                waiting_lanes[ls.sidx] = True
            widx = np.flatnonzero(waiting_lanes)
            fl = co.floor
            proc = np.maximum(t0, fl) if fl is not None else t0
            run = _BPRun(co.seq, co.idx + 1, rp, lanes, start, end, t0, proc.copy())
            for ls in bp_links:
                ls.bp = run
                run.links.append(ls)
                run.pending += np.bincount(ls.sidx, minlength=G)
            for i in widx.tolist():
                cpe = eng.cpes[lane_list[i]]
                self.block(cpe, co, i, co.idx + 1, "bp", "send buffer full", int(t0[i]))
                cpe.bp = run
            keep = ~waiting_lanes
            self._account(lanes[keep], start[keep], end[keep], rp, t0[keep], rp.cycles)
            newt = np.maximum(co.tl[keep], end[keep])
            if co.floor is not None:
                np.maximum(newt, co.floor[keep], out=newt)
            co.set_lanes(lanes[keep], newt, None)
            return None
        self._account(lanes, start, end, rp, t0, rp.cycles)
        newt = np.maximum(co.tl, end)
        if co.floor is not None:
            np.maximum(newt, co.floor, out=newt)
        co.set_lanes(lanes, newt, None)
        return None

    def _flat(self, rp, which: int, lanes: np.ndarray) -> np.ndarray:
        """``(lanes, regs)`` indices into the flattened register scoreboard of ``rp``'s
        first-use (``which`` 0) or ready-after (1) registers for ``lanes``."""
        key = (id(rp), which, lanes.tobytes())
        idx = self.flat_idx.get(key)
        if idx is None:
            regs = rp.fu_regs if which == 0 else rp.ra_regs
            idx = self.flat_idx[key] = (lanes * self.n_regs)[:, None] + regs
        return idx

    # -- RLC links -------------------------------------------------------------------------
    def _post(self, rp, co: Cohort, lane_list: list[int], start: np.ndarray) -> list:
        """Post the run's messages: one LinkSet per (direction, put set), links appended to the
        receivers' FIFOs in per-CPE order (sender by sender, target by target)."""
        eng = self.eng
        rlc = eng.rlc
        key = (id(rp), co.lanes.tobytes())
        plan = self.post_plans.get(key)
        if plan is None:
            groups: dict[tuple, list] = {}
            link_order: list[tuple[int, int]] = []  # (group, link) in per-CPE order
            for i, c in enumerate(lane_list):
                for d, tgt, js, put_rel in rp.targets(c, rlc):
                    g = groups.get((d, js))
                    if g is None:
                        g = groups[(d, js)] = [d, js, put_rel, [], [], [], len(groups)]
                    link_order.append((g[6], len(g[3])))
                    g[3].append(i)
                    g[4].append(c)
                    g[5].append(tgt)
            glist = [(d, js, put_rel, np.array(si, dtype=np.int64), np.array(se, dtype=np.int64),
                      np.array(re, dtype=np.int64), re, len(set(re)) == len(re))
                     for d, js, put_rel, si, se, re, _ in groups.values()]
            # the receivers' FIFOs themselves (self.q's deques live as long as the engine)
            # appended in stretches of consecutive links of one group (same order, C-level loop)
            runs: list[tuple[int, list, list]] = []
            for gi, k in link_order:
                dq = self.q[glist[gi][0]][glist[gi][6][k]]
                if not runs or runs[-1][0] != gi:
                    runs.append((gi, [], []))
                runs[-1][1].append(dq)
                runs[-1][2].append(k)
            plan = self.post_plans[key] = (rp, glist, runs)
        _, glist, order = plan
        lat = eng.machine.rlc_latency
        lss = []
        for d, js, put_rel, sidx, sender, receiver, _, unique in glist:
            ls = LinkSet(d, put_rel, sidx, sender, receiver, start[sidx], lat)
            ls.flow0 = rlc.next_flow
            rlc.next_flow += len(receiver)
            if unique:  # one link per receiver: a plain fancy-index add
                self.cnt[d][receiver] += ls.n
            else:
                np.add.at(self.cnt[d], receiver, ls.n)
            lss.append((ls, js))
        for gi, dqs, ks in order:
            deque(map(deque.append, dqs, zip(repeat(lss[gi][0]), ks)), maxlen=0)
        trace = eng.trace
        for (ls, _), g in zip(lss, glist):
            rec = g[6]
            waiting = self.qwait[ls.direction]
            if waiting:
                for r in set(rec) & waiting.keys():
                    for w in waiting.pop(r):
                        eng.wake(w)
            trace.posts(ls, len(rec))  # (one entry per LinkSet)
        return lss

    @staticmethod
    def _take(dq, need: int) -> list[tuple]:
        """Consume ``need`` messages from a receiver FIFO: (LinkSet, link, lo, hi) slices."""
        out = []
        while need:
            ls, k = dq[0]
            c0 = ls.consumed[k]
            n_ = min(need, ls.n - c0)
            out.append((ls, k, c0, c0 + n_))
            ls.consumed[k] = c0 + n_
            need -= n_
            if c0 + n_ == ls.n:
                dq.popleft()
        return out

    def _arrival(self, slices: list[tuple], rel: np.ndarray) -> int:
        """Earliest start of a receiving run: every GET issues at or after its message's arrival
        (the per-CPE ``Engine._arrival_start`` on link slices)."""
        if len(slices) == 1:
            ls, k, lo, hi = slices[0]
            if lo == 0 and hi == ls.n and hi == rel.shape[0]:
                return int(ls.arrival_base[k]) + self.eng._maxdiff(ls.put_rel, rel)
            return int((ls.arrival_base[k] + ls.put_rel[lo:hi] - rel).max())
        arr = np.concatenate([ls.arrival_base[k] + ls.put_rel[lo:hi] for ls, k, lo, hi in slices])
        return int((arr - rel).max())

    def _record(self, slices: list[tuple], rel: np.ndarray, start: int, cpe: int,
                depth: int) -> None:
        """GET issue cycles of consumed slices (the per-CPE ``Engine._record_gets``)."""
        pos = 0
        trace = self.eng.trace
        now = self.eng.now
        for ls, k, lo, hi in slices:
            if lo == 0 and hi == ls.n and pos == 0 and hi == rel.shape[0]:
                ls.got_base[k], ls.got_rel[k] = start, rel
            else:
                if ls.got is None:
                    ls.got = {}
                g = ls.got.get(k)
                if g is None:
                    g = ls.got[k] = np.empty(ls.n, dtype=np.int64)
                g[lo:hi] = start + rel[pos: pos + hi - lo]
            pos += hi - lo
            if trace.enabled:
                trace.flow(ls.link(k), cpe, start)
            if ls.bp is not None and ls.n > depth and lo < ls.n - depth <= hi:
                self._link_satisfied(ls, k, now, depth)

    def _link_delta(self, ls: LinkSet, k: int, depth: int) -> int:
        """Cycles the sender loses on link ``k``: put ``j`` waits for get ``j - depth`` (+1)."""
        gr = ls.got_rel[k]
        if gr is not None:
            return ls.got_base[k] + 1 - int(ls.put_base[k]) + self.eng._maxdiff(gr, ls.put_rel,
                                                                               depth)
        kk = ls.n - depth
        assert ls.got is not None  # consumed in several slices: recorded per message
        return int((ls.got[k][:kk] + 1 - (ls.put_base[k] + ls.put_rel[depth:])).max())

    def _links_satisfied(self, ls: LinkSet, kk: list[int], got_base: np.ndarray,
                         rel: np.ndarray, now: int, depth: int) -> None:
        """Vectorised ``_link_satisfied`` for links ``kk`` consumed whole by one run (GET
        cycles ``got_base + rel``)."""
        run = ls.bp
        assert run is not None  # the callers check
        karr = np.array(kk, dtype=np.int64)
        sidx = ls.sidx[karr]
        delta = got_base + 1 - ls.put_base[karr] + self.eng._maxdiff(rel, ls.put_rel, depth)
        sender = int(ls.sender[kk[0]])
        # _release_lane for every link at once: the lanes' lags become the max of their links'
        # (the kernel's rlc_wait grows by the sum of the increases), their resume cycles at
        # least ``now``; the lanes whose last pending link this was are released
        G = len(run.pending)
        cnt = np.bincount(sidx, minlength=G)
        hit = cnt > 0
        mx = np.full(G, _NO_LAG, dtype=np.int64)
        np.maximum.at(mx, sidx, delta)
        new = np.maximum(run.extra, mx)
        if self.kernel is not None:
            self.kernel.rlc_wait += int((new - run.extra).sum())
        run.extra = new
        proc = run.proc
        np.maximum(proc, now, out=proc, where=hit)
        run.pending -= cnt
        done = np.flatnonzero(hit & (run.pending == 0))
        if len(done):
            for i, t in zip(done.tolist(), proc[done].tolist()):
                self._due(run, i, t, sender)

    def _link_satisfied(self, ls: LinkSet, k: int, now: int, depth: int) -> None:
        """Link ``k`` has all but ``depth`` messages consumed: its sender lane may go on."""
        self._release_lane(ls.bp, int(ls.sidx[k]), self._link_delta(ls, k, depth), now, int(ls.sender[k]))

    def _release_lane(self, run, i: int, delta: int, now: int, sender: int) -> None:
        """One of sender lane ``i``'s back-pressured links of ``run`` is satisfied at ``now``, the
        lane lagging ``delta`` cycles behind it; when it was the lane's last pending link, the
        lane is released in the per-cycle ``_bp_finish`` event (scheduled on CPE ``sender``)."""
        extra = int(run.extra[i])
        if delta > extra:  # the lane lags by its slowest link (max, as engine.py)
            if self.kernel is not None:
                self.kernel.rlc_wait += delta - extra
            run.extra[i] = delta
        if now > run.proc[i]:
            run.proc[i] = now
        run.pending[i] -= 1
        if run.pending[i] == 0:
            self._due(run, i, int(run.proc[i]), sender)

    def _due(self, run, i: int, t: int, sender: int) -> None:
        """Sender lane ``i`` of ``run`` resumes at cycle ``t``."""
        due = self.bp_due.get(t)
        if due is None:  # one event per cycle finishes every lane released then
            due = self.bp_due[t] = []
            self.eng.schedule(t, PH_AGENT, sender, partial(self._bp_finish, t))
        due.append((run, i))

    def _bp_finish(self, t: int) -> None:
        """Sender lanes whose links are all consumed enough: each run ends its accumulated delay
        later; the lanes continue (per-CPE agents would resume at cycle ``t`` each)."""
        eng = self.eng
        due = self.bp_due.pop(t)
        by: dict[int, list] = {}
        for run, i in due:
            g = by.get(id(run))
            if g is None:
                g = by[id(run)] = [run, []]
            g[1].append(i)
        for run, ii in by.values():
            ii.sort()
            idx = np.array(ii, dtype=np.int64)
            lanes = run.lanes[idx]
            end = run.end[idx] + run.extra[idx]
            self._account(lanes, run.start[idx], end, run.rp, run.t0[idx])
            for c in lanes.tolist():
                cpe = eng.cpes[c]
                cpe.site = None
                cpe.blocked = None
                cpe.bp = None
            self.schedule(Cohort(run.seq, run.idx, lanes, np.maximum(end, t)), t)

    def bp_reasons(self) -> None:
        """Deadlock diagnostics: the per-CPE message of every lane in back-pressure (the first
        link of the lane, in its target order, not consumed enough)."""
        eng = self.eng
        depth = eng.rlc.depth
        for cpe in eng.cpes:
            run = cpe.bp
            if run is None or cpe.site is None:
                continue
            i = int(np.flatnonzero(run.lanes == cpe.id)[0])
            for d, tgt, _js, _ in run.rp.targets(cpe.id, eng.rlc):
                for ls in run.links:
                    if ls.direction != d:
                        continue
                    hit = np.flatnonzero((ls.sidx == i) & (ls.receiver == tgt))
                    if not len(hit):
                        continue
                    k = int(hit[0])
                    if ls.consumed[k] < ls.n - depth:
                        cpe.blocked = (f"put{d[0]} in '{run.rp.mk.name}': send buffer full — "
                                       f"CPE {tgt} has consumed {ls.consumed[k]} of {ls.n} "
                                       f"messages (link depth {depth})")
                        break
                else:
                    continue
                break


__all__ = ["Seq", "Cohort", "Lockstep", "LinkSet", "WholeLinks"]
