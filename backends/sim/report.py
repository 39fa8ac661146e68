"""Run report of the simulator (``taihu-run --report r.json``).

:func:`build_report` returns the report as a JSON-able dictionary; writing it is the tools' job
(``taihu-run --report`` serialises it with ``json`` and writes it atomically).

JSON schema (all cycle counts are CPE cycles at ``f_clk`` = 1.45 GHz; bytes; GFLOPS = 1e9 flop/s).

Two flop counts: ``flops`` are those the micro-kernels *executed* (padding rows and columns,
Winograd transforms, zero tiles included: the machine's view, e.g. for calibration);
``useful_flops`` are the graph ops' own arithmetic (:mod:`taihu.dialects.graph_flops`: 2 per
multiply-add, a Winograd conv counted as the direct one, maps and pools by their rule), carried
by the kernels' ``taihu.useful_flops`` attribute (once per graph op, see
``KernelBuilder``). A layer's useful flops are spread over its launches in proportion to their
executed flops (by cycles when none executed any), so an im2col or relayout kernel gets 0 and
the layer's launches sum to its count. A layer whose kernels do not all carry the attribute
(hand-written sw/loop/tile modules, or a graph op without a flop rule) counts its executed
flops as useful. The per-layer tables and the roofline use the useful figures.

Launch cost: each ``sw.spawn`` starts the CPEs ``spawn_cycles`` (machine file: the
athread_spawn + athread_join cost of one launch) after the MPE reaches it; ``launch_cycles`` is
that cost per launch, ``total_cycles`` includes it, a kernel's ``cycles`` (spawn -> join span
on the CPEs) does not::

    {
      "machine": str,             # machine description file
      "f_clk_ghz": float,         # CPE clock (1.45 GHz, 004 L453)
      "n_cpes": int,              # CPEs of the core group (64)
      "peak_gflops": float,       # fp64 peak of the core group (742.4 GFLOPS, 004 L453)
      "peak_dma_gbps": float,     # measured DMA peak bandwidth (30.94 GB/s, 004 L597)
      "total_cycles": int,        # end of the last kernel (host program time, launches included)
      "seconds": float,           # total_cycles / f_clk
      "launches": int,            # sw.spawn executed
      "launch_cycles": int,       # sum of the kernels' launch_cycles
      "flops": int,               # floating-point operations executed by micro-kernels
      "gflops": float,            # flops / seconds / 1e9
      "percent_of_peak": float,   # gflops / peak_cg_gflops (742.4) * 100
      "useful_flops": int,        # the graph's own arithmetic (sum over the kernels)
      "useful_gflops": float,     # useful_flops / seconds / 1e9
      "useful_percent_of_peak": float,  # useful_gflops / peak_cg_gflops * 100
      "layers": [{                # kernels grouped by layer (else by name), first appearance
        "layer": str, "op": str | None,
        "kernels": [str, ...],                 # names of its launches
        "cycles": int, "launch_cycles": int,   # sums over its launches
        "flops": int, "useful_flops": int      # executed / useful, sums over its launches
      }, ...],
      "kernels": [{
        "name": str, "cycles": int,            # spawn -> join of this launch (CPE side)
        "launch_cycles": int,                  # MPE cycles before the CPEs start (spawn_cycles)
        "flops": int, "gflops": float, "percent_of_peak": float,   # executed
        "useful_flops": int, "useful_gflops": float, "useful_percent_of_peak": float,
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
        "arithmetic_intensity": float | None,  # flops / dma_bytes (None without DMA), executed
        "useful_intensity": float | None,      # useful_flops / dma_bytes (None without DMA)
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

#: the integer attribute of ``sw.kernel`` (or of a shared kernel's ``sw.spawn``) with the
#: useful flops it carries for its layer (set by convert-graph-to-tile's ``KernelBuilder``)
USEFUL_FLOPS_ATTR = "taihu.useful_flops"


def split_proportionally(total: int, weights: list[int]) -> list[int]:
    """``total`` split into non-negative ints proportional to ``weights`` that sum to ``total``
    (largest remainders get the rest; equal parts when every weight is 0; [] for no weights)."""
    if not weights:
        return []
    if sum(weights) <= 0:
        weights = [1] * len(weights)
    wsum = sum(weights)
    parts = [total * w // wsum for w in weights]
    rest = total - sum(parts)
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % wsum), i))
    for i in order[:rest]:
        parts[i] += 1
    return parts


def _useful_per_kernel(kernels: list[dict[str, Any]], carried: list[int | None]) -> list[int]:
    """Each kernel's useful flops: its layer's carried count (``carried[i]``: kernel i's
    ``taihu.useful_flops``) spread by executed flops (else cycles); a layer with a kernel
    carrying none counts its executed flops."""
    groups: dict[str, list[int]] = {}
    for i, k in enumerate(kernels):
        groups.setdefault(k.get("layer") or k["name"], []).append(i)
    out = [0] * len(kernels)
    for idx in groups.values():
        if any(carried[i] is None for i in idx):
            for i in idx:
                out[i] = kernels[i]["flops"]
            continue
        total = sum(carried[i] or 0 for i in idx)
        weights = [kernels[i]["flops"] for i in idx]
        if sum(weights) == 0:
            weights = [kernels[i]["cycles"] for i in idx]
        for i, part in zip(idx, split_proportionally(total, weights)):
            out[i] = part
    return out


def layer_summary(kernels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's ``layers``: kernel entries grouped by ``layer`` (else name), in order of
    first appearance, with their cycles, launch cycles, executed and useful flops summed."""
    rows: dict[str, dict[str, Any]] = {}
    for k in kernels:
        key = k.get("layer") or k["name"]
        r = rows.get(key)
        if r is None:
            r = rows[key] = {"layer": key, "op": k.get("op"), "kernels": [], "cycles": 0,
                             "launch_cycles": 0, "flops": 0, "useful_flops": 0}
        r["kernels"].append(k["name"])
        for f in ("cycles", "launch_cycles", "flops", "useful_flops"):
            r[f] += k[f]
    return list(rows.values())


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
        "launch_cycles": k.launch_cycles,
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


def _add_useful(k: dict[str, Any], useful: int, machine) -> None:
    secs = machine.cycles_to_seconds(k["cycles"])
    k["useful_flops"] = useful
    k["useful_gflops"] = g = useful / secs / 1e9 if secs > 0 else 0.0
    k["useful_percent_of_peak"] = 100.0 * g / machine.peak_cg_gflops
    k["useful_intensity"] = useful / k["dma_bytes"] if k["dma_bytes"] else None


def build_report(engine, kernel_info: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The report dictionary of a finished :class:`~taihu.backends.sim.engine.Engine`.

    ``kernel_info``: kernel name -> ``{"layer", "op", "algorithm", "shape", "useful_flops"}``
    (from the ``sw.kernel`` attributes, see :data:`KERNEL_INFO_ATTRS` and
    :data:`USEFUL_FLOPS_ATTR`; None or missing = absent)."""
    m = engine.machine
    info = kernel_info or {}
    kernels = [kernel_report(k, m, info.get(k.name)) for k in engine.kernels]
    carried = [(info.get(k.name) or {}).get("useful_flops") for k in engine.kernels]
    for k, useful in zip(kernels, _useful_per_kernel(kernels, carried)):
        _add_useful(k, useful, m)
    total = max([engine.mpe.t] + [k.end for k in engine.kernels])
    secs = m.cycles_to_seconds(total)
    flops = sum(k.flops for k in engine.kernels)
    gflops = flops / secs / 1e9 if secs > 0 else 0.0
    useful = sum(k["useful_flops"] for k in kernels)
    ugflops = useful / secs / 1e9 if secs > 0 else 0.0
    return {
        "machine": os.path.basename(m.source),
        "f_clk_ghz": m.f_clk_ghz,
        "n_cpes": m.n_cpes,
        "peak_gflops": m.peak_cg_gflops,
        "peak_dma_gbps": m.peak_bw_cg,
        "total_cycles": total,
        "seconds": secs,
        "launches": len(kernels),
        "launch_cycles": sum(k["launch_cycles"] for k in kernels),
        "flops": flops,
        "gflops": gflops,
        "percent_of_peak": 100.0 * gflops / m.peak_cg_gflops,
        "useful_flops": useful,
        "useful_gflops": ugflops,
        "useful_percent_of_peak": 100.0 * ugflops / m.peak_cg_gflops,
        "layers": layer_summary(kernels),
        "kernels": kernels,
    }
