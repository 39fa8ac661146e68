"""The forms torchvision's swin_t and maxvit_t add, lowered and simulated on swsim, against
onnxruntime: strided Slice (swin's patch merging), Einsum attention (maxvit's q k^T and attn v),
and maxvit's squeeze-excitation 1x1 convolution on a 1x1 plane with many output channels (a GEMM
with one column: its bias block is as large as C, added in C's layout)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from taihu.frontends.onnx import import_model
from taihu.tools.run import run_swsim

RNG = np.random.default_rng(0)


def _model(nodes, inputs, outputs, inits=(), opset=13) -> onnx.ModelProto:
    m = helper.make_model(helper.make_graph(nodes, "t", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _f32(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def _i64(name, *v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def _vs_onnxruntime_on_swsim(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    want = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = run_swsim(import_model(m), feeds).outputs
    for w, (name, g) in zip(want, got.items()):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=name)


def test_squeeze_excitation_conv_on_a_1x1_plane() -> None:
    """maxvit_t's MBConv squeeze-excitation fc2: 1x1 conv 128 -> 2048 with bias on a pooled
    1x1 plane, sigmoid fused (the GEMM's N = 1)."""
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"]),
             helper.make_node("Conv", ["g", "w", "b"], ["c"]),
             helper.make_node("Sigmoid", ["c"], ["y"])]
    inits = [_f32("w", RNG.standard_normal((2048, 128, 1, 1)) / 12), _f32("b", RNG.standard_normal(2048))]
    m = _model(nodes, [_vi("x", [1, 128, 4, 4])], [_vi("y", [1, 2048, 1, 1])], inits)
    _vs_onnxruntime_on_swsim(m, {"x": RNG.standard_normal((1, 128, 4, 4)).astype(np.float32)})


def test_patch_merging_strided_slices() -> None:
    """swin_t's PatchMerging: x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], ... concatenated."""
    big = 2**63 - 1
    nodes, parts = [], []
    for k in range(4):
        nodes.append(helper.make_node("Slice", ["x", f"st{k}", "en", "ax", "sp"], [f"p{k}"]))
        parts.append(f"p{k}")
    nodes.append(helper.make_node("Concat", parts, ["y"], axis=-1))
    inits = [_i64("en", big, big), _i64("ax", 1, 2), _i64("sp", 2, 2)]
    inits += [_i64(f"st{k}", h0, w0) for k, (h0, w0) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)])]
    m = _model(nodes, [_vi("x", [1, 8, 8, 16])], [_vi("y", [1, 4, 4, 64])], inits)
    _vs_onnxruntime_on_swsim(m, {"x": RNG.standard_normal((1, 8, 8, 16)).astype(np.float32)})


def test_einsum_window_attention() -> None:
    """maxvit_t's attention: scores = einsum(q, k), softmax, einsum(attn, v)."""
    shape = [1, 4, 2, 7, 8]
    nodes = [helper.make_node("Einsum", ["q", "k"], ["s"], equation="B G H I D, B G H J D -> B G H I J"),
             helper.make_node("Softmax", ["s"], ["a"], axis=-1),
             helper.make_node("Einsum", ["a", "v"], ["y"], equation="B G H I J, B G H J D -> B G H I D")]
    m = _model(nodes, [_vi(n, shape) for n in "qkv"], [_vi("y", shape)])
    _vs_onnxruntime_on_swsim(m, {n: RNG.standard_normal(shape).astype(np.float32) for n in "qkv"})


def test_cosine_attention_normalize() -> None:
    """swin_v2_t's cosine attention: F.normalize(q, dim=-1) as torch's dynamo export writes it
    (ReduceL2 keepdims, clamp_min, Expand to q's shape, Div), then q k^T."""
    nodes = [helper.make_node("ReduceL2", ["q", "axes"], ["n"], keepdims=1),
             helper.make_node("Clip", ["n", "eps"], ["c"]),
             helper.make_node("Expand", ["c", "shape"], ["e"]),
             helper.make_node("Div", ["q", "e"], ["qn"]),
             helper.make_node("Transpose", ["qn"], ["qt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["qn", "qt"], ["y"])]
    inits = [_i64("axes", -1), _f32("eps", 1e-12), _i64("shape", 2, 3, 16, 8)]
    m = _model(nodes, [_vi("q", [2, 3, 16, 8])], [_vi("y", [2, 3, 16, 16])], inits, opset=18)
    _vs_onnxruntime_on_swsim(m, {"q": RNG.standard_normal((2, 3, 16, 8)).astype(np.float32)})


def test_relative_position_bias_table_from_a_constant_mlp() -> None:
    """swin_v2_t's continuous position bias: an MLP on a constant coordinate table, gathered at
    a constant index of many separate runs (more than the Gather converter builds as crops):
    every input is a compile-time value, so the gather is evaluated at import; the bias is then
    added to the attention logits."""
    table = RNG.standard_normal((49, 2)).astype(np.float32)
    index = RNG.permutation(np.tile(np.arange(49), 3))[:100].astype(np.int64)  # ~100 runs
    nodes = [helper.make_node("MatMul", ["table", "w1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["t2"]),
             helper.make_node("Gather", ["t2", "index"], ["g"], axis=0),
             helper.make_node("Reshape", ["g", "shape"], ["bias"]),
             helper.make_node("Add", ["x", "bias"], ["y"])]
    inits = [_f32("table", table), _f32("w1", RNG.standard_normal((2, 16))),
             _f32("w2", RNG.standard_normal((16, 3))), numpy_helper.from_array(index, "index"),
             _i64("shape", 1, 10, 10, 3)]
    m = _model(nodes, [_vi("x", [1, 10, 10, 3])], [_vi("y", [1, 10, 10, 3])], inits)
    _vs_onnxruntime_on_swsim(m, {"x": RNG.standard_normal((1, 10, 10, 3)).astype(np.float32)})
