"""``convert-graph-to-tile``: bufferize a ``graph`` module and lower every op to ``tile.kernel``s.

Input: ``func.func``s on static ``tensor`` values (the graph dialect, design.md level 1).
Output (lowering contract, level 2)::

    memref.global "private" constant @conv1_w : memref<64x3x7x7xf32>       // graph.constant
    func.func @main(%x: memref<1x3x224x224xf32> {graph.name = "data"}) -> (memref<1x1000xf32> {graph.name = "prob"}) {
      %w = memref.get_global @conv1_w : memref<64x3x7x7xf32>
      %t0 = memref.alloc() {alignment = 128 : i64} : memref<1x64x112x112xf32>
      tile.kernel "conv1" (%a = %x : ..., %b = %w : ..., %c = %t0 : ...) {...} {taihu.layer = "conv1", ...}
      ...
      func.return %t9 : memref<1x1000xf32>
    }

Steps: (1) function arguments become memrefs (``bufferization.to_tensor`` at entry) and
returned tensors go through ``bufferization.to_buffer``; (2) one ``RewritePattern`` per graph op
(:mod:`.maps`: memory-bound ops and views; :mod:`.gemm`, :mod:`.conv`: matmul/gemm/conv2d),
applied by a ``PatternRewriteWalker`` in program order so a producer sees its single-use
element-wise consumer and fuses it; (3) ``to_buffer(to_tensor(m))`` folds into ``m`` and the
remaining ``graph.constant``s become ``memref.global``s (:mod:`.common`); (4) every returned
buffer is a distinct ``memref.alloc`` (a returned argument, global or view is copied into one)
so that loop-to-sw can make it the output global.

Options (``-p 'convert-graph-to-tile{conv-algorithm=im2col fuse=false}'``):

* ``conv_algorithm`` (auto | implicit | im2col | winograd | depthwise | grouped): convolution
  algorithm (:mod:`.conv`; ``depthwise``: :mod:`.depthwise`, group = C = M layers; ``grouped``:
  :mod:`.grouped`, the other group > 1 layers);
* ``fuse`` (default true): absorb single-use trailing element-wise ops (relu ...) into the
  producer kernel while its output tile is in LDM;
* ``ldm_budget`` (bytes per CPE, 0 = the target machine's ``ldm_user_bytes``, 57 344 B [param]
  on ``sw26010``); the tilings keep :data:`LDM_RESERVE` of it free for tile-to-loop's 32-B buffer
  rounding and DMA scratch buffers.

Every plan is made for the module's machine (``target.machine``, :func:`~taihu.dialects.target.machine_of`):
its LDM budget, DMA and RLC parameters and instruction latencies drive the analytic model.

Errors: ``PassFailedException`` naming the op (unsupported op, element type or parameter).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import FunctionType, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects import graph
from taihu.passes.conversion.graph_to_tile.cast import lower_boundary_casts
from taihu.passes.conversion.graph_to_tile.common import (
    LDM_RESERVE,
    LoweringState,
    check_element_type,
    constant_to_global,
    lowering_state,
    memref_type,
)
from taihu.target.machine import MachineConfigError

__all__ = ["CONV_ALGORITHMS", "LDM_RESERVE", "ConvertGraphToTilePass"]

CONV_ALGORITHMS = ("auto", "implicit", "im2col", "winograd", "depthwise", "grouped")

def collect_patterns(state: LoweringState) -> list[RewritePattern]:
    """The patterns of every lowering module: memory-bound ops and views, GEMMs, convolutions."""
    from taihu.passes.conversion.graph_to_tile import conv, gemm, maps

    return [*maps.patterns(state), *gemm.patterns(state), *conv.patterns(state)]


@dataclass(frozen=True)
class ConvertGraphToTilePass(ModulePass):
    """Bufferize a graph module and lower it to ``tile.kernel``s (module docstring)."""

    name = "convert-graph-to-tile"

    conv_algorithm: str = "auto"
    fuse: bool = True
    ldm_budget: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.conv_algorithm not in CONV_ALGORITHMS:
            raise PassFailedException(
                f"convert-graph-to-tile: conv-algorithm must be one of {', '.join(CONV_ALGORITHMS)}, "
                f"got '{self.conv_algorithm}'"
            )
        from taihu.passes.graph.utils import ensure_builtin_loaded

        ensure_builtin_loaded(ctx)
        if self.ldm_budget < 0:
            raise PassFailedException(
                f"convert-graph-to-tile: ldm-budget must be >= 0 bytes, got {self.ldm_budget}")
        try:
            state = lowering_state(op, conv_algorithm=self.conv_algorithm, fuse=self.fuse,
                                   ldm_budget=self.ldm_budget)
        except MachineConfigError as e:
            raise PassFailedException(f"convert-graph-to-tile: {e}") from None
        funcs = [f for f in op.walk() if isinstance(f, func.FuncOp)]
        for f in funcs:
            lower_boundary_casts(f)  # f16 arguments / results: the host's conversions (.cast)
            _bufferize_signature(f)
        try:
            PatternRewriteWalker(
                GreedyRewritePatternApplier(collect_patterns(state)),
                apply_recursively=False,
            ).rewrite_module(op)
        except ValueError as e:  # a planner's refusal (e.g. no blocking fits ldm-budget): a diagnostic
            raise PassFailedException(f"convert-graph-to-tile: {e}") from None
        _fold_buffer_casts(op)
        for c in [o for o in op.walk() if isinstance(o, graph.ConstantOp)]:
            if c.result.uses:
                constant_to_global(state, c)
            else:
                Rewriter.erase_op(c)
        _fold_buffer_casts(op)
        left = [o for o in op.walk() if o.dialect_name() == "graph"]
        if left:
            raise PassFailedException(f"convert-graph-to-tile: no lowering for {left[0].name}")
        for f in funcs:
            _finish_returns(state, f)
        for o in op.walk():
            if isinstance(o, (bufferization.ToTensorOp, bufferization.ToBufferOp)):
                raise PassFailedException(
                    f"convert-graph-to-tile: a tensor value is still used by {[u.operation.name for r in o.results for u in r.uses]}"
                )


# --------------------------------------------------------------------------------------------
# Signature, returns, casts
# --------------------------------------------------------------------------------------------


def _bufferize_signature(f: func.FuncOp) -> None:
    """Tensor arguments -> memrefs (+ ``to_tensor`` at entry); returned tensors -> ``to_buffer``."""
    if f.body.blocks.first is None:
        return
    block = f.body.block
    inputs: list[Attribute] = []
    for arg in list(block.args):
        t = arg.type
        if isinstance(t, TensorType):
            check_element_type(arg)
            mt = memref_type(t)
            new = Rewriter.replace_value_with_new_type(arg, mt)
            tt = bufferization.ToTensorOp(new, restrict=True)
            Rewriter.insert_op(tt, InsertPoint.at_start(block))

            def not_the_cast(u: Use, tt: Operation = tt) -> bool:
                return u.operation is not tt

            new.replace_uses_with_if(tt.tensor, not_the_cast)
            inputs.append(mt)
        else:
            inputs.append(t)
    outputs = []
    for t in f.function_type.outputs.data:
        outputs.append(memref_type(t) if isinstance(t, TensorType) else t)
    f.function_type = FunctionType.from_lists(inputs, outputs)
    for ret in [o for o in f.walk() if isinstance(o, func.ReturnOp)]:
        for i, v in enumerate(ret.operands):
            t = v.type
            if isinstance(t, TensorType):
                tb = bufferization.ToBufferOp.build(operands=[v], result_types=[memref_type(t)])
                Rewriter.insert_op(tb, InsertPoint.before(ret))
                ret.operands[i] = tb.results[0]


def _fold_buffer_casts(module: ModuleOp) -> None:
    """``to_buffer(to_tensor(m))`` -> ``m``; dead ``to_tensor`` ops are erased."""
    for o in list(module.walk()):
        if isinstance(o, bufferization.ToBufferOp):
            src = o.tensor
            if isinstance(src, OpResult) and isinstance(src.op, bufferization.ToTensorOp):
                if src.op.memref.type == o.memref.type:
                    o.memref.replace_all_uses_with(src.op.memref)
                    Rewriter.erase_op(o)
    for o in list(module.walk()):
        if isinstance(o, bufferization.ToTensorOp) and not o.tensor.uses:
            Rewriter.erase_op(o)


def _root_alloc(v: SSAValue) -> Operation | None:
    return v.op if isinstance(v, OpResult) and isinstance(v.op, memref.AllocOp) else None


def _finish_returns(state: LoweringState, f: func.FuncOp) -> None:
    """Every returned memref must be its own ``memref.alloc`` (not an argument, a global, a
    view or a buffer returned twice): otherwise copy it into a fresh buffer."""
    from taihu.passes.conversion.graph_to_tile.maps import emit_copy_kernel

    for ret in [o for o in f.walk() if isinstance(o, func.ReturnOp)]:
        seen: set[int] = set()
        for i, v in enumerate(ret.operands):
            if not isinstance(v.type, MemRefType):
                continue
            root = _root_alloc(v)
            if root is not None and id(root) not in seen:
                seen.add(id(root))
                continue
            ret.operands[i] = emit_copy_kernel(state, v, InsertPoint.before(ret), f"output_{i}")
