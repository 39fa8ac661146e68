"""Graph modules exercising every memory-bound op lowered by ``convert-graph-to-tile``: one
builder per op and interesting shape (odd sizes, broadcasting, pools with pads / ceil_mode /
strides 1 and 2, softmax axes, concat axes, fusion chains ...).

Shared by the tile-level numerics test (``test/unit/test_graph_to_tile.py``, numpy evaluation
of the tile IR) and the end-to-end differential test (``test/integration/test_lowering_ops.py``,
lowered to swsim and simulated). ``CASES[name]()`` returns a :class:`G` with its outputs set;
``g.module(*outs)`` builds the module, ``g.inputs(seed)`` random inputs, ``OPTIONS.get(name, {})``
the convert-graph-to-tile options of the case.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from taihu.dialects import graph
from taihu.test.unit.graph_builder import G

Case = Callable[[], tuple[G, list[SSAValue]]]

#: pass options of convert-graph-to-tile per case (default: none)
OPTIONS: dict[str, dict[str, object]] = {
    # planes larger than the (reduced) LDM budget: chunked reduce_sum + add + mul path
    "global_avg_pool_chunked": {"ldm_budget": 2048},
    # LRN at batch 1 with the channels in chunks: halo input tiles (pad 0.0), lrn halo form
    "lrn_channel_chunks": {"ldm_budget": 640},
    # pool row tiles: top pad rows by the DMA (pad), column pads / ceil tail by the map's pads
    "avg_pool_k3s2_ceil_rows": {"ldm_budget": 1024},
}


def unary(op: type, shape: tuple[int, ...], **kw) -> Case:
    def build():
        g = G(shape)
        return g, [g(op(g.args[0], **kw), "y")]
    return build


def binary(op: type, a: tuple[int, ...], b: tuple[int, ...]) -> Case:
    def build():
        g = G(a, b)
        return g, [g(op(*g.args), "y")]
    return build


def pool(op: type, shape: tuple[int, ...], **kw) -> Case:
    def build():
        g = G(shape)
        return g, [g(op(g.args[0], **kw), "pool")]
    return build


def _bn() -> tuple[G, list[SSAValue]]:
    g = G((2, 5, 6, 7))
    rng = np.random.default_rng(1)
    c = [g.cst(v, n) for v, n in ((rng.uniform(0.5, 2, 5), "gamma"), (rng.standard_normal(5), "beta"),
                                  (rng.standard_normal(5), "mean"), (rng.uniform(0.5, 2, 5), "var"))]
    bn = g(graph.BatchNormOp(g.args[0], *c), "bn")
    return g, [g(graph.ReluOp(bn), "relu")]


def _chain() -> tuple[G, list[SSAValue]]:
    """add -> relu -> clip (fused into the add kernel) -> max_pool -> flatten."""
    g = G((1, 6, 9, 9), (1, 6, 9, 9))
    a = g(graph.AddOp(*g.args), "add")
    r = g(graph.ReluOp(a), "relu")
    c = g(graph.ClipOp(r, min=0.0, max=1.5), "clip")
    p = g(graph.MaxPoolOp(c, kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)), "pool")
    return g, [g(graph.FlattenOp(p), "flat")]


def _fanout() -> tuple[G, list[SSAValue]]:
    """A value with two uses is not fused; both consumers read it."""
    g = G((3, 70))
    a = g(graph.SigmoidOp(g.args[0]), "sig")
    return g, [g(graph.ReluOp(a), "r"), g(graph.TanhOp(a), "t")]


def _const_operand() -> tuple[G, list[SSAValue]]:
    g = G((4, 33))
    w = g.cst(np.linspace(-1, 1, 33).reshape(1, 33), "w")
    return g, [g(graph.MulOp(g.args[0], w), "y")]


def _sum() -> tuple[G, list[SSAValue]]:
    g = G((3, 1, 5), (4, 5), (3, 4, 1))
    return g, [g(graph.SumOp(g.args), "y")]


def _concat(axis: int, shapes: list[tuple[int, ...]]) -> Case:
    def build():
        g = G(*shapes)
        return g, [g(graph.ConcatOp(g.args, axis=axis), "cat")]
    return build


def _concat_inplace() -> tuple[G, list[SSAValue]]:
    """Channel concat at batch 1: relu/pool outputs are written into the output slices by their
    producers (no copy); the graph input and the fanned-out sigmoid are copied; then a nested
    concat of the result."""
    g = G((1, 3, 4, 5), (1, 2, 4, 5), (1, 4, 4, 5))
    a = g(graph.ReluOp(g.args[0]), "a")
    b = g(graph.MaxPoolOp(g.args[1], kernel_shape=(3, 3), pads=(1, 1, 1, 1)), "b")
    s = g(graph.SigmoidOp(g.args[0]), "s")
    cat = g(graph.ConcatOp([a, b, g.args[2], s], axis=1), "cat")
    t = g(graph.TanhOp(s), "t")
    cat2 = g(graph.ConcatOp([cat, t], axis=1), "cat2")
    return g, [cat2, s]


def _residual() -> tuple[G, list[SSAValue]]:
    """Residual sums fused into the later producer's store (store_fused): relu(tanh(x0) + x1)
    in one kernel; sum(tanh(x0), sigmoid(x2)) absorbed by the sigmoid kernel (tanh's output
    is computed first); a fanned-out value is not absorbed."""
    g = G((2, 3, 5, 7), (2, 3, 5, 7), (2, 3, 5, 7))
    a = g(graph.TanhOp(g.args[0]), "a")
    r = g(graph.ReluOp(g(graph.AddOp(a, g.args[1]), "s")), "r")
    c = g(graph.SigmoidOp(g.args[2]), "c")
    t = g(graph.SumOp([g(graph.TanhOp(g.args[0]), "a2"), c]), "t")
    f = g(graph.LeakyReluOp(g.args[1], alpha=0.1), "f")
    u = g(graph.AddOp(f, r), "u")
    return g, [r, t, u, f]


def _gemm_residual() -> tuple[G, list[SSAValue]]:
    """An FC layer whose output feeds a residual add + relu: fused into the GEMM's C store (the
    residual block loaded at the block start, added after the f64 -> f32 convert)."""
    g = G((130, 70), (130, 40))
    w = g.cst(np.random.default_rng(3).standard_normal((70, 40)).astype(np.float32), "w")
    r = g(graph.SigmoidOp(g.args[1]), "r")
    y = g(graph.GemmOp(g.args[0], w), "fc")
    return g, [g(graph.ReluOp(g(graph.AddOp(r, y), "sum")), "out")]


def _views() -> tuple[G, list[SSAValue]]:
    g = G((2, 3, 4))
    r = g(graph.ReshapeOp(g.args[0], (6, 4)), "r")
    u = g(graph.UnsqueezeOp(r, axes=(0,)), "u")
    d = g(graph.DropoutOp(u), "d")
    return g, [g(graph.LeakyReluOp(d, alpha=0.2), "y")]


def _sqrt_of_sigmoid() -> tuple[G, list[SSAValue]]:
    """sqrt of positive values (sigmoid), fused into one kernel."""
    g = G((3, 50))
    return g, [g(graph.SqrtOp(g(graph.SigmoidOp(g.args[0]), "s")), "y")]


def _gelu() -> tuple[G, list[SSAValue]]:
    """GELU as ONNX's Gelu-20 defines it (and its opset-13 exports write it): 0.5 x (1 + erf(x / sqrt 2))."""
    g = G((2, 37, 5))
    x = g.args[0]
    e = g(graph.ErfOp(g(graph.MulOp(x, g.cst(np.array([2 ** -0.5], np.float32), "rs2")), "xs")), "e")
    h = g(graph.AddOp(e, g.cst(np.array([1.0], np.float32), "one")), "h")
    return g, [g(graph.MulOp(g(graph.MulOp(x, h), "xh"), g.cst(np.array([0.5], np.float32), "half")), "y")]


CASES: dict[str, Case] = {
    "erf": unary(graph.ErfOp, (2, 65, 3)),
    "sqrt_of_sigmoid": _sqrt_of_sigmoid,
    "gelu_erf": _gelu,
    "relu_odd": unary(graph.ReluOp, (3, 7, 11)),
    "sigmoid_long": unary(graph.SigmoidOp, (70001,)),
    "tanh": unary(graph.TanhOp, (2, 65, 3)),
    "clip": unary(graph.ClipOp, (5, 129), min=-0.5, max=0.7),
    "clip_lo_only": unary(graph.ClipOp, (5, 9), min=0.0),
    "leaky_relu": unary(graph.LeakyReluOp, (4, 100), alpha=0.1),
    "add_same": binary(graph.AddOp, (2, 3, 17, 5), (2, 3, 17, 5)),
    "add_channel_bias": binary(graph.AddOp, (2, 8, 5, 5), (1, 8, 1, 1)),
    "sub_row": binary(graph.SubOp, (6, 40), (40,)),
    "mul_scalar": binary(graph.MulOp, (3, 10), (1,)),
    "mul_se": binary(graph.MulOp, (1, 16, 1, 1), (1, 16, 7, 7)),
    "div_outer": binary(graph.DivOp, (5, 1), (1, 9)),
    "add_large_plane": binary(graph.AddOp, (1, 4, 112, 112), (1, 4, 1, 1)),
    "sum3": _sum,
    "const_operand": _const_operand,
    "batch_norm_relu": _bn,
    "max_pool_k3s2p1": pool(graph.MaxPoolOp, (1, 4, 15, 15), kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
    "max_pool_k2s2_ceil": pool(graph.MaxPoolOp, (2, 3, 7, 9), kernel_shape=(2, 2), strides=(2, 2), ceil_mode=True),
    "max_pool_k3s1": pool(graph.MaxPoolOp, (1, 3, 6, 8), kernel_shape=(3, 3)),
    "max_pool_k3s1p1_planes": pool(graph.MaxPoolOp, (1, 70, 6, 6), kernel_shape=(3, 3), pads=(1, 1, 1, 1)),
    "avg_pool_k3s2_ceil_rows": pool(graph.AvgPoolOp, (1, 3, 40, 13), kernel_shape=(3, 3), strides=(2, 2),
                                    pads=(1, 0, 0, 1), ceil_mode=True),
    "max_pool_1d": pool(graph.MaxPoolOp, (2, 3, 11), kernel_shape=(3,), strides=(2,), pads=(1, 1)),
    "avg_pool_k3s2p1_ceil": pool(graph.AvgPoolOp, (2, 3, 7, 9), kernel_shape=(3, 3), strides=(2, 2),
                                 pads=(1, 1, 1, 1), ceil_mode=True),
    "avg_pool_include_pad": pool(graph.AvgPoolOp, (1, 5, 8, 8), kernel_shape=(3, 2), strides=(1, 2),
                                 pads=(1, 0, 1, 1), count_include_pad=True),
    "avg_pool_k2s2": pool(graph.AvgPoolOp, (1, 70, 4, 6), kernel_shape=(2, 2), strides=(2, 2)),
    "global_avg_pool": unary(graph.GlobalAvgPoolOp, (2, 65, 5, 3)),
    "global_avg_pool_chunked": unary(graph.GlobalAvgPoolOp, (1, 3, 20, 20)),
    "softmax_last": unary(graph.SoftmaxOp, (3, 10), axis=-1),
    "softmax_axis1_of3": unary(graph.SoftmaxOp, (2, 5, 3), axis=1),
    "softmax_axis0": unary(graph.SoftmaxOp, (4, 6), axis=0),
    "lrn": unary(graph.LRNOp, (1, 7, 3, 4), size=3, alpha=1e-3, beta=0.75, bias=2.0),
    "lrn_channel_chunks": unary(graph.LRNOp, (1, 40, 9, 9), size=5, alpha=1e-2, beta=0.75, bias=1.0),
    "lrn_split_inner_even": unary(graph.LRNOp, (2, 12, 10, 13), size=4, alpha=1e-2, beta=0.5, bias=2.0),
    "lrn_inner_past_end": unary(graph.LRNOp, (1, 8, 5, 15), size=3, alpha=1e-2, beta=0.75, bias=1.0),
    "lrn_channel_blocks": unary(graph.LRNOp, (1, 96, 5, 5), size=5, alpha=1e-2, beta=0.75, bias=1.0),
    "lrn_channel_blocks_ragged": unary(graph.LRNOp, (2, 130, 3, 3), size=4, alpha=1e-2, beta=1.5, bias=2.0),
    "lrn_channel_blocks_halo_gt_q": unary(graph.LRNOp, (1, 64, 4, 4), size=5, alpha=1e-2, beta=0.75, bias=1.0),
    "lrn_many_images": unary(graph.LRNOp, (70, 6, 2, 3), size=3, alpha=1e-2, beta=1.0, bias=1.0),
    "concat_axis1": _concat(1, [(2, 3, 4), (2, 5, 4), (2, 1, 4)]),
    "concat_axis0": _concat(0, [(2, 3), (1, 3)]),
    "concat_inplace": _concat_inplace,
    "residual_fused": _residual,
    "gemm_residual": _gemm_residual,
    "concat_last": _concat(-1, [(3, 2), (3, 7)]),
    "pad_mixed": unary(graph.PadOp, (2, 3, 4), pads=(0, 1, -1, 1, 2, 0), value=0.5),
    "pad_spatial": unary(graph.PadOp, (1, 3, 5, 5), pads=(0, 0, 2, 1, 0, 0, 1, 2)),
    "transpose_021": unary(graph.TransposeOp, (3, 4, 5), perm=(0, 2, 1)),
    "transpose_rev": unary(graph.TransposeOp, (3, 4, 5)),
    "layout_nchw_nhwc": unary(graph.LayoutTransformOp, (1, 6, 5, 7), from_layout="NCHW", to_layout="NHWC"),
    "layout_nchw_nhwc_split_hw": unary(graph.LayoutTransformOp, (1, 20, 13, 11), from_layout="NCHW", to_layout="NHWC"),
    "layout_nhwc_nchw_split_hw": unary(graph.LayoutTransformOp, (1, 13, 11, 20), from_layout="NHWC", to_layout="NCHW"),
    "transpose_3d_ragged": unary(graph.TransposeOp, (3, 70, 9), perm=(2, 0, 1)),
    "views": _views,
    "fused_chain": _chain,
    "fanout": _fanout,
}
