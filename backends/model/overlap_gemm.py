"""Plan and cost of the GEMM kernel with the **overlapping distribution** (004 L708, algorithms.md
§A1): every CPE holds all of B (``rep``, one broadcast DMA per K block) and ``ceil(bm/64)`` rows
of A and C (``cpe``, split 64-way along M), and runs a CPE-local register-tiled GEMM
(``loop.gemm_block``): no RLC, no SUMMA step boundaries, and N is not split over the mesh, so a
small N (the 49 pixels of a 7x7 map) is neither padded to the mesh multiple nor clipped inside
a CPE's piece. Lowering: ``passes/conversion/graph_to_tile/gemm.py`` ``emit_gemm`` with
:attr:`GemmPlan.overlap <taihu.backends.model.conv.GemmPlan.overlap>`.

The kernel (K innermost; A and B double-buffered over K; the blocks form one loop)::

    for m0 (bm rows: mloc = bm/64 per CPE) / n0 (bn columns, bn dividing N, or all N):
      fill C                                         (mloc x bn per CPE, fp64)
      for k0 (bk):
        A <- W[m0:+bm, k0:+bk]  (vec n)  or  W^T[k0:+bk, m0:+bm] (vec m, A stored (K, M): each
             CPE's rows of M are one contiguous run per k)         one strided DMA per CPE
        B <- X[k0:+bk, n0:+bn]            ONE broadcast DMA (split over the 4 buses when large)
        C += A x B                                   loop.gemm_block, mixed precision: the f32
                                                     A/B are widened by their VLDS/LDSE loads
                                                     and the FMA is the fp64 VMAD (no convert)
      [+ bias (cpe)] [relu] [+ residual] -> fp32 staging (a transposing convert with vec m) -> y

An operand block that is invariant in the block loops (one K step with a single M resp. N
block) is loaded once per batch iteration (hoisted, single-buffered).

Cost, per K step: compute = the register tiles of one ``gemm_block`` (full 16 x 4 tiles at 16
cycles per k, Listing 4.1; partial tiles at max(FMAs, lat_fp, P1 slots) per k; + a per-tile
prologue / epilogue, :data:`TILE_OVERHEAD`, measured) + two array barriers (the broadcast's wait
and the next broadcast's issue); DMA = the A pieces of the 64 CPEs (whole 128-B transactions,
spec §4.4; runs aligned when the row pitch and the run are transaction multiples) plus the
broadcast of B (``bcast_cost`` = 1 request per part: a small one occupies the issuing CPE's bus,
a large one is split over the 4 buses); ``max(DMA, compute)`` per step (double buffers, 004
L674). Alg 8's wrap hides every block's first DMA but the batch iteration's first (or, with a
single block per batch iteration, the kernel's first). Per block the epilogue (fill, bias,
activation, convert) is exposed; the put of a double-buffered staging tile overlaps the next
block, but the next step's loads queue behind it (one DMA in flight per CPE), so the first step
after a put costs max(compute, put + step DMA). Model vs simulator on ResNet-50 B=1 layers:
-5 .. +4 %.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from taihu.backends.model.conv import (
    FILL_CYCLES_PER_ELEM,
    MAP_CYCLES_PER_ELEM,
    TRANSPOSE_CYCLES_PER_ELEM,
    GemmBlocking,
    GemmPlan,
    GemmShape,
    KernelCost,
)
from taihu.backends.model.choice import Enumerated
from taihu.backends.model.unfold_conv import BIAS_CYCLES_PER_ELEM
from taihu.target.machine import Machine

__all__ = [
    "STRIP_TALL",
    "STRIP_WIDE",
    "TILE_OVERHEAD",
    "block_cycles",
    "block_strips",
    "chunk_rows",
    "kblocked_a",
    "overlap_blocking",
    "overlap_cost",
    "overlap_applicability",
    "overlap_candidates",
    "overlap_footprint",
    "overlap_plan",
    "overlap_storage",
    "overlap_vecs",
    "plan_overlap_gemm",
    "put_spread",
    "residual_spread",
    "tile_kstep",
]

N_CPE = 64
#: [measured] cycles per register tile and K block of ``loop.gemm_block`` beyond its k-steps
#: (load C + the first FETCHes, the last k-step's drain + store C): simulator, 32 x 49 x bk
#: vec m blocks, bk = 32 / 56: 13 650 / 23 202 cycles = 398 per k + 35 per tile.
TILE_OVERHEAD = 35
#: Listing 4.1: cycles per k-step of a full 16 x 4 register tile (16 VMAD on P0).
FULL_TILE_KSTEP = 16
#: P1 slots per k-step of a partial tile beyond its loads: 2 pointer adds, counter, branch
#: (``generic_body``).
PARTIAL_LOOP_SLOTS = 4
#: a partial tile's k-step is at least the FMA latency (each accumulator is updated once per
#: k-step: a dependence chain of ``lat_fp`` = 7 cycles, 004 L530)
PARTIAL_MIN_KSTEP = 7
#: broadcast gets of at least this many bytes are issued in 4 parts by CPEs on the 4 DMA buses
#: (``passes/conversion/loop_to_sw`` ``BCAST_SPLIT_BYTES``; backends must not import passes).
BCAST_SPLIT_BYTES = 2048


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _rnd(nbytes: float) -> int:
    return int(-(-nbytes // 32) * 32)


#: remainder strips of ``loop.gemm_block`` (``passes/conversion/loop_to_sw/gemm.py``
#: ``STRIP_WIDE`` / ``STRIP_TALL``, ``gemm_block_strips``; backends must not import passes):
#: with 1 or 2 rows of the other dim left (and >= 8 vectors), tiles this many vectors wide;
#: with 1 or 2 vectors left (and >= 8 rows), tiles this many rows tall
STRIP_WIDE = {1: 12, 2: 8}
STRIP_TALL = {1: 12, 2: 8}


def block_strips(nvec: int, olen: int) -> list[tuple[int, int, int]]:
    """(tiles, nv, ns) of the register-tile strips of a ``loop.gemm_block`` with ``nvec`` vector
    registers along the vectorised dim and ``olen`` elements of the other (the lowering's
    ``gemm_block_strips``): full 4 x 4 tiles, the column strip of the vectors left, the row
    strip of the rows left (wide / tall tiles, :data:`STRIP_WIDE` / :data:`STRIP_TALL`, each
    with one tile for the rest), the corner."""
    nv_full, v_rem = divmod(nvec, 4)
    ns_full, s_rem = divmod(olen, 4)
    parts = [(nv_full * ns_full, 4, 4)]
    if v_rem:
        tall, rows = STRIP_TALL.get(v_rem), ns_full * 4
        if tall and ns_full >= 2:
            t = min(tall, rows)
            parts.append((rows // t, v_rem, t))
            if rows % t:
                parts.append((1, v_rem, rows % t))
        else:
            parts.append((ns_full, v_rem, 4))
    if s_rem:
        wide, vecs = STRIP_WIDE.get(s_rem), nv_full * 4
        if wide and nv_full >= 2:
            w = min(wide, vecs)
            parts.append((vecs // w, w, s_rem))
            if vecs % w:
                parts.append((1, vecs % w, s_rem))
        else:
            parts.append((nv_full, 4, s_rem))
    if v_rem and s_rem:
        parts.append((1, v_rem, s_rem))
    return [p for p in parts if p[0]]


def tile_kstep(nv: int, ns: int) -> float:
    """Cycles per k-step of an ``nv`` (vector registers) x ``ns`` register tile:
    Listing 4.1's 16 for the full 4 x 4; partial tiles of at most 4 x 4 (``generic_body``)
    max(FMAs, the FMA latency, P1 slots); the wide / tall tiles of the remainder strips
    (``big_tile_body``: scheduled for dual issue) ``max(F, (F + P1 + 3) / 2)`` with F = nv*ns
    FMAs (P0), P1 = nv + ns loads + BGT and 3 address/counter updates that go to either pipe,
    + 1 when a tile has one row or is tall, + 1 more for 2-vector tall tiles. [measured]
    Simulator, one gemm_block per CPE, k = 64 / 128 (per-k difference): 8 x 2: 16.0, 12 x 1:
    15.5, 1 x 8: 11.5, 2 x 8: 18.0 cycles."""
    if (nv, ns) == (4, 4):
        return FULL_TILE_KSTEP
    if nv <= 4 and ns <= 4:
        return max(nv * ns, PARTIAL_MIN_KSTEP, nv + ns + PARTIAL_LOOP_SLOTS)
    f = nv * ns
    t = max(f, (f + nv + ns + 1 + 3) / 2)
    return t + (0 if (nv > 4 and ns > 1) else 1) + (1 if nv == 2 and ns > 4 else 0)


def block_cycles(vlen: int, olen: int, k: int) -> float:
    """Cycles of one ``loop.gemm_block`` on a (vlen vectorised) x (olen other) x k local block:
    every register tile of :func:`block_strips` runs :func:`tile_kstep` cycles per k-step plus
    :data:`TILE_OVERHEAD`."""
    return sum(count * (tile_kstep(nv, ns) * k + TILE_OVERHEAD) for count, nv, ns in block_strips(vlen // 4, olen))


def overlap_blocking(p: GemmShape, vec: str, bm: int, bn: int, bk: int, double_c: bool = False) -> GemmBlocking:
    """The :class:`~taihu.backends.model.conv.GemmBlocking` of an overlapping-distribution plan
    of ``p`` with blocks (bm = 64 x rows per CPE, bn, bk): an operand block invariant in the
    block loops (one K step with a single M resp. N block) is hoisted (loaded once per batch
    iteration, emit_gemm's weight hoisting); C is staged (converted in LDM) unless it is fp64
    and vec n."""
    nm, nn, nk = _ceil(p.m, bm), _ceil(p.n, bn), _ceil(p.k, bk)
    staged = frozenset({"C"}) if (p.elem != 8 or vec == "m") else frozenset()
    return GemmBlocking(bm, bn, bk, staged, nk == 1 and nm == 1 and nn > 1, nk == 1 and nn == 1 and nm > 1, double_c)


def overlap_footprint(p: GemmShape, blk: GemmBlocking) -> int:
    """Per-CPE LDM bytes of ``blk`` (mloc = bm/64 rows per CPE, n = bn columns) for ``p``: A
    (bk x mloc) and B (bk x n) in the memory element type, double-buffered unless hoisted; C
    fp64 (mloc x n) and its staging tile in the memory type (twice when double-buffered); the
    bias rows (``p.bias_along`` "m": mloc, memory type + fp64); a fused residual window
    (``p.residual``: a double tile like the staging one)."""
    mloc, n, bk, e = _ceil(blk.bm, N_CPE), blk.bn, blk.bk, p.elem
    hoist_a, hoist_b, double_c = blk.hoist_a, blk.hoist_b, blk.double_c
    total = (1 if hoist_a else 2) * _rnd(bk * mloc * e) + (1 if hoist_b else 2) * _rnd(bk * n * e) + _rnd(mloc * n * 8)
    if e != 8:
        total += (2 if double_c else 1) * _rnd(mloc * n * e)
    if p.bias_along == "m":
        total += _rnd(mloc * e) + _rnd(mloc * 8)
    if p.residual:
        total += 2 * _rnd(mloc * n * e)
    return total


def _txn_bytes(run: int, txn: int, aligned: bool) -> float:
    if aligned:
        return math.ceil(run / txn) * txn
    return ((run - 4) / txn + 1) * txn if run > 4 else txn


@functools.lru_cache(maxsize=4096)
def _grid_bytes(pitch: int, run: int, step: int, txn: int) -> float:
    """Bytes moved per run (whole ``txn``-byte transactions, spec §4.4) by the runs of ``run``
    bytes of a block window whose rows are ``pitch`` bytes apart and whose blocks start ``step``
    bytes apart along the row (matrix base transaction-aligned, R7 004 L865), averaged over
    every row and block phase: the actual offsets, e.g. 64-B runs at 64-B steps never straddle
    a transaction (one each), where a random start would cost 1.5 on average."""
    if pitch % txn == 0 and step % txn == 0:
        return float(math.ceil(run / txn) * txn)
    rows = txn // math.gcd(pitch, txn)  # the phases repeat after this many rows / blocks
    cols = txn // math.gcd(step, txn) if step else 1
    off = ((np.arange(rows)[:, None] * pitch + np.arange(cols)[None, :] * step) % txn).astype(np.int64)
    ntx = -(-(off + run) // txn) - off // txn
    return float(ntx.mean()) * txn


#: shortest row piece of a spread DMA (elements): smaller pieces waste most of their 128-B
#: transactions and add requests
MIN_PIECE = 32


def chunk_rows(rows: int, cols: int, trips: int) -> list[tuple[int, int, int, int]]:
    """The chunks ``(row, rows, col, cols)`` of a CPE's ``rows`` x ``cols`` window when its get is
    spread over a loop of ``trips`` iterations (tile-to-loop ``spread``): whole-row chunks of
    ceil(rows / trips) rows when there are at least as many rows as iterations, else every row
    cut into ``trips // rows`` column pieces (at most cols / :data:`MIN_PIECE`) of ceil(cols /
    pieces) elements (the last shorter)."""
    if rows >= trips:
        per = -(-rows // max(1, trips))
        return [(r, min(per, rows - r), 0, cols) for r in range(0, rows, per)]
    q = max(1, min(trips // rows, cols // MIN_PIECE))
    w = -(-cols // q)
    return [(r, 1, c, min(w, cols - c)) for r in range(rows) for c in range(0, cols, w)]


def kblocked_a(p: GemmShape, blk: GemmBlocking) -> bool:
    """A is read from the caller's K-blocked copy (``p.kblock_a``: constant A stored (K/bk, M,
    bk), graph_to_tile ``_explicit``): vec n (A stored (M, K)), streamed in K blocks (not
    hoisted, more than one K block)."""
    return p.kblock_a and not p.trans_a and not blk.hoist_a and blk.bk < p.k


def _step_terms(p: GemmShape, vec: str, blk: GemmBlocking, machine: Machine) -> tuple[float, float, float, float, float]:
    """(mv_a, mv_b, mv_b on its bus, t_dma_step, t_comp_step) of one K step (seconds, bytes)."""
    e, lda, ldb = p.elem, p.lda, p.ldb
    assert lda is not None and ldb is not None
    bm, bn, bk = blk.bm, blk.bn, blk.bk
    cyc = machine.cycles_to_seconds
    bw = machine.peak_bw_cg * 1e9
    txn = machine.mem_txn_bytes
    mloc = _ceil(bm, N_CPE)

    def al(ld: int, run: int) -> bool:  # every run starts on a transaction: row pitch and run
        return (ld * e) % txn == 0 and (run * e) % txn == 0  # (block offsets are run multiples)

    # A pieces: vec m / trans_a: bk runs of mloc elements (aligned when the run is whole
    # transactions and the row pitch too); (M, K) storage: mloc runs of bk elements
    if p.trans_a:
        mv_a = N_CPE * bk * _txn_bytes(mloc * e, txn, al(lda, mloc))
    elif kblocked_a(p, blk):  # one run of the CPE's mloc rows x bk
        mv_a = N_CPE * _txn_bytes(mloc * bk * e, txn, (mloc * bk * e) % txn == 0)
    else:
        mv_a = N_CPE * mloc * _grid_bytes(lda * e, bk * e, bk * e, txn)
    if ldb == bn:
        mv_b = _txn_bytes(bk * bn * e, txn, al(bn, bk * bn))
    else:
        mv_b = bk * _grid_bytes(ldb * e, bn * e, bn * e, txn)
    # a small broadcast occupies the issuing CPE's bus (its data phase adds to that bus's
    # quarter of the A pieces); a large one is split over the 4 buses (loop-to-sw bcast_parts)
    split = bk * bn * e >= BCAST_SPLIT_BYTES
    mv_b_bus = (1 if split else machine.n_dma_bus) * mv_b
    step_bytes = (0.0 if blk.hoist_a else mv_a) + (0.0 if blk.hoist_b else mv_b_bus)
    t_dma_step = cyc(machine.dma_latency) + step_bytes / bw if step_bytes else 0.0
    vlen, olen = (mloc, bn) if vec == "m" else (bn, mloc)
    t_comp_step = cyc(block_cycles(vlen, olen, bk) + 2 * machine.sync_array)
    return mv_a, mv_b, mv_b_bus, t_dma_step, t_comp_step


def residual_spread(p: GemmShape, vec: str, blk: GemmBlocking, machine: Machine) -> int:
    """Chunks of the residual window's get spread over the K loop (tile-to-loop ``spread``:
    chunk j issued in K iteration j behind that step's loads, instead of one get of the CPE's
    rows at the block start that the next steps' loads queue behind), 0 when it stays one get.
    Spread when ``p`` has a fused residual, the window is one get per CPE (mloc >= 2 whole rows
    of the block, M a multiple of bm, columns not clipped), with several blocks the staging tile
    is double-buffered (tile-to-loop peels the first block: its own window and the next block's
    are spread over its K loop; else they would be issued in a row before the block loop, a CPE
    stalling behind its 3 waiting requests), the pipelined K loop has >= 2
    iterations (nk - 1, the last one peeled) and a step's compute covers its loads plus one
    chunk's data: otherwise the chunks lengthen DMA-bound steps (simulator: on a bus saturated by
    the steps' large A pieces each extra request of a CPE waits a whole round-robin round, e.g.
    ResNet-50 1x1 512->2048 on 7x7 + shortcut: 277k -> 300k cycles if spread anyway)."""
    mloc, nk = _ceil(blk.bm, N_CPE), _ceil(p.k, blk.bk)
    if not p.residual or mloc < 2 or p.m % blk.bm or blk.bn > p.n or nk - 1 < 2:
        return 0
    if p.batch * _ceil(p.m, blk.bm) * _ceil(p.n, blk.bn) > 1 and not blk.double_c:
        return 0  # (several blocks: the first block's windows go to its peeled K loop)
    n = len(chunk_rows(mloc, blk.bn, nk - 1))
    _, _, _, t_dma_step, t_comp_step = _step_terms(p, vec, blk, machine)
    # a chunk's data phase (its start-up overlaps the step's)
    t_chunk = _put_bytes(p, blk, machine) / (machine.peak_bw_cg * 1e9) / n
    return n if n >= 2 and t_comp_step >= t_dma_step + t_chunk else 0


def put_spread(p: GemmShape, vec: str, blk: GemmBlocking, machine: Machine) -> int:
    """Chunks of each block's C put spread over the next block's K loop (tile-to-loop
    ``spread``: the put of block i issued in chunks behind the steps' loads of block i + 1 instead
    of one put at the end of block i that the next steps' loads queue behind), 0 when it stays
    one put. Spread when the staging tile is double-buffered (the put's slot is rewritten two
    blocks later), there is one block loop (a single M or N block, one batch iteration) of >= 4
    blocks (tile-to-loop peels the first and the last block: >= 2 loop iterations), the window
    is one put per CPE (M a multiple of bm, columns not clipped), the K loop has >= 2 pipelined
    iterations, and a step's compute covers its loads plus one chunk of the put (and one of the
    residual window when that is spread too, :func:`residual_spread`)."""
    mloc, nk = _ceil(blk.bm, N_CPE), _ceil(p.k, blk.bk)
    nm, nn = _ceil(p.m, blk.bm), _ceil(p.n, blk.bn)
    if (not blk.double_c or p.batch != 1 or nm * nn < 4 or (nm > 1 and nn > 1) or p.m % blk.bm
            or blk.bn > p.n or nk - 1 < 2):
        return 0
    n = len(chunk_rows(mloc, blk.bn, nk - 1))
    _, _, _, t_dma_step, t_comp_step = _step_terms(p, vec, blk, machine)
    bw = machine.peak_bw_cg * 1e9
    t_chunk = _put_bytes(p, blk, machine) * machine.dma_put_bw_factor / bw / n
    nr = residual_spread(p, vec, blk, machine)
    if nr:
        t_chunk += _put_bytes(p, blk, machine) / bw / nr
    return n if n >= 2 and t_comp_step >= t_dma_step + t_chunk else 0


def _put_bytes(p: GemmShape, blk: GemmBlocking, machine: Machine) -> float:
    """Bytes moved by one block's C window (all CPEs; unclipped), as :func:`overlap_cost`."""
    mloc, bn, e, txn = _ceil(blk.bm, N_CPE), blk.bn, p.elem, machine.mem_txn_bytes
    ldc = p.ldc or p.n

    def al(ld: int, run: int) -> bool:
        return (ld * e) % txn == 0 and (run * e) % txn == 0

    return N_CPE * (_txn_bytes(mloc * bn * e, txn, al(bn, mloc * bn)) if ldc == bn else
                    mloc * _grid_bytes(ldc * e, bn * e, bn * e, txn))


def overlap_cost(p: GemmShape, vec: str, blk: GemmBlocking, machine: Machine, name: str = "gemm") -> KernelCost:
    """:class:`~taihu.backends.model.conv.KernelCost` on ``machine`` of one plan of ``p`` (module
    docstring; ``p.trans_a`` and ``lda/ldb/ldc`` resolved: A stored (K, M) with vec m) with
    vector dim ``vec`` and blocking ``blk`` (:func:`overlap_blocking`): blocks of ``bm`` rows
    (mloc = bm/64 per CPE) x ``bn`` columns; ``bn`` > n: one block whose B columns are padded in
    memory to ``bn`` and whose C store is clipped to n (one DMA per row of the CPE's block)."""
    m, n, k, e, batch, maps, residual = p.m, p.n, p.k, p.elem, p.batch, p.maps, p.residual
    lda, ldb, ldc = p.lda, p.ldb, p.ldc
    assert lda is not None and ldb is not None and ldc is not None
    bm, bn, bk, double_c = blk.bm, blk.bn, blk.bk, blk.double_c
    bias = p.bias_along == "m"
    clipped = bn > n
    cyc = machine.cycles_to_seconds
    bw = machine.peak_bw_cg * 1e9
    txn = machine.mem_txn_bytes
    mloc = _ceil(bm, N_CPE)
    nm, nn, nk = _ceil(m, bm), (1 if clipped else _ceil(n, bn)), _ceil(k, bk)
    blocks = nm * nn
    def al(ld: int, run: int) -> bool:  # every run starts on a transaction: row pitch and run
        return (ld * e) % txn == 0 and (run * e) % txn == 0  # (block offsets are run multiples)

    mv_a, mv_b, mv_b_bus, t_dma_step, t_comp_step = _step_terms(p, vec, blk, machine)
    # an operand block invariant in the block loops (one K step, a single M resp. N block) is
    # loaded once per batch iteration (emit_gemm's weight hoisting, overlap_blocking), exposed
    hoist_a, hoist_b = blk.hoist_a, blk.hoist_b
    t_hoist = ((cyc(machine.dma_latency) + mv_a / bw) if hoist_a else 0.0) + (
        (cyc(machine.dma_latency) + mv_b_bus / bw) if hoist_b else 0.0)
    c_local = mloc * bn
    epi = FILL_CYCLES_PER_ELEM * c_local + MAP_CYCLES_PER_ELEM * maps * c_local
    epi += (TRANSPOSE_CYCLES_PER_ELEM if vec == "m" else MAP_CYCLES_PER_ELEM) * c_local if e != 8 or vec == "m" else 0.0
    t_bias = t_bias_hoisted = 0.0
    if bias:  # the (bm, 1) bias rows: loaded per block (at the block start, emit_gemm: only
        # the conversion is exposed), once when there is one M block (hoisted)
        epi += BIAS_CYCLES_PER_ELEM * c_local
        tb = cyc(machine.dma_latency + MAP_CYCLES_PER_ELEM * mloc) + N_CPE * _txn_bytes(mloc * e, txn, False) / bw
        if nm == 1:
            t_bias_hoisted = tb
        else:
            t_bias = cyc(MAP_CYCLES_PER_ELEM * mloc)
    if clipped:  # one DMA per row: the CPE's rows are not one run in LDM
        mv_c = N_CPE * mloc * _txn_bytes(n * e, txn, False)
        t_put = cyc(mloc * machine.dma_latency) + mv_c * machine.dma_put_bw_factor / bw
    else:
        mv_c = N_CPE * (_txn_bytes(c_local * e, txn, al(bn, c_local)) if ldc == bn else
                        mloc * _grid_bytes(ldc * e, bn * e, bn * e, txn))
        t_put = cyc(machine.dma_latency) + mv_c * machine.dma_put_bw_factor / bw
    res_data = 0.0
    if residual:
        epi += MAP_CYCLES_PER_ELEM * c_local
        res_data = mv_c / bw
    t_epi = cyc(epi) + t_bias
    # Alg 8's wrap (the K loop is the only loop of the block loop): only the first step's DMA
    # of each batch iteration is exposed. A double-buffered staging tile lets a block's put
    # overlap the next block, but each CPE has one DMA in flight: the next step's loads queue
    # behind the put, so the first step after it costs max(compute, put data + step DMA)
    # (simulator, 1x1 128->512 28x28, bn = 112: ~11k cycles per block when the put exceeds a
    # step's compute); the residual window's get joins the block's first step the same way
    # (residual_spread: the window's get spread over the K loop in chunks that the steps' compute
    # covers, so it is not exposed)
    put_data = mv_c * machine.dma_put_bw_factor / bw
    if residual_spread(p, vec, blk, machine):
        res_data = 0.0
    if put_spread(p, vec, blk, machine):  # (put_spread: likewise the puts in the next block's steps)
        put_data = 0.0
    first = max(t_comp_step, t_dma_step + res_data + (put_data if double_c else 0.0))
    if nk == 1:  # one step per block: its epilogue runs while the block's DMAs (the next
        # block's loads, this block's residual window after them, the previous put) are in flight
        per_block = max(first, t_comp_step + t_epi) + (0.0 if double_c else t_put)
    else:
        per_block = (nk - 1) * max(t_dma_step, t_comp_step) + first + t_epi + (0.0 if double_c else t_put)
    # the first step's DMA is exposed once per batch iteration, or once in all when there is a
    # single block (the K loop is then the batch loop's only loop: Alg 8's wrap crosses it)
    n_first = 1 if blocks == 1 and batch > 1 else batch
    total = batch * (t_hoist + t_bias_hoisted + blocks * per_block) + n_first * t_dma_step + (t_put if double_c else 0.0)
    moved = batch * (blocks * (nk * ((0 if hoist_a else mv_a) + (0 if hoist_b else mv_b)) + mv_c * (2 if residual else 1)
                               + (N_CPE * mloc * e if bias else 0)) + (mv_a if hoist_a else 0) + (mv_b if hoist_b else 0))
    n_true = min(n, bn * nn)
    useful = batch * e * (m * k * (1 if hoist_a else nn) + (1 if hoist_b else nm) * k * n_true
                          + m * n_true * (2 if residual else 1))
    return KernelCost(
        name, total,
        batch * (blocks * (nk * t_dma_step + t_put + t_bias) + t_bias_hoisted + t_hoist),
        batch * blocks * (nk * t_comp_step + cyc(epi)),
        moved, min(useful, moved), 2 * m * n_true * k * batch,
    )


def _divisors(n: int, unit: int, lo: int) -> list[int]:
    return [d for d in range(lo, n + 1) if n % d == 0 and d % unit == 0]


def overlap_applicability(p: GemmShape) -> str | None:
    """None when the overlapping distribution can run ``p`` (:func:`plan_overlap_gemm`), else
    the reason (one line)."""
    if p.bias_along not in (None, "m"):
        return f"a bias along {p.bias_along} (only a per-row bias, along m, is loaded like C)"
    if p.trans_a or p.trans_b:
        return "A must be stored (M, K) and B (K, N) (trans_a/trans_b)"
    if p.c_full or p.scalars:
        return "no full C operand or scalar operands"
    return None


def overlap_vecs(p: GemmShape) -> list[str]:
    """The vector dims of the overlapping distribution for ``p``: vec m needs the constant A
    (stored (K, M) by the caller); padded B rows (``p.pad_n``): vec n only."""
    return ["n"] if p.pad_n else [v for v in ("m", "n") if v == "n" or p.const_a]


def overlap_storage(p: GemmShape, vec: str, bn: int) -> GemmShape:
    """``p`` with the storage the overlapping plan with vector dim ``vec`` and N block ``bn``
    reads: A stored (K, M) densely with vec m (the caller's transposed copy of the constant),
    ``ldb`` = ``bn`` when not given, ``ldc`` dense when not given."""
    trans_a = vec == "m"
    la = (None if trans_a else p.lda) or (p.m if trans_a else p.k)
    return replace(p, trans_a=trans_a, lda=la, ldb=p.ldb or bn, ldc=p.ldc or p.n)


def _overlap_plan(fixed: GemmShape, machine: Machine, vec: str, blk: GemmBlocking, fp: int, name: str) -> GemmPlan:
    cost = overlap_cost(fixed, vec, blk, machine, name)
    return GemmPlan(fixed.m, fixed.n, fixed.k, fixed.dtype, fixed.trans_a, False, vec, blk.bm, blk.bn, blk.bk,
                    fixed.batch, blk.hoist_a, blk.hoist_b, blk.staged, fp, cost, blk.double_c, overlap=True,
                    spread_res=residual_spread(fixed, vec, blk, machine),
                    spread_put=put_spread(fixed, vec, blk, machine))


def overlap_plan(p: GemmShape, machine: Machine, vec: str, bm: int, bn: int, bk: int, double_c: bool,
                 name: str = "gemm") -> GemmPlan:
    """The overlapping-distribution plan of ``p`` with exactly these parameters (bm = 64 x rows
    per CPE), costed on ``machine``; no legality check (``plan.ldm_bytes`` is its footprint;
    :mod:`taihu.backends.model.schedule` checks)."""
    fixed = overlap_storage(p, vec, bn)
    blk = overlap_blocking(fixed, vec, bm, bn, bk, double_c)
    return _overlap_plan(fixed, machine, vec, blk, overlap_footprint(fixed, blk), name)


def overlap_candidates(p: GemmShape, machine: Machine, name: str = "gemm") -> Iterator[tuple[tuple, GemmPlan]]:
    """Every overlapping-distribution plan :func:`plan_overlap_gemm` considers for ``p`` on
    ``machine``, lazily, with its key ``(t_total, -bk, -bm)`` (the plan = the first minimum);
    nothing when the distribution does not apply (:func:`overlap_applicability`)."""
    if overlap_applicability(p) is not None:
        return
    m, n, k = p.m, p.n, p.k
    whole_m = _ceil(m, N_CPE)
    mlocs = sorted({q for q in (1, 2, 4, 8, 16, 32, 64) if q < whole_m} | {whole_m})
    bks = _divisors(k, 8, 8)
    for vec in overlap_vecs(p):
        if p.pad_n:
            bns = [_ceil(n, 4) * 4]
        else:
            bns = sorted(set(_divisors(n, 4, 16)) | {n})
            if vec == "n":
                bns = [b for b in bns if b % 4 == 0]
        for bn in bns:
            fixed = overlap_storage(p, vec, bn)
            for mloc in mlocs:
                if vec == "m" and mloc % 4:
                    continue
                bm = mloc * N_CPE
                nm = _ceil(m, bm)
                nn = 1 if p.pad_n else _ceil(n, bn)
                for bk in bks:
                    for double_c in ((True, False) if nm * nn * p.batch > 1 else (False,)):
                        blk = overlap_blocking(fixed, vec, bm, bn, bk, double_c)
                        fp = overlap_footprint(fixed, blk)
                        if fp > machine.ldm_user_bytes:
                            continue
                        plan = _overlap_plan(fixed, machine, vec, blk, fp, name)
                        yield (plan.cost.t_total, -bk, -bm), plan


def plan_overlap_gemm(p: GemmShape, machine: Machine, name: str = "gemm") -> GemmPlan | None:
    """The cheapest overlapping-distribution GEMM plan of ``p`` on ``machine`` (a
    :class:`~taihu.backends.model.conv.GemmPlan` with ``overlap=True``) or None when the
    distribution does not apply to ``p`` or nothing fits ``machine.ldm_user_bytes``. ``p`` must
    have A stored (M, K) and B (K, N) (``trans_a/b`` False), no full C operand and no scalars;
    vec m needs ``p.const_a`` (A is stored (K, M): the caller stores the constant transposed)
    and mloc % 4 == 0; vec n needs ``bn % 4 == 0`` (B's rows vector-loaded), or ``p.pad_n``: B's
    rows are padded in memory to ``bn`` = n rounded up to 4 (``ldb`` = bn; one N block) and only
    vec n plans are returned. ``p.bias_along`` must be None or "m" (a per-output-channel bias,
    loaded ``cpe`` like C). Blockings: mloc = bm/64 rows per CPE (powers of two and the whole
    M), bk a multiple of 8 dividing K, bn dividing N (no border blocks; >= 16) or N itself.
    ``name``: the :class:`~taihu.backends.model.conv.KernelCost` name. The candidates:
    :func:`overlap_candidates` (minimum modelled time; ties: larger bk, then larger bm)."""
    return Enumerated(lambda: overlap_candidates(p, machine, name)).best()
