"""Perfetto's native protobuf trace of a simulation (``taihu-run --trace t.pftrace``).

Written from the events of :class:`~taihu.backends.sim.trace.Trace` with the protobuf classes
that the ``perfetto`` package publishes (``perfetto.protos.perfetto.trace.perfetto_trace_pb2``):
one ``Trace`` of ``TracePacket`` s on one packet sequence. The first packet holds the interned
event names, categories, argument names and argument strings; the track descriptors follow,
then ``TrackEvent`` slices (``TYPE_SLICE_BEGIN``/``TYPE_SLICE_END`` pairs, ``TYPE_INSTANT`` for
a slice shorter than the nanosecond) in time order. Open it in https://ui.perfetto.dev.

Tracks (the group tracks hold one child track per lane):

* ``MPE``: one slice per kernel launch (spawn -> join), named by the launch (the report's
  kernel name); category ``launch``, arguments ``cycle`` (start) and ``cycles`` (the report's).
* ``CPEs``: a lane per CPE: micro-kernel runs (category ``run``, argument ``trip``), RLC stalls
  (``stall``), barriers (``barrier``), the end of the CPE's program (``end``, an instant) and
  the start-up of the DMA requests it issues (``dma``, on a second row of the lane: start-ups
  overlap the runs). By default the CPEs that run in lockstep share a lane: events identical on
  several CPEs (same name, same cycles, same arguments) are drawn once, on the lane of the
  first of them, with the argument ``cpes`` listing them (``0-63``); a lane then shows its
  CPE's events that no lower CPE shares, so a kernel whose 64 CPEs run in lockstep draws one
  lane. :class:`CpeLanes` (``--trace-cpes``) gives chosen CPEs, or all, a lane of their own
  (with their DMA requests, RLC batches and flow arrows: the JSON trace's detail).
* ``DMA buses``: a lane per bus, the data phases of the requests. A request issued by a CPE
  on its own lane is drawn alone (``get 4096B cpe3``: kind, size, issuing CPE; arguments
  ``mem`` (main-memory address), ``ldm`` (LDM address), ``moved`` when the transactions moved
  more bytes than asked); the others are drawn as busy periods, the requests that overlap or
  follow each other without a gap (``37 requests``, arguments ``requests``, ``bytes``; a
  period of one request is drawn as that request).
* ``RLC``: a lane per mesh row and column, the message batches (``N msgs S->R``, argument
  ``messages``, from the first put to the last arrival): alone when the sender is on its own
  lane, else busy periods (``12 batches``, arguments ``batches``, ``messages``).
* Flows (arrows) between CPEs on lanes of their own: from the run that puts a message batch to
  the run that gets it (``flow_ids`` on the sender's slice, ``terminating_flow_ids`` on the
  receiver's; one arrow per pair of slices). The CPEs in cohorts have none: an arrow per link
  is millions on a network; give the CPEs of interest their own lane.

Slices that overlap on one lane go to rows of the lane: tracks of the same name and parent,
which the UI merges into one lane. Times are nanoseconds at ``f_clk`` (cycle ``c`` at
``round(c / f_clk_ghz)`` ns, as the JSON trace's microseconds); the CPE and DMA slices also
carry their exact length in cycles (argument ``cycles``). Compared with the JSON trace, the DMA
data phases leave out the request's issue and accept cycles (the start-up on the CPE's lane
shows accept -> ready), the RLC batches their cycle numbers.

The conversion reads the recording (:attr:`Trace.log`): without ``--trace-cpes`` the lockstep
path's compact entries (a cohort's runs, the links one run posts) are read as numpy columns, an
entry whose CPEs run (or stall) at the same cycles as one unit, the other events a few times at
C speed (``operator.itemgetter`` maps into numpy arrays); with ``--trace-cpes`` the per-CPE
events (:attr:`Trace.events`). Both group and order with numpy and give the same slices; then
Python-level work per written slice (the packets, most of the time). The cohorts and busy
periods keep the slices few (ResNet-50 at batch 1: 15.4 M events in 1.5 M recorded entries,
0.6 M slices, 30.5 MB).
"""

from __future__ import annotations

import gc
import heapq
import operator
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import compress, count
from typing import BinaryIO

import numpy as np
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from taihu.backends.sim.trace import PID_CPE, PID_DMA, PID_MPE, PID_RLC, Trace, TraceOptionError

_SEQ = 1  # the one trusted packet sequence
_BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN
_END = pb.TrackEvent.TYPE_SLICE_END
_INSTANT = pb.TrackEvent.TYPE_INSTANT
_CHUNK = 1 << 16  # packets serialized per write

# argument value kinds of the per-slice argument tuples (name iid, kind, value)
_INT, _STR, _PTR = 0, 1, 2

#: slices of one kind being assembled: lane, start, end (cycles), names, argument tuples
_Part = tuple[np.ndarray, np.ndarray, np.ndarray, list[str], list[tuple]]

_CPE_LIST = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


@dataclass(frozen=True)
class CpeLanes:
    """Which CPEs get a lane of their own (``--trace-cpes``); the others share a lane per
    cohort in lockstep. ``every``: all CPEs (and each RLC message batch is drawn)."""

    every: bool = False
    cpes: frozenset[int] = frozenset()

    @classmethod
    def parse(cls, text: str) -> CpeLanes:
        """``all``, ``cohorts`` (the default) or a list of CPE ids and ranges, ``0,8-15``;
        ``TraceOptionError`` on anything else."""
        t = text.strip().lower()
        if t == "all":
            return cls(every=True)
        if t == "cohorts":
            return cls()
        cpes: set[int] = set()
        for item in text.split(","):
            mt = _CPE_LIST.match(item)
            if mt is None or (mt.group(2) is not None and int(mt.group(2)) < int(mt.group(1))):
                raise TraceOptionError(f"--trace-cpes {text!r}: expected 'all', 'cohorts' or CPE "
                                       f"ids and ranges such as 0,8-15 (at {item.strip()!r})")
            lo = int(mt.group(1))
            cpes.update(range(lo, int(mt.group(2) or lo) + 1))
        return cls(cpes=frozenset(cpes))

    def own(self, n_cpes: int) -> np.ndarray:
        """Boolean mask over the ``n_cpes`` CPEs; ``TraceOptionError`` for a CPE the machine
        does not have."""
        if self.every:
            return np.ones(n_cpes, dtype=bool)
        bad = sorted(c for c in self.cpes if c >= n_cpes)
        if bad:
            raise TraceOptionError(f"--trace-cpes: CPE {bad[0]} does not exist (the machine has "
                                   f"{n_cpes} CPEs, 0-{n_cpes - 1})")
        own = np.zeros(n_cpes, dtype=bool)
        own[sorted(self.cpes)] = True
        return own


def cpe_list(mask: int) -> str:
    """CPE ids of a bit mask as ranges: ``0-3,8,10-11``."""
    out = []
    c = 0
    while mask:
        if mask & 1:
            lo = c
            while mask & 2:
                mask >>= 1
                c += 1
            out.append(str(lo) if lo == c else f"{lo}-{c}")
        mask >>= 1
        c += 1
    return ",".join(out)


def _greedy_rows(t0: list[int], t1: list[int]) -> list[int]:
    """Rows for slices sorted by start so that no two slices of a row overlap (a slice may
    start where the previous one ends): interval partitioning, reusing the row that frees
    first."""
    heap: list[tuple[int, int]] = []
    out = []
    for a, b in zip(t0, t1):
        if heap and heap[0][0] <= a:
            r = heap[0][1]
            heapq.heapreplace(heap, (b, r))
        else:
            r = len(heap)
            heapq.heappush(heap, (b, r))
        out.append(r)
    return out


def lane_rows(lane: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Row of each slice within its lane (``lane``, ``t0``, ``t1``: int arrays of one length,
    cycles) such that the slices of one (lane, row) do not overlap; 0 for every slice of a lane
    without overlaps (checked with numpy; the greedy partition runs on the other lanes only)."""
    n = len(lane)
    rows = np.zeros(n, dtype=np.int64)
    if n < 2:
        return rows
    order = np.lexsort((t1, t0, lane))
    ln, a, b = lane[order], t0[order], t1[order]
    big = int(max(a.max(), b.max())) + 1
    lo = ln - ln.min()
    reach = np.maximum.accumulate(lo * big + b)  # per lane: the latest end so far (lanes sorted)
    clash = (ln[1:] == ln[:-1]) & (lo[1:] * big + a[1:] < reach[:-1])
    if clash.any():
        sorted_rows = np.zeros(n, dtype=np.int64)
        for v in np.unique(ln[1:][clash]).tolist():
            sel = np.flatnonzero(ln == v)
            sorted_rows[sel] = _greedy_rows(a[sel].tolist(), b[sel].tolist())
        rows[order] = sorted_rows
    return rows


def _busy(lane: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> tuple[np.ndarray, ...]:
    """Busy periods: per lane, the slices that overlap or follow each other without a gap,
    merged. Returns ``order`` (the slices sorted by lane and start), ``starts`` (the first
    of each period in that order) and the periods' lane, start and end."""
    n = len(lane)
    order = np.lexsort((t0, lane))
    ln, a, b = lane[order], t0[order], t1[order]
    base = ln - ln.min()
    big = int(b.max()) + 1
    reach = np.maximum.accumulate(base * big + b)  # per lane (sorted): the latest end so far
    new = np.ones(n, dtype=bool)
    new[1:] = (ln[1:] != ln[:-1]) | (base[1:] * big + a[1:] > reach[:-1])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n) - 1
    return order, starts, ln[starts], a[starts], reach[ends] - base[starts] * big


def _bits(lane: np.ndarray, n_words: int) -> np.ndarray:
    """Per CPE id of ``lane`` its bit in ``n_words`` words of 64 CPEs, shape ``(len(lane),
    n_words)``, uint64."""
    out = np.zeros((len(lane), n_words), dtype=np.uint64)
    out[np.arange(len(lane)), lane // 64] = np.left_shift(np.uint64(1), (lane % 64).astype(np.uint64))
    return out


def _trips(extras: list) -> np.ndarray | None:
    """The trip argument of each CPE event (-1: no arguments); None when some event has other
    arguments."""
    out = np.full(len(extras), -1, dtype=np.int64)
    some = [i for i, x in enumerate(extras) if x is not None]
    if some:
        trip = [x.get("trip", -1) if len(x) == 1 else -1 for x in map(extras.__getitem__, some)]
        if min(trip) < 0:
            return None
        out[some] = trip
    return out


class _Sel:
    """Some of the recorded events, by a mask over the list. A large selection is not copied
    (each pass reads the selected tuples straight from the list, ``itertools.compress``
    skipping the others: a copy would be one more pass over scattered tuples), a small one is
    (a pass over the whole list costs more than the copy)."""

    def __init__(self, events: list[tuple], mask: np.ndarray) -> None:
        self.events = events
        self.mask = mask
        self.n = int(np.count_nonzero(mask))
        self._bytes = mask.view(np.uint8).tobytes()
        self._copy = list(compress(events, self._bytes)) if 4 * self.n < len(events) else None

    def __len__(self) -> int:
        return self.n

    def iter(self) -> Iterator[tuple]:
        return iter(self._copy) if self._copy is not None else compress(self.events, self._bytes)

    def col(self, k: int) -> np.ndarray:
        """Field ``k`` of each selected event as int64."""
        return np.fromiter(map(operator.itemgetter(k), self.iter()), dtype=np.int64, count=self.n)

    def items(self, k: int) -> list:
        return list(map(operator.itemgetter(k), self.iter()))

    def sub(self, keep: np.ndarray) -> _Sel:
        """The selected events where ``keep`` (one bool per selected event) holds."""
        mask = self.mask.copy()
        mask[mask] = keep
        return _Sel(self.events, mask)

    def take(self, idx: np.ndarray) -> list[tuple]:
        """The selected events at positions ``idx`` (of the selection)."""
        if self._copy is not None:
            return list(map(self._copy.__getitem__, np.asarray(idx).tolist()))
        ev = self.events
        return [ev[i] for i in np.flatnonzero(self.mask)[idx].tolist()]


class _Slices:
    """The slices to write, by category, as parallel columns."""

    def __init__(self) -> None:
        self.t0: list[np.ndarray] = []
        self.t1: list[np.ndarray] = []
        self.track: list[np.ndarray] = []
        self.name: list[np.ndarray] = []
        self.cat: list[np.ndarray] = []
        self.args: list[list] = []
        self.n = 0

    def add(self, t0: np.ndarray, t1: np.ndarray, track: np.ndarray, name: np.ndarray, cat: np.ndarray,
            args: list) -> int:
        """Append a category; the index of its first slice."""
        first = self.n
        self.t0.append(np.asarray(t0, dtype=np.int64))
        self.t1.append(np.asarray(t1, dtype=np.int64))
        self.track.append(np.asarray(track, dtype=np.int64))
        self.name.append(np.asarray(name, dtype=np.int64))
        self.cat.append(np.asarray(cat, dtype=np.int64))
        self.args.append(args)
        self.n += len(t0)
        return first


class _Writer:
    def __init__(self, trace: Trace, lanes: CpeLanes) -> None:
        self.m = trace.m
        self.lanes = lanes
        self.own = lanes.own(self.m.n_cpes)
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.arg_names: dict[str, int] = {}
        self.strings: dict[str, int] = {}
        self.tracks: dict[tuple, int] = {}  # key -> uuid
        self.descriptors: list[tuple[int, int, str, int, str]] = []  # uuid, parent, name, rank, description
        self.slices = _Slices()
        self.flow_src: np.ndarray = np.zeros(0, dtype=np.int64)
        self.flow_dst: np.ndarray = np.zeros(0, dtype=np.int64)
        m = self.m
        self.mpe_description = (f"kernel launches (spawn -> join); times at f_clk = {m.f_clk_ghz} GHz, "
                                f"machine {m.source}")
        self._track(("mpe", 0), 0, "MPE", 0, self.mpe_description)  # the first track
        self.g_cpe = self._track(("CPEs",), 0, "CPEs", 1, "a lane per CPE; CPEs in lockstep share the "
                                 "lane of the first of them (argument 'cpes') unless --trace-cpes")
        self.g_dma = self._track(("DMA",), 0, "DMA buses", 2, "the data phase of every DMA request")
        self.g_rlc = self._track(("RLC",), 0, "RLC", 3, "message batches on each mesh row and column")

    # -- interning ----------------------------------------------------------------------------
    @staticmethod
    def _iid(table: dict[str, int], s: str) -> int:
        i = table.get(s)
        if i is None:
            i = table[s] = len(table) + 1
        return i

    def _iids(self, table: dict[str, int], strings: Iterable[str]) -> np.ndarray:
        return np.fromiter((self._iid(table, s) for s in strings), dtype=np.int64)

    def _track(self, key: tuple, parent: int, name: str, rank: int, description: str = "") -> int:
        uuid = self.tracks.get(key)
        if uuid is None:
            uuid = self.tracks[key] = len(self.tracks) + 1
            self.descriptors.append((uuid, parent, name, rank, description))
        return uuid

    def _lane_tracks(self, group: int, kind: str, lane: np.ndarray, row: np.ndarray,
                     lane_name, lane_rank, description: str = "") -> np.ndarray:
        """uuid per slice of the (lane, row) tracks under ``group``; rows of a lane share the
        lane's name (merged by the UI)."""
        if not len(lane):
            return np.zeros(0, dtype=np.int64)
        key = lane * (int(row.max()) + 1) + row
        uniq, inv = np.unique(key, return_inverse=True)
        nrow = int(row.max()) + 1
        uuids = [self._track((kind, k), group, lane_name(k // nrow), lane_rank(k // nrow) * 64 + k % nrow,
                             description) for k in uniq.tolist()]
        return np.asarray(uuids, dtype=np.int64)[inv]

    def _cycles_args(self, t0: np.ndarray, t1: np.ndarray, start: bool = False) -> list[tuple]:
        """Per slice its argument ``cycles`` (length), with ``start`` also ``cycle`` (start)."""
        a_cycles = self._iid(self.arg_names, "cycles")
        if not start:
            return [((a_cycles, _INT, d),) for d in (t1 - t0).tolist()]
        a_cycle = self._iid(self.arg_names, "cycle")
        return [((a_cycle, _INT, a), (a_cycles, _INT, d)) for a, d in zip(t0.tolist(), (t1 - t0).tolist())]

    # -- events -------------------------------------------------------------------------------
    def add_log(self, trace: Trace) -> None:
        """The slices of ``trace``'s recording (:attr:`Trace.log`). Without CPEs on lanes of
        their own the compact entries are read as they are (the cohort lanes, the busy periods
        and no flows need no per-CPE tuple), else the per-CPE events (:attr:`Trace.events`);
        both give the same slices."""
        log = trace.log
        if not log:
            return
        if self.own.any():
            self.add_events(trace.events)
            return
        pid = np.frombuffer(bytes(map(operator.itemgetter(1), log)), dtype=np.uint8)
        ph = np.frombuffer("".join(map(operator.itemgetter(0), log)).encode("ascii"), dtype=np.uint8)
        spans = (ph == ord("X")) | (ph == ord("i"))
        cpe = _Sel(log, (pid == PID_CPE) & spans)
        trips = _trips(cpe.items(6))
        if trips is None:  # arguments other than a trip: compared one by one
            self.add_events(trace.events)
            return
        self._mpe(_Sel(log, pid == PID_MPE))
        if not self._cpe_log(log, cpe, trips, np.flatnonzero(ph == ord("C"))):
            self._cpe(_Sel(ev := trace.events, np.frombuffer(
                bytes(e[1] == PID_CPE and e[0] in "Xi" for e in ev), dtype=bool)))
        self._dma(_Sel(log, pid == PID_DMA))
        self._rlc_log(log, _Sel(log, (pid == PID_RLC) & spans), np.flatnonzero(ph == ord("L")),
                      trace._rlc_lane)

    def _cpe_log(self, log: list[tuple], ev: _Sel, trips: np.ndarray, cohorts: np.ndarray) -> bool:
        """:meth:`_cpe` on a recording: the CPE events ``ev`` (their ``trips``, -1 for none) and
        the cohort runs of the ``"C"`` entries at ``cohorts``, grouped as the per-CPE events
        they expand into (every CPE in a cohort: no lane of its own). An entry's runs, and its
        stalls, at the same cycles on every CPE are one unit (its CPE set), else a unit per
        CPE; False (nothing added) in the one case units would group otherwise than events: a
        unit of several CPEs whose trip differs from the first event of the same name and
        cycles."""
        W = (self.m.n_cpes + 63) // 64
        nid: dict[str, int] = {}
        ids = np.fromiter(map(lambda s: nid.setdefault(s, len(nid)), ev.items(3)), dtype=np.int64,
                          count=len(ev))
        lane0 = ev.col(2)
        # units: order key, name, start, end, trip, CPE set (words), CPE count, lowest CPE
        n_sub = 2 * self.m.n_cpes + 2  # order of the units of one entry: (stall, run) per CPE
        key, name, t0, t1, trip = [np.flatnonzero(ev.mask) * n_sub], [ids], [ev.col(4)], [ev.col(5)], [trips]
        words, count, low = [_bits(lane0, W)], [np.ones(len(ev), dtype=np.int64)], [lane0]
        if len(cohorts):
            ents = [log[i] for i in cohorts.tolist()]
            sizes = np.asarray([e[6][0].shape[1] for e in ents], dtype=np.int64)
            cl, ca, cb, cc = np.concatenate([e[6][0] for e in ents], axis=1)  # lanes, t0, start, end
            starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            e_shift = np.asarray([e[6][2] for e in ents], dtype=np.int64)  # (memo replays)
            e_name = np.asarray([nid.setdefault(e[3], len(nid)) for e in ents], dtype=np.int64)
            e_trip = np.asarray([e[6][1] for e in ents], dtype=np.int64)
            stall = nid.setdefault("rlc stall", len(nid))
            e_low = np.minimum.reduceat(cl, starts)
            e_words = np.stack([np.bitwise_or.reduceat(np.where(cl // 64 == w, np.left_shift(
                np.uint64(1), (cl % 64).astype(np.uint64)), np.uint64(0)), starts) for w in range(W)], axis=1)
            sub_e = cohorts * n_sub
            n_ent = len(ents)
            # per kind (stall, run): one unit for an entry whose CPEs all have it at the same
            # cycles, else a unit per CPE that has it
            for sub, x0, x1, has, nm, tr in ((0, ca, cb, cb > ca, np.full(n_ent, stall), np.full(n_ent, -1)),
                                             (1, cb, cc, None, e_name, e_trip)):
                same = np.empty(len(x0), dtype=bool)
                same[1:] = (x0[1:] == x0[:-1]) & (x1[1:] == x1[:-1])
                same[starts] = True
                one = np.logical_and.reduceat(same, starts)
                if has is not None:
                    one &= has[starts]  # (the same cycles: all of the entry's CPEs stall, or none)
                u = np.flatnonzero(one)
                key.append(sub_e[u] + sub)
                name.append(nm[u])
                t0.append(x0[starts[u]] + e_shift[u])
                t1.append(x1[starts[u]] + e_shift[u])
                trip.append(tr[u])
                words.append(e_words[u])
                count.append(sizes[u])
                low.append(e_low[u])
                each = np.repeat(~one, sizes)
                if has is not None:
                    each &= has
                p = np.flatnonzero(each)
                r = np.searchsorted(starts, p, side="right") - 1  # their entries
                key.append(sub_e[r] + 2 * (p - starts[r]) + sub)
                name.append(nm[r])
                t0.append(x0[p] + e_shift[r])
                t1.append(x1[p] + e_shift[r])
                trip.append(tr[r])
                words.append(_bits(cl[p], W))
                count.append(np.ones(len(p), dtype=np.int64))
                low.append(cl[p])
        order = np.argsort(np.concatenate(key), kind="stable")  # the per-CPE recording order
        name_, t0_, t1_, trip_, count_, low_ = (np.concatenate(c)[order] for c in (name, t0, t1, trip, count, low))
        words_ = np.concatenate(words)[order]
        n = len(name_)
        if not n:
            return True
        # group: units equal but for the CPEs (name, start, end), the trip compared with the
        # first one's (as _cpe)
        idx = np.arange(n, dtype=np.int64)
        new = np.ones(n, dtype=bool)
        t_lo = int(t0_.min())
        dur = t1_ - t0_
        b_t, b_d = int(t0_.max() - t_lo).bit_length(), int(dur.max()).bit_length()
        if b_t + b_d + int(name_.max()).bit_length() <= 62:  # (name, start, length) as one int64
            k = (name_ << (b_t + b_d)) | ((t0_ - t_lo) << b_d) | dur
            o = np.argsort(k, kind="stable")
            ks = k[o]
            new[1:] = ks[1:] != ks[:-1]
        else:
            o = np.lexsort((idx, t1_, t0_, name_))
            new[1:] = (name_[o][1:] != name_[o][:-1]) | (t0_[o][1:] != t0_[o][:-1]) | (t1_[o][1:] != t1_[o][:-1])
        first = np.empty(n, dtype=np.int64)
        first[o] = o[np.flatnonzero(new)][np.cumsum(new) - 1]
        differ = trip_ != trip_[first]
        if (count_[differ] > 1).any():
            return False
        first[differ] = idx[differ]  # arguments differ: a slice of its own
        is_first = first == idx
        gid = (np.cumsum(is_first) - 1)[first]
        g_idx = np.flatnonzero(is_first)
        names = list(nid)
        g_names = [names[i] for i in name_[g_idx].tolist()]
        g_trips = [None if t < 0 else t for t in trip_[g_idx].tolist()]
        self._cpe_slices(gid, words_, count_, low_, t0_[g_idx], t1_[g_idx], g_names, g_trips)
        return True

    def _rlc_log(self, log: list[tuple], ev: _Sel, posts: np.ndarray, rlc_lane: dict[str, list[str]]) -> None:
        """:meth:`_rlc` on a recording: the batches ``ev`` and those of the ``"L"`` entries at
        ``posts`` as busy periods (no CPE on a lane of its own)."""
        m = self.m
        lane_ids = {f"row {i}": i for i in range(m.mesh_rows)}
        lane_ids.update({f"col {j}": m.mesh_rows + j for j in range(m.mesh_cols)})
        n = len(ev)
        lane = [np.fromiter(map(lane_ids.__getitem__, ev.items(2)), dtype=np.int64, count=n)]
        t0, t1 = [ev.col(4)], [ev.col(5)]
        msgs = [np.fromiter(map(operator.itemgetter("messages"), ev.items(6)), dtype=np.int64, count=n)]
        pos = [np.flatnonzero(ev.mask)]
        src = [np.arange(n, dtype=np.int64)]  # index of the event in ev, -1: a posted link
        send, recv = [np.zeros(n, dtype=np.int64)], [np.zeros(n, dtype=np.int64)]
        if len(posts):
            ents = [log[i] for i in posts.tolist()]
            cols = np.concatenate([e[6][0] for e in ents], axis=1)  # sender, receiver, put, arrival
            rec = np.repeat(np.arange(len(ents)), [e[6][0].shape[1] for e in ents])
            p0, pl, k, shift = (np.asarray([e[6][j] for e in ents], dtype=np.int64)[rec] for j in (2, 3, 1, 5))
            p0 += shift  # (memo replays)
            pl += shift
            row = np.asarray([e[2] == "row" for e in ents])[rec]
            lane.append(np.where(row, cols[0] // m.mesh_cols, m.mesh_rows + cols[0] % m.mesh_cols))
            t0.append(cols[2] + p0)
            t1.append(cols[3] + pl)
            msgs.append(k)
            pos.append(posts[rec])
            src.append(np.full(len(rec), -1, dtype=np.int64))
            send.append(cols[0])
            recv.append(cols[1])
        order = np.argsort(np.concatenate(pos), kind="stable")  # the per-CPE recording order
        lane_, t0_, t1_, msgs_, src_, send_, recv_ = (np.concatenate(c)[order] for c in
                                                      (lane, t0, t1, msgs, src, send, recv))
        if not len(lane_):
            return
        a_msgs, a_batches = self._iid(self.arg_names, "messages"), self._iid(self.arg_names, "batches")
        order, starts, p_lane, p_t0, p_t1 = _busy(lane_, t0_, t1_)
        k = np.diff(np.append(starts, len(lane_))).tolist()
        total = np.add.reduceat(msgs_[order], starts).tolist()
        firsts = order[starts]
        one = ev.take(np.maximum(src_[firsts], 0)) if n else [()] * len(firsts)
        names = [(e[3] if i >= 0 else f"{c} msgs {s}->{r}") if c1 == 1 else f"{c1} batches"
                 for e, i, c, s, r, c1 in zip(one, src_[firsts].tolist(), msgs_[firsts].tolist(),
                                               send_[firsts].tolist(), recv_[firsts].tolist(), k)]
        args = [((a_msgs, _INT, t),) if c == 1 else ((a_batches, _INT, c), (a_msgs, _INT, t))
                for c, t in zip(k, total)]
        rows = lane_rows(p_lane, p_t0, p_t1)
        tracks = self._lane_tracks(self.g_rlc, "rlc", p_lane, rows,
                                   lambda ln: f"RLC row {ln}" if ln < m.mesh_rows else f"RLC col {ln - m.mesh_rows}",
                                   lambda ln: ln)
        self.slices.add(p_t0, p_t1, tracks, self._iids(self.names, names),
                        np.full(len(p_t0), self._iid(self.cats, "rlc")), args)

    def add_events(self, events: list[tuple]) -> None:
        if not events:
            return
        pid = np.frombuffer(bytes(map(operator.itemgetter(1), events)), dtype=np.uint8)
        ph = np.frombuffer("".join(map(operator.itemgetter(0), events)).encode("ascii"), dtype=np.uint8)
        self._mpe(_Sel(events, pid == PID_MPE))
        is_flow = (ph == ord("s")) | (ph == ord("f"))
        cpe = pid == PID_CPE
        runs = self._cpe(_Sel(events, cpe & ~is_flow))
        if self.own.any():  # arrows join CPEs on their own lanes
            flows = _Sel(events, cpe & is_flow)
            f_lane = flows.col(2)
            mine = self.own[f_lane]
            self._flows(flows.sub(mine), f_lane[mine], ph[cpe & is_flow][mine] == ord("s"), *runs)
        self._dma(_Sel(events, pid == PID_DMA))
        self._rlc(_Sel(events, pid == PID_RLC))

    def _mpe(self, ev: _Sel) -> None:
        if not len(ev):
            return
        t0, t1 = ev.col(4), ev.col(5)
        names = self._iids(self.names, ev.items(3))
        rows = lane_rows(np.zeros(len(ev), dtype=np.int64), t0, t1)
        tracks = self._lane_tracks(0, "mpe", np.zeros(len(ev), dtype=np.int64), rows,
                                   lambda _: "MPE", lambda _: 0, self.mpe_description)
        cat = np.full(len(ev), self._iid(self.cats, "launch"))
        self.slices.add(t0, t1, tracks, names, cat, self._cycles_args(t0, t1, start=True))

    def _cpe(self, ev: _Sel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CPE slices grouped into cohorts; for the flows: per event its lane and start cycle,
        and the index of its slice if it is a run (flows attach to runs), else -1."""
        n = len(ev)
        empty = np.zeros(0, dtype=np.int64)
        if not n:
            return empty, empty, empty
        m = self.m
        lane = ev.col(2)
        own = self.own[lane]
        # group: events equal but for the lane (name, start, end; the arguments compared)
        first = np.arange(n, dtype=np.int64)
        if not own.all():
            shared = np.flatnonzero(~own)
            whole = len(shared) == n
            sub = ev if whole else ev.sub(~own)
            seen: dict[tuple, int] = {}
            firsts = np.fromiter(map(seen.setdefault, map(operator.itemgetter(3, 4, 5), sub.iter()), count()),
                                 dtype=np.int64, count=len(sub))
            del seen
            extras = sub.items(6)
            same = np.fromiter(map(operator.eq, extras, map(extras.__getitem__, firsts.tolist())),
                               dtype=bool, count=len(sub))
            del extras
            firsts[~same] = np.flatnonzero(~same)  # arguments differ: a slice of its own
            first[shared] = firsts if whole else shared[firsts]
        is_first = first == np.arange(n)
        gid = (np.cumsum(is_first) - 1)[first]
        rev = ev.take(np.flatnonzero(is_first))
        g = len(rev)
        g_t0 = np.fromiter(map(operator.itemgetter(4), rev), dtype=np.int64, count=g)
        g_t1 = np.fromiter(map(operator.itemgetter(5), rev), dtype=np.int64, count=g)
        g_names = list(map(operator.itemgetter(3), rev))
        trips = [x["trip"] if x and "trip" in x else None for x in map(operator.itemgetter(6), rev)]
        is_run = self._cpe_slices(gid, _bits(lane, (m.n_cpes + 63) // 64), np.ones(n, dtype=np.int64), lane,
                                  g_t0, g_t1, g_names, trips)
        return lane, g_t0[gid], np.where(is_run[gid], self.slices.n - g + gid, -1)

    def _cpe_slices(self, gid: np.ndarray, words: np.ndarray, count: np.ndarray, low: np.ndarray,
                    g_t0: np.ndarray, g_t1: np.ndarray, g_names: list[str],
                    trips: list[int | None]) -> np.ndarray:
        """The CPE slices of groups of units (events of one CPE or of a cohort): per unit its
        group ``gid`` (groups numbered in order of their first unit), CPE set ``words``
        (:func:`_bits`), number of events ``count`` and lowest CPE ``low``; per group its start,
        end, name and trip. Per group whether it is a micro-kernel run."""
        m = self.m
        g = len(g_t0)
        # per group: first lane, size, CPE set (bit masks of 64 CPEs, joined as Python ints)
        o = np.argsort(gid, kind="stable")
        starts = np.flatnonzero(np.diff(gid[o], prepend=-1))
        g_lane = np.minimum.reduceat(low[o], starts)
        size = np.add.reduceat(count[o], starts)
        cohort = np.flatnonzero(size > 1)
        sid = np.zeros(g, dtype=np.int64)  # string iid of the 'cpes' argument (0: none)
        if len(cohort):
            words = np.bitwise_or.reduceat(words[o], starts, axis=0)[cohort]
            uniq, inv = np.unique(words, axis=0, return_inverse=True)
            shown = [self._iid(self.strings, cpe_list(sum(x << (64 * i) for i, x in enumerate(row))))
                     for row in uniq.tolist()]
            sid[cohort] = np.asarray(shown, dtype=np.int64)[inv.reshape(-1)]
        # names, categories, lane parts (0: runs, stalls, barriers, end; 1: DMA start-ups)
        kinds = {s: ("dma" if s.startswith("dma ") else "stall" if s == "rlc stall" else
                     "barrier" if s.startswith("barrier") else "end" if s == "end" else "run")
                 for s in dict.fromkeys(g_names)}
        distinct = list(kinds)
        which = np.fromiter(map({s: i for i, s in enumerate(distinct)}.__getitem__, g_names), dtype=np.int64, count=g)
        names = np.asarray([self._iid(self.names, s) for s in distinct], dtype=np.int64)[which]
        cat = np.asarray([self._iid(self.cats, kinds[s]) for s in distinct], dtype=np.int64)[which]
        is_dma = np.asarray([kinds[s] == "dma" for s in distinct])[which]
        is_run = np.asarray([kinds[s] == "run" for s in distinct])[which]
        part = g_lane * 2 + is_dma
        rows = lane_rows(part, g_t0, g_t1)
        tracks = self._lane_tracks(self.g_cpe, "cpe", part, rows,
                                   lambda p: f"CPE {p // 2} ({p // 2 // m.mesh_cols},{p // 2 % m.mesh_cols})",
                                   lambda p: p // 2)
        a_cycles, a_trip, a_cpes = (self._iid(self.arg_names, k) for k in ("cycles", "trip", "cpes"))
        args = [((a_cycles, _INT, d),) + (((a_trip, _INT, t),) if t is not None else ())
                + (((a_cpes, _STR, c),) if c else ())
                for d, t, c in zip((g_t1 - g_t0).tolist(), trips, sid.tolist())]
        self.slices.add(g_t0, g_t1, tracks, names, cat, args)
        return is_run

    def _flows(self, ev: _Sel, f_lane: np.ndarray, f_put: np.ndarray, lane: np.ndarray,
               start: np.ndarray, slice_of: np.ndarray) -> None:
        """Flow arrows from the runs that put a batch to the runs that get it (``ev``: the puts
        and gets of CPEs on their own lanes, ``f_lane`` their CPEs, ``f_put`` true for a put;
        ``lane``, ``start``, ``slice_of``: per CPE event, from :meth:`_cpe`): each put/get is
        the run on its CPE that starts last at or before it."""
        n = len(ev)
        is_run = (slice_of >= 0) & self.own[lane]
        if not n or not is_run.any():
            return
        lane, start, slice_of = lane[is_run], start[is_run], slice_of[is_run]
        f_t, f_id = ev.col(4), ev.col(6)
        big = int(max(start.max(initial=0), f_t.max())) + 1
        key = lane * big + start
        order = np.argsort(key, kind="stable")
        pos = np.searchsorted(key[order], f_lane * big + f_t, side="right") - 1
        ok = pos >= 0
        ok[ok] = lane[order[pos[ok]]] == f_lane[ok]
        slc = np.full(n, -1, dtype=np.int64)
        slc[ok] = slice_of[order[pos[ok]]]
        # put slice of each link id, then (put slice, get slice) pairs
        puts = f_put & ok
        p_id, p_slc = f_id[puts], slc[puts]
        o = np.argsort(p_id, kind="stable")
        p_id, p_slc = p_id[o], p_slc[o]
        gets = ~f_put & ok
        g_id, g_slc = f_id[gets], slc[gets]
        at = np.searchsorted(p_id, g_id)
        found = at < len(p_id)
        found[found] = p_id[at[found]] == g_id[found]
        src, dst = p_slc[at[found]], g_slc[found]
        keep = src != dst
        pairs = np.unique(src[keep] * (self.slices.n + 1) + dst[keep])  # one arrow per pair of slices
        self.flow_src, self.flow_dst = np.divmod(pairs, self.slices.n + 1)

    def _dma(self, ev: _Sel) -> None:
        """The data phases on the buses: one slice per request issued by a CPE on its own lane,
        the others merged into busy periods (requests that overlap or follow each other)."""
        n = len(ev)
        if not n:
            return
        bus, t0, t1 = ev.col(2), ev.col(4), ev.col(5)
        extras = ev.items(6)
        cpe = np.fromiter(map(operator.itemgetter("cpe"), extras), dtype=np.int64, count=n)
        size = np.fromiter(map(operator.itemgetter("bytes"), extras), dtype=np.int64, count=n)
        a_mem, a_ldm, a_moved, a_cycles, a_req, a_bytes = (
            self._iid(self.arg_names, k) for k in ("mem", "ldm", "moved", "cycles", "requests", "bytes"))

        def one(i: int) -> tuple:  # a request drawn alone: its arguments
            x = extras[i]
            a = ((a_cycles, _INT, int(t1[i] - t0[i])), (a_mem, _PTR, int(x["mem"], 16)), (a_ldm, _INT, x["ldm"]))
            return a + ((a_moved, _INT, x["moved"]),) if x["moved"] != x["bytes"] else a

        alone = self.own[cpe]
        each = np.flatnonzero(alone)
        rest = np.flatnonzero(~alone)
        parts: list[_Part] = [(bus[each], t0[each], t1[each], [e[3] for e in ev.take(each)],
                               [one(i) for i in each.tolist()])]
        if len(rest):
            order, starts, p_bus, p_t0, p_t1 = _busy(bus[rest], t0[rest], t1[rest])
            k = np.diff(np.append(starts, len(rest))).tolist()
            nbytes = np.add.reduceat(size[rest][order], starts).tolist()
            firsts = rest[order[starts]].tolist()
            names = [e[3] if c == 1 else f"{c} requests" for e, c in zip(ev.take(np.asarray(firsts, dtype=np.int64)), k)]
            args = [one(i) if c == 1 else ((a_cycles, _INT, d), (a_req, _INT, c), (a_bytes, _INT, b))
                    for i, c, b, d in zip(firsts, k, nbytes, (p_t1 - p_t0).tolist())]
            parts.append((p_bus, p_t0, p_t1, names, args))
        bus, t0, t1 = (np.concatenate([p[j] for p in parts]) for j in range(3))
        names = [s for p in parts for s in p[3]]
        args = [a for p in parts for a in p[4]]
        rows = lane_rows(bus, t0, t1)
        tracks = self._lane_tracks(self.g_dma, "dma", bus, rows, lambda b: f"DMA bus {b}", lambda b: b)
        self.slices.add(t0, t1, tracks, self._iids(self.names, names),
                        np.full(len(t0), self._iid(self.cats, "dma")), args)

    def _rlc(self, ev: _Sel) -> None:
        """Message batches on the mesh rows and columns: one slice per batch sent by a CPE on its
        own lane, the others merged into busy periods (batches that overlap or follow each
        other)."""
        n = len(ev)
        if not n:
            return
        m = self.m
        lane_ids = {f"row {i}": i for i in range(m.mesh_rows)}
        lane_ids.update({f"col {j}": m.mesh_rows + j for j in range(m.mesh_cols)})
        lane = np.fromiter(map(lane_ids.__getitem__, map(operator.itemgetter(2), ev.iter())), dtype=np.int64, count=n)
        t0, t1 = ev.col(4), ev.col(5)
        msgs = np.fromiter(map(operator.itemgetter("messages"), map(operator.itemgetter(6), ev.iter())),
                           dtype=np.int64, count=n)
        a_msgs, a_batches = self._iid(self.arg_names, "messages"), self._iid(self.arg_names, "batches")
        if self.lanes.every:
            alone = np.ones(n, dtype=bool)
        elif self.own.any():  # the sender is in the batch's name, "N msgs S->R"
            sender = np.fromiter((int(s[s.index(" msgs ") + 6: s.index("->")]) for s in ev.items(3)),
                                 dtype=np.int64, count=n)
            alone = self.own[sender]
        else:
            alone = np.zeros(n, dtype=bool)
        each = np.flatnonzero(alone)
        rest = np.flatnonzero(~alone)
        parts: list[_Part] = [(lane[each], t0[each], t1[each], [e[3] for e in ev.take(each)],
                  [((a_msgs, _INT, k),) for k in msgs[each].tolist()])]
        if len(rest):
            order, starts, p_lane, p_t0, p_t1 = _busy(lane[rest], t0[rest], t1[rest])
            k = np.diff(np.append(starts, len(rest))).tolist()
            total = np.add.reduceat(msgs[rest][order], starts).tolist()
            firsts = rest[order[starts]].tolist()
            names = [e[3] if c == 1 else f"{c} batches" for e, c in zip(ev.take(np.asarray(firsts, dtype=np.int64)), k)]
            args = [((a_msgs, _INT, t),) if c == 1 else ((a_batches, _INT, c), (a_msgs, _INT, t))
                    for c, t in zip(k, total)]
            parts.append((p_lane, p_t0, p_t1, names, args))
        lane, t0, t1 = (np.concatenate([p[j] for p in parts]) for j in range(3))
        names = [s for p in parts for s in p[3]]
        args = [a for p in parts for a in p[4]]
        rows = lane_rows(lane, t0, t1)
        tracks = self._lane_tracks(self.g_rlc, "rlc", lane, rows,
                                   lambda ln: f"RLC row {ln}" if ln < m.mesh_rows else f"RLC col {ln - m.mesh_rows}",
                                   lambda ln: ln)
        self.slices.add(t0, t1, tracks, self._iids(self.names, names),
                        np.full(len(t0), self._iid(self.cats, "rlc")), args)

    # -- output -------------------------------------------------------------------------------
    def _header(self, trace: pb.Trace) -> None:
        p = trace.packet.add()
        p.trusted_packet_sequence_id = _SEQ
        p.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        p.first_packet_on_sequence = True
        idata = p.interned_data
        for s, i in self.names.items():
            idata.event_names.add(iid=i, name=s)
        for s, i in self.cats.items():
            idata.event_categories.add(iid=i, name=s)
        for s, i in self.arg_names.items():
            idata.debug_annotation_names.add(iid=i, name=s)
        for s, i in self.strings.items():
            idata.debug_annotation_string_values.add(iid=i, str=s.encode())
        groups = {d[1] for d in self.descriptors if d[1]}
        for uuid, parent, name, rank, description in self.descriptors:
            p = trace.packet.add()
            p.trusted_packet_sequence_id = _SEQ
            td = p.track_descriptor
            td.uuid = uuid
            td.name = name
            td.sibling_order_rank = rank
            if parent:
                td.parent_uuid = parent
            if uuid in groups:
                td.child_ordering = pb.TrackDescriptor.EXPLICIT
            if description:
                td.description = description

    def write(self, f: BinaryIO) -> None:
        s = self.slices
        n = s.n
        t0 = np.concatenate(s.t0) if n else np.zeros(0, dtype=np.int64)
        t1 = np.concatenate(s.t1) if n else np.zeros(0, dtype=np.int64)
        track = (np.concatenate(s.track) if n else t0).tolist()
        name = (np.concatenate(s.name) if n else t0).tolist()
        cat = (np.concatenate(s.cat) if n else t0).tolist()
        args = [a for part in s.args for a in part]
        ns_per_cycle = 1.0 / self.m.f_clk_ghz
        b_ns = np.rint(t0 * ns_per_cycle).astype(np.int64)
        e_ns = np.rint(t1 * ns_per_cycle).astype(np.int64)
        instant = e_ns <= b_ns
        # flows per slice: offsets into ids sorted by slice
        n_flows = len(self.flow_src)
        fid = np.arange(1, n_flows + 1, dtype=np.int64)
        o = np.argsort(self.flow_src, kind="stable")
        out_ids, out_ptr = fid[o].tolist(), np.searchsorted(self.flow_src[o], np.arange(n + 1)).tolist()
        o = np.argsort(self.flow_dst, kind="stable")
        in_ids, in_ptr = fid[o].tolist(), np.searchsorted(self.flow_dst[o], np.arange(n + 1)).tolist()
        # packets in time order; at one time: ends, then instants, then begins
        ends = np.flatnonzero(~instant)
        ts = np.concatenate([b_ns, e_ns[ends]])
        typ = np.concatenate([np.where(instant, 1, 2), np.zeros(len(ends), dtype=np.int64)])
        idx = np.concatenate([np.arange(n), ends])
        order = np.lexsort((typ, ts))
        ts_l, typ_l, idx_l = ts[order].tolist(), typ[order].tolist(), idx[order].tolist()
        del ts, typ, idx, order, b_ns, e_ns

        trace = pb.Trace()
        self._header(trace)
        flows = n_flows > 0
        n_p = len(ts_l)
        for c0 in range(0, max(n_p, 1), _CHUNK):  # (serialized chunks concatenate into one Trace)
            if c0:
                trace = pb.Trace()
            add = trace.packet.add
            for t, ty, j in zip(ts_l[c0:c0 + _CHUNK], typ_l[c0:c0 + _CHUNK], idx_l[c0:c0 + _CHUNK]):
                p = add()
                p.timestamp = t
                p.trusted_packet_sequence_id = _SEQ  # (its interned names: the sequence's state)
                te = p.track_event
                te.track_uuid = track[j]
                if ty == 0:
                    te.type = _END
                    continue
                te.type = _INSTANT if ty == 1 else _BEGIN
                te.name_iid = name[j]
                te.category_iids.append(cat[j])
                add_arg = te.debug_annotations.add
                for a, kind, v in args[j]:
                    d = add_arg()
                    d.name_iid = a
                    if kind == _INT:
                        d.int_value = v
                    elif kind == _STR:
                        d.string_value_iid = v
                    else:
                        d.pointer_value = v
                if flows:
                    lo, hi = out_ptr[j], out_ptr[j + 1]
                    if hi > lo:
                        te.flow_ids.extend(out_ids[lo:hi])
                    lo, hi = in_ptr[j], in_ptr[j + 1]
                    if hi > lo:
                        te.terminating_flow_ids.extend(in_ids[lo:hi])
            f.write(trace.SerializeToString())


def write_pftrace(trace: Trace, f: BinaryIO, lanes: CpeLanes = CpeLanes()) -> None:
    """Write ``trace`` (the simulation's events; :meth:`Trace.select_kernels` narrows it to
    chosen launches) as a Perfetto protobuf trace into the binary file ``f`` (see the module
    docstring for the tracks); ``lanes``: the CPEs drawn on a lane of their own.
    ``TraceOptionError`` for a CPE the machine does not have."""
    collect = gc.isenabled()
    gc.disable()  # millions of short-lived objects: the cyclic GC would rescan the events each time
    try:
        w = _Writer(trace, lanes)
        w.add_log(trace)
        w.write(f)
    finally:
        if collect:
            gc.enable()


__all__ = ["write_pftrace", "CpeLanes", "lane_rows", "cpe_list"]
