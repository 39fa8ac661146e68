"""Float chains on compile-time values (frontends/onnx.py ``_Importer.defer`` / ``lazy_const``)
and strided Slice: the forms torchvision's swin_t exports with both exporters.

swin_t's shifted-window attention mask is built in the graph from zeros: ConstantOfShape ->
ScatterND (slice assignments) -> Reshape / Transpose / Unsqueeze -> Sub -> Equal -> Where. The
converted ops (Reshape, Transpose, Sub, Slice) build graph ops on float constants as always, and
their outputs are also evaluated at import when a node without converter (Equal, ScatterND)
reads them. Its patch merging takes ``x[..., 0::2, 0::2, :]``: a Slice with step 2 on a computed
tensor. Outputs are compared with onnxruntime on the same model."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from taihu.dialects import graph
from taihu.frontends.onnx import OnnxImportError, import_model
from taihu.test.unit.test_onnx_frontend import _model, _vi, _vs_onnxruntime, _x


def _i64(name: str, *values: int, shape: tuple[int, ...] | None = None) -> object:
    a = np.array(values, np.int64)
    return numpy_helper.from_array(a.reshape(shape) if shape is not None else a, name)


def _f32(name: str, value: np.ndarray) -> object:
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def _legacy_mask_model(opset: int) -> object:
    """A 4x4 image, 2x2 windows, shift 1 (swin's legacy export, reduced): region ids written by
    ScatterND into zeros, windows partitioned by Reshape / Transpose / Reshape, pairwise id
    differences by Unsqueeze and Sub, Equal / Where into a 0 / -100 mask added to the scores."""
    idx_rows = np.array([[[3, c] for c in range(4)]], np.int64)        # row 3 := 1
    idx_cols = np.array([[[r, 3] for r in range(4)]], np.int64)        # column 3 := 2 (+ row 3: 3)
    nodes = [
        helper.make_node("ConstantOfShape", ["hw"], ["zeros"],
                         value=numpy_helper.from_array(np.zeros(1, np.float32))),
        helper.make_node("ScatterND", ["zeros", "idx_rows", "ones"], ["m1"]),
        helper.make_node("ScatterND", ["m1", "idx_cols", "twos"], ["m2"]),
        helper.make_node("Reshape", ["m2", "win_shape"], ["w1"]),           # (2, 2, 2, 2)
        helper.make_node("Transpose", ["w1"], ["w2"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["w2", "flat_shape"], ["w3"]),          # (4 windows, 4)
        helper.make_node("Unsqueeze", ["w3", "ax1"], ["a"]),               # (4, 1, 4)
        helper.make_node("Unsqueeze", ["w3", "ax2"], ["b"]),               # (4, 4, 1)
        helper.make_node("Sub", ["a", "b"], ["d"]),                        # (4, 4, 4)
        helper.make_node("Equal", ["d", "zero"], ["same"]),
        helper.make_node("Where", ["same", "zero", "minus100"], ["mask"]),
        helper.make_node("Add", ["scores", "mask"], ["y"]),
    ]
    row_vals = np.ones((1, 4), np.float32)
    col_vals = np.array([[2, 2, 2, 3]], np.float32)
    inits = [
        _i64("hw", 4, 4),
        numpy_helper.from_array(idx_rows, "idx_rows"), numpy_helper.from_array(idx_cols, "idx_cols"),
        _f32("ones", row_vals), _f32("twos", col_vals),
        _i64("win_shape", 2, 2, 2, 2), _i64("flat_shape", 4, 4),
        _i64("ax1", 1), _i64("ax2", 2),
        _f32("zero", np.zeros(())), _f32("minus100", np.full((), -100.0)),
    ]
    return _model(nodes, [_vi("scores", [4, 4, 4])], [_vi("y", [4, 4, 4])], inits, opset=opset)


@pytest.mark.parametrize("opset", [13, 17])
def test_legacy_shifted_window_mask_is_a_constant(opset: int) -> None:
    m = _legacy_mask_model(opset)
    module = import_model(m)
    add = next(o for o in module.walk() if isinstance(o, graph.AddOp))
    mask = add.operands[1].owner
    assert isinstance(mask, graph.ConstantOp), "the mask is evaluated at import"
    _vs_onnxruntime(m, {"scores": _x(4, 4, 4)})


def test_dynamo_slice_scatter_on_a_transposed_constant() -> None:
    """The dynamo exporter's slice_scatter: zeros, a Slice and a Transpose (converted ops on a
    float constant), then ScatterND (no converter) reading the transposed slice."""
    nodes = [
        helper.make_node("ConstantOfShape", ["shp"], ["zeros"],
                         value=numpy_helper.from_array(np.zeros(1, np.float32))),
        helper.make_node("Slice", ["zeros", "s0", "s1", "ax"], ["sl"]),     # (3, 4)
        helper.make_node("Transpose", ["sl"], ["tr"], perm=[1, 0]),          # (4, 3)
        helper.make_node("ScatterND", ["tr", "idx", "upd"], ["sc"], reduction="none"),
        helper.make_node("Mul", ["x", "sc"], ["y"]),
    ]
    inits = [_i64("shp", 5, 4), _i64("s0", 1), _i64("s1", 4), _i64("ax", 0),
             numpy_helper.from_array(np.array([[1], [3]], np.int64), "idx"),
             _f32("upd", np.arange(6).reshape(2, 3) + 1.0)]
    m = _model(nodes, [_vi("x", [4, 3])], [_vi("y", [4, 3])], inits, opset=18)
    _vs_onnxruntime(m, {"x": _x(4, 3)})


def test_a_deferred_value_cast_to_int_feeds_a_shape_input() -> None:
    """Cast to int64 of a float chain on constants is evaluated (a Reshape reads it as its shape)."""
    nodes = [
        helper.make_node("Transpose", ["dims_f"], ["dims_t"], perm=[1, 0]),  # [[6], [4]] -> [[6, 4]]
        helper.make_node("Cast", ["dims_t"], ["dims_i"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["dims_i", "flat"], ["shape"]),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = [_f32("dims_f", np.array([[6.0], [4.0]])), _i64("flat", -1)]
    m = _model(nodes, [_vi("x", [2, 3, 4])], [_vi("y", [6, 4])], inits)
    _vs_onnxruntime(m, {"x": _x(2, 3, 4)})


def test_a_float_chain_on_constants_stays_graph_ops_when_nothing_needs_it() -> None:
    """Unchanged import for the common case: a Transpose of a weight feeding a MatMul is still
    a graph.transpose of a graph.constant (the passes fold it)."""
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["y"])]
    m = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [2, 5])], [_f32("w", _x(5, 3))])
    module = import_model(m)
    ops = [type(o) for o in module.walk() if o.dialect_name() == "graph"]
    assert ops == [graph.ConstantOp, graph.TransposeOp, graph.MatMulOp]
    _vs_onnxruntime(m, {"x": _x(2, 3)})


# ---- strided Slice ------------------------------------------------------------------------------


def _slice_model(shape, starts, ends, axes, steps, opset=13):
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Slice", ["r", "starts", "ends", "axes", "steps"], ["y"])]
    inits = [_i64("starts", *starts), _i64("ends", *ends), _i64("axes", *axes), _i64("steps", *steps)]
    return _model(nodes, [_vi("x", list(shape))], [_vi("y", None)], inits, opset=opset)


@pytest.mark.parametrize(
    "shape,starts,ends,axes,steps",
    [
        ((1, 8, 8, 6), (0, 0), (2**63 - 1, 2**63 - 1), (1, 2), (2, 2)),  # swin: x[..., 0::2, 0::2, :]
        ((1, 8, 8, 6), (1, 0), (2**63 - 1, 2**63 - 1), (1, 2), (2, 2)),  # x[..., 1::2, 0::2, :]
        ((1, 7, 5, 3), (0,), (7,), (1,), (2,)),                          # odd length: 4 of 7
        ((2, 10, 3), (1,), (-2,), (1,), (3,)),                           # 1, 4, 7 of [1, 8)
        ((2, 3, 9), (0,), (9,), (-1,), (4,)),                            # last axis (Q = 1)
        ((4, 6), (1, 2), (4, 6), (0, 1), (1, 2)),                        # a window and a stride
    ],
)
def test_strided_slice_matches_onnxruntime(shape, starts, ends, axes, steps) -> None:
    m = _slice_model(shape, starts, ends, axes, steps)
    _vs_onnxruntime(m, {"x": _x(*shape)})


def test_negative_step_is_refused_naming_the_axis() -> None:
    m = _slice_model((2, 6), (5,), (0,), (1,), (-1,))
    with pytest.raises(OnnxImportError, match=r"Slice node #1: step -1 on axis 1: only positive steps"):
        import_model(m)


# ---- ONNX's ScatterND node cases on compile-time data ------------------------------------------


def _scatternd_cases():
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases()
                if c.kind == "node" and [n.op_type for n in c.model.graph.node] == ["ScatterND"]}


SCATTERND = _scatternd_cases()


@pytest.mark.parametrize("name", sorted(SCATTERND))
def test_scatternd_node_case_on_a_deferred_constant(name: str) -> None:
    """ONNX's ScatterND cases (every reduction) with their inputs bound as constants and the data
    first through a converted Mul by 1 (a deferred value): ScatterND reads it, evaluated at
    import; the result equals the case's stored output."""
    from taihu.backends.reference import run_module

    case = SCATTERND[name]
    node = case.model.graph.node[0]
    inputs, expected = case.data_sets[0]
    names = [i.name for i in case.model.graph.input]
    scaled = helper.make_node("Mul", [names[0], "one"], ["data1"])
    scatter = helper.make_node("ScatterND", ["data1", *node.input[1:]], list(node.output))
    scatter.attribute.extend(node.attribute)
    m = _model([scaled, scatter], list(case.model.graph.input), list(case.model.graph.output),
               [_f32("one", np.ones(()))], opset=case.model.opset_import[0].version)
    module = import_model(m, constant_inputs={n: np.asarray(v) for n, v in zip(names, inputs)})
    got = run_module(module, {})
    np.testing.assert_array_equal(got[node.output[0]], np.asarray(expected[0]))
