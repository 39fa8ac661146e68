"""``convert-loop-to-sw``: the per-CPE ``loop`` level + its host program -> the ``sw`` dialect.

Input (contract "host-side form"): a ``builtin.module`` with ``memref.global`` constants and ONE
host function (``func.func @main``, or the only ``func.func`` of the module) whose arguments and
results are main-memory memrefs (``{graph.name = "..."}`` names them) and whose body holds
``memref.get_global``, ``memref.alloc``, reshape views (``memref.collapse_shape``,
``memref.expand_shape``, ``memref.reinterpret_cast``, ``memref.cast``, static ``memref.subview``),
``memref.dealloc`` and ``loop.spmd`` kernels. Output: an ``sw`` module (contract-sw.md)::

    sw.global @w_conv1 : tensor<64x3x7x7xf32> = dense<...>      // memref.global (value kept)
    sw.global @data : tensor<1x3x224x224xf32> io input           // func argument (graph.name)
    sw.global @prob : tensor<1x1000xf32> io output               // returned buffer (graph.name)
    sw.kernel @conv1(%a: i64, %b: i64, %c: i64) attributes {taihu.layer = ...} { ... }
    func.func @main() {
      %a = sw.global_addr @data                                  // argument / get_global
      %t0 = sw.mem_alloc 1605632                                 // memref.alloc (bytes)
      %v = arith.addi %t0, %off : i64                            // a view with an offset
      sw.spawn @conv1(%a, %w, %t0)                               // loop.spmd
      sw.join
      func.return
    }

Host mapping: ``memref.global`` -> ``sw.global`` with its initial value (a ``dense`` /
``dense_resource`` attribute re-typed as a tensor, no copy of blob bytes); argument ``i`` ->
``sw.global @<graph.name> io input`` (name sanitised to ``[A-Za-z0-9_.]``, default ``arg<i>``;
a sanitised name keeps the original as ``{graph.name = "..."}``);
a returned buffer (a ``memref.alloc``, possibly seen through views) -> ``sw.global @<graph.name>
io output`` of the returned type, default ``out<i>``; other allocations -> ``sw.mem_alloc``
(bytes, 128-B aligned by the simulator, 004 L865 R7); views -> the same address + the view's
static byte offset; ``memref.dealloc`` is dropped. Symbols are unique in the module: io globals
keep their names, other globals and kernels get ``_1``, ``_2`` ... suffixes on a clash.

Kernel mapping (``loop.spmd "NAME"`` -> ``sw.kernel @NAME`` + ``sw.spawn``/``sw.join``; the
``taihu.*`` attributes are copied onto the kernel; one i64 argument per memref operand = its
main-memory byte address):

* ``%row``/``%col`` -> ``sw.row_id``/``sw.col_id``; ``index`` arithmetic (``arith``), ``scf.for``,
  ``scf.if`` -> the same ops on ``i64``; ``!loop.ldm`` values (incl. those carried by ``scf``)
  -> i64 LDM byte addresses; ``!loop.token`` values disappear from ``scf`` iter_args/results.
* ``loop.ldm_buffer`` -> ``sw.ldm_alloc`` of its footprint (two 32-B rounded slots for double
  buffers); ``loop.slot %b[%i]`` -> ``base + (i & 1) * slot_bytes`` (folded for constants).
* Tokens: every chain of tokens connected through ``scf.for`` iter_args/yields/results and
  ``scf.if`` yields/results gets ONE reply word (``sw.reply_alloc``, loop.py docstring: one DMA in
  flight per chain). ``loop.dma_start`` -> ``sw.dma_get``/``sw.dma_put`` of
  :meth:`DmaStartOp.descriptor` (size, bsize, stride bytes; address = base + row-major offset)
  incrementing it; ``loop.dma_wait`` -> ``sw.dma_wait %rw, 1`` + ``sw.reply_reset %rw`` per
  chain (a token waited again where an earlier wait of the same token dominates is skipped).
  ``mode bcast`` gets (one DMA delivered to every CPE, spec §4.3 rule 7): ``sw.barrier array``
  (no CPE still reads the buffer; omitted for the first write of a buffer outside loops), CPE 0
  issues the broadcast get -- a large one (>= :data:`BCAST_SPLIT_BYTES`) in up to 4 parts
  issued by CPEs 0, 2, 4, 6, one per DMA bus (:func:`bcast_parts`); its wait = the issuers wait
  + ``sw.barrier array``. ``mode row`` is refused (the simulator has no row mode).
* ``loop.barrier`` -> ``sw.barrier``.
* ``loop.summa_step`` / ``loop.gemm_block`` / ``loop.rlc_bcast`` -> register micro-kernels
  (:mod:`.gemm`, 004 Alg. 2 / Listing 4.1); ``loop.map`` -> :func:`.maps.lower_map` (owner B).

Kernel deduplication (option ``dedup-kernels``, default on): networks repeat layers (ResNet-50: 98
``loop.spmd``, 40 distinct bodies) and a kernel takes its buffers as arguments, so a body is
lowered once per :func:`~taihu.passes.conversion.kernel_key.structural_key` (equal op
structure, types, properties and attributes; ``loop.ldm_buffer`` names ignored) and every
repeat becomes a spawn of the first one's ``sw.kernel``, carrying its own launch name and
``taihu.*`` attributes::

    sw.kernel @r97(...) attributes {taihu.layer = "r97", ...} { ... }
    sw.spawn @r97(%a, %b, %c)
    sw.spawn @r97(%d, %e, %f) {taihu.name = "r107", taihu.layer = "r107", ...}

The simulator reports each launch under ``taihu.name`` (default: the kernel symbol) with the
spawn's ``taihu.*`` attributes (default: the kernel's). The launch names are the symbols the
kernels get without deduplication, so reports are identical either way.

Errors: ``DiagnosticException`` naming the op (unsupported op or view, dynamic shapes, a
returned buffer that is not an allocation of the host function, several host functions).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import loop, sw
from taihu.dialects.sw import BarrierScope, DmaMode
from taihu.passes.conversion.kernel_key import structural_key

__all__ = ["LAUNCH_NAME", "ConvertLoopToSwPass", "KernelLowering", "lower_module", "reg_instr", "sanitize"]

_NAME_OK = re.compile(r"[^A-Za-z0-9_.]")


def sanitize(name: str) -> str:
    """A symbol name from a graph/kernel name: characters outside ``[A-Za-z0-9_.]`` -> ``_``."""
    s = _NAME_OK.sub("_", name) or "_"
    return s


@functools.cache
def int_attr(v: int) -> IntegerAttr:
    """Shared ``IntegerAttr(v, i64)`` (attributes are immutable; building one is slow)."""
    return IntegerAttr(v, i64)


_NO_OVERFLOW = arith.IntegerOverflowAttr("none")
_REPLY = sw.ReplyType()
_CMP = {name: IntegerAttr(i, i64) for i, name in enumerate(("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"))}


def int_binop(cls: type[Operation], a: SSAValue, b: SSAValue) -> Operation:
    """``cls(a, b)`` on i64 (``arith.addi``/``muli``/``andi``/``divui``/``remui``...) without
    IRDL's constructor checks (shared property attributes; the module is verified after the pass)."""
    return cls.create(operands=[a, b], result_types=[i64], properties=_binop_props(cls))


@functools.cache
def _binop_props(cls: type[Operation]) -> dict[str, Attribute]:
    has_flags = "overflowFlags" in cls.get_irdl_definition().properties  # type: ignore[attr-defined]
    return {"overflowFlags": _NO_OVERFLOW} if has_flags else {}


def reg_instr(cls: type[Operation], properties: dict[str, Attribute]) -> Operation:
    """A new register instruction (operand-less, result-less ``sw`` op) of class ``cls``
    holding ``properties`` (taken over): :func:`taihu.dialects.sw.new_instr`, the same op as
    ``cls.create(properties=properties)`` at ~1/10 of the cost (82 % of the ops this pass
    builds are such instructions). Not verified (the module is verified after the pass)."""
    return sw.new_instr(cls, properties)


def cmpi(a: SSAValue, b: SSAValue, predicate: str) -> Operation:
    """``arith.cmpi predicate, a, b`` (i1) without IRDL's constructor checks."""
    return arith.CmpiOp.create(operands=[a, b], result_types=[i1], properties={"predicate": _CMP[predicate]})


def _err(op: Operation | None, msg: str) -> DiagnosticException:
    where = f"'{op.name}': " if op is not None else ""
    return DiagnosticException(f"convert-loop-to-sw: {where}{msg}")


def _elem_bytes(t: MemRefType) -> int:
    et = t.get_element_type()
    bw = getattr(et, "bitwidth", None)
    if bw is None:
        bw = getattr(getattr(et, "width", None), "data", None)
    if not bw:
        raise _err(None, f"unsupported element type {et}")
    return bw // 8


def _memref_bytes(t: MemRefType) -> int:
    return math.prod(t.get_shape()) * _elem_bytes(t)


def _const_index(v: SSAValue) -> int | None:
    o = v.owner
    if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr):
        return o.value.value.data
    return None


class _Names:
    """Module-wide unique symbol names (globals, kernels and @main share the symbol table)."""

    def __init__(self) -> None:
        self.used: set[str] = {"main"}

    def reserve(self, name: str) -> bool:
        if name in self.used:
            return False
        self.used.add(name)
        return True

    def unique(self, base: str) -> str:
        base = sanitize(base)
        if self.reserve(base):
            return base
        i = 1
        while not self.reserve(f"{base}_{i}"):
            i += 1
        return f"{base}_{i}"


# --------------------------------------------------------------------------------------------
# Kernel side
# --------------------------------------------------------------------------------------------


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[SSAValue, SSAValue] = {}

    def find(self, v: SSAValue) -> SSAValue:
        p = self.parent.setdefault(v, v)
        if p is v:
            return v
        r = self.find(p)
        self.parent[v] = r
        return r

    def union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[rb] = ra


def _is_token(v: SSAValue) -> bool:
    return isinstance(v.type, loop.TokenType)


def _new_type(t: Attribute) -> Attribute | None:
    """Type of a loop-level value in sw: index/ldm -> i64, token -> None (dropped)."""
    if isinstance(t, loop.TokenType):
        return None
    if isinstance(t, (IndexType, loop.LdmBufType)):
        return i64
    return t


@dataclass
class _Chain:
    reply: SSAValue
    bcast: bool = False
    bcast_issuers: int = 1  # CPEs issuing parts of the chain's broadcast gets (bcast_parts)


#: CPEs that issue the parts of a split broadcast get: one per DMA bus (bus = column // 2,
#: 004 L462: 16 CPEs of two adjacent columns share one of the 4 row-direction buses).
BCAST_ISSUERS = (0, 2, 4, 6)
#: broadcast gets of at least this many bytes are split over :data:`BCAST_ISSUERS`.
BCAST_SPLIT_BYTES = 2048


def bcast_parts(size: int, bsize: int, stride: int) -> list[tuple[int, int, int]]:
    """``(memory offset, LDM offset, size)`` bytes of the parts of a broadcast get of ``size``
    bytes (blocks of ``bsize`` with ``stride`` gaps in memory when ``bsize``): one part when it is
    small, else up to 4 parts of whole 128-B multiples (contiguous) or whole blocks (strided),
    each issued by a CPE on a different DMA bus (:data:`BCAST_ISSUERS`), so a large broadcast
    does not load a single bus (every CPE's LDM still receives every part at the same address,
    spec §4.3 rule 7)."""
    if size < BCAST_SPLIT_BYTES:
        return [(0, 0, size)]
    n = len(BCAST_ISSUERS)
    if bsize:
        nb = size // bsize
        q = -(-nb // n)
        return [(i * q * (bsize + stride), i * q * bsize, (min(nb, (i + 1) * q) - i * q) * bsize)
                for i in range(n) if i * q < nb]
    q = -(-size // n // 128) * 128
    return [(i * q, i * q, min(size, (i + 1) * q) - i * q) for i in range(n) if i * q < size]


@dataclass
class KernelLowering:
    """Translates one ``loop.spmd`` body into a ``sw.kernel`` body (see module docstring).

    Public helpers for the op lowerings (:mod:`.gemm`, :mod:`.maps`): :meth:`addr` (i64 LDM
    address of a buffer operand), :meth:`value` (the i64 value of an index operand),
    :meth:`const` (a kernel-level i64 constant), :meth:`emit` (append an op at the insertion
    point), ``row`` / ``col`` / ``cpe`` (i64 mesh coordinates)."""

    spmd: loop.SpmdOp
    kernel: sw.KernelOp
    vmap: dict[SSAValue, SSAValue] = field(default_factory=dict)
    slot_bytes: dict[SSAValue, int] = field(default_factory=dict)
    chains: dict[SSAValue, _Chain] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.top = self.kernel.body.block
        self.block = self.top
        self._consts: dict[int, SSAValue] = {}
        self._uf = _UnionFind()
        self._waited: list[tuple[SSAValue, Operation]] = []
        self._cpe: SSAValue | None = None
        self.n_microkernels = 0
        for a, b in zip(self.spmd.memref_args, self.kernel.body.block.args):
            self.vmap[a] = b
            b.name_hint = a.name_hint
        r = self.emit(sw.RowIdOp.build(result_types=[i64]))
        c = self.emit(sw.ColIdOp.build(result_types=[i64]))
        r.results[0].name_hint, c.results[0].name_hint = "row", "col"
        self.vmap[self.spmd.row] = self.row = r.results[0]
        self.vmap[self.spmd.col] = self.col = c.results[0]

    # -- helpers for op lowerings ------------------------------------------------------------
    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, v: int) -> SSAValue:
        """A kernel-level i64 constant (hoisted to the top of the kernel, shared)."""
        c = self._consts.get(v)
        if c is None:
            op = arith.ConstantOp.create(properties={"value": int_attr(v)}, result_types=[i64])
            op.result.name_hint = f"c{v}" if v >= 0 else f"cm{-v}"
            Rewriter.insert_op(op, InsertPoint.at_start(self.top))
            c = self._consts[v] = op.result
        return c

    @property
    def cpe(self) -> SSAValue:
        if self._cpe is None:
            op = sw.CpeIdOp.build(result_types=[i64])
            op.results[0].name_hint = "cpe"
            Rewriter.insert_op(op, InsertPoint.at_start(self.top))
            self._cpe = op.results[0]
        return self._cpe

    def value(self, v: SSAValue) -> SSAValue:
        """The sw value of a loop-level value (index -> i64, buffer -> LDM address)."""
        try:
            return self.vmap[v]
        except KeyError:
            raise _err(v.owner if isinstance(v.owner, Operation) else None,
                       f"value %{v.name_hint or '?'} used before its definition was lowered") from None

    def addr(self, v: SSAValue) -> SSAValue:
        """i64 LDM byte address of the buffer operand ``v`` (a single-slot ``!loop.ldm``)."""
        return self.value(v)

    def const_value(self, v: SSAValue) -> int | None:
        """The integer of a kernel-level constant made by :meth:`const`, else None."""
        o = v.owner
        if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr) and o.value.type == i64:
            return o.value.value.data
        return None

    def add(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        """``a + b`` in i64 (constants folded)."""
        ca = self.const_value(a)
        cb = b if isinstance(b, int) else self.const_value(b)
        if ca is not None and cb is not None:
            return self.const(ca + cb)
        if cb == 0:
            return a
        if ca == 0 and not isinstance(b, int):
            return b
        return self.emit(int_binop(arith.AddiOp, a, self.const(b) if isinstance(b, int) else b)).results[0]

    def mul(self, a: SSAValue, b: int) -> SSAValue:
        """``a * b`` in i64 (constants folded)."""
        ca = self.const_value(a)
        if ca is not None:
            return self.const(ca * b)
        if b == 1:
            return a
        if b == 0:
            return self.const(0)
        return self.emit(int_binop(arith.MuliOp, a, self.const(b))).results[0]

    def linear(self, terms: Sequence[tuple[SSAValue, int]], base: SSAValue | None = None) -> SSAValue:
        """``base + sum(value * factor)`` in i64; ``terms`` are loop-level index values (constants
        folded), ``base`` an sw value."""
        cst = 0
        acc = base
        for v, f in terms:
            c = _const_index(v)
            if c is not None:
                cst += c * f
                continue
            t = self.mul(self.value(v), f)
            acc = t if acc is None else self.add(acc, t)
        if acc is None:
            return self.const(cst)
        return self.add(acc, cst)

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> None:
        self._collect_chains(self.spmd.body)
        self._lower_block(self.spmd.body.block, self.top)
        self._erase_dead()

    def _erase_dead(self) -> None:
        """Drop pure ops (arith, mesh ids) whose results are unused (e.g. index constants
        folded into addresses)."""
        # one backward walk: every user comes after its definition in pre-order
        for op in reversed(list(_walk_control(self.kernel))):
            if op.regions or not op.results:
                continue
            pure = op.dialect_name() == "arith" or isinstance(op, (sw.RowIdOp, sw.ColIdOp, sw.CpeIdOp))
            if pure and all(not r.uses for r in op.results):
                op.detach()
                op.erase()

    def _collect_chains(self, region: Region) -> None:
        uf = self._uf
        for op in region.walk():
            if isinstance(op, scf.ForOp):
                y = op.body.block.last_op
                for i, init in enumerate(op.iter_args):
                    if _is_token(init):
                        uf.union(init, op.body.block.args[i + 1])
                        uf.union(init, op.results[i])
                        if isinstance(y, scf.YieldOp):
                            uf.union(init, y.arguments[i])
            elif isinstance(op, scf.IfOp):
                for i, r in enumerate(op.results):
                    if not _is_token(r):
                        continue
                    for reg in (op.true_region, op.false_region):
                        if reg.blocks and isinstance(reg.block.last_op, scf.YieldOp):
                            uf.union(r, reg.block.last_op.arguments[i])
            elif isinstance(op, loop.DmaStartOp):
                uf.find(op.token)

    def chain(self, token: SSAValue) -> _Chain:
        root = self._uf.find(token)
        ch = self.chains.get(root)
        if ch is None:
            op = sw.ReplyAllocOp.create(result_types=[_REPLY])
            op.results[0].name_hint = "rw"
            # after the constants / ids: append at the top before the first non-constant op
            Rewriter.insert_op(op, InsertPoint.at_start(self.top))
            ch = self.chains[root] = _Chain(op.results[0])
        return ch

    def _lower_block(self, src: Block, dst: Block) -> None:
        saved = self.block
        self.block = dst
        for op in src.ops:
            self._lower_op(op)
        self.block = saved

    def _map_results(self, old: Operation, new: Operation) -> None:
        it = iter(new.results)
        for r in old.results:
            if _new_type(r.type) is None:
                continue
            n = next(it)
            n.name_hint = r.name_hint
            self.vmap[r] = n

    def _lower_op(self, op: Operation) -> None:
        h = _HANDLERS.get(type(op))
        if h is not None:
            h(self, op)
            return
        if op.dialect_name() == "arith":
            self._lower_arith(op)
            return
        raise _err(op, f"cannot lower this op inside loop.spmd \"{self.spmd.kernel_name.data}\"")

    # -- arith / scf ---------------------------------------------------------------------------
    def _lower_arith(self, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and isinstance(
            op.value.type, IndexType
        ):
            self.vmap[op.result] = self.const(op.value.value.data)
            return
        if isinstance(op, arith.IndexCastOp):
            self.vmap[op.result] = self.value(op.input)
            return
        if op.regions:
            raise _err(op, "arith op with regions")
        new = type(op).create(
            operands=[self.value(o) for o in op.operands],
            result_types=[_new_type(r.type) for r in op.results],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        self.emit(new)
        self._map_results(op, new)

    def _lower_for(self, op: scf.ForOp) -> None:
        from taihu.passes.conversion.loop_to_sw import gemm

        if gemm.try_fuse_summa_loop(self, op):
            return
        keep = [i for i, a in enumerate(op.iter_args) if not _is_token(a)]
        inits = [self.value(op.iter_args[i]) for i in keep]
        old_args = op.body.block.args
        body = Block(arg_types=[i64] + [_new_type(old_args[i + 1].type) for i in keep])
        self.vmap[old_args[0]] = body.args[0]
        body.args[0].name_hint = old_args[0].name_hint
        for j, i in enumerate(keep):
            self.vmap[old_args[i + 1]] = body.args[j + 1]
            body.args[j + 1].name_hint = old_args[i + 1].name_hint
        new = scf.ForOp(self.value(op.lb), self.value(op.ub), self.value(op.step), inits, body)
        self.emit(new)
        self._lower_block(op.body.block, body)
        if body.last_op is None or not isinstance(body.last_op, scf.YieldOp):
            body.add_op(scf.YieldOp())
        self._map_results(op, new)

    def _lower_if(self, op: scf.IfOp) -> None:
        types = [t for t in (_new_type(r.type) for r in op.results) if t is not None]
        then = Block()
        els = Block()
        new = scf.IfOp(self.value(op.cond), types, Region(then), Region(els))
        self.emit(new)
        self._lower_block(op.true_region.block, then)
        if op.false_region.blocks:
            self._lower_block(op.false_region.block, els)
        for b in (then, els):
            if not isinstance(b.last_op, scf.YieldOp):
                b.add_op(scf.YieldOp())
        self._map_results(op, new)

    def _lower_yield(self, op: scf.YieldOp) -> None:
        self.emit(scf.YieldOp(*[self.value(a) for a in op.arguments if not _is_token(a)]))

    # -- LDM buffers -----------------------------------------------------------------------
    def _lower_ldm_buffer(self, op: loop.LdmBufferOp) -> None:
        t = op.buffer_type
        new = self.emit(sw.LdmAllocOp.build(
            properties={"bytes": IntegerAttr(t.footprint_bytes(), i64)}, result_types=[i64]))
        new.results[0].name_hint = sanitize(op.buffer_name.data)
        self.vmap[op.result] = new.results[0]
        self.slot_bytes[op.result] = -(-t.slot_bytes // loop.LDM_ALIGN) * loop.LDM_ALIGN

    def _lower_slot(self, op: loop.SlotOp) -> None:
        base = self.value(op.buffer)
        stride = self.slot_bytes.get(op.buffer)
        if stride is None:
            raise _err(op, "double buffer must be a loop.ldm_buffer of this loop.spmd")
        c = _const_index(op.index)
        if c is not None:
            self.vmap[op.result] = self.add(base, (c % 2) * stride)
            return
        bit = self.emit(int_binop(arith.AndIOp, self.value(op.index), self.const(1))).results[0]
        self.vmap[op.result] = self.add(base, self.mul(bit, stride))

    def _lower_view(self, op: loop.ViewOp) -> None:
        t = op.buffer.type
        assert isinstance(t, loop.LdmBufType)
        self.vmap[op.result] = self.linear([(op.offset, t.elem_bytes)], base=self.value(op.buffer))

    # -- DMA ---------------------------------------------------------------------------------
    def _lower_dma_start(self, op: loop.DmaStartOp) -> None:
        mt = op.memref.type
        assert isinstance(mt, MemRefType)
        eb = _elem_bytes(mt)
        shape = mt.get_shape()
        pitch = [math.prod(shape[i + 1:]) * eb for i in range(len(shape))]
        mem = self.linear([(o, p) for o, p in zip(op.offsets, pitch)], base=self.value(op.memref))
        ldm = self.addr(op.buffer)
        size, bsize, stride = op.descriptor()
        props: dict[str, Attribute] = {"size": int_attr(size)}
        if bsize:
            props["bsize"] = int_attr(bsize)
            props["stride"] = int_attr(stride)
        mode = op.dma_mode
        if mode == DmaMode.ROW:
            raise _err(op, "DMA mode row is not supported by the simulator (use pe or bcast)")
        ch = self.chain(op.token)
        if mode == DmaMode.BCAST:
            ch.bcast = True
            if not self._first_write(op):
                self.emit(sw.BarrierOp.build(properties={"scope": sw.BarrierScopeAttr(BarrierScope.ARRAY)}))
            parts = bcast_parts(size, bsize, stride)
            ch.bcast_issuers = len(parts)
            for i, (moff, loff, psize) in enumerate(parts):
                pp: dict[str, Attribute] = {"size": int_attr(psize), "mode": sw.DmaModeAttr(DmaMode.BCAST)}
                if bsize:
                    pp["bsize"] = int_attr(bsize)
                    pp["stride"] = int_attr(stride)
                get = sw.DmaGetOp.create(operands=[self.add(mem, moff), self.add(ldm, loff), ch.reply], properties=pp)
                me = self.emit(cmpi(self.cpe, self.const(BCAST_ISSUERS[i]), "eq")).results[0]
                self.emit(scf.IfOp(me, [], Region(Block([get, scf.YieldOp()])), Region(Block([scf.YieldOp()]))))
            return
        if op.is_get:
            self.emit(sw.DmaGetOp.create(operands=[mem, ldm, ch.reply], properties=props))
        else:
            self.emit(sw.DmaPutOp.create(operands=[ldm, mem, ch.reply], properties=props))

    def _first_write(self, op: loop.DmaStartOp) -> bool:
        """True if no CPE can still be using the buffer of the broadcast get ``op``: it is not
        inside a loop and no earlier op of the kernel touches the buffer (or a slot/view of it),
        so the barrier before the broadcast is not needed."""
        p = op.parent_op()
        while p is not None and p is not self.spmd:
            if isinstance(p, scf.ForOp):
                return False
            p = p.parent_op()
        root = op.buffer
        while isinstance(root.owner, (loop.SlotOp, loop.ViewOp)):
            root = root.owner.buffer
        derived = {root}
        for o in self.spmd.walk():
            if o is op:
                return True
            if isinstance(o, (loop.SlotOp, loop.ViewOp)) and o.buffer in derived:
                derived.add(o.result)
            elif o is not root.owner and any(v in derived for v in o.operands):
                return False
        return True

    def _dominated_wait(self, token: SSAValue, op: Operation) -> bool:
        for t, w in self._waited:
            if t is not token:
                continue
            blk = w.parent_block()
            a: Operation | None = op
            while a is not None:
                if a.parent_block() is blk:
                    if blk.get_operation_index(w) < blk.get_operation_index(a):
                        return True
                    break
                a = a.parent_op()
        return False

    def _lower_dma_wait(self, op: loop.DmaWaitOp) -> None:
        seen: set[int] = set()
        bcast_wait = False
        for t in op.tokens:
            if self._dominated_wait(t, op):
                continue
            self._waited.append((t, op))
            ch = self.chain(t)
            if id(ch) in seen:
                continue
            seen.add(id(ch))
            wait = sw.DmaWaitOp.build(operands=[ch.reply, []], properties={"count": int_attr(1)})
            reset = sw.ReplyResetOp.build(operands=[ch.reply])
            if ch.bcast:
                if ch.bcast_issuers > 1:  # CPEs 0, 2, 4, 6 (the first ``bcast_issuers`` of them)
                    hi = self.emit(cmpi(self.cpe, self.const(2 * ch.bcast_issuers), "slt")).results[0]
                    odd = self.emit(int_binop(arith.AndIOp, self.cpe, self.const(1))).results[0]
                    even = self.emit(cmpi(odd, self.const(0), "eq")).results[0]
                    issuer = self.emit(arith.AndIOp.create(operands=[hi, even], result_types=[i1])).results[0]
                else:
                    issuer = self.emit(cmpi(self.cpe, self.const(0), "eq")).results[0]
                self.emit(scf.IfOp(issuer, [], Region(Block([wait, reset, scf.YieldOp()])),
                                   Region(Block([scf.YieldOp()]))))
                bcast_wait = True
            else:
                self.emit(wait)
                self.emit(reset)
        if bcast_wait:
            self.emit(sw.BarrierOp.build(properties={"scope": sw.BarrierScopeAttr(BarrierScope.ARRAY)}))

    def _lower_barrier(self, op: loop.BarrierOp) -> None:
        self.emit(sw.BarrierOp.build(properties={"scope": sw.BarrierScopeAttr(op.scope.data)}))

    # -- compute ops -------------------------------------------------------------------------
    def _lower_map(self, op: loop.MapOp) -> None:
        try:
            from taihu.passes.conversion.loop_to_sw import maps
        except ImportError:
            maps = None  # type: ignore[assignment]
        lower = getattr(maps, "lower_map", None)
        if lower is None:
            raise _err(op, f"loop.map {op.kind.data.value}: not yet lowered (loop_to_sw/maps.py lands with B)")
        for new in lower(op, self.addr):
            self.emit(new)

    def _lower_gemm(self, op: Operation) -> None:
        from taihu.passes.conversion.loop_to_sw import gemm

        gemm.lower(self, op)


def _walk_control(op: Operation):
    """Pre-order walk of ``op``'s nested ops without entering micro-kernel bodies."""
    for region in op.regions:
        for block in region.blocks:
            for o in block.ops:
                yield o
                if o.regions and not isinstance(o, sw.MicrokernelOp):
                    yield from _walk_control(o)


_HANDLERS: dict[type, Callable[[KernelLowering, Operation], None]] = {
    scf.ForOp: KernelLowering._lower_for,
    scf.IfOp: KernelLowering._lower_if,
    scf.YieldOp: KernelLowering._lower_yield,
    loop.LdmBufferOp: KernelLowering._lower_ldm_buffer,
    loop.SlotOp: KernelLowering._lower_slot,
    loop.ViewOp: KernelLowering._lower_view,
    loop.DmaStartOp: KernelLowering._lower_dma_start,
    loop.DmaWaitOp: KernelLowering._lower_dma_wait,
    loop.BarrierOp: KernelLowering._lower_barrier,
    loop.MapOp: KernelLowering._lower_map,
    loop.SummaStepOp: KernelLowering._lower_gemm,
    loop.GemmBlockOp: KernelLowering._lower_gemm,
    loop.RlcBcastOp: KernelLowering._lower_gemm,
}


# --------------------------------------------------------------------------------------------
# Host side
# --------------------------------------------------------------------------------------------


def _tensor_type(t: MemRefType) -> TensorType:
    return TensorType(t.get_element_type(), t.get_shape())


def _graph_name(attrs: ArrayAttr | None, i: int) -> str | None:
    """The ``graph.name`` of argument/result ``i`` (unsanitised), or None."""
    if attrs is not None and i < len(attrs.data):
        d = attrs.data[i]
        if isinstance(d, DictionaryAttr):
            n = d.data.get("graph.name")
            if isinstance(n, StringAttr):
                return n.data
    return None


def _io_name(attrs: ArrayAttr | None, i: int, default: str) -> str:
    n = _graph_name(attrs, i)
    return sanitize(n) if n is not None else f"{default}{i}"


def _io_global(name: str, t: TensorType, kind: sw.IoKind, graph_name: str | None) -> Operation:
    """``sw.global @name : t io kind``, with ``{graph.name = "..."}`` when the graph name had to
    be sanitised (ONNX names such as ``gpu_0/data_0``: the runner accepts and returns both)."""
    attrs = {"graph.name": StringAttr(graph_name)} if graph_name is not None and graph_name != name else {}
    return sw.GlobalOp.build(properties={"sym_name": StringAttr(name), "type": t, "io": sw.IoKindAttr(kind)},
                             attributes=attrs)


_VIEW_OPS = (memref.CollapseShapeOp, memref.ExpandShapeOp, memref.CastOp, memref.ReinterpretCastOp,
             memref.SubviewOp)


def _view_offset_bytes(op: Operation) -> int:
    """Static byte offset of a view from its source (0 for reshapes and casts)."""
    if isinstance(op, memref.ReinterpretCastOp):
        offs = [int(x) for x in op.static_offsets.get_values()]
        if op.offsets or any(o < 0 for o in offs):
            raise _err(op, "dynamic offsets are not supported")
        src = op.source.type
        assert isinstance(src, MemRefType)
        return (offs[0] if offs else 0) * _elem_bytes(src)
    if isinstance(op, memref.SubviewOp):
        src = op.source.type
        assert isinstance(src, MemRefType)
        offs = [int(x) for x in op.static_offsets.get_values()]
        if op.offsets or any(o < 0 for o in offs):
            raise _err(op, "dynamic offsets are not supported")
        strides = src.get_strides() if not isinstance(src.layout, NoneAttr) else None
        shape = src.get_shape()
        if strides is None:
            strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        if any(s is None for s in strides):
            raise _err(op, "dynamic strides are not supported")
        return sum(o * s for o, s in zip(offs, strides)) * _elem_bytes(src)  # type: ignore[operator]
    return 0


def _root(v: SSAValue) -> tuple[SSAValue, int]:
    """The non-view value a memref is a view of, and the byte offset."""
    off = 0
    while isinstance(v.owner, _VIEW_OPS):
        off += _view_offset_bytes(v.owner)
        v = v.owner.operands[0]
    return v, off


def _host_func(module: ModuleOp) -> func.FuncOp:
    funcs = [o for o in module.body.block.ops if isinstance(o, func.FuncOp)]
    mains = [f for f in funcs if f.sym_name.data == "main"]
    if mains:
        return mains[0]
    if len(funcs) == 1:
        return funcs[0]
    raise _err(None, f"expected one host function (func.func @main), found {len(funcs)} functions")


#: Discardable attribute of an ``sw.spawn`` of a shared kernel: the name of this launch (the
#: symbol the kernel would have had without deduplication; reports name launches by it).
LAUNCH_NAME = "taihu.name"

# loop.ldm_buffer names only become value names in sw: not part of a body's identity
_KEY_IGNORE = {"loop.ldm_buffer": frozenset({"name"})}


def lower_module(module: ModuleOp, dedup: bool = True) -> None:
    """Rewrite ``module`` (loop level, see module docstring) in place into an ``sw`` module.

    ``dedup``: lower structurally identical ``loop.spmd`` bodies once (module docstring,
    "Kernel deduplication")."""
    fn = _host_func(module)
    if fn.body.blocks and len(fn.body.blocks) != 1:
        raise _err(fn, "the host function must have a single block")
    others = [o for o in module.body.block.ops if isinstance(o, func.FuncOp) and o is not fn and
              any(isinstance(x, loop.SpmdOp) for x in o.walk())]
    if others:
        raise _err(others[0], f"loop.spmd outside the host function @{fn.sym_name.data}")
    names = _Names()
    block = fn.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise _err(fn, "the host function must end with func.return")

    globals_out: list[Operation] = []
    # io names first (they are the runner's keys)
    in_names = []
    for i, a in enumerate(block.args):
        if not isinstance(a.type, MemRefType):
            raise _err(fn, f"argument #{i} is {a.type}, expected a memref")
        n = _io_name(fn.arg_attrs, i, "arg")
        if not names.reserve(n):
            raise _err(fn, f"two inputs/outputs are named '{n}'")
        in_names.append(n)
    out_names = []
    out_root: dict[SSAValue, tuple[int, str, MemRefType]] = {}
    for i, v in enumerate(ret.arguments):
        if not isinstance(v.type, MemRefType):
            raise _err(ret, f"result #{i} is {v.type}, expected a memref")
        n = _io_name(fn.res_attrs, i, "out")
        if not names.reserve(n):
            raise _err(fn, f"two inputs/outputs are named '{n}'")
        out_names.append(n)
        r, off = _root(v)
        if not isinstance(r.owner, memref.AllocOp):
            raise _err(ret, f"result #{i} ('{n}') must be a buffer allocated by the host function "
                            "(returning an argument or a global needs a copy kernel)")
        if off != 0 or _memref_bytes(v.type) != _memref_bytes(r.type):
            raise _err(ret, f"result #{i} ('{n}') is a partial view of its allocation")
        if r in out_root:
            raise _err(ret, f"result #{i} ('{n}') returns the same buffer as result '{out_root[r][1]}'")
        out_root[r] = (i, n, v.type)

    # memref.global -> sw.global
    gname: dict[str, str] = {}
    for op in list(module.body.block.ops):
        if not isinstance(op, memref.GlobalOp):
            continue
        t = op.type
        assert isinstance(t, MemRefType)
        if any(d < 0 for d in t.get_shape()):
            raise _err(op, "dynamic shape")
        tt = _tensor_type(t)
        props: dict[str, Attribute] = {"sym_name": StringAttr(""), "type": tt}
        init = op.initial_value
        if not isinstance(init, DenseIntOrFPElementsAttr):
            # xDSL 0.74's memref.global rejects dense_resource: graph-to-tile keeps it here
            init = op.attributes.get("taihu.initial_value", init)
        if isinstance(init, DenseIntOrFPElementsAttr):
            props["initial_value"] = DenseIntOrFPElementsAttr(tt, init.data) if init.type != tt else init
        elif isinstance(init, DenseResourceAttr):
            props["initial_value"] = DenseResourceAttr.from_params(init.resource_handle, tt) \
                if init.type != tt else init
        new_name = names.unique(op.sym_name.data)
        gname[op.sym_name.data] = new_name
        props["sym_name"] = StringAttr(new_name)
        g = sw.GlobalOp.build(properties=props)
        Rewriter.replace_op(op, g, new_results=[])
        globals_out.append(g)

    mod_block = module.body.block
    anchor = fn
    io_globals: list[Operation] = []
    for i, (n, a) in enumerate(zip(in_names, block.args)):
        io_globals.append(_io_global(n, _tensor_type(a.type), sw.IoKind.INPUT, _graph_name(fn.arg_attrs, i)))
    for i, n in enumerate(out_names):
        t = ret.arguments[i].type
        io_globals.append(_io_global(n, _tensor_type(t), sw.IoKind.OUTPUT, _graph_name(fn.res_attrs, i)))
    for g in io_globals:
        mod_block.insert_op_before(g, anchor)

    # the new host program
    main = func.FuncOp("main", ((), ()))
    mb = main.body.block
    vmap: dict[SSAValue, SSAValue] = {}
    for n, a in zip(in_names, block.args):
        op = sw.GlobalAddrOp.build(properties={"global_name": _symref(n)}, result_types=[i64])
        op.results[0].name_hint = a.name_hint or sanitize(n)
        mb.add_op(op)
        vmap[a] = op.results[0]
    kernels: list[sw.KernelOp] = []
    lowered: dict[tuple, str] = {}  # structural key -> sw.kernel symbol
    for op in list(block.ops):
        if isinstance(op, memref.GetGlobalOp):
            n = gname.get(op.name_.root_reference.data)
            if n is None:
                raise _err(op, f"no memref.global named {op.name_}")
            new = sw.GlobalAddrOp.build(properties={"global_name": _symref(n)}, result_types=[i64])
            new.results[0].name_hint = op.memref.name_hint
            mb.add_op(new)
            vmap[op.memref] = new.results[0]
        elif isinstance(op, memref.AllocOp):
            t = op.memref.type
            if op.dynamic_sizes or any(d < 0 for d in t.get_shape()):
                raise _err(op, "dynamic allocation sizes are not supported")
            if op.memref in out_root:
                _, n, _ = out_root[op.memref]
                new = sw.GlobalAddrOp.build(properties={"global_name": _symref(n)}, result_types=[i64])
            else:
                new = sw.MemAllocOp.build(properties={"bytes": IntegerAttr(max(_memref_bytes(t), 1), i64)},
                                          result_types=[i64])
            new.results[0].name_hint = op.memref.name_hint
            mb.add_op(new)
            vmap[op.memref] = new.results[0]
        elif isinstance(op, _VIEW_OPS):
            off = _view_offset_bytes(op)
            src = vmap.get(op.operands[0])
            if src is None:
                raise _err(op, "view of a value that is not a host buffer")
            if off:
                c = arith.ConstantOp(IntegerAttr(off, i64))
                add = arith.AddiOp(src, c)
                mb.add_ops([c, add])
                add.result.name_hint = op.results[0].name_hint
                vmap[op.results[0]] = add.result
            else:
                vmap[op.results[0]] = src
        elif isinstance(op, memref.DeallocOp):
            continue
        elif isinstance(op, loop.SpmdOp):
            kname = names.unique(op.kernel_name.data)
            args = []
            for a in op.args:
                if a not in vmap:
                    raise _err(op, f"operand %{a.name_hint or '?'} is not a host buffer")
                args.append(vmap[a])
            key = structural_key(op, _KEY_IGNORE) if dedup else None
            shared = lowered.get(key) if key is not None else None
            if shared is None:
                kern = sw.KernelOp(kname, len(op.args))
                for k, v in op.attributes.items():
                    if k.startswith("taihu."):
                        kern.attributes[k] = v
                KernelLowering(op, kern).run()
                kernels.append(kern)
                if key is not None:
                    lowered[key] = kname
                mb.add_op(sw.SpawnOp(kname, args))
            else:  # an identical body was lowered already: spawn it under this launch's name
                spawn = sw.SpawnOp(shared, args)
                spawn.attributes[LAUNCH_NAME] = StringAttr(kname)
                for k, v in op.attributes.items():
                    if k.startswith("taihu."):
                        spawn.attributes[k] = v
                mb.add_op(spawn)
            mb.add_op(sw.JoinOp.build())
        elif isinstance(op, func.ReturnOp):
            mb.add_op(func.ReturnOp())
        elif isinstance(op, arith.ConstantOp):
            continue  # index constants of views are folded into static offsets
        else:
            raise _err(op, "cannot lower this op in the host function")
    for k in kernels:
        mod_block.insert_op_before(k, anchor)
    Rewriter.replace_op(fn, main, new_results=[])


def _symref(n: str):
    from xdsl.dialects.builtin import SymbolRefAttr

    return SymbolRefAttr(n)


@dataclass(frozen=True)
class ConvertLoopToSwPass(ModulePass):
    """``convert-loop-to-sw``: loop level + host program -> ``sw`` (see module docstring)."""

    name = "convert-loop-to-sw"

    #: lower structurally identical kernels once and spawn the shared ``sw.kernel`` (module
    #: docstring, "Kernel deduplication"); ``false``: one ``sw.kernel`` per ``loop.spmd``
    dedup_kernels: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, self.dedup_kernels)
