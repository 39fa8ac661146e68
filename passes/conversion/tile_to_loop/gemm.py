"""``tile.gemm`` -> the per-CPE mesh GEMM of the ``loop`` dialect (part of ``convert-tile-to-loop``).

Input: a ``tile.gemm`` on LDM-resident tiles (``C += op(A) x op(B)``, fp64 for the SUMMA form,
algorithms.md §A). Output (inserted in its place by the pass, :func:`lower_gemm`):

* **Non-overlapping distribution** (A, B, C ``rc``/``cr``, 004 L713, §A1-A4): the 8 SUMMA steps
  of §A2 (004 L715-717, Algorithm 2 L728-759) as ::

      scf.for %T = %c0 to %c8 step %c1 {
        loop.summa_step %T, %a, %b -> %c scheme S [trans_a] [trans_b] [trans_c] : ...
      }

  Each CPE passes its own local blocks; at step T the role of CPE (row, col) follows from
  (row, col, T) and the scheme's travel directions (Table 4.1, :func:`taihu.dialects.common.
  scheme_info`): the operand travelling along mesh rows is sent by the CPE in column T of each row,
  the one travelling along columns by the CPE in row T of each column (§A2); loop-to-sw generates
  the 4 role variants (004 L792). The tile verifier has already placed the blocks so that CPE
  (r, c) accumulates ``C(r|c, c|r) += A(., T) B(T, .)`` (see :func:`summa_blocks`).
* **Overlapping distribution** (B ``rep``, A and C ``cpe`` along M, 004 L708): one
  ``loop.gemm_block %a, %b -> %c vec V`` per CPE on its ``ceil(M/64)`` rows, no communication.

Storage flags: LDM buffers hold each CPE's local block row-major; a tile-level ``col`` layout is a
buffer with the two dims swapped (the tile-to-loop buffer convention), so the loop-level
``trans_x`` flag is ``tile trans_x XOR (layout == col)`` for A and B, and ``layout == col`` for C
(:func:`loop_flags`).

Errors: :class:`xdsl.utils.exceptions.PassFailedException` naming the op when a buffer handed
over by the pass does not have the shape implied by its tile type.
"""

from __future__ import annotations

from typing import Protocol

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects.common import VecDim, scheme_info
from taihu.dialects.loop import GemmBlockOp, LdmBufType, SummaStepOp
from taihu.dialects.tile import MESH, Dist, GemmOp, Layout, TileBufType
from taihu.target.machine import Machine

__all__ = ["LowerContext", "local_buffer_shape", "loop_flags", "lower_gemm", "summa_blocks"]


class LowerContext(Protocol):
    """What the lowering functions need from ``convert-tile-to-loop`` (E1's ``LowerCtx``).

    ``row``/``col``/``cpe_id``: this CPE's mesh coordinates and id (``index`` values of the
    ``loop.spmd``); ``value(v)``: the loop-level value of a tile-level one (a ``tile.alloc`` result
    -> its current single-slot ``!loop.ldm`` buffer, a kernel memref argument -> the spmd argument,
    an ``index`` -> its image); ``new_buffer(name, type)``: a fresh ``loop.ldm_buffer`` in the
    spmd body; ``const(n)``: an ``index`` constant hoisted to the spmd top;
    ``note_memref_write(m)``: tell the pass that the lowered op writes main-memory memref ``m``;
    ``ldm_free_bytes()``: LDM bytes per CPE not yet taken by the spmd's buffers (mem_prims sizes
    its task buffers with it); ``machine``: the module's target (mem_prims costs the Winograd
    tilings on it).
    """

    machine: Machine

    @property
    def row(self) -> SSAValue: ...

    @property
    def col(self) -> SSAValue: ...

    @property
    def cpe_id(self) -> SSAValue: ...

    def value(self, v: SSAValue) -> SSAValue: ...

    def new_buffer(self, name: str, t: LdmBufType) -> SSAValue: ...

    def const(self, n: int) -> SSAValue: ...

    def note_memref_write(self, m: SSAValue) -> None: ...

    def ldm_free_bytes(self) -> int: ...


def local_buffer_shape(t: TileBufType) -> tuple[int, ...]:
    """Shape of the ``!loop.ldm`` buffer holding one CPE's block of a ``!tile.buf`` (elements):
    :meth:`TileBufType.local_shape`, the two dims swapped for layout ``col``."""
    s = t.local_shape()
    return (s[1], s[0]) if t.layout_kind == Layout.COL else s


def loop_flags(op: GemmOp) -> tuple[bool, bool, bool]:
    """``(trans_a, trans_b, trans_c)`` of the loop-level op: does the LDM buffer store A as (k, m),
    B as (n, k), C as (n, m)?"""
    ta, tb, tc = (v.type for v in (op.a, op.b, op.c))
    assert isinstance(ta, TileBufType) and isinstance(tb, TileBufType) and isinstance(tc, TileBufType)
    col = Layout.COL
    return (
        (op.trans_a is not None) != (ta.layout_kind == col),
        (op.trans_b is not None) != (tb.layout_kind == col),
        tc.layout_kind == col,
    )


def summa_blocks(scheme: int, row: int, col: int, step: int) -> dict[str, tuple[int, int]]:
    """Block indices (in units of the 8x8 block grid of the logical (M, K), (K, N), (M, N)
    matrices) of the A and B blocks CPE (row, col) multiplies at SUMMA step ``step`` and of the C
    block it owns, for the distribution the ``tile.gemm`` verifier enforces (§A1/A2):

    * A travels along mesh columns (schemes 1, 3): K of A on mesh rows, M on columns; B travels
      along rows: K of B on columns, N on rows; C = (M on columns, N on rows). CPE (r, c) owns
      C(c, r) and accumulates A(c, T) B(T, r) -- A from CPE (T, c), B from CPE (r, T).
    * A travels along rows (schemes 2, 4): M of A on rows, K on columns; B: K on rows, N on
      columns; C(r, c) += A(r, T) B(T, c) -- A from CPE (r, T), B from CPE (T, c).

    Returns ``{"A": (i_m, i_k), "B": (i_k, i_n), "C": (i_m, i_n), "A_from": (r, c), "B_from":
    (r, c)}``; used by the unit tests to check that the 8 steps compute the product.
    """
    _, a_axis, _ = scheme_info(scheme)
    t = step
    if a_axis == "col":
        return {"A": (col, t), "B": (t, row), "C": (col, row), "A_from": (t, col), "B_from": (row, t)}
    return {"A": (row, t), "B": (t, col), "C": (row, col), "A_from": (row, t), "B_from": (t, col)}


def _buffer(op: GemmOp, ctx: LowerContext, which: str, v: SSAValue) -> SSAValue:
    lv = ctx.value(v)
    t = v.type
    lt = lv.type
    assert isinstance(t, TileBufType)
    want = local_buffer_shape(t)
    if not isinstance(lt, LdmBufType) or lt.is_double or lt.get_shape() != want or lt.element_type != t.element_type:
        raise PassFailedException(
            f"convert-tile-to-loop: tile.gemm operand {which} (%{v.name_hint or 'tile'}: {t}) must map to a "
            f"single-slot !loop.ldm<{'x'.join(map(str, want))}x{t.element_type}> buffer, got {lt}"
        )
    return lv


def lower_gemm(op: GemmOp, ctx: LowerContext) -> list[Operation]:
    """The loop-level ops replacing ``op`` (in order; the caller inserts them and erases ``op``).

    Non-overlapping distribution: ``scf.for %T = 0 to 8 step 1 { loop.summa_step ... }``;
    overlapping distribution (:attr:`GemmOp.is_overlapping`): one ``loop.gemm_block``. Both
    accumulate into C (the caller fills C with zeros beforehand when needed, as the tile program
    says). No DMA, no token: nothing to wait for.
    """
    a = _buffer(op, ctx, "A", op.a)
    b = _buffer(op, ctx, "B", op.b)
    c = _buffer(op, ctx, "C", op.c)
    ta, tb, tc = loop_flags(op)
    if op.is_overlapping:
        vec = scheme_info(op.scheme_value)[0]
        return [GemmBlockOp(a, b, c, VecDim(vec), trans_a=ta, trans_b=tb, trans_c=tc)]
    for v in (op.a, op.b, op.c):
        t = v.type
        assert isinstance(t, TileBufType) and t.dist_kind in (Dist.RC, Dist.CR)
    body = Block(arg_types=[IndexType()])
    body.add_ops(
        [
            SummaStepOp(body.args[0], a, b, c, op.scheme_value, trans_a=ta, trans_b=tb, trans_c=tc),
            scf.YieldOp(),
        ]
    )
    body.args[0].name_hint = "T"
    loop = scf.ForOp(ctx.const(0), ctx.const(MESH), ctx.const(1), [], body)
    return [loop]
