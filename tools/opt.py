"""``taihu-opt``: xDSL's opt driver with every taihu dialect, pass and target registered.

Same flags as ``xdsl-opt`` (``-p``, ``-o``, ``-t``, ``--split-input-file``,
``--verify-diagnostics``, ``--print-op-generic``, ``--print-between-passes``, ...). Unlike the
stock driver, a parse or verification error is printed as a diagnostic pointing at the file
position or op, and the tool exits with status 1 instead of a Python traceback; ``-o`` is
written only on success.
``-t NAME{options}`` selects an output target, e.g. ``-t swsim-run`` (simulate and print the
per-layer report, :mod:`taihu.tools.sim_target`); its options are checked before any pass runs.
"""

from __future__ import annotations

import inspect
import io
import sys
from collections.abc import Callable
from typing import IO, cast

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import parse_pipeline, parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from taihu.passes.pipelines import pass_from_spec
from taihu.tools.atomic import unwritable, write_atomically
from taihu.tools.diagnostics import SourceMap, locate, parse_mlir, report
from taihu.tools.universe import get_all_dialects, get_all_passes, get_all_targets


class TaihuOptMain(xDSLOptMain):
    """``xDSLOptMain`` that registers taihu's dialects, passes and targets even without plugin
    metadata, and checks the ``-t`` target's options before any pass runs (``ValueError`` or
    ``DiagnosticException`` from the constructor)."""

    def __init__(self, description: str = "taihu modular optimizer driver",
                 args: list[str] | None = None) -> None:
        self.source = SourceMap()  # of the chunk being processed
        self._line_offset = 0
        super().__init__(description=description, args=args)
        # xDSL builds the target from its spec only after the passes ran: a bad option would
        # then surface only after lowering a whole network.
        spec = parse_spec(self.args.target)
        entry = self.available_targets[spec.name]
        if not inspect.signature(entry).parameters:  # not a legacy (module, stream) printer
            factory = cast("Callable[[], type[Target]]", entry)  # (as xDSL's own dispatch does)
            factory().from_spec(spec)

    def setup_pipeline(self) -> None:
        # every pass built once from its spec first: a bad option value is a diagnostic naming
        # the pass and the option (PassOptionError), not xDSL's bare ValueError
        for spec in parse_pipeline(self.args.passes):
            factory = self.available_passes.get(spec.name)
            if factory is not None:
                pass_from_spec(factory(), spec)
        super().setup_pipeline()

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)
        # Passes may create dense_resource constants even in a file that never mentions a
        # builtin attribute; the printer needs the builtin dialect loaded to print their blobs.
        self.ctx.get_dialect("builtin")

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse(io: IO[bytes]) -> ModuleOp:  # (as xDSL's, every error located: parse_mlir)
            name = self.get_input_name()
            data = io.read()
            try:
                text = data.decode() if isinstance(data, bytes) else data
            except UnicodeDecodeError as e:
                raise DiagnosticException(f"{name}: not a text MLIR file ({e.reason} at byte {e.start})") from None
            self.source = SourceMap(line_offset=self._line_offset)
            return parse_mlir(self.ctx, text, name, not self.args.no_implicit_module, self.source)

        self.available_frontends["mlir"] = parse

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        self._line_offset = start_offset  # (the lines of the chunks before: --split-input-file)
        return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp) -> None:
        # the module is verified before the first pass: an op of the input that does not verify
        # is named with its file:line:col (SourceMap)
        try:
            super().apply_passes(prog)
        except DiagnosticException as e:
            raise locate(e, self.source) from None

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        for name, factory in get_all_targets().items():
            self.available_targets.setdefault(name, factory)

    def prepare_output(self) -> IO[str]:
        # Buffer the output: the file named by -o is written only when everything succeeded.
        if self.args.output_file is None:
            return sys.stdout
        self.buffered_output = _KeptStringIO()
        return self.buffered_output


class _KeptStringIO(io.StringIO):
    """A StringIO whose ``close`` keeps the text (the opt driver closes its output stream)."""

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``taihu-opt``); returns the exit status (1 on any error)."""
    try:
        opt = TaihuOptMain(description="taihu modular optimizer driver", args=argv)
    except (ValueError, ArgSpecParseError, DiagnosticException) as e:  # unknown pass/target, bad options
        return report("taihu-opt", e)
    if opt.args.output_file is not None:
        # checked before anything runs: a target writing files of its own (swsim-run{report=...})
        # must not leave them behind when -o then fails (all or nothing)
        problem = unwritable(opt.args.output_file)
        if problem is not None:
            return report("taihu-opt", OSError(f"cannot write {opt.args.output_file}: {problem}"))
    try:
        opt.run()
    except (ParseError, DiagnosticException) as e:
        return report("taihu-opt", e)
    except OSError as e:
        return report("taihu-opt", OSError(f"{e.strerror}: {e.filename}"))
    except Exception as e:  # a bug in a pass or printer: still one diagnostic, not a traceback
        return report("taihu-opt", RuntimeError(f"internal error ({type(e).__name__}): {e}"))
    if opt.args.output_file is not None:
        try:
            write_atomically(opt.args.output_file, opt.buffered_output.getvalue())
        except OSError as e:
            return report("taihu-opt", OSError(f"cannot write {opt.args.output_file}: {e.strerror or e}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
