"""Kernel benchmark of the compiler's GEMM and convolution lowering (issue 4).

Usage: ``python benchmarks/kernels.py [--model-only] [--sim-budget SECONDS]
[--only gemm,sweep,conv,membound] [--json FILE] [--sim-max-n 4096] [--sim-sweep]
[--sim-conv resnet50:1[:L1,L2..]] [--sim-report r.json]``

One row per case: GFLOPS, % of the 742.4 GFLOPS core-group peak (004 L453), T_DMA / T_compute /
T_overlap (eq 3-3; ms), DMA efficiency (useful / moved bytes, 128-B transactions) and the
source of the numbers:

* ``model``: the analytic model of the kernels the lowering emits
  (:mod:`taihu.backends.model.conv`: eq 3-2 DMA with transaction waste, the structural mesh-GEMM
  primitive model, fp32<->fp64 conversions, double-buffered overlap, 004 L597/L876/L1566), with
  the plan the compiler itself chooses (``convert-graph-to-tile`` calls the same planner);
* ``sim``: the graph lowered by ``taihu-lower`` and run on the simulator (report of
  ``backends/sim``), for the cases cheap enough to simulate (memory-bound operators at batch 1,
  GEMMs up to 1024^3; ``--model-only`` disables it); when the simulation fails the row falls
  back to the model and says why.

Cases:

* DGEMM f64 1024^3 and 4096^3, SGEMM f32 1024^3 (seed: swGEMM 363.59 GFLOPS fp32 on hardware,
  004 L869) with the compiler's own blocking;
* the 1024^3 blocking sweep: every feasible (B_M, B_N, B_K) with B_K >= 32 (the seed's 81
  schemes, 004 L869: worst 66.83, best 363.59 GFLOPS) -- worst / median / best and the
  compiler's pick;
* every distinct convolution layer of ResNet-50 and VGG-19 (shapes from the ONNX models that
  ship with the ``onnx`` package) at batch 1 and 32: the chosen algorithm and its GFLOPS
  (Winograd: "effective", direct-convolution flops, 004 L1268); the mean over layers with >= 64
  input and output channels (target >= 80 % of peak);
* memory-bound operators (relu, add, max-pool 3x3/2, global average pool on ResNet-50 shapes,
  batch 1) as % of the 30.94 GB/s DMA roof (004 L597): bytes the operator must move / time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from taihu.backends.model.conv import (
    ConvShape,
    GemmShape,
    choose_conv,
    gemm_sweep,
    memory_bound_cost,
    plan_gemm,
)
from taihu.backends.sim.runner import simulate
from taihu.dialects import graph
from taihu.passes.pipelines import lower_to_swsim
from taihu.target.machine import default_machine
from taihu.tools.layers import GraphBuilder as G
from taihu.tools.layers import conv_module

M = default_machine()


def _plan_machine():
    """The machine the lowering plans with: ``ldm_user_bytes`` minus convert-graph-to-tile's
    LDM_RESERVE (what :func:`~taihu.passes.conversion.graph_to_tile.gemm.plan_machine` hands
    the planners), so the rows show the plans the compiler really emits."""
    import dataclasses

    from taihu.passes.conversion.graph_to_tile import LDM_RESERVE

    return dataclasses.replace(M, ldm_user_bytes=M.ldm_user_bytes - min(LDM_RESERVE, M.ldm_user_bytes // 16))


#: planning machine (the GEMM plans) -- the memory primitives (im2col, Winograd transforms) get
#: all of M's LDM in tile-to-loop: ``choose_conv(..., mem_budget=M.ldm_user_bytes)``
PM = _plan_machine()
PEAK = M.peak_cg_gflops  # 742.4 GFLOPS (004 L453)
ROOF = M.peak_bw_cg  # 30.94 GB/s (004 L597)
SEED_SGEMM_BEST = 363.59  # GFLOPS, 004 L869 (fp32, hardware)
SEED_SGEMM_WORST = 66.83  # GFLOPS, 004 L869


@dataclass
class Row:
    """One benchmark case (times in ms)."""

    group: str
    case: str
    source: str
    gflops: float | None = None
    t_total: float = 0.0
    t_dma: float = 0.0
    t_compute: float = 0.0
    t_overlap: float = 0.0
    dma_eff: float | None = None
    gbps: float | None = None
    note: str = ""
    channels_ok: bool = True

    @property
    def pct(self) -> float | None:
        return None if self.gflops is None else 100.0 * self.gflops / PEAK


def _from_cost(group: str, case: str, cost, note: str = "") -> Row:
    return Row(group, case, "model", cost.gflops(), cost.t_total * 1e3, cost.t_dma * 1e3, cost.t_compute * 1e3,
               cost.t_overlap * 1e3, cost.dma_efficiency, note=note)


# --------------------------------------------------------------------------------------------
# Simulation (optional)
# --------------------------------------------------------------------------------------------


def simulate_graph(build: Callable[[], tuple[object, dict]], budget: float, **options) -> tuple[dict | None, str]:
    """Lower ``build()``'s graph module with ``taihu-lower`` and simulate it; returns (report,
    "") or (None, reason). Runs in-process; ``budget`` is advisory (checked after lowering)."""
    module, inputs = build()
    t0 = time.time()
    try:
        lower_to_swsim(module, **options)
        if time.time() - t0 > budget:
            return None, "lowering exceeded the simulation budget"
        try:
            res = simulate(module, inputs=inputs, numerics=False)  # timing only (same report)
        except OverflowError:  # lockstep back-pressure issue: the per-CPE interpreter (identical reports)
            res = simulate(module, inputs=inputs, numerics=False, lockstep=False)
    except Exception as e:  # noqa: BLE001 - the row falls back to the model and says why
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return None, f"sim failed ({type(e).__name__}: {msg[:80]})"
    return res.report, ""


def _row_from_report(group: str, case: str, rep: dict, flops: int, note: str = "") -> Row:
    f = M.f_clk_ghz * 1e9
    ks = rep["kernels"]
    t = sum(k["cycles"] for k in ks) / f
    t_dma = sum(k["t_dma"] for k in ks) / f
    t_comp = sum(k["t_compute"] for k in ks) / f
    t_ovl = sum(k["t_overlap"] for k in ks) / f
    moved = sum(k["dma_bytes"] + k["dma_waste_bytes"] for k in ks)
    useful = sum(k["dma_bytes"] for k in ks)
    return Row(group, case, "sim", flops / t / 1e9 if t else None, t * 1e3, t_dma * 1e3, t_comp * 1e3, t_ovl * 1e3,
               useful / moved if moved else None, note=note)


def _matmul_module(n: int, dtype):
    g = G((n, n), (n, n), dtype=dtype)
    out = g(graph.MatMulOp(*g.args))
    return g.module(out), g.inputs(0)


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


def gemm_rows(sim: bool, budget: float, sim_max_n: int = 1024) -> list[Row]:
    rows = []
    for n, dt in ((1024, "f64"), (4096, "f64"), (1024, "f32")):
        plan = plan_gemm(GemmShape(n, n, n, dt), PM)
        note = f"bm={plan.bm} bn={plan.bn} bk={plan.bk} scheme {plan.scheme} (vec {plan.vec})"
        if dt == "f32":
            note += f"; seed swGEMM {SEED_SGEMM_BEST} GFLOPS (fp32, hardware, 004 L869)"
        case = f"{'DGEMM' if dt == 'f64' else 'SGEMM'} {dt} {n}^3"
        row = _from_cost("gemm", case, plan.cost, note)
        if sim and n <= sim_max_n:
            rep, why = simulate_graph(lambda n=n, dt=dt: _matmul_module(n, np.float64 if dt == "f64" else np.float32), budget)
            if rep is not None:
                row = _row_from_report("gemm", case, rep, 2 * n**3, note)
                if row.gflops:
                    err = 100 * (plan.cost.gflops() - row.gflops) / row.gflops
                    row.note += f"; model {plan.cost.gflops():.1f} GFLOPS ({err:+.1f} % vs sim)"
            else:
                row.note += f"; {why}"
        rows.append(row)
    return rows


def _scheduled_matmul_module(n: int, dtype, plan) -> tuple[object, dict]:
    """:func:`_matmul_module` with the matmul annotated with ``plan``'s schedule
    (``#tile.schedule<"gemm" {...}>``: ``convert-graph-to-tile`` follows it), for simulating one
    point of the sweep."""
    from taihu.backends.model.schedule import gemm_schedule_of
    from taihu.passes.conversion.graph_to_tile.schedules import SCHEDULE_ATTR, to_attr

    module, inputs = _matmul_module(n, dtype)
    op = next(o for o in module.walk() if isinstance(o, graph.MatMulOp))
    op.attributes[SCHEDULE_ATTR] = to_attr(gemm_schedule_of(plan))
    return module, inputs


def sweep_rows(sim: bool = False, budget: float = 300.0) -> list[Row]:
    """The 1024^3 f32 blocking sweep (004 L869, Fig 4.6): every blocking the lowering can emit
    (vec n, bk >= 32, LDM budget of the pass) with its modelled GFLOPS; the seed's LDM rule (C
    converted to fp32 in place, :func:`taihu.backends.model.gemm_blocking.ldm_footprint`) admits
    exactly the seed's 81 schemes, the lowering (a separate fp32 staging tile for C: tile.map
    convert has distinct input and output tiles) fewer -- the ones it drops are listed. ``sim``:
    the worst and the best blocking also on the simulator."""
    from taihu.backends.model.gemm_blocking import GemmProblem, enumerate_costs

    plans = gemm_sweep(GemmShape(1024, 1024, 1024, "f32"), PM, min_bk=32)
    g = sorted(p.cost.gflops() for p in plans)
    best = max(plans, key=lambda p: p.cost.gflops())
    worst = min(plans, key=lambda p: p.cost.gflops())
    pick = plan_gemm(GemmShape(1024, 1024, 1024, "f32"), PM, vec="n")
    seed_rule = [c for c in enumerate_costs(GemmProblem(1024, 1024, 1024, "f32"), M) if c.blocking.bk >= 32]
    emitted = {(p.bm, p.bn, p.bk) for p in plans}
    dropped = [c.blocking for c in seed_rule if (c.blocking.bm, c.blocking.bn, c.blocking.bk) not in emitted]
    sg = sorted(c.gflops for c in seed_rule)
    rows = [
        _from_cost("sweep", f"1024^3 f32 worst of {len(plans)} blockings", worst.cost,
                   f"({worst.bm},{worst.bn},{worst.bk}); seed worst {SEED_SGEMM_WORST} GFLOPS of 81"),
        Row("sweep", f"1024^3 f32 median of {len(plans)}", "model", statistics.median(g)),
        _from_cost("sweep", f"1024^3 f32 best of {len(plans)} blockings", best.cost,
                   f"({best.bm},{best.bn},{best.bk}); seed best {SEED_SGEMM_BEST} GFLOPS of 81"),
        _from_cost("sweep", "1024^3 f32 compiler's pick (vec n)", pick.cost,
                   f"({pick.bm},{pick.bn},{pick.bk}); {100 * pick.cost.gflops() / best.cost.gflops():.1f} % of the sweep's best"),
        Row("sweep", f"seed's LDM rule: {len(seed_rule)} feasible", "model", sg[-1],
            note=f"C converted to fp32 in place (gemm_blocking model: worst {sg[0]:.1f}, median {statistics.median(sg):.1f}, "
                 f"best {sg[-1]:.1f}); the lowering's fp32 C staging tile drops {len(dropped)}: "
                 + ", ".join(f"({b.bm},{b.bn},{b.bk})" for b in dropped)),
    ]
    if sim:
        for label, p in (("worst", worst), ("best", best)):
            rep, why = simulate_graph(lambda p=p: _scheduled_matmul_module(1024, np.float32, p), budget)
            case = f"1024^3 f32 {label} ({p.bm},{p.bn},{p.bk})"
            if rep is None:
                rows.append(Row("sweep", case, "sim", note=why))
                continue
            r = _row_from_report("sweep", case, rep, 2 * 1024**3)
            err = 100 * (p.cost.gflops() - r.gflops) / r.gflops if r.gflops else 0.0
            seed = SEED_SGEMM_WORST if label == "worst" else SEED_SGEMM_BEST
            r.note = f"model {p.cost.gflops():.1f} GFLOPS ({err:+.1f} % vs sim); seed {label} {seed} GFLOPS (hardware)"
            rows.append(r)
    return rows


def _onnx_light(name: str) -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx")


def conv_layers(model: str, batch: int) -> list[ConvShape]:
    """Distinct Conv layers of an ONNX model (inference shapes, weights constant, bias after
    batch-norm folding, relu when a Relu follows directly or after a BatchNormalization;
    ``residual`` when the output (after its BatchNormalization) is summed with an operand
    computed before the conv -- ResNet's shortcut, which the lowering fuses into that conv's
    store (graph_to_tile ``absorb_elementwise_consumers``) -- then relu when a Relu follows
    the sum)."""
    import onnx
    from onnx import shape_inference

    m = onnx.load(_onnx_light(model), load_external_data=False)
    mi = shape_inference.infer_shapes(m)
    shapes = {}
    for vi in list(mi.graph.value_info) + list(mi.graph.input) + list(mi.graph.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    for init in m.graph.initializer:
        shapes[init.name] = list(init.dims)
    consumers: dict[str, list] = {}
    for nd in m.graph.node:
        for i in nd.input:
            consumers.setdefault(i, []).append(nd)

    producer = {o: i for i, nd in enumerate(m.graph.node) for o in nd.output}

    def after_bn(out: str) -> tuple[str, list]:
        nxt = consumers.get(out, [])
        if len(nxt) == 1 and nxt[0].op_type == "BatchNormalization":
            out = nxt[0].output[0]
            nxt = consumers.get(out, [])
        return out, nxt

    def follows_relu(out: str) -> bool:
        _, nxt = after_bn(out)
        return len(nxt) == 1 and nxt[0].op_type == "Relu"

    def residual_sum(i: int, out: str) -> tuple[bool, bool]:
        """(summed with an earlier operand, a Relu follows the sum) for conv node i."""
        out, nxt = after_bn(out)
        if len(nxt) != 1 or nxt[0].op_type not in ("Add", "Sum") or len(nxt[0].input) != 2:
            return False, False
        other = [x for x in nxt[0].input if x != out]
        if len(other) != 1 or producer.get(other[0], -1) >= i:
            return False, False
        after = consumers.get(nxt[0].output[0], [])
        return True, len(after) == 1 and after[0].op_type == "Relu"

    seen, out = set(), []
    for i, nd in enumerate(m.graph.node):
        if nd.op_type != "Conv":
            continue
        residual, sum_relu = residual_sum(i, nd.output[0])
        a = {x.name: (list(x.ints) if x.ints else x.i) for x in nd.attribute}
        xs, ws = shapes[nd.input[0]], shapes[nd.input[1]]
        s = ConvShape(
            batch, xs[1], xs[2], xs[3], ws[0], ws[2], ws[3],
            strides=tuple(a.get("strides", [1, 1])), pads=tuple(a.get("pads", [0, 0, 0, 0])),
            dilations=tuple(a.get("dilations", [1, 1])), group=int(a.get("group", 1)),
            bias=True, relu=follows_relu(nd.output[0]) or sum_relu, const_weights=True, residual=residual,
        )
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _case(s: ConvShape) -> str:
    """A layer's table label: its shape, ``+res`` when the shortcut sum is part of it."""
    return s.describe() + (" +res" if s.residual else "")


def conv_rows() -> tuple[list[Row], list[str]]:
    rows, summary = [], []
    for model in ("resnet50", "vgg19"):
        for batch in (1, 32):
            layers = conv_layers(model, batch)
            effs = []
            for s in layers:
                ch = choose_conv(s, PM, mem_budget=M.ldm_user_bytes)
                p = ch.plan
                extra = ""
                if p.algorithm == "implicit" and p.variant == "unfold":
                    extra = f" bm={p.bm} bn={p.bn} bk={p.bk} cb={p.cb} vec {p.vec} (unfold)"
                elif p.algorithm == "implicit":
                    extra = f" bm={p.bm} bn={p.bn} bk={p.bk} b_B={p.b_b} b_Ro={p.b_ro} ({p.variant})"
                elif p.algorithm == "im2col":
                    g = p.gemm
                    extra = f" gemm {g.bm}x{g.bn}x{g.bk}" + (" pointwise" if p.pointwise else "") + (" batched" if p.batched else "")
                else:
                    extra = f" P={p.p} gemm {p.gemm.bm}x{p.gemm.bn}x{p.gemm.bk}"
                alts = ", ".join(
                    f"{a} {c.cost.gflops():.0f}" for a, c in ch.candidates.items() if not isinstance(c, str) and a != p.algorithm
                )
                r = _from_cost(f"conv {model} B={batch}", _case(s), p.cost,
                               f"{p.algorithm}{extra}" + (f" | {alts}" if alts else ""))
                r.channels_ok = min(s.c, s.m) >= 64
                rows.append(r)
                if r.channels_ok:
                    effs.append(r.pct)
            summary.append(
                f"{model} B={batch}: {len(layers)} distinct conv layers, mean {statistics.mean(effs):.1f} % of peak over "
                f"the {len(effs)} with >= 64 channels (target >= 80 %), min {min(effs):.1f} %, max {max(effs):.1f} %"
            )
    return rows, summary


def _membound_module(kind: str):
    if kind == "relu":
        g = G((1, 64, 112, 112))
        out = g(graph.ReluOp(*g.args))
    elif kind == "add":
        g = G((1, 256, 56, 56), (1, 256, 56, 56))
        out = g(graph.AddOp(*g.args))
    elif kind == "max_pool":
        g = G((1, 64, 112, 112))
        out = g(graph.MaxPoolOp(g.args[0], kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)))
    else:
        g = G((1, 2048, 7, 7))
        out = g(graph.GlobalAvgPoolOp(g.args[0]))
    return g.module(out), g.inputs(0)


MEMBOUND = [
    # (kind, case, input elements, output elements)
    ("relu", "relu 1x64x112x112", [64 * 112 * 112], 64 * 112 * 112),
    ("add", "add 1x256x56x56", [256 * 56 * 56] * 2, 256 * 56 * 56),
    ("max_pool", "max_pool 3x3/2 p1 1x64x112x112", [64 * 112 * 112], 64 * 56 * 56),
    ("gap", "global_avg_pool 1x2048x7x7", [2048 * 49], 2048),
]


def membound_rows(sim: bool, budget: float) -> list[Row]:
    """Memory-bound operators on ResNet-50 shapes (batch 1): the bytes the operator must move
    (inputs + output, f32) over its time, vs the 30.94 GB/s roof (004 L597). ``sim``: the
    kernels of convert-graph-to-tile (maps.py) through the whole pipeline on the simulator;
    model (fallback): per-CPE contiguous 8-KB chunks, eq 3-1 per DMA, maps hidden behind the
    double-buffered DMA."""
    rows = []
    for kind, name, ins, out in MEMBOUND:
        e = 4
        need = (sum(ins) + out) * e
        note = ""
        if sim:
            rep, why = simulate_graph(lambda kind=kind: _membound_module(kind), budget)
            if rep is not None:
                r = _row_from_report("membound", name, rep, 0)
                r.gflops = None
                r.gbps = need / (r.t_total / 1e3) / 1e9
                r.note = f"{100 * r.gbps / ROOF:.1f} % of the {ROOF} GB/s roof; kernels: " + ", ".join(
                    f"{k['name']} ({k['algorithm']})" for k in rep["kernels"])
                rows.append(r)
                continue
            note = f"; {why}"
        chunk = 2048  # elements per CPE per DMA (one 8 KB run)
        blocks = [(n / chunk, chunk * e, False) for n in ins] + [(out / chunk, chunk * e, True)]
        dmas = sum(math.ceil(n / chunk / 64) for n in ins) + math.ceil(out / chunk / 64)
        cost = memory_bound_cost(name, blocks, dmas, M, compute_cycles_per_cpe=0.0)
        r = Row("membound", name, "model", None, cost.t_total * 1e3, cost.t_dma * 1e3, cost.t_compute * 1e3,
                cost.t_overlap * 1e3, cost.dma_efficiency, need / cost.t_total / 1e9,
                note=f"{100 * need / cost.t_total / 1e9 / ROOF:.1f} % of the {ROOF} GB/s roof" + note)
        rows.append(r)
    return rows


def _model_vs_sim(s: ConvShape, sim_gflops: float | None) -> tuple[float, str]:
    """(relative error of the model's GFLOPS vs the simulated ones, note text) for layer ``s``
    with the algorithm the model picks."""
    ch = choose_conv(s, PM, mem_budget=M.ldm_user_bytes)
    err = (ch.gflops - sim_gflops) / sim_gflops if sim_gflops else 0.0
    return err, f"model {ch.algorithm} {ch.gflops:.0f} GFLOPS ({100 * err:+.0f} %)"


def _err_summary(errs: list[float]) -> str:
    return (f"model vs simulator error median {100 * statistics.median(errs):+.0f} %, mean |err| "
            f"{100 * statistics.mean(abs(e) for e in errs):.0f} %, range {100 * min(errs):+.0f} % .. {100 * max(errs):+.0f} %")


def report_conv_rows(path: str) -> tuple[list[Row], list[str]]:
    """Rows of the convolution layers of a whole-network simulator report (``taihu-run
    --report r.json``, e.g. ``--example resnet50``): per distinct layer shape the kernels of one
    instance (the layer's kernels summed, divided by the number of identical instances), beside
    the model's prediction for the same layer (error in the note)."""
    with open(path) as f:
        rep = json.load(f)
    fclk = rep.get("f_clk_ghz", M.f_clk_ghz) * 1e9
    by_shape: dict[str, list[dict]] = {}
    layers_of: dict[str, set[str]] = {}
    for k in rep["kernels"]:
        if k.get("op") == "graph.conv2d" and k.get("shape"):
            by_shape.setdefault(k["shape"], []).append(k)
            layers_of.setdefault(k["shape"], set()).add(k.get("layer") or k["name"])
    rows, errs = [], []
    for shape_text, ks in by_shape.items():
        n_inst = max(1, len(layers_of[shape_text]))
        s = _parse_shape(shape_text)
        cyc = sum(k["cycles"] for k in ks) / n_inst
        t = cyc / fclk
        moved = sum(k["dma_bytes"] + k["dma_waste_bytes"] for k in ks)
        useful = sum(k["dma_bytes"] for k in ks)
        r = Row("conv (simulated network)", shape_text, "sim", s.flops / t / 1e9 if s and t else None, t * 1e3,
                sum(k["t_dma"] for k in ks) / n_inst / fclk * 1e3, sum(k["t_compute"] for k in ks) / n_inst / fclk * 1e3,
                sum(k["t_overlap"] for k in ks) / n_inst / fclk * 1e3, useful / moved if moved else None)
        algs = sorted({k.get("algorithm") or "?" for k in ks})
        r.note = f"{'+'.join(algs)}; {n_inst} instance(s)"
        if s is not None:
            err, text = _model_vs_sim(s, r.gflops)
            errs.append(err)
            r.note += f"; {text}"
            r.channels_ok = min(s.c, s.m) >= 64
        rows.append(r)
    summary = []
    if errs:
        summary.append(f"simulated network report {os.path.basename(path)}: {len(rows)} distinct conv layers, "
                       + _err_summary(errs))
    return rows, summary


def _conv_module(s: ConvShape):
    """A graph module of one conv layer as it appears in a network after batch-norm folding
    (:func:`taihu.tools.layers.conv_module`: constant weights and bias, ``s.residual``: + a
    second input x1 shaped like the output (the shortcut), the trailing relu when ``s.relu``)
    and its inputs."""
    layer = conv_module(s, seed=0)
    return layer.module, layer.inputs


def sim_conv_rows(model: str, batch: int, budget: float, select: str | None = None) -> tuple[list[Row], list[str]]:
    """Every distinct conv layer of ``model`` at ``batch`` with >= 64 input and output channels
    (or the 1-based layer numbers in ``select``, e.g. "1,5,9"), lowered alone (``taihu-lower``)
    and simulated (timing only), beside the model's prediction for the algorithm the lowering
    chose (error in the note)."""
    layers = [s for s in conv_layers(model, batch) if min(s.c, s.m) >= 64]
    picks = {int(x) for x in select.split(",")} if select else None
    rows, errs, effs = [], [], []
    for i, s in enumerate(layers, 1):
        if picks is not None and i not in picks:
            continue
        t0 = time.process_time()
        rep, why = simulate_graph(lambda s=s: _conv_module(s), budget)
        case = f"L{i} {_case(s)}"
        if rep is None:
            rows.append(Row(f"conv {model} B={batch} (simulated alone)", case, "sim", note=why))
            continue
        algs = "+".join(sorted({k.get("algorithm") or "?" for k in rep["kernels"]}))
        r = _row_from_report(f"conv {model} B={batch} (simulated alone)", case, rep, s.flops)
        err, text = _model_vs_sim(s, r.gflops)
        errs.append(err)
        effs.append(r.pct)
        r.note = (f"{algs}; kernels " + ", ".join(f"{k['name']} {k['cycles']}" for k in rep["kernels"])
                  + f"; {text}; sim {time.process_time() - t0:.0f} s CPU")
        rows.append(r)
    summary = []
    if errs:
        summary.append(f"{model} B={batch} simulated alone: {len(errs)} layers, mean {statistics.mean(effs):.1f} % of peak; "
                       + _err_summary(errs))
    return rows, summary


def _parse_shape(text: str) -> ConvShape | None:
    """``taihu.shape`` of a conv kernel (:meth:`ConvShape.describe`) -> ConvShape (bias and relu
    assumed, constant weights), None when it does not parse."""
    import re

    m = re.match(r"(\d+)x(\d+)x(\d+)x(\d+) <- (\d+)x(\d+)x(\d+)x(\d+) \* (\d+)x(\d+)x(\d+)x(\d+)(.*)", text)
    if not m:
        return None
    v = [int(x) for x in m.groups()[:12]]
    extra = m.group(13)
    st = re.search(r"\bs(\d+)", extra)
    pd = re.search(r"\bp([\d,]+)", extra)
    dl = re.search(r"\bd(\d+)", extra)
    gr = re.search(r"\bg(\d+)", extra)
    sv = int(st.group(1)) if st else 1
    dv = int(dl.group(1)) if dl else 1
    return ConvShape(v[4], v[5], v[6], v[7], v[8], v[10], v[11], (sv, sv),
                     tuple(int(x) for x in pd.group(1).split(",")) if pd else (0, 0, 0, 0),  # type: ignore[arg-type]
                     (dv, dv), int(gr.group(1)) if gr else 1, bias=True, relu=True, const_weights=True)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def render(rows: list[Row], summary: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=220)
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.group, []).append(r)
    for gname, rs in groups.items():
        t = Table(title=gname, show_lines=False)
        for col in ("case", "src", "GFLOPS", "% peak", "GB/s", "T ms", "T_DMA", "T_comp", "overlap", "DMA eff", "note"):
            t.add_column(col, overflow="fold")
        for r in rs:
            t.add_row(
                r.case + ("" if r.channels_ok else " (<64 ch)"), r.source,
                "" if r.gflops is None else f"{r.gflops:.1f}", "" if r.pct is None else f"{r.pct:.1f}",
                "" if r.gbps is None else f"{r.gbps:.2f}", f"{r.t_total:.3f}", f"{r.t_dma:.3f}",
                f"{r.t_compute:.3f}", f"{r.t_overlap:.3f}", "" if r.dma_eff is None else f"{r.dma_eff:.2f}", r.note,
            )
        con.print(t)
    for s in summary:
        con.print(s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-only", action="store_true",
                    help="no simulation (default: simulate the cheap cases: memory-bound ops, GEMM <= 1024^3)")
    ap.add_argument("--sim-budget", type=float, default=300.0, help="seconds per simulated case (advisory)")
    ap.add_argument("--only", default="gemm,sweep,conv,membound")
    ap.add_argument("--json", default=None, help="write the rows as JSON")
    ap.add_argument("--sim-max-n", type=int, default=1024,
                    help="simulate the GEMM rows up to this size (4096: the DGEMM 4096^3 row too, ~15 min CPU)")
    ap.add_argument("--sim-sweep", action="store_true",
                    help="also simulate the worst and the best blocking of the 1024^3 sweep (the worst takes minutes)")
    ap.add_argument("--sim-conv", default=None, metavar="MODEL:BATCH[:L1,L2..]",
                    help="simulate every distinct >= 64-channel conv layer of MODEL (resnet50, vgg19) at BATCH alone "
                         "(or the listed layer numbers) beside the model, e.g. resnet50:1 or resnet50:1:3,7")
    ap.add_argument("--sim-report", default=None,
                    help="a whole-network simulator report (taihu-run --report) whose conv layers are listed beside the model")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    want = set(args.only.split(","))
    sim = not args.model_only
    rows: list[Row] = []
    summary: list[str] = []
    if "gemm" in want:
        rows += gemm_rows(sim, args.sim_budget, args.sim_max_n)
    if "sweep" in want:
        rows += sweep_rows(args.sim_sweep, args.sim_budget)
    if "conv" in want:
        r, s = conv_rows()
        rows += r
        summary += s
    if "membound" in want:
        rows += membound_rows(sim, args.sim_budget)
    if args.sim_conv:
        parts = args.sim_conv.split(":")
        r, s3 = sim_conv_rows(parts[0], int(parts[1]) if len(parts) > 1 else 1, args.sim_budget,
                              parts[2] if len(parts) > 2 else None)
        rows += r
        summary += s3
    if args.sim_report:
        r, s2 = report_conv_rows(args.sim_report)
        rows += r
        summary += s2
    render(rows, summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": [asdict(r) | {"pct": r.pct} for r in rows], "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
