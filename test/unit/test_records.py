"""Tuning records (backends/model/records.py): round trip, best-of-several, diagnostics, and
transfer between networks through the canonical problem signature."""

from __future__ import annotations

import pytest

from taihu.backends.model.conv import ConvShape, GemmShape
from taihu.backends.model.records import (
    TuningRecord,
    normalize_signature,
    problem_signature,
    read_records,
    records_text,
)
from taihu.backends.model.schedule import Schedule

T = '#target.machine<"sw26010">'


def _rec(sig: str, sim: int | None, bm: int = 128) -> TuningRecord:
    return TuningRecord("matmul", sig, T, Schedule.make("gemm", bm=bm, bn=64, bk=64, vec="m"), 1000, sim)


def test_round_trip_and_best_of_several() -> None:
    sig = problem_signature(GemmShape(256, 256, 512, "f64"))
    recs = [_rec(sig, 900, 128), _rec(sig, 800, 256), _rec(sig, None, 512)]
    back = read_records(records_text(recs), "r.json")
    assert list(back) == [(sig, T)]
    assert back[(sig, T)] == recs[1]  # the fastest simulated one
    assert TuningRecord.from_json(recs[0].to_json(), "x") == recs[0]


def test_signature_is_canonical_and_shared_by_equal_problems() -> None:
    a = ConvShape(1, 64, 56, 56, 64, 3, 3, pads=(1, 1, 1, 1), relu=True)
    b = ConvShape(1, 64, 56, 56, 64, 3, 3, pads=(1, 1, 1, 1), relu=True)
    assert problem_signature(a) == problem_signature(b)
    assert problem_signature(a) != problem_signature(ConvShape(1, 64, 56, 56, 64, 3, 3, pads=(1, 1, 1, 1)))
    assert problem_signature(a).startswith("ConvShape n=1 c=64 h=56 w=56 m=64 kh=3 kw=3 ")


@pytest.mark.parametrize("line, why", [
    ("not json", "r.json:1: not a JSON record"),
    ("[1]", "r.json:1: a record is a JSON object"),
    ('{"op": "gemm"}', "r.json:1: key 'signature' missing"),
    ('{"op": "gemm", "signature": "s", "target": "t", "schedule": {"algorithm": "gemm", "params": {"bm": 1.5}},'
     ' "model_cycles": 1, "sim_cycles": null}', "key 'schedule.params.bm'"),
    ('{"op": "gemm", "signature": "s", "target": "t", "schedule": {"algorithm": "gemm", "params": {}},'
     ' "model_cycles": -1, "sim_cycles": null}', "key 'model_cycles'"),
])
def test_bad_lines_name_the_line_and_key(line: str, why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        read_records(line + "\n", "r.json")


def test_signatures_leave_defaults_out_and_old_complete_ones_still_match() -> None:
    g = GemmShape(256, 256, 512, "f64")
    assert problem_signature(g) == "GemmShape m=256 n=256 k=512 dtype=f64"
    complete = ("GemmShape m=256 n=256 k=512 dtype=f64 trans_a=False trans_b=False lda=None ldb=None ldc=None "
                "batch=1 c_full=False bias_along=None maps=0 scalars=0 residual=False const_a=False")
    assert normalize_signature(complete) == problem_signature(g)
    assert normalize_signature("Unknown a=1 b=2") == "Unknown a=1 b=2"
    line = ('{"op": "matmul", "signature": "%s", "target": "t", "schedule": {"algorithm": "gemm", "params": {}}, '
            '"model_cycles": 1, "sim_cycles": null}' % complete)
    assert list(read_records(line, "f.json")) == [(problem_signature(g), "t")]
