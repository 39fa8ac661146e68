"""Useful flops (issue 14 item 5): the graph ops' own arithmetic, carried by the kernels'
``taihu.useful_flops`` once per graph op and spread by the report over a layer's launches;
GFLOPS and % of peak of the tables use it, executed flops are a column of their own."""

from __future__ import annotations

import io

import numpy as np
import pytest

from taihu.backends.sim.report import split_proportionally
from taihu.backends.sim.runner import simulate
from taihu.dialects import graph, sw
from taihu.dialects.graph_flops import COUNTED_OPS, useful_flops
from taihu.passes.pipelines import lower_to_swsim
from taihu.tools.tables import layer_rows, print_layer_table

from .graph_builder import G

RNG = np.random.default_rng(0)


def _conv(n: int, c: int, hw: int, m: int, k: int, pad: int, bias: bool = True, group: int = 1):
    g = G((n, c, hw, hw))
    w = g.cst(RNG.standard_normal((m, c // group, k, k)).astype(np.float32), "w")
    b = g.cst(RNG.standard_normal(m).astype(np.float32), "b") if bias else None
    op = graph.Conv2dOp(g.args[0], w, b, pads=(pad,) * 4, group=group)
    return g, op


def test_every_graph_op_has_a_rule() -> None:
    missing = [o.name for o in graph.Graph.operations if o not in COUNTED_OPS]
    assert not missing, f"graph ops without a useful-flop rule (dialects/graph_flops.py): {missing}"


def test_conv_gemm_matmul_rules() -> None:
    _g, conv = _conv(2, 16, 12, 32, 3, 1)
    out = 2 * 32 * 12 * 12
    assert useful_flops(conv) == 2 * out * 16 * 9 + out  # 2 per MAC, + the bias add
    _g, grouped = _conv(1, 16, 8, 32, 3, 1, bias=False, group=4)
    assert useful_flops(grouped) == 2 * (32 * 8 * 8) * 4 * 9  # C/group = 4 inputs per output
    g = G((1, 9216))
    wt = g.cst(RNG.standard_normal((4096, 9216)).astype(np.float32), "w")
    bias = g.cst(RNG.standard_normal(4096).astype(np.float32), "b")
    fc6 = graph.GemmOp(g.args[0], wt, bias, trans_b=True)
    assert useful_flops(fc6) == 2 * 9216 * 4096 + 4096  # AlexNet's FC6 at B = 1: 75.5 MFLOP
    scaled = graph.GemmOp(g.args[0], wt, bias, alpha=0.5, beta=2.0, trans_b=True)
    assert useful_flops(scaled) == 2 * 9216 * 4096 + 3 * 4096
    g = G((3, 5, 7), (7, 4))
    assert useful_flops(graph.MatMulOp(*g.args)) == 2 * 7 * (3 * 5 * 4)


def test_map_and_pool_rules() -> None:
    g = G((1, 8, 10, 10), (1, 8, 10, 10), (1, 8, 1, 1))
    x, y, s = g.args
    n = 8 * 10 * 10
    assert useful_flops(graph.ReluOp(x)) == n
    assert useful_flops(graph.SigmoidOp(x)) == n
    assert useful_flops(graph.AddOp(x, s)) == n  # broadcast: one per output element
    assert useful_flops(graph.SumOp([x, y, s])) == 2 * n
    assert useful_flops(graph.MaxPoolOp(x, kernel_shape=(3, 3), strides=(2, 2))) == 9 * (8 * 4 * 4)
    assert useful_flops(graph.AvgPoolOp(x, kernel_shape=(2, 2), strides=(2, 2))) == 4 * (8 * 5 * 5)
    assert useful_flops(graph.GlobalAvgPoolOp(x)) == 100 * 8
    assert useful_flops(graph.LRNOp(x, size=5)) == 13 * n
    assert useful_flops(graph.SoftmaxOp(x, axis=1)) == 3 * n
    assert useful_flops(graph.ReshapeOp(x, (8, 100))) == 0
    assert useful_flops(graph.DropoutOp(x)) == 0
    assert useful_flops(sw.JoinOp.build()) == 0  # not a graph op: no arithmetic of the graph


def test_lstm_rule() -> None:
    seq, batch, inp, h = 3, 2, 5, 4
    g = G((seq, batch, inp))
    w = g.cst(RNG.standard_normal((1, 4 * h, inp)).astype(np.float32), "w")
    r = g.cst(RNG.standard_normal((1, 4 * h, h)).astype(np.float32), "r")
    b = g.cst(RNG.standard_normal((1, 8 * h)).astype(np.float32), "b")
    assert useful_flops(graph.LSTMOp(g.args[0], w, r, b, hidden_size=h)) == \
        seq * batch * (8 * h * (inp + h) + 9 * h + 8 * h)


def _kernel_flops(module) -> dict[str, int | None]:
    out = {}
    for op in module.walk():
        if isinstance(op, sw.KernelOp):
            a = op.attributes.get("taihu.useful_flops")
            out[op.sym_name.data] = a.value.data if a is not None else None
    return out


@pytest.mark.parametrize("algorithm", ["im2col", "winograd", "implicit"])
def test_conv_layer_counts_the_direct_convolution_once(algorithm: str) -> None:
    """Whatever the algorithm and however many kernels, the layer carries the direct conv's
    flops once (+ bias, + the absorbed ReLU); the report spreads them by executed flops."""
    g, conv = _conv(1, 64, 14, 64, 3, 1)
    y = g(conv, "c")
    mod = g.module(g(graph.ReluOp(y), "r"))
    want = useful_flops(conv) + 64 * 14 * 14
    lower_to_swsim(mod, **{"conv-algorithm": algorithm})
    carried = _kernel_flops(mod)
    assert sum(v for v in carried.values() if v) == want, carried
    assert all(v is not None for v in carried.values())
    rep = simulate(mod, numerics=False).report
    ks = rep["kernels"]
    assert sum(k["useful_flops"] for k in ks) == rep["useful_flops"] == want
    for k in ks:  # no executed flops (im2col, relayout) -> no useful share
        if k["flops"] == 0:
            assert k["useful_flops"] == 0
    assert [la["useful_flops"] for la in rep["layers"]] == [want]
    if algorithm == "winograd":  # fewer multiplies executed than the direct convolution
        assert rep["flops"] < want


def test_gemm_padded_rows_count_the_real_product() -> None:
    """A batch-1 FC layer is padded to 32 rows on the mesh: the executed flops are ~32x the
    useful ones; useful_flops, useful GFLOPS and the table's GFLOPS are the real product's."""
    g = G((1, 512))
    wt = g.cst(RNG.standard_normal((256, 512)).astype(np.float32), "w")
    b = g.cst(RNG.standard_normal(256).astype(np.float32), "b")
    mod = g.module(g(graph.GemmOp(g.args[0], wt, b, trans_b=True), "fc"))
    lower_to_swsim(mod)
    rep = simulate(mod, numerics=False).report
    want = 2 * 512 * 256 + 256
    assert rep["useful_flops"] == want
    assert rep["flops"] >= 16 * want  # padding rows executed
    k = rep["kernels"][0]
    secs = k["cycles"] / (rep["f_clk_ghz"] * 1e9)
    assert k["useful_gflops"] == pytest.approx(want / secs / 1e9)
    assert k["useful_percent_of_peak"] == pytest.approx(100 * k["useful_gflops"] / rep["peak_gflops"])
    assert k["useful_percent_of_peak"] < k["percent_of_peak"] / 16
    row = layer_rows(rep)[0]
    assert row["useful_flops"] == want and row["flops"] == rep["flops"]
    assert row["gflops"] == pytest.approx(k["useful_gflops"])
    assert row["executed_gflops"] == pytest.approx(k["gflops"])


def test_split_proportionally() -> None:
    assert split_proportionally(10, [1, 1, 2]) == [3, 2, 5]  # 2.5, 2.5, 5: the first ties win
    parts = split_proportionally(1001, [3, 0, 7, 5])
    assert sum(parts) == 1001 and parts[1] == 0
    assert all(abs(p - 1001 * w / 15) < 1 for p, w in zip(parts, [3, 0, 7, 5]))
    assert split_proportionally(7, [0, 0]) == [4, 3]  # no weight: equal parts
    assert split_proportionally(5, []) == []


def _entry(name, layer, cycles, flops, useful, launch=2900):
    return {"name": name, "layer": layer, "op": "graph.conv2d", "algorithm": "im2col", "shape": None,
            "cycles": cycles, "launch_cycles": launch, "flops": flops, "useful_flops": useful,
            "dma_bytes": 1000, "t_compute": cycles, "t_dma": 10, "rlc_wait": 0,
            "breakdown": {"compute": cycles, "rlc": 0, "dma": 0, "idle": 0}}


def test_layer_table_uses_useful_flops_and_shows_executed_and_launch() -> None:
    f = 1.45e9
    kernels = [_entry("c_im2col", "c", 14500, 0, 0), _entry("c", "c", 145000, 64_000_000, 29_000_000),
               _entry("fc", "fc", 145000, 29_000_000, 1_500_000)]
    total = sum(k["cycles"] + k["launch_cycles"] for k in kernels)
    rep = {"machine": "sw26010.toml", "f_clk_ghz": 1.45, "peak_gflops": 742.4, "n_cpes": 64,
           "total_cycles": total, "seconds": total / f, "flops": 93_000_000, "kernels": kernels}
    rows = {r["layer"]: r for r in layer_rows(rep)}
    assert rows["c"]["useful_flops"] == 29_000_000 and rows["c"]["flops"] == 64_000_000
    assert rows["c"]["launch_cycles"] == 5800
    assert rows["c"]["gflops"] == pytest.approx(29_000_000 / (159500 / f) / 1e9)
    assert rows["fc"]["gflops"] == pytest.approx(15.0)  # useful: 1.5 MFLOP in 100 us
    assert rows["fc"]["executed_gflops"] == pytest.approx(290.0)
    out = io.StringIO()
    print_layer_table(rep, "t", out)
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["layer", "algorithm", "shape", "cycles", "launch", "ms", "MFLOP", "exec",
                                "MFLOP", "GFLOPS", "%", "peak", "DMA", "GB/s", "bound"]
    fc = lines[3].split()
    assert fc[:6] == ["fc", "im2col", "-", "145000", "2900", "0.100"]
    assert fc[6:10] == ["1.5", "29.0", "15.0", "2.0"]  # MFLOP, exec MFLOP, GFLOPS, % peak
    tot = lines[4].split()
    assert tot[5:8] == [str(total), "8700", f"{total / f * 1e3:.3f}"]
    assert tot[8:10] == ["30.5", "93.0"]
    assert tot[10] == f"{30.5e6 / (total / f) / 1e9:.1f}"  # useful GFLOPS over the whole run


def test_roofline_plots_useful_flops() -> None:
    """The roofline's points are (useful flop / DMA byte, useful GFLOPS); kernels without
    useful flops (im2col) are left out and counted in the legend."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from taihu.tools.plots import layer_breakdown, roofline

    f = 1.45e9
    kernels = [_entry("c_im2col", "c", 14500, 0, 0), _entry("fc", "fc", 145000, 29_000_000, 1_500_000)]
    for k in kernels:
        k["bound"] = "DMA"
        k["gflops"] = k["flops"] / (k["cycles"] / f) / 1e9
        k["useful_gflops"] = k["useful_flops"] / (k["cycles"] / f) / 1e9
    total = sum(k["cycles"] + k["launch_cycles"] for k in kernels)
    rep = {"machine": "sw26010.toml", "f_clk_ghz": 1.45, "peak_gflops": 742.4, "peak_dma_gbps": 30.94,
           "n_cpes": 64, "total_cycles": total, "seconds": total / f, "flops": 29_000_000, "kernels": kernels}
    fig = roofline(rep)
    try:
        ax = fig.axes[0]
        (xy,) = [c.get_offsets() for c in ax.collections if len(c.get_offsets())]
        assert xy.tolist() == [[1_500_000 / 1000, pytest.approx(15.0)]]
        assert "1 kernel(s) without useful flops not shown" in [t.get_text() for t in ax.get_legend().get_texts()]
    finally:
        plt.close(fig)
    fig = layer_breakdown(rep)
    try:
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert labels[0] == "launch (spawn/join)"
    finally:
        plt.close(fig)
