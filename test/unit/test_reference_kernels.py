"""Differential tests: taihu.backends.reference.kernels vs onnxruntime and ONNX's ReferenceEvaluator.

Every kernel is compared with the same computation expressed as a one-node ONNX model (built
with onnx.helper) on hypothesis-drawn shapes and attributes. Sizes are bounded so the whole file
runs in a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from taihu.backends.reference import kernels as K

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_ONNX_TYPE = {
    np.float16: TensorProto.FLOAT16, np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
    np.int64: TensorProto.INT64,
}
_TOL = {np.float16: (2e-2, 2e-2), np.float32: (1e-4, 1e-5), np.float64: (1e-10, 1e-12)}

_SESSION_OPTIONS = ort.SessionOptions()
_SESSION_OPTIONS.intra_op_num_threads = 1
_SESSION_OPTIONS.inter_op_num_threads = 1
_SESSION_OPTIONS.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
_SESSION_OPTIONS.log_severity_level = 3


def one_node_model(op_type, inputs, n_outputs=1, opset=13, **attrs):
    """A model with one node; ``inputs`` is a list of arrays (None = omitted optional input)."""
    names = [f"in{i}" if a is not None else "" for i, a in enumerate(inputs)]
    graph_inputs = [
        helper.make_tensor_value_info(n, _ONNX_TYPE[a.dtype.type], a.shape)
        for n, a in zip(names, inputs)
        if a is not None
    ]
    outs = [f"out{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, **attrs)
    out_type = next(a for a in inputs if a is not None).dtype.type
    graph = helper.make_graph(
        [node], "g", graph_inputs, [helper.make_tensor_value_info(o, _ONNX_TYPE[out_type], None) for o in outs]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    feeds = {n: a for n, a in zip(names, inputs) if a is not None}
    return model, feeds


def run_ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), _SESSION_OPTIONS, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_expected(model, feeds):
    """onnxruntime when it implements the op for this element type, else ONNX's ReferenceEvaluator."""
    try:
        return run_ort(model, feeds)
    except ort.capi.onnxruntime_pybind11_state.NotImplemented:
        return run_ref(model, feeds)


def run_ref(model, feeds):
    return ReferenceEvaluator(model).run(None, feeds)


def check(got, expected, dtype=np.float32, tol=None):
    got = got if isinstance(got, (tuple, list)) else (got,)
    assert len(got) == len(expected)
    rtol, atol = tol or _TOL[dtype]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        assert g.shape == e.shape, (g.shape, e.shape)
        np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol)


def rand(rng, shape, dtype=np.float32, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale).astype(dtype)


seeds = st.integers(0, 2**31 - 1)
dtypes = st.sampled_from([np.float32, np.float64])


# ----------------------------------------------------------------------------------------- conv


@st.composite
def conv_cases(draw):
    group = draw(st.sampled_from([1, 1, 2, 3]))
    cg = draw(st.integers(1, 3))
    mg = draw(st.integers(1, 3))
    depthwise = draw(st.booleans())
    if depthwise:
        group, cg, mg = draw(st.integers(2, 5)), 1, 1
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    h = draw(st.integers(dil[0] * (kh - 1) + 1, 9))
    w = draw(st.integers(dil[1] * (kw - 1) + 1, 9))
    n = draw(st.integers(1, 2))
    bias = draw(st.booleans())
    return dict(n=n, c=cg * group, m=mg * group, group=group, k=(kh, kw), hw=(h, w), dil=dil, strides=strides, pads=pads, bias=bias)


@SETTINGS
@given(case=conv_cases(), seed=seeds, dtype=dtypes)
def test_conv2d(case, seed, dtype):
    rng = np.random.default_rng(seed)
    x = rand(rng, (case["n"], case["c"], *case["hw"]), dtype)
    w = rand(rng, (case["m"], case["c"] // case["group"], *case["k"]), dtype)
    b = rand(rng, (case["m"],), dtype) if case["bias"] else None
    got = K.conv2d(x, w, b, strides=case["strides"], pads=case["pads"], dilations=case["dil"], group=case["group"])
    model, feeds = one_node_model(
        "Conv", [x, w, b], group=case["group"], strides=case["strides"], pads=case["pads"],
        dilations=case["dil"], kernel_shape=case["k"],
    )
    check(got, run_expected(model, feeds), dtype)


def test_matmul_vector_dot_is_a_0d_array():
    got = K.matmul(np.arange(3, dtype=np.float32), np.ones(3, np.float32))
    assert isinstance(got, np.ndarray) and got.shape == () and got == 3.0


def test_conv2d_f16_keeps_dtype():
    rng = np.random.default_rng(0)
    x, w = rand(rng, (1, 4, 6, 6), np.float16), rand(rng, (8, 4, 3, 3), np.float16)
    got = K.conv2d(x, w, None, pads=(1, 1, 1, 1))
    assert got.dtype == np.float16
    expected = K.conv2d(x.astype(np.float32), w.astype(np.float32), None, pads=(1, 1, 1, 1))
    np.testing.assert_allclose(got.astype(np.float32), expected, rtol=1e-2, atol=1e-2)


def _exact_f32(a_row: np.ndarray, b_col: np.ndarray) -> np.float32:
    """The correctly rounded f32 dot product: f32*f32 products are exact in f64, math.fsum is
    exactly rounded, so only the final (tie-free in practice) rounding to f32 remains."""
    return np.float32(math.fsum((a_row.astype(np.float64) * b_col.astype(np.float64)).tolist()))


def test_matmul_f32_is_correctly_rounded():
    """Golden = f64 accumulation rounded once: a 256x512 @ 512x256 std-normal f32 matmul matches
    the exactly rounded dot products (f32 accumulation is up to ~5e-5 off at K=512)."""
    rng = np.random.default_rng(7)
    a, b = rand(rng, (256, 512)), rand(rng, (512, 256))
    got = K.matmul(a, b)
    assert got.dtype == np.float32
    for i, j in zip(rng.integers(0, 256, 64), rng.integers(0, 256, 64)):
        assert got[i, j] == _exact_f32(a[i], b[:, j]), (i, j)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # at most half an f32 ulp from the exact f64 product everywhere (f32 BLAS: many ulps)
    assert np.all(np.abs(got - exact) <= np.spacing(np.abs(got)) * 0.5 + 1e-12)
    g = K.gemm(a.T.copy(), b, trans_a=True)
    np.testing.assert_array_equal(g, got)


def test_conv2d_f32_is_correctly_rounded():
    """conv2d accumulates in f64 too: sampled outputs equal the exactly rounded dot products."""
    rng = np.random.default_rng(8)
    x, w = rand(rng, (1, 64, 9, 9)), rand(rng, (16, 64, 3, 3))
    got = K.conv2d(x, w, None, pads=(1, 1, 1, 1))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for m, h, v in zip(rng.integers(0, 16, 32), rng.integers(0, 9, 32), rng.integers(0, 9, 32)):
        window = xp[0, :, h : h + 3, v : v + 3].reshape(-1)
        assert got[0, m, h, v] == _exact_f32(window, w[m].reshape(-1)), (m, h, v)


def test_conv2d_rejects_channel_mismatch():
    with pytest.raises(ValueError, match="input channels"):
        K.conv2d(np.zeros((1, 3, 4, 4), np.float32), np.zeros((2, 2, 1, 1), np.float32))


# ------------------------------------------------------------------------------------ matmul/gemm


@st.composite
def matmul_shapes(draw):
    m, k, n = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    a_shape = [*batch, m, k]
    b_batch = [draw(st.sampled_from([d, 1])) for d in batch][draw(st.integers(0, len(batch))):]
    b_shape = [*b_batch, k, n]
    if draw(st.booleans()):
        a_shape = [k]
    elif draw(st.booleans()):
        b_shape = [k]
    if draw(st.booleans()):
        a_shape, b_shape = [*(1 for _ in batch), *a_shape[-2:]] if len(a_shape) > 1 else a_shape, b_shape
    return a_shape, b_shape


@SETTINGS
@given(shapes=matmul_shapes(), seed=seeds, dtype=dtypes)
def test_matmul(shapes, seed, dtype):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, shapes[0], dtype), rand(rng, shapes[1], dtype)
    model, feeds = one_node_model("MatMul", [a, b])
    check(K.matmul(a, b), run_expected(model, feeds), dtype)


@SETTINGS
@given(
    seed=seeds, dtype=dtypes, m=st.integers(1, 6), k=st.integers(1, 6), n=st.integers(1, 6),
    ta=st.booleans(), tb=st.booleans(), alpha=st.sampled_from([1.0, 0.5, -2.0]),
    beta=st.sampled_from([1.0, 0.0, 0.25]), c_kind=st.sampled_from(["none", "full", "row", "col", "scalar"]),
)
def test_gemm(seed, dtype, m, k, n, ta, tb, alpha, beta, c_kind):
    rng = np.random.default_rng(seed)
    a = rand(rng, (k, m) if ta else (m, k), dtype)
    b = rand(rng, (n, k) if tb else (k, n), dtype)
    c = {"none": None, "full": (m, n), "row": (n,), "col": (m, 1), "scalar": (1,)}[c_kind]
    c = None if c is None else rand(rng, c, dtype)
    got = K.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)
    model, feeds = one_node_model("Gemm", [a, b, c], alpha=alpha, beta=beta, transA=int(ta), transB=int(tb))
    check(got, run_ref(model, feeds), dtype)
    if dtype == np.float32:
        check(got, run_expected(model, feeds), dtype)


# ------------------------------------------------------------------------------------ elementwise


@st.composite
def broadcast_pair(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    other = [draw(st.sampled_from([d, 1])) for d in shape][draw(st.integers(0, len(shape))):]
    return (shape, other) if draw(st.booleans()) else (other, shape)


@SETTINGS
@given(shapes=broadcast_pair(), seed=seeds, dtype=dtypes, op=st.sampled_from(["Add", "Sub", "Mul", "Div"]))
def test_binary(shapes, seed, dtype, op):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, shapes[0], dtype), rand(rng, shapes[1], dtype)
    model, feeds = one_node_model(op, [a, b])
    check(getattr(K, op.lower())(a, b), run_expected(model, feeds), dtype)


@SETTINGS
@given(seed=seeds, dtype=dtypes, n=st.integers(1, 4), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_sum(seed, dtype, n, shape):
    rng = np.random.default_rng(seed)
    inputs = [rand(rng, shape[i % len(shape):], dtype) for i in range(n)]
    model, feeds = one_node_model("Sum", inputs)
    check(K.sum(inputs), run_expected(model, feeds), dtype)
    assert all(i is not None for i in inputs)  # inputs untouched below
    before = [i.copy() for i in inputs]
    K.sum(inputs)
    for b, i in zip(before, inputs):
        np.testing.assert_array_equal(b, i)


@SETTINGS
@given(
    seed=seeds, dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    op=st.sampled_from(["Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip"]),
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), scale=st.sampled_from([1.0, 30.0]),
    alpha=st.sampled_from([0.01, 0.2, 1.5]), lo=st.sampled_from([-math.inf, -1.0, 0.0]), hi=st.sampled_from([math.inf, 0.5, 6.0]),
)
def test_unary(seed, dtype, op, shape, scale, alpha, lo, hi):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape, dtype, scale)
    extra = []
    alpha = float(np.float32(alpha))  # ONNX float attributes (and graph FloatAttr) are f32
    if op == "LeakyRelu":
        got = K.leaky_relu(x, alpha=alpha)
        model, feeds = one_node_model(op, [x], alpha=alpha)
    elif op == "Clip":
        got = K.clip(x, min=lo, max=hi)
        extra = [np.array(lo, dtype), np.array(hi, dtype)]
        model, feeds = one_node_model(op, [x, *extra])
    else:
        got = getattr(K, op.lower())(x)
        model, feeds = one_node_model(op, [x])
    check(got, run_ref(model, feeds), dtype, tol=(1e-3, 1e-3) if dtype == np.float16 else None)


# ------------------------------------------------------------------------------------------ pools


@st.composite
def pool_cases(draw, with_dilation=True):
    rank = draw(st.sampled_from([1, 2, 2, 3]))
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    dil = [draw(st.integers(1, 2)) if with_dilation else 1 for _ in range(rank)]
    pads_b = [draw(st.integers(0, k - 1)) for k in kernel]
    pads_e = [draw(st.integers(0, k - 1)) for k in kernel]
    spatial = [draw(st.integers(d * (k - 1) + 1, 8 if rank < 3 else 5)) for d, k in zip(dil, kernel)]
    return dict(
        shape=(draw(st.integers(1, 2)), draw(st.integers(1, 3)), *spatial), kernel=kernel, strides=strides,
        pads=pads_b + pads_e, dil=dil, ceil=draw(st.booleans()),
    )


@SETTINGS
@given(case=pool_cases(), seed=seeds, dtype=st.sampled_from([np.float16, np.float32, np.float64]))
def test_max_pool(case, seed, dtype):
    rng = np.random.default_rng(seed)
    x = rand(rng, case["shape"], dtype)
    got = K.max_pool(x, kernel_shape=case["kernel"], strides=case["strides"], pads=case["pads"],
                     dilations=case["dil"], ceil_mode=case["ceil"])
    model, feeds = one_node_model("MaxPool", [x], kernel_shape=case["kernel"], strides=case["strides"],
                                  pads=case["pads"], dilations=case["dil"], ceil_mode=int(case["ceil"]))
    check(got, run_expected(model, feeds), dtype, tol=(0, 0))


@SETTINGS
@given(case=pool_cases(with_dilation=False), seed=seeds, dtype=dtypes, include=st.booleans())
def test_avg_pool(case, seed, dtype, include):
    rng = np.random.default_rng(seed)
    x = rand(rng, case["shape"], dtype)
    got = K.avg_pool(x, kernel_shape=case["kernel"], strides=case["strides"], pads=case["pads"],
                     ceil_mode=case["ceil"], count_include_pad=include)
    # onnxruntime implements AveragePool for f32 only; ONNX's Python reference recentres the
    # ceil_mode tail, so f64 results are compared with onnxruntime's f32 results.
    x32 = x.astype(np.float32)
    model, feeds = one_node_model("AveragePool", [x32], kernel_shape=case["kernel"], strides=case["strides"],
                                  pads=case["pads"], ceil_mode=int(case["ceil"]), count_include_pad=int(include))
    assert got.dtype == dtype
    check(got.astype(np.float32), run_ort(model, feeds), np.float32, tol=(1e-5, 1e-6))


@SETTINGS
@given(case=pool_cases(), seed=seeds, include=st.booleans())
def test_avg_pool_dilated_vs_reference_evaluator(case, seed, include):
    # opset 19 AveragePool has dilations; ONNX's Python reference recentres the ceil_mode tail,
    # so the comparison is restricted to grids without a tail.
    out = K.pool_output_shape(case["shape"][2:], case["kernel"], case["strides"], case["pads"], case["dil"], case["ceil"])
    tail = K._ceil_tail(case["shape"][2:], case["kernel"], case["strides"], case["pads"][: len(out)],
                        case["pads"][len(out):], case["dil"], out)
    if tuple(tail) != tuple(case["pads"][len(out):]):
        return
    rng = np.random.default_rng(seed)
    x = rand(rng, case["shape"], np.float32)
    got = K.avg_pool(x, kernel_shape=case["kernel"], strides=case["strides"], pads=case["pads"],
                     dilations=case["dil"], ceil_mode=case["ceil"], count_include_pad=include)
    model, feeds = one_node_model("AveragePool", [x], opset=19, kernel_shape=case["kernel"], strides=case["strides"],
                                  pads=case["pads"], dilations=case["dil"], ceil_mode=int(case["ceil"]),
                                  count_include_pad=int(include))
    check(got, run_ref(model, feeds), np.float32)


def test_pool_with_kernel_larger_than_padded_input_is_an_error_as_in_the_verifier():
    # (2 + 0 + 1) < 4: no window fits, also with ceil_mode (the verifier's "output dim is empty").
    with pytest.raises(ValueError, match="is empty"):
        K.pool_output_shape((2,), (4,), (2,), (0, 1), (1,), ceil_mode=True)
    with pytest.raises(ValueError, match="is empty"):
        K.max_pool(np.zeros((1, 1, 2), np.float32), kernel_shape=(4,), strides=(2,), pads=(0, 1), ceil_mode=True)


@SETTINGS
@given(seed=seeds, dtype=dtypes, shape=st.lists(st.integers(1, 6), min_size=3, max_size=5))
def test_global_avg_pool(seed, dtype, shape):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape, dtype)
    model, feeds = one_node_model("GlobalAveragePool", [x])
    check(K.global_avg_pool(x), run_expected(model, feeds), dtype)


@SETTINGS
@given(seed=seeds, dtype=dtypes, shape=st.lists(st.integers(1, 5), min_size=2, max_size=4),
       eps=st.sampled_from([1e-5, 1e-3, 0.1]))
def test_batch_norm(seed, dtype, shape, eps):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape, dtype)
    eps = float(np.float32(eps))  # ONNX float attributes are f32
    c = shape[1]
    scale, bias, mean = rand(rng, c, dtype), rand(rng, c, dtype), rand(rng, c, dtype)
    var = (rng.random(c) + 0.1).astype(dtype)
    model, feeds = one_node_model("BatchNormalization", [x, scale, bias, mean, var], epsilon=eps)
    # onnxruntime, not the ReferenceEvaluator: onnx 1.23's Python BatchNormalization disagrees with
    # the formula on inference inputs.
    check(K.batch_norm(x, scale, bias, mean, var, epsilon=eps), run_expected(model, feeds), dtype,
          tol=(1e-5, 1e-5) if dtype == np.float32 else None)


def lrn_per_channel(x, size, alpha, beta, bias):
    """The ONNX LRN formula written channel by channel (ONNX 1.23's Python LRN loops over the
    batch dim instead of the channels, so it is not usable as an oracle)."""
    c = x.shape[1]
    square_sum = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c, ch + math.ceil((size - 1) / 2) + 1)
        square_sum[:, ch] = np.sum(x[:, lo:hi] ** 2, axis=1)
    return x / (bias + alpha / size * square_sum) ** beta


@SETTINGS
@given(seed=seeds, dtype=dtypes, shape=st.lists(st.integers(1, 6), min_size=4, max_size=4),
       size=st.integers(1, 6), alpha=st.sampled_from([1e-4, 0.5]), beta=st.sampled_from([0.75, 1.0]),
       bias=st.sampled_from([1.0, 2.0]))
def test_lrn(seed, dtype, shape, size, alpha, beta, bias):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape, dtype)
    alpha = float(np.float32(alpha))
    got = K.lrn(x, size=size, alpha=alpha, beta=beta, bias=bias)
    if dtype == np.float32 and size % 2 == 1:  # onnxruntime implements odd sizes, f32 only
        model, feeds = one_node_model("LRN", [x], size=size, alpha=alpha, beta=beta, bias=bias)
        check(got, run_ort(model, feeds), dtype, tol=(1e-5, 1e-6))
    else:
        check(got, [lrn_per_channel(x, size, alpha, beta, bias)], dtype)


@SETTINGS
@given(seed=seeds, dtype=st.sampled_from([np.float16, np.float32, np.float64]),
       shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), axis_frac=st.floats(0, 0.999),
       scale=st.sampled_from([1.0, 100.0]))
def test_softmax(seed, dtype, shape, axis_frac, scale):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape, dtype, scale)
    axis = int(axis_frac * len(shape)) - len(shape) * int(axis_frac > 0.5)
    got = K.softmax(x, axis=axis)
    assert np.isfinite(got.astype(np.float64)).all()
    model, feeds = one_node_model("Softmax", [x], axis=axis)
    check(got, run_expected(model, feeds), dtype, tol=(2e-3, 2e-3) if dtype == np.float16 else (1e-5, 1e-6))


# ---------------------------------------------------------------------------------- data movement


@SETTINGS
@given(seed=seeds, shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), n=st.integers(1, 4), data=st.data())
def test_concat(seed, shape, n, data):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    inputs = []
    for _ in range(n):
        s = list(shape)
        s[axis] = data.draw(st.integers(1, 3))
        inputs.append(rand(rng, s))
    model, feeds = one_node_model("Concat", inputs, axis=axis)
    check(K.concat(inputs, axis=axis), run_expected(model, feeds))


@SETTINGS
@given(seed=seeds, shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_flatten_transpose_unsqueeze_reshape(seed, shape, data):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape)
    axis = data.draw(st.integers(-len(shape), len(shape)))
    model, feeds = one_node_model("Flatten", [x], axis=axis)
    check(K.flatten(x, axis=axis), run_expected(model, feeds))

    perm = data.draw(st.permutations(range(len(shape))))
    model, feeds = one_node_model("Transpose", [x], perm=list(perm))
    check(K.transpose(x, perm=perm), run_expected(model, feeds))
    model, feeds = one_node_model("Transpose", [x])
    check(K.transpose(x), run_expected(model, feeds))

    out_rank = len(shape) + data.draw(st.integers(1, 2))
    axes = data.draw(st.lists(st.integers(-out_rank, out_rank - 1), min_size=out_rank - len(shape),
                              max_size=out_rank - len(shape), unique_by=lambda a: a % out_rank))
    model, feeds = one_node_model("Unsqueeze", [x, np.array(axes, np.int64)])
    check(K.unsqueeze(x, axes=axes), run_ref(model, feeds))

    target = list(reversed(shape)) + [1]
    model, feeds = one_node_model("Reshape", [x, np.array(target, np.int64)])
    check(K.reshape(x, target), run_ref(model, feeds))


def test_reshape_rejects_count_mismatch():
    with pytest.raises(ValueError, match="cannot reshape"):
        K.reshape(np.zeros((2, 3), np.float32), (4, 2))


@SETTINGS
@given(seed=seeds, dtype=dtypes, shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data(),
       value=st.sampled_from([0.0, 1.5, -3.0]))
def test_pad(seed, dtype, shape, data, value):
    rng = np.random.default_rng(seed)
    x = rand(rng, shape, dtype)
    begin = [data.draw(st.integers(-(d - 1) // 2 if d > 1 else 0, 3)) for d in shape]
    end = [data.draw(st.integers(-(d - 1) // 2 if d > 1 else 0, 3)) for d in shape]
    pads = begin + end
    model, feeds = one_node_model("Pad", [x, np.array(pads, np.int64), np.array(value, dtype)], mode="constant")
    check(K.pad(x, pads=pads, value=value), run_expected(model, feeds), dtype)


def test_dropout_is_identity():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model, feeds = one_node_model("Dropout", [x], opset=10, ratio=0.3)
    check(K.dropout(x, ratio=0.3), run_expected(model, feeds)[:1])


@SETTINGS
@given(data=st.data())
def test_layout_transform_is_named_transpose(data):
    src = "".join(data.draw(st.permutations("NCHW")))
    dst = "".join(data.draw(st.permutations("NCHW")))
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    got = K.layout_transform(x, from_layout=src, to_layout=dst)
    perm = [src.index(c) for c in dst]
    model, feeds = one_node_model("Transpose", [x], perm=perm)
    check(got, run_expected(model, feeds))
    back = K.layout_transform(got, from_layout=dst, to_layout=src)
    np.testing.assert_array_equal(back, x)
    with pytest.raises(ValueError):
        K.layout_transform(x, from_layout="NCHW", to_layout="NCHX")


# ------------------------------------------------------------------------------------------- lstm


@SETTINGS
@given(seed=seeds, dtype=dtypes, seq=st.integers(1, 5), batch=st.integers(1, 3), inp=st.integers(1, 4),
       hidden=st.integers(1, 4), with_b=st.booleans(), with_init=st.booleans())
def test_lstm(seed, dtype, seq, batch, inp, hidden, with_b, with_init):
    rng = np.random.default_rng(seed)
    x = rand(rng, (seq, batch, inp), dtype)
    w = rand(rng, (1, 4 * hidden, inp), dtype, 0.5)
    r = rand(rng, (1, 4 * hidden, hidden), dtype, 0.5)
    b = rand(rng, (1, 8 * hidden), dtype, 0.5) if with_b else None
    h0 = rand(rng, (1, batch, hidden), dtype) if with_init else None
    c0 = rand(rng, (1, batch, hidden), dtype) if with_init else None
    got = K.lstm(x, w, r, b, h0, c0, hidden_size=hidden)
    inputs = [x, w, r, b, None, h0, c0]  # input 4 is sequence_lens
    while inputs[-1] is None:
        inputs.pop()
    model, feeds = one_node_model("LSTM", inputs, n_outputs=3, opset=14, hidden_size=hidden)
    expected = run_ort(model, feeds) if dtype == np.float32 else run_ref(model, feeds)
    check(got, expected, dtype, tol=(1e-5, 1e-6) if dtype == np.float32 else None)


def test_kernels_do_not_modify_inputs():
    rng = np.random.default_rng(1)
    x = rand(rng, (1, 4, 6, 6))
    w = rand(rng, (4, 1, 3, 3))
    keep = x.copy(), w.copy()
    K.conv2d(x, w, None, pads=(1, 1, 1, 1), group=4)
    K.max_pool(x, kernel_shape=(2, 2), strides=(2, 2))
    K.avg_pool(x, kernel_shape=(3, 3), pads=(1, 1, 1, 1))
    K.lrn(x, size=3)
    K.softmax(x, axis=1)
    K.batch_norm(x, *(rng.random(4).astype(np.float32) + 0.5 for _ in range(4)))
    np.testing.assert_array_equal(x, keep[0])
    np.testing.assert_array_equal(w, keep[1])
