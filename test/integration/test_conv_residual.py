"""Residual sums fused into the producing convolution (graph_to_tile/conv.py + common.py
store_fused; model: backends/model/conv.py ``ConvShape.residual`` / ``fuses_residual``).

``relu(conv(x) + s)`` with ``s`` computed before the conv (ResNet's shortcut): when the chosen plan
stores the NCHW output from LDM (per-image / pointwise im2col GEMMs, the unfolded implicit
convolution without padded rows) and the model finds it cheaper, the conv kernel loads the
residual window at the block start and adds it before the store -- one kernel; otherwise
(Winograd, the batched im2col GEMM, padded unfold rows, a clipped C window that is cheaper as a
separate pass) the sum stays a ``graph.add`` map kernel. Each case checks which of the two the
lowering produced, then lowers to swsim, simulates, and compares with the graph reference
(rtol 1e-4, atol 1e-5).
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context

from taihu.backends.reference import run_module
from taihu.dialects import graph, tile
from taihu.passes.conversion.graph_to_tile import ConvertGraphToTilePass
from taihu.test.unit.graph_builder import G

RTOL, ATOL = 1e-4, 1e-5


def residual_graph(n, c, h, w, m, k, pads=(0, 0, 0, 0), strides=(1, 1), const_w=False, sum_op=False, seed=0):
    """``relu(conv(x0, W) + b + x1)`` (x1 the shortcut, shaped like the conv output); the sum as
    ``graph.add`` (conv output first) or a 2-input ``graph.sum`` (shortcut first)."""
    ho = (h + pads[0] + pads[2] - k) // strides[0] + 1
    wo = (w + pads[1] + pads[3] - k) // strides[1] + 1
    rng = np.random.default_rng(seed)
    shapes = [(n, c, h, w), (n, m, ho, wo)] + ([] if const_w else [(m, c, k, k)])
    g = G(*shapes)
    wt = (rng.standard_normal((m, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    wv = g.cst(wt, "w") if const_w else g.args[2]
    b = g.cst(rng.standard_normal(m).astype(np.float32), "b")
    y = g(graph.Conv2dOp(g.args[0], wv, b, strides=strides, pads=pads), "conv")
    s = g(graph.SumOp([g.args[1], y]), "sum") if sum_op else g(graph.AddOp(y, g.args[1]), "sum")
    return g, g(graph.ReluOp(s), "out")


# (id, graph kwargs, conv-algorithm, residual fused into the conv kernel)
CASES = [
    # pointwise: the GEMM reads x and stores y (clean N border)
    ("pointwise", dict(n=1, c=64, h=8, w=16, m=128, k=1), "auto", True),
    # per-image im2col GEMM, N = 49 in a 128 block: the residual window is clipped like the store
    ("im2col_clipped", dict(n=1, c=16, h=7, w=7, m=32, k=3, pads=(1, 1, 1, 1), sum_op=True), "auto", True),
    # unfolded implicit convolution, Wo = 16 (rows not padded)
    ("unfold", dict(n=1, c=64, h=8, w=16, m=128, k=3, pads=(1, 1, 1, 1), const_w=True), "implicit", True),
    # refused: Winograd (the output transform stores y)
    ("winograd", dict(n=1, c=16, h=6, w=6, m=16, k=3, pads=(1, 1, 1, 1)), "winograd", False),
    # refused: unfold with Wo = 7 padded to 8 (a relayout kernel writes y)
    ("unfold_padded", dict(n=1, c=64, h=7, w=7, m=64, k=3, pads=(1, 1, 1, 1), const_w=True), "implicit", False),
    # refused: batched im2col GEMM (N = 4, into (M, N, Ho*Wo) + relayout)
    ("batched", dict(n=4, c=16, h=8, w=8, m=32, k=3, pads=(1, 1, 1, 1)), "auto", False),
    # 1x1 to 7x7x256: the overlapping-distribution GEMM (N not split over the mesh: no clipped
    # SUMMA window) loads the residual rows of its CPE like its C rows
    ("overlap_7x7", dict(n=1, c=64, h=7, w=7, m=256, k=1, const_w=True), "auto", True),
]


def _kernels(module) -> list[tile.KernelOp]:
    return [o for o in module.walk() if isinstance(o, tile.KernelOp)]


@pytest.mark.parametrize("name,kw,algorithm,fused", CASES, ids=[c[0] for c in CASES])
def test_residual_fused_or_separate_and_simulated(name: str, kw: dict, algorithm: str, fused: bool) -> None:
    from taihu.backends.sim.runner import simulate
    from taihu.passes.pipelines import lower_to_swsim

    g, out = residual_graph(**kw)
    module = g.module(out)
    inputs = g.inputs(1)
    ref = run_module(module.clone(), inputs)

    tiled = module.clone()
    ConvertGraphToTilePass(conv_algorithm=algorithm).apply(Context(), tiled)
    ks = _kernels(tiled)
    conv = [k for k in ks if k.attributes["taihu.op"].data == "graph.conv2d" and "taihu.blocking" in k.attributes]
    assert len(conv) == 1, [k.kernel_name.data for k in ks]
    absorbed = [a.data for a in conv[0].attributes["taihu.fused"].data] if "taihu.fused" in conv[0].attributes else []
    separate = [k for k in ks if k.attributes["taihu.op"].data in ("graph.add", "graph.sum")]
    if fused:
        assert absorbed == [("graph.sum" if kw.get("sum_op") else "graph.add"), "graph.relu"], absorbed
        assert not separate
        assert "res" in [a.name_hint for a in conv[0].body.block.args]
    else:
        assert absorbed == [], absorbed
        assert len(separate) == 1 and [a.data for a in separate[0].attributes["taihu.fused"].data] == ["graph.relu"]

    lower_to_swsim(module, conv_algorithm=algorithm)
    got = simulate(module, inputs=inputs).outputs
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=f"{name}: {k}")


@pytest.mark.parametrize("c,hw,m", [(128, 28, 512), (512, 7, 2048)])
def test_model_tracks_the_simulated_kernels(c: int, hw: int, m: int) -> None:
    """ResNet-50 shortcut convs (timing only): every kernel of the chosen plan (the GEMM with the
    fused sum, or conv + the separate add kernel when the model keeps it apart) against the
    simulator, within 10 % or 2k cycles (the small 1x1 im2col copy; printed with pytest -s)."""
    import dataclasses

    from taihu.backends.model.conv import ConvShape, choose_conv
    from taihu.target.machine import default_machine
    from taihu.backends.sim.runner import simulate
    from taihu.passes.conversion.graph_to_tile import LDM_RESERVE
    from taihu.passes.pipelines import lower_to_swsim

    mach = default_machine()
    s = ConvShape(1, c, hw, hw, m, 1, 1, bias=True, relu=True, const_weights=True, residual=True)
    plan_mach = dataclasses.replace(mach, ldm_user_bytes=mach.ldm_user_bytes - LDM_RESERVE)
    plan = choose_conv(s, plan_mach, "auto", mem_budget=mach.ldm_user_bytes).plan
    g, out = residual_graph(1, c, hw, hw, m, 1, const_w=True)
    module = g.module(out)
    lower_to_swsim(module)
    rep = simulate(module, inputs=g.inputs(0), numerics=False).report
    names = {"conv": "gemm", "conv_im2col": "im2col", "sum": "residual"}
    sim = {names[k["name"]]: k["cycles"] for k in rep["kernels"]}
    assert sorted(sim) == sorted(k.name for k in plan.kernels)
    for k in plan.kernels:
        model = k.t_total * mach.f_clk_ghz * 1e9
        err = (model - sim[k.name]) / sim[k.name]
        print(f"{s.describe()} {k.name}: sim {sim[k.name]} cycles, model {model:.0f} ({100 * err:+.1f} %)")
        assert abs(model - sim[k.name]) < max(0.10 * sim[k.name], 2000), k.name
