"""The graph passes on real networks: the light ONNX models shipped with the onnx package, every
weight re-initialised with seeded random values (``randomize_weights``; the shipped weights are
constants, which would hide folding errors), imported, run on the numpy reference before and after
graph-fold-constants, graph-simplify, graph-fold-batchnorm, graph-simplify; outputs agree to
rtol 1e-4 / atol 1e-5.

ResNet-50 is spec DO-13 on a full network: all 53 conv → batch_norm pairs fold (no batch_norm
remains, the conv count is unchanged). AlexNet is DO-5: it has no consecutive linear ops
(conv → relu → ...), so only its dropout ops go (seed 003 L64: "AlexNet has no consecutive
linear ops").
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import onnx
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func

from taihu.backends.reference import input_specs, run_module
from taihu.dialects import graph
from taihu.frontends.onnx import import_model
from taihu.tools.weights import randomize_weights
from taihu.passes.graph.fold_batchnorm import GraphFoldBatchNormPass
from taihu.passes.graph.fold_constants import GraphFoldConstantsPass
from taihu.passes.graph.simplify import GraphSimplifyPass

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def _counts(module: builtin.ModuleOp) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.dialect_name() == "graph" and op.name != "graph.constant")


@pytest.mark.parametrize("name", ["resnet50", "bvlc_alexnet"])
def test_light_model_passes_preserve_outputs(name: str) -> None:
    model = randomize_weights(onnx.load(os.path.join(LIGHT, f"light_{name}.onnx")), seed=0)
    module = import_model(model)
    rng = np.random.default_rng(0)
    inputs = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in input_specs(module)}
    before = _counts(module)
    ref = run_module(module, inputs)

    ctx = Context()
    for d in (builtin.Builtin, func.Func, graph.Graph):
        ctx.load_dialect(d)
    for p in (GraphFoldConstantsPass(), GraphSimplifyPass(), GraphFoldBatchNormPass(), GraphSimplifyPass()):
        p.apply(ctx, module)
    module.verify()
    after = _counts(module)
    got = run_module(module, inputs)

    assert list(got) == list(ref)
    for key in ref:
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert "graph.batch_norm" not in after and "graph.dropout" not in after
    assert after["graph.conv2d"] == before["graph.conv2d"]
    if name == "resnet50":
        assert before["graph.batch_norm"] == 53
    if name == "bvlc_alexnet":  # DO-5: nothing but dropout changes
        assert after == before - Counter({"graph.dropout": before["graph.dropout"]})
