"""``taihu.tools.atomic.write_atomically``: whole file or nothing, usual permissions."""

from __future__ import annotations

import os

import numpy as np
import pytest

from taihu.tools.atomic import write_atomically


def test_text_bytes_and_writer(tmp_path) -> None:
    write_atomically(tmp_path / "a.txt", "héllo")
    write_atomically(tmp_path / "b.bin", b"\x00\x01")
    write_atomically(tmp_path / "c.npz", lambda f: np.savez(f, y=np.arange(3)))
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    with np.load(tmp_path / "c.npz") as c:
        np.testing.assert_array_equal(c["y"], np.arange(3))
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_failing_writer_leaves_existing_file_and_no_temporary(tmp_path) -> None:
    target = tmp_path / "y.npz"
    target.write_bytes(b"previous")

    def half(f) -> None:
        f.write(b"partial")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        write_atomically(target, half)
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.npz"]


def test_missing_folder_is_an_oserror(tmp_path) -> None:
    with pytest.raises(OSError):
        write_atomically(tmp_path / "no" / "x.mlir", "x")
