"""``tile.im2col`` / ``tile.winograd_*`` -> per-CPE task loops of the ``loop`` dialect.

Part of ``convert-tile-to-loop`` (engineer E2). The memory-to-memory primitives of the tile
level are self-scheduled: their seed algorithms fix the per-CPE task decomposition, which this
module expands into ``scf.for`` loops of ``loop.dma_start`` / ``loop.dma_wait`` / ``loop.map``
on LDM buffers. Tasks are numbered ``q = 0 .. Q-1`` and dealt out cyclically: CPE ``id`` runs
``q = id, id + 64, ...`` (``scf.for %q = %id to Q step 64``).

NUMPY REFERENCES HERE, LOWERINGS BELOW.

numpy references of the loop-only map kinds (:data:`taihu.dialects.mapkind.LOOP_ONLY_KINDS`)
----------------------------------------------------------------------------------------------
:func:`map_reference` gives the exact semantics of ``loop.map im2col | winograd_filter |
winograd_input | winograd_output`` (used by the tests; loop-to-sw's micro-kernels must agree).
Transform matrices of F(2x2, 3x3): Lavin & Gray 2016 (algorithms.md §C4).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from taihu.dialects.mapkind import MapKind

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
