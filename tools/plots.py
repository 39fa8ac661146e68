"""``taihu-run --plot DIR``: matplotlib figures of a simulator report (PNG).

- ``roofline.png``: one point per kernel launch — arithmetic intensity (useful flop per byte
  moved by DMA between main memory and LDM) against the simulated useful GFLOPS (the report's
  ``useful_flops``: the graph ops' own arithmetic, not the padded or transformed work the
  micro-kernels executed; a report without them: the executed flops) — under the core group's roofs:
  the fp64 compute peak (``peak_gflops``, 742.4 GFLOPS = 64 CPEs x 8 flop/cycle x 1.45 GHz,
  004 L453) and the DMA bandwidth roof (``peak_dma_gbps`` x intensity, 30.94 GB/s, 004 L597);
  the ridge point is their crossing (24 flop/B). Point area ~ the kernel's share of the run
  time, colour = its bound (compute / DMA / RLC). Kernels without useful flops (im2col,
  relayouts, copies) or without DMA have no place on log axes: their count is noted in the legend.
- ``layers.png``: per layer (report kernels grouped by ``layer``, see
  :func:`taihu.tools.run.layer_rows`), a horizontal stacked bar of the time in ms at ``f_clk``
  split into launch (the MPE's spawn/join cost, ``launch_cycles``) / compute / DMA / RLC / idle
  (the report's per-kernel ``breakdown``, mean per CPE).

:func:`render_plots` returns the PNG bytes of both by file name; ``taihu-run`` writes them into
``DIR`` together with its other outputs (all or nothing, :mod:`taihu.tools.atomic`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

#: colours of the bound classes and breakdown parts (colour-blind safe Okabe-Ito palette)
COLOURS = {"compute": "#0072B2", "DMA": "#E69F00", "dma": "#E69F00", "RLC": "#009E73",
           "rlc": "#009E73", "idle": "#BBBBBB", "launch": "#CC79A7"}


def _useful(k: Mapping[str, Any]) -> tuple[int, float]:
    """(useful flops, useful GFLOPS) of a report kernel (executed ones in an older report)."""
    return k.get("useful_flops", k["flops"]), k.get("useful_gflops", k["gflops"])


def roofline(report: Mapping[str, Any], title: str = ""):
    """The roofline figure (a matplotlib Figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    peak = report.get("peak_gflops", 742.4)
    bw = report.get("peak_dma_gbps", 30.94)
    total = max(1, sum(k["cycles"] for k in report["kernels"]))
    shown = [k for k in report["kernels"] if _useful(k)[0] > 0 and _useful(k)[1] > 0]
    pts = [k for k in shown if k["dma_bytes"] > 0]
    no_dma = [k for k in shown if k["dma_bytes"] == 0]
    left_out = len(report["kernels"]) - len(pts) - len(no_dma)
    ai = np.array([_useful(k)[0] / k["dma_bytes"] for k in pts])
    lo = min([0.05, *(ai / 2).tolist()])
    hi = max([1000.0, *(ai * 2).tolist()])
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = np.logspace(np.log10(lo), np.log10(hi), 400)
    ax.plot(xs, np.minimum(peak, bw * xs), color="black", lw=2)
    ridge = peak / bw
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(f"compute roof {peak:.1f} GFLOPS", (hi, peak), xytext=(-5, 5), textcoords="offset points",
                ha="right", va="bottom")
    ax.annotate(f"DMA roof {bw:.2f} GB/s", (lo * 1.3, bw * lo * 1.3), xytext=(5, 8),
                textcoords="offset points", rotation=0, ha="left", va="bottom")
    ax.annotate(f"ridge {ridge:.1f} flop/B", (ridge, peak * 0.02), xytext=(4, 0),
                textcoords="offset points", color="grey")
    for bound in ("compute", "DMA", "RLC"):
        sel = [i for i, k in enumerate(pts) if k["bound"] == bound]
        if not sel:
            continue
        sizes = [20 + 600 * pts[i]["cycles"] / total for i in sel]
        ax.scatter(ai[sel], [_useful(pts[i])[1] for i in sel], s=sizes, c=COLOURS[bound], alpha=0.75,
                   edgecolors="black", linewidths=0.5, label=f"{bound}-bound kernels ({len(sel)})", zorder=3)
    if no_dma:  # operands already in LDM: infinite intensity, drawn at the right edge
        ax.scatter([hi / 1.4] * len(no_dma), [_useful(k)[1] for k in no_dma],
                   s=[20 + 600 * k["cycles"] / total for k in no_dma],
                   c=[COLOURS[k["bound"]] for k in no_dma], marker=">", alpha=0.75,
                   edgecolors="black", linewidths=0.5, zorder=3,
                   label=f"kernels without DMA (intensity = inf), at the right edge ({len(no_dma)})")
    if left_out:
        ax.plot([], [], " ", label=f"{left_out} kernel(s) without useful flops not shown")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min([0.1, *[_useful(k)[1] / 2 for k in pts + no_dma]]), peak * 2.5)
    ax.set_xlabel("arithmetic intensity (useful flop / byte of DMA traffic)")
    ax.set_ylabel("performance (useful GFLOPS)")
    ax.set_title(f"{title + ': ' if title else ''}roofline of one SW26010 core group "
                 f"(point area ~ share of time)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize=9)
    fig.text(0.01, -0.02, "bound = the longest of compute, DMA (incl. 200-cycle start-ups, so small "
             "transfers can be DMA-bound right of the ridge) and RLC wait time", fontsize=8,
             color="dimgrey", ha="left", va="top")
    return fig


def layer_breakdown(report: Mapping[str, Any], title: str = ""):
    """The per-layer time breakdown figure (a matplotlib Figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from taihu.tools.run import layer_rows

    rows = layer_rows(report)
    f_clk = report.get("f_clk_ghz", 1.45)
    n = len(rows)
    height = max(3.0, 0.5 + 0.18 * n)
    fig, ax = plt.subplots(figsize=(9, height), layout="constrained")
    ypos = np.arange(n)
    left = np.zeros(n)
    small = report["seconds"] < 1e-3  # a tiny network reads better in microseconds
    unit = "µs" if small else "ms"
    to_ms = (1e3 if small else 1.0) / (f_clk * 1e6)
    for part, label in (("launch", "launch (spawn/join)"), ("compute", "compute"), ("dma", "DMA (not hidden)"),
                        ("rlc", "RLC wait"), ("idle", "idle")):
        vals = np.array([(r["launch_cycles"] if part == "launch" else r["breakdown"][part]) * to_ms
                         for r in rows])
        ax.barh(ypos, vals, left=left, color=COLOURS[part], label=label, height=0.8)
        left += vals
    ax.set_yticks(ypos)
    ax.set_yticklabels([f"{r['layer']} [{r['algorithm'] or '-'}]" for r in rows],
                       fontsize=8 if n <= 60 else 6)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit} at {f_clk:g} GHz; mean per CPE)")
    ax.set_ylabel("layer [algorithm]")
    ax.set_title(f"{title + ': ' if title else ''}time per layer, "
                 f"total {report['seconds'] * 1e3:.3f} ms ({report['total_cycles']} cycles)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.margins(x=0.02)
    fig.legend(loc="outside lower center", ncol=5, fontsize=9, frameon=False)
    return fig


#: the figures of ``--plot``: file name -> the function drawing it
FIGURES = {"roofline.png": roofline, "layers.png": layer_breakdown}


def render_plots(report: Mapping[str, Any], title: str = "") -> dict[str, bytes]:
    """The PNG bytes of every figure of :data:`FIGURES`, by file name (nothing is written: the
    caller writes them, e.g. with :class:`taihu.tools.atomic.OutputFiles`)."""
    import matplotlib.pyplot as plt

    pngs = {}
    for name, make in FIGURES.items():
        fig = make(report, title)
        try:
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
        finally:
            plt.close(fig)
        pngs[name] = buf.getvalue()
    return pngs
