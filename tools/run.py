"""``taihu-run``: run a network at one level of the taihu stack and print checksums of its outputs.

Usage::

    taihu-run MODEL.onnx | IN.mlir | --example NAME
              [--level graph|swsim] [--inputs x.npz] [--output y.npz] [--seed N] [--quiet]

- ``MODEL.onnx`` is imported with :func:`taihu.frontends.onnx.import_model`; ``IN.mlir`` is a
  ``graph`` module (e.g. written by ``taihu-import``; its ``dialect_resources`` hold the weights);
  ``--example NAME`` picks one of the light models shipped in the onnx package's backend test
  data (``resnet50``, ``vgg19``, ``alexnet``, ``squeezenet``, ``inception_v1``).
- ``--level graph`` runs the numpy reference interpreter (:mod:`taihu.backends.reference`), the
  golden model. ``--level swsim`` runs the Sunway core-group simulator
  (``taihu.backends.sim.runner``); see :func:`run_level`.
- ``--inputs x.npz`` holds one array per graph input keyed by its ONNX input name (the
  ``graph.name`` argument attribute) or positionally ``arg0``, ``arg1``...; inputs it does not
  hold are drawn from a standard normal distribution seeded by ``--seed`` (default 0; input ``i``
  uses ``numpy.random.default_rng([seed, i])``, so it does not depend on which others are given).
- ``--output y.npz`` writes one array per graph output, in output order, keyed by the ONNX output
  name; the file is written atomically (temporary file + rename): it never exists half-written.
- Prints a table of output name / shape / dtype / checksum (sum and L2 norm, accumulated in
  float64) — a rich table on a terminal, plain aligned text otherwise; ``--quiet`` prints nothing.

Every error (missing file, malformed ONNX or MLIR, verification error, bad ``--inputs`` key or
shape, unavailable level) is reported as ``taihu-run: error: ...`` on stderr with exit status 1,
never as a Python traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from taihu.tools.atomic import write_atomically
from taihu.tools.diagnostics import report

TOOL = "taihu-run"

#: ``--example`` name -> file stem in ``onnx/backend/test/data/light``.
EXAMPLES: dict[str, str] = {
    "resnet50": "light_resnet50",
    "vgg19": "light_vgg19",
    "alexnet": "light_bvlc_alexnet",
    "squeezenet": "light_squeezenet",
    "inception_v1": "light_inception_v1",
}

#: Levels accepted by ``--level``. ``graph`` is the default until the simulator runner lands.
LEVELS = ("graph", "swsim")
DEFAULT_LEVEL = "graph"


class RunError(Exception):
    """A user-facing ``taihu-run`` error (printed as one line, exit status 1)."""


# --------------------------------------------------------------------------------------------
# sources


def example_path(name: str) -> Path:
    """Path of the light ONNX model of ``--example NAME`` (``RunError`` if unknown or missing)."""
    if name not in EXAMPLES:
        raise RunError(f"unknown example '{name}' (choose from {', '.join(EXAMPLES)})")
    import onnx

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{EXAMPLES[name]}.onnx"
    if not path.is_file():
        raise RunError(f"example '{name}': {path.name} is not shipped with this onnx package")
    return path


def load_onnx(path: str | os.PathLike[str]) -> tuple[ModuleOp, list[str]]:
    """Import an ONNX file; returns the module and the ONNX output names in order."""
    from taihu.frontends.onnx import OnnxImportError, import_model, load_model

    try:
        model = load_model(path)
        module = import_model(model)
    except OnnxImportError as e:
        raise RunError(str(e) if str(path) in str(e) else f"{path}: {e}") from e
    return module, [o.name for o in model.graph.output]


def load_mlir(path: str | os.PathLike[str]) -> ModuleOp:
    """Parse (and verify) an MLIR file containing ``graph`` (and builtin/func) ops."""
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects as xdsl_dialects
    from xdsl.parser import Parser

    from taihu.tools.universe import get_all_dialects

    try:
        text = Path(path).read_text()
    except OSError as e:
        raise RunError(f"cannot read {path}: {e.strerror}") from e
    ctx = Context()
    for name, factory in {**xdsl_dialects(), **get_all_dialects()}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    module = Parser(ctx, text, str(path)).parse_module()
    module.verify()
    return module


def load_source(args: argparse.Namespace) -> tuple[ModuleOp, list[str] | None, str]:
    """The module to run, the ONNX output names (None for .mlir input) and a display name."""
    if args.example is not None:
        path = example_path(args.example)
        module, names = load_onnx(path)
        return module, names, args.example
    path = Path(args.model)
    if not path.exists():
        raise RunError(f"no such file: {args.model}")
    if path.suffix == ".mlir":
        return load_mlir(path), None, str(path)
    return (*load_onnx(path), str(path))


# --------------------------------------------------------------------------------------------
# inputs / outputs


def load_inputs(path: str | None) -> dict[str, np.ndarray]:
    """Arrays of an ``.npz`` file (``{}`` without one); ``RunError`` if unreadable."""
    if path is None:
        return {}
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise RunError(f"--inputs {path}: not an .npz archive (write one with numpy.savez)")
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise RunError(f"--inputs {path}: not an .npz archive")
            return {k: data[k] for k in data.files}
    except FileNotFoundError as e:
        raise RunError(f"--inputs {path}: no such file") from e
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise RunError(f"--inputs {path}: cannot read .npz: {e}") from e


def complete_inputs(module: ModuleOp, given: Mapping[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """``given`` plus seeded random arrays for the graph inputs it does not hold.

    Input ``i`` is drawn from ``numpy.random.default_rng([seed, i])``: standard normal for float
    types, integers in [0, 10) for integer types, fair coins for i1.
    """
    from taihu.backends.reference import input_specs

    inputs = dict(given)
    for i, spec in enumerate(input_specs(module)):
        if spec.name in given or f"arg{i}" in given:
            continue
        rng = np.random.default_rng([seed, i])
        if spec.dtype.kind == "f":
            value = rng.standard_normal(spec.shape).astype(spec.dtype)
        elif spec.dtype.kind == "b":
            value = rng.random(spec.shape) < 0.5
        else:
            value = rng.integers(0, 10, spec.shape).astype(spec.dtype)
        inputs[spec.name] = value
    return inputs


def checksums(value: np.ndarray) -> tuple[float, float]:
    """(sum, L2 norm) of ``value``, accumulated in float64."""
    v = np.asarray(value, dtype=np.float64)
    return float(v.sum()), float(np.sqrt(np.square(v).sum()))


def print_table(outputs: Mapping[str, np.ndarray], title: str) -> None:
    """Output name / shape / dtype / sum / L2 norm: rich table on a terminal, plain text otherwise."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    terminal = sys.stdout.isatty()
    console = Console(file=sys.stdout, width=None if terminal else 200, no_color=not terminal, highlight=False)
    table = Table(title=title if terminal else None, box=box.SIMPLE_HEAVY if terminal else None,
                  show_edge=terminal, pad_edge=False)
    for col, justify in (("output", "left"), ("shape", "left"), ("dtype", "left"), ("sum", "right"), ("l2", "right")):
        table.add_column(col, justify=justify, no_wrap=True)
    for name, value in outputs.items():
        s, l2 = checksums(value)
        shape = "x".join(str(d) for d in value.shape) or "scalar"
        table.add_row(name, shape, str(value.dtype), f"{s:.6g}", f"{l2:.6g}")
    if not terminal:
        console.print(title)
    console.print(table)


# --------------------------------------------------------------------------------------------
# levels


def _run_graph(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    from taihu.backends.reference import run_module

    return run_module(module, inputs)


def _run_swsim(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    try:
        runner = importlib.import_module("taihu.backends.sim.runner")
    except ModuleNotFoundError as e:
        if e.name not in ("taihu.backends.sim.runner", "taihu.backends.sim"):
            raise
        raise RunError("--level swsim: the simulator runner (taihu.backends.sim.runner) is not available yet") from e
    return runner.run_module(module, inputs)


#: level name -> runner ``(module, inputs) -> outputs``; see :func:`run_level`.
RUNNERS: dict[str, Callable[[ModuleOp, Mapping[str, np.ndarray]], dict[str, np.ndarray]]] = {
    "graph": _run_graph,
    "swsim": _run_swsim,
}


def run_level(level: str, module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``module`` (a ``graph``-level module, as imported) at ``level``; outputs keyed by name.

    Extension point for new levels: add an entry to :data:`RUNNERS` (and to :data:`LEVELS`).
    Every runner takes the ``graph`` module and the complete input dict (keyed by the
    ``graph.name`` of ``@main``'s arguments, shapes and dtypes already checked by the caller's
    runner) and returns ``{output name: array}`` in ``@main``'s result order, like
    :func:`taihu.backends.reference.run_module`. ``swsim`` expects
    ``taihu.backends.sim.runner.run_module(module, inputs)`` with that signature (it lowers the
    module through the pipeline itself); until that module exists the level is a one-line error.
    Runners report user errors by raising :class:`RunError`, ``ValueError`` or an xDSL
    ``DiagnosticException``; :func:`main` turns them into one line on stderr.
    """
    try:
        runner = RUNNERS[level]
    except KeyError:
        raise RunError(f"unknown level '{level}' (choose from {', '.join(RUNNERS)})") from None
    return runner(module, inputs)


# --------------------------------------------------------------------------------------------
# driver


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=TOOL, description="Run a network on a taihu level and print output checksums.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("model", nargs="?", help="ONNX model (.onnx) or graph-dialect module (.mlir)")
    src.add_argument("--example", metavar="NAME", help=f"a light ONNX test model: {', '.join(EXAMPLES)}")
    p.add_argument("--level", choices=LEVELS, default=DEFAULT_LEVEL, help=f"execution level (default: {DEFAULT_LEVEL})")
    p.add_argument("--inputs", metavar="X.npz", help="input arrays keyed by ONNX input name or argN")
    p.add_argument("--output", metavar="Y.npz", help="write the outputs, keyed by ONNX output name")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs not given by --inputs (default: 0)")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.add_argument("--report", metavar="R.json", help="sw/swsim modules: write the simulator report (JSON)")
    p.add_argument("--trace", metavar="T.json", help="sw/swsim modules: write a Chrome/Perfetto trace")
    p.add_argument("--machine", metavar="FILE.toml", help="sw/swsim modules: machine description "
                   "(default: backends/configs/sw26010.toml or the module's swsim.target)")
    return p


def run(args: argparse.Namespace) -> int:
    from taihu.backends.reference import ReferenceInputError

    try:
        module, onnx_names, shown = load_source(args)
        from taihu.backends.sim.runner import is_sw_module

        if is_sw_module(module):  # sw / swsim programs run directly on the simulated core group
            from taihu.backends.sim.runner import run_cli

            return run_cli(module, args, shown)
        inputs = complete_inputs(module, load_inputs(args.inputs), args.seed)
        start = time.perf_counter()
        outputs = run_level(args.level, module, inputs)
        elapsed = time.perf_counter() - start
    except ReferenceInputError as e:
        raise RunError(f"{'--inputs ' + args.inputs + ': ' if args.inputs else ''}{e}") from e
    if onnx_names is not None and len(onnx_names) == len(outputs):
        outputs = dict(zip(onnx_names, outputs.values()))
    if args.output is not None:
        try:
            write_atomically(args.output, lambda f: np.savez(f, **outputs))
        except OSError as e:
            raise RunError(f"cannot write {args.output}: {e.strerror or e}") from e
    if not args.quiet:
        print_table(outputs, f"{shown} at level {args.level}: {len(outputs)} output(s) in {elapsed:.3f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``taihu-run``); returns the exit status."""
    from xdsl.utils.exceptions import DiagnosticException, InterpretationError, ParseError

    try:
        from taihu.backends.sim.memory import SimError
    except ImportError:  # pragma: no cover - the simulator is part of the package
        SimError = RunError  # noqa: N806

    args = _parser().parse_args(argv)
    try:
        return run(args)
    except (RunError, SimError) as e:
        return report(TOOL, e)
    except (ParseError, DiagnosticException, InterpretationError) as e:
        return report(TOOL, e)
    except (ValueError, KeyError, OSError) as e:
        return report(TOOL, RuntimeError(f"{type(e).__name__}: {e}"))
    except Exception as e:  # never a traceback: an internal error is still one diagnostic line
        return report(TOOL, RuntimeError(f"internal error ({type(e).__name__}): {e}"))


if __name__ == "__main__":
    sys.exit(main())
