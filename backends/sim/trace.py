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
(:meth:`Trace.to_json`, a JSON-able dictionary; ``taihu-run --trace`` writes it), so a disabled
trace costs one attribute test per event.
"""

from __future__ import annotations

from typing import Any

PID_MPE, PID_CPE, PID_DMA, PID_RLC = 0, 1, 2, 3


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

    # -- output ---------------------------------------------------------------------------
    def to_json(self) -> dict:
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
        for ev in self.events:
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
