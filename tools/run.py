"""``taihu-run``: run a network on the simulated Sunway core group (or the reference) and report.

Usage::

    taihu-run MODEL.onnx | IN.mlir | --example NAME
              [--level graph|swsim] [--inputs x.npz] [--output y.npz] [--seed N]
              [--report r.json] [--trace t.pftrace|t.json] [--trace-kernels NAME,...]
              [--trace-cpes cohorts|all|LIST] [--plot DIR] [--machine NAME|FILE.toml]
              [--random-weights SEED] [--check] [--option KEY=VALUE ...] [--tuning RECORDS.json] [--verify]
              [--timing-only [--workers N | --scheduler tcp://HOST:PORT]] [--reference-sim] [--quiet]

Sources:

- ``MODEL.onnx`` is imported with :func:`taihu.frontends.onnx.import_model`; ``--example NAME``
  picks one of the light models shipped in the onnx package's backend test data (``resnet50``,
  ``vgg19``, ``alexnet``, ``squeezenet``, ``inception_v1``; no download);
- ``IN.mlir`` holding a ``graph`` module (e.g. written by ``taihu-import``; its
  ``dialect_resources`` hold the weights) is treated like an imported model;
- ``IN.mlir`` holding an ``sw`` or ``swsim`` module (``sw.kernel`` / ``swsim.target``) runs
  directly on the simulator (``--level`` does not apply).

Levels (``graph`` and ONNX inputs):

- ``swsim`` (default): lower with the ``taihu-lower`` pipeline (:mod:`taihu.passes.pipelines`;
  ``--option KEY=VALUE`` is handed to the stage passes declaring ``KEY``, e.g.
  ``--option conv-algorithm=winograd``; ``--machine`` goes to ``set-target``, so every stage
  plans for that machine, and to ``sw-to-swsim``; ``--tuning RECORDS.json`` applies
  ``taihu-tune``'s records (the ``tuning`` option: each conv/GEMM whose problem has a record
  for the module's target is lowered with the recorded schedule); ``--verify``
  runs every verifier on the result, off by default for speed), then run the
  swsim program on the core-group simulator (:func:`taihu.backends.sim.runner.simulate`), print a
  per-layer table — layer, algorithm, shape, cycles, launch cycles, ms at ``f_clk`` (1.45 GHz),
  useful and executed MFLOP, GFLOPS and % of the 742.4 GFLOPS peak of the useful flops, DMA GB/s,
  bound (compute / DMA / RLC) — plus the network total;
- ``graph``: the numpy reference interpreter (:mod:`taihu.backends.reference`), the golden model.

Inputs/outputs: ``--inputs x.npz`` holds one array per graph input keyed by its ONNX input name
(the ``graph.name`` argument attribute) or positionally ``arg0``, ``arg1``...; inputs it does not
hold are drawn from a standard normal distribution seeded by ``--seed`` (default 0; input ``i``
uses ``numpy.random.default_rng([seed, i])``). ``--output y.npz`` writes one array per graph
output, in order, keyed by the ONNX output name, atomically. A table of output name / shape /
dtype / checksum (sum and L2 norm, accumulated in float64) is printed — rich on a terminal, plain
aligned text otherwise; ``--quiet`` prints nothing on success. For an sw/swsim program the inputs
are its ``io input`` globals: a key names one by symbol, by its ``graph.name`` attribute (the ONNX
name), by that name sanitised to ``[A-Za-z0-9_.]`` (``gpu_0/data_0`` -> ``@gpu_0_data_0``) or by
position ``argN``; a key naming no input is an error; outputs are keyed by ``graph.name`` (else
the symbol).

``--timing-only`` simulates the timing only (no arithmetic, no data movement; faster): the
report, table, trace and plots are exact, there are no outputs (so no ``--output``/``--check``).
``--workers N`` (default 1: everything in this process, no Dask) simulates a timing-only run in
N processes: this one and an embedded ``dask.distributed`` cluster of N - 1 workers that simulate
launches ahead, started in the background while the network is imported and lowered;
``--scheduler tcp://HOST:PORT`` uses the workers of an existing cluster instead (they must have
taihu installed; unreachable within 5 s: an error). The report, table and trace are
byte-identical for any number of workers (:mod:`taihu.backends.sim.parallel`: the launches are
replayed in order from records made from exactly their start state). A run with numerics stays
in this process (a note says so). ``--reference-sim`` simulates event by event: one interpreter
per CPE, no lockstep cohorts, no launch memo, no workers -- the reference semantics the fast
paths are tested against (same report, trace and outputs, several times slower).

Simulator outputs (swsim level and sw modules): ``--report r.json`` (schema:
:mod:`taihu.backends.sim.report`), ``--trace FILE`` (a timeline to open in
https://ui.perfetto.dev), ``--plot DIR`` (``roofline.png`` and ``layers.png``,
:mod:`taihu.tools.plots`).

The trace's format follows the file name: ``t.pftrace`` or ``t.perfetto-trace`` is Perfetto's
protobuf trace (:mod:`taihu.backends.sim.pftrace`: kernel launches on the MPE lane, a lane per
CPE, per DMA bus and per RLC row and column; a few percent of the JSON's size), ``t.json``
Chrome's trace-event JSON as before (:mod:`taihu.backends.sim.trace`: a lane per CPE, every DMA
request, RLC batch and put -> get arrow; hundreds of MB for a network); any other name is an
error. The time to write it is shown among the wall times (``trace``). Limiting the detail:

- ``--trace-kernels NAME,...``: only the events of these launches (the report's kernel names, as
  in the per-layer table; shell globs such as ``'conv*'`` match several); a name matching no
  launch is an error naming the launches. Both formats.
- ``--trace-cpes cohorts|all|LIST`` (protobuf only). ``cohorts`` (default): CPEs that run in
  lockstep (same events at the same cycles) share one lane, that of the first of them (the
  slices' argument ``cpes`` lists them), and the DMA buses and RLC lanes show busy periods
  (``37 requests``, ``12 batches``: the requests or batches that overlap or follow each other).
  A list such as ``0,8-15`` gives those CPEs a lane of their own, with their DMA requests and
  RLC batches drawn one by one and flow arrows from put to get between them; ``all`` does so for
  every CPE (the JSON's detail).

``--random-weights SEED`` re-initializes the ONNX model's weights with seeded random values
(:func:`taihu.tools.weights.randomize_weights`) before anything else, so the run, the reference
and onnxruntime see the same model. ``--check`` compares the outputs with the graph reference
(swsim level) and, for ONNX sources, with onnxruntime on the same model and inputs: every
element must satisfy ``|a - b| <= atol + rtol |b|`` (rtol 1e-4, atol 1e-5; for a float16 output, and against
onnxruntime for every output of a model that stores float16 tensors, rtol 1e-2, atol 1e-3: taihu
computes f16 tensors in f32 and rounds at the f16 outputs only, see
:mod:`taihu.passes.conversion.graph_to_tile.cast`); the check table prints
the max absolute and relative errors; a mismatch is an error. onnxruntime is an optional
dependency (the ``test`` extra, :mod:`taihu.tools.ort`): ``--check`` on an ONNX model without it
is the error "--check compares with onnxruntime: pip install onnxruntime", before anything runs.

Progress: a rich progress bar on stderr through import, each pass of ``taihu-lower`` and the
simulation (per kernel), shown only when stderr is a terminal and without ``--quiet``.

Every error (missing file, malformed ONNX or MLIR, unsupported op, verification or lowering
error such as an LDM overflow, simulator deadlock, bad ``--inputs``, check mismatch) is reported
as ``taihu-run: error: ...`` on stderr with exit status 1, never as a Python traceback.

Output files (``--output``, ``--report``, ``--trace``, ``--plot``) are all or nothing: they are
written only after the run, the lowering, the simulation and ``--check`` have all succeeded, and
then as one group (:class:`taihu.tools.atomic.OutputFiles`): each goes to a temporary file in its
destination folder first and the files are renamed into place only once every one of them is
complete. So a run that fails -- including a failing ``--check`` or an unwritable ``--report``
path -- leaves no output file written or half-written, existing files untouched, and no
``--plot`` folder created; Ctrl-C removes the temporary files too.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import sys
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType

if TYPE_CHECKING:  # rich is imported when a bar is shown; Dask when --workers asks for it
    from types import TracebackType

    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

    from taihu.tools.executor import Executor

from taihu.tools.atomic import OutputFiles
from taihu.tools.diagnostics import format_error, report, seed_value
from taihu.tools.ort import MISSING as ONNXRUNTIME_MISSING
from taihu.tools.ort import onnxruntime_available, onnxruntime_outputs
from taihu.tools.tables import (  # noqa: F401  (checksums, layer_rows: re-exported)
    checksums,
    layer_rows,
    layer_table_title,
    new_table,
    print_layer_table,
    print_table,
    print_titled,
)

TOOL = "taihu-run"

#: ``--example`` name -> file stem in ``onnx/backend/test/data/light``.
EXAMPLES: dict[str, str] = {
    "resnet50": "light_resnet50",
    "vgg19": "light_vgg19",
    "alexnet": "light_bvlc_alexnet",
    "squeezenet": "light_squeezenet",
    "inception_v1": "light_inception_v1",
}

#: Levels accepted by ``--level``.
LEVELS = ("graph", "swsim")
DEFAULT_LEVEL = "swsim"

#: ``--check`` tolerances: ``|a - b| <= ATOL + RTOL * |b|`` element-wise (f32 outputs).
RTOL = 1e-4
ATOL = 1e-5
#: ``--check`` tolerances of a float16 output (f16 storage, f32 compute: taihu rounds once, at the
#: output; onnxruntime may round every intermediate to f16, each a relative 2^-11): about 10 ulps
#: relative, one ulp at 1 absolute (f16 epsilon 2^-10 = 9.8e-4).
RTOL_F16 = 1e-2
ATOL_F16 = 1e-3


class RunError(Exception):
    """A user-facing ``taihu-run`` error (printed as one line, exit status 1)."""

    #: set by :func:`lower` when a pass fails: (name, seconds) of the passes that completed
    stages: list[tuple[str, float]]


# --------------------------------------------------------------------------------------------
# progress


class Progress:
    """Rich progress bars on stderr (no-ops when disabled): one task per stage."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: RichProgress | None = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress as RichProgress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = RichProgress(
                SpinnerColumn(), TextColumn("[bold]{task.fields[stage]:<9}"),
                TextColumn("{task.description}", style="cyan"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=Console(file=sys.stderr), transient=True)
            self._bar.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None

    def add(self, stage: str, description: str, total: int) -> TaskID | None:
        if self._bar is None:
            return None
        return self._bar.add_task(description, total=total, stage=stage)

    def update(self, task: TaskID | None, description: str | None = None, completed: int | None = None) -> None:
        if self._bar is None or task is None:
            return
        kw: dict[str, Any] = {}
        if description is not None:
            kw["description"] = description
        if completed is not None:
            kw["completed"] = completed
        self._bar.update(task, **kw)

    @contextmanager
    def step(self, stage: str, description: str) -> Iterator[None]:
        task = self.add(stage, description, 1)
        yield
        self.update(task, completed=1)


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


@dataclass
class Source:
    """What ``taihu-run`` runs: the module, the ONNX model it came from (if any), display name."""

    module: ModuleOp
    shown: str
    model: Any = None  # onnx.ModelProto (randomized if asked) or None for .mlir input
    onnx_names: list[str] | None = None


def load_onnx(path: str | os.PathLike[str], random_weights: int | None = None) -> Source:
    """Read (optionally re-initialize the weights of) and import an ONNX file."""
    from taihu.frontends.onnx import OnnxImportError, import_model, load_model
    from taihu.tools.weights import randomize_weights

    try:
        model = load_model(path)
        if random_weights is not None:
            model = randomize_weights(model, random_weights)
        module = import_model(model)
    except OnnxImportError as e:
        raise RunError(str(e) if str(path) in str(e) else f"{path}: {e}") from e
    return Source(module, str(path), model, [o.name for o in model.graph.output])


def load_mlir(path: str | os.PathLike[str]) -> ModuleOp:
    """Parse (and verify) an MLIR file (any taihu or xDSL dialect)."""
    from xdsl.utils.exceptions import DiagnosticException

    from taihu.passes.pipelines import default_context, gc_paused
    from taihu.tools.diagnostics import SourceMap, locate, parse_mlir

    try:
        text = Path(path).read_text()
    except OSError as e:
        raise RunError(f"cannot read {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise RunError(f"{path}: not a text MLIR file ({e.reason})") from e
    source = SourceMap()
    with gc_paused():  # a lowered network is ~10^5 ops: the cyclic GC would re-scan them repeatedly
        module = parse_mlir(default_context(), text, str(path), source=source)
        try:
            module.verify()
        except DiagnosticException as e:  # the failing op's file:line:col first
            raise locate(e, source) from None
    return module


def load_source(args: argparse.Namespace) -> Source:
    """The module to run (see the module docstring)."""
    if args.example is not None:
        source = load_onnx(example_path(args.example), args.random_weights)
        source.shown = args.example
        return source
    path = Path(args.model)
    if not path.exists():
        raise RunError(f"no such file: {args.model}")
    if path.is_dir():
        raise RunError(f"{args.model} is a directory, not a model")
    if path.suffix == ".mlir":
        if args.random_weights is not None:
            raise RunError("--random-weights applies to ONNX models (for .mlir files use "
                           "taihu-import --randomize-weights when importing)")
        return Source(load_mlir(path), str(path))
    return load_onnx(path, args.random_weights)


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
    types, integers in [0, 10) for integer types, fair coins for i1. ``RunError`` for an input
    larger than the machine's main memory (refused before drawing it).
    """
    from taihu.backends.reference import input_specs

    from taihu.backends.sim.memory import MAIN_MEMORY_BYTES

    inputs = dict(given)
    for i, spec in enumerate(input_specs(module)):
        nbytes = math.prod(spec.shape) * spec.dtype.itemsize
        if nbytes > MAIN_MEMORY_BYTES:
            raise RunError(f"input '{spec.name}' of shape {list(spec.shape)} holds {nbytes} bytes, more than "
                           f"the {MAIN_MEMORY_BYTES} bytes of main memory (32 GB, 004 L451)")
        if spec.name in given or f"arg{i}" in given:
            continue
        rng = np.random.default_rng([seed, i])
        try:
            if spec.dtype.kind == "f":
                value = rng.standard_normal(spec.shape).astype(spec.dtype)
            elif spec.dtype.kind == "b":
                value = rng.random(spec.shape) < 0.5
            else:
                value = rng.integers(0, 10, spec.shape).astype(spec.dtype)
        except MemoryError:
            raise RunError(f"input '{spec.name}' of shape {list(spec.shape)}: this host cannot hold its "
                           f"{nbytes} bytes of random values") from None
        inputs[spec.name] = value
    return inputs


def named_inputs(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``inputs`` keyed by graph input name (``argN`` keys resolved), shapes/dtypes checked."""
    from taihu.backends.reference import bind_inputs, input_specs

    specs = input_specs(module)
    return {s.name: v for s, v in zip(specs, bind_inputs(specs, inputs))}


# --------------------------------------------------------------------------------------------
# running


@dataclass
class RunResult:
    """One run: outputs keyed by graph/ONNX output name, the simulator report (None at the graph
    level), per-stage wall times ``[(stage, seconds)]`` and the simulator engine."""

    outputs: dict[str, np.ndarray]
    level: str
    report: dict[str, Any] | None = None
    stages: list[tuple[str, float]] = field(default_factory=list)
    engine: Any = None
    module: ModuleOp | None = None


def _sanitise(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)


def _io_globals(module: ModuleOp, kind: str) -> list[str]:
    from taihu.dialects import sw

    names = []
    for op in module.body.block.ops:
        if isinstance(op, sw.GlobalOp) and op.io is not None and str(op.io.data.value) == kind:
            names.append(op.sym_name.data)
    return names


IO_NAME_ATTR = "graph.name"


def io_global_names(module: ModuleOp, kind: str) -> dict[str, str]:
    """``io input`` / ``io output`` globals of an sw/swsim program, in program order: global
    symbol name -> user-facing name (the global's ``graph.name`` attribute, i.e. the ONNX name
    before sanitising, when it has one; else the symbol name)."""
    from xdsl.dialects.builtin import StringAttr

    from taihu.dialects import sw

    out: dict[str, str] = {}
    for op in module.body.block.ops:
        if isinstance(op, sw.GlobalOp) and op.io is not None and str(op.io.data.value) == kind:
            name = op.attributes.get(IO_NAME_ATTR)
            out[op.sym_name.data] = name.data if isinstance(name, StringAttr) else op.sym_name.data
    return out


def bind_program_inputs(module: ModuleOp, given: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``--inputs`` arrays of an sw/swsim program keyed by io input global. A key names a global
    by its symbol, its ``graph.name`` (ONNX name), its sanitised form ([A-Za-z0-9_.]) or
    position (``argN``). ``RunError`` for a key that names no io input (the simulator would
    otherwise silently fill that global with random numbers), two keys naming one global or an
    array that does not hold real numbers (strings, complex numbers: the simulator would fail or
    drop the imaginary part)."""
    globals_ = io_global_names(module, "input")
    lookup: dict[str, str] = {}
    items = list(globals_.items())
    for form in (lambda i, sym, user: f"arg{i}", lambda i, sym, user: _sanitise(user),
                 lambda i, sym, user: user, lambda i, sym, user: sym):  # later forms win
        for i, (sym, user) in enumerate(items):
            lookup[form(i, sym, user)] = sym
    out: dict[str, np.ndarray] = {}
    for key, value in given.items():
        named = lookup.get(key, lookup.get(_sanitise(key)))
        if named is None:
            known = ", ".join(repr(u) for u in globals_.values()) or "none"
            raise RunError(f"--inputs: '{key}' is not an input of the program (io inputs: {known})")
        if named in out:
            raise RunError(f"--inputs: two arrays for input '{globals_[named]}'")
        if np.asarray(value).dtype.kind not in "biuf":  # strings, complex, dates, objects
            raise RunError(f"--inputs: input '{globals_[named]}' has dtype {np.asarray(value).dtype}, "
                           "expected booleans, integers or floats")
        out[named] = value
    return out


def match_globals(names: list[str], globals_: list[str], kind: str) -> dict[str, str]:
    """Graph name -> io global name: exact, then sanitised ([A-Za-z0-9_.]), then by position
    when the counts agree. ``RunError`` if a name has no global."""
    out: dict[str, str] = {}
    free = list(globals_)
    for n in names:
        for cand in (n, _sanitise(n)):
            if cand in free:
                out[n] = cand
                free.remove(cand)
                break
    rest = [n for n in names if n not in out]
    if rest and len(rest) == len(free):
        out.update(zip(rest, free))
    elif rest:
        raise RunError(f"the lowered program has no {kind} global for graph {kind}(s) "
                       f"{', '.join(repr(n) for n in rest)} (io {kind} globals: {', '.join(globals_) or 'none'})")
    return out


def _pass_error(e: BaseException, stage: str) -> RunError:
    msg = format_error(e)
    if isinstance(e, (ImportError, AttributeError, KeyError, TypeError, IndexError, AssertionError,
                      ZeroDivisionError, NotImplementedError, RecursionError)):
        msg = f"internal error ({type(e).__name__}): {msg}"
    return RunError(msg if msg.startswith(stage) else f"{stage}: {msg}")


def lower(module: ModuleOp, machine: str | None, options: Mapping[str, Any],
          progress: Progress | None = None, verify: bool = False) -> list[tuple[str, float]]:
    """Apply ``taihu-lower`` in place; returns the per-pass wall times. Errors -> ``RunError``
    naming the pass (``PipelineUnavailableError`` names the missing pass). ``verify``: run every
    verifier on the lowered module (a "verify" stage; xDSL's IRDL checks cost ~0.2 ms per op, tens
    of seconds on a whole network, so it is opt-in)."""
    from taihu.passes.pipelines import (
        TAIHU_LOWER,
        PipelineUnavailableError,
        StageTimer,
        build_pipeline,
        run_pipeline,
    )

    progress = progress or Progress(False)
    task = progress.add("lower", "taihu-lower", len(TAIHU_LOWER))
    timer = StageTimer(len(TAIHU_LOWER),
                       on_start=lambda name, i, n: progress.update(task, name, i))
    opts = dict(options)
    if machine is not None:
        opts["machine"] = str(machine)
    try:
        pipeline = build_pipeline(opts, callback=timer)
    except PipelineUnavailableError as e:
        raise RunError(f"cannot lower to swsim: {e}") from e
    except ValueError as e:
        raise RunError(f"--option: {e}") from e
    try:
        run_pipeline(pipeline, module, verify=False)
        if verify:
            t0 = time.perf_counter()
            module.verify()
            timer.times.append(("verify", time.perf_counter() - t0))
    except Exception as e:
        failed = TAIHU_LOWER[len(timer.times)] if len(timer.times) < len(TAIHU_LOWER) else "taihu-lower"
        err = _pass_error(e, failed)
        err.stages = list(timer.times)  # the passes that completed (benchmarks report them)
        raise err from e
    progress.update(task, "done", len(TAIHU_LOWER))
    return timer.times


def simulate_module(module: ModuleOp, inputs: Mapping[str, np.ndarray], *, machine: str | None = None,
                    trace: bool = False, seed: int = 0, progress: Progress | None = None,
                    numerics: bool = True, executor: Executor | None = None, reference: bool = False):
    """Run an sw/swsim module on the simulator with a per-kernel progress bar; the
    :class:`~taihu.backends.sim.runner.SimResult`. ``executor``: the Dask cluster a timing-only
    run simulates launches ahead on (``--workers``; unreachable -> ``RunError``). ``reference``:
    the event-by-event path (``--reference-sim``: per-CPE interpreters, no lockstep, no memo,
    no executor)."""
    from taihu.backends.sim.runner import simulate
    from taihu.tools.executor import ExecutorError

    client = None
    if executor is not None and not numerics and not reference:
        try:
            client = executor.client()
        except ExecutorError as e:
            raise RunError(str(e)) from None

    progress = progress or Progress(False)
    task = progress.add("simulate", "", 1)

    def on_kernel(done: int, total: int, name: str) -> None:
        bar = progress._bar
        if task is not None and bar is not None:  # (a task exists only while its bar does)
            bar.update(task, total=total, completed=done, description=name)

    with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are the machine's semantics, not warnings
        return simulate(module, machine_path=machine, inputs=inputs, trace=trace, seed=seed,
                        progress=on_kernel, numerics=numerics, client=client,
                        lockstep=False if reference else None, memo=False if reference else None)


def run_swsim(module: ModuleOp, inputs: Mapping[str, np.ndarray], *, machine: str | None = None,
              trace: bool = False, options: Mapping[str, Any] | None = None,
              progress: Progress | None = None, verify: bool = False, numerics: bool = True,
              executor: Executor | None = None, reference: bool = False) -> RunResult:
    """Lower a graph ``module`` (in place) with ``taihu-lower`` and simulate it. ``inputs`` keyed
    by graph input name; outputs keyed by graph output name (``graph.name`` / ``outN``).
    ``numerics=False``: timing only (the report is exact, ``outputs`` is empty); ``executor``,
    ``reference``: as :func:`simulate_module`'s."""
    from taihu.backends.reference import input_specs, output_names

    in_names = [s.name for s in input_specs(module)]
    in_shapes = {s.name: s.shape for s in input_specs(module)}
    out_names = output_names(module)
    out_dtypes = dict(zip(out_names, output_dtypes(module)))  # f16 results: rounded here, by the host
    stages = lower(module, machine, options or {}, progress, verify)
    in_map = match_globals(in_names, _io_globals(module, "input"), "input")
    out_map = match_globals(out_names, _io_globals(module, "output"), "output")
    t0 = time.perf_counter()
    try:
        res = simulate_module(module, {in_map[n]: np.asarray(inputs[n]).reshape(in_shapes[n]) for n in in_names},
                              trace=trace, progress=progress, numerics=numerics, executor=executor,
                              reference=reference)
    except Exception as e:
        e.stages = [*stages, ("simulate (failed)", time.perf_counter() - t0)]  # type: ignore[attr-defined]  # for benchmarks, on whatever the simulator raised
        raise
    stages.append(("simulate", time.perf_counter() - t0))
    outputs = {n: _host_cast(res.outputs[out_map[n]], out_dtypes[n]) for n in out_names} if numerics else {}
    return RunResult(outputs, "swsim", res.report, stages, res.engine, module)


def output_dtypes(module: ModuleOp) -> list[np.dtype | None]:
    """numpy dtype of each result of a graph module's ``@main`` (None: not a float tensor)."""
    from taihu.backends.reference import entry_function
    from taihu.dialects.resources import element_dtype

    out: list[np.dtype | None] = []
    for t in entry_function(module).function_type.outputs.data:
        out.append(element_dtype(t.element_type) if isinstance(t, TensorType) else None)
    return out


def _host_cast(value: np.ndarray, dtype: np.dtype | None) -> np.ndarray:
    """A simulated output converted to the graph's result type: an f16 result is computed and
    stored in f32 on the core group and rounded to f16 by the host
    (:mod:`taihu.passes.conversion.graph_to_tile.cast`)."""
    if dtype is None or value.dtype == dtype:
        return value
    with np.errstate(over="ignore"):
        return value.astype(dtype)


def run_graph(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> RunResult:
    """Run a graph module on the numpy reference."""
    from taihu.backends.reference import run_module

    t0 = time.perf_counter()
    try:
        outputs = run_module(module, inputs)
    except MemoryError as e:  # numpy's refusal of an intermediate array (a huge shape)
        raise RunError(f"the graph reference needs more memory than this host has ({e})") from None
    return RunResult(outputs, "graph", stages=[("reference", time.perf_counter() - t0)], module=module)


# --------------------------------------------------------------------------------------------
# --check


@dataclass
class Comparison:
    output: str
    against: str
    max_abs: float
    max_rel: float
    ok: bool


def compare(outputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], against: str,
            rtol: float = RTOL, atol: float = ATOL) -> list[Comparison]:
    """Element-wise ``|a - b| <= atol + rtol |b|`` per output (same order, shapes must agree); an
    output where either side is float16 uses at least :data:`RTOL_F16` / :data:`ATOL_F16`."""
    rows = []
    for (name, a), b in zip(outputs.items(), expected.values(), strict=True):
        f16 = np.float16 in (np.asarray(a).dtype, np.asarray(b).dtype)  # f16 storage: f16 tolerances
        rt, at = (max(rtol, RTOL_F16), max(atol, ATOL_F16)) if f16 else (rtol, atol)
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            rows.append(Comparison(name, against, float("inf"), float("inf"), False))
            continue
        diff = np.abs(a - b)
        finite = ~(np.isnan(a) | np.isnan(b))
        d = diff[finite]
        max_abs = float(d.max()) if d.size else 0.0
        rel = d / np.maximum(np.abs(b[finite]), np.finfo(np.float32).tiny)
        max_rel = float(rel.max()) if rel.size else 0.0
        ok = bool(np.array_equal(np.isnan(a), np.isnan(b))) and bool(
            np.all(diff[finite] <= at + rt * np.abs(b[finite])))
        rows.append(Comparison(name, against, max_abs, max_rel, ok))
    return rows


def _float16_model(source: Source) -> bool:
    """An ONNX source that stores float16 tensors (:func:`taihu.frontends.onnx.uses_float16`): its
    comparison with onnxruntime uses the f16 tolerances for every output."""
    from taihu.frontends.onnx import uses_float16

    return source.model is not None and uses_float16(source.model)


def print_check(rows: list[Comparison], title: str) -> None:
    table = new_table(title, [("output", "left"), ("against", "left"), ("max abs err", "right"),
                              ("max rel err", "right"), ("result", "left")])
    for r in rows:
        table.add_row(r.output, r.against, f"{r.max_abs:.3g}", f"{r.max_rel:.3g}",
                      "ok" if r.ok else "MISMATCH")
    print_titled(table, title)


# --------------------------------------------------------------------------------------------
# driver


def _parse_options(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RunError(f"--option {item!r}: expected KEY=VALUE")
        v: Any = value
        if value.lower() in ("true", "false"):
            v = value.lower() == "true"
        else:
            for conv in (int, float):
                try:
                    v = conv(value)
                    break
                except ValueError:
                    pass
        out[key] = v
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=TOOL, description="Run a network on the simulated SW26010 core "
                                "group (or the reference) and report per layer.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("model", nargs="?", help="ONNX model (.onnx) or graph / sw / swsim module (.mlir)")
    src.add_argument("--example", metavar="NAME", help=f"a light ONNX test model: {', '.join(EXAMPLES)}")
    p.add_argument("--level", choices=LEVELS, default=None,
                   help=f"graph/ONNX inputs: execution level (default: {DEFAULT_LEVEL})")
    p.add_argument("--inputs", metavar="X.npz", help="input arrays keyed by ONNX input name or argN")
    p.add_argument("--output", metavar="Y.npz", help="write the outputs, keyed by ONNX output name")
    p.add_argument("--seed", type=seed_value, default=0, help="seed of the random inputs not given by --inputs (default: 0)")
    p.add_argument("--random-weights", type=seed_value, metavar="SEED", default=None,
                   help="re-initialize the ONNX model's weights with seeded random values")
    p.add_argument("--check", action="store_true",
                   help=f"compare with the graph reference and onnxruntime (rtol {RTOL:g}, atol {ATOL:g})")
    p.add_argument("--report", metavar="R.json", help="write the simulator report (JSON)")
    p.add_argument("--trace", metavar="T.pftrace|T.json",
                   help="write a timeline for ui.perfetto.dev: Perfetto protobuf (.pftrace, "
                        ".perfetto-trace) or Chrome JSON (.json), by the file name")
    p.add_argument("--trace-kernels", metavar="NAME,...",
                   help="trace only these launches (the table's kernel names; globs such as 'conv*')")
    p.add_argument("--trace-cpes", metavar="cohorts|all|LIST",
                   help="protobuf trace: CPEs on a lane of their own, with their DMA requests, RLC batches "
                        "and put->get arrows (e.g. 0,8-15, or all); the others share one lane per cohort "
                        "in lockstep and the buses show busy periods (default: cohorts)")
    p.add_argument("--plot", metavar="DIR", help="write roofline.png and layers.png into DIR")
    p.add_argument("--machine", metavar="NAME|FILE.toml", help="the machine to compile for and run on: "
                   "a shipped name (sw26010, sw26010pro) or a machine TOML file (default: the "
                   "module's target, else sw26010)")
    p.add_argument("--tuning", metavar="RECORDS.json", help="apply taihu-tune's records: each conv/GEMM layer "
                   "whose (signature, target) has a record gets its schedule (taihu-lower option tuning=FILE)")
    p.add_argument("--option", metavar="KEY=VALUE", action="append", default=[],
                   help="taihu-lower option for the passes declaring KEY (e.g. conv-algorithm=winograd)")
    p.add_argument("--verify", action="store_true",
                   help="verify the lowered module (every op verifier; slow on whole networks)")
    p.add_argument("--timing-only", action="store_true",
                   help="simulate the timing only (no arithmetic or data movement: faster; the report is "
                        "exact, there are no outputs)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="--timing-only: simulate in N processes, this one and an embedded Dask cluster of "
                        "N-1 workers (default: 1, everything in this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="--timing-only: simulate launches ahead on an existing Dask cluster")
    p.add_argument("--reference-sim", action="store_true",
                   help="simulate event by event (one interpreter per CPE, no lockstep, no launch memo, no "
                        "workers): the reference the fast paths are tested against; same results, slower")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    return p


def _json_writer(obj: Any) -> Callable[[BinaryIO], None]:
    """Write ``obj`` as indented JSON (UTF-8, final newline) into a binary file, streamed (a
    whole network's trace is large)."""

    def write(f: BinaryIO) -> None:
        text = io.TextIOWrapper(f, encoding="utf-8", newline="\n")
        json.dump(obj, text, indent=1)
        text.write("\n")
        text.detach()  # flushes; ``f`` stays open for its owner

    return write


#: ``--trace`` file name endings and their format
TRACE_FORMATS = {".pftrace": "pftrace", ".perfetto-trace": "pftrace", ".json": "json"}


def trace_format(path: str, option: str = "--trace ") -> str:
    """``pftrace`` or ``json`` by the ending of ``path`` (:data:`TRACE_FORMATS`); ``RunError``
    naming ``option`` and ``path`` for any other name."""
    for end, fmt in TRACE_FORMATS.items():
        if path.lower().endswith(end):
            return fmt
    raise RunError(f"{option}{path}: name the file T.pftrace or T.perfetto-trace (Perfetto's "
                   "protobuf trace) or T.json (Chrome trace-event JSON)")


@dataclass(frozen=True)
class TraceRequest:
    """The ``--trace`` options, checked before anything runs (:func:`trace_request`)."""

    path: str
    fmt: str  # "pftrace" | "json"
    kernels: tuple[str, ...] | None  # launch-name globs, None: every launch
    cpes: Any  # pftrace.CpeLanes


def trace_request(path: str | None, kernels: str | None, cpes: str | None) -> TraceRequest | None:
    """The trace options (None without ``--trace``); ``RunError`` for an unknown file name, an
    empty name list, a malformed CPE list, ``--trace-cpes`` on a JSON trace or a ``--trace-*``
    option without ``--trace``."""
    from taihu.backends.sim.pftrace import CpeLanes
    from taihu.backends.sim.trace import TraceOptionError

    if path is None:
        given = "--trace-kernels" if kernels is not None else "--trace-cpes" if cpes is not None else None
        if given:
            raise RunError(f"{given} limits the trace: it needs --trace FILE")
        return None
    fmt = trace_format(path)
    names = None
    if kernels is not None:
        names = tuple(k.strip() for k in kernels.split(",") if k.strip())
        if not names:
            raise RunError(f"--trace-kernels {kernels!r}: expected launch names, e.g. conv1,fc*")
    if cpes is not None and fmt == "json":
        raise RunError(f"--trace-cpes applies to the Perfetto protobuf trace (.pftrace); the JSON trace "
                       f"{path} has a lane per CPE")
    try:
        lanes = CpeLanes.parse(cpes) if cpes is not None else CpeLanes()
    except TraceOptionError as e:
        raise RunError(str(e)) from e
    return TraceRequest(path, fmt, names, lanes)


def _trace_writer(args: argparse.Namespace, trace: Any) -> Callable[[BinaryIO], None]:
    """The writer of the ``--trace`` file: the selected launches (``--trace-kernels``) in the
    format of the file name; ``RunError`` for a launch name or CPE the run does not have (before
    any file is written)."""
    from taihu.backends.sim.pftrace import write_pftrace
    from taihu.backends.sim.trace import TraceOptionError

    req = trace_request(args.trace, args.trace_kernels, args.trace_cpes)
    assert req is not None  # (called with --trace)
    try:
        if req.kernels is not None:
            trace = trace.select_kernels(req.kernels)
        if req.fmt == "json":
            return _json_writer(trace.to_json())
        req.cpes.own(trace.m.n_cpes)  # a CPE the machine does not have: before writing
    except TraceOptionError as e:
        raise RunError(str(e)) from e
    return lambda f: write_pftrace(trace, f, req.cpes)


def _write_outputs(args: argparse.Namespace, result: RunResult) -> None:
    """Write --output / --report / --trace / --plot all or nothing (see the module docstring);
    ``RunError`` naming the file that cannot be written."""
    sim_only = [o for o in ("report", "trace", "plot") if getattr(args, o) is not None]
    if result.report is None and sim_only:
        raise RunError(f"--{sim_only[0]} needs a simulated run (--level swsim or an sw module)")
    files: list[tuple[str, Any]] = []
    if args.output is not None:
        files.append((args.output, lambda f: np.savez(f, **result.outputs)))  # type: ignore[arg-type]  # keys are output names
    if args.report is not None:
        files.append((args.report, _json_writer(result.report)))
    if args.trace is not None:
        files.append((args.trace, _trace_writer(args, result.engine.trace)))
    if args.plot is not None:
        from taihu.tools.plots import render_plots

        assert result.report is not None  # (checked above: --plot needs a simulated run)
        pngs = render_plots(result.report, title=Path(args.shown).stem if hasattr(args, "shown") else "")
        files += [(os.path.join(args.plot, name), png) for name, png in pngs.items()]
    dest = args.plot
    try:
        with OutputFiles() as out:
            if args.plot is not None:
                out.makedirs(args.plot)
            for dest, content in files:
                t0 = time.perf_counter()
                out.add(dest, content)
                if dest == args.trace:  # shown in the wall times: a network's trace takes a while
                    result.stages.append(("trace", time.perf_counter() - t0))
    except OSError as e:
        raise RunError(f"cannot write {e.filename or dest}: {e.strerror or e}") from e


def _executor(args: argparse.Namespace) -> Executor | None:
    """The Dask cluster of ``--workers`` / ``--scheduler`` for a timing-only run (not started
    yet); None when everything runs in this process. ``RunError`` for a worker count below 1."""
    from taihu.tools.executor import Executor

    if args.workers < 1:
        raise RunError(f"--workers {args.workers}: expected a number >= 1")
    if args.workers == 1 and not args.scheduler:
        return None
    if args.reference_sim:
        raise RunError(f"--reference-sim simulates in this process, event by event: it excludes "
                       f"--{'scheduler' if args.scheduler else 'workers'}")
    if not args.timing_only:
        if not args.quiet:
            print(f"{TOOL}: note: --{'scheduler' if args.scheduler else 'workers'} applies to --timing-only "
                  "runs; the numerics run in this process", file=sys.stderr)
        return None
    return Executor(args.workers - 1, args.scheduler)  # this process is one of the N


def run(args: argparse.Namespace) -> int:
    executor = _executor(args)
    try:
        return _run(args, executor)
    finally:
        if executor is not None:
            executor.close()


def _run(args: argparse.Namespace, executor: Executor | None) -> int:
    from taihu.backends.reference import ReferenceInputError
    from taihu.backends.sim.runner import is_sw_module

    progress = Progress(enabled=not args.quiet and sys.stderr.isatty())
    options = _parse_options(args.option)
    if args.tuning is not None:
        options["tuning"] = args.tuning
    if args.timing_only and (args.output or args.check or args.level == "graph"):
        clash = "--output" if args.output else "--check" if args.check else "--level graph"
        raise RunError(f"--timing-only computes no outputs: it cannot be combined with {clash}")
    if args.plot is not None and os.path.exists(args.plot) and not os.path.isdir(args.plot):
        raise RunError(f"--plot {args.plot}: not a directory")
    trace_request(args.trace, args.trace_kernels, args.trace_cpes)  # its errors before the run
    if executor is not None:  # the cluster starts while the source is imported and lowered
        executor.start(["taihu.backends.sim.parallel"])
    with progress:
        t0 = time.perf_counter()
        with progress.step("import", args.example or args.model):
            source = load_source(args)
        t_import = time.perf_counter() - t0
        args.shown = source.shown
        if args.check and source.model is not None and not onnxruntime_available():
            raise RunError(ONNXRUNTIME_MISSING)
        module = source.module
        if is_sw_module(module):
            if args.check:
                raise RunError("--check compares a graph or ONNX model with its reference; "
                               f"{source.shown} is an sw/swsim program")
            if args.option or args.tuning:
                raise RunError(f"{'--option' if args.option else '--tuning'} applies to the taihu-lower "
                               "pipeline (graph or ONNX input)")
            given = bind_program_inputs(module, load_inputs(args.inputs))
            t1 = time.perf_counter()
            res = simulate_module(module, given, machine=args.machine, trace=args.trace is not None,
                                  seed=args.seed, progress=progress, numerics=not args.timing_only,
                                  executor=executor, reference=args.reference_sim)
            shown_as = io_global_names(module, "output")
            outputs = {shown_as.get(k, k): v for k, v in res.outputs.items()}
            result = RunResult(outputs, "swsim", res.report,
                               [("import", t_import), ("simulate", time.perf_counter() - t1)], res.engine, module)
        else:
            level = args.level or DEFAULT_LEVEL
            try:
                inputs = named_inputs(module, complete_inputs(module, load_inputs(args.inputs), args.seed))
            except ReferenceInputError as e:
                raise RunError(f"{'--inputs ' + args.inputs + ': ' if args.inputs else ''}{e}") from e
            reference = module.clone() if (args.check and level == "swsim") else None
            if level == "graph":
                result = run_graph(module, inputs)
            else:
                result = run_swsim(module, inputs, machine=args.machine, trace=args.trace is not None,
                                   options=options, progress=progress, verify=args.verify,
                                   numerics=not args.timing_only, executor=executor,
                                   reference=args.reference_sim)
            result.stages.insert(0, ("import", t_import))
    if source.onnx_names is not None and len(source.onnx_names) == len(result.outputs):
        result.outputs = dict(zip(source.onnx_names, result.outputs.values()))
    checks: list[Comparison] = []
    if args.check:
        if reference is not None:
            ref = run_graph(reference, inputs)
            result.stages.append(("reference", ref.stages[0][1]))
            checks += compare(result.outputs, ref.outputs, "reference")
        if source.model is not None:
            t1 = time.perf_counter()
            ort_out = onnxruntime_outputs(source.model, inputs)
            result.stages.append(("onnxruntime", time.perf_counter() - t1))
            f16 = _float16_model(source)  # taihu computes its f16 tensors in f32, onnxruntime may not
            checks += compare(result.outputs, ort_out, "onnxruntime", *((RTOL_F16, ATOL_F16) if f16 else ()))
        if not checks:
            raise RunError("--check: nothing to compare with (graph level on an .mlir file: the "
                           "reference is the run itself; onnxruntime needs an ONNX model)")
    bad = [c for c in checks if not c.ok]
    if not bad:  # a failed --check writes no output file (module docstring)
        _write_outputs(args, result)
    if not args.quiet:
        total = sum(t for _, t in result.stages)
        if result.report is not None:
            print_layer_table(result.report, layer_table_title(source.shown, result.report))
        if not args.timing_only:
            print_table(result.outputs, f"{source.shown} at level {result.level}: {len(result.outputs)} "
                                        f"output(s) in {total:.3f} s")
        if checks:
            f16 = any(np.asarray(v).dtype == np.float16 for v in result.outputs.values()) or _float16_model(source)
            print_check(checks, f"--check (rtol {RTOL:g}, atol {ATOL:g}"
                                + (f"; float16 outputs rtol {RTOL_F16:g}, atol {ATOL_F16:g})" if f16 else ")"))
        print("wall time: " + ", ".join(f"{n} {t:.3f} s" for n, t in result.stages) + f"; total {total:.3f} s")
    if bad:
        worst = max(bad, key=lambda c: c.max_abs)
        raise RunError(f"--check failed: {len(bad)} of {len(checks)} comparisons exceed rtol {RTOL:g} / "
                       f"atol {ATOL:g}; worst: output '{worst.output}' vs {worst.against}: max abs err "
                       f"{worst.max_abs:.3g}, max rel err {worst.max_rel:.3g}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``taihu-run``); returns the exit status."""
    from xdsl.utils.exceptions import DiagnosticException, InterpretationError, ParseError

    from taihu.target.machine import MachineConfigError
    from taihu.backends.sim.memory import SimError

    args = _parser().parse_args(argv)
    try:
        return run(args)
    except SimError as e:
        shown = getattr(args, "shown", None)
        msg = str(e).replace("\n", "\n  ")
        return report(TOOL, RuntimeError(f"{shown}: {msg}" if shown else msg))
    except (RunError, MachineConfigError) as e:
        return report(TOOL, e)
    except (ParseError, DiagnosticException, InterpretationError) as e:
        return report(TOOL, e)
    except (ValueError, KeyError, OSError) as e:
        return report(TOOL, RuntimeError(f"{type(e).__name__}: {e}"))
    except BrokenPipeError:  # e.g. `taihu-run ... | head`: the reader is gone, not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{TOOL}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a traceback: an internal error is still one diagnostic line
        return report(TOOL, RuntimeError(f"internal error ({type(e).__name__}): {e}"))


__all__ = ["main", "run_swsim", "run_graph", "lower", "simulate_module", "layer_rows", "compare",
           "onnxruntime_outputs", "load_source", "RunResult", "RunError", "EXAMPLES", "example_path"]


if __name__ == "__main__":
    sys.exit(main())
