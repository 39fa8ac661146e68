"""Runs the lit/FileCheck suite under pytest: one pytest test per ``.mlir`` file.

lit runs once per session (in parallel) and writes a JUnit report; every test below looks
up its own file's result, so a failure shows the lit output of exactly that file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SUITE = HERE / "filecheck"
LIT_FILES = sorted(p for p in SUITE.rglob("*.mlir") if "Output" not in p.parts and "Inputs" not in p.parts)


@pytest.fixture(scope="session")
def lit_results(tmp_path_factory) -> dict[str, tuple[bool, str]]:
    lit = shutil.which("lit") or os.path.join(os.path.dirname(sys.executable), "lit")
    report = tmp_path_factory.mktemp("lit") / "lit.xml"
    jobs = str(min(4, os.cpu_count() or 1))
    subprocess.run(
        [lit, str(HERE), "-q", f"-j{jobs}", "--xunit-xml-output", str(report)],
        capture_output=True,
        text=True,
    )
    results: dict[str, tuple[bool, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        # classname "taihu.filecheck/dialects" + name "graph.mlir" -> "filecheck/dialects/graph.mlir"
        _, _, folder = case.get("classname", "").partition(".")
        name = case.get("name", "")
        rel = f"{folder}/{name}" if folder else name
        failure = case.find("failure")
        results[rel] = (failure is None, failure.text if failure is not None else "")
    return results


def _rel(path: Path) -> str:
    return path.relative_to(HERE).as_posix()


@pytest.mark.parametrize("path", LIT_FILES, ids=_rel)
def test_lit(path: Path, lit_results: dict[str, tuple[bool, str]]) -> None:
    rel = _rel(path)
    assert rel in lit_results, f"lit did not report {rel}"
    ok, output = lit_results[rel]
    assert ok, output
