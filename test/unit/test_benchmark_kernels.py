"""benchmarks/kernels.py (model-only parts): the GEMM rows, the 1024^3 sweep with the seed's
81-scheme LDM rule, the conv-layer shape round trip, and a sweep point's scheduled module."""

from __future__ import annotations

import json

import numpy as np

from taihu.backends.model.conv import ConvShape, GemmShape
from taihu.benchmarks import kernels as K


def test_gemm_and_sweep_rows_model_only(tmp_path) -> None:
    out = tmp_path / "k.json"
    assert K.main(["--only", "gemm,sweep", "--model-only", "--json", str(out)]) == 0
    rows = {r["case"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["DGEMM f64 1024^3"]["pct"] > 85.0 and rows["DGEMM f64 4096^3"]["pct"] > 90.0
    assert rows["SGEMM f32 1024^3"]["gflops"] > K.SEED_SGEMM_BEST
    seed_rule = [r for c, r in rows.items() if c.startswith("seed's LDM rule: 81 feasible")]
    assert seed_rule and "drops" in seed_rule[0]["note"]
    worst = [r for c, r in rows.items() if "worst of" in c][0]
    best = [r for c, r in rows.items() if "best of" in c][0]
    assert worst["gflops"] < best["gflops"]


def test_conv_shape_text_round_trip() -> None:
    s = ConvShape(1, 512, 14, 14, 512, 3, 3, (2, 2), (1, 1, 1, 1), bias=True, relu=True, const_weights=True)
    assert K._parse_shape(s.describe()) == s


def test_a_sweep_point_is_lowered_with_its_blocking() -> None:
    """The sweep simulates a blocking by annotating the matmul with its schedule, which the
    lowering follows (monkeypatching the planner stopped working once graph-schedule planned
    every op: the worst and the best blocking simulated alike)."""
    from taihu.dialects import tile
    from taihu.passes.pipelines import build_pipeline, run_pipeline

    plans = K.gemm_sweep(GemmShape(256, 256, 256, "f32"), K.PM, min_bk=32)
    for p in (plans[0], plans[-1]):
        module, _ = K._scheduled_matmul_module(256, np.float32, p)
        run_pipeline(build_pipeline(stop_after="convert-graph-to-tile"), module)
        (k,) = [o for o in module.walk() if isinstance(o, tile.KernelOp)]
        assert k.attributes["taihu.blocking"].data.startswith(f"bm={p.bm} bn={p.bn} bk={p.bk} ")
    assert (plans[0].bm, plans[0].bk) != (plans[-1].bm, plans[-1].bk)


def test_resnet_conv_layers_carry_the_fused_shortcut_sum() -> None:
    """ResNet-50's shortcut sums belong to the conv computed after the other operand (the
    lowering fuses them into its store): 7 distinct such layers at B = 1 (stage 1's projection
    and identity 1x1 64->256 coincide), all 1x1 with the relu after the sum; the per-layer
    simulation module feeds the shortcut as a second input."""
    from taihu.dialects import graph

    layers = K.conv_layers("resnet50", 1)
    res = [s for s in layers if s.residual]
    assert len(res) == 7 and all((s.kh, s.kw) == (1, 1) and s.relu for s in res)
    assert {(s.c, s.m, s.strides) for s in res} >= {(64, 256, (1, 1)), (1024, 2048, (2, 2)), (512, 2048, (1, 1))}
    mod, inputs = K._conv_module(res[0])
    assert inputs["x1"].shape == (1, 256, 56, 56)
    assert [type(op) for op in mod.walk() if isinstance(op, (graph.AddOp, graph.ReluOp))] == [graph.AddOp, graph.ReluOp]
