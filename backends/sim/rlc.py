"""Register-level communication (RLC) network of the 8x8 mesh (spec sw26010-model.md §5;
004 L462, L496, L538-539, L672).

Cycle rules (spec §5 "cycle-mode rules"):

1. Every CPE has a send buffer (``rlc_send_depth`` = 4) and two receive FIFOs, row and column
   (``rlc_recv_depth`` = 4 each). ``getr`` pops the row FIFO, ``getc`` the column FIFO.
2. ``putr(v, dst)``: ``dst`` 0..7 = target column in the sender's row, 8 = broadcast to the other
   7 CPEs of the row; ``putc`` likewise with row indices. A message to oneself is an error.
3. A message issued at cycle t is visible in the target FIFO at ``t + rlc_latency`` (11).
4. Messages from one sender to one receiver arrive in order; batches of several senders into one
   FIFO are ordered by posting (event) time, ties by ascending sender id.
5. A GET issued when the FIFO head is visible writes its destination with latency 1; otherwise
   the CPE stalls (the micro-kernel runner shifts the body's start, see ``microkernel.py``).
6. Back-pressure: a link holds at most ``rlc_send_depth + rlc_recv_depth`` unconsumed messages;
   put number ``j`` cannot issue before get number ``j - depth`` of the receiver has issued.

Messages travel in *batches*: one micro-kernel run posts, per target FIFO, all its messages
(arrival cycles + 4-lane payloads) at once; a receiving run consumes a prefix of its FIFO.
"""

from __future__ import annotations

import numpy as np

from taihu.backends.sim.memory import SimError


class RLCError(SimError):
    """An illegal register communication (e.g. a message to oneself or outside row/column)."""


class Batch:
    """Messages of one sender run to one receiver FIFO.

    Put cycles are ``put_base + put_rel`` (``put_rel``: the body's relative issue cycles, shared
    by every run of the same micro-kernel), arrival cycles ``arrival_base + put_rel`` with
    ``arrival_base = put_base + rlc_latency``. ``data``: ``(n, 4)`` payloads (filled when the
    sender's numerics run). GET issue cycles are recorded as ``got_base + got_rel`` when one run
    consumed the whole batch, else element-wise in ``got``. ``consumed``: messages taken.
    """

    __slots__ = ("sender", "receiver", "direction", "put_base", "put_rel", "arrival_base", "data",
                 "n", "consumed", "got_base", "got_rel", "got", "flow_id", "task", "src", "bp")

    def __init__(self, sender: int, receiver: int, direction: str, put_base: int,
                 put_rel: np.ndarray, latency: int, data: np.ndarray | None = None) -> None:
        self.sender = sender
        self.receiver = receiver
        self.direction = direction
        self.put_base = put_base
        self.put_rel = put_rel
        self.arrival_base = put_base + latency
        self.data = data
        self.n = int(put_rel.shape[0])
        self.consumed = 0
        self.got_base = 0  # (read only when got_rel is set)
        self.got_rel: np.ndarray | None = None
        self.got: np.ndarray | None = None
        self.flow_id = 0
        self.task = None  # the queued run whose numerics fill ``data`` (engine)
        self.src = None  # (packed (C, n, 4) array, row) that ``data`` is a row of
        self.bp = None  # lockstep: the sender lane waiting for this batch's consumption

    @property
    def put(self) -> np.ndarray:
        """(n,) absolute put cycles."""
        return self.put_base + self.put_rel

    @property
    def arrival(self) -> np.ndarray:
        """(n,) absolute cycles at which the messages are visible in the FIFO."""
        return self.arrival_base + self.put_rel

    def got_cycles(self) -> np.ndarray | None:
        """(n,) GET issue cycles (valid for consumed messages; None before the first GET)."""
        if self.got_rel is not None:
            return self.got_base + self.got_rel
        return self.got


class Fifo:
    """A receive FIFO (row or column) of one CPE, holding posted batches in order."""

    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.head = 0  # index of the first batch with unconsumed messages
        self.waiters: list = []
        self.count = 0  # posted and not yet consumed messages

    def available(self) -> int:
        """Messages posted and not yet consumed."""
        return self.count

    def take(self, n: int) -> list[tuple[Batch, int, int]]:
        """Consume the next ``n`` messages: a list of (batch, lo, hi) slices in FIFO order."""
        out: list[tuple[Batch, int, int]] = []
        need = n
        self.count -= n
        while need:
            b = self.batches[self.head]
            k = min(need, b.n - b.consumed)
            out.append((b, b.consumed, b.consumed + k))
            b.consumed += k
            need -= k
            if b.consumed == b.n:
                self.head += 1
        if self.head > 64:  # drop fully consumed history
            del self.batches[: self.head]
            self.head = 0
        return out


class RLCNetwork:
    """Row/column FIFOs of all CPEs and target resolution."""

    def __init__(self, mesh_rows: int, mesh_cols: int, send_depth: int, recv_depth: int,
                 latency: int) -> None:
        self.rows = mesh_rows
        self.cols = mesh_cols
        self.depth = send_depth + recv_depth
        self.latency = latency
        n = mesh_rows * mesh_cols
        self.fifo = {"row": [Fifo() for _ in range(n)], "col": [Fifo() for _ in range(n)]}
        self.messages = 0
        self.next_flow = 1

    def targets(self, cpe: int, direction: str, dst: int) -> list[int]:
        """CPE ids addressed by a put from ``cpe`` along ``direction`` with index ``dst``."""
        r, c = divmod(cpe, self.cols)
        if direction == "row":
            if dst == 8:
                return [r * self.cols + j for j in range(self.cols) if j != c]
            if not 0 <= dst < self.cols:
                raise RLCError(f"CPE {cpe} ({r},{c}): putr target column {dst} is not 0..7 or 8")
            if dst == c:
                raise RLCError(f"CPE {cpe} ({r},{c}): putr to its own column {dst}")
            return [r * self.cols + dst]
        if dst == 8:
            return [i * self.cols + c for i in range(self.rows) if i != r]
        if not 0 <= dst < self.rows:
            raise RLCError(f"CPE {cpe} ({r},{c}): putc target row {dst} is not 0..7 or 8")
        if dst == r:
            raise RLCError(f"CPE {cpe} ({r},{c}): putc to its own row {dst}")
        return [dst * self.cols + c]

    def post(self, batch: Batch) -> None:
        f = self.fifo[batch.direction][batch.receiver]
        f.batches.append(batch)
        f.count += batch.n
