"""passes/pipelines.py: the ``taihu-lower`` named pipeline and its Python helpers."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.utils.arg_spec import parse_spec

from taihu.passes import pipelines
from taihu.passes.pipelines import (
    TAIHU_LOWER,
    PipelineUnavailableError,
    StageTimer,
    TaihuLowerPass,
    build_pipeline,
    default_context,
    run_pipeline,
)
from taihu.passes.registry import get_all_passes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "graph" / "small_cnn.mlir"


def small_cnn():
    from xdsl.parser import Parser

    return Parser(default_context(), EXAMPLE.read_text(), str(EXAMPLE)).parse_module()


def test_stages_in_order_and_registered_by_name():
    assert TAIHU_LOWER == ("set-target", "graph-fold-constants", "graph-fold-batchnorm", "graph-simplify", "graph-schedule",
                           "graph-group", "convert-graph-to-tile", "convert-tile-to-loop", "convert-loop-to-sw",
                           "sw-to-swsim")
    assert get_all_passes()["taihu-lower"]() is TaihuLowerPass


def test_options_reach_the_stages_that_declare_them():
    p = build_pipeline({"max-elements": 10, "dce": False, "machine": "sw26010pro"}, stop_after="graph-simplify")
    assert [q.name for q in p.passes] == list(TAIHU_LOWER[:4])
    assert p.passes[0].machine == "sw26010pro"
    assert p.passes[1].max_elements == 10
    assert p.passes[3].dce is False
    assert p.passes[2] == type(p.passes[2])()  # defaults where no option applies


def test_spec_round_trip_and_cli_parsing():
    lower = TaihuLowerPass.from_spec(parse_spec("taihu-lower{max-elements=10 stop-after=graph-simplify}"))
    assert dict(lower.options) == {"max_elements": 10} and lower.stop_after == "graph-simplify"
    assert TaihuLowerPass.from_spec(lower.spec()) == lower
    assert str(lower) == 'taihu-lower{max-elements=10 stop-after="graph-simplify"}'


def test_unknown_option_lists_the_accepted_ones():
    with pytest.raises(ValueError, match=r"unknown option\(s\) 'bogus'.*max-elements \(graph-fold-constants\)"):
        TaihuLowerPass.from_spec(parse_spec("taihu-lower{bogus=1}"))
    with pytest.raises(ValueError, match="unknown stage 'nope'"):
        build_pipeline(stop_after="nope")


def test_unregistered_stage_is_named_before_anything_runs():
    module = small_cnn()
    before = str(module)
    with pytest.raises(PipelineUnavailableError, match="no pass named 'convert-nothing-to-nowhere'"):
        run_pipeline(build_pipeline(stages=("graph-simplify", "convert-nothing-to-nowhere")), module)
    assert str(module) == before


def test_callback_sees_every_pass_and_timer_records_them():
    seen = []
    timer = StageTimer(4, on_start=lambda n, i, t: seen.append((n, i, t)))
    module = small_cnn()
    run_pipeline(build_pipeline(stop_after="graph-simplify", callback=timer), module)
    assert seen == [(n, i, 4) for i, n in enumerate(TAIHU_LOWER[:4])]
    assert [n for n, _ in timer.times] == list(TAIHU_LOWER[:4])
    assert all(t >= 0 for _, t in timer.times)
    # batch_norm folded into the conv by the graph stages
    assert "graph.batch_norm" not in str(module)


def test_failing_stage_gets_a_note_naming_it(monkeypatch):
    from xdsl.passes import ModulePass
    from xdsl.utils.exceptions import DiagnosticException

    class Boom(ModulePass):
        name = "boom"

        def apply(self, ctx, op):
            raise DiagnosticException("boom: cannot")

    monkeypatch.setattr(pipelines, "get_all_passes", lambda: {**get_all_passes(), "boom": lambda: Boom})
    with pytest.raises(DiagnosticException) as info:
        run_pipeline(build_pipeline(stages=("graph-simplify", "boom")), small_cnn())
    assert "in pass 'boom'" in info.value.__notes__


def test_gc_paused_restores_the_collector_and_promotes():
    import gc

    from taihu.passes.pipelines import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        junk = [[i] for i in range(1000)]  # tracked objects allocated while paused
    assert gc.isenabled()
    assert gc.get_count()[0] < 1000  # promoted to the oldest generation, not left young
    assert gc.get_freeze_count() == 0
    del junk
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a disabled collector stays disabled
    finally:
        gc.enable()
