"""Memory-bound graph ops and views -> ``tile.kernel``s of ``tile.move`` + ``tile.map``.

Rules (algorithms.md §A0 R0/R1/R6, §D; 004 L983, L1225-1246): memory-bound ops run
data-parallel per CPE (``cpe`` distribution: dim 0 of a tile split 64-way by CPE id), without
RLC, with large contiguous DMAs; every LDM tile is double-buffered (``tile.alloc double``) so
tile-to-loop overlaps the DMA of tile i+1 with the compute of tile i, and the footprint of a
kernel (double buffers counted twice) stays within the LDM budget (57 344 B per CPE [param]).

Element-wise ops (:func:`emit_elementwise`): relu, sigmoid, tanh, clip, leaky_relu; add, sub,
mul, div, sum with numpy broadcasting; batch_norm (not folded: ``affine`` with per-channel
``scale = gamma/sqrt(var+eps)``, ``shift = beta - mean*scale`` computed at compile time from
constant parameters); pad (a shifted copy, ``pad v`` on the loads); concat (a copy per input
into its slice, or none: at batch 1 an input produced by kernels only is written into its
slice by its producers, :class:`ConcatPattern`). The output shape is canonicalised: size-1 dims dropped and adjacent dims
merged when every input is either full or broadcast along both (e.g. ``(N,C,H,W) + (1,C,1,1)``
-> ``(N, C, H*W)`` with the bias ``(1, C, 1)``). The tile covers a suffix of the canonical
dims: the split dim ``s`` (``64*q`` rows, ``q`` per CPE) and the whole inner dims; the outer
dims are ``tile.for`` loops with tile 1. The tile minimises ``(iterations + 1) * (512 +
q*inner)`` (512 elements ~ one DMA start-up, 200 cycles, model §4; the +1 is the first load and
the last store that double buffering cannot overlap); each CPE's piece is one contiguous
run of ``q*inner`` elements when the inputs are full. Broadcast operands are ``rep`` tiles
(or ``cpe`` when they vary along ``s``) loaded in the loop level they depend on.

Window ops: max_pool / avg_pool (planes N*C split over the CPEs, ``tho`` output rows per tile,
whole input rows per DMA: ``pad -inf`` / ``pad 0.0`` rows for the top/bottom pads, the column
pads and the ceil_mode tail as the map's ``pads``; the per-position divisor of avg_pool without
``count_include_pad`` is a constant ``inv_count`` operand), global_avg_pool (``reduce_mean``;
``reduce_sum`` partials when H*W is too large), softmax and lrn (``(outer, A, inner)`` views,
:func:`plan_axis`: rows of ``outer`` split, or at batch 1 ``inner`` split (``cpe2`` tiles)
with LRN channel chunks carrying the window's halo, or LRN channel blocks with a halo
(``cpe1+h``)).

Data movement: transpose / layout_transform (a tile over a window of dims, one of them split
over the CPEs in both orders (``cpe<i>``), ``tile.map transpose`` in LDM), views (reshape, flatten, unsqueeze, dropout:
``memref.collapse_shape``/``expand_shape``, no kernel).

Every producer kernel absorbs its single-use trailing element-wise consumers
(:func:`taihu.passes.conversion.graph_to_tile.common.absorb_elementwise_consumers`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import bufferization, memref
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint, Rewriter

from taihu.backends.model.map_plans import (
    AxisPlan,
    AxisShape,
    ElementwisePlan,
    ElementwiseShape,
    MapPlan,
    MapShape,
    PoolPlan,
    PoolShape,
    ReducePlan,
    ReduceShape,
    TransposePlan,
    TransposeShape,
    map_model_plan,
    map_plan_for,
)
from taihu.dialects import graph
from taihu.dialects.mapkind import MapKind
from taihu.dialects import tile
from taihu.dialects.tile import Dist
from taihu.passes.conversion.graph_to_tile.common import (
    ALIGNMENT,
    FusedMap,
    GraphToTilePattern,
    Idx,
    KernelBuilder,
    LoweringState,
    absorb_elementwise_consumers,
    constant_array,
    reshape_view,
    sanitize,
    shape_of,
    unary_map_of,
)
from taihu.passes.conversion.graph_to_tile.schedule_attr import op_schedule

__all__ = ["Access", "Step", "elementwise_shape", "emit_copy_kernel", "emit_elementwise", "map_problem", "patterns",
           "plan_map_op"]



def _x(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _elem_bytes(elem: Attribute) -> int:
    return elem.bitwidth // 8  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# The element-wise engine
# --------------------------------------------------------------------------------------------


@dataclass
class Access:
    """One operand of an element-wise kernel over the iteration space ``D`` (rank k).

    ``mem``: a rank-k memref; ``full[j]``: the operand varies along dim j (its memref dim j
    is indexed by ``iv_j + shift[j]``) or is broadcast (memref dim j has size 1, index 0);
    ``pad``: value read outside the memref (only emitted when a window may leave it)."""

    mem: SSAValue
    full: tuple[bool, ...]
    shift: tuple[int, ...] = ()
    pad: float = 0.0

    def __post_init__(self) -> None:
        if not self.shift:
            self.shift = (0,) * len(self.full)


@dataclass(frozen=True)
class Step:
    """``acc = KIND(args)``; an arg is an input index (int) or ``"acc"``."""

    kind: MapKind
    args: tuple[int | str, ...]
    params: dict[str, object] = field(default_factory=dict)


_IDENTITY_INIT = {
    MapKind.ADD: (0.0, MapKind.ADD, MapKind.ADD),
    MapKind.SUB: (0.0, MapKind.ADD, MapKind.SUB),
    MapKind.MUL: (1.0, MapKind.MUL, MapKind.MUL),
    MapKind.DIV: (1.0, MapKind.MUL, MapKind.DIV),
}


def _rewrite_all_broadcast(steps: list[Step], inputs_full: Sequence[Sequence[bool]]) -> list[Step]:
    """``tile.map`` needs one input with the output shape; when the first binary step has
    none (``(A,1) + (1,B)``), start from ``fill`` with the identity and fold in the inputs."""
    if not steps:
        return steps
    first = steps[0]
    def is_full(a: int | str) -> bool:
        return a == "acc" or all(inputs_full[a])  # type: ignore[index]
    if any(is_full(a) for a in first.args):
        return steps
    if first.kind not in _IDENTITY_INIT or len(first.args) != 2:
        raise ValueError(f"cannot compute {first.kind.value} of broadcast-only operands")
    value, k1, k2 = _IDENTITY_INIT[first.kind]
    return [
        Step(MapKind.FILL, (), {"value": value}),
        Step(k1, ("acc", first.args[0])),
        Step(k2, ("acc", first.args[1])),
        *steps[1:],
    ]


def _ew_operands(inputs_full: Sequence[Sequence[bool]], steps: Sequence[Step]
                 ) -> tuple[list[Step], int | None, list[int]]:
    """(steps, the input the accumulator aliases or None, the inputs with an LDM tile) of an
    element-wise kernel: the accumulator aliases a full input not read after the first step;
    an input used twice is loaded once."""
    steps = _rewrite_all_broadcast(list(steps), inputs_full)
    later = {a for st in steps[1:] for a in st.args if isinstance(a, int)}
    acc_in: int | None = None
    if not steps:
        acc_in = 0
    elif steps[0].kind != MapKind.FILL:
        for a in steps[0].args:
            if isinstance(a, int) and all(inputs_full[a]) and a not in later:
                acc_in = a
                break
    used = sorted({a for st in steps for a in st.args if isinstance(a, int)} | ({acc_in} if acc_in is not None else set()))
    return steps, acc_in, used


def elementwise_shape(D: Sequence[int], inputs_full: Sequence[Sequence[bool]], steps: Sequence[Step],
                      fused: Sequence[FusedMap], elem_bytes: int) -> ElementwiseShape:
    """The schedule problem of an element-wise kernel (:func:`emit_elementwise`'s arguments)."""
    _, acc_in, used = _ew_operands(inputs_full, steps)
    pats = [tuple(inputs_full[i]) for i in used] + [(True,) * len(D) for f in fused if f.is_residual]
    return ElementwiseShape(tuple(D), tuple(pats), 0 if acc_in is not None else 1, elem_bytes)


def emit_elementwise(
    state: LoweringState,
    kb: KernelBuilder,
    D: Sequence[int],
    inputs: Sequence[Access],
    out: Access,
    steps: Sequence[Step],
    fused: Sequence[FusedMap] = (),
    plan: ElementwisePlan | None = None,
) -> None:
    """Emit the tile loops of an element-wise kernel into ``kb``.

    ``D``: iteration space (rank k >= 1); ``inputs``: the operands (:class:`Access`);
    ``out``: the output access (``full`` all true); ``steps``: the computation into the output
    tile (``acc``); an empty step list copies input 0. ``fused`` maps run in place last.
    ``plan``: the tile (a plan of :func:`elementwise_shape`'s problem; default: the model's).
    """
    k = len(D)
    assert k >= 1 and all(len(a.full) == k for a in (*inputs, out))
    mt = out.mem.type
    assert isinstance(mt, MemRefType)
    elem = mt.get_element_type()
    full = [a.full for a in inputs]
    steps, acc_in, used = _ew_operands(full, steps)
    if plan is None:
        model = map_model_plan(elementwise_shape(D, full, steps, fused, _elem_bytes(elem)), state.ldm_budget)
        assert isinstance(model, ElementwisePlan)
        plan = model
    s, tiles = plan.split, plan.tiles

    def tile_shape(full: Sequence[bool]) -> list[int]:
        return [t if f else 1 for t, f in zip(tiles[s:], full[s:])]

    bufs: dict[int, SSAValue] = {}
    for i in used:
        inp = inputs[i]
        dist = Dist.CPE if inp.full[s] else Dist.REP
        bufs[i] = kb.alloc(tile_shape(inp.full), elem, dist, double=True, name=f"in{i}" if i != acc_in else "t")
    acc = bufs[acc_in] if acc_in is not None else kb.alloc(tile_shape(out.full), elem, Dist.CPE, double=True, name="t")

    # the loop level each input's window depends on (-1: none -> loaded once before the loops)
    def depth(a: Access) -> int:
        dims = [j for j in range(k) if a.full[j] and D[j] > tiles[j]]
        return max(dims) if dims else -1

    last = max([j for j in range(k) if D[j] > tiles[j]], default=-1)  # innermost loop
    ivs: list[Idx] = [0] * k

    def window(a: Access) -> tuple[list[Idx], list[int]]:
        offs: list[Idx] = []
        sizes: list[int] = []
        for j in range(k):
            if a.full[j]:
                offs.append(kb.affine(ivs[j], 1, a.shift[j]))
                sizes.append(tiles[j])
            else:
                offs.append(0)
                sizes.append(1)
        return offs, sizes

    def load(i: int) -> None:
        a = inputs[i]
        offs, sizes = window(a)
        kb.load(a.mem, offs, sizes, bufs[i], pad=a.pad)

    def body() -> None:
        for i in used:
            if depth(inputs[i]) == last and last >= 0:
                load(i)
        for st in steps:
            ins = [acc if a == "acc" else bufs[a] for a in st.args]  # type: ignore[index]
            kb.map(st.kind, ins, acc, **st.params)
        offs, sizes = window(out)
        kb.store_fused(acc, fused, out.mem, offs, sizes)

    def level(j: int) -> None:
        if j > last:
            body()
            return
        with kb.loop(0, D[j], tiles[j], name=f"i{j}") as iv:
            ivs[j] = iv
            if j < last:
                for i in used:
                    if depth(inputs[i]) == j:
                        load(i)
            level(j + 1)

    for i in used:  # windows that depend on no loop: loaded once, before the loops
        if depth(inputs[i]) == -1:
            load(i)
    level(0)


# --------------------------------------------------------------------------------------------
# Broadcast canonicalisation
# --------------------------------------------------------------------------------------------


def canonicalize_broadcast(out_shape: Sequence[int], in_shapes: Sequence[Sequence[int]]
                           ) -> tuple[tuple[int, ...], list[tuple[bool, ...]]]:
    """Canonical iteration space and per-input full/broadcast patterns (module docstring).

    Size-1 output dims are dropped; adjacent dims with the same pattern in every input merge.
    A scalar-like output becomes ``(1,)``."""
    r = len(out_shape)
    aligned = [(1,) * (r - len(s)) + tuple(s) for s in in_shapes]
    dims: list[int] = []
    pats: list[tuple[bool, ...]] = []
    for j, d in enumerate(out_shape):
        if d == 1:
            continue
        p = tuple(a[j] == d for a in aligned)
        if pats and pats[-1] == p:
            dims[-1] *= d
        else:
            dims.append(d)
            pats.append(p)
    if not dims:
        return (1,), [(True,) for _ in in_shapes]
    per_input = [tuple(p[i] for p in pats) for i in range(len(in_shapes))]
    return tuple(dims), per_input


def canonical_shape(D: Sequence[int], full: Sequence[bool]) -> tuple[int, ...]:
    return tuple(d if f else 1 for d, f in zip(D, full))


# --------------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------------


def _unary_steps(op: Operation) -> tuple[list[SSAValue], list[Step]] | None:
    m = unary_map_of(op)
    if m is None or isinstance(op, graph.DropoutOp):
        return None
    return [op.operands[0]], [Step(m[0], (0,), m[1])]


_BINARY = {graph.AddOp: MapKind.ADD, graph.SubOp: MapKind.SUB, graph.MulOp: MapKind.MUL, graph.DivOp: MapKind.DIV}


def _binary_steps(op: Operation) -> tuple[list[SSAValue], list[Step]] | None:
    kind = _BINARY.get(type(op))  # type: ignore[arg-type]
    if kind is None:
        return None
    lhs, rhs = op.operands
    if lhs is rhs:
        return [lhs], [Step(kind, (0, 0))]
    return [lhs, rhs], [Step(kind, (0, 1))]


def _sum_steps(op: Operation) -> tuple[list[SSAValue], list[Step]] | None:
    if not isinstance(op, graph.SumOp):
        return None
    uniq: list[SSAValue] = []
    idx = []
    for v in op.inputs:
        if v not in uniq:
            uniq.append(v)
        idx.append(uniq.index(v))
    if len(idx) == 1:
        return uniq, [Step(MapKind.COPY, (0,))]
    return uniq, [Step(MapKind.ADD, (idx[0], idx[1]))] + [Step(MapKind.ADD, ("acc", i)) for i in idx[2:]]


_BATCH_NORM_STEPS = [Step(MapKind.AFFINE, (0, 1, 2))]


def _batch_norm_param_shape(op: graph.BatchNormOp) -> tuple[int, ...]:
    """(C, 1, ...): the per-channel scale / shift operands of the ``affine`` map."""
    xs = shape_of(op.input)
    return (xs[1],) + (1,) * (len(xs) - 2)


def _ew_problem(state: LoweringState, op: Operation, in_shapes: Sequence[Sequence[int]],
                steps: Sequence[Step]) -> ElementwiseShape:
    """The schedule problem of the element-wise kernel of ``op`` (with the consumers it absorbs)."""
    out_v = op.results[0]
    D, pats = canonicalize_broadcast(shape_of(out_v), in_shapes)
    fused = absorb_elementwise_consumers(state, out_v, residual=True)
    t = out_v.type
    assert isinstance(t, TensorType)
    return elementwise_shape(D, pats, steps, fused, _elem_bytes(t.element_type))


class _EwPattern(GraphToTilePattern):
    """Shared lowering of element-wise graph ops through :func:`emit_elementwise`."""

    def lower_ew(self, rewriter: PatternRewriter, op: Operation, operands: Sequence[SSAValue],
                 steps: Sequence[Step], *, algorithm: str = "map") -> None:
        out_v = op.results[0]
        out_shape = shape_of(out_v)
        in_shapes = [shape_of(v) for v in operands]
        plan = plan_map_op(self, op, _ew_problem(self.state, op, in_shapes, steps))
        assert isinstance(plan, ElementwisePlan)
        fused = absorb_elementwise_consumers(self.state, out_v, residual=True)
        name = self.state.layer_name(op)
        D, patterns = canonicalize_broadcast(out_shape, in_shapes)
        mems = [self.buffer(rewriter, v) for v in operands]
        out_mem = self.alloc_like(rewriter, out_v, name)
        kb = KernelBuilder(self.state, name, op, algorithm=algorithm, fused=fused,
                           shape=f"{_x(out_shape)} <- " + ", ".join(_x(s) for s in in_shapes))
        accs = []
        for i, (m, p) in enumerate(zip(mems, patterns)):
            view = self.view(rewriter, m, canonical_shape(D, p))
            accs.append(Access(kb.arg(view, f"x{i}"), p))
        out_view = self.view(rewriter, out_mem, D)
        out_acc = Access(kb.arg(out_view, "y"), (True,) * len(D))
        fused = self.bind_fused(rewriter, kb, fused, out_acc.mem)
        emit_elementwise(self.state, kb, D, accs, out_acc, steps, fused, plan)
        kb.finish(rewriter)
        self.replace(rewriter, op, [out_mem], fused)


class UnaryPattern(_EwPattern):
    """relu, sigmoid, tanh, clip, leaky_relu (+ absorbed consumers) -> one ``map`` kernel."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        parts = _unary_steps(op)
        if parts is not None:
            self.lower_ew(rewriter, op, *parts)


class BinaryPattern(_EwPattern):
    """add/sub/mul/div with numpy broadcasting -> one ``map`` kernel."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        parts = _binary_steps(op)
        if parts is not None:
            self.lower_ew(rewriter, op, *parts)


class SumPattern(_EwPattern):
    """``graph.sum`` of n inputs -> a chain of in-place ``add`` maps in one kernel."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        parts = _sum_steps(op)
        if parts is not None:
            self.lower_ew(rewriter, op, *parts)


class BatchNormPattern(_EwPattern):
    """Unfolded inference batch_norm -> ``affine`` with compile-time per-channel scale/shift
    (constant parameters required: the tile level has no square root)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        params = [constant_array(v) for v in (op.scale, op.bias, op.mean, op.var)]
        if any(p is None for p in params):
            raise self.fail(op, "scale, bias, mean and var must be graph.constant (run graph-fold-constants)")
        gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)
        a = gamma / np.sqrt(var + float(op.epsilon))
        shift = beta - mean * a
        t = op.input.type
        assert isinstance(t, TensorType)
        dt = np.float32 if t.element_type.bitwidth == 32 else np.float64
        cshape = _batch_norm_param_shape(op)
        name = self.state.layer_name(op)
        g_scale = self.state.new_global(rewriter, a.astype(dt).reshape(cshape), f"{name}_scale")
        g_shift = self.state.new_global(rewriter, shift.astype(dt).reshape(cshape), f"{name}_shift")
        ts = [bufferization.ToTensorOp(g.memref, restrict=True) for g in (g_scale, g_shift)]
        for tt in ts:
            rewriter.insert(tt)
        self.lower_ew(rewriter, op, [op.input, ts[0].tensor, ts[1].tensor], _BATCH_NORM_STEPS)


class ViewPattern(GraphToTilePattern):
    """reshape, flatten, unsqueeze, dropout -> a no-copy memref view (no kernel)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (graph.ReshapeOp, graph.FlattenOp, graph.UnsqueezeOp, graph.DropoutOp)):
            return
        src = op.operands[0]
        t = src.type
        if not isinstance(t, TensorType):
            return
        mem = self.buffer(rewriter, src)
        v = self.view(rewriter, mem, shape_of(op.results[0]))
        self.replace(rewriter, op, [v])


# --------------------------------------------------------------------------------------------
# Data movement: concat, pad
# --------------------------------------------------------------------------------------------


_VIEW_OPS = (memref.CollapseShapeOp, memref.ExpandShapeOp, memref.ReinterpretCastOp)


def _only_written_by_kernels(m: SSAValue, keep: Operation) -> bool:
    """Every use of memref ``m`` (through reshape views) is a ``tile.kernel`` operand or the
    op ``keep`` (the ``to_tensor`` the concat reads)."""
    for u in m.uses:
        o = u.operation
        if o is keep or isinstance(o, tile.KernelOp):
            continue
        if isinstance(o, bufferization.ToTensorOp) and not list(o.tensor.uses):
            continue  # a dead to_tensor (an input already folded into an earlier concat)
        if isinstance(o, _VIEW_OPS) and _only_written_by_kernels(o.results[0], keep):
            continue
        return False
    return True


def _inplace_source(v: SSAValue, block) -> memref.AllocOp | None:
    """The ``memref.alloc`` holding concat input ``v`` when its producer kernels may write the
    concat output slice directly: ``v`` is ``to_tensor(alloc)`` in the concat's block, used by
    the concat only, and the buffer is touched by nothing but kernels (no other tensor, no
    return, no graph-level view of it)."""
    if not isinstance(v, OpResult) or not isinstance(v.op, bufferization.ToTensorOp) or len(list(v.uses)) != 1:
        return None
    m = v.op.memref
    if not isinstance(m, OpResult) or not isinstance(m.op, memref.AllocOp) or m.op.parent_block() is not block:
        return None
    return m.op if _only_written_by_kernels(m, v.op) else None


def _slice_view(out_mem: SSAValue, offset: int, t: MemRefType) -> memref.ReinterpretCastOp:
    """``memref.reinterpret_cast`` of ``out_mem`` at element ``offset`` with type ``t`` (a
    contiguous sub-range: row-major strides). The result keeps the identity layout, taihu's
    main-memory convention; convert-loop-to-sw adds the static offset to the base address."""
    shape = list(t.get_shape())
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    return memref.ReinterpretCastOp.from_dynamic(out_mem, [offset], shape, strides, t)


class ConcatPattern(_EwPattern):
    """``graph.concat`` -> (outer, R_i) -> (outer, R) at column offset sum(R_<i), with
    outer = prod(dims before axis), R_i = prod(input dims from axis).

    With ``outer == 1`` (a channel concat at batch 1: every input is a contiguous slice of the
    output) an input whose buffer only the kernels of its producer write (:func:`_inplace_source`)
    costs nothing: its ``memref.alloc`` becomes a view of the output slice
    (:func:`_slice_view`), so the producers store into the concat output directly (GoogLeNet /
    SqueezeNet concats move no data). The other inputs get one copy kernel each into their slice
    of the output (same ``taihu.layer``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConcatOp, rewriter: PatternRewriter) -> None:
        out_shape = shape_of(op.result)
        ax = op.axis % len(out_shape)
        fused = absorb_elementwise_consumers(self.state, op.result)
        name = self.state.layer_name(op)
        outer = math.prod(out_shape[:ax])
        total = math.prod(out_shape[ax:])
        block = op.parent_block()
        inplace: dict[int, memref.AllocOp] = {}
        if outer == 1 and not fused and block is not None:
            for i, v in enumerate(op.inputs):
                a = _inplace_source(v, block)
                if a is not None and math.prod(shape_of(v)) > 0:
                    inplace[i] = a
        if inplace:
            t = op.result.type
            assert isinstance(t, TensorType)
            assert block is not None  # inplace sources are only found in a block
            first = min(inplace.values(), key=block.get_operation_index)
            alloc = memref.AllocOp.get(t.element_type, ALIGNMENT, list(out_shape))
            alloc.memref.name_hint = sanitize(name)
            rewriter.insert(alloc, InsertPoint.before(first))
            out_mem: SSAValue = alloc.memref
        else:
            out_mem = self.alloc_like(rewriter, op.result, name)
        off = 0
        for i, v in enumerate(op.inputs):
            r_i = math.prod(shape_of(v)[ax:])
            if r_i == 0:
                continue
            if i in inplace:
                a = inplace[i]
                view = _slice_view(out_mem, off, a.memref.type)
                view.result.name_hint = a.memref.name_hint
                rewriter.insert(view, InsertPoint.before(a))
                rewriter.replace_all_uses_with(a.memref, view.result)
                rewriter.erase(a)
                off += r_i
                continue
            mem = self.buffer(rewriter, v)
            shift: tuple[int, ...]
            if outer == 1:
                D: tuple[int, ...] = (r_i,)
                in_view, out_view, shift = self.view(rewriter, mem, D), self.view(rewriter, out_mem, (total,)), (off,)
            else:
                D = (outer, r_i)
                in_view, out_view, shift = (
                    self.view(rewriter, mem, D), self.view(rewriter, out_mem, (outer, total)), (0, off))
            kb = KernelBuilder(self.state, name, op, algorithm="copy", fused=fused, layer=name,
                               shape=f"{_x(out_shape)}[{off}:{off + r_i}] <- {_x(shape_of(v))}")
            x = Access(kb.arg(in_view, "x"), (True,) * len(D))
            y = Access(kb.arg(out_view, "y"), (True,) * len(D), shift)
            emit_elementwise(self.state, kb, D, [x], y, [], fused)
            kb.finish(rewriter)
            off += r_i
        self.replace(rewriter, op, [out_mem], fused)


def canonicalize_pad(in_shape: Sequence[int], pads: Sequence[int]
                     ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(input dims, begin pads, output dims) after merging every unpadded dim into its left
    neighbour (``(a, b)`` with b unpadded: index ``a*B + b``, pads scaled by B)."""
    r = len(in_shape)
    begin, end = list(pads[:r]), list(pads[r:])
    ins: list[int] = []
    bs: list[int] = []
    es: list[int] = []
    for j in range(r):
        if ins and begin[j] == 0 and end[j] == 0:
            d = in_shape[j]
            ins[-1] *= d
            bs[-1] *= d
            es[-1] *= d
        else:
            ins.append(in_shape[j])
            bs.append(begin[j])
            es.append(end[j])
    if not ins:
        ins, bs, es = [1], [0], [0]
    outs = tuple(i + b + e for i, b, e in zip(ins, bs, es))
    return tuple(ins), tuple(bs), outs


class PadPattern(_EwPattern):
    """Constant-mode ``graph.pad`` (negative pads crop) -> a shifted copy: output tiles are
    loaded from ``x[iv - begin]`` with ``pad value`` outside x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PadOp, rewriter: PatternRewriter) -> None:
        out_shape = shape_of(op.result)
        if math.prod(out_shape) == 0:  # everything cropped: an empty buffer, no kernel
            self.replace(rewriter, op, [self.alloc_like(rewriter, op.result, self.state.layer_name(op))])
            return
        ins, begin, outs = canonicalize_pad(shape_of(op.input), op.pads)
        plan = plan_map_op(self, op, pad_shape(self.state, op))
        assert isinstance(plan, ElementwisePlan)
        fused = absorb_elementwise_consumers(self.state, op.result)
        name = self.state.layer_name(op)
        mem = self.buffer(rewriter, op.input)
        out_mem = self.alloc_like(rewriter, op.result, name)
        kb = KernelBuilder(self.state, name, op, algorithm="copy", fused=fused,
                           shape=f"{_x(out_shape)} <- {_x(shape_of(op.input))}")
        x = Access(kb.arg(self.view(rewriter, mem, ins), "x"), (True,) * len(ins),
                   tuple(-b for b in begin), pad=op.value)
        y = Access(kb.arg(self.view(rewriter, out_mem, outs), "y"), (True,) * len(outs))
        emit_elementwise(self.state, kb, outs, [x], y, [], fused, plan)
        kb.finish(rewriter)
        self.replace(rewriter, op, [out_mem], fused)


# --------------------------------------------------------------------------------------------
# Transpose / layout_transform
# --------------------------------------------------------------------------------------------


def canonicalize_perm(in_shape: Sequence[int], perm: Sequence[int]
                      ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(canonical input dims, canonical perm): unit dims dropped, input dims that stay adjacent
    and in order in the output merged. ``out dim i = in dim perm[i]``."""
    keep = [j for j in range(len(in_shape)) if in_shape[j] != 1]
    if not keep:
        return (1,), (0,)
    out_order = [j for j in perm if in_shape[j] != 1]  # input dims in output order
    # groups of input dims (in input order) that are consecutive in both orders
    pos = {j: i for i, j in enumerate(out_order)}
    groups: list[list[int]] = []
    for j in keep:
        if groups and pos[j] == pos[groups[-1][-1]] + 1 and keep.index(j) == keep.index(groups[-1][-1]) + 1:
            groups[-1].append(j)
        else:
            groups.append([j])
    dims = tuple(math.prod(in_shape[j] for j in g) for g in groups)
    gid = {g[0]: i for i, g in enumerate(groups)}
    cperm = tuple(gid[j] for j in out_order if j in gid)
    return dims, cperm


class TransposePattern(GraphToTilePattern):
    """``graph.transpose`` / ``graph.layout_transform`` -> loads of tiles over a window of dims
    (:func:`~taihu.backends.model.map_plans.transpose_space`; one dim split over the CPEs, ``cpe<i>`` at its position in the
    input and in the output order), ``tile.map transpose`` (when the order changes inside the
    tile), stores into the permuted window. NCHW -> NHWC at batch 1 = (C, HW) -> (HW, C): CPE
    p loads C runs of its HW columns (``cpe1``) and stores one contiguous block (``cpe``)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (graph.TransposeOp, graph.LayoutTransformOp)):
            return
        in_shape = shape_of(op.input)
        out_shape = shape_of(op.result)
        dims, perm = canonicalize_perm(in_shape, op.perm)
        plan = plan_map_op(self, op, transpose_shape(op))
        mem = self.buffer(rewriter, op.input)
        fused = absorb_elementwise_consumers(self.state, op.result)
        name = self.state.layer_name(op)
        out_mem = self.alloc_like(rewriter, op.result, name)
        t = op.input.type
        assert isinstance(t, TensorType)
        elem = t.element_type
        k = len(dims)
        kb = KernelBuilder(self.state, name, op, algorithm="transpose", fused=fused,
                           shape=f"{_x(out_shape)} <- {_x(in_shape)} perm {list(op.perm)}")
        x = kb.arg(self.view(rewriter, mem, dims), "x")
        out_dims = tuple(dims[j] for j in perm)
        y = kb.arg(self.view(rewriter, out_mem, out_dims), "y")
        if isinstance(plan, ElementwisePlan):  # the identity permutation: a copy
            emit_elementwise(self.state, kb, dims, [Access(x, (True,) * k)], Access(y, (True,) * k), [], fused, plan)
            kb.finish(rewriter)
            self.replace(rewriter, op, [out_mem], fused)
            return
        assert isinstance(plan, TransposePlan)
        d, win = plan.split, list(plan.window)
        tiles = [dims[j] if j in win else 1 for j in range(k)]
        tiles[d] = plan.rows
        in_tile = [tiles[j] for j in win]  # input order
        out_win = [j for j in perm if j in win]  # output order
        out_tile = [tiles[j] for j in out_win]
        # d split over the CPEs at its position in each order (cpe<i>: same pieces on both sides)
        tin = kb.alloc(in_tile, elem, tile.cpe_dist(win.index(d)), double=True, name="tin")
        needs_map = out_win != win
        tout = (kb.alloc(out_tile, elem, tile.cpe_dist(out_win.index(d)), double=True, name="tout")
                if needs_map else tin)
        ivs: list[Idx] = [0] * k
        loop_dims = [j for j in range(k) if tiles[j] < dims[j]]

        def body() -> None:
            kb.load(x, list(ivs), tiles, tin)
            if needs_map:
                kb.map(MapKind.TRANSPOSE, [tin], tout, perm=tuple(win.index(j) for j in out_win))
            kb.apply_fused(fused, tout)
            kb.store(tout, y, [ivs[j] for j in perm], [tiles[j] for j in perm])

        def level(n: int) -> None:
            if n == len(loop_dims):
                body()
                return
            j = loop_dims[n]
            with kb.loop(0, dims[j], tiles[j], name=f"i{j}") as iv:
                ivs[j] = iv
                level(n + 1)

        level(0)
        kb.finish(rewriter)
        self.replace(rewriter, op, [out_mem], fused)


# --------------------------------------------------------------------------------------------
# Window ops: pools, global average pool; axis ops: softmax, lrn
# --------------------------------------------------------------------------------------------


def pool_counts(size: int, k: int, s: int, pb: int, pe: int, out: int, include_pad: bool) -> np.ndarray:
    """Taps of each output position inside [0, size) (or [-pb, size+pe) with include_pad)
    along one dim: the avg_pool divisor is the product over the dims (reference semantics)."""
    pos = np.arange(out)[:, None] * s + np.arange(k)[None, :] - pb
    lo, hi = (-pb, size + pe) if include_pad else (0, size)
    return ((pos >= lo) & (pos < hi)).sum(axis=1)


def pool_problem(op: graph.MaxPoolOp | graph.AvgPoolOp) -> tuple[PoolShape, np.ndarray | None]:
    """The schedule problem of a 1-D / 2-D pool (planes N*C of h x w, 1 x L for 1-D) and, for an
    avg_pool whose divisor varies per output position, ``1 / count`` per position (ho, wo).
    ``ValueError`` for pools the lowering does not support."""
    xs, ys = shape_of(op.input), shape_of(op.result)
    nk = len(op.kernel_shape)
    if nk not in (1, 2):
        raise ValueError(f"{nk}-D pooling is not supported (1-D or 2-D)")
    if any(dl != 1 for dl in op.dilations):
        raise ValueError("dilated pooling is not supported")
    if nk == 1:
        kh, kw, sh, sw = 1, op.kernel_shape[0], 1, op.strides[0]
        pt, pl, pb, pr = 0, op.pads[0], 0, op.pads[1]
        H, W, Ho, Wo = 1, xs[2], 1, ys[2]
    else:
        (kh, kw), (sh, sw) = op.kernel_shape, op.strides
        pt, pl, pb, pr = op.pads
        H, W, Ho, Wo = xs[2], xs[3], ys[2], ys[3]
    eb = _elem_bytes(op.input.type.element_type)  # type: ignore[attr-defined]
    inv = None
    if isinstance(op, graph.AvgPoolOp):
        inc = op.count_include_pad
        counts = np.multiply.outer(pool_counts(H, kh, sh, pt, pb, Ho, inc), pool_counts(W, kw, sw, pl, pr, Wo, inc))
        if not np.all(counts == kh * kw):
            inv = (1.0 / counts).astype(np.float32 if eb == 4 else np.float64)
    return PoolShape(xs[0] * xs[1], H, W, Ho, Wo, kh, kw, sh, sw, pt, pl, eb, inv is not None), inv


class PoolPattern(GraphToTilePattern):
    """max_pool / avg_pool on (N, C, H, W) (or (N, C, L)) -> planes N*C split over the CPEs,
    ``tho`` output rows per tile; loads of whole input rows (``pad -inf`` / ``pad 0.0`` rows
    for the top/bottom pads and the ceil_mode tail: still one contiguous DMA per CPE), the
    column pads as the ``pads`` of ``tile.map max_pool|avg_pool`` (taps outside a row skipped)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (graph.MaxPoolOp, graph.AvgPoolOp)):
            return
        try:
            ps, inv = pool_problem(op)
        except ValueError as e:
            raise self.fail(op, str(e)) from None
        xs, ys = shape_of(op.input), shape_of(op.result)
        P, H, W, Ho, Wo, kh, kw, sh, sw, pt, pl = (ps.planes, ps.h, ps.w, ps.ho, ps.wo, ps.kh, ps.kw, ps.sh, ps.sw,
                                                   ps.pt, ps.pl)
        plan = plan_map_op(self, op, ps)
        assert isinstance(plan, PoolPlan)
        is_max = isinstance(op, graph.MaxPoolOp)
        t = op.input.type
        assert isinstance(t, TensorType)
        elem = t.element_type
        tp, tho, whole = plan.planes, plan.rows, plan.whole
        thi, Wt, map_pads, pr_m = ps.in_rows(tho), ps.row_width, ps.map_pads, ps.pr_map
        mpt, mpb = (pt, ps.pb_map) if whole else (0, 0)
        fused = absorb_elementwise_consumers(self.state, op.result)
        name = self.state.layer_name(op)
        mem = self.buffer(rewriter, op.input)
        out_mem = self.alloc_like(rewriter, op.result, name)
        inv_mem = self.state.new_global(rewriter, inv, f"{name}_inv_count").memref if inv is not None else None
        kb = KernelBuilder(self.state, name, op, algorithm="window", fused=fused,
                           shape=f"{_x(ys)} <- {_x(xs)} k{kh}x{kw} s{sh}x{sw}")
        x = kb.arg(self.view(rewriter, mem, (P, H, W)), "x")
        y = kb.arg(self.view(rewriter, out_mem, (P, Ho, Wo)), "y")
        ic = kb.arg(inv_mem, "inv_count") if inv_mem is not None else None
        tin = kb.alloc([tp, thi, Wt], elem, Dist.CPE, double=True, name="tin")
        tout = kb.alloc([tp, tho, Wo], elem, Dist.CPE, double=True, name="tout")
        tinv = kb.alloc([tho, Wo], elem, Dist.REP, double=True, name="tinv") if ic is not None else None
        pad = -math.inf if is_max else 0.0
        kind = MapKind.MAX_POOL if is_max else MapKind.AVG_POOL
        with kb.loop(0, P, tp, "p") as p:
            with kb.loop(0, Ho, tho, "h") as h:
                kb.load(x, [p, 0 if whole else kb.affine(h, sh, -pt), 0 if map_pads else -pl], [tp, thi, Wt], tin,
                        pad=pad)
                ins = [tin]
                if ic is not None and tinv is not None:
                    kb.load(ic, [h, 0], [tho, Wo], tinv, pad=1.0)
                    ins.append(tinv)
                extra = {"pads": (mpt, pl, mpb, pr_m)} if map_pads and (pl or pr_m or mpt or mpb) else {}
                kb.map(kind, ins, tout, kernel=(kh, kw), strides=(sh, sw), **extra)
                kb.apply_fused(fused, tout)
                kb.store(tout, y, [p, h, 0], [tp, tho, Wo])
        kb.finish(rewriter)
        self.replace(rewriter, op, [out_mem], fused)


class GlobalAvgPoolPattern(GraphToTilePattern):
    """``graph.global_avg_pool`` (N, C, *S) -> (P = N*C, HW) planes split over the CPEs,
    ``reduce_mean`` over HW (or ``reduce_sum`` partials + ``add`` + ``mul 1/HW`` when a plane
    does not fit in LDM)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GlobalAvgPoolOp, rewriter: PatternRewriter) -> None:
        xs = shape_of(op.input)
        P, HW = xs[0] * xs[1], math.prod(xs[2:])
        t = op.input.type
        assert isinstance(t, TensorType)
        elem = t.element_type
        plan = plan_map_op(self, op, reduce_shape(op))
        assert isinstance(plan, ReducePlan)
        tp = plan.planes
        fused = absorb_elementwise_consumers(self.state, op.result)
        name = self.state.layer_name(op)
        mem = self.buffer(rewriter, op.input)
        out_mem = self.alloc_like(rewriter, op.result, name)
        kb = KernelBuilder(self.state, name, op, algorithm="reduce", fused=fused,
                           shape=f"{_x(shape_of(op.result))} <- {_x(xs)}")
        x = kb.arg(self.view(rewriter, mem, (P, HW)), "x")
        y = kb.arg(self.view(rewriter, out_mem, (P, 1)), "y")
        if plan.chunk == HW:
            tin = kb.alloc([tp, HW], elem, Dist.CPE, double=True, name="tin")
            tout = kb.alloc([tp, 1], elem, Dist.CPE, double=True, name="tout")
            with kb.loop(0, P, tp, "p") as p:
                kb.load(x, [p, 0], [tp, HW], tin)
                kb.map(MapKind.REDUCE_MEAN, [tin], tout, axis=1)
                kb.apply_fused(fused, tout)
                kb.store(tout, y, [p, 0], [tp, 1])
        else:
            hc = plan.chunk
            tin = kb.alloc([tp, hc], elem, Dist.CPE, double=True, name="tin")
            part = kb.alloc([tp, 1], elem, Dist.CPE, name="part")
            acc = kb.alloc([tp, 1], elem, Dist.CPE, name="acc")
            tinv = kb.alloc([1, 1], elem, Dist.REP, name="inv")
            kb.map(MapKind.FILL, [], tinv, value=1.0 / HW)
            with kb.loop(0, P, tp, "p") as p:
                kb.map(MapKind.FILL, [], acc, value=0.0)
                with kb.loop(0, HW, hc, "hw") as c:
                    kb.load(x, [p, c], [tp, hc], tin, pad=0.0)
                    kb.map(MapKind.REDUCE_SUM, [tin], part, axis=1)
                    kb.map(MapKind.ADD, [acc, part], acc)
                kb.map(MapKind.MUL, [acc, tinv], acc)
                kb.apply_fused(fused, acc)
                kb.store(acc, y, [p, 0], [tp, 1])
        kb.finish(rewriter)
        self.replace(rewriter, op, [out_mem], fused)


class AxisPattern(GraphToTilePattern):
    """softmax (any axis) and lrn (channels) -> ``(outer, A, inner)`` views, tiled by
    :func:`plan_axis`: either rows of ``outer`` split over the CPEs with the whole axis A in each
    tile (``inner`` chunked if needed), or -- when ``outer`` is too small to feed 64 CPEs (batch
    1) -- ``inner`` split over the CPEs (``cpe2`` tiles: each CPE holds ``w`` columns of every
    channel, one strided DMA of A rows), for LRN with the channels in chunks of ``ca`` when
    the whole axis does not fit: the input tile then carries the window's ``size - 1``
    neighbouring channels (``pad 0.0`` outside the tensor, which equals ONNX's clipped square
    sum) and ``tile.map lrn`` runs in its halo form; or, for LRN on small planes, channel
    blocks over the CPEs (``cpe1`` output, ``cpe1+<size-1>`` input: each CPE's block plus the
    window's neighbours, whole H*W rows in one contiguous DMA)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, graph.SoftmaxOp):
            kind = MapKind.SOFTMAX
            params: dict[str, object] = {}
        elif isinstance(op, graph.LRNOp):
            kind = MapKind.LRN
            params = {"size": op.size, "alpha": op.alpha, "beta": op.beta, "bias": op.bias}
        else:
            return
        shape = shape_of(op.input)
        ax = _axis_of(op)
        outer, A, inner = math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1 :])
        t = op.input.type
        assert isinstance(t, TensorType)
        elem = t.element_type
        plan = plan_map_op(self, op, axis_shape(op))
        assert isinstance(plan, AxisPlan)
        fused = absorb_elementwise_consumers(self.state, op.result)
        name = self.state.layer_name(op)
        mem = self.buffer(rewriter, op.input)
        out_mem = self.alloc_like(rewriter, op.result, name)
        kb = KernelBuilder(self.state, name, op, algorithm="axis", fused=fused,
                           shape=f"{_x(shape)} axis {ax}")
        x = kb.arg(self.view(rewriter, mem, (outer, A, inner)), "x")
        y = kb.arg(self.view(rewriter, out_mem, (outer, A, inner)), "y")
        dist = tile.cpe_dist(plan.split)
        lo = 0
        if plan.halo:
            assert isinstance(op, graph.LRNOp)  # only LRN has a window halo
            lo = (op.size - 1) // 2
        in_dist = f"{dist}+{plan.halo}" if plan.split == 1 else dist  # channel blocks: halo rows
        tin = kb.alloc([plan.rows, plan.channels + plan.halo, plan.cols], elem, in_dist, double=True, name="tin")
        tout = kb.alloc([plan.rows, plan.channels, plan.cols], elem, dist, double=True, name="tout")
        with kb.loop(0, outer, plan.rows, "o") as o:
            with kb.loop(0, A, plan.channels, "c") as c:
                with kb.loop(0, inner, plan.cols, "i") as i:
                    kb.load(x, [o, kb.affine(c, 1, -lo), i], [plan.rows, plan.channels + plan.halo, plan.cols], tin,
                            pad=0.0)
                    kb.map(kind, [tin], tout, axis=1, **params)
                    kb.apply_fused(fused, tout)
                    kb.store(tout, y, [o, c, i], [plan.rows, plan.channels, plan.cols])
        kb.finish(rewriter)
        self.replace(rewriter, op, [out_mem], fused)


# --------------------------------------------------------------------------------------------
# Copy kernel (returned arguments / globals / views)
# --------------------------------------------------------------------------------------------


def emit_copy_kernel(state: LoweringState, src: SSAValue, insert: InsertPoint, name: str) -> SSAValue:
    """``memref.alloc`` + a copy kernel ``src -> new`` inserted at ``insert``; returns the new
    buffer (used for function results that are not distinct allocations)."""
    t = src.type
    assert isinstance(t, MemRefType)
    shape = shape_of(t)
    new = memref.AllocOp.get(t.get_element_type(), 128, list(shape))
    new.memref.name_hint = name
    Rewriter.insert_op(new, insert)
    n = max(1, math.prod(shape))
    src_v = reshape_view(src, (n,), insert)
    dst_v = reshape_view(new.memref, (n,), insert)
    kb = KernelBuilder(state, name, "memref.copy", algorithm="copy", shape=f"{_x(shape)} <- {_x(shape)}")
    emit_elementwise(state, kb, (n,), [Access(kb.arg(src_v, "x"), (True,))], Access(kb.arg(dst_v, "y"), (True,)), [])
    kb.finish(insert=insert)
    return new.memref


# --------------------------------------------------------------------------------------------
# Schedule problems (graph-schedule, taihu-tune; the patterns plan with the same functions)
# --------------------------------------------------------------------------------------------


def pad_shape(state: LoweringState, op: graph.PadOp) -> ElementwiseShape | None:
    """The problem of a constant-mode pad's shifted copy (None: everything cropped, no kernel)."""
    if math.prod(shape_of(op.result)) == 0:
        return None
    _, _, outs = canonicalize_pad(shape_of(op.input), op.pads)
    fused = absorb_elementwise_consumers(state, op.result)
    return elementwise_shape(outs, [(True,) * len(outs)], [], fused, _elem_bytes(op.input.type.element_type))  # type: ignore[attr-defined]


def transpose_shape(op: graph.TransposeOp | graph.LayoutTransformOp) -> TransposeShape | ElementwiseShape:
    """The problem of a transpose: a copy (:class:`ElementwiseShape`) when the canonical
    permutation is the identity."""
    dims, perm = canonicalize_perm(shape_of(op.input), op.perm)
    eb = _elem_bytes(op.input.type.element_type)  # type: ignore[attr-defined]
    if perm == tuple(range(len(dims))):
        return elementwise_shape(dims, [(True,) * len(dims)], [], (), eb)
    return TransposeShape(dims, perm, eb)


def reduce_shape(op: graph.GlobalAvgPoolOp) -> ReduceShape:
    xs = shape_of(op.input)
    return ReduceShape(xs[0] * xs[1], math.prod(xs[2:]), _elem_bytes(op.input.type.element_type))  # type: ignore[attr-defined]


def _axis_of(op: graph.SoftmaxOp | graph.LRNOp) -> int:
    return op.axis % len(shape_of(op.input)) if isinstance(op, graph.SoftmaxOp) else 1


def axis_shape(op: graph.SoftmaxOp | graph.LRNOp) -> AxisShape:
    shape = shape_of(op.input)
    ax = _axis_of(op)
    halo = op.size - 1 if isinstance(op, graph.LRNOp) else -1
    return AxisShape(math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1 :]),
                     _elem_bytes(op.input.type.element_type), halo)  # type: ignore[attr-defined]


def map_problem(state: LoweringState, op: Operation) -> MapShape | None:
    """The schedule problem of a memory-bound op (:mod:`taihu.backends.model.map_plans`), as its
    pattern plans it; None for ops without one (views, concat, ops of other families).
    ``ValueError`` for an op the lowering does not support."""
    for steps_of in (_unary_steps, _binary_steps, _sum_steps):
        parts = steps_of(op)
        if parts is not None:
            return _ew_problem(state, op, [shape_of(v) for v in parts[0]], parts[1])
    if isinstance(op, graph.BatchNormOp):
        c = _batch_norm_param_shape(op)
        return _ew_problem(state, op, [shape_of(op.input), c, c], _BATCH_NORM_STEPS)
    if isinstance(op, graph.PadOp):
        return pad_shape(state, op)
    if isinstance(op, (graph.TransposeOp, graph.LayoutTransformOp)):
        return transpose_shape(op)
    if isinstance(op, (graph.MaxPoolOp, graph.AvgPoolOp)):
        return pool_problem(op)[0]
    if isinstance(op, graph.GlobalAvgPoolOp):
        return reduce_shape(op)
    if isinstance(op, (graph.SoftmaxOp, graph.LRNOp)):
        return axis_shape(op)
    return None


def plan_map_op(p: GraphToTilePattern, op: Operation, shape: MapShape | None) -> MapPlan:
    """The plan of ``op``'s kernel: the one its ``tile.schedule`` names
    (:func:`~taihu.backends.model.map_plans.map_plan_for`), else the planner's pick, with the
    pass's LDM budget. An illegal annotation or a problem no tile fits is a diagnostic at ``op``."""
    assert shape is not None
    schedule = op_schedule(op)
    try:
        if schedule is not None:
            return map_plan_for(shape, p.state.ldm_budget, schedule)
        return map_model_plan(shape, p.state.ldm_budget)
    except ValueError as e:  # IllegalSchedule is a ValueError
        raise p.fail(op, f"illegal tile.schedule: {e}" if schedule is not None else str(e)) from e


def patterns(state: LoweringState) -> list[RewritePattern]:
    """The patterns of this module."""
    return [
        UnaryPattern(state),
        BinaryPattern(state),
        SumPattern(state),
        BatchNormPattern(state),
        ViewPattern(state),
        ConcatPattern(state),
        PadPattern(state),
        TransposePattern(state),
        PoolPattern(state),
        GlobalAvgPoolPattern(state),
        AxisPattern(state),
    ]
