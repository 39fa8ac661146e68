"""Useful flops on a whole network (issue 14 item 5): AlexNet at batch 1, whose FC layers run as
32-row padded GEMMs on the mesh, counts their real products (FC6: 75.5 MFLOP), not the 2.4 GFLOP
the micro-kernels execute; the network's useful flops are the sum of its graph ops' counts."""

from __future__ import annotations

import pytest
from xdsl.dialects import func

from taihu.dialects import graph, sw
from taihu.dialects.graph_flops import useful_flops
from taihu.passes.pipelines import lower_to_swsim
from taihu.tools import run as run_tool


def _alexnet():
    return run_tool.load_onnx(run_tool.example_path("alexnet")).module


def _graph_flops(module) -> tuple[int, list[int]]:
    """(every graph op's useful flops summed, the graph.gemm ops' counts in order)."""
    total, gemms = 0, []
    for op in module.walk():
        if isinstance(op.parent_op(), func.FuncOp) and isinstance(op, graph.GraphOperation):
            f = useful_flops(op)
            assert f is not None, op.name
            total += f
            if isinstance(op, graph.GemmOp):
                gemms.append(f)
    return total, gemms


def test_alexnet_b1_kernels_carry_the_graph_flops_once() -> None:
    mod = _alexnet()
    total, gemms = _graph_flops(mod)
    # FC6 9216 -> 4096, FC7 4096 -> 4096, FC8 4096 -> 1000 at batch 1, with their biases
    assert gemms == [2 * 9216 * 4096 + 4096, 2 * 4096 * 4096 + 4096, 2 * 4096 * 1000 + 1000]
    lower_to_swsim(mod)
    kernels = {op.sym_name.data: op for op in mod.walk() if isinstance(op, sw.KernelOp)}
    carried: dict[str, int] = {}
    for spawn in (op for op in mod.walk() if isinstance(op, sw.SpawnOp)):
        # a launch of a shared kernel (dedup-kernels) carries its own taihu.* attributes
        attrs = spawn.attributes if "taihu.name" in spawn.attributes else \
            kernels[spawn.kernel.root_reference.data].attributes
        layer = attrs["taihu.layer"].data
        carried[layer] = carried.get(layer, 0) + attrs["taihu.useful_flops"].value.data
    assert sum(carried.values()) == total  # graph-fold passes keep every arithmetic op here
    fc6 = [v for k, v in carried.items() if v >= gemms[0] and v <= gemms[0] + 4096]
    assert fc6 == [gemms[0] + 4096]  # the GEMM and the ReLU absorbed into its store: 75.5 MFLOP


@pytest.mark.slow
def test_alexnet_b1_report_shows_real_fc_flops() -> None:
    """Simulated (timing only, ~1 min): FC6's layer row has 75.5 useful MFLOP beside ~2416
    executed and a useful % of peak of a few percent (DMA-bound on its 151 MB of weights)."""
    from taihu.backends.sim.runner import simulate
    from taihu.tools.tables import layer_rows

    mod = _alexnet()
    total, gemms = _graph_flops(mod)
    lower_to_swsim(mod)
    rep = simulate(mod, numerics=False).report
    assert rep["useful_flops"] == total
    fc6 = next(r for r in layer_rows(rep) if r["useful_flops"] == gemms[0] + 4096)
    assert fc6["flops"] > 30 * fc6["useful_flops"]
    assert fc6["percent_of_peak"] < 5.0 < 100.0 * fc6["executed_gflops"] / rep["peak_gflops"]
    assert rep["launch_cycles"] == rep["launches"] * 2900
