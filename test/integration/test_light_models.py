"""The ``light_*`` models of ONNX's backend test data on taihu's frontend + reference interpreter.

For each of ResNet-50, VGG-19, AlexNet, SqueezeNet and Inception v1 (``onnx/backend/test/data/
light``):

(a) import the shipped model, run it on the reference interpreter with the input ONNX's backend
    runner uses for light models (``Runner.generate_dummy_data(..., random=False)``: the float
    ramp ``arange(n).reshape(shape) / n``, see ``onnx/backend/test/runner/__init__.py``) and
    compare with the shipped ``light_<model>_output_0.pb`` within the model's tolerances from
    ``onnx.backend.test.case.model.collect_testcases()`` (rtol 1e-3, atol 1e-7);
(b) the shipped weights are constants (every output is 0.001), which hide errors: re-initialize
    every weight tensor with ``randomize_weights(model, seed=0)`` and compare the reference with
    onnxruntime on the same randomized model, rtol 1e-4 / atol 1e-5.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from taihu.frontends.onnx import import_model
from taihu.tools.weights import randomize_weights

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = ["resnet50", "vgg19", "bvlc_alexnet", "squeezenet", "inception_v1"]


def _tolerances() -> dict[str, tuple[float, float]]:
    from onnx.backend.test.case.model import collect_testcases

    return {c.model_name: (c.rtol, c.atol) for c in collect_testcases() if c.kind == "real"}


def _input(model: onnx.ModelProto) -> tuple[str, np.ndarray]:
    from onnx.backend.test.runner import Runner

    init = {i.name for i in model.graph.initializer}
    (vi,) = [i for i in model.graph.input if i.name not in init]
    return vi.name, Runner.generate_dummy_data(vi, seed=0, random=False)


def _release_blobs(module) -> None:
    """Drop the module's dense_resource blobs from the process-wide builtin resource table."""
    from xdsl.dialects.builtin import DenseResourceAttr

    from taihu.dialects.resources import release_blobs

    release_blobs(attr.resource_handle.data for op in module.walk() for attr in op.properties.values()
                  if isinstance(attr, DenseResourceAttr))


@pytest.mark.parametrize("name", MODELS)
def test_light_model_matches_shipped_output(name: str) -> None:
    from taihu.backends.reference import run_module

    model = onnx.load(os.path.join(LIGHT, f"light_{name}.onnx"))
    rtol, atol = _tolerances()[name]
    in_name, x = _input(model)
    expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(LIGHT, f"light_{name}_output_0.pb")))
    module = import_model(model)
    try:
        out = run_module(module, {in_name: x})
    finally:
        _release_blobs(module)
    (got,) = out.values()
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", MODELS)
def test_light_model_random_weights_match_onnxruntime(name: str) -> None:
    import onnxruntime as ort

    from taihu.backends.reference import run_module

    model = randomize_weights(onnx.load(os.path.join(LIGHT, f"light_{name}.onnx")), seed=0)
    in_name, x = _input(model)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {in_name: x})
    del sess
    module = import_model(model)
    del model
    try:
        (got,) = run_module(module, {in_name: x}).values()
    finally:
        _release_blobs(module)
    # Random weights must make the network informative (not a constant / one-hot softmax).
    assert want.std() > 1e-5 and want.max() < 0.999
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_randomize_weights_is_deterministic_and_keeps_shapes() -> None:
    model = onnx.load(os.path.join(LIGHT, "light_squeezenet.onnx"))
    a = randomize_weights(model, seed=0)
    b = randomize_weights(model, seed=0)
    c = randomize_weights(model, seed=1)
    assert a.SerializeToString() == b.SerializeToString()
    assert a.SerializeToString() != c.SerializeToString()
    # The original is untouched and every ConstantOfShape weight became a random Constant.
    assert sum(n.op_type == "ConstantOfShape" for n in model.graph.node) == 39
    assert sum(n.op_type == "ConstantOfShape" for n in a.graph.node) == 0
    # Shape tensors (int64) are kept bit for bit.
    ints = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT64]
    ints_a = {i.name: i for i in a.graph.initializer if i.data_type == onnx.TensorProto.INT64}
    assert ints and all(ints_a[i.name] == i for i in ints)
    onnx.checker.check_model(a)
