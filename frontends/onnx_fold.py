"""Import-time evaluation of ONNX nodes on compile-time values: the exporters' shape sub-graphs.

PyTorch's exporters compute shapes in the graph: the legacy exporter writes
``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` for a flatten, int64 ``Mul``/``Div`` for a
view, ``ConstantOfShape``/``Expand``/``Where``/``Range`` for masks and indices. With static shapes
every such value is known at import: the frontend (:mod:`taihu.frontends.onnx`) evaluates a
node here when each of its inputs is a compile-time value (an initializer, a ``Constant``, an
earlier folded node) -- or, for ``Shape`` and ``Size``, when the input's shape is known -- and
the node either has no graph-dialect converter or works on non-float values (int64 shape
arithmetic, bool masks). The result is a compile-time value again, so a ``Reshape`` reads its
shape from it and no int64 tensor ever becomes IR.

The evaluation is onnx's own reference implementation (:class:`onnx.reference.ReferenceEvaluator`)
on a one-node model of the importing model's opset: every op and version onnx knows, with the
operator spec's semantics. A shape-only input is fed as a zero-strided numpy view of its shape
(no memory).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import NodeProto, helper

__all__ = ["SHAPE_ONLY", "FoldError", "evaluate_node", "shape_stand_in"]

#: ops whose result depends only on their input's shape (and type), not its values
SHAPE_ONLY = frozenset({"Shape", "Size"})


class FoldError(Exception):
    """A node that onnx's reference implementation could not evaluate (message: the reason)."""


def evaluate_node(node: NodeProto, inputs: Sequence[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """The outputs of ``node`` (default domain, ``opset``) on ``inputs`` (one per node input:
    None for an omitted optional input), as numpy arrays in the node's output order. Raises
    :class:`FoldError` when the reference implementation rejects the node or its inputs."""
    names = [n for n in node.input if n]
    feeds = {n: a for n, a in zip(node.input, inputs) if n and a is not None}
    if set(feeds) != set(names):  # a name may stand for several inputs
        raise FoldError("an input has no value")
    graph = helper.make_graph(
        [node], "fold",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.asarray(feeds[n]).dtype),
                                       list(np.shape(feeds[n]))) for n in dict.fromkeys(names)],
        [helper.make_empty_tensor_value_info(o) for o in node.output if o],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    # (imported here: onnx.reference loads every reference op, ~0.1 s, and most models fold nothing)
    from onnx.reference import ReferenceEvaluator

    try:
        outs = ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:  # the reference implementation raises many kinds
        raise FoldError(" ".join((str(e).strip() or type(e).__name__).split())) from None
    return [np.asarray(o) for o in outs]


def shape_stand_in(shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A read-only array of ``shape`` and ``dtype`` that takes no memory (zero strides): the input
    of a :data:`SHAPE_ONLY` op on a runtime tensor."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape))

