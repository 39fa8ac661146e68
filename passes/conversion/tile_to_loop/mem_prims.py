"""``tile.im2col`` / ``tile.winograd_*`` -> per-CPE task loops of the ``loop`` dialect.

Part of ``convert-tile-to-loop`` (called by the pass with its ``LowerCtx``, see
:class:`taihu.passes.conversion.tile_to_loop.gemm.LowerContext`; each ``lower_*`` returns the ops
replacing the tile op, every DMA waited). The memory-to-memory primitives of the tile level are
self-scheduled: their seed algorithms fix the per-CPE task decomposition, which this module
expands into ``scf.for`` loops of ``loop.dma_start`` / ``loop.dma_wait`` / ``loop.map`` on LDM
buffers:

* ``tile.im2col`` (004 §5.1.1 L1045-1049): tasks = input rows of one channel (``rows_per_task``
  per task), grouped by the kernel rows they feed (:class:`Im2colPlan`); a zero phase writes the
  entries fed by vertical padding.
* ``tile.unfold`` (the implicit convolution's B operand, LDM-local): per kernel row kr one
  ``loop.map im2col`` from the CPE's input-row block into its slice of the B block
  (:func:`lower_unfold`, :func:`unfold_reference`).
* ``tile.winograd_filter`` (Algorithm 5 step 1, L1187): chunks of 3x3 filters.
* ``tile.winograd_input`` / ``_output`` (steps 2 and 4, L1138-1183): m' consecutive 4x4 tiles
  of a tile row with all channels (NHWC, the seed layout), or whole tile rows with channel
  groups (NCHW, via an in-LDM transpose); boundary clipping handled by static task groups
  (:class:`WinogradTiling`); rows of v past B*T (the GEMM's block padding, L1194-1196) are
  not written.

Conventions: tasks of one op are numbered ``q = 0 .. Q-1`` over all its groups and dealt out
cyclically (CPE ``id`` runs ``q = id, id + 64, ...``; a group starting at ``base`` loops from
``(id - base) mod 64``). Ragged chunks are shifted to stay inside (``min(j*size, total-size)``):
overlapping tasks recompute and rewrite identical values, so every DMA and map has static sizes.
Buffers come from ``ctx.new_buffer`` sized within ``ctx.ldm_free_bytes()`` (LDM budget); index
math uses ``arith`` (addi, subi, muli, divui, remui, minsi), folded when constant.

numpy references
----------------
:func:`map_reference` gives the exact semantics of ``loop.map im2col | winograd_filter |
winograd_input | winograd_output`` (:data:`taihu.dialects.mapkind.LOOP_ONLY_KINDS`; loop-to-sw's
micro-kernels are tested against it); :func:`im2col_reference` and ``winograd_*_full_reference``
the tile-level semantics of the four ops. Transform matrices of F(2x2, 3x3): Lavin & Gray 2016
(algorithms.md §C4).

Errors: :class:`xdsl.utils.exceptions.PassFailedException` naming the op when even the smallest
task does not fit in LDM.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar, cast

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from taihu.backends.model.tasks import (
    N_CPE,
    DoesNotFit,
    Im2colPlanes,
    Im2colShape,
    RowGroup,
    WinogradFilterTasks,
    WinogradInput,
    WinogradOutput,
    WinogradTiling,
    im2col_planes,
    im2col_tasks,
    winograd_filter_tasks,
    winograd_input_tiling,
    winograd_output_tiling,
)
from taihu.dialects.loop import DmaStartOp, DmaWaitOp, LdmBufType, MapOp, ViewOp
from taihu.dialects.mapkind import MapKind
from taihu.dialects.tile import (
    DataLayout,
    Im2colOp,
    UnfoldOp,
    WinogradFilterOp,
    WinogradInputOp,
    WinogradOutputOp,
)
from taihu.target.machine import Machine

#: F(2x2, 3x3) transform matrices (Lavin & Gray 2016; algorithms.md §C4).
WINO_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
WINO_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], dtype=np.float64)
WINO_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)


def im2col_rows_reference(
    x: np.ndarray, kw: int, stride: int = 1, pads: Sequence[int] = (0, 0), dilation: int = 1
) -> np.ndarray:
    """``loop.map im2col``: x (..., W) -> (..., kw, Wo), ``y[..., j, wo] = xp[..., wo*s + j*d]``
    (``xp`` = x zero-padded by ``pads = (pl, pr)`` on the last dim)."""
    pl, pr = pads
    xp = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pl, pr)])
    wo = (xp.shape[-1] - dilation * (kw - 1) - 1) // stride + 1
    idx = np.arange(kw)[:, None] * dilation + np.arange(wo)[None, :] * stride  # (kw, Wo)
    return xp[..., idx]


def winograd_filter_reference(w: np.ndarray) -> np.ndarray:
    """``loop.map winograd_filter``: w (n, 3, 3) -> (16, n), ``u[4*xi+nu, f] = (G w_f G^T)[xi, nu]``."""
    u = np.einsum("ai,fij,bj->abf", WINO_G, w.astype(np.float64), WINO_G)  # (4, 4, n)
    return u.reshape(16, w.shape[0]).astype(w.dtype)


def winograd_input_reference(d: np.ndarray, t: int, pads: Sequence[int] = (0, 0, 0, 0)) -> np.ndarray:
    """``loop.map winograd_input``: d (R, Wc, C) -> (16, t, C); ``D`` = d zero-padded by
    ``pads = (top, left, bottom, right)`` to (4, 2t+2, C); ``v[4*xi+nu, k, c] =
    (B^T D[:, 2k:2k+4, c] B)[xi, nu]``."""
    top, left, bottom, right = pads
    dp = np.pad(d.astype(np.float64), [(top, bottom), (left, right), (0, 0)])
    assert dp.shape[:2] == (4, 2 * t + 2), (dp.shape, t)
    cols = 2 * np.arange(t)[:, None] + np.arange(4)[None, :]  # (t, 4)
    tiles = dp[:, cols, :]  # (4, t, 4, C): [row, k, col, c]
    v = np.einsum("ai,ikjc,bj->abkc", WINO_BT, tiles, WINO_BT)  # (4, 4, t, C)
    return v.reshape(16, t, d.shape[2]).astype(d.dtype)


def winograd_output_reference(m: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``loop.map winograd_output``: m (16, t, C) -> (rows, cols, C), ``full[dy, 2k+dx, c] =
    (A^T M_k A)[dy, dx]`` with ``M_k[xi, nu] = m[4*xi+nu, k, c]``, clipped to ``[:rows, :cols]``."""
    _, t, c = m.shape
    mk = m.astype(np.float64).reshape(4, 4, t, c)
    y = np.einsum("ai,ijkc,bj->akbc", WINO_AT, mk, WINO_AT)  # (2, t, 2, C)
    return y.reshape(2, 2 * t, c)[:rows, :cols].astype(m.dtype)


def map_reference(kind: MapKind, x: np.ndarray, out_shape: Sequence[int], params: dict[str, object]) -> np.ndarray:
    """numpy semantics of the loop-only map kinds (``params`` as in ``MapParamsOp.params()``)."""
    if kind == MapKind.IM2COL:
        y = im2col_rows_reference(
            x,
            int(params["kernel"][0]),  # type: ignore[index]
            int(params["strides"][0]),  # type: ignore[index]
            tuple(params.get("pads", (0, 0))),  # type: ignore[arg-type]
            int(params.get("dilations", (1,))[0]),  # type: ignore[index]
        )
    elif kind == MapKind.WINOGRAD_FILTER:
        y = winograd_filter_reference(x)
    elif kind == MapKind.WINOGRAD_INPUT:
        y = winograd_input_reference(x, int(out_shape[1]), tuple(params.get("pads", (0, 0, 0, 0))))  # type: ignore[arg-type]
    elif kind == MapKind.WINOGRAD_OUTPUT:
        y = winograd_output_reference(x, int(out_shape[0]), int(out_shape[1]))
    else:
        raise ValueError(f"map_reference: {kind.value} is not a loop-only kind")
    assert y.shape == tuple(out_shape), (y.shape, out_shape)
    return y


# -- whole-op references (tile-level semantics of tile.im2col / tile.winograd_*) --------------


def im2col_reference(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    layout: DataLayout = DataLayout.NCHW,
    image_columns: int | None = None,
) -> np.ndarray:
    """``tile.im2col``: x (N, C, H, W) (or NHWC) -> col (C*kh*kw, N*Ho*Wo),
    ``col[(c,i,j), (n,ho,wo)] = x[n, c, ho*sh + i*dh - pt, wo*sw + j*dw - pl]`` (0 outside);
    with ``image_columns`` P: (C*kh*kw, N*P), each image's columns padded with zeros to P."""
    if layout == DataLayout.NHWC:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw) = kernel, strides, pads, dilations
    xp = np.pad(x, [(0, 0), (0, 0), (pt, pb), (pl, pr)])
    ho = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    wo = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    ri = (np.arange(kh) * dh)[:, None] + (np.arange(ho) * sh)[None, :]  # (kh, Ho)
    ci = (np.arange(kw) * dw)[:, None] + (np.arange(wo) * sw)[None, :]  # (kw, Wo)
    g = xp[:, :, ri[:, None, :, None], ci[None, :, None, :]]  # (N, C, kh, kw, Ho, Wo)
    col = g.transpose(1, 2, 3, 0, 4, 5).reshape(c * kh * kw, n, ho * wo)
    if image_columns is not None and image_columns > ho * wo:
        col = np.pad(col, [(0, 0), (0, 0), (0, image_columns - ho * wo)])
    return col.reshape(c * kh * kw, -1)


def winograd_filter_full_reference(w: np.ndarray) -> np.ndarray:
    """``tile.winograd_filter``: w (N_o, N_i, 3, 3) -> u (16, N_o, N_i)."""
    no, ni = w.shape[:2]
    return winograd_filter_reference(w.reshape(no * ni, 3, 3)).reshape(16, no, ni)


def winograd_input_full_reference(
    x: np.ndarray, pads: Sequence[int], p_rows: int, layout: DataLayout = DataLayout.NCHW
) -> np.ndarray:
    """``tile.winograd_input``: x (B, N_i, H, W) (or NHWC) -> v (16, P, N_i), row p = b*T +
    tr*TC + tc; rows past B*T are not written (NaN in this reference: nothing may read them)."""
    if layout == DataLayout.NCHW:
        x = x.transpose(0, 2, 3, 1)  # (B, H, W, C)
    b, h, w, c = x.shape
    pt, pl, pb, pr = pads
    ro, co = h + pt + pb - 2, w + pl + pr - 2
    tr, tc = -(-ro // 2), -(-co // 2)
    xp = np.zeros((b, 2 * tr + 2, 2 * tc + 2, c), np.float64)
    hh, ww = min(h, 2 * tr + 2 - pt), min(w, 2 * tc + 2 - pl)
    xp[:, pt : pt + hh, pl : pl + ww] = x[:, :hh, :ww]
    rr = 2 * np.arange(tr)[:, None] + np.arange(4)[None, :]  # (TR, 4)
    cc = 2 * np.arange(tc)[:, None] + np.arange(4)[None, :]  # (TC, 4)
    tiles = xp[:, rr[:, :, None, None], cc[None, None, :, :]]  # (B, TR, 4, TC, 4, C)
    v = np.einsum("ai,btidjc,ej->aebtdc", WINO_BT, tiles, WINO_BT)  # (4, 4, B, TR, TC, C)
    out = np.full((16, p_rows, c), np.nan, x.dtype)  # rows past B*T are not written (NaN here)
    out[:, : b * tr * tc] = v.reshape(16, b * tr * tc, c)
    return out


def winograd_output_full_reference(m: np.ndarray, out_shape: Sequence[int], layout: DataLayout = DataLayout.NCHW,
                                   bias: np.ndarray | None = None, activation: MapKind | None = None) -> np.ndarray:
    """``tile.winograd_output``: m (16, P, N_o) -> y (B, N_o, R_o, C_o) (or NHWC), + ``bias``
    (N_o,) per output channel, then ``activation`` (relu | sigmoid | tanh)."""
    b, no, ro, co = (out_shape[0], out_shape[3], out_shape[1], out_shape[2]) if layout == DataLayout.NHWC else out_shape
    tr, tc = -(-ro // 2), -(-co // 2)
    mk = m[:, : b * tr * tc].astype(np.float64).reshape(4, 4, b, tr, tc, no)
    y = np.einsum("ai,ijbrtc,ej->bratec", WINO_AT, mk, WINO_AT)  # (B, TR, 2, TC, 2, N_o)
    y = y.reshape(b, 2 * tr, 2 * tc, no)[:, :ro, :co]
    if bias is not None or activation is not None:
        y = y.astype(m.dtype)  # the transform is rounded to the element type before the epilogue
        if bias is not None:
            y = y + bias.astype(m.dtype)
        if activation == MapKind.RELU:
            y = np.maximum(y, 0)
        elif activation == MapKind.SIGMOID:
            y = 1 / (1 + np.exp(-y))
        elif activation == MapKind.TANH:
            y = np.tanh(y)
    if layout == DataLayout.NCHW:
        y = y.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(y).astype(m.dtype)


# ============================================================================================
# IR emission helpers
# ============================================================================================


class _Emitter:
    """Appends ops to a stack of blocks; ``index`` arithmetic with constants from the context."""

    _FOLD: ClassVar[dict[type[Operation], Callable[[int, int], int]]] = {
        arith.AddiOp: lambda x, y: x + y,
        arith.SubiOp: lambda x, y: x - y,
        arith.MuliOp: lambda x, y: x * y,
        arith.MinSIOp: min,
        arith.DivUIOp: lambda x, y: x // y,
        arith.RemUIOp: lambda x, y: x % y,
    }

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.top = Block()
        self.blocks = [self.top]
        self.known: dict[SSAValue, int] = {}
        self.task_base = 0

    def emit(self, op: Operation) -> Operation:
        self.blocks[-1].add_op(op)
        return op

    def c(self, n: int) -> SSAValue:
        v = self.ctx.const(int(n))
        self.known[v] = int(n)
        return v

    def value_of(self, v: SSAValue) -> int | None:
        """The static value of an index SSA value (constants from this emitter or the pass: both
        are ``arith.constant`` results)."""
        if v in self.known:
            return self.known[v]
        owner = v.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def _bin(self, cls, a: SSAValue | int, b: SSAValue | int) -> SSAValue:
        a = self.c(a) if isinstance(a, int) else a
        b = self.c(b) if isinstance(b, int) else b
        ka, kb = self.value_of(a), self.value_of(b)
        if ka is not None and kb is not None and cls in self._FOLD:
            return self.c(self._FOLD[cls](ka, kb))
        return self.emit(cls(a, b)).results[0]

    def add(self, a: SSAValue, b: int | SSAValue) -> SSAValue:
        if isinstance(b, SSAValue) and self.value_of(b) is not None:
            b = self.value_of(b)  # type: ignore[assignment]
        if isinstance(b, int):
            if b == 0:
                return a
            if b < 0 and self.value_of(a) is None:
                return self._bin(arith.SubiOp, a, -b)
        if self.value_of(a) == 0:
            return b if isinstance(b, SSAValue) else self.c(b)
        return self._bin(arith.AddiOp, a, b)

    def mul(self, a: SSAValue, b: int) -> SSAValue:
        if b == 1:
            return a
        if b == 0:
            return self.c(0)
        return self._bin(arith.MuliOp, a, b)

    def affine(self, a: SSAValue, mul: int, add: int) -> SSAValue:
        """``a * mul + add`` (index)."""
        return self.add(self.mul(a, mul), add)

    def min_(self, a: SSAValue, b: int) -> SSAValue:
        return self._bin(arith.MinSIOp, a, b)

    def chunk_start(self, j: SSAValue, size: int, total: int) -> SSAValue:
        """``min(j*size, total - size)`` (:func:`taihu.backends.model.tasks.chunk_starts`), the
        min only when ragged."""
        if size >= total:
            return self.c(0)
        s = self.mul(j, size)
        return s if total % size == 0 else self.min_(s, total - size)

    def divrem(self, a: SSAValue, n: int) -> tuple[SSAValue, SSAValue]:
        """(a // n, a % n) for a >= 0."""
        return self._bin(arith.DivUIOp, a, n), self._bin(arith.RemUIOp, a, n)

    def cmp(self, pred: str, a: SSAValue, b: int) -> SSAValue:
        return self.emit(arith.CmpiOp(a, self.c(b), pred)).results[0]

    def and_(self, conds: list[SSAValue]) -> SSAValue:
        out = conds[0]
        for c in conds[1:]:
            out = self.emit(arith.AndIOp(out, c)).results[0]
        return out

    def digits(self, q: SSAValue, radices: Sequence[int]) -> list[SSAValue]:
        """Mixed-radix digits of q (most significant first); radix-1 digits are the constant 0."""
        out: list[SSAValue] = []
        rest = q
        first = next((i for i, r in enumerate(radices) if r > 1), len(radices))
        for i in range(len(radices) - 1, -1, -1):
            r = radices[i]
            if r == 1:
                out.append(self.c(0))
            elif i == first:  # the most significant non-unit digit: q < Q, no modulo needed
                out.append(rest)
            else:
                rest, d = self.divrem(rest, r)
                out.append(d)
        return out[::-1]

    @contextlib.contextmanager
    def for_(self, lb: SSAValue | int, ub: int, step: int, name: str = "i") -> Iterator[SSAValue]:
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = name
        lbv = self.c(lb) if isinstance(lb, int) else lb
        loop = scf.ForOp(lbv, self.c(ub), self.c(step), [], body)
        self.emit(loop)
        self.blocks.append(body)
        try:
            yield body.args[0]
        finally:
            self.blocks.pop()
            body.add_op(scf.YieldOp())

    @contextlib.contextmanager
    def if_(self, cond: SSAValue | None) -> Iterator[None]:
        if cond is None:
            yield
            return
        then = Block()
        op = scf.IfOp(cond, [], [then])
        self.emit(op)
        self.blocks.append(then)
        try:
            yield
        finally:
            self.blocks.pop()
            then.add_op(scf.YieldOp())

    def tasks(self, q_count: int, name: str = "q") -> contextlib.AbstractContextManager[SSAValue]:
        """``scf.for %q = %start to Q step 64``: this CPE's tasks of a group of Q tasks. The
        groups of one op are numbered consecutively (a running base) and dealt out cyclically
        over the 64 CPEs as one sequence, so that many small groups do not all start on CPE 0:
        ``start = (id - base) mod 64``."""
        base = self.task_base % N_CPE
        self.task_base += q_count
        if base == 0:
            start = self.ctx.cpe_id
        else:
            start = self._bin(arith.RemUIOp, self._bin(arith.AddiOp, self.ctx.cpe_id, N_CPE - base), N_CPE)
        return self.for_(start, q_count, N_CPE, name)

    def view(self, buf: SSAValue, shape: Sequence[int], offset: SSAValue | int = 0) -> SSAValue:
        t = buf.type
        assert isinstance(t, LdmBufType)
        if isinstance(offset, int) and offset == 0 and tuple(shape) == t.get_shape():
            return buf
        off = self.c(offset) if isinstance(offset, int) else offset
        return self.emit(ViewOp(buf, off, LdmBufType(tuple(shape), t.element_type))).results[0]

    def get(self, mem: SSAValue, offsets: Sequence[SSAValue | int], sizes: Sequence[int], buf: SSAValue) -> SSAValue:
        offs = [self.c(o) if isinstance(o, int) else o for o in offsets]
        return self.emit(DmaStartOp(mem, buf, offs, sizes)).results[0]

    def put(self, buf: SSAValue, mem: SSAValue, offsets: Sequence[SSAValue | int], sizes: Sequence[int]) -> SSAValue:
        offs = [self.c(o) if isinstance(o, int) else o for o in offsets]
        return self.emit(DmaStartOp(buf, mem, offs, sizes)).results[0]

    def wait(self, tokens: Sequence[SSAValue]) -> None:
        if tokens:
            self.emit(DmaWaitOp(list(tokens)))

    def map(self, kind: MapKind, ins: Sequence[SSAValue], out: SSAValue, **params: object) -> None:
        self.emit(MapOp(kind, list(ins), out, **params))

    def ops(self) -> list[Operation]:
        ops = list(self.top.ops)
        for op in ops:
            op.detach()
        return ops


def _elem(t: Attribute) -> tuple[Attribute, int]:
    assert isinstance(t, MemRefType)
    et = t.get_element_type()
    return et, et.bitwidth // 8


def _fail(op: Operation, msg: str) -> PassFailedException:
    return PassFailedException(f"convert-tile-to-loop: {op.name}: {msg}")


def _runs(values: Sequence[object]) -> list[tuple[int, int]]:
    """Maximal runs of equal consecutive values: [(start, length), ...]."""
    out: list[tuple[int, int]] = []
    for i, v in enumerate(values):
        if out and values[out[-1][0]] == v:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((i, 1))
    return out


# ============================================================================================
# tile.im2col (004 §5.1.1, L1045-1049; algorithms.md §C2)
# ============================================================================================


@dataclass(frozen=True)
class Im2colPlan:
    """Static decomposition of one ``tile.im2col`` (all sizes in elements).

    Main phase: the input rows are grouped by the set of kernel rows they feed
    (:class:`taihu.backends.model.tasks.RowGroup`:
    the interior rows of a stride-1 conv form one group, each stride residue one group, edge rows
    small groups; rows that feed nothing are skipped), so that every task has static DMAs and no
    guards. A task = ``rows`` rows of one group of channel c of image n (one row when
    ``rows_per_task`` = 1, L1045; when the attribute is absent, as many rows as leave >= 64
    tasks, within LDM): one DMA of the rows (strided by the group step) into ``xin``
    (R, W), ``loop.map im2col`` into (R, kw, Wo) (horizontal padding, stride and dilation inside
    the map, L1047), for R > 1 a transpose to (kw, R, Wo), then per kernel row i one strided DMA of
    kw x (R*Wo) to col rows ``c*kh*kw + i*kw ..`` at columns ``(n*Ho + ho)*Wo`` (the R rows feed
    consecutive output rows ho); all waited once at the end of the task.

    Zero phase: col entries whose input row is vertical padding (``ho*sh + i*dh - pt`` outside
    [0, H)) are written from a zero buffer: per task ``(n, c)`` and kernel row i, the ho ranges
    ``zero_ranges[i]`` (at most ``zchunk`` output rows per DMA).
    """

    N: int
    C: int
    H: int
    W: int
    kh: int
    kw: int
    sh: int
    sw: int
    pt: int
    pl: int
    pb: int
    pr: int
    dh: int
    dw: int
    Ho: int
    Wo: int
    R: int  # largest rows per task over the groups
    nhwc: bool
    zchunk: int
    zero_ranges: tuple[tuple[tuple[int, int], ...], ...]  # per kernel row i: ((ho0, n), ...)
    groups: tuple[RowGroup, ...]

    def output_row(self, ri: int, i: int) -> int | None:
        """ho fed by input row ri through kernel row i, or None."""
        num = ri + self.pt - i * self.dh
        if num < 0 or num % self.sh or num // self.sh >= self.Ho:
            return None
        return num // self.sh


def plan_im2col(op: Im2colOp, budget: int) -> Im2colPlan:
    """:class:`Im2colPlan` of ``op``: the task decomposition of
    :func:`taihu.backends.model.tasks.im2col_tasks` (shared with the analytic model);
    ``rows_per_task`` is lowered until the LDM buffers fit ``budget`` bytes (the lowering: what
    the kernel leaves free of the machine's ``ldm_user_bytes``). Raises PassFailedException if
    even one row does not fit."""
    g = op.geometry()
    kh, kw = g["kernel"]
    sh, sw = g["strides"]
    pt, pl, pb, pr = g["pads"]
    dh, dw = g["dilations"]
    ti = op.input.type
    assert isinstance(ti, MemRefType)
    s = ti.get_shape()
    nhwc = op.data_layout == DataLayout.NHWC
    n, c, h, w = (s[0], s[3], s[1], s[2]) if nhwc else s
    ho = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    wo = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    _, eb = _elem(ti)
    rpt = op.rows_per_task.value.data if op.rows_per_task is not None else None
    try:
        t = im2col_tasks(Im2colShape(n, c, h, w, (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw), eb, nhwc), budget, rpt)
    except DoesNotFit as e:
        raise _fail(op, str(e)) from None
    return Im2colPlan(
        n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, ho, wo, t.rows_max, nhwc, t.zchunk, t.zero_ranges, t.groups
    )


def _lower_im2col_planes(op: Im2colOp, ctx, p: Im2colPlan, pl: Im2colPlanes, how: int) -> list[Operation]:
    """Whole-plane tasks (:class:`taihu.backends.model.tasks.Im2colPlanes`): per task q channels
    of one image -> q plane gets into the zero-padded planes, per (channel, kernel row) the unfold
    (+ transpose when kw > 1) into the channel's (kh*kw, Ho*Wo) block, one put of the q blocks."""
    x, col = ctx.value(op.input), ctx.value(op.output)
    et, _ = _elem(op.input.type)
    e = _Emitter(ctx)
    q, hp, kk, W, Ho, Wo = pl.q, pl.hp, p.kh * p.kw, p.W, p.Ho, p.Wo
    # 1x1: the block keeps the col's padded image columns (zeros), so the put is whole rows
    cols = how if kk == 1 else Ho * Wo
    planes = ctx.new_buffer("im2col_planes", LdmBufType((q, hp, W), et))
    out = ctx.new_buffer("im2col_block", LdmBufType((q, kk, cols), et))
    tmp = ctx.new_buffer("im2col_rows", LdmBufType((Ho, p.kw, Wo), et)) if p.kw > 1 else None
    e.map(MapKind.FILL, [], planes, value=0.0)  # the padding rows stay zero (same rows every task)
    if cols != Ho * Wo:
        e.map(MapKind.FILL, [], out, value=0.0)
    params: dict[str, object] = {"kernel": (p.kw,), "strides": (p.sw,)}
    if p.pl or p.pr:
        params["pads"] = (p.pl, p.pr)
    if p.dw != 1:
        params["dilations"] = (p.dw,)
    chunks = -(-p.C // q)
    with e.tasks(p.N * chunks) as t:
        n, u = e.digits(t, [p.N, chunks])
        c0 = e.chunk_start(u, q, p.C)
        if hp == p.H:  # no vertical padding: the q planes are one run in x and in LDM
            toks = [e.get(x, [n, c0, 0, 0], [1, q, p.H, W], planes)]
        else:
            toks = [e.get(x, [n, e.add(c0, j), 0, 0], [1, 1, p.H, W], e.view(planes, (p.H, W), (j * hp + p.pt) * W))
                    for j in range(q)]
        e.wait(toks)
        for j in range(q):
            for i in range(p.kh):
                dst = tmp if tmp is not None else e.view(out, (Ho, 1, Wo), (j * kk + i) * cols)
                if p.sh == 1:
                    e.map(MapKind.IM2COL, [e.view(planes, (Ho, W), (j * hp + i * p.dh) * W)], dst, **params)
                else:
                    for r in range(Ho):
                        e.map(MapKind.IM2COL, [e.view(planes, (1, W), (j * hp + i * p.dh + r * p.sh) * W)],
                              e.view(dst, (1, p.kw, Wo), r * p.kw * Wo), **params)
                if tmp is not None:
                    e.map(MapKind.TRANSPOSE, [tmp], e.view(out, (p.kw, Ho, Wo), (j * kk + i * p.kw) * Ho * Wo),
                          perm=(1, 0, 2))
        e.wait([e.put(out, col, [e.mul(c0, kk), e.mul(n, how)], [q * kk, cols])])
    ctx.note_memref_write(op.output)
    return e.ops()


def lower_im2col(op: Im2colOp, ctx) -> list[Operation]:
    """Per-CPE loops of :class:`Im2colPlan` (one per row group, then the zero phase); all DMAs
    waited at the end of their task -- or whole-plane tasks when they move fewer bytes
    (:func:`taihu.backends.model.tasks.im2col_planes`)."""
    p = plan_im2col(op, ctx.ldm_free_bytes())
    how = op.columns_per_image() or p.Ho * p.Wo
    rpt = op.rows_per_task.value.data if op.rows_per_task is not None else None
    _, eb = _elem(op.input.type)
    x_shape = Im2colShape(p.N, p.C, p.H, p.W, (p.kh, p.kw), (p.sh, p.sw), (p.pt, p.pl, p.pb, p.pr), (p.dh, p.dw), eb,
                          p.nhwc)
    pl = im2col_planes(x_shape, ctx.ldm_free_bytes(), how, rpt)
    if pl is not None:
        return _lower_im2col_planes(op, ctx, p, pl, how)
    x, col = ctx.value(op.input), ctx.value(op.output)
    et, _ = _elem(op.input.type)
    e = _Emitter(ctx)
    xin = ctx.new_buffer("im2col_in", LdmBufType((p.R, p.W), et))
    xcol = ctx.new_buffer("im2col_col", LdmBufType((p.R, p.kw, p.Wo), et))
    xcol_t = ctx.new_buffer("im2col_colT", LdmBufType((p.kw, p.R, p.Wo), et)) if p.R > 1 else None
    kk = p.kh * p.kw
    how = op.columns_per_image() or p.Ho * p.Wo  # col columns per image (padded: image_columns)
    params: dict[str, object] = {"kernel": (p.kw,), "strides": (p.sw,)}
    if p.pl or p.pr:
        params["pads"] = (p.pl, p.pr)
    if p.dw != 1:
        params["dilations"] = (p.dw,)
    zeros = None
    if any(p.zero_ranges):
        zeros = ctx.new_buffer("im2col_zero", LdmBufType((p.kw, p.zchunk * p.Wo), et))
        e.map(MapKind.FILL, [], zeros, value=0.0)
    for gr in p.groups:
        r = gr.rows
        with e.tasks(p.N * p.C * gr.chunks) as q:
            n, c, u = e.digits(q, [p.N, p.C, gr.chunks])
            ri0 = e.add(e.mul(e.chunk_start(u, r, gr.count), gr.step), gr.r0)
            strided = r > 1 and gr.step > 1
            xv = e.view(xin, (r, p.W))
            offs: list[SSAValue | int]
            if p.nhwc:
                offs, sizes, st = [n, ri0, 0, c], [1, r, p.W, 1], [1, gr.step, 1, 1]
            else:
                offs, sizes, st = [n, c, ri0, 0], [1, 1, r, p.W], [1, 1, gr.step, 1]
            t = e.emit(
                DmaStartOp(x, xv, [e.c(o) if isinstance(o, int) else o for o in offs], sizes, strides=st if strided else None)
            ).results[0]
            e.wait([t])
            cv = e.view(xcol, (r, p.kw, p.Wo))
            e.map(MapKind.IM2COL, [xv], cv, **params)
            if r > 1:
                assert xcol_t is not None
                src = e.view(xcol_t, (p.kw, r, p.Wo))
                e.map(MapKind.TRANSPOSE, [cv], src, perm=(1, 0, 2))
            else:
                src = e.view(xcol, (p.kw, p.Wo))
            crow = e.mul(c, kk)
            ncol = e.mul(n, how)
            toks = []
            for i in gr.kernel_rows:
                num = e.add(ri0, p.pt - i * p.dh)  # >= 0 and divisible by sh for every row of the group
                hov = e._bin(arith.DivUIOp, num, p.sh) if p.sh > 1 else num
                toks.append(e.put(src, col, [e.add(crow, i * p.kw), e.add(ncol, e.mul(hov, p.Wo))], [p.kw, r * p.Wo]))
            e.wait(toks)
    # zero phase: col entries fed by vertical padding
    if zeros is not None:
        with e.tasks(p.N * p.C, "qz") as q:
            n, c = e.digits(q, [p.N, p.C])
            crow = e.mul(c, kk)
            ncol = e.mul(n, how)
            toks = []
            for i, rs in enumerate(p.zero_ranges):
                for ho0, nho in rs:
                    for h0 in range(ho0, ho0 + nho, p.zchunk):
                        nz = min(p.zchunk, ho0 + nho - h0)
                        toks.append(
                            e.put(e.view(zeros, (p.kw, nz * p.Wo)), col, [e.add(crow, i * p.kw), e.add(ncol, h0 * p.Wo)], [p.kw, nz * p.Wo])
                        )
            e.wait(toks)
    ctx.note_memref_write(op.output)
    return e.ops()


# ============================================================================================
# tile.unfold (implicit convolution: B operand unfolded in LDM from input rows)
# ============================================================================================


def unfold_reference(rows: Sequence[np.ndarray], kw: int, stride: int = 1, pads: Sequence[int] = (0, 0),
                     dilation: int = 1) -> np.ndarray:
    """``tile.unfold`` on whole tiles: ``rows[kr]`` (G, 8, W) -> b (kh*G*kw, 8*Wo) with
    ``b[((ci_hi*kh + kr)*g + ci_lo)*kw + kc, q*Wo + co] = xp_kr[ci_hi*g + ci_lo, q, co*s + kc*d]``
    (g = G/8, xp zero-padded by ``pads`` on the last dim; see :class:`taihu.dialects.tile.UnfoldOp`)."""
    kh = len(rows)
    g_ch = rows[0].shape[0]
    g = g_ch // 8
    u = np.stack([im2col_rows_reference(r, kw, stride, pads, dilation) for r in rows])  # (kh, G, 8, kw, Wo)
    wo = u.shape[-1]
    u = u.reshape(kh, 8, g, 8, kw, wo)  # (kr, ci_hi, ci_lo, q, kc, co)
    return u.transpose(1, 0, 2, 4, 3, 5).reshape(8 * kh * g * kw, 8 * wo)


def lower_unfold(op: UnfoldOp, ctx) -> list[Operation]:
    """Each CPE unfolds its own block: input row tile ``kr`` (local (g, 1, W)) -> the kr-th
    slice of its B block (local (kh, g, kw, Wo), rows = its K block of :class:`UnfoldOp`'s order),
    one ``loop.map im2col`` per kernel row (converting f32 -> f64 on the way); no DMA, no RLC."""
    geo = op.geometry()
    kw, wo = geo["kw"], geo["Wo"]
    e = _Emitter(ctx)
    out = ctx.value(op.out)
    ot = out.type
    assert isinstance(ot, LdmBufType)
    g = geo["G"] // 8
    params: dict[str, object] = {"kernel": (kw,), "strides": (geo["stride"],)}
    if geo["pl"] or geo["pr"]:
        params["pads"] = (geo["pl"], geo["pr"])
    if geo["dilation"] != 1:
        params["dilations"] = (geo["dilation"],)
    for kr, v in enumerate(op.inputs):
        src = ctx.value(v)
        dst = e.view(out, (g, 1, kw, wo), kr * g * kw * wo)
        e.map(MapKind.IM2COL, [src], dst, **params)
    return e.ops()


# ============================================================================================
# tile.winograd_filter (Algorithm 5 step 1, L1130-1196 / 5.1.3.2; algorithms.md §C4)
# ============================================================================================


#: the task decomposition of ``tile.winograd_filter`` (shared with the analytic model)
WinogradFilterPlan = WinogradFilterTasks


def plan_winograd_filter(op: WinogradFilterOp, budget: int) -> WinogradFilterPlan:
    """:func:`taihu.backends.model.tasks.winograd_filter_tasks` of ``op`` within ``budget``
    bytes of LDM."""
    ti = op.input.type
    assert isinstance(ti, MemRefType)
    no, ni, _, _ = ti.get_shape()
    _, eb = _elem(ti)
    return winograd_filter_tasks(no, ni, eb, budget)


def lower_winograd_filter(op: WinogradFilterOp, ctx) -> list[Operation]:
    """Per-CPE loop of :class:`WinogradFilterPlan`: DMA filters in, ``loop.map
    winograd_filter``, DMA the 16 transformed planes out."""
    p = plan_winograd_filter(op, ctx.ldm_free_bytes())
    w, u = ctx.value(op.input), ctx.value(op.output)
    et, _ = _elem(op.input.type)
    nf = p.kk * p.g
    wf = ctx.new_buffer("wino_filter_in", LdmBufType((nf, 3, 3), et))
    uf = ctx.new_buffer("wino_filter_out", LdmBufType((16, nf), et))
    e = _Emitter(ctx)
    with e.tasks(p.k_chunks * p.c_chunks) as q:
        jk, jc = e.digits(q, [p.k_chunks, p.c_chunks])
        k0 = e.chunk_start(jk, p.kk, p.No)
        c0 = e.chunk_start(jc, p.g, p.Ni)
        t = e.get(w, [k0, c0, 0, 0], [p.kk, p.g, 3, 3], wf)
        e.wait([t])
        e.map(MapKind.WINOGRAD_FILTER, [wf], uf)
        e.wait([e.put(uf, u, [0, k0, c0], [16, p.kk, p.g])])
    ctx.note_memref_write(op.output)
    return e.ops()


# ============================================================================================
# tile.winograd_input / tile.winograd_output (Algorithm 5 steps 2 and 4, L1138-1183)
# ============================================================================================


def _dims(t: MemRefType, layout: DataLayout) -> tuple[int, int, int, int]:
    s = t.get_shape()
    return (s[0], s[3], s[1], s[2]) if layout == DataLayout.NHWC else (s[0], s[1], s[2], s[3])


@dataclass(frozen=True)
class WinogradInputPlan:
    tiling: WinogradTiling
    H: int
    W: int
    pads: tuple[int, int, int, int]
    P: int
    nhwc: bool

    def row_clip(self, tr: int) -> tuple[int, int]:
        """(top, bottom): padded rows of tile row tr's 4-row window outside the input."""
        r0 = 2 * tr - self.pads[0]
        return max(0, -r0), max(0, r0 + 4 - self.H)

    def col_clip(self, tc0: int) -> tuple[int, int]:
        """(left, right) of the (2t+2)-column window starting at tile tc0 (whole rows when
        full_width: the window of the whole tile row)."""
        t = self.tiling.t
        c0 = 2 * tc0 - self.pads[1]
        return max(0, -c0), max(0, c0 + 2 * t + 2 - self.W)


def plan_winograd_input(op: WinogradInputOp, budget: int, machine: Machine) -> WinogradInputPlan:
    """:class:`WinogradInputPlan` of ``op``: the tiling of
    :func:`taihu.backends.model.tasks.winograd_input_tiling` (shared with the analytic model)
    within ``budget`` bytes of LDM, costed on ``machine``. Raises PassFailedException when a
    whole tile row of one channel does not fit."""
    ti, to = op.input.type, op.output.type
    assert isinstance(ti, MemRefType) and isinstance(to, MemRefType)
    layout = op.data_layout
    b, ni, h, w = _dims(ti, layout)
    # four values: the op's verifier checks the length of pads
    pads = cast(tuple[int, int, int, int], tuple(int(x) for x in op.pads.get_values())) if op.pads is not None else (0, 0, 0, 0)
    _, eb = _elem(ti)
    nhwc = layout == DataLayout.NHWC
    want = op.tiles_per_cpe.value.data if op.tiles_per_cpe is not None else 1
    p_rows = to.get_shape()[1]
    try:
        til = winograd_input_tiling(WinogradInput(b, ni, h, w, pads, p_rows, eb, nhwc), budget, machine, want)
    except DoesNotFit as e:
        raise _fail(op, str(e)) from None
    return WinogradInputPlan(til, h, w, pads, p_rows, nhwc)


_K = TypeVar("_K")
_RowKey = TypeVar("_RowKey")
_ColKey = TypeVar("_ColKey")


def _groups(values: Sequence[_K]) -> list[tuple[int, int, _K]]:
    return [(s, n, values[s]) for s, n in _runs(values)]


def _winograd_tasks(e: _Emitter, til: WinogradTiling, row_key: Callable[[int], _RowKey],
                    col_key: Callable[[int], _ColKey]) -> Iterator[tuple[_RowKey, _ColKey, tuple[SSAValue, ...]]]:
    """The task loops of a Winograd transform: the tile rows and the task column starts are
    grouped by their boundary clipping (``row_key(tr)``, ``col_key(tc0)``: equal keys = same
    static DMA/map sizes), one ``scf.for`` over the 64 CPEs per (row group, column group).
    Yields (row key, column key, (b, tr, tc0, c0)) inside each loop body: the task's image, tile
    row, first tile and first channel (index values)."""
    starts = til.col_starts
    for tr_a, n_tr, rk in _groups([row_key(tr) for tr in range(til.TR)]):
        for j_a, n_j, ck in _groups([col_key(s) for s in starts]):
            with e.tasks(til.B * n_tr * n_j * til.c_chunks) as q:
                bb, tri, ji, jc = e.digits(q, [til.B, n_tr, n_j, til.c_chunks])
                trv = e.add(tri, tr_a)
                tc0 = e.c(0) if til.full_width else e.chunk_start(e.add(ji, j_a), til.t, til.TC)
                c0 = e.chunk_start(jc, til.g, til.C)
                yield rk, ck, (bb, trv, tc0, c0)


def lower_winograd_input(op: WinogradInputOp, ctx) -> list[Operation]:
    """Per-CPE loops of :class:`WinogradInputPlan`: for each boundary group, DMA the (rows,
    cols, channels) window, (NCHW: transpose to channels-last in LDM), ``loop.map
    winograd_input`` with the group's zero padding, DMA the 16 transformed planes to v (rows of v
    past B*T, the GEMM's block padding L1194-1196, are not written)."""
    p = plan_winograd_input(op, ctx.ldm_free_bytes(), ctx.machine)
    til = p.tiling
    x, v = ctx.value(op.input), ctx.value(op.output)
    et, _ = _elem(op.input.type)
    t, g, C = til.t, til.g, til.C
    cols_max = min(p.W, 2 * t + 2)
    din = ctx.new_buffer("wino_in", LdmBufType((4 * cols_max * g,), et))
    vout = ctx.new_buffer("wino_in_v", LdmBufType((16, t, g), et))
    dchw = ctx.new_buffer("wino_in_chw", LdmBufType((4 * cols_max * g,), et)) if not p.nhwc else None
    e = _Emitter(ctx)
    for (top, bottom), (left, right), (bb, trv, tc0, c0) in _winograd_tasks(e, til, p.row_clip, p.col_clip):
        R = 4 - top - bottom
        Wc = 2 * t + 2 - left - right
        vo = vout
        if R <= 0 or Wc <= 0:  # the window lies entirely in the zero padding
            e.map(MapKind.FILL, [], vo, value=0.0)
        else:
            r_in = e.affine(trv, 2, top - p.pads[0])
            c_in = e.affine(tc0, 2, left - p.pads[1])
            d = e.view(din, (R, Wc, g))
            if p.nhwc:
                e.wait([e.get(x, [bb, r_in, c_in, c0], [1, R, Wc, g], d)])
            elif til.full_width:  # (g, R, W): one DMA of g channels x R whole rows
                assert dchw is not None
                dc = e.view(dchw, (g, R, Wc))
                e.wait([e.get(x, [bb, c0, r_in, c_in], [1, g, R, Wc], dc)])
                e.map(MapKind.TRANSPOSE, [dc], d, perm=(1, 2, 0))
            else:  # (R, C, Wc): one DMA per image row of all channels
                assert dchw is not None
                toks = [
                    e.get(x, [bb, c0, e.add(r_in, k), c_in], [1, g, 1, Wc], e.view(dchw, (g, Wc), k * g * Wc))
                    for k in range(R)
                ]
                e.wait(toks)
                e.map(MapKind.TRANSPOSE, [e.view(dchw, (R, g, Wc))], d, perm=(0, 2, 1))
            params = {"pads": (top, left, bottom, right)} if (top or left or bottom or right) else {}
            e.map(MapKind.WINOGRAD_INPUT, [d], vo, **params)
        p0 = e.add(e.mul(bb, til.T), e.add(e.mul(trv, til.TC), tc0))
        if g == C:
            e.wait([e.put(vo, v, [0, p0, 0], [16, t, C])])
        else:
            toks = [e.put(e.view(vo, (t, g), xi * t * g), v, [xi, p0, c0], [1, t, g]) for xi in range(16)]
            e.wait(toks)
    # rows of v past B*T (the GEMM's block padding) are not written: every GEMM row is
    # independent and the output transform reads rows < B*T only (the zeros cost ~20 % of the
    # kernel's traffic on 14x14 layers)
    ctx.note_memref_write(op.output)
    return e.ops()


@dataclass(frozen=True)
class WinogradOutputPlan:
    tiling: WinogradTiling
    Ro: int
    Co: int
    nhwc: bool

    def rows(self, tr: int) -> int:
        return min(2, self.Ro - 2 * tr)

    def cols(self, tc0: int) -> int:
        return min(2 * self.tiling.t, self.Co - 2 * tc0)


def plan_winograd_output(op: WinogradOutputOp, budget: int, machine: Machine) -> WinogradOutputPlan:
    """:class:`WinogradOutputPlan` of ``op``: the tiling of
    :func:`taihu.backends.model.tasks.winograd_output_tiling` (shared with the analytic model)
    within ``budget`` bytes of LDM, costed on ``machine``. Raises PassFailedException when a
    whole tile row of one channel does not fit."""
    ti, to = op.input.type, op.output.type
    assert isinstance(ti, MemRefType) and isinstance(to, MemRefType)
    layout = op.data_layout
    b, no, ro, co = _dims(to, layout)
    _, eb = _elem(ti)
    nhwc = layout == DataLayout.NHWC
    try:
        til = winograd_output_tiling(WinogradOutput(b, no, ro, co, ti.get_shape()[1], eb, nhwc), budget, machine)
    except DoesNotFit as e:
        raise _fail(op, str(e)) from None
    return WinogradOutputPlan(til, ro, co, nhwc)


def lower_winograd_output(op: WinogradOutputOp, ctx) -> list[Operation]:
    """Per-CPE loops of :class:`WinogradOutputPlan`: DMA the 16 planes of t tiles x g channels
    in, ``loop.map winograd_output`` clipped to the group's rows/columns, the optional bias add
    (the task's g bias values, one small DMA) and activation in LDM, (NCHW: transpose to
    channels-first), DMA the output rows out."""
    p = plan_winograd_output(op, ctx.ldm_free_bytes(), ctx.machine)
    til = p.tiling
    m, y = ctx.value(op.input), ctx.value(op.output)
    et, _ = _elem(op.input.type)
    t, g, C = til.t, til.g, til.C
    mbuf = ctx.new_buffer("wino_out_m", LdmBufType((16, t, g), et))
    ybuf = ctx.new_buffer("wino_out_y", LdmBufType((2 * 2 * t * g,), et))
    bias = ctx.value(op.bias) if op.bias is not None else None
    bbuf = ctx.new_buffer("wino_out_bias", LdmBufType((g,), et)) if bias is not None else None
    act = op.activation.data if op.activation is not None else None
    ychw = ctx.new_buffer("wino_out_chw", LdmBufType((2 * 2 * t * g,), et)) if not p.nhwc else None
    e = _Emitter(ctx)
    for R, Wc, (bb, trv, tc0, o0) in _winograd_tasks(e, til, p.rows, p.cols):
        p0 = e.add(e.mul(bb, til.T), e.add(e.mul(trv, til.TC), tc0))
        if g == C:
            e.wait([e.get(m, [0, p0, 0], [16, t, C], mbuf)])
        else:
            e.wait([e.get(m, [xi, p0, o0], [1, t, g], e.view(mbuf, (t, g), xi * t * g)) for xi in range(16)])
        yv = e.view(ybuf, (R, Wc, g))
        if bias is not None:  # this task's g bias values (one small DMA, read during the map)
            assert bbuf is not None
            tb = e.get(bias, [o0], [g], bbuf)
        e.map(MapKind.WINOGRAD_OUTPUT, [mbuf], yv)
        if bias is not None:  # epilogue in LDM, channels last: bias broadcast over (R, Wc)
            assert bbuf is not None
            e.wait([tb])
            e.map(MapKind.ADD, [yv, bbuf], yv)
        if act is not None:
            e.map(act, [yv], yv)
        r_out = e.mul(trv, 2)
        c_out = e.mul(tc0, 2)
        if p.nhwc:
            e.wait([e.put(yv, y, [bb, r_out, c_out, o0], [1, R, Wc, g])])
        elif til.full_width:  # (g, R, Co): one DMA of g channels x R whole rows
            assert ychw is not None
            yc = e.view(ychw, (g, R, Wc))
            e.map(MapKind.TRANSPOSE, [yv], yc, perm=(2, 0, 1))
            e.wait([e.put(yc, y, [bb, o0, r_out, c_out], [1, g, R, Wc])])
        else:  # (R, C, Wc): one DMA per output row of all channels
            assert ychw is not None
            yc = e.view(ychw, (R, g, Wc))
            e.map(MapKind.TRANSPOSE, [yv], yc, perm=(0, 2, 1))
            toks = [
                e.put(e.view(ychw, (g, Wc), k * g * Wc), y, [bb, o0, e.add(r_out, k), c_out], [1, g, 1, Wc])
                for k in range(R)
            ]
            e.wait(toks)
    ctx.note_memref_write(op.output)
    return e.ops()
