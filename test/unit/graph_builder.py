"""Build small ``graph`` modules in Python for lowering tests (``@main`` with named arguments
``x0, x1, ...`` and results ``y0, ...``, the convention of the reference runner and the
simulator's runner)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, StringAttr, TensorType, f32, f64
from xdsl.ir import Block, Operation, Region, SSAValue

from taihu.dialects import graph


class G:
    """Append graph ops to ``func.func @main``; ``G(shape0, shape1, ...)``."""

    def __init__(self, *arg_shapes: Sequence[int], dtype: type = np.float32):
        self.dtype = dtype
        elem = f64 if dtype == np.float64 else f32
        self.block = Block(arg_types=[TensorType(elem, list(s)) for s in arg_shapes])
        self.args = list(self.block.args)
        for i, a in enumerate(self.args):
            a.name_hint = f"x{i}"

    def __call__(self, op: Operation, name: str | None = None) -> SSAValue:
        self.block.add_op(op)
        if name:
            op.results[0].name_hint = name
        return op.results[0]

    def cst(self, array: np.ndarray | float, name: str = "cst") -> SSAValue:
        v = self(graph.constant(np.asarray(array, self.dtype), name_hint=name))
        v.name_hint = name
        return v

    def module(self, *outputs: SSAValue) -> ModuleOp:
        self.block.add_op(func.ReturnOp(*outputs))
        ftype = FunctionType.from_lists([a.type for a in self.args], [o.type for o in outputs])
        f = func.FuncOp("main", ftype, Region(self.block))
        f.arg_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(f"x{i}")}) for i in range(len(self.args))])
        f.res_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(f"y{i}")}) for i in range(len(outputs))])
        module = ModuleOp([f])
        module.verify()
        return module

    def inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {
            f"x{i}": rng.standard_normal(tuple(a.type.get_shape())).astype(self.dtype)  # type: ignore[attr-defined]
            for i, a in enumerate(self.args)
        }
