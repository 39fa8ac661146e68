"""The seed's own fp32 SGEMM on one core group: swGEMM's blocked loop with A7 strategy 2 (GM-1).

What the seed says (004 = seeds/004_9451f19c807291d7.txt):

* L823 (algorithms.md A7): the fused load-and-broadcast instructions exist for fp64 only, so
  swGEMM's fp32 primitive converts the fp32 tiles to fp64 in LDM, runs the fp64 primitive and
  converts the result back ("strategy 2"); it costs LDM space and conversion time.
* L934: swGEMM converts "before and after every call of the GEMM primitive" (xMath instead
  converts whole matrices once); L1578: the conversion is why the fp32 primitive saturates.
* L856-865: K innermost (the C block stays in LDM, A and B blocks stream), 128-B aligned
  matrices, the A/B tile DMAs double-buffered.
* L869 (GM-1): M = N = K = 1024, 81 feasible blockings, worst 66.83, best 363.59 GFLOPS.
* L876-878: the primitive's time is eq 4-2; the fitted leading coefficient is c = 3.10e-12 s
  (the loop-structure value 2.86e-12 s; 17 cycles per 16-VMAD iteration).
* L674 with eq 3-3 (L607, spec model §9.1): software double buffering hides the whole DMA time of
  a compute-bound kernel, but gains only T_DMA/16 when the kernel is memory-bound.

The seed gives neither the feasibility rule behind "81" nor the conversion code. Both are taken
from the thesis author's public swGEMM (outside the seeds: public SW26010 code), whose
exhaustive-sweep driver and SGEMM kernel this module follows:

* feasible blockings (:func:`seed_blockings`): B_N (the vectorised dim) a multiple of 128, B_M a
  multiple of 32, B_K a multiple of 32, each dividing its dimension, and the fp64 footprint
  ``8 * (2 B_M B_K + 2 B_K B_N + B_M B_N) / 64`` bytes within the LDM budget: each fp32 tile is
  DMA'd into the first half of its fp64 buffer and widened in place from the end backwards, so
  the conversion needs no staging buffer. For 1024^3 this is exactly 81 blockings (the same set
  under the driver's 60 KiB limit and ``ldm_user_bytes`` = 56 KiB);
* per (B_M, B_N) block: zero the fp64 C block with a scalar loop; per K step: issue the next A
  and B DMAs, convert the current A and B tiles with a compiled loop of one 4-lane vector per
  iteration (``simd_load`` of a floatv4, cast, ``simd_store`` of a doublev4), run the fp64
  primitive, wait for the DMAs; after the K loop convert C back in place, put it, wait.

Loop costs (:class:`A7LoopCosts`) are those of the compiled loops on the CPE's dual-issue
in-order pipeline (spec §6; seed Table 3.2): a conversion iteration issues a vector load on P1,
the dependent vector store ``lat_ldm_load`` cycles later on P1 and the loop branch on P1 (the
counter update goes to P0): ``lat_ldm_load + 2`` cycles per 4 elements; a zeroing iteration is
a scalar fp store and the branch, both on P1: 2 cycles per element. No unrolling or software
pipelining is assumed (the public loop is plain C; sw5cc -O3 does not software-pipeline even the
GEMM k-loop, 004 L790). ``test_swgemm_fp32`` checks both against the simulator's pipeline
(``backends.sim.pipeline.schedule_body``) on the same instruction sequence.

Cost of a blocking (:func:`a7_cost`), all per core group, seconds::

    T = T_DMA(first A/B tiles)                                  # prologue
      + (steps - 1) * step(T_DMA, T_convert + T_prim) + T_convert + T_prim
      + blocks * (T_zero_C + T_convert_C + T_put_C)             # exposed per (B_M, B_N) block

with ``T_DMA`` eq 3-2 for the per-CPE strided descriptors of the fp32 tiles
(:func:`~taihu.backends.model.gemm_blocking.tile_moved_bytes`), ``T_prim`` the fp64 primitive
(:class:`~taihu.backends.model.gemm_blocking.StructuralPrimitiveModel` by default, or any
primitive model such as the seed's fitted :class:`~taihu.backends.model.gemm_blocking.Eq42`),
and ``step`` the overlap rule: ``"double-buffer"`` = ``max(T_DMA, T_compute)`` (what the
kernel's prefetch allows), or ``"seed"`` = eq 3-3 with the seed's double-buffering rule
(compute-bound: ``T_compute``; memory-bound: ``T_compute + T_DMA - T_DMA/16``), or ``"none"`` =
``T_DMA + T_compute`` (no overlap at all: not what the kernel does, an upper bound on its time
from the modelled costs, used to tell a missing cost from a missing overlap).

What is still missing (GM-1, default machine): the seed's 66.83 GFLOPS at the worst blocking
(32, 128, 32) means 3.9 us per K step where eq 3-2 gives 2.3 us of DMA and the conversion and
primitive 0.8 us; its 363.59 at the model's best (128, 256, 512) means about 92 us per step where
the compute is 50 us and the DMA 26 us. Even every modelled cost serial (``"none"``, fitted c)
stays 1.27x / 1.19x optimistic, so the gap is a missing cost, not only a missing overlap, and it
behaves like a uniform ~1.7x slowdown of both the DMA-bound and the compute-bound end. The
conversion cannot carry it: at (128, 256, 512) it would have to cost ~20 cycles per element
(the compiled loop costs 1.5). Candidates the seed does not quantify: the primitive's per-call
and per-tile terms (eq 4-2's a, b, d: fitted in the seed, values not printed); the strided DMA
bandwidth of the 16-256 B blocks of fp32 tiles (eq 3-2 is the seed's model; the public swGEMM
driver's measured table, outside the seeds, is about half of it for 128-256 B blocks).
"""

from __future__ import annotations

from dataclasses import dataclass

from taihu.backends.model.gemm_blocking import (
    MESH,
    REG_VEC,
    VEC_LANES,
    Blocking,
    GemmProblem,
    PrimitiveModel,
    StructuralPrimitiveModel,
    t_dma_tiles,
    tile_moved_bytes,
)
from taihu.target.machine import Machine

#: block multiples of the public swGEMM sweep (B_M, B_N, B_K) for the vectorised N: 32, 128 and
#: 32 (B_K steps by 32 in the driver; the primitive itself needs only 8, §A5).
SEED_UNITS = (32, 128, 32)
OVERLAP_RULES = ("double-buffer", "seed", "none")
#: eq 4-2's leading coefficient as fitted on the hardware's 1505 primitive runs, seconds per
#: M*N*K (004 L878; the loop-structure value is 2.86e-12 s, taihu's structural model 2.69e-12 s)
EQ42_C_FITTED = 3.10e-12


def seed_fitted_primitive(machine: Machine) -> StructuralPrimitiveModel:
    """The structural primitive with its k-step cost set so that the leading term equals the
    seed's fitted ``c`` (:data:`EQ42_C_FITTED`): ``c * 4096 * f_clk`` = 18.4 cycles per
    16-VMAD k-step instead of 16 (the per-tile and per-step terms are kept)."""
    # one k-step of every CPE = 64 CPEs x 64 multiply-adds (16 VMAD x 4 lanes) = 4096 of M*N*K
    kstep = EQ42_C_FITTED * MESH * MESH * REG_VEC * VEC_LANES * machine.f_clk_ghz * 1e9
    return StructuralPrimitiveModel(machine, cycles_per_kstep=kstep)  # type: ignore[arg-type]


@dataclass(frozen=True)
class A7LoopCosts:
    """Cycles of the compiled LDM loops of A7 strategy 2 on one CPE (module docstring):
    ``convert_per_vec`` per 4 converted elements (fp32 -> fp64 and back), ``zero_per_elem`` per
    zeroed fp64 element."""

    convert_per_vec: float
    zero_per_elem: float

    @classmethod
    def from_machine(cls, machine: Machine) -> A7LoopCosts:
        """vector load -> dependent vector store (``lat_ldm_load``) -> branch, all on P1; a
        scalar store and a branch on P1 (seed Table 3.2, spec §6)."""
        return cls(convert_per_vec=float(machine.lat_ldm_load + 2), zero_per_elem=2.0)


@dataclass(frozen=True)
class A7Cost:
    """Modelled time of one blocking of the A7 SGEMM (seconds unless stated)."""

    blocking: Blocking
    total: float
    t_dma_step: float  # next A + B tiles (eq 3-2)
    t_convert_step: float  # fp32 -> fp64 of the current A and B tiles
    t_prim_step: float  # fp64 mesh primitive
    t_zero_c: float  # per (B_M, B_N) block
    t_convert_c: float  # fp64 -> fp32 of the C block, per block
    t_put_c: float  # put of the fp32 C block, waited, per block
    steps: int
    blocks: int
    ldm_bytes: int
    gflops: float

    @property
    def t_compute_step(self) -> float:
        return self.t_convert_step + self.t_prim_step

    @property
    def bound(self) -> str:
        """"dma" or "compute": which side of a K step is longer."""
        return "dma" if self.t_dma_step > self.t_compute_step else "compute"


def _check(problem: GemmProblem) -> None:
    if problem.dtype != "f32" or problem.vec != "n" or problem.beta != 0.0 or problem.double_buffer_c:
        raise ValueError(
            f"the A7 SGEMM model covers fp32, vec 'n', beta 0, single C buffer (the seed's GM-1 kernel); got {problem}"
        )


def seed_ldm_bytes(blk: Blocking) -> int:
    """Per-CPE fp64 footprint of the public kernel: A and B double-buffered, C single, the fp32
    tiles widened in place: ``8 * (2 B_M B_K + 2 B_K B_N + B_M B_N) / 64`` bytes."""
    return 8 * (2 * blk.bm * blk.bk + 2 * blk.bk * blk.bn + blk.bm * blk.bn) // (MESH * MESH)


def seed_blockings(problem: GemmProblem, machine: Machine) -> list[Blocking]:
    """The public swGEMM sweep's feasible blockings (module docstring), in (B_M, B_N, B_K) order.

    Raises ValueError for problems outside the model (see :func:`a7_cost`)."""
    _check(problem)
    um, un, uk = SEED_UNITS
    out = []
    for bm in range(um, problem.m + 1, um):
        for bn in range(un, problem.n + 1, un):
            for bk in range(uk, problem.k + 1, uk):
                blk = Blocking(bm, bn, bk)
                if problem.m % bm or problem.n % bn or problem.k % bk:
                    continue
                if seed_ldm_bytes(blk) <= machine.ldm_user_bytes:
                    out.append(blk)
    return out


def a7_cost(
    problem: GemmProblem,
    blk: Blocking,
    machine: Machine,
    prim: PrimitiveModel | None = None,
    overlap: str = "double-buffer",
    loops: A7LoopCosts | None = None,
) -> A7Cost:
    """Cost of ``blk`` for the A7 SGEMM (module docstring). ``prim`` (seconds per fp64 primitive
    call on (B_M, B_N, B_K)) defaults to :class:`StructuralPrimitiveModel`; ``loops`` to
    :meth:`A7LoopCosts.from_machine`.

    Raises ValueError when the problem is not the fp32 / vec "n" / beta 0 kernel, when ``blk``
    does not divide the dims in multiples of (32, 128, 32), or for an unknown ``overlap``."""
    _check(problem)
    if overlap not in OVERLAP_RULES:
        raise ValueError(f"overlap must be one of {OVERLAP_RULES}, got {overlap!r}")
    um, un, uk = SEED_UNITS
    if blk.bm % um or blk.bn % un or blk.bk % uk or problem.m % blk.bm or problem.n % blk.bn or problem.k % blk.bk:
        raise ValueError(f"{blk} must divide {(problem.m, problem.n, problem.k)} in multiples of {SEED_UNITS}")
    lc = loops or A7LoopCosts.from_machine(machine)
    prim_fn: PrimitiveModel = prim or StructuralPrimitiveModel(machine)
    cyc = machine.cycles_to_seconds
    e = problem.elem_bytes
    txn = machine.mem_txn_bytes
    nm, nn, nk = problem.m // blk.bm, problem.n // blk.bn, problem.k // blk.bk
    steps, blocks = nm * nn * nk, nm * nn
    mv_ab = tile_moved_bytes(blk.bm, blk.bk, problem.k, e, txn) + tile_moved_bytes(blk.bk, blk.bn, problem.n, e, txn)
    mv_c = tile_moved_bytes(blk.bm, blk.bn, problem.n, e, txn)
    t_dma = t_dma_tiles(mv_ab, machine)
    per_cpe_ab = (blk.bm * blk.bk + blk.bk * blk.bn) / (MESH * MESH)
    per_cpe_c = blk.bm * blk.bn / (MESH * MESH)
    t_conv = cyc(lc.convert_per_vec * per_cpe_ab / VEC_LANES)
    t_prim = prim_fn(blk.bm, blk.bn, blk.bk, problem.vec)
    t_comp = t_conv + t_prim
    if overlap == "none":
        t_step = t_comp + t_dma
    elif overlap == "double-buffer" or t_comp >= t_dma:
        t_step = max(t_dma, t_comp)
    else:  # seed rule, memory-bound: prefetch gains only T_DMA/16 (004 L674)
        t_step = t_comp + t_dma - t_dma / 16
    t_zero = cyc(lc.zero_per_elem * per_cpe_c)
    t_conv_c = cyc(lc.convert_per_vec * per_cpe_c / VEC_LANES)
    t_put = t_dma_tiles(mv_c, machine, put=True)
    total = t_dma + (steps - 1) * t_step + t_comp + blocks * (t_zero + t_conv_c + t_put)
    return A7Cost(
        blocking=blk,
        total=total,
        t_dma_step=t_dma,
        t_convert_step=t_conv,
        t_prim_step=t_prim,
        t_zero_c=t_zero,
        t_convert_c=t_conv_c,
        t_put_c=t_put,
        steps=steps,
        blocks=blocks,
        ldm_bytes=seed_ldm_bytes(blk),
        gflops=problem.flops / total / 1e9,
    )


def a7_sweep(
    problem: GemmProblem,
    machine: Machine,
    prim: PrimitiveModel | None = None,
    overlap: str = "double-buffer",
    loops: A7LoopCosts | None = None,
) -> list[A7Cost]:
    """:func:`a7_cost` of every :func:`seed_blockings` candidate (the exhaustive GM-1 sweep)."""
    return [a7_cost(problem, b, machine, prim, overlap, loops) for b in seed_blockings(problem, machine)]


__all__ = [
    "A7Cost",
    "A7LoopCosts",
    "OVERLAP_RULES",
    "SEED_UNITS",
    "a7_cost",
    "EQ42_C_FITTED",
    "a7_sweep",
    "seed_blockings",
    "seed_fitted_primitive",
    "seed_ldm_bytes",
]
