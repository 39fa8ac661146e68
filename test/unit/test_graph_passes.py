"""Differential tests of the graph passes: small random graphs (hypothesis) run on the numpy
reference before and after graph-fold-constants, graph-fold-batchnorm, graph-simplify and the
three chained; plus the exact CDUCA regression values DO-1, DO-2, DO-6, DO-7, DO-13
(spec reproduction-targets §T10) and per-guard checks on the IR."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from taihu.backends.reference import run_module
from taihu.dialects import graph
from taihu.passes.graph.fold_batchnorm import GraphFoldBatchNormPass
from taihu.passes.graph.fold_constants import GraphFoldConstantsPass
from taihu.passes.graph.simplify import GraphSimplifyPass
from taihu.test.unit.graph_builder import G

RTOL, ATOL = 1e-4, 1e-5


# --------------------------------------------------------------------------------------------
# Building graphs: G from graph_builder (args and results named x<i> / y<i>)
# --------------------------------------------------------------------------------------------


def ctx() -> Context:
    c = Context()
    c.load_dialect(builtin.Builtin)
    c.load_dialect(func.Func)
    c.load_dialect(graph.Graph)
    return c


def apply(module: ModuleOp, *passes: ModulePass) -> ModuleOp:
    m = module.clone()
    for p in passes:
        p.apply(ctx(), m)
        m.verify()
    return m


def run(module: ModuleOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    out = run_module(module, {f"x{i}": x for i, x in enumerate(inputs)})
    return [np.asarray(v) for v in out.values()]


def graph_ops(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.dialect_name() == "graph" and op.name != "graph.constant"]


def assert_same(before: ModuleOp, after: ModuleOp, inputs: Sequence[np.ndarray]) -> None:
    ref, got = run(before, inputs), run(after, inputs)
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        assert r.shape == g.shape and r.dtype == g.dtype
        np.testing.assert_allclose(g, r, rtol=RTOL, atol=ATOL)


PASSES: dict[str, Callable[[], list[ModulePass]]] = {
    "fold-constants": lambda: [GraphFoldConstantsPass()],
    "fold-batchnorm": lambda: [GraphFoldBatchNormPass()],
    "simplify": lambda: [GraphSimplifyPass()],
    "chained": lambda: [GraphFoldConstantsPass(), GraphSimplifyPass(), GraphFoldBatchNormPass(), GraphSimplifyPass()],
}


# --------------------------------------------------------------------------------------------
# Random graphs: a chain of NCHW ops (conv, batch_norm, per-channel mul/add/sub/div, relu, pad,
# reshape chains, dropout, transposes), or of 2-D gemm ops; intermediates are randomly also
# returned (fan-out); some weights are constant subgraphs (for fold-constants).
# --------------------------------------------------------------------------------------------

CONV_STEPS = (
    "conv", "conv_pad", "conv_nobias", "conv_group", "conv_stride", "bn", "mul", "mul_scalar",
    "add", "sub", "rsub", "div", "relu", "pad0", "pad", "reshape_chain", "dropout",
    "transpose_pair", "transpose_id", "sum1", "mul_one",
    "conv_pad+bn", "conv+bn+mul+add", "conv_nobias+mul_scalar+sub", "bn+conv", "add+conv_pad",
    "conv_group+bn+rsub", "conv_stride+div",
)  # fmt: skip
GEMM_STEPS = (
    "gemm", "gemm_t", "gemm_noc", "gemm_wide", "bn", "mul", "add", "relu", "dropout", "flatten",
    "gemm+bn", "gemm_t+mul+add", "gemm_noc+bn+sub", "gemm+gemm", "gemm_wide+gemm_t", "gemm+gemm_wide",
)  # fmt: skip


@dataclass
class Spec:
    seed: int
    shape: tuple[int, ...]
    steps: list[str]
    fanout: list[bool]


def _weight(g: G, rng: np.random.Generator, shape: tuple[int, ...]) -> SSAValue:
    """A constant weight, sometimes computed by a small constant subgraph."""
    w = rng.uniform(-1, 1, shape).astype(np.float32)
    kind = rng.integers(0, 12)  # 8..11: a plain constant
    if kind == 4:  # an elementwise op of a constant
        unary = [graph.SigmoidOp, graph.TanhOp, graph.ReluOp][int(rng.integers(0, 3))]
        return g(unary(g.cst(w)))
    if kind == 5:
        return g(graph.ClipOp(g.cst(w), min=-0.5, max=0.5))
    if kind == 6:
        return g(graph.SoftmaxOp(g.cst(w), axis=-1))
    if kind == 7 and shape[0] >= 2:  # concat of two parts along dim 0, then sum with itself
        h = shape[0] // 2
        cat = g(graph.ConcatOp([g.cst(w[:h]), g.cst(w[h:])], axis=0))
        return g(graph.SumOp([cat, g.cst(w), cat]))
    if kind == 1:  # w = a + b
        a = rng.uniform(-1, 1, shape).astype(np.float32)
        return g(graph.AddOp(g.cst(a), g.cst(w - a)))
    if kind == 2:  # w = transpose(transpose(w))
        t = g(graph.TransposeOp(g.cst(np.ascontiguousarray(w.T))))
        return t
    if kind == 3:  # w = reshape(flat w)
        return g(graph.ReshapeOp(g.cst(w.reshape(-1)), TensorType(f32, list(shape))))
    return g.cst(w)


def _channel_param(rng: np.random.Generator, shape: tuple[int, ...], positive: bool = False) -> np.ndarray:
    c = shape[1]
    vec = rng.uniform(0.5, 1.5, c) if positive else rng.uniform(-1.5, 1.5, c)
    if len(shape) == 2:
        return vec.astype(np.float32)
    return vec.reshape((1, c) + (1,) * (len(shape) - 2)).astype(np.float32)


def build_chain(spec: Spec) -> ModuleOp:
    rng = np.random.default_rng(spec.seed)
    g = G(spec.shape)
    x = g.args[0]
    outputs: list[SSAValue] = []
    flat_steps = [(part, fan and i == len(step.split("+")) - 1) for step, fan in zip(spec.steps, spec.fanout) for i, part in enumerate(step.split("+"))]
    for step, fan in flat_steps:
        shape = tuple(x.type.get_shape())
        c = shape[1]
        if step.startswith("conv"):
            group = 1
            if step == "conv_group":
                group = c
            m = group * int(rng.integers(1, 3)) if group > 1 else int(rng.integers(1, 5))
            kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
            pad = (1, 1, 1, 1) if step == "conv_pad" else (0, 0, 0, 0)
            stride = (2, 1) if step == "conv_stride" else (1, 1)
            if shape[2] + pad[0] + pad[2] < kh or shape[3] + pad[1] + pad[3] < kw:
                kh = kw = 1
            w = _weight(g, rng, (m, c // group, kh, kw))
            b = None if step == "conv_nobias" else g.cst(rng.uniform(-1, 1, m))
            x = g(graph.Conv2dOp(x, w, b, strides=stride, pads=pad, group=group))
        elif step.startswith("gemm"):
            k = shape[1]
            n = int(rng.integers(1, 6)) if step != "gemm_wide" else 8
            trans = step == "gemm_t"
            w = _weight(g, rng, (n, k) if trans else (k, n))
            cc = None if step == "gemm_noc" else g.cst(rng.uniform(-1, 1, n))
            alpha = float(rng.choice([1.0, 0.5]))
            x = g(graph.GemmOp(x, w, cc, alpha=alpha, beta=float(rng.choice([1.0, 2.0])), trans_b=trans))
        elif step == "bn":
            params = [rng.uniform(-1, 1, c), rng.uniform(-1, 1, c), rng.uniform(-1, 1, c), rng.uniform(0.5, 2, c)]
            x = g(graph.BatchNormOp(x, *[g.cst(p) for p in params], epsilon=1e-5))
        elif step in ("mul", "add", "sub", "div", "rsub"):
            p = g.cst(_channel_param(rng, shape, positive=step == "div"))
            op = {"mul": graph.MulOp, "add": graph.AddOp, "sub": graph.SubOp, "div": graph.DivOp, "rsub": graph.SubOp}[step]
            x = g(op(p, x) if step == "rsub" else op(x, p))
        elif step == "mul_scalar":
            x = g(graph.MulOp(g.cst(np.float32(rng.uniform(0.5, 2))), x))
        elif step == "mul_one":
            x = g(graph.MulOp(x, g.cst(np.ones((1, 1), np.float32))))
        elif step == "relu":
            x = g(graph.ReluOp(x))
        elif step == "pad0":
            x = g(graph.PadOp(x, pads=(0,) * (2 * len(shape))))
        elif step == "pad":
            x = g(graph.PadOp(x, pads=(0, 0, 1, 0) + (0, 0, 0, 1) if len(shape) == 4 else (0, 1, 0, 0)))
        elif step == "reshape_chain":
            flat = g(graph.FlattenOp(x, axis=1))
            mid_shape = [shape[0] * c, int(np.prod(shape[2:]))] if len(shape) > 2 else [shape[0] * c]
            mid = g(graph.ReshapeOp(flat, TensorType(f32, mid_shape)))
            x = g(graph.ReshapeOp(mid, TensorType(f32, list(shape))))
        elif step == "dropout":
            x = g(graph.DropoutOp(x))
        elif step == "transpose_pair":
            perm = tuple(int(i) for i in rng.permutation(len(shape)))
            inv = tuple(int(i) for i in np.argsort(perm))
            t = g(graph.TransposeOp(x, perm=perm))
            x = g(graph.TransposeOp(t, perm=inv))
        elif step == "transpose_id":
            x = g(graph.TransposeOp(x, perm=tuple(range(len(shape)))))
        elif step == "sum1":
            x = g(graph.SumOp([x]))
        elif step == "flatten":
            x = g(graph.FlattenOp(x, axis=1))
        else:  # pragma: no cover
            raise AssertionError(step)
        if fan:
            outputs.append(x)
    if not outputs or outputs[-1] is not x:
        outputs.append(x)
    return g.module(*outputs)


@st.composite
def specs(draw: st.DrawFn, kinds: Sequence[str], gemm: bool) -> Spec:
    seed = draw(st.integers(0, 2**31 - 1))
    if gemm:
        shape: tuple[int, ...] = (draw(st.integers(1, 3)), draw(st.integers(1, 6)))
    else:
        shape = (draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(2, 6)), draw(st.integers(2, 6)))
    steps = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=6))
    fan = draw(st.lists(st.booleans(), min_size=len(steps), max_size=len(steps)))
    return Spec(seed, shape, steps, [f and draw(st.integers(0, 3)) == 0 for f in fan])


HYP = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("which", list(PASSES))
@HYP
@given(spec=specs(CONV_STEPS, gemm=False))
def test_conv_chains_differential(which: str, spec: Spec) -> None:
    module = build_chain(spec)
    after = apply(module, *PASSES[which]())
    x = np.random.default_rng(spec.seed + 1).standard_normal(spec.shape).astype(np.float32)
    assert_same(module, after, [x])
    assert str(apply(after, *PASSES[which]())) == str(after)  # a fixpoint: idempotent


@pytest.mark.parametrize("which", list(PASSES))
@HYP
@given(spec=specs(GEMM_STEPS, gemm=True))
def test_gemm_chains_differential(which: str, spec: Spec) -> None:
    module = build_chain(spec)
    after = apply(module, *PASSES[which]())
    x = np.random.default_rng(spec.seed + 1).standard_normal(spec.shape).astype(np.float32)
    assert_same(module, after, [x])
    assert str(apply(after, *PASSES[which]())) == str(after)  # a fixpoint: idempotent


def test_chained_passes_remove_every_foldable_op() -> None:
    spec = Spec(3, (1, 3, 5, 5), ["conv_pad", "bn", "mul", "add", "dropout", "relu", "transpose_pair"], [False] * 7)
    module = build_chain(spec)
    after = apply(module, *PASSES["chained"]())
    assert graph_ops(after) == ["graph.conv2d", "graph.relu"]
    assert_same(module, after, [np.random.default_rng(0).standard_normal((1, 3, 5, 5)).astype(np.float32)])


# --------------------------------------------------------------------------------------------
# DO-1 / DO-2 / DO-6 / DO-7 / DO-13 on the IR
# --------------------------------------------------------------------------------------------


def _constants(module: ModuleOp) -> list[np.ndarray]:
    return [graph.constant_value(op) for op in module.walk() if isinstance(op, graph.ConstantOp)]


def test_do1_gemm_chain_exact() -> None:
    g = G((1, 2))
    y1 = g(graph.GemmOp(g.args[0], g.cst([[1, 2], [3, 4]]), g.cst([1, 1])))
    y2 = g(graph.GemmOp(y1, g.cst([[1, 0], [0, 2]]), g.cst([0, 1])))
    module = g.module(y2)
    after = apply(module, GraphFoldBatchNormPass())
    assert graph_ops(module) == ["graph.gemm"] * 2 and graph_ops(after) == ["graph.gemm"]
    (gemm,) = [op for op in after.walk() if isinstance(op, graph.GemmOp)]
    assert graph.constant_value(gemm.b.owner).tolist() == [[1, 4], [3, 8]]
    assert graph.constant_value(gemm.c.owner).tolist() == [1, 3]
    x = np.ones((1, 2), np.float32)
    assert run(module, [x])[0].tolist() == [[5, 15]] == run(after, [x])[0].tolist()


def test_do3_gemm_chain_shrinks_macs_and_constants() -> None:
    # DO-3: X[1,8], W1[8,16], W2[16,4]: MACs 192 -> 32, constants incl. biases 212 -> 36.
    rng = np.random.default_rng(3)
    g = G((1, 8))
    y1 = g(graph.GemmOp(g.args[0], g.cst(rng.standard_normal((8, 16))), g.cst(rng.standard_normal(16))))
    y2 = g(graph.GemmOp(y1, g.cst(rng.standard_normal((16, 4))), g.cst(rng.standard_normal(4))))
    module = g.module(y2)
    after = apply(module, GraphFoldBatchNormPass())
    assert graph_ops(after) == ["graph.gemm"]
    assert sum(a.size for a in _constants(module)) == 212
    assert sum(a.size for a in _constants(after)) == 36
    assert_same(module, after, [rng.standard_normal((1, 8)).astype(np.float32)])


def test_do4_unprofitable_gemm_chain_refused() -> None:
    rng = np.random.default_rng(4)
    g = G((2, 512))
    y1 = g(graph.GemmOp(g.args[0], g.cst(rng.standard_normal((512, 16))), None))
    y2 = g(graph.GemmOp(y1, g.cst(rng.standard_normal((16, 512))), None))
    module = g.module(y2)
    assert str(apply(module, GraphFoldBatchNormPass())) == str(module)


def _do2_module(
    pads: Sequence[int], shape: tuple[int, ...], w: np.ndarray, b: np.ndarray, dtype: type = np.float32
) -> ModuleOp:
    g = G(shape, dtype=dtype)
    y = g(graph.Conv2dOp(g.args[0], g.cst(w), g.cst(b), pads=pads))
    c = w.shape[0]
    y = g(graph.BatchNormOp(y, g.cst(np.full(c, 2.0)), g.cst(np.full(c, 1.0)), g.cst(np.full(c, 3.0)), g.cst(np.full(c, 4.0)), epsilon=0.0))
    y = g(graph.MulOp(y, g.cst(np.full((1, c, 1, 1), 3.0))))
    y = g(graph.AddOp(y, g.cst(np.full((1, c, 1, 1), -1.0))))
    return g.module(y)


def test_do2_exact_values() -> None:
    module = _do2_module((0, 0, 0, 0), (1, 1, 2, 2), np.full((1, 1, 1, 1), 2.0), np.array([1.0]))
    after = apply(module, GraphFoldBatchNormPass())
    assert len(graph_ops(module)) == 4 and graph_ops(after) == ["graph.conv2d"]  # conv+BN+scale
    (conv,) = [op for op in after.walk() if isinstance(op, graph.Conv2dOp)]
    assert graph.constant_value(conv.weight.owner).reshape(-1).tolist() == [6.0]
    assert graph.constant_value(conv.bias.owner).tolist() == [-4.0]
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    np.testing.assert_array_equal(run(after, [x])[0], 6 * x - 4)
    np.testing.assert_array_equal(run(module, [x])[0], 6 * x - 4)


def test_do2_random_conv_pad1_equivalence() -> None:
    rng = np.random.default_rng(2)
    w, b = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    # f64 so that atol 1e-5 measures the fold, not f32 rounding of outputs of magnitude ~40.
    module = _do2_module((1, 1, 1, 1), (2, 3, 6, 6), w, b, dtype=np.float64)
    after = apply(module, GraphFoldBatchNormPass())
    assert graph_ops(after) == ["graph.conv2d"]
    x = rng.standard_normal((2, 3, 6, 6))
    np.testing.assert_allclose(run(after, [x])[0], run(module, [x])[0], rtol=0, atol=1e-5)


def test_do6_fanout_refused() -> None:
    rng = np.random.default_rng(6)
    g = G((1, 2, 4, 4))
    y = g(graph.Conv2dOp(g.args[0], g.cst(rng.standard_normal((2, 2, 3, 3))), g.cst(np.zeros(2)), pads=(1, 1, 1, 1)))
    bn = g(graph.BatchNormOp(y, *[g.cst(v) for v in (np.ones(2) * 2, np.ones(2), np.zeros(2), np.ones(2))]))
    out = g(graph.AddOp(bn, y))  # the conv output also feeds add
    module = g.module(out)
    after = apply(module, GraphFoldBatchNormPass())
    assert str(after) == str(module)
    assert_same(module, after, [rng.standard_normal((1, 2, 4, 4)).astype(np.float32)])


@pytest.mark.parametrize("pad", [0, 1])
def test_do7_backward_fold_guard(pad: int) -> None:
    g = G((1, 1, 3, 3))
    y = g(graph.AddOp(g.args[0], g.cst(np.ones((1, 1, 1, 1)))))  # the affine op y = x + 1
    out = g(graph.Conv2dOp(y, g.cst(np.ones((1, 1, 3, 3))), None, pads=(pad,) * 4))
    module = g.module(out)
    after = apply(module, GraphFoldBatchNormPass())
    x = np.ones((1, 1, 3, 3), np.float32)
    if pad:
        assert str(after) == str(module)  # refused: a padded conv follows the affine op
        res = run(after, [x])[0]
        assert res[0, 0, 0, 0] == 8 and res[0, 0, 1, 1] == 18  # not 13 at the corner
    else:
        assert graph_ops(after) == ["graph.conv2d"]
        assert run(after, [x])[0].reshape(-1).tolist() == [18.0]
    off = apply(module, GraphFoldBatchNormPass(fold_backward=False))
    assert str(off) == str(module)


def test_do13_conv_bn_scale_relu() -> None:
    rng = np.random.default_rng(13)
    g = G((1, 3, 6, 6))
    y = g(graph.Conv2dOp(g.args[0], g.cst(rng.standard_normal((4, 3, 3, 3))), None, pads=(1, 1, 1, 1)))
    y = g(graph.BatchNormOp(y, *[g.cst(v) for v in (rng.uniform(0.5, 2, 4), rng.standard_normal(4), rng.standard_normal(4), rng.uniform(0.5, 2, 4))]))
    y = g(graph.MulOp(y, g.cst(rng.standard_normal((4, 1, 1)))))
    y = g(graph.AddOp(g.cst(rng.standard_normal((1, 4, 1, 1))), y))
    module = g.module(g(graph.ReluOp(y)))
    after = apply(module, *PASSES["chained"]())
    assert graph_ops(after) == ["graph.conv2d", "graph.relu"]
    assert_same(module, after, [rng.standard_normal((1, 3, 6, 6)).astype(np.float32)])


def test_non_channel_scale_refused() -> None:
    g = G((1, 2, 3, 3))
    y = g(graph.Conv2dOp(g.args[0], g.cst(np.ones((2, 2, 1, 1))), None))
    y = g(graph.MulOp(y, g.cst(np.arange(3, dtype=np.float32))))  # varies along W, not C
    module = g.module(y)
    assert str(apply(module, GraphFoldBatchNormPass())) == str(module)


def test_fold_constants_max_elements() -> None:
    g = G((2, 3))
    a = g(graph.AddOp(g.cst(np.arange(6.0).reshape(2, 3)), g.cst(np.ones((2, 3)))))
    module = g.module(g(graph.AddOp(g.args[0], a)))
    folded = apply(module, GraphFoldConstantsPass())
    assert graph_ops(folded) == ["graph.add"]
    np.testing.assert_array_equal(_constants(folded)[0], np.arange(6.0).reshape(2, 3) + 1)
    assert str(apply(module, GraphFoldConstantsPass(max_elements=5))) == str(module)


def test_fold_constants_multi_result_lstm() -> None:
    rng = np.random.default_rng(5)
    g = G((1,))
    h = 2
    lstm = graph.LSTMOp(
        g.cst(rng.standard_normal((3, 1, 2))),
        g.cst(rng.standard_normal((1, 4 * h, 2))),
        g.cst(rng.standard_normal((1, 4 * h, h))),
        hidden_size=h,
    )
    g.block.add_op(lstm)
    module = g.module(*lstm.results)
    folded = apply(module, GraphFoldConstantsPass())
    assert graph_ops(module) == ["graph.lstm"] and graph_ops(folded) == []
    x = np.zeros(1, np.float32)
    for a, b in zip(run(module, [x]), run(folded, [x])):
        np.testing.assert_array_equal(a, b)
