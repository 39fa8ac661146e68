"""Run one fuzz case through a tool's ``main(argv)`` in-process and check the invariant.

The invariant (issue 15, "bad input"): the tool exits 0, or exits non-zero with a diagnostic on
stderr; never

- an uncaught exception out of ``main`` (a Python traceback for the user);
- the tools' catch-all: ``internal error (ValueError): ...`` (taihu-opt, taihu-run, taihu-tune),
  ``FILE: internal error: KeyError: ...`` (taihu-import) or ``taihu-run: error: ValueError: ...``
  (taihu-run's net for ValueError/KeyError/OSError): a diagnostic-shaped bug report;
- a hang: each case runs under a wall-clock bound (``SIGALRM`` raising :class:`CaseTimeout`, a
  ``BaseException`` that the tools' ``except Exception`` nets do not catch);
- a runaway allocation: the address space of the process is capped for the case
  (``RLIMIT_AS``), so a ``MemoryError`` is an outcome, not an OOM kill of the test machine;
- a partial output: after a failure no requested output file exists (those that did not exist
  before), and no ``.taihu-*.tmp`` temporary file is left in the output folder; after success
  every requested output exists.
"""

from __future__ import annotations

import contextlib
import io
import re
import resource
import signal
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: wall-clock bound of one case, seconds (a hang is reported as a failure)
CASE_SECONDS = 30.0
#: extra address space a case may map beyond what the process had before it, bytes
CASE_EXTRA_BYTES = 6 << 30

#: the catch-all forms of the tools (a test fails on them)
_CATCH_ALL = re.compile(
    r"internal error|"  # taihu-opt/taihu-run/taihu-tune "internal error (T): ", taihu-import "internal error: T: "
    r"error: [A-Z]\w*(?:Error|Exception): "  # taihu-run's ValueError/KeyError/OSError net
    r"|Traceback \(most recent call last\)"
)


class CaseTimeout(BaseException):
    """The case ran longer than its bound (a hang)."""


@dataclass
class Outcome:
    """What one tool invocation did."""

    argv: list[str]
    status: int | None
    out: str
    err: str
    exception: BaseException | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        text = f"argv: {self.argv}\nstatus: {self.status}\nproblems: {self.problems}\nstderr: {self.err[-3000:]}"
        if self.exception is not None:
            import traceback

            text += "\n" + "".join(traceback.format_exception(self.exception))[-4000:]
        return text


@contextlib.contextmanager
def bounded(seconds: float = CASE_SECONDS, extra_bytes: int = CASE_EXTRA_BYTES) -> Iterator[None]:
    """Run the block with a wall-clock bound (``CaseTimeout``) and a capped address space
    (``MemoryError`` beyond ``extra_bytes`` more than the process maps now)."""

    def expire(signum, frame):
        raise CaseTimeout(f"no result within {seconds:g} s")

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    cap = mapped + extra_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    previous = signal.signal(signal.SIGALRM, expire)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_main(main: Callable[[list[str]], int], argv: Sequence[str], outputs: Sequence[Path] = (),
             seconds: float = CASE_SECONDS, cwd: Path | None = None) -> Outcome:
    """Call ``main(argv)`` with stdout/stderr captured under :func:`bounded` and check the
    invariant (module docstring); ``outputs`` are the files the invocation was asked to write.
    ``cwd``: the working folder during the call (fuzzed options may name relative output files;
    default: a new temporary folder, removed afterwards)."""
    argv = [str(a) for a in argv]
    existed = {p: p.exists() for p in outputs}
    out, err = io.StringIO(), io.StringIO()
    status: int | None = None
    exc: BaseException | None = None
    try:
        with contextlib.ExitStack() as stack:
            folder = cwd if cwd is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
            stack.enter_context(contextlib.chdir(folder))
            stack.enter_context(bounded(seconds))
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(err))
            status = main(argv)
    except SystemExit as e:  # argparse: usage error (status 2) with its message on stderr
        status = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
    except CaseTimeout as e:
        exc = e
    except BaseException as e:  # noqa: B036  (an uncaught exception is the finding)
        exc = e
    outcome = Outcome(argv, status, out.getvalue(), err.getvalue(), exc)
    problems = outcome.problems
    if isinstance(exc, CaseTimeout):
        problems.append(f"hang: {exc}")
    elif exc is not None:
        problems.append(f"uncaught {type(exc).__name__}: {str(exc)[:300]}")
    if _CATCH_ALL.search(outcome.err) or _CATCH_ALL.search(outcome.out):
        problems.append("catch-all diagnostic: " + (_CATCH_ALL.search(outcome.err) or _CATCH_ALL.search(outcome.out))[0])
    if exc is None and status not in (0, None) and "error" not in outcome.err:
        problems.append(f"exit status {status} without a diagnostic on stderr")
    for path in outputs:
        folder = path.parent
        if folder.is_dir():
            stale = sorted(p.name for p in folder.iterdir() if p.name.startswith(".taihu-") and p.name.endswith(".tmp"))
            if stale:
                problems.append(f"temporary files left in {folder.name}: {stale}")
        if status == 0 and exc is None and not path.exists():
            problems.append(f"success without the output {path.name}")
        if (status != 0 or exc is not None) and path.exists() and not existed[path]:
            problems.append(f"failure but the output {path.name} was written")
    return outcome


def assert_ok(outcome: Outcome, what: str = "") -> None:
    """Fail the test with the case's details when the invariant does not hold."""
    if not outcome.ok:
        raise AssertionError(f"{what}\n{outcome.describe()}")


def tool_mains() -> dict[str, Callable[[list[str]], int]]:
    """``main`` of each command-line tool, by its console-script name."""
    from taihu.tools import importer, opt, run

    return {"taihu-opt": opt.main, "taihu-run": run.main, "taihu-import": importer.main}


__all__ = ["CaseTimeout", "Outcome", "bounded", "run_main", "assert_ok", "tool_mains", "CASE_SECONDS"]
