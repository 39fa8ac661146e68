"""Plan and cost of the *unfolded* implicit-GEMM convolution (``tile.unfold``; lowering:
``passes/conversion/graph_to_tile/conv.py``, ``ConvPattern._unfold``).

The kernel (NCHW activations, constant weights; algorithms.md §C3 with the kernel taps of §C2
concatenated along K)::

    for m0 (bm output channels) / n (image) / ro0 (8 output rows, one per mesh column):
      fill C                                                       (bm x 8*Wo, fp64)
      for c0 (cb input channels, K block = cb*kh*kw):
        A   <- W'[m0:+bm, c0*kh*kw:+bk]                    one DMA per CPE, convert fp32 -> fp64
        P_kr <- x[n, c0:+cb, (ro0+q)*sh + kr*dh - pt, :]   kh row tiles (G x 8 x W), pad 0.0
        B   <- unfold(P_0..P_kh-1)                         in LDM, per CPE (loop.map im2col)
        C  += A x B                                        mesh GEMM, k_local = cb*kh*kw/8
      [+ bias] [relu] -> y[n, m0:+bm, ro0*Wo : +8*Wo]      (y viewed (N, M, Ho*Wo); clip)

so one SUMMA reduces over ``cb`` channels x all ``kh*kw`` taps (k_local = cb*kh*kw/8 instead of
cb/8 per tap: the ~32-cycle SUMMA step boundary per register tile amortises, 004 L876 /
simulator), the input is read from memory kh times per output-channel block (the rows are
shared by the kw taps and by the output columns: no col buffer, no im2col pass, no per-tap
re-read), and every DMA block is a whole input/output row (R1, 004 L657). Weights are re-laid at
compile time into the K order of :class:`taihu.dialects.tile.UnfoldOp` (blocks of g = cb/8
channels: (M, C/g, kh, g, kw)).

Applicability: constant weights, group 1, M and C >= 64 (the mesh GEMM's multiples, 004 L1266),
C a multiple of 8. Output rows are ``Wo_p`` = Wo rounded up to the register tile along the
pixel dim (4 with vec m, 16 with vec n; one output row per mesh column); when Wo_p > Wo the C
blocks go to a (N, M, Ho*Wo_p) buffer and a ``relayout`` kernel keeps the Wo valid columns.

Cost (seconds), per SUMMA step (max of DMA and compute, double-buffered, 004 L674 / L1566):

* compute: ``8 * tiles * (16*k_local + T_BOUNDARY) + T_SUMMA_SYNC`` cycles (Listing 4.1's 16 cycles per k-step,
  T_BOUNDARY = 32 cycles per register tile and SUMMA step, measured on the simulator:
  ``examples/sw/mesh_gemm.py`` k_local 8/16/32/64 -> 80.0/88.9/94.1/97.0 % of peak) + the A
  conversion (0.5 cycle per element) + the unfold (UNFOLD_CYCLES_PER_ELEM per B element);
* DMA: eq 3-2 with 128-B transactions (:func:`~taihu.backends.model.gemm_blocking.t_dma_tiles`)
  for the A tile (bm rows of bk contiguous elements) and the kh row tiles (per CPE g blocks of W
  elements);
* per C block: fill, bias, activation, convert, put (eq 3-2), exposed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from taihu.backends.model.conv import (
    FILL_CYCLES_PER_ELEM,
    MAP_CYCLES_PER_ELEM,
    TRANSPOSE_CYCLES_PER_ELEM,
    ConvShape,
    KernelCost,
    NotApplicable,
    _avg_moved,
    _rnd,
    gemm_scheme,
    residual_cost,
)
from taihu.backends.model.choice import Conditional, Enumerated, Mapped, Space
from taihu.backends.model.gemm_blocking import t_dma_tiles
from taihu.target.machine import Machine

__all__ = [
    "UnfoldPlan",
    "plan_unfold",
    "unfold_applicability",
    "unfold_bms",
    "unfold_candidates",
    "unfold_plan",
    "unfold_row_length",
    "unfold_space",
    "unfold_weights",
]

MESH = 8
N_CPE = 64
#: [measured] cycles per register tile and SUMMA step beyond Listing 4.1's 16 per k-step (the
#: first FETCHes of the next step and two RLC hops of the diagonal broadcast wavefront;
#: simulator, examples/sw/mesh_gemm.py, any k_local).
T_BOUNDARY = 32
#: [measured] cycles per element of the C block's bias add (a broadcast (BM, 1) operand).
BIAS_CYCLES_PER_ELEM = 0.9
#: [measured] RLC waiting per SUMMA call (tile.gemm) of the unfolded convolution: the CPEs
#: reach the first step at different times (their DMAs complete in bus order), ~2.3-2.6k cycles
#: per call on the simulator (ResNet-50 3x3 28x28 layers, B = 1 and 32).
T_SUMMA_SYNC = 2500
#: [measured] P1 cycles per element of B written by the unfold (loop.map im2col, f32 -> f64,
#: scalar load + store per element: 1.45 on the simulator, 3x3 28x28 rows).
UNFOLD_CYCLES_PER_ELEM = 1.5


@dataclass(frozen=True)
class UnfoldPlan:
    """Blocking of the unfolded implicit convolution (module docstring): ``bm`` output channels,
    ``cb`` input channels per K block (``g = cb / 8`` per mesh row), vector scheme ``vec``
    (``m``: output channels vectorised, scheme 2; ``n``: pixels, scheme 4)."""

    shape: ConvShape
    vec: str
    bm: int
    cb: int
    ldm_bytes: int
    cost: KernelCost
    algorithm: str = "implicit"

    @property
    def g(self) -> int:
        return self.cb // MESH

    @property
    def bk(self) -> int:
        return self.cb * self.shape.kh * self.shape.kw

    wo_p: int = 0  # output row length in LDM (>= Wo: padded to the register tile)

    @property
    def bn(self) -> int:
        return MESH * self.wo_p

    @property
    def padded(self) -> bool:
        """The output rows are padded in LDM (Wo_p > Wo): C goes to a (N, M, Ho*Wo_p) buffer
        and a ``relayout`` kernel copies the Wo valid columns of every row to y."""
        return self.wo_p != self.shape.wo

    @property
    def scheme(self) -> int:
        return gemm_scheme(self.vec)

    kernels: tuple[KernelCost, ...] = ()
    #: the shape's residual sum is added to the C blocks before their store (rows not padded:
    #: they are the NCHW output's), else it is a separate kernel in ``kernels``
    residual_fused: bool = False

    @property
    def variant(self) -> str:
        return "unfold"


def unfold_applicability(s: ConvShape) -> str | None:
    """None when the unfolded implicit convolution can run ``s``, else the reason."""
    if not s.const_weights:
        return "unfolded implicit convolution needs constant weights (re-laid at compile time)"
    if s.group != 1:
        return f"unfolded implicit convolution needs group = 1 (got {s.group})"
    if min(s.c, s.m) < 64:
        return f"unfolded implicit convolution needs >= 64 input and output channels (got {s.c} -> {s.m}; 004 L1266)"
    if s.c % MESH:
        return f"unfolded implicit convolution needs C % 8 == 0 (got {s.c})"
    return None


def unfold_weights(w, g: int):
    """(M, C, kh, kw) weights -> (M, C*kh*kw) in :class:`~taihu.dialects.tile.UnfoldOp`'s K
    order for channel blocks of ``g`` (per mesh row): (M, C/g, kh, g, kw)."""
    import numpy as np

    m, c, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(m, c // g, g, kh, kw).transpose(0, 1, 3, 2, 4).reshape(m, c * kh * kw))


def footprint(s: ConvShape, vec: str, bm: int, cb: int, hoist_a: bool, wo_p: int | None = None) -> int:
    """Per-CPE LDM bytes: A staging (fp32, double unless hoisted) + fp64 A, kh double-buffered
    row tiles, fp64 B, fp64 C + double fp32 C staging, bias (fp32 + fp64, rep), and the fused
    residual window (a double tile like the staging one, ``s.residual`` without padded rows)."""
    e = s.elem
    bk = cb * s.kh * s.kw
    bn = MESH * (wo_p or s.wo)
    a = bm * bk // N_CPE
    rows = (cb // MESH) * s.w
    b = bk * bn // N_CPE
    c = bm * bn // N_CPE
    total = (1 if hoist_a else 2) * _rnd(e * a) + _rnd(8 * a)
    total += s.kh * 2 * _rnd(e * rows)
    total += _rnd(8 * b)
    total += _rnd(8 * c) + 2 * _rnd(e * c)
    if s.bias:
        total += _rnd(e * bm) + _rnd(8 * bm)
    if s.residual and (wo_p or s.wo) == s.wo:
        total += 2 * _rnd(e * c)
    return total


def _cost(s: ConvShape, vec: str, bm: int, cb: int, m: Machine, wo_p: int | None = None) -> KernelCost:
    cyc = m.cycles_to_seconds
    e = s.elem
    kk = s.kh * s.kw
    bk = cb * kk
    wo_p = wo_p or s.wo
    bn = MESH * wo_p
    k_local = bk // MESH
    v, o = (bm, bn) if vec == "m" else (bn, bm)
    tiles = (v // MESH // 16) * (o // MESH // 4)
    t_summa = cyc(MESH * tiles * (16 * k_local + T_BOUNDARY) + T_SUMMA_SYNC)
    a_local = bm * bk / N_CPE
    b_local = bk * bn / N_CPE
    nk = math.ceil(s.c / cb)
    hoist_a = nk == 1
    t_conv_a = cyc(MAP_CYCLES_PER_ELEM * a_local)
    t_unfold = cyc(UNFOLD_CYCLES_PER_ELEM * b_local)
    mv_a = bm * _avg_moved(bk * e, m.mem_txn_bytes)
    mv_rows = kk // s.kw * cb * MESH * _avg_moved(s.w * e, m.mem_txn_bytes)
    t_dma_a = t_dma_tiles(mv_a, m)
    t_dma_rows = t_dma_tiles(mv_rows, m)
    n_m = math.ceil(s.m / bm)
    n_r = math.ceil(s.ho / MESH)
    blocks = n_m * s.n * n_r
    step_dma = t_dma_rows + (0.0 if hoist_a else t_dma_a)
    step_comp = t_summa + t_unfold + (0.0 if hoist_a else t_conv_a)
    c_local = bm * bn / N_CPE
    # epilogue per C block: fill, bias add (a broadcast operand: ~0.9 cycle/elem), activation,
    # the fp64 -> fp32 conversion into the row-major staging tile (a transpose with vec m, C
    # stored col: TRANSPOSE_CYCLES_PER_ELEM) -- measured on the simulator, 1x1 128->512 28x28
    conv_c = TRANSPOSE_CYCLES_PER_ELEM if vec == "m" else MAP_CYCLES_PER_ELEM
    epi_per_elem = FILL_CYCLES_PER_ELEM + conv_c + (BIAS_CYCLES_PER_ELEM if s.bias else 0.0) + (
        MAP_CYCLES_PER_ELEM if s.relu else 0.0)
    mv_c = bm * MESH * _avg_moved(wo_p * e, m.mem_txn_bytes)
    # a fused residual sum (rows not padded): its C window is loaded at the block start
    # (prefetch_fused), its data joins the block's DMA; one add on the staging tile
    res = s.residual and wo_p == s.wo
    res_data = mv_c / (m.peak_bw_cg * 1e9) if res else 0.0
    if res:
        epi_per_elem += MAP_CYCLES_PER_ELEM
    t_epi = cyc(epi_per_elem * c_local)
    t_put = t_dma_tiles(mv_c, m, put=True)
    # tile-to-loop's Alg 8 wrap (the K loop is the only loop of the row-block loop's body): the
    # next block's first tiles are prefetched in the last K step, so only the first step of
    # each (m0, n) row-block sweep is exposed; the C put of a block overlaps the next block
    # (double-buffered staging), its data phase joins the next block's first DMA.
    put_data = mv_c * m.dma_put_bw_factor / (m.peak_bw_cg * 1e9)
    per_block = nk * max(step_dma + (put_data + res_data) / nk, step_comp) + t_epi
    total = blocks * per_block + n_m * s.n * step_dma + t_put
    if hoist_a:
        total += n_m * (t_dma_a + t_conv_a)
    moved = blocks * (nk * (mv_rows + (0 if hoist_a else mv_a)) + mv_c * (2 if res else 1)) + (n_m * mv_a if hoist_a else 0)
    useful = e * (s.n * s.c * s.h * s.w * s.kh * n_m + s.m * s.c * kk * (1 if hoist_a else s.n * n_r)
                  + s.n * s.m * s.ho * s.wo * (2 if res else 1))
    return KernelCost(
        "conv", total,
        blocks * (nk * step_dma + t_put + (t_dma_tiles(mv_c, m) if res else 0.0)) + (n_m * t_dma_a if hoist_a else 0.0),
        blocks * (nk * step_comp + t_epi) + (n_m * t_conv_a if hoist_a else 0.0),
        moved, min(useful, moved), s.flops,
    )


def crop_rows_per_task(rows: int, wo: int, elem: int, budget: int) -> int:
    """Rows per CPE per step of the ``relayout`` kernel cropping padded output rows (Wo_p ->
    Wo, graph_to_tile ``ConvPattern._crop_rows``): a double-buffered tile of q rows of Wo
    elements within a quarter of the LDM ``budget`` (bytes), at most ceil(rows / 64)."""
    return max(1, min(math.ceil(rows / N_CPE), budget // 4 // (wo * elem)))


def relayout_padded_cost(s: ConvShape, wo_p: int, machine: Machine) -> KernelCost:
    """The ``relayout`` kernel of a padded plan: N*M*Ho rows of Wo_p elements -> Wo (one
    strided DMA in and one contiguous DMA out per CPE task, memory-bound, eq 3-2;
    :func:`crop_rows_per_task` rows per task)."""
    from taihu.backends.model.conv import memory_bound_cost

    rows = s.n * s.m * s.ho
    q = crop_rows_per_task(rows, s.wo, s.elem, machine.ldm_user_bytes)
    tasks = math.ceil(rows / q)
    return memory_bound_cost(
        "relayout", [(rows, s.wo * s.elem, False), (tasks, q * s.wo * s.elem, True)],
        dmas_per_cpe=2 * math.ceil(tasks / N_CPE), machine=machine)


def unfold_row_length(s: ConvShape, vec: str) -> int:
    """Wo_p: the output row length in LDM for ``vec``, Wo rounded up to the register tile along
    the pixel dim (4 with vec m, 16 with vec n)."""
    r = 4 if vec == "m" else 16
    return -(-s.wo // r) * r


def unfold_bms(s: ConvShape, vec: str) -> list[int]:
    """The bm the planner tries with ``vec``: the unit (128 with vec m, 32 with vec n) times 1,
    2, 4, 8, 16 up to max(unit, M), and M itself when a unit multiple <= 512."""
    unit = 128 if vec == "m" else 32
    return sorted({b for b in (unit, 2 * unit, 4 * unit, 8 * unit, 16 * unit) if b <= max(unit, s.m)}
                  | ({s.m} if s.m % unit == 0 and s.m <= 512 else set()))


def _unfold_plan(s: ConvShape, m: Machine, vec: str, bm: int, cb: int, fp: int, wo_p: int,
                 rel: KernelCost | None, extra: tuple[KernelCost, ...]) -> UnfoldPlan:
    conv = _cost(s, vec, bm, cb, m, wo_p)
    kernels = ((conv,) if rel is None else (conv, rel)) + extra
    cost = conv if len(kernels) == 1 else _sum("implicit", kernels, s.flops)
    return UnfoldPlan(s, vec, bm, cb, fp, cost, wo_p=wo_p, kernels=kernels,
                      residual_fused=s.residual and wo_p == s.wo)


def _unfold_extras(s: ConvShape, m: Machine, wo_p: int) -> tuple[KernelCost | None, tuple[KernelCost, ...]]:
    """(the relayout kernel of padded rows, the separate residual kernel when the rows are
    padded: the C blocks do not hold the final tensor's rows, the sum stays a kernel)."""
    rel = relayout_padded_cost(s, wo_p, m) if wo_p != s.wo else None
    return rel, ((residual_cost(s, m),) if s.residual and wo_p != s.wo else ())


def _separate(s: ConvShape, m: Machine) -> Callable[[UnfoldPlan], UnfoldPlan]:
    """A plan of ``s`` without its residual sum -> the plan of ``s`` adding it in a separate
    kernel (:func:`~taihu.backends.model.conv.residual_cost`)."""
    res = residual_cost(s, m)

    def separate(p: UnfoldPlan) -> UnfoldPlan:
        kernels = p.kernels + (res,)
        return replace(p, shape=s, kernels=kernels, cost=_sum("implicit", kernels, s.flops))

    return separate


def unfold_plan(s: ConvShape, machine: Machine, vec: str, bm: int, cb: int, residual_fused: bool) -> UnfoldPlan:
    """The unfolded implicit convolution plan of ``s`` with exactly these parameters, costed on
    ``machine`` (``residual_fused``: ``s``'s residual sum is added in the C store -- else, with
    a residual sum, a separate kernel); no legality check (``plan.ldm_bytes`` is its footprint;
    :mod:`taihu.backends.model.schedule` checks)."""
    wo_p = unfold_row_length(s, vec)
    if s.residual and wo_p == s.wo and not residual_fused:
        return _separate(s, machine)(unfold_plan(replace(s, residual=False), machine, vec, bm, cb, False))
    fp = footprint(s, vec, bm, cb, cb == s.c, wo_p)
    return _unfold_plan(s, machine, vec, bm, cb, fp, wo_p, *_unfold_extras(s, machine, wo_p))


def unfold_candidates(s: ConvShape, m: Machine, padded: bool = True) -> Iterator[tuple[tuple, UnfoldPlan]]:
    """Every blocking :func:`plan_unfold` considers for ``s`` on ``m`` (the residual sum, if
    any, fused where the rows are not padded), lazily, with its key ``(t_total, -bm, -cb)``:
    vec in {m (M >= 128), n}, :func:`unfold_bms`, cb multiples of 8 dividing C, whose
    :func:`footprint` fits ``m.ldm_user_bytes``; ``padded=False``: only the vecs whose rows are
    not padded. Nothing when the unfolded convolution does not apply."""
    if unfold_applicability(s):
        return
    for vec in ("m", "n"):
        if vec == "m" and s.m < 128:
            continue
        wo_p = unfold_row_length(s, vec)
        if wo_p != s.wo and not padded:
            continue
        rel, extra = _unfold_extras(s, m, wo_p)
        for bm in unfold_bms(s, vec):
            for cb in range(MESH, s.c + 1, MESH):
                if s.c % cb:
                    continue
                fp = footprint(s, vec, bm, cb, cb == s.c, wo_p)
                if fp > m.ldm_user_bytes:
                    continue
                plan = _unfold_plan(s, m, vec, bm, cb, fp, wo_p, rel, extra)
                yield (plan.cost.t_total, -bm, -cb), plan


def unfold_space(s: ConvShape, machine: Machine) -> Space[UnfoldPlan]:
    """Every unfolded implicit convolution plan of ``s`` on ``machine``, lazily
    (:func:`unfold_candidates`; with a residual sum, also the unpadded blockings that leave it to
    a separate kernel); its pick is :func:`plan_unfold`'s."""
    world: Space[UnfoldPlan] = Enumerated(lambda: unfold_candidates(s, machine))
    if not s.residual:
        return world
    s0 = replace(s, residual=False)
    # padded rows never fuse the sum: those plans are the same in both worlds
    unpadded: Space[UnfoldPlan] = Enumerated(lambda: unfold_candidates(s0, machine, padded=False))
    sep: Space[UnfoldPlan] = Mapped(unpadded, _separate(s, machine))
    return Conditional(world, sep, when=lambda p: p.residual_fused)


def plan_unfold(s: ConvShape, machine: Machine) -> UnfoldPlan:
    """Minimum modelled time on ``machine`` over vec in {m, n} (output row length Wo_p = Wo
    rounded up to the register tile: 4 output pixels with vec m, 16 with vec n; padded rows add
    the ``relayout`` kernel), bm (multiples of 128 resp. 32 up to 512, <= M rounded up) and cb
    (multiples of 8 dividing C) under ``machine.ldm_user_bytes``; ties: larger bm, then larger
    cb. A residual sum (``s.residual``) is added in the C store when the rows are not padded and
    that is cheaper than a separate kernel
    (:func:`~taihu.backends.model.conv.residual_cost`; its tile takes LDM from the blocking).
    The candidates: :func:`unfold_space`. Raises :class:`~taihu.backends.model.conv.NotApplicable`."""
    why = unfold_applicability(s)
    if why:
        raise NotApplicable(why)
    best = unfold_space(s, machine).best()
    if best is None:
        raise NotApplicable(f"unfolded implicit convolution: no blocking of {s.describe()} fits in LDM")
    return best


def _sum(name: str, parts: tuple[KernelCost, ...], flops: int) -> KernelCost:
    return KernelCost(name, sum(p.t_total for p in parts), sum(p.t_dma for p in parts),
                      sum(p.t_compute for p in parts), sum(p.moved_bytes for p in parts),
                      sum(p.useful_bytes for p in parts), flops)
