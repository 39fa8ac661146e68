"""The ``swsim-run`` xDSL target: run a module on the simulated core group, print its report.

``xdsl-opt`` (and ``taihu-opt``) print the module with ``-t mlir``; ``-t swsim-run`` instead runs
it on the SW26010 core-group simulator (:func:`taihu.backends.sim.runner.simulate`, through
``taihu-run``'s :func:`~taihu.tools.run.simulate_module`) and writes ``taihu-run``'s per-layer
table (:mod:`taihu.tools.tables`: layer, algorithm, shape, cycles, launch, ms at ``f_clk``,
useful and executed MFLOP, useful GFLOPS and % of peak, DMA GB/s, bound, then the total) and, unless ``timing-only``, the output checksum table to
the output stream (stdout or ``-o``)::

    xdsl-opt prog.mlir -t swsim-run
    taihu-opt net.mlir -p taihu-lower -t 'swsim-run{report="r.json" timing-only=true}'

The module is an ``swsim`` module (``taihu-opt -p taihu-lower``, or ``sw-to-swsim``) or an ``sw``
module, which is first lowered in place by ``sw-to-swsim`` with the module's own machine
(``examples/sw/*.mlir``). A module without ``sw.kernel`` -- e.g. still at the ``graph`` level --
is an error naming its level and the passes that lower it.

Options (``taihu-run``'s flags; paths are quoted strings, ``report="out/r.json"``):

- ``report="R.json"``: the simulator report (schema: :mod:`taihu.backends.sim.report`);
- ``trace="T.pftrace"``: the timeline for https://ui.perfetto.dev, Perfetto's protobuf trace
  (``.pftrace``, ``.perfetto-trace``: CPEs in lockstep share a lane) or Chrome trace events
  (``.json``), by the file name (``taihu-run --trace``);
- ``timing-only=true``: simulate the timing only (no arithmetic or data movement; faster): the
  report, table and trace are exact, there are no outputs (so no ``output``);
- ``inputs="X.npz"``: arrays for the ``io input`` globals, keyed by symbol, ``graph.name`` (the
  ONNX name), its sanitised form or ``argN``; the inputs it does not hold are drawn from a normal
  distribution seeded by ``seed``;
- ``output="Y.npz"``: the ``io output`` globals, keyed by ``graph.name`` (else the symbol);
- ``seed=N``: seed of the random inputs (default 0, must be >= 0);
- ``machine=NAME`` or ``machine="FILE.toml"``: bind this machine instead of the module's own
  (a shipped name of ``target/configs/``, e.g. ``sw26010``, or a machine TOML file; an ``swsim``
  module is re-bound by ``sw-to-swsim``).

The files are written all or nothing (:class:`taihu.tools.atomic.OutputFiles`), only after the
simulation succeeded. Errors -- a bad option, a module with no kernel, a bad machine or input
file, a simulator error such as a deadlock -- raise ``DiagnosticException`` with one line naming
the target (``swsim-run: ...``): ``taihu-opt`` prints it as ``taihu-opt: error: ...`` with exit
status 1; stock ``xdsl-opt`` prints it with ``--verify-diagnostics`` (without that flag
``xdsl-opt`` lets every diagnostic, parse and verification errors alike, escape as a traceback).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import IO, Any, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

#: What lowers a module of each pre-``sw`` level (the first such dialect found names the level).
_LOWER_FROM: dict[str, str] = {
    "graph": "-p taihu-lower",
    "tile": "-p convert-tile-to-loop,convert-loop-to-sw",
    "loop": "-p convert-loop-to-sw",
}


def _expects(text: str) -> dict[str, str]:
    return {"expects": text}


@dataclass(frozen=True)
class SwsimRunTarget(Target):
    """Simulate the module and print the per-layer report table (see the module docstring)."""

    name: ClassVar[str] = "swsim-run"

    report: str | None = field(default=None, metadata=_expects('a quoted path, e.g. report="r.json"'))
    trace: str | None = field(default=None, metadata=_expects('a quoted path, e.g. trace="t.json"'))
    timing_only: bool = field(default=False, metadata=_expects("true or false"))
    inputs: str | None = field(default=None, metadata=_expects('a quoted path, e.g. inputs="x.npz"'))
    output: str | None = field(default=None, metadata=_expects('a quoted path, e.g. output="y.npz"'))
    seed: int = field(default=0, metadata=_expects("an integer >= 0"))
    machine: str | None = field(default=None, metadata=_expects(
        'a shipped machine name (e.g. machine=sw26010) or a quoted TOML path'))

    def __post_init__(self) -> None:
        """Raises ``ValueError`` for a negative or boolean ``seed``, and for ``timing_only``
        together with ``output`` (a timing-only run computes no outputs)."""
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"option seed={self.seed}: expected an integer >= 0")
        if self.timing_only and self.output is not None:
            raise ValueError("timing-only computes no outputs: it cannot be combined with output")
        for key in ("report", "trace", "inputs", "output", "machine"):
            if getattr(self, key) == "":
                raise ValueError(f"option {key.replace('_', '-')}: empty path")

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> SwsimRunTarget:
        """The target of ``swsim-run{...}``; ``DiagnosticException`` naming the option for an
        unknown option, a value of the wrong type or an invalid combination."""
        options = {f.name: f for f in fields(cls)}
        given = spec.normalize_parameter_names().parameters
        for key, value in given.items():
            shown = key.replace("_", "-")
            if key not in options:
                known = ", ".join(k.replace("_", "-") for k in options)
                raise DiagnosticException(f"{cls.name}: unknown option '{shown}' (options: {known})")
            try:
                super().from_spec(ArgSpec(spec.name, {key: value}))
            except ValueError:
                text = ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in value)
                raise DiagnosticException(
                    f"{cls.name}: option {shown}={text}: expected {options[key].metadata['expects']}"
                ) from None
        try:
            return super().from_spec(spec)
        except ValueError as e:
            raise DiagnosticException(f"{cls.name}: {e}") from None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        """Simulate ``module`` (lowered in place by ``sw-to-swsim`` if it is at the ``sw`` level
        or ``machine`` is given), write the requested files, print the tables to ``output``.

        Raises ``DiagnosticException`` (one line, ``swsim-run: ...``) for a module without
        ``sw.kernel``, an unknown machine, unreadable inputs, a simulator error or an output
        file that cannot be written; ``sw-to-swsim``'s own diagnostics (e.g. an LDM overflow)
        propagate unchanged."""
        from taihu.backends.sim.memory import SimError
        from taihu.target.machine import MachineConfigError
        from taihu.tools.run import RunError

        try:
            self._run(module, output)
        except (RunError, SimError, MachineConfigError) as e:
            msg = str(e).replace("\n", "\n  ")
            raise DiagnosticException(f"{self.name}: {msg}") from None

    def _run(self, module: ModuleOp, output: IO[str]) -> None:
        import numpy as np

        from taihu.target.machine import resolve_machine
        from taihu.tools.atomic import OutputFiles
        from taihu.backends.sim.pftrace import write_pftrace
        from taihu.tools.run import bind_program_inputs, io_global_names, load_inputs, simulate_module, trace_format
        from taihu.tools.tables import layer_table_title, print_layer_table, print_table

        _check_has_kernels(module, self.name)
        trace_fmt = None if self.trace is None else trace_format(self.trace, "trace=")
        machine_path = None if self.machine is None else resolve_machine(self.machine).source
        given = bind_program_inputs(module, load_inputs(self.inputs))
        res = simulate_module(module, given, machine=machine_path, trace=self.trace is not None,
                              seed=self.seed, numerics=not self.timing_only)
        shown_as = io_global_names(module, "output")
        outputs = {shown_as.get(k, k): v for k, v in res.outputs.items()}

        files: list[tuple[str, Any]] = []
        if self.output is not None:
            files.append((self.output, lambda f: np.savez(f, **outputs)))
        if self.report is not None:
            files.append((self.report, _json_text(res.report)))
        if self.trace is not None:
            trace = res.engine.trace
            files.append((self.trace, _json_text(trace.to_json()) if trace_fmt == "json"
                           else lambda f: write_pftrace(trace, f)))
        try:
            with OutputFiles() as out:
                for path, content in files:
                    out.add(path, content)
        except OSError as e:
            raise DiagnosticException(f"{self.name}: cannot write {e.filename or ''}: {e.strerror or e}") from None

        shown = module.sym_name.data if module.sym_name is not None else "module"
        print_layer_table(res.report, layer_table_title(shown, res.report), output)
        if not self.timing_only:
            print_table(outputs, f"{shown}: {len(outputs)} output(s)", output)


def _json_text(obj: Any) -> str:
    """``obj`` as the JSON text ``taihu-run`` writes (indent 1, trailing newline)."""
    return json.dumps(obj, indent=1) + "\n"


def _check_has_kernels(module: ModuleOp, target: str) -> None:
    """``DiagnosticException`` unless ``module`` holds an ``sw.kernel`` at its top level; the
    message names the level of a ``graph``/``tile``/``loop`` module and the passes lowering it."""
    from taihu.dialects import sw

    if any(isinstance(op, sw.KernelOp) for op in module.body.block.ops):
        return
    for op in module.walk():
        dialect = op.dialect_name()
        if dialect in _LOWER_FROM:
            raise DiagnosticException(
                f"{target}: the module is at the {dialect} level ({op.name}), it has no sw.kernel "
                f"to simulate: lower it first ({_LOWER_FROM[dialect]})")
    raise DiagnosticException(f"{target}: the module has no sw.kernel: nothing to simulate")


__all__ = ["SwsimRunTarget"]
