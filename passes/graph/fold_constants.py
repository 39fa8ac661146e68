"""``graph-fold-constants``: partial evaluation of the graph at compile time.

Every ``graph`` op whose operands are all ``graph.constant`` is evaluated with the numpy
reference (the ``taihu.backends.reference`` interpreter functions, which call
``taihu.backends.reference.kernels``) and replaced by ``graph.constant`` ops holding the
results — CDUCA's constant folding of the model data (seed 003 L12, L20; spec algorithms.md §M2:
"fold, merge nodes and constants"). The walker revisits users, so whole constant subgraphs
(e.g. ``transpose(reshape(cst))``) collapse into one constant.

Results are stored as the dialect's ``graph.constant`` helper decides: a splat
``dense<v>`` when every element is equal, inline ``dense<[...]>`` when small, otherwise a
``dense_resource`` blob in the file's ``dialect_resources`` section.

An op is left unchanged when: a result has more than ``max_elements`` elements (folding would
materialise a huge tensor, e.g. ``add(splat, splat)`` broadcast to a large activation-sized
shape, growing the model's constant data); its element type is not a numpy dtype; or the
reference raises (e.g. unsupported attribute), so the op is evaluated at run time as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from taihu.dialects import graph
from taihu.passes.graph.utils import constant_array, ensure_builtin_loaded, erase_dead_constants, make_constant, numpy_dtype


@dataclass
class FoldConstantOperands(RewritePattern):
    """Replace a ``graph`` op with all-constant operands by constants of its results."""

    interpreter: Interpreter
    max_elements: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.dialect_name() != graph.Graph.name or isinstance(op, graph.ConstantOp):
            return
        if not op.operands or not op.results or op.regions:
            return
        args = [constant_array(v) for v in op.operands]
        if any(a is None for a in args):
            return
        dtypes: list[np.dtype] = []
        for r in op.results:
            t = r.type
            if not isinstance(t, TensorType):
                return
            dt = numpy_dtype(t)
            if dt is None:
                return
            if self.max_elements >= 0 and prod(t.get_shape()) > self.max_elements:
                return
            dtypes.append(dt)
        # Bind the operands in a fresh scope too: impls read optional operands (conv bias,
        # gemm C) from the interpreter's environment rather than from ``args``.
        self.interpreter.push_scope("fold")
        try:
            self.interpreter.set_values(zip(op.operands, args))
            values = self.interpreter.run_op(op, tuple(args))
        except Exception:  # the reference cannot evaluate it: keep the op for run time
            return
        finally:
            self.interpreter.pop_scope()
        new_ops: list[Operation] = []
        for r, dt, v in zip(op.results, dtypes, values, strict=True):
            arr = np.asarray(v)
            if tuple(arr.shape) != tuple(cast(TensorType, r.type).get_shape()):  # (checked above)
                return
            new_ops.append(make_constant(arr, dt, "folded"))
        old = tuple(op.operands)
        rewriter.replace(op, new_ops, [c.results[0] for c in new_ops])
        erase_dead_constants(rewriter, old)


@dataclass(frozen=True)
class GraphFoldConstantsPass(ModulePass):
    """Evaluate every ``graph`` op whose operands are all constants (partial evaluation,
    seed 003) and replace it by constants; operand constants left without users are erased.

    Options (``-p 'graph-fold-constants{max-elements=1024}'``):

    * ``max_elements`` (default 16 777 216 = 2**24, i.e. 64 MiB of f32): an op is folded only if
      each of its results has at most this many elements; a negative value means no limit.
    """

    name = "graph-fold-constants"

    max_elements: int = field(default=1 << 24)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        ensure_builtin_loaded(ctx)
        from taihu.backends.reference.interpreter import GraphFunctions

        interpreter = Interpreter(op)
        interpreter.register_implementations(GraphFunctions())
        PatternRewriteWalker(
            FoldConstantOperands(interpreter, self.max_elements), apply_recursively=True
        ).rewrite_module(op)
