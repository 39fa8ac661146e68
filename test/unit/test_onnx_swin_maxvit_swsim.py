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
