"""Differential tests of the GEMM / convolution lowering (graph_to_tile/{gemm,conv}.py).

Two levels, both against the numpy reference (``backends/reference``, rtol 1e-4, atol 1e-5 of
the lowering contract):

* **tile level** (always runs): ``convert-graph-to-tile`` output executed by the numpy tile
  evaluator (test/unit/tile_numpy.py, extended here with ``tile.gemm``, ``tile.im2col`` and the
  Winograd primitives). This checks every window, padding/clipping, blocking, epilogue and
  algorithm of the lowering exactly, including shapes chosen by hypothesis.
* **simulated** (``lower_to_swsim`` + the simulator): skipped, with the reason, while a
  downstream pass (tile-to-loop, loop-to-sw, the pipeline) cannot lower the module yet.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from taihu.backends.reference import run_module
from taihu.dialects import graph, tile
from taihu.dialects.mapkind import MapKind
from taihu.passes.conversion.graph_to_tile import ConvertGraphToTilePass
from taihu.test.unit.graph_builder import G

tile_numpy = pytest.importorskip("taihu.test.unit.tile_numpy", reason="tile-level numpy evaluator not available")

RTOL, ATOL = 1e-4, 1e-5

# ------------------------------------------------------------------------------------------
# tile-level evaluation of the primitives this lowering emits
# ------------------------------------------------------------------------------------------

_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)


def _geom(op: tile.Im2colOp):
    g = op.geometry()
    return g["kernel"], g["strides"], g["pads"], g["dilations"]


def _im2col(x: np.ndarray, kernel, strides, pads, dil) -> np.ndarray:
    n, c, h, w = x.shape
    kh, kw = kernel
    ho = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    wo = (w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    xp = np.zeros((n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]), x.dtype)
    xp[:, :, pads[0] : pads[0] + h, pads[1] : pads[1] + w] = x
    col = np.empty((c, kh, kw, n, ho, wo), x.dtype)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dil[0], j * dil[1]
            win = xp[:, :, r0 : r0 + strides[0] * (ho - 1) + 1 : strides[0], c0 : c0 + strides[1] * (wo - 1) + 1 : strides[1]]
            col[:, i, j] = win.transpose(1, 0, 2, 3)
    return col.reshape(c * kh * kw, n * ho * wo)


def _wino_input(x: np.ndarray, pads, out: np.ndarray) -> None:
    b, c, h, w = x.shape
    ro, co = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    tr, tc = -(-ro // 2), -(-co // 2)
    xp = np.zeros((b, c, 2 * tr + 2, 2 * tc + 2), np.float64)
    hh, ww = min(h, 2 * tr + 2 - pads[0]), min(w, 2 * tc + 2 - pads[1])
    xp[:, :, pads[0] : pads[0] + hh, pads[1] : pads[1] + ww] = x[:, :, :hh, :ww]
    d = np.empty((b, tr, tc, c, 4, 4))
    for i in range(tr):
        for j in range(tc):
            d[:, i, j] = xp[:, :, 2 * i : 2 * i + 4, 2 * j : 2 * j + 4]
    v = np.einsum("xi,btscij,yj->xybtsc", _BT, d, _BT).reshape(16, b * tr * tc, c)
    out[...] = 0
    out[:, : b * tr * tc] = v


def _wino_output(m: np.ndarray, y: np.ndarray) -> None:
    b, k, ro, co = y.shape
    tr, tc = -(-ro // 2), -(-co // 2)
    mm = m[:, : b * tr * tc].reshape(4, 4, b, tr, tc, k).astype(np.float64)
    t = np.einsum("ix,xybtsk,jy->btsikj", _AT, mm, _AT)  # (b, tr, tc, 2, k, 2)
    full = t.transpose(0, 4, 1, 3, 2, 5).reshape(b, k, 2 * tr, 2 * tc)
    y[...] = full[:, :, :ro, :co]


_orig_run_op = tile_numpy._run_op


def _run_op(op, env) -> None:
    if isinstance(op, tile.GemmOp):
        a, b, c = env[op.a], env[op.b], env[op.c]
        a = a.T if op.trans_a is not None else a
        b = b.T if op.trans_b is not None else b
        c[...] = c + a.astype(np.float64) @ b.astype(np.float64)
    elif isinstance(op, tile.Im2colOp):
        col = _im2col(env[op.input], *_geom(op))
        p = op.columns_per_image()
        if p is not None:  # each image's columns padded to p (not written: keep the buffer's)
            out = env[op.output].reshape(col.shape[0], -1, p)
            hw = out.shape[1] and col.shape[1] // out.shape[1]
            out[:, :, :hw] = col.reshape(col.shape[0], -1, hw)
        else:
            env[op.output][...] = col
    elif isinstance(op, tile.WinogradFilterOp):
        w = env[op.input]
        env[op.output][...] = np.einsum("ai,kcij,bj->abkc", _G, w.astype(np.float64), _G).reshape(16, w.shape[0], w.shape[1])
    elif isinstance(op, tile.WinogradInputOp):
        pads = tile._arr(op.pads) or (0, 0, 0, 0)
        _wino_input(env[op.input], pads, env[op.output])
    elif isinstance(op, tile.WinogradOutputOp):
        _wino_output(env[op.input], env[op.output])
        y = env[op.output]
        if op.bias is not None:
            y += env[op.bias].reshape(1, -1, 1, 1)
        if op.activation is not None:
            y[...] = tile_numpy.map_numpy(op.activation.data, [y], y.shape, y.dtype, {})
    else:
        _orig_run_op(op, env)


@contextlib.contextmanager
def _extended():
    tile_numpy._run_op = _run_op
    try:
        yield
    finally:
        tile_numpy._run_op = _orig_run_op


def lower_tile(module: ModuleOp, **options) -> ModuleOp:
    ctx = Context()
    ConvertGraphToTilePass(**options).apply(ctx, module)
    module.verify()
    return module


def check_tile(build, seed: int = 0, **options) -> ModuleOp:
    """Lower ``build(np.float32)`` and evaluate it at tile level; compare with the reference run
    of the fp64 twin ``build(np.float64)`` on the same (exactly representable) inputs, so the
    tolerance measures the lowering and not the rounding of an fp32 reference sum (the mesh GEMM
    accumulates in fp64, A7)."""
    g, out = build(np.float32)
    g64, out64 = build(np.float64)
    module = g.module(out)
    inputs = g.inputs(seed)
    ref = run_module(g64.module(out64), {k: v.astype(np.float64) for k, v in inputs.items()})
    lowered = lower_tile(module, **options)
    with _extended():
        got = tile_numpy.run_tile_module(lowered, inputs)
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    return lowered


def kernels(module: ModuleOp) -> list[tile.KernelOp]:
    return [o for o in module.walk() if isinstance(o, tile.KernelOp)]


# ------------------------------------------------------------------------------------------
# GEMM
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "m,k,n",
    [(300, 200, 500), (128, 64, 256), (1, 2048, 1000), (33, 7, 5), (520, 130, 40)],
)
def test_matmul_relu(m: int, k: int, n: int) -> None:
    def build(dt):
        g = G((m, k), (k, n), dtype=dt)
        return g, g(graph.ReluOp(g(graph.MatMulOp(*g.args))))

    lowered = check_tile(build)
    (kern,) = kernels(lowered)
    assert kern.attributes["taihu.algorithm"].data == "gemm"
    assert "graph.relu" in str(kern.attributes["taihu.fused"])


@pytest.mark.parametrize(
    "sa,sb",
    [((2, 3, 40, 50), (50, 60)), ((2, 40, 50), (2, 50, 60)), ((3, 1, 20, 30), (1, 2, 30, 10)), ((50,), (50, 7)), ((6, 50), (50,))],
)
def test_matmul_batch_and_vectors(sa, sb) -> None:
    def build(dt):
        g = G(sa, sb, dtype=dt)
        return g, g(graph.MatMulOp(*g.args))

    check_tile(build)


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("c_shape", [None, (70,), (1, 70), (90, 1), (90, 70), (), (1, 1)])
def test_gemm_fc(trans_a: bool, trans_b: bool, c_shape) -> None:
    m, k, n = 90, 100, 70
    sa = (k, m) if trans_a else (m, k)
    sb = (n, k) if trans_b else (k, n)
    shapes = [sa, sb] + ([c_shape] if c_shape is not None else [])
    def build(dt):
        g = G(*shapes, dtype=dt)
        return g, g(graph.GemmOp(*g.args, alpha=0.5, beta=2.0, trans_a=trans_a, trans_b=trans_b))

    check_tile(build)


@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm_fc_constant_weights_stored_for_the_plan(trans_b: bool) -> None:
    """Constant FC weights: the planner picks their storage order (free_trans_b: (K, N) needs a
    plain conversion into a vec-n B tile, (N, K) a transposing one but may block better); the
    kernel reads the copy the plan asks for, and the numerics hold either way."""
    m, k, n = 4, 256, 1000
    w = np.random.default_rng(3).standard_normal((n, k) if trans_b else (k, n))

    def build(dt):
        g = G((m, k), (n,), dtype=dt)
        wc = g.cst(w.astype(dt), "w")
        return g, g(graph.ReluOp(g(graph.GemmOp(g.args[0], wc, g.args[1], trans_b=trans_b))))

    import dataclasses

    from taihu.backends.model.conv import GemmShape, plan_gemm
    from taihu.target.machine import default_machine

    lowered = check_tile(build)
    (kern,) = [k for k in kernels(lowered) if k.attributes["taihu.algorithm"].data == "gemm"]
    (gemm,) = [o for o in kern.walk() if isinstance(o, tile.GemmOp)]
    mach = default_machine()
    mach = dataclasses.replace(mach, ldm_user_bytes=mach.ldm_user_bytes - 512)
    fixed_b = GemmShape(m, n, k, "f32", False, trans_b, bias_along="n", maps=1)
    free = plan_gemm(dataclasses.replace(fixed_b, const_b=True), mach)
    fixed = plan_gemm(fixed_b, mach)
    assert (gemm.trans_b is not None) == free.trans_b  # the kernel reads B in the plan's order
    assert free.cost.t_total <= fixed.cost.t_total


def test_gemm_f64_default_scalars() -> None:
    def build(dt):
        g = G((256, 64), (64, 128), (128,), dtype=np.float64)
        return g, g(graph.ReluOp(g(graph.GemmOp(*g.args))))

    lowered = check_tile(build)
    # fp64 operands in their natural layout go straight into the primitive's tiles
    allocs = [o.tile_type for o in lowered.walk() if isinstance(o, tile.AllocOp)]
    assert not any(str(t.element_type) == "f32" for t in allocs)


# ------------------------------------------------------------------------------------------
# Convolution
# ------------------------------------------------------------------------------------------


def conv_graph(n, c, h, w, m, kh, kw, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), group=1,
               bias=True, relu=True, const_w=False, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    shapes = [(n, c, h, w)]
    if not const_w:
        shapes.append((m, c // group, kh, kw))
    if bias:
        shapes.append((m,))
    g = G(*shapes, dtype=dtype)
    x = g.args[0]
    wv = g.args[1] if not const_w else g.cst(rng.standard_normal((m, c // group, kh, kw)).astype(np.float32), "w")
    bv = g.args[-1] if bias else None
    y = g(graph.Conv2dOp(x, wv, bv, strides=strides, pads=pads, dilations=dil, group=group), "conv")
    out = g(graph.ReluOp(y)) if relu else y
    return g, out


def algorithms_of(module: ModuleOp) -> set[str]:
    return {k.attributes["taihu.algorithm"].data for k in kernels(module)}


CONV_CASES = [
    # (n, c, h, w, m, kh, kw, strides, pads, dil, group)
    (32, 64, 4, 5, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),  # batch 32: C tiles grouped over images
    (1, 64, 9, 11, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (2, 64, 8, 8, 96, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (2, 64, 9, 9, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (1, 64, 12, 10, 64, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1),
    (1, 64, 11, 11, 64, 5, 5, (1, 1), (2, 1, 2, 1), (1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("algorithm", ["implicit", "im2col"])
def test_conv_algorithms(case, algorithm: str) -> None:
    n, c, h, w, m, kh, kw, st_, pads, dil, group = case
    lowered = check_tile(lambda dt: conv_graph(n, c, h, w, m, kh, kw, st_, pads, dil, group, dtype=dt),
                         conv_algorithm=algorithm)
    assert algorithm in algorithms_of(lowered)


@pytest.mark.parametrize(
    "n,c,h,w,m,pads",
    [(1, 64, 8, 8, 64, (1, 1, 1, 1)), (2, 16, 7, 9, 24, (1, 1, 1, 1)), (1, 8, 6, 5, 8, (0, 0, 0, 0)), (2, 32, 10, 6, 40, (0, 1, 2, 0))],
)
@pytest.mark.parametrize("const_w", [False, True])
def test_conv_winograd(n, c, h, w, m, pads, const_w: bool) -> None:
    lowered = check_tile(lambda dt: conv_graph(n, c, h, w, m, 3, 3, pads=pads, const_w=const_w, dtype=dt),
                         conv_algorithm="winograd")
    names = {k.kernel_name.data for k in kernels(lowered)}
    assert ("conv_filter" in names) != const_w  # constant weights are transformed at compile time
    assert {"conv_input", "conv", "conv_output"} <= names
    assert "conv_bias" not in names  # bias + relu applied by the output transform in LDM
    (out,) = [o for o in lowered.walk() if isinstance(o, tile.WinogradOutputOp)]
    assert out.bias is not None and out.activation is not None


@pytest.mark.parametrize(
    "case",
    [
        (1, 3, 32, 32, 16, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),  # conv1-like, channels < 64
        (2, 3, 35, 35, 8, 11, 11, (4, 4), (2, 2, 2, 2), (1, 1), 1),  # AlexNet conv1-like
        (1, 32, 10, 10, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 32),  # depthwise
        (2, 16, 9, 9, 24, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 4),  # grouped, strided
        (1, 8, 12, 12, 8, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 2),  # grouped, dilated
    ],
)
def test_conv_small_channels_and_groups_auto(case) -> None:
    n, c, h, w, m, kh, kw, st_, pads, dil, group = case
    lowered = check_tile(lambda dt: conv_graph(n, c, h, w, m, kh, kw, st_, pads, dil, group, dtype=dt))
    assert "implicit" not in algorithms_of(lowered)


@pytest.mark.parametrize("act", ["sigmoid", "clip"])
def test_conv_winograd_epilogue_in_output_transform_or_kernel(act: str) -> None:
    """A parameter-less activation (sigmoid) is applied by the output transform with the bias;
    one with parameters (clip) keeps the separate in-place NAME_bias kernel."""
    def build(dt):
        rng = np.random.default_rng(3)
        g = G((1, 64, 6, 6), (64,), dtype=dt)
        w = g.cst(rng.standard_normal((64, 64, 3, 3)).astype(np.float32), "w")
        y = g(graph.Conv2dOp(g.args[0], w, g.args[1], pads=(1, 1, 1, 1)), "conv")
        out = g(graph.SigmoidOp(y)) if act == "sigmoid" else g(graph.ClipOp(y, min=-1.0, max=2.0))
        return g, out

    lowered = check_tile(build, conv_algorithm="winograd")
    names = {k.kernel_name.data for k in kernels(lowered)}
    (out,) = [o for o in lowered.walk() if isinstance(o, tile.WinogradOutputOp)]
    if act == "sigmoid":
        assert "conv_bias" not in names and out.bias is not None and out.activation.data == MapKind.SIGMOID
    else:
        assert "conv_bias" in names and out.bias is None and out.activation is None


def test_conv_constant_weights_implicit_relayout_at_compile_time() -> None:
    # C = 68 (not a multiple of 8): the per-tap implicit form, weights re-laid at compile time
    lowered = check_tile(lambda dt: conv_graph(2, 68, 6, 6, 64, 3, 3, pads=(1, 1, 1, 1), const_w=True, dtype=dt),
                         conv_algorithm="implicit")
    names = {k.kernel_name.data for k in kernels(lowered)}
    assert names == {"conv"}  # no runtime weights kernel


#: (n, c, h, w, m, kh, kw, strides, pads, dil): shapes the unfolded implicit convolution runs
#: (constant weights, Wo % 4 == 0); vec m (M >= 128) and vec n (Wo % 16 == 0), 1x1 and 3x3,
#: strides, asymmetric pads, dilation, a partial last block of 8 output rows, several K blocks.
UNFOLD_CASES = [
    (1, 64, 10, 12, 128, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (2, 64, 9, 16, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),  # vec n (M = 64), 2 images, 9 rows
    (1, 64, 16, 16, 128, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1)),  # 1x1 stride 2
    (1, 72, 13, 8, 128, 3, 3, (2, 2), (1, 0, 2, 1), (1, 1)),  # stride 2, asymmetric pads
    (1, 64, 12, 12, 128, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2)),  # dilation 2
    (1, 64, 9, 8, 128, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1)),  # 5x5
    (1, 64, 7, 7, 128, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),  # Wo = 7: rows padded to 8 + relayout
    (2, 64, 14, 14, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1)),  # vec n, Wo = 7 padded to 16
]


@pytest.mark.parametrize("case", UNFOLD_CASES)
def test_conv_implicit_unfold(case) -> None:
    """Constant weights: ``implicit`` is the unfolded form (tile.unfold + one SUMMA over
    channels x taps per K block), weights re-laid at compile time (no weights kernel)."""
    n, c, h, w, m, kh, kw, st_, pads, dil = case
    lowered = check_tile(lambda dt: conv_graph(n, c, h, w, m, kh, kw, st_, pads, dil, const_w=True, dtype=dt),
                         conv_algorithm="implicit")
    kern = next(k for k in kernels(lowered) if k.kernel_name.data == "conv")
    assert "variant=unfold" in kern.attributes["taihu.blocking"].data
    assert any(isinstance(o, tile.UnfoldOp) for o in kern.walk())
    wo = (w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // st_[1] + 1
    names = {k.kernel_name.data for k in kernels(lowered)}
    assert ("conv_relayout" in names) == (wo % 4 != 0 or (m < 128 and wo % 16 != 0))


def test_conv_implicit_unfold_several_k_blocks() -> None:
    """A K block smaller than C (forced through the planner's LDM budget): the weight tile is
    streamed (double-buffered), C accumulates over the blocks."""
    from taihu.backends.model import unfold_conv
    from taihu.target.machine import default_machine

    s_ = unfold_conv.ConvShape(1, 256, 8, 8, 128, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True)
    assert unfold_conv.plan_unfold(s_, default_machine()).cb < 256
    lowered = check_tile(lambda dt: conv_graph(1, 256, 8, 8, 128, 3, 3, pads=(1, 1, 1, 1), const_w=True, dtype=dt),
                         conv_algorithm="implicit")
    (kern,) = kernels(lowered)
    assert "variant=unfold" in kern.attributes["taihu.blocking"].data


def test_conv_no_bias_no_relu_f64() -> None:
    def build(dt):
        g = G((1, 64, 6, 7), (64, 64, 3, 3), dtype=np.float64)
        return g, g(graph.Conv2dOp(*g.args, pads=(1, 1, 1, 1)))

    for alg in ("implicit", "im2col", "winograd"):
        check_tile(build, conv_algorithm=alg)


@pytest.mark.parametrize(
    "algorithm,case,message",
    [
        ("implicit", (1, 32, 8, 8, 64, 3, 3, (1, 1), 1), "needs >= 64 input and output channels"),
        ("implicit", (1, 64, 8, 8, 64, 3, 3, (1, 1), 2), "needs group = 1"),
        ("winograd", (1, 64, 8, 8, 64, 5, 5, (1, 1), 1), "needs a 3x3 kernel"),
        ("winograd", (1, 64, 8, 8, 64, 3, 3, (2, 2), 1), "needs stride 1"),
    ],
)
def test_forced_inapplicable_algorithm_is_a_diagnostic(algorithm: str, case, message: str) -> None:
    n, c, h, w, m, kh, kw, st_, group = case
    g, out = conv_graph(n, c, h, w, m, kh, kw, st_, group=group)
    with pytest.raises(PassFailedException, match=f"graph.conv2d: conv-algorithm={algorithm}: .*{message}"):
        lower_tile(g.module(out), conv_algorithm=algorithm)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 2),
    c=st.sampled_from([3, 8, 64, 72]),
    hw=st.tuples(st.integers(5, 12), st.integers(5, 12)),
    m=st.sampled_from([8, 64, 80]),
    k=st.sampled_from([1, 3, 5]),
    stride=st.integers(1, 2),
    pad=st.integers(0, 2),
    dil=st.integers(1, 2),
    algorithm=st.sampled_from(["auto", "implicit", "im2col", "winograd"]),
    seed=st.integers(0, 2**16),
)
def test_conv_random_shapes(n, c, hw, m, k, stride, pad, dil, algorithm, seed) -> None:
    h, w = hw
    if h + 2 * pad < dil * (k - 1) + 1 or w + 2 * pad < dil * (k - 1) + 1:
        return
    try:
        check_tile(lambda dt: conv_graph(n, c, h, w, m, k, k, (stride, stride), (pad,) * 4, (dil, dil), seed=seed, dtype=dt),
                   seed=seed, conv_algorithm=algorithm)
    except PassFailedException as e:
        assert algorithm in ("implicit", "winograd") and "conv-algorithm" in str(e)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 300), k=st.integers(1, 300), n=st.integers(1, 300), seed=st.integers(0, 2**16))
def test_matmul_random_shapes(m, k, n, seed) -> None:
    def build(dt):
        g = G((m, k), (k, n), dtype=dt)
        return g, g(graph.MatMulOp(*g.args))

    check_tile(build, seed=seed)


# ------------------------------------------------------------------------------------------
# LSTM (Algorithm 6)
# ------------------------------------------------------------------------------------------


def lstm_graph(dtype, seq=5, batch=3, inp=20, hidden=24, const_b=False, init=True):
    rng = np.random.default_rng(0)
    shapes = [(seq, batch, inp), (1, 4 * hidden, inp), (1, 4 * hidden, hidden)]
    if not const_b:
        shapes.append((1, 8 * hidden))
    if init:
        shapes += [(1, batch, hidden), (1, batch, hidden)]
    g = G(*shapes, dtype=dtype)
    x, w, r = g.args[:3]
    b = g.cst(rng.standard_normal((1, 8 * hidden)).astype(np.float32), "b") if const_b else g.args[3]
    op = graph.LSTMOp(x, w, r, b, g.args[-2] if init else None, g.args[-1] if init else None, hidden_size=hidden)
    g.block.add_op(op)
    op.results[0].name_hint = "lstm"
    return g, op.results


def check_tile_multi(build, seed: int = 0, **options) -> ModuleOp:
    g, outs = build(np.float32)
    g64, outs64 = build(np.float64)
    inputs = g.inputs(seed)
    ref = run_module(g64.module(*outs64), {k: v.astype(np.float64) for k, v in inputs.items()})
    lowered = lower_tile(g.module(*outs), **options)
    with _extended():
        got = tile_numpy.run_tile_module(lowered, inputs)
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    return lowered


@pytest.mark.parametrize(
    "kw,kernels_expected",
    [
        ({}, ["lstm_bias", "lstm_x", "lstm"]),
        ({"const_b": True, "init": False}, ["lstm_x", "lstm"]),
        ({"seq": 3, "batch": 40, "inp": 50, "hidden": 300}, ["lstm_bias", "lstm_x", "lstm"]),
    ],
)
def test_lstm(kw, kernels_expected) -> None:
    lowered = check_tile_multi(lambda dt: lstm_graph(dt, **kw))
    assert [k.kernel_name.data for k in kernels(lowered)] == kernels_expected


def test_lstm_state_too_large_is_a_diagnostic() -> None:
    """H = 1024 streams R_j in blocks; a hidden size whose fp64 state alone does not fit LDM fails."""
    g, outs = lstm_graph(np.float32, seq=2, batch=2, inp=8, hidden=6000)
    with pytest.raises(PassFailedException, match="graph.lstm: hidden_size 6000: the LDM-resident recurrence state"):
        lower_tile(g.module(*outs))


# ------------------------------------------------------------------------------------------
# Simulated (full pipeline); skipped while a downstream pass is missing
# ------------------------------------------------------------------------------------------


def _simulate(module: ModuleOp, inputs, **options):
    from taihu.backends.sim.runner import simulate
    from taihu.passes.pipelines import lower_to_swsim

    lower_to_swsim(module, **options)
    return simulate(module, inputs=inputs)


SIM_CASES = [
    ("matmul", None),
    ("lstm", None),
    ("implicit", (1, 64, 6, 8, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ("im2col", (1, 16, 6, 6, 16, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1)),
    ("winograd", (1, 16, 6, 6, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    # unfolded implicit convolution (constant weights): vec m, 3x3 with a partial row block
    ("implicit_unfold", (1, 64, 10, 12, 128, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1)),
    # vec n, two images, stride 2 with asymmetric pads
    ("implicit_unfold", (2, 64, 9, 32, 64, 3, 3, (2, 2), (1, 0, 2, 1), (1, 1), 1)),
    # Wo = 7: output rows padded to 8 in LDM, relayout kernel
    ("implicit_unfold", (1, 128, 7, 7, 128, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1)),
]


@pytest.mark.parametrize("algorithm,case", SIM_CASES)
def test_simulated_matches_reference(algorithm: str, case) -> None:
    if algorithm == "lstm":
        g, outs = lstm_graph(np.float32, seq=3, batch=2, inp=8, hidden=16)
        module = g.module(*outs)
        inputs = g.inputs(1)
        ref = run_module(module.clone(), inputs)
        res = _simulate(module, inputs)
        for k, v in ref.items():
            np.testing.assert_allclose(res.outputs[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
        return
    if case is None:
        g = G((64, 40), (40, 128))
        out = g(graph.ReluOp(g(graph.MatMulOp(*g.args))))
        opts = {}
    else:
        n, c, h, w, m, kh, kw, st_, pads, dil, group = case
        unfold = algorithm == "implicit_unfold"
        g, out = conv_graph(n, c, h, w, m, kh, kw, st_, pads, dil, group, const_w=unfold)
        opts = {"conv_algorithm": "implicit" if unfold else algorithm}
    module = g.module(out)
    inputs = g.inputs(1)
    ref = run_module(module.clone(), inputs)
    res = _simulate(module, inputs, **opts)
    outs = res.outputs if hasattr(res, "outputs") else res[0]
    for k, v in ref.items():
        np.testing.assert_allclose(outs[k], v, rtol=RTOL, atol=ATOL, err_msg=k)


OVERLAP_CASES = [
    # (n, c, h, w, m, kh, kw, strides, pads, const_w, vec): 7x7 maps, the overlapping-distribution
    # GEMM (model/overlap_gemm.py): vec m on the (K, M)-stored constant weights, x read directly
    ((1, 64, 7, 7, 2048, 1, 1, (1, 1), (0, 0, 0, 0)), True, "m"),
    # vec n on a 1x1 im2col copy whose image columns are padded to 52; two K blocks
    ((1, 64, 7, 7, 256, 1, 1, (1, 1), (0, 0, 0, 0)), False, "n"),
    # 3x3 pad 1 through im2col, vec n
    ((1, 128, 7, 7, 128, 3, 3, (1, 1), (1, 1, 1, 1)), True, "n"),
    # the 16 Winograd GEMMs (P = 49 tile positions padded to 64 rows, U^T stored (16, C, M))
    ((1, 64, 14, 14, 128, 3, 3, (1, 1), (1, 1, 1, 1)), True, "n", "winograd"),
]


@pytest.mark.parametrize("case,const_w,vec,algorithm", [c if len(c) == 4 else (*c, "auto") for c in OVERLAP_CASES])
def test_simulated_overlapping_gemm_matches_reference(case, const_w: bool, vec: str, algorithm: str) -> None:
    """The planner picks the overlapping-distribution GEMM (mixed precision, broadcast B
    prefetched over K, split over the DMA buses) for these small maps; simulated numerics."""
    n, c, h, w, m, kh, kw, st_, pads = case
    g, out = conv_graph(n, c, h, w, m, kh, kw, st_, pads, (1, 1), 1, const_w=const_w)
    module = g.module(out)
    inputs = g.inputs(1)
    ref = run_module(module.clone(), inputs)
    g2, out2 = conv_graph(n, c, h, w, m, kh, kw, st_, pads, (1, 1), 1, const_w=const_w)
    tiled = lower_tile(g2.module(out2), conv_algorithm=algorithm)
    blk = [k.attributes["taihu.blocking"].data for k in kernels(tiled) if "taihu.blocking" in k.attributes]
    assert any("overlap" in b and f"vec={vec}" in b for b in blk), blk
    res = _simulate(module, inputs, conv_algorithm=algorithm)
    for k, v in ref.items():
        np.testing.assert_allclose(res.outputs[k], v, rtol=RTOL, atol=ATOL, err_msg=k)


@pytest.mark.parametrize("m,k,n", [(128, 512, 128), (256, 256, 256)])
def test_model_tracks_the_simulator(m: int, k: int, n: int) -> None:
    """The analytic model of the GEMM kernel (backends/model/conv.plan_gemm, which also picks
    the blocking) against the simulated kernel the pipeline makes of it; the error is printed
    (pytest -s) and must stay within 10 %."""
    from taihu.backends.model.conv import GemmShape, plan_gemm

    g = G((m, k), (k, n), dtype=np.float64)
    module = g.module(g(graph.MatMulOp(*g.args)))
    res = _simulate(module, g.inputs(0))
    sim = res.report["total_cycles"]
    plan = plan_gemm(GemmShape(m, n, k, "f64"), res.engine.machine)
    model = plan.cost.t_total * res.engine.machine.f_clk_ghz * 1e9
    err = (model - sim) / sim
    print(f"GEMM {m}x{k}x{n} f64 blocking ({plan.bm},{plan.bn},{plan.bk}): sim {sim} cycles, model {model:.0f} ({100 * err:+.1f} %)")
    assert abs(err) < 0.10
