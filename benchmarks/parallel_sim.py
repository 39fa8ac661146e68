"""Parallel kernel simulation: ``taihu-run --timing-only`` with ``--workers 1, 2, ...`` side by side.

Usage: ``python benchmarks/parallel_sim.py [--networks resnet50,...] [--workers 1,2] [--runs 3]``

For each network, ``taihu-run --example NET --random-weights 0 --timing-only --report R`` runs as
a subprocess ``--runs`` times per worker count, the counts in turn (1, 2, 1, 2, ...: a drift of
the machine's speed hits every count alike), after one warm-up run each. Per count: the median
wall seconds of the whole command (import, lowering, the Dask cluster's start-up, simulation),
of its ``simulate`` stage (as the command prints it) and the CPU seconds of the command and every
process it started (the Dask scheduler and workers included: what the run cost the machine);
the ratio to ``--workers 1`` is the median of the per-round ratios (wall, simulate, CPU). Every
report must be byte-identical to the first count's (else the row says MISMATCH): the worker count
changes the speed, never the result.

On a machine with fewer free cores than workers the ratios can exceed 1: workers only help when
they have cores of their own (``backends/sim/parallel.py`` explains what they do).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

_SIMULATE = re.compile(r"simulate ([0-9.]+) s")


@dataclass
class Sample:
    wall: float
    simulate: float | None
    cpu: float


@dataclass
class Count:
    workers: int
    samples: list[Sample] = field(default_factory=list)
    identical: bool = True
    error: str | None = None


def run_once(network: str, workers: int, report: str) -> Sample:
    """One ``taihu-run`` of ``network`` (timing only) with ``workers``; its times."""
    cmd = [sys.executable, "-m", "taihu.tools.run", "--example", network, "--random-weights", "0",
           "--timing-only", "--workers", str(workers), "--report", report]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    m = _SIMULATE.search(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Sample(wall, float(m.group(1)) if m else None, cpu)


def bench(network: str, counts: list[int], runs: int, tmp: str) -> list[Count]:
    rows = [Count(w) for w in counts]
    reports = {w: os.path.join(tmp, f"{network}-{w}.json") for w in counts}
    for rnd in range(runs + 1):  # round 0: warm-up
        for row in rows:
            if row.error:
                continue
            try:
                s = run_once(network, row.workers, reports[row.workers])
            except RuntimeError as e:
                row.error = str(e)
                continue
            if rnd:
                row.samples.append(s)
            with open(reports[counts[0]], "rb") as a, open(reports[row.workers], "rb") as b:
                row.identical &= a.read() == b.read()
    return rows


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _ratio(row: Count, base: Count, key: str) -> str:
    pairs = [(getattr(a, key), getattr(b, key)) for a, b in zip(row.samples, base.samples)]
    pairs = [(a, b) for a, b in pairs if a is not None and b]
    return f"{statistics.median(a / b for a, b in pairs):.2f}" if pairs else "-"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", default="resnet50", help="comma-separated --example names (default: resnet50)")
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts (default: 1,2)")
    p.add_argument("--runs", type=int, default=3, help="counted runs per count (default: 3; one warm-up more)")
    args = p.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]
    if any(w < 1 for w in counts) or args.runs < 1:
        p.error("worker counts and --runs must be >= 1")
    console = Console(width=130)
    table = Table(title=f"taihu-run --timing-only, medians of {args.runs} runs ({os.cpu_count()} cores)")
    for col in ("network", "workers", "wall s", "simulate s", "CPU s", "wall / 1", "simulate / 1",
                "CPU / 1", "report"):
        table.add_column(col, justify="left" if col in ("network", "report") else "right")
    with tempfile.TemporaryDirectory() as tmp:
        for net in args.networks.split(","):
            rows = bench(net, counts, args.runs, tmp)
            base = rows[0]
            for row in rows:
                if row.error:
                    table.add_row(net, str(row.workers), row.error, *["-"] * 6)
                    continue
                sims = [s.simulate for s in row.samples if s.simulate is not None]
                table.add_row(net, str(row.workers), f"{_median([s.wall for s in row.samples]):.2f}",
                              f"{_median(sims):.2f}" if sims else "-",
                              f"{_median([s.cpu for s in row.samples]):.2f}",
                              _ratio(row, base, "wall"), _ratio(row, base, "simulate"), _ratio(row, base, "cpu"),
                              "identical" if row.identical else "MISMATCH")
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
