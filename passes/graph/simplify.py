"""``graph-simplify``: inference-time cleanup and canonical forms of the graph.

Rewrites (each only when the replacement has exactly the old result type):

* ``graph.dropout`` → its input (identity at inference; ONNX Dropout, training_mode = false);
* identity-like ops → their input: transpose with the identity perm, layout_transform with
  from_layout == to_layout, reshape / flatten / unsqueeze to the input's own type, pad with all
  pads zero, clip with (−inf, +inf), sum / concat of a single operand, and mul/div by a splat 1,
  add/sub of a splat 0 (constant on the right for sub/div, either side for add/mul);
* reshape-like chains (any mix of reshape, flatten, unsqueeze) → one ``graph.reshape`` of the
  chain's source to the final type (or the source itself when the types agree);
* ``transpose ∘ transpose`` (and layout_transform pairs) → one transpose with the composed
  permutation ``p[i] = p_inner[p_outer[i]]``, or the input when that is the identity; two
  chained layout_transforms stay a layout_transform (``from_1 → to_2``);
* dead-code elimination (option ``dce``): every op without observable effect whose results
  have no use is erased (all ``graph`` ops are ``Pure``), with xDSL's trivial-DCE during the
  walk and its liveness-based ``region_dce`` afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.transforms.dead_code_elimination import region_dce

from taihu.dialects import graph
from taihu.passes.graph.utils import constant_array

_RESHAPE_LIKE = (graph.ReshapeOp, graph.FlattenOp, graph.UnsqueezeOp)
_PERMUTE = (graph.TransposeOp, graph.LayoutTransformOp)


def _perm(op: Operation) -> tuple[int, ...]:
    """The permutation of a transpose / layout_transform (out dim i = in dim perm[i])."""
    perm = op.perm  # type: ignore[attr-defined]
    if perm is None:  # transpose default: reverse the dims
        rank = len(op.operands[0].type.get_shape())  # type: ignore[attr-defined]
        return tuple(range(rank - 1, -1, -1))
    return tuple(int(p) for p in perm)


def _splat_value(value: SSAValue) -> float | None:
    """The single value of a constant whose elements are all equal, else None."""
    arr = constant_array(value)
    if arr is None or arr.size == 0:
        return None
    first = arr.reshape(-1)[0]
    return float(first) if np.all(arr == first) else None


def _forward(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> bool:
    """Replace ``op`` (one result) by ``value`` if the types agree."""
    if len(op.results) != 1 or value.type != op.results[0].type:
        return False
    rewriter.replace(op, [], [value])
    return True


class RemoveIdentityLike(RewritePattern):
    """Dropout and ops that compute the identity → their input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, graph.DropoutOp):
            _forward(op, op.operands[0], rewriter)
        elif isinstance(op, _PERMUTE):
            perm = _perm(op)
            if perm == tuple(range(len(perm))):
                _forward(op, op.operands[0], rewriter)
        elif isinstance(op, _RESHAPE_LIKE):
            _forward(op, op.operands[0], rewriter)  # only when the type is unchanged
        elif isinstance(op, graph.PadOp):
            if all(int(p) == 0 for p in op.pads):
                _forward(op, op.operands[0], rewriter)
        elif isinstance(op, graph.ClipOp):
            if float(op.min) == -np.inf and float(op.max) == np.inf:
                _forward(op, op.operands[0], rewriter)
        elif isinstance(op, (graph.SumOp, graph.ConcatOp)):
            if len(op.operands) == 1:
                _forward(op, op.operands[0], rewriter)
        elif isinstance(op, (graph.MulOp, graph.AddOp, graph.SubOp, graph.DivOp)):
            neutral = 1.0 if isinstance(op, (graph.MulOp, graph.DivOp)) else 0.0
            commutative = isinstance(op, (graph.MulOp, graph.AddOp))
            if _splat_value(op.rhs) == neutral:
                _forward(op, op.lhs, rewriter)
            elif commutative and _splat_value(op.lhs) == neutral:
                _forward(op, op.rhs, rewriter)


class MergeReshapeChain(RewritePattern):
    """``reshape-like(reshape-like(x))`` → ``reshape(x)`` to the outer result type."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, _RESHAPE_LIKE):
            return
        inner_val = op.operands[0]
        if not isinstance(inner_val, OpResult) or not isinstance(inner_val.op, _RESHAPE_LIKE):
            return
        source = inner_val.op.operands[0]
        result_type = op.results[0].type
        if source.type == result_type:
            rewriter.replace(op, [], [source])
        else:
            rewriter.replace(op, graph.ReshapeOp(source, result_type))


class FoldPermutationPair(RewritePattern):
    """``transpose(transpose(x))`` → one transpose with the composed perm (or ``x``)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, _PERMUTE):
            return
        inner_val = op.operands[0]
        if not isinstance(inner_val, OpResult) or not isinstance(inner_val.op, _PERMUTE):
            return
        inner = inner_val.op
        p_inner, p_outer = _perm(inner), _perm(op)
        composed = tuple(p_inner[i] for i in p_outer)
        source = inner.operands[0]
        if composed == tuple(range(len(composed))):
            _forward(op, source, rewriter)
            return
        if isinstance(op, graph.LayoutTransformOp) and isinstance(inner, graph.LayoutTransformOp):
            new: Operation = graph.LayoutTransformOp(
                source, from_layout=str(inner.from_layout), to_layout=str(op.to_layout)
            )
        else:
            new = graph.TransposeOp(source, perm=composed)
        if new.results[0].type == op.results[0].type:
            rewriter.replace(op, new)


@dataclass(frozen=True)
class GraphSimplifyPass(ModulePass):
    """Drop dropout and identity-like ops, merge reshape and transpose chains, and erase dead
    graph ops.

    Options (``-p 'graph-simplify{dce=false}'``):

    * ``dce`` (default true): erase unused ``graph`` ops after simplifying.
    """

    name = "graph-simplify"

    dce: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [RemoveIdentityLike(), MergeReshapeChain(), FoldPermutationPair()],
                dce_enabled=self.dce,
            ),
            apply_recursively=True,
        ).rewrite_module(op)
        if self.dce:
            # graph ops carry the Pure trait, so xDSL's liveness-based DCE removes them
            # (whole dead chains, in one fixpoint).
            region_dce(op.body)
