"""benchmarks/fidelity.py smoke test: a tiny subset (HW-2/3/4, DL-1/2/3, the CH not-yet rows) through the
CLI, the JSON schema, and met / off recomputed from each row's values and tolerance."""

from __future__ import annotations

import json
import math

import pytest

from taihu.benchmarks import fidelity as F

FIELDS = {"id", "what", "seed", "cite", "taihu", "error", "status", "note", "source", "seed_value", "taihu_value",
          "error_value", "tol_kind", "tol", "holds", "ids"}


def _expected_status(r: dict) -> str:
    """The status from the row's numbers alone (independent of :func:`F.status_of`)."""
    if r["tol_kind"] == "criterion":
        return "met" if r["holds"] else "off"
    if r["error_value"] is None:
        return "not yet"
    if r["seed_value"] is not None:  # the error follows from the two values
        diff = r["taihu_value"] - r["seed_value"]
        want = diff / r["seed_value"] if r["tol_kind"] == "rel" else diff
        assert math.isclose(r["error_value"], want, rel_tol=1e-9, abs_tol=1e-12), r
    return "met" if abs(r["error_value"]) <= r["tol"] + 1e-12 else "off"


def test_cli_subset_json_schema_and_status(tmp_path, capsys) -> None:
    out = tmp_path / "fid.json"
    assert F.main(["--only", "HW-2,HW-3,HW-4,DL-1,DL-2,DL-3,CH", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert set(doc) == {"options", "wall_seconds", "context_only", "rows"}
    rows = doc["rows"]
    ids = [r["id"] for r in rows]
    # only the selected targets, in spec order; CH-1..CH-6 covered by one not-yet range row
    assert ids[:3] == ["HW-2", "HW-3", "HW-4"] and "HW-1" not in ids and "GM-1" not in ids
    assert {i for r in rows for i in r["ids"] if i.startswith("DL")} == {"DL-1", "DL-2", "DL-3"}
    ch = next(r for r in rows if r["id"] == "CH-1..CH-6")
    assert ch["ids"] == [f"CH-{i}" for i in range(1, 7)] and ch["status"] == "not yet" and ch["note"]
    for r in rows:
        assert set(r) == FIELDS, r["id"]
        assert r["status"] in ("met", "off", "not yet")
        assert r["status"] == _expected_status(r), r
        if r["status"] == "not yet":
            assert r["taihu"] == "" and r["note"], r  # a reason, no value
        else:
            assert r["taihu"] and r["cite"], r
        assert r["id"] in printed.replace("\n", " ") or r["id"].split("..")[0] in printed
    hw2 = next(r for r in rows if r["id"] == "HW-2")
    assert hw2["seed_value"] == 16 and hw2["tol_kind"] == "abs" and hw2["tol"] == 0
    assert hw2["taihu_value"] > 0  # computed by the simulator's scheduler, not copied from the seed
    assert not list(tmp_path.glob(".fidelity-*"))  # the atomic write left no temp file


def test_status_follows_the_values() -> None:
    met = F.numeric("X-1", "w", 100.0, "100", "c", 104.0, ".1f", "rel", 0.05, "sim")
    off = F.numeric("X-1", "w", 100.0, "100", "c", 106.0, ".1f", "rel", 0.05, "sim")
    assert (met.status, off.status) == ("met", "off")
    assert met.error_value == pytest.approx(0.04) and met.error == "+4.0 %"
    pts = F.numeric("X-2", "w", 76.1, "76.1 %", "c", 90.0, ".1f", "abs", 10.0, "sim", unit=" %")
    assert pts.status == "off" and pts.error == "+13.9 pt"
    assert F.criterion("X-3", "w", "s", "c", "t", False, "rule", "sim").status == "off"
    assert F.not_yet("X-4..X-6", "w", "s", "c", "why").ids == ["X-4", "X-5", "X-6"]


def test_bad_only_is_a_diagnostic(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        F.main(["--only", "HW-99"])
    assert e.value.code == 2
    assert "unknown target or family HW-99" in capsys.readouterr().err
