"""Kernel side of ``convert-loop-to-sw``: one ``loop.spmd`` body -> one ``sw.kernel`` body
(:class:`KernelLowering`; package docstring "Kernel mapping"): index arithmetic and ``scf`` on
i64, LDM buffers as byte addresses, DMA token chains as reply words, broadcast gets split over
the DMA buses (:func:`bcast_parts`); ``loop.map`` -> :mod:`.maps`, the mesh GEMM ops ->
:mod:`.gemm`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from taihu.dialects import loop, sw
from taihu.dialects.mapkind import MapKind
from taihu.dialects.sw import DmaMode

from .builder import SwKernelBuilder
from .common import array_barrier, cmpi, const_index, elem_bytes, fail, if_op, int_attr, int_binop, sanitize, yield_op
from .gemm import lower as lower_gemm
from .gemm import try_fuse_summa_loop
from .depthwise import lower_depthwise, lower_grouped, lower_grouped_direct
from .maps import lower_map

_REPLY = sw.ReplyType()


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


def _kept_type(t: Attribute) -> Attribute:
    """:func:`_new_type` of a value that is not a token (kept in sw)."""
    nt = _new_type(t)
    assert nt is not None, "a token value has no sw type"
    return nt


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


def _erase_dead_in(op: Operation) -> None:
    """Erase, in reversed pre-order, the pure ops (arith, mesh ids) without uses nested in
    ``op`` outside ``sw.microkernel`` bodies (an op whose users are erased first is then dead
    too)."""
    for region in reversed(op.regions):
        for block in reversed(region.blocks):
            o = block.last_op
            while o is not None:
                prev = o.prev_op
                if o.regions:
                    if not isinstance(o, sw.MicrokernelOp):
                        _erase_dead_in(o)
                elif o.results and (o.name.startswith("arith.") or isinstance(o, _MESH_IDS)) and all(
                        r.first_use is None for r in o.results):
                    o.detach()
                    o.erase()
                o = prev


#: the mesh coordinate ops (pure: erased when unused)
_MESH_IDS = (sw.RowIdOp, sw.ColIdOp, sw.CpeIdOp)


def _first_dma_writes(spmd: loop.SpmdOp) -> set[loop.DmaStartOp]:
    """The ``loop.dma_start`` ops of ``spmd`` that no earlier op (in pre-order) touches the
    buffer of: an op touches a ``loop.ldm_buffer`` when it uses the buffer or a slot/view of it
    (taking a slot or view is not a touch). One walk of the kernel."""
    root: dict[SSAValue, SSAValue] = {}  # a slot/view -> the buffer it is (a slot/view) of
    touched: set[SSAValue] = set()
    first: set[loop.DmaStartOp] = set()
    for o in spmd.walk():
        if isinstance(o, (loop.SlotOp, loop.ViewOp)):
            root[o.result] = root.get(o.buffer, o.buffer)
            continue
        if isinstance(o, loop.DmaStartOp) and root.get(o.buffer, o.buffer) not in touched:
            first.add(o)
        for v in o.operands:
            touched.add(root.get(v, v))
    return first


@dataclass
class KernelLowering(SwKernelBuilder):
    """Translates one ``loop.spmd`` body into a ``sw.kernel`` body (see package docstring); the
    op lowerings (:mod:`.gemm`, :mod:`.maps`) use the helpers of :class:`SwKernelBuilder`."""

    slot_bytes: dict[SSAValue, int] = field(default_factory=dict)
    chains: dict[SSAValue, _Chain] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._uf = _UnionFind()
        self._waited: list[tuple[SSAValue, Operation]] = []
        self._first_writes: set[loop.DmaStartOp] | None = None  # _first_dma_writes, when needed

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> None:
        self._collect_chains(self.spmd.body)
        self._lower_block(self.spmd.body.block, self.top)
        self._erase_dead()

    def _erase_dead(self) -> None:
        """Drop pure ops (arith, mesh ids) whose results are unused (e.g. index constants
        folded into addresses)."""
        # one backward walk (reversed pre-order, not entering sw.microkernel bodies as
        # sw.walk_control): every user comes after its definition in pre-order
        _erase_dead_in(self.kernel)

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
        raise fail(op, f"cannot lower this op inside loop.spmd \"{self.spmd.kernel_name.data}\"")

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
            raise fail(op, "arith op with regions")
        new = type(op).create(
            operands=[self.value(o) for o in op.operands],
            result_types=[_kept_type(r.type) for r in op.results],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        self.emit(new)
        self._map_results(op, new)

    def _lower_for(self, op: scf.ForOp) -> None:
        if try_fuse_summa_loop(self, op):
            return
        keep = [i for i, a in enumerate(op.iter_args) if not _is_token(a)]
        inits = [self.value(op.iter_args[i]) for i in keep]
        old_args = op.body.block.args
        body = Block(arg_types=[i64] + [_kept_type(old_args[i + 1].type) for i in keep])
        self.vmap[old_args[0]] = body.args[0]
        body.args[0].name_hint = old_args[0].name_hint
        for j, i in enumerate(keep):
            self.vmap[old_args[i + 1]] = body.args[j + 1]
            body.args[j + 1].name_hint = old_args[i + 1].name_hint
        new = scf.ForOp(self.value(op.lb), self.value(op.ub), self.value(op.step), inits, body)
        self.emit(new)
        self._lower_block(op.body.block, body)
        if body.last_op is None or not isinstance(body.last_op, scf.YieldOp):
            body.add_op(yield_op())
        self._map_results(op, new)

    def _lower_if(self, op: scf.IfOp) -> None:
        types = [t for t in (_new_type(r.type) for r in op.results) if t is not None]
        then = Block()
        els = Block()
        new = scf.IfOp.create(operands=[self.value(op.cond)], result_types=types, regions=[Region(then), Region(els)])
        self.emit(new)
        self._lower_block(op.true_region.block, then)
        if op.false_region.blocks:
            self._lower_block(op.false_region.block, els)
        for b in (then, els):
            if not isinstance(b.last_op, scf.YieldOp):
                b.add_op(yield_op())
        self._map_results(op, new)

    def _lower_yield(self, op: scf.YieldOp) -> None:
        self.emit(yield_op(*[self.value(a) for a in op.arguments if not _is_token(a)]))

    # -- LDM buffers -----------------------------------------------------------------------
    def _lower_ldm_buffer(self, op: loop.LdmBufferOp) -> None:
        t = op.buffer_type
        new = self.emit(sw.LdmAllocOp.create(
            properties={"bytes": IntegerAttr(t.footprint_bytes(), i64)}, result_types=[i64]))
        new.results[0].name_hint = sanitize(op.buffer_name.data)
        self.vmap[op.result] = new.results[0]
        self.slot_bytes[op.result] = -(-t.slot_bytes // loop.LDM_ALIGN) * loop.LDM_ALIGN

    def _lower_slot(self, op: loop.SlotOp) -> None:
        base = self.value(op.buffer)
        stride = self.slot_bytes.get(op.buffer)
        if stride is None:
            raise fail(op, "double buffer must be a loop.ldm_buffer of this loop.spmd")
        c = const_index(op.index)
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
        eb = elem_bytes(mt)
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
            raise fail(op, "DMA mode row is not supported by the simulator (use pe or bcast)")
        ch = self.chain(op.token)
        if mode == DmaMode.BCAST:
            ch.bcast = True
            if not self._first_write(op):
                self.emit(array_barrier())
            parts = bcast_parts(size, bsize, stride)
            ch.bcast_issuers = len(parts)
            for i, (moff, loff, psize) in enumerate(parts):
                pp: dict[str, Attribute] = {"size": int_attr(psize), "mode": sw.DmaModeAttr(DmaMode.BCAST)}
                if bsize:
                    pp["bsize"] = int_attr(bsize)
                    pp["stride"] = int_attr(stride)
                get = sw.DmaGetOp.create(operands=[self.add(mem, moff), self.add(ldm, loff), ch.reply], properties=pp)
                me = self.emit(cmpi(self.cpe, self.const(BCAST_ISSUERS[i]), "eq")).results[0]
                self.emit(if_op(me, [get]))
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
        if self._first_writes is None:
            self._first_writes = _first_dma_writes(self.spmd)
        return op in self._first_writes

    def _dominated_wait(self, token: SSAValue, op: Operation) -> bool:
        for t, w in self._waited:
            if t is not token:
                continue
            blk = w.parent_block()
            assert blk is not None  # a waited loop.dma_wait lies in a kernel block
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
            wait = sw.DmaWaitOp.create(operands=[ch.reply], properties={"count": int_attr(1)})
            reset = sw.ReplyResetOp.create(operands=[ch.reply])
            if ch.bcast:
                if ch.bcast_issuers > 1:  # CPEs 0, 2, 4, 6 (the first ``bcast_issuers`` of them)
                    hi = self.emit(cmpi(self.cpe, self.const(2 * ch.bcast_issuers), "slt")).results[0]
                    odd = self.emit(int_binop(arith.AndIOp, self.cpe, self.const(1))).results[0]
                    even = self.emit(cmpi(odd, self.const(0), "eq")).results[0]
                    issuer = self.emit(arith.AndIOp.create(operands=[hi, even], result_types=[i1])).results[0]
                else:
                    issuer = self.emit(cmpi(self.cpe, self.const(0), "eq")).results[0]
                self.emit(if_op(issuer, [wait, reset]))
                bcast_wait = True
            else:
                self.emit(wait)
                self.emit(reset)
        if bcast_wait:
            self.emit(array_barrier())

    def _lower_barrier(self, op: loop.BarrierOp) -> None:
        self.emit(sw.BarrierOp.create(properties={"scope": sw.BarrierScopeAttr(op.scope.data)}))

    # -- compute ops -------------------------------------------------------------------------
    def _lower_map(self, op: loop.MapOp) -> None:
        lower = {MapKind.DEPTHWISE: lower_depthwise, MapKind.GROUPED: lower_grouped,
                 MapKind.GROUPED_DIRECT: lower_grouped_direct}.get(op.kind.data, lower_map)
        for new in lower(op, self.addr, self.machine):
            self.emit(new)

    def _lower_gemm(self, op: Operation) -> None:
        lower_gemm(self, op)


#: each handler takes the op class it is keyed by (dispatch on the exact class)
_HANDLERS: dict[type[Operation], Callable[[KernelLowering, Any], None]] = {
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
