"""The text tables of ``taihu-run`` and of the ``swsim-run`` target: outputs and per-layer report.

Each printer writes to ``file`` (default: ``sys.stdout`` at call time): a rich table with a
title on a terminal, plain aligned text (title line, then the columns; 200 columns wide, no
colour) on anything else -- a pipe, a file, the ``StringIO`` of an xDSL target.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # rich is imported where a table is made
    from rich.console import JustifyMethod


def _stream(file: IO[str] | None) -> IO[str]:
    return sys.stdout if file is None else file


def _is_terminal(file: IO[str]) -> bool:
    isatty = getattr(file, "isatty", None)
    return bool(isatty and isatty())


def console(file: IO[str] | None = None):
    """``(rich Console on file, is_terminal)``: 200 columns and no colour when not a terminal."""
    from rich.console import Console

    out = _stream(file)
    terminal = _is_terminal(out)
    return Console(file=out, width=None if terminal else 200, no_color=not terminal,
                   highlight=False), terminal


def new_table(title: str | None, columns: list[tuple[str, JustifyMethod]], file: IO[str] | None = None):
    """An empty rich ``Table`` with ``columns`` = [(header, justify)]; boxed and titled only
    when ``file`` is a terminal (plain text otherwise: :func:`print_titled` prints the title)."""
    from rich import box
    from rich.table import Table

    terminal = _is_terminal(_stream(file))
    table = Table(title=title if terminal else None, box=box.SIMPLE_HEAVY if terminal else None,
                  show_edge=terminal, pad_edge=False, collapse_padding=terminal)
    for col, justify in columns:
        table.add_column(col, justify=justify, no_wrap=True)
    return table


def print_titled(table, title: str, file: IO[str] | None = None) -> None:
    """Print ``table`` to ``file``, preceded by ``title`` on its own line when not a terminal."""
    out, terminal = console(file)
    if not terminal:
        out.print(title)
    out.print(table)


def checksums(value: np.ndarray) -> tuple[float, float]:
    """(sum, L2 norm) of ``value``, accumulated in float64."""
    v = np.asarray(value, dtype=np.float64)
    return float(v.sum()), float(np.sqrt(np.square(v).sum()))


def print_table(outputs: Mapping[str, np.ndarray], title: str, file: IO[str] | None = None) -> None:
    """Output name / shape / dtype / sum / L2 norm: rich table on a terminal, plain text otherwise."""
    table = new_table(title, [("output", "left"), ("shape", "left"), ("dtype", "left"),
                              ("sum", "right"), ("l2", "right")], file)
    for name, value in outputs.items():
        s, l2 = checksums(value)
        shape = "x".join(str(d) for d in value.shape) or "scalar"
        table.add_row(name, shape, str(value.dtype), f"{s:.6g}", f"{l2:.6g}")
    print_titled(table, title, file)


# --------------------------------------------------------------------------------------------
# the per-layer table


def layer_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Aggregate the report's kernels by ``layer`` (kernels without one: by kernel name), in
    order of first appearance. Each row: layer, algorithm ("+"-joined distinct), shape, op,
    kernels, cycles, launch_cycles, flops (executed), useful_flops, dma_bytes, t_compute, t_dma,
    rlc_wait, breakdown (summed), and the derived ms (of ``cycles``: the launches' spans, their
    launch cost apart), gflops and percent_of_peak (of the **useful** flops), executed_gflops,
    dma_gbps, bound. A kernel entry without ``useful_flops`` / ``launch_cycles`` (a report of
    an older taihu) counts its executed flops / no launch cost."""
    from taihu.backends.sim.report import bound_of

    f_clk = report.get("f_clk_ghz", 1.45)
    peak = report.get("peak_gflops", 742.4)
    n_cpes = report.get("n_cpes", 64)
    rows: dict[str, dict[str, Any]] = {}
    for k in report["kernels"]:
        key = k.get("layer") or k["name"]
        r = rows.get(key)
        if r is None:
            r = rows[key] = {"layer": key, "algorithms": [], "shape": None, "op": k.get("op"),
                             "kernels": 0, "cycles": 0, "launch_cycles": 0, "flops": 0,
                             "useful_flops": 0, "dma_bytes": 0, "t_compute": 0, "t_dma": 0, "rlc_wait": 0,
                             "breakdown": {"compute": 0, "rlc": 0, "dma": 0, "idle": 0}}
        alg = k.get("algorithm")
        if alg and alg not in r["algorithms"]:
            r["algorithms"].append(alg)
        if r["shape"] is None or (k.get("shape") and k["flops"] >= r.get("_shape_flops", -1)):
            if k.get("shape"):
                r["shape"], r["_shape_flops"] = k["shape"], k["flops"]
        r["kernels"] += 1
        for f in ("cycles", "flops", "dma_bytes", "t_compute", "t_dma", "rlc_wait"):
            r[f] += k[f]
        r["launch_cycles"] += k.get("launch_cycles", 0)
        r["useful_flops"] += k.get("useful_flops", k["flops"])
        for part, v in k.get("breakdown", {}).items():
            r["breakdown"][part] += v
    out = []
    for r in rows.values():
        r.pop("_shape_flops", None)
        secs = r["cycles"] / (f_clk * 1e9)
        r["algorithm"] = "+".join(r.pop("algorithms")) or None
        r["ms"] = secs * 1e3
        r["gflops"] = r["useful_flops"] / secs / 1e9 if secs > 0 else 0.0
        r["percent_of_peak"] = 100.0 * r["gflops"] / peak
        r["executed_gflops"] = r["flops"] / secs / 1e9 if secs > 0 else 0.0
        r["dma_gbps"] = r["dma_bytes"] / secs / 1e9 if secs > 0 else 0.0
        r["bound"] = bound_of(r["t_compute"], r["t_dma"], r["rlc_wait"] / n_cpes)
        out.append(r)
    return out


def layer_table_title(shown: str, report: Mapping[str, Any]) -> str:
    """``"<shown> on the simulated core group (<machine>): <cycles> cycles = <ms> ms"``."""
    return (f"{shown} on the simulated core group ({report['machine']}): {report['total_cycles']} "
            f"cycles = {report['seconds'] * 1e3:.3f} ms")


def print_layer_table(report: Mapping[str, Any], title: str, file: IO[str] | None = None) -> None:
    """The per-layer table (see :func:`layer_rows`) with the network total as last row.

    Columns: layer, algorithm, shape, cycles (the launches' spans), launch (their launch cost,
    cycles), ms (of cycles), MFLOP (useful: the graph's own arithmetic), exec MFLOP (executed
    by the micro-kernels, padding and transforms included), GFLOPS and % peak (useful flops /
    ms), DMA GB/s, bound. The total row: ``total_cycles`` (launches included), its ms, the
    network's useful GFLOPS and % of peak over that time.
    On a terminal narrower than 120 columns the (long) shape column is left out."""
    out, terminal = console(file)
    shape = not terminal or out.width >= 120
    cols: list[tuple[str, JustifyMethod]] = [
        ("layer", "left"), ("algorithm", "left"), ("shape", "left"), ("cycles", "right"),
        ("launch", "right"), ("ms", "right"), ("MFLOP", "right"), ("exec MFLOP", "right"),
        ("GFLOPS", "right"), ("% peak", "right"), ("DMA GB/s", "right"), ("bound", "left")]
    table = new_table(title, [c for c in cols if shape or c[0] != "shape"], file)
    if not shape:
        table.caption = "(widen the terminal to 120 columns for the shape column)"

    def add(*cells: str) -> None:
        table.add_row(*(c for i, c in enumerate(cells) if shape or i != 2))

    rows = layer_rows(report)
    for r in rows:
        add(r["layer"], r["algorithm"] or "-", r["shape"] or "-", str(r["cycles"]),
            str(r["launch_cycles"]), f"{r['ms']:.3f}", f"{r['useful_flops'] / 1e6:.1f}",
            f"{r['flops'] / 1e6:.1f}", f"{r['gflops']:.1f}", f"{r['percent_of_peak']:.1f}",
            f"{r['dma_gbps']:.2f}", r["bound"])
    secs = report["seconds"]
    dma = sum(k["dma_bytes"] for k in report["kernels"])
    useful = sum(r["useful_flops"] for r in rows)
    ugflops = useful / secs / 1e9 if secs else 0.0
    table.add_section()
    tot_bound = max(("compute", sum(r["t_compute"] for r in rows)), ("DMA", sum(r["t_dma"] for r in rows)),
                    ("RLC", sum(r["rlc_wait"] for r in rows) / report.get("n_cpes", 64)),
                    key=lambda x: x[1])[0] if rows else "-"
    add(f"total ({len(rows)} layers)", f"{len(report['kernels'])} kernels", "",
        str(report["total_cycles"]), str(sum(r["launch_cycles"] for r in rows)), f"{secs * 1e3:.3f}",
        f"{useful / 1e6:.1f}", f"{report['flops'] / 1e6:.1f}", f"{ugflops:.1f}",
        f"{100.0 * ugflops / report.get('peak_gflops', 742.4):.1f}",
        f"{dma / secs / 1e9 if secs else 0.0:.2f}", tot_bound)
    print_titled(table, title, file)


__all__ = ["checksums", "console", "layer_rows", "layer_table_title", "new_table", "print_layer_table",
           "print_table", "print_titled"]
