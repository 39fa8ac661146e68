"""Run report of the simulator (``taihu-run --report r.json``).

JSON schema (all cycle counts are CPE cycles at ``f_clk`` = 1.45 GHz; bytes; GFLOPS = 1e9 flop/s)::

    {
      "machine": str,             # machine description file
      "total_cycles": int,        # end of the last kernel (host program time)
      "seconds": float,           # total_cycles / f_clk
      "flops": int,               # floating-point operations executed by micro-kernels
      "gflops": float,            # flops / seconds / 1e9
      "percent_of_peak": float,   # gflops / peak_cg_gflops (742.4) * 100
      "kernels": [{
        "name": str, "cycles": int,            # spawn -> join of this launch
        "flops": int, "gflops": float, "percent_of_peak": float,
        "dma_bytes": int,                      # bytes requested by DMA descriptors
        "dma_waste_bytes": int,                # moved (whole 128-B transactions) - requested
        "dma_requests": int,
        "rlc_messages": int,                   # PUT-type instructions issued (a broadcast = 1)
        "p0_valid": int, "p0_idle": int,       # summed over CPEs over micro-kernel runs
        "p1_valid": int, "p1_idle": int,       #   (Px_idle = run cycles - Px_valid, spec §6.3)
        "ee": float,                           # max(P0_valid, P1_valid) / run cycles (004 L622)
        "t_dma": int,                          # cycles during which some DMA of the kernel was
                                               #   in start-up or data phase (union of intervals)
        "t_compute": int,                      # max over CPEs of micro-kernel run cycles
        "t_overlap": int,                      # t_dma + t_compute - cycles (eq 3-3), >= 0
        "ldm_high_water": int                  # bytes of LDM allocated per CPE (max)
      }, ...]
    }
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total = 0
    end = None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def kernel_report(k, machine) -> dict[str, Any]:
    cycles = max(0, k.end - k.start)
    secs = machine.cycles_to_seconds(cycles)
    gflops = k.flops / secs / 1e9 if secs > 0 else 0.0
    t_dma = _union_length(k.dma_intervals)
    t_compute = int(np.max(k.compute_per_cpe)) if len(k.compute_per_cpe) else 0
    pc = k.p_cycles
    return {
        "name": k.name,
        "cycles": cycles,
        "flops": k.flops,
        "gflops": gflops,
        "percent_of_peak": 100.0 * gflops / machine.peak_cg_gflops,
        "dma_bytes": k.dma_bytes,
        "dma_waste_bytes": k.dma_moved - k.dma_bytes,
        "dma_requests": k.dma_count,
        "rlc_messages": k.rlc_messages,
        "p0_valid": k.p0_valid,
        "p0_idle": pc - k.p0_valid,
        "p1_valid": k.p1_valid,
        "p1_idle": pc - k.p1_valid,
        "ee": (max(k.p0_valid, k.p1_valid) / pc) if pc else 0.0,
        "t_dma": t_dma,
        "t_compute": t_compute,
        "t_overlap": max(0, t_dma + t_compute - cycles),
        "ldm_high_water": k.ldm_high_water,
    }


def build_report(engine) -> dict[str, Any]:
    """The report dictionary of a finished :class:`~taihu.backends.sim.engine.Engine`."""
    m = engine.machine
    kernels = [kernel_report(k, m) for k in engine.kernels]
    total = max([engine.mpe.t] + [k.end for k in engine.kernels])
    secs = m.cycles_to_seconds(total)
    flops = sum(k.flops for k in engine.kernels)
    gflops = flops / secs / 1e9 if secs > 0 else 0.0
    return {
        "machine": os.path.basename(m.source),
        "total_cycles": total,
        "seconds": secs,
        "flops": flops,
        "gflops": gflops,
        "percent_of_peak": 100.0 * gflops / m.peak_cg_gflops,
        "kernels": kernels,
    }


def write_json_atomically(path: str, obj: Any) -> None:
    """Write ``obj`` as JSON through a temporary file (never a partial file)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".taihu-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
