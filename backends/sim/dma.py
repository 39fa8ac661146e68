"""DMA engine of one core group (spec sw26010-model.md §4.2-4.4; 004 L481-489, L573, L597).

Rules implemented exactly (spec §4.3):

1. Issue: a get/put issues on P1 in 1 cycle and appends a request to the CPE's channel buffer; a
   CPE whose buffer already holds ``chan_buf_depth`` (3) waiting requests stalls.
2. Acceptance: at most ``dma_cpe_inflight`` (1) accepted request per CPE; the buffer head is
   accepted when the previous request completes.
3. Start-up: an accepted request pays ``dma_latency`` (200) cycles; start-ups of different CPEs
   overlap; a strided descriptor pays it once (eq 3-2).
4. Data phase: CPE ``c`` uses bus ``cid(c) // 2``; each bus serves one data phase at a time,
   round-robin over its 16 CPEs; duration ``ceil(moved · f_clk / dma_bus_bw)`` cycles
   (× ``dma_put_bw_factor`` for puts), ``moved`` by §4.4 (128-B transactions, waste).
5. Completion: the reply word named by the request is incremented at the end of the data phase
   (+ ``dma_reply_latency``).
6. Wait: ``dma_wait(reply, n)`` stalls until the counter >= n (implemented by the engine).
7. Broadcast mode: one request of the issuing CPE; the data land at the same LDM address of every
   CPE of the rows selected by the 8-bit ``mask``.
8. Bounds: every transfer is checked against the 64 KB LDM, the LDM buffer (when known) and the
   main-memory allocation; violations raise :class:`DMAError`.

Data movement is real: a get reads main memory and writes the LDM at the end of its data phase;
a put snapshots the LDM at issue and writes main memory at the end of its data phase.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from taihu.backends.sim.memory import MemoryBoundsError, SimError
from taihu.target.dma import block_starts, moved_strided

if TYPE_CHECKING:  # pragma: no cover
    from taihu.backends.sim.engine import Engine


class DMAError(SimError):
    """An invalid DMA descriptor or an out-of-bounds transfer."""


def check_descriptor(size: int, bsize: int, stride: int) -> None:
    """Raise :class:`DMAError` unless size > 0, bsize divides size and stride >= 0."""
    if size <= 0:
        raise DMAError(f"DMA size must be > 0, got {size}")
    if bsize < 0 or stride < 0:
        raise DMAError(f"DMA bsize/stride must be >= 0, got bsize={bsize} stride={stride}")
    if bsize == 0 and stride != 0:
        raise DMAError(f"DMA stride {stride} given without a block size")
    if bsize and size % bsize:
        raise DMAError(f"DMA size {size} is not a multiple of the block size {bsize}")


# ---- requests ------------------------------------------------------------------------------
@dataclass(eq=False)
class DMARequest:
    """One DMA descriptor issued by a CPE. Times are absolute cycles."""

    cpe: int
    kind: str  # "get" | "put"
    mem: int  # main-memory byte address
    ldm: int  # LDM byte address
    size: int  # total bytes
    bsize: int = 0  # bytes per block (0 = contiguous)
    stride: int = 0  # gap bytes between blocks
    reply: int = 0  # reply-word slot of the issuing CPE
    mode: str = "pe"  # "pe" | "bcast"
    mask: int = 0xFF  # bcast: selected mesh rows
    ldm_limit: int | None = None  # end of the LDM buffer (rule 8), when known
    moved: int = 0
    issue_t: int = 0
    accept_t: int = -1
    ready_t: int = -1
    start_t: int = -1
    end_t: int = -1
    snapshot: np.ndarray | None = field(default=None, repr=False)


@dataclass
class _Bus:
    ready: list[DMARequest] = field(default_factory=list)
    serving: DMARequest | None = None
    last_local: int = -1  # round-robin pointer (local index of the last served CPE)
    arb_pending: bool = False
    busy_cycles: int = 0


class DMAEngine:
    """The CG's DMA engine: channel buffers, 4 buses, round-robin arbitration, reply words.

    ``on_complete(req)`` (engine callback) is called at the reply time of every request.
    """

    PH_COMPLETE, PH_READY, PH_ARB = 0, 1, 2

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        m = engine.machine
        self.m = m
        n = m.n_cpes
        self.chan: list[deque[DMARequest]] = [deque() for _ in range(n)]
        self.inflight: list[int] = [0] * n
        self.buses = [_Bus() for _ in range(m.n_dma_bus)]
        self.bus_of = [m.dma_bus_of(c) for c in range(n)]
        # local index of each CPE within its bus (for round-robin)
        self.local_of = [0] * n
        counts = [0] * m.n_dma_bus
        for c in range(n):
            self.local_of[c] = counts[self.bus_of[c]]
            counts[self.bus_of[c]] += 1
        self.bus_size = counts
        self.chan_waiters: list[list[Callable[[], None]]] = [[] for _ in range(n)]
        #: (size, bsize, stride, mem mod mem_txn_bytes) -> (extent, moved bytes) (validate)
        self._shape_cache: dict[tuple[int, int, int, int], tuple[int, int]] = {}
        self.pending = 0  # requests issued and not completed

    # -- validation ---------------------------------------------------------------------
    def validate(self, req: DMARequest) -> None:
        """Rule 8 and descriptor consistency; fills ``req.moved``."""
        check_descriptor(req.size, req.bsize, req.stride)
        if req.mode not in ("pe", "bcast"):
            raise DMAError(f"CPE {req.cpe}: DMA mode '{req.mode}' is not supported (pe, bcast)")
        m = self.m
        if req.ldm < 0 or req.ldm + req.size > m.ldm_bytes:
            raise DMAError(
                f"CPE {req.cpe}: DMA {req.kind} of {req.size} B at LDM {req.ldm} exceeds the "
                f"{m.ldm_bytes}-byte LDM"
            )
        if req.ldm_limit is not None and req.ldm + req.size > req.ldm_limit:
            raise DMAError(
                f"CPE {req.cpe}: DMA {req.kind} of {req.size} B at LDM {req.ldm} overruns its "
                f"LDM buffer (ends at {req.ldm_limit})"
            )
        # extent and moved bytes depend on the address only modulo the transaction size
        key = (req.size, req.bsize, req.stride, req.mem % m.mem_txn_bytes)
        hit = self._shape_cache.get(key)
        if hit is None:
            starts = block_starts(req.mem, req.size, req.bsize, req.stride)
            hit = (int(starts[-1]) - req.mem + (req.bsize or req.size),
                   moved_strided(req.mem, req.size, req.bsize, req.stride, m.mem_txn_bytes))
            self._shape_cache[key] = hit
        try:
            self.engine.memory.check_range(req.mem, req.mem + hit[0])
        except MemoryBoundsError as e:
            raise DMAError(f"CPE {req.cpe}: DMA {req.kind}: {e}") from None
        req.moved = hit[1]

    # -- rule 1/2 -----------------------------------------------------------------------
    def channel_full(self, cpe: int) -> bool:
        """True if ``cpe``'s channel buffer holds ``chan_buf_depth`` waiting requests (rule 1)."""
        return len(self.chan[cpe]) >= self.m.chan_buf_depth

    def issue(self, req: DMARequest, t: int) -> None:
        """Append ``req`` (validated) to its CPE's channel buffer at cycle ``t``."""
        req.issue_t = t
        if req.kind == "put":
            self.engine.queue_data(req, True)  # the LDM bytes as of issue (deferred)
        self.pending += 1
        c = req.cpe
        if self.inflight[c] < self.m.dma_cpe_inflight and not self.chan[c]:
            self._accept(req, t)
        else:
            self.chan[c].append(req)

    def _accept(self, req: DMARequest, t: int) -> None:
        self.inflight[req.cpe] += 1
        req.accept_t = t
        req.ready_t = t + self.m.dma_latency
        self.engine.schedule(req.ready_t, self.PH_READY, req.cpe, lambda: self._ready(req))

    # -- rule 3/4 -----------------------------------------------------------------------
    def _ready(self, req: DMARequest) -> None:
        b = self.bus_of[req.cpe]
        bus = self.buses[b]
        bus.ready.append(req)
        self._request_arb(b)

    def _request_arb(self, b: int) -> None:
        bus = self.buses[b]
        if bus.serving is None and bus.ready and not bus.arb_pending:
            bus.arb_pending = True
            self.engine.schedule(self.engine.now, self.PH_ARB, b, lambda: self._arbitrate(b))

    def _arbitrate(self, b: int) -> None:
        bus = self.buses[b]
        bus.arb_pending = False
        if bus.serving is not None or not bus.ready:
            return
        n = self.bus_size[b]
        last = bus.last_local
        best = min(bus.ready, key=lambda r: ((self.local_of[r.cpe] - last - 1) % n, r.issue_t))
        bus.ready.remove(best)
        bus.serving = best
        bus.last_local = self.local_of[best.cpe]
        now = self.engine.now
        best.start_t = now
        dur = self.m.dma_data_cycles(best.moved, put=best.kind == "put")
        best.end_t = now + dur
        bus.busy_cycles += dur
        self.engine.schedule(best.end_t, self.PH_COMPLETE, best.cpe, lambda: self._complete(best))

    # -- rule 5 -------------------------------------------------------------------------
    def _complete(self, req: DMARequest) -> None:
        b = self.bus_of[req.cpe]
        bus = self.buses[b]
        bus.serving = None
        self.engine.queue_data(req, False)  # the bytes land now (deferred)
        self._request_arb(b)
        c = req.cpe
        self.inflight[c] -= 1
        if self.chan[c]:
            self._accept(self.chan[c].popleft(), self.engine.now)
            waiters, self.chan_waiters[c] = self.chan_waiters[c], []
            for w in waiters:
                w()
        lat = self.m.dma_reply_latency
        if lat:
            self.engine.schedule(self.engine.now + lat, self.PH_COMPLETE, c, lambda: self._reply(req))
        else:
            self._reply(req)

    def _reply(self, req: DMARequest) -> None:
        self.pending -= 1
        self.engine.on_dma_complete(req)

    def snapshot(self, req: DMARequest) -> None:
        """A put's LDM bytes at issue (run by the engine's data queue in order)."""
        req.snapshot = self.engine.ldm.data[req.cpe, req.ldm : req.ldm + req.size].copy()

    def targets(self, req: DMARequest) -> list[int]:
        """CPEs whose LDM a request reads (put) or writes (get; all selected rows for bcast)."""
        return self._targets(req) if req.kind == "get" else [req.cpe]

    def move_data(self, req: DMARequest) -> None:
        """A request's bytes: main memory -> LDM(s) (get) or snapshot -> main memory (put), at
        its completion (run by the engine's data queue in order)."""
        mem = self.engine.memory
        ldm = self.engine.ldm.data
        size, bsize = req.size, req.bsize
        if bsize == 0 or bsize == size:
            if req.kind == "get":
                data = mem.read(req.mem, size)
                for c in self._targets(req):
                    ldm[c, req.ldm : req.ldm + size] = data
            else:
                assert req.snapshot is not None  # a put's snapshot runs first (data queue order)
                mem.write(req.mem, req.snapshot)
            return
        starts = block_starts(req.mem, size, bsize, req.stride)
        index = (starts[:, None] + np.arange(bsize, dtype=np.int64)[None, :]).reshape(-1)
        if req.kind == "get":
            data = mem.gather(index)
            for c in self._targets(req):
                ldm[c, req.ldm : req.ldm + size] = data
        else:
            assert req.snapshot is not None  # a put's snapshot runs first (data queue order)
            mem.scatter(index, req.snapshot)

    def _targets(self, req: DMARequest) -> list[int]:
        if req.mode == "bcast":
            cols = self.m.mesh_cols
            return [c for c in range(self.m.n_cpes) if (req.mask >> (c // cols)) & 1]
        return [req.cpe]
