"""onnxruntime, an optional dependency: an independent ONNX runtime to check taihu against.

onnxruntime is part of the ``test`` extra (``pip install -e '.[test]'``), not a dependency of
taihu: ``taihu-run --check`` on an ONNX model and ``benchmarks/end_to_end.py`` use it.
:func:`onnxruntime_available` tells whether it is installed (``importlib.util.find_spec``,
nothing is imported); :func:`inference_session` and :func:`onnxruntime_outputs` raise
:class:`OnnxRuntimeMissing` with the install hint :data:`MISSING` when it is not.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

import numpy as np

#: the message when ``--check`` needs onnxruntime and it is not installed
MISSING = "--check compares with onnxruntime: pip install onnxruntime"


class OnnxRuntimeMissing(RuntimeError):
    """onnxruntime is needed but not installed (message: :data:`MISSING`)."""


def onnxruntime_available() -> bool:
    """True if the ``onnxruntime`` package is installed."""
    return importlib.util.find_spec("onnxruntime") is not None


def inference_session(model) -> Any:
    """An onnxruntime ``InferenceSession`` (CPU, warnings silenced) of the ``onnx.ModelProto``
    ``model``; :class:`OnnxRuntimeMissing` if onnxruntime is not installed."""
    if not onnxruntime_available():
        raise OnnxRuntimeMissing(MISSING)
    import onnxruntime

    opts = onnxruntime.SessionOptions()
    opts.log_severity_level = 3
    return onnxruntime.InferenceSession(model.SerializeToString(), opts,
                                        providers=["CPUExecutionProvider"])


def onnxruntime_outputs(model, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs of onnxruntime (CPU) on ``model`` for ``inputs`` (keyed by ONNX input name), keyed
    by ONNX output name; :class:`OnnxRuntimeMissing` if onnxruntime is not installed."""
    sess = inference_session(model)
    feed = {i.name: np.asarray(inputs[i.name]) for i in sess.get_inputs()}
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))


__all__ = ["MISSING", "OnnxRuntimeMissing", "inference_session", "onnxruntime_available",
           "onnxruntime_outputs"]
