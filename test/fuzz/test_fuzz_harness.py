"""The fuzz harness itself: each broken behaviour of a tool is reported (a harness that cannot
fail would make the fuzz tests vacuous)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from taihu.test.fuzz.harness import run_main


def test_a_clean_diagnostic_and_a_success_pass(tmp_path: Path) -> None:
    def diagnostic(argv: list[str]) -> int:
        print("tool: error: in.mlir:1:1: bad", file=sys.stderr)
        return 1

    def success(argv: list[str]) -> int:
        Path(argv[0]).write_text("ok")
        return 0

    assert run_main(diagnostic, ["x"]).ok
    assert run_main(success, [tmp_path / "o"], [tmp_path / "o"]).ok


def test_every_broken_behaviour_is_a_problem(tmp_path: Path) -> None:
    def raises(argv: list[str]) -> int:
        raise KeyError("boom")

    def catch_all(argv: list[str]) -> int:
        print("taihu-run: error: internal error (ZeroDivisionError): division by zero", file=sys.stderr)
        return 1

    def value_error_net(argv: list[str]) -> int:
        print("taihu-run: error: ValueError: expected non-negative integer", file=sys.stderr)
        return 1

    def hangs(argv: list[str]) -> int:
        while True:
            time.sleep(0.01)

    def silent_failure(argv: list[str]) -> int:
        return 1

    def partial(argv: list[str]) -> int:
        Path(argv[0]).write_text("half")
        (Path(argv[0]).parent / ".taihu-x.tmp").write_text("half")
        print("tool: error: failed", file=sys.stderr)
        return 1

    def allocates(argv: list[str]) -> int:
        return len(bytearray(64 << 30))  # 64 GiB: beyond the case's address space

    out = tmp_path / "o"
    expected = {
        raises: "uncaught KeyError", catch_all: "catch-all diagnostic: internal error",
        value_error_net: "catch-all diagnostic: error: ValueError: ", hangs: "hang",
        silent_failure: "without a diagnostic", partial: "failure but the output o was written",
        allocates: "uncaught MemoryError",
    }
    for main, problem in expected.items():
        outcome = run_main(main, [out], [out], seconds=0.5)
        assert any(problem in p for p in outcome.problems), (main.__name__, outcome.problems)
        out.unlink(missing_ok=True)
        (tmp_path / ".taihu-x.tmp").unlink(missing_ok=True)
    outcome = run_main(partial, [out], [out])
    assert any("temporary files left" in p for p in outcome.problems)
