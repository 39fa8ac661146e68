"""taihu-tune end to end: records round trip and transfer, every strategy on a tiny layer, the
same records from 1 and 2 Dask workers, and records applied by ``taihu-run --tuning`` (the
lowering follows them; the tuned network matches the reference)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

from taihu.backends.model.conv import GemmShape
from taihu.backends.model.records import TuningRecord, problem_signature, read_records, records_text
from taihu.dialects import graph
from taihu.passes.pipelines import build_pipeline, run_pipeline
from taihu.tools import run as run_tool
from taihu.tools import tune
from taihu.tools.layers import GraphBuilder

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_CNN = os.path.join(REPO, "examples", "graph", "small_cnn.mlir")


def _tune(tmp_path, *args: str, name: str = "r.json") -> dict:
    out = tmp_path / name
    assert tune.main([SMALL_CNN, "-o", str(out), "--quiet", *args]) == 0
    text = out.read_text()
    recs = read_records(text, str(out))
    assert records_text(recs.values()) == text  # written sorted, one line per record
    return recs


def _problems():
    from taihu.tools.run import load_mlir

    module = load_mlir(SMALL_CNN)
    tune.graph_stages(module, None)
    return tune.collect_problems(module)


def test_model_strategy_records_round_trip(tmp_path):
    recs = _tune(tmp_path, "--strategy", "model")
    problems = _problems()
    # the conv (+ batch norm, relu), the max pool, the FC layer and the softmax
    assert [layer.kind for layer in problems.layers] == ["conv2d", "window", "gemm", "axis"]
    assert len(recs) == len(problems.layers)
    for layer in problems.layers:
        r = recs[(layer.signature, problems.target)]
        assert r.sim_cycles is None  # the model strategy simulates nothing
        d = tune.default_candidate(problems.state, layer)
        assert r.schedule == d.schedule and r.model_cycles == d.model_cycles
        assert TuningRecord.from_json(r.to_json(), "x:1") == r


@pytest.mark.parametrize("strategy", ["sim", "anneal", "greedy", "exhaustive"])
def test_strategies_on_a_tiny_layer(strategy):
    problems = _problems()
    layers = tune.filter_layers(problems.layers, "logits")  # the 1x64 -> 10 FC layer
    assert [layer.kind for layer in layers] == ["gemm"]
    opts = tune.TuneOptions(strategy, top_k=2, steps=8, workers=0)
    (layer,) = tune.tune(problems, layers, opts)
    assert layer.error is None
    sel = layer.selection
    assert layer.default in sel.simulate  # the default is always simulated
    if strategy == "exhaustive":
        assert len(sel.simulate) == layer.space_size
    else:
        assert len(sel.simulate) <= 3
    if strategy == "anneal":
        assert sel.steps <= 8
    c, cycles = layer.best()
    assert cycles is not None and cycles <= layer.outcomes[layer.default].cycles  # never slower than the default
    assert cycles == min(o.cycles for o in layer.outcomes.values())
    (rec,) = tune.records_of(problems, [layer])
    assert rec.schedule == c.schedule and rec.sim_cycles == cycles and rec.signature == layer.signature


def test_same_records_from_one_and_two_dask_workers(tmp_path):
    one = (tmp_path / "one.json")
    two = (tmp_path / "two.json")
    for path, n in ((one, "1"), (two, "2")):
        assert tune.main([SMALL_CNN, "-o", str(path), "--quiet", "--layers", "2", "--top-k", "3",
                          "--workers", n]) == 0
    assert one.read_text() == two.read_text()
    (rec,) = read_records(one.read_text(), "one").values()
    assert rec.sim_cycles is not None


def _non_default(problems, layer_name: str, algorithm: str | None = None):
    """A legal schedule of the layer other than the model's choice (of ``algorithm`` if given)."""
    (layer,) = tune.filter_layers(problems.layers, layer_name)
    d = tune.default_candidate(problems.state, layer)
    cands = [c for c in tune.enumerate_space(problems.state, layer)
             if c.schedule != d.schedule and (algorithm is None or c.schedule.algorithm == algorithm)]
    return layer, min(cands, key=lambda c: c.model_key)


def _write(tmp_path, records) -> str:
    path = tmp_path / "records.json"
    path.write_text(records_text(records))
    return str(path)


def _fc_network():
    """Another network with small_cnn's FC layer shape (1x64 -> 10, weights 10x64, bias) after a
    relu of its own; its output is returned and, through a relu, feeds a second, different FC
    layer (two users: the relu is not fused into the first)."""
    rng = np.random.default_rng(5)
    g = GraphBuilder((1, 64))
    x = g(graph.ReluOp(g.args[0]), "pre")
    w1 = g.cst(rng.standard_normal((10, 64)), "w1")
    b1 = g.cst(rng.standard_normal((10,)), "b1")
    fc1 = g(graph.GemmOp(x, w1, b1, trans_b=True), "fc1")
    r = g(graph.ReluOp(fc1), "act")
    w2 = g.cst(rng.standard_normal((10, 7)), "w2")
    fc2 = g(graph.GemmOp(r, w2), "fc2")
    return g.module(fc1, fc2)


def test_records_transfer_to_another_network(tmp_path):
    problems = _problems()
    layer, cand = _non_default(problems, "logits")
    rec = TuningRecord("gemm", layer.signature, problems.target, cand.schedule, cand.model_cycles, None)
    path = _write(tmp_path, [rec])
    module = _fc_network()
    run_pipeline(build_pipeline({"tuning": path}, stop_after="graph-schedule"), module)
    from taihu.passes.conversion.graph_to_tile.schedules import SCHEDULE_ATTR, from_attr

    gemms = {op.results[0].name_hint: op for op in module.walk() if isinstance(op, graph.GemmOp)}
    assert from_attr(gemms["fc1"].attributes[SCHEDULE_ATTR]) == cand.schedule  # the shared shape: the record
    other = tune.collect_problems(module)
    fc2 = next(x for x in other.layers if x.layers == ["fc2"])
    assert from_attr(gemms["fc2"].attributes[SCHEDULE_ATTR]) == tune.default_candidate(other.state, fc2).schedule
    assert problem_signature(fc2.problem.shape) != layer.signature


def test_taihu_run_tuning_applies_records_and_matches_the_reference(tmp_path, capsys):
    problems = _problems()
    conv, conv_cand = _non_default(problems, "bn", algorithm="winograd")  # the model picks im2col
    fc, fc_cand = _non_default(problems, "logits")
    path = _write(tmp_path, [
        TuningRecord("conv2d", conv.signature, problems.target, conv_cand.schedule, conv_cand.model_cycles, None),
        TuningRecord("gemm", fc.signature, problems.target, fc_cand.schedule, fc_cand.model_cycles, None)])
    report = tmp_path / "report.json"
    assert run_tool.main([SMALL_CNN, "--tuning", path, "--check", "--quiet", "--report", str(report)]) == 0
    kernels = json.loads(report.read_text())["kernels"]
    assert any("winograd" in (k.get("algorithm") or "") for k in kernels if k.get("layer") == "bn")
    # the lowered GEMM kernel has the recorded blocking
    from taihu.tools.run import load_mlir

    module = load_mlir(SMALL_CNN)
    run_pipeline(build_pipeline({"tuning": path}, stop_after="convert-graph-to-tile"), module)
    blocking = [op.attributes["taihu.blocking"] for op in module.walk() if "taihu.blocking" in op.attributes
                and op.attributes.get("taihu.layer") == StringAttr("logits")]
    d = fc_cand.schedule.as_dict()
    assert blocking and f"bm={d['bm']} bn={d['bn']} bk={d['bk']}" in blocking[0].data
    assert f"vec={d['vec']}" in blocking[0].data
    # without records the conv is not Winograd (so the records changed the lowering)
    assert run_tool.main([SMALL_CNN, "--quiet", "--timing-only", "--report", str(report)]) == 0
    kernels = json.loads(report.read_text())["kernels"]
    assert not any("winograd" in (k.get("algorithm") or "") for k in kernels if k.get("layer") == "bn")


def test_layer_modules_plan_as_their_problem():
    """The single-layer module of every problem kind plans as the same signature (what
    taihu-tune checks before simulating candidates of a layer alone)."""
    problems = _problems()
    for layer in problems.layers:
        tune.check_layer_module(layer, problems.target)
    mm = tune.LayerResult(1, type(problems.layers[0].problem)("matmul", GemmShape(32, 16, 8, batch=3, maps=1), "mm"),
                          problem_signature(GemmShape(32, 16, 8, batch=3, maps=1)), ["mm"])
    tune.check_layer_module(mm, problems.target)


def test_errors_are_one_line(tmp_path, capsys):
    assert tune.main([SMALL_CNN, "--quiet"]) == 1
    assert "taihu-tune: error: -o RECORDS.json is required" in capsys.readouterr().err
    assert tune.main([SMALL_CNN, "-o", str(tmp_path / "r.json"), "--layers", "9"]) == 1
    err = capsys.readouterr().err
    assert "--layers: '9' is neither a problem number (1..4) nor a layer name" in err and "Traceback" not in err
    assert tune.main([str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "r.json")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_tuning_benchmark_on_a_tiny_layer(capsys):
    """benchmarks/tuning.py's pipeline (space, default / tuned / capped exhaustive sets, one
    simulation batch, the side-by-side rows) on a tiny conv layer, in-process."""
    from taihu.backends.model.conv import ConvShape
    from taihu.benchmarks import tuning as bench
    from taihu.tools.executor import Executor
    from taihu.tools.layers import conv_module

    s = ConvShape(1, 8, 8, 8, 16, 3, 3, pads=(1, 1, 1, 1), bias=True, relu=True, const_weights=True)
    case = bench._case("tiny B=1", "L1", conv_module(s).module, s.flops, False, top_k=2, cap=3)
    assert len(case.exhaustive_set) == 3 and case.capped and case.default in case.tuned_set
    with Executor(workers=0) as ex:
        bench.simulate_cases([case], ex, "conv")
    rows, summary = bench.conv_table([case])
    (row,) = rows
    assert row["space"] == len(case.cands) and row["default_cycles"] and row["tuned_cycles"] <= row["default_cycles"]
    assert set(case.tuned_set) <= set(case.exhaustive_set)  # top-2 + default within top-3 + default
    assert row["exhaustive_cycles"] <= row["tuned_cycles"] and row["loss_pct"] >= 0
    assert "tuned slower than default: 0" in summary[0]
    bench.render(rows, summary)
    assert "default vs tuned" in capsys.readouterr().out


def test_an_lstm_layer_is_tuned_and_its_record_applies(tmp_path):
    """taihu-tune searches an LSTM's schedule (its input projection's GEMM and hoist_r) on a
    single-layer module; taihu-lower{tuning=} follows the record."""
    from taihu.backends.model.lstm_plan import LstmShape
    from taihu.tools.importer import module_to_text
    from taihu.tools.layers import lstm_module

    layer = lstm_module(LstmShape(4, 3, 12, 20, "f32", True))
    src = tmp_path / "lstm.mlir"
    src.write_text(module_to_text(layer.module))
    out = tmp_path / "lstm.json"
    assert tune.main([str(src), "-o", str(out), "--quiet", "--top-k", "2", "--workers", "0"]) == 0
    (rec,) = read_records(out.read_text(), "lstm").values()
    assert rec.op == "lstm" and rec.schedule.algorithm == "lstm" and rec.sim_cycles is not None
    assert set(rec.schedule.as_dict()) >= {"hoist_r", "x.bm", "x.bn", "x.bk", "x.vec"}
    from xdsl.context import Context

    from taihu.dialects import graph
    from taihu.passes.conversion.graph_to_tile.schedule_attr import op_schedule
    from taihu.passes.graph_schedule import GraphSchedulePass

    module = lstm_module(LstmShape(4, 3, 12, 20, "f32", True)).module
    GraphSchedulePass(tuning=str(out)).apply(Context(), module)
    (op,) = [o for o in module.walk() if isinstance(o, graph.LSTMOp)]
    assert op_schedule(op) == rec.schedule


_MAPS = """
func.func @main(%a: tensor<1x8x16x16xf32> {graph.name = "a"}, %b: tensor<1x8x16x16xf32> {graph.name = "b"})
    -> (tensor<1x8x8x8xf32> {graph.name = "y"}) {
  %s = graph.add %a, %b : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %r = graph.relu %s : tensor<1x8x16x16xf32> -> tensor<1x8x16x16xf32>
  %p = graph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x16x16xf32> -> tensor<1x8x8x8xf32>
  func.return %p : tensor<1x8x8x8xf32>
}
"""


def test_memory_bound_ops_are_tuned_on_their_extracted_kernels(tmp_path, capsys):
    """An element-wise map (with the relu its kernel absorbs: no problem of its own) and a max pool
    are problems; each is simulated as its kernel's ops cut out of the network; the records name
    the simulated best (never slower than the model's default), graph-schedule{tuning=} follows
    them and taihu-run --tuning still matches the reference."""
    from taihu.passes.conversion.graph_to_tile.schedule_attr import op_schedule
    from taihu.passes.graph_schedule import GraphSchedulePass
    from taihu.passes.pipelines import default_context
    from taihu.tools.diagnostics import parse_mlir
    from taihu.tools.layers import ROOT_ATTR, module_inputs, root_op
    from taihu.tools.run import load_mlir

    src = tmp_path / "maps.mlir"
    src.write_text(_MAPS)
    module = load_mlir(str(src))
    tune.graph_stages(module, None)
    problems = tune.collect_problems(module)
    assert [(layer.kind, layer.layers) for layer in problems.layers] == [("map", ["s"]), ("window", ["p"])]
    ew = problems.layers[0]
    assert ew.text is not None and ew.text.count(ROOT_ATTR) == 1
    assert "graph.add" in ew.text and "graph.relu" in ew.text and "graph.max_pool" not in ew.text
    parsed = parse_mlir(default_context(), ew.text, "ew")  # the root is found again after a round trip
    assert root_op(parsed).name == "graph.add" and set(module_inputs(parsed)) == {"x0", "x1"}

    out = tmp_path / "maps.json"
    assert tune.main([str(src), "-o", str(out), "--quiet", "--workers", "0", "--top-k", "3"]) == 0
    recs = read_records(out.read_text(), str(out))
    assert {r.op for r in recs.values()} == {"map", "window"}
    for layer in problems.layers:
        rec = recs[(layer.signature, problems.target)]
        default = tune.default_candidate(problems.state, layer)
        job = tune.SimJob(layer.kind, layer.problem.shape, default.schedule, problems.target, "d", layer.text)
        assert rec.sim_cycles is not None and rec.sim_cycles <= tune.simulate_candidate(job).cycles

    applied = load_mlir(str(src))
    GraphSchedulePass(tuning=str(out)).apply(default_context(), applied)
    got = {o.results[0].name_hint: op_schedule(o) for o in applied.walk() if o.results and op_schedule(o) is not None}
    assert got == {layer.layers[0]: recs[(layer.signature, problems.target)].schedule for layer in problems.layers}
    capsys.readouterr()
    assert run_tool.main([str(src), "--tuning", str(out), "--check"]) == 0
    assert "MISMATCH" not in capsys.readouterr().out
