"""Reference (golden-model) execution of ``graph`` dialect modules with numpy.

- :mod:`taihu.backends.reference.kernels`: one pure numpy function per ``graph`` op.
- :mod:`taihu.backends.reference.interpreter`: ``GraphFunctions``, the xDSL ``InterpreterFunctions``.
- :func:`run_module`: run ``func.func @main`` of a module on named inputs.

Function-level conventions (shared with the ONNX importer): ``@main``'s arguments are the graph
inputs, named by the argument attribute ``graph.name``; its results are the graph outputs in ONNX
order, named by the result attribute ``graph.name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.interpreter import Interpreter

from taihu.backends.reference.interpreter import GraphFunctions
from taihu.dialects.resources import element_dtype

__all__ = [
    "GraphFunctions",
    "ReferenceInputError",
    "TensorSpec",
    "entry_function",
    "input_specs",
    "output_names",
    "run_module",
]

NAME_ATTR = "graph.name"


class ReferenceInputError(ValueError):
    """Inputs do not match ``@main``'s signature (missing, extra, wrong shape or dtype)."""


@dataclass(frozen=True)
class TensorSpec:
    """A graph input: its name (``graph.name`` or ``argN``), static shape and numpy dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


def entry_function(module: ModuleOp) -> func.FuncOp:
    """``func.func @main`` of ``module`` (or its only ``func.func``); ``ReferenceInputError`` otherwise."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    if len(funcs) == 1:
        return funcs[0]
    names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
    raise ReferenceInputError(f"module has no func.func @main to run (functions: {names})")


def _names(attrs, count: int, prefix: str) -> list[str]:
    names = []
    for i in range(count):
        name = f"{prefix}{i}"
        if attrs is not None and i < len(attrs.data):
            d = attrs.data[i]
            given = d.data.get(NAME_ATTR) if isinstance(d, DictionaryAttr) else None
            if isinstance(given, StringAttr):
                name = given.data
        names.append(name)
    return names


def input_specs(module_or_func: ModuleOp | func.FuncOp) -> list[TensorSpec]:
    """Name, shape and dtype of every argument of ``@main`` (names: ``graph.name`` or ``argN``).

    Raises ``ReferenceInputError`` for an argument that is not a statically shaped tensor of an
    element type with a numpy dtype.
    """
    fn = entry_function(module_or_func) if isinstance(module_or_func, ModuleOp) else module_or_func
    types = fn.function_type.inputs.data
    specs = []
    for i, (name, ty) in enumerate(zip(_names(fn.arg_attrs, len(types), "arg"), types)):
        where = f"argument {i} ({name}) of @{fn.sym_name.data}"
        if not isinstance(ty, TensorType):
            raise ReferenceInputError(f"{where} is {ty}, not a tensor")
        if any(d < 0 for d in ty.get_shape()):
            raise ReferenceInputError(f"{where} has a dynamic shape ({ty}); static shapes are required")
        try:
            dtype = element_dtype(ty.element_type)
        except ValueError as e:
            raise ReferenceInputError(f"{where}: {e}") from None
        specs.append(TensorSpec(name, tuple(ty.get_shape()), dtype))
    return specs


def output_names(module_or_func: ModuleOp | func.FuncOp) -> list[str]:
    """Names of ``@main``'s results in order (``graph.name`` result attribute, else ``outN``)."""
    fn = entry_function(module_or_func) if isinstance(module_or_func, ModuleOp) else module_or_func
    count = len(fn.function_type.outputs.data)
    names = _names(fn.res_attrs, count, "out")
    seen: set[str] = set()
    for i, n in enumerate(names):  # keep keys unique even if two results share a name
        if n in seen:
            names[i] = f"out{i}"
        seen.add(names[i])
    return names


def bind_inputs(specs: list[TensorSpec], inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Order ``inputs`` (keyed by name or ``argN``) as ``specs``; check shapes and dtypes.

    Raises ``ReferenceInputError`` naming the missing, unexpected or mismatching input.
    """
    used: set[str] = set()
    values = []
    for i, spec in enumerate(specs):
        keys = [k for k in dict.fromkeys((spec.name, f"arg{i}")) if k in inputs]
        if not keys:
            raise ReferenceInputError(
                f"missing input '{spec.name}' (argument {i}, {spec.dtype}{list(spec.shape)})"
            )
        if len(keys) > 1:
            raise ReferenceInputError(f"input '{spec.name}' given twice (as '{keys[0]}' and '{keys[1]}')")
        used.add(keys[0])
        value = np.asarray(inputs[keys[0]])
        if value.shape != spec.shape:
            raise ReferenceInputError(
                f"input '{spec.name}' has shape {list(value.shape)}, expected {list(spec.shape)}"
            )
        if value.dtype != spec.dtype:
            raise ReferenceInputError(f"input '{spec.name}' has dtype {value.dtype}, expected {spec.dtype}")
        values.append(value)
    extra = [k for k in inputs if k not in used]
    if extra:
        expected = ", ".join(f"'{s.name}'" for s in specs) or "none"
        raise ReferenceInputError(
            f"unexpected input{'s' if len(extra) > 1 else ''} {', '.join(repr(k) for k in extra)} "
            f"(graph inputs: {expected})"
        )
    return values


def run_module(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``func.func @main`` of a ``graph`` module with the numpy reference interpreter.

    ``inputs`` maps each argument's ``graph.name`` (or positional ``arg0``, ``arg1``...) to an
    array of exactly the argument's shape and dtype. Returns the results in order, keyed by the
    result ``graph.name`` attribute (falling back to ``out0``...).

    Raises ``ReferenceInputError`` for a missing, extra or mismatching input, and xDSL's
    ``InterpretationError`` when an op has no implementation or computes an unexpected type.
    """
    # (importing any xdsl.interpreters module runs that package's __init__, which imports every
    # xDSL interpreter, riscv and snitch included: ~0.3 s, paid only when the reference runs --
    # not by graph-fold-constants or taihu-run's input generation, which import this package)
    from xdsl.interpreters.func import FuncFunctions

    fn = entry_function(module)
    args = bind_inputs(input_specs(fn), inputs)
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(GraphFunctions())
    results = interpreter.call_op(fn.sym_name.data, tuple(args))
    return {name: np.asarray(value) for name, value in zip(output_names(fn), results, strict=True)}
