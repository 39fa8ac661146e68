"""Whole ONNX networks through ``convert-graph-to-tile`` (after the graph passes), evaluated at
the tile level with numpy (:mod:`taihu.test.unit.tile_numpy`) against the graph reference, with
seeded random weights (:func:`taihu.tools.weights.randomize_weights`; the shipped "light"
models have uniform weights, which would hide layout bugs behind a constant output).

This checks the bufferization and every lowering pattern (memory-bound maps, views, concat,
transposes, pools, LRN, and D's conv/gemm kernels) on real graphs independently of the
downstream passes and the simulator. squeezenet (concat, max/avg pools, dropout, softmax) and
shufflenet (channel shuffle = reshape + transpose, average pools, residual adds, concat) run by
default; inception_v1 (LRN), alexnet and resnet50 are marked ``slow`` (skipped by default, ``pytest -m slow``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from taihu.backends.reference import entry_function, input_specs, run_module  # noqa: E402
from taihu.dialects import tile  # noqa: E402
from taihu.frontends.onnx import import_model, load_model  # noqa: E402
from taihu.tools.weights import randomize_weights  # noqa: E402
from taihu.passes.pipelines import build_pipeline, default_context, run_pipeline  # noqa: E402
from taihu.test.unit.tile_numpy import run_tile_module  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
RTOL, ATOL = 1e-4, 1e-5


@pytest.mark.parametrize(
    "name",
    ["squeezenet", "shufflenet", pytest.param("inception_v1", marks=pytest.mark.slow),
     pytest.param("bvlc_alexnet", marks=pytest.mark.slow), pytest.param("resnet50", marks=pytest.mark.slow)],
)
def test_network_tile_level_matches_reference(name: str) -> None:
    path = os.path.join(LIGHT, f"light_{name}.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} not shipped with this onnx version")
    module = import_model(randomize_weights(load_model(path), 0))
    rng = np.random.default_rng(0)
    inputs = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in input_specs(entry_function(module))}
    ref = run_module(module, inputs)
    ctx = default_context()
    run_pipeline(build_pipeline({}, stop_after="convert-graph-to-tile"), module, ctx)
    kernels = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    assert kernels and not [o for o in module.walk() if o.dialect_name() == "graph"]
    assert len({k.kernel_name.data for k in kernels}) == len(kernels)  # unique names
    got = run_tile_module(module, inputs)
    for k, want in ref.items():
        assert np.std(want) > 0, "degenerate reference output"
        np.testing.assert_allclose(got[k], want, rtol=RTOL, atol=ATOL, err_msg=k)
