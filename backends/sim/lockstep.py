"""Lockstep (SPMD-batched) execution of CPE kernels: tapes and cohorts.

Per-CPE mode runs one generator per CPE (``runner.KernelProgram.run``). Lockstep mode splits that
work in two:

* **Tape** (:class:`Seq`): the kernel's scalar code is interpreted once for a set of lanes,
  vectorised over them (``runner.KernelProgram.tape``): control flow and addresses never depend
  on time or data, so this yields the exact sequence of operations every CPE performs -- entries
  ``("mk", mk, trip, bases)``, ``("get"|"put", mem, ldm, reply, kw)``, ``("wait", reply, n)``,
  ``("reset", reply)``, ``("barrier", scope, mask)`` with per-lane operands (scalars when
  uniform), and ``("branch", [child Seq ...])`` where a lane-dependent ``scf.if`` / ``scf.for``
  bound splits the lanes. Entries are produced lazily.
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

from typing import TYPE_CHECKING

import numpy as np

from taihu.backends.sim.dma import DMARequest
from taihu.backends.sim.memory import SimError
from taihu.backends.sim.microkernel import check_run_addresses
from taihu.backends.sim.rlc import Batch

if TYPE_CHECKING:  # pragma: no cover
    from taihu.backends.sim.engine import CPE, Engine, KernelStats

PH_AGENT = 5
_NO_FLOOR = -1


class Seq:
    """One region's tape for a set of lanes (CPE ids, ascending).

    ``pos[cpe]``: index of ``cpe`` in ``lanes`` (-1 if absent); per-lane operands of the entries
    are indexed by it. ``parent`` / ``parent_idx``: the Seq holding the ``branch`` entry this
    Seq is a child of (the replay continues at ``parent_idx + 1`` of the parent)."""

    __slots__ = ("lanes", "pos", "rows", "cols", "entries", "gen", "parent", "parent_idx",
                 "n_cpes", "mesh_cols")

    def __init__(self, lanes: np.ndarray, n_cpes: int, mesh_cols: int,
                 parent: Seq | None = None, parent_idx: int = 0) -> None:
        self.lanes = lanes
        self.n_cpes = n_cpes
        self.mesh_cols = mesh_cols
        self.pos = np.full(n_cpes, -1, dtype=np.int64)
        self.pos[lanes] = np.arange(len(lanes), dtype=np.int64)
        self.rows = lanes // mesh_cols
        self.cols = lanes % mesh_cols
        self.entries: list[tuple] = []
        self.gen = None
        self.parent = parent
        self.parent_idx = parent_idx

    def child(self, mask: np.ndarray, idx: int) -> Seq:
        return Seq(self.lanes[mask], self.n_cpes, self.mesh_cols, self, idx)

    def entry(self, i: int) -> tuple | None:
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

    __slots__ = ("seq", "idx", "lanes", "tl", "floor", "pos", "lane_list", "key")

    def __init__(self, seq: Seq, idx: int, lanes: np.ndarray, tl: np.ndarray,
                 floor: np.ndarray | None = None) -> None:
        self.seq = seq
        self.idx = idx
        self.set_lanes(lanes, tl, floor)
        self.key = None

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

    def absorb(self, other: Cohort) -> None:
        """Add ``other``'s lanes (same position)."""
        lanes = np.concatenate([self.lanes, other.lanes])
        tl = np.concatenate([self.tl, other.tl])
        floor = None
        if self.floor is not None or other.floor is not None:
            fa = self.floor if self.floor is not None else np.full(len(self.lanes), _NO_FLOOR)
            fb = other.floor if other.floor is not None else np.full(len(other.lanes), _NO_FLOOR)
            floor = np.concatenate([fa, fb])
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


class _BackPressure:
    """A sender lane whose micro-kernel run waits until its receivers consumed all but
    ``depth`` messages of each link (``pending`` links left; ``proc``: the cycle at which the
    per-CPE agent would resume = max(clock, wake cycles))."""

    __slots__ = ("cpe", "seq", "idx", "outputs", "start", "end", "t0", "rp", "pending", "proc")

    def __init__(self, cpe, seq, idx, outputs, start, end, t0, rp) -> None:
        self.cpe, self.seq, self.idx, self.outputs = cpe, seq, idx, outputs
        self.start, self.end, self.t0, self.rp = start, end, t0, rp
        self.pending = 0
        self.proc = t0


class Lockstep:
    """Replays tapes for an :class:`~taihu.backends.sim.engine.Engine` (``engine.lockstep``)."""

    def __init__(self, engine: Engine) -> None:
        self.eng = engine
        self.ready: dict[tuple, Cohort] = {}
        self.joins: dict[tuple, _Join] = {}
        self.bp_due: dict[int, list[_BackPressure]] = {}
        self.kernel: KernelStats | None = None

    # -- scheduling ----------------------------------------------------------------------
    def start(self, root: Seq, t: int, kernel: KernelStats) -> None:
        self.kernel = kernel
        self.ready.clear()
        self.joins.clear()
        self.bp_due.clear()
        co = Cohort(root, 0, root.lanes.copy(), np.full(len(root.lanes), t, dtype=np.int64))
        self.schedule(co, t)

    def schedule(self, co: Cohort, t: int) -> None:
        """Run ``co`` at event time ``t`` (merging with a cohort already due there)."""
        key = (id(co.seq), co.idx, t)
        other = self.ready.get(key)
        if other is not None:
            other.absorb(co)
            return
        co.key = key
        self.ready[key] = co
        self.eng.schedule(t, PH_AGENT, co.lane_list[0], lambda: self._run(co))

    def _run(self, co: Cohort) -> None:
        if self.ready.get(co.key) is co:
            del self.ready[co.key]
        co.key = None
        work = [co]
        while work:
            self._advance(work.pop(), work)

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
            tag = e[0]
            if tag == "mk":
                self._mk(co, e)
                co.idx += 1
                continue
            if tag == "branch":
                self._branch(co, e[1], work)
                return
            if tag == "reset":
                r = co.arg(e[1])
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
            if tag == "get" or tag == "put":
                self._dma(co, e)
            elif tag == "wait":
                self._wait(co, e)
            elif tag == "barrier":
                self._barrier(co, e)
                return
            else:  # pragma: no cover
                raise SimError(f"internal error: unknown tape entry '{tag}'")
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
        for other in cos[1:]:
            co.absorb(other)
        work.append(co)

    def _join_timeout(self, key: tuple, j: _Join, t: int) -> None:
        if self.joins.get(key) is not j or j.timer != t or not j.waiting:
            return
        work: list[Cohort] = []
        self._release(key, j, work)
        while work:
            self._advance(work.pop(), work)

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
    def _dma(self, co: Cohort, e: tuple) -> None:
        eng = self.eng
        dma = eng.dma
        k = self.kernel
        tag, mem, ldm, reply, kw = e
        mem, ldm, reply = co.arg(mem), co.arg(ldm), co.arg(reply)
        kind = "get" if tag == "get" else "put"
        mode = kw.get("mode", "pe")
        mask = kw.get("mask", 0xFF)
        size, bsize, stride, limit = kw["size"], kw["bsize"], kw["stride"], kw["ldm_limit"]
        arr = [isinstance(x, np.ndarray) for x in (mem, ldm, reply)]
        tl = co.tl
        keep = None
        now = eng.now
        for i, c in enumerate(co.lane_list):
            req = DMARequest(c, kind, int(mem[i]) if arr[0] else mem,
                             int(ldm[i]) if arr[1] else ldm, size, bsize, stride,
                             int(reply[i]) if arr[2] else reply, mode, mask, limit)
            dma.validate(req)
            if dma.channel_full(c):
                cpe = eng.cpes[c]
                dma.chan_waiters[c].append(lambda a=cpe: eng.wake(a))
                self.block(cpe, co, i, co.idx, "chan",
                           f"DMA {kind} issue: channel buffer full "
                           f"({eng.machine.chan_buf_depth} requests waiting)")
                if keep is None:
                    keep = np.ones(len(co.lanes), dtype=bool)
                keep[i] = False
                continue
            dma.issue(req, now)
            if k is not None:
                k.dma_bytes += req.size
                k.dma_moved += req.moved
                k.dma_count += 1
            tl[i] = now + 1
        if keep is not None:
            co.keep(keep)

    def _wait(self, co: Cohort, e: tuple) -> None:
        eng = self.eng
        reply, n = co.arg(e[1]), co.arg(e[2])
        ra, na = isinstance(reply, np.ndarray), isinstance(n, np.ndarray)
        keep = None
        for i, c in enumerate(co.lane_list):
            cpe = eng.cpes[c]
            r = int(reply[i]) if ra else reply
            need = int(n[i]) if na else n
            have = cpe.replies.get(r, 0)
            if have < need:
                eng.reply_waiters.setdefault((c, r), []).append(cpe)
                inflight = eng.dma.inflight[c] + len(eng.dma.chan[c])
                self.block(cpe, co, i, co.idx, "wait",
                           f"dma_wait: reply word {r} = {have} < {need} "
                           f"({inflight} DMA requests of this CPE pending)")
                if keep is None:
                    keep = np.ones(len(co.lanes), dtype=bool)
                keep[i] = False
        if keep is not None:
            co.keep(keep)

    def _barrier(self, co: Cohort, e: tuple) -> None:
        """Every lane arrives (at ``now``); released lanes continue at the release cycle after
        the barrier (like per-CPE agents, which re-synchronise there)."""
        eng = self.eng
        scope, mask = e[1], e[2]
        nxt = co.idx + 1
        for i, c in enumerate(co.lane_list):
            cpe = eng.cpes[c]
            self.block(cpe, co, i, nxt, "barrier", "")
            release, ids = eng.barrier_register(cpe, scope, mask, eng.now)
            if release is None:
                cpe.blocked = f"barrier {scope}: waiting for CPEs {ids}"
            else:
                for cid in ids:
                    eng.wake(eng.cpes[cid], release)

    # -- micro-kernel runs ---------------------------------------------------------------
    def _mk(self, co: Cohort, e: tuple) -> None:
        """Time one run of ``e``'s micro-kernel for every lane (spec §6: start = max(lane clock,
        register scoreboard, message arrivals); §5 back-pressure) and queue its numerics; lanes
        whose messages are not all posted yet block (re-run when woken), senders whose links
        hold more than ``depth`` unconsumed messages wait for their receivers."""
        eng = self.eng
        m = eng.machine
        _, mk, trip, bases_all = e
        if trip <= 0:
            return
        if bases_all.shape[1] != len(mk.strides):
            raise SimError(f"CPEs {co.lane_list}: micro-kernel '{mk.name}' has "
                           f"{len(mk.strides)} pointers but {bases_all.shape[1]} bases were given")
        rp = eng._run_plan(mk, trip)
        bases = bases_all if co.pos is None else bases_all[co.pos]
        bkey = bases.tobytes()
        if bkey not in rp.checked_arrays:
            rows = [tuple(b) for b in bases.tolist()]
            for i, row in enumerate(rows):
                if row not in rp.checked:
                    check_run_addresses(rp.accesses, co.lane_list[i], row, mk.strides, trip,
                                        m.ldm_bytes, m.vector_ldm_align)
                    rp.checked.add(row)
            rp.checked_arrays.add(bkey)
        rr = eng.reg_ready
        lanes = co.lanes
        t0 = co.tl
        if rp.first_use:
            t0 = np.maximum(t0, (rr[lanes[:, None], rp.fu_regs] - rp.fu_offs).max(axis=1))
        rlc = eng.rlc
        gets = rp.gets
        if gets:
            keep = None
            for d, (need, rel) in gets.items():
                fifos = rlc.fifo[d]
                for i, c in enumerate(co.lane_list):
                    if fifos[c].count < need and (keep is None or keep[i]):
                        cpe = eng.cpes[c]
                        fifos[c].waiters.append(cpe)
                        self.block(cpe, co, i, co.idx, "rlc",
                                   f"get{d[0]} in '{mk.name}': waiting for {need} messages on "
                                   f"the {d} FIFO ({fifos[c].count} posted)", int(t0[i]))
                        if keep is None:
                            keep = np.ones(len(lanes), dtype=bool)
                        keep[i] = False
            if keep is not None:
                t0 = t0[keep]
                bases = bases[keep]
                co.keep(keep)
                lanes = co.lanes
                if not len(lanes):
                    return
        lane_list = co.lane_list
        G = len(lane_list)
        start = t0
        trace = eng.trace
        inputs: list[dict] | None = None
        if gets:
            start = t0.copy()
            inputs = [{} for _ in range(G)]
            for d, (need, rel) in gets.items():
                fifos = rlc.fifo[d]
                shared = None
                abases: list[int] | None = []
                for i, c in enumerate(lane_list):
                    f = fifos[c]
                    b = f.batches[f.head]
                    if b.consumed == 0 and b.n == need:  # the common case: one whole batch
                        f.count -= need
                        b.consumed = need
                        f.head += 1
                        if f.head > 64:
                            del f.batches[: f.head]
                            f.head = 0
                        inputs[i][d] = [(b, 0, need)]
                        if abases is not None and (shared is None or b.put_rel is shared):
                            shared = b.put_rel
                            abases.append(b.arrival_base)
                            continue
                    else:
                        inputs[i][d] = f.take(need)
                    abases = None
                if abases is not None and shared.shape[0] == rel.shape[0]:
                    np.maximum(start, np.array(abases, dtype=np.int64) +
                               eng._maxdiff(shared, rel), out=start)
                else:
                    arrival_start = eng._arrival_start
                    st_list = start.tolist()
                    for i in range(G):
                        s_ = arrival_start(inputs[i][d], rel)
                        if s_ > st_list[i]:
                            st_list[i] = s_
                    start = np.array(st_list, dtype=np.int64)
            # GET issue cycles; a sender waiting for consumption is notified (back-pressure)
            depth = rlc.depth
            waiters = eng.sender_waiters
            for i, st in enumerate(start.tolist()):
                for d, slices in inputs[i].items():
                    rel = gets[d][1]
                    if len(slices) == 1 and slices[0][2] == rel.shape[0]:
                        b = slices[0][0]
                        if b.consumed == b.n and slices[0][1] == 0:
                            b.got_base, b.got_rel = st, rel
                            if trace.enabled:
                                trace.flow(b, lane_list[i], st)
                            if b.bp is not None:
                                self._bp_satisfied(b, depth)
                            if waiters:
                                ws = waiters.pop(id(b), None)
                                if ws:
                                    for w in ws:
                                        eng.wake(w)
                            continue
                    eng._record_gets(slices, rel, st, lane_list[i])
        k = self.kernel
        outputs: list[list] | None = None
        if rp.puts:
            outputs = [[] for _ in range(G)]
            lat = m.rlc_latency
            fifo_of = rlc.fifo
            wake = eng.wake
            for i, st in enumerate(start.tolist()):
                c = lane_list[i]
                outs = outputs[i]
                for d, tgt, js, put_rel in rp.targets(c, rlc):
                    b = Batch(c, tgt, d, st, put_rel, lat)
                    b.flow_id = rlc.next_flow
                    rlc.next_flow += 1
                    fifo = fifo_of[d][tgt]
                    fifo.batches.append(b)
                    fifo.count += b.n
                    outs.append((b, js))
                    if trace.enabled:
                        trace.flow_start(b, c, st)
                    if fifo.waiters:
                        ws, fifo.waiters = fifo.waiters, []
                        for w in ws:
                            wake(w)
            rlc.messages += rp.n_msgs * G
            if k is not None:
                k.rlc_messages += rp.n_msgs * G
        if k is not None and rp.has_rlc:
            k.uses_rlc = True
        eng.queue_run(rp, lane_list, bases, inputs or [{}] * G, outputs or [[]] * G)
        end = start + rp.cycles
        if rp.ready_after:
            rr[lanes[:, None], rp.ra_regs] = start[:, None] + rp.ra_offs
        depth = rlc.depth
        if outputs is not None and rp.trip * len(rp.puts) > depth:
            keep = None
            for i in range(G):
                pend = [b for b, _ in outputs[i] if b.n > depth]
                if not pend:
                    continue
                # at post time nothing is consumed yet: the lane waits for its receivers
                if keep is None:
                    keep = np.ones(G, dtype=bool)
                keep[i] = False
                cpe = eng.cpes[lane_list[i]]
                self.block(cpe, co, i, co.idx + 1, "bp", "", int(t0[i]))
                bp = cpe.bp = _BackPressure(cpe, co.seq, co.idx + 1, outputs[i], int(start[i]),
                                            int(end[i]), int(t0[i]), rp)
                bp.pending = len(pend)
                bp.proc = max(cpe.t, cpe.floor)
                for b in pend:
                    b.bp = bp
                b = pend[0]
                cpe.blocked = (f"put{b.direction[0]} in '{mk.name}': send buffer full — CPE "
                               f"{b.receiver} has consumed {b.consumed} of {b.n} messages "
                               f"(link depth {depth})")
            if keep is not None:
                self._account(lanes[keep], start[keep], end[keep], rp, t0[keep])
                newt = np.maximum(co.tl[keep], end[keep])
                if co.floor is not None:
                    np.maximum(newt, co.floor[keep], out=newt)
                co.set_lanes(lanes[keep], newt, None)
                return
        self._account(lanes, start, end, rp, t0)
        newt = np.maximum(co.tl, end)
        if co.floor is not None:
            np.maximum(newt, co.floor, out=newt)
        co.set_lanes(lanes, newt, None)

    def _account(self, lanes: np.ndarray, start: np.ndarray, end: np.ndarray, rp,
                 t0: np.ndarray) -> None:
        """Kernel counters and trace spans of finished runs."""
        k = self.kernel
        G = len(lanes)
        if not G:
            return
        cyc = end - start
        if k is not None:
            k.flops += rp.flops * G
            k.p0_valid += rp.p0_valid * G
            k.p1_valid += rp.p1_valid * G
            k.p_cycles += int(cyc.sum())
            k.compute_per_cpe[lanes] += cyc
            if rp.gets:
                k.rlc_wait += int((start - t0).sum())
        trace = self.eng.trace
        if trace.enabled:
            ll = lanes.tolist()
            name = rp.mk.name
            for i in range(G):
                if start[i] > t0[i]:
                    trace.span(ll[i], 1, "rlc stall", int(t0[i]), int(start[i]))
                trace.span(ll[i], 1, name, int(start[i]), int(end[i]), {"trip": rp.trip})

    def _bp_satisfied(self, b: Batch, depth: int) -> None:
        """Receivers consumed enough of ``b`` (called when its GETs are recorded)."""
        if b.consumed < b.n - depth:
            return
        bp = b.bp
        b.bp = None
        bp.pending -= 1
        now = self.eng.now
        if now > bp.proc:
            bp.proc = now
        if bp.pending == 0:
            due = self.bp_due.get(bp.proc)
            if due is None:  # one event per cycle finishes every lane released then
                due = self.bp_due[bp.proc] = []
                t = bp.proc
                self.eng.schedule(t, PH_AGENT, bp.cpe.id, lambda: self._bp_finish(t))
            due.append(bp)

    def _bp_finish(self, t: int) -> None:
        """Sender lanes whose links are all consumed enough: each run ends ``max delta`` later
        (per link, put ``j`` issues after get ``j - depth``); the lanes continue (per-CPE agents
        would resume at cycle ``t`` each)."""
        eng = self.eng
        depth = eng.rlc.depth
        k = self.kernel
        bps = self.bp_due.pop(t)
        ends = []
        delta_fn = eng._backpressure_delta
        for bp in bps:
            # one instruction stream per sender: it lags by its slowest link (max, not sum)
            lag = max((int(delta_fn(b, depth)) for b, _ in bp.outputs if b.n > depth), default=0)
            end = int(bp.end)
            if lag > 0:
                end += lag
                if k is not None:
                    k.rlc_wait += lag
            ends.append(end)
        # per run plan: counters and trace spans at once
        by_rp: dict[int, list[int]] = {}
        for i, bp in enumerate(bps):
            by_rp.setdefault(id(bp.rp), []).append(i)
        for idx in by_rp.values():
            rp = bps[idx[0]].rp
            self._account(np.array([bps[i].cpe.id for i in idx], dtype=np.int64),
                          np.array([bps[i].start for i in idx], dtype=np.int64),
                          np.array([ends[i] for i in idx], dtype=np.int64), rp,
                          np.array([bps[i].t0 for i in idx], dtype=np.int64))
        groups: dict[tuple, list[int]] = {}
        for i, bp in enumerate(bps):
            cpe = bp.cpe
            cpe.site = None
            cpe.blocked = None
            cpe.bp = None
            groups.setdefault((id(bp.seq), bp.idx), []).append(i)
        for idx in groups.values():
            bp0 = bps[idx[0]]
            lanes = np.array([bps[i].cpe.id for i in idx], dtype=np.int64)
            tl = np.array([max(ends[i], t) for i in idx], dtype=np.int64)
            order = np.argsort(lanes, kind="stable")
            self.schedule(Cohort(bp0.seq, bp0.idx, lanes[order], tl[order]), t)


__all__ = ["Seq", "Cohort", "Lockstep"]
