"""The state of one kernel's lowering (``convert-tile-to-loop``): :class:`LowerCtx`, the object
the op lowerings (:mod:`.moves`, :mod:`.maps`, :mod:`.body`, :mod:`.gemm`, :mod:`.mem_prims`)
receive: value mapping, hoisted constants, LDM buffers, pending DMAs and barriers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float64Type, IndexType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from taihu.dialects import loop, tile
from taihu.dialects.loop import LdmBufType
from taihu.target.machine import Machine

from .common import MESH, addi, fail, muli
from .move_plan import MovePlan, plan_move


class LowerOptions(Protocol):
    """The options of ``convert-tile-to-loop`` the lowering reads
    (:class:`~taihu.passes.conversion.tile_to_loop.convert.ConvertTileToLoopPass`)."""

    @property
    def double_buffer(self) -> bool: ...

    @property
    def max_unrolled_dmas(self) -> int: ...

    @property
    def rep_bcast(self) -> bool: ...


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
    ``emit(op)``: append an op at the current insertion point; ``machine``: the module's target
    (:func:`taihu.dialects.target.machine_of`, computed once per pass run), whose
    ``ldm_user_bytes`` bounds the buffers (:meth:`ldm_free_bytes`).
    """

    def __init__(self, kernel: tile.KernelOp, spmd: loop.SpmdOp, options: LowerOptions, machine: Machine):
        self.kernel = kernel
        self.spmd = spmd
        self.options = options
        self.machine = machine
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
        self._plans: dict[tuple[tile.MoveOp, tuple[tuple[int, tuple[int, ...]], ...]], MovePlan] = {}
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
            r8 = muli(self.row, self.const(MESH))
            i = addi(r8.result, self.col)
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
        return self.machine.ldm_user_bytes - used

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
        raise fail(owner if isinstance(owner, Operation) else self.kernel, f"no loop-level value for %{v.name_hint or '?'}")

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
        return self.emit(addi(x, y)).results[0]

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
        return self.emit(muli(x, self.const(c))).results[0]

    def cpe_term(self, a: int, b: int) -> SSAValue:
        """``a*row + b*col`` (hoisted to the spmd prelude)."""
        if a == 0 and b == 0:
            return self.const(0)
        key = (a, b)
        if key not in self._cpe_terms and b != 0 and a == MESH * b:  # b * id (cpe distribution)
            if b == 1:
                self._cpe_terms[key] = self.cpe_id
            else:
                m = muli(self.cpe_id, self.const(b))
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
                    m = muli(v, self.const(coef))
                    ops.append(m)
                    parts.append(m.result)
            if len(parts) == 2:
                s = addi(parts[0], parts[1])
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

    def plan(self, op: tile.MoveOp) -> MovePlan:
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
