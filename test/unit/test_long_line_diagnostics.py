"""Diagnostics on very long source lines are cut around the caret (issue 15 item 3)."""

from __future__ import annotations

from pathlib import Path

from taihu.tools import opt
from taihu.tools.diagnostics import MAX_WIDTH, cut_long_lines


def _dense(n: int) -> str:
    return "dense<[" + ", ".join(str(i) for i in range(n)) + f"]> : tensor<{n}xi32>"


def test_parse_error_far_into_a_line_shows_a_window_around_the_caret(tmp_path: Path, capsys) -> None:
    line = f'  %c = "arith.constant"() {{value = {_dense(3000)}}} : () -> tensor<3000xi32> %%%'
    src = tmp_path / "long.mlir"
    src.write_text('"builtin.module"() ({\n' + line + "\n}) : () -> ()\n")
    assert opt.main([str(src)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"taihu-opt: error: {src}:2:{line.index('%%%') + 1}"
    shown, caret, message = err[1], err[2], err[3]
    assert max(len(x) for x in err) <= MAX_WIDTH + 6
    assert shown.startswith("...") and shown.endswith("tensor<3000xi32> %%%")
    # the caret still points at the offending token, and the message sits under it
    assert shown[caret.index("^"):].startswith("%%%")
    assert message.strip() and message.index(message.strip()) == caret.index("^")


def test_verification_excerpt_of_a_long_op_is_cut_at_the_width(tmp_path: Path, capsys) -> None:
    line = f'  %c = "arith.constant"() {{value = {_dense(3000)}}} : () -> tensor<300xi32>'
    src = tmp_path / "long.mlir"
    src.write_text('"builtin.module"() ({\n' + line + "\n}) : () -> ()\n")
    assert opt.main([str(src)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"taihu-opt: error: {src}:2:3: ")
    op_line = next(x for x in err if "arith.constant" in x)
    assert len(op_line) == MAX_WIDTH + 3 and op_line.endswith("...")
    assert op_line.startswith('  %c = "arith.constant"')  # the caret is at the op's start: no left cut
    assert any("Operation does not verify" in x for x in err)


def test_short_lines_and_text_without_a_caret_are_unchanged() -> None:
    text = "x.mlir:1:5\n  foo bar\n    ^\n    expected baz"
    assert cut_long_lines(text) == text
    long = "a message " * 100
    assert cut_long_lines(long) == long  # a long message without a caret under it is kept
