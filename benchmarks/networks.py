"""Today's networks through taihu: import, outputs vs onnxruntime, simulated cycles, in one table.

Usage::

    python benchmarks/networks.py [MODEL.onnx ...] [--example resnet50,squeezenet,...]
                                  [--torchvision [NAMES]] [--exporters legacy,dynamo]
                                  [--random-weights SEED] [--timing-only] [--json FILE]

Per network (issue 14 item 6): whether the ONNX file imports (else the importer's one-line
error), whether the simulated outputs match onnxruntime on the same model and inputs
(``|a - b| <= 1e-5 + 1e-4 |b|``, as ``taihu-run --check``), the simulated cycles and ms at the
machine's clock (launches included), the useful % of the 742.4 GFLOPS peak (the report's
``useful_flops``: the graph's own arithmetic) and the wall seconds of import + lower + simulate.

Sources: ONNX files given on the command line; ``--example`` names (the light models shipped in
the onnx package, as ``taihu-run --example``); and, when torch and torchvision are installed (an
optional extra, never needed by the tests), ``--torchvision`` exports torchvision's
classification models (random weights, batch 1, 224x224; a comma-separated subset, default
:data:`TORCHVISION`) with each of ``--exporters``: ``legacy`` (``torch.onnx.export(...,
dynamo=False)``, opset 13) and ``dynamo`` (torch's default exporter, ``dynamo=True``). Without
torch, ``--torchvision`` stops with the install hint. Each network is independent: an error in
one stage is shown in its row and the others still run. ``--timing-only`` simulates timing only
(no outputs, no comparison: much faster).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import json
import multiprocessing as mp
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

#: torchvision classification models exported by --torchvision (a small-to-large spread)
TORCHVISION = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5",
               "efficientnet_b0", "regnet_y_400mf", "googlenet", "densenet121", "vgg11", "alexnet",
               "resnet50", "vit_b_16", "swin_t", "swin_v2_t", "maxvit_t", "efficientnet_v2_s")
EXPORTERS = ("legacy", "dynamo")


@dataclass
class Row:
    """One network's results (None: not reached / not applicable)."""

    network: str
    imported: bool = False
    matches: bool | None = None
    max_abs_err: float | None = None
    cycles: int | None = None
    ms: float | None = None
    useful_percent_of_peak: float | None = None
    wall_s: float | None = None
    error: str | None = None


def export_torchvision(names: list[str], exporters: list[str], out_dir: Path) -> list[tuple[str, Path | str]]:
    """(label, ONNX path or the export error) per model and exporter."""
    import torch
    import torchvision

    done: list[tuple[str, Path | str]] = []
    for name in names:
        model = torchvision.models.get_model(name, weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        for exp in exporters:
            label, path = f"{name} ({exp})", out_dir / f"{name}_{exp}.onnx"
            try:
                if exp == "legacy":
                    torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=13)
                else:
                    torch.onnx.export(model, (x,), str(path), dynamo=True)
                done.append((label, path))
            except Exception as e:  # noqa: BLE001 - an exporter failure is a row, not a crash
                done.append((label, f"export failed: {' '.join(str(e).split())[:160]}"))
    return done


def run_network(label: str, path: Path, random_weights: int | None, timing_only: bool) -> Row:
    """Import, lower, simulate and (with numerics) compare one ONNX file with onnxruntime."""
    from taihu.tools.ort import onnxruntime_available, onnxruntime_outputs
    from taihu.tools.run import RunError, complete_inputs, compare, load_onnx, run_swsim

    row = Row(label)
    t0 = time.perf_counter()
    try:
        source = load_onnx(path, random_weights)
    except RunError as e:
        row.error = str(e)
        return row
    row.imported = True
    try:
        inputs = complete_inputs(source.module, {}, seed=0)
        result = run_swsim(source.module, inputs, numerics=not timing_only)
    except Exception as e:  # noqa: BLE001 - a lowering or simulation failure is a row
        row.error = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
        return row
    row.wall_s = time.perf_counter() - t0
    report = result.report
    row.cycles = int(report["total_cycles"])
    row.ms = 1e3 * float(report["seconds"])
    row.useful_percent_of_peak = float(report["useful_percent_of_peak"])
    if not timing_only and onnxruntime_available():
        want = onnxruntime_outputs(source.model, inputs)
        checks = compare(result.outputs, want, "onnxruntime")
        row.matches = all(c.ok for c in checks)
        row.max_abs_err = max((c.max_abs for c in checks), default=0.0)
    return row


def _in_child(label: str, path: Path, random_weights: int | None, timing_only: bool) -> Row:
    """:func:`run_network` in a fresh process, so what a simulation keeps (weights, compiled
    bodies) is returned to the system after each network instead of accumulating over a list."""
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as ex:
        try:
            return ex.submit(run_network, label, path, random_weights, timing_only).result()
        except cf.process.BrokenProcessPool:  # e.g. killed for memory
            return Row(label, error="the process running it died (out of memory?)")


def render(rows: list[Row], console: Console) -> None:
    t = Table(title="networks on the simulated SW26010 core group")
    for col in ("network", "import", "outputs", "max |err|", "cycles", "ms", "useful % peak", "wall s", "error"):
        t.add_column(col, justify="right" if col not in ("network", "error") else "left")

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    for r in rows:
        t.add_row(r.network, "ok" if r.imported else "FAIL",
                  "-" if r.matches is None else ("match" if r.matches else "MISMATCH"),
                  f(r.max_abs_err, ".2e"), f(r.cycles, ","), f(r.ms, ".3f"), f(r.useful_percent_of_peak, ".1f"),
                  f(r.wall_s, ".1f"), r.error or "")
    console.print(t)
    ok = sum(r.imported for r in rows)
    matched = sum(bool(r.matches) for r in rows)
    console.print(f"{ok}/{len(rows)} imported, {matched} matched onnxruntime")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path, help="ONNX files")
    ap.add_argument("--example", default="", help="comma-separated light models (taihu-run --example names)")
    ap.add_argument("--torchvision", nargs="?", const=",".join(TORCHVISION), default=None, metavar="NAMES",
                    help="export torchvision models first (needs torch + torchvision)")
    ap.add_argument("--exporters", default=",".join(EXPORTERS), help="legacy,dynamo")
    ap.add_argument("--random-weights", type=int, default=None, metavar="SEED")
    ap.add_argument("--timing-only", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write the rows as JSON")
    args = ap.parse_args(argv)
    from taihu.tools.atomic import write_atomically
    from taihu.tools.run import example_path

    console = Console(width=200)
    jobs: list[tuple[str, Path | str]] = [(str(p), p) for p in args.models]
    jobs += [(n, example_path(n)) for n in args.example.split(",") if n]
    with tempfile.TemporaryDirectory() as tmp:
        if args.torchvision is not None:
            if importlib.util.find_spec("torch") is None or importlib.util.find_spec("torchvision") is None:
                console.print("--torchvision needs torch and torchvision: pip install torch torchvision")
                return 2
            exporters = [e for e in args.exporters.split(",") if e]
            bad = [e for e in exporters if e not in EXPORTERS]
            if bad:
                console.print(f"--exporters: unknown {bad} (known: {', '.join(EXPORTERS)})")
                return 2
            jobs += export_torchvision([n for n in args.torchvision.split(",") if n], exporters, Path(tmp))
        if not jobs:
            ap.error("nothing to run: give ONNX files, --example or --torchvision")
        rows = []
        for label, where in jobs:
            if isinstance(where, str):  # the export failed
                rows.append(Row(label, error=where))
            else:
                rows.append(_in_child(label, where, args.random_weights, args.timing_only))
            console.print(f"[dim]{label}: done[/dim]")
            if args.json is not None:  # the rows so far: an interrupted run keeps them
                write_atomically(args.json, json.dumps([asdict(r) for r in rows], indent=1))
    render(rows, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
