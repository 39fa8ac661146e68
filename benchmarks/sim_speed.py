"""Simulation speed: simulated multiply-accumulates per wall second, taihu vs ``xdsl-run``.

Usage: ``python benchmarks/sim_speed.py [--m 128 --n 128 --k 1664] [--volume 1024] [--xdsl-n 64]
[--db-tiles 32] [--runs 1]``

* taihu: the mesh GEMM primitive (``examples/sw/mesh_gemm.py``, fp64, LDM-resident, RLC SUMMA,
  Listing 4.1 k-loop) with ``reps`` repetitions of its 8 SUMMA steps so that
  ``M·N·K·reps >= volume³`` (default: the volume of a 1024³ DGEMM), simulated in cycle mode with
  real numerics (``simulate``'s default: lockstep for this RLC kernel); the result is checked against
  numpy. Timed: building the xDSL context, parsing the ``sw`` module text and simulating it. Not
  timed: generating the text (``mesh_gemm_mlir`` lowers a ``loop`` module with
  ``convert-loop-to-sw``), just as the baseline's ``xdsl-opt`` lowering is not timed.
* baseline: ``xdsl-run`` executing a ``linalg.matmul`` of 64³ f32 lowered by xDSL's
  ``convert-linalg-to-loops`` (scalar ``scf.for`` loops interpreted op by op); timed: the
  ``xdsl-run`` process (start-up, parsing, interpretation).
* DMA-heavy rows (no baseline): the double-buffered get/compute/put stream of
  ``examples/sw/double_buffer.py`` (``--db-tiles`` tiles of 4 KB per CPE, one fp64 FMA per
  element, 2 DMAs per tile and CPE) in lockstep mode, in per-CPE mode (one interpreter per
  CPE, the reference) and in lockstep timing-only mode (``numerics=False``); the three reports
  are checked to be identical.

Both main rows are measured in this run (wall clock; CPU time too, which is steadier on a shared
machine) and printed side by side with the ratio (target >= 1e4, issue 3). ``--runs N`` repeats
the measurement N times and prints every ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from rich.console import Console
from rich.table import Table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MATMUL = """func.func @main() -> f32 {{
  %a = memref.alloc() : memref<{n}x{n}xf32>
  %b = memref.alloc() : memref<{n}x{n}xf32>
  %c = memref.alloc() : memref<{n}x{n}xf32>
  linalg.matmul ins(%a, %b : memref<{n}x{n}xf32>, memref<{n}x{n}xf32>) outs(%c : memref<{n}x{n}xf32>)
  %i = arith.constant 0 : index
  %v = memref.load %c[%i, %i] : memref<{n}x{n}xf32>
  func.return %v : f32
}}
"""


def _example(name: str):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, "examples", "sw", f"{name}.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def _parse(text: str):
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects as xdsl_dialects
    from xdsl.parser import Parser

    from taihu.tools.universe import get_all_dialects

    ctx = Context()
    for name, f in {**xdsl_dialects(), **get_all_dialects()}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, f)
    return Parser(ctx, text).parse_module()


def taihu_speed(m: int, n: int, k: int, volume: int) -> tuple[float, float, float, int, dict]:
    """(MACs, wall seconds, CPU seconds, reps, gemm kernel report)."""
    from taihu.backends.sim.runner import simulate

    gen = _example("mesh_gemm")
    reps = math.ceil(volume**3 / (m * n * k))
    rng = np.random.default_rng(0)
    at, b = rng.standard_normal((k, m)), rng.standard_normal((k, n))
    text = gen.mesh_gemm_mlir(m, n, k, reps)  # the input program (not timed, see above)
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = simulate(_parse(text), inputs={"AT": at, "B": b})
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    ref = reps * (at.T @ b).T
    err = float(np.abs(res.outputs["CT"] - ref).max() / np.abs(ref).max())
    if err > 1e-10:
        raise SystemExit(f"mesh GEMM result differs from numpy (relative error {err:.2e})")
    g = next(x for x in res.report["kernels"] if x["name"] == "gemm")
    return float(m * n * k * reps), wall, cpu, reps, g


def stream_speed(tiles: int, tile_bytes: int = 4096) -> list[tuple[str, float, float, float, dict]]:
    """The double-buffered stream in lockstep, per-CPE and lockstep timing-only mode:
    [(mode, MACs, wall s, CPU s, report)]; raises SystemExit if results or reports differ."""
    from taihu.backends.sim.runner import simulate

    text = _example("double_buffer").double_buffer_mlir(tiles, tile_bytes)
    x = np.random.default_rng(0).standard_normal((tiles, 64, tile_bytes // 8))
    macs = float(x.size)  # one fused multiply-add per element
    rows = []
    for mode, kw in (("lockstep", {"lockstep": True}), ("per-CPE", {"lockstep": False}),
                     ("lockstep, timing only", {"numerics": False, "lockstep": True})):
        t0 = time.perf_counter()
        c0 = time.process_time()
        res = simulate(_parse(text), inputs={"X": x}, **kw)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if kw.get("numerics", True) and not np.array_equal(res.outputs["Y"], x * x + x):
            raise SystemExit(f"double-buffered stream ({mode}): wrong result")
        rows.append((mode, macs, wall, cpu, res.report))
    if len({json.dumps(r[4]) for r in rows}) != 1:
        raise SystemExit("double-buffered stream: the three modes give different reports")
    return rows


def xdsl_speed(n: int) -> tuple[float, float, float]:
    """(MACs, wall seconds, CPU seconds) of xdsl-run on an n³ f32 matmul lowered to loops."""
    opt, run = shutil.which("xdsl-opt"), shutil.which("xdsl-run")
    if not opt or not run:
        raise SystemExit("xdsl-opt / xdsl-run not found on PATH")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "mm.mlir")
        low = os.path.join(d, "mm_loops.mlir")
        with open(src, "w") as f:
            f.write(MATMUL.format(n=n))
        subprocess.run([opt, src, "-p", "convert-linalg-to-loops", "-o", low], check=True)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([run, low], check=True, capture_output=True)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return float(n**3), wall, cpu


def _rate(macs: float, secs: float) -> str:
    return f"{macs / secs:.3g}" if secs > 0 else "-"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=128)
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--k", type=int, default=1664)
    p.add_argument("--volume", type=int, default=1024, help="DGEMM edge whose volume is simulated")
    p.add_argument("--xdsl-n", type=int, default=64, help="edge of the xdsl-run f32 matmul")
    p.add_argument("--db-tiles", type=int, default=32,
                   help="tiles per CPE of the double-buffered DMA stream (0: skip those rows)")
    p.add_argument("--runs", type=int, default=1, help="repeat the taihu/xdsl-run measurement")
    a = p.parse_args(argv)
    con = Console()
    ratios = []
    for _run in range(a.runs):
        macs_t, wall_t, cpu_t, reps, g = taihu_speed(a.m, a.n, a.k, a.volume)
        macs_x, wall_x, cpu_x = xdsl_speed(a.xdsl_n)
        ratio = (macs_t / wall_t) / (macs_x / wall_x)
        ratio_cpu = (macs_t / cpu_t) / (macs_x / cpu_x)
        ratios.append((ratio, ratio_cpu))
    t = Table(title="simulated multiply-accumulates per second (wall clock; CPU time in brackets)")
    for c in ("engine", "workload", "MACs", "wall s (CPU s)", "MAC/s wall (CPU)"):
        t.add_column(c, justify="right")
    t.add_row("taihu swsim", f"mesh GEMM {a.m}x{a.n}x{a.k} x {reps} reps "
              f"({g['percent_of_peak']:.1f} % of peak simulated)",
              f"{macs_t:.3g}", f"{wall_t:.2f} ({cpu_t:.2f})",
              f"{_rate(macs_t, wall_t)} ({_rate(macs_t, cpu_t)})")
    t.add_row("xdsl-run", f"linalg.matmul {a.xdsl_n}^3 f32 -> convert-linalg-to-loops",
              f"{macs_x:.3g}", f"{wall_x:.2f} ({cpu_x:.2f})",
              f"{_rate(macs_x, wall_x)} ({_rate(macs_x, cpu_x)})")
    if a.db_tiles > 0:
        for mode, macs, wall, cpu, rep in stream_speed(a.db_tiles):
            k = rep["kernels"][0]
            t.add_row(f"taihu swsim ({mode})",
                      f"double-buffered DMA stream, {a.db_tiles} x 4 KB tiles per CPE "
                      f"({k['dma_requests']} DMAs, {k['cycles']} cycles)",
                      f"{macs:.3g}", f"{wall:.2f} ({cpu:.2f})",
                      f"{_rate(macs, wall)} ({_rate(macs, cpu)})")
    con.print(t)
    for ratio, ratio_cpu in ratios:
        con.print(f"ratio taihu / xdsl-run = {ratio:.3g} wall, {ratio_cpu:.3g} CPU time "
                  f"(target >= 1e4: {'met' if ratio >= 1e4 else 'NOT met'} on wall clock)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
