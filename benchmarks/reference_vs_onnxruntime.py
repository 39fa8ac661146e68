"""Reference interpreter vs onnxruntime on the light ONNX models, measured side by side.

Usage::

    python -m taihu.benchmarks.reference_vs_onnxruntime [--models resnet50 vgg19 ...]
        [--repeat 3] [--threads N] [--shipped-weights] [--seed 0]

For every model (default: resnet50, vgg19, alexnet, squeezenet, inception_v1 from the onnx
package's ``backend/test/data/light``) the script imports the model once with
:func:`taihu.frontends.onnx.import_model`, then alternates runs of the numpy reference
(:func:`taihu.backends.reference.run_module`) and onnxruntime (CPUExecutionProvider, default
threads) on the same input, one warm-up each, and reports the median wall time of ``--repeat``
runs (milliseconds), the ratio reference / onnxruntime and the largest absolute output
difference. By default every weight tensor is re-initialized with seeded random values
(:func:`taihu.tools.weights.randomize_weights`); the shipped light models hold constant weights.
``--threads N`` runs both runtimes with N threads (onnxruntime ``intra_op_num_threads``; the
numpy BLAS through ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, which is why
the script re-executes itself with those variables set); without it both use their defaults
(all cores). On a loaded machine multi-threaded OpenBLAS suffers badly from oversubscription, so
``--threads 1`` gives the more reproducible comparison.
Target (issue 2): ratio <= 20 on ResNet-50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

MODELS = {
    "resnet50": "light_resnet50",
    "vgg19": "light_vgg19",
    "alexnet": "light_bvlc_alexnet",
    "squeezenet": "light_squeezenet",
    "inception_v1": "light_inception_v1",
}


def _light_dir() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def measure(name: str, *, repeat: int, shipped_weights: bool, seed: int, threads: int | None = None) -> dict[str, float]:
    """Times (s) of both runtimes on one light model; alternating runs, median of ``repeat``."""
    import onnxruntime as ort

    from taihu.backends.reference import input_specs, run_module
    from taihu.frontends.onnx import import_model, load_model
    from taihu.tools.weights import randomize_weights

    model = load_model(_light_dir() / f"{MODELS[name]}.onnx")
    if not shipped_weights:
        model = randomize_weights(model, seed)
    t0 = time.perf_counter()
    module = import_model(model)
    import_s = time.perf_counter() - t0
    specs = input_specs(module)
    rng = np.random.default_rng(seed)
    feeds = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in specs}

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    ref_out = run_module(module, feeds)  # warm-up (decodes the weight blobs once)
    ort_out = session.run(None, feeds)
    ref_times, ort_times = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ref_out = run_module(module, feeds)
        ref_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ort_out = session.run(None, feeds)
        ort_times.append(time.perf_counter() - t0)
    diff = max(float(np.max(np.abs(r - o))) for r, o in zip(ref_out.values(), ort_out))
    ref_s, ort_s = statistics.median(ref_times), statistics.median(ort_times)
    return {"import": import_s, "reference": ref_s, "onnxruntime": ort_s, "ratio": ref_s / ort_s, "max_abs_diff": diff}


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    p.add_argument("--repeat", type=int, default=3, help="timed runs per runtime (median is reported)")
    p.add_argument("--shipped-weights", action="store_true", help="keep the shipped constant weights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="threads of both runtimes (default: library defaults)")
    args = p.parse_args(argv)
    if args.threads is not None and any(os.environ.get(v) != str(args.threads) for v in _THREAD_VARS):
        # BLAS thread pools are sized when numpy loads: re-execute with the variables set
        env = {**os.environ, **{v: str(args.threads) for v in _THREAD_VARS}}
        argv = sys.argv[1:] if argv is None else argv
        os.execve(sys.executable, [sys.executable, "-m", __spec__.name if __spec__ else "taihu.benchmarks.reference_vs_onnxruntime", *argv], env)

    weights = "shipped" if args.shipped_weights else f"random (seed {args.seed})"
    threads = "default threads" if args.threads is None else f"{args.threads} thread(s)"
    table = Table(title=f"numpy reference vs onnxruntime — median of {args.repeat} runs, {threads}, weights {weights}")
    for col in ("model", "import ms", "reference ms", "onnxruntime ms", "ratio", "max |diff|"):
        table.add_column(col, justify="left" if col == "model" else "right")
    console = Console()
    for name in args.models:
        r = measure(name, repeat=args.repeat, shipped_weights=args.shipped_weights, seed=args.seed, threads=args.threads)
        table.add_row(
            name,
            f"{r['import'] * 1e3:.0f}",
            f"{r['reference'] * 1e3:.1f}",
            f"{r['onnxruntime'] * 1e3:.1f}",
            f"{r['ratio']:.2f}x",
            f"{r['max_abs_diff']:.2e}",
        )
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
