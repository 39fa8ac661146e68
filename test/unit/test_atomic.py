"""``taihu.tools.atomic``: whole file or nothing (also on Ctrl-C), usual permissions; a group of
outputs (``OutputFiles``) all or nothing."""

from __future__ import annotations

import os

import numpy as np
import pytest

from taihu.tools.atomic import OutputFiles, write_atomically


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


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupt_while_writing_removes_the_temporary(tmp_path, interrupt) -> None:
    """Ctrl-C (KeyboardInterrupt) or sys.exit (SystemExit, e.g. from a signal handler) in the
    middle of a write: no temporary file is left and the previous file is untouched."""
    target = tmp_path / "out.mlir"
    target.write_text("previous")

    def interrupted(f) -> None:
        f.write(b"half of the mod")
        raise interrupt()

    with pytest.raises(interrupt):
        write_atomically(target, interrupted)
    assert target.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir"]


def _default_signals() -> None:
    """The child's SIGINT / SIGHUP back to their defaults: a test suite started in the background
    (``cmd &``, ``nohup``) passes them on ignored, and an ignored signal stays ignored (nohup's
    contract, which Python and OutputFiles keep)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def test_sigint_in_a_real_process_leaves_no_temporary(tmp_path) -> None:
    """A SIGINT delivered to a process blocked inside write_atomically (the default handler
    raises KeyboardInterrupt): the process ends, the temporary file is gone."""
    import signal
    import subprocess
    import sys
    import textwrap

    target = tmp_path / "out.txt"
    target.write_text("previous")
    code = textwrap.dedent(f"""
        import sys, time
        from taihu.tools.atomic import write_atomically

        def slow(f):
            f.write(b"partial")
            f.flush()
            print("writing", flush=True)
            time.sleep(60)

        try:
            write_atomically({str(target)!r}, slow)
        except KeyboardInterrupt:
            sys.exit(130)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert any(p.name.startswith(".taihu-") for p in tmp_path.iterdir())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        proc.kill()
        proc.wait()
    assert target.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_output_files_are_all_or_nothing(tmp_path) -> None:
    (tmp_path / "b.json").write_text("previous")
    with pytest.raises(RuntimeError, match="late failure"):
        with OutputFiles() as out:
            out.add(tmp_path / "a.npz", b"complete")
            out.add(tmp_path / "b.json", "{}")
            out.makedirs(tmp_path / "plots" / "run1")
            out.add(tmp_path / "plots" / "run1" / "x.png", b"png")
            raise RuntimeError("late failure")
    # nothing renamed, temporaries and the created folders removed, b.json untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]
    assert (tmp_path / "b.json").read_text() == "previous"
    with OutputFiles() as out:
        out.add(tmp_path / "a.npz", b"complete")
        out.makedirs(tmp_path / "plots")
        out.add(tmp_path / "plots" / "x.png", b"png")
        assert not (tmp_path / "a.npz").exists()  # renamed only when the block ends
    assert (tmp_path / "a.npz").read_bytes() == b"complete"
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["x.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "b.json", "plots"]


def test_unwritable_second_output_discards_the_first(tmp_path) -> None:
    with pytest.raises(OSError) as info:
        with OutputFiles() as out:
            out.add(tmp_path / "y.npz", b"outputs")
            out.add(tmp_path / "missing" / "r.json", "{}")
    assert info.value.filename == str(tmp_path / "missing" / "r.json")  # the destination, not a temporary
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "folder").mkdir()
    with pytest.raises(IsADirectoryError) as info:
        write_atomically(tmp_path / "folder", b"x")
    assert info.value.filename == str(tmp_path / "folder")
    assert [p.name for p in tmp_path.iterdir()] == ["folder"] and not any((tmp_path / "folder").iterdir())


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_in_a_real_process_leaves_no_temporary(tmp_path, signame) -> None:
    """SIGTERM / SIGHUP (no Python exception by default) delivered while an output group is
    being written: the temporary files are removed and the process still ends by the signal
    (issue 15: a SIGTERM during -o left a hidden partial temporary file)."""
    import signal
    import subprocess
    import sys
    import textwrap

    target = tmp_path / "out.txt"
    target.write_text("previous")
    code = textwrap.dedent(f"""
        import time
        from taihu.tools.atomic import OutputFiles

        def slow(f):
            f.write(b"partial")
            f.flush()
            print("writing", flush=True)
            time.sleep(60)

        with OutputFiles() as out:
            out.add({str(tmp_path / 'first.txt')!r}, "complete")
            out.add({str(target)!r}, slow)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert len([p for p in tmp_path.iterdir() if p.name.startswith(".taihu-")]) == 2
        proc.send_signal(getattr(signal, signame))
        assert proc.wait(timeout=30) == -getattr(signal, signame)
    finally:
        proc.kill()
        proc.wait()
    assert target.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_handlers_are_restored_after_a_group(tmp_path) -> None:
    import signal

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    with OutputFiles() as out:
        out.add(tmp_path / "a.txt", "a")
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {s: signal.getsignal(s) for s in before} == before
    with pytest.raises(ValueError), OutputFiles() as out:
        raise ValueError("boom")
    assert {s: signal.getsignal(s) for s in before} == before
