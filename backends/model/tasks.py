"""Task decompositions of the memory-to-memory primitives (pure arithmetic, no IR).

One source of truth for how ``convert-tile-to-loop`` splits ``tile.im2col`` and
``tile.winograd_input`` / ``tile.winograd_output`` into per-CPE tasks
(``passes/conversion/tile_to_loop/mem_prims.py`` emits the loops of these plans) and for the
analytic model that costs them (:mod:`taihu.backends.model.conv`): both call the functions
here, so the model prices exactly the kernel the lowering emits.

Conventions (shared with the lowering): a primitive's tasks are dealt out cyclically over the
:data:`N_CPE` CPEs; ragged chunks are shifted left to stay inside (:func:`chunk_starts`), so every
task of a group has the same static shape; every LDM buffer is rounded up to
:data:`LDM_ALIGN` bytes (:func:`fits`).

Problems are frozen dataclasses: :class:`Im2colShape` (an im2col's input and window),
:class:`WinogradInput` / :class:`WinogradOutput` (a transform's image and transformed sides).

* im2col (004 §5.1.1 L1045-1049, algorithms.md §C2): :func:`im2col_tasks` -- input rows grouped
  by the kernel rows they feed (:class:`RowGroup`), ``rows`` rows of one channel per task, and the
  zero phase for the entries fed by vertical padding (:class:`Im2colTasks`).
* Winograd F(2x2, 3x3) input / output transforms (Algorithm 5 steps 2 and 4, L1138-1183):
  :func:`winograd_input_tiling` / :func:`winograd_output_tiling` -- ``t`` tiles of one tile row x
  all channels, or whole tile rows x ``g`` channels (:class:`WinogradTiling`), the candidate with
  the smaller modelled DMA time per CPE (eq 3-1 / 3-2 with 128-B transaction waste, averaged over
  the tasks' actual block starts: :class:`DmaWindow`).

Units: sizes in elements unless named ``*_bytes`` / ``eb`` (bytes per element), budgets in bytes,
times in seconds. Errors: :class:`DoesNotFit` (a ``ValueError``) when even the smallest task does
not fit in the LDM budget; the lowering turns it into a pass failure naming the op, the model into
:class:`~taihu.backends.model.conv.NotApplicable`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from taihu.target.dma import dma_pattern, moved, moved_strided
from taihu.target.machine import Machine

__all__ = [
    "DmaWindow",
    "DoesNotFit",
    "Im2colPlanes",
    "Im2colShape",
    "Im2colTasks",
    "LDM_ALIGN",
    "MIN_CHANNEL_GROUP",
    "MIN_TILES_OUT",
    "N_CPE",
    "RowGroup",
    "WinogradFilterTasks",
    "WinogradInput",
    "WinogradOutput",
    "WinogradTiling",
    "chunk_starts",
    "fits",
    "im2col_moved",
    "im2col_planes",
    "im2col_tasks",
    "ldm_bytes",
    "winograd_filter_tasks",
    "winograd_filter_windows",
    "winograd_input_tiling",
    "winograd_input_windows",
    "winograd_output_tiling",
    "winograd_output_windows",
]

#: CPEs of one core group (8 x 8 mesh, 004 L481).
N_CPE = 64
#: bytes: every LDM buffer is rounded up to the vector alignment (``loop.ldm_buffer``).
LDM_ALIGN = 32
#: smallest channel group of a full-width Winograd task when the channels must be split: DMA blocks
#: of >= 8 channels (32 B of f32) rather than perfect load balance (R1: large DMA blocks, 004 L657).
MIN_CHANNEL_GROUP = 8
#: fewest tiles per Winograd output task (when the tile row has them): NCHW output rows leave in
#: blocks of 2t elements, so t >= 4 gives blocks of >= 32 B of f32 (R1, 004 L657).
MIN_TILES_OUT = 4


class DoesNotFit(ValueError):
    """Even the smallest task of a memory primitive does not fit in the LDM budget."""


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def ldm_bytes(n_elems: int, eb: int) -> int:
    """LDM bytes of a buffer of ``n_elems`` elements of ``eb`` bytes (rounded to LDM_ALIGN)."""
    return _ceil(n_elems * eb, LDM_ALIGN) * LDM_ALIGN


def fits(sizes: Sequence[int], eb: int, budget: int) -> bool:
    """Do buffers of ``sizes`` elements (0: absent) fit in ``budget`` bytes of LDM?"""
    return sum(ldm_bytes(n, eb) for n in sizes if n > 0) <= budget


def chunk_starts(total: int, size: int) -> list[int]:
    """Starts of the chunks of ``size`` covering [0, total): ``min(j*size, total - size)`` (the
    last chunk is shifted left to stay inside; overlapping chunks recompute and rewrite the same
    values, so every task has the same static shape)."""
    return [min(j * size, total - size) for j in range(_ceil(total, size))]


# --------------------------------------------------------------------------------------------
# DMA windows of a task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DmaWindow:
    """``count`` DMAs per task, each moving the window ``sizes`` (elements) of the row-major
    array ``mem_shape`` as ONE athread DMA (:func:`taihu.backends.sim.dma.dma_pattern`); over
    the tasks the windows start at the element ``offsets`` (their 128-B transaction waste
    depends on the start: arrays are 128-B aligned, R7)."""

    mem_shape: tuple[int, ...]
    sizes: tuple[int, ...]
    count: int = 1
    offsets: tuple[int, ...] = (0,)

    def pattern(self, eb: int) -> tuple[int, int, int]:
        """(size, bsize, stride) bytes of one DMA (bsize = stride = 0: contiguous)."""
        pat = dma_pattern(self.mem_shape, self.sizes, eb)
        if pat is None:
            raise ValueError(f"window {list(self.sizes)} of {list(self.mem_shape)} is not one DMA")
        return pat

    def seconds(self, eb: int, machine: Machine) -> float:
        """Modelled time (seconds) of the task's ``count`` DMAs of ``eb``-byte elements, 64 CPEs
        at once on ``machine`` (eq 3-1 / 3-2 with the 128-B transaction waste,
        :mod:`taihu.backends.model.analytic`), averaged over the offsets."""
        from taihu.backends.model.analytic import t_cont_dma, t_stride_dma

        size, bsize, stride = self.pattern(eb)
        offs = self.offsets or (0,)
        tot = sum(t_stride_dma(size, bsize, stride, machine, addr=o * eb) if bsize
                  else t_cont_dma(size, machine, addr=o * eb) for o in offs)
        return self.count * tot / len(offs)

    def blocks(self, eb: int, tasks: int, txn: int = 128) -> tuple[float, float, float]:
        """(count, bytes, moved bytes per block) of the contiguous blocks ``tasks`` tasks move
        (whole ``txn``-byte transactions, spec §4.4, averaged over the offsets)."""
        size, bsize, stride = self.pattern(eb)
        offs = self.offsets or (0,)
        if not bsize:
            mv = sum(moved(o * eb, size, txn) for o in offs) / len(offs)
            return (tasks * self.count, size, mv)
        nb = size // bsize
        mv = sum(moved_strided(o * eb, size, bsize, stride, txn) for o in offs) / len(offs) / nb
        return (tasks * self.count * nb, bsize, mv)


def _window(mem_shape: Sequence[int], sizes: Sequence[int], count: int = 1, offsets: Sequence[int] = (0,)) -> DmaWindow:
    return DmaWindow(tuple(mem_shape), tuple(sizes), count, tuple(offsets))


# --------------------------------------------------------------------------------------------
# im2col (004 §5.1.1, L1045-1049)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Im2colShape:
    """An im2col of x (n, c, h, w) (``nhwc``: stored (n, h, w, c)) of ``eb``-byte elements with
    window ``kernel`` (kh, kw), ``strides`` (sh, sw), ``pads`` (top, left, bottom, right),
    ``dilations`` (dh, dw)."""

    n: int
    c: int
    h: int
    w: int
    kernel: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    eb: int = 4
    nhwc: bool = False

    @property
    def out_hw(self) -> tuple[int, int]:
        """Output (rows, columns) of the window over the h x w map (ONNX Conv:
        ``(H + pad_top + pad_bottom - d*(k-1) - 1) // s + 1``)."""
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilations
        pt, pl, pb, pr = self.pads
        return (self.h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (self.w + pl + pr - dw * (kw - 1) - 1) // sw + 1


@dataclass(frozen=True)
class RowGroup:
    """Input rows ``r0, r0 + step, ...`` (``count`` rows) that feed the same kernel rows
    ``kernel_rows`` (i with ``ho = (ri + pt - i*dh)/sh`` integral and in [0, Ho)); a task takes
    ``rows`` of them (consecutive in the group; the last chunk shifted left to stay inside)."""

    r0: int
    step: int
    count: int
    rows: int
    kernel_rows: tuple[int, ...]

    @property
    def chunks(self) -> int:
        return _ceil(self.count, self.rows)


@dataclass(frozen=True)
class Im2colTasks:
    """Task decomposition of ``tile.im2col``. Main phase: per row group ``N * C * chunks`` tasks,
    each one DMA of ``rows`` input rows of one channel (strided by the group step), the unfold
    (+ a transpose to (kw, rows, Wo) when rows > 1) in LDM and one DMA of kw x (rows*Wo) per
    kernel row. Zero phase: per (n, c) the col entries fed by vertical padding,
    ``zero_ranges[i]`` = ((ho0, count), ...) per kernel row i, at most ``zchunk`` output rows per
    DMA (0: no zero phase)."""

    groups: tuple[RowGroup, ...]
    zero_ranges: tuple[tuple[tuple[int, int], ...], ...]
    zchunk: int

    @property
    def rows_max(self) -> int:
        """Largest rows per task over the groups (the LDM buffers' row count)."""
        return max((g.rows for g in self.groups), default=1)


def _row_groups(h: int, kh: int, feeds: Callable[[int, int], bool], sh: int, rpt: int,
                can_stride: bool) -> list[RowGroup]:
    """Group the input rows by the kernel rows they feed, as arithmetic progressions."""
    by_sig: dict[tuple[int, ...], list[int]] = {}
    for ri in range(h):
        sig = tuple(i for i in range(kh) if feeds(ri, i))
        if sig:
            by_sig.setdefault(sig, []).append(ri)
    groups = []
    for sig, rows in by_sig.items():
        k = 0
        while k < len(rows):
            step = rows[k + 1] - rows[k] if k + 1 < len(rows) else 1
            n = 1
            while k + n < len(rows) and rows[k + n] - rows[k + n - 1] == step:
                n += 1
            # R rows of one task feed consecutive output rows only if step == sh; a strided row
            # DMA must be one athread DMA (NHWC rows with a step > 1 are not)
            r = min(rpt, n) if step == sh and (step == 1 or can_stride) else 1
            groups.append(RowGroup(rows[k], step, n, r, sig))
            k += n
    return sorted(groups, key=lambda g: g.r0)


def im2col_tasks(x: Im2colShape, budget: int, rows_per_task: int | None = None) -> Im2colTasks:
    """:class:`Im2colTasks` of the im2col ``x``; ``rows_per_task`` default = as many rows as
    leave >= 64 tasks (``n*c*h // 64``, L1049), halved until the task buffers (rows x W input,
    rows x kw x Wo unfolded and its transpose, the zero buffer of kw x zchunk*Wo; ``x.eb``-byte
    elements) fit ``budget`` bytes. NHWC rows with a step > 1 are not one DMA: one row per task
    there. Raises :class:`DoesNotFit` when one row does not fit."""
    n, c, h, w, eb, nhwc = x.n, x.c, x.h, x.w, x.eb, x.nhwc
    kh, kw = x.kernel
    (sh, _), (dh, _), pt = x.strides, x.dilations, x.pads[0]
    ho, wo = x.out_hw
    zero_ranges = []
    for i in range(kh):
        lo = min(ho, max(0, -(-(pt - i * dh) // sh)))  # ho < lo: input row < 0
        hi = min(ho, max(0, -(-(h + pt - i * dh) // sh)))  # ho >= hi: input row >= H
        rs = []
        if lo > 0:
            rs.append((0, lo))
        if hi < ho:
            rs.append((max(hi, lo), ho - max(hi, lo)))
        zero_ranges.append(tuple(rs))
    zmax = max((nn for rs in zero_ranges for _, nn in rs), default=0)

    def feeds(ri: int, i: int) -> bool:
        num = ri + pt - i * dh
        return num >= 0 and num % sh == 0 and num // sh < ho

    rpt = rows_per_task if rows_per_task is not None else max(1, (n * c * h) // N_CPE)
    r = min(rpt, h)
    while True:
        groups = _row_groups(h, kh, feeds, sh, r, not nhwc)
        rmax = max((gr.rows for gr in groups), default=1)
        zc = min(zmax, max(1, (budget // 4) // (eb * kw * wo))) if zmax else 0
        if fits([rmax * w, rmax * kw * wo, rmax * kw * wo if rmax > 1 else 0, kw * zc * wo], eb, budget):
            return Im2colTasks(tuple(groups), tuple(zero_ranges), zc)
        if r > 1:
            r = max(1, r // 2)
            continue
        raise DoesNotFit(f"one input row ({w} elements) and its unfolded rows ({kw}x{wo}) do not fit in {budget} B of LDM")


@dataclass(frozen=True)
class Im2colPlanes:
    """Whole-plane decomposition of an NCHW ``tile.im2col`` (small maps): a task = ``q``
    channels of one image (``N * ceil(C/q)`` tasks, the last chunk shifted left): per channel one
    contiguous DMA of its H x W plane into rows ``pt ..`` of a zero-padded LDM plane of ``hp``
    rows (the padding rows stay zero; without vertical padding, ``hp = H``, one DMA of the q
    planes, contiguous in x and in LDM), per channel and kernel row i the unfold of the Ho padded
    rows ``i*dh + ho*sh`` (one ``loop.map im2col`` on a contiguous view when sh = 1, one per
    output row otherwise) and, when kw > 1, a transpose into the channel's (kh*kw, Ho*Wo) block,
    then ONE DMA of the q channels' kh*kw col rows (contiguous when the image columns are not
    padded; a 1x1 kernel's block holds whole padded col rows, zeros in the padding). No zero
    phase, few large DMAs: chosen over :class:`Im2colTasks` when it moves fewer bytes (whole
    128-B transactions, :func:`im2col_planes`)."""

    q: int
    hp: int


def _avg_blocks(win: DmaWindow, eb: int, tasks: int) -> float:
    cnt, _, mv = win.blocks(eb, tasks)
    return cnt * mv


def im2col_moved(x: Im2colShape, how: int, plan: Im2colTasks | Im2colPlanes) -> float:
    """Bytes moved (whole 128-B transactions, averaged over the tasks' actual starts on a few
    channels) by the DMAs of ``plan`` for the NCHW im2col ``x`` into a col with ``how`` columns
    per image."""
    n, c, h, w, eb = x.n, x.c, x.h, x.w, x.eb
    kh, kw = x.kernel
    (sh, _), (dh, _), pt = x.strides, x.dilations, x.pads[0]
    ho, wo = x.out_hw
    kk = kh * kw
    xs, cs = (n, c, h, w), (c * kk, n * how)
    cc = range(min(c, 4))  # representative channels for the start offsets
    if isinstance(plan, Im2colPlanes):
        starts = chunk_starts(c, plan.q)[:4]
        tasks = n * _ceil(c, plan.q)
        if plan.hp == h:  # no vertical padding: one get of the q planes
            got = _avg_blocks(_window(xs, (1, plan.q, h, w), 1, [c0 * h * w for c0 in starts]), eb, tasks)
        else:
            got = _avg_blocks(_window(xs, (1, 1, h, w), 1, [ci * h * w for ci in cc]), eb, n * c)
        cols = how if kk == 1 else ho * wo  # 1x1: whole col rows (the padded columns zeroed)
        puts = _window(cs, (plan.q * kk, cols), 1, [c0 * kk * n * how for c0 in starts])
        return got + _avg_blocks(puts, eb, tasks)
    total = 0.0
    for g in plan.groups:
        tasks = n * c * g.chunks
        firsts = [g.r0 + st * g.step for st in chunk_starts(g.count, g.rows)][:2]
        if g.rows > 1 and g.step > 1:
            win = _window(xs, (1, 1, 1, w), g.rows, [(ci * h + r) * w for ci in cc for r in firsts])
        else:
            win = _window(xs, (1, 1, g.rows, w), 1, [(ci * h + r) * w for ci in cc for r in firsts])
        total += _avg_blocks(win, eb, tasks)
        for i in g.kernel_rows:
            offs = [(ci * kk + i * kw) * n * how + ((r + pt - i * dh) // sh) * wo for ci in cc for r in firsts]
            total += _avg_blocks(_window(cs, (kw, g.rows * wo), 1, offs), eb, tasks)
    for i, rs in enumerate(plan.zero_ranges):
        for ho0, nho in rs:
            for h0 in range(ho0, ho0 + nho, max(1, plan.zchunk)):
                nz = min(plan.zchunk, ho0 + nho - h0)
                offs = [(ci * kk + i * kw) * n * how + h0 * wo for ci in cc]
                total += _avg_blocks(_window(cs, (kw, nz * wo), 1, offs), eb, n * c)
    return total


def im2col_planes(x: Im2colShape, budget: int, how: int, rows_per_task: int | None = None) -> Im2colPlanes | None:
    """The :class:`Im2colPlanes` decomposition of the im2col ``x`` into a col with ``how``
    columns per image when it applies (NCHW, no ``rows_per_task`` override, the buffers of one
    channel fit ``budget`` bytes) and moves fewer bytes than :func:`im2col_tasks`'
    (:func:`im2col_moved`), else None. ``q`` = channels per task: as many as leave >= 64 tasks
    (``ceil(C / ceil(64 / N))``) for a 1x1 kernel, one for a wider one, lowered until the LDM
    buffers fit (the zero-padded planes q x hp x W, the unfolded rows Ho x kw x Wo, the col block
    q x kh*kw x Ho*Wo)."""
    if x.nhwc or rows_per_task is not None:
        return None
    n, c, h, w, eb = x.n, x.c, x.h, x.w, x.eb
    kh, kw = x.kernel
    (sh, _), (dh, _), pt = x.strides, x.dilations, x.pads[0]
    ho, wo = x.out_hw
    if ho <= 0 or wo <= 0:
        return None
    hp = max(pt + h, (kh - 1) * dh + (ho - 1) * sh + 1)
    # a kernel wider than 1x1: one channel per task (several tasks per CPE, so that a CPE's
    # unfold overlaps the others' transfers instead of all CPEs getting, unfolding and putting in
    # step: 3x3 s2 256 ch on 28x28 143.5k -> 124.8k cycles); 1x1: as many channels as leave >= 64
    # tasks (fewer, larger DMAs)
    q = 1 if kh * kw > 1 else max(1, _ceil(c, _ceil(N_CPE, n)))
    while not fits([q * hp * w, ho * kw * wo if kw > 1 else 0, q * kh * kw * (how if kh * kw == 1 else ho * wo)],
                   eb, budget):
        if q == 1:
            return None
        q = max(1, q // 2)
    planes = Im2colPlanes(q, hp)
    try:
        rows = im2col_tasks(x, budget)
    except DoesNotFit:
        return planes
    return planes if im2col_moved(x, how, planes) < im2col_moved(x, how, rows) else None


# --------------------------------------------------------------------------------------------
# Winograd input / output transforms (Algorithm 5 steps 2 and 4, L1138-1183)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WinogradTiling:
    """Task decomposition shared by the input and output transforms.

    Tiles (b, tr, tc) of the 2x2-output grid (TR x TC per image, row p = b*T + tr*TC + tc).
    A task covers ``t`` consecutive tiles ``tc0 .. tc0+t-1`` of one tile row (the m' of L1138)
    and ``g`` consecutive channels ``c0 ..``:

    * ``full_width = False``: g = all channels, t = min(tiles_per_cpe, TC) shrunk to fit LDM
      (input; the output transform picks t for >= 64 tasks); the transformed side -- the 16x
      larger one -- moves as ONE DMA of 16 blocks of t*C (L1140-1175). The image side: NHWC (the
      seed's layout, L1140) one DMA of (rows, 2t+2 cols, C); NCHW one DMA per image row of
      (C, cols) and an in-LDM transpose to channels-last;
    * ``full_width = True`` (when all channels of one tile do not fit, or it moves less): t = TC
      (a whole tile row), g channels per task; the image-side DMAs move whole image rows of g
      channels, the transformed side 16 DMAs of t x g.

    Chunk starts along the tile row and the channels: :func:`chunk_starts`.
    """

    B: int
    C: int  # channels of the side being transformed (N_i for input, N_o for output)
    TR: int
    TC: int
    t: int
    g: int
    full_width: bool

    @property
    def T(self) -> int:
        """Tiles per image."""
        return self.TR * self.TC

    @property
    def col_starts(self) -> list[int]:
        """First tile of each task along a tile row ([0] for whole tile rows)."""
        return [0] if self.full_width else chunk_starts(self.TC, self.t)

    @property
    def col_chunks(self) -> int:
        return 1 if self.full_width else _ceil(self.TC, self.t)

    @property
    def c_chunks(self) -> int:
        return _ceil(self.C, self.g)

    @property
    def tasks(self) -> int:
        return self.B * self.TR * self.col_chunks * self.c_chunks


def _winograd_tiling(b: int, c: int, tr: int, tc: int, want_t: int, budget: int,
                     fit: Callable[[int, int, bool], bool],
                     cost: Callable[[int, int, bool], float]) -> WinogradTiling:
    """Pick t and g. Candidates: all channels and the largest t <= want_t that fits (the seed's
    choice: do not split the channels, maximise m'*N_i within LDM, L1175); whole tile rows with
    the balanced channel group (>= 64 tasks, >= 8 channels per DMA block); whole tile rows with
    every other multiple of 8 channels that fits (fewer, longer tasks may finish in fewer rounds
    over the 64 CPEs, e.g. 70 tasks = 2 rounds, 56 tasks = 1; aligned blocks). The one with the
    smaller modelled DMA time per CPE wins (the transforms are DMA-bound, eq 5-7), ties: larger g.
    ``fit(t, g, full_width)``: do the task buffers fit ``budget`` bytes of LDM;
    ``cost(t, g, full_width)``: modelled DMA seconds of one task."""
    cands = []
    for t in range(min(max(1, want_t), tc), 0, -1):
        if fit(t, c, False):
            cands.append(WinogradTiling(b, c, tr, tc, t, c, False))
            break
    gbal = _ceil(c, max(1, _ceil(N_CPE, b * tr)))  # channels per task for >= 64 tasks
    gbal = max(gbal, min(c, MIN_CHANNEL_GROUP))  # but DMA blocks of >= 8 channels (R1, 004 L657)
    for g in range(min(c, gbal), 0, -1):
        if fit(tc, g, True):
            cands.append(WinogradTiling(b, c, tr, tc, tc, g, True))
            break
    for g in range(MIN_CHANNEL_GROUP, c, MIN_CHANNEL_GROUP):
        if g != gbal and fit(tc, g, True):
            cands.append(WinogradTiling(b, c, tr, tc, tc, g, True))
    if not cands:
        raise DoesNotFit(f"a whole tile row ({tc} tiles) of one channel does not fit in {budget} B of LDM")
    return min(cands, key=lambda w: (_ceil(w.tasks, N_CPE) * cost(w.t, w.g, w.full_width), -w.g))


@dataclass(frozen=True)
class WinogradInput:
    """An input transform x (b, c, h, w) (``nhwc``: stored (b, h, w, c)) of ``eb``-byte elements
    with ``pads`` (top, left, bottom, right) -> v (16, p_rows, c)."""

    b: int
    c: int
    h: int
    w: int
    pads: tuple[int, int, int, int]
    p_rows: int
    eb: int = 4
    nhwc: bool = False


@dataclass(frozen=True)
class WinogradOutput:
    """An output transform m (16, p_rows, c) -> y (b, c, ro, co) (``nhwc``: stored (b, ro, co, c))
    of ``eb``-byte elements."""

    b: int
    c: int
    ro: int
    co: int
    p_rows: int
    eb: int = 4
    nhwc: bool = False


def winograd_tiles(ro: int, co: int) -> tuple[int, int]:
    """(tile rows, tile columns) of F(2x2,3x3) for an Ro x Co output: ceil(Ro/2), ceil(Co/2)
    (004 L1144 [corrected])."""
    return _ceil(ro, 2), _ceil(co, 2)


def _transformed_window(p_rows: int, c: int, tr: int, tc: int, t: int, g: int) -> DmaWindow:
    """The transformed side (16, p_rows, c) of a task: one window of 16 blocks of t*C (g = C),
    else 16 DMAs of t x g; offsets: every tile row's first tile x every channel chunk."""
    ps = [(r * tc) * c for r in range(tr)]  # first transformed row (tile) per tile row
    if g == c:
        return _window((16, p_rows, c), [16, t, g], 1, ps)
    return _window((16, p_rows, c), [1, t, g], 16, [p + c0 for p in ps for c0 in chunk_starts(c, g)])


def winograd_input_windows(x: WinogradInput, t: int, g: int, full_width: bool) -> tuple[DmaWindow, DmaWindow]:
    """(get, put) DMA windows of one input-transform task (``t`` tiles x ``g`` channels) of
    ``x``: x (b, c, h, w) (``nhwc``: (b, h, w, c)) -> v (16, p_rows, c): the image side moves the
    task's 4 input rows (NHWC one (rows, 2t+2, g) window; NCHW whole rows of g channels when
    ``full_width``, else one DMA per row of (g, 2t+2)); the transformed side one window of 16
    blocks of t*C (g = C), else 16 DMAs of t x g. Offsets: every tile row's first input row x
    every channel chunk."""
    b, c, h, w, pads, p_rows, nhwc = x.b, x.c, x.h, x.w, x.pads, x.p_rows, x.nhwc
    pt = pads[0]
    ro, co = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    tr, tc = winograd_tiles(ro, co)
    cols, rows = min(w, 2 * t + 2), min(h, 4)
    cs = chunk_starts(c, g)
    ris = [min(max(0, 2 * r - pt), h - rows) for r in range(tr)]  # first input row per tile row
    if nhwc:
        xs = (b, h, w, c)
        get = _window(xs, [1, rows, cols, g], 1, [r * w * c + c0 for r in ris for c0 in cs])
    elif full_width:
        get = _window((b, c, h, w), [1, g, rows, w], 1, [(c0 * h + r) * w for r in ris for c0 in cs])
    else:
        get = _window((b, c, h, w), [1, g, 1, cols], rows, [(c0 * h + r) * w for r in ris for c0 in cs])
    return get, _transformed_window(p_rows, c, tr, tc, t, g)


def winograd_input_buffers(w: int, t: int, g: int, nhwc: bool = False) -> list[int]:
    """Element counts of an input-transform task's LDM buffers: the (4, 2t+2, g) input window,
    the (16, t, g) transformed tiles and (NCHW) the channels-first staging before the
    transpose."""
    cols = min(w, 2 * t + 2)
    out = [4 * cols * g, 16 * t * g]
    if not nhwc:
        out.append(4 * cols * g)
    return out


def winograd_input_tiling(x: WinogradInput, budget: int, machine: Machine, tiles_per_cpe: int = 1) -> WinogradTiling:
    """:class:`WinogradTiling` of the input transform ``x`` within ``budget`` bytes of LDM;
    ``tiles_per_cpe`` = m' wanted (L1138). Task cost: :func:`winograd_input_windows`, DMA times
    of ``machine``. Raises :class:`DoesNotFit`."""
    ro, co = x.h + x.pads[0] + x.pads[2] - 2, x.w + x.pads[1] + x.pads[3] - 2
    tr, tc = winograd_tiles(ro, co)

    def fit(t: int, g: int, full: bool) -> bool:
        return fits(winograd_input_buffers(x.w, t, g, x.nhwc), x.eb, budget)

    def cost(t: int, g: int, full: bool) -> float:
        get, put = winograd_input_windows(x, t, g, full)
        return get.seconds(x.eb, machine) + put.seconds(x.eb, machine)

    return _winograd_tiling(x.b, x.c, tr, tc, tiles_per_cpe, budget, fit, cost)


def winograd_output_windows(y: WinogradOutput, t: int, g: int, full_width: bool) -> tuple[DmaWindow, DmaWindow]:
    """(get, put) DMA windows of one output-transform task (``t`` tiles x ``g`` channels) of
    ``y``: m (16, p_rows, c) -> y (b, c, ro, co) (``nhwc``: (b, ro, co, c)), the mirror image of
    :func:`winograd_input_windows` (each task writes 2 output rows)."""
    b, c, ro, co, p_rows, nhwc = y.b, y.c, y.ro, y.co, y.p_rows, y.nhwc
    tr, tc = winograd_tiles(ro, co)
    wc, rows = min(co, 2 * t), min(2, ro)
    cs = chunk_starts(c, g)
    get = _transformed_window(p_rows, c, tr, tc, t, g)
    ros = [min(2 * r, ro - rows) for r in range(tr)]  # first output row per tile row
    if nhwc:
        put = _window((b, ro, co, c), [1, rows, wc, g], 1, [r * co * c + c0 for r in ros for c0 in cs])
    elif full_width:
        put = _window((b, c, ro, co), [1, g, rows, co], 1, [(c0 * ro + r) * co for r in ros for c0 in cs])
    else:
        put = _window((b, c, ro, co), [1, g, 1, wc], rows, [(c0 * ro + r) * co for r in ros for c0 in cs])
    return get, put


def winograd_output_buffers(t: int, g: int, nhwc: bool = False) -> list[int]:
    """Element counts of an output-transform task's LDM buffers: the (16, t, g) tiles of m, the
    (2, 2t, g) outputs and (NCHW) their channels-first copy."""
    out = [16 * t * g, 2 * 2 * t * g]
    if not nhwc:
        out.append(2 * 2 * t * g)
    return out


def winograd_output_tiling(y: WinogradOutput, budget: int, machine: Machine) -> WinogradTiling:
    """:class:`WinogradTiling` of the output transform ``y`` within ``budget`` bytes of LDM: t
    for >= 64 tasks when the tile rows allow, at least :data:`MIN_TILES_OUT`. Task cost:
    :func:`winograd_output_windows`, DMA times of ``machine``. Raises :class:`DoesNotFit`."""
    tr, tc = winograd_tiles(y.ro, y.co)
    want_t = _ceil(tc, max(1, _ceil(N_CPE, y.b * tr)))  # tiles per task for >= 64 tasks when possible
    want_t = max(want_t, min(tc, MIN_TILES_OUT))  # but NCHW rows of >= 8 outputs per DMA block

    def fit(t: int, g: int, full: bool) -> bool:
        return fits(winograd_output_buffers(t, g, y.nhwc), y.eb, budget)

    def cost(t: int, g: int, full: bool) -> float:
        get, put = winograd_output_windows(y, t, g, full)
        return get.seconds(y.eb, machine) + put.seconds(y.eb, machine)

    return _winograd_tiling(y.b, y.c, tr, tc, want_t, budget, fit, cost)


# --------------------------------------------------------------------------------------------
# Winograd filter transform (Algorithm 5 step 1, L1187)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WinogradFilterTasks:
    """A task transforms ``kk`` output channels x ``g`` input channels of 3x3 filters: either
    whole rows of N_i (g = N_i, kk consecutive output channels: one contiguous DMA in, one
    strided DMA of 16 blocks of kk*N_i out) or, when N_i is too large for LDM, g < N_i
    consecutive input channels of one output channel. Tasks ``(k-chunk, c-chunk)``, chunk starts
    :func:`chunk_starts`."""

    No: int
    Ni: int
    kk: int
    g: int

    @property
    def k_chunks(self) -> int:
        return _ceil(self.No, self.kk)

    @property
    def c_chunks(self) -> int:
        return _ceil(self.Ni, self.g)

    @property
    def tasks(self) -> int:
        return self.k_chunks * self.c_chunks


def winograd_filter_tasks(no: int, ni: int, eb: int, budget: int) -> WinogradFilterTasks:
    """:class:`WinogradFilterTasks` of w (no, ni, 3, 3) -> u (16, no, ni): as many filters per
    task as leave >= 64 tasks, within ``budget`` bytes of LDM (9 + 16 elements per filter)."""
    fmax = max(1, (budget - 2 * LDM_ALIGN) // ((9 + 16) * eb))
    fcap = max(1, min(fmax, _ceil(no * ni, N_CPE)))  # >= 64 tasks when possible
    if ni <= fcap:
        return WinogradFilterTasks(no, ni, max(1, min(no, fcap // ni)), ni)
    return WinogradFilterTasks(no, ni, 1, fcap)


def winograd_filter_windows(t: WinogradFilterTasks) -> tuple[DmaWindow, DmaWindow]:
    """(get, put) DMA windows of one filter-transform task: (kk, g, 3, 3) of w and (16, kk, g)
    of u, at every task's (k0, c0) chunk start."""
    starts = [(k0, c0) for k0 in chunk_starts(t.No, t.kk) for c0 in chunk_starts(t.Ni, t.g)]
    get = _window((t.No, t.Ni, 3, 3), [t.kk, t.g, 3, 3], 1, [(k0 * t.Ni + c0) * 9 for k0, c0 in starts])
    put = _window((16, t.No, t.Ni), [16, t.kk, t.g], 1, [k0 * t.Ni + c0 for k0, c0 in starts])
    return get, put
