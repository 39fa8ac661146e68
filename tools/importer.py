"""``taihu-import MODEL.onnx [-o OUT.mlir]``: ONNX model -> ``graph`` dialect MLIR text.

Prints the module (with its ``dialect_resources`` section holding the large weights) on stdout,
or writes it to ``-o`` atomically (temporary file + ``os.replace``: on any error no partial file
is left behind and an existing file is untouched). Every error (unreadable file, unsupported op
or attribute, ...) is one line ``taihu-import: error: ...`` on stderr and exit status 1.

Options: ``--name`` (function name, default ``main``), ``--randomize-weights SEED`` (replace every
weight tensor with seeded random values first, see
:func:`taihu.tools.weights.randomize_weights`), ``--print-op-generic``.
"""

from __future__ import annotations

import argparse
import io
import sys

from taihu.tools.diagnostics import report, seed_value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="taihu-import", description="Import an ONNX model as taihu graph-dialect MLIR."
    )
    p.add_argument("model", help="ONNX model file (.onnx)")
    p.add_argument("-o", "--output", help="output .mlir file (default: stdout)")
    p.add_argument("--name", default="main", help="name of the generated func.func (default: main)")
    p.add_argument(
        "--randomize-weights",
        type=seed_value,
        metavar="SEED",
        default=None,
        help="re-initialize every weight tensor with seeded random values before importing",
    )
    p.add_argument("--print-op-generic", action="store_true", help="print ops in generic form")
    return p


def module_to_text(module, *, generic: bool = False) -> str:
    """MLIR text of ``module`` including the ``{-# dialect_resources ... #-}`` section."""
    from xdsl.dialects.builtin import Builtin
    from xdsl.printer import Printer

    buf = io.StringIO()
    printer = Printer(stream=buf, print_generic_format=generic)
    printer.print_op(module)
    printer.print_metadata([Builtin])
    buf.write("\n")
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from taihu.frontends.onnx import OnnxImportError, import_model, load_model
    from taihu.tools.weights import randomize_weights

    try:
        model = load_model(args.model)
        if args.randomize_weights is not None:
            model = randomize_weights(model, args.randomize_weights)
        module = import_model(model, name=args.name)
        text = module_to_text(module, generic=args.print_op_generic)
    except OnnxImportError as e:
        msg = str(e)
        if not msg.startswith(args.model):
            msg = f"{args.model}: {msg}"
        return report("taihu-import", OnnxImportError(msg))
    except Exception as e:  # an importer bug: still one line, never a traceback
        return report(
            "taihu-import", RuntimeError(f"{args.model}: internal error: {type(e).__name__}: {e}")
        )
    if args.output is None:
        sys.stdout.write(text)
        return 0
    from taihu.tools.atomic import write_atomically

    try:
        write_atomically(args.output, text)
    except OSError as e:
        return report("taihu-import", OSError(f"cannot write {args.output}: {e.strerror}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
