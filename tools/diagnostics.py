"""One-screen diagnostics for the command-line tools (never a Python traceback).

xDSL attaches the whole module, printed generically with the failing op underlined, as a note
on a verification error. For a network with thousands of ops that is unreadable, so the tools
print the error message and only the underlined op with a few lines of context.
"""

from __future__ import annotations

import re
import sys

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


def format_error(error: BaseException) -> str:
    """The message of ``error`` plus the excerpt of the failing op when xDSL attached one."""
    text = str(error).strip() or type(error).__name__
    for note in getattr(error, "__notes__", ()):
        snippet = excerpt(note)
        if snippet:
            text += "\n" + snippet
            break
    return text


def report(tool: str, error: BaseException) -> int:
    """Print ``tool: error: ...`` on stderr and return the exit status 1."""
    print(f"{tool}: error: {format_error(error)}", file=sys.stderr)
    return 1
