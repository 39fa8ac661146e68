"""``tile-vectorize{dim=m|n [buffer=C] [kernel=K]}``: choose the vectorised dim of mesh GEMMs.

swAutoDNN's vectorisation transformation (004 L1466: the GEMM primitive can vectorise M or N;
vectorising M requires M to be a multiple of 128, so the scheme must fit the loop sizes; DSL
``vectorization("op1", VecM)``, L1443; algorithms.md §A4/A5). A ``tile.gemm``'s ``vec`` is tied
to its ``scheme`` (Table 4.1, 004 L769-775: schemes 1/2 vectorise M, 3/4 N; 1 and 3 send A
along mesh columns and B along rows, 2 and 4 the other way round), so the pass swaps the scheme
for its partner with the same travel directions (1 <-> 3, 2 <-> 4: the operands' distributions
stay legal) and re-lays out, for every op using them, the buffers the new vector loads need
contiguous along the vectorised dim (:func:`taihu.passes.tile.layout.set_layout`): the
vector-loaded operand (A for ``m``, B for ``n``) and C::

    tile.gemm %a, %b -> %c m 256 n 256 k 256 scheme 4 vec n     (%a, %b, %c: layout row)
      ==> tile-vectorize{dim=m}
    tile.gemm %a, %b -> %c m 256 n 256 k 256 scheme 2 vec m     (%a, %c: layout col)

The GEMM computes ``C += A x B`` whatever the scheme and the layouts (tile contents are logical),
so the pass never changes what the kernel computes; the verifiers decide whether the result is
legal and their rule is the diagnostic: the §A5 multiples (vectorised dim % 128, the other
% 32, 004 L885; overlapping distribution: the per-CPE vectorised extent % 4 lanes), the layouts
the other ops need (e.g. an element-wise map mixing the re-laid C with a row tile).

Options: ``dim`` (required) ``m`` | ``n``; ``buffer`` selects the GEMMs accumulating into that
buffer (swAutoDNN names the primitive, ``"op1"``; a taihu GEMM is named by its C buffer, the
SSA name of its ``tile.alloc``), default every ``tile.gemm``; ``kernel`` restricts the rewrite
to one ``tile.kernel``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from taihu.dialects import tile
from taihu.dialects.common import VecDim
from taihu.passes.tile.common import buffer_label, fail, find_buffers, kernel_label, select_kernels, verify_kernel
from taihu.passes.tile.layout import set_layout

__all__ = ["PARTNER_SCHEME", "TileVectorizePass", "vectorize_gemm"]

NAME = "tile-vectorize"

#: the scheme with the same travel directions and the other vectorised dim (Table 4.1)
PARTNER_SCHEME = {1: 3, 3: 1, 2: 4, 4: 2}


def _contiguous_layout(dims: tuple[str, str], vec: str) -> tile.Layout:
    """The layout that makes logical dim ``vec`` contiguous in a tile with dims ``dims``."""
    return tile.Layout.ROW if dims[1] == vec else tile.Layout.COL


def vectorize_gemm(op: tile.GemmOp, vec: VecDim) -> None:
    """Make ``op`` vectorise ``vec`` (module docstring); the verifiers are not run here."""
    if op.vec_dim == vec:
        return
    scheme = PARTNER_SCHEME.get(op.scheme_value)
    if scheme is None:
        raise VerifyException(f"tile.gemm: scheme must be 1, 2, 3 or 4 (Table 4.1), got {op.scheme_value}")
    op.properties["scheme"] = IntegerAttr(scheme, i64)
    op.properties["vec"] = tile.VecDimAttr(vec)
    dims = op.operand_dims()
    loaded: dict[str, SSAValue] = {"A": op.a} if vec == VecDim.M else {"B": op.b}
    for which, v in {**loaded, "C": op.c}.items():
        alloc = v.owner
        if not isinstance(alloc, tile.AllocOp):
            raise VerifyException(f"tile.gemm: operand {which} is not a tile.alloc buffer")
        set_layout(alloc, _contiguous_layout(dims[which], vec.value))


@dataclass(frozen=True)
class TileVectorizePass(ModulePass):
    """Choose the vectorised dim (M or N) of mesh GEMMs (module docstring)."""

    name = "tile-vectorize"

    dim: str = ""
    buffer: str = ""
    kernel: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.dim not in {x.value for x in VecDim}:
            raise fail(NAME, "options", f"dim must be m or n, got '{self.dim}'")
        vec = VecDim(self.dim)
        if self.buffer:
            targets = [(alloc, [u.operation for u in alloc.result.uses
                                if isinstance(u.operation, tile.GemmOp) and u.operation.c is alloc.result])
                       for alloc in find_buffers(NAME, op, self.kernel, self.buffer)]
            for alloc, gemms in targets:
                if not gemms:
                    raise fail(NAME, buffer_label(alloc), "no tile.gemm accumulates into this buffer")
            jobs = [(buffer_label(alloc), gemms) for alloc, gemms in targets]
        else:
            jobs = []
            for k in select_kernels(NAME, op, self.kernel):
                gemms = [g for g in k.walk() if isinstance(g, tile.GemmOp)]
                if gemms:
                    jobs.append((kernel_label(k), gemms))
            if not jobs:
                raise fail(NAME, "module", "no tile.gemm to vectorise")
        for where, gemms in jobs:
            kernels: list[tile.KernelOp] = []
            for g in gemms:
                assert isinstance(g, tile.GemmOp)
                kg = tile.enclosing_kernel(g)
                assert kg is not None
                if kg not in kernels:
                    kernels.append(kg)
                try:
                    vectorize_gemm(g, vec)
                except VerifyException as e:
                    raise fail(NAME, where, f"the result is not a legal tile program: {e}") from None
            for kg in kernels:
                verify_kernel(NAME, kg, where)
