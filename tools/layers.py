"""Single-layer ``graph`` modules: one convolution or GEMM as it appears in a network.

``taihu-tune`` simulates a candidate schedule of a problem on a module holding that layer alone;
the benchmarks (``benchmarks/kernels.py``, ``benchmarks/tuning.py``) and the tests build their
layers with the same code:

* :class:`GraphBuilder` appends ``graph`` ops to ``func.func @main`` whose arguments are named
  ``x0, x1, ...`` and results ``y0, ...`` (the convention of the reference runner and the
  simulator's runner);
* :func:`conv_module`: a :class:`~taihu.backends.model.conv.ConvShape` as a layer after
  batch-norm folding -- constant random weights and bias, ResNet's shortcut sum as a second
  input ``x1`` when ``residual``, the trailing relu when ``relu``;
* :func:`gemm_module` (``graph.gemm``, the FC layer) and :func:`matmul_module` (``graph.matmul``)
  for a :class:`~taihu.backends.model.conv.GemmShape`: operands stored as the shape says,
  constant (random) where it says so, the epilogue (full C, bias row/column, alpha/beta
  scalars, a residual sum, relus) rebuilt from its counts;
* :func:`lstm_module`: a forward ``graph.lstm`` of an :class:`~taihu.backends.model.lstm_plan.LstmShape`;
* :func:`layer_module` dispatches on the op kind (``"conv2d"``, ``"gemm"``, ``"matmul"``, ``"lstm"``);
* :func:`extract_module`: the ops of one kernel cut out of a network as they are (a memory-bound
  op and the element-wise consumers its kernel absorbs): their outside operands become
  arguments (constants are copied), for problems no builder expresses from a shape (the
  memory-bound families, ``taihu-tune``).

Random values come from ``numpy.random.default_rng(seed)``: weights are standard normal times
0.1, biases and inputs standard normal, so a layer is reproducible. A shape none of these
builders can express (e.g. the inner GEMM of an im2col convolution, with leading dimensions of
its own) is a :class:`LayerBuildError` naming the field.

:func:`declared_blobs_released` scopes the process-wide resource table (the bytes of large
constants, :mod:`taihu.dialects.resources`): blobs declared inside the ``with`` block (the
layer's weights, the globals the lowering derives from them) are dropped at its end, so a
process that builds and lowers thousands of candidate modules does not keep their weights.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
)
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue

from taihu.backends.model.conv import ConvShape, GemmShape
from taihu.backends.model.lstm_plan import LstmShape
from taihu.backends.model.map_plans import MapShape
from taihu.dialects import graph

__all__ = [
    "GraphBuilder",
    "LayerBuildError",
    "LayerModule",
    "conv_module",
    "declared_blobs_released",
    "extract_module",
    "flops",
    "gemm_module",
    "layer_module",
    "lstm_module",
    "matmul_module",
]

#: op kinds :func:`layer_module` builds
LAYER_KINDS = ("conv2d", "gemm", "matmul", "lstm")

#: scale of the random weights (keeps deep sums of products in a sensible range)
WEIGHT_SCALE = 0.1


class LayerBuildError(ValueError):
    """A problem shape that no single-layer module expresses (the message names the field)."""


class GraphBuilder:
    """Append graph ops to ``func.func @main``; ``GraphBuilder(shape0, shape1, ...)`` makes the
    arguments ``x0, x1, ...`` of those shapes and ``dtype`` (float32 or float64)."""

    def __init__(self, *arg_shapes: Sequence[int], dtype: type = np.float32):
        self.dtype = dtype
        elem = f64 if dtype == np.float64 else f32
        self.block = Block(arg_types=[TensorType(elem, list(s)) for s in arg_shapes])
        self.args = list(self.block.args)
        for i, a in enumerate(self.args):
            a.name_hint = f"x{i}"

    def __call__(self, op: Operation, name: str | None = None) -> SSAValue:
        """Append ``op``; its first result (named ``name`` if given)."""
        self.block.add_op(op)
        if name:
            op.results[0].name_hint = name
        return op.results[0]

    def cst(self, array: np.ndarray | float, name: str = "cst") -> SSAValue:
        """A ``graph.constant`` of ``array`` (converted to the builder's dtype)."""
        v = self(graph.constant(np.asarray(array, self.dtype), name_hint=name))
        v.name_hint = name
        return v

    def module(self, *outputs: SSAValue) -> ModuleOp:
        """Return ``outputs`` from ``@main`` and wrap it in a verified module."""
        self.block.add_op(func.ReturnOp(*outputs))
        ftype = FunctionType.from_lists([a.type for a in self.args], [o.type for o in outputs])
        f = func.FuncOp("main", ftype, Region(self.block))
        f.arg_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(f"x{i}")}) for i in range(len(self.args))])
        f.res_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(f"y{i}")}) for i in range(len(outputs))])
        module = ModuleOp([f])
        module.verify()
        return module

    def inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Standard normal arrays for ``x0, x1, ...`` from ``default_rng(seed)``."""
        rng = np.random.default_rng(seed)
        return {
            f"x{i}": rng.standard_normal(tuple(a.type.get_shape())).astype(self.dtype)  # type: ignore[attr-defined]
            for i, a in enumerate(self.args)
        }


@dataclass
class LayerModule:
    """A single-layer module, its inputs (keyed ``x0, x1, ...``) and the op that carries the
    layer's schedule (``graph.conv2d`` / ``graph.gemm`` / ``graph.matmul``)."""

    module: ModuleOp
    inputs: dict[str, np.ndarray]
    op: Operation


def _np_dtype(dtype: str) -> type:
    if dtype not in ("f32", "f64"):
        raise LayerBuildError(f"dtype={dtype}: a layer module is f32 or f64")
    return np.float64 if dtype == "f64" else np.float32


def _random(rng: np.random.Generator, shape: Sequence[int], dtype: type, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(tuple(shape)) * scale).astype(dtype)


def conv_module(s: ConvShape, seed: int = 0) -> LayerModule:
    """One conv layer (module docstring): input ``x0`` (n, c, h, w); ``s.residual``: a second
    input ``x1`` shaped like the output, added to it; then a relu when ``s.relu``. Constant
    weights unless ``s.const_weights`` is False (then the weights are input ``x1``, the shortcut
    ``x2``)."""
    dt = _np_dtype(s.dtype)
    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, ...]] = [(s.n, s.c, s.h, s.w)]
    if not s.const_weights:
        shapes.append((s.m, s.cg, s.kh, s.kw))
    if s.residual:
        shapes.append((s.n, s.m, s.ho, s.wo))
    g = GraphBuilder(*shapes, dtype=dt)
    w = g.cst(_random(rng, (s.m, s.cg, s.kh, s.kw), dt, WEIGHT_SCALE), "w") if s.const_weights else g.args[1]
    b = g.cst(_random(rng, (s.m,), dt), "b") if s.bias else None
    conv = graph.Conv2dOp(g.args[0], w, b, strides=s.strides, pads=s.pads, dilations=s.dilations, group=s.group)
    y = g(conv, "conv")
    if s.residual:
        y = g(graph.AddOp(y, g.args[-1]), "sum")
    if s.relu:
        y = g(graph.ReluOp(y), "relu")
    return LayerModule(g.module(y), g.inputs(seed), conv)


def _gemm_epilogue(s: GemmShape, has_c: bool) -> tuple[float, float, int]:
    """(alpha, beta, relus) giving ``s.maps`` / ``s.scalars`` in
    ``graph_to_tile.gemm.gemm_op_problem`` (alpha != 1 is a map and a scalar, beta != 1 with a
    bias C a scalar, each absorbed consumer a map)."""
    beta_scalar = 1 if (has_c and s.scalars >= 1 and not s.c_full) else 0
    alpha_scalar = s.scalars - beta_scalar
    if alpha_scalar not in (0, 1) or (s.c_full and s.scalars):
        raise LayerBuildError(f"scalars={s.scalars}: not expressible with alpha/beta for this C")
    relus = s.maps - alpha_scalar - (1 if s.residual else 0)
    if relus < 0:
        raise LayerBuildError(f"maps={s.maps}: fewer than the alpha scale and the residual sum need")
    return (0.5 if alpha_scalar else 1.0), (0.5 if beta_scalar else 1.0), relus


def _unsupported(s: GemmShape, fields: Sequence[str]) -> None:
    default = GemmShape(1, 1, 1)
    for f in fields:
        if getattr(s, f) != getattr(default, f):
            raise LayerBuildError(f"{f}={getattr(s, f)}: a single {type(s).__name__} layer has no such operand")


def gemm_module(s: GemmShape, seed: int = 0) -> LayerModule:
    """One ``graph.gemm`` (ONNX Gemm) with the storage and epilogue of ``s``: A ``(m, k)`` (or
    ``(k, m)`` if ``trans_a``) and B ``(k, n)`` (``(n, k)`` if ``trans_b``) constant when
    ``const_a/b``, else inputs; C a full ``(m, n)`` input (``c_full``), a constant bias row
    ``(n,)`` or column ``(m, 1)`` (``bias_along``); alpha / beta 0.5 for ``scalars``; a residual
    input added to the result; ``relu`` for the remaining ``maps``. ``LayerBuildError`` for
    fields only inner GEMMs have (leading dims, batch, padding)."""
    _unsupported(s, ("lda", "ldb", "ldc", "batch", "b_clean", "pad_n"))
    dt = _np_dtype(s.dtype)
    rng = np.random.default_rng(seed)
    a_shape = (s.k, s.m) if s.trans_a else (s.m, s.k)
    b_shape = (s.n, s.k) if s.trans_b else (s.k, s.n)
    has_c = s.c_full or s.bias_along is not None
    alpha, beta, relus = _gemm_epilogue(s, has_c)
    shapes: list[tuple[int, ...]] = []
    if not s.const_a:
        shapes.append(a_shape)
    if not s.const_b:
        shapes.append(b_shape)
    if s.c_full:
        shapes.append((s.m, s.n))
    if s.residual:
        shapes.append((s.m, s.n))
    g = GraphBuilder(*shapes, dtype=dt)
    args = iter(g.args)
    a = g.cst(_random(rng, a_shape, dt, WEIGHT_SCALE), "a") if s.const_a else next(args)
    b = g.cst(_random(rng, b_shape, dt, WEIGHT_SCALE), "w") if s.const_b else next(args)
    c: SSAValue | None = None
    if s.c_full:
        c = next(args)
    elif s.bias_along == "n":
        c = g.cst(_random(rng, (s.n,), dt), "bias")
    elif s.bias_along == "m":
        c = g.cst(_random(rng, (s.m, 1), dt), "bias")
    op = graph.GemmOp(a, b, c, alpha=alpha, beta=beta, trans_a=s.trans_a, trans_b=s.trans_b)
    y = g(op, "gemm")
    if s.residual:
        y = g(graph.AddOp(y, next(args)), "sum")
    for i in range(relus):
        y = g(graph.ReluOp(y), f"relu{i}" if i else "relu")
    return LayerModule(g.module(y), g.inputs(seed), op)


def matmul_module(s: GemmShape, seed: int = 0) -> LayerModule:
    """One ``graph.matmul``: A ``(batch, m, k)`` (``(m, k)`` when ``batch`` is 1) times B, a
    constant ``(k, n)`` when ``const_b`` (then ``batch`` must be 1: the lowering folds A's batch
    dims into M) else an input ``(batch, k, n)``; ``relu`` for each of ``maps``.
    ``LayerBuildError`` for fields a MatMul does not have."""
    _unsupported(s, ("trans_a", "trans_b", "lda", "ldb", "ldc", "c_full", "bias_along", "scalars", "residual",
                     "const_a", "b_clean", "pad_n"))
    if s.const_b and s.batch != 1:
        raise LayerBuildError(f"batch={s.batch}: a constant B is 2-D (its batch folds into M)")
    dt = _np_dtype(s.dtype)
    rng = np.random.default_rng(seed)
    lead = (s.batch,) if s.batch > 1 else ()
    a_shape = (*lead, s.m, s.k)
    b_shape = (*lead, s.k, s.n)
    g = GraphBuilder(a_shape, *([] if s.const_b else [b_shape]), dtype=dt)
    b = g.cst(_random(rng, b_shape, dt, WEIGHT_SCALE), "w") if s.const_b else g.args[1]
    op = graph.MatMulOp(g.args[0], b)
    y = g(op, "matmul")
    for i in range(s.maps):
        y = g(graph.ReluOp(y), f"relu{i}" if i else "relu")
    return LayerModule(g.module(y), g.inputs(seed), op)


def lstm_module(s: LstmShape, seed: int = 0) -> LayerModule:
    """One forward ``graph.lstm``: input ``x0`` (seq, batch, input), constant random W, R (and
    B when ``s.bias``), no initial state."""
    dt = _np_dtype(s.dtype)
    rng = np.random.default_rng(seed)
    g = GraphBuilder((s.seq, s.batch, s.input), dtype=dt)
    w = g.cst(_random(rng, (1, 4 * s.hidden, s.input), dt, WEIGHT_SCALE), "w")
    r = g.cst(_random(rng, (1, 4 * s.hidden, s.hidden), dt, WEIGHT_SCALE), "r")
    b = g.cst(_random(rng, (1, 8 * s.hidden), dt), "b") if s.bias else None
    op = graph.LSTMOp(g.args[0], w, r, b, None, None, hidden_size=s.hidden)
    g.block.add_op(op)
    op.results[0].name_hint = "lstm"
    return LayerModule(g.module(op.results[0]), g.inputs(seed), op)


def layer_module(kind: str, shape: ConvShape | GemmShape | LstmShape | MapShape, seed: int = 0) -> LayerModule:
    """The single-layer module of a problem of op kind ``kind`` (:data:`LAYER_KINDS`);
    ``LayerBuildError`` for other problems (the memory-bound families: :func:`extract_module`)."""
    if kind == "lstm" and isinstance(shape, LstmShape):
        return lstm_module(shape, seed)
    if kind == "conv2d" and isinstance(shape, ConvShape):
        return conv_module(shape, seed)
    if kind == "gemm" and isinstance(shape, GemmShape):
        return gemm_module(shape, seed)
    if kind == "matmul" and isinstance(shape, GemmShape):
        return matmul_module(shape, seed)
    raise LayerBuildError(f"no single-layer module for a {kind} problem of a {type(shape).__name__} "
                          f"(kinds: {', '.join(LAYER_KINDS)})")


#: the discardable attribute marking the op of an extracted module that carries the schedule
ROOT_ATTR = "taihu.tune_root"


def extract_module(ops: Sequence[Operation], seed: int = 0) -> LayerModule:
    """``ops`` (of one block, in program order; ``ops[0]`` carries the schedule) cloned into a
    module of their own: every operand defined outside them becomes an argument ``x0, x1, ...``
    of its type (a ``graph.constant`` is cloned instead: a constant operand changes the lowering),
    the results used after them (else ``ops[-1]``'s) are returned. Inputs are standard normal
    from ``default_rng(seed)`` (zeros for integer tensors). The clone of ``ops[0]`` has the unit
    attribute :data:`ROOT_ATTR`, so it can be found again after printing and parsing.

    ``LayerBuildError`` if an op has regions (the graph ops with schedules have none)."""
    inside = set(ops)
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for op in ops:
        if op.regions:
            raise LayerBuildError(f"'{op.name}' has regions: not extracted")
        for v in op.operands:
            if v in mapping or (isinstance(v, OpResult) and v.op in inside):
                continue
            if isinstance(v, OpResult) and isinstance(v.op, graph.ConstantOp):
                cst = v.op.clone()
                block.add_op(cst)
                mapping[v] = cst.results[v.index]
            else:
                a = block.insert_arg(v.type, len(block.args))
                a.name_hint = f"x{len(block.args) - 1}"
                mapping[v] = a
    clones = []
    for op in ops:
        c = op.clone(value_mapper=mapping)
        block.add_op(c)
        clones.append(c)
    clones[0].attributes[ROOT_ATTR] = UnitAttr()
    outs = [mapping[v] for op in ops for v in op.results
            if any(u.operation not in inside for u in v.uses)] or [mapping[v] for v in ops[-1].results]
    block.add_op(func.ReturnOp(*outs))
    args = list(block.args)
    ftype = FunctionType.from_lists([a.type for a in args], [o.type for o in outs])
    f = func.FuncOp("main", ftype, Region(block))
    f.arg_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(f"x{i}")}) for i in range(len(args))])
    f.res_attrs = ArrayAttr([DictionaryAttr({"graph.name": StringAttr(f"y{i}")}) for i in range(len(outs))])
    module = ModuleOp([f])
    return LayerModule(module, module_inputs(module, seed), clones[0])


def module_inputs(module: ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard normal arrays (zeros for integer tensors) for the arguments ``x0, x1, ...`` of
    ``module``'s ``@main``, from ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    out: dict[str, np.ndarray] = {}
    for i, a in enumerate(main.body.block.args):
        t = a.type
        assert isinstance(t, TensorType)  # graph functions take tensors
        shape = tuple(t.get_shape())
        elem = t.get_element_type()
        if elem == f64:
            out[f"x{i}"] = rng.standard_normal(shape)
        elif elem == f32:
            out[f"x{i}"] = rng.standard_normal(shape).astype(np.float32)
        else:
            out[f"x{i}"] = np.zeros(shape, dtype=np.int64)
    return out


def root_op(module: ModuleOp) -> Operation:
    """The op of an :func:`extract_module` module that carries the schedule (its :data:`ROOT_ATTR`
    removed); ``LayerBuildError`` if there is none."""
    for op in module.walk():
        if ROOT_ATTR in op.attributes:
            del op.attributes[ROOT_ATTR]
            return op
    raise LayerBuildError(f"no op marked {ROOT_ATTR}")


def flops(kind: str, shape: ConvShape | GemmShape) -> int:
    """Multiply-add flops (2 per MAC) of the layer's main op: a convolution's direct count,
    ``2 m n k`` per GEMM of the batch."""
    if isinstance(shape, ConvShape):
        return shape.flops
    return 2 * shape.m * shape.n * shape.k * max(1, shape.batch)


@contextmanager
def declared_blobs_released() -> Iterator[None]:
    """Drop the ``dense_resource`` blobs declared inside the block from the process-wide table
    at its end (module docstring). Modules built inside must not be used afterwards (their
    large constants would have no bytes)."""
    from taihu.dialects.resources import blob_storage, release_blobs

    before = set(blob_storage().keys())
    try:
        yield
    finally:
        release_blobs(k for k in blob_storage().keys() if k not in before)

