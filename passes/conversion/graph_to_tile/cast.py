"""float16 at the function boundary in ``convert-graph-to-tile``: the host's conversions.

The ONNX frontend imports a float16 model as "f16 storage, f32 compute" (:mod:`taihu.frontends.onnx`):
each f16 function argument is read only by ``graph.cast`` to f32, each f16 result is a
``graph.cast`` of an f32 value. The simulated core group cannot hold f16: its main-memory and
LDM types are f32 and f64 (the SW26010 has no half-precision arithmetic; 004 L2199 notes that its
instruction set does not even fully support single precision and hopes for FP16 in a later
generation). So those casts are not kernels; they are the host's conversions around the run:

* an f16 argument becomes a memref of its casts' result type (f32; an unused one: f32) and the
  casts are replaced by it: the input buffer is f32, and the runner writes the f16 input into it (exactly: every f16 is
  an f32; ``taihu-run`` and :func:`taihu.backends.sim.runner.simulate` convert an input array to
  its buffer's type);
* an f16 result becomes the cast's f32 operand: the output buffer is f32 and ``taihu-run``
  rounds it to f16 after the run (:func:`taihu.tools.run.run_swsim`, from the graph module's
  result types), as the reference's ``graph.cast`` does.

What the lowered program stores in f16: nothing -- its weights, activations and io buffers are
f32; f16 exists only in the model's interface (the numpy arrays given and returned).

Any other ``graph.cast`` (between f32 and f64, or on a value that is not an argument / a
returned result) has no lowering: a ``PassFailedException`` naming it.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import Float16Type, FunctionType, TensorType, f32
from xdsl.ir import Attribute, OpResult
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects import graph

__all__ = ["lower_boundary_casts"]


def _is_f16(t: Attribute) -> bool:
    return isinstance(t, TensorType) and isinstance(t.element_type, Float16Type)


def _fail(message: str) -> PassFailedException:
    return PassFailedException(f"convert-graph-to-tile: {message}")


def lower_boundary_casts(f: func.FuncOp) -> None:
    """Rewrite ``f``'s f16 arguments and results to their cast's f32 / f64 type, erasing the
    boundary ``graph.cast`` ops (module docstring). Raises ``PassFailedException`` for an f16
    argument read by anything but casts to one type, an f16 result not made by a cast, or a cast
    that is not at the boundary."""
    if f.body.blocks.first is None:
        return
    block = f.body.block
    fname = f.sym_name.data
    inputs = list(f.function_type.inputs.data)
    for i, arg in enumerate(list(block.args)):
        if not _is_f16(arg.type):
            continue
        readers = [u.operation for u in arg.uses]
        types = {r.results[0].type for r in readers if isinstance(r, graph.CastOp)}
        if not readers:  # unused: an f32 buffer all the same (the runner converts what it is given)
            assert isinstance(arg.type, TensorType)
            types = {TensorType(f32, arg.type.get_shape())}
        elif len(types) != 1 or not all(isinstance(r, graph.CastOp) for r in readers):
            other = next((r.name for r in readers if not isinstance(r, graph.CastOp)), "casts to several types")
            raise _fail(f"@{fname} argument {i} is f16 and read by {other}: an f16 argument must be read only "
                        "by graph.cast to f32 or f64 (f16 storage, f32 compute; the host converts it)")
        (to,) = types
        new = Rewriter.replace_value_with_new_type(arg, to)
        for r in readers:
            r.results[0].replace_all_uses_with(new)
            Rewriter.erase_op(r)
        inputs[i] = to
    outputs = list(f.function_type.outputs.data)
    for ret in [o for o in f.walk() if isinstance(o, func.ReturnOp)]:
        for i, v in enumerate(ret.operands):
            if not _is_f16(v.type):
                continue
            if not (isinstance(v, OpResult) and isinstance(v.op, graph.CastOp)):
                maker = v.op.name if isinstance(v, OpResult) else "an argument"
                raise _fail(f"@{fname} result {i} is f16 and made by {maker}: an f16 result must be a graph.cast "
                            "from f32 or f64 (the host rounds it)")
            cast = v.op
            ret.operands[i] = cast.input
            outputs[i] = cast.input.type
            if not cast.results[0].uses:
                Rewriter.erase_op(cast)
    f.function_type = FunctionType.from_lists(inputs, outputs)
    left = next((o for o in f.walk() if isinstance(o, graph.CastOp)), None)
    if left is not None:
        raise _fail(f"graph.cast {left.input.type} -> {left.result.type} inside @{fname} has no lowering: only "
                    "the f16 casts of arguments and results (the host's conversions) are lowered")
