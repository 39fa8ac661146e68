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
into its slice). The output shape is canonicalised: size-1 dims dropped and adjacent dims
merged when every input is either full or broadcast along both (e.g. ``(N,C,H,W) + (1,C,1,1)``
-> ``(N, C, H*W)`` with the bias ``(1, C, 1)``). The tile covers a suffix of the canonical
dims: the split dim ``s`` (``64*q`` rows, ``q`` per CPE) and the whole inner dims; the outer
dims are ``tile.for`` loops with tile 1. ``s`` minimises ``iterations * (512 + q*inner)``
(512 elements ~ one DMA start-up, 200 cycles, model §4); each CPE's piece is one contiguous
run of ``q*inner`` elements when the inputs are full. Broadcast operands are ``rep`` tiles
(or ``cpe`` when they vary along ``s``) loaded in the loop level they depend on.

Window ops: max_pool / avg_pool (planes N*C split over the CPEs, ``tho`` output rows per tile,
input rows loaded with ``pad -inf`` / ``pad 0.0`` for the pads and the ceil_mode tail; the
per-position divisor of avg_pool without ``count_include_pad`` is a constant ``inv_count``
operand), global_avg_pool (``reduce_mean``; ``reduce_sum`` partials when H*W is too large),
softmax (``(outer, A, inner)`` view, rows split), lrn (``(N, C, H*W)``, N split).

Data movement: transpose / layout_transform (a tile over dims that follow the split dim in
both orders, ``tile.map transpose`` in LDM), views (reshape, flatten, unsqueeze, dropout:
``memref.collapse_shape``/``expand_shape``, no kernel).

Every producer kernel absorbs its single-use trailing element-wise consumers
(:func:`taihu.passes.conversion.graph_to_tile.common.absorb_elementwise_consumers`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from taihu.dialects import graph
from taihu.dialects.mapkind import MapKind
from taihu.dialects.tile import Dist
from taihu.passes.conversion.graph_to_tile.common import (
    FusedMap,
    GraphToTilePattern,
    Idx,
    KernelBuilder,
    LoweringState,
    absorb_elementwise_consumers,
    constant_array,
    reshape_view,
    shape_of,
    unary_map_of,
)

__all__ = ["emit_copy_kernel", "emit_elementwise", "patterns", "Access", "Step"]

N_CPE = 64
#: per-iteration overhead of a tile, in element-equivalents (a DMA start-up is 200 cycles,
#: model §4 / 004 L460 ff.; ~2 B/cycle per CPE at full bandwidth)
_TILE_OVERHEAD = 512


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


def _rewrite_all_broadcast(steps: list[Step], inputs: Sequence[Access]) -> list[Step]:
    """``tile.map`` needs one input with the output shape; when the first binary step has
    none (``(A,1) + (1,B)``), start from ``fill`` with the identity and fold in the inputs."""
    if not steps:
        return steps
    first = steps[0]
    def is_full(a: int | str) -> bool:
        return a == "acc" or all(inputs[a].full)  # type: ignore[index]
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


@dataclass
class _Plan:
    s: int
    tiles: tuple[int, ...]  # tile size per dim (1 for dims < s)
    q: int


def _local_elems(full: Sequence[bool], tiles: Sequence[int], s: int) -> int:
    """Per-CPE elements of an operand's tile (cpe when full along s, else rep)."""
    shp = [t if f else 1 for t, f in zip(tiles[s:], full[s:])]
    if full[s]:
        shp[0] = math.ceil(shp[0] / N_CPE)
    return math.prod(shp)


def plan_elementwise(D: Sequence[int], operands: Sequence[Sequence[bool]], n_out_bufs: int,
                     elem_bytes: int, budget: int) -> _Plan:
    """Choose the split dim ``s`` and the tile (module docstring). ``operands``: the
    full/broadcast pattern of every LDM buffer (double-buffered) except the ``n_out_bufs``
    full-shape output buffers."""
    k = len(D)
    best: tuple[float, _Plan] | None = None
    for s in range(k):
        inner = math.prod(D[s + 1 :])
        # bytes per unit of q: full-along-s buffers scale with q, rep buffers do not
        per_q = 0
        fixed = 0
        for pat in operands:
            sub = math.prod(d if f else 1 for d, f in zip(D[s + 1 :], pat[s + 1 :]))
            if pat[s]:
                per_q += sub
            else:
                fixed += sub
        per_q += n_out_bufs * inner
        per_q *= 2 * elem_bytes  # double buffers
        fixed *= 2 * elem_bytes
        if per_q == 0:
            continue
        q_max = (budget - fixed) // per_q
        if q_max < 1:
            continue
        q_need = math.ceil(D[s] / N_CPE)
        if q_max >= q_need:
            q = q_need
            ts = D[s]
        else:
            n = math.ceil(q_need / q_max)
            q = math.ceil(q_need / n)
            if s == k - 1 and q >= 32:
                q = min(q_max, math.ceil(q / 32) * 32)  # 128-B aligned per-CPE runs (R1)
            ts = N_CPE * q
        iters = math.prod(D[:s]) * math.ceil(D[s] / ts)
        cost = iters * (_TILE_OVERHEAD + q * inner)
        plan = _Plan(s, tuple([1] * s + [ts] + list(D[s + 1 :])), q)
        if best is None or cost < best[0]:
            best = (cost, plan)
    if best is None:
        raise ValueError(f"no tile of {list(D)} fits {budget} B of LDM")
    return best[1]


def emit_elementwise(
    state: LoweringState,
    kb: KernelBuilder,
    D: Sequence[int],
    inputs: Sequence[Access],
    out: Access,
    steps: Sequence[Step],
    fused: Sequence[FusedMap] = (),
) -> None:
    """Emit the tile loops of an element-wise kernel into ``kb``.

    ``D``: iteration space (rank k >= 1); ``inputs``: the operands (:class:`Access`);
    ``out``: the output access (``full`` all true); ``steps``: the computation into the output
    tile (``acc``); an empty step list copies input 0. ``fused`` maps run in place last.
    """
    k = len(D)
    assert k >= 1 and all(len(a.full) == k for a in (*inputs, out))
    steps = _rewrite_all_broadcast(list(steps), inputs)
    mt = out.mem.type
    assert isinstance(mt, MemRefType)
    elem = mt.get_element_type()
    eb = _elem_bytes(elem)
    # the accumulator aliases a full input when that input is not read after the first step
    later = {a for st in steps[1:] for a in st.args if isinstance(a, int)}
    acc_in: int | None = None
    if not steps:
        acc_in = 0
    elif steps[0].kind != MapKind.FILL:
        for a in steps[0].args:
            if isinstance(a, int) and all(inputs[a].full) and a not in later:
                acc_in = a
                break
    # distinct operand buffers (an input used twice is loaded once)
    used = sorted({a for st in steps for a in st.args if isinstance(a, int)} | ({acc_in} if acc_in is not None else set()))
    pats = [inputs[i].full for i in used]
    plan = plan_elementwise(D, pats, 0 if acc_in is not None else 1, eb, state.ldm_budget)
    s, tiles = plan.s, plan.tiles

    def tile_shape(full: Sequence[bool]) -> list[int]:
        return [t if f else 1 for t, f in zip(tiles[s:], full[s:])]

    bufs: dict[int, SSAValue] = {}
    for i in used:
        a = inputs[i]
        dist = Dist.CPE if a.full[s] else Dist.REP
        bufs[i] = kb.alloc(tile_shape(a.full), elem, dist, double=True, name=f"in{i}" if i != acc_in else "t")
    acc = bufs[acc_in] if acc_in is not None else kb.alloc(tile_shape(out.full), elem, Dist.CPE, double=True, name="t")

    # the loop level each input's window depends on (-1: none -> loaded once before the loops)
    def depth(a: Access) -> int:
        dims = [j for j in range(s + 1) if a.full[j] and D[j] > tiles[j]]
        return max(dims) if dims else -1

    ivs: list[Idx] = [0] * k

    def window(a: Access) -> tuple[list[Idx], list[int]]:
        offs: list[Idx] = []
        sizes: list[int] = []
        for j in range(k):
            if a.full[j]:
                offs.append(kb.affine(ivs[j], 1, a.shift[j]) if j <= s else a.shift[j])
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
            if depth(inputs[i]) == s:
                load(i)
        for st in steps:
            ins = [acc if a == "acc" else bufs[a] for a in st.args]  # type: ignore[index]
            kb.map(st.kind, ins, acc, **st.params)
        kb.apply_fused(fused, acc)
        offs, sizes = window(out)
        kb.store(acc, out.mem, offs, sizes)

    def level(j: int) -> None:
        if j > s:
            body()
            return
        with kb.loop(0, D[j], tiles[j], name=f"i{j}") as iv:
            ivs[j] = iv
            for i in used:
                if depth(inputs[i]) == j and j < s:
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


class _EwPattern(GraphToTilePattern):
    """Shared lowering of element-wise graph ops through :func:`emit_elementwise`."""

    def lower_ew(self, rewriter: PatternRewriter, op: Operation, operands: Sequence[SSAValue],
                 steps: Sequence[Step], *, const_arrays: Sequence[np.ndarray | None] = (),
                 algorithm: str = "map") -> None:
        out_v = op.results[0]
        out_shape = shape_of(out_v)
        fused = absorb_elementwise_consumers(self.state, out_v)
        name = self.state.layer_name(op)
        in_shapes = [shape_of(v) for v in operands]
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
        emit_elementwise(self.state, kb, D, accs, out_acc, steps, fused)
        kb.finish(rewriter)
        self.replace(rewriter, op, [out_mem], fused)


class UnaryPattern(_EwPattern):
    """relu, sigmoid, tanh, clip, leaky_relu (+ absorbed consumers) -> one ``map`` kernel."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        m = unary_map_of(op)
        if m is None or isinstance(op, graph.DropoutOp):
            return
        kind, params = m
        self.lower_ew(rewriter, op, [op.operands[0]], [Step(kind, (0,), params)])


_BINARY = {graph.AddOp: MapKind.ADD, graph.SubOp: MapKind.SUB, graph.MulOp: MapKind.MUL, graph.DivOp: MapKind.DIV}


class BinaryPattern(_EwPattern):
    """add/sub/mul/div with numpy broadcasting -> one ``map`` kernel."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        kind = _BINARY.get(type(op))  # type: ignore[arg-type]
        if kind is None:
            return
        lhs, rhs = op.operands
        if lhs is rhs:
            self.lower_ew(rewriter, op, [lhs], [Step(kind, (0, 0))])
        else:
            self.lower_ew(rewriter, op, [lhs, rhs], [Step(kind, (0, 1))])


class SumPattern(_EwPattern):
    """``graph.sum`` of n inputs -> a chain of in-place ``add`` maps in one kernel."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SumOp, rewriter: PatternRewriter) -> None:
        vals = list(op.inputs)
        uniq: list[SSAValue] = []
        idx = []
        for v in vals:
            if v not in uniq:
                uniq.append(v)
            idx.append(uniq.index(v))
        if len(idx) == 1:
            steps = [Step(MapKind.COPY, (0,))]
        else:
            steps = [Step(MapKind.ADD, (idx[0], idx[1]))] + [Step(MapKind.ADD, ("acc", i)) for i in idx[2:]]
        self.lower_ew(rewriter, op, uniq, steps)


class BatchNormPattern(_EwPattern):
    """Unfolded inference batch_norm -> ``affine`` with compile-time per-channel scale/shift
    (constant parameters required: the tile level has no square root)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        params = [constant_array(v) for v in (op.scale, op.bias, op.mean, op.var)]
        if any(p is None for p in params):
            raise self.fail(op, "scale, bias, mean and var must be graph.constant (run graph-fold-constants)")
        gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)  # type: ignore[arg-type]
        a = gamma / np.sqrt(var + float(op.epsilon))
        shift = beta - mean * a
        xs = shape_of(op.input)
        t = op.input.type
        assert isinstance(t, TensorType)
        dt = np.float32 if t.element_type.bitwidth == 32 else np.float64  # type: ignore[attr-defined]
        cshape = (xs[1],) + (1,) * (len(xs) - 2)
        name = self.state.layer_name(op)
        g_scale = self.state.new_global(rewriter, a.astype(dt).reshape(cshape), f"{name}_scale")
        g_shift = self.state.new_global(rewriter, shift.astype(dt).reshape(cshape), f"{name}_shift")
        from xdsl.dialects import bufferization

        ts = [bufferization.ToTensorOp(g.memref, restrict=True) for g in (g_scale, g_shift)]
        for tt in ts:
            rewriter.insert(tt)
        self.lower_ew(rewriter, op, [op.input, ts[0].tensor, ts[1].tensor], [Step(MapKind.AFFINE, (0, 1, 2))])


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
    from xdsl.rewriter import Rewriter

    Rewriter.insert_op(new, insert)
    n = max(1, math.prod(shape))
    src_v = reshape_view(src, (n,), insert)
    dst_v = reshape_view(new.memref, (n,), insert)
    kb = KernelBuilder(state, name, _FakeOp("memref.copy"), algorithm="copy", shape=f"{_x(shape)} <- {_x(shape)}")
    emit_elementwise(state, kb, (n,), [Access(kb.arg(src_v, "x"), (True,))], Access(kb.arg(dst_v, "y"), (True,)), [])
    kb.finish(insert=insert)
    return new.memref


class _FakeOp:
    """Stand-in for the graph op of kernels that have none (only ``name`` is read)."""

    def __init__(self, name: str):
        self.name = name


def patterns(state: LoweringState) -> list[RewritePattern]:
    """The patterns of this module."""
    return [
        UnaryPattern(state),
        BinaryPattern(state),
        SumPattern(state),
        BatchNormPattern(state),
        ViewPattern(state),
    ]
