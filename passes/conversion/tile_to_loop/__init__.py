"""``convert-tile-to-loop``: tile-level kernels -> the per-CPE (SPMD) ``loop`` dialect.

Input: ``tile.kernel`` ops (dialects/tile.py) anywhere in the module (the host function keeps its
memrefs). Output: one ``loop.spmd`` per kernel, same name, the kernel's discardable attributes
(``taihu.layer``/``op``/``algorithm``/``shape``) copied; every op verifies under the ``loop``
dialect (LDM footprint <= ``ldm_user_bytes``, naming the buffers)::

    tile.kernel "relu" (%x = %X : memref<64x4096xf32>) {           loop.spmd "relu" ids(%row, %col) (%x = %X : ...) {
      %t = tile.alloc double : !tile.buf<64x512xf32, cpe>              %t = loop.ldm_buffer "t" : !loop.ldm<1x512xf32, double>
      tile.for %j = 0 to 4096 step 512 {                    ==>        (prologue DMA into slot 0, scf.for with the prefetch
        tile.move %x[%c0, %j] sizes [64, 512] -> %t ...                 of the next tile into the other slot, tokens
        tile.map relu ins(%t ...) out(%t ...)                           through iter_args, peeled last iteration)
        tile.move %t -> %x[%c0, %j] sizes [64, 512] ...
      }
    }

Lowering rules:

* ``tile.kernel`` -> ``loop.spmd`` (ids ``%row``, ``%col``; ``id = 8*row + col``, 004 L734).
  Kernels whose bodies are structurally identical
  (:func:`~taihu.passes.conversion.kernel_key.structural_key`: same ops, types, properties; other
  buffers and value names -- a network's repeated layers) are lowered once; each repeat gets a
  copy of that ``loop.spmd`` body with its own name, attributes, operands and LDM buffer names.
* ``tile.alloc`` -> ``loop.ldm_buffer`` of the CPE-local block (:meth:`TileBufType.local_shape`;
  layout ``col`` = the two dims swapped; ``double`` -> two slots, every consumer gets a
  ``loop.slot`` view). Names: the SSA name hint, made unique.
* ``tile.for`` -> ``scf.for`` (1:1), or the double-buffered form below. Loop-invariant loads
  (address independent of the loop, tile written by nothing else in it) are placed before the
  loop (004 Alg. 7: a DMA belongs to the innermost loop whose iterator its address uses).
  Iterations in which a ``pad``/``clip`` window may cross the array border (along a dim that
  depends on the loop's iterator) and whose variants cannot dispatch asynchronously (see
  token balancing below) are peeled and lowered with the iterator as a constant
  (algorithms.md §E6 "primitive switching" at the boundary), so the other iterations keep
  uniform, asynchronous, prefetchable DMAs.
* ``tile.move`` -> DMA inference (004 Alg. 7 L1514-1534, algorithms.md §E4; helpers in
  :mod:`.dma`): each CPE's piece of the window (its local block) is split into ``loop.dma_start``
  windows that are each ONE athread DMA (a contiguous run repeated with a constant gap), the LDM
  side contiguous (``loop.view`` at the element offset inside the block). Boundary windows of
  non-divisible shapes (``pad`` loads, ``clip`` stores, algorithms.md §E6, 004 §4.2.4 L883-889):
  the possible in-bounds sub-ranges of each piece are enumerated statically from the loop bounds;
  a piece that may cross the array border is dispatched (``scf.if`` on its start) to the variant
  for its case: loads fill the LDM block with the pad value and transfer only the valid part;
  stores transfer only the valid part (clipping: no extra main memory at all, nothing outside the
  array is read or written). The ``cpe`` distribution's ragged last CPE and the empty CPEs after
  it are dispatched on the CPE id the same way. ``rep`` loads use one broadcast DMA (``mode
  bcast``) when the piece is one DMA; ``rep`` stores are done by CPE 0 only.
* Waits: DMAs of a move are waited lazily, just before the first later op that touches the
  buffer (or the memref, for read/write hazards), and at the latest at the end of the region that
  started them (tokens never escape a region except through the prefetch iter_args).
* Double buffering (004 Alg. 8 L1544-1562, algorithms.md §E5, DLIR G7): in a ``tile.for`` whose
  body directly contains a load ``tile.move`` into a ``double`` tile (the first op of the body
  that touches it, the tile used nowhere else), the first tile is fetched before the loop
  (prologue), iteration ``n`` waits for its tile in slot ``n mod 2`` and immediately starts the
  DMA of iteration ``n+1`` (address = the offsets re-evaluated at ``iv + step``) into the other
  slot; the tokens and the iteration counter flow through ``scf.for`` iter_args; the last
  iteration is peeled (no prefetch). Stores from a ``double`` tile (its last use in the body)
  are waited one iteration later (first iteration peeled), so the put overlaps the next compute.
  Alg. 8's wrap: when the loop is the only loop of an outer loop's body, its last iteration
  prefetches the first tile of the outer loop's next iteration (tokens and the slot counter
  carried by the outer ``scf.for``), so only the nest's very first tile is exposed. Moves that
  dispatch per CPE (boundary, ragged, rep store) take part when every variant issues at most
  as many DMAs as the whole piece (the others are padded with 1-element dummy gets into a
  32-B scratch buffer, and the ``scf.if`` yields the tokens).
* ``tile.map`` -> ``loop.map`` on the local buffers (same kind and parameters; window maps keep
  their halos because the tile already holds them). A ``copy``/``convert`` that changes the
  layout becomes a ``transpose`` (perm [1, 0], converting on the way). A ``rep`` broadcast
  input of a map whose output is split over the CPEs is handed over as a ``loop.view`` of this
  CPE's block of it.
* ``tile.gemm`` -> :func:`.gemm.lower_gemm`; ``tile.im2col`` / ``tile.winograd_*`` ->
  :mod:`.mem_prims` (engineer E2's modules, called with :class:`LowerCtx`).
* Barriers: a ``loop.barrier array`` precedes a load from a memref that this kernel may already
  have written (a store earlier in program order, or anywhere in an enclosing loop), after the
  pending puts are waited: another CPE may have written the data.

Options: ``double_buffer`` (default true; false = no prefetch, double tiles use slot 0),
``max_unrolled_dmas`` (DMAs of one move emitted inline before a ``scf.for`` is used, default 64),
``rep_bcast`` (default true: rep loads as one broadcast DMA).

Errors: :class:`xdsl.utils.exceptions.PassFailedException` naming the op and the reason.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float64Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException, VerifyException

from taihu.target.machine import default_machine
from taihu.dialects import loop, tile
from taihu.dialects.loop import DmaMode, LdmBufType
from taihu.dialects.mapkind import MapKind, check_map
from taihu.dialects.tile import Dist, Layout, TileBufType
from taihu.passes.conversion.kernel_key import structural_key

from . import dma as dmaplan

__all__ = ["ConvertTileToLoopPass", "LowerCtx", "local_buffer_shape"]

MESH = dmaplan.MESH
_MAX_ENUM = 1 << 16  # possible offsets enumerated per dim before giving up


def local_buffer_shape(t: TileBufType) -> tuple[int, ...]:
    """``!loop.ldm`` shape of one CPE's block: :meth:`TileBufType.local_shape`, the two dims
    swapped for layout ``col``."""
    s = t.local_shape()
    return (s[1], s[0]) if t.layout_kind == Layout.COL else s


def _elem_name(t: LdmBufType) -> str:
    return "f64" if t.elem_bytes == 8 else "f32"


def _fail(op: Operation, msg: str) -> PassFailedException:
    where = op.name
    if isinstance(op, tile.KernelOp):
        where = f'tile.kernel "{op.kernel_name.data}"'
    return PassFailedException(f"convert-tile-to-loop: {where}: {msg}")


# Fast op construction: the ops below are built without IRDL's per-construction checks (the
# module is verified after the pass); attributes are cached.


@functools.cache
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@functools.cache
def _ldm_type(shape: tuple[int, ...], elem: Attribute) -> LdmBufType:
    return LdmBufType(shape, elem)


_TOKEN = loop.TokenType()
_INDEX = IndexType()


def _dma_start(
    src: SSAValue, dst: SSAValue, offsets: Sequence[SSAValue], sizes: Sequence[int],
    strides: Sequence[int] | None = None, mode: DmaMode | None = None,
) -> loop.DmaStartOp:
    props: dict[str, Attribute] = {"sizes": _i64_array(tuple(sizes))}
    if strides is not None and any(x != 1 for x in strides):
        props["strides"] = _i64_array(tuple(strides))
    if mode is not None:
        props["mode"] = loop.DmaModeAttr(mode)
    return loop.DmaStartOp.create(operands=[src, dst, *offsets], properties=props, result_types=[_TOKEN])


def _view_op(buf: SSAValue, off: SSAValue, t: LdmBufType) -> loop.ViewOp:
    return loop.ViewOp.create(operands=[buf, off], result_types=[t])


def _addi(x: SSAValue, y: SSAValue) -> arith.AddiOp:
    return arith.AddiOp.create(operands=[x, y], properties={"overflowFlags": _NO_OVERFLOW}, result_types=[_INDEX])


def _muli(x: SSAValue, y: SSAValue) -> arith.MuliOp:
    return arith.MuliOp.create(operands=[x, y], properties={"overflowFlags": _NO_OVERFLOW}, result_types=[_INDEX])


_NO_OVERFLOW = arith.IntegerOverflowAttr("none")


# --------------------------------------------------------------------------------------------
# Static facts about tile-level index values
# --------------------------------------------------------------------------------------------


def index_values(
    v: SSAValue, limit: int = _MAX_ENUM, iv_values: dict[tile.ForOp, list[int]] | None = None
) -> list[int] | None:
    """Superset of the values an ``index`` value takes (from ``tile.for`` bounds -- or the
    values in ``iv_values`` for the loops being lowered piecewise --, constants and
    ``arith.addi/subi/muli``, ``arith.divui/remui`` by a positive constant), sorted; None when
    unknown or larger than ``limit``."""
    owner = v.owner
    if isinstance(v, BlockArgument):
        op = owner.parent_op() if isinstance(owner, Block) else None
        if isinstance(op, tile.ForOp):
            if iv_values is not None and op in iv_values:
                return iv_values[op]
            vals = list(range(op.lb_value, op.ub_value, op.step_value))
            return vals if len(vals) <= limit else None
        return None
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return [owner.value.value.data]
    if isinstance(owner, (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivUIOp, arith.RemUIOp)):
        a, b = index_values(owner.lhs, limit, iv_values), index_values(owner.rhs, limit, iv_values)
        if a is None or b is None or len(a) * len(b) > limit * 4:
            return None
        if isinstance(owner, (arith.DivUIOp, arith.RemUIOp)) and (min(b) <= 0 or min(a) < 0):
            return None
        f: Callable[[int, int], int] = {
            arith.AddiOp: lambda x, y: x + y,
            arith.SubiOp: lambda x, y: x - y,
            arith.MuliOp: lambda x, y: x * y,
            arith.DivUIOp: lambda x, y: x // y,
            arith.RemUIOp: lambda x, y: x % y,
        }[type(owner)]
        out = sorted({f(x, y) for x in a for y in b})
        return out if len(out) <= limit else None
    r = tile.index_range(v)
    if r is not None and r[1] - r[0] < limit:
        return list(range(r[0], r[1] + 1))
    return None


def _uses_in(v: SSAValue, root: Operation) -> bool:
    """Is every use of ``v`` inside ``root``?"""
    return all(root.is_ancestor(u.operation) for u in v.uses)


def _touches(op: Operation, v: SSAValue) -> bool:
    return any(o is v for o in op.operands) or any(
        any(o is v for o in inner.operands) for r in op.regions for inner in r.walk()
    )


# --------------------------------------------------------------------------------------------
# Move planning
# --------------------------------------------------------------------------------------------


@dataclass
class _MovePlan:
    op: tile.MoveOp
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    tdims: list[int | None]
    blocks: list[dmaplan.DimBlock]
    order: tuple[int, ...]
    elem_bytes: int
    # per class: list of per-dim case lists (each ClipCase), only dims with >1 case are tested
    classes: list[tuple[dmaplan.CpeClass, tuple[int, ...], list[list[dmaplan.ClipCase]]]]
    full_n: tuple[int, ...] = ()  # extents of the full local block per memref dim (LDM layout)
    bcast: bool = False

    @property
    def uniform(self) -> bool:
        """One variant for every CPE: no dispatch (DMAs may be asynchronous)."""
        if len(self.classes) != 1:
            return False
        cls, _, cases = self.classes[0]
        return cls.id_lo == 0 and cls.id_hi == dmaplan.N_CPE - 1 and all(len(c) == 1 for c in cases)

    @property
    def interior(self) -> bool:
        """Uniform and every piece whole (no boundary at all)."""
        if not self.uniform:
            return False
        _, n, cases = self.classes[0]
        return all(c[0].lo == 0 and c[0].hi == e for c, e in zip(cases, n))

    def cpe_coef(self, d: int) -> tuple[int, int]:
        """(a, b): the piece start along memref dim d is offset_d + stride_d*(a*row + b*col)."""
        t = self.tdims[d]
        if t is None:
            return (0, 0)
        blk = self.blocks[t]
        return (blk.a * self.strides[d], blk.b * self.strides[d])


def plan_move(
    op: tile.MoveOp, rep_bcast: bool = True, iv_values: dict[tile.ForOp, list[int]] | None = None
) -> _MovePlan:
    """Static analysis of a ``tile.move`` (see module docstring); ``iv_values`` restricts the
    iterator values of loops lowered piecewise (boundary iterations peeled)."""
    mt = op.memref.type
    tt = op.tile.type
    assert isinstance(mt, MemRefType) and isinstance(tt, TileBufType)
    shape = tuple(mt.get_shape())
    sizes = op.size_values
    strides = op.stride_values
    r = len(shape)
    try:
        tdims = dmaplan.tile_dims_of_window(sizes, tt.get_shape())
        blocks, classes = dmaplan.cpe_blocks(tt.dist.data, tt.get_shape())
    except dmaplan.DmaInferenceError as e:
        raise _fail(op, str(e)) from e
    dist = tt.dist_kind
    sd = tt.split_dim or 0  # the tile dim whose extent varies by CPE class (cpe<d>: d)
    if dist == Dist.REP and not op.is_load:
        classes = [dmaplan.CpeClass(0, 0, tt.get_shape()[0]), dmaplan.CpeClass(1, dmaplan.N_CPE - 1, 0)]
    order = list(range(r))
    if tt.layout_kind == Layout.COL:
        d0 = tdims.index(0) if 0 in tdims else None
        d1 = tdims.index(1) if 1 in tdims else None
        if d0 is not None and d1 is not None:
            order[d0], order[d1] = order[d1], order[d0]
    boundary = op.pad is not None or op.clip is not None
    offs_vals: list[list[int] | None] = [None] * r
    if boundary:
        for d, o in enumerate(op.offsets):
            offs_vals[d] = index_values(o, iv_values=iv_values)
            if offs_vals[d] is None:
                raise _fail(op, f"cannot bound offset #{d} of a boundary (pad/clip) move statically")
    out_classes = []
    for cls in classes:
        n = []
        for d in range(r):
            t = tdims[d]
            if t is None:
                ext = sizes[d]
                if cls.dim0_n == 0 and dist == Dist.CPE and tt.get_shape()[sd] == 1:
                    ext = 0
            elif t == sd and dist in (Dist.CPE, Dist.REP):
                ext = cls.dim0_n
            else:
                ext = blocks[t].n
            n.append(ext)
        if dist == Dist.REP and not op.is_load and cls.dim0_n == 0:
            n = [0] * r
        if any(e == 0 for e in n):
            out_classes.append((cls, tuple(n), [[dmaplan.ClipCase(0, 0, 0, 0)] for _ in range(r)]))
            continue
        cases: list[list[dmaplan.ClipCase]] = []
        for d in range(r):
            if not boundary:
                cases.append([dmaplan.ClipCase(0, 0, 0, n[d])])
                continue
            t = tdims[d]
            cpe_offs = [0] if t is None else dmaplan.class_cpe_offsets(blocks[t], cls)
            starts = sorted({o + c * strides[d] for o in offs_vals[d] or [0] for c in cpe_offs})
            cases.append(dmaplan.clip_cases(starts, n[d], strides[d], shape[d]))
        out_classes.append((cls, tuple(n), cases))
    eb = mt.get_element_type().bitwidth // 8  # type: ignore[attr-defined]
    full_n = tuple(sizes[d] if tdims[d] is None else blocks[tdims[d]].n for d in range(r))  # type: ignore[index]
    plan = _MovePlan(op, shape, strides, tdims, blocks, tuple(order), eb, out_classes, full_n)
    if rep_bcast and dist == Dist.REP and op.is_load and plan.uniform:
        _, n, cases = out_classes[0]
        lo = tuple(c[0].lo for c in cases)
        hi = tuple(c[0].hi for c in cases)
        if all(h > l for l, h in zip(lo, hi)):
            sp = dmaplan.split_box(shape, strides, full_n, lo, hi, order, eb)
            plan.bcast = sp.count(lo, hi) == 1
    return plan


# --------------------------------------------------------------------------------------------
# Lowering context
# --------------------------------------------------------------------------------------------


@dataclass
class _Pending:
    token: SSAValue
    buf: SSAValue | None  # tile-level buffer value
    mem: SSAValue | None  # loop-level memref value
    is_get: bool


@dataclass
class _Scope:
    views: dict[SSAValue, SSAValue] = field(default_factory=dict)
    pending: list[_Pending] = field(default_factory=list)


class LowerCtx:
    """State of one kernel's lowering (the object handed to :mod:`.gemm` / :mod:`.mem_prims`).

    ``row``/``col``/``cpe_id``: ``index`` values of the spmd; ``value(v)``: tile value -> loop
    value (a ``tile.alloc`` result -> its current single-slot buffer); ``const(n)``: hoisted
    ``index`` constant; ``new_buffer(name, t)``: a fresh ``loop.ldm_buffer``;
    ``note_memref_write(m)``: the lowered op writes memref ``m`` (barrier before later reads);
    ``emit(op)``: append an op at the current insertion point.
    """

    def __init__(self, kernel: tile.KernelOp, spmd: loop.SpmdOp, options: ConvertTileToLoopPass):
        self.kernel = kernel
        self.spmd = spmd
        self.options = options
        self.block: Block = spmd.body.block
        self.vmap: dict[SSAValue, SSAValue] = {}
        self.cval: dict[SSAValue, int] = {}
        self._consts: dict[int, SSAValue] = {}
        self._const_ops: list[Operation] = []
        self._prelude: list[Operation] = []
        self._buffer_ops: list[Operation] = []
        self._names: set[str] = set()
        self._cpe_terms: dict[tuple[int, int], SSAValue] = {}
        self._cpe_id: SSAValue | None = None
        self.ldm: dict[SSAValue, SSAValue] = {}  # tile alloc value -> loop.ldm_buffer value
        self.slot0: dict[SSAValue, SSAValue] = {}
        self.scopes: list[_Scope] = [_Scope()]
        self.written: set[SSAValue] = set()  # loop memrefs written since the last barrier
        self._plans: dict[tuple[tile.MoveOp, tuple[tuple[int, tuple[int, ...]], ...]], _MovePlan] = {}
        self.iv_values: dict[tile.ForOp, list[int]] = {}  # loops lowered piecewise: current values
        self.hoisted: set[tile.MoveOp] = set()  # loop-invariant loads placed before their loop
        self._scratch: dict[str, SSAValue] = {}
        # memrefs written anywhere inside each tile.for (for barriers in loops)
        self.loop_writes: dict[tile.ForOp, set[SSAValue]] = {}
        self.for_stack: list[tile.ForOp] = []

    # -- public API (E2) ---------------------------------------------------------------------
    @property
    def row(self) -> SSAValue:
        return self.spmd.row

    @property
    def col(self) -> SSAValue:
        return self.spmd.col

    @property
    def cpe_id(self) -> SSAValue:
        if self._cpe_id is None:
            r8 = _muli(self.row, self.const(MESH))
            i = _addi(r8.result, self.col)
            i.result.name_hint = "id"
            self._prelude += [r8, i]
            self._cpe_id = i.result
        return self._cpe_id

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, n: int) -> SSAValue:
        if n not in self._consts:
            c = arith.ConstantOp.from_int_and_width(n, IndexType())
            c.result.name_hint = f"c{n}" if n >= 0 else f"cm{-n}"
            self._const_ops.append(c)
            self._consts[n] = c.result
            self.cval[c.result] = n
        return self._consts[n]

    def new_buffer(self, name: str, t: LdmBufType) -> SSAValue:
        base = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in name) or "buf"
        nm, i = base, 1
        while nm in self._names:
            nm = f"{base}_{i}"
            i += 1
        self._names.add(nm)
        op = loop.LdmBufferOp(nm, t)
        op.result.name_hint = nm
        self._buffer_ops.append(op)
        return op.result

    def scratch(self, elem: Attribute) -> SSAValue:
        """A small LDM buffer of element type ``elem`` that dummy DMAs write (never read)."""
        key = "f64" if isinstance(elem, Float64Type) else "f32"
        if key not in self._scratch:
            self._scratch[key] = self.new_buffer(f"dma_scratch_{key}", LdmBufType([8 if key == "f32" else 4], elem))
        return self._scratch[key]

    def ldm_free_bytes(self) -> int:
        """``ldm_user_bytes`` minus the LDM footprint of every buffer of this spmd so far
        (double buffers twice, each slot rounded to 32 B; :meth:`LdmBufType.footprint_bytes`)."""
        used = sum(o.buffer_type.footprint_bytes() for o in self._buffer_ops if isinstance(o, loop.LdmBufferOp))
        return default_machine().ldm_user_bytes - used

    def value(self, v: SSAValue) -> SSAValue:
        for sc in reversed(self.scopes):
            if v in sc.views:
                return sc.views[v]
        if v in self.slot0:
            return self.slot0[v]
        if v in self.ldm:
            buf = self.ldm[v]
            bt = buf.type
            assert isinstance(bt, LdmBufType)
            if bt.is_double:  # outside a prefetching loop: slot 0
                s = loop.SlotOp(buf, self.const(0))
                s.result.name_hint = f"{buf.name_hint}0"
                self._prelude.append(s)
                self.slot0[v] = s.result
                return s.result
            return buf
        if v in self.vmap:
            return self.vmap[v]
        owner = v.owner
        raise _fail(owner if isinstance(owner, Operation) else self.kernel, f"no loop-level value for %{v.name_hint or '?'}")

    def note_memref_write(self, m: SSAValue) -> None:
        self.written.add(self.vmap.get(m, m))

    # -- arithmetic helpers ------------------------------------------------------------------
    def add(self, x: SSAValue, y: SSAValue) -> SSAValue:
        cx, cy = self.cval.get(x), self.cval.get(y)
        if cx is not None and cy is not None:
            return self.const(cx + cy)
        if cx == 0:
            return y
        if cy == 0:
            return x
        return self.emit(_addi(x, y)).results[0]

    def addc(self, x: SSAValue, c: int) -> SSAValue:
        return self.add(x, self.const(c)) if c else x

    def mulc(self, x: SSAValue, c: int) -> SSAValue:
        cx = self.cval.get(x)
        if cx is not None:
            return self.const(cx * c)
        if c == 1:
            return x
        if c == 0:
            return self.const(0)
        return self.emit(_muli(x, self.const(c))).results[0]

    def cpe_term(self, a: int, b: int) -> SSAValue:
        """``a*row + b*col`` (hoisted to the spmd prelude)."""
        if a == 0 and b == 0:
            return self.const(0)
        key = (a, b)
        if key not in self._cpe_terms and b != 0 and a == MESH * b:  # b * id (cpe distribution)
            if b == 1:
                self._cpe_terms[key] = self.cpe_id
            else:
                m = _muli(self.cpe_id, self.const(b))
                self._prelude.append(m)
                self._cpe_terms[key] = m.result
        if key not in self._cpe_terms:
            ops: list[Operation] = []
            parts: list[SSAValue] = []
            for coef, v in ((a, self.row), (b, self.col)):
                if coef == 0:
                    continue
                if coef == 1:
                    parts.append(v)
                else:
                    m = _muli(v, self.const(coef))
                    ops.append(m)
                    parts.append(m.result)
            if len(parts) == 2:
                s = _addi(parts[0], parts[1])
                ops.append(s)
                parts = [s.result]
            self._prelude += ops
            self._cpe_terms[key] = parts[0]
        return self._cpe_terms[key]

    # -- regions and pending DMAs ------------------------------------------------------------
    def push(self, block: Block) -> tuple[Block, int]:
        saved = (self.block, len(self.scopes))
        self.block = block
        self.scopes.append(_Scope())
        return saved

    def pop(self, saved: tuple[Block, int]) -> None:
        self.flush()
        self.block = saved[0]
        del self.scopes[saved[1] :]

    def _wait(self, entries: list[_Pending]) -> None:
        if entries:
            self.emit(loop.DmaWaitOp([p.token for p in entries]))

    def flush(self, pred: Callable[[_Pending], bool] | None = None) -> None:
        """Wait for the pending DMAs of the current scope (those matching ``pred``)."""
        sc = self.scopes[-1]
        hit = [p for p in sc.pending if pred is None or pred(p)]
        sc.pending = [p for p in sc.pending if not (pred is None or pred(p))]
        self._wait(hit)

    def sync_buffers(self, bufs: Iterable[SSAValue]) -> None:
        s = set(bufs)
        self.flush(lambda p: p.buf in s)

    def sync_memrefs_for(self, mem: SSAValue, is_get: bool) -> None:
        """Read/write hazards on main memory: a get waits for pending puts to the memref, a put
        for pending gets and puts of it."""
        self.flush(lambda p: p.mem is mem and (not p.is_get or not is_get))

    def add_pending(self, tokens: Sequence[SSAValue], buf: SSAValue | None, mem: SSAValue | None, is_get: bool) -> None:
        self.scopes[-1].pending += [_Pending(t, buf, mem, is_get) for t in tokens]

    def barrier_before_read(self, mem_tile: SSAValue) -> None:
        """Barrier before reading a memref that may have been written by another CPE."""
        mem = self.vmap.get(mem_tile, mem_tile)
        written = mem in self.written or any(mem_tile in self.loop_writes.get(f, ()) for f in self.for_stack)
        if written:
            self.flush(lambda p: not p.is_get)
            self.emit(loop.BarrierOp())
            self.written.clear()

    def plan(self, op: tile.MoveOp) -> _MovePlan:
        key = (op, tuple(sorted((id(f), tuple(v)) for f, v in self.iv_values.items() if f.is_ancestor(op))))
        if key not in self._plans:
            self._plans[key] = plan_move(op, self.options.rep_bcast, self.iv_values)
        return self._plans[key]

    def finish(self) -> None:
        """Put buffers, constants and the prelude at the top of the spmd body."""
        self.flush()
        blk = self.spmd.body.block
        head = self._buffer_ops + self._const_ops + self._prelude
        first = blk.first_op
        if first is None:
            blk.add_ops(head)
        else:
            blk.insert_ops_before(head, first)


# --------------------------------------------------------------------------------------------
# Kernel lowering
# --------------------------------------------------------------------------------------------


def _written_memrefs(region_op: Operation) -> set[SSAValue]:
    out: set[SSAValue] = set()
    for o in region_op.walk():
        if isinstance(o, tile.MoveOp) and not o.is_load:
            out.add(o.memref)
        elif isinstance(o, (tile.Im2colOp, tile.WinogradFilterOp, tile.WinogradInputOp, tile.WinogradOutputOp)):
            out.add(o.output)
    return out


def lower_kernel(k: tile.KernelOp, options: ConvertTileToLoopPass) -> loop.SpmdOp:
    """Build the ``loop.spmd`` of a ``tile.kernel`` (not inserted)."""
    spmd = loop.SpmdOp(k.kernel_name.data, list(k.args))
    spmd.attributes |= dict(k.attributes)
    spmd.row.name_hint = "row"
    spmd.col.name_hint = "col"
    ctx = LowerCtx(k, spmd, options)
    for a, b in zip(k.body.block.args, spmd.memref_args):
        ctx.vmap[a] = b
        b.name_hint = a.name_hint
    for f in k.walk():
        if isinstance(f, tile.ForOp):
            ctx.loop_writes[f] = _written_memrefs(f)
    padded = _padded_rep_buffers(k)
    for i, al in enumerate(k.allocs()):
        t = al.tile_type
        shape = padded.get(al.result, local_buffer_shape(t))
        lt = LdmBufType(shape, t.element_type, al.is_double and options.double_buffer)
        buf = ctx.new_buffer(al.result.name_hint or f"buf{i}", lt)
        ctx.ldm[al.result] = buf
    lower_block(ctx, k.body.block)
    ctx.finish()
    return spmd


def lower_block(ctx: LowerCtx, block: Block) -> None:
    for op in block.ops:
        lower_op(ctx, op)


def lower_op(ctx: LowerCtx, op: Operation) -> None:
    if isinstance(op, tile.AllocOp):
        return
    if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
        assert isinstance(op.value, IntegerAttr)
        ctx.vmap[op.result] = ctx.const(op.value.value.data)
        return
    if isinstance(op, tile.ForOp):
        _lower_for(ctx, op)
        return
    if isinstance(op, tile.MoveOp):
        if op not in ctx.hoisted:
            _lower_move_sync_or_async(ctx, op)
        return
    if isinstance(op, tile.MapOp):
        _lower_map(ctx, op)
        return
    if isinstance(op, tile.GemmOp):
        ctx.sync_buffers([op.a, op.b, op.c])
        try:
            from . import gemm
        except ImportError as e:  # pragma: no cover - E2's module missing
            raise _fail(op, "tile.gemm lowering (gemm.py) is not available") from e
        for o in gemm.lower_gemm(op, ctx):
            ctx.emit(o)
        return
    if isinstance(op, (tile.Im2colOp, tile.WinogradFilterOp, tile.WinogradInputOp, tile.WinogradOutputOp)):
        _lower_mem_prim(ctx, op)
        return
    if isinstance(op, tile.UnfoldOp):  # LDM-local (F's mem_prims.lower_unfold)
        ctx.sync_buffers([*op.inputs, op.out])
        from . import mem_prims

        for o in mem_prims.lower_unfold(op, ctx):
            ctx.emit(o)
        return
    if op.dialect_name() == "arith" and not op.regions:
        new = op.clone(value_mapper={o: ctx.value(o) for o in op.operands})
        ctx.emit(new)
        for a, b in zip(op.results, new.results):
            ctx.vmap[a] = b
        return
    raise _fail(op, "unsupported op inside a tile.kernel")


def _lower_mem_prim(ctx: LowerCtx, op: Operation) -> None:
    try:
        from . import mem_prims
    except ImportError as e:
        raise _fail(op, "memory primitives lowering (mem_prims.py) is not available yet") from e
    fn_name = {
        tile.Im2colOp: "lower_im2col",
        tile.WinogradFilterOp: "lower_winograd_filter",
        tile.WinogradInputOp: "lower_winograd_input",
        tile.WinogradOutputOp: "lower_winograd_output",
    }[type(op)]
    fn = getattr(mem_prims, fn_name, None)
    if fn is None:
        raise _fail(op, f"mem_prims.{fn_name} is not available yet")
    assert isinstance(op, tile._MemPrimitive)
    ctx.flush()
    ctx.barrier_before_read(op.input)
    for o in fn(op, ctx):
        ctx.emit(o)
    ctx.note_memref_write(op.output)


def _broadcast_slices(op: tile.MapOp, v: SSAValue) -> list[tuple[int, int]]:
    """For a ``rep`` broadcast input of a map whose output is split over the CPEs: the
    (input dim, output dim) pairs along which the input varies with a split output dim (so each
    CPE needs only its block of the input)."""
    ti, to = v.type, op.out.type
    assert isinstance(ti, TileBufType) and isinstance(to, TileBufType)
    if ti.dist_kind != Dist.REP or to.dist_kind == Dist.REP or ti.get_shape() == to.get_shape():
        return []
    si, so = ti.get_shape(), to.get_shape()
    shift = len(so) - len(si)
    split = {Dist.RC: (0, 1), Dist.CR: (0, 1), Dist.CPE: (to.split_dim or 0,)}[to.dist_kind]
    return [(k, k + shift) for k in range(len(si)) if si[k] != 1 and k + shift in split and so[k + shift] != 1]


def _padded_rep_buffers(k: tile.KernelOp) -> dict[SSAValue, tuple[int, ...]]:
    """``rep`` tiles sliced per CPE by a map with a ragged ``cpe`` output get dim rows up to
    64*q, so that every CPE's slice (also the empty CPEs') lies inside the buffer."""
    out: dict[SSAValue, tuple[int, ...]] = {}
    for op in k.walk():
        if not isinstance(op, tile.MapOp):
            continue
        to = op.out.type
        assert isinstance(to, TileBufType)
        if to.dist_kind != Dist.CPE:
            continue
        q = to.local_shape()[to.split_dim or 0]
        for v in op.inputs:
            for ki, _ in _broadcast_slices(op, v):
                t = v.type
                assert isinstance(t, TileBufType)
                shape = list(out.get(v, local_buffer_shape(t)))
                shape[ki] = max(shape[ki], q * dmaplan.N_CPE)
                out[v] = tuple(shape)
    return out


def _map_input(ctx: LowerCtx, op: tile.MapOp, v: SSAValue) -> SSAValue:
    """The loop-level input of a map: the local buffer, or for a ``rep`` broadcast input of a
    split output the view of this CPE's block of it."""
    lv = ctx.value(v)
    sl = _broadcast_slices(op, v)
    if not sl:
        ti, to = v.type, op.out.type
        assert isinstance(ti, TileBufType) and isinstance(to, TileBufType)
        if (ti.dist_kind == Dist.CPE and to.layout_kind == Layout.COL and ti.layout_kind == Layout.ROW
                and len(ti.get_shape()) == 2 and ti.get_shape() != to.get_shape() and 1 in ti.get_shape()):
            # a cpe-split (rows, 1) / (1, cols) broadcast operand of a col-stored output: the
            # output's LDM block is (dim 1, dim 0), so the operand broadcasts as its transpose
            # (same bytes: one dim is 1)
            lt = lv.type
            assert isinstance(lt, LdmBufType)
            view = loop.ViewOp(lv, ctx.const(0), LdmBufType(list(lt.get_shape())[::-1], lt.element_type))
            view.result.name_hint = f"{lv.name_hint or 'b'}_t"
            ctx.emit(view)
            return view.result
        return lv
    ti, to = v.type, op.out.type
    assert isinstance(ti, TileBufType) and isinstance(to, TileBufType)
    blocks, _ = dmaplan.cpe_blocks(to.dist.data, to.get_shape())
    lt = lv.type
    assert isinstance(lt, LdmBufType)
    bshape = lt.get_shape()
    pitch = [math.prod(bshape[i + 1 :]) for i in range(len(bshape))]
    shape = list(ti.get_shape())
    off: SSAValue = ctx.const(0)
    for ki, ko in sl:
        blk = blocks[ko]
        if any(bshape[j] != 1 for j in range(ki)) and len(sl) == 1 and ki > 0:
            raise _fail(op, f"broadcast input %{v.name_hint or 'tile'} slice along dim {ki} is not contiguous in LDM")
        off = ctx.add(off, ctx.cpe_term(blk.a * pitch[ki], blk.b * pitch[ki]))
        shape[ki] = blk.n
    if len(sl) > 1:
        raise _fail(op, f"broadcast input %{v.name_hint or 'tile'} varies along two split dims")
    if to.layout_kind == Layout.COL:
        shape = shape[::-1]
    view = loop.ViewOp(lv, off, LdmBufType(shape, ti.element_type))
    view.result.name_hint = f"{lv.name_hint or 'b'}_blk"
    ctx.emit(view)
    return view.result


def _lower_map(ctx: LowerCtx, op: tile.MapOp) -> None:
    bufs = list(op.inputs) + [op.out]
    ctx.sync_buffers(bufs)
    ins = [_map_input(ctx, op, v) for v in op.inputs]
    out = ctx.value(op.out)
    kind = op.map_kind
    props = {k: v for k, v in op.properties.items() if k != "kind"}
    ot = op.out.type
    assert isinstance(ot, TileBufType)
    if kind in (MapKind.COPY, MapKind.CONVERT) and len(ot.get_shape()) == 2:
        it = op.inputs[0].type
        assert isinstance(it, TileBufType)
        if it.layout_kind != ot.layout_kind:
            # a transposing copy / convert (the col buffer is the swapped local block)
            new = loop.MapOp(MapKind.TRANSPOSE, ins, out, perm=(1, 0))
            lin, lout = ins[0].type, out.type
            assert isinstance(lin, LdmBufType) and isinstance(lout, LdmBufType)
            err = check_map(
                MapKind.TRANSPOSE, [lin.get_shape()], [_elem_name(lin)], lout.get_shape(), _elem_name(lout), {"perm": (1, 0)}
            )
            if err:
                raise _fail(op, f"{kind.value} with a layout change becomes loop.map transpose: {err}")
            ctx.emit(new)
            return
    new = loop.MapOp.build(
        operands=[ins, out], properties={"kind": loop.MapKindAttr(kind), **props}
    )
    ctx.emit(new)


# --------------------------------------------------------------------------------------------
# tile.move
# --------------------------------------------------------------------------------------------


def _piece_starts(ctx: LowerCtx, plan: _MovePlan, offsets: Sequence[SSAValue]) -> list[SSAValue]:
    out = []
    for d, o in enumerate(offsets):
        a, b = plan.cpe_coef(d)
        out.append(ctx.add(o, ctx.cpe_term(a, b)))
    return out


def _view(ctx: LowerCtx, buf: SSAValue, off: int | SSAValue, count: int, whole: bool) -> SSAValue:
    bt = buf.type
    assert isinstance(bt, LdmBufType)
    if whole and isinstance(off, int) and off == 0:
        return buf
    o = ctx.const(off) if isinstance(off, int) else off
    v = _view_op(buf, o, _ldm_type((count,), bt.element_type))
    ctx.emit(v)
    return v.result


def _emit_box(
    ctx: LowerCtx,
    plan: _MovePlan,
    n: Sequence[int],
    lo: Sequence[int],
    hi: Sequence[int],
    starts: Sequence[SSAValue],
    mem: SSAValue,
    buf: SSAValue,
    mode: DmaMode | None = None,
) -> tuple[list[SSAValue], bool]:
    """DMAs of the valid box of one piece. Returns (tokens, complete): when the DMAs are in an
    ``scf.for`` (more than ``max_unrolled_dmas``), they are waited inside and no token is
    returned."""
    op = plan.op
    r = len(plan.shape)
    sp = dmaplan.split_box(plan.shape, plan.strides, plan.full_n, lo, hi, plan.order, plan.elem_bytes)
    per = math.prod(sp.sizes)
    bt = buf.type
    assert isinstance(bt, LdmBufType)
    whole = per == bt.n_elems
    lead = list(sp.lead)
    # the innermost lead dims are unrolled (up to max_unrolled_dmas), the others become scf.for
    unrolled: list[int] = []
    cnt = 1
    for d in reversed(lead):
        e = hi[d] - lo[d]
        if cnt * e > ctx.options.max_unrolled_dmas:
            break
        unrolled.insert(0, d)
        cnt *= e
    looped = [d for d in lead if d not in unrolled]

    def issue(idx_vals: dict[int, SSAValue]) -> list[SSAValue]:
        toks = []
        for combo in dmaplan.product([range(lo[d], hi[d]) for d in unrolled]):
            idx: dict[int, int] = {d: lo[d] for d in range(r)}
            for d, i in zip(unrolled, combo):
                idx[d] = i
            offs = []
            ldm_static = 0
            ldm_dyn: list[SSAValue] = []
            for d in range(r):
                if d in idx_vals:
                    iv = idx_vals[d]
                    offs.append(ctx.add(starts[d], ctx.mulc(iv, plan.strides[d])))
                    ldm_dyn.append(ctx.mulc(iv, sp.ldm_pitch[d]))
                else:
                    offs.append(ctx.addc(starts[d], idx[d] * plan.strides[d]))
                    ldm_static += idx[d] * sp.ldm_pitch[d]
            ldm_off: int | SSAValue = ldm_static
            if ldm_dyn:
                acc = ctx.const(ldm_static)
                for x in ldm_dyn:
                    acc = ctx.add(acc, x)
                ldm_off = acc
            v = _view(ctx, buf, ldm_off, per, whole)
            if op.is_load:
                d_op = _dma_start(mem, v, offs, sp.sizes, plan.strides, mode)
            else:
                d_op = _dma_start(v, mem, offs, sp.sizes, plan.strides)
            ctx.emit(d_op)
            toks.append(d_op.token)
        return toks

    if not looped:
        return issue({}), True
    # scf.for nest over the looped lead dims; each iteration waits its own DMAs
    saved_block = ctx.block
    idx_vals: dict[int, SSAValue] = {}
    fors: list[tuple[scf.ForOp, Block]] = []
    for d in looped:
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = f"s{d}"
        f = scf.ForOp(ctx.const(lo[d]), ctx.const(hi[d]), ctx.const(1), [], body)
        ctx.emit(f)
        ctx.block = body
        idx_vals[d] = body.args[0]
        fors.append((f, body))
    toks = issue(idx_vals)
    ctx.emit(loop.DmaWaitOp(toks))
    for _, body in reversed(fors):
        body.add_op(scf.YieldOp())
    ctx.block = saved_block
    return [], False


def _cmp(ctx: LowerCtx, x: SSAValue, pred: str, c: int) -> SSAValue:
    return ctx.emit(arith.CmpiOp(x, ctx.const(c), pred)).results[0]


def _emit_if(
    ctx: LowerCtx,
    cond: SSAValue,
    then: Callable[[], list[SSAValue]],
    other: Callable[[], list[SSAValue]],
    n_tokens: int = 0,
) -> list[SSAValue]:
    """``scf.if`` whose branches yield ``n_tokens`` DMA tokens each (0: no results)."""
    blocks = []
    for fn in (then, other):
        blk = Block()
        saved = ctx.push(blk)
        toks = fn()
        ctx.pop(saved)
        assert len(toks) == n_tokens
        blk.add_op(scf.YieldOp(*toks))
        blocks.append(blk)
    op = scf.IfOp(cond, [loop.TokenType()] * n_tokens, Region(blocks[0]), Region(blocks[1]))
    ctx.emit(op)
    return list(op.results)


def _emit_leaf(
    ctx: LowerCtx, plan: _MovePlan, n: Sequence[int], lo: Sequence[int], hi: Sequence[int],
    starts: Sequence[SSAValue], mem: SSAValue, buf: SSAValue, sync: bool,
) -> list[SSAValue]:
    op = plan.op
    full = all(l == 0 and h == e for l, h, e in zip(lo, hi, n))
    empty = any(h <= l for l, h in zip(lo, hi))
    if op.is_load and op.pad is not None and not full:
        ctx.emit(loop.MapOp(MapKind.FILL, [], buf, value=op.pad.value.data))
    if empty:
        return []
    mode = DmaMode.BCAST if plan.bcast else None
    toks, _ = _emit_box(ctx, plan, n, lo, hi, starts, mem, buf, mode)
    if sync and toks:
        ctx.emit(loop.DmaWaitOp(toks))
        return []
    return toks


def _leaves(plan: _MovePlan) -> list[tuple[dmaplan.CpeClass, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """Every variant (CPE class, piece extents, valid box lo/hi) of a move."""
    out = []
    for cls, n, cases in plan.classes:
        r = len(cases)

        def rec(d: int, lo: list[int], hi: list[int]) -> None:
            if d == r:
                out.append((cls, n, tuple(lo), tuple(hi)))
                return
            for c in cases[d]:
                if c.hi <= c.lo:
                    out.append((cls, n, (0,) * r, (0,) * r))
                else:
                    rec(d + 1, lo + [c.lo], hi + [c.hi])

        rec(0, [], [])
    return out


def balanced_tokens(ctx: LowerCtx, plan: _MovePlan) -> int | None:
    """For a dispatched (non-uniform) move: the number K of DMAs every variant issues when the
    variants with fewer DMAs are padded with 1-element dummy gets into a scratch buffer, so that
    the dispatch can yield K tokens and the move stays asynchronous (and prefetchable). None when
    that is not worth it: a variant needs more DMAs than the whole piece (clipped inner dims),
    or more than ``max_unrolled_dmas``."""
    if plan.uniform or plan.bcast:
        return None
    et = plan.op.memref.type.get_element_type()  # type: ignore[union-attr]
    if ("f64" if isinstance(et, Float64Type) else "f32") not in ctx._scratch and ctx.ldm_free_bytes() < loop.LDM_ALIGN:
        return None  # no room for the scratch buffer of the dummy DMAs
    r = len(plan.shape)
    full = dmaplan.split_box(plan.shape, plan.strides, plan.full_n, (0,) * r, plan.full_n, plan.order, plan.elem_bytes)
    k_full = full.count((0,) * r, plan.full_n)
    k = 0
    for _, _, lo, hi in _leaves(plan):
        if any(h <= l for l, h in zip(lo, hi)):
            continue
        sp = dmaplan.split_box(plan.shape, plan.strides, plan.full_n, lo, hi, plan.order, plan.elem_bytes)
        k = max(k, sp.count(lo, hi))
    k = max(k, 1)
    if k > k_full or k > ctx.options.max_unrolled_dmas:
        return None
    return k


def _dummy_dmas(ctx: LowerCtx, mem: SSAValue, n: int) -> list[SSAValue]:
    """``n`` one-element gets of element 0 of ``mem`` into this CPE's scratch buffer (token
    padding of a dispatched move; the data are never read)."""
    mt = mem.type
    assert isinstance(mt, MemRefType)
    scratch = ctx.scratch(mt.get_element_type())
    zeros = [ctx.const(0)] * len(mt.get_shape())
    toks = []
    for _ in range(n):
        d = _dma_start(mem, scratch, zeros, [1] * len(zeros))
        ctx.emit(d)
        toks.append(d.token)
    return toks


def emit_move(ctx: LowerCtx, op: tile.MoveOp, offsets: Sequence[SSAValue], buf: SSAValue, sync: bool) -> list[SSAValue]:
    """Emit the DMAs of ``op`` with the given loop-level offsets into/from LDM buffer ``buf``.
    Returns the tokens still in flight (none when ``sync``): uniform plans issue their DMAs
    directly, dispatched plans (boundary / ragged / rep-store variants, ``scf.if`` on the piece
    start or the CPE id) yield :func:`balanced_tokens` tokens from every branch, or wait inside
    the branches when they cannot be balanced."""
    plan = ctx.plan(op)
    mem = ctx.value(op.memref)
    starts = _piece_starts(ctx, plan, offsets)
    if plan.uniform:
        cls, n, cases = plan.classes[0]
        lo = tuple(c[0].lo for c in cases)
        hi = tuple(c[0].hi for c in cases)
        return _emit_leaf(ctx, plan, n, lo, hi, starts, mem, buf, sync)
    k = None if sync else balanced_tokens(ctx, plan)
    n_tok = k or 0

    def leaf(n: Sequence[int], lo: Sequence[int], hi: Sequence[int]) -> list[SSAValue]:
        toks = _emit_leaf(ctx, plan, n, lo, hi, starts, mem, buf, k is None)
        if k is None:
            return []
        return toks + _dummy_dmas(ctx, mem, k - len(toks))

    def by_dims(n: tuple[int, ...], cases: list[list[dmaplan.ClipCase]], d: int, lo: list[int], hi: list[int]) -> list[SSAValue]:
        if d == len(cases):
            return leaf(n, lo, hi)
        cs = cases[d]

        def one(j: int) -> list[SSAValue]:
            c = cs[j]
            if c.hi <= c.lo:  # nothing valid along this dim: the other dims do not matter
                r = len(cases)
                return leaf(n, [0] * r, [0] * r)
            return by_dims(n, cases, d + 1, lo + [c.lo], hi + [c.hi])

        def chain(j: int) -> list[SSAValue]:
            if j == len(cs) - 1:
                return one(j)
            cond = _cmp(ctx, starts[d], "sle", cs[j].s_hi)
            return _emit_if(ctx, cond, lambda: one(j), lambda: chain(j + 1), n_tok)

        return chain(0)

    classes = list(plan.classes)

    def by_class(j: int) -> list[SSAValue]:
        cls, n, cases = classes[j]
        if j == len(classes) - 1:
            return by_dims(n, cases, 0, [], [])
        cond = _cmp(ctx, ctx.cpe_id, "sle", cls.id_hi)
        return _emit_if(ctx, cond, lambda: by_dims(n, cases, 0, [], []), lambda: by_class(j + 1), n_tok)

    return by_class(0)


def _move_prologue_checks(ctx: LowerCtx, op: tile.MoveOp) -> None:
    ctx.sync_buffers([op.tile])
    ctx.sync_memrefs_for(ctx.value(op.memref), op.is_load)
    if op.is_load:
        ctx.barrier_before_read(op.memref)


def _lower_move_sync_or_async(ctx: LowerCtx, op: tile.MoveOp) -> None:
    _move_prologue_checks(ctx, op)
    offsets = [ctx.value(o) for o in op.offsets]
    buf = ctx.value(op.tile)
    toks = emit_move(ctx, op, offsets, buf, sync=False)
    mem = ctx.value(op.memref)
    ctx.add_pending(toks, op.tile, mem, op.is_load)
    if not op.is_load:
        ctx.note_memref_write(op.memref)


# --------------------------------------------------------------------------------------------
# tile.for (plain and double-buffered)
# --------------------------------------------------------------------------------------------


def _remat(
    ctx: LowerCtx, v: SSAValue, loop_op: tile.ForOp, subst: dict[SSAValue, SSAValue], memo: dict[SSAValue, SSAValue]
) -> SSAValue:
    """Loop-level value of tile index ``v`` with the iterators in ``subst`` replaced (arith ops
    inside ``loop_op`` are re-materialised at the insertion point)."""
    if v in subst:
        return subst[v]
    if v in memo:
        return memo[v]
    owner = v.owner
    if isinstance(owner, Operation) and loop_op.is_ancestor(owner):
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            res = ctx.const(owner.value.value.data)
        elif owner.dialect_name() == "arith" and not owner.regions:
            new = owner.clone(value_mapper={o: _remat(ctx, o, loop_op, subst, memo) for o in owner.operands})
            ctx.emit(new)
            res = new.results[list(owner.results).index(v)]
        else:
            raise _fail(owner, "offset of a double-buffered move depends on an unsupported op")
        memo[v] = res
        return res
    return ctx.value(v)


def _prefetch_candidates(ctx: LowerCtx, f: tile.ForOp) -> tuple[list[tile.MoveOp], list[tile.MoveOp]]:
    loads: list[tile.MoveOp] = []
    stores: list[tile.MoveOp] = []
    if not ctx.options.double_buffer:
        return loads, stores
    body_ops = list(f.body.block.ops)
    for i, m in enumerate(body_ops):
        if not isinstance(m, tile.MoveOp):
            continue
        al = m.tile.owner
        if not isinstance(al, tile.AllocOp) or not al.is_double or not _uses_in(m.tile, f):
            continue
        pl = ctx.plan(m)
        if not (pl.uniform or pl.bcast or balanced_tokens(ctx, pl) is not None):
            continue
        if any(isinstance(x, tile.MoveOp) and x is not m and x.tile is m.tile for x in f.walk()):
            continue
        if m.is_load:
            if any(_touches(x, m.tile) for x in body_ops[:i]):
                continue
            if m.memref in ctx.loop_writes.get(f, set()):
                continue  # the next tile may not be written yet (read-after-write across iterations)
            loads.append(m)
        else:
            if any(_touches(x, m.tile) for x in body_ops[i + 1 :]):
                continue
            stores.append(m)
    return loads, stores


_MAX_PEELED = 4  # boundary iterations peeled per loop (algorithms.md §E6 primitive switching)


def _depends_on(v: SSAValue, iv: SSAValue) -> bool:
    if v is iv:
        return True
    owner = v.owner
    return isinstance(owner, Operation) and owner.dialect_name() == "arith" and any(
        _depends_on(o, iv) for o in owner.operands
    )


def _boundary_iterations(ctx: LowerCtx, f: tile.ForOp, values: list[int]) -> set[int]:
    """Iterator values of ``f`` for which a boundary (pad/clip) move in its body has a piece
    that may cross the array border along a dim whose offset depends on ``f``'s iterator (given
    the values of the enclosing loops). Empty when peeling would not help: every boundary move
    can dispatch asynchronously inside the loop (:func:`balanced_tokens`), every value is a
    boundary one, more than ``_MAX_PEELED``, or fewer than two consecutive interior iterations
    would remain."""
    moves = []
    for m in f.walk():
        if isinstance(m, tile.MoveOp) and (m.pad is not None or m.clip is not None):
            dims = [d for d, o in enumerate(m.offsets) if _depends_on(o, f.iv)]
            if dims:
                moves.append((m, dims))
    if not moves or len(values) > 256:
        return set()
    bad: set[int] = set()
    saved = ctx.iv_values.get(f)
    try:
        ctx.iv_values[f] = values
        if all(ctx.plan(m).uniform or balanced_tokens(ctx, ctx.plan(m)) is not None for m, _ in moves):
            return set()  # the dispatch inside the loop stays asynchronous: nothing to gain
        for v in values:
            ctx.iv_values[f] = [v]
            for m, dims in moves:
                plan = ctx.plan(m)
                if any(
                    any(e > 0 for e in n) and any(len(cases[d]) != 1 or (cases[d][0].lo, cases[d][0].hi) != (0, n[d]) for d in dims)
                    for _, n, cases in plan.classes
                ):
                    bad.add(v)
                    break
    except PassFailedException:
        return set()
    finally:
        if saved is None:
            ctx.iv_values.pop(f, None)
        else:
            ctx.iv_values[f] = saved
    if len(bad) == len(values) or len(bad) > _MAX_PEELED:
        return set()
    run = best = 0
    for v in values:
        run = 0 if v in bad else run + 1
        best = max(best, run)
    if best < 2:  # no scf.for would remain: keep the loop (prefetching, dispatch inside)
        return set()
    return bad


def _writes_tile(op: Operation, b: SSAValue) -> bool:
    if isinstance(op, tile.MoveOp):
        return op.is_load and op.tile is b
    if isinstance(op, tile.MapOp):
        return op.out is b
    if isinstance(op, tile.GemmOp):
        return op.c is b
    if isinstance(op, tile.UnfoldOp):
        return op.out is b
    return False


def _hoistable_loads(ctx: LowerCtx, f: tile.ForOp) -> list[tile.MoveOp]:
    """Loads in ``f`` (at any depth) whose address does not depend on any loop inside ``f``
    (offsets defined outside ``f`` or constants), into a single-slot tile nothing else in ``f``
    writes, from a memref ``f`` does not write: 004 Alg. 7 places such a DMA before the loop."""
    out = []
    written = ctx.loop_writes.get(f, set())
    for m in f.walk():
        if not isinstance(m, tile.MoveOp) or not m.is_load or m in ctx.hoisted:
            continue
        al = m.tile.owner
        if isinstance(al, tile.AllocOp) and al.is_double:
            continue
        if m.memref in written:
            continue
        if any(
            isinstance(o.owner, Operation) and f.is_ancestor(o.owner) and not isinstance(o.owner, arith.ConstantOp)
            or isinstance(o, BlockArgument) and f.is_ancestor(o.owner.parent_op())  # type: ignore[union-attr, arg-type]
            for o in m.offsets
        ):
            continue
        if any(x is not m and _writes_tile(x, m.tile) for x in f.walk()):
            continue
        out.append(m)
    return out


def _lower_for(ctx: LowerCtx, f: tile.ForOp) -> None:
    """``tile.for`` -> ``scf.for``; loop-invariant loads are placed before it (Alg. 7);
    iterations whose boundary moves may cross the array border are peeled (lowered with the
    iterator as a constant, dispatching per CPE), so that the other iterations have uniform,
    asynchronous (and prefetchable) moves."""
    hoisted = _hoistable_loads(ctx, f)
    for m in hoisted:
        _lower_move_sync_or_async(ctx, m)
        ctx.hoisted.add(m)
    try:
        _lower_for_segments(ctx, f)
    finally:  # the body may be lowered again (an enclosing loop's peeled iteration)
        ctx.hoisted.difference_update(hoisted)


def _lower_for_segments(ctx: LowerCtx, f: tile.ForOp) -> None:
    values = ctx.iv_values.get(f, list(range(f.lb_value, f.ub_value, f.step_value)))
    bad = _boundary_iterations(ctx, f, values)
    segments: list[tuple[bool, list[int]]] = []  # (peeled, values)
    for v in values:
        if v in bad:
            segments.append((True, [v]))
        elif segments and not segments[-1][0]:
            segments[-1][1].append(v)
        else:
            segments.append((False, [v]))
    saved = ctx.iv_values.get(f)
    ctx.for_stack.append(f)
    try:
        for peeled, sg in segments:
            ctx.iv_values[f] = sg
            _lower_for_range(ctx, f, sg[0], len(sg), peeled)
    finally:
        ctx.for_stack.pop()
        if saved is None:
            ctx.iv_values.pop(f, None)
        else:
            ctx.iv_values[f] = saved


def _lower_for_range(ctx: LowerCtx, f: tile.ForOp, lb: int, n: int, peeled: bool = False) -> None:
    """Iterations ``lb, lb+step, ... (n of them)`` of ``f``."""
    ctx.flush()
    if peeled or n == 1:  # one iteration: inline, the iterator a constant
        assert n == 1
        ctx.vmap[f.iv] = ctx.const(lb)
        lower_block(ctx, f.body.block)
        ctx.flush()
        return
    loads, stores = _prefetch_candidates(ctx, f)
    inner = _wrap_candidate(ctx, f, n)
    if not loads and not stores and inner is None:
        _plain_for(ctx, f, lb, n)
    else:
        _double_buffered_for(ctx, f, loads, stores, lb, n, inner=inner)


def _remat_ok(v: SSAValue) -> bool:
    owner = v.owner
    if isinstance(v, BlockArgument) or not isinstance(owner, Operation):
        return True
    return owner.dialect_name() == "arith" and not owner.regions and all(_remat_ok(o) for o in owner.operands)


def _wrap_candidate(
    ctx: LowerCtx, f: tile.ForOp, n: int
) -> tuple[tile.ForOp, list[tile.MoveOp], list[tile.MoveOp]] | None:
    """Alg. 8's wrap: when ``f``'s body holds exactly one loop ``L`` with prefetchable loads
    (that ``L`` is not split at a boundary and ``f`` does not write their memrefs), prefetch
    ``L``'s first tile of ``f``'s next iteration during ``L``'s last iteration."""
    if not ctx.options.double_buffer or n < 2:
        return None
    fors = [o for o in f.body.block.ops if isinstance(o, tile.ForOp)]
    if len(fors) != 1:
        return None
    L = fors[0]
    if _boundary_iterations(ctx, L, list(range(L.lb_value, L.ub_value, L.step_value))):
        return None
    loads, stores = _prefetch_candidates(ctx, L)
    written = ctx.loop_writes.get(f, set())
    loads = [m for m in loads if m.memref not in written and all(_remat_ok(o) for o in m.offsets)]
    if not loads:
        return None
    return L, loads, stores


def _plain_for(ctx: LowerCtx, f: tile.ForOp, lb: int, n: int) -> None:
    body = Block(arg_types=[IndexType()])
    body.args[0].name_hint = f.iv.name_hint
    ctx.vmap[f.iv] = body.args[0]
    saved = ctx.push(body)
    lower_block(ctx, f.body.block)
    ctx.pop(saved)
    body.add_op(scf.YieldOp())
    step = f.step_value
    ctx.emit(scf.ForOp(ctx.const(lb), ctx.const(lb + n * step), ctx.const(step), [], body))


def _double_buffered_for(
    ctx: LowerCtx,
    f: tile.ForOp,
    loads: list[tile.MoveOp],
    stores: list[tile.MoveOp],
    lb: int,
    n: int,
    *,
    inner: tuple[tile.ForOp, list[tile.MoveOp], list[tile.MoveOp]] | None = None,
    incoming: dict[tile.MoveOp, list[SSAValue]] | None = None,
    counter0: SSAValue | None = None,
    wrap_next: Callable[[tile.MoveOp], list[SSAValue]] | None = None,
) -> tuple[dict[tile.MoveOp, list[SSAValue]], SSAValue]:
    """Iterations ``lb, lb+step, ...`` (``n``) of ``f`` with prefetched ``loads`` and delayed
    ``stores`` (004 Alg. 8; module docstring).

    Alg. 8's wrap to the outer loop: ``inner = (L, loads_L, stores_L)`` names the one loop of
    ``f``'s body whose ``loads_L`` are prefetched across ``f``'s iterations: the prologue fetches
    their first tile before ``f``, ``L`` runs with the tokens carried by ``f``
    (``incoming``, slot counter ``counter0``) and its last iteration prefetches the first tile
    of ``f``'s next iteration (``wrap_next`` gives those offsets; None in ``f``'s last
    iteration). Returns the tokens of loads still in flight (the wrap prefetch) and the slot
    counter after the last iteration."""
    step = f.step_value
    bufs = [m.tile for m in loads + stores]
    c_base = counter0 if counter0 is not None else ctx.const(0)

    def slot(b: SSAValue, c: SSAValue) -> SSAValue:
        s = loop.SlotOp(ctx.ldm[b], c)
        s.result.name_hint = f"{ctx.ldm[b].name_hint}_cur"
        ctx.emit(s)
        return s.result

    load_toks: dict[tile.MoveOp, list[SSAValue]] = {}
    if incoming is not None:
        load_toks.update(incoming)
    else:  # prologue: the first tile of every prefetched load into slot 0
        for m in loads:
            _move_prologue_checks(ctx, m)
            offs = [_remat(ctx, o, f, {f.iv: ctx.const(lb)}, {}) for o in m.offsets]
            load_toks[m] = emit_move(ctx, m, offs, slot(m.tile, c_base), sync=False)
    store_toks: dict[tile.MoveOp, list[SSAValue]] = {m: [] for m in stores}
    inner_toks: dict[tile.MoveOp, list[SSAValue]] = {}
    inner_c: list[SSAValue] = []
    if inner is not None:
        L, inner_loads, _ = inner
        for m in inner_loads:
            _move_prologue_checks(ctx, m)
            subst = {f.iv: ctx.const(lb), L.iv: ctx.const(L.lb_value)}
            offs = [_remat(ctx, o, f, subst, {}) for o in m.offsets]
            inner_toks[m] = emit_move(ctx, m, offs, slot(m.tile, ctx.const(0)), sync=False)
        inner_c.append(ctx.const(0))

    def iteration(iv: SSAValue, c: SSAValue, prefetch: bool, store_async: bool, last: bool) -> None:
        """Lower one iteration of the body at the current insertion point. ``prefetch``: start
        the next loads (in the last iteration: the wrap-around ones, if any)."""
        ctx.vmap[f.iv] = iv
        sc = ctx.scopes[-1]
        saved_views = dict(sc.views)
        for b in bufs:
            sc.views[b] = slot(b, c)
        for op in f.body.block.ops:
            if isinstance(op, tile.MoveOp) and op in load_toks:
                ctx.emit(loop.DmaWaitOp(load_toks[op])) if load_toks[op] else None
                load_toks[op] = []
                if prefetch and not last:
                    nxt = ctx.addc(iv, step)
                    offs = [_remat(ctx, o, f, {f.iv: nxt}, {}) for o in op.offsets]
                    load_toks[op] = emit_move(ctx, op, offs, slot(op.tile, ctx.addc(c, 1)), sync=False)
                elif prefetch and wrap_next is not None:
                    load_toks[op] = emit_move(ctx, op, wrap_next(op), slot(op.tile, ctx.addc(c, 1)), sync=False)
                continue
            if isinstance(op, tile.MoveOp) and op in store_toks:
                ctx.sync_buffers([op.tile])
                if store_toks[op]:
                    ctx.emit(loop.DmaWaitOp(store_toks[op]))
                offs = [ctx.value(o) for o in op.offsets]
                toks = emit_move(ctx, op, offs, ctx.value(op.tile), sync=False)
                ctx.note_memref_write(op.memref)
                if store_async:
                    store_toks[op] = toks
                else:
                    store_toks[op] = []
                    ctx.add_pending(toks, op.tile, ctx.value(op.memref), False)
                continue
            if inner is not None and op is inner[0]:
                _lower_inner_wrapped(ctx, f, iv, inner, inner_toks, inner_c, wrap=not last)
                continue
            lower_op(ctx, op)
        ctx.flush()
        sc.views = saved_views

    def at(k: int) -> SSAValue:
        return ctx.addc(c_base, k)

    if n == 1:
        iteration(ctx.const(lb), c_base, wrap_next is not None, False, last=True)
        return {m: t for m, t in load_toks.items() if t}, at(1)
    peel_first = bool(stores)
    peel_last = bool(loads) or inner is not None
    k0 = 0
    if peel_first:
        iteration(ctx.const(lb), c_base, prefetch=True, store_async=True, last=False)
        k0 = 1
    k1 = n - 1 if peel_last else n
    groups = (load_toks, store_toks, inner_toks)
    if k1 > k0:
        carried: list[tuple[int, tile.MoveOp, int]] = []
        inits: list[SSAValue] = []
        for g, d in enumerate(groups):
            for m, toks in d.items():
                for j, t in enumerate(toks):
                    carried.append((g, m, j))
                    inits.append(t)
        n_inner_c = len(inner_c)
        body = Block(arg_types=[IndexType()] + [loop.TokenType()] * len(inits) + [IndexType()] * (1 + n_inner_c))
        body.args[0].name_hint = f.iv.name_hint
        body.args[1 + len(inits)].name_hint = "slot"
        inits.append(at(k0))
        inits += inner_c
        saved = ctx.push(body)
        targs = body.args[1 : 1 + len(carried)]
        for (g, m, j), a in zip(carried, targs):
            groups[g][m][j] = a
        if n_inner_c:
            inner_c[0] = body.args[-1]
            inner_c[0].name_hint = "slot_in"
        iteration(body.args[0], body.args[1 + len(carried)], prefetch=True, store_async=True, last=False)
        outs: list[SSAValue] = []
        for g, m, j in carried:
            if len(groups[g][m]) != sum(1 for gg, mm, _ in carried if gg == g and mm is m):
                raise _fail(m, "token count changed between iterations")
            outs.append(groups[g][m][j])
        nc = ctx.addc(body.args[1 + len(carried)], 1)
        ctx.pop(saved)
        body.add_op(scf.YieldOp(*outs, nc, *inner_c))
        loop_op = scf.ForOp(ctx.const(lb + k0 * step), ctx.const(lb + k1 * step), ctx.const(step), inits, body)
        ctx.emit(loop_op)
        res = list(loop_op.results)
        for (g, m, j), r in zip(carried, res):
            groups[g][m][j] = r
        if n_inner_c:
            inner_c[0] = res[-1]
    if peel_last:
        iteration(ctx.const(lb + (n - 1) * step), at(n - 1), prefetch=wrap_next is not None, store_async=True, last=True)
    rest = [t for toks in store_toks.values() for t in toks] + [t for toks in inner_toks.values() for t in toks]
    if wrap_next is None:
        rest += [t for toks in load_toks.values() for t in toks]
    if rest:
        ctx.emit(loop.DmaWaitOp(rest))
    return ({m: t for m, t in load_toks.items() if t} if wrap_next is not None else {}), at(n)


def _lower_inner_wrapped(
    ctx: LowerCtx,
    f: tile.ForOp,
    iv: SSAValue,
    inner: tuple[tile.ForOp, list[tile.MoveOp], list[tile.MoveOp]],
    inner_toks: dict[tile.MoveOp, list[SSAValue]],
    inner_c: list[SSAValue],
    wrap: bool,
) -> None:
    """The inner loop of an Alg. 8 wrap (see :func:`_double_buffered_for`), updating the
    carried tokens and slot counter in place."""
    L, loads_L, stores_L = inner
    ctx.flush()
    hoisted = _hoistable_loads(ctx, L)
    for m in hoisted:
        _move_prologue_checks(ctx, m)
        _lower_move_sync_or_async(ctx, m)
        ctx.hoisted.add(m)
    ctx.flush()
    ctx.for_stack.append(L)
    try:
        wrap_next = None
        if wrap:
            def wrap_next(m: tile.MoveOp) -> list[SSAValue]:
                subst = {f.iv: ctx.addc(iv, f.step_value), L.iv: ctx.const(L.lb_value)}
                return [_remat(ctx, o, f, subst, {}) for o in m.offsets]
        out, c_after = _double_buffered_for(
            ctx, L, loads_L, stores_L, L.lb_value, L.trip_count,
            incoming=dict(inner_toks), counter0=inner_c[0], wrap_next=wrap_next,
        )
    finally:
        ctx.for_stack.pop()
        ctx.hoisted.difference_update(hoisted)
    for m in inner_toks:
        inner_toks[m] = out.get(m, [])
    inner_c[0] = c_after


def _clone_lowered(first: loop.SpmdOp, k: tile.KernelOp) -> loop.SpmdOp:
    """The ``loop.spmd`` of ``k``, a kernel whose body is structurally identical to the one
    ``first`` was lowered from (:func:`~taihu.passes.conversion.kernel_key.structural_key`):
    a copy of ``first``'s body on ``k``'s operands, with ``k``'s name and attributes. The LDM
    buffers of ``k``'s allocations (the first ``loop.ldm_buffer`` ops, in allocation order) are
    renamed as :func:`lower_kernel` names them; value names stay those of ``first``."""
    spmd = loop.SpmdOp(k.kernel_name.data, list(k.args), first.body.clone())
    spmd.attributes |= dict(k.attributes)
    for a, b in zip(k.body.block.args, spmd.memref_args):
        b.name_hint = a.name_hint
    bufs = [o for o in spmd.body.block.ops if isinstance(o, loop.LdmBufferOp)]
    allocs = list(k.allocs())
    used: set[str] = set()
    for i, b in enumerate(bufs):
        base = (allocs[i].result.name_hint or f"buf{i}") if i < len(allocs) else b.buffer_name.data
        base = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in base) or "buf"
        nm, j = base, 1
        while nm in used:
            nm = f"{base}_{j}"
            j += 1
        used.add(nm)
        if nm != b.buffer_name.data:
            b.properties["name"] = StringAttr(nm)
            b.result.name_hint = nm
    return spmd


# --------------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertTileToLoopPass(ModulePass):
    """Lower every ``tile.kernel`` to a ``loop.spmd`` (module docstring).

    Options: ``double_buffer`` (bool, default true), ``max_unrolled_dmas`` (int, default 64),
    ``rep_bcast`` (bool, default true)."""

    name = "convert-tile-to-loop"

    double_buffer: bool = True
    max_unrolled_dmas: int = 64
    rep_bcast: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = [k for k in op.walk() if isinstance(k, tile.KernelOp)]
        lowered: dict[tuple, loop.SpmdOp] = {}  # structural key -> first lowering
        for k in kernels:
            key = structural_key(k)
            first = lowered.get(key)
            if first is not None:
                spmd = _clone_lowered(first, k)
            else:
                spmd = lower_kernel(k, self)
                # the LDM footprint (the module is verified as a whole after the pass); the
                # full verify_ (operand types, isolation walk) only for its message on overflow
                if spmd.ldm_bytes() > default_machine().ldm_user_bytes:
                    try:
                        spmd.verify_()
                    except VerifyException as e:
                        raise _fail(k, f"the lowered kernel does not verify: {e}") from e
                lowered[key] = spmd
            parent = k.parent_block()
            assert parent is not None
            parent.insert_op_before(spmd, k)
            k.detach()
            k.erase(safe_erase=False)
