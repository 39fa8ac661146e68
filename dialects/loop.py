"""The ``loop`` dialect: the per-CPE (SPMD) view of a core-group kernel.

Level 3 of taihu (design.md "Levels"). A ``loop.spmd`` region is executed by every one of the
64 CPEs with its mesh coordinates (row, col) as block arguments (id = 8*row + col, 004 L734);
it is what ``convert-tile-to-loop`` makes of a ``tile.kernel`` and what ``convert-loop-to-sw``
turns into a ``sw.kernel`` + ``sw.spawn``/``sw.join``::

    loop.spmd "scale" ids(%row, %col) (%x = %X : memref<64x1024xf32>) {
      %buf = loop.ldm_buffer "x" : !loop.ldm<1x1024xf32, double>   // two LDM slots
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index                          // this CPE's row of X
      %b = loop.slot %buf[%c0] : !loop.ldm<1x1024xf32, double>
      %t = loop.dma_start %x[%id, %c0] sizes [1, 1024] -> %b : memref<64x1024xf32> -> !loop.ldm<1x1024xf32>
      loop.dma_wait %t
      loop.map relu ins(%b : !loop.ldm<1x1024xf32>) out(%b : !loop.ldm<1x1024xf32>)
      %p = loop.dma_start %b -> %x[%id, %c0] sizes [1, 1024] : !loop.ldm<1x1024xf32> -> memref<64x1024xf32>
      loop.dma_wait %p
      loop.barrier array
    }

Ops: ``loop.spmd``, ``loop.ldm_buffer`` (LDM allocation: name, shape, element type, double
flag), ``loop.slot`` (one half of a double buffer), ``loop.view`` (a sub-range of a buffer),
``loop.dma_start`` (asynchronous block DMA
of one strided window -> a ``!loop.token``), ``loop.dma_wait``, ``loop.summa_step`` (one step T
of the SUMMA mesh GEMM: row/column broadcast of LDM blocks + local accumulate, algorithms.md
§A2/A3), ``loop.rlc_bcast`` (broadcast an LDM block along a mesh row/column), ``loop.gemm_block``
(register-tiled GEMM micro-kernel on local LDM blocks, no communication), ``loop.map``
(element-wise / window / reduction map on local buffers, kinds of
:mod:`taihu.dialects.mapkind`), ``loop.barrier``. Loops and index arithmetic are ``scf.for`` /
``scf.if`` / ``arith`` on ``index`` (tokens may flow through ``scf.for`` iter_args for
prefetching); there is no loop op of its own because per-CPE loops need nothing beyond scf.

Design choices (for the conversion passes)
------------------------------------------
* LDM buffers are plain row-major arrays of the CPE's local block (``!loop.ldm<shape x T>``);
  a tile-level ``col`` layout becomes a buffer with the two dims swapped plus a ``trans_*`` flag
  on the compute op. Double buffers have two slots; every consumer takes a single-slot view
  made by ``loop.slot %buf[%i]`` (slot = i mod 2), so only one op knows about slots and the
  DMA/compute ops stay simple. All buffers are ``loop.ldm_buffer`` ops directly in the
  ``loop.spmd`` body, so the footprint is static (each rounded up to 32 B, the vector alignment
  and the default ``sw.ldm_alloc`` alignment).
* Tokens are SSA values (``!loop.token``). ``convert-loop-to-sw`` maps each token chain (tokens
  connected through iter_args/yields) to one reply word: ``loop.dma_start`` -> ``sw.dma_get``/
  ``sw.dma_put`` incrementing it, ``loop.dma_wait`` -> ``sw.dma_wait reply, 1`` +
  ``sw.reply_reset`` (one DMA in flight per chain).
* A ``loop.dma_start`` window must be ONE athread DMA (:func:`dma_pattern`): a contiguous run
  repeated with a constant gap; its ``size``/``bsize``/``stride`` are static
  (:meth:`DmaStartOp.descriptor`), only the start address is dynamic. Tile-level strided or
  multi-level windows are split by tile-to-loop.
* ``loop.summa_step`` is the unit the 4-role micro-kernels of 004 Listing 4.1 are generated for:
  the role of a CPE at step T follows from (row, col, T) and the scheme's travel directions
  (:func:`taihu.dialects.tile.scheme_info`).

Errors: ``VerifyException`` naming the op and the violated rule (every rule has a lit test).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from taihu.target.dma import dma_pattern  # the athread descriptor rule (re-exported)
from taihu.dialects.target import machine_of
from taihu.dialects.common import MapParamsOp, VecDim, make_params, parse_bound_args, print_bound_args, scheme_info
from taihu.dialects.mapkind import MapKind, check_map
from taihu.dialects.sw import BarrierScope, DmaMode  # the athread enums (spec §10)

__all__ = [
    "BarrierOp",
    "BarrierScope",
    "DmaMode",
    "DmaStartOp",
    "DmaWaitOp",
    "GemmBlockOp",
    "LdmBufType",
    "LdmBufferOp",
    "Loop",
    "MapOp",
    "RlcBcastOp",
    "SlotOp",
    "SpmdOp",
    "SummaStepOp",
    "TokenType",
    "ViewOp",
    "dma_pattern",
]

LDM_ALIGN = 32  # bytes: vector alignment of LDM buffers (sw.ldm_alloc default alignment)
RLC_MSG_BYTES = 32  # one 256-bit register per RLC message (004 L763-765)

# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class LdmBufType(ParametrizedAttribute, TypeAttribute):
    """``!loop.ldm<8x32xf64[, double]>``: a CPE-local LDM buffer, row-major; ``double`` = two
    slots of that shape (double buffering, 004 L674)."""

    name = "loop.ldm"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    slots: IntAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, double: bool = False):
        super().__init__(ArrayAttr([IntAttr(d) for d in shape]), element_type, IntAttr(2 if double else 1))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims, elem = parser.parse_ranked_shape()
            slots = 1
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("double")
                slots = 2
        return [ArrayAttr([IntAttr(d) for d in dims]), elem, IntAttr(slots)]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("x".join(str(d) for d in self.get_shape()) + "x")
            printer.print_attribute(self.element_type)
            if self.is_double:
                printer.print_string(", double")

    def verify(self) -> None:
        shape = self.get_shape()
        if not shape or any(d <= 0 for d in shape):
            raise VerifyException(f"!loop.ldm: shape must be non-empty with positive dims, got {list(shape)}")
        if not isinstance(self.element_type, (Float32Type, Float64Type)):
            raise VerifyException(f"!loop.ldm: element type must be f32 or f64, got {self.element_type}")
        if self.slots.data not in (1, 2):
            raise VerifyException("!loop.ldm: 1 or 2 slots")

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def is_double(self) -> bool:
        return self.slots.data == 2

    @property
    def elem_bytes(self) -> int:
        assert isinstance(self.element_type, (Float32Type, Float64Type))
        return self.element_type.bitwidth // 8

    @property
    def n_elems(self) -> int:
        return math.prod(self.get_shape())

    @property
    def slot_bytes(self) -> int:
        """Bytes of one slot."""
        return self.n_elems * self.elem_bytes

    def footprint_bytes(self) -> int:
        """LDM bytes incl. both slots, each rounded up to 32 B (vector alignment)."""
        return -(-self.slot_bytes // LDM_ALIGN) * LDM_ALIGN * self.slots.data

    def single(self) -> LdmBufType:
        return LdmBufType(self.get_shape(), self.element_type, False)


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """``!loop.token``: completion token of an asynchronous DMA (a reply word, 004 L487)."""

    name = "loop.token"


@irdl_attr_definition
class DmaModeAttr(EnumAttribute[DmaMode], SpacedOpaqueSyntaxAttribute):
    name = "loop.dma_mode"


@irdl_attr_definition
class BarrierScopeAttr(EnumAttribute[BarrierScope], SpacedOpaqueSyntaxAttribute):
    name = "loop.barrier_scope"


class RlcAxis(StrEnum):
    ROW = "row"
    COL = "col"


@irdl_attr_definition
class RlcAxisAttr(EnumAttribute[RlcAxis], SpacedOpaqueSyntaxAttribute):
    name = "loop.axis"


@irdl_attr_definition
class MapKindAttr(EnumAttribute[MapKind], SpacedOpaqueSyntaxAttribute):
    name = "loop.map_kind"


@irdl_attr_definition
class VecDimAttr(EnumAttribute[VecDim], SpacedOpaqueSyntaxAttribute):
    name = "loop.vec"


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def enclosing_spmd(op: Operation) -> SpmdOp | None:
    p = op.parent_op()
    while p is not None:
        if isinstance(p, SpmdOp):
            return p
        p = p.parent_op()
    return None


def _require_spmd(op: Operation) -> SpmdOp:
    s = enclosing_spmd(op)
    if s is None:
        raise VerifyException(f"'{op.name}' is a per-CPE operation: it must be inside a loop.spmd")
    return s


def _buf(op: Operation, what: str, v: SSAValue) -> LdmBufType:
    t = v.type
    assert isinstance(t, LdmBufType)
    if t.is_double:
        raise VerifyException(
            f"'{op.name}': {what} %{v.name_hint or 'buffer'} is double-buffered; select a slot with loop.slot"
        )
    return t


def _name(v: SSAValue) -> str:
    return v.name_hint or "buffer"


def _elem(t: Attribute) -> str:
    return "f64" if isinstance(t, Float64Type) else "f32" if isinstance(t, Float32Type) else str(t)


# --------------------------------------------------------------------------------------------
# SPMD region and LDM buffers
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class SpmdOp(IRDLOperation):
    """``loop.spmd "name" ids(%row, %col) (%a = %A : memref<..>, ...) { body }``: the body runs
    on every CPE; ``%row``/``%col`` (index, 0..7) are its mesh coordinates; the memref operands
    (main memory) are bound to the following block arguments. Isolated from above.

    Verified: block arguments = 2 index + the operands' types; memrefs static, identity layout;
    ``loop.ldm_buffer`` names unique; the LDM footprint (double buffers twice, each slot rounded
    to 32 B) <= ``ldm_user_bytes`` (57 344 B [param], 64 KB LDM 004 L460) -- the message names
    every buffer with its size.
    """

    name = "loop.spmd"
    kernel_name = prop_def(StringAttr)
    args = var_operand_def(MemRefType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), NoTerminator())

    def __init__(self, name: str, args: Sequence[SSAValue], body: Region | None = None):
        if body is None:
            body = Region(Block(arg_types=[IndexType(), IndexType()] + [a.type for a in args]))
        super().__init__(operands=[args], properties={"kernel_name": StringAttr(name)}, regions=[body])

    @property
    def row(self) -> BlockArgument:
        return self.body.block.args[0]

    @property
    def col(self) -> BlockArgument:
        return self.body.block.args[1]

    @property
    def memref_args(self) -> tuple[BlockArgument, ...]:
        return tuple(self.body.block.args[2:])

    @classmethod
    def parse(cls, parser: Parser) -> SpmdOp:
        name = parser.parse_str_literal()
        parser.parse_keyword("ids")
        ids = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )
        if len(ids) != 2:
            parser.raise_error("loop.spmd: ids takes exactly (%row, %col)")
        operands, args = parse_bound_args(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([i.resolve(IndexType()) for i in ids] + args)
        op = cls(name, operands, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel_name)
        printer.print_string(" ids(")
        printer.print_block_argument(self.row, print_type=False)
        printer.print_string(", ")
        printer.print_block_argument(self.col, print_type=False)
        printer.print_string(") ")
        print_bound_args(printer, self.memref_args, self.args)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    def buffers(self) -> list[LdmBufferOp]:
        return [op for op in self.body.block.ops if isinstance(op, LdmBufferOp)]

    def ldm_footprint(self) -> list[tuple[str, int]]:
        """(buffer name, LDM bytes incl. both slots of a double buffer) in program order."""
        return [(b.buffer_name.data, b.buffer_type.footprint_bytes()) for b in self.buffers()]

    def ldm_bytes(self) -> int:
        return sum(b for _, b in self.ldm_footprint())

    def verify_(self) -> None:
        where = f'loop.spmd "{self.kernel_name.data}"'
        args = self.body.block.args
        if len(args) != len(self.args) + 2 or any(not isinstance(a.type, IndexType) for a in args[:2]):
            raise VerifyException(f"{where}: the body takes (row, col) index arguments then one per operand")
        for i, (a, v) in enumerate(zip(args[2:], self.args)):
            if a.type != v.type:
                raise VerifyException(f"{where}: block argument #{i + 2} has type {a.type}, operand has {v.type}")
            t = v.type
            assert isinstance(t, MemRefType)
            if any(d < 0 for d in t.get_shape()) or not isinstance(t.layout, NoneAttr):
                raise VerifyException(f"{where}: operand #{i} must be a static identity-layout memref, got {t}")
        names: set[str] = set()
        for b in self.buffers():
            n = b.buffer_name.data
            if n in names:
                raise VerifyException(f'{where}: two LDM buffers are named "{n}"')
            names.add(n)
        limit = machine_of(self).ldm_user_bytes
        fp = self.ldm_footprint()
        total = sum(x for _, x in fp)
        if total > limit:
            listing = ", ".join(
                f'"{n}" {x} B' + (" (double)" if b.buffer_type.is_double else "")
                for (n, x), b in zip(fp, self.buffers())
            )
            raise VerifyException(
                f"{where}: LDM footprint {total} bytes per CPE > ldm_user_bytes = {limit} "
                f"(double buffers counted twice): {listing}"
            )


@irdl_op_definition
class LdmBufferOp(IRDLOperation):
    """``%b = loop.ldm_buffer "A" : !loop.ldm<8x32xf64[, double]>``: allocate a buffer in this
    CPE's LDM (``ldm_malloc``); name for diagnostics/traces. Directly in the ``loop.spmd`` body."""

    name = "loop.ldm_buffer"
    buffer_name = prop_def(StringAttr, prop_name="name")
    result = result_def(LdmBufType)
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, t: LdmBufType):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[t])

    @property
    def buffer_type(self) -> LdmBufType:
        assert isinstance(self.result.type, LdmBufType)
        return self.result.type

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), SpmdOp):
            raise VerifyException("loop.ldm_buffer must be directly in a loop.spmd body (not in a loop/if)")


@irdl_op_definition
class SlotOp(IRDLOperation):
    """``%v = loop.slot %buf[%i] : !loop.ldm<..., double>``: slot ``i mod 2`` of a double
    buffer as a single buffer (result type = the buffer type without ``double``)."""

    name = "loop.slot"
    buffer = operand_def(LdmBufType)
    index = operand_def(IndexType())
    result = result_def(LdmBufType)

    def __init__(self, buffer: SSAValue | Operation, index: SSAValue | Operation):
        t = SSAValue.get(buffer).type
        assert isinstance(t, LdmBufType)
        super().__init__(operands=[buffer, index], result_types=[t.single()])

    @classmethod
    def parse(cls, parser: Parser) -> SlotOp:
        buf = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        idx = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        if not isinstance(t, LdmBufType):
            parser.raise_error(f"loop.slot: expected a !loop.ldm type, got {t}")
        op = cls(parser.resolve_operand(buf, t), parser.resolve_operand(idx, IndexType()))
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.buffer)
        printer.print_string("[")
        printer.print_ssa_value(self.index)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    def verify_(self) -> None:
        _require_spmd(self)
        t = self.buffer.type
        assert isinstance(t, LdmBufType)
        if not t.is_double:
            raise VerifyException(f"loop.slot: %{_name(self.buffer)} is not double-buffered")
        if self.result.type != t.single():
            raise VerifyException(f"loop.slot: result type must be {t.single()}, got {self.result.type}")
        owner = self.index.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            if owner.value.value.data < 0:
                raise VerifyException("loop.slot: slot index must be >= 0")


@irdl_op_definition
class ViewOp(IRDLOperation):
    """``%v = loop.view %buf[%off] : !loop.ldm<S x T> -> !loop.ldm<S2 x T>``: the elements
    ``[off, off + prod(S2))`` of a single-slot buffer, reinterpreted as a row-major buffer of shape
    ``S2`` (like ``memref.subview`` + reshape): e.g. the interior of a zero-padded row as a DMA
    target, or one row of a multi-row buffer as a DMA source. ``%off`` is an ``index`` (elements;
    may be dynamic). loop-to-sw: the byte address ``addr(buf) + off * elem_bytes``. Consumers that
    use vector loads/stores (maps, GEMMs) need ``off * elem_bytes % 32 == 0`` (LDM_ALIGN); DMAs take
    any offset.

    Verified: the source is a single-slot buffer (select a slot of a double buffer first), the
    result single-slot with the same element type and at most as many elements; a constant offset
    is >= 0 and the view ends inside the source.
    """

    name = "loop.view"
    buffer = operand_def(LdmBufType)
    offset = operand_def(IndexType())
    result = result_def(LdmBufType)

    assembly_format = "$buffer `[` $offset `]` attr-dict `:` type($buffer) `->` type($result)"

    def __init__(self, buffer: SSAValue | Operation, offset: SSAValue | Operation, t: LdmBufType):
        super().__init__(operands=[buffer, offset], result_types=[t])

    def static_offset(self) -> int | None:
        """The offset (elements) when it is an ``arith.constant``, else None."""
        owner = self.offset.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def verify_(self) -> None:
        _require_spmd(self)
        src = _buf(self, "source", self.buffer)
        res = self.result.type
        assert isinstance(res, LdmBufType)
        if res.is_double:
            raise VerifyException("loop.view: the result must be a single-slot buffer")
        if res.element_type != src.element_type:
            raise VerifyException(
                f"loop.view: element types differ (source {_elem(src.element_type)}, view {_elem(res.element_type)})"
            )
        if res.n_elems > src.n_elems:
            raise VerifyException(
                f"loop.view: a view of {res.n_elems} elements does not fit %{_name(self.buffer)} ({src.n_elems} elements)"
            )
        off = self.static_offset()
        if off is not None and (off < 0 or off + res.n_elems > src.n_elems):
            raise VerifyException(
                f"loop.view: elements [{off}, {off + res.n_elems}) lie outside %{_name(self.buffer)} "
                f"({src.n_elems} elements)"
            )


# --------------------------------------------------------------------------------------------
# DMA
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class DmaStartOp(IRDLOperation):
    """Start an asynchronous block DMA between main memory and this CPE's LDM; returns a token.

    Get: ``%t = loop.dma_start %A[%i, %j] sizes [8, 32] [strides [1, 2]] [mode bcast] -> %buf : memref<..> -> !loop.ldm<..>``
    Put: ``%t = loop.dma_start %buf -> %C[%i, %j] sizes [8, 32] : !loop.ldm<..> -> memref<..>``

    The window ``{offset_d + i*stride_d : 0 <= i < size_d}`` (offsets = ``index`` values, static
    sizes, static element strides, default 1) is copied packed, in row-major order, to/from the
    start of the buffer. Verified: one memref and one single-slot LDM buffer of the same element
    type; offsets/sizes/strides = memref rank; the window extent fits the memref dims; the
    window has at most as many elements as
    the buffer; the window is one athread DMA (:func:`dma_pattern`; 004 L657 wants blocks of
    >= 256 B, a performance matter left to the passes); ``bcast``/``row`` only for gets.
    """

    name = "loop.dma_start"
    src = operand_def(LdmBufType | MemRefType)
    dst = operand_def(LdmBufType | MemRefType)
    offsets = var_operand_def(IndexType())
    sizes = prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)
    mode = opt_prop_def(DmaModeAttr)
    token = result_def(TokenType())

    def __init__(
        self,
        src: SSAValue | Operation,
        dst: SSAValue | Operation,
        offsets: Sequence[SSAValue | Operation],
        sizes: Sequence[int],
        mode: DmaMode | None = None,
        strides: Sequence[int] | None = None,
    ):
        props: dict[str, Attribute] = {"sizes": DenseArrayBase.from_list(i64, list(sizes))}
        if strides is not None and any(x != 1 for x in strides):
            props["strides"] = DenseArrayBase.from_list(i64, list(strides))
        if mode is not None:
            props["mode"] = DmaModeAttr(mode)
        super().__init__(operands=[src, dst, offsets], properties=props, result_types=[TokenType()])

    @property
    def is_get(self) -> bool:
        return isinstance(self.src.type, MemRefType)

    @property
    def memref(self) -> SSAValue:
        return self.src if self.is_get else self.dst

    @property
    def buffer(self) -> SSAValue:
        return self.dst if self.is_get else self.src

    @property
    def size_values(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.sizes.get_values())

    @property
    def stride_values(self) -> tuple[int, ...]:
        """Element strides of the window per memref dim (1 when absent)."""
        if self.strides is None:
            return (1,) * len(self.size_values)
        return tuple(int(x) for x in self.strides.get_values())

    @property
    def dma_mode(self) -> DmaMode:
        return DmaMode.PE if self.mode is None else self.mode.data

    def descriptor(self) -> tuple[int, int, int]:
        """Static ``(size, bsize, stride)`` in bytes of the athread DMA (sw.dma_get/put)."""
        mt = self.memref.type
        assert isinstance(mt, MemRefType)
        et = mt.get_element_type()
        assert isinstance(et, (Float32Type, Float64Type))
        pat = dma_pattern(mt.get_shape(), self.size_values, et.bitwidth // 8, self.stride_values)
        assert pat is not None
        return pat

    @classmethod
    def parse(cls, parser: Parser) -> DmaStartOp:
        def window_opts() -> dict[str, Attribute]:
            props: dict[str, Attribute] = {}
            parser.parse_keyword("sizes")
            sizes = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
            props["sizes"] = DenseArrayBase.from_list(i64, sizes)
            if parser.parse_optional_keyword("strides") is not None:
                st = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
                props["strides"] = DenseArrayBase.from_list(i64, st)
            if parser.parse_optional_keyword("mode") is not None:
                props["mode"] = DmaModeAttr(DmaMode(parser.parse_identifier()))
            return props

        def offsets() -> list:
            return parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_unresolved_operand)

        u_src = parser.parse_unresolved_operand()
        offs = None
        props: dict[str, Attribute] = {}
        if parser._current_token.text == "[":
            offs = offsets()
            props = window_opts()
        parser.parse_punctuation("->")
        u_dst = parser.parse_unresolved_operand()
        if offs is None:
            offs = offsets()
            props = window_opts()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t_src = parser.parse_type()
        parser.parse_punctuation("->")
        t_dst = parser.parse_type()
        src = parser.resolve_operand(u_src, t_src)
        dst = parser.resolve_operand(u_dst, t_dst)
        idx = [parser.resolve_operand(o, IndexType()) for o in offs]
        return cls.build(
            operands=[src, dst, idx], properties=props, attributes=attrs, result_types=[TokenType()]
        )

    def print(self, printer: Printer) -> None:
        def window(v: SSAValue) -> None:
            printer.print_ssa_value(v)
            printer.print_string("[")
            printer.print_list(self.offsets, printer.print_ssa_value)
            printer.print_string("] sizes [" + ", ".join(map(str, self.size_values)) + "]")
            if self.strides is not None:
                printer.print_string(" strides [" + ", ".join(map(str, self.stride_values)) + "]")
            if self.mode is not None:
                printer.print_string(f" mode {self.mode.data.value}")

        printer.print_string(" ")
        if self.is_get:
            window(self.src)
            printer.print_string(" -> ")
            printer.print_ssa_value(self.dst)
        else:
            printer.print_ssa_value(self.src)
            printer.print_string(" -> ")
            window(self.dst)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.dst.type)

    def verify_(self) -> None:
        _require_spmd(self)
        if isinstance(self.src.type, MemRefType) == isinstance(self.dst.type, MemRefType):
            raise VerifyException(
                "loop.dma_start: exactly one side must be a memref (main memory) and the other a !loop.ldm buffer"
            )
        bt = _buf(self, "buffer", self.buffer)
        mt = self.memref.type
        assert isinstance(mt, MemRefType)
        if mt.get_element_type() != bt.element_type:
            raise VerifyException(
                f"loop.dma_start: element types differ (memref {mt.get_element_type()}, buffer {bt.element_type})"
            )
        shape = mt.get_shape()
        sizes = self.size_values
        if len(self.offsets) != len(shape) or len(sizes) != len(shape):
            raise VerifyException(
                f"loop.dma_start: memref rank {len(shape)} needs {len(shape)} offsets and sizes "
                f"(got {len(self.offsets)}, {len(sizes)})"
            )
        strides = self.stride_values
        if len(strides) != len(shape) or any(x < 1 for x in strides):
            raise VerifyException(
                f"loop.dma_start: strides {list(strides)} must be {len(shape)} values >= 1 (one per memref dim)"
            )
        if any(s < 1 or s > d for s, d in zip(sizes, shape)):
            raise VerifyException(f"loop.dma_start: sizes {list(sizes)} must be in 1..dim of {mt}")
        if any((s - 1) * x + 1 > d for s, x, d in zip(sizes, strides, shape)):
            raise VerifyException(
                f"loop.dma_start: window sizes {list(sizes)} with strides {list(strides)} span more than the dims of {mt}"
            )
        n = math.prod(sizes)
        if n > bt.n_elems:
            raise VerifyException(
                f"loop.dma_start: window of {n} elements does not fit buffer %{_name(self.buffer)} ({bt.n_elems} elements)"
            )
        if dma_pattern(shape, sizes, bt.elem_bytes, strides) is None:
            raise VerifyException(
                f"loop.dma_start: window sizes {list(sizes)} of {mt} is not one strided DMA "
                "(more than one outer dim repeats the contiguous block); split it"
            )
        if self.dma_mode != DmaMode.PE and not self.is_get:
            raise VerifyException(f"loop.dma_start: mode {self.dma_mode.value} is only valid for gets (memory -> LDM)")


@irdl_op_definition
class DmaWaitOp(IRDLOperation):
    """``loop.dma_wait %t0, %t1``: block until the DMAs of the tokens have completed (their
    reply words incremented, 004 L487)."""

    name = "loop.dma_wait"
    tokens = var_operand_def(TokenType())
    assembly_format = "$tokens attr-dict"

    def __init__(self, tokens: Sequence[SSAValue | Operation]):
        super().__init__(operands=[tokens])

    def verify_(self) -> None:
        _require_spmd(self)
        if not self.tokens:
            raise VerifyException("loop.dma_wait: needs at least one token")


# --------------------------------------------------------------------------------------------
# Mesh GEMM: SUMMA steps, broadcasts, block micro-kernels
# --------------------------------------------------------------------------------------------

#: register tile of §A3: 4 vector registers (16 elements) along the vectorised dim x 4
#: broadcast scalars along the other dim (004 L777, model §9.3).
REG_TILE_VEC = 16
REG_TILE_OTHER = 4
VEC_LANES = 4


def _gemm_dims(op: Operation, ta: bool, tb: bool, tc: bool, a: LdmBufType, b: LdmBufType, c: LdmBufType) -> tuple[int, int, int]:
    """(m, n, k) of local blocks with transposed storage flags; raises on mismatch."""
    for nm, t in (("A", a), ("B", b), ("C", c)):
        if len(t.get_shape()) != 2:
            raise VerifyException(f"'{op.name}': {nm} must be a rank-2 buffer, got {t}")
    m, k = a.get_shape()[::-1] if ta else a.get_shape()
    kb, n = b.get_shape()[::-1] if tb else b.get_shape()
    cm, cn = c.get_shape()[::-1] if tc else c.get_shape()
    if kb != k or cm != m or cn != n:
        raise VerifyException(
            f"'{op.name}': block shapes disagree: A gives (m, k) = ({m}, {k}), B gives (k, n) = ({kb}, {n}), "
            f"C gives (m, n) = ({cm}, {cn})"
        )
    return m, n, k


class _GemmFlags(IRDLOperation):
    trans_a = opt_prop_def(UnitAttr)
    trans_b = opt_prop_def(UnitAttr)
    trans_c = opt_prop_def(UnitAttr)

    def flags(self) -> tuple[bool, bool, bool]:
        return (self.trans_a is not None, self.trans_b is not None, self.trans_c is not None)

    def _check_contiguous(self, vec: VecDim, a: LdmBufType, b: LdmBufType) -> None:
        """The vectorised dim must be the last (contiguous) dim of the vector-loaded operand and
        of C (4 consecutive elements per vector load/store)."""
        ta, tb, tc = self.flags()
        if vec == VecDim.M:
            ok_op, ok_c, opname = ta, tc, "A"
        else:
            ok_op, ok_c, opname = not tb, not tc, "B"
        if not ok_op:
            flag = "trans_a" if vec == VecDim.M else "no trans_b"
            raise VerifyException(
                f"'{self.name}': vectorised dim {vec.value.upper()} must be contiguous in {opname} ({flag}: "
                f"store {opname} with {vec.value.upper()} as its last dim)"
            )
        if not ok_c:
            flag = "trans_c" if vec == VecDim.M else "no trans_c"
            raise VerifyException(
                f"'{self.name}': vectorised dim {vec.value.upper()} must be contiguous in C ({flag})"
            )


@irdl_op_definition
class SummaStepOp(_GemmFlags):
    """``loop.summa_step %T, %a, %b -> %c scheme S [trans_a] [trans_b] [trans_c]``: step T of
    the SUMMA mesh GEMM (algorithms.md §A2/A3, 004 L715-759) on this CPE's LDM blocks.

    The CPE in mesh column/row T (per the scheme's travel directions, Table 4.1) streams its A
    block along its row/column with fused load-and-broadcast (VLDR/VLDC/LDDER/LDDEC), likewise B;
    every CPE receives (GETR/GETC) and accumulates ``C += A_T x B_T`` with the 4x4 register tile.
    Buffers hold local blocks row-major; ``trans_x`` = the buffer stores the transpose
    (A: (k, m), B: (n, k), C: (n, m)).

    Verified: f64 blocks (004 L823); consistent (m, n, k); vectorised local dim % 16, other % 4
    (004 L784, §A5 / 8 CPEs), k >= 1; the vectorised dim contiguous in the vector-loaded operand
    and in C; C distinct from A and B.
    """

    name = "loop.summa_step"
    step = operand_def(IndexType())
    a = operand_def(LdmBufType)
    b = operand_def(LdmBufType)
    c = operand_def(LdmBufType)
    scheme = prop_def(IntegerAttr[I64])

    assembly_format = (
        "$step `,` $a `,` $b `->` $c `scheme` $scheme (`trans_a` $trans_a^)? (`trans_b` $trans_b^)? "
        "(`trans_c` $trans_c^)? attr-dict `:` type($a) `,` type($b) `,` type($c)"
    )

    def __init__(self, step, a, b, c, scheme: int, trans_a=False, trans_b=False, trans_c=False):
        props: dict[str, Attribute] = {"scheme": IntegerAttr(scheme, i64)}
        for k, v in (("trans_a", trans_a), ("trans_b", trans_b), ("trans_c", trans_c)):
            if v:
                props[k] = UnitAttr()
        super().__init__(operands=[step, a, b, c], properties=props)

    def block_mnk(self) -> tuple[int, int, int]:
        return _gemm_dims(self, *self.flags(), self.a.type, self.b.type, self.c.type)  # type: ignore[arg-type]

    def verify_(self) -> None:
        _require_spmd(self)
        a, b, c = (_buf(self, n, v) for n, v in (("A", self.a), ("B", self.b), ("C", self.c)))
        for nm, t in (("A", a), ("B", b), ("C", c)):
            if not isinstance(t.element_type, Float64Type):
                raise VerifyException(
                    f"loop.summa_step: {nm} must be f64 (fused load-and-broadcast is fp64 only, 004 L823), got {t.element_type}"
                )
        s = self.scheme.value.data
        if s not in (1, 2, 3, 4):
            raise VerifyException(f"loop.summa_step: scheme must be 1, 2, 3 or 4 (Table 4.1), got {s}")
        vec = scheme_info(s)[0]
        m, n, k = self.block_mnk()
        vdim, odim = (m, n) if vec == VecDim.M else (n, m)
        vname, oname = ("m", "n") if vec == VecDim.M else ("n", "m")
        if vdim % REG_TILE_VEC or odim % REG_TILE_OTHER:
            raise VerifyException(
                f"loop.summa_step scheme {s}: local {vname} = {vdim} must be a multiple of {REG_TILE_VEC} and "
                f"{oname} = {odim} of {REG_TILE_OTHER} (4x4 register tile, 004 L777)"
            )
        self._check_contiguous(vec, a, b)
        if self.c is self.a or self.c is self.b:
            raise VerifyException("loop.summa_step: C must be a different buffer from A and B")


@irdl_op_definition
class GemmBlockOp(_GemmFlags):
    """``loop.gemm_block %a, %b -> %c vec m|n [trans_a] [trans_b] [trans_c]``: register-tiled
    ``C += A x B`` on this CPE's LDM blocks, no communication (overlapping distribution, 004
    L708; per-CPE GEMMs of grouped/small convolutions). f32 (vmas) or f64 (vmad), all three the
    same, or **mixed**: an f64 C with f32 A and/or B -- the f32 operands are widened by their
    loads (VLDS / LDSE put fp32 values in the 64-bit lanes, as every fp32 value of the register
    model) and the FMA is the fp64 VMAD, so the result equals converting them first (no
    ``convert`` pass, half the LDM). Verified: consistent (m, n, k); vectorised dim % 4 lanes and
    contiguous in the vector-loaded operand and C; C distinct from A and B."""

    name = "loop.gemm_block"
    a = operand_def(LdmBufType)
    b = operand_def(LdmBufType)
    c = operand_def(LdmBufType)
    vec = prop_def(VecDimAttr)

    assembly_format = (
        "$a `,` $b `->` $c `vec` $vec (`trans_a` $trans_a^)? (`trans_b` $trans_b^)? "
        "(`trans_c` $trans_c^)? attr-dict `:` type($a) `,` type($b) `,` type($c)"
    )

    def __init__(self, a, b, c, vec: VecDim = VecDim.M, trans_a=False, trans_b=False, trans_c=False):
        props: dict[str, Attribute] = {"vec": VecDimAttr(vec)}
        for k, v in (("trans_a", trans_a), ("trans_b", trans_b), ("trans_c", trans_c)):
            if v:
                props[k] = UnitAttr()
        super().__init__(operands=[a, b, c], properties=props)

    def verify_(self) -> None:
        _require_spmd(self)
        a, b, c = (_buf(self, n, v) for n, v in (("A", self.a), ("B", self.b), ("C", self.c)))
        mixed = isinstance(c.element_type, Float64Type)  # f32 / f64 operands of an fp64 C
        if not (a.element_type == b.element_type == c.element_type or mixed):
            raise VerifyException(
                f"loop.gemm_block: A, B, C must share the element type, or C be f64 (mixed: f32 operands "
                f"widened on load) (got {_elem(a.element_type)}, {_elem(b.element_type)}, {_elem(c.element_type)})"
            )
        m, n, k = _gemm_dims(self, *self.flags(), a, b, c)
        vec = self.vec.data
        v = m if vec == VecDim.M else n
        if v % VEC_LANES:
            raise VerifyException(
                f"loop.gemm_block: vectorised dim {vec.value.upper()} = {v} must be a multiple of {VEC_LANES} (vector lanes)"
            )
        self._check_contiguous(vec, a, b)
        if self.c is self.a or self.c is self.b:
            raise VerifyException("loop.gemm_block: C must be a different buffer from A and B")


@irdl_op_definition
class RlcBcastOp(IRDLOperation):
    """``loop.rlc_bcast %src -> %dst row|col root %T``: after it, ``dst`` of every CPE of this
    mesh row (column) holds ``src`` of the CPE in column (row) ``T`` of that row (column):
    register communication (PUTR/PUTC broadcast, GETR/GETC; 004 L489-496, L763-765; R3: share
    data through RLC, never through memory). Verified: same shape and element type, bytes a
    multiple of 32 (one 256-bit message per register), src distinct from dst."""

    name = "loop.rlc_bcast"
    src = operand_def(LdmBufType)
    dst = operand_def(LdmBufType)
    root = operand_def(IndexType())
    axis = prop_def(RlcAxisAttr)
    assembly_format = "$src `->` $dst $axis `root` $root attr-dict `:` type($src) `,` type($dst)"

    def verify_(self) -> None:
        _require_spmd(self)
        s = _buf(self, "source", self.src)
        d = _buf(self, "destination", self.dst)
        if s.get_shape() != d.get_shape() or s.element_type != d.element_type:
            raise VerifyException(f"loop.rlc_bcast: source {s} and destination {d} differ")
        if s.slot_bytes % RLC_MSG_BYTES:
            raise VerifyException(
                f"loop.rlc_bcast: {s.slot_bytes} bytes is not a multiple of {RLC_MSG_BYTES} (256-bit RLC messages)"
            )
        if self.src is self.dst:
            raise VerifyException("loop.rlc_bcast: source and destination must be different buffers")


# --------------------------------------------------------------------------------------------
# Maps and barriers
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class MapOp(MapParamsOp):
    """``loop.map KIND [ins(%x, ... : types)] out(%y : type) {params}``: a map on this CPE's
    local buffers (same kinds, parameters and shape rules as ``tile.map``,
    :mod:`taihu.dialects.mapkind`); lowered to element-wise micro-kernels."""

    name = "loop.map"
    kind = prop_def(MapKindAttr)
    inputs = var_operand_def(LdmBufType)
    out = operand_def(LdmBufType)

    assembly_format = (
        "$kind (`ins` `(` $inputs^ `:` type($inputs) `)`)? `out` `(` $out `:` type($out) `)` attr-dict"
    )

    def __init__(self, kind: MapKind, inputs: Sequence[SSAValue | Operation], out: SSAValue | Operation, **params: object):
        props = make_params(**params)
        props["kind"] = MapKindAttr(kind)
        super().__init__(operands=[inputs, out], properties=props)

    def verify_(self) -> None:
        _require_spmd(self)
        kind = self.kind.data
        ins = [_buf(self, f"input #{i}", v) for i, v in enumerate(self.inputs)]
        out = _buf(self, "output", self.out)
        err = check_map(
            kind,
            [t.get_shape() for t in ins],
            [_elem(t.element_type) for t in ins],
            out.get_shape(),
            _elem(out.element_type),
            self.params(),
        )
        if err:
            raise VerifyException(f"loop.map {kind.value}: {err}")


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """``loop.barrier array|row|col``: synchronise the whole mesh / this CPE's row / column
    (athread_syn; SYNR/SYNC, spec §7)."""

    name = "loop.barrier"
    scope = prop_def(BarrierScopeAttr)
    assembly_format = "$scope attr-dict"

    def __init__(self, scope: BarrierScope = BarrierScope.ARRAY):
        super().__init__(properties={"scope": BarrierScopeAttr(scope)})

    def verify_(self) -> None:
        _require_spmd(self)


Loop = Dialect(
    "loop",
    [
        SpmdOp,
        LdmBufferOp,
        SlotOp,
        ViewOp,
        DmaStartOp,
        DmaWaitOp,
        SummaStepOp,
        GemmBlockOp,
        RlcBcastOp,
        MapOp,
        BarrierOp,
    ],
    [LdmBufType, TokenType, DmaModeAttr, BarrierScopeAttr, RlcAxisAttr, MapKindAttr, VecDimAttr],
)
