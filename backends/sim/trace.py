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

The recording (:attr:`Trace.log`) keeps the lockstep path's bulk events compact, one entry for
what a cohort of CPEs does at once instead of a tuple per CPE: ``"C"`` the micro-kernel runs
of a cohort (:meth:`Trace.runs`, with their RLC stalls), ``"L"`` the message batches one run
posts (:meth:`Trace.posts`: RLC span and flow start per link), ``"F"`` gets of whole links
(:meth:`Trace.gets`: flow ends); their columns are numpy arrays, shared by the launch memo's
copies (which add a time and flow-id shift instead). :attr:`Trace.events` expands them into the per-CPE events
the per-CPE path records, in the same order (:func:`expand`); the JSON trace, the per-CPE
lanes of ``--trace-cpes`` and the tests read that view, the protobuf writer's cohort lanes read
the compact entries directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from operator import itemgetter
from typing import Any

import numpy as np

PID_MPE, PID_CPE, PID_DMA, PID_RLC = 0, 1, 2, 3


class TraceOptionError(ValueError):
    """A trace selection (``--trace-kernels``, ``--trace-cpes``) that names nothing in the run."""


class Trace:
    def __init__(self, machine, enabled: bool = False) -> None:
        self.m = machine
        self.enabled = enabled
        #: the recording: event tuples and compact entries (module docstring), in order
        self.log: list[tuple] = []
        self._rlc_lane = rlc_lanes(machine)

    @property
    def events(self) -> list[tuple]:
        """The recorded events, a tuple ``(ph, pid, lane, name, t0, t1, extra)`` each, per
        CPE: :attr:`log` with its compact entries expanded (:func:`expand`); a new list."""
        return expand(self.log, self._rlc_lane)

    # -- recording ----------------------------------------------------------------------
    def span(self, lane: Any, pid: int, name: str, t0: int, t1: int, args: dict | None = None) -> None:
        """A complete event. ``lane`` = CPE id (pid 1), ``"MPE"`` (pid 0), etc."""
        if self.enabled:
            if lane == "MPE":
                pid, lane = PID_MPE, 0
            self.log.append(("X", pid, lane, name, t0, t1, args))

    def instant(self, cpe: int, name: str, t: int) -> None:
        if self.enabled:
            self.log.append(("i", PID_CPE, cpe, name, t, t, None))

    def dma(self, req, bus: int) -> None:
        if not self.enabled:
            return
        args = {"cpe": req.cpe, "bytes": req.size, "moved": req.moved, "mem": hex(req.mem),
                "ldm": req.ldm, "issue": req.issue_t, "accept": req.accept_t,
                "start": req.start_t, "end": req.end_t}
        self.log.append(("X", PID_DMA, bus, f"{req.kind} {req.size}B cpe{req.cpe}",
                         req.start_t, req.end_t, args))
        self.log.append(("X", PID_CPE, req.cpe, f"dma {req.kind} start-up", req.accept_t,
                         req.ready_t, None))

    def flow_start(self, batch, cpe: int, t: int) -> None:
        if not self.enabled:
            return
        self.log.append(("X", PID_RLC, self._rlc_lane[batch.direction][cpe],
                         f"{batch.n} msgs {cpe}->{batch.receiver}",
                         int(batch.put_base + batch.put_rel[0]),
                         int(batch.arrival_base + batch.put_rel[-1]), {"messages": batch.n}))
        self.log.append(("s", PID_CPE, cpe, "rlc", t, t, batch.flow_id))

    def flow(self, batch, cpe: int, t: int) -> None:
        if self.enabled:
            self.log.append(("f", PID_CPE, cpe, "rlc", t, t, batch.flow_id))

    def runs(self, lanes: np.ndarray, name: str, trip: int, t0: np.ndarray, start: np.ndarray,
             end: np.ndarray) -> None:
        """Runs of micro-kernel ``name`` (``trip`` iterations) by the CPEs ``lanes``, one
        ``"C"`` entry: per lane ``i`` an RLC stall ``t0[i] -> start[i]`` when ``start[i] >
        t0[i]``, then the run ``start[i] -> end[i]`` (int arrays of one length, cycles; copied)."""
        if self.enabled and len(lanes):
            cols = np.array((lanes, t0, start, end), dtype=np.int64)
            _, _, a, b = cols[:, 0].tolist()
            self.log.append(("C", PID_CPE, None, name, a, b, (cols, trip, 0)))

    def posts(self, links, count: int) -> None:
        """The message batches of links ``0..count-1`` of a lockstep ``LinkSet`` posted by one
        run (its ``direction``, ``n`` messages per link, ``sender``, ``receiver``, ``put_base``
        and ``arrival_base`` arrays, ``put_rel`` offsets, flow ids from ``flow0``), one ``"L"``
        entry: per link the RLC span and the flow start of :meth:`flow_start`."""
        if self.enabled and count:
            cols = np.array((links.sender[:count], links.receiver[:count], links.put_base[:count],
                             links.arrival_base[:count]), dtype=np.int64)
            p0, pl = int(links.put_rel[0]), int(links.put_rel[-1])
            _, _, a, b = cols[:, 0].tolist()
            self.log.append(("L", PID_RLC, links.direction, None, a + p0, b + pl,
                             (cols, int(links.n), p0, pl, int(links.flow0), 0)))

    def gets(self, cpes: np.ndarray, t: np.ndarray, flow_ids: np.ndarray) -> None:
        """Gets of whole links: CPE ``cpes[i]`` took the batch of flow ``flow_ids[i]`` at cycle
        ``t[i]`` (int arrays of one length), one ``"F"`` entry (:meth:`flow` per CPE)."""
        if self.enabled and len(cpes):
            cols = np.array((cpes, t, flow_ids), dtype=np.int64)
            a = int(cols[1, 0])
            self.log.append(("F", PID_CPE, None, "rlc", a, a, (cols, 0, 0)))

    # -- selection ------------------------------------------------------------------------
    def launches(self) -> list[tuple[str, int, int]]:
        """Each joined launch as ``(name, first, end)``: its events are ``events[first:end]``,
        the last one its MPE span (see the module docstring for the recording order)."""
        return _launches(self.events)

    def select_kernels(self, patterns: Sequence[str]) -> Trace:
        """A trace of the same machine holding only the events of the launches whose name (the
        report's kernel name: the spawn's ``taihu.name``, else the kernel symbol) matches one of
        ``patterns`` (shell-style globs, ``*``, ``?``, ``[...]``; a plain name matches itself),
        in recording order. ``TraceOptionError`` naming a pattern that matches no launch."""
        launches = _launches(self.log)
        for pat in patterns:
            if not any(fnmatchcase(name, pat) for name, _, _ in launches):
                names = list(dict.fromkeys(name for name, _, _ in launches))
                shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
                raise TraceOptionError(f"--trace-kernels: no launch is named {pat!r} "
                                       f"(launches: {shown or 'none'})")
        out = Trace(self.m, enabled=True)
        for name, first, end in launches:
            if any(fnmatchcase(name, pat) for pat in patterns):
                out.log += self.log[first:end]
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


def rlc_lanes(machine) -> dict[str, list[str]]:
    """The RLC lane of a batch by its direction and sender CPE: ``row I`` / ``col J``."""
    cols = machine.mesh_cols
    return {"row": [f"row {c // cols}" for c in range(machine.n_cpes)],
            "col": [f"col {c % cols}" for c in range(machine.n_cpes)]}


def _launches(entries: list[tuple]) -> list[tuple[str, int, int]]:
    """(name, first, end) of each MPE span in ``entries`` (:meth:`Trace.launches`)."""
    pids = bytes(map(itemgetter(1), entries))  # one byte per entry: C speed
    out = []
    first = 0
    i = pids.find(PID_MPE)
    while i >= 0:
        out.append((entries[i][3], first, i + 1))
        first = i + 1
        i = pids.find(PID_MPE, first)
    return out


#: ph of the compact entries of :attr:`Trace.log`
COMPACT = "CLF"


def expand(log: list[tuple], lanes: dict[str, list[str]]) -> list[tuple]:
    """The per-CPE events of a :attr:`Trace.log` (``lanes``: :func:`rlc_lanes`): each compact
    entry replaced by the tuples the per-CPE path records for it, in its order (a run's stall
    before the run, a batch's RLC span before its flow start); a new list."""
    phs = "".join(map(itemgetter(0), log))
    out: list[tuple] = []
    lo = 0
    for i, ph in enumerate(phs):
        if ph not in COMPACT:
            continue
        out += log[lo:i]
        lo = i + 1
        e = log[i]
        if ph == "C":
            cols, trip, dt = e[6]
            name = e[3]
            args = {"trip": trip}
            if dt:
                cols = cols + np.array([[0], [dt], [dt], [dt]])
            for c, t0, t1, t2 in zip(*cols.tolist()):
                if t1 > t0:
                    out.append(("X", PID_CPE, c, "rlc stall", t0, t1, None))
                out.append(("X", PID_CPE, c, name, t1, t2, args))
        elif ph == "L":
            cols, n, p0, pl, flow0, dt = e[6]
            p0, pl = p0 + dt, pl + dt
            lane = lanes[e[2]]
            args = {"messages": n}
            for k, (s, r, p, a) in enumerate(zip(*cols.tolist())):
                out.append(("X", PID_RLC, lane[s], f"{n} msgs {s}->{r}", p + p0, a + pl, args))
                out.append(("s", PID_CPE, s, "rlc", p + dt, p + dt, flow0 + k))
        else:
            cols, dt, dflow = e[6]
            out += [("f", PID_CPE, c, "rlc", t + dt, t + dt, f + dflow) for c, t, f in zip(*cols.tolist())]
    out += log[lo:]
    return out
