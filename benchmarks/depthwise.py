"""Depthwise convolution layers on the simulated core group: the dedicated kernel vs its DMA roof.

Usage: ``python benchmarks/depthwise.py [--before] [--batch N] [--dtype f32|f64] [--only 1,3,...]
[--json FILE]``

One row per depthwise layer of MobileNetV2 (224x224 input; 3x3, pad 1, bias, relu6 after
batch-norm folding, as torchvision's export has them), each lowered alone with ``taihu-lower``
and simulated (timing only):

* ``after``: cycles of the layer's kernels with the model's choice (the ``depthwise`` kernel,
  :mod:`taihu.backends.model.depthwise_conv`), and the plan (channels x rows per tile);
* ``before`` (``--before``; slow: minutes for the large layers): the same layer forced through
  per-group im2col + GEMM (``conv-algorithm=im2col``), the lowering these layers had before;
* ``roofline``: the bytes the layer must move (input + output + weights + bias, once) at the
  30.94 GB/s DMA peak (004 L597), in cycles at the machine's clock; ``% roof`` = roofline /
  after (the target is >= 80 %);
* ``model``: the analytic model's time of the chosen plan and its error vs the simulator.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

from taihu.backends.model.conv import ConvShape
from taihu.backends.sim.runner import simulate
from taihu.dialects import graph
from taihu.passes.conversion.graph_to_tile.schedules import lowering_state, model_plan, op_problem, plan_cycles, schedule_of
from taihu.passes.pipelines import lower_to_swsim
from taihu.tools.layers import WEIGHT_SCALE, GraphBuilder

#: MobileNetV2's depthwise layers at 224x224: (channels, input size, stride)
MOBILENET_V2 = [
    (32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (192, 28, 2),
    (384, 14, 1), (576, 14, 1), (576, 14, 2), (960, 7, 1),
]


@dataclass
class Row:
    layer: str
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


def shape_of(c: int, h: int, s: int, batch: int = 1, dtype: str = "f32") -> ConvShape:
    """MobileNetV2's depthwise layer: 3x3, pad 1, stride ``s``, bias, relu6 (clip 0..6)."""
    return ConvShape(batch, c, h, h, c, 3, 3, strides=(s, s), pads=(1, 1, 1, 1), group=c, bias=True, relu=True,
                     dtype=dtype, const_weights=True)


def layer_module(s: ConvShape, seed: int = 0):
    """The graph module of ``s`` followed by relu6 (``graph.clip`` 0..6) and its inputs."""
    dt = np.float64 if s.dtype == "f64" else np.float32
    rng = np.random.default_rng(seed)
    g = GraphBuilder((s.n, s.c, s.h, s.w), dtype=dt)
    w = g.cst((rng.standard_normal((s.m, s.cg, s.kh, s.kw)) * WEIGHT_SCALE).astype(dt), "w")
    b = g.cst(rng.standard_normal((s.m,)).astype(dt), "b")
    y = g(graph.Conv2dOp(g.args[0], w, b, strides=s.strides, pads=s.pads, dilations=s.dilations, group=s.group), "conv")
    y = g(graph.ClipOp(y, min=0.0, max=6.0), "relu6")
    return g.module(y), g.inputs(seed)


def roofline_cycles(s: ConvShape, f_clk_ghz: float, peak_gbs: float) -> int:
    """Cycles to move input + output + weights + bias once at the DMA peak."""
    nbytes = (s.n * s.c * (s.h * s.w + s.ho * s.wo) + s.m * s.cg * s.kh * s.kw + (s.m if s.bias else 0)) * s.elem
    return round(nbytes / (peak_gbs * 1e9) * f_clk_ghz * 1e9)


def simulate_cycles(s: ConvShape, **options) -> int:
    """Cycles of the layer's kernels, lowered with ``taihu-lower`` (``options``) and simulated
    (timing only)."""
    module, inputs = layer_module(s)
    lower_to_swsim(module, **options)
    res = simulate(module, inputs=inputs, numerics=False, lockstep=False)
    return sum(k["cycles"] for k in res.report["kernels"])


def model_of(s: ConvShape) -> tuple[str, int]:
    """(schedule, modelled cycles) of the plan ``convert-graph-to-tile`` picks for the layer."""
    module, _ = layer_module(s)
    state = lowering_state(module)
    op = next(o for o in module.walk() if isinstance(o, graph.Conv2dOp))
    prob = op_problem(state, op)
    assert prob is not None
    plan = model_plan(state, prob)
    return schedule_of(prob, plan).describe(), plan_cycles(state, prob, plan)


def run(batch: int, dtype: str, before: bool, only: set[int] | None) -> list[Row]:
    rows = []
    for i, (c, h, st) in enumerate(MOBILENET_V2, 1):
        if only and i not in only:
            continue
        s = shape_of(c, h, st, batch, dtype)
        module, _ = layer_module(s)
        m = lowering_state(module).machine
        sched, model = model_of(s)
        t0 = time.process_time()
        after = simulate_cycles(s)
        dt = time.process_time() - t0
        r = Row(f"L{i} {batch}x{c}x{h}x{h} s{st}", sched, after, roofline_cycles(s, m.f_clk_ghz, m.peak_bw_cg), model,
                sim_seconds=dt)
        if before:
            r.before = simulate_cycles(s, conv_algorithm="im2col")
        rows.append(r)
        print(_line(r), flush=True)
    return rows


_HEAD = f"{'layer':<24} {'plan':<32} {'before':>9} {'after':>9} {'roofline':>9} {'% roof':>7} {'model':>9} {'err %':>6}"


def _line(r: Row) -> str:
    before = f"{r.before:>9}" if r.before is not None else f"{'-':>9}"
    return (f"{r.layer:<24} {r.plan:<32} {before} {r.after:>9} {r.roofline:>9} {r.pct_roof:>7.1f} {r.model:>9} "
            f"{r.model_err:>+6.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", action="store_true", help="also simulate the im2col lowering (slow)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dtype", choices=("f32", "f64"), default="f32")
    ap.add_argument("--only", help="1-based layer numbers, e.g. 1,3")
    ap.add_argument("--json", help="write the rows to this file")
    a = ap.parse_args(argv)
    only = {int(x) for x in a.only.split(",")} if a.only else None
    print(_HEAD)
    rows = run(a.batch, a.dtype, a.before, only)
    if rows:
        worst = min(rows, key=lambda r: r.pct_roof)
        errs = [abs(r.model_err) for r in rows]
        print(f"worst {worst.layer}: {worst.pct_roof:.1f} % of the roofline; model |error| mean {sum(errs) / len(errs):.1f} %,"
              f" max {max(errs):.1f} %")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) | {"pct_roof": r.pct_roof, "model_err": r.model_err} for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
