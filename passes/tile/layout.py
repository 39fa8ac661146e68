"""``tile-layout{buffer=NAME layout=row|col [kernel=K]}``: change the LDM layout of a tile buffer.

swAutoDNN's data-layout transformation (004 L1464: the layout of the data in LDM decides how the
tensorised primitives are called, e.g. the transposition of the GEMM primitive's operands; the
dims a primitive consumes may be permuted freely; L1484-1489: layout and vectorisation are node
attributes of the primitives in the IR). In taihu the layout is a parameter of the buffer type
``!tile.buf<..., dist, row|col>`` (storage order of each CPE's local block: ``row`` = last dim
contiguous, ``col`` = first dim contiguous; rank-2 tiles only): the pass re-types the
``tile.alloc`` named ``NAME`` so that every op using the buffer sees the new layout::

    %c = tile.alloc : !tile.buf<256x256xf64, rc>     ==>    %c = tile.alloc : !tile.buf<256x256xf64, rc, col>

The logical contents of a tile do not depend on its layout (moves and maps address logical
elements; tile-to-loop turns a ``col`` block into transposed DMA pieces, a layout-changing
``convert``/``copy`` into a transpose, and the GEMM's storage flags follow), so the pass never
changes what the kernel computes; whether the new layout is *legal* is decided by the verifiers,
whose rule is the diagnostic: e.g. a ``tile.gemm`` needs its vectorised dim contiguous in the
vector-loaded operand and in C (Table 4.1, 004 L769-775), element-wise maps need operands of one
layout (except ``copy``/``convert``), ``cpe<d>`` distributions with d > 0 need ``row``.

Options: ``buffer`` (required) the SSA name of the ``tile.alloc`` (``%c`` -> ``c``; the
printer's suffix ``_N`` is accepted, :func:`taihu.passes.tile.common.find_buffers`), ``layout``
(``row`` | ``col``), ``kernel`` (default: every kernel with a buffer of that name).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from taihu.dialects import tile
from taihu.passes.tile.common import buffer_label, fail, find_buffers, new_type, replace_buffer_type, verify_kernel

__all__ = ["TileLayoutPass", "set_layout"]

NAME = "tile-layout"


def set_layout(alloc: tile.AllocOp, layout: tile.Layout) -> tile.AllocOp:
    """Re-type ``alloc``'s buffer with ``layout`` (unchanged when it has it); returns the alloc."""
    if alloc.tile_type.layout_kind == layout:
        return alloc
    return replace_buffer_type(alloc, new_type(alloc.tile_type, layout=layout.value))


@dataclass(frozen=True)
class TileLayoutPass(ModulePass):
    """Set the LDM layout of a named tile buffer (module docstring)."""

    name = "tile-layout"

    buffer: str = ""
    layout: str = ""
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.layout not in {x.value for x in tile.Layout}:
            raise fail(NAME, "options", f"layout must be row or col, got '{self.layout}'")
        for alloc in find_buffers(NAME, op, self.kernel, self.buffer):
            where = buffer_label(alloc)
            k = tile.enclosing_kernel(alloc)
            assert k is not None
            try:
                set_layout(alloc, tile.Layout(self.layout))
            except VerifyException as e:  # the buffer type itself
                raise fail(NAME, where, f"the result is not a legal tile program: {e}") from None
            verify_kernel(NAME, k, where)
