"""End to end: taihu's stage times on the five light networks beside onnxruntime, in one run.

Usage: ``python benchmarks/end_to_end.py [--networks resnet50,vgg19,...,PATH.onnx]
[--random-weights 0] [--check] [--no-profile] [--timing-only] [--trace]``

``--networks`` takes the ``--example`` names and ONNX files (a torchvision export, e.g.
``mobilenet_v2.onnx``: its column is the file's stem).

For each network (the ``light_*`` ONNX models shipped in the onnx package, as ``taihu-run
--example``): wall time of every taihu stage — ONNX import, each pass of ``taihu-lower``
(graph-fold-constants ... sw-to-swsim), the timed simulation of the swsim program — and the total;
onnxruntime (CPU; an optional dependency, columns "-" without it) on the same model and the
same inputs: session creation, one inference, and their sum; the ratio taihu total / onnxruntime
total (wall); CPU seconds of both (steadier than wall time on a shared machine); the modeled run
time on the core group (simulated cycles, ms at 1.45 GHz; launches and their spawn/join cost
included), its useful GFLOPS and % of the 742.4 GFLOPS peak (the graph's own arithmetic, the
report's ``useful_flops``) and, apart, the executed GFLOPS (padding and transforms included). ``--check`` (needs onnxruntime) also compares the simulated outputs with the graph
reference (numpy, run on the imported module before lowering; its time is not part of taihu's
total) and with onnxruntime (rtol 1e-4, atol 1e-5 each, as ``taihu-run --check``) and prints the
max absolute errors and ok / MISMATCH. ``--trace`` simulates with the trace on (the simulate stage
then includes its recording) and writes it as ``taihu-run --trace t.pftrace`` does (to a temporary
file, not part of taihu's total): the table gives its size, its write time and that time as a
fraction of the (traced) simulation's.

Targets (issue 5 and issue "Simulation in seconds"), import + lower + simulation wall time: ResNet-50
with numerics <= 10 s, ``--timing-only``: ResNet-50 <= 4 s, VGG-19 <= 20 s, MobileNetV2 <= 20 s;
ResNet-50's full trace <= 100 MB, written in <= 20 % of the simulation's time. A run with
``--trace`` measures the traced simulation; the recording's own cost is the difference to the
simulate stage of a run without it.
The table also gives the simulation speed (simulated cycles per wall second of the simulate
stage). Every network that misses its target is run again under cProfile and the five functions
with the largest own time are printed (skip with ``--no-profile``; ``--profile-all`` also profiles
the networks without a target). A stage that cannot run (a pass not available yet, a lowering error) is printed
in the table instead of a time; the other networks still run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

NETWORKS = ("resnet50", "vgg19", "alexnet", "squeezenet", "inception_v1")
#: wall-time targets (s) of import + lower + simulation, by (network, numerics)
TARGETS = {("resnet50", True): 10.0, ("resnet50", False): 4.0, ("vgg19", False): 20.0,
           ("mobilenet_v2", False): 20.0}
#: ResNet-50's full trace (issue "Simulation in seconds"): size and write time / simulation time
TRACE_MB, TRACE_FRACTION = 100.0, 0.20


def target_of(network: str, numerics: bool) -> float | None:
    """The wall-time target of ``network`` (an ONNX file's stem counts by its prefix:
    ``mobilenet_v2_legacy`` is MobileNetV2), None without one."""
    for (name, num), t in TARGETS.items():
        if num == numerics and (network == name or network.startswith(name + "_")):
            return t
    return None


@dataclass
class Row:
    network: str
    stages: list[tuple[str, float]] = field(default_factory=list)
    error: str | None = None
    ort_session: float | None = None
    ort_run: float | None = None
    modeled_ms: float | None = None
    gflops: float | None = None
    max_abs_err: float | None = None
    check_ok: bool | None = None
    ref_max_abs_err: float | None = None
    ref_ok: bool | None = None
    ref_seconds: float | None = None
    cycles: int | None = None
    percent_peak: float | None = None
    executed_gflops: float | None = None
    launches: int | None = None
    launch_cycles: int | None = None
    cpu: float | None = None  # process CPU seconds of import + lower + simulate
    trace_bytes: int | None = None  # --trace: size of the .pftrace
    trace_seconds: float | None = None  # --trace: wall time to write it
    ort_cpu: float | None = None
    path: str | None = None  # the ONNX file (None: an --example name)

    @property
    def sim_seconds(self) -> float | None:
        return next((t for n, t in self.stages if n == "simulate"), None)

    @property
    def total(self) -> float:
        return sum(t for _, t in self.stages)


def run_taihu(name: str, random_weights: int | None, row: Row, numerics: bool = True,
              check: bool = False, trace: bool = False):
    """Import, lower and simulate ``name``; fills ``row``; returns (model, inputs, outputs|None).
    ``check``: also compare with the graph reference (not counted in taihu's stages/CPU);
    ``trace``: simulate with the trace on and write it as a ``.pftrace`` (its size and write
    time into ``row``, not counted either)."""
    from taihu.tools import run as run_tool

    ref_cpu = [0.0]
    c0 = time.process_time()
    try:
        return _run_taihu(name, random_weights, row, run_tool, numerics, check, ref_cpu, trace)
    finally:
        row.cpu = time.process_time() - c0 - ref_cpu[0]


def write_trace(trace, row: Row) -> None:
    """Write ``trace`` as Perfetto protobuf to a temporary file (``taihu-run --trace
    t.pftrace``): its size (bytes) and wall time into ``row``."""
    from taihu.backends.sim.pftrace import write_pftrace

    with tempfile.TemporaryFile() as f:
        t0 = time.perf_counter()
        write_pftrace(trace, f)
        f.flush()
        row.trace_seconds = time.perf_counter() - t0
        row.trace_bytes = f.tell()


def _run_taihu(name: str, random_weights: int | None, row: Row, run_tool, numerics: bool,
               check: bool, ref_cpu: list[float], trace: bool = False):
    path = row.path or run_tool.example_path(name)
    t0 = time.perf_counter()
    source = run_tool.load_onnx(path, random_weights)
    row.stages.append(("import", time.perf_counter() - t0))
    inputs = run_tool.named_inputs(source.module, run_tool.complete_inputs(source.module, {}, 0))
    reference = None
    if check and numerics:  # the golden model on the graph module, before it is lowered in place
        c0 = time.process_time()
        ref = run_tool.run_graph(source.module, inputs)
        ref_cpu[0] = time.process_time() - c0
        row.ref_seconds = ref.stages[0][1]
        reference = ref.outputs
    try:
        res = run_tool.run_swsim(source.module, inputs, numerics=numerics, trace=trace)
    except Exception as e:  # noqa: BLE001 - a benchmark row shows the failure and goes on
        from taihu.tools.diagnostics import format_error

        msg = format_error(e).splitlines()[0]
        if not isinstance(e, run_tool.RunError):
            msg = f"{type(e).__name__}: {msg}"
        row.error = msg[:200]
        row.stages += getattr(e, "stages", [])
        if "is not available yet" in row.error:  # time the stages that exist, on a fresh import
            row.stages += time_available_prefix(run_tool.load_onnx(path, random_weights).module)
        return source.model, inputs, None
    row.stages += res.stages
    if trace:
        c0 = time.process_time()
        write_trace(res.engine.trace, row)
        ref_cpu[0] += time.process_time() - c0
    row.modeled_ms = res.report["seconds"] * 1e3
    row.gflops = res.report["useful_gflops"]
    row.cycles = res.report["total_cycles"]
    row.percent_peak = res.report["useful_percent_of_peak"]
    row.executed_gflops = res.report["gflops"]
    row.launches = res.report["launches"]
    row.launch_cycles = res.report["launch_cycles"]
    if not numerics:
        return source.model, inputs, None
    if reference is not None:
        from taihu.tools.run import compare

        cmp = compare(res.outputs, reference, "reference")
        row.ref_max_abs_err = max(c.max_abs for c in cmp)
        row.ref_ok = all(c.ok for c in cmp)
    return source.model, inputs, dict(zip(source.onnx_names, res.outputs.values()))


def time_available_prefix(module) -> list[tuple[str, float]]:
    """Per-pass wall times of the longest prefix of taihu-lower whose passes are registered."""
    from taihu.passes.pipelines import (
        TAIHU_LOWER,
        PipelineUnavailableError,
        StageTimer,
        build_pipeline,
        resolve_stage,
        run_pipeline,
    )

    last = None
    for stage in TAIHU_LOWER:
        try:
            resolve_stage(stage)
        except PipelineUnavailableError:
            break
        last = stage
    if last is None:
        return []
    timer = StageTimer(len(TAIHU_LOWER))
    try:
        run_pipeline(build_pipeline(stop_after=last, callback=timer), module)
    except Exception:  # noqa: BLE001 - report what ran
        pass
    return timer.times


def run_ort(model, inputs, row: Row) -> dict[str, np.ndarray] | None:
    """onnxruntime on ``model`` (times into ``row``); None if onnxruntime is not installed (an
    optional dependency: its columns then show "-")."""
    from taihu.tools.ort import inference_session, onnxruntime_available

    if not onnxruntime_available():
        return None
    c0 = time.process_time()
    t0 = time.perf_counter()
    sess = inference_session(model)
    row.ort_session = time.perf_counter() - t0
    feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
    t0 = time.perf_counter()
    out = sess.run(None, feed)
    row.ort_run = time.perf_counter() - t0
    row.ort_cpu = time.process_time() - c0
    return dict(zip([o.name for o in sess.get_outputs()], out))


def profile_top(row: Row, random_weights: int | None, n: int = 5, numerics: bool = True) -> str:
    """The ``n`` functions with the largest own time over import + lower + simulate."""
    prof = cProfile.Profile()
    prof.enable()
    run_taihu(row.network, random_weights, Row(row.network, path=row.path), numerics)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(n)
    lines = buf.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return "\n".join(lines[start:start + n + 1])


def summary_line(r: Row) -> str:
    """One line per network as soon as it is done (the table comes at the end)."""
    if r.error:
        return f"{r.network}: error: {r.error}"
    parts = [f"{r.network}: taihu {r.total:.2f} s wall / {r.cpu:.2f} s CPU ("
             + ", ".join(f"{n} {t:.2f}" for n, t in r.stages) + ")"]
    if r.cycles is not None:
        parts.append(f"{r.cycles:,} cycles = {r.modeled_ms:.2f} ms ({r.launches} launches: "
                     f"{r.launch_cycles:,} cycles), {r.gflops:.1f} useful GFLOPS "
                     f"({r.percent_peak:.1f} % peak; executed {r.executed_gflops:.1f})")
    if r.trace_bytes is not None and r.trace_seconds is not None and r.sim_seconds:
        parts.append(f"trace {r.trace_bytes / 1e6:.1f} MB written in {r.trace_seconds:.2f} s "
                     f"({100 * r.trace_seconds / r.sim_seconds:.0f} % of the traced simulation)")
    if r.ref_max_abs_err is not None:
        parts.append(f"vs reference {r.ref_max_abs_err:.2g} {'ok' if r.ref_ok else 'MISMATCH'}")
    if r.max_abs_err is not None:
        parts.append(f"vs onnxruntime {r.max_abs_err:.2g} {'ok' if r.check_ok else 'MISMATCH'}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", default=",".join(NETWORKS))
    p.add_argument("--random-weights", type=int, default=None, metavar="SEED")
    p.add_argument("--check", action="store_true")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--profile-all", action="store_true",
                   help="profile every network over the target, not only ResNet-50")
    p.add_argument("--timing-only", action="store_true",
                   help="simulate timing only (no numerics; incompatible with --check)")
    p.add_argument("--trace", action="store_true",
                   help="simulate with the trace on and write it as .pftrace (size, write time)")
    args = p.parse_args(argv)
    from taihu.tools.ort import MISSING, onnxruntime_available

    if args.check and not onnxruntime_available():
        p.error(MISSING)
    names = [n.strip() for n in args.networks.split(",") if n.strip()]
    con = Console(width=200 if not sys.stdout.isatty() else None)
    rows: list[Row] = []
    for name in names:
        row = Row(Path(name).stem, path=name) if name.endswith(".onnx") else Row(name)
        model, inputs, outs = run_taihu(name, args.random_weights, row, not args.timing_only, args.check,
                                        args.trace)
        ort_out = run_ort(model, inputs, row)
        if args.check and outs is not None and ort_out is not None:
            from taihu.tools.run import compare

            cmp = compare(outs, ort_out, "onnxruntime")
            row.max_abs_err = max(c.max_abs for c in cmp)
            row.check_ok = all(c.ok for c in cmp)
        rows.append(row)
        con.print(summary_line(row), markup=False, highlight=False)

    stage_names: list[str] = []
    for r in rows:
        for s, _ in r.stages:
            if s not in stage_names:
                stage_names.append(s)
    tab = Table(title="end to end: taihu (import, taihu-lower passes, simulation) vs onnxruntime, "
                      "wall seconds")
    tab.add_column("stage", justify="left")
    for r in rows:
        tab.add_column(r.network, justify="right")
    for s in stage_names:
        tab.add_row(s, *[next((f"{t:.3f}" for n, t in r.stages if n == s), "-") for r in rows])
    tab.add_section()
    tab.add_row("taihu total", *[f"{r.total:.3f}" if not r.error else "n/a" for r in rows])
    tab.add_row("taihu CPU seconds", *[f"{r.cpu:.3f}" if r.cpu is not None else "-" for r in rows])
    tab.add_row("onnxruntime session", *[f"{r.ort_session:.3f}" if r.ort_session is not None else "-" for r in rows])
    tab.add_row("onnxruntime run", *[f"{r.ort_run:.4f}" if r.ort_run is not None else "-" for r in rows])
    ort_tot = [None if r.ort_session is None else r.ort_session + r.ort_run for r in rows]
    tab.add_row("onnxruntime total", *[f"{t:.3f}" if t is not None else "-" for t in ort_tot])
    tab.add_row("onnxruntime CPU seconds (all threads)",
                *[f"{r.ort_cpu:.3f}" if r.ort_cpu is not None else "-" for r in rows])
    tab.add_row("ratio taihu / onnxruntime", *[f"{r.total / t:.0f}x" if (t and not r.error) else "-"
                                               for r, t in zip(rows, ort_tot)])
    tab.add_section()
    tab.add_row("modeled time on 1 CG (ms)", *[f"{r.modeled_ms:.2f}" if r.modeled_ms is not None else "-" for r in rows])
    tab.add_row("simulated cycles", *[f"{r.cycles:,}" if r.cycles is not None else "-" for r in rows])
    tab.add_row("simulated cycles per wall second",
                *[f"{r.cycles / r.sim_seconds:,.0f}" if r.cycles is not None and r.sim_seconds
                  else "-" for r in rows])
    tab.add_row("launches (spawn/join cycles)", *[f"{r.launches} ({r.launch_cycles:,})" if r.launches is not None
                                                   else "-" for r in rows])
    tab.add_row("modeled useful GFLOPS", *[f"{r.gflops:.1f}" if r.gflops is not None else "-" for r in rows])
    tab.add_row("useful % of peak (742.4 GFLOPS)",
                *[f"{r.percent_peak:.1f}" if r.percent_peak is not None else "-" for r in rows])
    tab.add_row("executed GFLOPS (padding incl.)",
                *[f"{r.executed_gflops:.1f}" if r.executed_gflops is not None else "-" for r in rows])
    if args.trace:
        tab.add_section()
        tab.add_row("trace .pftrace (MB)",
                    *[f"{r.trace_bytes / 1e6:.1f}" if r.trace_bytes is not None else "-" for r in rows])
        tab.add_row("trace written in (s, not in total)",
                    *[f"{r.trace_seconds:.3f}" if r.trace_seconds is not None else "-" for r in rows])
        tab.add_row("trace write / traced simulate",
                    *[f"{100 * r.trace_seconds / r.sim_seconds:.0f} %" if r.trace_seconds is not None
                      and r.sim_seconds else "-" for r in rows])
    if args.check:
        tab.add_section()
        tab.add_row("reference run (s, not in total)",
                    *[f"{r.ref_seconds:.3f}" if r.ref_seconds is not None else "-" for r in rows])
        tab.add_row("max abs err vs reference", *[
            "-" if r.ref_max_abs_err is None else f"{r.ref_max_abs_err:.2g} {'ok' if r.ref_ok else 'MISMATCH'}"
            for r in rows])
        tab.add_row("max abs err vs onnxruntime", *[
            "-" if r.max_abs_err is None else f"{r.max_abs_err:.2g} {'ok' if r.check_ok else 'MISMATCH'}"
            for r in rows])
    con.print(tab)
    for r in rows:
        if r.error:
            con.print(f"{r.network}: {r.error}", markup=False, highlight=False)
    numerics = not args.timing_only
    mode = "with numerics" if numerics else "--timing-only"
    for r in rows:
        target = target_of(r.network, numerics)
        if target is not None:
            verdict = ("not measured (" + r.error + ")") if r.error else (
                f"{r.total:.2f} s {'<=' if r.total <= target else '>'} {target:.0f} s target")
            con.print(f"{r.network} {mode}, import + lower + simulate: {verdict}", markup=False)
    for r in rows:
        if r.network == "resnet50" and r.trace_bytes is not None and r.trace_seconds is not None and r.sim_seconds:
            frac = r.trace_seconds / r.sim_seconds
            ok = r.trace_bytes <= TRACE_MB * 1e6 and frac <= TRACE_FRACTION
            con.print(f"resnet50 trace: {r.trace_bytes / 1e6:.1f} MB (target <= {TRACE_MB:.0f} MB), written in "
                      f"{100 * frac:.0f} % of the traced simulation's time (target <= {100 * TRACE_FRACTION:.0f} %): "
                      f"{'met' if ok else 'missed'}", markup=False)
    for r in rows:
        target = target_of(r.network, numerics)
        missed = target is not None and r.total > target
        if not r.error and not args.no_profile and (missed or (args.profile_all and target is None)):
            con.print(f"\n{r.network}: top 5 functions by own time (cProfile, second run)",
                      markup=False)
            con.print(profile_top(r, args.random_weights, numerics=numerics),
                      markup=False, highlight=False)
    failed = [r.network for r in rows if r.error or r.check_ok is False or r.ref_ok is False]
    if failed:
        con.print(f"FAILED: {', '.join(failed)}", markup=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
