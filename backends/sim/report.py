"""Run report of the simulator (``taihu-run --report r.json``).

:func:`build_report` returns the report as a JSON-able dictionary; writing it is the tools' job
(``taihu-run --report`` serialises it with ``json`` and writes it atomically).

JSON schema (all cycle counts are CPE cycles at ``f_clk`` = 1.45 GHz; bytes; GFLOPS = 1e9 flop/s)::

    {
      "machine": str,             # machine description file
      "f_clk_ghz": float,         # CPE clock (1.45 GHz, 004 L453)
      "n_cpes": int,              # CPEs of the core group (64)
      "peak_gflops": float,       # fp64 peak of the core group (742.4 GFLOPS, 004 L453)
      "peak_dma_gbps": float,     # measured DMA peak bandwidth (30.94 GB/s, 004 L597)
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
        "ldm_high_water": int,                 # bytes of LDM allocated per CPE (max)
        "rlc_wait": int,                       # cycles CPEs waited for RLC messages or send
                                               #   back-pressure, summed over CPEs
        "dma_gbps": float,                     # dma_bytes / (cycles / f_clk) / 1e9
        "arithmetic_intensity": float | None,  # flops / dma_bytes (None without DMA)
        "bound": "compute" | "DMA" | "RLC",    # the largest of t_compute, t_dma, rlc_wait / n_cpes
        "breakdown": {                         # the span ``cycles`` split per CPE (mean), sums
          "compute": int,                      #   to cycles: micro-kernel run cycles / n_cpes,
          "rlc": int,                          #   RLC waits / n_cpes,
          "dma": int,                          #   DMA not hidden behind them (<= t_dma),
          "idle": int                          #   the rest (spawn, scalar code, imbalance)
        },
        # from the sw.kernel's discardable attributes (contract-lower.md; null when absent):
        "layer": str | None,                   # taihu.layer: graph layer (ONNX node output name)
        "op": str | None,                      # taihu.op: graph op, e.g. "graph.conv2d"
        "algorithm": str | None,               # taihu.algorithm: "implicit", "im2col", "gemm", ...
        "shape": str | None                    # taihu.shape: "1x64x56x56 <- 1x64x56x56 * 64x64x3x3"
      }, ...]
    }
"""

from __future__ import annotations

import os
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


#: the discardable attributes of ``sw.kernel`` copied into each report entry (key -> attribute)
KERNEL_INFO_ATTRS = {"layer": "taihu.layer", "op": "taihu.op", "algorithm": "taihu.algorithm",
                     "shape": "taihu.shape"}


def breakdown(cycles: int, p_cycles: int, rlc_wait: int, t_dma: int, n_cpes: int) -> dict[str, int]:
    """Split a kernel's span into mean per-CPE compute / RLC wait / exposed DMA / idle cycles
    (in that priority; the parts sum to ``cycles``)."""
    compute = min(cycles, round(p_cycles / n_cpes))
    rlc = min(cycles - compute, round(rlc_wait / n_cpes))
    dma = min(cycles - compute - rlc, t_dma)
    return {"compute": compute, "rlc": rlc, "dma": dma, "idle": cycles - compute - rlc - dma}


def bound_of(t_compute: int, t_dma: int, rlc_per_cpe: float) -> str:
    """"compute", "DMA" or "RLC": the resource with the longest time (ties: compute first)."""
    best = max(t_compute, t_dma, rlc_per_cpe)
    return "compute" if t_compute == best else "DMA" if t_dma == best else "RLC"


def kernel_report(k, machine, info: dict[str, Any] | None = None) -> dict[str, Any]:
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
        "rlc_wait": k.rlc_wait,
        "dma_gbps": k.dma_bytes / secs / 1e9 if secs > 0 else 0.0,
        "arithmetic_intensity": k.flops / k.dma_bytes if k.dma_bytes else None,
        "bound": bound_of(t_compute, t_dma, k.rlc_wait / machine.n_cpes),
        "breakdown": breakdown(cycles, k.p_cycles, k.rlc_wait, t_dma, machine.n_cpes),
        **{key: (info or {}).get(key) for key in KERNEL_INFO_ATTRS},
    }


def build_report(engine, kernel_info: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The report dictionary of a finished :class:`~taihu.backends.sim.engine.Engine`.

    ``kernel_info``: kernel name -> ``{"layer", "op", "algorithm", "shape"}`` (from the
    ``sw.kernel`` attributes, see :data:`KERNEL_INFO_ATTRS`)."""
    m = engine.machine
    info = kernel_info or {}
    kernels = [kernel_report(k, m, info.get(k.name)) for k in engine.kernels]
    total = max([engine.mpe.t] + [k.end for k in engine.kernels])
    secs = m.cycles_to_seconds(total)
    flops = sum(k.flops for k in engine.kernels)
    gflops = flops / secs / 1e9 if secs > 0 else 0.0
    return {
        "machine": os.path.basename(m.source),
        "f_clk_ghz": m.f_clk_ghz,
        "n_cpes": m.n_cpes,
        "peak_gflops": m.peak_cg_gflops,
        "peak_dma_gbps": m.peak_bw_cg,
        "total_cycles": total,
        "seconds": secs,
        "flops": flops,
        "gflops": gflops,
        "percent_of_peak": 100.0 * gflops / m.peak_cg_gflops,
        "kernels": kernels,
    }
