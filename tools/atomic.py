"""Atomic output files for the command-line tools: never a partially written file.

Every output is written to a temporary file ``.taihu-*.tmp`` in its destination folder, which is
then renamed over the destination (``os.replace``, atomic on POSIX). On any error the temporary
file is removed and an existing destination is left untouched. A file gets the usual permissions
(0666 minus the umask), not ``mkstemp``'s private 0600.

- :func:`write_atomically` writes one file.
- :class:`OutputFiles` writes the several outputs of one run all or nothing: each output goes to
  its temporary file when it is added, and the temporary files are renamed over their
  destinations only when the ``with`` block ends without an exception. On an exception nothing
  is renamed, the temporary files and the folders the group created are removed.

Clean-up runs in ``finally`` / ``except BaseException`` blocks, so it also happens on
``KeyboardInterrupt`` (Ctrl-C, SIGINT) and ``SystemExit``. While an :class:`OutputFiles` group
is open in the main thread, SIGTERM and SIGHUP (which would end the process without any
clean-up) are turned into an exception too: the temporary files are removed, the previous
handlers restored and the signal raised again, so the process still ends the way the signal
asks (status 128 + signal number for a shell). Only SIGKILL, which no process can catch, can
leave a stale ``.taihu-*.tmp`` behind; never a partially written destination.
"""

from __future__ import annotations

import errno
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from typing import BinaryIO

#: What an output holds: text (written as UTF-8), bytes, or a function that writes to the binary
#: file object it is given (e.g. ``lambda f: numpy.savez(f, **arrays)``).
Content = str | bytes | Callable[[BinaryIO], None]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _write_temporary(path: str | os.PathLike[str], content: Content) -> str:
    """Write ``content`` to a new temporary file beside ``path``; returns its name.

    Raises ``OSError`` naming ``path`` (not the temporary file) if the folder is missing or not
    writable or ``path`` is a directory; whatever ``content`` raises propagates. No temporary
    file is left behind when this raises."""
    dest = os.fspath(path)
    if os.path.isdir(dest):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), dest)
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(dest)), prefix=".taihu-",
                                   suffix=".tmp")
    except OSError as e:
        raise OSError(e.errno, e.strerror, dest) from None
    complete = False
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode() if isinstance(content, str) else content)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        complete = True
    finally:
        if not complete:
            _unlink(tmp)
    return tmp


#: signals that end a process without an exception; caught while an output group is open
CAUGHT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Signalled(BaseException):
    """A SIGTERM / SIGHUP arrived while an :class:`OutputFiles` group was open (not an
    ``Exception``: the tools' error nets let it through to the group's clean-up)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signal.Signals(signum).name}")
        self.signum = signum


def _raise_signalled(signum: int, frame: object) -> None:
    raise Signalled(signum)


class OutputFiles:
    """The output files of one run, written all or nothing (see the module docstring).

    Usage::

        with OutputFiles() as out:
            out.add("y.npz", lambda f: numpy.savez(f, **arrays))
            out.makedirs("plots")
            out.add("plots/a.png", png_bytes)
        # both files are in place here; if anything in the block raised, neither is
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, str]] = []  # (temporary file, destination)
        self._created: list[str] = []  # folders made by makedirs, outermost first
        self._handlers: dict[int, object] = {}  # signal -> handler replaced by __enter__

    def add(self, path: str | os.PathLike[str], content: Content) -> None:
        """Write ``content`` to a temporary file for ``path`` (renamed on :meth:`commit`).

        Raises ``OSError`` naming ``path`` if its folder is missing or not writable or ``path``
        is a directory."""
        self._staged.append((_write_temporary(path, content), os.fspath(path)))

    def makedirs(self, folder: str | os.PathLike[str]) -> None:
        """Create ``folder`` and its missing parents; they are removed again by :meth:`discard`
        (if still empty). Raises ``OSError`` if a component exists and is not a folder."""
        missing = []
        path = os.path.abspath(os.fspath(folder))
        while not os.path.isdir(path):
            missing.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        for path in reversed(missing):
            os.mkdir(path)
            self._created.append(path)

    def commit(self) -> None:
        """Rename every temporary file over its destination, in the order they were added.

        The renames are checked beforehand (same folder, destination not a directory), so a
        failure here is exceptional (e.g. the folder was removed meanwhile); the temporary files
        not renamed yet are then removed."""
        try:
            while self._staged:
                tmp, dest = self._staged[0]
                os.replace(tmp, dest)
                self._staged.pop(0)
        except BaseException:
            self.discard()
            raise
        self._created.clear()

    def discard(self) -> None:
        """Remove the temporary files not committed and the (empty) folders created."""
        while self._staged:
            _unlink(self._staged.pop()[0])
        while self._created:
            try:
                os.rmdir(self._created.pop())
            except OSError:  # not empty (committed files or the user's): kept
                pass

    def __enter__(self) -> OutputFiles:
        if threading.current_thread() is threading.main_thread():  # (handlers: main thread only)
            for signum in CAUGHT_SIGNALS:
                previous = signal.getsignal(signum)
                if previous is None or previous == signal.SIG_IGN:
                    continue  # ignored (e.g. nohup), or a handler not installed from Python
                self._handlers[signum] = previous
                signal.signal(signum, _raise_signalled)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        signalled = exc if isinstance(exc, Signalled) else None
        try:
            if exc_type is None:
                self.commit()
            else:
                self.discard()
        except Signalled as e:  # during commit (which discarded what it had not renamed)
            signalled = e
        finally:
            self._restore_handlers()
        if signalled is not None:
            signal.raise_signal(signalled.signum)  # end as the signal asks (the previous handler)
            raise signalled  # (a previous Python handler returned: the write still failed)

    def _restore_handlers(self) -> None:
        while self._handlers:
            signum, handler = self._handlers.popitem()
            signal.signal(signum, handler)  # type: ignore[arg-type]  # (a getsignal() result)


def unwritable(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be written (``os.strerror`` text: a directory, a missing or
    unwritable folder), or ``None``. A check before a run, so that a tool does not do the work
    (and write its other outputs) only to fail on this one; writing can still fail later
    (e.g. a full disk), then atomically."""
    dest = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(dest))
    if os.path.isdir(dest):
        return os.strerror(errno.EISDIR)
    if not os.path.isdir(folder):
        return os.strerror(errno.ENOENT if not os.path.exists(folder) else errno.ENOTDIR)
    if not os.access(folder, os.W_OK | os.X_OK):
        return os.strerror(errno.EACCES)
    return None


def write_atomically(path: str | os.PathLike[str], content: Content) -> None:
    """Write ``content`` (text written as UTF-8, bytes, or a function that writes to the binary
    file object it is given) to ``path`` atomically.

    Raises ``OSError`` naming ``path`` if its folder is missing or not writable or ``path`` is a
    directory; whatever ``content`` raises propagates, with no file left (also for
    ``KeyboardInterrupt`` / ``SystemExit``)."""
    with OutputFiles() as out:
        out.add(path, content)
