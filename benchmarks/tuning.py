"""Tuning benchmark (issue 12): default vs tuned vs exhaustive schedules, side by side, one run.

Usage: ``python benchmarks/tuning.py [--models resnet50:1,vgg19:1,resnet50:32,vgg19:32]
[--layers 1,3,5] [--quick] [--top-k 8] [--exhaustive-max N] [--workers N]
[--scheduler tcp://HOST:8786] [--no-conv] [--no-gemm] [--sweep-sim N] [--json FILE]``

Convolutions: every distinct conv layer of ResNet-50 and VGG-19 (shapes from the ONNX models that
ship with the ``onnx`` package, :func:`benchmarks.kernels.conv_layers`) at batch 1 and 32, each
lowered alone (:func:`taihu.tools.layers.conv_module`) exactly as ``taihu-tune`` sees it. Per
layer the schedule space (:mod:`taihu.tools.tune`) is enumerated with its model cycles and
simulated (timing only, on Dask workers):

* *default*: the model's choice (what ``taihu-lower`` does without records);
* *tuned*: ``taihu-tune``'s default strategy (``sim``: the model's ``--top-k`` and the default
  simulated, the fastest kept) -- never slower than the default by construction;
* *exhaustive*: every candidate simulated (``--exhaustive-max N`` caps it at the model's best
  N; the column then says ``top N``), the reference for the tuned choice's loss (004 AD-8:
  swAutoDNN's model-chosen schedules lose < 2 % on average, < 8 % at worst vs brute force).

Columns: simulated cycles of the three, the tuned speed-up over the default, the tuned loss vs
exhaustive, % of the core group's peak (742.4 GFLOPS, 004 L453) before and after, the tuning
time of the default strategy (model search + its simulations, CPU seconds; 004 AD-7:
swAutoDNN's model-based tuner < 1 min per layer). Summary per network and batch: mean % of peak
over the layers with >= 64 input and output channels (issue 12 target: ResNet-50 B=1 >= 80 %),
layers slower than their default (target: none), mean / worst loss vs exhaustive (target
<= 2 % / <= 8 %).

GEMM 1024^3 f32 (GM-1 / GM-2, 004 L869 / L970): the schedule space of the 1024^3 MatMul is the
sweep of every feasible blocking -- its size and the model's worst / best GFLOPS (seed: 81
feasible blockings, worst 66.83, best 363.59 GFLOPS on hardware; its vec-n, bk >= 32 subset is
the seed's scheme), then the model's best ``--sweep-sim`` blockings simulated: the model's pick
vs the best simulated one (GM-2: within 1 %).

``--quick``: ResNet-50 and VGG-19 at batch 1, their first three layers (or ``--layers``),
exhaustive capped at 12 candidates, 3 sweep simulations -- a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

from taihu.backends.model.conv import GemmShape
from taihu.target.machine import default_machine
from taihu.tools.executor import Executor
from taihu.tools.layers import conv_module, matmul_module
from taihu.tools.tune import (
    DEFAULT_TOP_K,
    Candidate,
    LayerResult,
    SimJob,
    SimOutcome,
    collect_problems,
    default_candidate,
    enumerate_space,
    graph_stages,
    lost_job,
    select,
    compact,
    simulate_candidate,
)

M = default_machine()
PEAK = M.peak_cg_gflops  # 742.4 GFLOPS (004 L453)
F_CLK = M.f_clk_ghz * 1e9
SEED_GM1 = (81, 66.83, 363.59)  # 004 L869: feasible blockings, worst / best GFLOPS (fp32, hardware)


def gflops(flops: int, cycles: int | None) -> float | None:
    return None if not cycles else flops / (cycles / F_CLK) / 1e9


@dataclass
class Case:
    """One layer: its problem, space, the candidate sets and their simulated outcomes."""

    group: str
    label: str
    flops: int
    channels_ok: bool
    layer: LayerResult
    cands: list[Candidate] = field(default_factory=list)
    default: Candidate | None = None
    tuned_set: list[Candidate] = field(default_factory=list)
    exhaustive_set: list[Candidate] = field(default_factory=list)
    capped: bool = False
    model_seconds: float = 0.0
    outcomes: dict[Candidate, SimOutcome] = field(default_factory=dict)
    error: str = ""

    def best_of(self, cands: list[Candidate]) -> tuple[Candidate, int] | None:
        sims = [(c, self.outcomes[c].cycles) for c in cands if c in self.outcomes and self.outcomes[c].cycles]
        if not sims:
            return None
        return min(sims, key=lambda cs: (cs[1], cs[0].model_cycles, cs[0].text))  # type: ignore[return-value]

    def cycles(self, c: Candidate | None) -> int | None:
        o = self.outcomes.get(c) if c is not None else None
        return o.cycles if o is not None else None


def _case(group: str, label: str, module, flops: int, channels_ok: bool, top_k: int, cap: int | None) -> Case:
    t0 = time.perf_counter()
    graph_stages(module, None)
    problems = collect_problems(module)
    if len(problems.layers) != 1:
        raise RuntimeError(f"{label}: expected one problem, found {len(problems.layers)}")
    layer = problems.layers[0]
    case = Case(group, label, flops, channels_ok, layer)
    case.cands = list(enumerate_space(problems.state, layer))
    case.default = default_candidate(problems.state, layer)
    case.tuned_set = select("sim", case.cands, case.default, top_k=top_k).simulate
    ranked = sorted(set(case.cands) | {case.default}, key=lambda c: c.model_key)
    case.capped = cap is not None and len(ranked) > cap
    case.exhaustive_set = ranked[:cap] if case.capped else ranked
    if case.default not in case.exhaustive_set:  # the capped reference always holds the default
        case.exhaustive_set.append(case.default)
    case.model_seconds = time.perf_counter() - t0
    case._target = problems.target  # type: ignore[attr-defined]
    return case


def simulate_cases(cases: list[Case], ex: Executor, what: str) -> None:
    """Simulate the union of every case's tuned and exhaustive sets as one batch."""
    jobs: list[tuple[Case, Candidate]] = []
    for case in cases:
        for c in dict.fromkeys([*case.tuned_set, *case.exhaustive_set]):
            jobs.append((case, c))
    items = [SimJob(case.layer.kind, case.layer.problem.shape, c.schedule, case._target, case.label)  # type: ignore[attr-defined]
             for case, c in jobs]
    t0 = time.perf_counter()
    done = [0]

    def tick(_i: int, _o: SimOutcome) -> None:
        done[0] += 1
        if done[0] % 10 == 0 or done[0] == len(items):
            print(f"  {what}: {done[0]}/{len(items)} simulations, {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    outcomes = ex.map(simulate_candidate, items, on_result=tick, describe=lambda j: j.describe(), on_error=lost_job)
    for (case, c), o in zip(jobs, outcomes):
        case.outcomes[c] = o
        if o.error:
            print(f"  {case.label} [{c.text}]: {o.error}", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# convolution layers


def conv_cases(model: str, batch: int, picks: set[int] | None, top_k: int, cap: int | None) -> list[Case]:
    from taihu.benchmarks.kernels import conv_layers

    out = []
    for i, s in enumerate(conv_layers(model, batch), 1):
        if picks is not None and i not in picks:
            continue
        label = f"L{i} {s.describe()}" + (" +res" if s.residual else "")
        out.append(_case(f"{model} B={batch}", label, conv_module(s).module, s.flops, min(s.c, s.m) >= 64, top_k, cap))
    return out


def conv_table(cases: list[Case]) -> tuple[list[dict], list[str]]:
    rows, summary = [], []
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.group, []).append(case)
    for group, cs in groups.items():
        pct_d, pct_t, losses, slower, tune_s = [], [], [], 0, []
        for case in cs:
            d = case.cycles(case.default)
            tb = case.best_of(case.tuned_set)
            eb = case.best_of(case.exhaustive_set)
            t = tb[1] if tb else None
            e = eb[1] if eb else None
            gd, gt = gflops(case.flops, d), gflops(case.flops, t)
            loss = 100 * (t - e) / e if t and e else None
            secs = case.model_seconds + sum(case.outcomes[c].seconds for c in case.tuned_set if c in case.outcomes)
            rows.append({
                "group": group, "layer": case.label, "space": len(case.cands),
                "default": compact(case.default.schedule) if case.default else "",
                "tuned": ("= default" if tb[0] == case.default else compact(tb[0].schedule)) if tb else "",
                "default_cycles": d, "tuned_cycles": t, "exhaustive_cycles": e,
                "exhaustive_simulated": len(case.exhaustive_set), "exhaustive_capped": case.capped,
                "speedup": d / t if d and t else None, "loss_pct": loss,
                "default_pct_peak": 100 * gd / PEAK if gd else None, "tuned_pct_peak": 100 * gt / PEAK if gt else None,
                "tune_seconds": secs, "channels_ok": case.channels_ok,
            })
            if case.channels_ok and gd and gt:
                pct_d.append(100 * gd / PEAK)
                pct_t.append(100 * gt / PEAK)
            if loss is not None:
                losses.append(loss)
            if d and t and t > d:
                slower += 1
            tune_s.append(secs)
        line = f"{group}: {len(cs)} layers"
        if pct_t:
            line += (f"; mean % of peak over the {len(pct_t)} with >= 64 channels: default {statistics.mean(pct_d):.1f} "
                     f"-> tuned {statistics.mean(pct_t):.1f} (min {min(pct_t):.1f})")
        line += f"; tuned slower than default: {slower}"
        if losses:
            capped = any(c.capped for c in cs)
            line += (f"; tuned vs exhaustive{' (capped)' if capped else ''}: mean loss {statistics.mean(losses):.2f} %, "
                     f"worst {max(losses):.2f} % (004 AD-8: < 2 % / < 8 %)")
        if tune_s:
            line += (f"; default strategy {statistics.mean(tune_s):.1f} s CPU per layer (max {max(tune_s):.1f}; "
                     f"004 AD-7: < 1 min)")
        summary.append(line)
    return rows, summary


# --------------------------------------------------------------------------------------------
# GEMM 1024^3 sweep (GM-1 / GM-2)


def gemm_case(top: int) -> Case:
    s = GemmShape(1024, 1024, 1024, "f32")
    case = _case("gemm 1024^3 f32", "MatMul 1024^3 f32", matmul_module(s).module, 2 * 1024 ** 3, True, 1, top)
    case.tuned_set = [case.default] if case.default else []
    return case


def gemm_summary(case: Case) -> list[str]:
    g = sorted(gflops(case.flops, c.model_cycles) or 0.0 for c in case.cands)
    pick = case.default
    lines = [f"GM-1: {len(case.cands)} feasible schedules of the 1024^3 f32 MatMul; model GFLOPS worst {g[0]:.1f}, "
             f"median {statistics.median(g):.1f}, best {g[-1]:.1f} ({g[-1] / g[0]:.1f}x; seed: {SEED_GM1[0]} blockings, "
             f"{SEED_GM1[1]} .. {SEED_GM1[2]} GFLOPS on hardware, 004 L869)"]
    seed_like = [c for c in case.cands if c.schedule.as_dict().get("vec") == "n"
                 and int(c.schedule.as_dict().get("bk", 0)) >= 32]
    if seed_like:
        gs = sorted(gflops(case.flops, c.model_cycles) or 0.0 for c in seed_like)
        lines.append(f"     the seed's scheme (vec n, bk >= 32): {len(seed_like)} schedules, model {gs[0]:.1f} .. {gs[-1]:.1f} GFLOPS")
    best = case.best_of(case.exhaustive_set)
    pc = case.cycles(pick)
    if best and pc and pick is not None:
        lines.append(f"GM-2: model's pick ({compact(pick.schedule)}) simulated {gflops(case.flops, pc):.1f} GFLOPS vs the "
                     f"best of the model's top {len(case.exhaustive_set)} simulated ({compact(best[0].schedule)}) "
                     f"{gflops(case.flops, best[1]):.1f} GFLOPS: "
                     f"{100 * (pc - best[1]) / best[1]:.2f} % slower (004 L970: < 1 %)")
    return lines


# --------------------------------------------------------------------------------------------
# output


def _c(v) -> str:
    return "-" if v is None else str(v)


def _f(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def render(rows: list[dict], summary: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=240)
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    for gname, rs in groups.items():
        t = Table(title=f"conv {gname}: default vs tuned (sim, default strategy) vs exhaustive, simulated cycles")
        for col in ("layer", "space", "default", "tuned", "default cyc", "tuned cyc", "exhaustive cyc", "speed-up",
                    "loss %", "% peak def", "% peak tuned", "tune s"):
            t.add_column(col, overflow="fold")
        for r in rs:
            ex = _c(r["exhaustive_cycles"]) + (f" (top {r['exhaustive_simulated']})" if r["exhaustive_capped"] else "")
            t.add_row(r["layer"] + ("" if r["channels_ok"] else " (<64 ch)"), str(r["space"]), r["default"], r["tuned"],
                      _c(r["default_cycles"]), _c(r["tuned_cycles"]), ex, _f(r["speedup"], ".3f"),
                      _f(r["loss_pct"], ".2f"), _f(r["default_pct_peak"], ".1f"), _f(r["tuned_pct_peak"], ".1f"),
                      f"{r['tune_seconds']:.1f}")
        con.print(t)
    for s in summary:
        con.print(s, markup=False, highlight=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50:1,vgg19:1,resnet50:32,vgg19:32", help="MODEL:BATCH list")
    ap.add_argument("--layers", default=None, help="1-based conv layer numbers per model (as kernels.py numbers them)")
    ap.add_argument("--quick", action="store_true", help="batch 1, three layers per model, capped exhaustive search")
    ap.add_argument("--top-k", type=int, default=DEFAULT_TOP_K,
                    help=f"the default strategy's simulated candidates (default {DEFAULT_TOP_K}, as taihu-tune)")
    ap.add_argument("--exhaustive-max", type=int, default=None, metavar="N",
                    help="simulate at most the model's best N candidates as 'exhaustive' (default: all)")
    ap.add_argument("--workers", type=int, default=None, help="Dask worker processes (default: the cores)")
    ap.add_argument("--scheduler", default=None, help="an existing Dask cluster, tcp://HOST:8786")
    ap.add_argument("--no-conv", action="store_true")
    ap.add_argument("--no-gemm", action="store_true")
    ap.add_argument("--sweep-sim", type=int, default=6, metavar="N",
                    help="simulate the model's best N schedules of the 1024^3 sweep (default 6)")
    ap.add_argument("--json", default=None, help="write the rows and the summary as JSON")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    models = args.models
    picks = {int(x) for x in args.layers.split(",")} if args.layers else None
    cap = args.exhaustive_max
    sweep = args.sweep_sim
    if args.quick:
        models = "resnet50:1,vgg19:1" if args.models == ap.get_default("models") else models
        picks = picks or {1, 2, 3}
        cap = cap or 12
        sweep = min(sweep, 3)
    t0 = time.perf_counter()
    cases: list[Case] = []
    if not args.no_conv:
        for item in models.split(","):
            name, _, batch = item.partition(":")
            cases += conv_cases(name, int(batch or 1), picks, args.top_k, cap)
    gcase = None if args.no_gemm else gemm_case(sweep)
    print(f"model phase: {len(cases) + (gcase is not None)} problems in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    with Executor(args.workers, args.scheduler) as ex:
        if cases:
            simulate_cases(cases, ex, "conv")
        if gcase is not None:
            simulate_cases([gcase], ex, "gemm sweep")
    rows, summary = conv_table(cases) if cases else ([], [])
    if gcase is not None:
        summary += gemm_summary(gcase)
    summary.append(f"total wall time {time.perf_counter() - t0:.0f} s ({ex.where})")
    render(rows, summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "summary": summary}, f, indent=1)
    return 0



if __name__ == "__main__":
    sys.exit(main())
