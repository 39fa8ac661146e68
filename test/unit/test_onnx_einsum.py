"""ONNX Einsum imported as graph ops (frontends/onnx.py ``_einsum``): each pair of operands one
batched ``graph.matmul`` between transposes / views, labels of one operand only summed, the result
transposed to the output order. Outputs are compared with onnxruntime on the same model; ONNX's
own Einsum node cases run in test/integration/test_onnx_conformance.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from taihu.dialects import graph
from taihu.frontends.onnx import OnnxImportError, import_model
from taihu.test.unit.test_onnx_frontend import _model, _vi, _vs_onnxruntime, _x


def _einsum_model(equation: str, *shapes: tuple[int, ...], opset: int = 13):
    names = [f"x{k}" for k in range(len(shapes))]
    want = np.einsum(equation.replace(" ", ""), *[np.zeros(s, np.float32) for s in shapes]).shape
    return _model([helper.make_node("Einsum", names, ["y"], equation=equation)],
                  [_vi(n, list(s)) for n, s in zip(names, shapes)], [_vi("y", list(want))], opset=opset)


CASES = [
    # torchvision maxvit_t's attention (q k^T and attn v), both exporters
    ("B G H I D, B G H J D -> B G H I J", (1, 4, 2, 7, 8), (1, 4, 2, 7, 8)),
    ("B G H I J, B G H J D -> B G H I D", (1, 4, 2, 7, 7), (1, 4, 2, 7, 8)),
    ("bij,bjk->bik", (3, 4, 5), (3, 5, 6)),
    ("ij,jk", (4, 5), (5, 6)),                        # implicit output: ik
    ("ij,kj->ik", (4, 5), (6, 5)),                    # B transposed
    ("ij,ij->i", (4, 5), (4, 5)),                     # row-wise dot: batch i, contract j
    ("i,j->ij", (4,), (5,)),                          # outer product (K = 1)
    ("ijk,jl->li", (3, 4, 5), (4, 6)),                # k summed in A first, output transposed
    ("bn,anm,bm->ba", (2, 3), (4, 3, 5), (2, 5)),     # three operands (bilinear)
    ("...id,...jd->...ij", (2, 3, 4, 5), (2, 3, 6, 5)),
    ("...ij,...jk->...ik", (2, 1, 3, 4), (1, 5, 4, 6)),  # ellipsis dims broadcast (size 1 vs 5, 2 vs 1)
    ("ijk->ki", (3, 4, 5),),                          # one operand: sum and transpose
    ("ba", (3, 4),),                                  # implicit: letters in alphabetical order
    ("abCd,dC->ab", (2, 3, 4, 5), (5, 4)),            # upper and lower case labels
]


@pytest.mark.parametrize("equation,shapes", [(c[0], c[1:]) for c in CASES], ids=[c[0] for c in CASES])
def test_einsum_matches_onnxruntime(equation: str, shapes: tuple[tuple[int, ...], ...]) -> None:
    m = _einsum_model(equation, *shapes)
    _vs_onnxruntime(m, {f"x{k}": _x(*s) for k, s in enumerate(shapes)}, rtol=1e-5, atol=1e-5)


def _graph_ops(module) -> list[type]:
    return [type(o) for o in module.walk() if o.dialect_name() == "graph"]


def test_attention_scores_are_one_transpose_and_one_batched_matmul() -> None:
    """q k^T keeps the 5-D batch (no views): k's last two dims swapped, one graph.matmul."""
    module = import_model(_einsum_model("B G H I D, B G H J D -> B G H I J", (1, 4, 2, 7, 8), (1, 4, 2, 7, 8)))
    assert _graph_ops(module) == [graph.TransposeOp, graph.MatMulOp]
    mm = next(o for o in module.walk() if isinstance(o, graph.MatMulOp))
    assert list(mm.results[0].type.get_shape()) == [1, 4, 2, 7, 7]


def test_attention_times_values_is_one_batched_matmul() -> None:
    module = import_model(_einsum_model("B G H I J, B G H J D -> B G H I D", (1, 4, 2, 7, 7), (1, 4, 2, 7, 8)))
    assert _graph_ops(module) == [graph.MatMulOp]


def test_opset_20_dynamo_form() -> None:
    m = _einsum_model("B G H I D, B G H J D -> B G H I J", (1, 2, 2, 3, 4), (1, 2, 2, 3, 4), opset=20)
    _vs_onnxruntime(m, {"x0": _x(1, 2, 2, 3, 4), "x1": _x(1, 2, 2, 3, 4)})


@pytest.mark.parametrize(
    "equation,shapes,fragment",
    [
        ("ii->i", ((3, 3),), "label 'i' repeats in operand 0 (diagonals and traces are not supported)"),
        ("ij,jk->ik", ((3, 4), (5, 6)), "label 'j' has size 4 in one operand and 5 in the other"),
        ("ij->i", ((3, 4, 5),), "operand 0 term 'ij' names 2 dims but the input has rank 3"),
        ("i1,1k->ik", ((3, 4), (4, 5)), "holds '1'"),
        ("ij->iz", ((3, 4),), "output label 'z' is in no operand"),
        ("ij,jk->ik", ((3, 4),), "2 operand terms for 1 inputs"),
    ],
)
def test_unsupported_or_malformed_equations_name_the_node(equation, shapes, fragment) -> None:
    names = [f"x{k}" for k in range(len(shapes))]
    m = _model([helper.make_node("Einsum", names, ["y"], equation=equation, name="attn")],
               [_vi(n, list(s)) for n, s in zip(names, shapes)], [_vi("y", None)])
    with pytest.raises(OnnxImportError) as err:
        import_model(m)
    assert str(err.value).startswith("Einsum node 'attn': ")
    assert fragment in str(err.value)
    if "equation" in fragment or "label" in fragment or "term" in fragment or "holds" in fragment:
        assert f"equation '{equation}'" in str(err.value)
