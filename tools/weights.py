"""Seeded random weights for ONNX models (``taihu-import --randomize-weights SEED``,
``taihu-run --random-weights SEED``, tests and benchmarks).

The light models of ONNX's backend tests ship constant weights, which hide errors (every channel
computes the same thing); :func:`randomize_weights` re-initializes every weight tensor of a model
with seeded random values so the importer, the reference, the simulator and onnxruntime can be
compared on an informative model. It works on the ``ModelProto`` before import: the frontend
(:mod:`taihu.frontends.onnx`) does not depend on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, TensorProto, helper, numpy_helper

__all__ = ["randomize_weights"]

#: float element types whose tensors are weights (those the ONNX frontend imports: f32, f16, f64)
_FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE})

#: op type -> input slots that hold weights
_WEIGHT_SLOTS: dict[str, tuple[int, ...]] = {
    "Conv": (1, 2),
    "Gemm": (1, 2),
    "MatMul": (0, 1),
    "BatchNormalization": (1, 2, 3, 4),
    "LSTM": (1, 2, 3, 5, 6, 7),
}


def randomize_weights(model: ModelProto, seed: int) -> ModelProto:
    """Copy of ``model`` with every float weight tensor replaced by seeded random values.

    Weights are float initializers and ``Constant``/``ConstantOfShape`` results that have more
    than one element or feed a weight slot (Conv W/B, Gemm B/C, MatMul operands,
    BatchNormalization scale/bias/mean/var, LSTM W/R/B/initial_h/initial_c/P). Integer tensors
    (shapes, axes, pads) and float scalars elsewhere (Clip bounds, pad values) are kept. Values:
    tensors of rank >= 2 ~ U(-a, a) with a = sqrt(3 / fan_in) (variance 1/fan_in, fan_in =
    prod(shape[1:]), for Gemm B with transB=0 / MatMul rhs: shape[0]); 1-D tensors ~ U(-0.5, 0.5),
    BatchNormalization scale ~ U(0.5, 1.5) and variance ~ U(0.5, 1.5) (positive), also when the
    op reads them through ``Identity`` nodes (torch's legacy exporter shares equal weights so).
    ConstantOfShape weights become ``Constant`` nodes, so the result stays valid for every IR
    version. Deterministic in ``seed``; the input model is not modified.
    """
    out = ModelProto()
    out.CopyFrom(model)
    g = out.graph
    rng = np.random.default_rng(seed)

    role: dict[str, tuple[str, int, NodeProto]] = {}  # tensor name -> (op type, slot, node)
    for node in g.node:
        for slot in _WEIGHT_SLOTS.get(node.op_type, ()):
            if slot < len(node.input) and node.input[slot]:
                role.setdefault(node.input[slot], (node.op_type, slot, node))
    for node in reversed(g.node):  # torch's legacy exporter reads a shared weight through Identity
        if node.op_type == "Identity" and node.input and node.output and node.output[0] in role:
            role.setdefault(node.input[0], role[node.output[0]])

    def is_weight(name: str, arr_shape: Sequence[int], dtype: int) -> bool:
        if dtype not in _FLOAT_TYPES:
            return False
        return math.prod(arr_shape) > 1 or name in role

    def fresh(name: str, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
        shape = tuple(int(d) for d in shape)
        op, slot, node = role.get(name, ("", -1, None))
        if op == "BatchNormalization" and slot in (1, 4):
            lo, hi = 0.5, 1.5
        elif len(shape) >= 2:
            fan_in = math.prod(shape[1:])
            if op == "Gemm" and slot == 1 and node is not None:
                trans_b = any(a.name == "transB" and a.i for a in node.attribute)
                fan_in = shape[1] if trans_b else shape[0]
            elif op == "MatMul" and slot == 1:
                fan_in = shape[-2]
            hi = math.sqrt(3.0 / max(fan_in, 1))
            lo = -hi
        else:
            lo, hi = -0.5, 0.5
        # float32 draws (no float64 temporaries): ~1 ns per element.
        gen_dtype = np.float64 if dtype == np.float64 else np.float32
        arr = rng.random(shape, dtype=gen_dtype)
        arr *= hi - lo
        arr += lo
        return arr.astype(dtype, copy=False)

    def fill(t: TensorProto, arr: np.ndarray) -> None:
        """Overwrite t's data with arr (raw little-endian bytes; name and dims kept)."""
        for f in ("float_data", "double_data", "int32_data", "external_data"):
            t.ClearField(f)
        t.data_location = TensorProto.DEFAULT
        t.raw_data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()

    for init in g.initializer:
        if is_weight(init.name, init.dims, init.data_type):
            np_dtype = helper.tensor_dtype_to_np_dtype(init.data_type)
            fill(init, fresh(init.name, init.dims, np_dtype))

    consts = {
        i.name: numpy_helper.to_array(i)
        for i in g.initializer
        if i.data_type == TensorProto.INT64
    }
    for node in g.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    if is_weight(node.output[0], a.t.dims, a.t.data_type):
                        np_dtype = helper.tensor_dtype_to_np_dtype(a.t.data_type)
                        fill(a.t, fresh(node.output[0], a.t.dims, np_dtype))
                    elif a.t.data_type == TensorProto.INT64:
                        consts[node.output[0]] = numpy_helper.to_array(a.t)
        elif node.op_type == "ConstantOfShape" and node.input and node.input[0] in consts:
            shape = [int(d) for d in consts[node.input[0]].reshape(-1)]
            dtype = TensorProto.FLOAT
            for a in node.attribute:
                if a.name == "value":
                    dtype = a.t.data_type
            if is_weight(node.output[0], shape, dtype):
                np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
                # Rewrite in place as Constant (no copy of a whole new node).
                node.op_type = "Constant"
                del node.input[:]
                del node.attribute[:]
                attr = node.attribute.add()
                attr.name = "value"
                attr.type = onnx.AttributeProto.TENSOR
                attr.t.data_type = dtype
                attr.t.dims.extend(shape)
                fill(attr.t, fresh(node.output[0], shape, np_dtype))
    return out
