"""Parallel kernel simulation (backends/sim/parallel.py, ``simulate(client=...)``, ``taihu-run
--workers/--scheduler``): a timing-only run simulated ahead on Dask workers gives the very
report and trace of the sequential run; the DMA buses' round-robin pointers carry a launch's
timing over to the next one (the reason the workers simulate from predicted start states);
failed jobs fall back to this process; option errors are one-line diagnostics."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import time

import pytest

from taihu.backends.sim import parallel
from taihu.backends.sim.parallel import LaunchJob, load_program, program_bytes, simulate_launch
from taihu.backends.sim.program import ADD, Bin
from taihu.backends.sim.runner import simulate
from taihu.dialects import graph
from taihu.passes.pipelines import lower_to_swsim
from taihu.test.integration.test_sim_memo import MAIN, parse, program, repeated_stream
from taihu.test.unit.graph_builder import G

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """Two single-threaded workers in this process (quick to start; the jobs still go through
    Dask's pickling)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _cnn():
    """A tiny CNN: conv3x3+relu twice on the same shapes (one kernel body, two launches), a
    residual sum + relu and a 1x1 conv; timing only, so the weights are never read."""
    g = G((1, 32, 8, 8), (32, 32, 3, 3), (32,), (32, 32, 3, 3), (32,), (16, 32, 1, 1))
    x, w1, b1, w2, b2, w3 = g.args
    y1 = g(graph.ReluOp(g(graph.Conv2dOp(x, w1, b1, pads=(1, 1, 1, 1)), "c1")), "r1")
    y2 = g(graph.ReluOp(g(graph.Conv2dOp(y1, w2, b2, pads=(1, 1, 1, 1)), "c2")), "r2")
    s = g(graph.ReluOp(g(graph.AddOp(y1, y2), "s")), "sr")
    module = g.module(g(graph.Conv2dOp(s, w3, None), "c3"))
    lower_to_swsim(module)
    return module


@pytest.fixture(scope="module")
def cnn_text():
    return str(_cnn())


def _assert_same(a, b) -> None:
    assert json.dumps(a.report) == json.dumps(b.report)
    assert a.engine.trace.events == b.engine.trace.events
    assert a.engine.trace.to_json() == b.engine.trace.to_json()


def test_program_bytes_round_trip():
    kp = program(repeated_stream(MAIN), "stream")
    data = program_bytes(kp)
    back = load_program(data)
    assert back.signature() == kp.signature() and back.name == kp.name
    assert back.memo_plan()[:2] == kp.memo_plan()[:2]
    assert back.kernel is None and back.memo_check is None
    # the functions of the records are the interpreter's own objects (taint compares identity)
    adds = [r for r in _walk(back.code) if isinstance(r, Bin) and r.fn is ADD]
    assert adds and len(adds) == len([r for r in _walk(kp.code) if isinstance(r, Bin) and r.fn is ADD])


def _walk(code):
    for rec in code:
        yield rec
        for sub in ("body", "then", "els"):
            yield from _walk(getattr(rec, sub, ()))


@pytest.mark.parametrize("lockstep", [None, False])
def test_workers_give_the_sequential_report_and_trace(client, lockstep):
    text = repeated_stream(MAIN, tiles=4, tile_bytes=2048, barrier="row")
    a = simulate(parse(text), numerics=False, trace=True, lockstep=lockstep)
    b = simulate(parse(text), numerics=False, trace=True, lockstep=lockstep, client=client)
    _assert_same(a, b)
    # whether a worker's record arrives before the host reaches its launch depends on the machine's
    # load (a late one is simulated by the host: same report); that records made elsewhere are
    # replayed is asserted deterministically with _AtOnce below. The sequential memo's replays stay.
    assert b.engine.memo.hits >= a.engine.memo.hits


def test_workers_on_a_lowered_cnn(client, cnn_text):
    a = simulate(parse(cnn_text), numerics=False, trace=True)
    b = simulate(parse(cnn_text), numerics=False, trace=True, client=client)
    _assert_same(a, b)
    assert len(b.report["kernels"]) >= 5
    assert b.engine.memo.hits >= a.engine.memo.hits  # (timing-dependent beyond that, see above)


class _Done:
    """A finished job of :class:`_AtOnce`."""

    def __init__(self, key: int, value) -> None:
        self.key, self.value, self.status = key, value, "finished"

    def result(self):
        return self.value

    def cancel(self) -> None:
        pass


class _AtOnce:
    """A stand-in for a ``distributed.Client`` that runs every job when it is submitted, in
    this process, and keeps the jobs."""

    def __init__(self) -> None:
        self.jobs: list[LaunchJob] = []

    def scheduler_info(self) -> dict:
        return {"workers": {"here": {}}}

    def processing(self) -> dict:
        return {}

    def submit(self, fn, job, pure: bool = True, priority: int = 0) -> _Done:
        self.jobs.append(job)
        return _Done(len(self.jobs), fn(job))


def test_speculation_with_jobs_run_at_once(cnn_text):
    a = simulate(parse(cnn_text), numerics=False, trace=True)
    at_once = _AtOnce()
    b = simulate(parse(cnn_text), numerics=False, trace=True, client=at_once)
    _assert_same(a, b)
    assert at_once.jobs and b.engine.memo.hits > a.engine.memo.hits


def test_a_launch_depends_on_the_bus_pointers_it_starts_from(cnn_text):
    """The premise of the speculation: the same launch from other round-robin pointers takes
    other cycles (a launch's record is keyed by them; a join does not reset them)."""
    at_once = _AtOnce()
    simulate(parse(cnn_text), numerics=False, client=at_once)
    conv = next(j for j in at_once.jobs if j.name == "c1")  # the first 3x3 conv (a GEMM)
    durations = set()
    for buses in [(-1, -1, -1, -1), (5, 7, 9, 11), (15, 3, 0, 8)]:
        out = simulate_launch(dataclasses.replace(conv, buses=buses))
        assert out.record is not None and out.key[1] == buses
        durations.add(out.record.duration)
    assert len(durations) > 1


def test_failed_jobs_are_simulated_here(client, monkeypatch):
    def broken(job):
        raise RuntimeError("worker lost")

    monkeypatch.setattr(parallel, "simulate_launch", broken)
    text = repeated_stream(MAIN)
    a = simulate(parse(text), numerics=False, trace=True)
    b = simulate(parse(text), numerics=False, trace=True, client=client)
    _assert_same(a, b)


def test_numerics_ignore_the_client(client):
    text = repeated_stream(MAIN)
    a = simulate(parse(text))
    b = simulate(parse(text), client=client)
    assert json.dumps(a.report) == json.dumps(b.report)
    assert a.outputs.keys() == b.outputs.keys()
    assert all((a.outputs[k] == b.outputs[k]).all() for k in a.outputs)
    assert b.engine.memo.hits == a.engine.memo.hits


# -- taihu-run --------------------------------------------------------------------------------
def _run(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taihu.tools.run", *argv], capture_output=True, text=True,
                          timeout=timeout)


def test_cli_workers_report_is_byte_identical(tmp_path):
    prog = tmp_path / "prog.mlir"
    prog.write_text(repeated_stream(MAIN))
    reports = []
    for workers in ("1", "2"):
        rep = tmp_path / f"r{workers}.json"
        r = _run(str(prog), "--timing-only", "--workers", workers, "--report", str(rep), "--quiet")
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        reports.append(rep.read_bytes())
    assert reports[0] == reports[1]


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_cli_workers_below_one_is_a_diagnostic(tmp_path, workers):
    prog = tmp_path / "prog.mlir"
    prog.write_text(repeated_stream(MAIN))
    r = _run(str(prog), "--timing-only", "--workers", workers)
    assert r.returncode == 1
    assert r.stderr.strip() == f"taihu-run: error: --workers {workers}: expected a number >= 1"


def test_cli_unreachable_scheduler_is_a_diagnostic(tmp_path):
    prog = tmp_path / "prog.mlir"
    prog.write_text(repeated_stream(MAIN))
    rep = tmp_path / "r.json"
    t0 = time.monotonic()
    r = _run(str(prog), "--timing-only", "--scheduler", "tcp://127.0.0.1:1", "--report", str(rep), timeout=120)
    assert time.monotonic() - t0 < 60  # the connection times out (5 s), no hang
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "taihu-run: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1: "), r.stderr
    assert not os.path.exists(rep)


def test_cli_workers_with_numerics_is_a_note(tmp_path):
    prog = tmp_path / "prog.mlir"
    prog.write_text(repeated_stream(MAIN))
    r = _run(str(prog), "--workers", "2", "--quiet")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = _run(str(prog), "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert "taihu-run: note: --workers applies to --timing-only runs" in r.stderr
