"""Bufferization framework of ``convert-graph-to-tile`` (shared by every lowering pattern).

A pattern lowers one ``graph`` op (value semantics on ``tensor``) to buffer semantics:

1. operands: :meth:`GraphToTilePattern.buffer` gives the main-memory ``memref`` of a tensor
   operand (a ``bufferization.to_buffer``, or directly the memref when the tensor is a
   ``bufferization.to_tensor`` of one);
2. outputs: :meth:`GraphToTilePattern.alloc` creates ``memref.alloc() {alignment = 128}``
   (128-B aligned allocations, 004 L865, algorithms.md §A0 R7, §F item 2);
3. compute: a :class:`KernelBuilder` assembles one ``tile.kernel`` (name, bound memref
   arguments, ``tile.alloc``/``tile.for``/``tile.move``/``tile.map`` ..., the discardable
   attributes ``taihu.layer``/``taihu.op``/``taihu.algorithm``/``taihu.shape`` of the lowering
   contract) and :meth:`KernelBuilder.finish` inserts it before the matched op;
4. results: :meth:`GraphToTilePattern.replace` replaces the op's results (or those of the
   element-wise consumers it absorbed, :func:`absorb_elementwise_consumers`) by
   ``bufferization.to_tensor`` of the output buffers and erases the op(s).

After the patterns the pass folds ``to_buffer(to_tensor(m))`` into ``m``, turns the remaining
``graph.constant`` ops into ``memref.global`` + ``memref.get_global`` (:func:`constant_to_global`)
and converts the function signatures, so no ``tensor`` value is left.

Constants: ``memref.global`` of xDSL 0.74 only accepts ``dense<...>`` initial values, so a
constant held in a ``dense_resource`` blob becomes a global with ``initial_value`` = unit (no
inline copy of the bytes) and the discardable attribute ``taihu.initial_value =
dense_resource<key> : tensor<...>``; :func:`global_initial_value` returns either form.

Sizes are in elements unless a name ends in ``_bytes``. The LDM budget per CPE is the machine's
``ldm_user_bytes`` (57 344 B [param], 64 KB LDM per CPE: 004 L460) unless the pass option
``ldm-budget`` overrides it. Errors: ``PassFailedException`` naming the graph op and the reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, bufferization, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects import graph
from taihu.dialects import tile
from taihu.dialects.graph_flops import useful_flops
from taihu.dialects.mapkind import MapKind
from taihu.dialects.resources import declare_blob, element_dtype
from taihu.dialects.target import machine_of
from taihu.target.machine import Machine

__all__ = [
    "ALIGNMENT",
    "FusedMap",
    "GraphToTilePattern",
    "Idx",
    "KernelBuilder",
    "LoweringState",
    "absorb_elementwise_consumers",
    "constant_array",
    "constant_to_global",
    "fused_ldm_bytes",
    "global_initial_value",
    "memref_type",
    "reshape_view",
    "sanitize",
    "shape_of",
]

#: main-memory allocation alignment in bytes (004 L865: 128-B aligned DMA starts; R7)
ALIGNMENT = 128

#: an index operand inside a kernel: a Python int (folded) or an ``index`` SSA value
Idx = int | SSAValue

# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------


def sanitize(name: str) -> str:
    """Kernel/global name: characters outside [A-Za-z0-9_.] become ``_`` (never empty)."""
    s = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    return s or "_"


def op_short_name(op: Operation) -> str:
    """``graph.max_pool`` -> ``max_pool``."""
    return op.name.split(".", 1)[-1]


def shape_of(v: SSAValue | Attribute) -> tuple[int, ...]:
    """Static shape of a tensor/memref value or type."""
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, (TensorType, MemRefType)), t
    return tuple(int(d) for d in t.get_shape())


def memref_type(t: TensorType | MemRefType, shape: Sequence[int] | None = None) -> MemRefType:
    """Identity-layout memref with ``t``'s element type (and ``shape`` if given)."""
    return MemRefType(t.get_element_type(), list(shape_of(t) if shape is None else shape))


# --------------------------------------------------------------------------------------------
# Pass-wide state
# --------------------------------------------------------------------------------------------


@dataclass
class LoweringState:
    """State shared by all patterns of one pass run.

    ``machine``: the module's target (every plan is made for it); ``options``: the pass options
    (``conv_algorithm``, ``fuse``, ``ldm_budget`` ...) as a dict; ``ldm_budget``: LDM bytes per
    CPE a kernel may allocate (double buffers counted twice).
    Kernel names are unique per module (suffix ``_1``, ``_2``...); globals get unique symbols.
    """

    module: ModuleOp
    machine: Machine
    ldm_budget: int
    options: dict[str, object] = field(default_factory=dict)
    kernel_names: set[str] = field(default_factory=set)
    op_counters: dict[str, int] = field(default_factory=dict)
    symbols: set[str] = field(default_factory=set)
    #: graph ops whose useful flops a built kernel carries already (KernelBuilder.build)
    flops_counted: set[Operation] = field(default_factory=set)

    def __post_init__(self) -> None:
        for op in self.module.walk():
            sym = op.properties.get("sym_name")
            if isinstance(sym, StringAttr):
                self.symbols.add(sym.data)

    @property
    def fuse(self) -> bool:
        return bool(self.options.get("fuse", True))

    # -- names ---------------------------------------------------------------------------

    def layer_name(self, op: Operation) -> str:
        """NAME of a graph op: its first result's name hint (sanitised) or ``<opname>_<n>``.

        Stable per op (cached in the discardable attribute ``taihu.layer`` of the graph op)."""
        cached = op.attributes.get("taihu.layer")
        if isinstance(cached, StringAttr):
            return cached.data
        hint = op.results[0].name_hint if op.results else None
        if hint:
            name = sanitize(hint)
        else:
            short = op_short_name(op)
            n = self.op_counters.get(short, 0)
            self.op_counters[short] = n + 1
            name = f"{short}_{n}"
        op.attributes["taihu.layer"] = StringAttr(name)
        return name

    def unique_kernel_name(self, name: str) -> str:
        """``name``, or ``name_1``, ``name_2``... if already used in this module."""
        out, i = name, 0
        while out in self.kernel_names:
            i += 1
            out = f"{name}_{i}"
        self.kernel_names.add(out)
        return out

    def unique_symbol(self, name: str) -> str:
        out, i = sanitize(name), 0
        base = out
        while out in self.symbols:
            i += 1
            out = f"{base}_{i}"
        self.symbols.add(out)
        return out

    # -- globals -------------------------------------------------------------------------

    def new_global(
        self, rewriter: PatternRewriter | Rewriter | None, array: np.ndarray, name_hint: str,
        insert_before: Operation | None = None,
    ) -> memref.GetGlobalOp:
        """A constant ``memref.global`` holding ``array`` (f32/f64) and a ``memref.get_global``
        of it, inserted before ``insert_before`` (default: the rewriter's insertion point).

        Arrays of <= 16 elements or splats are inline ``dense``; larger ones live in a
        ``dense_resource`` blob (``taihu.initial_value``, see the module docstring)."""
        arr = np.ascontiguousarray(array)
        if arr.dtype not in (np.float32, np.float64):
            raise ValueError(f"new_global: only f32/f64 constants, got {arr.dtype}")
        elem = Float32Type() if arr.dtype == np.float32 else Float64Type()
        ttype = TensorType(elem, list(arr.shape))
        flat = arr.reshape(-1)
        if flat.size <= 16:
            value: Attribute = DenseIntOrFPElementsAttr.from_list(ttype, [float(x) for x in flat])
        elif flat[1] == flat[0] and bool(np.all(flat == flat[0])):  # a splat: one value
            value = DenseIntOrFPElementsAttr.from_list(ttype, [float(flat[0])])
        else:
            value = DenseResourceAttr.from_params(declare_blob(sanitize(name_hint), arr), ttype)
        sym = self.unique_symbol(name_hint)
        g = _make_global(sym, memref_type(ttype), value)
        self.module.body.block.insert_op_before(g, _first_func(self.module))
        get = memref.GetGlobalOp(sym, memref_type(ttype))
        get.memref.name_hint = sym
        if insert_before is not None:
            Rewriter.insert_op(get, InsertPoint.before(insert_before))
        else:
            assert isinstance(rewriter, PatternRewriter)  # the one with an insertion point
            rewriter.insert(get)
        return get


#: LDM bytes per CPE the tiling planners leave free (at most 1/16 of the budget) for what
#: tile-to-loop adds per kernel: every LDM buffer rounded up to 32 B (x2 when double-buffered)
#: and a 32-B DMA scratch buffer per element type
LDM_RESERVE = 512


def lowering_state(module: ModuleOp, *, conv_algorithm: str = "auto", fuse: bool = True,
                   ldm_budget: int = 0) -> LoweringState:
    """The :class:`LoweringState` ``convert-graph-to-tile`` (and ``graph-schedule``) plan with:
    the module's machine (:func:`~taihu.dialects.target.machine_of`; ``MachineConfigError`` if
    its description is invalid) and its ``ldm_user_bytes`` (or ``ldm_budget`` bytes) minus
    :data:`LDM_RESERVE`."""
    machine = machine_of(module)
    budget = ldm_budget or machine.ldm_user_bytes
    budget -= min(LDM_RESERVE, budget // 16)
    return LoweringState(module, machine, budget,
                         {"conv_algorithm": conv_algorithm, "fuse": fuse, "ldm_budget": budget})


def _first_func(module: ModuleOp) -> Operation:
    for op in module.body.block.ops:
        if not isinstance(op, memref.GlobalOp):
            return op
    raise AssertionError("module without functions")


def _make_global(sym: str, mtype: MemRefType, value: Attribute) -> memref.GlobalOp:
    if isinstance(value, DenseResourceAttr):
        g = memref.GlobalOp.get(StringAttr(sym), mtype, UnitAttr(), constant=UnitAttr(), alignment=ALIGNMENT)
        g.attributes["taihu.initial_value"] = value
    else:
        g = memref.GlobalOp.get(StringAttr(sym), mtype, value, constant=UnitAttr(), alignment=ALIGNMENT)
    return g


def global_initial_value(g: memref.GlobalOp) -> DenseIntOrFPElementsAttr | DenseResourceAttr | None:
    """Initial value of a global made by this pass: the inline ``dense`` or the
    ``taihu.initial_value`` ``dense_resource``; None for an uninitialised global."""
    if isinstance(g.initial_value, DenseIntOrFPElementsAttr):
        return g.initial_value
    v = g.attributes.get("taihu.initial_value")
    return v if isinstance(v, (DenseIntOrFPElementsAttr, DenseResourceAttr)) else None


def constant_array(value: SSAValue) -> np.ndarray | None:
    """numpy value of a tensor defined by a ``graph.constant``, else None."""
    if isinstance(value, OpResult) and isinstance(value.op, graph.ConstantOp):
        return graph.constant_value(value.op)
    return None


def constant_to_global(state: LoweringState, op: graph.ConstantOp) -> None:
    """Replace a ``graph.constant`` by ``memref.global`` + ``get_global`` + ``to_tensor``
    (the blob of a ``dense_resource`` is shared, not copied). Non-float constants (shape
    tensors) that are still used raise ``PassFailedException``."""
    t = op.result.type
    assert isinstance(t, TensorType)
    if not isinstance(t.element_type, (Float32Type, Float64Type)):
        raise PassFailedException(
            f"convert-graph-to-tile: graph.constant of type {t} is still used; only f32/f64 constants lower to memory"
        )
    hint = op.result.name_hint
    if hint is None and isinstance(op.value, DenseResourceAttr):
        hint = op.value.resource_handle.data
    sym = state.unique_symbol(hint or "cst")
    mtype = memref_type(t)
    state.module.body.block.insert_op_before(_make_global(sym, mtype, op.value), _first_func(state.module))
    get = memref.GetGlobalOp(sym, mtype)
    get.memref.name_hint = sym
    tt = bufferization.ToTensorOp(get.memref, restrict=True)
    Rewriter.insert_op([get, tt], InsertPoint.before(op))
    op.result.replace_all_uses_with(tt.tensor)
    Rewriter.erase_op(op)


# --------------------------------------------------------------------------------------------
# Views
# --------------------------------------------------------------------------------------------


def reshape_view(v: SSAValue, shape: Sequence[int], insert: InsertPoint) -> SSAValue:
    """A no-copy view of the contiguous memref ``v`` with ``shape`` (same element count):
    ``memref.collapse_shape`` to 1-D then ``memref.expand_shape`` to ``shape`` (either one
    omitted when not needed; rank-0 sources/targets use an empty reassociation). Returns ``v``
    when the shape is unchanged."""
    src = shape_of(v)
    shape = tuple(int(d) for d in shape)
    if src == shape:
        return v
    if math.prod(src) != math.prod(shape):
        raise ValueError(f"reshape_view: {src} and {shape} have different element counts")
    t = v.type
    assert isinstance(t, MemRefType)
    elem = t.get_element_type()
    ops: list[Operation] = []
    cur, cur_shape = v, src
    if len(shape) == 0 or (len(src) > 1 and len(shape) != 0):
        target = () if len(shape) == 0 else (math.prod(src),)
        groups = [] if len(target) == 0 else [list(range(len(src)))]
        c = memref.CollapseShapeOp.build(
            operands=[cur], result_types=[MemRefType(elem, list(target))],
            properties={"reassociation": _reassoc(groups)},
        )
        ops.append(c)
        cur, cur_shape = c.results[0], target
    if cur_shape != shape:
        groups = [] if len(cur_shape) == 0 else [list(range(len(shape)))]
        e = memref.ExpandShapeOp.build(
            operands=[cur, []], result_types=[MemRefType(elem, list(shape))],
            properties={"reassociation": _reassoc(groups),
                        "static_output_shape": DenseArrayBase.from_list(i64, list(shape))},
        )
        ops.append(e)
        cur = e.results[0]
    Rewriter.insert_op(ops, insert)
    return cur


def _reassoc(groups: list[list[int]]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])


# --------------------------------------------------------------------------------------------
# Fusion of trailing element-wise ops
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FusedMap:
    """One element-wise map applied in place to a producer's output tile while it is still in
    LDM (``tile.map KIND ins(t) out(t) {params}``), standing for graph op ``op``.

    A *residual* map (``operand`` set: ``add`` of the output and another tensor of the same
    shape, e.g. ResNet's shortcut sum) also reads ``operand``'s window of the stored tile:
    :meth:`GraphToTilePattern.bind_fused` binds its memref as a kernel argument (``mem``) and
    :meth:`KernelBuilder.store_fused` loads it and adds it before the store."""

    kind: MapKind
    params: dict[str, object]
    op: Operation
    operand: SSAValue | None = None  # residual: the other (graph-level tensor) operand
    mem: SSAValue | None = None  # residual: its kernel argument, shaped like the output argument

    @property
    def is_residual(self) -> bool:
        return self.operand is not None


def fused_ldm_bytes(fused: Sequence[FusedMap], tile_bytes: int) -> int:
    """Extra LDM bytes per CPE :meth:`KernelBuilder.store_fused` allocates for ``fused`` when
    the stored tile takes ``tile_bytes`` per CPE: a double-buffered tile like it per residual
    map (tile plans must leave room for it)."""
    return sum(2 * tile_bytes for f in fused if f.is_residual)


def unary_map_of(op: Operation) -> tuple[MapKind, dict[str, object]] | None:
    """The in-place map kind + parameters computing a unary element-wise graph op, or None."""
    if isinstance(op, graph.ReluOp):
        return MapKind.RELU, {}
    if isinstance(op, graph.SigmoidOp):
        return MapKind.SIGMOID, {}
    if isinstance(op, graph.TanhOp):
        return MapKind.TANH, {}
    if isinstance(op, graph.SqrtOp):
        return MapKind.SQRT, {}
    if isinstance(op, graph.ErfOp):
        return MapKind.ERF, {}
    if isinstance(op, graph.LeakyReluOp):
        return MapKind.LEAKY_RELU, {"alpha": op.alpha}
    if isinstance(op, graph.ClipOp):
        p: dict[str, object] = {}
        if math.isfinite(op.min):
            p["lo"] = op.min
        if math.isfinite(op.max):
            p["hi"] = op.max
        return MapKind.CLIP, p
    if isinstance(op, graph.DropoutOp):
        return MapKind.COPY, {}
    return None


def _residual_operand(user: Operation, cur: SSAValue, producer: Operation) -> SSAValue | None:
    """The other operand of a binary add / 2-input sum ``user`` of ``cur`` when it can be read
    by ``producer``'s kernel: same shape as ``cur`` (no broadcasting), not ``cur`` itself, and
    computed before ``producer`` (a function argument or an op earlier in the same block)."""
    if isinstance(user, graph.AddOp):
        ins = [user.lhs, user.rhs]
    elif isinstance(user, graph.SumOp) and len(user.inputs) == 2:
        ins = list(user.inputs)
    else:
        return None
    others = [v for v in ins if v is not cur]
    if len(others) != 1 or shape_of(others[0]) != shape_of(cur) or others[0].type != cur.type:
        return None
    o = others[0]
    block = producer.parent
    if block is None:
        return None
    if isinstance(o, OpResult):
        if o.op.parent is not block or block.get_operation_index(o.op) >= block.get_operation_index(producer):
            return None
    elif not isinstance(o, BlockArgument) or o.block is not block:
        return None
    return o


def absorb_elementwise_consumers(state: LoweringState, value: SSAValue, residual: bool = False) -> list[FusedMap]:
    """The chain of single-use unary element-wise graph ops (relu, leaky_relu, clip, sigmoid,
    tanh; dropout = identity) that consume ``value``; a producer pattern applies them to its
    output tile in LDM (before storing it) and passes them to :meth:`GraphToTilePattern.replace`,
    which replaces the last one's result and erases them. Empty when fusion is disabled (pass
    option ``fuse=false``) or the value has several uses.

    ``residual=True`` (producers that store through :meth:`KernelBuilder.store_fused`): the
    chain may also hold ONE ``add`` / 2-input ``sum`` of the value and a same-shape tensor
    computed before the producer (:func:`_residual_operand`; ResNet's shortcut), as a residual
    :class:`FusedMap`."""
    out: list[FusedMap] = []
    if not state.fuse:
        return out
    producer = value.owner if isinstance(value, OpResult) else None
    cur = value
    while True:
        uses = list(cur.uses)
        if len(uses) != 1:
            return out
        user = uses[0].operation
        if user.parent is None or user.parent is not _owner_block(value):
            return out
        m = unary_map_of(user)
        if m is not None:
            out.append(FusedMap(m[0], m[1], user))
        elif residual and producer is not None and not any(f.is_residual for f in out):
            o = _residual_operand(user, cur, producer)
            if o is None:
                return out
            out.append(FusedMap(MapKind.ADD, {}, user, operand=o))
        else:
            return out
        cur = user.results[0]


def _owner_block(v: SSAValue) -> Block | None:
    return v.op.parent if isinstance(v, OpResult) else None


# --------------------------------------------------------------------------------------------
# Kernel builder
# --------------------------------------------------------------------------------------------


class KernelBuilder:
    """Builds one ``tile.kernel``.

    >>> kb = KernelBuilder(state, "relu1", op, algorithm="map", shape="64x56x56 <- 64x56x56")
    >>> x, y = kb.arg(x_mem, "x"), kb.arg(y_mem, "y")      # bound memref arguments
    >>> t = kb.alloc([4096], f32, "cpe", double=True, name="t")
    >>> with kb.loop(0, n, 4096, "i") as i:                   # tile.for (skipped if 1 trip)
    ...     kb.load(x, [i], [4096], t, pad=0.0)               # pad/clip only when needed
    ...     kb.map(MapKind.RELU, [t], t)
    ...     kb.store(t, y, [i], [4096])
    >>> kb.finish(rewriter)                                    # inserts before the matched op

    ``taihu.layer`` = ``layer`` (default: the kernel name before uniquing), ``taihu.op`` = the
    graph op name (``op`` is the graph op, or a name for kernels without one), ``taihu.algorithm``, ``taihu.shape``; ``fused`` adds ``taihu.fused`` (the
    absorbed ops' names). Index operands are :data:`Idx` (Python ints are materialised as
    ``arith.constant`` at the top of the body, once per value).

    ``taihu.useful_flops`` (i64, set by :meth:`build`): the useful flops
    (:func:`~taihu.dialects.graph_flops.useful_flops`) of ``op`` and of the ``fused`` ops that
    no kernel built before carries, so that a layer lowered as several kernels (im2col + GEMM,
    Winograd input/GEMM/output, relayouts) counts them once (the simulator's report spreads a
    layer's count over its kernels); left out when one of them has no flop rule.
    """

    def __init__(
        self,
        state: LoweringState,
        name: str,
        op: Operation | str,
        *,
        algorithm: str,
        shape: str,
        layer: str | None = None,
        fused: Sequence[FusedMap] = (),
    ):
        self.state = state
        self.name = state.unique_kernel_name(name)
        self.attrs: dict[str, Attribute] = {
            "taihu.layer": StringAttr(layer or name),
            "taihu.op": StringAttr(op if isinstance(op, str) else op.name),
            "taihu.algorithm": StringAttr(algorithm),
            "taihu.shape": StringAttr(shape),
        }
        if fused:
            self.attrs["taihu.fused"] = ArrayAttr([StringAttr(f.op.name) for f in fused])
        self._flops_ops = [o for o in (op, *(f.op for f in fused)) if isinstance(o, Operation)]
        self.operands: list[SSAValue] = []
        self.block = Block()
        self._args: dict[int, SSAValue] = {}
        self._consts: dict[int, SSAValue] = {}
        self._last_const: Operation | None = None
        self._last_alloc: Operation | None = None
        self._residual_tiles: dict[tuple, SSAValue] = {}
        self._prefetched: set[SSAValue] = set()
        self.builder = Builder(InsertPoint.at_end(self.block))

    # -- arguments and buffers -----------------------------------------------------------

    def arg(self, mem: SSAValue, name: str | None = None) -> SSAValue:
        """Bind main-memory memref ``mem`` as a kernel argument (once per value)."""
        key = id(mem)
        if key in self._args:
            return self._args[key]
        t = mem.type
        if not isinstance(t, MemRefType):
            raise TypeError(f"kernel argument must be a memref, got {t}")
        a = self.block.insert_arg(t, len(self.block.args))
        if name:
            a.name_hint = name
        self.operands.append(mem)
        self._args[key] = a
        return a

    def alloc(
        self,
        shape: Sequence[int],
        elem: Attribute,
        dist: tile.Dist | str,
        *,
        double: bool = False,
        name: str | None = None,
        layout: tile.Layout | str = tile.Layout.ROW,
    ) -> SSAValue:
        """``tile.alloc [double] : !tile.buf<shape x elem, dist[, layout]>`` at the top of the body."""
        op = tile.AllocOp(tile.TileBufType(list(shape), elem, dist, layout), double=double)
        if name:
            op.result.name_hint = name
        ip = InsertPoint.after(self._last_alloc) if self._last_alloc else InsertPoint.at_start(self.block)
        Rewriter.insert_op(op, ip)
        self._last_alloc = op
        return op.result

    def footprint(self) -> int:
        """Per-CPE LDM bytes of the allocations so far (double buffers twice)."""
        return sum(a.footprint_bytes() for a in self.block.ops if isinstance(a, tile.AllocOp))

    # -- index arithmetic ----------------------------------------------------------------

    def const(self, v: int) -> SSAValue:
        """``arith.constant v : index`` (cached, at the top of the body after the allocs)."""
        if v in self._consts:
            return self._consts[v]
        c = arith.ConstantOp(IntegerAttr(v, IndexType()))
        c.result.name_hint = f"c{v}" if v >= 0 else f"cm{-v}"
        anchor = self._last_const or self._last_alloc
        ip = InsertPoint.after(anchor) if anchor else InsertPoint.at_start(self.block)
        Rewriter.insert_op(c, ip)
        self._last_const = c
        self._consts[v] = c.result
        return c.result

    def idx(self, v: Idx) -> SSAValue:
        return self.const(v) if isinstance(v, int) else v

    def affine(self, v: Idx, scale: int = 1, offset: int = 0) -> Idx:
        """``v * scale + offset`` (folded for ints; arith.muli/addi/subi for values)."""
        if isinstance(v, int):
            return v * scale + offset
        cur: SSAValue = v
        if scale != 1:
            cur = self.builder.insert(arith.MuliOp(cur, self.const(scale))).result
        if offset > 0:
            cur = self.builder.insert(arith.AddiOp(cur, self.const(offset))).result
        elif offset < 0:
            cur = self.builder.insert(arith.SubiOp(cur, self.const(-offset))).result
        return cur

    # -- loops ---------------------------------------------------------------------------

    @contextmanager
    def loop(self, lb: int, ub: int, step: int, name: str | None = None) -> Iterator[Idx]:
        """``tile.for %iv = lb to ub step step`` around the ops built inside the ``with``;
        a single-trip loop is not emitted and yields the int ``lb``."""
        if ub - lb <= step:
            yield lb
            return
        f = tile.ForOp(lb, ub, step, name=name)
        if name:
            f.iv.name_hint = name
        self.builder.insert(f)
        saved = self.builder.insertion_point
        self.builder.insertion_point = InsertPoint.at_end(f.body.block)
        try:
            yield f.iv
        finally:
            self.builder.insertion_point = saved

    # -- primitives ----------------------------------------------------------------------

    @staticmethod
    def _range(v: Idx) -> tuple[int, int] | None:
        if isinstance(v, int):
            return (v, v)
        return tile.index_range(v)

    def _out_of_bounds(self, mem: SSAValue, offsets: Sequence[Idx], sizes: Sequence[int],
                       strides: Sequence[int] | None) -> bool:
        dims = shape_of(mem)
        strides = strides or [1] * len(sizes)
        for off, size, st, dim in zip(offsets, sizes, strides, dims):
            r = self._range(off)
            if r is None or r[0] < 0 or r[1] + (size - 1) * st >= dim:
                return True
        return False

    def load(self, mem: SSAValue, offsets: Sequence[Idx], sizes: Sequence[int], buf: SSAValue,
             *, strides: Sequence[int] | None = None, pad: float = 0.0) -> tile.MoveOp:
        """``tile.move mem[offsets] sizes [...] [strides] [pad v] -> buf``; ``pad`` is only
        emitted when the window may leave the memref (static offset ranges)."""
        need_pad = self._out_of_bounds(mem, offsets, sizes, strides)
        op = tile.MoveOp(mem, buf, [self.idx(o) for o in offsets], list(sizes),
                         None if strides is None or all(s == 1 for s in strides) else list(strides),
                         pad=pad if need_pad else None)
        return self.builder.insert(op)

    def store(self, buf: SSAValue, mem: SSAValue, offsets: Sequence[Idx], sizes: Sequence[int],
              *, strides: Sequence[int] | None = None) -> tile.MoveOp:
        """``tile.move buf -> mem[offsets] sizes [...] [strides] [clip]`` (clip when needed)."""
        need_clip = self._out_of_bounds(mem, offsets, sizes, strides)
        op = tile.MoveOp(buf, mem, [self.idx(o) for o in offsets], list(sizes),
                         None if strides is None or all(s == 1 for s in strides) else list(strides),
                         clip=need_clip)
        return self.builder.insert(op)

    def map(self, kind: MapKind, ins: Sequence[SSAValue], out: SSAValue, **params: object) -> tile.MapOp:
        """``tile.map KIND ins(...) out(...) {params}``."""
        return self.builder.insert(tile.MapOp(kind, list(ins), out, **params))

    def insert(self, op: Operation) -> Operation:
        """Insert any other op (tile.gemm, tile.im2col ...) at the current position."""
        return self.builder.insert(op)

    def apply_fused(self, fused: Sequence[FusedMap], buf: SSAValue) -> None:
        """Apply absorbed element-wise consumers in place on ``buf`` (skips identities).
        Residual maps need the stored window: use :meth:`store_fused`."""
        for f in fused:
            if f.is_residual:
                raise ValueError(f"{self.name}: a residual {f.op.name} needs store_fused (the stored window)")
            if f.kind != MapKind.COPY:
                self.map(f.kind, [buf], buf, **f.params)

    def store_fused(self, buf: SSAValue, fused: Sequence[FusedMap], mem: SSAValue, offsets: Sequence[Idx],
                    sizes: Sequence[int], *, strides: Sequence[int] | None = None) -> tile.MoveOp:
        """Apply ``fused`` in place on ``buf`` and store it like :meth:`store`: a residual map
        (bound by :meth:`GraphToTilePattern.bind_fused`) first loads the same window of its
        memref into a tile like ``buf`` (allocated once per kernel, double-buffered:
        :func:`fused_ldm_bytes`) and adds it. Apply it to the tile in the graph's element type
        (after a f64 -> f32 convert), so the sum rounds like the reference."""
        t = buf.type
        assert isinstance(t, tile.TileBufType)
        for f in fused:
            if f.is_residual:
                res = self._residual_tile(t, f)
                if res not in self._prefetched:
                    self.load(f.mem, offsets, sizes, res, strides=strides)  # type: ignore[arg-type]
                self._prefetched.discard(res)
                self.map(MapKind.ADD, [buf, res], buf)
            elif f.kind != MapKind.COPY:
                self.map(f.kind, [buf], buf, **f.params)
        return self.store(buf, mem, offsets, sizes, strides=strides)

    def prefetch_fused(self, like: tile.TileBufType, fused: Sequence[FusedMap], offsets: Sequence[Idx],
                       sizes: Sequence[int], *, strides: Sequence[int] | None = None) -> None:
        """Load the residual windows of the coming :meth:`store_fused` (same window, a stored
        tile of type ``like``) now, e.g. at the start of a block before its K loop: the DMA is
        waited only where the add reads it (tile-to-loop waits lazily), so it overlaps the
        block's compute, and as the first op touching its double tile it is prefetched across
        the enclosing loop."""
        for f in fused:
            if f.is_residual:
                res = self._residual_tile(like, f)
                self.load(f.mem, offsets, sizes, res, strides=strides)  # type: ignore[arg-type]
                self._prefetched.add(res)

    def _residual_tile(self, t: tile.TileBufType, f: FusedMap) -> SSAValue:
        if f.mem is None:
            raise ValueError(f"{self.name}: residual {f.op.name} not bound (GraphToTilePattern.bind_fused)")
        key = (t, id(f.mem))
        res = self._residual_tiles.get(key)
        if res is None:
            res = self.alloc(t.get_shape(), t.element_type, t.dist.data, double=True, name="res", layout=t.layout.data)
            self._residual_tiles[key] = res
        return res

    # -- finish --------------------------------------------------------------------------

    def build(self) -> tile.KernelOp:
        """The kernel op (not inserted), with ``taihu.useful_flops`` (see the class docstring)."""
        flops: int | None = 0
        for o in self._flops_ops:
            if o not in self.state.flops_counted:
                self.state.flops_counted.add(o)
                f = useful_flops(o)
                flops = None if f is None or flops is None else flops + f
        if flops is not None:
            self.attrs["taihu.useful_flops"] = IntegerAttr(flops, i64)
        k = tile.KernelOp(self.name, self.operands, _region(self.block))
        k.attributes.update(self.attrs)
        return k

    def finish(self, rewriter: PatternRewriter | None = None, insert: InsertPoint | None = None,
               verify: bool = True) -> tile.KernelOp:
        """Insert the kernel (before the matched op, or at ``insert``); verify it (the tile
        verifiers: LDM footprint, move windows, map distributions) and raise
        ``PassFailedException`` naming the kernel on failure."""
        k = self.build()
        if insert is not None:
            Rewriter.insert_op(k, insert)
        else:
            assert rewriter is not None
            rewriter.insert(k)
        if verify:
            try:
                k.verify()
            except Exception as e:  # noqa: BLE001 - re-raised as a pass diagnostic
                op_name = self.attrs["taihu.op"]
                assert isinstance(op_name, StringAttr)  # set in __init__
                raise PassFailedException(
                    f"convert-graph-to-tile: generated kernel \"{self.name}\" ({op_name.data}) "
                    f"does not verify: {e}"
                ) from e
        return k


def _region(block: Block) -> Region:
    return Region(block)


# --------------------------------------------------------------------------------------------
# Pattern base class
# --------------------------------------------------------------------------------------------


class GraphToTilePattern(RewritePattern):
    """Base of the lowering patterns: holds the :class:`LoweringState` and the bufferization
    helpers. Subclasses implement ``match_and_rewrite`` (usually with
    ``@op_type_rewrite_pattern``)."""

    def __init__(self, state: LoweringState):
        super().__init__()
        self.state = state

    # -- operands / outputs ----------------------------------------------------------------

    def buffer(self, rewriter: PatternRewriter, value: SSAValue) -> SSAValue:
        """The main-memory memref holding tensor ``value``: the memref of a ``to_tensor``
        directly, else a new ``bufferization.to_buffer`` before the matched op."""
        if isinstance(value, OpResult) and isinstance(value.op, bufferization.ToTensorOp):
            return value.op.memref
        t = value.type
        if not isinstance(t, TensorType):
            raise PassFailedException(f"convert-graph-to-tile: expected a tensor operand, got {t}")
        check_element_type(value)
        op = bufferization.ToBufferOp.build(operands=[value], result_types=[memref_type(t)], properties={"read_only": UnitAttr()})
        rewriter.insert(op)
        return op.results[0]

    def alloc(self, rewriter: PatternRewriter, shape: Sequence[int], elem: Attribute,
              name: str | None = None) -> SSAValue:
        """``memref.alloc() {alignment = 128 : i64} : memref<shape x elem>`` before the matched op."""
        op = memref.AllocOp.get(elem, ALIGNMENT, list(shape))
        if name:
            op.memref.name_hint = sanitize(name)
        rewriter.insert(op)
        return op.memref

    def alloc_like(self, rewriter: PatternRewriter, value: SSAValue, name: str | None = None) -> SSAValue:
        """Output buffer with the shape/element type of tensor ``value``."""
        t = value.type
        assert isinstance(t, TensorType)
        check_element_type(value)
        return self.alloc(rewriter, shape_of(t), t.element_type, name)

    def view(self, rewriter: PatternRewriter, mem: SSAValue, shape: Sequence[int]) -> SSAValue:
        """No-copy reshape view of ``mem`` (:func:`reshape_view`) before the matched op."""
        return reshape_view(mem, shape, rewriter.insertion_point)

    def bind_fused(self, rewriter: PatternRewriter, kb: KernelBuilder, fused: Sequence[FusedMap],
                   out_arg: SSAValue) -> list[FusedMap]:
        """``fused`` with every residual map's operand bound as a kernel argument of ``kb``,
        viewed with the shape of the output argument ``out_arg`` (the memref the kernel
        stores to), for :meth:`KernelBuilder.store_fused`."""
        out = []
        for f in fused:
            if f.is_residual and f.mem is None:
                assert f.operand is not None
                v = self.view(rewriter, self.buffer(rewriter, f.operand), shape_of(out_arg))
                f = FusedMap(f.kind, f.params, f.op, f.operand, kb.arg(v, "res"))
            out.append(f)
        return out

    # -- results ---------------------------------------------------------------------------

    def replace(self, rewriter: PatternRewriter, op: Operation, buffers: Sequence[SSAValue],
                fused: Sequence[FusedMap] = ()) -> None:
        """Replace ``op``'s results by ``to_tensor`` of ``buffers`` and erase ``op``; with
        ``fused`` (single-result op), the LAST absorbed consumer's result is replaced instead
        and the absorbed consumers are erased too."""
        if len(buffers) != len(op.results):
            raise ValueError(f"{op.name}: {len(op.results)} results, {len(buffers)} buffers")
        tensors = []
        for b in buffers:
            tt = bufferization.ToTensorOp(b, restrict=True)
            rewriter.insert(tt)
            tensors.append(tt.tensor)
        if fused:
            last = fused[-1].op
            for r, t in zip(last.results, tensors):
                if r.name_hint and not t.name_hint:
                    t.name_hint = r.name_hint
                rewriter.replace_all_uses_with(r, t)
            for f in reversed(fused):
                rewriter.erase(f.op)
            rewriter.erase(op)
            return
        rewriter.replace(op, [], tensors)

    # -- diagnostics -----------------------------------------------------------------------

    @staticmethod
    def fail(op: Operation, message: str) -> PassFailedException:
        return PassFailedException(f"convert-graph-to-tile: {op.name}: {message}")


def check_element_type(value: SSAValue) -> None:
    """f32 / f64 only (the tile level and the simulator's main memory types)."""
    t = value.type
    el = t.get_element_type() if isinstance(t, (TensorType, MemRefType)) else t
    if not isinstance(el, (Float32Type, Float64Type)):
        owner = value.op.name if isinstance(value, OpResult) else "argument"
        raise PassFailedException(
            f"convert-graph-to-tile: {owner}: element type {el} is not supported (f32 or f64 only)"
        )


def np_dtype(elem: Attribute) -> np.dtype:
    return element_dtype(elem)
