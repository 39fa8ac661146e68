"""Simulation speed: simulated multiply-accumulates per wall second, taihu vs ``xdsl-run``.

Usage: ``python benchmarks/sim_speed.py [--m 128 --n 128 --k 1664] [--volume 1024] [--xdsl-n 64]``

* taihu: the mesh GEMM primitive (``examples/sw/mesh_gemm.py``, fp64, LDM-resident, RLC SUMMA,
  Listing 4.1 k-loop) with ``reps`` repetitions of its 8 SUMMA steps so that
  ``M·N·K·reps >= volume³`` (default: the volume of a 1024³ DGEMM), simulated in cycle mode with
  real numerics; the result is checked against numpy.
* baseline: ``xdsl-run`` executing a ``linalg.matmul`` of 64³ f32 lowered by xDSL's
  ``convert-linalg-to-loops`` (scalar ``scf.for`` loops interpreted op by op).

Both are measured in this run (wall clock, including parsing; CPU time too, which is steadier on
a shared machine) and printed side by side with the ratio (target >= 1e4, issue 3).
"""

from __future__ import annotations

import argparse
import importlib.util
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


def taihu_speed(m: int, n: int, k: int, volume: int) -> tuple[float, float, float, int, dict]:
    """(MACs, wall seconds, CPU seconds, reps, gemm kernel report)."""
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects as xdsl_dialects
    from xdsl.parser import Parser

    from taihu.backends.sim.runner import simulate
    from taihu.tools.universe import get_all_dialects

    spec = importlib.util.spec_from_file_location(
        "mesh_gemm", os.path.join(ROOT, "examples", "sw", "mesh_gemm.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    reps = math.ceil(volume**3 / (m * n * k))
    rng = np.random.default_rng(0)
    at, b = rng.standard_normal((k, m)), rng.standard_normal((k, n))
    t0 = time.perf_counter()
    c0 = time.process_time()
    ctx = Context()
    for name, f in {**xdsl_dialects(), **get_all_dialects()}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, f)
    mod = Parser(ctx, gen.mesh_gemm_mlir(m, n, k, reps)).parse_module()
    res = simulate(mod, inputs={"AT": at, "B": b})
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    ref = reps * (at.T @ b).T
    err = float(np.abs(res.outputs["CT"] - ref).max() / np.abs(ref).max())
    if err > 1e-10:
        raise SystemExit(f"mesh GEMM result differs from numpy (relative error {err:.2e})")
    g = next(x for x in res.report["kernels"] if x["name"] == "gemm")
    return float(m * n * k * reps), wall, cpu, reps, g


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=128)
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--k", type=int, default=1664)
    p.add_argument("--volume", type=int, default=1024, help="DGEMM edge whose volume is simulated")
    p.add_argument("--xdsl-n", type=int, default=64, help="edge of the xdsl-run f32 matmul")
    a = p.parse_args(argv)
    con = Console()
    macs_t, wall_t, cpu_t, reps, g = taihu_speed(a.m, a.n, a.k, a.volume)
    macs_x, wall_x, cpu_x = xdsl_speed(a.xdsl_n)
    t = Table(title="simulated multiply-accumulates per second (wall clock; CPU time in brackets)")
    for c in ("engine", "workload", "MACs", "wall s (CPU s)", "MAC/s wall (CPU)"):
        t.add_column(c, justify="right")
    t.add_row("taihu swsim", f"mesh GEMM {a.m}x{a.n}x{a.k} x {reps} reps "
              f"({g['percent_of_peak']:.1f} % of peak simulated)",
              f"{macs_t:.3g}", f"{wall_t:.2f} ({cpu_t:.2f})",
              f"{macs_t / wall_t:.3g} ({macs_t / cpu_t:.3g})")
    t.add_row("xdsl-run", f"linalg.matmul {a.xdsl_n}^3 f32 -> convert-linalg-to-loops",
              f"{macs_x:.3g}", f"{wall_x:.2f} ({cpu_x:.2f})",
              f"{macs_x / wall_x:.3g} ({macs_x / cpu_x:.3g})")
    con.print(t)
    ratio = (macs_t / wall_t) / (macs_x / wall_x)
    ratio_cpu = (macs_t / cpu_t) / (macs_x / cpu_x)
    con.print(f"ratio taihu / xdsl-run = {ratio:.3g} wall, {ratio_cpu:.3g} CPU time (target >= 1e4: "
              f"{'met' if ratio >= 1e4 else 'NOT met'} on wall clock)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
