"""Shared helpers of ``convert-tile-to-loop``: the pass diagnostic, the LDM shape of a tile's
per-CPE block, and fast construction of the ``loop`` / ``arith`` ops the lowering emits most."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, IndexType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects import loop, tile
from taihu.dialects.loop import DmaMode, LdmBufType
from taihu.dialects.tile import Layout, TileBufType

from . import dma as dmaplan

MESH = dmaplan.MESH


def local_buffer_shape(t: TileBufType) -> tuple[int, ...]:
    """``!loop.ldm`` shape of one CPE's block: :meth:`TileBufType.local_shape`, the two dims
    swapped for layout ``col``."""
    s = t.local_shape()
    return (s[1], s[0]) if t.layout_kind == Layout.COL else s


def elem_name(t: LdmBufType) -> str:
    return "f64" if t.elem_bytes == 8 else "f32"


def fail(op: Operation, msg: str) -> PassFailedException:
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
def ldm_type(shape: tuple[int, ...], elem: Attribute) -> LdmBufType:
    return LdmBufType(shape, elem)


_TOKEN = loop.TokenType()
_INDEX = IndexType()


def dma_start(
    src: SSAValue, dst: SSAValue, offsets: Sequence[SSAValue], sizes: Sequence[int],
    strides: Sequence[int] | None = None, mode: DmaMode | None = None,
) -> loop.DmaStartOp:
    props: dict[str, Attribute] = {"sizes": _i64_array(tuple(sizes))}
    if strides is not None and any(x != 1 for x in strides):
        props["strides"] = _i64_array(tuple(strides))
    if mode is not None:
        props["mode"] = loop.DmaModeAttr(mode)
    return loop.DmaStartOp.create(operands=[src, dst, *offsets], properties=props, result_types=[_TOKEN])


def view_op(buf: SSAValue, off: SSAValue, t: LdmBufType) -> loop.ViewOp:
    return loop.ViewOp.create(operands=[buf, off], result_types=[t])


def addi(x: SSAValue, y: SSAValue) -> arith.AddiOp:
    return arith.AddiOp.create(operands=[x, y], properties={"overflowFlags": _NO_OVERFLOW}, result_types=[_INDEX])


def muli(x: SSAValue, y: SSAValue) -> arith.MuliOp:
    return arith.MuliOp.create(operands=[x, y], properties={"overflowFlags": _NO_OVERFLOW}, result_types=[_INDEX])


_NO_OVERFLOW = arith.IntegerOverflowAttr("none")
