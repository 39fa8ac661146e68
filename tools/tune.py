"""``taihu-tune``: search the schedule space of every planned op of a network, write records.

Usage::

    taihu-tune MODEL.onnx | IN.mlir | --example NAME -o RECORDS.json
               [--strategy model|sim|exhaustive|anneal|greedy] [--top-k K]
               [--layers NAMES|INDICES] [--machine NAME|FILE.toml] [--workers N]
               [--scheduler tcp://HOST:PORT] [--list-space] [--random-weights SEED]
               [--steps N] [--seed N] [--quiet]

The source is loaded as ``taihu-run`` loads it (:func:`taihu.tools.run.load_source`) and run
through the graph stages of ``taihu-lower`` (``set-target`` with ``--machine``, the constant and
batch-norm folds, ``graph-simplify``). Every op that ``graph-schedule`` annotates
(:func:`~taihu.passes.conversion.graph_to_tile.schedules.op_problem`) is a *problem*: convolutions,
``graph.gemm``, ``graph.matmul``, ``graph.lstm`` and the memory-bound ops with a kernel of their
own (element-wise maps, batch norm, pad, transposes, pools, global average pool, softmax, LRN:
the families of ``MAP_KINDS``; an op fused into its producer's kernel has no schedule).
Problems are deduplicated by (canonical signature, target), so ResNet-50's 53 convolutions are
~20 problems. ``--layers`` keeps some: 1-based problem numbers (as
``--list-space`` prints them) and/or layer names, comma-separated.

Per problem, the *space* is every legal schedule of the op on the module's machine, each with its
analytic-model cost (:func:`~taihu.passes.conversion.graph_to_tile.schedules.space`); the model's
own choice is the *default* (what ``taihu-lower`` does without records). Strategies:

* ``model``: the schedule of smallest model cycles; nothing is simulated;
* ``sim`` (default): rank the space by the model, simulate the ``--top-k`` best (default 8) and
  the default, keep the fastest simulated;
* ``exhaustive``: simulate every candidate;
* ``anneal``: FlexTensor's search (001 Ch.4, :func:`taihu.tools.search.anneal`) over the
  schedule neighbourhood -- one integer parameter one step up or down its lattice of legal
  values (the split of that loop with its trip count), or two of them in opposite senses (the
  ``N (N - 1) / 2`` directions of FT-2), a boolean flipped, or the best point of another
  algorithm -- for ``--steps`` model evaluations (default 64) from the model's best point of
  each algorithm, with ``--seed``; then the ``--top-k`` visited points and the default are
  simulated;
* ``greedy``: DLIR's segmentation search (000 Ch.5, :func:`taihu.tools.search.greedy_segments`)
  on the blocking parameters: per algorithm and choice of the non-integer parameters, start
  every integer parameter at its smallest legal value and double the one whose growth lowers
  the model cost most while the point stays legal (fits LDM, divisibility), until none
  improves; the ``--top-k`` results and the default are simulated. The summary prints the
  model evaluations against the space size (DL-1: 161.44x fewer steps on AlexNet).

A candidate simulation is the layer alone (:func:`taihu.tools.layers.layer_module` for the compute
ops: random constant weights, the fused relu / residual the problem has; for the memory-bound
ops the kernel's ops cut out of the network as they are, :func:`taihu.tools.layers.extract_module`)
annotated with the candidate's
``tile.schedule``, lowered by ``taihu-lower`` for the module's target and simulated timing-only
(:func:`taihu.backends.sim.runner.simulate` with ``numerics=False``); its cycles are the
report's total. Simulations run on ``dask.distributed`` (:mod:`taihu.tools.executor`): an
embedded local cluster of ``--workers`` processes (default: the cores; ``0``: in this process),
or an existing cluster with ``--scheduler tcp://HOST:8786``. The kept schedule is the smallest
(simulated cycles, model cycles, schedule text), so the records are the same for any number of
workers. A candidate that fails to lower or simulate is reported in one line and skipped.

Records (``-o``): one JSON line per (signature, target), :mod:`taihu.backends.model.records`,
written atomically; apply them with ``taihu-run --tuning RECORDS.json`` or
``taihu-lower{tuning=RECORDS.json}``. They transfer to any network with the same layer shapes.

``--list-space``: per problem, the space size and every candidate with its model cycles (in
enumeration order, printed as enumerated), then the average space size per compute layer
(conv, GEMM, MatMul, LSTM) beside 004 Table 6.1 (VGG16 454.2, ResNet50 353.7 candidates per layer); no search, no ``-o`` needed.

Output: a rich progress bar on stderr (a terminal, without ``--quiet``) and a closing table per
problem: layer, space size, candidates simulated, default and tuned schedule, simulated cycles of
both, speed-up, model error of the tuned schedule ((model - sim) / sim), seconds (model search
plus the layer's simulations, summed over workers). Errors are one line ``taihu-tune: error:
...``, exit status 1.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taihu.backends.model.conv import ConvShape, GemmShape
from taihu.backends.model.lstm_plan import LstmShape
from taihu.backends.model.map_plans import MapShape

if TYPE_CHECKING:  # Dask is imported when a search simulates
    from taihu.tools.executor import Executor

TOOL = "taihu-tune"

STRATEGIES = ("model", "sim", "exhaustive", "anneal", "greedy")
DEFAULT_STRATEGY = "sim"
DEFAULT_TOP_K = 8
DEFAULT_STEPS = 64

#: 004 Table 6.1 (L1613-1623): average schedule-space size per layer of swAutoDNN's tuner
TABLE_6_1 = {"VGG16": 454.2, "ResNet50": 353.7, "Yolo": 365.1}


class TuneError(Exception):
    """A user-facing ``taihu-tune`` error (one line, exit status 1)."""


# --------------------------------------------------------------------------------------------
# candidates and the strategies (pure: schedules and model cycles in, candidates to simulate out)


@dataclass(frozen=True)
class Candidate:
    """One schedule of a problem's space and its model cycles. ``schedule`` is a
    :class:`taihu.backends.model.schedule.Schedule` (hashable, ``describe()`` one line)."""

    schedule: Any
    model_cycles: int

    @property
    def text(self) -> str:
        return self.schedule.describe()

    @property
    def model_key(self) -> tuple[int, str]:
        """Model ranking: cycles, then the schedule text (a total, deterministic order)."""
        return (self.model_cycles, self.text)


@dataclass
class Selection:
    """What a strategy chose to simulate (``simulate``, model-ranked, the default included when
    simulating at all), the model's best, and the number of model evaluations it made."""

    simulate: list[Candidate]
    best_model: Candidate
    steps: int


def _with_default(chosen: Iterable[Candidate], default: Candidate) -> list[Candidate]:
    out = sorted(set(chosen) | {default}, key=lambda c: c.model_key)
    return out


def _int_keys(cands: Sequence[Candidate]) -> list[str]:
    keys: set[str] = set()
    for c in cands:
        keys |= {k for k, v in c.schedule.params if isinstance(v, int) and not isinstance(v, bool)}
    return sorted(keys)


def _group_key(c: Candidate, int_keys: Sequence[str]) -> tuple:
    """The non-integer part of a schedule: its algorithm and its str/bool parameters (and which
    integer parameters it has)."""
    ints = set(int_keys)
    return (c.schedule.algorithm,
            tuple((k, v) for k, v in c.schedule.params if k not in ints),
            tuple(k for k, _ in c.schedule.params if k in ints))


def _items(d: dict[str, Any]) -> tuple:
    return tuple(sorted(d.items()))


def _distance(a: Candidate, b: Candidate) -> float:
    """How far two schedules' integer parameters are apart: ``|log2 a - log2 b|`` summed over
    the keys both have, 1 for a key only one has."""
    da, db = a.schedule.as_dict(), b.schedule.as_dict()
    ints = {k for k, v in [*da.items(), *db.items()] if isinstance(v, int) and not isinstance(v, bool)}
    dist = 0.0
    for k in sorted(ints):
        va, vb = da.get(k), db.get(k)
        if isinstance(va, int) and isinstance(vb, int) and va > 0 and vb > 0:
            dist += abs(math.log2(va) - math.log2(vb))
        else:
            dist += 1.0
    return dist


class ScheduleLattice:
    """The neighbourhood structure of a space (module docstring, ``anneal``/``greedy``): per
    group (algorithm + non-integer parameters), each integer parameter's sorted legal values."""

    def __init__(self, cands: Sequence[Candidate]) -> None:
        self.cands = list(cands)
        self.int_keys = _int_keys(self.cands)
        self.by_point: dict[tuple, Candidate] = {}
        self.groups: dict[tuple, list[Candidate]] = {}
        for c in self.cands:
            g = _group_key(c, self.int_keys)
            self.groups.setdefault(g, []).append(c)
            self.by_point[(g, self.ints(c))] = c
        self.values: dict[tuple, list[list[int]]] = {}
        for g, cs in self.groups.items():
            dims = g[2]
            self.values[g] = [sorted({c.schedule.as_dict()[k] for c in cs}) for k in dims]
        self.group_of = {c: _group_key(c, self.int_keys) for c in self.cands}
        self.by_params = {(c.schedule.algorithm, _items(c.schedule.as_dict())): c for c in self.cands}
        self.by_algorithm: dict[str, list[Candidate]] = {}
        self.choices: dict[tuple[str, str], list[Any]] = {}
        for c in self.cands:
            self.by_algorithm.setdefault(c.schedule.algorithm, []).append(c)
            for k, v in c.schedule.params:
                vals = self.choices.setdefault((c.schedule.algorithm, k), [])
                if v not in vals:
                    vals.append(v)

    def ints(self, c: Candidate) -> tuple[int, ...]:
        d = c.schedule.as_dict()
        return tuple(d[k] for k in _group_key(c, self.int_keys)[2])

    def at(self, group: tuple, point: tuple[int, ...]) -> Candidate | None:
        return self.by_point.get((group, point))

    def _step(self, group: tuple, dim: int, value: int, delta: int) -> int | None:
        vals = self.values[group][dim]
        i = vals.index(value) + delta
        return vals[i] if 0 <= i < len(vals) else None

    def neighbours(self, c: Candidate) -> list[Candidate]:
        """Single steps of one integer parameter, opposite steps of two (FT-2's directions),
        one boolean/string parameter changed, and the nearest point of each other algorithm
        (:func:`_distance`); no neighbour needs a cost evaluation to be found."""
        g = self.group_of[c]
        x = self.ints(c)
        out: list[Candidate] = []
        n = len(x)
        for i in range(n):
            for d in (-1, 1):
                v = self._step(g, i, x[i], d)
                if v is not None:
                    q = self.at(g, x[:i] + (v,) + x[i + 1:])
                    if q is not None:
                        out.append(q)
        for i in range(n):
            for j in range(i + 1, n):
                for di, dj in ((1, -1), (-1, 1)):
                    vi, vj = self._step(g, i, x[i], di), self._step(g, j, x[j], dj)
                    if vi is None or vj is None:
                        continue
                    y = list(x)
                    y[i], y[j] = vi, vj
                    q = self.at(g, tuple(y))
                    if q is not None:
                        out.append(q)
        params = c.schedule.as_dict()
        for k, v in c.schedule.params:  # a boolean / string parameter changed, the rest kept
            if isinstance(v, int) and not isinstance(v, bool):
                continue
            for w in self.choices.get((c.schedule.algorithm, k), ()):
                if w != v:
                    q = self.by_params.get((c.schedule.algorithm, _items({**params, k: w})))
                    if q is not None:
                        out.append(q)
        for alg in sorted(self.by_algorithm):  # the nearest point of each other algorithm
            if alg != c.schedule.algorithm:
                out.append(min(self.by_algorithm[alg], key=lambda cc: (_distance(c, cc), cc.text)))
        return out


def select(strategy: str, cands: Sequence[Candidate], default: Candidate, *, top_k: int = DEFAULT_TOP_K,
           steps: int = DEFAULT_STEPS, seed: int = 0) -> Selection:
    """The candidates ``strategy`` simulates (module docstring) from the space ``cands`` (with
    model cycles) whose model default is ``default``. ``model``: nothing to simulate."""
    from taihu.tools.search import anneal, greedy_segments

    if not cands:
        return Selection([default], default, 1) if strategy != "model" else Selection([], default, 1)
    ranked = sorted(cands, key=lambda c: c.model_key)
    if strategy == "model":
        return Selection([], ranked[0], len(ranked))
    if strategy == "sim":
        return Selection(_with_default(ranked[:top_k], default), ranked[0], len(ranked))
    if strategy == "exhaustive":
        return Selection(_with_default(ranked, default), ranked[0], len(ranked))
    lattice = ScheduleLattice(ranked)
    if strategy == "anneal":
        # FlexTensor samples its start points: the default and, per other algorithm, a point
        # drawn with the seed (no cost needed to pick them)
        rng = random.Random(seed)
        starts = [default] if default in lattice.group_of else []
        for alg in sorted(lattice.by_algorithm):
            if alg != default.schedule.algorithm:
                starts.append(rng.choice(sorted(lattice.by_algorithm[alg], key=lambda c: c.text)))
        res = anneal(starts, lattice.neighbours, lambda c: float(c.model_cycles) or 1.0,
                     steps=max(steps, len(starts)), seed=seed, order=lambda c: c.text)
        visited = sorted(res.costs, key=lambda c: c.model_key)
        return Selection(_with_default(visited[:top_k], default), visited[0], res.steps)
    if strategy == "greedy":
        results: list[Candidate] = []
        total = 0
        for g, cs in sorted(lattice.groups.items(), key=lambda kv: repr(kv[0])):
            vals = lattice.values[g]

            def cost(x: tuple[int, ...], g=g) -> float:
                c = lattice.at(g, x)
                return float(c.model_cycles) if c is not None else math.inf

            def grow(dim: int, value: int, extent: int, vals=vals) -> int | None:
                bigger = [v for v in vals[dim] if v >= 2 * value]
                if bigger:
                    return bigger[0]
                return vals[dim][-1] if value < vals[dim][-1] else None

            # the smallest legal blocking of the group (least product, then lexicographic)
            start = min((lattice.ints(c) for c in cs), key=lambda x: (math.prod(x), x))
            def fits(x: tuple[int, ...], g=g) -> bool:
                return lattice.at(g, x) is not None

            r = greedy_segments([v[-1] for v in vals], cost, fits, start=start, grow=grow, improve_only=True)
            total += r.steps
            found = lattice.at(g, r.point)
            assert found is not None  # the search starts at and moves to legal points only
            results.append(found)
        results.sort(key=lambda c: c.model_key)
        return Selection(_with_default(results[:top_k], default), results[0], total)
    raise TuneError(f"unknown strategy '{strategy}' (choose from {', '.join(STRATEGIES)})")


# --------------------------------------------------------------------------------------------
# candidate simulation (runs on the Dask workers)


@dataclass(frozen=True)
class SimJob:
    """One candidate simulation: the problem (op kind, shape), the schedule, the target
    attribute text (``#target.machine<...>``: self-contained, so a remote worker needs no
    machine file), the layer name for messages and, for a problem built by extraction rather
    than from its shape, the extracted module's text (``LayerResult.text``)."""

    kind: str
    shape: ConvShape | GemmShape | LstmShape | MapShape
    schedule: Any
    target: str
    layer: str
    text: str | None = None

    def describe(self) -> str:
        return f"{self.layer} [{self.schedule.describe()}]"


@dataclass(frozen=True)
class SimOutcome:
    """Simulated (timing-only) cycles of a candidate, or the one-line error; wall seconds."""

    cycles: int | None
    seconds: float
    error: str | None = None


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def lost_job(job: SimJob, e: BaseException) -> SimOutcome:
    """The outcome of a candidate whose simulation did not return (its worker died: e.g. out of
    memory): an error like any other failed candidate."""
    return SimOutcome(None, 0.0, f"the simulation did not return ({_one_line(e)})")


def simulate_candidate(job: SimJob) -> SimOutcome:
    """Build, annotate, lower (``taihu-lower``) and simulate (timing only) one candidate; errors
    are returned as data (one line)."""
    from xdsl.parser import Parser

    from taihu.backends.sim.runner import simulate
    from taihu.dialects.target import MODULE_ATTR
    from taihu.passes.conversion.graph_to_tile.schedules import SCHEDULE_ATTR, to_attr
    from taihu.passes.pipelines import default_context, lower_to_swsim
    from taihu.tools.layers import declared_blobs_released

    t0 = time.perf_counter()
    try:
        with declared_blobs_released():
            layer = _job_module(job)
            layer.module.attributes[MODULE_ATTR] = Parser(default_context(), job.target).parse_attribute()
            layer.op.attributes[SCHEDULE_ATTR] = to_attr(job.schedule)
            lower_to_swsim(layer.module)
            try:
                res = simulate(layer.module, inputs=layer.inputs, numerics=False)
            except OverflowError:  # lockstep back-pressure: the per-CPE interpreter (identical reports)
                res = simulate(layer.module, inputs=layer.inputs, numerics=False, lockstep=False)
            cycles = int(res.report["total_cycles"])
    except Exception as e:  # noqa: BLE001 - reported per candidate, the search goes on
        return SimOutcome(None, time.perf_counter() - t0, _one_line(e))
    return SimOutcome(cycles, time.perf_counter() - t0)


def _job_module(job: SimJob | LayerResult) -> Any:
    """The single-layer module of a job or layer: parsed from its extracted text, else built
    from its shape (:func:`taihu.tools.layers.layer_module`)."""
    from taihu.passes.pipelines import default_context
    from taihu.tools.diagnostics import parse_mlir
    from taihu.tools.layers import LayerModule, layer_module, module_inputs, root_op

    shape = job.shape if isinstance(job, SimJob) else job.problem.shape
    if job.text is None:
        return layer_module(job.kind, shape, seed=0)
    module = parse_mlir(default_context(), job.text, f"<{job.kind} layer>")
    return LayerModule(module, module_inputs(module), root_op(module))


# --------------------------------------------------------------------------------------------
# problems of a module


@dataclass
class LayerResult:
    """One distinct problem: its layers, space, the chosen candidates and the outcome."""

    index: int
    problem: Any  # schedules.Problem
    signature: str
    layers: list[str]
    space_size: int = 0
    default: Candidate | None = None
    selection: Selection | None = None
    outcomes: dict[Candidate, SimOutcome] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None
    #: the module of the first layer's kernel ops cut out of the network (memory-bound
    #: problems, :func:`taihu.tools.layers.extract_module`), printed; None: built from the shape
    text: str | None = None

    @property
    def kind(self) -> str:
        return self.problem.kind

    @property
    def shown(self) -> str:
        return self.layers[0] + (f" (+{len(self.layers) - 1})" if len(self.layers) > 1 else "")

    def simulated(self) -> list[tuple[Candidate, int]]:
        return [(c, o.cycles) for c, o in self.outcomes.items() if o.cycles is not None]

    def best(self) -> tuple[Candidate, int | None] | None:
        """The kept candidate and its simulated cycles: the smallest (sim cycles, model cycles,
        schedule text) among the simulated ones, else the model's best (None cycles)."""
        sims = self.simulated()
        if sims:
            c, cyc = min(sims, key=lambda cs: (cs[1], cs[0].model_cycles, cs[0].text))
            return c, cyc
        if self.selection is None:
            return None
        return self.selection.best_model, None


@dataclass
class Problems:
    """The module after the graph stages, its lowering state, target text and problems."""

    module: Any
    state: Any
    target: str
    layers: list[LayerResult]


def graph_stages(module: Any, machine: str | None) -> None:
    """Run ``taihu-lower``'s graph stages (up to ``graph-simplify``) in place; ``TuneError``."""
    from taihu.passes.pipelines import build_pipeline, run_pipeline
    from taihu.tools.diagnostics import format_error

    opts = {"machine": str(machine)} if machine is not None else {}
    try:
        run_pipeline(build_pipeline(opts, stop_after="graph-simplify"), module, verify=False)
    except Exception as e:
        raise TuneError(format_error(e)) from e


def collect_problems(module: Any) -> Problems:
    """Every op with a schedule of its own (the ops ``graph-schedule`` annotates: not those fused
    into a producer's kernel), deduplicated by (signature, target), in program order; a
    memory-bound problem keeps its first layer's kernel ops, extracted (``LayerResult.text``)."""
    from taihu.backends.model.records import problem_signature
    from taihu.dialects.target import MODULE_ATTR
    from taihu.passes.conversion.graph_to_tile.schedules import absorbed_ops, kernel_ops, lowering_state, op_problem
    from taihu.tools.layers import LAYER_KINDS, extract_module

    target = str(module.attributes[MODULE_ATTR])
    state = lowering_state(module)
    fused = absorbed_ops(state, module)
    by_sig: dict[str, LayerResult] = {}
    for op in module.walk():
        if op in fused:
            continue
        p = op_problem(state, op)
        if p is None:
            continue
        sig = problem_signature(p.shape)
        r = by_sig.get(sig)
        if r is None:
            r = by_sig[sig] = LayerResult(len(by_sig) + 1, p, sig, [p.layer])
            if p.kind not in LAYER_KINDS:
                r.text = str(extract_module(kernel_ops(state, op)).module)
        elif p.layer not in r.layers:
            r.layers.append(p.layer)
    return Problems(module, state, target, list(by_sig.values()))


def filter_layers(layers: list[LayerResult], spec: str | None) -> list[LayerResult]:
    """``--layers``: comma-separated 1-based problem numbers and/or layer names; ``TuneError``
    naming an item that matches nothing."""
    if not spec:
        return layers
    keep: dict[int, LayerResult] = {}
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        hit = [r for r in layers if (item.isdigit() and r.index == int(item)) or item in r.layers]
        if not hit:
            raise TuneError(f"--layers: '{item}' is neither a problem number (1..{len(layers)}) nor a layer "
                            f"name of the model")
        for r in hit:
            keep[r.index] = r
    return [keep[i] for i in sorted(keep)]


def enumerate_space(state: Any, layer: LayerResult) -> Iterable[Candidate]:
    """The candidates of a problem's space, lazily, with their model cycles."""
    from taihu.passes.conversion.graph_to_tile.schedules import plan_cycles, schedule_of, space

    for plan in space(state, layer.problem):
        yield Candidate(schedule_of(layer.problem, plan), int(plan_cycles(state, layer.problem, plan)))


def default_candidate(state: Any, layer: LayerResult) -> Candidate:
    """The model's choice (``taihu-lower`` without records)."""
    from taihu.passes.conversion.graph_to_tile.schedules import model_plan, plan_cycles, schedule_of

    plan = model_plan(state, layer.problem)
    return Candidate(schedule_of(layer.problem, plan), int(plan_cycles(state, layer.problem, plan)))


# --------------------------------------------------------------------------------------------
# the tuner


@dataclass(frozen=True)
class TuneOptions:
    """The search options of :func:`tune`."""

    strategy: str = DEFAULT_STRATEGY
    top_k: int = DEFAULT_TOP_K
    steps: int = DEFAULT_STEPS
    seed: int = 0
    workers: int | None = None
    scheduler: str | None = None


def check_layer_module(layer: LayerResult, target: str) -> None:
    """``TuneError`` unless the single-layer module that simulates ``layer``'s candidates
    (:func:`_job_module`) plans as the same problem (signature) on its own."""
    from xdsl.parser import Parser

    from taihu.backends.model.records import problem_signature
    from taihu.dialects.target import MODULE_ATTR
    from taihu.passes.conversion.graph_to_tile.schedules import absorbed_ops, lowering_state, op_problem
    from taihu.passes.pipelines import default_context
    from taihu.tools.layers import LayerBuildError, declared_blobs_released

    with declared_blobs_released():
        try:
            built = _job_module(layer)
        except LayerBuildError as e:
            raise TuneError(f"cannot simulate it alone: {e}") from e
        built.module.attributes[MODULE_ATTR] = Parser(default_context(), target).parse_attribute()
        graph_stages(built.module, None)
        state = lowering_state(built.module)
        fused = absorbed_ops(state, built.module)
        sigs = [problem_signature(p.shape) for op in built.module.walk()
                if op not in fused and (p := op_problem(state, op)) is not None]
    if sigs != [layer.signature]:
        raise TuneError(f"cannot simulate it alone: the single-layer module plans as {sigs or 'nothing'}")


def plan_layer(state: Any, layer: LayerResult, opts: TuneOptions, target: str | None = None) -> None:
    """Enumerate the layer's space and run the strategy's model search (sets ``space_size``,
    ``default``, ``selection``, ``seconds``; ``error`` when the space cannot be built, or --
    with ``target``, for strategies that simulate -- when the layer cannot be simulated alone:
    then the record is the model's choice)."""
    t0 = time.perf_counter()
    try:
        if target is not None and opts.strategy != "model":
            try:
                check_layer_module(layer, target)
            except TuneError as e:
                layer.error = str(e)
                opts = TuneOptions("model", opts.top_k, opts.steps, opts.seed)
        cands = list(enumerate_space(state, layer))
        layer.default = default_candidate(state, layer)
        layer.space_size = len(cands)
        layer.selection = select(opts.strategy, cands, layer.default, top_k=opts.top_k, steps=opts.steps,
                                 seed=opts.seed)
    except (ValueError, TuneError) as e:
        layer.error = _one_line(e)
        layer.selection = None
    layer.seconds += time.perf_counter() - t0


def tune(problems: Problems, layers: list[LayerResult], opts: TuneOptions,
         progress: Any = None, warn: Callable[[str], None] | None = None) -> list[LayerResult]:
    """Search every layer (model phase in this process, the simulations of all layers as one
    batch on the executor, whose cluster starts in the background during the model phase);
    returns ``layers`` with their outcomes."""
    from taihu.tools.executor import Executor, ExecutorError, JobError

    warn = warn or (lambda _msg: None)
    try:
        ex = Executor(opts.workers, opts.scheduler)
    except ExecutorError as e:
        raise TuneError(str(e)) from e
    try:
        if opts.strategy != "model":
            ex.start()  # the embedded cluster starts while the model ranks the spaces
        return _search(problems, layers, opts, ex, progress, warn)
    except (ExecutorError, JobError) as e:
        raise TuneError(str(e)) from e
    finally:
        ex.close()


def _search(problems: Problems, layers: list[LayerResult], opts: TuneOptions, ex: Executor, progress: Any,
            warn: Callable[[str], None]) -> list[LayerResult]:
    """:func:`tune`'s model phase and candidate simulations on ``ex``."""
    task = progress.add("model", "schedule spaces", len(layers)) if progress else None
    for i, layer in enumerate(layers):
        if progress:
            progress.update(task, layer.shown, i)
        plan_layer(problems.state, layer, opts, problems.target)
        if layer.error:
            warn(f"{layer.shown}: {layer.error}")
    if progress:
        progress.update(task, "done", len(layers))
    jobs: list[tuple[LayerResult, Candidate]] = [
        (layer, c) for layer in layers if layer.selection is not None for c in layer.selection.simulate]
    if not jobs:
        return layers
    items = [SimJob(layer.kind, layer.problem.shape, c.schedule, problems.target, layer.shown, layer.text)
             for layer, c in jobs]
    sim_task = progress.add("simulate", "candidates", len(items)) if progress else None
    done = [0]

    def on_result(i: int, outcome: SimOutcome) -> None:
        done[0] += 1
        if progress:
            progress.update(sim_task, items[i].layer, done[0])

    outcomes = ex.map(simulate_candidate, items, on_result=on_result, describe=lambda j: j.describe(),
                      on_error=lost_job)
    for (layer, c), outcome in zip(jobs, outcomes):
        layer.outcomes[c] = outcome
        layer.seconds += outcome.seconds
        if outcome.error:
            warn(f"{layer.shown} [{c.text}]: {outcome.error}")
    return layers


def records_of(problems: Problems, layers: Sequence[LayerResult]) -> list[Any]:
    """One :class:`~taihu.backends.model.records.TuningRecord` per tuned layer."""
    from taihu.backends.model.records import TuningRecord

    out = []
    for layer in layers:
        best = layer.best()
        if best is None:
            continue
        c, cycles = best
        out.append(TuningRecord(layer.kind, layer.signature, problems.target, c.schedule, c.model_cycles, cycles))
    return out


# --------------------------------------------------------------------------------------------
# output


def _fmt(v: int | None) -> str:
    return "-" if v is None else str(v)


def compact(schedule: Any) -> str:
    """A schedule in few columns: the algorithm, the true flags by name, false flags left out,
    the other parameters as ``key=value``."""
    parts = [schedule.algorithm]
    for k, v in schedule.params:
        if v is True:
            parts.append(k)
        elif v is not False:
            parts.append(f"{k}={v}")
    return " ".join(parts)


def print_results(layers: Sequence[LayerResult], title: str, strategy: str, file: Any = None) -> None:
    """The closing table (module docstring) and a summary line."""
    from taihu.tools.tables import new_table, print_titled

    table = new_table(title, [("#", "right"), ("layer", "left"), ("space", "right"), ("simulated", "right"),
                              ("default", "left"), ("tuned", "left"), ("default cycles", "right"),
                              ("tuned cycles", "right"), ("speed-up", "right"), ("model err %", "right"),
                              ("seconds", "right")], file)
    speedups, errs = [], []
    for layer in layers:
        best = layer.best()
        if best is None:
            table.add_row(str(layer.index), layer.shown, str(layer.space_size), "0", "-", "-", "-", "-", "-", "-",
                          f"{layer.seconds:.1f}")
            continue
        c, cycles = best
        d = layer.default
        d_out = layer.outcomes.get(d) if d is not None else None
        d_cyc = d_out.cycles if d_out is not None else None
        speed = f"{d_cyc / cycles:.3f}" if d_cyc and cycles else "-"
        if d_cyc and cycles:
            speedups.append(d_cyc / cycles)
        err = f"{100 * (c.model_cycles - cycles) / cycles:+.1f}" if cycles else "-"
        if cycles:
            errs.append(abs(c.model_cycles - cycles) / cycles)
        table.add_row(str(layer.index), layer.shown, str(layer.space_size), str(len(layer.simulated())),
                      compact(d.schedule) if d is not None else "-",
                      "= default" if d is not None and c.schedule == d.schedule else compact(c.schedule),
                      _fmt(d_cyc), _fmt(cycles), speed, err, f"{layer.seconds:.1f}")
    print_titled(table, title, file)
    lines = []
    if speedups:
        lines.append(f"tuned vs default (simulated): geometric mean speed-up "
                     f"{math.exp(statistics.mean(math.log(s) for s in speedups)):.3f}, "
                     f"min {min(speedups):.3f}, max {max(speedups):.3f} over {len(speedups)} layers")
    if errs:
        lines.append(f"model error of the tuned schedules: mean |err| {100 * statistics.mean(errs):.1f} %, "
                     f"max {100 * max(errs):.1f} %")
    if strategy in ("anneal", "greedy"):
        steps = sum(layer.selection.steps for layer in layers if layer.selection is not None)
        space = sum(layer.space_size for layer in layers)
        if steps:
            lines.append(f"{strategy}: {steps} model evaluations vs {space} for exhaustive search "
                         f"({space / steps:.2f}x fewer; DLIR DL-1: 161.44x on AlexNet)")
    for line in lines:
        print(line, file=file)


def list_space(problems: Problems, layers: Sequence[LayerResult], file: Any = None) -> None:
    """``--list-space`` (module docstring); the average beside 004 Table 6.1 is over the compute
    layers (conv, GEMM, MatMul, LSTM), as the table's."""
    from taihu.tools.layers import LAYER_KINDS

    out = file or sys.stdout
    sizes = []
    for layer in layers:
        print(f"[{layer.index}] {layer.kind} {layer.shown}: {layer.signature}", file=out)
        n = 0
        try:
            default = default_candidate(problems.state, layer)
            for c in enumerate_space(problems.state, layer):
                n += 1
                mark = "  (default)" if c == default else ""
                print(f"  {n:5d}  {c.model_cycles:>12d}  {c.text}{mark}", file=out)
        except ValueError as e:
            print(f"  error: {_one_line(e)}", file=out)
        print(f"  space size {n}", file=out)
        if layer.kind in LAYER_KINDS:  # Table 6.1 counts the compute layers
            sizes.append(n)
    if sizes:
        ref = ", ".join(f"{k} {v}" for k, v in TABLE_6_1.items())
        print(f"average space size per layer: {statistics.mean(sizes):.1f} over {len(sizes)} distinct compute layers "
              f"(004 Table 6.1, swAutoDNN: {ref})", file=out)


# --------------------------------------------------------------------------------------------
# driver


def _parser() -> argparse.ArgumentParser:
    from taihu.tools.run import EXAMPLES

    p = argparse.ArgumentParser(prog=TOOL, description="Search the schedules of a network's conv/GEMM layers "
                                "(model + simulator) and write tuning records.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("model", nargs="?", help="ONNX model (.onnx) or graph module (.mlir)")
    src.add_argument("--example", metavar="NAME", help=f"a light ONNX test model: {', '.join(EXAMPLES)}")
    p.add_argument("-o", "--output", metavar="RECORDS.json", help="write the tuning records (JSON lines)")
    p.add_argument("--strategy", choices=STRATEGIES, default=DEFAULT_STRATEGY,
                   help=f"search strategy (default: {DEFAULT_STRATEGY})")
    p.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, metavar="K",
                   help=f"candidates simulated per layer by sim/anneal/greedy, besides the default (default: {DEFAULT_TOP_K})")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, metavar="N",
                   help=f"model evaluations of the anneal search per layer (default: {DEFAULT_STEPS})")
    p.add_argument("--seed", type=int, default=0, help="seed of the anneal search (default: 0)")
    p.add_argument("--layers", metavar="NAMES|INDICES", help="tune only these problems: 1-based numbers "
                   "(as --list-space prints them) and/or layer names, comma-separated")
    p.add_argument("--machine", metavar="NAME|FILE.toml", help="the machine to tune for: a shipped name "
                   "(sw26010, sw26010pro) or a machine TOML file (default: the module's target, else sw26010)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes of the embedded Dask cluster (default: the cores; 0: in this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="use an existing Dask cluster")
    p.add_argument("--list-space", action="store_true", help="print every layer's schedule space and stop")
    p.add_argument("--random-weights", type=int, metavar="SEED", default=None,
                   help="re-initialize the ONNX model's weights with seeded random values")
    p.add_argument("--quiet", action="store_true", help="print nothing on success (diagnostics still go to stderr)")
    return p


def run(args: argparse.Namespace) -> int:
    from taihu.tools.atomic import write_atomically
    from taihu.tools.run import Progress, RunError, load_source

    if not args.list_space and not args.output:
        raise TuneError("-o RECORDS.json is required (or --list-space)")
    if args.top_k < 1:
        raise TuneError(f"--top-k {args.top_k}: expected a number >= 1")
    if args.steps < 1:
        raise TuneError(f"--steps {args.steps}: expected a number >= 1")
    if args.workers is not None and args.workers < 0:
        raise TuneError(f"--workers {args.workers}: expected a number >= 0")
    if args.output and os.path.isdir(args.output):
        raise TuneError(f"-o {args.output}: is a directory")
    try:
        source = load_source(args)
    except RunError as e:
        raise TuneError(str(e)) from e
    graph_stages(source.module, args.machine)
    problems = collect_problems(source.module)
    layers = filter_layers(problems.layers, args.layers)
    if args.list_space:
        list_space(problems, layers)
        return 0
    opts = TuneOptions(args.strategy, args.top_k, args.steps, args.seed, args.workers, args.scheduler)
    progress = Progress(enabled=not args.quiet and sys.stderr.isatty())
    with progress:
        tune(problems, layers, opts, progress, warn=lambda msg: print(f"{TOOL}: warning: {msg}", file=sys.stderr))
    from taihu.backends.model.records import records_text

    recs = records_of(problems, layers)
    try:
        write_atomically(args.output, records_text(recs))
    except OSError as e:
        raise TuneError(f"cannot write {e.filename or args.output}: {e.strerror or e}") from e
    if not args.quiet:
        print_results(layers, f"{source.shown}: {len(layers)} distinct layers, strategy {args.strategy} "
                              f"({problems.target})", args.strategy)
        print(f"{len(recs)} records written to {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``taihu-tune``); returns the exit status."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from taihu.target.machine import MachineConfigError
    from taihu.tools.diagnostics import report

    args = _parser().parse_args(argv)
    try:
        return run(args)
    except BrokenPipeError:  # e.g. `taihu-tune --list-space ... | head`: the reader is gone, not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (TuneError, MachineConfigError, ParseError, DiagnosticException) as e:
        return report(TOOL, e)
    except (ValueError, KeyError, OSError) as e:
        return report(TOOL, RuntimeError(f"{type(e).__name__}: {e}"))
    except KeyboardInterrupt:
        print(f"{TOOL}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a traceback: an internal error is still one diagnostic line
        return report(TOOL, RuntimeError(f"internal error ({type(e).__name__}): {e}"))


__all__ = ["Candidate", "STRATEGIES", "ScheduleLattice", "Selection", "SimJob", "SimOutcome", "TuneError",
           "TuneOptions", "collect_problems", "filter_layers", "graph_stages", "main", "records_of", "select",
           "simulate_candidate", "tune"]


if __name__ == "__main__":
    sys.exit(main())
