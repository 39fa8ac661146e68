"""The ``sw`` dialect: one SW26010 core group at the level of athread + SW-64 instructions.

Structure of an ``sw`` module (spec sw26010-model.md §10; "004 Lnnn" = seeds/004_*.txt line)::

    sw.global @A : tensor<64x64xf64> io input           // main-memory buffer (128-B aligned)
    sw.kernel @k(%a : i64) {                             // CPE kernel, SPMD on all 64 CPEs
      %id  = sw.cpe_id                                   // 0..63 = 8*row + col (004 L734)
      %buf = sw.ldm_alloc 4096                           // LDM byte address (i64)
      %rw  = sw.reply_alloc                              // a reply word (!sw.reply)
      sw.dma_get %a -> %buf, %rw size 4096               // memory -> LDM (004 L485-489)
      sw.dma_wait %rw, 1
      sw.microkernel trip 16 (%buf step 32) {             // register code: ONE iteration
        sw.vldd r0, 0(p0)                                //   r0 <- LDM[p0 + 0], 4 x f64
        sw.vmad r0, r0, r4                               //   r4 += r0 * r0  (dest last, 004 L796)
      }
    }
    func.func @main() {                                  // MPE (host) program
      %p = sw.global_addr @A
      sw.spawn @k(%p)
      sw.join
      func.return
    }

Register instructions use physical registers ``r0..r31`` (r31 reads 0, never written;
004 L821) written as properties, with SW-64 operand order (sources first, destination last, as in
004 Listing 4.1). They exist only inside ``sw.microkernel``: its body is one iteration of
straight-line code; memory operands are ``offset(pK)`` = pointer K of the micro-kernel + ``offset``
bytes, and pointer K advances by its stride every iteration. Pipes and latencies are NOT in
this dialect: each instruction exposes ``mnemonic`` and the simulator looks it up in the machine
table (``target/configs/sw26010.toml``, 004 Table 3.2).

Python API used by the simulator (documented in the contract, ``RegInstr``): ``mnemonic``,
``reads()``, ``writes()``, ``mem()`` (a ``MemOperand``), ``kind``, ``flops``, ``rlc()``,
``timing(machine)``; ``KernelOp.ldm_layout()``; ``MicrokernelOp.pointer_strides()``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeVar, cast

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UNKNOWN_LOC,
    TensorType,
    f64,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    OptionalDef,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from taihu.dialects.target import machine_of
from taihu.target.machine import InstrTiming, Machine

# --------------------------------------------------------------------------------------------
# Attributes and types
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class ReplyType(ParametrizedAttribute, TypeAttribute):
    """``!sw.reply``: a reply word in the CPE's LDM, incremented by 1 when a DMA completes
    (004 L487)."""

    name = "sw.reply"


class DmaMode(StrEnum):
    """DMA modes (athread ``PE_MODE``, ``BCAST_MODE``, ``ROW_MODE``; spec §10)."""

    PE = "pe"
    BCAST = "bcast"
    ROW = "row"


@irdl_attr_definition
class DmaModeAttr(EnumAttribute[DmaMode], SpacedOpaqueSyntaxAttribute):
    name = "sw.dma_mode"


class BarrierScope(StrEnum):
    """``athread_syn`` scopes (spec §10): whole mesh, one row, one column."""

    ARRAY = "array"
    ROW = "row"
    COL = "col"


@irdl_attr_definition
class BarrierScopeAttr(EnumAttribute[BarrierScope], SpacedOpaqueSyntaxAttribute):
    name = "sw.barrier_scope"


class IoKind(StrEnum):
    """Role of a ``sw.global`` for the runner: filled from an input / reported as an output."""

    INPUT = "input"
    OUTPUT = "output"


@irdl_attr_definition
class IoKindAttr(EnumAttribute[IoKind], SpacedOpaqueSyntaxAttribute):
    name = "sw.io_kind"


def _meta(**values: object):
    """Set class-level metadata (upper-case constants) on an op class after IRDL processing."""

    def deco(cls):
        for k, v in values.items():
            setattr(cls, k, v)
        return cls

    return deco


def _int(attr: IntegerAttr | None) -> int | None:
    return None if attr is None else attr.value.data


@functools.lru_cache(maxsize=8192)
def _i(v: int) -> IntegerAttr:
    """``IntegerAttr(v, i64)``, shared (attributes are immutable; building one costs ~5 us and
    register numbers, offsets and strides repeat throughout a lowered network)."""
    return IntegerAttr(v, i64)


@functools.cache
def _irdl_defaults(cls: type[Operation]) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """IRDL default values of ``cls``'s non-optional properties and attributes."""
    d = cls.get_irdl_definition()  # type: ignore[attr-defined]
    props = {k: v.default_value for k, v in d.properties.items()
             if not isinstance(v, OptionalDef) and v.default_value is not None}
    attrs = {k: v.default_value for k, v in d.attributes.items()
             if not isinstance(v, OptionalDef) and v.default_value is not None}
    return props, attrs


_OpT = TypeVar("_OpT", bound=Operation)


def new_instr(cls: type[_OpT], properties: dict[str, Attribute],
              attributes: Mapping[str, Attribute] | None = None) -> _OpT:
    """A new operand-less, result-less, region-less op of class ``cls`` (the register
    instructions of micro-kernel bodies: ``sw.vldd``, ``sw.vmad``, ``sw.getr`` ...) holding the
    dict ``properties`` (taken over, not copied) and a copy of ``attributes``; IRDL defaults of
    missing properties/attributes are filled in.

    The same op as ``cls.create(properties=..., attributes=...)`` -- equal printing,
    verification, walking, cloning -- at ~1/10 of the cost: ``Operation.__init__`` spends most
    of its time on empty operand/successor/region bookkeeping and a location lookup, and these
    ops are ~80 % of a lowered network (ResNet-50: ~74k of ~90k ``sw`` ops). The fields not set
    here (operands, results, successors, regions, parent links) are the empty class-level
    defaults of xDSL's ``Operation`` dataclass. Not verified (like ``create``)."""
    op = cls.__new__(cls)
    dp, da = _irdl_defaults(cls)
    op.properties = {**dp, **properties} if dp else properties
    op.attributes = {**da, **(attributes or {})} if da else dict(attributes or {})
    op.location = UNKNOWN_LOC
    return op


# --------------------------------------------------------------------------------------------
# Helpers: enclosing kernel, statically known CPE coordinates
# --------------------------------------------------------------------------------------------


def enclosing_kernel(op: Operation) -> KernelOp | None:
    """The ``sw.kernel`` containing ``op`` (transitively), or None."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, KernelOp):
            return parent
        parent = parent.parent_op()
    return None


def walk_control(op: Operation) -> Iterator[Operation]:
    """Pre-order walk of the ops nested in ``op`` without entering ``sw.microkernel`` bodies
    (their register instructions hold no reply words, LDM allocations or control flow)."""
    for region in op.regions:
        for block in region.blocks:
            for o in block.ops:
                yield o
                if o.regions and not isinstance(o, MicrokernelOp):
                    yield from walk_control(o)


def _require_kernel(op: Operation) -> KernelOp:
    k = enclosing_kernel(op)
    if k is None:
        raise VerifyException(f"'{op.name}' is a CPE operation: it must be inside a sw.kernel")
    return k


def _require_host(op: Operation) -> None:
    if enclosing_kernel(op) is not None:
        raise VerifyException(f"'{op.name}' is an MPE (host) operation: it cannot be inside a sw.kernel")


def _const_int(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def static_coords(op: Operation) -> tuple[int | None, int | None]:
    """(row, col) of the CPE executing ``op`` when the enclosing ``scf.if`` guards fix them.

    Recognised guards: ``scf.if`` whose condition is ``arith.cmpi eq`` (then-region) or ``ne``
    (else-region) between ``sw.row_id`` / ``sw.col_id`` / ``sw.cpe_id`` and an
    ``arith.constant``. Returns None for a coordinate that is not statically known.
    """
    row: int | None = None
    col: int | None = None
    child: Operation = op
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, KernelOp):
        if isinstance(parent, scf.IfOp):
            cond = parent.cond.owner
            in_then = child.parent_region() is parent.true_region
            if isinstance(cond, arith.CmpiOp):
                pred = cond.predicate.value.data  # 0 = eq, 1 = ne
                if (pred == 0 and in_then) or (pred == 1 and not in_then):
                    lhs, rhs = cond.lhs, cond.rhs
                    c = _const_int(rhs)
                    idv = lhs
                    if c is None:
                        c, idv = _const_int(lhs), rhs
                    if c is not None:
                        src = idv.owner
                        cols = machine_of(op).mesh_cols
                        if isinstance(src, RowIdOp) and row is None:
                            row = c
                        elif isinstance(src, ColIdOp) and col is None:
                            col = c
                        elif isinstance(src, CpeIdOp):
                            row = c // cols if row is None else row
                            col = c % cols if col is None else col
        child = parent
        parent = parent.parent_op()
    return row, col


# --------------------------------------------------------------------------------------------
# MPE (host) side
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """``sw.global @A : tensor<MxNxf64> [= dense<...>] [io input|output]``: a main-memory
    buffer, 128-B aligned (spec §4.5 rule, 004 L657, L865). The runner fills ``io input``
    globals and reports ``io output`` ones. Element types: f64, f32, i64, i32."""

    name = "sw.global"
    sym_name = prop_def(SymbolNameConstraint())
    type = prop_def(TensorType)
    initial_value = opt_prop_def(base(DenseIntOrFPElementsAttr) | base(DenseResourceAttr))
    io = opt_prop_def(IoKindAttr)
    traits = traits_def(SymbolOpInterface())
    assembly_format = "$sym_name `:` $type (`=` $initial_value^)? (`io` $io^)? attr-dict"

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        t = self.type
        n = 1
        for d in t.get_shape():
            n *= d
        return n * t.get_element_type().bitwidth // 8

    def verify_(self) -> None:
        _require_host(self)
        t = self.type
        if any(d < 0 for d in t.get_shape()):
            raise VerifyException(f"sw.global @{self.sym_name.data}: shape must be static")
        if not hasattr(t.get_element_type(), "bitwidth"):
            raise VerifyException(f"sw.global @{self.sym_name.data}: element type must be int or float")
        init = self.initial_value
        if init is not None and init.type != t:
            raise VerifyException(
                f"sw.global @{self.sym_name.data}: initializer type {init.type} != {t}"
            )


@irdl_op_definition
class GlobalAddrOp(IRDLOperation):
    """``%p = sw.global_addr @A``: main-memory byte address (i64) of a ``sw.global``."""

    name = "sw.global_addr"
    global_name = prop_def(SymbolRefAttr)
    addr = result_def(i64)
    assembly_format = "$global_name attr-dict"

    def verify_(self) -> None:
        module = self.parent_op()
        while module is not None and module.parent_op() is not None:
            module = module.parent_op()
        if module is None:
            return
        sym = SymbolTable.lookup_symbol(module, self.global_name)
        if not isinstance(sym, GlobalOp):
            raise VerifyException(f"sw.global_addr: no sw.global named {self.global_name}")


@irdl_op_definition
class MemAllocOp(IRDLOperation):
    """``%p = sw.mem_alloc 4096``: allocate main memory (bytes, 128-B aligned); i64 address."""

    name = "sw.mem_alloc"
    bytes = prop_def(IntegerAttr[I64])
    addr = result_def(i64)
    assembly_format = "$bytes attr-dict"

    def verify_(self) -> None:
        _require_host(self)
        if self.bytes.value.data <= 0:
            raise VerifyException(f"sw.mem_alloc: bytes must be > 0, got {self.bytes.value.data}")


@irdl_op_definition
class SpawnOp(IRDLOperation):
    """``sw.spawn @k(%a, %b)``: start kernel ``@k`` SPMD on all 64 CPEs (``athread_spawn``);
    arguments are i64. Costs ``spawn_cycles`` [param]."""

    name = "sw.spawn"
    kernel = prop_def(SymbolRefAttr)
    args = var_operand_def(i64)
    assembly_format = "$kernel `(` $args `)` attr-dict"

    def __init__(self, kernel: str | SymbolRefAttr, args: Sequence[SSAValue | Operation] = ()):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)
        super().__init__(operands=[args], properties={"kernel": kernel})

    def verify_(self) -> None:
        _require_host(self)
        module = self.parent_op()
        while module is not None and module.parent_op() is not None:
            module = module.parent_op()
        if module is None:
            return
        k = SymbolTable.lookup_symbol(module, self.kernel)
        if not isinstance(k, KernelOp):
            raise VerifyException(f"sw.spawn: no sw.kernel named {self.kernel}")
        if len(k.body.block.args) != len(self.args):
            raise VerifyException(
                f"sw.spawn: kernel {self.kernel} takes {len(k.body.block.args)} argument(s), "
                f"got {len(self.args)}"
            )


@irdl_op_definition
class JoinOp(IRDLOperation):
    """``sw.join``: wait until the spawned kernel finished on every CPE (``athread_join``)."""

    name = "sw.join"
    assembly_format = "attr-dict"

    def verify_(self) -> None:
        _require_host(self)
        if not _spawn_precedes(self):
            raise VerifyException("sw.join: no sw.spawn before it in the host program (nothing to wait for)")


def _spawn_precedes(op: Operation) -> bool:
    """Some ``sw.spawn`` comes before ``op`` in program order within its function: earlier in
    its block or inside an earlier op, or before one of its enclosing ops."""
    cur: Operation | None = op
    while cur is not None and not isinstance(cur, func.FuncOp):
        prev = cur.prev_op
        while prev is not None:
            if isinstance(prev, SpawnOp) or any(isinstance(o, SpawnOp) for o in prev.walk()):
                return True
            prev = prev.prev_op
        cur = cur.parent_op()
    return False


# --------------------------------------------------------------------------------------------
# CPE kernel
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LdmSlot:
    """One LDM allocation of a kernel after bump allocation (``KernelOp.ldm_layout``)."""

    op: LdmAllocOp
    offset: int  # bytes from LDM address 0
    bytes: int
    name: str


@irdl_op_definition
class KernelOp(IRDLOperation):
    """``sw.kernel @k(%a : i64, ...) { ... }``: a CPE kernel run by every CPE (SPMD).

    The body holds CPE ops, ``arith`` (i64 index math) and ``scf.for``/``scf.if``. Verified:
    the LDM allocations of the kernel (``KernelOp.ldm_layout``) fit in ``ldm_user_bytes``
    (default machine; 57 344 B [param], 64 KB hard limit 004 L460).
    """

    name = "sw.kernel"
    sym_name = prop_def(SymbolNameConstraint())
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), NoTerminator())

    def __init__(self, name: str, n_args: int, body: Region | None = None):
        if body is None:
            body = Region(Block(arg_types=[i64] * n_args))
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = cls(name, len(args), body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data}(")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    def ldm_layout(self, machine: Machine | None = None) -> list[LdmSlot]:
        """Bump allocation of every ``sw.ldm_alloc`` of the kernel in program order, each
        aligned to its ``align`` (default 32 B = vector alignment). ``ldm_free`` does not
        reuse space (conservative). The last slot's end is the LDM high-water mark.
        (``sw.ldm_alloc`` is verified to be directly in the kernel body, so only the body's
        top-level ops are scanned: micro-kernel bodies hold most of a big kernel's ops.)"""
        slots: list[LdmSlot] = []
        cur = 0
        for op in self.body.block.ops:
            if isinstance(op, LdmAllocOp):
                a = op.alignment
                cur = (cur + a - 1) // a * a
                name = op.result.name_hint or f"ldm_alloc#{len(slots)}"
                slots.append(LdmSlot(op, cur, op.bytes.value.data, name))
                cur += op.bytes.value.data
        return slots

    def ldm_bytes_used(self) -> int:
        """High-water mark of ``ldm_layout()``, bytes."""
        slots = self.ldm_layout()
        return 0 if not slots else slots[-1].offset + slots[-1].bytes

    def verify_(self) -> None:
        for arg in self.body.block.args:
            if arg.type != i64:
                raise VerifyException(f"sw.kernel @{self.sym_name.data}: arguments must be i64")
        limit = machine_of(self).ldm_user_bytes
        used = self.ldm_bytes_used()
        if used > limit:
            listing = ", ".join(f"%{s.name} {s.bytes} B" for s in self.ldm_layout())
            raise VerifyException(
                f"sw.kernel @{self.sym_name.data}: LDM allocations need {used} bytes > "
                f"ldm_user_bytes = {limit}: {listing}"
            )


class _CpeOp(IRDLOperation):
    """Base of the ops that run on a CPE: they must be inside a ``sw.kernel``."""

    def verify_(self) -> None:
        _require_kernel(self)


@irdl_op_definition
class CpeIdOp(_CpeOp):
    """``%id = sw.cpe_id``: this CPE's id 0..63 = 8·row + col (004 L734, ``_MYID``)."""

    name = "sw.cpe_id"
    result = result_def(i64)
    assembly_format = "attr-dict"


@irdl_op_definition
class RowIdOp(_CpeOp):
    """``%r = sw.row_id``: mesh row 0..7 = id / 8 (004 L734 [corrected])."""

    name = "sw.row_id"
    result = result_def(i64)
    assembly_format = "attr-dict"


@irdl_op_definition
class ColIdOp(_CpeOp):
    """``%c = sw.col_id``: mesh column 0..7 = id % 8 (004 L734)."""

    name = "sw.col_id"
    result = result_def(i64)
    assembly_format = "attr-dict"


@irdl_op_definition
class LdmAllocOp(IRDLOperation):
    """``%buf = sw.ldm_alloc 4096 [align 128]``: allocate LDM bytes (``ldm_malloc``); the
    result is an i64 LDM byte address. Must be directly in the kernel body (not in a loop), so
    the kernel's total is static; ``sw-to-swsim`` replaces it by a constant offset."""

    name = "sw.ldm_alloc"
    bytes = prop_def(IntegerAttr[I64])
    align = opt_prop_def(IntegerAttr[I64])
    result = result_def(i64)
    assembly_format = "$bytes (`align` $align^)? attr-dict"

    DEFAULT_ALIGN: ClassVar[int] = 32

    @property
    def alignment(self) -> int:
        return _int(self.align) or self.DEFAULT_ALIGN

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), KernelOp):
            raise VerifyException("sw.ldm_alloc must be directly in a sw.kernel body (not in a loop/if)")
        b = self.bytes.value.data
        if b <= 0:
            raise VerifyException(f"sw.ldm_alloc: bytes must be > 0, got {b}")
        a = self.alignment
        if a <= 0 or a & (a - 1):
            raise VerifyException(f"sw.ldm_alloc: align must be a power of two, got {a}")


@irdl_op_definition
class LdmFreeOp(_CpeOp):
    """``sw.ldm_free %buf``: release an LDM allocation (``ldm_free``); space is not reused."""

    name = "sw.ldm_free"
    buf = operand_def(i64)
    assembly_format = "$buf attr-dict"

    def verify_(self) -> None:
        _require_kernel(self)
        if not isinstance(self.buf.owner, LdmAllocOp):
            raise VerifyException("sw.ldm_free: operand must be the result of a sw.ldm_alloc")


@irdl_op_definition
class ReplyAllocOp(_CpeOp):
    """``%rw = sw.reply_alloc``: a reply word (counter, starts at 0) in this CPE's LDM."""

    name = "sw.reply_alloc"
    result = result_def(ReplyType())
    assembly_format = "attr-dict"


@irdl_op_definition
class ReplyResetOp(_CpeOp):
    """``sw.reply_reset %rw``: set the reply counter to 0 (software reset, spec §4.3 rule 6)."""

    name = "sw.reply_reset"
    reply = operand_def(ReplyType())
    assembly_format = "$reply attr-dict"


#: Bytes of the smallest element ``sw`` moves between main memory and the LDM (f32 / i32, 4 B;
#: ``sw.global`` holds f64, f32, i64, i32; ``sw.ldw``/``sw.ldse`` load 4 B): a DMA's size, block
#: size and gap are multiples of it (``sw.dma_get``/``sw.dma_put`` verifier), and so are its
#: addresses where they are static (``sw-check-dma``). A 1-, 7- or 33-byte transfer would split an
#: element. (Alignment to the 128-B transaction, spec §4.4, only costs bandwidth: not a rule.)
DMA_GRANULE = 4


class _DmaOp(_CpeOp):
    """Common part of ``sw.dma_get`` / ``sw.dma_put`` (spec §4.2-4.4, athread_get/put §10).

    ``size``: total bytes; ``bsize``: bytes per block (0 = contiguous); ``stride``: bytes
    SKIPPED in main memory between the end of one block and the start of the next (L597; public
    "stepsize"); the LDM side is packed. ``mode``: pe (default) | bcast (gets only; delivered to
    the same LDM address of every CPE whose row bit is set in ``mask``) | row. Each completed
    DMA adds 1 to ``reply``.
    """

    size = prop_def(IntegerAttr[I64])
    bsize = opt_prop_def(IntegerAttr[I64])
    stride = opt_prop_def(IntegerAttr[I64])
    mode = opt_prop_def(DmaModeAttr)
    mask = opt_prop_def(IntegerAttr[I64])
    reply = operand_def(ReplyType())

    MNEMONIC: ClassVar[str]
    IS_PUT: ClassVar[bool]

    @property
    def mnemonic(self) -> str:
        return self.MNEMONIC

    @property
    def dma_mode(self) -> DmaMode:
        return DmaMode.PE if self.mode is None else self.mode.data

    @property
    def block_bytes(self) -> int:
        """Bytes per block (= size when contiguous)."""
        b = _int(self.bsize) or 0
        return b if b else self.size.value.data

    @property
    def gap_bytes(self) -> int:
        return _int(self.stride) or 0

    @property
    def n_blocks(self) -> int:
        return self.size.value.data // self.block_bytes

    def block_offsets(self) -> list[int]:
        """Main-memory start offset (from the mem operand) of every block."""
        step = self.block_bytes + self.gap_bytes
        return [i * step for i in range(self.n_blocks)]

    def verify_(self) -> None:
        k = _require_kernel(self)
        m = machine_of(self)
        size = self.size.value.data
        bsize = _int(self.bsize) or 0
        stride = _int(self.stride) or 0
        where = f"{self.name}"
        if size <= 0:
            raise VerifyException(f"{where}: size must be > 0, got {size}")
        if size > m.ldm_bytes:
            raise VerifyException(f"{where}: size {size} exceeds the LDM ({m.ldm_bytes} bytes)")
        if bsize < 0 or stride < 0:
            raise VerifyException(f"{where}: bsize and stride must be >= 0")
        if bsize == 0 and stride != 0:
            raise VerifyException(f"{where}: stride {stride} needs a block size (bsize = 0 means contiguous)")
        if bsize and size % bsize:
            raise VerifyException(f"{where}: size {size} is not a multiple of bsize {bsize}")
        for what, v in (("size", size), ("bsize", bsize), ("stride", stride)):
            if v % DMA_GRANULE:
                raise VerifyException(
                    f"{where}: {what} {v} is not a multiple of {DMA_GRANULE} bytes (a DMA moves whole "
                    f"elements; the smallest is {DMA_GRANULE} B: f32, i32)"
                )
        mode = self.dma_mode
        if mode == DmaMode.BCAST and self.IS_PUT:
            raise VerifyException(f"{where}: mode bcast is only valid for sw.dma_get")
        if self.mask is not None:
            if mode != DmaMode.BCAST:
                raise VerifyException(f"{where}: mask is only valid with mode bcast")
            if not 1 <= self.mask.value.data <= 0xFF:
                raise VerifyException(f"{where}: mask must be in 1..255 (one bit per mesh row)")
        del k


@_meta(MNEMONIC='dma_get', IS_PUT=False)
@irdl_op_definition
class DmaGetOp(_DmaOp):
    """``sw.dma_get %mem -> %ldm, %rw size S [bsize B] [stride G] [mode M] [mask K]``:
    main memory -> LDM. Issue on P1 in 1 cycle, timing by the DMA engine (spec §4.3)."""

    name = "sw.dma_get"
    mem = operand_def(i64)
    ldm = operand_def(i64)
    assembly_format = (
        "$mem `->` $ldm `,` $reply `size` $size (`bsize` $bsize^)? (`stride` $stride^)? "
        "(`mode` $mode^)? (`mask` $mask^)? attr-dict"
    )


@_meta(MNEMONIC='dma_put', IS_PUT=True)
@irdl_op_definition
class DmaPutOp(_DmaOp):
    """``sw.dma_put %ldm -> %mem, %rw size S [bsize B] [stride G]``: LDM -> main memory."""

    name = "sw.dma_put"
    ldm = operand_def(i64)
    mem = operand_def(i64)
    assembly_format = (
        "$ldm `->` $mem `,` $reply `size` $size (`bsize` $bsize^)? (`stride` $stride^)? "
        "(`mode` $mode^)? (`mask` $mask^)? attr-dict"
    )


@irdl_op_definition
class DmaWaitOp(_CpeOp):
    """``sw.dma_wait %rw, N`` or ``sw.dma_wait %rw, %n``: stall until the reply counter >= N
    (spec §4.3 rule 6). Verified: some ``sw.dma_get``/``sw.dma_put`` increments ``%rw``."""

    name = "sw.dma_wait"
    reply = operand_def(ReplyType())
    count_val = opt_operand_def(i64)
    count = opt_prop_def(IntegerAttr[I64])

    @classmethod
    def parse(cls, parser: Parser) -> DmaWaitOp:
        reply = parser.parse_operand(ReplyType())
        parser.parse_punctuation(",")
        n = parser.parse_optional_integer()
        props: dict[str, Attribute] = {}
        operands: list[Sequence[SSAValue]] = [[reply], []]
        if n is None:
            operands[1] = [parser.parse_operand(i64)]
        else:
            props["count"] = _i(n)
        attrs = parser.parse_optional_attr_dict()
        op = cls.build(operands=operands, properties=props, attributes=attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.reply)
        printer.print_string(", ")
        if self.count_val is not None:
            printer.print_ssa_value(self.count_val)
        else:
            printer.print_string(str(_int(self.count)))
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        k = _require_kernel(self)
        if (self.count is None) == (self.count_val is None):
            raise VerifyException("sw.dma_wait: exactly one of a static count and a count operand")
        if self.count is not None and self.count.value.data < 0:
            raise VerifyException("sw.dma_wait: count must be >= 0")
        if not any(
            isinstance(u.operation, (DmaGetOp, DmaPutOp)) and enclosing_kernel(u.operation) is k
            for u in self.reply.uses
        ):
            name = self.reply.name_hint or "reply"
            raise VerifyException(
                f"sw.dma_wait: reply word %{name} is never incremented by a sw.dma_get/sw.dma_put "
                f"of kernel @{k.sym_name.data} (the wait could never finish)"
            )


@irdl_op_definition
class BarrierOp(_CpeOp):
    """``sw.barrier array|row|col [mask M]``: ``athread_syn`` (spec §7): costs ``sync_array``
    (array) or ``sync_rowcol`` (row/col) cycles after the last participant arrives."""

    name = "sw.barrier"
    scope = prop_def(BarrierScopeAttr)
    mask = opt_prop_def(IntegerAttr[I64])
    assembly_format = "$scope (`mask` $mask^)? attr-dict"

    def verify_(self) -> None:
        _require_kernel(self)
        if self.mask is not None:
            limit = 0xFFFF if self.scope.data == BarrierScope.ARRAY else 0xFF
            if not 1 <= self.mask.value.data <= limit:
                raise VerifyException(f"sw.barrier: mask must be in 1..{limit:#x}")


class _SyncOp(_CpeOp):
    mask = opt_prop_def(IntegerAttr[I64])
    assembly_format = "(`mask` $mask^)? attr-dict"
    MNEMONIC: ClassVar[str]

    @property
    def mnemonic(self) -> str:
        return self.MNEMONIC

    def verify_(self) -> None:
        _require_kernel(self)
        if self.mask is not None and not 1 <= self.mask.value.data <= 0xFF:
            raise VerifyException(f"{self.name}: mask must be in 1..0xff (one bit per CPE of the row/column)")


@_meta(MNEMONIC='synr')
@irdl_op_definition
class SynrOp(_SyncOp):
    """``sw.synr [mask M]``: row barrier of the CPEs selected by ``mask`` (004 L540, >= 14 cycles)."""

    name = "sw.synr"


@_meta(MNEMONIC='sync')
@irdl_op_definition
class SyncOp(_SyncOp):
    """``sw.sync [mask M]``: column barrier of the CPEs selected by ``mask`` (004 L540)."""

    name = "sw.sync"


# --------------------------------------------------------------------------------------------
# Register-level instructions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemOperand:
    """The memory operand of a register load/store, for the simulator.

    Address in iteration ``i`` of the micro-kernel = ``pointers[ptr] + i*stride[ptr] + offset``.
    ``nbytes``: bytes moved in memory; ``elem``: "f64" | "f32" | "i64" | "i32" | "raw";
    ``lanes``: elements moved (4 for vectors, 1 for scalars); ``replicate``: the loaded element is
    copied into all 4 lanes (ldde/ldse/ldder/lddec); ``access``: "load" | "store"; ``space``:
    "ldm" | "mem" (gld/gstd); ``areg``: register holding the address (timing dependence only).
    """

    ptr: int
    offset: int
    nbytes: int
    elem: str
    lanes: int
    replicate: bool
    access: Literal["load", "store"]
    space: Literal["ldm", "mem"]
    areg: int | None


@dataclass(frozen=True)
class RlcInfo:
    """RLC behaviour of an instruction: ``axis`` "row" | "col"; ``role`` "put" | "get";
    ``dst`` 0..7 (target column for row, target row for col) or 8 = broadcast (puts)."""

    axis: Literal["row", "col"]
    role: Literal["put", "get"]
    dst: int | None


# Field kinds of the generic register-instruction syntax.
_REG, _OPTREG, _MEM, _INT, _REGIMM = "reg", "optreg", "mem", "int", "regimm"


class RegInstr(IRDLOperation):
    """Base of every register-level instruction (inside ``sw.microkernel`` only).

    Syntax: ``sw.<mnemonic> <fields>`` with fields per class in ``_fields`` (registers ``rN``,
    memory ``off(pK)`` or ``off(pK, rA)``, immediates). Semantics follow SW-64: destination
    last (004 Listing 4.1). ``kind`` groups instructions for the simulator: "load", "store",
    "fp", "int", "shuffle", "rlc_put", "rlc_get", "load_send", "gld", "gstd", "branch", "nop".
    """

    MNEMONIC: ClassVar[str]
    KIND: ClassVar[str]
    _FIELDS: ClassVar[tuple[tuple[str, str], ...]] = ()
    _READS: ClassVar[tuple[str, ...]] = ()
    _WRITES: ClassVar[tuple[str, ...]] = ()
    #: flop per execution (a 4-lane FMA = 8)
    FLOPS: ClassVar[int] = 0
    #: register element interpretation of the result: "f64" | "f32" | "i64" | "raw"
    ELEM: ClassVar[str] = "raw"

    # ---- API for the simulator --------------------------------------------------------
    @property
    def mnemonic(self) -> str:
        """Lower-case SW-64 mnemonic, the key of the machine's instruction table."""
        return self.MNEMONIC

    @property
    def kind(self) -> str:
        return self.KIND

    @property
    def flops(self) -> int:
        """Floating-point operations per execution (4-lane FMA = 8, 4-lane add/mul = 4)."""
        return self.FLOPS

    @property
    def elem(self) -> str:
        """Element interpretation: "f64" | "f32" | "i64" | "i32" | "raw"."""
        return self.ELEM

    def reg(self, field: str) -> int | None:
        return _int(getattr(self, field))

    def reads(self) -> tuple[int, ...]:
        """Registers read (r31 included; it is always ready and reads 0)."""
        out = [self.reg(f) for f in self._READS]
        m = self.mem()
        if m is not None and m.areg is not None:
            out.append(m.areg)
        return tuple(r for r in out if r is not None)

    def writes(self) -> tuple[int, ...]:
        """Registers written."""
        return tuple(r for r in (self.reg(f) for f in self._WRITES) if r is not None)

    def mem(self) -> MemOperand | None:
        """The memory operand, or None."""
        return None

    def rlc(self) -> RlcInfo | None:
        """RLC behaviour, or None."""
        return None

    def timing(self, machine: Machine | None = None) -> InstrTiming:
        """Pipes and latency from the machine table (004 Table 3.2)."""
        return (machine or machine_of(self)).instruction(self.MNEMONIC)

    # ---- syntax ------------------------------------------------------------------------
    @classmethod
    def _parse_reg(cls, parser: Parser) -> int:
        pos = parser.pos
        ident = parser.parse_optional_identifier()
        if ident is None or not (ident[0] == "r" and ident[1:].isdigit()):
            parser.raise_error("expected a register r0..r31", pos, parser.pos)
        return int(ident[1:])

    @classmethod
    def _parse_optional_reg(cls, parser: Parser) -> int | None:
        tok = parser._current_token.text  # noqa: SLF001 - lookahead on an identifier
        if len(tok) > 1 and tok[0] == "r" and tok[1:].isdigit():
            return cls._parse_reg(parser)
        return None

    @classmethod
    def parse(cls, parser: Parser) -> RegInstr:
        props: dict[str, Attribute] = {}
        first = True
        for name, kind in cls._FIELDS:
            if kind == _OPTREG:
                if parser.parse_optional_punctuation(",") is None:
                    continue
                props[name] = _i(cls._parse_reg(parser))
                continue
            if not first:
                parser.parse_punctuation(",")
            first = False
            if kind == _REG:
                props[name] = _i(cls._parse_reg(parser))
            elif kind == _INT:
                props[name] = _i(parser.parse_integer(allow_negative=True, allow_boolean=False))
            elif kind == _REGIMM:
                r = cls._parse_optional_reg(parser)
                if r is not None:
                    props[name] = _i(r)
                else:
                    props["imm"] = _i(parser.parse_integer(allow_negative=True, allow_boolean=False))
            elif kind == _MEM:
                off = parser.parse_optional_integer(allow_negative=True, allow_boolean=False) or 0
                parser.parse_punctuation("(")
                pos = parser.pos
                p = parser.parse_identifier()
                if not (p[0] == "p" and p[1:].isdigit()):
                    parser.raise_error("expected a micro-kernel pointer p0, p1, ...", pos, parser.pos)
                props["offset"] = _i(off)
                props["ptr"] = _i(int(p[1:]))
                if parser.parse_optional_punctuation(",") is not None:
                    props["areg"] = _i(cls._parse_reg(parser))
                parser.parse_punctuation(")")
        if parser.parse_optional_punctuation(":") is not None:
            props["elem_type"] = parser.parse_type()
        attrs = parser.parse_optional_attr_dict()
        return new_instr(cls, props, attrs)

    def print(self, printer: Printer) -> None:
        parts: list[str] = []
        for name, kind in self._FIELDS:
            if kind in (_REG, _OPTREG):
                r = self.reg(name)
                if r is not None:
                    parts.append(f"r{r}")
            elif kind == _INT:
                parts.append(str(self.reg(name)))
            elif kind == _REGIMM:
                r = self.reg(name)
                parts.append(f"r{r}" if r is not None else str(self.reg("imm")))
            elif kind == _MEM:
                s = f"{self.reg('offset')}(p{self.reg('ptr')}"
                areg = self.reg("areg")
                s += f", r{areg})" if areg is not None else ")"
                parts.append(s)
        if parts:
            printer.print_string(" " + ", ".join(parts))
        et = getattr(self, "elem_type", None)
        if et is not None:
            printer.print_string(" : ")
            printer.print_attribute(et)
        printer.print_op_attributes(self.attributes)

    # ---- verification ------------------------------------------------------------------
    def verify_(self) -> None:
        if not isinstance(self.parent_op(), MicrokernelOp):
            raise VerifyException(
                f"'{self.name}' is a register instruction: it must be directly in a sw.microkernel body"
            )
        m = machine_of(self)
        for name, kind in self._FIELDS:
            if kind in (_REG, _OPTREG, _REGIMM):
                r = self.reg(name)
                if r is not None and not 0 <= r < m.n_regs:
                    raise VerifyException(f"{self.name}: register r{r} does not exist (r0..r{m.n_regs - 1})")
        areg = self.reg("areg") if hasattr(self, "areg") else None
        if areg is not None and not 0 <= areg < m.n_regs:
            raise VerifyException(f"{self.name}: register r{areg} does not exist (r0..r{m.n_regs - 1})")
        for r in self.writes():
            if r == m.zero_reg:
                raise VerifyException(f"{self.name}: r{m.zero_reg} is hard-wired to 0 and cannot be written (004 L821)")


def _reg_prop():
    return prop_def(IntegerAttr[I64])


def _opt_reg_prop():
    return opt_prop_def(IntegerAttr[I64])


class _MemInstr(RegInstr):
    """A register instruction with a memory operand ``offset(pK[, rA])``."""

    ptr = prop_def(IntegerAttr[I64])
    offset = prop_def(IntegerAttr[I64])
    areg = opt_prop_def(IntegerAttr[I64])

    ACCESS: ClassVar[Literal["load", "store"]]
    NBYTES: ClassVar[int]
    LANES: ClassVar[int] = 4
    REPLICATE: ClassVar[bool] = False
    SPACE: ClassVar[Literal["ldm", "mem"]] = "ldm"

    def mem(self) -> MemOperand:
        return MemOperand(
            ptr=self.ptr.value.data,
            offset=self.offset.value.data,
            nbytes=self.NBYTES,
            elem=self.ELEM,
            lanes=self.LANES,
            replicate=self.REPLICATE,
            access=self.ACCESS,
            space=self.SPACE,
            areg=self.reg("areg"),
        )

    @property
    def required_align(self) -> int:
        """Address alignment: the access size, at most ``vector_ldm_align`` = 32 B (spec §11 [param])."""
        return min(self.NBYTES, machine_of(self).vector_ldm_align)


class _Load(_MemInstr):
    rd = _reg_prop()
    _FIELDS: ClassVar = (("rd", _REG), ("mem", _MEM))
    _WRITES: ClassVar = ("rd",)
    ACCESS: ClassVar = "load"
    KIND: ClassVar = "load"


class _Store(_MemInstr):
    rs = _reg_prop()
    _FIELDS: ClassVar = (("rs", _REG), ("mem", _MEM))
    _READS: ClassVar = ("rs",)
    ACCESS: ClassVar = "store"
    KIND: ClassVar = "store"


@_meta(MNEMONIC='vldd', NBYTES=32, ELEM='f64')
@irdl_op_definition
class VlddOp(_Load):
    """``sw.vldd rD, off(pK)``: load 4 x f64 (32 B) from LDM (P1, lat_ldm_load; 004 L535)."""

    name = "sw.vldd"


@_meta(MNEMONIC='vlds', NBYTES=16, ELEM='f32')
@irdl_op_definition
class VldsOp(_Load):
    """``sw.vlds rD, off(pK)``: load 4 x f32 (16 B) from LDM, one per lane (004 L535, L765)."""

    name = "sw.vlds"


@_meta(MNEMONIC='ldde', NBYTES=8, ELEM='f64', LANES=1, REPLICATE=True)
@irdl_op_definition
class LddeOp(_Load):
    """``sw.ldde rD, off(pK)``: load one f64 and replicate it into the 4 lanes (004 L535)."""

    name = "sw.ldde"


@_meta(MNEMONIC='ldse', NBYTES=4, ELEM='f32', LANES=1, REPLICATE=True)
@irdl_op_definition
class LdseOp(_Load):
    """``sw.ldse rD, off(pK)``: load one f32 and replicate it into the 4 lanes (fp32 twin of ldde)."""

    name = "sw.ldse"


@_meta(MNEMONIC='ldl', NBYTES=8, ELEM='i64', LANES=1)
@irdl_op_definition
class LdlOp(_Load):
    """``sw.ldl rD, off(pK)``: load one i64 into lane 0 (004 L534)."""

    name = "sw.ldl"


@_meta(MNEMONIC='ldw', NBYTES=4, ELEM='i32', LANES=1)
@irdl_op_definition
class LdwOp(_Load):
    """``sw.ldw rD, off(pK)``: load one i32 (sign-extended) into lane 0 (004 L534)."""

    name = "sw.ldw"


@_meta(MNEMONIC='vstd', NBYTES=32, ELEM='f64')
@irdl_op_definition
class VstdOp(_Store):
    """``sw.vstd rS, off(pK)``: store 4 x f64 (32 B) to LDM (004 L535)."""

    name = "sw.vstd"


@_meta(MNEMONIC='vsts', NBYTES=16, ELEM='f32')
@irdl_op_definition
class VstsOp(_Store):
    """``sw.vsts rS, off(pK)``: store 4 x f32 (16 B) to LDM (004 L535)."""

    name = "sw.vsts"


@_meta(MNEMONIC='stl', NBYTES=8, ELEM='i64', LANES=1)
@irdl_op_definition
class StlOp(_Store):
    """``sw.stl rS, off(pK)``: store lane 0 as i64 (004 L534)."""

    name = "sw.stl"


@_meta(MNEMONIC='stw', NBYTES=4, ELEM='i32', LANES=1)
@irdl_op_definition
class StwOp(_Store):
    """``sw.stw rS, off(pK)``: store lane 0 as i32 (004 L534)."""

    name = "sw.stw"


@_meta(MNEMONIC='fstd', NBYTES=8, ELEM='f64', LANES=1)
@irdl_op_definition
class FstdOp(_Store):
    """``sw.fstd rS, off(pK)``: store lane 0 of rS as one f64 (8 B; SW-64 FSTD, the fp twin of
    STL, 004 L534 row "scalar memory access"; table row ``param``). Used for row tails and
    strided outputs that a 32-B vector store would overrun."""

    name = "sw.fstd"


@_meta(MNEMONIC='fsts', NBYTES=4, ELEM='f32', LANES=1)
@irdl_op_definition
class FstsOp(_Store):
    """``sw.fsts rS, off(pK)``: store lane 0 of rS rounded to one f32 (4 B; SW-64 FSTS)."""

    name = "sw.fsts"


def _format_float(v: float) -> str:
    """A float literal the MLIR lexer accepts (always has a '.') that round-trips exactly;
    inf / NaN as their IEEE-754 bit pattern in hex (MLIR's convention, ``0xfff0000000000000``)."""
    import math
    import struct

    if not math.isfinite(v):
        return "0x%016x" % struct.unpack("<Q", struct.pack("<d", float(v)))[0]
    s = repr(float(v))
    if "." not in s:
        mant, _, exp = s.partition("e")
        s = mant + ".0" + ("e" + exp if exp else "")
    return s


@_meta(MNEMONIC='ldfi', KIND='const', ELEM='f64')
@irdl_op_definition
class LdfiOp(RegInstr):
    """``sw.ldfi rD, 5.0e-01``: rD = the fp64 constant in all 4 lanes ("load fp immediate";
    ``-inf`` is written ``0xfff0000000000000``, any IEEE-754 bit pattern in hex).

    A pseudo-instruction: SW-64 has no fp immediates, so compilers keep fp constants in a literal
    pool; on a CPE that pool sits in the runtime part of the LDM (``ldm_bytes - ldm_user_bytes``,
    not addressable by kernels here) and the constant is loaded with LDDE. Timing = the machine
    table row ``ldfi`` (P1, lat_ldm_load, ``param``). Maps of f32 data use the constant rounded to
    f32 by the lowering."""

    name = "sw.ldfi"
    rd = _reg_prop()
    value = prop_def(FloatAttr)
    _FIELDS: ClassVar = (("rd", _REG),)
    _WRITES: ClassVar = ("rd",)

    def __init__(self, rd: int, value: float):
        super().__init__(properties={"rd": _i(rd), "value": FloatAttr(float(value), f64)})

    @property
    def imm(self) -> float:
        return float(self.value.value.data)

    @classmethod
    def parse(cls, parser: Parser) -> LdfiOp:
        rd = cls._parse_reg(parser)
        parser.parse_punctuation(",")
        if parser._current_token.text.lower().startswith("0x"):  # noqa: SLF001 - IEEE bits in hex
            import struct

            bits = parser.parse_integer(allow_negative=False, allow_boolean=False)
            v = struct.unpack("<d", struct.pack("<Q", bits & (2**64 - 1)))[0]
        else:
            v = parser.parse_number()
        attrs = parser.parse_optional_attr_dict()
        op = cls(rd, float(v))
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" r{self.reg('rd')}, {_format_float(self.imm)}")
        printer.print_op_attributes(self.attributes)


@_meta(MNEMONIC='gld', KIND='gld', NBYTES=32, ELEM='raw', SPACE='mem')
@irdl_op_definition
class GldOp(_Load):
    """``sw.gld rD, off(pK)``: load 32 B from MAIN memory (pK must be a ``mem`` pointer) into a
    register; result after ``gld_latency`` = 177 cycles (004 L483). Avoid: DMA is faster (L655)."""

    name = "sw.gld"


@_meta(MNEMONIC='gstd', KIND='gstd', NBYTES=32, ELEM='raw', SPACE='mem')
@irdl_op_definition
class GstdOp(_Store):
    """``sw.gstd rS, off(pK)``: store 32 B of a register to MAIN memory (004 L483)."""

    name = "sw.gstd"


class _LoadSend(_Load):
    """Fused load-and-broadcast (004 L539, L763-765): load into rD and send it to the other 7
    CPEs of the row (…r) or column (…c). fp64 only (004 L823): ``: f32`` is rejected."""

    elem_type = opt_prop_def(base(Float64Type) | base(Float32Type))
    KIND: ClassVar = "load_send"
    AXIS: ClassVar[Literal["row", "col"]]

    def rlc(self) -> RlcInfo:
        return RlcInfo(self.AXIS, "put", 8)

    def verify_(self) -> None:
        super().verify_()
        if self.elem_type is not None and self.elem_type != f64:
            raise VerifyException(
                f"{self.name}: fused load-and-send exists only for fp64 (004 L823); "
                f"for {self.elem_type} use a load followed by put{self.AXIS[0]}"
            )


@_meta(MNEMONIC='vldr', NBYTES=32, ELEM='f64', AXIS='row')
@irdl_op_definition
class VldrOp(_LoadSend):
    """``sw.vldr rD, off(pK)``: load 4 x f64 and broadcast along the row (004 L539 "LDR")."""

    name = "sw.vldr"


@_meta(MNEMONIC='vldc', NBYTES=32, ELEM='f64', AXIS='col')
@irdl_op_definition
class VldcOp(_LoadSend):
    """``sw.vldc rD, off(pK)``: load 4 x f64 and broadcast along the column (004 L539)."""

    name = "sw.vldc"


@_meta(MNEMONIC='ldder', NBYTES=8, ELEM='f64', LANES=1, REPLICATE=True, AXIS='row')
@irdl_op_definition
class LdderOp(_LoadSend):
    """``sw.ldder rD, off(pK)``: load one f64, replicate x4, broadcast along the row (004 L539, L765)."""

    name = "sw.ldder"


@_meta(MNEMONIC='lddec', NBYTES=8, ELEM='f64', LANES=1, REPLICATE=True, AXIS='col')
@irdl_op_definition
class LddecOp(_LoadSend):
    """``sw.lddec rD, off(pK)``: load one f64, replicate x4, broadcast along the column (004 L539)."""

    name = "sw.lddec"


class _VBin(RegInstr):
    """``sw.<op> rA, rB, rC``: rC = rA <op> rB lane-wise (P0, lat_fp; 004 L530-531)."""

    ra = _reg_prop()
    rb = _reg_prop()
    rc = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("rb", _REG), ("rc", _REG))
    _READS: ClassVar = ("ra", "rb")
    _WRITES: ClassVar = ("rc",)
    KIND: ClassVar = "fp"
    FLOPS: ClassVar = 4


@_meta(MNEMONIC='vaddd', ELEM='f64')
@irdl_op_definition
class VadddOp(_VBin):
    name = "sw.vaddd"


@_meta(MNEMONIC='vadds', ELEM='f32')
@irdl_op_definition
class VaddsOp(_VBin):
    name = "sw.vadds"


@_meta(MNEMONIC='vsubd', ELEM='f64')
@irdl_op_definition
class VsubdOp(_VBin):
    name = "sw.vsubd"


@_meta(MNEMONIC='vsubs', ELEM='f32')
@irdl_op_definition
class VsubsOp(_VBin):
    name = "sw.vsubs"


@_meta(MNEMONIC='vmuld', ELEM='f64')
@irdl_op_definition
class VmuldOp(_VBin):
    name = "sw.vmuld"


@_meta(MNEMONIC='vmuls', ELEM='f32')
@irdl_op_definition
class VmulsOp(_VBin):
    name = "sw.vmuls"


class _VFma(RegInstr):
    """``sw.vmad rA, rB, rC`` : rC += rA * rB (Listing 4.1 form ``VMAD (B0, A0, C0)``, 004 L796);
    ``sw.vmad rA, rB, rC, rD`` : rD = rA * rB + rC. P0, lat_fp = 7 (004 L532)."""

    ra = _reg_prop()
    rb = _reg_prop()
    rc = _reg_prop()
    rd = _opt_reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("rb", _REG), ("rc", _REG), ("rd", _OPTREG))
    _READS: ClassVar = ("ra", "rb", "rc")
    KIND: ClassVar = "fp"
    FLOPS: ClassVar = 8

    def writes(self) -> tuple[int, ...]:
        d = self.reg("rd")
        return (self.rc.value.data if d is None else d,)

    @property
    def dest(self) -> int:
        return self.writes()[0]


@_meta(MNEMONIC='vmad', ELEM='f64')
@irdl_op_definition
class VmadOp(_VFma):
    name = "sw.vmad"


@_meta(MNEMONIC='vmas', ELEM='f32')
@irdl_op_definition
class VmasOp(_VFma):
    name = "sw.vmas"


# ---- SW-64 fp compare / select / divide / square root ------------------------------------
# Not in 004 Table 3.2: pipes and latencies are `# param` rows of the machine table. All act on
# the four 64-bit lanes (fp32 values live in 64-bit lanes, as everywhere in the fp32 model).


class _VCmp(_VBin):
    """``sw.vfcmpeq|vfcmple|vfcmplt rA, rB, rC``: rC lane = 2.0 if (rA op rB) else 0.0,
    lane-wise (the Alpha / SW-64 fp-compare convention: "true" is the fp value 2.0). A NaN
    operand compares false. No flops."""

    FLOPS: ClassVar = 0


@_meta(MNEMONIC='vfcmpeq', ELEM='f64')
@irdl_op_definition
class VfcmpeqOp(_VCmp):
    name = "sw.vfcmpeq"


@_meta(MNEMONIC='vfcmple', ELEM='f64')
@irdl_op_definition
class VfcmpleOp(_VCmp):
    name = "sw.vfcmple"


@_meta(MNEMONIC='vfcmplt', ELEM='f64')
@irdl_op_definition
class VfcmpltOp(_VCmp):
    name = "sw.vfcmplt"


class _VSel(RegInstr):
    """``sw.vfseleq|vfsellt rA, rB, rC, rD``: lane-wise select, rD = (rA == 0.0 ? rB : rC)
    (vfseleq) or (rA < 0.0 ? rB : rC) (vfsellt). With a vfcmp result in rA (0.0 / 2.0) this is
    the branch-free max/min/relu idiom (max(a, b) = vfseleq(vfcmplt(a, b), a, b)). No flops."""

    ra = _reg_prop()
    rb = _reg_prop()
    rc = _reg_prop()
    rd = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("rb", _REG), ("rc", _REG), ("rd", _REG))
    _READS: ClassVar = ("ra", "rb", "rc")
    _WRITES: ClassVar = ("rd",)
    KIND: ClassVar = "fp"
    FLOPS: ClassVar = 0


@_meta(MNEMONIC='vfseleq', ELEM='f64')
@irdl_op_definition
class VfseleqOp(_VSel):
    name = "sw.vfseleq"


@_meta(MNEMONIC='vfsellt', ELEM='f64')
@irdl_op_definition
class VfselltOp(_VSel):
    name = "sw.vfsellt"


@_meta(MNEMONIC='vdivd', ELEM='f64')
@irdl_op_definition
class VdivdOp(_VBin):
    """``sw.vdivd rA, rB, rC``: rC = rA / rB, 4 x f64 (IEEE: x/0 = +-inf). Non-pipelined
    divide unit (machine table ``repeat``)."""

    name = "sw.vdivd"


@_meta(MNEMONIC='vdivs', ELEM='f32')
@irdl_op_definition
class VdivsOp(_VBin):
    """``sw.vdivs rA, rB, rC``: rC = rA / rB rounded to fp32 in each 64-bit lane."""

    name = "sw.vdivs"


class _VUnary(RegInstr):
    """``sw.vsqrtd|vsqrts rA, rC``: rC = sqrt(rA) lane-wise (vsqrts rounds to fp32; a negative
    lane gives NaN). Non-pipelined divide/sqrt unit (machine table ``repeat``)."""

    ra = _reg_prop()
    rc = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("rc", _REG))
    _READS: ClassVar = ("ra",)
    _WRITES: ClassVar = ("rc",)
    KIND: ClassVar = "fp"
    FLOPS: ClassVar = 4


@_meta(MNEMONIC='vsqrtd', ELEM='f64')
@irdl_op_definition
class VsqrtdOp(_VUnary):
    name = "sw.vsqrtd"


@_meta(MNEMONIC='vsqrts', ELEM='f32')
@irdl_op_definition
class VsqrtsOp(_VUnary):
    name = "sw.vsqrts"


class _IntBin(RegInstr):
    """``sw.<op> rA, rB|imm, rC``: scalar integer op on lane 0 (004 L524-528); used for address
    and counter updates (Listing 4.1 ``ADD``/``SUBW``). Timed; micro-kernel addresses come from
    the pointer strides, so these do not change memory operands."""

    ra = _reg_prop()
    rb = _opt_reg_prop()
    imm = opt_prop_def(IntegerAttr[I64])
    rc = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("rb", _REGIMM), ("rc", _REG))
    _READS: ClassVar = ("ra", "rb")
    _WRITES: ClassVar = ("rc",)
    KIND: ClassVar = "int"
    ELEM: ClassVar = "i64"

    def verify_(self) -> None:
        super().verify_()
        if (self.rb is None) == (self.imm is None):
            raise VerifyException(f"{self.name}: second operand must be a register or an immediate")


def _int_op(op_name: str, doc: str) -> type[_IntBin]:
    cls = type(
        f"{op_name.capitalize()}Op",
        (_IntBin,),
        {"name": f"sw.{op_name}", "__doc__": doc, "__module__": __name__},
    )
    return _meta(MNEMONIC=op_name)(irdl_op_definition(cls))


AddlOp = _int_op("addl", "``sw.addl rA, rB|imm, rC``: rC = rA + rB (64 bit).")
SublOp = _int_op("subl", "``sw.subl rA, rB|imm, rC``: rC = rA - rB (64 bit).")
AddwOp = _int_op("addw", "``sw.addw rA, rB|imm, rC``: rC = sext32(rA + rB).")
SubwOp = _int_op("subw", "``sw.subw rA, rB|imm, rC``: rC = sext32(rA - rB) (Listing 4.1 counter).")
S4addlOp = _int_op("s4addl", "``sw.s4addl rA, rB|imm, rC``: rC = 4*rA + rB.")
S8addlOp = _int_op("s8addl", "``sw.s8addl rA, rB|imm, rC``: rC = 8*rA + rB.")
MullOp = _int_op("mull", "``sw.mull rA, rB|imm, rC``: rC = rA * rB (P0, lat_int_mul).")
MulwOp = _int_op("mulw", "``sw.mulw rA, rB|imm, rC``: rC = sext32(rA * rB).")
SllOp = _int_op("sll", "``sw.sll rA, rB|imm, rC``: rC = rA << rB.")
SrlOp = _int_op("srl", "``sw.srl rA, rB|imm, rC``: rC = rA >> rB (logical).")
SraOp = _int_op("sra", "``sw.sra rA, rB|imm, rC``: rC = rA >> rB (arithmetic).")
CmpeqOp = _int_op("cmpeq", "``sw.cmpeq rA, rB|imm, rC``: rC = rA == rB.")
CmpltOp = _int_op("cmplt", "``sw.cmplt rA, rB|imm, rC``: rC = rA < rB (signed).")
CmpleOp = _int_op("cmple", "``sw.cmple rA, rB|imm, rC``: rC = rA <= rB (signed).")


@_meta(MNEMONIC='vinsw', KIND='shuffle')
@irdl_op_definition
class VinswOp(RegInstr):
    """``sw.vinsw rA, rB, lane, rC``: rC = rB with 32-bit word ``lane`` (0..7) replaced by the low
    word of rA (P0, 1 cycle; 004 L537). Packs loop variables into vector registers (004 L821)."""

    name = "sw.vinsw"
    ra = _reg_prop()
    rb = _reg_prop()
    lane = prop_def(IntegerAttr[I64])
    rc = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("rb", _REG), ("lane", _INT), ("rc", _REG))
    _READS: ClassVar = ("ra", "rb")
    _WRITES: ClassVar = ("rc",)

    def verify_(self) -> None:
        super().verify_()
        if not 0 <= self.lane.value.data < 8:
            raise VerifyException("sw.vinsw: lane must be in 0..7 (32-bit words of a 256-bit register)")


@_meta(MNEMONIC='vextw', KIND='shuffle')
@irdl_op_definition
class VextwOp(RegInstr):
    """``sw.vextw rA, lane, rC``: rC (lane 0) = sign-extended 32-bit word ``lane`` of rA (004 L537)."""

    name = "sw.vextw"
    ra = _reg_prop()
    lane = prop_def(IntegerAttr[I64])
    rc = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("lane", _INT), ("rc", _REG))
    _READS: ClassVar = ("ra",)
    _WRITES: ClassVar = ("rc",)

    def verify_(self) -> None:
        super().verify_()
        if not 0 <= self.lane.value.data < 8:
            raise VerifyException("sw.vextw: lane must be in 0..7 (32-bit words of a 256-bit register)")


class _LaneInstr(RegInstr):
    """An fp64 lane insert/extract: a ``lane`` property in 0..3 (fp64 lanes of a 256-bit register)."""

    def verify_(self) -> None:
        super().verify_()
        if not 0 <= self.lane.value.data < 4:  # type: ignore[attr-defined]
            raise VerifyException(f"{self.name}: lane must be in 0..3 (fp64 lanes of a 256-bit register)")

    @property
    def lane_index(self) -> int:
        return self.lane.value.data  # type: ignore[attr-defined]


@_meta(MNEMONIC='vinsf', KIND='fp')
@irdl_op_definition
class VinsfOp(_LaneInstr):
    """``sw.vinsf rA, rB, lane, rC``: rC = rB with fp64 lane ``lane`` (0..3) replaced by lane 0
    of rA (SW-64 VINSF, P0, 1 cycle; 004 L537). Packs scalar-loaded elements into one vector so
    that expensive vector ops (divide, square root) serve four elements."""

    name = "sw.vinsf"
    ra = _reg_prop()
    rb = _reg_prop()
    lane = prop_def(IntegerAttr[I64])
    rc = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("rb", _REG), ("lane", _INT), ("rc", _REG))
    _READS: ClassVar = ("ra", "rb")
    _WRITES: ClassVar = ("rc",)
    ELEM: ClassVar = "f64"


@_meta(MNEMONIC='vextf', KIND='fp')
@irdl_op_definition
class VextfOp(_LaneInstr):
    """``sw.vextf rA, lane, rC``: rC = fp64 lane ``lane`` (0..3) of rA, in every lane (a scalar
    fp value, as LDDE leaves it; SW-64 VEXTF, P0, 1 cycle; 004 L537)."""

    name = "sw.vextf"
    ra = _reg_prop()
    lane = prop_def(IntegerAttr[I64])
    rc = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG), ("lane", _INT), ("rc", _REG))
    _READS: ClassVar = ("ra",)
    _WRITES: ClassVar = ("rc",)
    ELEM: ClassVar = "f64"


class _Put(RegInstr):
    """``sw.putX rA, dst``: send register rA (256 bit) along the row (putr: dst = target column)
    or column (putc: dst = target row); dst 8 = broadcast to the other 7 (spec §5 rule 2).
    Asynchronous; stalls only on a full send buffer (004 L496). P1, 1 cycle (004 L538)."""

    ra = _reg_prop()
    dst = prop_def(IntegerAttr[I64])
    _FIELDS: ClassVar = (("ra", _REG), ("dst", _INT))
    _READS: ClassVar = ("ra",)
    KIND: ClassVar = "rlc_put"
    AXIS: ClassVar[Literal["row", "col"]]

    def rlc(self) -> RlcInfo:
        return RlcInfo(self.AXIS, "put", self.dst.value.data)

    def verify_(self) -> None:
        super().verify_()
        m = machine_of(self)
        n = m.mesh_cols if self.AXIS == "row" else m.mesh_rows
        d = self.dst.value.data
        if not 0 <= d <= n:
            raise VerifyException(
                f"{self.name}: dst {d} out of range: 0..{n - 1} names a CPE of the same {self.AXIS}, "
                f"{n} broadcasts (RLC only along the {self.AXIS}, 004 L462, L496)"
            )
        row, col = static_coords(self)
        own = col if self.AXIS == "row" else row
        if own is not None and d == own:
            what = "column" if self.AXIS == "row" else "row"
            raise VerifyException(
                f"{self.name}: a CPE of {what} {own} sends to itself (dst {d}); RLC targets another "
                f"CPE of the same {self.AXIS}"
            )


@_meta(MNEMONIC='putr', AXIS='row')
@irdl_op_definition
class PutrOp(_Put):
    name = "sw.putr"


@_meta(MNEMONIC='putc', AXIS='col')
@irdl_op_definition
class PutcOp(_Put):
    name = "sw.putc"


class _Get(RegInstr):
    """``sw.getX rD``: pop the head of the row (getr) / column (getc) receive FIFO into rD;
    blocks while empty (004 L496). P1, 1 cycle (004 L538)."""

    rd = _reg_prop()
    _FIELDS: ClassVar = (("rd", _REG),)
    _WRITES: ClassVar = ("rd",)
    KIND: ClassVar = "rlc_get"
    AXIS: ClassVar[Literal["row", "col"]]

    def rlc(self) -> RlcInfo:
        return RlcInfo(self.AXIS, "get", None)


@_meta(MNEMONIC='getr', AXIS='row')
@irdl_op_definition
class GetrOp(_Get):
    name = "sw.getr"


@_meta(MNEMONIC='getc', AXIS='col')
@irdl_op_definition
class GetcOp(_Get):
    name = "sw.getc"


@_meta(MNEMONIC='bgt', KIND='branch')
@irdl_op_definition
class BgtOp(RegInstr):
    """``sw.bgt rA``: the loop-closing branch of a micro-kernel body (Listing 4.1 ``BGT cK``);
    timed (P1, branch_penalty [param]); the trip count of the micro-kernel decides the iterations.
    Must be the last instruction of the body."""

    name = "sw.bgt"
    ra = _reg_prop()
    _FIELDS: ClassVar = (("ra", _REG),)
    _READS: ClassVar = ("ra",)


@_meta(MNEMONIC='nop', KIND='nop')
@irdl_op_definition
class NopOp(RegInstr):
    """``sw.nop``: an issue slot with no work (counts as idle, spec §6.3)."""

    name = "sw.nop"


# --------------------------------------------------------------------------------------------
# Micro-kernel
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class MicrokernelOp(IRDLOperation):
    """``sw.microkernel trip N (%b0 step s0, %b1 step s1 mem, ...) { body }``.

    Runs its body ``N`` times. Pointer ``pK`` starts at operand K (an i64 byte address, LDM
    unless marked ``mem`` = main memory, for gld/gstd) and advances by ``sK`` bytes per
    iteration. The body is straight-line register instructions = ONE iteration; the simulator
    times it on the dual-issue P0/P1 model (spec §6) and executes all iterations. The register
    file is CPE state that persists across micro-kernels.
    Verified: only register instructions; pointer indices exist; memory spaces match;
    offsets and strides keep the access aligned; ``sw.bgt`` only last.
    """

    name = "sw.microkernel"
    trip_count = prop_def(IntegerAttr[I64])
    strides = prop_def(Attribute)  # DenseArrayBase of i64 (one per pointer)
    mem_ptrs = opt_prop_def(Attribute)  # DenseArrayBase of i64: indices of main-memory pointers
    pointers = var_operand_def(i64)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(
        self,
        trip_count: int,
        pointers: Sequence[SSAValue | Operation],
        strides: Sequence[int],
        body: Region,
        mem_ptrs: Sequence[int] = (),
    ):
        props: dict[str, Attribute] = {
            "trip_count": _i(trip_count),
            "strides": DenseArrayBase.from_list(i64, list(strides)),
        }
        if mem_ptrs:
            props["mem_ptrs"] = DenseArrayBase.from_list(i64, list(mem_ptrs))
        super().__init__(operands=[pointers], properties=props, regions=[body])

    def pointer_strides(self) -> tuple[int, ...]:
        """Bytes each pointer advances per iteration."""
        # an array<i64: ...>: built so by the constructor and parser, required by the verifier
        return tuple(cast("DenseArrayBase[IntegerType]", self.strides).get_values())

    def mem_pointer_indices(self) -> frozenset[int]:
        """Indices of pointers that address main memory (gld/gstd)."""
        if self.mem_ptrs is None:
            return frozenset()
        # an array<i64: ...>: built so by the constructor and parser, required by the verifier
        return frozenset(cast("DenseArrayBase[IntegerType]", self.mem_ptrs).get_values())

    def instructions(self) -> list[RegInstr]:
        """The body, in program order."""
        return [op for op in self.body.block.ops if isinstance(op, RegInstr)]

    @property
    def trip(self) -> int:
        return self.trip_count.value.data

    @classmethod
    def parse(cls, parser: Parser) -> MicrokernelOp:
        parser.parse_keyword("trip")
        trip = parser.parse_integer(allow_negative=False, allow_boolean=False)
        ptrs: list[SSAValue] = []
        strides: list[int] = []
        mem: list[int] = []

        def one() -> None:
            ptrs.append(parser.parse_operand(i64))
            parser.parse_keyword("step")
            strides.append(parser.parse_integer(allow_negative=True, allow_boolean=False))
            if parser.parse_optional_keyword("mem") is not None:
                mem.append(len(ptrs) - 1)

        parser.parse_comma_separated_list(Parser.Delimiter.PAREN, one)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        op = cls(trip, ptrs, strides, body, mem)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" trip {self.trip} (")
        mem = self.mem_pointer_indices()
        strides = self.pointer_strides()
        for i, p in enumerate(self.pointers):
            if i:
                printer.print_string(", ")
            printer.print_ssa_value(p)
            printer.print_string(f" step {strides[i] if i < len(strides) else 0}")
            if i in mem:
                printer.print_string(" mem")
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    def verify_(self) -> None:
        _require_kernel(self)
        if not isinstance(self.strides, DenseArrayBase):
            raise VerifyException("sw.microkernel: strides must be an array<i64: ...>")
        if self.mem_ptrs is not None and not isinstance(self.mem_ptrs, DenseArrayBase):
            raise VerifyException("sw.microkernel: mem_ptrs must be an array<i64: ...>")
        if self.trip < 0:
            raise VerifyException("sw.microkernel: trip count must be >= 0")
        strides = self.pointer_strides()
        if len(strides) != len(self.pointers):
            raise VerifyException(
                f"sw.microkernel: {len(self.pointers)} pointer(s) but {len(strides)} stride(s)"
            )
        mem = self.mem_pointer_indices()
        ops = list(self.body.block.ops)
        for i, op in enumerate(ops):
            if not isinstance(op, RegInstr):
                raise VerifyException(
                    f"sw.microkernel: body must be straight-line register instructions, found '{op.name}'"
                )
            if isinstance(op, BgtOp) and i != len(ops) - 1:
                raise VerifyException("sw.microkernel: sw.bgt closes the loop and must be the last instruction")
            mo = op.mem()
            if mo is None:
                continue
            if not 0 <= mo.ptr < len(self.pointers):
                raise VerifyException(
                    f"{op.name}: pointer p{mo.ptr} does not exist (the micro-kernel has "
                    f"{len(self.pointers)} pointer(s))"
                )
            is_mem = mo.ptr in mem
            if is_mem != (mo.space == "mem"):
                want = "a main-memory ('mem')" if mo.space == "mem" else "an LDM"
                raise VerifyException(f"{op.name}: p{mo.ptr} must be {want} pointer")
            align = op.required_align  # type: ignore[attr-defined]
            if mo.space == "ldm" and (mo.offset % align or strides[mo.ptr] % align):
                raise VerifyException(
                    f"{op.name}: offset {mo.offset} and stride {strides[mo.ptr]} of p{mo.ptr} must be "
                    f"multiples of {align} bytes (aligned {mo.nbytes}-byte access)"
                )


Sw = Dialect(
    "sw",
    [
        GlobalOp,
        GlobalAddrOp,
        MemAllocOp,
        SpawnOp,
        JoinOp,
        KernelOp,
        CpeIdOp,
        RowIdOp,
        ColIdOp,
        LdmAllocOp,
        LdmFreeOp,
        ReplyAllocOp,
        ReplyResetOp,
        DmaGetOp,
        DmaPutOp,
        DmaWaitOp,
        BarrierOp,
        SynrOp,
        SyncOp,
        MicrokernelOp,
        VlddOp,
        VldsOp,
        LddeOp,
        LdseOp,
        LdlOp,
        LdwOp,
        VstdOp,
        VstsOp,
        StlOp,
        StwOp,
        FstdOp,
        FstsOp,
        LdfiOp,
        GldOp,
        GstdOp,
        VldrOp,
        VldcOp,
        LdderOp,
        LddecOp,
        VadddOp,
        VaddsOp,
        VsubdOp,
        VsubsOp,
        VmuldOp,
        VmulsOp,
        VmadOp,
        VmasOp,
        VfcmpeqOp,
        VfcmpleOp,
        VfcmpltOp,
        VfseleqOp,
        VfselltOp,
        VdivdOp,
        VdivsOp,
        VsqrtdOp,
        VsqrtsOp,
        AddlOp,
        SublOp,
        AddwOp,
        SubwOp,
        S4addlOp,
        S8addlOp,
        MullOp,
        MulwOp,
        SllOp,
        SrlOp,
        SraOp,
        CmpeqOp,
        CmpltOp,
        CmpleOp,
        VinswOp,
        VextwOp,
        VinsfOp,
        VextfOp,
        PutrOp,
        PutcOp,
        GetrOp,
        GetcOp,
        BgtOp,
        NopOp,
    ],
    [ReplyType, DmaModeAttr, BarrierScopeAttr, IoKindAttr],
)
