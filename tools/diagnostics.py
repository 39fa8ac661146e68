"""One-screen diagnostics for the command-line tools (never a Python traceback).

xDSL attaches the whole module, printed generically with the failing op underlined, as a note
on a verification error. For a network with thousands of ops that is unreadable, so the tools
print the error message and only the underlined op with a few lines of context.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, BlockArgument, OpResult, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span

AttributeInvT = TypeVar("AttributeInvT", bound=Attribute)

CONTEXT_LINES = 2

#: xDSL's underline of the failing op: carets then dashes (a block label ``^bb0(...)`` is not one).
_MARKER = re.compile(r"\s*\^+-*\s*")


def excerpt(note: str, context: int = CONTEXT_LINES) -> str:
    """Return the lines of ``note`` around xDSL's ``^^^^`` marker (the failing op)."""
    lines = note.splitlines()
    marks = [i for i, line in enumerate(lines) if _MARKER.fullmatch(line)]
    if not marks:
        return ""
    first = marks[0]
    end = first + 1
    while end < len(lines) and lines[end].lstrip().startswith(("|", "-")):
        end += 1
    start = max(0, first - 1 - context)
    return "\n".join(lines[start:end])


#: widest source line a diagnostic shows; a longer one is cut around its caret (:func:`cut_long_lines`)
MAX_WIDTH = 160


def cut_long_lines(text: str, width: int = MAX_WIDTH) -> str:
    """Cut every source line above a caret marker (xDSL's ``^^^`` under a token or op) that is
    longer than ``width`` to a ``width``-column window holding the caret a third of the way in,
    with ``...`` where text was cut; the marker and the lines indented under it (a parse error's
    message starts at the caret's column) move with the window. A 17,000-column dense constant
    stays readable (issue 15 item 3)."""
    lines = text.split("\n")
    i = 1
    while i < len(lines):
        marker, src = lines[i], lines[i - 1]
        if not (_MARKER.fullmatch(marker) and len(src) > width):
            i += 1
            continue
        lo = max(0, marker.index("^") - width // 3)
        hi = lo + width
        lead = "..." if lo else ""
        lines[i - 1] = lead + src[lo:hi] + ("..." if hi < len(src) else "")
        j = i
        while j < len(lines) and lines[j].strip() and not lines[j][:lo].strip():
            under = lines[j][lo:]
            lines[j] = " " * len(lead) + (under[:width] if j == i else under)
            j += 1
        i = j + 1
    return "\n".join(lines)


def format_error(error: BaseException) -> str:
    """The message of ``error`` plus the excerpt of the failing op when xDSL attached one; long
    source lines cut around their caret (:func:`cut_long_lines`)."""
    text = str(error).strip() or type(error).__name__
    for note in getattr(error, "__notes__", ()):
        snippet = excerpt(note)
        if snippet:
            text += "\n" + snippet
            break
    return cut_long_lines(text)


def seed_value(text: str) -> int:
    """``argparse`` type of a seed option (``--seed``, ``--random-weights``): an integer in
    [0, 2^64) (numpy's seed sequences take no negative entropy); ``argparse.ArgumentTypeError``
    otherwise, so the tool prints its usage and the reason."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"expected an integer in [0, 2^64), got {text}")
    return value


def report(tool: str, error: BaseException) -> int:
    """Print ``tool: error: ...`` on stderr and return the exit status 1."""
    print(f"{tool}: error: {format_error(error)}", file=sys.stderr)
    return 1


def parse_mlir(ctx: Context, text: str, name: str, implicit_module: bool = True,
               source: SourceMap | None = None) -> ModuleOp:
    """Parse MLIR ``text`` (named ``name`` in diagnostics) into a module.

    Every error is a ``ParseError`` at a ``name:line:col`` position: besides xDSL's own parse
    errors,

    - the ``ValueError`` / ``OverflowError`` that xDSL's attribute constructors raise while
      parsing (an integer out of range of its type, e.g. ``2^64`` in an i64 array, or a float too
      large for f16) and a ``RecursionError`` on absurdly nested input, which would otherwise
      surface without a position (an "internal error"); the position is the parser's when the
      constructor failed, i.e. just past the offending literal;
    - a value used before its definition in the same block (``%v = graph.reshape %r`` above
      ``%r = ...``): xDSL resolves such forward references silently, so the interpreter or a
      pass would later meet a value that does not dominate its use; the position is the use.

    ``source``: filled with the text and where each op starts (:func:`locate` puts the position
    of the op on a verification error).
    """
    parser = _RecordingParser(ctx, text, name)
    try:
        module = parser.parse_module(implicit_module)
    except (ValueError, OverflowError, RecursionError) as e:
        msg = "input nested too deeply" if isinstance(e, RecursionError) else f"invalid value: {e}"
        pos = min(parser.pos, len(text))
        raise ParseError(Span(pos, pos, parser.lexer.input), msg) from None
    if parser.forward_uses:
        _check_dominance(module, parser.forward_uses)
    if source is not None:
        source.name, source.text, source.starts = name, text, parser.op_starts
    return module


@dataclass
class SourceMap:
    """Where the ops of a parsed module start in their text (filled by :func:`parse_mlir`):
    :meth:`where` gives ``file:line:col`` for a diagnostic (ops created later by a pass have
    no position)."""

    name: str = ""
    text: str = ""
    line_offset: int = 0  # lines before the text (a chunk of --split-input-file)
    starts: dict[Operation, int] = field(default_factory=dict)

    def where(self, op: Operation) -> str | None:
        pos = self.starts.get(op)
        if pos is None:
            return None
        line = self.text.count("\n", 0, pos) + 1 + self.line_offset
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"{self.name}:{line}:{col}"


def locate(error: BaseException, source: SourceMap) -> BaseException:
    """Prefix ``error`` (an op verification error: xDSL raises it from ``Operation.emit_error``,
    whose frame holds the op) with the op's ``file:line:col`` in ``source``; returned unchanged
    when the op is not found there."""
    tb = error.__traceback__
    op = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "emit_error" and isinstance(frame.f_locals.get("self"), Operation):
            op = frame.f_locals["self"]
        tb = tb.tb_next
    where = source.where(op) if op is not None else None
    if where is not None and error.args and isinstance(error.args[0], str) and not error.args[0].startswith(where):
        error.args = (f"{where}: {error.args[0]}", *error.args[1:])
    return error


class _RecordingParser(Parser):
    """xDSL's parser, recording where each value is first used before its definition and where
    each op starts."""

    def __init__(self, ctx: Context, text: str, name: str) -> None:
        super().__init__(ctx, text, name)
        self.forward_uses: dict[str, Span] = {}
        self.op_starts: dict[Operation, int] = {}

    def parse_optional_operation(self) -> Operation | None:
        start = self._current_token.span.start
        op = super().parse_optional_operation()
        if op is not None:
            self.op_starts[op] = start
        return op

    def resolve_operand(self, operand: UnresolvedOperand, type: AttributeInvT) -> SSAValue[AttributeInvT]:
        name = operand.operand_name
        forward = name not in self.ssa_values
        if forward:
            self.forward_uses.setdefault(name, operand.span)
        value = super().resolve_operand(operand, type)
        if forward and value.name_hint is None:
            value.name_hint = name if SSAValue.is_valid_name(name) else None  # (for the diagnostic)
        return value


def _check_dominance(module: ModuleOp, forward_uses: dict[str, Span]) -> None:
    """``ParseError`` at the use of the first operand that does not dominate its op: defined
    later in the op's block (or in an enclosing block, later than the op holding the use), a
    block argument used outside its block, a name defined only in a nested region. Uses in other
    blocks of a multi-block region are not checked (branches may jump forward)."""
    for op in module.walk():
        for operand in op.operands:
            if isinstance(operand, BlockArgument):  # usable only inside its block
                user: Operation | None = op
                while user is not None and user.parent_block() is not operand.block:
                    user = user.parent_op()
                if user is None:
                    owner = operand.block.parent_op()
                    _raise_undominated(op, operand, forward_uses, "outside the region that defines it (by "
                                       f"'{owner.name if owner is not None else 'a block'}')")
                continue
            if not isinstance(operand, OpResult):  # a forward reference never resolved: its name
                # was defined only inside a nested region, where the use cannot see it
                _raise_undominated(op, operand, forward_uses, "but defined only in a nested region")
            definer = operand.op
            block = definer.parent_block()
            user = op
            while user is not None and user.parent_block() is not block:
                user = user.parent_op()
            if user is None or block is None:
                continue
            if user is definer or block.get_operation_index(user) < block.get_operation_index(definer):
                _raise_undominated(op, operand, forward_uses, f"before its definition (by '{definer.name}')")


def _raise_undominated(op: Operation, value: SSAValue, forward_uses: dict[str, Span], how: str) -> NoReturn:
    hint = value.name_hint
    span = forward_uses.get(hint) if hint is not None else None
    if span is None:
        span = next(iter(forward_uses.values()))
    shown = f"%{hint}" if hint is not None else "an operand"
    raise ParseError(span, f"{shown} of '{op.name}' is used {how}")
