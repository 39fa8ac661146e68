"""Atomic output files for the command-line tools: never a partially written file.

The content goes to a temporary file in the destination folder, which is then renamed over the
destination (``os.replace``, atomic on POSIX). On any error the temporary file is removed and an
existing destination is left untouched. The file gets the usual permissions (0666 minus the
umask), not ``mkstemp``'s private 0600.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import BinaryIO


def write_atomically(path: str | os.PathLike[str], content: str | bytes | Callable[[BinaryIO], None]) -> None:
    """Write ``content`` to ``path`` atomically.

    ``content`` is text (written as UTF-8), bytes, or a function that writes to the binary file
    object it is given (e.g. ``lambda f: numpy.savez(f, **arrays)``). Raises ``OSError`` if the
    folder is missing or not writable; whatever ``content`` raises propagates, with no file left.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".taihu-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode() if isinstance(content, str) else content)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
