"""Helpers shared by the graph passes: constant lookup, element dtypes, dead-constant cleanup.

Not a pass. Everything here works on the `graph` dialect of ``taihu.dialects.graph``
(value semantics on static ``tensor<...>`` types).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from taihu.dialects import graph
from taihu.dialects.resources import element_dtype


def defining_constant(value: SSAValue) -> graph.ConstantOp | None:
    """The ``graph.constant`` that defines ``value``, or None (block argument or other op)."""
    if isinstance(value, OpResult) and isinstance(value.op, graph.ConstantOp):
        return value.op
    return None


def constant_array(value: SSAValue | None) -> np.ndarray | None:
    """The numpy value of ``value`` if a ``graph.constant`` defines it, else None.

    The array is read-only, with the tensor's shape and element dtype.
    """
    if value is None:
        return None
    op = defining_constant(value)
    if op is None:
        return None
    return graph.constant_value(op)


def numpy_dtype(t: Attribute) -> np.dtype | None:
    """numpy dtype of a tensor type's element type (f16/f32/f64, i1..i64, ui*), or None if it has
    none (bf16, index, ...). The mapping is :func:`taihu.dialects.resources.element_dtype`."""
    elem = t.element_type if isinstance(t, TensorType) else t
    try:
        return element_dtype(elem)
    except ValueError:
        return None


def element_type(value: SSAValue) -> Attribute | None:
    """Element type of a tensor-typed value, or None for a non-tensor value."""
    t = value.type
    return t.element_type if isinstance(t, TensorType) else None


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """Static shape of a tensor-typed value (``TensorType`` required)."""
    t = value.type
    assert isinstance(t, TensorType), t
    return tuple(int(d) for d in t.get_shape())


def has_single_use(value: SSAValue, user: Operation) -> bool:
    """True if ``value`` has exactly one use and that use belongs to ``user``."""
    uses = list(value.uses)
    return len(uses) == 1 and uses[0].operation is user


def erase_dead_constants(rewriter: PatternRewriter, values: Iterable[SSAValue | None]) -> None:
    """Erase the ``graph.constant`` ops defining ``values`` that no longer have any use."""
    seen: set[int] = set()
    for v in values:
        if v is None:
            continue
        op = defining_constant(v)
        if op is None or id(op) in seen or op.parent is None:
            continue
        seen.add(id(op))
        if all(not r.uses for r in op.results):
            rewriter.erase(op)


def make_constant(array: np.ndarray, dtype: np.dtype, name_hint: str) -> graph.ConstantOp:
    """A ``graph.constant`` holding ``array`` cast to ``dtype`` (splat/inline/resource as the
    dialect helper decides)."""
    return graph.constant(np.ascontiguousarray(np.asarray(array).astype(dtype)), name_hint=name_hint)


def ensure_builtin_loaded(ctx: Context) -> None:
    """Load the builtin dialect into ``ctx`` if it is not loaded yet.

    Passes that create ``dense_resource`` constants call this: xDSL's printer looks the blobs up
    through the *loaded* builtin dialect's ``OpAsmDialectInterface`` and fails an assertion when
    the input file never named a builtin op (a bare ``func.func`` without ``builtin.module``).
    """
    if all(d.name != Builtin.name for d in ctx.loaded_dialects):
        if Builtin.name in ctx.registered_dialect_names:
            ctx.load_registered_dialect(Builtin.name)
        else:
            ctx.load_dialect(Builtin)
