"""Named pass pipelines: ``taihu-lower`` (graph -> swsim) and its Python helpers.

xDSL has no first-class "named pipeline": a pipeline is a :class:`xdsl.passes.PassPipeline`
(a tuple of :class:`~xdsl.passes.ModulePass` instances plus an optional callback run between
passes), normally parsed from a ``-p`` spec with :meth:`PassPipeline.parse_spec`. taihu's named
pipeline is therefore a ``ModulePass`` (:class:`TaihuLowerPass`, name ``taihu-lower``) whose
``apply`` builds that ``PassPipeline`` from the stage names in :data:`TAIHU_LOWER` (resolved
through :func:`taihu.passes.registry.get_all_passes`) and runs it. So::

    taihu-opt net.mlir -p taihu-lower
    taihu-opt net.mlir -p 'taihu-lower{conv-algorithm=winograd machine="my.toml"}'
    xdsl-opt  net.mlir -p taihu-lower          # through the xdsl.universe entry point

are equivalent to ``-p set-target,graph-fold-constants,graph-fold-batchnorm,graph-simplify,
graph-schedule,graph-group,convert-graph-to-tile,convert-tile-to-loop,convert-loop-to-sw,sw-to-swsim`` with each option
handed to every stage pass that declares a dataclass field of that name (``-`` and ``_`` are the
same). An option no stage declares is an error listing the options the stages accept.

Python helpers (the module is modified in place and returned):

- :func:`lower_to_sw` — graph -> sw (every stage up to ``convert-loop-to-sw``);
- :func:`lower_to_swsim` — graph -> swsim for the machine ``machine`` (a shipped name or a TOML
  path; default: the module's ``target.machine``, else ``sw26010``);
- :func:`build_pipeline` — the ``PassPipeline`` itself, e.g. to run a prefix (``stop_after``).

Progress hook: every helper takes ``callback``, xDSL's ``PassPipelineCallbackType``
``(previous_pass | None, module, next_pass | None) -> None``, called before the first pass,
between passes and after the last one (``taihu-run`` drives its progress bar and stage timings
with it; see :class:`StageTimer`).

The first stage, ``set-target``, makes the machine part of the program: every later stage plans,
verifies and binds for the module's ``target.machine`` (``taihu-lower{machine=sw26010pro}``).

Errors: a stage name that is not registered raises :class:`PipelineUnavailableError` naming it,
before any pass has run; a stage that fails raises its own ``DiagnosticException`` /
``VerifyException`` with ``in pass 'NAME'`` appended as a note.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.arg_spec import ArgSpec, ParameterListType
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects.registry import get_all_dialects
from taihu.passes.registry import get_all_passes

#: The stages of ``taihu-lower``, in order (graph -> graph -> tile -> loop -> sw -> swsim).
TAIHU_LOWER: tuple[str, ...] = (
    "set-target",
    "graph-fold-constants",
    "graph-fold-batchnorm",
    "graph-simplify",
    "graph-schedule",
    "graph-group",  # GraphTurbo grouping: annotations only (README, "Cross-layer"); < 2 % of lowering
    "convert-graph-to-tile",
    "convert-tile-to-loop",
    "convert-loop-to-sw",
    "sw-to-swsim",
)

#: Last stage of :func:`lower_to_sw`.
SW_STAGE = "convert-loop-to-sw"

#: Static checks appended by ``taihu-lower{check=true}`` (``check=True`` of the helpers): must-block
#: CPEs and RLC messages never received, then the DMA address rules (issue 15). Not run by
#: default: on ResNet-50 they cost more than 2 % of the lowering time (README, "Static checks").
CHECK_STAGES: tuple[str, ...] = ("sw-check-deadlock", "sw-check-dma")


class PipelineUnavailableError(DiagnosticException):
    """A stage of a named pipeline is not a registered pass."""


def resolve_stage(name: str, pipeline: str = "taihu-lower") -> type[ModulePass]:
    """The pass class registered as ``name`` (:mod:`taihu.passes.registry`);
    :class:`PipelineUnavailableError` if there is none."""
    factory = get_all_passes().get(name)
    if factory is None:
        raise PipelineUnavailableError(f"{pipeline}: no pass named '{name}' is registered")
    return factory()


def _field_names(cls: type[ModulePass]) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"}


def _normalize(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k.replace("-", "_"): v for k, v in options.items()}


class PassOptionError(DiagnosticException):
    """A pass option with a value of the wrong type (``double-buffer=banana``) or a name the
    pass does not declare."""


def _expected(annotation: Any) -> str:
    text = str(annotation)
    for word, shown in (("bool", "true or false"), ("int", "an integer"), ("float", "a number"),
                        ("str", "a string")):
        if text.startswith((word, f"<class '{word}'>")):
            return shown + (" (or nothing)" if "None" in text else "")
    return text


def pass_from_spec(cls: type[ModulePass], spec: ArgSpec) -> ModulePass:
    """``cls.from_spec(spec)``, with xDSL's bare ``ValueError`` for a bad option (``Incompatible
    types: given ('banana',), expected <class 'bool'>``) turned into a :class:`PassOptionError`
    naming the pass, the option, the expected type and the value given."""
    try:
        return cls.from_spec(spec)
    except PassOptionError:
        raise
    except (ValueError, TypeError) as e:
        fields = {f.name: f.type for f in dataclasses.fields(cls)}
        for key, value in spec.normalize_parameter_names().parameters.items():
            if key not in fields or not str(e).startswith("Incompatible types"):
                continue  # (only xDSL's type conversion is attributed to an option here)
            try:
                cls.from_spec(ArgSpec(spec.name, {key: value}))
            except (ValueError, TypeError):
                given = " ".join(str(v) for v in value) if value else "no value"
                raise PassOptionError(f"{spec.name}: option {key.replace('_', '-')}: expected "
                                      f"{_expected(fields[key])}, got {given}") from None
        msg = str(e)
        raise PassOptionError(msg if msg.startswith(f"{spec.name}: ") else f"{spec.name}: {msg}") from None


def _stage_instance(cls: type[ModulePass], name: str, options: Mapping[str, Any]) -> ModulePass:
    mine = {k: v for k, v in options.items() if k in _field_names(cls)}
    if not mine:
        return cls()
    # through xDSL's ArgSpec conversion, so option types are checked exactly as on the CLI
    params: dict[str, ParameterListType] = {}
    for k, v in mine.items():
        params[k] = tuple(v) if isinstance(v, (tuple, list)) else (() if v is None else (v,))
    return pass_from_spec(cls, ArgSpec(name, params))


def check_options(options: Mapping[str, Any], stages: Sequence[str] = TAIHU_LOWER,
                  pipeline: str = "taihu-lower") -> None:
    """Raise ``ValueError`` if an option is declared by none of the (importable) ``stages``."""
    options = _normalize(options)
    known: dict[str, list[str]] = {}
    for stage in stages:
        for f in _field_names(resolve_stage(stage, pipeline)):
            known.setdefault(f, []).append(stage)
    unknown = [k for k in options if k not in known]
    if unknown:
        accepted = ", ".join(f"{k.replace('_', '-')} ({'/'.join(v)})" for k, v in sorted(known.items()))
        raise ValueError(f"{pipeline}: unknown option(s) {', '.join(repr(k.replace('_', '-')) for k in unknown)}"
                         f" (accepted: {accepted or 'none'})")


def build_pipeline(options: Mapping[str, Any] | None = None, *, stop_after: str | None = None,
                   stages: Sequence[str] = TAIHU_LOWER,
                   callback: PassPipelineCallbackType | None = None,
                   check: bool = False) -> PassPipeline:
    """The ``PassPipeline`` of ``stages`` (default :data:`TAIHU_LOWER`) up to and including
    ``stop_after``, each stage built with the ``options`` it declares, followed by
    :data:`CHECK_STAGES` when ``check``.

    Raises :class:`PipelineUnavailableError` (first unavailable stage) and ``ValueError``
    (unknown ``stop_after``; an option declared by no stage)."""
    options = _normalize(options or {})
    stages = tuple(stages)
    if stop_after is not None:
        if stop_after not in stages:
            raise ValueError(f"taihu-lower: unknown stage '{stop_after}' (stages: {', '.join(stages)})")
        stages = stages[: stages.index(stop_after) + 1]
    if check:
        stages += CHECK_STAGES
    classes = [resolve_stage(s) for s in stages]
    check_options(options, stages)
    passes = tuple(_stage_instance(cls, s, options) for cls, s in zip(classes, stages))
    return PassPipeline(passes, callback)


def default_context() -> Context:
    """A context with xDSL's and taihu's dialects registered (lazily loaded)."""
    from xdsl.dialects import get_all_dialects as xdsl_dialects

    ctx = Context()
    for name, factory in {**xdsl_dialects(), **get_all_dialects()}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (reference counting still frees most objects).

    The lowering passes build hundreds of thousands of xDSL objects (ResNet-50: ~170k ops in
    ``convert-loop-to-sw``, several objects each); with the collector on, CPython's
    generational collections triggered by these allocations re-scan the growing IR over and over
    and take more than half of the lowering time (ResNet-50 convert-loop-to-sw 6.3 s -> 3.0 s CPU
    with the collector paused). The collector's previous state is restored on exit.

    On exit the objects allocated meanwhile are promoted to the oldest generation
    (``gc.freeze(); gc.unfreeze()``: two list splices, no traversal) instead of being left in the
    youngest one, whose next collection would traverse all of them (~0.4 s after a ResNet-50
    lowering); the cyclic garbage of the rewritten IR levels is freed by the next full
    collection. Skipped if the process has frozen objects of its own (``gc.get_freeze_count()``),
    which ``unfreeze`` would release."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()


def run_pipeline(pipeline: PassPipeline, module: ModuleOp, ctx: Context | None = None,
                 verify: bool = True) -> ModuleOp:
    """Apply ``pipeline`` to ``module`` (in place); a failing stage's exception gets the note
    ``in pass 'NAME'``. ``verify``: verify the module after the last pass. The passes run with
    the cyclic garbage collector paused (:func:`gc_paused`)."""
    ctx = ctx or default_context()
    current: list[str] = [pipeline.passes[0].name if pipeline.passes else ""]
    user_cb = pipeline.callback

    def track(prev: ModulePass | None, op: ModuleOp, nxt: ModulePass | None) -> None:
        current[0] = nxt.name if nxt is not None else ""
        if user_cb is not None:
            user_cb(prev, op, nxt)

    try:
        with gc_paused():
            PassPipeline(pipeline.passes, track).apply(ctx, module)
        if verify:
            module.verify()
    except Exception as e:
        if current[0]:
            e.add_note(f"in pass '{current[0]}'")
        raise
    return module


def lower_to_sw(module: ModuleOp, *, callback: PassPipelineCallbackType | None = None,
                ctx: Context | None = None, check: bool = False, **options: Any) -> ModuleOp:
    """Lower a ``graph`` module to ``sw`` in place (stages of :data:`TAIHU_LOWER` up to
    ``convert-loop-to-sw``); ``options`` go to the stages that declare them (e.g.
    ``conv_algorithm="winograd"``); ``check``: run :data:`CHECK_STAGES` last. Returns ``module``."""
    return run_pipeline(build_pipeline(options, stop_after=SW_STAGE, callback=callback, check=check),
                        module, ctx)


def lower_to_swsim(module: ModuleOp, machine: str | None = None, *,
                   callback: PassPipelineCallbackType | None = None, ctx: Context | None = None,
                   check: bool = False, **options: Any) -> ModuleOp:
    """Lower a ``graph`` module to runnable ``swsim`` in place (all of :data:`TAIHU_LOWER`) for
    ``machine`` (a shipped name such as ``"sw26010pro"`` or a TOML path; None: the module's
    ``target.machine``, else ``sw26010``); ``check``: run :data:`CHECK_STAGES` last. Returns
    ``module``."""
    if machine is not None:
        options = {**options, "machine": str(machine)}
    return run_pipeline(build_pipeline(options, callback=callback, check=check), module, ctx)


class StageTimer:
    """A ``PassPipelineCallbackType`` recording the wall time of every pass.

    ``times`` is a list of ``(pass name, seconds)`` in order; ``on_start(name, index, total)``
    (optional) is called before each pass, ``on_end(name, seconds)`` after it."""

    def __init__(self, total: int,
                 on_start: Callable[[str, int, int], None] | None = None,
                 on_end: Callable[[str, float], None] | None = None) -> None:
        self.total = total
        self.times: list[tuple[str, float]] = []
        self.on_start = on_start
        self.on_end = on_end
        self._t0 = 0.0

    def __call__(self, prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
        now = time.perf_counter()
        if prev is not None:
            self.times.append((prev.name, now - self._t0))
            if self.on_end is not None:
                self.on_end(prev.name, now - self._t0)
        if nxt is not None:
            if self.on_start is not None:
                self.on_start(nxt.name, len(self.times), self.total)
            self._t0 = time.perf_counter()


@dataclass(frozen=True)
class TaihuLowerPass(ModulePass):
    """``taihu-lower``: graph -> swsim through :data:`TAIHU_LOWER` (see the module docstring).

    Options are free-form (``taihu-lower{conv-algorithm=im2col}``) and go to every stage pass
    declaring a field of that name; ``stop-after=STAGE`` ends the pipeline after ``STAGE``
    (e.g. ``stop-after=convert-tile-to-loop`` to look at the loop level); ``check=true`` runs
    :data:`CHECK_STAGES` (``sw-check-deadlock``, ``sw-check-dma``) last."""

    name: ClassVar[str] = "taihu-lower"

    options: tuple[tuple[str, Any], ...] = ()
    stop_after: str | None = None
    check: bool = False

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        if spec.name != cls.name:
            raise ValueError(f"Spec name mismatch: got '{spec.name}', expected '{cls.name}'.")
        params = dict(spec.normalize_parameter_names().parameters)
        stop = params.pop("stop_after", None)
        stage: str | None = None
        if stop is not None:
            if len(stop) != 1 or not isinstance(stop[0], str):
                raise ValueError("taihu-lower: stop-after takes one stage name")
            stage = stop[0]
            if stage not in TAIHU_LOWER:
                raise ValueError(f"taihu-lower: unknown stage '{stage}' (stages: {', '.join(TAIHU_LOWER)})")
        check = params.pop("check", None)
        if check is not None and (len(check) != 1 or not isinstance(check[0], bool)):
            raise PassOptionError(f"taihu-lower: option check: expected true or false, got "
                                  f"{' '.join(str(v) for v in check) or 'no value'}")
        opts = tuple((k, v[0] if len(v) == 1 else (None if not v else tuple(v))) for k, v in params.items())
        check_options(dict(opts))
        build_pipeline(dict(opts), stop_after=stage)  # every stage's option values checked now (PassOptionError)
        return cls(opts, stage, bool(check and check[0]))

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        params: dict[str, ParameterListType] = {}
        for k, v in self.options:
            params[k.replace("_", "-")] = tuple(v) if isinstance(v, tuple) else (() if v is None else (v,))
        if self.stop_after is not None:
            params["stop-after"] = (self.stop_after,)
        if self.check:
            params["check"] = (True,)
        return ArgSpec(self.name, params)

    def pipeline(self, callback: PassPipelineCallbackType | None = None) -> PassPipeline:
        return build_pipeline(dict(self.options), stop_after=self.stop_after, callback=callback,
                              check=self.check)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_pipeline(self.pipeline(), op, ctx, verify=False)


__all__ = [
    "CHECK_STAGES",
    "TAIHU_LOWER",
    "PassOptionError",
    "PipelineUnavailableError",
    "StageTimer",
    "TaihuLowerPass",
    "build_pipeline",
    "check_options",
    "default_context",
    "gc_paused",
    "lower_to_sw",
    "lower_to_swsim",
    "pass_from_spec",
    "resolve_stage",
    "run_pipeline",
]
