"""Import of the exporters' shape sub-graphs (frontends/onnx_fold.py): nodes whose inputs are all
compile-time values (or, for Shape / Size, whose input's shape is known) are evaluated at import
with onnx's reference implementation, so the int64 shape arithmetic of torch.onnx's exporters
never becomes IR; outputs are compared with onnxruntime on the same model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xdsl.dialects.builtin import TensorType, f32

from taihu.dialects import graph
from taihu.frontends.onnx import OnnxImportError, import_model
from taihu.test.unit.test_onnx_frontend import _model, _vi, _vs_onnxruntime, _x

NEWEST = onnx.defs.onnx_opset_version()


def _i64(name: str, *values: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _flatten_chain(opset: int) -> onnx.ModelProto:
    """The legacy exporter's flatten (x.view(x.size(0), -1)): Shape -> Gather -> Unsqueeze ->
    Concat -> Reshape, with Unsqueeze's axes as an input (opset >= 13)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Shape", ["r"], ["s"]),
        helper.make_node("Constant", [], ["i0"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus1"], ["shp"], axis=0),
        helper.make_node("Reshape", ["r", "shp"], ["y"]),
    ]
    return _model(nodes, [_vi("x", [2, 3, 4, 5])], [_vi("y", None)],
                  [_i64("axes", 0), _i64("minus1", -1)], opset=opset)


@pytest.mark.parametrize("opset", [13, 15, 18, NEWEST])
def test_legacy_flatten_chain_folds_to_one_reshape(opset: int) -> None:
    m = _flatten_chain(opset)
    module = import_model(m)
    ops = [type(o) for o in module.walk() if o.dialect_name() == "graph"]
    assert ops == [graph.ReluOp, graph.ReshapeOp]
    _vs_onnxruntime(m, {"x": _x(2, 3, 4, 5)})


@pytest.mark.parametrize("opset", [15, 18, NEWEST])
def test_dynamo_style_shape_arithmetic(opset: int) -> None:
    """Shape with start/end, Slice, Squeeze, int64 Mul / Div / Mod, Cast, Equal + Where,
    ConstantOfShape, Range and Expand: all on shape values."""
    nodes = [
        helper.make_node("Shape", ["x"], ["hw"], start=2),                        # (4, 6)
        helper.make_node("Shape", ["x"], ["nc"], end=2),                          # (2, 3)
        helper.make_node("Slice", ["hw", "zero", "one"], ["h"]),                  # (4,)
        helper.make_node("Squeeze", ["h", "zero"], ["h0"]),                       # 4
        helper.make_node("Gather", ["hw", "one_s"], ["w0"], axis=0),              # 6
        helper.make_node("Mul", ["h0", "w0"], ["hxw"]),                           # 24
        helper.make_node("Div", ["hxw", "two_s"], ["half"]),                      # 12
        helper.make_node("Mod", ["half", "five_s"], ["rem"]),                     # 2
        helper.make_node("Cast", ["rem"], ["remf"], to=TensorProto.FLOAT),
        helper.make_node("Equal", ["nc", "two"], ["is2"]),                        # (T, F)
        helper.make_node("Where", ["is2", "nc", "one2"], ["nc1"]),                # (2, 1)
        helper.make_node("ConstantOfShape", ["one"], ["rest"],
                         value=numpy_helper.from_array(np.array([-1], np.int64))),            # (-1,)
        helper.make_node("Range", ["zero_s", "two_s", "one_s"], ["rng"]),          # (0, 1)
        helper.make_node("Expand", ["half", "one"], ["half1"]),                   # (12,)
        helper.make_node("Concat", ["nc1", "half1", "rest"], ["shp"], axis=0),    # (2, 1, 12, -1)
        helper.make_node("Reshape", ["x", "shp"], ["y0"]),
        helper.make_node("ReduceSum", ["rng"], ["two_again"], keepdims=0),       # 1 (int64)
        helper.make_node("Cast", ["two_again"], ["tf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["y0", "tf"], ["y1"]),
        helper.make_node("Add", ["y1", "remf"], ["y"]),
    ]
    inits = [_i64("zero", 0), _i64("one", 1), _i64("two", 2), numpy_helper.from_array(np.array(1, np.int64), "one_s"),
             numpy_helper.from_array(np.array(2, np.int64), "two_s"), numpy_helper.from_array(np.array(5, np.int64), "five_s"),
             numpy_helper.from_array(np.array(0, np.int64), "zero_s"), _i64("one2", 1, 1)]
    m = _model(nodes, [_vi("x", [2, 3, 4, 6])], [_vi("y", None)], inits, opset=opset)
    module = import_model(m)
    ops = [o for o in module.walk() if o.dialect_name() == "graph"]
    assert graph.ReshapeOp in [type(o) for o in ops]
    assert all(isinstance(r.type, TensorType) and r.type.element_type == f32 for o in ops for r in o.results)
    _vs_onnxruntime(m, {"x": _x(2, 3, 4, 6)})


def test_int64_shape_mul_is_folded_not_imported() -> None:
    """torch's x.view(n, c * h * w) via int64 Mul (the legacy exporter's '/Mul' nodes)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i1"], ["c"], axis=0),
        helper.make_node("Gather", ["s", "i2"], ["h"], axis=0),
        helper.make_node("Mul", ["c", "h"], ["ch"], name="/Mul"),
        helper.make_node("Concat", ["n", "ch"], ["shp"], axis=0),
        helper.make_node("Reshape", ["x", "shp"], ["y"]),
    ]
    m = _model(nodes, [_vi("x", [2, 3, 4])], [_vi("y", None)], [_i64("i1", 1), _i64("i2", 2), _i64("n", 2)])
    module = import_model(m)
    assert [type(o) for o in module.walk() if o.dialect_name() == "graph"] == [graph.ReshapeOp]
    _vs_onnxruntime(m, {"x": _x(2, 3, 4)})


def test_an_op_without_converter_on_a_computed_value_names_the_input() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Celu", ["r"], ["y"])],
               [_vi("x", [2, 3])], [_vi("y", None)])
    with pytest.raises(OnnxImportError, match=r"Celu node #1: unsupported op \(its input 'r' is not a compile-time "
                                              r"value, so the node is not evaluated at import\)"):
        import_model(m)


def test_a_node_the_reference_cannot_evaluate_is_one_error() -> None:
    m = _model([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["g"], axis=0, name="bad"),
                helper.make_node("Reshape", ["x", "g"], ["y"])],
               [_vi("x", [2, 3])], [_vi("y", None)], [_i64("i", 7)])
    with pytest.raises(OnnxImportError, match="Gather node 'bad': cannot evaluate at import: "):
        import_model(m)


def test_a_dynamic_dim_names_the_input() -> None:
    m = _flatten_chain(13)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(OnnxImportError, match=r"graph input 'x' dim 0 is dynamic \('batch'\); static shapes are required"):
        import_model(m)


def test_int64_graph_output_is_still_refused() -> None:
    m = _model([helper.make_node("Shape", ["x"], ["s"])], [_vi("x", [2, 3])], [_vi("s", None, TensorProto.INT64)])
    with pytest.raises(OnnxImportError, match="element type int64"):
        import_model(m)


def test_a_value_feeding_two_inputs_of_a_folded_node() -> None:
    """Slice(s, k, k) with starts and ends the same value (swin_t's dynamo export): folded."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", ["s", "k", "k"], ["e"]),
             helper.make_node("Concat", ["s", "e"], ["s2"], axis=0),
             helper.make_node("Reshape", ["x", "s"], ["y"])]
    m = _model(nodes, [_vi("x", [2, 3])], [_vi("y", None)], [_i64("k", 1)])
    assert [type(o) for o in import_model(m).walk() if o.dialect_name() == "graph"] == [graph.ReshapeOp]
