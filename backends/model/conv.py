"""Per-layer lowering plans and their analytic cost: memory-level GEMM (FC, explicit/Winograd
convolution GEMMs) and the three tensorised convolution algorithms (algorithms.md §B, §C, §E7;
004 §4.2, §5.1).

This module is the *model* half of ``convert-graph-to-tile``'s GEMM and convolution patterns
(``passes/conversion/graph_to_tile/{gemm,conv}.py``): every plan here describes exactly the loop
nest those patterns emit (block sizes, vector scheme, which operands are staged in fp32 and
converted in LDM, which DMAs are hoisted), and its cost is the seed's model of that nest:

* DMA: eq 3-2 (004 L597; spec model §9.1) with the 128-B transaction waste of every per-CPE
  block (:func:`taihu.backends.model.gemm_blocking.tile_moved_bytes`, spec §4.4), one start-up
  latency per step (``dma_latency_overlap``);
* compute: the structural mesh-GEMM primitive model
  (:class:`~taihu.backends.model.gemm_blocking.StructuralPrimitiveModel`, eq 4-2 form, 004 L876),
  fp32<->fp64 conversion in LDM at 2 P1 slots per 4 elements (A7, 004 L823), element-wise maps
  at the same rate;
* overlap: double-buffered A/B streams, ``max(T_DMA, T_compute)`` per step (004 L674, swAutoDNN's
  ``T_overall = max(T_DMA, T_compute)``, L1566), prologue DMA and epilogues (C fill, convert, put)
  exposed;
* memory-bound kernels: the im2col and Winograd transform kernels are split into tasks by
  :mod:`taihu.backends.model.tasks`, the same functions tile-to-loop's ``mem_prims.py`` lowers
  (:func:`im2col_tasks`, :func:`winograd_input_tasks`, :func:`winograd_output_tasks`), and costed as synchronous tasks over 64 CPEs (:func:`parallel_tasks_cost`:
  ``max(moved / PEAK_BW, per-CPE latencies + compute)`` + one task's fill); relayouts and the
  bias map: ``#DMA per CPE x T_latency + moved / PEAK_BW`` (:func:`memory_bound_cost`);
* border effects measured on the simulator: a window clipped inside a CPE's piece along its
  memory lead dim (:func:`n_border_clean`) moves row by row and synchronously -- loads lose their
  prefetch (those steps cost ``t_dma + t_comp``), C stores cost :data:`CLIP_ROW_LATENCIES` DMA
  latencies per row of the piece;
* model vs simulator (ResNet-50 conv layers alone, B = 1, 22 layers with >= 64 channels):
  median -3 %, mean |error| 4 %; DGEMM 1024^3 -2 %.

Units: seconds, bytes, flop; GFLOPS = 1e9 flop/s. All machine numbers come from the
:class:`~taihu.target.machine.Machine` every planner and cost function takes (no process-global
default: the caller -- ``convert-graph-to-tile``'s ``plan_machine``, a benchmark driver, a test --
chooses it, e.g. ``target/configs/sw26010.toml``).

Problems: a GEMM is a :class:`GemmShape` (dims, storage, epilogue), a convolution a
:class:`ConvShape`; a GEMM blocking (block sizes and the LDM buffer structure) is a
:class:`GemmBlocking`.

Algorithm choice (§C5, 004 L1320, L1674: "select per layer ... by the analytic model"):
:func:`choose_conv` costs every applicable algorithm and keeps the minimum; ``algorithm=`` forces
one and raises :class:`NotApplicable` (with the reason) when it cannot run the layer:

* ``im2col`` (explicit GEMM, §C2): every layer (groups, strides, dilations, any kernel);
* ``implicit`` (§C3, Algorithms 3/4): ``group == 1`` and both channel counts >= 64 (the
  primitive needs them, 004 L1266);
* ``winograd`` (§C4, Algorithm 5): 3x3 kernels, stride 1, dilation 1, ``group == 1``.

Every planner is a lazily enumerated space of its candidates (:mod:`taihu.backends.model.choice`:
``gemm_candidates``, ``implicit_candidates``, ``explicit_space``, ``winograd_space``), each
candidate a complete plan with its cost, and the planner returns the space's pick;
:mod:`taihu.backends.model.schedule` names every candidate's free decisions (a ``Schedule``) and
builds the plan of any legal schedule (``*_plan`` builders here).

Winograd performance is reported in "effective" GFLOPS = direct-convolution flops / time
(004 L1268-1270), so it may exceed the machine peak.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from taihu.backends.model.gemm_blocking import (
    K_UNIT,
    OTHER_UNIT,
    VEC_UNIT,
    StructuralPrimitiveModel,
    candidate_sizes,
    shape_class,
    t_dma_tiles,
    tile_moved_bytes,
)
from taihu.backends.model import tasks
from taihu.backends.model.choice import Cheapest, Conditional, Enumerated, Mapped, Preferred, Space
from taihu.backends.model.tasks import Im2colTasks, WinogradTiling, winograd_tiles
from taihu.target.machine import Machine

if TYPE_CHECKING:  # (unfold_conv and depthwise_conv import this module; choose_conv imports them when planning)
    from taihu.backends.model.depthwise_conv import DepthwisePlan
    from taihu.backends.model.grouped_conv import GroupedPlan
    from taihu.backends.model.unfold_conv import UnfoldPlan

__all__ = [
    "ALGORITHMS",
    "ConvChoice",
    "ConvShape",
    "EXPLICIT_FORMS",
    "ExplicitPlan",
    "GemmBlocking",
    "GemmPlan",
    "GemmShape",
    "ImplicitPlan",
    "KernelCost",
    "NotApplicable",
    "WinogradPlan",
    "applicability",
    "check_gemm_shape",
    "choose_conv",
    "explicit_forms",
    "explicit_gemm_shape",
    "explicit_needs_im2col",
    "explicit_plan",
    "explicit_residual_apart",
    "explicit_space",
    "flat_blocks",
    "fuses_residual",
    "gemm_blocking",
    "gemm_candidates",
    "gemm_epilogue_bytes",
    "gemm_operand_layouts",
    "gemm_plan",
    "gemm_storages",
    "im2col_cost",
    "im2col_tasks",
    "implicit_candidates",
    "implicit_group_shapes",
    "implicit_plan",
    "implicit_space",
    "is_pointwise",
    "n_border_clean",
    "parallel_tasks_cost",
    "plan_explicit",
    "plan_gemm",
    "plan_implicit",
    "plan_winograd",
    "residual_cost",
    "winograd_gemm_shapes",
    "winograd_input_cost",
    "winograd_input_tasks",
    "winograd_output_cost",
    "winograd_output_tasks",
    "winograd_plan",
    "winograd_space",
    "winograd_tiles",
    "winograd_tiles_per_cpe",
    "winograd_transforms_fit",
]

MESH = 8
N_CPE = MESH * MESH
LDM_ALIGN = 32  # bytes, per-buffer rounding (loop.ldm_buffer, vector alignment)
#: P1 cycles per element of an element-wise map / conversion in LDM: one vector load and one
#: vector store per 4 lanes (A7, 004 L823; the same rate as StructuralPrimitiveModel's convert).
MAP_CYCLES_PER_ELEM = 2 / 4
FILL_CYCLES_PER_ELEM = 1 / 4
#: [param, measured] P1 cycles per element of a conversion/copy that also changes the LDM layout
#: (a tile stored ``col``: ``loop.map transpose``, a strided scalar copy nest): simulator,
#: f32 <-> f64 transposes of 8x64 .. 128x8 blocks, 2.00-2.09 cycles per element.
TRANSPOSE_CYCLES_PER_ELEM = 2.05
#: Largest number of C tiles sharing one A (weight) tile in the implicit convolution (they are
#: unrolled in the tile IR).
MAX_GROUP = 8
#: Minimum implicit-GEMM channel count (004 L1266).
IMPLICIT_MIN_CHANNELS = 64
#: [param, measured] RLC waiting per tile.gemm call of the implicit convolution: the 8 SUMMA
#: steps of a small per-tap call wait for the broadcasts of the CPEs that hold row/column T
#: (simulator, 1x128x56x56 3x3 implicit, bm=128 bn=64 bk=128: 2.56M cycles of RLC wait over 504
#: calls, ~5000 per call, as much as the 4872-cycle primitive itself); the structural primitive
#: model counts only the 11-cycle message latency per step.
IMPLICIT_RLC_CALL_CYCLES = 5000
#: [param, measured] CPE cycles per element written by the im2col kernel's ``loop.map im2col``
#: (the unfolding of R input rows into R x kw x Wo) and by its ``transpose`` to (kw, R, Wo)
#: (R > 1): simulator, 1x64x56x56 3x3 p1 (R = 28): 19.2k micro-kernel cycles per CPE for
#: 2 x 9.4k elements.
IM2COL_MAP_CYCLES_PER_ELEM = 1.0
IM2COL_TRANSPOSE_CYCLES_PER_ELEM = 1.0
#: [param] cycles per micro-kernel run of the whole-plane im2col's per-row unfolds (stride > 1):
#: start-up and loop of a short run (simulator: 1x512x14x14 3x3 s2, ~14k P1 cycles per CPE).
IM2COL_RUN_CYCLES = 20
#: [param, measured] cost of a C block store whose last N block is clipped inside a CPE's
#: piece (N % (bn/8) != 0 at the border: the partial CPEs store their bm/8 rows with one DMA
#: each, synchronously, and the mesh waits for them at the next SUMMA): per row of the piece,
#: this many DMA start-up latencies. Simulator, ResNet-50 B=1 1x1 convs on 7x7 / 14x14 outputs
#: (N = 49, 196): 5.3k (bm = 64) .. 9.2k (bm = 128) extra cycles per boundary block ~ 3 x 200
#: per row.
CLIP_ROW_LATENCIES = 3

ALGORITHMS = ("implicit", "im2col", "winograd")


class NotApplicable(ValueError):
    """A forced convolution algorithm cannot run the layer (the message says why)."""


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _rnd(nbytes: float) -> int:
    return int(-(-nbytes // LDM_ALIGN) * LDM_ALIGN)


def _local(elems: int) -> float:
    """Per-CPE share of a tile of ``elems`` elements distributed over the 64 CPEs."""
    return elems / N_CPE


def _avg_moved(bsize: float, txn: int = 128, aligned: bool = False) -> float:
    """Expected bytes moved for one contiguous block of ``bsize`` bytes: whole 128-B transactions
    (spec §4.4); an unaligned start (4-B granular, uniformly distributed) costs on average
    ``(bsize - 4) / txn + 1`` transactions."""
    if bsize <= 0:
        return 0.0
    if aligned:
        return math.ceil(bsize / txn) * txn
    return ((bsize - 4) / txn + 1) * txn


# --------------------------------------------------------------------------------------------
# Costs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelCost:
    """Modelled time of one ``tile.kernel`` (seconds) and its traffic (bytes).

    ``t_dma`` and ``t_compute`` are the summed DMA and compute times; ``t_total`` is the
    modelled execution time with overlap, ``t_overlap = t_dma + t_compute - t_total`` (eq 3-3).
    """

    name: str
    t_total: float
    t_dma: float
    t_compute: float
    moved_bytes: float
    useful_bytes: float
    flops: int = 0

    @property
    def t_overlap(self) -> float:
        return max(0.0, self.t_dma + self.t_compute - self.t_total)

    @property
    def dma_efficiency(self) -> float:
        """Useful / moved bytes (1.0 when nothing moves)."""
        return self.useful_bytes / self.moved_bytes if self.moved_bytes else 1.0

    def gflops(self) -> float:
        return self.flops / self.t_total / 1e9 if self.t_total > 0 else 0.0


def _sum_costs(name: str, parts: Sequence[KernelCost], flops: int) -> KernelCost:
    return KernelCost(
        name,
        sum(p.t_total for p in parts),
        sum(p.t_dma for p in parts),
        sum(p.t_compute for p in parts),
        sum(p.moved_bytes for p in parts),
        sum(p.useful_bytes for p in parts),
        flops,
    )


def memory_bound_cost(
    name: str,
    blocks: Iterable[tuple[float, float, bool]],
    dmas_per_cpe: float,
    machine: Machine,
    compute_cycles_per_cpe: float = 0.0,
) -> KernelCost:
    """A data-parallel memory-bound kernel (R6, 004 L1227) on ``machine``: ``blocks`` = (count,
    bytes per block, is_put) over the whole kernel; every CPE issues ``dmas_per_cpe`` sequential
    DMAs (eq 3-1/3-2: ``T = dmas x T_latency + moved / PEAK_BW``); compute (maps in LDM)
    overlaps the DMA of the other CPEs only partly, so it is added (no double buffering in
    memory-bound kernels)."""
    moved = useful = 0.0
    t_data = 0.0
    for count, bsize, put in blocks:
        mv = count * _avg_moved(bsize, machine.mem_txn_bytes)
        moved += mv
        useful += count * bsize
        t_data += mv * (machine.dma_put_bw_factor if put else 1.0) / (machine.peak_bw_cg * 1e9)
    t_dma = dmas_per_cpe * machine.cycles_to_seconds(machine.dma_latency) + t_data
    t_comp = machine.cycles_to_seconds(compute_cycles_per_cpe)
    return KernelCost(name, t_dma + t_comp, t_dma, t_comp, moved, useful, 0)


# --------------------------------------------------------------------------------------------
# Memory-level GEMM plan (graph.matmul / graph.gemm, explicit and Winograd convolution GEMMs)
# --------------------------------------------------------------------------------------------


def gemm_operand_layouts(vec: str, trans_a: bool, trans_b: bool) -> dict[str, tuple[str, str]]:
    """(distribution, LDM layout) of the fp64 A, B, C tiles the lowering uses for ``vec``:
    scheme 4 (vec n: A travels along mesh rows, B along columns) or scheme 2 (vec m), Table 4.1
    (algorithms.md §A4). The operand travelling along rows has M/N on mesh rows; the vector-loaded
    operand and C keep the vectorised dim contiguous in LDM (tile.gemm verifier rules)."""
    on_rows = {"A": "m", "B": "k", "C": "m"}  # schemes 2 and 4: A travels along mesh rows
    dims = {
        "A": ("k", "m") if trans_a else ("m", "k"),
        "B": ("n", "k") if trans_b else ("k", "n"),
        "C": ("m", "n"),
    }
    out = {}
    vec_operand = "A" if vec == "m" else "B"
    for name, d in dims.items():
        dist = "rc" if d[0] == on_rows[name] else "cr"
        layout = "row"
        if name in (vec_operand, "C") and d[1] != vec:
            layout = "col"
        out[name] = (dist, layout)
    return out


def gemm_scheme(vec: str) -> int:
    """Vector scheme of Table 4.1 used by the lowering: 4 for vec n, 2 for vec m."""
    return 4 if vec == "n" else 2


@dataclass(frozen=True)
class GemmPlan:
    """The K-innermost blocked GEMM kernel ``C (m, n) = op(A) (m, k) x op(B) (k, n)`` the
    lowering emits (004 §4.2, algorithms.md §B): blocks (bm, bn, bk) with the §A5 multiples,
    vector ``vec`` (scheme :func:`gemm_scheme`), ``batch`` independent GEMMs of the same shape in
    an outer loop (groups of a grouped convolution, the 16 Winograd GEMMs); ``hoist_a/b``: the
    operand's block is loop-invariant in the M/N loops (a single K block and a single N resp. M
    block) and is loaded once per batch iteration (weight-DMA hoisting, 004 L1128).
    ``staged``: operands that go through an LDM staging buffer of the memory element type
    (fp32 data, or fp64 data whose LDM layout differs from main memory) and ``tile.map convert``;
    ``double_c``: the tile C is stored from (the staging tile when C is staged, else the fp64 C
    tile itself) is double-buffered so a block's put overlaps the next block (tile-to-loop's
    delayed store wait). ``overlap``: the overlapping distribution instead of the SUMMA
    (:mod:`taihu.backends.model.overlap_gemm`: B ``rep``, A and C split 64-way along M,
    ``bn = n``, f32 A/B used directly by a mixed-precision ``gemm_block``). ``spread_res``
    (derived, overlapping distribution): the chunks the fused residual window's get is spread
    into over the K loop (:func:`~taihu.backends.model.overlap_gemm.residual_spread`), 0 = one
    get; ``spread_put`` likewise each block's C put over the next block's K loop
    (:func:`~taihu.backends.model.overlap_gemm.put_spread`).
    """

    m: int
    n: int
    k: int
    dtype: str
    trans_a: bool
    trans_b: bool
    vec: str
    bm: int
    bn: int
    bk: int
    batch: int
    hoist_a: bool
    hoist_b: bool
    staged: frozenset[str]
    ldm_bytes: int
    cost: KernelCost
    double_c: bool = False
    overlap: bool = False
    spread_res: int = 0
    spread_put: int = 0

    @property
    def scheme(self) -> int:
        return gemm_scheme(self.vec)

    @property
    def blocks(self) -> tuple[int, int, int]:
        return (_ceil(self.m, self.bm), _ceil(self.n, self.bn), _ceil(self.k, self.bk))

    @property
    def shape_class(self) -> str:
        """GEMM / GEMP / GEPB (Goto's classes, 004 L835)."""
        return shape_class(self.m, self.n, self.k)

    @property
    def layouts(self) -> dict[str, tuple[str, str]]:
        if self.overlap:  # A split along its M dim (dim 1 when stored (K, M)), B on every CPE
            return {"A": ("cpe1" if self.trans_a else "cpe", "row"), "B": ("rep", "row"),
                    "C": ("cpe", "col" if self.vec == "m" else "row")}
        return gemm_operand_layouts(self.vec, self.trans_a, self.trans_b)

    @property
    def flat_blocks(self) -> bool:
        """The M and N block loops are emitted as ONE loop over the blocks (:func:`flat_blocks`)."""
        return flat_blocks(self.m, self.n, self.bm, self.bn)

    @property
    def gflops(self) -> float:
        return self.cost.gflops()


def n_border_clean(n: int, bn: int) -> bool:
    """Does the last N block of a dimension ``n`` blocked by ``bn`` (split 8-way over the mesh,
    pieces of bn/8) end at a piece boundary? Then every CPE's piece of a border window is either
    whole or empty, so its DMAs stay one per piece and asynchronous (tile-to-loop); otherwise the
    partial pieces move row by row, synchronously (see :data:`CLIP_ROW_LATENCIES`)."""
    return (n % bn) % max(1, bn // MESH) == 0


def flat_blocks(m: int, n: int, bm: int, bn: int) -> bool:
    """Does the lowering emit the (M, N) block loops as one loop ``cMN`` over the
    ``ceil(m/bm) * ceil(n/bn)`` blocks (block b -> rows (b / nn) * bm, columns (b % nn) * bn)?
    Yes when both have several blocks and no boundary block (m % bm == n % bn == 0): the K loop
    is then the only loop of the block loop's body, so tile-to-loop's Alg. 8 wrap prefetches the
    next block's first A/B tiles across every block boundary and only the nest's first DMA is
    exposed (nested cM{cN{cK}} exposes one per M row of blocks). Boundary shapes keep the nest
    (tile-to-loop peels one boundary iteration per loop)."""
    return _ceil(m, bm) > 1 and _ceil(n, bn) > 1 and m % bm == 0 and n % bn == 0


def _staged_operands(dtype: str, vec: str, trans_a: bool, trans_b: bool) -> frozenset[str]:
    if dtype == "f32":
        return frozenset({"A", "B", "C"})
    lay = gemm_operand_layouts(vec, trans_a, trans_b)
    return frozenset(n for n, (_, layout) in lay.items() if layout != "row")


@dataclass(frozen=True)
class GemmShape:
    """One memory-level GEMM ``C (m, n) = op(A) (m, k) x op(B) (k, n)``, ``batch`` times (the
    groups of a grouped convolution, the 16 Winograd GEMMs), with its operand storage and C
    epilogue: the problem :func:`plan_gemm` and
    :func:`~taihu.backends.model.overlap_gemm.plan_overlap_gemm` plan. Use
    ``dataclasses.replace`` for variants.

    * ``dtype``: memory element type, "f32" or "f64"; ``trans_a``: A stored (k, m),
      ``trans_b``: B stored (n, k); ``lda/ldb/ldc``: leading dims (elements) of the stored
      matrices (None: dense);
    * epilogue per C block: ``c_full`` (a full (m, n) C operand loaded, converted, scaled),
      ``bias_along`` "n" (a (1, n) bias row, FC) or "m" (an (m, 1) column, convolution),
      ``maps`` element-wise maps on C (alpha, relu), ``scalars`` (1, 1) rep tiles (alpha,
      beta), ``residual`` a residual add fused into the C store (common.py ``store_fused``: a
      double-buffered tile like the stored one, its C-block get prefetched at the block start);
    * ``const_a/b``: the operand is a compile-time constant whose storage order the caller can
      choose (it stores it transposed, densely, when the plan's ``trans_a/b`` differs from the
      shape's);
    * ``b_clean``: B's storage is padded to the N block (im2col's image columns), so its loads
      never clip inside a CPE's piece; ``pad_n``: B's rows are padded in memory to n rounded up
      to 4 (``ldb`` = that, e.g. an im2col copy's padded image columns; overlapping
      distribution only); ``kblock_a``: the constant A is stored K-blocked by the caller when
      the overlapping distribution streams it in K blocks ((K/bk, M, bk): each CPE's rows of a
      block are one contiguous run; the convolution's weights, graph_to_tile ``_explicit``)."""

    m: int
    n: int
    k: int
    dtype: str = "f32"
    trans_a: bool = False
    trans_b: bool = False
    lda: int | None = None
    ldb: int | None = None
    ldc: int | None = None
    batch: int = 1
    c_full: bool = False
    bias_along: str | None = None
    maps: int = 0
    scalars: int = 0
    residual: bool = False
    const_a: bool = False
    const_b: bool = False
    b_clean: bool = False
    pad_n: bool = False
    kblock_a: bool = False

    @property
    def elem(self) -> int:
        """Bytes per element in memory (4 or 8)."""
        return 4 if self.dtype == "f32" else 8


@dataclass(frozen=True)
class GemmBlocking:
    """One blocking of the GEMM kernel: blocks (bm, bn, bk) and its LDM buffer structure --
    ``staged``: operands that go through an LDM staging buffer of the memory element type
    (:class:`GemmPlan`); ``hoist_a/b``: the operand's block is loaded once per batch iteration
    (single-buffered); ``double_c``: the tile C is stored from is double-buffered."""

    bm: int
    bn: int
    bk: int
    staged: frozenset[str] = frozenset()
    hoist_a: bool = False
    hoist_b: bool = False
    double_c: bool = False


def gemm_footprint(blk: GemmBlocking, dtype: str, groups: int = 1, epilogue_bytes: int = 0) -> int:
    """Per-CPE LDM bytes of the lowering's buffers for ``blk`` with ``dtype`` ("f32"/"f64")
    memory elements: fp64 A, B, ``groups`` C tiles; staging buffers (memory element type) of
    staged operands; streamed (not hoisted) A/B DMA targets double-buffered (004 L674), and with
    ``double_c`` the tile C is stored from (its staging tile, else the fp64 C tile) too (the put
    of one C block overlaps the next block); each buffer rounded up to 32 B; plus
    ``epilogue_bytes``."""
    e = 4 if dtype == "f32" else 8
    bm, bn, bk, staged, double_c = blk.bm, blk.bn, blk.bk, blk.staged, blk.double_c
    a, b, c = bm * bk, bk * bn, bm * bn
    total = 0
    for name, elems, hoisted in (("A", a, blk.hoist_a), ("B", b, blk.hoist_b)):
        nbuf = 1 if hoisted else 2
        if name in staged:
            total += nbuf * _rnd(e * _local(elems)) + _rnd(8 * _local(elems))
        else:
            total += nbuf * _rnd(8 * _local(elems))
    total += (2 if double_c and "C" not in staged else 1) * groups * _rnd(8 * _local(c))
    if "C" in staged:
        total += (2 if double_c else 1) * _rnd(e * _local(c))
    return total + epilogue_bytes


def _tile_moved(rows: int, lead: int, ld: int, elem: int, machine: Machine, stride: int = 1) -> float:
    """Bytes moved (summed over the 64 CPEs) to load one (rows x lead) tile distributed 8x8 whose
    ``lead`` dim is contiguous in memory with element stride ``stride`` (§B item 6); strided
    windows (``stride > 1``) move one transaction per element."""
    if stride == 1:
        return tile_moved_bytes(rows, lead, max(ld, lead), elem, machine.mem_txn_bytes)
    return float(rows * lead * machine.mem_txn_bytes)


def _gemm_cost(p: GemmShape, vec: str, blk: GemmBlocking, machine: Machine, name: str) -> KernelCost:
    """:class:`KernelCost` of the blocked GEMM kernel of ``p`` (storage orders and leading dims
    resolved: ``lda/ldb/ldc`` set) with vector dim ``vec`` and blocking ``blk`` (module
    docstring: per step max(DMA, compute), Alg 8's wrap, epilogues, border effects)."""
    m, n, k, batch = p.m, p.n, p.k, p.batch
    trans_a, trans_b, lda, ldb, ldc = p.trans_a, p.trans_b, p.lda, p.ldb, p.ldc
    assert lda is not None and ldb is not None and ldc is not None
    bm, bn, bk, staged = blk.bm, blk.bn, blk.bk, blk.staged
    hoist_a, hoist_b, double_c = blk.hoist_a, blk.hoist_b, blk.double_c
    bias_elems = {"n": bn, "m": bm}.get(p.bias_along or "", 0)
    prim = StructuralPrimitiveModel(machine)
    e = p.elem
    nm, nn, nk = _ceil(m, bm), _ceil(n, bn), _ceil(k, bk)
    cyc = machine.cycles_to_seconds
    # DMA of one block of each operand (bytes moved, summed over the CPEs).
    mv_a = _tile_moved(bk, bm, lda, e, machine) if trans_a else _tile_moved(bm, bk, lda, e, machine)
    mv_b = _tile_moved(bn, bk, ldb, e, machine) if trans_b else _tile_moved(bk, bn, ldb, e, machine)
    mv_c = _tile_moved(bm, bn, ldc, e, machine)
    lay = gemm_operand_layouts(vec, trans_a, trans_b)
    rate = {o: TRANSPOSE_CYCLES_PER_ELEM if lay[o][1] == "col" else MAP_CYCLES_PER_ELEM for o in "ABC"}
    conv_a = cyc(rate["A"] * _local(bm * bk)) if "A" in staged else 0.0
    conv_b = cyc(rate["B"] * _local(bk * bn)) if "B" in staged else 0.0
    t_prim = prim(bm, bn, bk, vec)
    dma_step = (0.0 if hoist_a else mv_a) + (0.0 if hoist_b else mv_b)
    t_dma_step = t_dma_tiles(dma_step, machine) if dma_step else 0.0
    t_comp_step = t_prim + (0.0 if hoist_a else conv_a) + (0.0 if hoist_b else conv_b)
    t_hoist_dma = (t_dma_tiles(mv_a, machine) if hoist_a else 0.0) + (t_dma_tiles(mv_b, machine) if hoist_b else 0.0)
    t_hoist_comp = (conv_a if hoist_a else 0.0) + (conv_b if hoist_b else 0.0)
    # Epilogue per C block: fill, optional full-C load/convert/scale, bias, maps, convert, put.
    c_local = _local(bm * bn)
    epi_cycles = FILL_CYCLES_PER_ELEM * c_local + MAP_CYCLES_PER_ELEM * c_local * p.maps
    epi_dma = t_dma_tiles(mv_c, machine, put=True)
    epi_moved = mv_c
    if "C" in staged:
        epi_cycles += rate["C"] * c_local
    if p.c_full:
        epi_cycles += (rate["C"] + MAP_CYCLES_PER_ELEM) * c_local
    # a fused residual add (common.py store_fused): its C window is prefetched at the block start
    # (prefetch_fused), so its data joins the block's first DMA (not exposed); the add runs on
    # the stored tile
    # (unless its window is clipped inside the CPE pieces: see the border effects below)
    res_data = mv_c / (machine.peak_bw_cg * 1e9) if p.residual and n_border_clean(n, bn) else 0.0
    t_res = t_dma_tiles(mv_c, machine) if p.residual else 0.0
    if p.residual:
        epi_cycles += MAP_CYCLES_PER_ELEM * c_local
        epi_moved += mv_c
    # bias (a rep tile: one broadcast DMA, tile-to-loop's rep_bcast): loaded per C block at the
    # block start (emit_gemm: its DMA overlaps the K loop, only the conversion is exposed), or
    # once per batch iteration when its window is invariant in the block loops (Alg 7 hoisting:
    # an (M, 1) column with a single M block, a (1, N) row with a single N block).
    bias_hoisted = (p.bias_along == "m" and nm == 1) or (p.bias_along == "n" and nn == 1)
    t_bias = 0.0
    bias_moved = 0.0
    if bias_elems:
        epi_cycles += MAP_CYCLES_PER_ELEM * c_local  # the add
        bias_moved = _avg_moved(bias_elems * e, machine.mem_txn_bytes)
        t_bias = t_dma_tiles(bias_moved, machine)
        bias_cycles = MAP_CYCLES_PER_ELEM * bias_elems  # its fp64 conversion (rep: every CPE)
        if bias_hoisted:
            t_hoist_dma += t_bias
            t_hoist_comp += cyc(bias_cycles)
        else:
            epi_cycles += bias_cycles
            epi_moved += bias_moved
    steps, blocks = nm * nn * nk, nm * nn
    t_put = t_dma_tiles(mv_c, machine, put=True)
    put_data = mv_c * machine.dma_put_bw_factor / (machine.peak_bw_cg * 1e9)
    flat = flat_blocks(m, n, bm, bn)
    # The prefetch (tile-to-loop, Alg 8: prologue DMA + double-buffered loop + peeled last
    # iteration) pipelines the A/B loads over the innermost emitted loop that contains them: the
    # K loop when nk > 1, else the block loop (cMN when flat_blocks, else cN, or cM if nn = 1).
    # Alg 8's wrap: when that loop L is the only loop in the body of its enclosing loop (and L
    # is not split at a boundary), L's last iteration prefetches the first tiles of the
    # enclosing loop's next iteration, so L's first DMA is exposed once per instance of the
    # enclosing loop's enclosing loop:
    #   * nk > 1: the K loop wraps over the block loop when the blocks are one loop (flat, or a
    #     single M or N block): once per batch iteration, or once in total when there is a
    #     single block (the K loop is then the batch loop's only loop); nested cM{cN{cK}}: once
    #     per M row of blocks; K split at a boundary: once per block;
    #   * nk = 1: the block loop wraps over the batch loop when it is the batch body's only loop
    #     (a single loop of blocks): once in total.
    # A double-buffered stored tile (``double_c``) lets the put of a block overlap what follows
    # (its data phase joins the next DMA); otherwise the put is exposed. Hoisted loads (an
    # operand block or the bias invariant in the block loops) are exposed once per batch
    # iteration.
    epi_other_dma = epi_dma - t_put  # bias / full-C loads of the epilogue (exposed)
    t_epi_c = cyc(epi_cycles)
    t_hoist = t_hoist_dma + t_hoist_comp
    if nk > 1:
        extra = (put_data if double_c else 0.0) + res_data
        t_tail = t_epi_c + epi_other_dma + (0.0 if double_c else t_put)
        wrap = k % bk == 0
        single_loop = flat or nn == 1 or nm == 1
        t_exposed = (t_dma_step + extra) + (nk - 1) * max(t_dma_step, t_comp_step) + t_comp_step + t_tail
        t_wrapped = (nk - 1) * max(t_dma_step, t_comp_step) + max(t_dma_step + extra, t_comp_step) + t_tail
        if wrap and blocks == 1 and batch > 1:
            total = batch * (t_hoist + t_wrapped) + (t_exposed - t_wrapped) + (t_put if double_c else 0.0)
        else:
            n_exposed = (1 if single_loop else nm) if wrap else blocks
            per_batch = t_hoist + n_exposed * t_exposed + (blocks - n_exposed) * t_wrapped + (t_put if double_c else 0.0)
            total = batch * per_batch
    else:
        inner = blocks if flat else (nn if nn > 1 else nm)
        outer = blocks // inner
        d = t_dma_step + (put_data if double_c else 0.0) + res_data
        c_it = t_comp_step + t_epi_c + epi_other_dma + (0.0 if double_c else t_put)
        if not d:
            total = batch * (t_hoist + blocks * c_it + (t_put if double_c else 0.0))
        elif outer == 1 and batch > 1:  # wrapped over the batch loop
            t_loop = inner * max(d, c_it)
            total = batch * (t_hoist + t_loop) + d - (max(d, c_it) - c_it) + (t_put if double_c else 0.0)
        else:
            t_loop = d + (inner - 1) * max(d, c_it) + c_it
            total = batch * (t_hoist + outer * t_loop + (t_put if double_c else 0.0))
    # C stores clipped inside a CPE's piece along N (the row-major lead dim of C) at the border
    # (CLIP_ROW_LATENCIES): once per M block and batch iteration (the mesh waits for the partial
    # CPEs at the next block's SUMMA; after the last block only their own row DMAs remain)
    if not n_border_clean(n, bn):
        rows = max(1, bm // MESH)
        total += cyc((batch * nm - 1) * CLIP_ROW_LATENCIES * machine.dma_latency * rows + machine.dma_latency * rows)
        # the residual windows of those blocks are clipped the same way: loaded synchronously
        # (no prefetch), exposed (sim: 1x1 convs to 7x7x2048 + shortcut, bm = 128, N = 49 in a
        # 64 block: 4.8k .. 6.0k cycles per block, compute- or DMA-bound)
        total += batch * nm * t_res
    # A/B loads clipped inside a CPE's piece along their memory lead dim at the border: the
    # partial pieces move row by row, so tile-to-loop loads them synchronously (no prefetch):
    # those steps cost t_dma + t_comp instead of max(t_dma, t_comp) (sim: FC 1x2048 -> 1000 with
    # (K, N) weights, N = 1000 with bn = 1024: every step).
    partial_steps = 0
    if not hoist_b and not p.b_clean:
        if not trans_b and not n_border_clean(n, bn):  # lead N: the last N column of blocks
            partial_steps += nm * nk
        elif trans_b and not n_border_clean(k, bk):  # lead K: the last K step of every block
            partial_steps += blocks
    if not hoist_a:
        if not trans_a and not n_border_clean(k, bk):
            partial_steps += blocks
        elif trans_a and not n_border_clean(m, bm):  # lead M: the last M row of blocks
            partial_steps += nn * nk
    if partial_steps and t_dma_step:
        total += batch * min(partial_steps, steps) * min(t_dma_step, t_comp_step)
    moved = batch * (
        steps * dma_step + (mv_a if hoist_a else 0) + (mv_b if hoist_b else 0) + blocks * epi_moved
        + (bias_moved if bias_hoisted else 0.0)
    )
    useful = batch * e * (m * k + k * n * (nm if not hoist_b else 1) + m * n)
    if not hoist_a:
        useful = batch * e * (m * k * nn + k * n * (nm if not hoist_b else 1) + m * n)
    t_dma = batch * (t_hoist_dma + steps * t_dma_step + blocks * (epi_dma + t_res))
    t_comp = batch * (t_hoist_comp + steps * t_comp_step + blocks * cyc(epi_cycles))
    return KernelCost(name, total, t_dma, t_comp, moved, min(useful, moved) if moved else useful, 2 * m * n * k * batch)


def gemm_storages(p: GemmShape) -> list[GemmShape]:
    """``p`` with its storage orders and leading dims resolved, as :func:`plan_gemm` tries them:
    the given order and, for a constant operand (``p.const_a/b``), also the other one (the caller
    then stores the constant transposed, densely); ``lda/ldb/ldc`` filled in (dense when None)."""
    m, n, k = p.m, p.n, p.k
    trans_a, trans_b = bool(p.trans_a), bool(p.trans_b)
    tas = (trans_a, not trans_a) if p.const_a else (trans_a,)
    tbs = (trans_b, not trans_b) if p.const_b else (trans_b,)
    out = []
    for ta in tas:
        for tb in tbs:
            la = (p.lda if ta == trans_a else None) or (m if ta else k)
            lb = (p.ldb if tb == trans_b else None) or (k if tb else n)
            out.append(replace(p, trans_a=ta, trans_b=tb, lda=la, ldb=lb, ldc=p.ldc or n))
    return out


def check_gemm_shape(p: GemmShape) -> None:
    """Raise ValueError when a dim or ``batch`` of ``p`` is not positive or ``dtype`` is not
    f32/f64."""
    if min(p.m, p.n, p.k) <= 0 or p.batch <= 0:
        raise ValueError(f"GEMM dims must be positive, got m={p.m} n={p.n} k={p.k} batch={p.batch}")
    if p.dtype not in ("f32", "f64"):
        raise ValueError(f"dtype must be f32 or f64, got {p.dtype}")


def gemm_blocking(p: GemmShape, vec: str, bm: int, bn: int, bk: int, double_c: bool) -> GemmBlocking:
    """The :class:`GemmBlocking` of the SUMMA GEMM kernel of ``p`` (storage resolved,
    :func:`gemm_storages`) with vector dim ``vec`` and blocks (bm, bn, bk): the staged operands
    follow from the element type and the LDM layouts; an operand whose block is invariant in the
    block loops (one K step, a single N resp. M block) is hoisted."""
    nm, nn, nk = _ceil(p.m, bm), _ceil(p.n, bn), _ceil(p.k, bk)
    staged = _staged_operands(p.dtype, vec, p.trans_a, p.trans_b)
    return GemmBlocking(bm, bn, bk, staged, nk == 1 and nm == 1 and nn > 1, nk == 1 and nn == 1 and nm > 1, double_c)


def gemm_epilogue_bytes(p: GemmShape, bm: int, bn: int) -> int:
    """Per-CPE LDM bytes of the C epilogue's buffers for blocks (bm, bn): the bias row/column
    (memory type + fp64), the (1, 1) scalar tiles, a fused residual window (double-buffered like
    the stored tile)."""
    e = p.elem
    bias_elems = {"n": bn, "m": bm}.get(p.bias_along or "", 0)
    epi_bytes = 0
    if bias_elems:
        epi_bytes += _rnd(e * bias_elems) + _rnd(8 * bias_elems)
    epi_bytes += p.scalars * _rnd(8)  # alpha / beta (1, 1) rep tiles
    if p.residual:  # the residual window: a double-buffered tile like the stored one
        epi_bytes += 2 * _rnd(e * _local(bm * bn))
    return epi_bytes


def _summa_plan(p: GemmShape, machine: Machine, vec: str, blk: GemmBlocking, ldm_bytes: int, name: str) -> GemmPlan:
    cost = _gemm_cost(p, vec, blk, machine, name)
    return GemmPlan(p.m, p.n, p.k, p.dtype, p.trans_a, p.trans_b, vec, blk.bm, blk.bn, blk.bk, p.batch, blk.hoist_a,
                    blk.hoist_b, frozenset(blk.staged), ldm_bytes, cost, blk.double_c)


def gemm_plan(p: GemmShape, machine: Machine, vec: str, bm: int, bn: int, bk: int, double_c: bool,
              name: str = "gemm") -> GemmPlan:
    """The SUMMA GEMM plan of ``p`` (storage resolved, :func:`gemm_storages`) with exactly these
    parameters, costed on ``machine``; no legality check (``plan.ldm_bytes`` is its footprint,
    compare with ``machine.ldm_user_bytes``; :mod:`taihu.backends.model.schedule` checks)."""
    blk = gemm_blocking(p, vec, bm, bn, bk, double_c)
    fp = gemm_footprint(blk, p.dtype, 1, gemm_epilogue_bytes(p, bm, bn))
    return _summa_plan(p, machine, vec, blk, fp, name)


def gemm_candidates(
    p: GemmShape,
    machine: Machine,
    *,
    vec: str | None = None,
    blocking: tuple[int, int, int] | None = None,
    n_clean: bool = False,
    name: str = "gemm",
) -> Iterator[tuple[tuple, GemmPlan]]:
    """Every SUMMA GEMM plan :func:`plan_gemm` considers for ``p`` on ``machine``, lazily, with
    its key ``(t_total, -bm*bn*bk, not double_c)`` (smaller is better; :func:`plan_gemm` = the
    first minimum): for every storage order (:func:`gemm_storages`), vec in {n, m} (or ``vec``),
    (bm, bn, bk) from :func:`~taihu.backends.model.gemm_blocking.candidate_sizes` (or
    ``blocking``; ``n_clean``: only border-clean N blocks, :func:`n_border_clean`) and a
    double-buffered stored C tile or not (not with ``c_full``), those whose :func:`gemm_footprint`
    fits ``machine.ldm_user_bytes``. Raises ValueError (:func:`check_gemm_shape`)."""
    check_gemm_shape(p)
    for fixed in gemm_storages(p):
        m, n, k, dtype = fixed.m, fixed.n, fixed.k, fixed.dtype
        for v in ([vec] if vec else ["n", "m"]):
            um, un = (VEC_UNIT, OTHER_UNIT) if v == "m" else (OTHER_UNIT, VEC_UNIT)
            if blocking is not None:
                bms, bns, bks = [blocking[0]], [blocking[1]], [blocking[2]]
                if blocking[0] % um or blocking[1] % un or blocking[2] % K_UNIT:
                    continue
            else:
                bms, bns, bks = candidate_sizes(m, um), candidate_sizes(n, un), candidate_sizes(k, K_UNIT)
            if n_clean:
                bns = [b for b in bns if n_border_clean(n, b)]
            for bm in bms:
                for bn in bns:
                    epi_bytes = gemm_epilogue_bytes(fixed, bm, bn)
                    for bk in bks:
                        # (staged operands, double-buffered C): the put of a block overlaps the
                        # next block when the tile it is stored from is double-buffered (the
                        # staging tile, or the fp64 C tile itself when C is not staged: no copy, 2
                        # instead of 3 C blocks of LDM). A full C operand is loaded into that
                        # tile, which then cannot be a delayed store (tile-to-loop):
                        # single-buffered.
                        for double_c in ((False,) if fixed.c_full else (True, False)):
                            blk = gemm_blocking(fixed, v, bm, bn, bk, double_c)
                            fp = gemm_footprint(blk, dtype, 1, epi_bytes)
                            if fp > machine.ldm_user_bytes:
                                continue
                            plan = _summa_plan(fixed, machine, v, blk, fp, name)
                            yield (plan.cost.t_total, -bm * bn * bk, not double_c), plan


def plan_gemm(
    p: GemmShape,
    machine: Machine,
    *,
    vec: str | None = None,
    blocking: tuple[int, int, int] | None = None,
    n_clean: bool = False,
    name: str = "gemm",
) -> GemmPlan:
    """Choose the blocking of the K-innermost GEMM kernel of ``p`` on ``machine`` (§B item 7,
    E7): minimum modelled time over vec in {n, m} (or ``vec``) and every (bm, bn, bk) from
    :func:`~taihu.backends.model.gemm_blocking.candidate_sizes` (§A5 multiples, power-of-two
    lists plus the padded dim) whose :func:`gemm_footprint` fits ``machine.ldm_user_bytes``;
    ties: larger blocks. ``blocking`` forces the block sizes (the 81-scheme sweep). A constant
    operand (``p.const_a/b``) is also tried in the other storage order, e.g. so that a vec-m A
    or a vec-n B lands in its LDM layout with a plain conversion instead of a transposing one
    (:data:`TRANSPOSE_CYCLES_PER_ELEM`); the plan's ``trans_a/b`` says which order won.
    ``n_clean``: only N blocks whose border block splits at a CPE piece boundary
    (:func:`n_border_clean`). ``name``: the :class:`KernelCost` name. The candidates:
    :func:`gemm_candidates`. Raises ValueError when a dim or ``batch`` is not positive,
    ``dtype`` is not f32/f64, or nothing fits in LDM."""
    best = Enumerated(lambda: gemm_candidates(p, machine, vec=vec, blocking=blocking, n_clean=n_clean,
                                              name=name)).best()
    if best is None:
        raise ValueError(f"no GEMM blocking fits in LDM for m={p.m} n={p.n} k={p.k} {p.dtype} (blocking={blocking})")
    return best


def gemm_sweep(p: GemmShape, machine: Machine, min_bk: int = 32) -> list[GemmPlan]:
    """Every feasible blocking of the lowering's GEMM kernel for ``p`` on ``machine`` (vec n,
    the natural scheme for row-major operands) with ``bk >= min_bk`` (the seed's 81-scheme
    sweep of 004 L869 counts blocks with at least 4 k-steps per CPE; see tests of
    gemm_blocking), each with its cost."""
    out = []
    for bm in candidate_sizes(p.m, OTHER_UNIT):
        for bn in candidate_sizes(p.n, VEC_UNIT):
            for bk in [b for b in candidate_sizes(p.k, K_UNIT) if b >= min_bk]:
                try:
                    out.append(plan_gemm(p, machine, vec="n", blocking=(bm, bn, bk)))
                except ValueError:
                    pass
    return out


# --------------------------------------------------------------------------------------------
# Convolution
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvShape:
    """One ``graph.conv2d`` layer (ONNX semantics, NCHW): input (n, c, h, w), weight
    (m, c/group, kh, kw), ``pads`` = (top, left, bottom, right), strides/dilations (h, w);
    ``bias`` / ``relu``: a bias operand / an absorbed trailing activation; ``const_weights``: the
    weights are compile-time constants, so their re-layout (implicit) or transform (Winograd
    filter) is folded by the compiler instead of running as a kernel; ``residual``: the output
    feeds a residual sum with a same-shape NCHW tensor (ResNet's shortcut, then ``relu``): plans
    that store the NCHW output from LDM fuse it into that store (:func:`fuses_residual`: the
    residual window is an extra double-buffered tile, loaded at the block start), the others
    pay a separate add kernel (:func:`residual_cost`)."""

    n: int
    c: int
    h: int
    w: int
    m: int
    kh: int
    kw: int
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    group: int = 1
    bias: bool = False
    relu: bool = False
    dtype: str = "f32"
    const_weights: bool = False
    residual: bool = False

    @property
    def ho(self) -> int:
        return (self.h + self.pads[0] + self.pads[2] - self.dilations[0] * (self.kh - 1) - 1) // self.strides[0] + 1

    @property
    def wo(self) -> int:
        return (self.w + self.pads[1] + self.pads[3] - self.dilations[1] * (self.kw - 1) - 1) // self.strides[1] + 1

    @property
    def cg(self) -> int:
        """Input channels per group."""
        return self.c // self.group

    @property
    def mg(self) -> int:
        """Output channels per group."""
        return self.m // self.group

    @property
    def flops(self) -> int:
        """Direct-convolution flops ``2 N M Ho Wo (C/g) kh kw`` (also Winograd's "effective"
        count, 004 L1268)."""
        return 2 * self.n * self.m * self.ho * self.wo * self.cg * self.kh * self.kw

    @property
    def elem(self) -> int:
        return 4 if self.dtype == "f32" else 8

    def describe(self) -> str:
        """``taihu.shape`` text: ``N x M x Ho x Wo <- N x C x H x W * M x C/g x kh x kw``."""
        s = f"{self.n}x{self.m}x{self.ho}x{self.wo} <- {self.n}x{self.c}x{self.h}x{self.w} * {self.m}x{self.cg}x{self.kh}x{self.kw}"
        extra = []
        if self.strides != (1, 1):
            extra.append(f"s{self.strides[0]}")
        if any(self.pads):
            extra.append("p" + ",".join(map(str, self.pads)))
        if self.dilations != (1, 1):
            extra.append(f"d{self.dilations[0]}")
        if self.group != 1:
            extra.append(f"g{self.group}")
        return s + (" " + " ".join(extra) if extra else "")


def applicability(shape: ConvShape, algorithm: str) -> str | None:
    """None when ``algorithm`` can run ``shape``, else the reason (one line)."""
    if algorithm == "im2col":
        return None
    if algorithm == "implicit":
        if shape.group != 1:
            return f"implicit GEMM convolution needs group = 1 (got group = {shape.group}); use im2col"
        if min(shape.c, shape.m) < IMPLICIT_MIN_CHANNELS:
            return (
                f"implicit GEMM convolution needs >= {IMPLICIT_MIN_CHANNELS} input and output channels "
                f"(got {shape.c} -> {shape.m}; 004 L1266); use im2col"
            )
        return None
    if algorithm == "winograd":
        if (shape.kh, shape.kw) != (3, 3):
            return f"Winograd F(2x2,3x3) needs a 3x3 kernel (got {shape.kh}x{shape.kw})"
        if shape.strides != (1, 1):
            return f"Winograd F(2x2,3x3) needs stride 1 (got {list(shape.strides)})"
        if shape.dilations != (1, 1):
            return f"Winograd F(2x2,3x3) needs dilation 1 (got {list(shape.dilations)})"
        if shape.group != 1:
            return f"Winograd F(2x2,3x3) needs group = 1 (got group = {shape.group})"
        return None
    return f"unknown convolution algorithm '{algorithm}' (auto, implicit, im2col or winograd)"


@dataclass(frozen=True)
class ExplicitPlan:
    """im2col + GEMM (§C2, 004 L1023-1056): kernel ``im2col`` writes col (C*kh*kw, N*Ho*Wo)
    (viewed (group, C/g*kh*kw, N, Ho*Wo)); kernel ``gemm`` computes, per group g and image n,
    W_g (M/g, C/g*kh*kw) x col_g[:, n, :] -> y[n, g] (M/g, Ho*Wo) straight into the NCHW output
    (batch = group * N GEMMs of shape (M/g, Ho*Wo, C/g*kh*kw)); ``pointwise``: 1x1/s1/p0, no
    im2col (the GEMM reads x); ``batched``: one GEMM per group over all N*Ho*Wo columns into an
    (M, N, Ho*Wo) buffer + kernel ``relayout`` to NCHW (:func:`plan_explicit`)."""

    shape: ConvShape
    gemm: GemmPlan
    kernels: tuple[KernelCost, ...]
    cost: KernelCost
    pointwise: bool = False
    batched: bool = False
    algorithm: str = "im2col"
    residual_fused: bool = False  # the shape's residual sum is added in the GEMM's C store


@dataclass(frozen=True)
class ImplicitPlan:
    """Implicit GEMM convolution (§C3, Algorithms 3/4) in NCHW: output tiles are
    (bm output channels) x (bn output columns of one output row); ``b_b`` images x ``b_ro`` rows
    of such tiles (``groups`` = b_b * b_ro C tiles in LDM) share every weight tile
    ``W[m0:m0+bm, kr, kc, k0:k0+bk]`` (reuse of the weight DMA across the batch, Alg 3
    "Batch-Size-Aware", or across output rows, Alg 4 "Image-Size-Aware"). The reduction runs
    over (kr, kc, input-channel blocks) innermost with the C tiles resident (K innermost, 004
    L863). Weights are re-laid (M, kh, kw, C) by a ``weights`` kernel when kh*kw > 1."""

    shape: ConvShape
    vec: str
    bm: int
    bn: int
    bk: int
    b_b: int
    b_ro: int
    ldm_bytes: int
    kernels: tuple[KernelCost, ...]
    cost: KernelCost
    algorithm: str = "implicit"

    @property
    def groups(self) -> int:
        return self.b_b * self.b_ro

    @property
    def variant(self) -> str:
        """"batch" (Algorithm 3: C tiles over images) or "image" (Algorithm 4)."""
        return "batch" if self.b_b > 1 else "image"

    @property
    def scheme(self) -> int:
        return gemm_scheme(self.vec)

    @property
    def needs_weight_relayout(self) -> bool:
        return self.shape.kh * self.shape.kw > 1


@dataclass(frozen=True)
class WinogradPlan:
    """Winograd F(2x2, 3x3) (§C4, Algorithm 5): kernels ``filter`` (U = G w G^T, (16, M, C);
    folded at compile time for constant weights), ``input`` (V = B^T d B, (16, P_pad, C)),
    ``gemm`` (16 GEMMs M^(xi) = V^(xi) x U^(xi)^T, (P_pad, C) x (C, M)), ``output``
    (y = A^T m A, with the bias and an absorbed activation applied in LDM before the store).
    P = N * ceil(Ho/2) * ceil(Wo/2), padded to the GEMM's M block
    (004 L1194-1196)."""

    shape: ConvShape
    p: int
    p_pad: int
    tiles_per_cpe: int
    gemm: GemmPlan
    kernels: tuple[KernelCost, ...]
    cost: KernelCost
    algorithm: str = "winograd"


Plan = ExplicitPlan | ImplicitPlan | WinogradPlan  # or unfold_conv.UnfoldPlan (algorithm "implicit")


def _weight_relayout_cost(s: ConvShape, machine: Machine) -> KernelCost:
    """(M, C, kh, kw) -> (M, kh, kw, C) copy-transpose: one output channel's C*kh*kw block per
    CPE task, read and written contiguously."""
    nbytes = s.m * s.cg * s.kh * s.kw * s.elem
    per = s.cg * s.kh * s.kw * s.elem
    tasks = s.m
    return memory_bound_cost(
        "weights",
        [(tasks, per, False), (tasks, per, True)],
        dmas_per_cpe=2 * _ceil(tasks, N_CPE),
        machine=machine,
        compute_cycles_per_cpe=MAP_CYCLES_PER_ELEM * nbytes / s.elem / N_CPE,
    )


def residual_cost(s: ConvShape, machine: Machine) -> KernelCost:
    """The separate ``add`` (+ activation) kernel of a residual sum a plan cannot fuse
    (:func:`fuses_residual`) on ``machine``: every CPE streams tasks of ``q`` elements of the two
    operands in and the sum out (double-buffered, memory-bound: eq 3-2; simulator, ResNet-50
    B=1 sums at 99.9 % of the 30.94 GB/s roof)."""
    e = s.elem
    total = s.n * s.m * s.ho * s.wo
    q = max(1, min(_ceil(total, N_CPE), machine.ldm_user_bytes // (3 * 2 * e)))
    tasks = _ceil(total, q)
    return memory_bound_cost(
        "residual",
        [(2 * tasks, q * e, False), (tasks, q * e, True)],
        dmas_per_cpe=3 * _ceil(tasks, N_CPE),
        machine=machine,
        compute_cycles_per_cpe=0.0,
    )


def fuses_residual(plan: Plan | UnfoldPlan | DepthwisePlan | GroupedPlan) -> bool:
    """Whether ``plan`` adds its shape's residual operand (``ConvShape.residual``) in the store
    of its output tiles (the lowering's ``store_fused``): the plans whose kernel stores the
    final NCHW tensor from LDM -- explicit per image / pointwise (the GEMM epilogue), the
    unfolded implicit convolution without padded rows. Batched explicit GEMMs (a relayout
    follows), Winograd (the output transform stores y) and the implicit convolution keep the
    sum as a separate kernel (:func:`residual_cost`); so do the plans that fit them when that
    is cheaper (the residual tile takes LDM from the blocking; a C window clipped inside the CPE
    pieces moves ~4x its bytes)."""
    return bool(getattr(plan, "residual_fused", False))


def is_pointwise(s: ConvShape) -> bool:
    """1x1, stride 1, no padding: the convolution is a GEMM on the input as it is (im2col is the
    identity, so the explicit algorithm skips it)."""
    return (s.kh, s.kw) == (1, 1) and s.strides == (1, 1) and not any(s.pads)


def relayout_cost(name: str, rows: int, blocks: int, block_elems: int, elem: int, machine: Machine) -> KernelCost:
    """A copy kernel moving ``blocks`` contiguous blocks of ``block_elems`` elements of ``elem``
    bytes from one layout to another ((M, N, HW) -> (N, M, HW)); each CPE task moves ``rows``
    blocks."""
    return memory_bound_cost(
        name,
        [(blocks, block_elems * elem, False), (blocks, block_elems * elem, True)],
        dmas_per_cpe=2 * _ceil(_ceil(blocks, rows), N_CPE),
        machine=machine,
    )


def _im2col_shape(s: ConvShape) -> tasks.Im2colShape:
    return tasks.Im2colShape(s.n, s.c, s.h, s.w, (s.kh, s.kw), s.strides, s.pads, s.dilations, s.elem)


def im2col_tasks(s: ConvShape, budget: int, rows_per_task: int | None = None) -> Im2colTasks:
    """:class:`~taihu.backends.model.tasks.Im2colTasks` of the im2col kernel of ``s`` (NCHW),
    the decomposition tile-to-loop emits (:func:`taihu.backends.model.tasks.im2col_tasks`) with
    the kernel's LDM budget (bytes). Raises :class:`NotApplicable` when one row does not fit."""
    try:
        return tasks.im2col_tasks(_im2col_shape(s), budget, rows_per_task)
    except tasks.DoesNotFit as e:
        raise NotApplicable(f"im2col: {e}") from None


def parallel_tasks_cost(
    name: str, gets: Iterable[tuple[float, ...]], puts: Iterable[tuple[float, ...]], dmas: float,
    compute_cycles: float, tasks: int, machine: Machine,
) -> KernelCost:
    """A memory-bound kernel of ``tasks`` synchronous tasks dealt out over the 64 CPEs (DMA in,
    wait, compute in LDM, DMA out, wait): ``gets``/``puts`` = (count, bytes per contiguous
    block[, moved bytes per block]) over the whole kernel, ``dmas`` and ``compute_cycles`` =
    totals over all CPEs (without the moved bytes: the expected transaction waste of a random
    start). The
    CPEs' start-up latencies and compute overlap the other CPEs' transfers (the DMA engine serves
    the CPEs' requests in turn, so early CPEs compute and put while later ones still get), so
    the kernel takes ``max(T_bw, T_cpe) + 2 T_latency`` (the first get's and the last put's
    start-up), with ``T_bw = moved / PEAK_BW`` (eq 3-2's data term, 128-B transactions) and
    ``T_cpe`` = one CPE's ``dmas x T_latency + compute`` (simulator: im2col 1x64x56x56 3x3,
    Winograd transforms 1x256x14x14: pure bandwidth time, the compute hidden)."""
    moved = useful = t_bw = 0.0
    for blocks, put in ((gets, False), (puts, True)):
        for count, bsize, *per_block in blocks:
            mv = count * (per_block[0] if per_block else _avg_moved(bsize, machine.mem_txn_bytes))
            moved += mv
            useful += count * bsize
            t_bw += mv * (machine.dma_put_bw_factor if put else 1.0) / (machine.peak_bw_cg * 1e9)
    t_lat = machine.cycles_to_seconds(dmas / N_CPE * machine.dma_latency)
    t_comp = machine.cycles_to_seconds(compute_cycles / N_CPE)
    t_cpe = t_lat + t_comp
    total = max(t_bw, t_cpe) + machine.cycles_to_seconds(2 * machine.dma_latency)
    return KernelCost(name, total, t_bw + t_lat, t_comp, moved, useful, 0)


def im2col_cost(s: ConvShape, machine: Machine, budget: int | None = None, how: int | None = None) -> KernelCost:
    """Cost of the im2col kernel of ``s`` on ``machine`` (:func:`im2col_tasks`, or the
    whole-plane tasks of :func:`taihu.backends.model.tasks.im2col_planes` when tile-to-loop
    picks them; :func:`parallel_tasks_cost`); ``budget`` = LDM bytes tile-to-loop gives the
    primitive (:data:`mem_budget <plan_explicit>`, default ``machine.ldm_user_bytes``);
    ``how`` = col columns per image (default Ho*Wo; padded image_columns)."""
    bud = machine.ldm_user_bytes if budget is None else budget
    how = how or s.ho * s.wo
    pl = tasks.im2col_planes(_im2col_shape(s), bud, how)
    if pl is not None:
        return _im2col_planes_cost(s, pl, how, machine)
    t = im2col_tasks(s, bud)
    e, kw, wo, nc = s.elem, s.kw, s.wo, s.n * s.c
    gets: list[tuple[float, float]] = []
    puts: list[tuple[float, float]] = []
    dmas = comp = 0.0
    n_tasks = 0
    for g in t.groups:
        q = nc * g.chunks
        n_tasks += q
        if g.rows > 1 and g.step > 1:
            gets.append((q * g.rows, s.w * e))
        else:
            gets.append((q, g.rows * s.w * e))
        puts.append((q * len(g.kernel_rows) * kw, g.rows * wo * e))
        dmas += q * (1 + len(g.kernel_rows))
        comp += q * g.rows * kw * wo * (IM2COL_MAP_CYCLES_PER_ELEM + (IM2COL_TRANSPOSE_CYCLES_PER_ELEM if g.rows > 1 else 0.0))
    if t.zchunk:
        n_tasks += nc
        for rs in t.zero_ranges:
            for _, nho in rs:
                for h0 in range(0, nho, t.zchunk):
                    nz = min(t.zchunk, nho - h0)
                    puts.append((nc * kw, nz * wo * e))
                    dmas += nc
    return parallel_tasks_cost("im2col", gets, puts, dmas, comp, n_tasks, machine)


def _im2col_planes_cost(s: ConvShape, pl: tasks.Im2colPlanes, how: int, mach: Machine) -> KernelCost:
    """:func:`parallel_tasks_cost` of the whole-plane im2col tasks: per channel one contiguous
    plane get (one get of the task's q planes without vertical padding), per task one put of q x kh*kw col rows (whole 128-B transactions averaged over the
    tasks' starts, :class:`~taihu.backends.model.tasks.DmaWindow`), the unfold (+ transpose when
    kw > 1) of every col element, one map run per output row when strided."""
    e, kk, hw = s.elem, s.kh * s.kw, s.ho * s.wo
    n_tasks = s.n * _ceil(s.c, pl.q)
    cc = range(min(s.c, 4))
    starts = tasks.chunk_starts(s.c, pl.q)[:4]
    merged = pl.hp == s.h  # no vertical padding: one get of the q planes per task
    if merged:
        gets = tasks.DmaWindow((s.n, s.c, s.h, s.w), (1, pl.q, s.h, s.w), 1,
                               tuple(c0 * s.h * s.w for c0 in starts)).blocks(e, n_tasks)
    else:
        gets = tasks.DmaWindow((s.n, s.c, s.h, s.w), (1, 1, s.h, s.w), 1,
                               tuple(ci * s.h * s.w for ci in cc)).blocks(e, s.n * s.c)
    cols = how if kk == 1 else hw  # 1x1: whole (padded) col rows
    puts = tasks.DmaWindow((s.c * kk, s.n * how), (pl.q * kk, cols), 1,
                           tuple(c0 * kk * s.n * how for c0 in starts)).blocks(e, n_tasks)
    runs = s.n * s.c * s.kh * (1 if s.strides[0] == 1 else s.ho)
    comp = s.n * s.c * kk * hw * (IM2COL_MAP_CYCLES_PER_ELEM + (IM2COL_TRANSPOSE_CYCLES_PER_ELEM if s.kw > 1 else 0.0))
    comp += runs * IM2COL_RUN_CYCLES
    return parallel_tasks_cost("im2col", [gets], [puts], n_tasks * ((1 if merged else pl.q) + 1), comp, n_tasks, mach)


#: The forms of the explicit convolution's GEMM (:func:`explicit_space`): ``image`` per-image
#: GEMMs on col (image columns padded to bn); ``direct`` pointwise, the GEMM reads x; ``copy``
#: pointwise, x copied by a 1x1 im2col into a col padded to bn; ``overlap`` the overlapping
#: distribution on col (on x itself for pointwise layers); ``overlap_pad`` the overlapping
#: distribution, vec n, on a col whose image columns are padded to 4; ``batched`` one GEMM per
#: group over all N*Ho*Wo columns + a relayout kernel.
EXPLICIT_FORMS = ("image", "direct", "copy", "overlap", "overlap_pad", "batched")


def explicit_forms(s: ConvShape) -> tuple[str, ...]:
    """The :data:`EXPLICIT_FORMS` that apply to ``s``, in the planner's order (pointwise layers:
    direct, copy, overlap[, overlap_pad]; the others: image, overlap[, overlap_pad][, batched])."""
    hw = s.ho * s.wo
    pad = ("overlap_pad",) if hw % 4 else ()
    if is_pointwise(s):
        return ("direct", "copy", "overlap") + pad
    return ("image", "overlap") + pad + (("batched",) if s.n > 1 else ())


def explicit_needs_im2col(s: ConvShape, form: str) -> bool:
    """Does ``form`` of ``s`` run an im2col kernel (every form but the pointwise ones reading x)?"""
    return not (is_pointwise(s) and form in ("direct", "overlap"))


def explicit_gemm_shape(s: ConvShape, form: str) -> GemmShape:
    """The memory-level GEMM of ``form`` (:data:`EXPLICIT_FORMS`) for ``s``: per image / group
    (M/g, Ho*Wo, C/g*kh*kw) with the bias column, the activation and a fused residual add in its
    epilogue, or, ``batched``, (M/g, N*Ho*Wo, C/g*kh*kw) per group without the residual."""
    kk = s.cg * s.kh * s.kw
    hw = s.ho * s.wo
    ncol = s.n * hw
    maps = 1 if s.relu else 0
    bias_along = "m" if s.bias else None
    if form == "batched":
        return GemmShape(s.mg, ncol, kk, s.dtype, lda=kk, ldb=ncol, ldc=ncol, batch=s.group, bias_along=bias_along,
                         maps=maps)
    if form in ("overlap", "overlap_pad"):
        # vec m needs the constant weights, stored (K, M) by the lowering; overlap_pad: vec n on
        # B columns padded to 4
        hw4 = _ceil(hw, 4) * 4
        ldb = {(False, False): ncol, (False, True): s.n * hw4, (True, False): hw, (True, True): hw4}[
            (is_pointwise(s), form == "overlap_pad")]
        return GemmShape(s.mg, hw, kk, s.dtype, ldb=ldb, ldc=hw, batch=s.group * s.n, bias_along=bias_along, maps=maps,
                         residual=s.residual, const_a=s.const_weights, pad_n=form == "overlap_pad",
                         kblock_a=s.const_weights)
    per_image = GemmShape(s.mg, hw, kk, s.dtype, lda=kk, ldc=hw, batch=s.group * s.n, bias_along=bias_along,
                          maps=maps, residual=s.residual)
    if form == "image":  # col's image columns are padded to bn by the lowering (image_columns)
        return replace(per_image, ldb=ncol, b_clean=True)
    if form == "direct":
        return replace(per_image, ldb=hw)
    if form == "copy":
        return replace(per_image, ldb=hw, b_clean=True)
    raise ValueError(f"unknown explicit convolution form {form!r} (expected one of {', '.join(EXPLICIT_FORMS)})")


def explicit_plan(s: ConvShape, machine: Machine, mem_budget: int, form: str, gemm: GemmPlan,
                  im2col: Callable[[int], KernelCost] | None = None) -> ExplicitPlan:
    """The :class:`ExplicitPlan` of ``form`` for ``s`` with the GEMM plan ``gemm`` (of
    :func:`explicit_gemm_shape`; a residual sum of ``s`` is fused in the per-image GEMMs' store,
    the batched form pays :func:`residual_cost`): the kernels and their summed cost.
    ``im2col(how)``: the im2col kernel's cost with ``how`` col columns per image (default
    :func:`im2col_cost` with ``mem_budget``)."""
    hw = s.ho * s.wo
    ic = im2col or (lambda how: im2col_cost(s, machine, mem_budget, how=how))
    if form == "batched":
        rel = relayout_cost("relayout", relayout_rows(hw, s.elem, machine.ldm_user_bytes), s.m * s.n, hw, s.elem,
                            machine)
        parts = [ic(hw), gemm.cost, rel] + ([residual_cost(s, machine)] if s.residual else [])
        return ExplicitPlan(s, gemm, tuple(parts), _sum_costs("im2col", parts, s.flops), batched=True)
    pointwise = not explicit_needs_im2col(s, form)
    if pointwise:
        kernels: tuple[KernelCost, ...] = (gemm.cost,)
    else:
        # per image (and the pointwise copy): col's image columns padded to the GEMM's N block
        how = {"overlap": hw, "overlap_pad": _ceil(hw, 4) * 4}.get(form, _ceil(hw, gemm.bn) * gemm.bn)
        kernels = (ic(how), gemm.cost)
    return ExplicitPlan(s, gemm, kernels, _sum_costs("im2col", kernels, s.flops), pointwise=pointwise,
                        residual_fused=s.residual)


def _explicit_world(s: ConvShape, mach: Machine, mem_budget: int, batched: bool = True) -> Space[ExplicitPlan]:
    """:func:`explicit_space` of ``s`` with the residual (if any) fused where the form can: the
    cheapest form, each form's GEMM blocking chosen by the GEMM's own cost (its key); forms with
    an im2col kernel are left out when the im2col does not fit ``mem_budget``."""
    from taihu.backends.model.overlap_gemm import overlap_candidates

    costs: dict[int, KernelCost] = {}

    def im2col(how: int) -> KernelCost:
        if how not in costs:
            costs[how] = im2col_cost(s, mach, mem_budget, how=how)
        return costs[how]

    try:
        im2col(s.ho * s.wo)
        im2col_fits = True
    except NotApplicable:
        im2col_fits = False

    def leaf(form: str) -> Space[ExplicitPlan]:
        p = explicit_gemm_shape(s, form)

        def make() -> Iterator[tuple[tuple, GemmPlan]]:
            if form in ("overlap", "overlap_pad"):
                return overlap_candidates(p, mach)
            return gemm_candidates(p, mach, n_clean=form == "direct")

        return Enumerated(make, lambda g: explicit_plan(s, mach, mem_budget, form, g, im2col))

    forms = [f for f in explicit_forms(s)
             if (batched or f != "batched") and (im2col_fits or not explicit_needs_im2col(s, f))]
    return Cheapest([leaf(f) for f in forms])


def explicit_space(s: ConvShape, machine: Machine, mem_budget: int | None = None) -> Space[ExplicitPlan]:
    """Every im2col + GEMM plan of ``s`` on ``machine`` (:data:`EXPLICIT_FORMS` x their GEMM
    blockings, :func:`~taihu.backends.model.conv.gemm_candidates` /
    :func:`~taihu.backends.model.overlap_gemm.overlap_candidates`; with a residual sum, also the
    forms that leave it to a separate :func:`residual_cost` kernel), lazily; its pick is
    :func:`plan_explicit`'s. ``mem_budget``: the im2col's LDM bytes (default
    ``machine.ldm_user_bytes``)."""
    bud = machine.ldm_user_bytes if mem_budget is None else mem_budget
    world = _explicit_world(s, machine, bud)
    if not s.residual:
        return world
    # the batched form never fuses the sum: it is the same plan in both worlds
    sep = Mapped(_explicit_world(replace(s, residual=False), machine, bud, batched=False),
                 explicit_residual_apart(s, machine))
    return Conditional(world, sep, when=lambda p: p.residual_fused)


def explicit_residual_apart(s: ConvShape, machine: Machine) -> Callable[[ExplicitPlan], ExplicitPlan]:
    """A plan of ``s`` without its residual sum -> the plan of ``s`` (``s.residual``) adding the
    sum in a separate :func:`residual_cost` kernel."""
    res = residual_cost(s, machine)

    def separate(p: ExplicitPlan) -> ExplicitPlan:
        parts = p.kernels + (res,)
        return replace(p, shape=s, kernels=parts, cost=_sum_costs("im2col", parts, s.flops))

    return separate


def plan_explicit(s: ConvShape, machine: Machine, mem_budget: int | None = None) -> ExplicitPlan:
    """im2col + GEMM (+ relayout) for ``s`` on ``machine`` (model of the lowering's kernels):
    the cheapest of the GEMM forms (:data:`EXPLICIT_FORMS`):

    * per image (``batched = False``): group x N GEMMs (M/g, Ho*Wo, C/g*kh*kw) writing the NCHW
      output directly; for pointwise layers (:func:`is_pointwise`) the GEMM reads the input
      itself and there is no im2col kernel -- when its N border block splits at a CPE piece
      boundary (:func:`n_border_clean`); otherwise the lowering copies x with a 1x1 im2col into a
      col whose image columns are padded to bn (004 L865), so B loads never clip inside a piece;
    * the same GEMMs with the overlapping distribution
      (:func:`~taihu.backends.model.overlap_gemm.plan_overlap_gemm`; on x itself for pointwise
      layers; or vec n on a col whose image columns are padded to 4);
    * batched (N > 1, not pointwise): group GEMMs (M/g, N*Ho*Wo, C/g*kh*kw) over col's
      contiguous (N, Ho*Wo) columns into an (M, N, Ho*Wo) buffer, then a ``relayout`` copy
      kernel to NCHW: no per-image padding of Ho*Wo to the block multiple and long DMA blocks
      for small images, for one extra pass over the output.

    Each form's GEMM blocking is its planner's (by the GEMM's cost). im2col (§C2 tensorised form,
    L1045-1049): tile-to-loop's task decomposition (:func:`im2col_tasks`: batches of input rows of
    one channel, one DMA in, one DMA of kw x (rows*Wo) out per kernel row), costed by
    :func:`parallel_tasks_cost`. With a residual sum (``s.residual``), the cheaper of adding it in
    the per-image GEMM's C store and of a separate :func:`residual_cost` kernel (the batched form
    always pays the kernel). ``mem_budget``: LDM bytes per CPE tile-to-loop gives a memory
    primitive alone in its kernel (the im2col; ``ldm_free_bytes()``, the whole
    ``ldm_user_bytes`` of the machine it lowers for, while the GEMM plans keep
    ``convert-graph-to-tile``'s reserve: its ``plan_machine``); default
    ``machine.ldm_user_bytes``. The candidates: :func:`explicit_space`. Raises
    :class:`NotApplicable` when the im2col does not fit and no form reads x itself, ValueError
    when no GEMM blocking fits."""
    best = explicit_space(s, machine, mem_budget).best()
    if best is None:
        if not is_pointwise(s):
            im2col_cost(s, machine, machine.ldm_user_bytes if mem_budget is None else mem_budget)  # NotApplicable
        raise ValueError(f"no GEMM blocking of the explicit convolution {s.describe()} fits in LDM")
    return best


def relayout_rows(hw: int, elem: int, budget: int) -> int:
    """Rows (output channels) of ``hw`` = Ho*Wo elements of ``elem`` bytes per CPE per step of
    the (M, N, HW) -> (N, M, HW) relayout kernel: one double-buffered tile of q rows within half
    the LDM ``budget`` (bytes per CPE), at most 16."""
    return max(1, min(16, budget // 2 // (2 * hw * elem)))


def _implicit_cost(
    s: ConvShape, vec: str, bm: int, bn: int, bk: int, b_b: int, b_ro: int, mach: Machine
) -> KernelCost:
    prim = StructuralPrimitiveModel(mach)
    cyc = mach.cycles_to_seconds
    e = s.elem
    g = b_b * b_ro
    n_groups = _ceil(s.n, b_b) * _ceil(s.ho, b_ro) * _ceil(s.wo, bn) * _ceil(s.m, bm)
    red = s.kh * s.kw * _ceil(s.c, bk)
    ld_w = s.kh * s.kw * s.c
    mv_a = _tile_moved(bm, bk, ld_w, e, mach)
    mv_b = _tile_moved(bk, bn, s.h * s.w, e, mach, stride=s.strides[1])
    mv_c = _tile_moved(bm, bn, s.ho * s.wo, e, mach)
    conv_a = cyc(MAP_CYCLES_PER_ELEM * _local(bm * bk))
    conv_b = cyc(MAP_CYCLES_PER_ELEM * _local(bk * bn))
    t_dma_step = t_dma_tiles(mv_a + g * mv_b, mach)
    t_comp_step = conv_a + g * (conv_b + prim(bm, bn, bk, vec) + cyc(IMPLICIT_RLC_CALL_CYCLES))
    c_local = _local(bm * bn)
    epi_cycles = g * (FILL_CYCLES_PER_ELEM + MAP_CYCLES_PER_ELEM * (1 + (1 if s.bias else 0) + (1 if s.relu else 0))) * c_local
    t_put = t_dma_tiles(mv_c, mach, put=True)
    epi_dma = g * t_put
    t_bias = t_dma_tiles(N_CPE * _avg_moved(bm * e), mach) if s.bias else 0.0
    epi_dma += t_bias
    # The fp32 staging tile of C is double-buffered: put g overlaps the maps of tile g+1, the
    # last put's data phase joins the first reduction step of the next group.
    put_data = mv_c * mach.dma_put_bw_factor / (mach.peak_bw_cg * 1e9)
    t_epi = t_bias + max(cyc(epi_cycles), (g - 1) * t_put)
    t_first = max(t_dma_step + put_data, t_comp_step)
    per_group = t_first + (red - 1) * max(t_dma_step, t_comp_step) + t_comp_step + t_epi
    total = n_groups * per_group + t_put
    moved = n_groups * (red * (mv_a + g * mv_b) + g * mv_c)
    useful = n_groups * e * (red * (bm * bk + g * bk * bn) + g * bm * bn)
    return KernelCost(
        "conv",
        total,
        n_groups * (red * t_dma_step + epi_dma),
        n_groups * (red * t_comp_step + cyc(epi_cycles)),
        moved,
        min(useful, moved),
        s.flops,
    )


def implicit_footprint(s: ConvShape, bm: int, bn: int, bk: int, groups: int) -> int:
    """Per-CPE LDM bytes of the implicit kernel: A and B staged (fp32, double) + fp64 copies,
    ``groups`` fp64 C tiles, a double-buffered fp32 C staging tile, bias column (fp32 + fp64,
    rep)."""
    staged = frozenset({"A", "B", "C"})
    bias = (_rnd(s.elem * bm) + _rnd(8 * bm)) if s.bias else 0
    return gemm_footprint(GemmBlocking(bm, bn, bk, staged, double_c=True), s.dtype, groups, bias)


def implicit_group_shapes(s: ConvShape) -> list[tuple[int, int]]:
    """The (b_b, b_ro) the implicit planner tries for ``s``: b_b images x b_ro output rows of C
    tiles sharing a weight tile, b_b * b_ro in (1, 2, 4, 8) (<= :data:`MAX_GROUP`), b_b <= N,
    b_ro <= Ho."""
    group_shapes = []
    for g in (1, 2, 4, 8):
        if g > MAX_GROUP:
            break
        for b_b in (1, 2, 4, 8):
            b_ro = g // b_b
            if b_b * b_ro != g or b_b > s.n or b_ro > s.ho:
                continue
            group_shapes.append((b_b, b_ro))
    return group_shapes


def _implicit_plan(s: ConvShape, machine: Machine, vec: str, bm: int, bn: int, bk: int, b_b: int, b_ro: int,
                   fp: int, relayout: KernelCost | None, residual: KernelCost | None) -> ImplicitPlan:
    kernels = [_implicit_cost(s, vec, bm, bn, bk, b_b, b_ro, machine)]
    if relayout is not None:
        kernels.insert(0, relayout)
    if residual is not None:
        kernels.append(residual)
    return ImplicitPlan(s, vec, bm, bn, bk, b_b, b_ro, fp, tuple(kernels), _sum_costs("implicit", kernels, s.flops))


def _implicit_extras(s: ConvShape, machine: Machine) -> tuple[KernelCost | None, KernelCost | None]:
    """(weight relayout kernel when the weights are not constants and kh*kw > 1, the separate
    residual add kernel when ``s.residual``) of every implicit plan of ``s``."""
    relayout = _weight_relayout_cost(s, machine) if s.kh * s.kw > 1 and not s.const_weights else None
    return relayout, (residual_cost(s, machine) if s.residual else None)


def implicit_plan(s: ConvShape, machine: Machine, vec: str, bm: int, bn: int, bk: int, b_b: int,
                  b_ro: int) -> ImplicitPlan:
    """The implicit convolution plan of ``s`` with exactly these parameters, costed on
    ``machine``; no legality check (``plan.ldm_bytes`` is its footprint;
    :mod:`taihu.backends.model.schedule` checks)."""
    fp = implicit_footprint(s, bm, bn, bk, b_b * b_ro)
    return _implicit_plan(s, machine, vec, bm, bn, bk, b_b, b_ro, fp, *_implicit_extras(s, machine))


def implicit_candidates(s: ConvShape, machine: Machine) -> Iterator[tuple[tuple, ImplicitPlan]]:
    """Every implicit convolution plan :func:`plan_implicit` considers for ``s`` on ``machine``,
    lazily, with its key ``(t_conv, -bm*bn*bk, -b_b*b_ro)`` (``t_conv``: the conv kernel's
    modelled time): vec in {m, n}, (bm, bn, bk) from
    :func:`~taihu.backends.model.gemm_blocking.candidate_sizes` of (M, Wo, C),
    :func:`implicit_group_shapes`, those whose :func:`implicit_footprint` fits
    ``machine.ldm_user_bytes``. Nothing when the algorithm does not apply."""
    if applicability(s, "implicit"):
        return
    group_shapes = implicit_group_shapes(s)
    relayout, residual = _implicit_extras(s, machine)
    for vec in ("m", "n"):
        um, un = (VEC_UNIT, OTHER_UNIT) if vec == "m" else (OTHER_UNIT, VEC_UNIT)
        for bm in candidate_sizes(s.m, um):
            for bn in candidate_sizes(s.wo, un):
                for bk in candidate_sizes(s.c, K_UNIT):
                    for b_b, b_ro in group_shapes:
                        fp = implicit_footprint(s, bm, bn, bk, b_b * b_ro)
                        if fp > machine.ldm_user_bytes:
                            continue
                        plan = _implicit_plan(s, machine, vec, bm, bn, bk, b_b, b_ro, fp, relayout, residual)
                        conv = plan.kernels[1 if relayout is not None else 0]
                        yield (conv.t_total, -bm * bn * bk, -b_b * b_ro), plan


def implicit_space(s: ConvShape, machine: Machine) -> Space[ImplicitPlan]:
    """:func:`implicit_candidates` as a :class:`~taihu.backends.model.choice.Space` (its pick is
    :func:`plan_implicit`'s)."""
    return Enumerated(lambda: implicit_candidates(s, machine))


def plan_implicit(s: ConvShape, machine: Machine) -> ImplicitPlan:
    """Choose (vec, bm, bn, bk, b_b, b_ro) of the implicit convolution of ``s`` on ``machine``
    by the model (E7: minimum modelled time of the conv kernel under ``machine.ldm_user_bytes``;
    ties: larger blocks, then more C tiles per weight tile; :func:`implicit_candidates`). Raises
    :class:`NotApplicable`."""
    why = applicability(s, "implicit")
    if why:
        raise NotApplicable(why)
    best = implicit_space(s, machine).best()
    if best is None:
        raise NotApplicable(f"implicit GEMM convolution: no blocking of {s.describe()} fits in LDM")
    return best


def winograd_input_tiles_per_cpe(c: int, tiles: int, elem: int = 4, ldm_bytes: int = 57344) -> int:
    """m' of Algorithm 5 step 2 (L1138-1175): consecutive 4x4 tiles per CPE task, maximising
    m' * N_i within LDM (input (2m'+2) x 4 x N_i and output 16 x m' x N_i buffers per CPE)."""
    best = 1
    mp = 1
    while mp <= max(1, tiles):
        need = ((2 * mp + 2) * 4 * c + 16 * mp * c) * elem
        if need > ldm_bytes // 2:
            break
        best = mp
        mp *= 2
    return best


#: [param, measured] CPE cycles per (tile, channel) of the Winograd transform kernels'
#: micro-kernels (the B^T d B / A^T m A maps and the channels-first <-> channels-last
#: transposes of NCHW): simulator, ResNet-50 B=32 256ch 14x14 and VGG-19 B=1 512ch 28x28:
#: input 28.6 / 31.3, output 60.6 / 52.6.
WINOGRAD_INPUT_CYCLES_PER_TILE_CHANNEL = 30.0
WINOGRAD_OUTPUT_CYCLES_PER_TILE_CHANNEL = 56.0
#: [param] P1 cycles per 3x3 filter of the filter transform's ``loop.map winograd_filter``
#: (G w G^T: 28 + 16 vector-rate element operations, 4 lanes).
WINOGRAD_FILTER_CYCLES_PER_FILTER = (28 + 16) / 4


def _winograd_input(s: ConvShape, p_pad: int) -> tasks.WinogradInput:
    return tasks.WinogradInput(s.n, s.c, s.h, s.w, s.pads, p_pad, s.elem)


def _winograd_output(s: ConvShape, p_pad: int) -> tasks.WinogradOutput:
    return tasks.WinogradOutput(s.n, s.m, s.ho, s.wo, p_pad, s.elem)


def winograd_input_tasks(s: ConvShape, p_pad: int, tiles_per_cpe: int, budget: int, machine: Machine) -> WinogradTiling:
    """Tasks of the input transform V (16, p_pad, C) of ``s`` (NCHW) within ``budget`` bytes of
    LDM, as tile-to-loop emits them (:func:`taihu.backends.model.tasks.winograd_input_tiling`,
    DMA times of ``machine``). Raises :class:`NotApplicable`."""
    try:
        return tasks.winograd_input_tiling(_winograd_input(s, p_pad), budget, machine, tiles_per_cpe)
    except tasks.DoesNotFit as e:
        raise NotApplicable(f"Winograd transform: {e}") from None


def winograd_output_tasks(s: ConvShape, p_pad: int, budget: int, machine: Machine) -> WinogradTiling:
    """Tasks of the output transform y = A^T m A of ``s`` (m: (16, p_pad, M), NCHW y) within
    ``budget`` bytes of LDM, as tile-to-loop emits them
    (:func:`taihu.backends.model.tasks.winograd_output_tiling`, DMA times of ``machine``)."""
    try:
        return tasks.winograd_output_tiling(_winograd_output(s, p_pad), budget, machine)
    except tasks.DoesNotFit as e:
        raise NotApplicable(f"Winograd transform: {e}") from None


def winograd_input_cost(s: ConvShape, p_pad: int, tiles_per_cpe: int, machine: Machine, budget: int) -> KernelCost:
    """The input transform kernel on ``machine`` with ``budget`` bytes of LDM:
    :func:`winograd_input_tasks` (interior task shapes for every task,
    :func:`taihu.backends.model.tasks.winograd_input_windows`) costed by
    :func:`parallel_tasks_cost`."""
    w = winograd_input_tasks(s, p_pad, tiles_per_cpe, budget, machine)
    get, put = tasks.winograd_input_windows(_winograd_input(s, p_pad), w.t, w.g, w.full_width)
    q = w.tasks
    comp = WINOGRAD_INPUT_CYCLES_PER_TILE_CHANNEL * s.n * w.TR * w.TC * s.c
    return parallel_tasks_cost("input", [get.blocks(s.elem, q)], [put.blocks(s.elem, q)], q * (get.count + put.count),
                               comp, q, machine)


def winograd_output_cost(s: ConvShape, p_pad: int, machine: Machine, budget: int, epilogue_maps: int = 0) -> KernelCost:
    """The output transform kernel on ``machine`` with ``budget`` bytes of LDM
    (:func:`winograd_output_tasks`, :func:`taihu.backends.model.tasks.winograd_output_windows`,
    :func:`parallel_tasks_cost`); ``epilogue_maps``: bias add / activation applied in LDM before
    the store (per output element, :data:`MAP_CYCLES_PER_ELEM` each)."""
    w = winograd_output_tasks(s, p_pad, budget, machine)
    get, put = tasks.winograd_output_windows(_winograd_output(s, p_pad), w.t, w.g, w.full_width)
    q = w.tasks
    comp = WINOGRAD_OUTPUT_CYCLES_PER_TILE_CHANNEL * s.n * w.TR * w.TC * s.m
    comp += epilogue_maps * MAP_CYCLES_PER_ELEM * s.n * s.m * s.ho * s.wo
    return parallel_tasks_cost("output", [get.blocks(s.elem, q)], [put.blocks(s.elem, q)], q * (get.count + put.count),
                               comp, q, machine)


def winograd_filter_cost(s: ConvShape, machine: Machine, budget: int) -> KernelCost:
    """The filter transform kernel U = G w G^T of runtime weights on ``machine`` with ``budget``
    bytes of LDM: tile-to-loop's tasks (:func:`taihu.backends.model.tasks.winograd_filter_tasks`:
    one DMA of kk x g filters in, the transform, one strided DMA of 16 blocks out) costed by
    :func:`parallel_tasks_cost`, with :data:`WINOGRAD_FILTER_CYCLES_PER_FILTER` of transform per
    filter."""
    t = tasks.winograd_filter_tasks(s.m, s.cg, s.elem, budget)
    get, put = tasks.winograd_filter_windows(t)
    q = t.tasks
    return parallel_tasks_cost("filter", [get.blocks(s.elem, q)], [put.blocks(s.elem, q)], 2 * q,
                               WINOGRAD_FILTER_CYCLES_PER_FILTER * s.m * s.cg, q, machine)


def winograd_gemm_shapes(s: ConvShape) -> tuple[GemmShape, GemmShape | None]:
    """(SUMMA, overlapping-distribution) shapes of the 16 Winograd GEMMs of ``s``: (P, C) x
    (C, M) with U read transposed (16, M, C) by the SUMMA, or (16, C, M) with the overlapping
    distribution (vec n on U^T, stored so by the lowering; constant weights only, else None). No
    bias in the GEMM: bias and activation are applied by the output transform."""
    tr, tc = winograd_tiles(s.ho, s.wo)
    p = s.n * tr * tc
    summa = GemmShape(p, s.m, s.c, s.dtype, trans_b=True, batch=16, lda=s.c, ldb=s.c, ldc=s.m)
    ov = GemmShape(p, s.m, s.c, s.dtype, batch=16, lda=s.c, ldb=s.m, ldc=s.m) if s.const_weights else None
    return summa, ov


def winograd_tiles_per_cpe(s: ConvShape, machine: Machine) -> int:
    """The planner's m' (consecutive 4x4 tiles per input-transform task wanted,
    :func:`winograd_input_tiles_per_cpe` within ``machine.ldm_user_bytes``)."""
    return winograd_input_tiles_per_cpe(s.c, winograd_tiles(s.ho, s.wo)[1], s.elem, machine.ldm_user_bytes)


class _WinogradKernels:
    """The transform kernels' costs of ``s`` (per P padding and m'), computed once each."""

    def __init__(self, s: ConvShape, machine: Machine, budget: int) -> None:
        self.s, self.machine, self.budget = s, machine, budget
        self._inp: dict[tuple[int, int], KernelCost] = {}
        self._out: dict[int, KernelCost] = {}
        self._filt: KernelCost | None = None
        self._res = residual_cost(s, machine) if s.residual else None

    def plan(self, gemm: GemmPlan, tiles_per_cpe: int) -> WinogradPlan:
        s, machine, bud = self.s, self.machine, self.budget
        p = gemm.m
        p_pad = _ceil(p, gemm.bm) * gemm.bm  # the P padding is chosen with the GEMM block (L1194-1196)
        # input / output transforms: tile-to-loop's task decompositions (WinogradTasks), each
        # task synchronous (DMA in, transform + channels-first <-> channels-last transposes in
        # LDM, DMA out)
        if (p_pad, tiles_per_cpe) not in self._inp:
            self._inp[p_pad, tiles_per_cpe] = winograd_input_cost(s, p_pad, tiles_per_cpe, machine, bud)
        inp = self._inp[p_pad, tiles_per_cpe]
        # bias + one parameter-less activation are applied by the output transform in LDM (no
        # NAME_bias kernel): ConvShape carries at most a relu
        if p_pad not in self._out:
            self._out[p_pad] = winograd_output_cost(s, p_pad, machine, bud,
                                                    epilogue_maps=(1 if s.bias else 0) + (1 if s.relu else 0))
        out = self._out[p_pad]
        if s.const_weights:
            kernels: tuple[KernelCost, ...] = (inp, gemm.cost, out)
        else:
            if self._filt is None:
                self._filt = winograd_filter_cost(s, machine, bud)
            kernels = (self._filt, inp, gemm.cost, out)
        if self._res is not None:  # the output transform stores y: the residual sum stays a separate kernel
            kernels += (self._res,)
        return WinogradPlan(s, p, p_pad, tiles_per_cpe, gemm, kernels, _sum_costs("winograd", kernels, s.flops))


def winograd_plan(s: ConvShape, machine: Machine, gemm: GemmPlan, tiles_per_cpe: int,
                  mem_budget: int | None = None) -> WinogradPlan:
    """The Winograd plan of ``s`` with the GEMM plan ``gemm`` (of :func:`winograd_gemm_shapes`)
    and ``tiles_per_cpe`` (m'), costed on ``machine``; ``mem_budget``: LDM bytes of the
    transform kernels (default ``machine.ldm_user_bytes``). No legality check of the GEMM;
    raises :class:`NotApplicable` when a transform does not fit ``mem_budget``."""
    return _WinogradKernels(s, machine, machine.ldm_user_bytes if mem_budget is None else mem_budget).plan(
        gemm, tiles_per_cpe)


def winograd_transforms_fit(s: ConvShape, machine: Machine, mem_budget: int | None = None) -> str | None:
    """None when the input and output transform kernels of ``s`` have a task decomposition within
    ``mem_budget`` (default ``machine.ldm_user_bytes``), whatever the P padding and m', else the
    reason."""
    bud = machine.ldm_user_bytes if mem_budget is None else mem_budget
    p = winograd_gemm_shapes(s)[0].m
    try:
        winograd_input_tasks(s, p, winograd_tiles_per_cpe(s, machine), bud, machine)
        winograd_output_tasks(s, p, bud, machine)
    except NotApplicable as e:
        return str(e)
    return None


def winograd_space(s: ConvShape, machine: Machine, mem_budget: int | None = None) -> Space[WinogradPlan]:
    """Every Winograd plan of ``s`` on ``machine``, lazily: the 16 GEMMs' SUMMA blockings
    (:func:`gemm_candidates`) and, with constant weights, their overlapping-distribution ones
    (:func:`~taihu.backends.model.overlap_gemm.overlap_candidates`), each with m' = the planner's
    :func:`winograd_tiles_per_cpe` and every smaller power of two. The pick (:func:`plan_winograd`)
    takes the planner's m', the GEMM with the smaller GEMM time (SUMMA on ties), each GEMM's
    blocking by its own key; P is padded to that GEMM's M block. ``mem_budget``: LDM bytes of the
    transform kernels (default ``machine.ldm_user_bytes``). Raises :class:`NotApplicable` when the
    algorithm does not apply to ``s``; building a plan raises it when a transform does not fit
    ``mem_budget`` (:func:`winograd_transforms_fit`)."""
    from taihu.backends.model.overlap_gemm import overlap_candidates

    why = applicability(s, "winograd")
    if why:
        raise NotApplicable(why)
    bud = machine.ldm_user_bytes if mem_budget is None else mem_budget
    summa, ov = winograd_gemm_shapes(s)
    mp = winograd_tiles_per_cpe(s, machine)
    kernels = _WinogradKernels(s, machine, bud)

    def leaf(cands: Callable[[], Iterator[tuple[tuple, GemmPlan]]], t: int) -> Space[WinogradPlan]:
        return Enumerated(cands, lambda g: kernels.plan(g, t))

    def with_tiles(t: int) -> Space[WinogradPlan]:
        gemms = [leaf(lambda: gemm_candidates(summa, machine), t)]
        if ov is not None:
            gemms.append(leaf(lambda: overlap_candidates(ov, machine), t))
        return Cheapest(gemms, by=lambda pl: pl.gemm.cost.t_total)

    smaller = [1 << i for i in range(mp.bit_length()) if 1 << i < mp]
    return Preferred([with_tiles(mp)] + [with_tiles(t) for t in reversed(smaller)])


def plan_winograd(s: ConvShape, machine: Machine, mem_budget: int | None = None) -> WinogradPlan:
    """Cost of the four Winograd kernels for ``s`` on ``machine`` (model of the lowering): the
    pick of :func:`winograd_space`; ``mem_budget``: LDM bytes of the transform kernels (as
    :func:`plan_explicit`'s, default ``machine.ldm_user_bytes``). Raises :class:`NotApplicable`,
    ValueError when no GEMM blocking fits."""
    best = winograd_space(s, machine, mem_budget).best()
    if best is None:
        raise ValueError(f"no GEMM blocking of the Winograd convolution {s.describe()} fits in LDM")
    return best


@dataclass(frozen=True)
class ConvChoice:
    """The chosen plan and every candidate's cost (None = not applicable, with the reason)."""

    plan: Plan | UnfoldPlan
    candidates: dict[str, Plan | UnfoldPlan | str] = field(default_factory=dict)

    @property
    def algorithm(self) -> str:
        return self.plan.algorithm

    @property
    def gflops(self) -> float:
        return self.plan.cost.gflops()


def _plan(alg: str, s: ConvShape, machine: Machine, mem_budget: int | None) -> Plan:
    if alg == "implicit":
        return plan_implicit(s, machine)
    if alg == "im2col":
        return plan_explicit(s, machine, mem_budget)
    return plan_winograd(s, machine, mem_budget)


@functools.lru_cache(maxsize=512)
def choose_conv(s: ConvShape, machine: Machine, algorithm: str = "auto", mem_budget: int | None = None) -> ConvChoice:
    """Plan every applicable algorithm for ``s`` on ``machine`` and keep the fastest (``auto``),
    or the forced one. The ``implicit`` candidate is the faster of :func:`plan_implicit` and the
    unfolded variant (:func:`taihu.backends.model.unfold_conv.plan_unfold`, when applicable).
    ``mem_budget``: LDM bytes of the memory-primitive kernels (im2col, Winograd transforms;
    :func:`plan_explicit`), default ``machine.ldm_user_bytes``.

    Raises :class:`NotApplicable` when a forced algorithm cannot run the layer (message = the
    reason) or when ``algorithm`` is unknown.

    Memoised (``functools.lru_cache``: the shape, the machine and the plans are frozen
    dataclasses): networks repeat layer shapes (ResNet-50: 53 convolutions, ~20 distinct shapes)
    and planning is most of ``convert-graph-to-tile``'s time."""
    if algorithm not in ("auto",) + ALGORITHMS:
        raise NotApplicable(applicability(s, algorithm) or algorithm)
    cands: dict[str, Plan | UnfoldPlan | str] = {}
    for alg in ALGORITHMS:
        if algorithm != "auto" and alg != algorithm:
            continue
        why = applicability(s, alg)
        if why:
            cands[alg] = why
            continue
        try:
            cands[alg] = _plan(alg, s, machine, mem_budget)
        except NotApplicable as exc:
            cands[alg] = str(exc)
        if alg == "implicit":  # the unfolded variant (backends/model/unfold_conv.py) when faster
            from taihu.backends.model.unfold_conv import plan_unfold, unfold_applicability

            if unfold_applicability(s) is None:
                try:
                    alt = plan_unfold(s, machine)
                except NotApplicable:
                    continue
                cur = cands[alg]
                if isinstance(cur, str) or alt.cost.t_total < cur.cost.t_total:
                    cands[alg] = alt
    plans = [p for p in cands.values() if not isinstance(p, str)]
    if not plans:
        if algorithm != "auto":
            raise NotApplicable(str(cands[algorithm]))
        reasons = "; ".join(f"{a}: {r}" for a, r in cands.items())
        raise NotApplicable(reasons)
    best = min(plans, key=lambda p: (p.cost.t_total, ALGORITHMS.index(p.algorithm)))
    return ConvChoice(best, cands)

