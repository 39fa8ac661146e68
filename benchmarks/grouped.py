"""Grouped convolution layers (C/g > 1) on the simulated core group: the grouped kernel vs
per-group im2col and the roofline.

Usage: ``python benchmarks/grouped.py [--before] [--net resnext50_32x4d|regnet_y_400mf|all]
[--only 1,3,...] [--sweep] [--json FILE]``

One row per distinct grouped 3x3 layer of torchvision's ``resnext50_32x4d`` (32 groups of 4, 8,
16, 32 channels) and ``regnet_y_400mf`` (group width 8) at 224x224, batch 1 (pad 1, bias, relu
after batch-norm folding, as their exports have them), each built with ``onnx.helper``,
imported, lowered alone with ``taihu-lower`` and simulated (timing only):

* ``after``: cycles of the layer's kernels with the model's choice (``plan``: the ``grouped``
  kernel of :mod:`taihu.backends.model.grouped_conv` or an im2col GEMM);
* ``before`` (``--before``; slow for the large layers): the layer forced through per-group
  im2col + GEMM (``conv-algorithm=im2col``), the lowering these layers had before;
* ``roofline`` = max(bytes that must move (input + output + weights + bias, once) at the
  30.94 GB/s DMA peak (004 L597), useful flops at the mesh's 742.4 GFLOPS peak) in cycles;
  ``% roof`` = roofline / after;
* ``model``: the analytic model's cycles of the chosen plan and its error vs the simulator;
* ``xN``: how many times the network has the layer.

``--sweep``: every plan of the grouped kernel's space for the selected layers, model vs
simulator (the mean |error| over the plans is printed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from taihu.backends.model.conv import ConvShape
from taihu.backends.model.grouped_conv import grouped_space
from taihu.backends.model.schedule import conv_schedule_of
from taihu.backends.sim.runner import simulate
from taihu.dialects import graph
from taihu.frontends.onnx import import_model
from taihu.passes.conversion.graph_to_tile.schedule_attr import set_op_schedule
from taihu.passes.conversion.graph_to_tile.schedules import lowering_state, model_plan, op_problem, plan_cycles, schedule_of
from taihu.passes.pipelines import lower_to_swsim

#: (channels, input size, stride, groups, occurrences) of the grouped 3x3 convolutions
NETWORKS: dict[str, list[tuple[int, int, int, int, int]]] = {
    # ResNeXt-50 32x4d: bottleneck width 128 .. 1024, 32 groups; the stage's first block strides
    "resnext50_32x4d": [
        (128, 56, 1, 32, 3), (256, 56, 2, 32, 1), (256, 28, 1, 32, 3), (512, 28, 2, 32, 1),
        (512, 14, 1, 32, 5), (1024, 14, 2, 32, 1), (1024, 7, 1, 32, 2),
    ],
    # RegNetY-400MF: widths 48, 104, 208, 440, depths 1, 3, 6, 6, group width 8
    "regnet_y_400mf": [
        (48, 112, 2, 6, 1), (104, 56, 2, 13, 1), (104, 28, 1, 13, 2), (208, 28, 2, 26, 1),
        (208, 14, 1, 26, 5), (440, 14, 2, 55, 1), (440, 7, 1, 55, 5),
    ],
}


@dataclass
class Row:
    layer: str
    count: int
    plan: str
    after: int
    roofline: int
    model: int
    before: int | None = None
    sim_seconds: float = 0.0

    @property
    def pct_roof(self) -> float:
        return 100.0 * self.roofline / self.after

    @property
    def model_err(self) -> float:
        return 100.0 * (self.model - self.after) / self.after


def shape_of(c: int, h: int, s: int, g: int) -> ConvShape:
    """The layer: C = M = ``c``, 3x3, pad 1, stride ``s``, ``g`` groups, bias, relu."""
    return ConvShape(1, c, h, h, c, 3, 3, strides=(s, s), pads=(1, 1, 1, 1), group=g, bias=True, relu=True,
                     const_weights=True)


def onnx_layer(s: ConvShape, seed: int = 0) -> onnx.ModelProto:
    """The layer as an ONNX model (Conv with bias, then Relu; opset 13)."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((s.m, s.cg, s.kh, s.kw)) * (2.0 / (s.cg * s.kh * s.kw)) ** 0.5).astype(np.float32)
    b = (rng.standard_normal((s.m,)) * 0.1).astype(np.float32)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], group=s.group, kernel_shape=[s.kh, s.kw],
                            pads=list(s.pads), strides=list(s.strides))
    relu = helper.make_node("Relu", ["c"], ["y"])
    g = helper.make_graph([conv, relu], "grouped",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [s.n, s.c, s.h, s.w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [s.n, s.m, s.ho, s.wo])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def layer_module(s: ConvShape, seed: int = 0):
    """The imported graph module of the layer and its input."""
    module = import_model(onnx_layer(s, seed))
    x = np.random.default_rng(seed + 1).standard_normal((s.n, s.c, s.h, s.w)).astype(np.float32)
    return module, {"x": x}


def roofline_cycles(s: ConvShape, f_clk_ghz: float, peak_gbs: float, peak_gflops: float) -> int:
    """max(cycles to move input + output + weights + bias once at the DMA peak, cycles of the
    useful flops at the mesh's peak)."""
    nbytes = (s.n * (s.c * s.h * s.w + s.m * s.ho * s.wo) + s.m * s.cg * s.kh * s.kw + (s.m if s.bias else 0)) * s.elem
    return round(max(nbytes / peak_gbs, s.flops / peak_gflops) * f_clk_ghz)


def _conv(module) -> graph.Conv2dOp:
    return next(o for o in module.walk() if isinstance(o, graph.Conv2dOp))


def simulate_cycles(module, inputs, **options) -> int:
    """Cycles of the module's kernels, lowered with ``taihu-lower`` (``options``), simulated
    (timing only)."""
    lower_to_swsim(module, **options)
    res = simulate(module, inputs=inputs, numerics=False, lockstep=False)
    return sum(k["cycles"] for k in res.report["kernels"])


def model_of(module) -> tuple[str, int]:
    """(schedule, modelled cycles) of the plan ``convert-graph-to-tile`` picks for the layer."""
    state = lowering_state(module)
    prob = op_problem(state, _conv(module))
    assert prob is not None
    plan = model_plan(state, prob)
    return schedule_of(prob, plan).describe(), plan_cycles(state, prob, plan)


def _selected(nets: list[str], only: set[int] | None):
    """(number, network, C, H, stride, groups, count) of the selected layers, numbered from 1
    over ``nets`` in order (``only``: the numbers to keep, None: all)."""
    i = 0
    for net in nets:
        for c, h, st, g, count in NETWORKS[net]:
            i += 1
            if not only or i in only:
                yield i, net, c, h, st, g, count


def run(nets: list[str], before: bool, only: set[int] | None) -> list[Row]:
    rows = []
    for i, net, c, h, st, g, count in _selected(nets, only):
        s = shape_of(c, h, st, g)
        module, inputs = layer_module(s)
        m = lowering_state(module).machine
        sched, model = model_of(module)
        t0 = time.process_time()
        after = simulate_cycles(module, inputs)
        dt = time.process_time() - t0
        r = Row(f"{i:>2} {net[:7]} {c}x{h}x{h} s{st} g{g}", count, sched, after,
                roofline_cycles(s, m.f_clk_ghz, m.peak_bw_cg, m.peak_cg_gflops), model, sim_seconds=dt)
        if before:
            module, inputs = layer_module(s)
            r.before = simulate_cycles(module, inputs, conv_algorithm="im2col")
        rows.append(r)
        print(_line(r), flush=True)
    return rows


def sweep(nets: list[str], only: set[int] | None) -> list[tuple[str, str, int, int]]:
    """(layer, schedule, model, simulated) for every grouped plan of the selected layers."""
    out = []
    for _i, _net, c, h, st, g, _count in _selected(nets, only):
        s = shape_of(c, h, st, g)
        module, _ = layer_module(s)
        state = lowering_state(module)
        for plan in grouped_space(s, state.machine, state.machine.ldm_user_bytes):
            module, inputs = layer_module(s)
            prob = op_problem(state, _conv(module))
            assert prob is not None
            model = plan_cycles(state, prob, plan)
            sched = conv_schedule_of(plan)
            set_op_schedule(_conv(module), sched)
            sim = simulate_cycles(module, inputs)
            out.append((f"{c}x{h}x{h} s{st} g{g}", sched.describe(), model, sim))
            print(f"{out[-1][0]:<22} {out[-1][1]:<28} model {model:>9} sim {sim:>9} "
                  f"{100 * (model - sim) / sim:+6.1f} %", flush=True)
    return out


_HEAD = (f"{'layer':<34} {'xN':>2} {'plan':<28} {'before':>9} {'after':>9} {'roofline':>9} {'% roof':>7} "
         f"{'model':>9} {'err %':>6}")


def _line(r: Row) -> str:
    before = f"{r.before:>9}" if r.before is not None else f"{'-':>9}"
    plan = r.plan if len(r.plan) <= 28 else r.plan[:25] + "..."
    return (f"{r.layer:<34} {r.count:>2} {plan:<28} {before} {r.after:>9} {r.roofline:>9} {r.pct_roof:>7.1f} "
            f"{r.model:>9} {r.model_err:>+6.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", action="store_true", help="also simulate the im2col lowering (slow)")
    ap.add_argument("--net", choices=(*NETWORKS, "all"), default="all")
    ap.add_argument("--only", help="1-based layer numbers (over the selected networks), e.g. 1,3")
    ap.add_argument("--sweep", action="store_true", help="model vs simulator over every grouped plan")
    ap.add_argument("--json", help="write the rows to this file")
    a = ap.parse_args(argv)
    nets = list(NETWORKS) if a.net == "all" else [a.net]
    only = {int(x) for x in a.only.split(",")} if a.only else None
    if a.sweep:
        pts = sweep(nets, only)
        errs = [abs(m - s) / s * 100 for _, _, m, s in pts]
        if errs:
            print(f"{len(errs)} plans: model |error| mean {sum(errs) / len(errs):.1f} %, max {max(errs):.1f} %")
        return 0
    print(_HEAD)
    rows = run(nets, a.before, only)
    if rows:
        errs = [abs(r.model_err) for r in rows]
        tot_b = sum(r.count * r.before for r in rows if r.before is not None)
        tot_a = sum(r.count * r.after for r in rows if r.before is not None)
        print(f"model |error| mean {sum(errs) / len(errs):.1f} %, max {max(errs):.1f} %"
              + (f"; network total (x N) before {tot_b} after {tot_a} cycles ({tot_b / tot_a:.2f}x)" if tot_a else ""))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) | {"pct_roof": r.pct_roof, "model_err": r.model_err} for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
