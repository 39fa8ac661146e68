# lit configuration for taihu's FileCheck regression suite (xDSL style).
import os

import lit.formats
import onnx  # a hard dependency: its backend test data holds the light models

config.name = "taihu"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.environment["PYTHONUNBUFFERED"] = "1"
for var in ("PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

config.substitutions.append(("%taihu-opt", "taihu-opt"))
config.substitutions.append(("%taihu-run", "taihu-run"))
config.substitutions.append(("%taihu-import", "taihu-import"))
config.substitutions.append(("%taihu-tune", "taihu-tune"))
config.substitutions.append(("%examples", os.path.join(repo, "examples")))
# Print generic, parse again, print custom: the custom and generic forms agree.
config.substitutions.append(
    (
        "TAIHU_ROUNDTRIP",
        "taihu-opt %s --print-op-generic --split-input-file"
        " | taihu-opt --split-input-file | filecheck %s",
    )
)
config.substitutions.append(
    (
        "TAIHU_GENERIC_ROUNDTRIP",
        "taihu-opt %s --print-op-generic --split-input-file"
        " | filecheck %s --check-prefix=CHECK-GENERIC",
    )
)
config.substitutions.append(
    ("%onnx-light", os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light"))
)
