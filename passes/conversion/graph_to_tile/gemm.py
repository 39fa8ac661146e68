"""``graph.matmul`` / ``graph.gemm`` (FC) / ``graph.lstm`` / ``graph.gru`` -> memory-level GEMM ``tile.kernel``s.

The memory-level GEMM of swGEMM (004 §4.2, algorithms.md §B): C (M, N) is blocked by
(B_M, B_N, B_K) with **K innermost** (004 L856-863: the C block stays in LDM, A and B blocks
stream; RBW = 1/(2B_M) + 1/(2B_N)), every block step runs the mesh GEMM primitive ``tile.gemm``
(§A) on LDM tiles::

    tile.kernel "fc" (%a = %A : memref<MxKxf32>, %b = %B : memref<KxNxf32>, %c = %C : memref<MxNxf32>) {
      %a32 = tile.alloc double : !tile.buf<BMxBKxf32, rc>         // DMA targets, double-buffered (004 L674)
      %a = tile.alloc : !tile.buf<BMxBKxf64, rc>                   // fp64 copies for the primitive (004 L823)
      ...
      tile.for %i = 0 to M step BM name "cM" {
        tile.for %j = 0 to N step BN name "cN" {
          tile.map fill out(%c ...) {value = 0.0}
          tile.for %k = 0 to K step BK name "cK" {
            tile.move %a[%i, %k] sizes [BM, BK] [pad 0.0] -> %a32
            tile.move %b[%k, %j] sizes [BK, BN] [pad 0.0] -> %b32
            tile.map convert ins(%a32) out(%a)
            tile.map convert ins(%b32) out(%b)
            tile.gemm %a, %b -> %c m BM n BN k BK scheme 4 vec n
          }
          [alpha, bias / beta*C, fused relu ... on %c]
          tile.map convert ins(%c) out(%c32)
          tile.move %c32 -> %c[%i, %j] sizes [BM, BN] [clip]
        }
      }
    }

* **Blocking and vector scheme** come from the model (:func:`taihu.backends.model.conv.plan_gemm`,
  §B item 7 / E7: minimum modelled ``max(T_DMA, T_prim)`` per step over every feasible
  (B_M, B_N, B_K) of the §A5 multiples and vec in {n, m}); scheme 4 (vec N, all tiles ``rc``,
  row-major: the natural layout of row-major B and C) or scheme 2 (vec M: A and C stored
  column-major in LDM, re-laid by the conversion). GEMM / GEMP / GEPB (004 L835, Fig 4.4) are the
  same nest: a dimension that fits one block has a single-trip loop, which is not emitted; an
  operand whose block is then loop-invariant (one K block and one N resp. M block) is loaded
  once, outside the M/N loops (weight-DMA hoisting). When both M and N have several blocks and no
  boundary (:attr:`GemmPlan.flat_blocks`), the two block loops are ONE loop ``cMN`` over the
  blocks (rows ``(b / nn) * BM``, columns ``(b % nn) * BN``): the K loop is then the only loop of
  its body, so tile-to-loop's Alg. 8 wrap prefetches the next block's first A/B tiles in every
  block's last K step and only the nest's first DMA is exposed (DGEMM 1024^3 on the simulator
  648 -> 678 GFLOPS). The C tile the put reads from (fp64 C itself when not staged) is
  double-buffered when the plan says so (``double_c``), so a block's put overlaps the next one.
* **Constant operands** (FC / matmul weights): the planner also chooses their storage order
  (``GemmShape.const_a/b``); when it picks the other one, the pattern stores the
  transposed constant as a new global (e.g. (K, N) instead of ONNX's (N, K) when the
  conversion into the vec-n B tile would otherwise transpose).
* **Overlapping distribution** (``plan.overlap``, :mod:`taihu.backends.model.overlap_gemm`,
  004 L708): A ``cpe`` (``cpe1`` when stored (K, M), vec m) and C ``cpe`` split 64-way along M,
  B ``rep`` (one broadcast DMA per K step, prefetched); ``bn = n`` (one N block). The f32 A and
  B tiles feed the mixed-precision ``gemm_block`` directly (no staging, no convert); an (M, 1)
  bias is loaded ``cpe`` like C's rows.
* **fp32** data are DMA'd into fp32 staging tiles and converted to fp64 in LDM
  (``tile.map convert``, 004 L823, §A7); fp64 data go straight into the primitive's tiles unless
  their LDM layout must differ from main memory.
* **Non-divisible shapes** (004 §4.2.4, L883-889): the block loops run to the true dims and the
  boundary tiles are moved with ``pad 0.0`` (loads) / ``clip`` (stores): tile-to-loop reads only
  the valid part of each boundary window and zero-fills the rest in LDM, and stores only the
  valid part of C -- the lightweight padding of the seed with no auxiliary copy at all (O(0)
  extra memory instead of O(M + K), never O(M K)).
* **FC epilogue** (ONNX Gemm ``alpha op(A) op(B) + beta C``): ``alpha`` is a ``mul`` by a
  ``rep`` scalar tile; a broadcast C (bias row (1, N), column (M, 1) or scalar) is loaded per C
  block as a ``rep`` tile, scaled by ``beta`` and added; a full (M, N) C initialises the C block
  (scaled by beta/alpha) before the K loop. A single-use trailing relu/clip/sigmoid... is
  absorbed and applied to the C block while it is in LDM.
* ``graph.matmul`` batch dims (numpy broadcasting) become outer ``tile.for`` loops (a broadcast
  operand keeps index 0); when only A has batch dims they fold into M (one larger GEMM).

LSTM (004 §5.2, Algorithm 6, algorithms.md §D): see :class:`LstmPattern`; GRU the same way:
:class:`GruPattern`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerAttr, MemRefType, TensorType, UnitAttr, f64, i64
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from taihu.backends.model.conv import GemmPlan, GemmShape, gemm_operand_layouts, plan_gemm
from taihu.backends.model.lstm_plan import (
    BlockedTiles,
    LstmPlan,
    LstmShape,
    blocked_bytes,
    lstm_model_plan,
    lstm_plan_for,
    per_cpe_bytes,
    pick_r_block,
)
from taihu.backends.model.schedule import gemm_plan_for
from taihu.dialects import graph, tile
from taihu.dialects.mapkind import MapKind
from taihu.target.machine import Machine
from taihu.passes.conversion.graph_to_tile.schedule_attr import op_schedule
from taihu.passes.conversion.tile_to_loop.spread import SPREAD_ATTR, SPREAD_PUT_ATTR
from taihu.passes.conversion.graph_to_tile.common import (
    FusedMap,
    GraphToTilePattern,
    Idx,
    KernelBuilder,
    LoweringState,
    absorb_elementwise_consumers,
    constant_array,
    shape_of,
)

__all__ = [
    "GemmAccess",
    "GemmEpilogue",
    "GemmPattern",
    "LstmPattern",
    "MatMulPattern",
    "emit_gemm",
    "patterns",
]

# --------------------------------------------------------------------------------------------
# The GEMM emitter (shared with the convolution patterns)
# --------------------------------------------------------------------------------------------

#: offsets of an operand window: (outer ivs, row0, col0) -> one index per memref dim; row0/col0
#: are the element offsets of the tile's dim 0 / dim 1 (in the operand's storage order).
Offsets = Callable[[Sequence[Idx], Idx, Idx], Sequence[Idx]]


@dataclass
class GemmAccess:
    """How the kernel reads (A, B, bias, full C) or writes (C) one operand: memref ``mem`` (a
    kernel argument), the window ``offsets`` function and ``sizes`` (memref rank; their product
    equals the tile's) and optional element ``strides``."""

    mem: SSAValue
    offsets: Offsets
    sizes: Sequence[int]
    strides: Sequence[int] | None = None


def dense2d(mem: SSAValue, rows: int, cols: int, outer: Sequence[bool] = ()) -> GemmAccess:
    """A (rows x cols) window of a memref of shape ``(*batch, R, C)``; ``outer[d]`` tells
    whether batch dim d follows outer loop d (True) or is broadcast (False: index 0)."""
    nb = len(shape_of(mem)) - 2

    def offs(ivs: Sequence[Idx], r: Idx, c: Idx) -> list[Idx]:
        b = [ivs[d] if (d < len(outer) and outer[d]) else 0 for d in range(nb)]
        return [*b, r, c]

    return GemmAccess(mem, offs, [1] * nb + [rows, cols])


@dataclass
class GemmEpilogue:
    """Work on each C block after the K loop: ``alpha`` scale, ``bias`` (a broadcast operand
    whose window covers ``bias_shape`` = (BM or 1, BN or 1)) scaled by ``beta``, ``c_init``
    (a full C, loaded before the K loop and scaled by beta/alpha), ``fused`` element-wise maps
    (a residual one, bound by ``bind_fused``, and those after it act on the stored tile: its
    window is loaded at the block start; plan with ``GemmShape(..., residual=True)``)."""

    alpha: float = 1.0
    beta: float = 1.0
    bias: GemmAccess | None = None
    bias_shape: tuple[int, int] | None = None
    c_init: GemmAccess | None = None
    fused: Sequence[FusedMap] = field(default_factory=tuple)


def _elem_type(mem: SSAValue) -> Attribute:
    t = mem.type
    assert isinstance(t, MemRefType)
    return t.get_element_type()


def _dtype(elem: Attribute) -> str:
    return "f64" if isinstance(elem, Float64Type) else "f32"


def emit_gemm(
    kb: KernelBuilder,
    plan: GemmPlan,
    a: GemmAccess,
    b: GemmAccess,
    c: GemmAccess,
    outer: Sequence[tuple[int, str]] = (),
    epilogue: GemmEpilogue | None = None,
    elem: Attribute | None = None,
) -> None:
    """Emit the K-innermost blocked GEMM nest of ``plan`` into ``kb`` (module docstring):
    ``outer`` = (extent, name) of the batch loops around it (their ivs are passed to every
    access's offsets). ``elem`` = main-memory element type (default: A's)."""
    epi = epilogue or GemmEpilogue()
    elem = elem or _elem_type(a.mem)
    # fused maps before the first residual one run on the f64 C block, the rest on the stored
    # tile (GraphToTilePattern.bind_fused binds a residual's memref, shaped like c.mem)
    r0 = next((n for n, f in enumerate(epi.fused) if f.is_residual), len(epi.fused))
    pre, post = list(epi.fused[:r0]), list(epi.fused[r0:])
    res_mem = next((f.mem for f in post if f.is_residual), None)
    if plan.spread_res and isinstance(res_mem, BlockArgument):
        # tile-to-loop spreads the residual window's get over the K loop (model: residual_spread)
        kb.attrs[SPREAD_ATTR] = IntegerAttr(res_mem.index, i64)
    if plan.spread_put:  # and each block's C put over the next block's K loop (model: put_spread)
        kb.attrs[SPREAD_PUT_ATTR] = UnitAttr()
    lay = plan.layouts
    bm, bn, bk = plan.bm, plan.bn, plan.bk
    shapes = {
        "A": (bk, bm) if plan.trans_a else (bm, bk),
        "B": (bn, bk) if plan.trans_b else (bk, bn),
        "C": (bm, bn),
    }
    names = {"A": "a", "B": "b", "C": "c"}
    stream = {"A": not plan.hoist_a, "B": not plan.hoist_b, "C": plan.double_c}
    stage: dict[str, SSAValue | None] = {}
    buf: dict[str, SSAValue] = {}
    for o in ("A", "B", "C"):
        dist, layout = lay[o]
        if o in plan.staged:
            stage[o] = kb.alloc(shapes[o], elem, dist, double=stream[o], name=f"{names[o]}_s")
            buf[o] = kb.alloc(shapes[o], f64, dist, layout=layout, name=names[o])
        else:
            stage[o] = None
            # overlapping distribution: f32 A / B feed the mixed-precision gemm_block directly
            el = elem if plan.overlap and o != "C" else f64
            buf[o] = kb.alloc(shapes[o], el, dist, layout=layout, double=stream[o], name=names[o])
    alpha_t = beta_t = None
    if epi.alpha != 1.0:
        alpha_t = kb.alloc((1, 1), f64, tile.Dist.REP, name="alpha")
    scale_init = epi.beta / epi.alpha if epi.alpha != 0.0 else epi.beta
    need_beta = (epi.bias is not None and epi.beta != 1.0) or (epi.c_init is not None and scale_init != 1.0)
    if need_beta:
        beta_t = kb.alloc((1, 1), f64, tile.Dist.REP, name="beta")
    bias_s = bias_t = None
    if epi.bias is not None:
        assert epi.bias_shape is not None
        # overlapping distribution: an (M, 1) bias is split over the CPEs like C's rows
        bdist = tile.Dist.CPE if plan.overlap and epi.bias_shape[1] == 1 else tile.Dist.REP
        bias_s = kb.alloc(epi.bias_shape, elem, bdist, name="bias_s")
        # a bias as large as the C block (bn = 1) is added elementwise: C's layout (vec m: col)
        same = tuple(epi.bias_shape) == shapes["C"] and lay["C"][0] == bdist
        bias_t = kb.alloc(epi.bias_shape, f64, bdist, name="bias", layout=lay["C"][1] if same else tile.Layout.ROW)
    # a bias window that changes from block to block ((bm, 1) rows with several M blocks, a
    # (1, bn) row with several N blocks) is loaded at the block start (model: the per-block bias
    # DMA is not exposed); an invariant one stays after the K loop (hoisted by tile-to-loop)
    bias_early = epi.bias_shape is not None and (
        (epi.bias_shape[1] == 1 and -(-plan.m // bm) > 1) or (epi.bias_shape[0] == 1 and -(-plan.n // bn) > 1))
    if alpha_t is not None:
        kb.map(MapKind.FILL, [], alpha_t, value=epi.alpha)
    if beta_t is not None:
        kb.map(MapKind.FILL, [], beta_t, value=epi.beta if epi.c_init is None else scale_init)

    def load(o: str, acc: GemmAccess, ivs: Sequence[Idx], r: Idx, col: Idx) -> None:
        st = stage[o]
        target = st if st is not None else buf[o]
        kb.load(acc.mem, acc.offsets(ivs, r, col), acc.sizes, target, strides=acc.strides)
        if st is not None:
            kb.map(MapKind.CONVERT if _dtype(elem) == "f32" else MapKind.COPY, [st], buf[o])

    def a_pos(i: Idx, k: Idx) -> tuple[Idx, Idx]:
        return (k, i) if plan.trans_a else (i, k)

    def b_pos(k: Idx, j: Idx) -> tuple[Idx, Idx]:
        return (j, k) if plan.trans_b else (k, j)

    def block_loops() -> Iterator[tuple[Idx, Idx]]:
        """The (M, N) block loops: ``cM { cN { ... } }``, or one loop ``cMN`` over the blocks
        (:attr:`GemmPlan.flat_blocks`, block b -> (b / nn, b % nn)); yields (row0, col0) once
        with the insertion point inside."""
        if plan.flat_blocks:
            nn = -(-plan.n // bn)
            with kb.loop(0, -(-plan.m // bm) * nn, 1, "cMN") as blk:
                assert not isinstance(blk, int)
                nnc = kb.const(nn)
                bi = kb.builder.insert(arith.DivUIOp(blk, nnc)).result
                bj = kb.builder.insert(arith.RemUIOp(blk, nnc)).result
                yield kb.affine(bi, bm), kb.affine(bj, bn)
            return
        with kb.loop(0, plan.m, bm, "cM") as i:
            with kb.loop(0, plan.n, bn, "cN") as j:
                yield i, j

    def nest(ivs: list[Idx], depth: int) -> None:
        if depth < len(outer):
            extent, nm = outer[depth]
            with kb.loop(0, extent, 1, nm) as g:
                nest(ivs + [g], depth + 1)
            return
        if plan.hoist_b:
            load("B", b, ivs, *b_pos(0, 0))
        if plan.hoist_a:
            load("A", a, ivs, *a_pos(0, 0))
        for i, j in block_loops():
                def block_windows(i: Idx = i, j: Idx = j) -> None:
                    if post:  # residual windows: loaded early, overlapping the block's compute
                        st = (stage["C"] or buf["C"]).type
                        assert isinstance(st, tile.TileBufType)
                        kb.prefetch_fused(st, post, c.offsets(ivs, i, j), c.sizes, strides=c.strides)
                    if epi.bias is not None and bias_early:
                        # the bias window of the block: its DMA overlaps the block's compute
                        # (waited where the epilogue converts it)
                        assert bias_s is not None
                        kb.load(epi.bias.mem, epi.bias.offsets(ivs, i, j), epi.bias.sizes, bias_s,
                                strides=epi.bias.strides)

                # with several K steps at the block start; with one, after the step's A/B loads
                # (which its GEMM waits for first)
                if plan.k > bk or epi.alpha == 0.0:
                    block_windows()
                if epi.c_init is not None:
                    acc = epi.c_init
                    kb.load(acc.mem, acc.offsets(ivs, i, j), acc.sizes, stage["C"] or buf["C"], strides=acc.strides)
                    if stage["C"] is not None:
                        kb.map(MapKind.CONVERT if _dtype(elem) == "f32" else MapKind.COPY, [stage["C"]], buf["C"])
                    if beta_t is not None:
                        kb.map(MapKind.MUL, [buf["C"], beta_t], buf["C"])
                else:
                    kb.map(MapKind.FILL, [], buf["C"], value=0.0)
                if epi.alpha != 0.0:
                    with kb.loop(0, plan.k, bk, "cK") as k:
                        if not plan.hoist_a:
                            load("A", a, ivs, *a_pos(i, k))
                        if not plan.hoist_b:
                            load("B", b, ivs, *b_pos(k, j))
                        if plan.k <= bk:  # (one K step)
                            block_windows()
                        kb.insert(tile.GemmOp(buf["A"], buf["B"], buf["C"], bm, bn, bk, plan.scheme,
                                              trans_a=plan.trans_a, trans_b=plan.trans_b))
                if alpha_t is not None:
                    kb.map(MapKind.MUL, [buf["C"], alpha_t], buf["C"])
                if epi.bias is not None:
                    assert bias_s is not None and bias_t is not None
                    if not bias_early:
                        bias = epi.bias
                        kb.load(bias.mem, bias.offsets(ivs, i, j), bias.sizes, bias_s, strides=bias.strides)
                    kb.map(MapKind.CONVERT if _dtype(elem) == "f32" else MapKind.COPY, [bias_s], bias_t)
                    if beta_t is not None and epi.c_init is None:
                        kb.map(MapKind.MUL, [bias_t, beta_t], bias_t)
                    kb.map(MapKind.ADD, [buf["C"], bias_t], buf["C"])
                kb.apply_fused(pre, buf["C"])
                out = buf["C"]
                if stage["C"] is not None:
                    kb.map(MapKind.CONVERT if _dtype(elem) == "f32" else MapKind.COPY, [buf["C"]], stage["C"])
                    out = stage["C"]
                # a residual sum (and what follows it) on the stored element type: the conv /
                # GEMM result rounds first, like the reference
                kb.store_fused(out, post, c.mem, c.offsets(ivs, i, j), c.sizes, strides=c.strides)

    nest([], 0)


def plan_machine(state: LoweringState) -> Machine:
    """The module's machine with ``ldm_user_bytes`` = the pass's LDM budget (``state.ldm_budget``:
    the ``ldm-budget`` option or the machine's budget, minus tile-to-loop's reserve), so plans fit
    what the kernels may allocate."""
    m = state.machine
    return m if m.ldm_user_bytes == state.ldm_budget else dataclasses.replace(m, ldm_user_bytes=state.ldm_budget)


def gemm_attrs_shape(m: int, n: int, k: int, trans_a: bool, trans_b: bool, batch: Sequence[int] = ()) -> str:
    """``taihu.shape`` of a GEMM: ``[B x] M x N <- M x K * K x N`` (transposed operands as stored)."""
    pre = "x".join(map(str, batch)) + " x " if batch else ""
    sa = f"{k}x{m}^T" if trans_a else f"{m}x{k}"
    sb = f"{n}x{k}^T" if trans_b else f"{k}x{n}"
    return f"{pre}{m}x{n} <- {sa} * {sb}"


# --------------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------------


def _check_float(p: GraphToTilePattern, op, *values: SSAValue) -> Attribute:
    elems: set[Attribute] = set()
    for v in values:
        t = v.type
        assert isinstance(t, (TensorType, MemRefType))  # graph operands: tensors
        elems.add(t.get_element_type())
    if len(elems) != 1:
        raise p.fail(op, f"operands must share one element type, got {sorted(map(str, elems))}")
    el = elems.pop()
    if not isinstance(el, (Float32Type, Float64Type)):
        raise p.fail(op, f"element type {el} is not supported (f32 or f64)")
    return el


def plan_gemm_op(p: GraphToTilePattern, op: Operation, shape: GemmShape, name: str) -> GemmPlan:
    """The plan of the GEMM of ``op``: the one its ``tile.schedule`` annotation names
    (:func:`~taihu.backends.model.schedule.gemm_plan_for`), else the model's choice
    (:func:`~taihu.backends.model.conv.plan_gemm`) for the module's machine. An illegal
    annotation or a problem nothing fits is a diagnostic at ``op``."""
    machine = plan_machine(p.state)
    schedule = op_schedule(op)
    try:
        if schedule is not None:
            return gemm_plan_for(shape, machine, schedule, name=name)
        return plan_gemm(shape, machine, name=name)
    except ValueError as e:  # IllegalSchedule is a ValueError
        raise p.fail(op, f"illegal tile.schedule: {e}" if schedule is not None else str(e)) from e


def gemm_op_problem(op: graph.GemmOp, fused: Sequence[FusedMap]) -> GemmShape:
    """The GEMM problem of a ``graph.gemm`` whose trailing element-wise ``fused`` ops are
    absorbed (:func:`absorb_elementwise_consumers`): dims, element type, operand storage, the C
    epilogue (full C, a bias row/column, maps, alpha/beta scalars, a residual sum), constant
    operands. Raises ``ValueError`` for an element type other than f32/f64."""
    sa, sb = shape_of(op.a), shape_of(op.b)
    m, k = (sa[1], sa[0]) if op.trans_a else sa
    n = sb[0] if op.trans_b else sb[1]
    c_shape = shape_of(op.c) if op.c is not None else None
    c_full = c_shape is not None and tuple(c_shape) == (m, n)
    bias_along = None
    if c_shape is not None and not c_full:
        c2 = (1,) * (2 - len(c_shape)) + tuple(c_shape)
        bias_along = "n" if c2 == (1, n) and n > 1 else ("m" if c2 == (m, 1) and m > 1 else "scalar")
    maps = len(fused) + (1 if op.alpha != 1.0 else 0)
    has_c = op.c is not None and op.beta != 0.0
    scale_init = op.beta / op.alpha if op.alpha != 0.0 else op.beta
    scalars = (1 if op.alpha != 1.0 else 0) + (
        1 if has_c and ((not c_full and op.beta != 1.0) or (c_full and scale_init != 1.0)) else 0)
    el = op.a.type.get_element_type()  # type: ignore[attr-defined]
    return GemmShape(m, n, k, _dtype(el), bool(op.trans_a), bool(op.trans_b), c_full=c_full,
                     bias_along=bias_along if bias_along in ("m", "n") else None, maps=maps,
                     scalars=scalars, residual=any(f.is_residual for f in fused),
                     const_a=constant_array(op.a) is not None, const_b=constant_array(op.b) is not None)


class GemmPattern(GraphToTilePattern):
    """``graph.gemm`` (ONNX Gemm, the FC layer, 004 §5.2 / Table 4.2 row 6) -> one GEMM kernel."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GemmOp, rewriter: PatternRewriter) -> None:
        el = _check_float(self, op, op.a, op.b, *([op.c] if op.c is not None else []))
        name = self.state.layer_name(op)
        fused = absorb_elementwise_consumers(self.state, op.result, residual=True)
        shape = gemm_op_problem(op, fused)
        m, n, k = shape.m, shape.n, shape.k
        c_full = shape.c_full
        c_shape = shape_of(op.c) if op.c is not None else None
        # constant operands (FC weights) may be stored in either order: the planner picks the one
        # whose LDM layout needs no transposing conversion; a flipped one becomes a new global
        a_np, b_np = constant_array(op.a), constant_array(op.b)
        Y = self.alloc_like(rewriter, op.result, name)
        plan = plan_gemm_op(self, op, shape, name)
        A = _gemm_operand(self, rewriter, op.a, a_np, plan.trans_a != bool(op.trans_a), f"{name}_at")
        B = _gemm_operand(self, rewriter, op.b, b_np, plan.trans_b != bool(op.trans_b), f"{name}_wt")
        Cin = self.buffer(rewriter, op.c) if op.c is not None else None
        kb = KernelBuilder(self.state, name, op, algorithm="gemm",
                           shape=gemm_attrs_shape(m, n, k, plan.trans_a, plan.trans_b) + f" ({plan.shape_class})",
                           layer=name, fused=fused)
        kb.attrs["taihu.blocking"] = _blocking_attr(plan)
        a = kb.arg(A, "a")
        b = kb.arg(B, "b")
        y = kb.arg(Y, "y")
        ra, ca = (k, m) if plan.trans_a else (m, k)
        rb, cb = (n, k) if plan.trans_b else (k, n)
        ta = shape_of(A)
        accA = dense2d(a, *( (plan.bk, plan.bm) if plan.trans_a else (plan.bm, plan.bk) ))
        accB = dense2d(b, *( (plan.bn, plan.bk) if plan.trans_b else (plan.bk, plan.bn) ))
        assert ta == (ra, ca) and shape_of(B) == (rb, cb)
        accC = dense2d(y, plan.bm, plan.bn)
        epi = GemmEpilogue(alpha=op.alpha, beta=op.beta, fused=self.bind_fused(rewriter, kb, fused, y))
        if Cin is not None and op.beta != 0.0:
            if c_full:
                epi.c_init = dense2d(kb.arg(Cin, "c"), plan.bm, plan.bn)
            else:
                c2 = (1,) * (2 - len(c_shape)) + tuple(c_shape)  # type: ignore[arg-type]
                cv = kb.arg(self.view(rewriter, Cin, c2), "c")
                bs = (plan.bm if c2[0] != 1 else 1, plan.bn if c2[1] != 1 else 1)

                def c_offsets(ivs: Sequence[Idx], r: Idx, col: Idx) -> list[Idx]:
                    return [r if c2[0] != 1 else 0, col if c2[1] != 1 else 0]

                epi.bias = GemmAccess(cv, c_offsets, list(bs))
                epi.bias_shape = bs
        emit_gemm(kb, plan, accA, accB, accC, epilogue=epi, elem=el)
        kb.finish(rewriter)
        self.replace(rewriter, op, [Y], fused)


def _gemm_operand(p: GraphToTilePattern, rewriter: PatternRewriter, value: SSAValue, array: np.ndarray | None,
                  flip: bool, name: str) -> SSAValue:
    """The memref of a GEMM operand: its buffer, or (``flip``) a new constant global holding the
    transposed constant ``array`` (the plan chose the other storage order)."""
    if not flip:
        return p.buffer(rewriter, value)
    assert array is not None and array.ndim == 2
    return p.state.new_global(rewriter, np.ascontiguousarray(array.T), name).memref


def _blocking_attr(plan: GemmPlan):
    from xdsl.dialects.builtin import StringAttr

    return StringAttr(
        f"bm={plan.bm} bn={plan.bn} bk={plan.bk} scheme={plan.scheme} vec={plan.vec}"
        + (" hoist_a" if plan.hoist_a else "") + (" hoist_b" if plan.hoist_b else "")
    )


@dataclass(frozen=True)
class MatMulGeometry:
    """A ``graph.matmul`` seen as GEMMs: (m, k) x (k, n) per ``batch`` index (the result's batch
    dims), A's / B's batch dims ``ab`` / ``bb`` broadcast to ``batch`` (1 = broadcast); ``fold``:
    only A has batch dims, which fold into M (one GEMM of ``prod(ab) * m`` rows)."""

    m: int
    k: int
    n: int
    batch: tuple[int, ...]
    ab: tuple[int, ...]
    bb: tuple[int, ...]

    @property
    def fold(self) -> bool:
        return len(self.batch) > 0 and all(d == 1 for d in self.bb)


def matmul_geometry(op: graph.MatMulOp) -> MatMulGeometry:
    """:class:`MatMulGeometry` of ``op`` (numpy matmul semantics: a 1-D A is (1, K), a 1-D B (K, 1))."""
    sa, sb, so = shape_of(op.lhs), shape_of(op.rhs), shape_of(op.result)
    a2 = (1, *sa) if len(sa) == 1 else sa
    b2 = (*sb, 1) if len(sb) == 1 else sb
    batch = tuple(so[: len(so) - (len(sa) > 1) - (len(sb) > 1)])
    nb = len(batch)
    ab = (1,) * (nb - len(a2[:-2])) + tuple(a2[:-2])
    bb = (1,) * (nb - len(b2[:-2])) + tuple(b2[:-2])
    return MatMulGeometry(a2[-2], a2[-1], b2[-1], batch, ab, bb)


def matmul_op_problem(op: graph.MatMulOp, fused: Sequence[FusedMap]) -> GemmShape:
    """The GEMM problem of a ``graph.matmul`` with its absorbed element-wise ``fused`` ops:
    folded batch dims multiply M, the others are ``batch`` independent GEMMs; a constant 2-D B
    may be stored transposed."""
    g = matmul_geometry(op)
    m_eff, batch_eff = (math.prod(g.ab) * g.m, ()) if g.fold else (g.m, g.batch)
    el = op.lhs.type.get_element_type()  # type: ignore[attr-defined]
    const_b = len(shape_of(op.rhs)) == 2 and constant_array(op.rhs) is not None
    return GemmShape(m_eff, g.n, g.k, _dtype(el), maps=len(fused), batch=max(1, math.prod(batch_eff)),
                     const_b=const_b)


class MatMulPattern(GraphToTilePattern):
    """``graph.matmul`` (numpy semantics) -> one GEMM kernel: 1-D operands are viewed as
    (1, K) / (K, 1); batch dims become outer loops (broadcast operands keep index 0), or fold
    into M when only A has batch dims."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter) -> None:
        el = _check_float(self, op, op.lhs, op.rhs)
        g = matmul_geometry(op)
        m, k, n, batch, ab, bb, fold = g.m, g.k, g.n, g.batch, g.ab, g.bb, g.fold
        name = self.state.layer_name(op)
        fused = absorb_elementwise_consumers(self.state, op.result)
        A = self.buffer(rewriter, op.lhs)
        # a constant 2-D B (weights) may be stored transposed (see GemmPattern)
        b_np = constant_array(op.rhs) if len(shape_of(op.rhs)) == 2 else None
        Y = self.alloc_like(rewriter, op.result, name)
        if fold:  # (..., M, K) x (K, N): one GEMM with M' = prod(batch) * M
            mm = math.prod(ab) * m
            av = self.view(rewriter, A, (mm, k))
            yv = self.view(rewriter, Y, (mm, n))
            outer: list[tuple[int, str]] = []
            a_out: tuple[bool, ...] = ()
            b_out: tuple[bool, ...] = ()
        else:
            av = self.view(rewriter, A, (*ab, m, k))
            yv = self.view(rewriter, Y, (*batch, m, n))
            outer = [(d, f"g{i}") for i, d in enumerate(batch)]
            a_out = tuple(d != 1 for d in ab)
            b_out = tuple(d != 1 for d in bb)
        shape = matmul_op_problem(op, fused)
        batch_eff: tuple[int, ...] = () if fold else batch
        m_eff = shape.m
        plan = plan_gemm_op(self, op, shape, name)
        if plan.trans_b:  # the constant weights stored (N, K)
            bv = _gemm_operand(self, rewriter, op.rhs, b_np, True, f"{name}_wt")
            if not fold:
                bv = self.view(rewriter, bv, (*bb, n, k))
        else:
            B = self.buffer(rewriter, op.rhs)
            bv = self.view(rewriter, B, (k, n) if fold else (*bb, k, n))
        kb = KernelBuilder(self.state, name, op, algorithm="gemm",
                           shape=gemm_attrs_shape(m_eff, n, k, False, plan.trans_b, batch_eff) + f" ({plan.shape_class})",
                           layer=name, fused=fused)
        kb.attrs["taihu.blocking"] = _blocking_attr(plan)
        a = kb.arg(av, "a")
        b = kb.arg(bv, "b")
        y = kb.arg(yv, "y")
        emit_gemm(
            kb, plan,
            dense2d(a, plan.bm, plan.bk, a_out),
            dense2d(b, *((plan.bn, plan.bk) if plan.trans_b else (plan.bk, plan.bn)), b_out),
            dense2d(y, plan.bm, plan.bn, (True,) * len(batch_eff)),
            outer=outer,
            epilogue=GemmEpilogue(fused=fused),
            elem=el,
        )
        kb.finish(rewriter)
        self.replace(rewriter, op, [Y], fused)


def lstm_op_shape(op: graph.LSTMOp) -> LstmShape:
    """The schedule problem of ``op`` (:mod:`taihu.backends.model.lstm_plan`)."""
    seq, batch, inp = shape_of(op.x)
    t = op.x.type
    assert isinstance(t, TensorType)
    return LstmShape(seq, batch, inp, op.hidden_size, _dtype(t.element_type), op.b is not None)


def plan_lstm_op(p: GraphToTilePattern, op: graph.LSTMOp, shape: LstmShape, name: str) -> LstmPlan:
    """The plan of ``op``: the one its ``tile.schedule`` names, else the model's (XW planned for
    the module's machine, the recurrence within the pass's LDM budget); a diagnostic at ``op``
    when illegal or when the recurrence does not fit."""
    schedule = op_schedule(op)
    try:
        if schedule is not None:
            return lstm_plan_for(shape, plan_machine(p.state), p.state.ldm_budget, schedule, name=f"{name}_x")
        return lstm_model_plan(shape, plan_machine(p.state), p.state.ldm_budget, name=f"{name}_x")
    except ValueError as e:  # IllegalSchedule is a ValueError
        raise p.fail(op, f"illegal tile.schedule: {e}" if schedule is not None else str(e)) from e


class _RBlockStream:
    """The (b, b) blocks of R streamed through one or two staging tiles (blocked recurrence,
    :mod:`taihu.backends.model.lstm_plan` "Blocked recurrence"). ``order`` lists a time step's
    blocks (gate j, output block n, K block k) in the order :meth:`gemm` consumes them; with two
    staging tiles, block i+1's load is issued before block i's conversion and mesh GEMM, so its
    DMA overlaps them (tile-to-loop waits for a load just before the first op reading its tile)."""

    def __init__(self, kb: KernelBuilder, rv: SSAValue, b: int, el: Attribute, conv: MapKind, double: bool,
                 order: Sequence[tuple[int, int, int]]):
        lay = gemm_operand_layouts("n", False, True)
        self.kb, self.rv, self.b, self.conv, self.order = kb, rv, b, conv, list(order)
        self.stage = [kb.alloc((b, b), el, lay["B"][0], name=f"r_s{i}") for i in range(2 if double else 1)]
        self.r = kb.alloc((b, b), f64, lay["B"][0], layout=lay["B"][1], name="r")
        self.i = 0

    def _load(self, i: int) -> None:
        j, n, k = self.order[i]
        self.kb.load(self.rv, [j, n * self.b, k * self.b], [1, self.b, self.b], self.stage[i % len(self.stage)])

    def start(self) -> None:
        """At the top of a time step: the step's first block (into the first staging tile)."""
        self.i = 0
        if len(self.stage) == 2:
            self._load(0)

    def gemm(self, a: SSAValue, c: SSAValue, bp: int, block: tuple[int, int, int]) -> None:
        """``c += a R_j[n, k]^T`` for the next block of ``order`` (which must be ``block``)."""
        i = self.i
        assert self.order[i] == block, (self.order[i], block)
        if len(self.stage) == 2:
            if i + 1 < len(self.order):
                self._load(i + 1)
        else:
            self._load(i)
        self.kb.map(self.conv, [self.stage[i % len(self.stage)]], self.r)
        self.kb.insert(tile.GemmOp(a, self.r, c, bp, self.b, self.b, 4, trans_b=True))
        self.i += 1


class _RecurrentPattern(GraphToTilePattern):
    """LSTM and GRU: the input projection of every time step as one GEMM kernel."""

    def input_projection(self, rewriter: PatternRewriter, op: graph.LSTMOp | graph.GRUOp, name: str, plan: GemmPlan,
                         gates: int, el: Attribute, bias: SSAValue | None) -> SSAValue:
        """``NAME_x``: XW (seq*batch, gates*H) = X W^T (+ the (1, gates*H) row ``bias``), the
        memory-level GEMM ``plan`` (Table 4.2 row 5, GEPB/GEMP; ONNX's W holds the gates fused,
        004 L1213); returns XW's buffer."""
        seq, batch, inp = shape_of(op.x)
        n = gates * op.hidden_size
        XW = self.alloc(rewriter, (seq * batch, n), el, f"{name}_xw")
        kb = KernelBuilder(self.state, f"{name}_x", op, algorithm="gemm",
                           shape=gemm_attrs_shape(seq * batch, n, inp, False, True) + f" ({plan.shape_class})",
                           layer=name)
        kb.attrs["taihu.blocking"] = _blocking_attr(plan)
        a = kb.arg(self.view(rewriter, self.buffer(rewriter, op.x), (seq * batch, inp)), "x")
        w = kb.arg(self.view(rewriter, self.buffer(rewriter, op.w), (n, inp)), "w")
        xw = kb.arg(XW, "xw")
        epi = GemmEpilogue()
        if bias is not None:
            epi.bias = GemmAccess(kb.arg(bias, "bias"), lambda ivs, r, col: [0, col], [1, plan.bn])
            epi.bias_shape = (1, plan.bn)
        emit_gemm(kb, plan, dense2d(a, plan.bm, plan.bk), dense2d(w, plan.bn, plan.bk), dense2d(xw, plan.bm, plan.bn),
                  epilogue=epi, elem=el)
        kb.finish(rewriter)
        return XW


    @staticmethod
    def init_state_blocks(kb: KernelBuilder, blocks: Sequence[SSAValue], src: SSAValue | None, bp: int, b: int,
                          staging: SSAValue, conv: MapKind) -> None:
        """The blocked recurrence's initial state: each (``bp``, ``b``) fp64 block ``n`` of
        ``blocks`` is zero, or columns ``[n b, (n+1) b)`` of ``src`` (batch, H) loaded into
        ``staging`` and converted (``conv``)."""
        for n, st in enumerate(blocks):
            if src is None:
                kb.map(MapKind.FILL, [], st, value=0.0)
            else:
                kb.load(src, [0, n * b], [bp, b], staging)
                kb.map(conv, [staging], st)

    @staticmethod
    def hoist_recurrent_weights(kb: KernelBuilder, rv: SSAValue, rts: Sequence[SSAValue], hp: int,
                                staging: SSAValue, conv: MapKind) -> None:
        """The unblocked recurrence with the R_j kept in LDM: gate ``j``'s (``hp``, ``hp``) matrix of
        ``rv`` (gates, H, H) loaded into ``staging`` and converted (``conv``) into ``rts[j]``."""
        for j, rt in enumerate(rts):
            kb.load(rv, [j, 0, 0], [1, hp, hp], staging)
            kb.map(conv, [staging], rt)


class LstmPattern(_RecurrentPattern):
    """``graph.lstm`` (ONNX, forward, i/o/f/c gates) -> two kernels, Algorithm 6 (004 L1229-1244,
    algorithms.md §D):

    * ``NAME_x``: ONE memory-level GEMM for all time steps, XW (seq*batch, 4H) = X W^T + Wb + Rb
      (Table 4.2 row 5, GEPB/GEMP; the 4 gate matrices are already fused in ONNX's W, L1213; the
      two biases are summed at compile time for constants, else by a small ``NAME_bias`` kernel);
    * ``NAME``: the recurrence. h and c stay in LDM for the whole sequence (fp64 tiles
      (Bp, Hp), batch padded to 32 and H to 128: zero padding stays zero through the cell); per
      time step and gate j: gates_j = XW[t, :, j] and the mesh GEMM gates_j += h R_j^T
      (R_j = R[jH:(j+1)H] loaded once when the four fit in LDM, else streamed per step: L1333,
      it cannot be double-buffered then); then the cell in LDM (sigmoid/tanh/mul/add maps),
      y[t] = h stored; y_h, y_c stored at the end. When the plan has an ``r_block`` b (one R_j
      does not fit beside the state, or the model finds the blocked form faster), R_j streams in
      (b, b) blocks through two staging tiles and the state is kept in Hp/b column blocks
      (:meth:`_blocked_recurrence`); a hidden size whose state alone does not fit is a
      diagnostic.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.LSTMOp, rewriter: PatternRewriter) -> None:
        opt = [v for v in (op.b, op.initial_h, op.initial_c) if v is not None]
        el = _check_float(self, op, op.x, op.w, op.r, *opt)
        seq, batch, inp = shape_of(op.x)
        H = op.hidden_size
        name = self.state.layer_name(op)
        R = self.buffer(rewriter, op.r)
        Y = self.alloc_like(rewriter, op.y, name)
        YH = self.alloc_like(rewriter, op.y_h, f"{name}_h")
        YC = self.alloc_like(rewriter, op.y_c, f"{name}_c")
        dt = _dtype(el)
        # -- 1. XW = X W^T + Wb (+ Rb when b is a constant: folded at compile time) -----------------
        b_np = constant_array(op.b) if op.b is not None else None
        lplan = plan_lstm_op(self, op, lstm_op_shape(op), name)
        plan, hoist_r = lplan.xw, lplan.hoist_r
        bv: SSAValue | None = None
        if op.b is not None:
            if b_np is not None:  # Wb + Rb folded at compile time
                bsum = (b_np[0, : 4 * H].astype(np.float64) + b_np[0, 4 * H :]).astype(b_np.dtype).reshape(1, 4 * H)
                bv = self.state.new_global(rewriter, bsum, f"{name}_bias").memref
            else:  # a small element-wise kernel NAME_bias: (1, 4H) = Wb + Rb
                from taihu.passes.conversion.graph_to_tile.maps import Access, Step, emit_elementwise

                bv = self.alloc(rewriter, (1, 4 * H), el, f"{name}_bias")
                b2 = self.view(rewriter, self.buffer(rewriter, op.b), (2, 4 * H))
                kbb = KernelBuilder(self.state, f"{name}_bias", op, algorithm="map", shape=f"1x{4 * H} <- 2x{4 * H}",
                                    layer=name)
                bin_ = kbb.arg(b2, "b")
                emit_elementwise(self.state, kbb, (1, 4 * H),
                                 [Access(bin_, (True, True)), Access(bin_, (True, True), (1, 0))],
                                 Access(kbb.arg(bv, "bias"), (True, True)), [Step(MapKind.ADD, (0, 1))])
                kbb.finish(rewriter)
        XW = self.input_projection(rewriter, op, name, plan, 4, el, bv)
        # -- 2. the recurrence ----------------------------------------------------------------
        Bp = -(-batch // 32) * 32
        Hp = -(-H // 128) * 128
        kb = KernelBuilder(self.state, name, op, algorithm="lstm",
                           shape=f"{seq}x{batch}x{H} <- {seq}x{batch}x{inp} (H={H})", layer=name)
        xwv = kb.arg(self.view(rewriter, XW, (seq, batch, 4, H)), "xw")
        rv = kb.arg(self.view(rewriter, R, (4, H, H)), "r")
        yv = kb.arg(self.view(rewriter, Y, (seq, batch, H)), "y")
        yh = kb.arg(self.view(rewriter, YH, (batch, H)), "y_h")
        yc = kb.arg(self.view(rewriter, YC, (batch, H)), "y_c")
        h0 = kb.arg(self.view(rewriter, self.buffer(rewriter, op.initial_h), (batch, H)), "h0") if op.initial_h is not None else None
        c0 = kb.arg(self.view(rewriter, self.buffer(rewriter, op.initial_c), (batch, H)), "c0") if op.initial_c is not None else None
        lay = gemm_operand_layouts("n", False, True)
        conv = MapKind.CONVERT if dt == "f32" else MapKind.COPY
        if lplan.r_block is not None:
            self._blocked_recurrence(kb, lplan, (seq, Bp, Hp), el, conv, xwv, rv, (yv, yh, yc), (h0, c0))
            kb.finish(rewriter)
            self.replace(rewriter, op, [Y, YH, YC])
            return
        h = kb.alloc((Bp, Hp), f64, lay["A"][0], name="h")
        c = kb.alloc((Bp, Hp), f64, lay["C"][0], name="c")
        gates = [kb.alloc((Bp, Hp), f64, lay["C"][0], name=f"g{j}") for j in range(4)]
        tmp = kb.alloc((Bp, Hp), f64, lay["C"][0], name="tmp")
        s32 = kb.alloc((Bp, Hp), el, lay["C"][0], double=True, name="s")
        r_s = kb.alloc((Hp, Hp), el, lay["B"][0], name="r_s")
        rts = [kb.alloc((Hp, Hp), f64, lay["B"][0], layout=lay["B"][1], name=f"r{j}") for j in range(4 if hoist_r else 1)]
        for st, src in ((h, h0), (c, c0)):
            self.init_state_blocks(kb, [st], src, Bp, Hp, s32, conv)
        if hoist_r:
            self.hoist_recurrent_weights(kb, rv, rts, Hp, r_s, conv)
        with kb.loop(0, seq, 1, "t") as t:
            for j in range(4):
                g = gates[j]
                kb.load(xwv, [t, 0, j, 0], [1, Bp, 1, Hp], s32)
                kb.map(conv, [s32], g)
                if hoist_r:
                    rt = rts[j]
                else:
                    rt = rts[0]
                    kb.load(rv, [j, 0, 0], [1, Hp, Hp], r_s)
                    kb.map(conv, [r_s], rt)
                kb.insert(tile.GemmOp(h, rt, g, Bp, Hp, Hp, 4, trans_b=True))
            gi, go, gf, gc = gates
            kb.map(MapKind.SIGMOID, [gi], gi)
            kb.map(MapKind.SIGMOID, [go], go)
            kb.map(MapKind.SIGMOID, [gf], gf)
            kb.map(MapKind.TANH, [gc], gc)
            kb.map(MapKind.MUL, [gf, c], c)  # c = f*c + i*g
            kb.map(MapKind.MUL, [gi, gc], tmp)
            kb.map(MapKind.ADD, [c, tmp], c)
            kb.map(MapKind.TANH, [c], tmp)  # h = o * tanh(c)
            kb.map(MapKind.MUL, [go, tmp], h)
            kb.map(conv, [h], s32)
            kb.store(s32, yv, [t, 0, 0], [1, Bp, Hp])
        kb.map(conv, [h], s32)
        kb.store(s32, yh, [0, 0], [Bp, Hp])
        kb.map(conv, [c], s32)
        kb.store(s32, yc, [0, 0], [Bp, Hp])
        kb.finish(rewriter)
        self.replace(rewriter, op, [Y, YH, YC])


    def _blocked_recurrence(self, kb: KernelBuilder, lplan: LstmPlan, dims: tuple[int, int, int], el: Attribute,
                            conv: MapKind, xwv: SSAValue, rv: SSAValue, outs: tuple[SSAValue, SSAValue, SSAValue],
                            init: tuple[SSAValue | None, SSAValue | None]) -> None:
        """The recurrence with R_j streamed in (b, b) blocks (``lplan.r_block``; lstm_plan
        "Blocked recurrence"): h, c and the new h as Hp/b column blocks of (Bp, b) fp64 tiles;
        per step and output block n: per gate g_j = XW[t, :, j, n] + sum_k h_k R_j[n, k]^T (one
        mesh GEMM per R block), the cell on block n into hn_n, y[t, :, n] stored; then h = hn."""
        seq, Bp, Hp = dims
        b = lplan.r_block
        assert b is not None
        nb = Hp // b
        yv, yh, yc = outs
        lay = gemm_operand_layouts("n", False, True)
        hs = [kb.alloc((Bp, b), f64, lay["A"][0], name=f"h{n}") for n in range(nb)]
        hn = [kb.alloc((Bp, b), f64, lay["A"][0], name=f"hn{n}") for n in range(nb)]
        cs = [kb.alloc((Bp, b), f64, lay["C"][0], name=f"c{n}") for n in range(nb)]
        gates = [kb.alloc((Bp, b), f64, lay["C"][0], name=f"g{j}") for j in range(4)]
        tmp = kb.alloc((Bp, b), f64, lay["C"][0], name="tmp")
        s32 = kb.alloc((Bp, b), el, lay["C"][0], double=True, name="s")
        order = [(j, n, k) for n in range(nb) for j in range(4) for k in range(nb)]
        stream = _RBlockStream(kb, rv, b, el, conv, lplan.double_r, order)
        for sts, src in ((hs, init[0]), (cs, init[1])):
            self.init_state_blocks(kb, sts, src, Bp, b, s32, conv)
        with kb.loop(0, seq, 1, "t") as t:
            stream.start()
            for n in range(nb):
                for j, g in enumerate(gates):
                    kb.load(xwv, [t, 0, j, n * b], [1, Bp, 1, b], s32)
                    kb.map(conv, [s32], g)
                    for k in range(nb):
                        stream.gemm(hs[k], g, Bp, (j, n, k))
                gi, go, gf, gc = gates
                c = cs[n]
                kb.map(MapKind.SIGMOID, [gi], gi)
                kb.map(MapKind.SIGMOID, [go], go)
                kb.map(MapKind.SIGMOID, [gf], gf)
                kb.map(MapKind.TANH, [gc], gc)
                kb.map(MapKind.MUL, [gf, c], c)  # c = f*c + i*g
                kb.map(MapKind.MUL, [gi, gc], tmp)
                kb.map(MapKind.ADD, [c, tmp], c)
                kb.map(MapKind.TANH, [c], tmp)  # h = o * tanh(c)
                kb.map(MapKind.MUL, [go, tmp], hn[n])
                kb.map(conv, [hn[n]], s32)
                kb.store(s32, yv, [t, 0, n * b], [1, Bp, b])
            for n in range(nb):
                kb.map(MapKind.COPY, [hn[n]], hs[n])
        for n in range(nb):
            kb.map(conv, [hs[n]], s32)
            kb.store(s32, yh, [0, n * b], [Bp, b])
            kb.map(conv, [cs[n]], s32)
            kb.store(s32, yc, [0, n * b], [Bp, b])


class GruPattern(_RecurrentPattern):
    """``graph.gru`` (ONNX, forward, z/r/h gates) -> two kernels, as :class:`LstmPattern`:

    * ``NAME_x``: one memory-level GEMM for all time steps, XW (seq*batch, 3H) = X W^T + Wb +
      [Rbz, Rbr, Rbh] (Rbh only with ``linear_before_reset=0``; the biases must be constants,
      summed at compile time);
    * ``NAME``: the recurrence, h in LDM (fp64 (Bp, Hp) tiles, batch padded to 32, H to 128; the
      zero padding stays zero: z = 1/2, h~ = 0). Per step: g_z = XW[t, z] + h R_z^T and g_r likewise
      (mesh GEMMs), sigmoids; ``linear_before_reset=0``: g_h = XW[t, h] + (r * h) R_h^T, else
      g_h = XW[t, h] + r * (h R_h^T + Rbh); h~ = tanh(g_h); h = h~ + z * (h - h~); y[t] = h.
      The three R_j stay in LDM when they fit, else each is streamed per step, else in the
      largest (b, b) blocks that fit (:meth:`_blocked_recurrence`); a hidden size whose state
      alone does not fit is a diagnostic.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GRUOp, rewriter: PatternRewriter) -> None:
        opt = [v for v in (op.b, op.initial_h) if v is not None]
        el = _check_float(self, op, op.x, op.w, op.r, *opt)
        seq, batch, inp = shape_of(op.x)
        H, lbr = op.hidden_size, op.linear_before_reset
        name = self.state.layer_name(op)
        b_np = constant_array(op.b) if op.b is not None else None
        if op.b is not None and b_np is None:
            raise self.fail(op, "the bias B must be a compile-time constant (run graph-fold-constants)")
        dt = _dtype(el)
        Bp, Hp = -(-batch // 32) * 32, -(-H // 128) * 128
        eb = 4 if dt == "f32" else 8
        state = (4 + (1 if lbr else 2)) * per_cpe_bytes(Bp, Hp) + 2 * per_cpe_bytes(Bp, Hp) * eb // 8 + per_cpe_bytes(32, Hp)
        r_bytes = per_cpe_bytes(Hp, Hp)
        budget = self.state.ldm_budget
        hoist_r = state + 4 * r_bytes <= budget  # three R_j + their f32/f64 staging tile
        block: tuple[int, bool] | None = None
        if not hoist_r and state + 2 * r_bytes > budget:  # R_j in (b, b) blocks (lstm_plan "Blocked recurrence")
            tiles = BlockedTiles(4, 2, Hp * (8 + eb) if lbr and op.b is not None else 0)
            block = pick_r_block(Bp, Hp, eb, tiles, budget)
            if block is None:
                raise self.fail(op, f"hidden_size {H}: the LDM-resident recurrence state (h, the z and r gates and "
                                    f"{'the new h' if lbr else 'r*h'}, fp64 {Bp}x{Hp} each, with 128x128 R blocks) "
                                    f"needs {blocked_bytes(Bp, Hp, 128, eb, tiles, False)} B per CPE > {budget}")
        R = self.buffer(rewriter, op.r)
        Y = self.alloc_like(rewriter, op.y, name)
        YH = self.alloc_like(rewriter, op.y_h, f"{name}_h")
        # -- 1. XW = X W^T + Wb + Rb (z, r; h too when lbr = 0) --------------------------------
        xw_shape = GemmShape(seq * batch, 3 * H, inp, dt, trans_b=True, bias_along="n" if op.b is not None else None)
        try:
            plan = plan_gemm(xw_shape, plan_machine(self.state), name=f"{name}_x")
        except ValueError as e:
            raise self.fail(op, str(e)) from e
        bv, rbh = None, None
        if b_np is not None:
            wb, rb = b_np[0, : 3 * H].astype(np.float64), b_np[0, 3 * H :].astype(np.float64)
            folded = wb + np.concatenate([rb[: 2 * H], np.zeros(H) if lbr else rb[2 * H :]])
            bv = self.state.new_global(rewriter, folded.astype(b_np.dtype).reshape(1, 3 * H), f"{name}_bias").memref
            if lbr:
                rbh = self.state.new_global(rewriter, rb[2 * H :].astype(b_np.dtype).reshape(1, H), f"{name}_rbh").memref
        XW = self.input_projection(rewriter, op, name, plan, 3, el, bv)
        # -- 2. the recurrence ----------------------------------------------------------------
        kb = KernelBuilder(self.state, name, op, algorithm="gru",
                           shape=f"{seq}x{batch}x{H} <- {seq}x{batch}x{inp} (H={H})", layer=name)
        xwv = kb.arg(self.view(rewriter, XW, (seq, batch, 3, H)), "xw")
        rv = kb.arg(self.view(rewriter, R, (3, H, H)), "r")
        yv = kb.arg(self.view(rewriter, Y, (seq, batch, H)), "y")
        yh = kb.arg(self.view(rewriter, YH, (batch, H)), "y_h")
        h0 = (kb.arg(self.view(rewriter, self.buffer(rewriter, op.initial_h), (batch, H)), "h0")
              if op.initial_h is not None else None)
        lay = gemm_operand_layouts("n", False, True)
        conv = MapKind.CONVERT if dt == "f32" else MapKind.COPY
        if block is not None:
            self._blocked_recurrence(kb, block, (seq, Bp, Hp, lbr), el, conv, xwv, rv, (yv, yh), h0,
                                     kb.arg(rbh, "rbh") if rbh is not None else None)
            kb.finish(rewriter)
            self.replace(rewriter, op, [Y, YH])
            return
        h = kb.alloc((Bp, Hp), f64, lay["A"][0], name="h")
        rh = kb.alloc((Bp, Hp), f64, lay["A"][0], name="rh") if not lbr else None
        gz, gr, gh, tmp = (kb.alloc((Bp, Hp), f64, lay["C"][0], name=n) for n in ("gz", "gr", "gh", "tmp"))
        s32 = kb.alloc((Bp, Hp), el, lay["C"][0], double=True, name="s")
        r_s = kb.alloc((Hp, Hp), el, lay["B"][0], name="r_s")
        rts = [kb.alloc((Hp, Hp), f64, lay["B"][0], layout=lay["B"][1], name=f"r{j}") for j in range(3 if hoist_r else 1)]
        rb_t = None
        if rbh is not None:
            rb_s = kb.alloc((1, Hp), el, tile.Dist.REP, name="rbh_s")
            rb_t = kb.alloc((1, Hp), f64, tile.Dist.REP, name="rbh")
            kb.load(kb.arg(rbh, "rbh"), [0, 0], [1, Hp], rb_s)
            kb.map(conv, [rb_s], rb_t)
        self.init_state_blocks(kb, [h], h0, Bp, Hp, s32, conv)
        if hoist_r:
            self.hoist_recurrent_weights(kb, rv, rts, Hp, r_s, conv)

        def r_of(j: int) -> SSAValue:
            if hoist_r:
                return rts[j]
            kb.load(rv, [j, 0, 0], [1, Hp, Hp], r_s)
            kb.map(conv, [r_s], rts[0])
            return rts[0]

        with kb.loop(0, seq, 1, "t") as t:
            for j, g in enumerate((gz, gr, gh)):
                kb.load(xwv, [t, 0, j, 0], [1, Bp, 1, Hp], s32)
                kb.map(conv, [s32], g)
            for j, g in ((0, gz), (1, gr)):
                kb.insert(tile.GemmOp(h, r_of(j), g, Bp, Hp, Hp, 4, trans_b=True))
            kb.map(MapKind.SIGMOID, [gz], gz)
            kb.map(MapKind.SIGMOID, [gr], gr)
            if rh is not None:  # g_h += (r * h) R_h^T
                kb.map(MapKind.MUL, [gr, h], rh)
                kb.insert(tile.GemmOp(rh, r_of(2), gh, Bp, Hp, Hp, 4, trans_b=True))
            else:  # g_h += r * (h R_h^T + Rbh)
                assert rb_t is not None or op.b is None
                kb.map(MapKind.FILL, [], tmp, value=0.0)
                kb.insert(tile.GemmOp(h, r_of(2), tmp, Bp, Hp, Hp, 4, trans_b=True))
                if rb_t is not None:
                    kb.map(MapKind.ADD, [tmp, rb_t], tmp)
                kb.map(MapKind.MUL, [gr, tmp], tmp)
                kb.map(MapKind.ADD, [gh, tmp], gh)
            kb.map(MapKind.TANH, [gh], gh)
            kb.map(MapKind.SUB, [h, gh], tmp)  # h = h~ + z * (h - h~)
            kb.map(MapKind.MUL, [gz, tmp], tmp)
            kb.map(MapKind.ADD, [gh, tmp], h)
            kb.map(conv, [h], s32)
            kb.store(s32, yv, [t, 0, 0], [1, Bp, Hp])
        kb.map(conv, [h], s32)
        kb.store(s32, yh, [0, 0], [Bp, Hp])
        kb.finish(rewriter)
        self.replace(rewriter, op, [Y, YH])

    def _blocked_recurrence(self, kb: KernelBuilder, block: tuple[int, bool], dims: tuple[int, int, int, int],
                            el: Attribute, conv: MapKind, xwv: SSAValue, rv: SSAValue, outs: tuple[SSAValue, SSAValue],
                            h0: SSAValue | None, rbh: SSAValue | None) -> None:
        """The recurrence with R_j streamed in (b, b) blocks (``block`` = (b, two staging
        tiles); lstm_plan "Blocked recurrence"): h, the z and r gates and r*h (lbr = 0) or the
        new h (lbr = 1) as Hp/b column blocks of (Bp, b) fp64 tiles. Per step: for every output
        block n, g_z and g_r = XW + sum_k h_k R_{z,r}[n, k]^T and their sigmoids; then per block n
        g_h = XW[t, h, n] + sum_k (r*h)_k R_h[n, k]^T (lbr = 0; h_n updated in place, no later
        GEMM reads h) or + r_n * (sum_k h_k R_h[n, k]^T + Rbh_n) (lbr = 1, into hn_n, copied to h
        after the last block), the update and y[t, :, n] stored."""
        seq, Bp, Hp, lbr = dims
        b, double = block
        nb = Hp // b
        yv, yh = outs
        lay = gemm_operand_layouts("n", False, True)
        hs = [kb.alloc((Bp, b), f64, lay["A"][0], name=f"h{n}") for n in range(nb)]
        gz = [kb.alloc((Bp, b), f64, lay["C"][0], name=f"gz{n}") for n in range(nb)]
        gr = [kb.alloc((Bp, b), f64, lay["C"][0], name=f"gr{n}") for n in range(nb)]
        other = [kb.alloc((Bp, b), f64, lay["A"][0], name=f"{'hn' if lbr else 'rh'}{n}") for n in range(nb)]
        gh = kb.alloc((Bp, b), f64, lay["C"][0], name="gh")
        tmp = kb.alloc((Bp, b), f64, lay["C"][0], name="tmp")
        s32 = kb.alloc((Bp, b), el, lay["C"][0], double=True, name="s")
        order = ([(j, n, k) for n in range(nb) for j in (0, 1) for k in range(nb)]
                 + [(2, n, k) for n in range(nb) for k in range(nb)])
        stream = _RBlockStream(kb, rv, b, el, conv, double, order)
        rbs: list[SSAValue] = []
        if rbh is not None:
            rb_s = kb.alloc((1, b), el, tile.Dist.REP, name="rbh_s")
            for n in range(nb):
                rbs.append(kb.alloc((1, b), f64, tile.Dist.REP, name=f"rbh{n}"))
                kb.load(rbh, [0, n * b], [1, b], rb_s)
                kb.map(conv, [rb_s], rbs[n])
        self.init_state_blocks(kb, hs, h0, Bp, b, s32, conv)
        with kb.loop(0, seq, 1, "t") as t:
            stream.start()
            for n in range(nb):
                for j, g in ((0, gz[n]), (1, gr[n])):
                    kb.load(xwv, [t, 0, j, n * b], [1, Bp, 1, b], s32)
                    kb.map(conv, [s32], g)
                    for k in range(nb):
                        stream.gemm(hs[k], g, Bp, (j, n, k))
                    kb.map(MapKind.SIGMOID, [g], g)
            if not lbr:
                for n in range(nb):
                    kb.map(MapKind.MUL, [gr[n], hs[n]], other[n])
            for n in range(nb):
                kb.load(xwv, [t, 0, 2, n * b], [1, Bp, 1, b], s32)
                kb.map(conv, [s32], gh)
                if not lbr:  # g_h += (r * h) R_h^T
                    for k in range(nb):
                        stream.gemm(other[k], gh, Bp, (2, n, k))
                else:  # g_h += r * (h R_h^T + Rbh)
                    kb.map(MapKind.FILL, [], tmp, value=0.0)
                    for k in range(nb):
                        stream.gemm(hs[k], tmp, Bp, (2, n, k))
                    if rbs:
                        kb.map(MapKind.ADD, [tmp, rbs[n]], tmp)
                    kb.map(MapKind.MUL, [gr[n], tmp], tmp)
                    kb.map(MapKind.ADD, [gh, tmp], gh)
                kb.map(MapKind.TANH, [gh], gh)
                dst = other[n] if lbr else hs[n]
                kb.map(MapKind.SUB, [hs[n], gh], tmp)  # h = h~ + z * (h - h~)
                kb.map(MapKind.MUL, [gz[n], tmp], tmp)
                kb.map(MapKind.ADD, [gh, tmp], dst)
                kb.map(conv, [dst], s32)
                kb.store(s32, yv, [t, 0, n * b], [1, Bp, b])
            if lbr:
                for n in range(nb):
                    kb.map(MapKind.COPY, [other[n]], hs[n])
        for n in range(nb):
            kb.map(conv, [hs[n]], s32)
            kb.store(s32, yh, [0, n * b], [Bp, b])


def patterns(state: LoweringState) -> list[RewritePattern]:
    """The patterns of this module."""
    return [GemmPattern(state), MatMulPattern(state), LstmPattern(state), GruPattern(state)]
