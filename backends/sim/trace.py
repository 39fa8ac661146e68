"""Chrome / Perfetto trace-event JSON of a simulation (``--trace t.json``).

Open the file in https://ui.perfetto.dev or chrome://tracing. Layout (process = group of lanes):

* pid 0 "MPE": one span per kernel launch (spawn -> join).
* pid 1 "CPEs": one lane (tid) per CPE: micro-kernel runs, RLC stalls, barriers.
* pid 2 "DMA buses": one lane per bus: the data phase of every request (start-up is shown on
  the issuing CPE's lane as ``dma <kind> start-up``).
* pid 3 "RLC": one lane per mesh row and per mesh column: message batches.
* Flow arrows (``ph`` = ``s``/``f``) from a sending micro-kernel run to the run that receives.

Timestamps are microseconds (Chrome's unit) derived from cycles at ``f_clk``; every event also
carries its cycle numbers in ``args``. Events are recorded as tuples and converted at the end
(:meth:`Trace.to_json`, a JSON-able dictionary; ``taihu-run --trace t.json`` writes it), so a
disabled trace costs one attribute test per event. Perfetto's protobuf format (``--trace
t.pftrace``, far smaller) is written from the same events by :mod:`taihu.backends.sim.pftrace`;
:meth:`Trace.select_kernels` keeps the events of chosen launches (``--trace-kernels``).

Recording order is a contract (the launch memo, ``memo.py``, relies on it too): a launch's CPE,
DMA and RLC events are recorded after the previous launch's MPE span and before its own, which
is recorded at its join.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from operator import itemgetter
from typing import Any

PID_MPE, PID_CPE, PID_DMA, PID_RLC = 0, 1, 2, 3


class TraceOptionError(ValueError):
    """A trace selection (``--trace-kernels``, ``--trace-cpes``) that names nothing in the run."""


class Trace:
    def __init__(self, machine, enabled: bool = False) -> None:
        self.m = machine
        self.enabled = enabled
        self.events: list[tuple] = []

    # -- recording ----------------------------------------------------------------------
    def span(self, lane: Any, pid: int, name: str, t0: int, t1: int, args: dict | None = None) -> None:
        """A complete event. ``lane`` = CPE id (pid 1), ``"MPE"`` (pid 0), etc."""
        if self.enabled:
            if lane == "MPE":
                pid, lane = PID_MPE, 0
            self.events.append(("X", pid, lane, name, t0, t1, args))

    def instant(self, cpe: int, name: str, t: int) -> None:
        if self.enabled:
            self.events.append(("i", PID_CPE, cpe, name, t, t, None))

    def dma(self, req, bus: int) -> None:
        if not self.enabled:
            return
        args = {"cpe": req.cpe, "bytes": req.size, "moved": req.moved, "mem": hex(req.mem),
                "ldm": req.ldm, "issue": req.issue_t, "accept": req.accept_t,
                "start": req.start_t, "end": req.end_t}
        self.events.append(("X", PID_DMA, bus, f"{req.kind} {req.size}B cpe{req.cpe}",
                            req.start_t, req.end_t, args))
        self.events.append(("X", PID_CPE, req.cpe, f"dma {req.kind} start-up", req.accept_t,
                            req.ready_t, None))

    def flow_start(self, batch, cpe: int, t: int) -> None:
        if not self.enabled:
            return
        m = self.m
        lane = f"row {cpe // m.mesh_cols}" if batch.direction == "row" else f"col {cpe % m.mesh_cols}"
        self.events.append(("X", PID_RLC, lane, f"{batch.n} msgs {cpe}->{batch.receiver}",
                            int(batch.put_base + batch.put_rel[0]),
                            int(batch.arrival_base + batch.put_rel[-1]), {"messages": batch.n}))
        self.events.append(("s", PID_CPE, cpe, "rlc", t, t, batch.flow_id))

    def flow(self, batch, cpe: int, t: int) -> None:
        if self.enabled:
            self.events.append(("f", PID_CPE, cpe, "rlc", t, t, batch.flow_id))

    # -- selection ------------------------------------------------------------------------
    def launches(self) -> list[tuple[str, int, int]]:
        """Each joined launch as ``(name, first, end)``: its events are ``events[first:end]``,
        the last one its MPE span (see the module docstring for the recording order)."""
        pids = bytes(map(itemgetter(1), self.events))  # one byte per event: C speed
        out = []
        first = 0
        i = pids.find(PID_MPE)
        while i >= 0:
            out.append((self.events[i][3], first, i + 1))
            first = i + 1
            i = pids.find(PID_MPE, first)
        return out

    def select_kernels(self, patterns: Sequence[str]) -> Trace:
        """A trace of the same machine holding only the events of the launches whose name (the
        report's kernel name: the spawn's ``taihu.name``, else the kernel symbol) matches one of
        ``patterns`` (shell-style globs, ``*``, ``?``, ``[...]``; a plain name matches itself),
        in recording order. ``TraceOptionError`` naming a pattern that matches no launch."""
        launches = self.launches()
        for pat in patterns:
            if not any(fnmatchcase(name, pat) for name, _, _ in launches):
                names = list(dict.fromkeys(name for name, _, _ in launches))
                shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
                raise TraceOptionError(f"--trace-kernels: no launch is named {pat!r} "
                                       f"(launches: {shown or 'none'})")
        out = Trace(self.m, enabled=True)
        for name, first, end in launches:
            if any(fnmatchcase(name, pat) for pat in patterns):
                out.events += self.events[first:end]
        return out

    # -- output ---------------------------------------------------------------------------
    def canonical_events(self) -> list[tuple]:
        """The events in a canonical order: by start cycle, then process, phase, end, lane, name
        and arguments, with the RLC flow ids renumbered 0, 1, ... in the order of their (put
        cycle, sender, get cycle, receiver). Simulation paths record the same events in
        different orders and number the flows as they post them (lockstep cohorts vs per-CPE
        agents); written this way their traces are byte-identical (``taihu-run
        --reference-sim``)."""
        events = self.events
        ends: dict[int, list] = {}
        for ev in events:
            if ev[0] == "s":
                ends.setdefault(ev[6], [(-1, -1), (-1, -1)])[0] = (ev[4], ev[2])
            elif ev[0] == "f":
                ends.setdefault(ev[6], [(-1, -1), (-1, -1)])[1] = (ev[4], ev[2])
        if ends:
            new = {old: k for k, old in enumerate(sorted(ends, key=lambda i: (*ends[i][0], *ends[i][1])))}
            events = [(*ev[:6], new[ev[6]]) if ev[0] == "s" or ev[0] == "f" else ev for ev in events]
        return sorted(events, key=lambda ev: (ev[4], ev[1], ev[0], ev[5], str(ev[2]), ev[3], repr(ev[6])))

    def to_json(self) -> dict:
        """The trace as Chrome trace-event JSON (a dictionary), events in :meth:`canonical_events`
        order."""
        us = 1.0 / (self.m.f_clk_ghz * 1e3)  # microseconds per cycle
        out: list[dict] = []
        names = {PID_MPE: "MPE", PID_CPE: "CPEs", PID_DMA: "DMA buses", PID_RLC: "RLC"}
        for pid, name in names.items():
            out.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}})
        out.append({"ph": "M", "pid": PID_MPE, "tid": 0, "name": "thread_name", "args": {"name": "MPE"}})
        for c in range(self.m.n_cpes):
            out.append({"ph": "M", "pid": PID_CPE, "tid": c, "name": "thread_name",
                        "args": {"name": f"CPE {c} ({c // self.m.mesh_cols},{c % self.m.mesh_cols})"}})
        for b in range(self.m.n_dma_bus):
            out.append({"ph": "M", "pid": PID_DMA, "tid": b, "name": "thread_name",
                        "args": {"name": f"DMA bus {b}"}})
        rlc_lanes: dict[str, int] = {}
        for i in range(self.m.mesh_rows):
            rlc_lanes[f"row {i}"] = i
        for j in range(self.m.mesh_cols):
            rlc_lanes[f"col {j}"] = self.m.mesh_rows + j
        for lane, tid in rlc_lanes.items():
            out.append({"ph": "M", "pid": PID_RLC, "tid": tid, "name": "thread_name",
                        "args": {"name": f"RLC {lane}"}})
        for ev in self.canonical_events():
            ph, pid, lane, name, t0, t1, extra = ev
            tid = rlc_lanes[lane] if pid == PID_RLC else lane
            e: dict[str, Any] = {"ph": ph, "pid": pid, "tid": tid, "name": name,
                                 "ts": round(t0 * us, 6)}
            if ph == "X":
                e["dur"] = round((t1 - t0) * us, 6)
                a = {"cycle": t0, "cycles": t1 - t0}
                if extra:
                    a.update(extra)
                e["args"] = a
            elif ph in ("s", "f"):
                e["id"] = extra
                e["cat"] = "rlc"
                if ph == "f":
                    e["bp"] = "e"
            else:
                e["s"] = "t"
            out.append(e)
        return {"traceEvents": out, "displayTimeUnit": "ns",
                "otherData": {"machine": self.m.source, "clock_ghz": self.m.f_clk_ghz}}
