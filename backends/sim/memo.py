"""Exact memoisation of kernel launches in timing-only simulations (``simulate(numerics=False)``).

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
  registers, ``lockstep.py``), and timing-only mode moves no data.

A launch is stored only if it also ends clean (empty event queue and FIFOs at the join), so the
replay leaves the engine in the state the simulation would. Replaying sets the kernel's
``KernelStats`` (counters, per-CPE compute cycles, DMA intervals), the CPEs' clocks and reply
words, the register scoreboard, the DMA buses' round-robin pointers and busy cycles, the RLC
counters and the trace events (times shifted, DMA addresses re-based on the new arguments'
allocations, RLC flow ids renumbered): reports and traces equal those of the full simulation
(``test/integration/test_sim_memo.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from taihu.backends.sim.memory import MemoryBoundsError

if TYPE_CHECKING:  # pragma: no cover
    from taihu.backends.sim.engine import Engine, KernelStats
    from taihu.backends.sim.runner import KernelProgram


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


_COUNTERS = ("flops", "dma_bytes", "dma_moved", "dma_count", "rlc_messages", "p0_valid",
             "p1_valid", "p_cycles", "rlc_wait", "uses_rlc", "uses_sync")


class TimingMemo:
    """The launch memo of one :class:`~taihu.backends.sim.engine.Engine` (timing-only)."""

    def __init__(self, engine: Engine) -> None:
        self.eng = engine
        self.records: dict[tuple, _Record] = {}
        self.hits = 0
        self.misses = 0

    # -- keys ------------------------------------------------------------------------------
    def _clean(self) -> bool:
        """No event pending, no DMA in flight, every RLC FIFO empty, no barrier open."""
        eng = self.eng
        if eng._heap or eng.dma.pending or eng.barriers:
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
        akey = []
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
        return (kp.signature(), tuple(akey), buses, self.eng.trace.enabled), starts, ranges

    # -- recording ---------------------------------------------------------------------------
    def begin(self, kp: KernelProgram, key: tuple, ranges: dict) -> list:
        """Start recording a launch (call before the spawn)."""
        eng = self.eng
        state = [True]
        kp.memo_check = (kp.memo_plan()[2], ranges, state)
        return [kp, key, state, len(eng.trace.events), eng.rlc.messages, eng.rlc.next_flow,
                [b.busy_cycles for b in eng.dma.buses]]

    def end(self, rec: list, ks: KernelStats, groups: list[tuple[int, int]]) -> None:
        """The launch of ``rec`` joined: store it if it ran clean."""
        eng = self.eng
        kp, key, state, n_ev, msgs, flow, busy = rec
        kp.memo_check = None
        self.misses += 1
        if not state[0] or not self._clean():
            return
        t0 = ks.start
        events = None
        if eng.trace.enabled:
            events = []
            for ev in eng.trace.events[n_ev:-1]:  # the last one is the join's MPE span
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
            events=events)

    # -- replay ----------------------------------------------------------------------------
    def replay(self, key: tuple, groups: list[tuple[int, int]], kp: KernelProgram,
               name: str) -> bool:
        """Replay the record of ``key`` as a launch of ``kp`` (named ``name``) by the MPE now;
        False if there is none."""
        r = self.records.get(key)
        if r is None:
            return False
        from taihu.backends.sim.engine import KernelStats

        eng = self.eng
        mpe = eng.mpe
        m = eng.machine
        start = mpe.t + m.spawn_cycles
        ks = KernelStats(name=name, start=start, ldm_high_water=kp.ldm_high_water)
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
            ev = eng.trace.events
            for e in r.events:
                ev.append(_shift_event(e, start, flow0, [], [g[0] for g in groups]))
        mpe.current_kernel = ks
        mpe.running = []
        mpe.t = max(mpe.t, start + r.mpe_t)
        eng.trace.span("MPE", 0, ks.name, ks.start, ks.end, {"kernel": ks.name})
        self.hits += 1
        return True


def _shift_event(ev: tuple, dt: int, dflow: int, groups: list[tuple[int, int]],
                 new: list[int] | None) -> tuple:
    """A trace event moved by ``dt`` cycles, its RLC flow id by ``dflow``. DMA events'
    main-memory addresses: recording (``new`` None) -> ``(group, offset)`` in the argument
    allocation ``groups`` (start, end); replay -> ``hex(new[group] + offset)``."""
    ph, pid, lane, name, t0, t1, extra = ev
    if ph in ("s", "f"):
        return (ph, pid, lane, name, t0 + dt, t1 + dt, extra + dflow)
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
