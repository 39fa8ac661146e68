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
``KeyboardInterrupt`` (Ctrl-C) and ``SystemExit``. No signal handler is installed: a SIGTERM
that Python does not turn into an exception ends the process without any clean-up, which can
leave a stale ``.taihu-*.tmp`` behind, but never a partially written destination.
"""

from __future__ import annotations

import errno
import os
import tempfile
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
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def write_atomically(path: str | os.PathLike[str], content: Content) -> None:
    """Write ``content`` (text written as UTF-8, bytes, or a function that writes to the binary
    file object it is given) to ``path`` atomically.

    Raises ``OSError`` naming ``path`` if its folder is missing or not writable or ``path`` is a
    directory; whatever ``content`` raises propagates, with no file left (also for
    ``KeyboardInterrupt`` / ``SystemExit``)."""
    with OutputFiles() as out:
        out.add(path, content)
