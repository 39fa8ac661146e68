"""Memory-level GEMM blocking model (swGEMM; algorithms.md §B, 004 §4.2 L835-889).

Problem: ``C = A x B (+ beta C)`` on one core group, A (M, K), B (K, N), C (M, N) row-major in
main memory, 128-B aligned (R7, 004 L865). The kernel blocks M, N, K by (B_M, B_N, B_K) with K
innermost (004 L856-863: the C block stays in LDM, A/B blocks stream; RBW = 1/(2B_M) + 1/(2B_N),
independent of B_K) and runs the mesh GEMM primitive (algorithms.md §A) on every block step.
A and B blocks are double-buffered (004 L674, L865; Alg 8 prefetch); dims that are not block
multiples are padded to them (lightweight padding, §B item 8, L883-889: same per-step cost,
``ceil`` block counts; the O(M+K) boundary copies, < 5 % per L906, are not modelled).

Feasible blockings (§B item 7, 004 L867-878):

* block sizes are ``unit * 2^i`` <= the dim rounded up to ``unit`` (plus that rounded dim
  itself), the power-of-two factor lists of the DSL's schedule space (004 L1468);
  ``unit`` = the §A5 multiples (004 L784, L885): 128 for the vectorised dim, 32 for the other,
  8 for K (:data:`taihu.dialects.common.GEMM_VEC_MULTIPLE` ...);
* the per-CPE LDM footprint (:func:`ldm_footprint`) <= ``ldm_user_bytes`` (57 344 B [param]).

Cost of a blocking (:func:`blocking_cost`), the "[reconstructed combination]" of §B item 7
(the seed names eq 3-2 and eq 4-2, L871-878, and the swAutoDNN rule ``max(T_DMA, T_compute)``
of L1566)::

    T = T_DMA(first A/B blocks)                                   # prologue, not hidden
      + sum over block steps of max(T_DMA(next A/B blocks), T_prim)  # double buffering
      + sum over (B_M, B_N) blocks of T_epilogue                  # C fill/convert + C put (+ get)

* ``T_DMA`` is eq 3-2 (004 L597; spec model §9.1) for the per-CPE strided descriptors of §B
  item 6 (each CPE moves (rows/8) blocks of (lead/8) contiguous elements), with the 128-B
  transaction waste of every CPE's blocks (spec §4.4, ``backends.sim.dma``) summed over the 64
  CPEs: ``T_latency + Σ_cpe moved / PEAK_BW``; the A and B descriptors of one step are queued
  back to back, so one start-up latency is paid per step (``dma_latency_overlap``, spec §11).
* ``T_prim`` is the primitive's compute time (:class:`StructuralPrimitiveModel` by default;
  :class:`Eq42` is the seed's fitted form, 004 eq 4-2 L876, usable with coefficients fitted on
  swsim runs). Both are in seconds.

The chosen blocking (:func:`choose_blocking`) is the minimum over the enumerated costs (ties:
larger blocks first, then (B_M, B_N, B_K) order), i.e. the model-based tuner of 004 L867-878 /
E7 (L1538-1570). Seed reference for M = N = K = 1024 (GM-1, L869): 81 feasible blockings, worst
66.83 GFLOPS, best 363.59 GFLOPS (fp32 on hardware, conversion included).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from taihu.target.machine import Machine

#: §A5 block multiples (004 L784, L885; model §12 #5). Same values as taihu.dialects.common
#: (not imported: backends/model sits below the dialects).
VEC_UNIT = 128
OTHER_UNIT = 32
K_UNIT = 8
MESH = 8
LDM_ALIGN = 32  # bytes, per-buffer rounding (vector alignment; loop.ldm_buffer footprint)

#: cycles per k-step of the register-tiled inner loop: 16 VMAD on P0, EE = 100 % (corrected
#: Listing 4.1, HW-2, 004 L790-819).
CYCLES_PER_KSTEP = 16
#: register tile (§A3, 004 L777): 16 elements of the vectorised dim x 4 of the other.
REG_VEC = 16
REG_OTHER = 4
VEC_LANES = 4


@dataclass(frozen=True)
class GemmProblem:
    """``C = A x B (+ beta C)``: A (m, k), B (k, n), C (m, n) row-major; ``dtype`` "f64" or
    "f32" (fp32 data are converted to fp64 in LDM around the primitive, A7 / 004 L823);
    ``vec`` = the vectorised dim ("n": natural for row-major B and C; "m");
    ``double_buffer_c``: also double-buffer the C block, so the put of one (B_M, B_N) block
    overlaps the steps of the next (costs a second C block of LDM; the seed double-buffers the
    A/B tile DMAs only, L865)."""

    m: int
    n: int
    k: int
    dtype: str = "f64"
    vec: str = "n"
    beta: float = 0.0
    double_buffer_c: bool = False

    def __post_init__(self) -> None:
        if min(self.m, self.n, self.k) <= 0:
            raise ValueError(f"GEMM dims must be positive, got {(self.m, self.n, self.k)}")
        if self.dtype not in ("f32", "f64"):
            raise ValueError(f"dtype must be f32 or f64, got {self.dtype}")
        if self.vec not in ("m", "n"):
            raise ValueError(f"vec must be 'm' or 'n', got {self.vec}")

    @property
    def elem_bytes(self) -> int:
        return 8 if self.dtype == "f64" else 4

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def units(self) -> tuple[int, int, int]:
        """§A5 multiples (unit_M, unit_N, unit_K)."""
        return (VEC_UNIT, OTHER_UNIT, K_UNIT) if self.vec == "m" else (OTHER_UNIT, VEC_UNIT, K_UNIT)


@dataclass(frozen=True, order=True)
class Blocking:
    """Block sizes (B_M, B_N, B_K) in elements."""

    bm: int
    bn: int
    bk: int


# --------------------------------------------------------------------------------------------
# Primitive compute time
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StructuralPrimitiveModel:
    """Cycle count of the mesh GEMM primitive on (M, N, K) LDM blocks from the loop structure of
    Algorithm 2 (004 L728-759) with the hand-scheduled inner loop (Listing 4.1) [derived]:

    ``cycles = 8 * (tiles * (K/8 * 16 + t_tile) + t_step) + t_call`` where the 8 SUMMA steps
    each run ``tiles = (vec/8/16) * (other/8/4)`` register tiles per CPE; every tile runs K/8
    k-steps of 16 cycles (HW-2) plus ``t_tile = 16 + 16 + lat_ldm_load + lat_fp`` (load and
    store the 16 accumulator registers on P1, pipeline fill and drain); every step waits
    ``t_step = rlc_latency`` for the first broadcast. The leading term is ``M*N*K/256`` cycles,
    i.e. ``c = 16 / 4096 / f_clk = 2.69e-12`` s in eq 4-2 form (seed: 2.86e-12 = 17 cycles,
    L878; model §9.3).

    fp32 problems add the in-LDM conversions (A7, 004 L823) in :func:`blocking_cost`:
    ``convert_cycles_per_elem`` (vlds + vstd, 2 P1 slots per 4 elements) per converted element.
    """

    machine: Machine
    cycles_per_kstep: int = CYCLES_PER_KSTEP
    convert_cycles_per_elem: float = 2 / VEC_LANES
    fill_cycles_per_elem: float = 1 / VEC_LANES  # vstd of a zero register per 4 elements

    @property
    def t_tile(self) -> int:
        m = self.machine
        return 2 * REG_VEC + m.lat_ldm_load + m.lat_fp

    @property
    def t_step(self) -> int:
        return self.machine.rlc_latency

    def cycles(self, bm: int, bn: int, bk: int, vec: str = "n") -> float:
        v, o = (bm, bn) if vec == "m" else (bn, bm)
        tiles = (v // MESH // REG_VEC) * (o // MESH // REG_OTHER)
        k_local = bk // MESH
        return MESH * (tiles * (k_local * self.cycles_per_kstep + self.t_tile) + self.t_step)

    def __call__(self, bm: int, bn: int, bk: int, vec: str = "n") -> float:
        """Seconds for one primitive call on (B_M, B_N, B_K)."""
        return self.machine.cycles_to_seconds(self.cycles(bm, bn, bk, vec))


@dataclass(frozen=True)
class Eq42:
    """004 eq 4-2 (L876): ``T = a*K + b*K*M/(vecM*4) + c*K*M*N + d`` seconds, with the third
    term read as ``c*K*M*N`` (model §9.3 [derived]: the printed "/4" contradicts c = 2.86e-12).
    ``vecM`` = 16 (elements of the vectorised dim per register tile). The seed fitted a..d on
    1505 runs (fitted c = 3.10e-12, L878); :meth:`fit` does the same on (M, N, K, seconds)
    samples, e.g. swsim measurements."""

    a: float = 0.0
    b: float = 0.0
    c: float = 2.86e-12
    d: float = 0.0
    vec_m: int = REG_VEC

    @staticmethod
    def features(m: float, n: float, k: float, vec_m: int = REG_VEC) -> np.ndarray:
        return np.array([k, k * m / (vec_m * 4), k * m * n, 1.0])

    def __call__(self, bm: int, bn: int, bk: int, vec: str = "n") -> float:
        # eq 4-2 is written for the vector-loaded M; with vec "n" the roles of M and N swap.
        m, n = (bm, bn) if vec == "m" else (bn, bm)
        return float(np.dot([self.a, self.b, self.c, self.d], self.features(m, n, bk, self.vec_m)))

    @classmethod
    def fit(cls, samples: Sequence[tuple[int, int, int, float]], vec_m: int = REG_VEC) -> Eq42:
        """Least-squares a, b, c, d from (M, N, K, seconds) samples (M = vector-loaded dim)."""
        if len(samples) < 4:
            raise ValueError("eq 4-2 has 4 coefficients: need >= 4 samples")
        x = np.array([cls.features(m, n, k, vec_m) for m, n, k, _ in samples])
        y = np.array([t for *_, t in samples])
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        a, b, c, d = (float(v) for v in coef)  # one per feature column
        return cls(a, b, c, d, vec_m=vec_m)


PrimitiveModel = Callable[[int, int, int, str], float]

# --------------------------------------------------------------------------------------------
# LDM footprint and candidates
# --------------------------------------------------------------------------------------------


def _round(b: float) -> int:
    return int(-(-b // LDM_ALIGN) * LDM_ALIGN)


def ldm_footprint(problem: GemmProblem, blk: Blocking) -> int:
    """Per-CPE LDM bytes of a blocking (§A5 / §B item 7):

    * f64: A and B blocks double-buffered, C block single: ``8*(2*A + 2*B + C)/64``;
    * f32: fp32 DMA staging of A and B double-buffered (``4*2*(A + B)/64``) + fp64 compute copies
      of A, B, C (``8*(A + B + C)/64``); C is converted back to fp32 in place (the fp32 value i
      is written at byte 4i while reading byte 8i, i ascending), so it needs no staging.

    Each buffer is rounded up to 32 B. A, B, C = B_M*B_K, B_K*B_N, B_M*B_N elements. With
    ``problem.double_buffer_c`` the (fp64) C block is counted twice.
    """
    a = blk.bm * blk.bk / (MESH * MESH)
    b = blk.bk * blk.bn / (MESH * MESH)
    c = blk.bm * blk.bn / (MESH * MESH)
    nc = 2 if problem.double_buffer_c else 1
    if problem.dtype == "f64":
        return 2 * _round(8 * a) + 2 * _round(8 * b) + nc * _round(8 * c)
    return 2 * _round(4 * a) + 2 * _round(4 * b) + _round(8 * a) + _round(8 * b) + nc * _round(8 * c)


def candidate_sizes(dim: int, unit: int) -> list[int]:
    """``unit * 2^i`` <= ``ceil(dim/unit)*unit``, plus that padded dim (power-of-two factor
    lists, 004 L1468)."""
    top = -(-dim // unit) * unit
    out = []
    s = unit
    while s <= top:
        out.append(s)
        s *= 2
    if out[-1] != top:
        out.append(top)
    return out


def feasible_blockings(
    problem: GemmProblem, machine: Machine, min_block: tuple[int, int, int] | None = None
) -> list[Blocking]:
    """Every (B_M, B_N, B_K) of :func:`candidate_sizes` whose :func:`ldm_footprint` fits in
    ``machine.ldm_user_bytes`` (§B item 7). ``min_block`` optionally drops smaller blocks (e.g.
    ``(0, 0, 32)`` = at least 4 k-steps per CPE)."""
    um, un, uk = problem.units()
    lo = min_block or (0, 0, 0)
    out = []
    for bm in [x for x in candidate_sizes(problem.m, um) if x >= lo[0]]:
        for bn in [x for x in candidate_sizes(problem.n, un) if x >= lo[1]]:
            for bk in [x for x in candidate_sizes(problem.k, uk) if x >= lo[2]]:
                blk = Blocking(bm, bn, bk)
                if ldm_footprint(problem, blk) <= machine.ldm_user_bytes:
                    out.append(blk)
    return out


# --------------------------------------------------------------------------------------------
# DMA time (eq 3-2)
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def tile_moved_bytes(rows: int, lead: int, ld: int, elem: int, txn: int = 128) -> float:
    """Bytes moved (whole 128-B transactions, spec §4.4) by the 64 per-CPE descriptors of one
    (rows x lead) tile of a row-major matrix with leading dimension ``ld`` (elements), §B item 6:
    CPE (i, j) gets rows/8 blocks of lead/8 contiguous elements at row i*rows/8, column
    j*lead/8 of the tile. Averaged over the tile positions along the leading dim (their 128-B
    phases differ when ``lead*elem`` is not a multiple of 128). Matrix base 128-B aligned.

    Memoised (a pure function of integers; planning a network asks for the same few hundred
    tiles tens of thousands of times: ResNet-50 26k calls, 596 distinct)."""
    r8, l8 = rows // MESH, lead // MESH
    bsize = l8 * elem
    i = np.arange(MESH).reshape(MESH, 1, 1)
    j = np.arange(MESH).reshape(1, MESH, 1)
    t = np.arange(r8).reshape(1, 1, r8)
    rel = ((i * r8 + t) * ld + j * l8) * elem  # byte offset of every block from the tile origin
    n_pos = max(1, ld // lead)
    phases: dict[int, int] = {}
    for p in range(n_pos):
        ph = (p * lead * elem) % txn
        phases[ph] = phases.get(ph, 0) + 1
    total = 0.0
    for ph, count in phases.items():
        a = rel + ph
        ntx = -(-(a + bsize) // txn) - a // txn
        total += count * float(ntx.sum()) * txn
    return total / n_pos


def t_dma_tiles(moved_total: float, machine: Machine, put: bool = False) -> float:
    """eq 3-2 for 64 CPEs issuing together: ``T_latency + moved / PEAK_BW`` (seconds), with
    ``moved`` summed over the CPEs (= per-CPE moved / (PEAK_BW / #CPE) when equal, L597)."""
    bw = machine.peak_bw_cg * 1e9 / (machine.dma_put_bw_factor if put else 1.0)
    return machine.cycles_to_seconds(machine.dma_latency) + moved_total / bw


# --------------------------------------------------------------------------------------------
# Cost and choice
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockingCost:
    """Modelled time of one blocking (seconds unless stated)."""

    blocking: Blocking
    total: float
    t_dma_step: float  # A+B block DMA of one step (eq 3-2)
    t_prim_step: float  # primitive (incl. fp32 conversion of A and B) per step
    t_prologue: float
    t_epilogue: float  # exposed time per (B_M, B_N) block (C fill/convert, + C put/get unless C is double-buffered)
    steps: int
    blocks: int
    ldm_bytes: int
    gflops: float
    dma_efficiency: float  # useful bytes / moved bytes of the A+B DMAs

    @property
    def bound(self) -> str:
        """"dma" or "compute": which side of max(T_DMA, T_prim) a block step sits on."""
        return "dma" if self.t_dma_step > self.t_prim_step else "compute"


def blocking_cost(
    problem: GemmProblem,
    blk: Blocking,
    machine: Machine,
    prim: PrimitiveModel | None = None,
) -> BlockingCost:
    """Cost of ``blk`` on ``machine`` (module docstring). ``prim`` defaults to
    :class:`StructuralPrimitiveModel` of ``machine``.

    Raises ValueError when ``blk`` violates the §A5 multiples.
    """
    smodel = StructuralPrimitiveModel(machine)
    prim_fn: PrimitiveModel = prim or smodel
    um, un, uk = problem.units()
    if blk.bm % um or blk.bn % un or blk.bk % uk:
        raise ValueError(f"{blk} violates the §A5 multiples ({um}, {un}, {uk}) for vec {problem.vec}")
    e = problem.elem_bytes
    nm, nn, nk = (-(-problem.m // blk.bm), -(-problem.n // blk.bn), -(-problem.k // blk.bk))
    steps, blocks = nm * nn * nk, nm * nn
    mv_a = tile_moved_bytes(blk.bm, blk.bk, max(problem.k, blk.bk), e, machine.mem_txn_bytes)
    mv_b = tile_moved_bytes(blk.bk, blk.bn, max(problem.n, blk.bn), e, machine.mem_txn_bytes)
    mv_c = tile_moved_bytes(blk.bm, blk.bn, max(problem.n, blk.bn), e, machine.mem_txn_bytes)
    t_dma = t_dma_tiles(mv_a + mv_b, machine)
    t_prim = prim_fn(blk.bm, blk.bn, blk.bk, problem.vec)
    per_cpe_c = blk.bm * blk.bn / (MESH * MESH)
    epi_cycles = smodel.fill_cycles_per_elem * per_cpe_c
    if problem.dtype == "f32":
        per_cpe_ab = (blk.bm * blk.bk + blk.bk * blk.bn) / (MESH * MESH)
        t_prim += machine.cycles_to_seconds(smodel.convert_cycles_per_elem * per_cpe_ab)
        epi_cycles += smodel.convert_cycles_per_elem * per_cpe_c
    t_put = t_dma_tiles(mv_c, machine, put=True)
    t_get_c = t_dma_tiles(mv_c, machine) if problem.beta != 0.0 else 0.0
    t_step = max(t_dma, t_prim)
    if problem.double_buffer_c:
        # The put of block j (and the get of block j+1's C) joins the prefetch traffic of the
        # first step of block j+1; only the last put is exposed.
        t_epi = machine.cycles_to_seconds(epi_cycles)
        extra = (mv_c * (2 if problem.beta != 0.0 else 1)) / (machine.peak_bw_cg * 1e9)
        t_first = max(t_dma + extra, t_prim)
        total = t_dma + t_get_c + (steps - blocks) * t_step + (blocks - 1) * t_first + t_prim
        total += blocks * t_epi + t_put
    else:
        t_epi = machine.cycles_to_seconds(epi_cycles) + t_put + t_get_c
        total = t_dma + (steps - 1) * t_step + t_prim + blocks * t_epi
    useful = (blk.bm * blk.bk + blk.bk * blk.bn) * e
    return BlockingCost(
        blocking=blk,
        total=total,
        t_dma_step=t_dma,
        t_prim_step=t_prim,
        t_prologue=t_dma,
        t_epilogue=t_epi,
        steps=steps,
        blocks=blocks,
        ldm_bytes=ldm_footprint(problem, blk),
        gflops=problem.flops / total / 1e9,
        dma_efficiency=useful / (mv_a + mv_b),
    )


def enumerate_costs(
    problem: GemmProblem, machine: Machine, prim: PrimitiveModel | None = None
) -> list[BlockingCost]:
    """:func:`blocking_cost` of every :func:`feasible_blockings` candidate (enumeration order)."""
    return [blocking_cost(problem, b, machine, prim) for b in feasible_blockings(problem, machine)]


def choose_blocking(
    problem: GemmProblem, machine: Machine, prim: PrimitiveModel | None = None
) -> BlockingCost:
    """The minimum-cost feasible blocking (ties: larger B_M*B_N*B_K, then larger (B_M, B_N, B_K)).

    Raises ValueError when no blocking fits in LDM."""
    costs = enumerate_costs(problem, machine, prim)
    if not costs:
        raise ValueError(f"no feasible blocking for {problem} within ldm_user_bytes")
    return min(
        costs,
        key=lambda c: (c.total, -c.blocking.bm * c.blocking.bn * c.blocking.bk, tuple(-x for x in (c.blocking.bm, c.blocking.bn, c.blocking.bk))),
    )


def shape_class(m: int, n: int, k: int, small: int = 256) -> str:
    """Goto's classes (004 L835, §B item 2) by the two matrix dims of C: "GEMM" (both large),
    "GEMP" (one < ``small``), "GEPB" (both < ``small``) [param: threshold]."""
    s = (m < small) + (n < small)
    return ("GEMM", "GEMP", "GEPB")[s]


__all__ = [
    "Blocking",
    "BlockingCost",
    "Eq42",
    "GemmProblem",
    "StructuralPrimitiveModel",
    "blocking_cost",
    "candidate_sizes",
    "choose_blocking",
    "enumerate_costs",
    "feasible_blockings",
    "ldm_footprint",
    "shape_class",
    "tile_moved_bytes",
]
