"""Perfetto protobuf traces (``taihu-run --trace t.pftrace``, :mod:`taihu.backends.sim.pftrace`).

The written file is decoded with the ``perfetto`` package's protos (``Trace`` of packets) and
checked the way Perfetto's trace processor reads it: interned names resolved, every track
described, slices on a track not overlapping, begin/end paired, packets in time order, flow
ids paired; then its content against the simulator's events and report (every CPE event
exactly once after expanding the cohorts, DMA data phases, RLC messages, the launches with the
report's cycles, put -> get flows). The trace processor itself needs its
``trace_processor_shell`` binary, which the package downloads on first use (not possible
without network): ``test_trace_processor_query`` runs only where one is installed
(``TAIHU_TRACE_PROCESSOR=/path/to/trace_processor_shell`` or on ``PATH``).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections import Counter, defaultdict

import numpy as np
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from xdsl.parser import Parser

from taihu.backends.sim.pftrace import CpeLanes, _Writer, cpe_list, lane_rows, write_pftrace
from taihu.backends.sim.runner import simulate
from taihu.backends.sim.trace import Trace, TraceOptionError
from taihu.passes.pipelines import default_context
from taihu.test.unit.sw_programs import scale_copy
from taihu.tools.run import main

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "examples", "sw")
MESH_GEMM = os.path.join(EXAMPLES, "mesh_gemm.mlir")  # 3 launches, SUMMA over the RLC, cohorts
TP_SHELL = os.environ.get("TAIHU_TRACE_PROCESSOR") or shutil.which("trace_processor_shell")


def _simulate(text: str):
    mod = Parser(default_context(), text).parse_module()
    return simulate(mod, trace=True, numerics=False)


@pytest.fixture(scope="module")
def gemm():
    with open(MESH_GEMM) as f:
        return _simulate(f.read())


def _decode(data: bytes) -> dict:
    """The trace as the trace processor sees it: tracks, and slices with resolved names, category,
    arguments and flows; asserts the structural rules on the way."""
    t = pb.Trace()
    t.ParseFromString(data)
    packets = list(t.packet)
    first = packets[0]
    assert first.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    idata = first.interned_data
    names = {e.iid: e.name for e in idata.event_names}
    cats = {e.iid: e.name for e in idata.event_categories}
    arg_names = {e.iid: e.name for e in idata.debug_annotation_names}
    strings = {e.iid: e.str.decode() for e in idata.debug_annotation_string_values}
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in packets if p.HasField("track_descriptor")}
    for td in tracks.values():
        assert td.parent_uuid == 0 or td.parent_uuid in tracks
    open_: dict[int, list[dict]] = defaultdict(list)
    slices = []
    last = -1
    for p in packets:
        if not p.HasField("track_event"):
            continue
        assert p.trusted_packet_sequence_id == first.trusted_packet_sequence_id
        assert p.timestamp >= last  # time order
        last = p.timestamp
        te = p.track_event
        assert te.track_uuid in tracks
        if te.type == pb.TrackEvent.TYPE_SLICE_END:
            s = open_[te.track_uuid].pop()  # an end closes an open slice of its track
            s["dur"] = p.timestamp - s["ts"]
            continue
        assert te.type in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_INSTANT)
        args = {}
        for d in te.debug_annotations:
            args[arg_names[d.name_iid]] = strings[d.string_value_iid] if d.HasField("string_value_iid") else \
                d.pointer_value if d.HasField("pointer_value") else d.int_value
        s = {"track": te.track_uuid, "track_name": tracks[te.track_uuid].name, "name": names[te.name_iid],
             "cat": [cats[c] for c in te.category_iids], "ts": p.timestamp, "dur": 0, "args": args,
             "out": list(te.flow_ids), "in": list(te.terminating_flow_ids)}
        slices.append(s)
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            assert not open_[te.track_uuid], "slices of one track overlap"
            open_[te.track_uuid].append(s)
    assert not any(open_.values())  # every slice ended
    return {"tracks": tracks, "slices": slices, "size": len(data)}


def _pftrace(trace, lanes: CpeLanes) -> dict:
    buf = io.BytesIO()
    write_pftrace(trace, buf, lanes)
    return _decode(buf.getvalue())


def _lane(track_name: str) -> int:
    return int(re.match(r"(?:CPE|DMA bus|RLC row|RLC col) (\d+)", track_name).group(1))


def _cpes(s: dict) -> list[int]:
    """The CPEs a CPE slice stands for (its cohort, else its lane's CPE)."""
    if "cpes" not in s["args"]:
        return [_lane(s["track_name"])]
    out = []
    for part in s["args"]["cpes"].split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def _groups(tr: dict) -> dict[str, int]:
    return {td.name: uuid for uuid, td in tr["tracks"].items() if td.parent_uuid == 0}


@pytest.mark.parametrize("lanes", [CpeLanes(), CpeLanes(every=True), CpeLanes(cpes=frozenset({0, 1, 8, 9, 63}))])
def test_content_matches_the_simulation(gemm, lanes):
    ev = gemm.engine.trace.events
    m = gemm.engine.machine
    tr = _pftrace(gemm.engine.trace, lanes)
    groups = _groups(tr)
    own = lanes.own(m.n_cpes)
    by_group = defaultdict(list)
    for s in tr["slices"]:
        td = tr["tracks"][s["track"]]
        by_group[tr["tracks"][td.parent_uuid].name if td.parent_uuid else td.name].append(s)

    def ns(e):  # an event's (start, end) on the trace's nanosecond timeline
        return round(e[4] / m.f_clk_ghz), round(e[5] / m.f_clk_ghz)

    for s in tr["slices"]:  # exact cycles and the ns timeline agree
        if "cycle" in s["args"]:
            assert (s["ts"], s["ts"] + s["dur"]) == ns((0, 0, 0, 0, s["args"]["cycle"],
                                                        s["args"]["cycle"] + s["args"]["cycles"]))
    # the launches: one MPE slice each, the report's names and cycles
    mpe = by_group["MPE"]
    assert [(s["name"], s["args"]["cycles"]) for s in mpe] == \
        [(k["name"], k["cycles"]) for k in gemm.report["kernels"]]
    assert {c for s in mpe for c in s["cat"]} == {"launch"}
    # CPE events: every one exactly once, on the lane of the first CPE of its cohort
    want = Counter((e[2], e[3], *ns(e), e[5] - e[4]) for e in ev if e[1] == 1 and e[0] in "Xi")
    got = Counter()
    for s in by_group["CPEs"]:
        cpes = _cpes(s)
        assert _lane(s["track_name"]) == min(cpes)
        for c in cpes:
            got[(c, s["name"], s["ts"], s["ts"] + s["dur"], s["args"]["cycles"])] += 1
    assert got == want
    shared = [s for s in by_group["CPEs"] if "cpes" in s["args"]]
    assert all(not own[c] for s in shared for c in _cpes(s))
    if not lanes.every:
        assert shared and len(by_group["CPEs"]) < sum(want.values()) / 4  # cohorts draw far fewer slices
    runs = [s for s in by_group["CPEs"] if s["cat"] == ["run"]]
    assert runs and all(s["args"]["trip"] >= 1 for s in runs)
    # DMA buses: every data phase, alone (its request's arguments) or in a busy period
    dma = [e for e in ev if e[1] == 2]
    want = Counter((e[2], e[3], *ns(e), e[5] - e[4], int(e[6]["mem"], 16), e[6]["ldm"],
                    e[6]["moved"] if e[6]["moved"] != e[6]["bytes"] else None) for e in dma)
    alone = Counter((_lane(s["track_name"]), s["name"], s["ts"], s["ts"] + s["dur"], s["args"]["cycles"],
                     s["args"]["mem"], s["args"]["ldm"], s["args"].get("moved"))
                    for s in by_group["DMA buses"] if "requests" not in s["args"])
    periods = [s for s in by_group["DMA buses"] if "requests" in s["args"]]
    assert alone <= want and dma
    assert sum(alone.values()) + sum(s["args"]["requests"] for s in periods) == len(dma)
    assert sum(s["args"]["bytes"] for s in periods) == sum(e[6]["bytes"] for e in dma if not own[e[6]["cpe"]])
    assert (alone == want) == lanes.every and (not periods) == lanes.every
    # RLC: every message, each batch (all) or the batches overlapping on a lane as one slice
    rlc = [e for e in ev if e[1] == 3]
    assert sum(s["args"]["messages"] for s in by_group["RLC"]) == sum(e[6]["messages"] for e in rlc) > 0
    assert sum(s["args"].get("batches", 1) for s in by_group["RLC"]) == len(rlc)
    if lanes.every:
        assert sorted((s["track_name"], s["name"], s["ts"], s["ts"] + s["dur"]) for s in by_group["RLC"]) == \
            sorted((f"RLC {e[2]}", e[3], *ns(e)) for e in rlc)
    # flows: between CPEs on their own lanes, each id leaves one run and ends in another
    outs = Counter(f for s in tr["slices"] for f in s["out"])
    ins = Counter(f for s in tr["slices"] for f in s["in"])
    assert set(outs) == set(ins) and set(outs.values()) <= {1} and set(ins.values()) <= {1}
    assert bool(outs) == own.any()
    runs_by_flow = {f: s for s in tr["slices"] for f in s["out"] + s["in"]}
    assert all(s["cat"] == ["run"] and "cpes" not in s["args"] and own[_lane(s["track_name"])]
               for s in runs_by_flow.values())
    assert set(groups) == {"MPE", "CPEs", "DMA buses", "RLC"}


@pytest.mark.parametrize("program", ["mesh_gemm.mlir", "overlap.mlir", "rlc_broadcast.mlir", "kloop_naive.mlir"])
def test_cohort_entries_written_as_their_per_cpe_events(program):
    """The lockstep path records a cohort's runs, posted links and gets as one compact entry
    each; the writer reads them directly (cohort lanes) and writes the same bytes as from the
    per-CPE events they expand into; the expansion is what the per-CPE path records."""
    with open(os.path.join(EXAMPLES, program)) as f:
        text = f.read()
    trace = _simulate(text).engine.trace
    assert {e[0] for e in trace.log} & {"C", "L", "F"}
    direct = io.BytesIO()
    write_pftrace(trace, direct)
    w = _Writer(trace, CpeLanes())
    w.add_events(trace.events)
    expanded = io.BytesIO()
    w.write(expanded)
    assert direct.getvalue() == expanded.getvalue()
    per_cpe = simulate(Parser(default_context(), text).parse_module(), trace=True, numerics=False,
                       lockstep=False, memo=False).engine.trace
    assert not {e[0] for e in per_cpe.log} & {"C", "L", "F"}
    assert per_cpe.canonical_events() == trace.canonical_events()


def test_cohort_entries_with_other_trips_written_as_per_cpe_events(gemm):
    """Runs of the same micro-kernel at the same cycles but another trip are slices of their
    own, CPE by CPE, whether recorded per CPE or in a cohort (where the writer then reads the
    per-CPE events); a cohort whose CPEs run at different cycles is drawn per cycles."""
    trace = Trace(gemm.engine.machine, enabled=True)
    trace.span(5, 1, "k", 10, 20, {"trip": 4})
    trace.runs(np.array([0, 1, 2]), "k", 3, np.array([10, 10, 8]), np.array([10, 10, 10]), np.array([20, 20, 20]))
    trace.runs(np.array([3, 4]), "k", 4, np.array([30, 31]), np.array([33, 34]), np.array([40, 41]))
    trace.span("MPE", 0, "launch", 0, 50, {"kernel": "launch"})
    direct = io.BytesIO()
    write_pftrace(trace, direct)
    w = _Writer(trace, CpeLanes())
    w.add_events(trace.events)
    expanded = io.BytesIO()
    w.write(expanded)
    assert direct.getvalue() == expanded.getvalue()
    runs = sorted((s["name"], s["ts"], s["args"].get("cpes"), s["args"]["trip"])
                  for s in _decode(direct.getvalue())["slices"] if s["cat"] == ["run"])
    f = gemm.engine.machine.f_clk_ghz
    assert runs == sorted([("k", round(10 / f), None, 4), ("k", round(10 / f), None, 3), ("k", round(10 / f), None, 3),
                           ("k", round(10 / f), None, 3), ("k", round(33 / f), None, 4), ("k", round(34 / f), None, 4)])


@pytest.mark.parametrize("lanes", [CpeLanes(every=True), CpeLanes(cpes=frozenset({0, 1, 8, 9, 63}))])
def test_flows_join_put_and_get_runs(gemm, lanes):
    """Between CPEs on their own lanes, the arrows are exactly the simulator's links: from the
    run of the sending CPE that starts at the put to the run of the receiver that starts at the
    get."""
    ev = gemm.engine.trace.events
    f_clk = gemm.engine.machine.f_clk_ghz
    own = lanes.own(gemm.engine.machine.n_cpes)
    tr = _pftrace(gemm.engine.trace, lanes)
    src = {f: s for s in tr["slices"] for f in s["out"]}
    dst = {f: s for s in tr["slices"] for f in s["in"]}
    got = {((_lane(src[f]["track_name"]), src[f]["ts"]), (_lane(dst[f]["track_name"]), dst[f]["ts"])) for f in src}
    puts = {e[6]: (e[2], round(e[4] / f_clk)) for e in ev if e[0] == "s"}
    want = {(puts[e[6]], (e[2], round(e[4] / f_clk))) for e in ev if e[0] == "f"}
    assert got == {w for w in want if w[0] != w[1] and own[w[0][0]] and own[w[1][0]]} and got


def test_cli_writes_pftrace_and_json_unchanged(tmp_path, capsys):
    pf, js, rep = tmp_path / "t.pftrace", tmp_path / "t.json", tmp_path / "r.json"
    assert main([MESH_GEMM, "--timing-only", "--report", str(rep), "--trace", str(pf)]) == 0
    assert "trace" in capsys.readouterr().out  # its write time among the wall times
    report = json.loads(rep.read_text())
    tr = _decode(pf.read_bytes())
    mpe = [s for s in tr["slices"] if s["track_name"] == "MPE"]
    assert [(s["name"], s["args"]["cycles"]) for s in mpe] == [(k["name"], k["cycles"]) for k in report["kernels"]]
    assert main([MESH_GEMM, "--timing-only", "--quiet", "--trace", str(js)]) == 0
    # JSON: the Chrome trace as before (Trace.to_json, indent 1)
    res = _simulate(open(MESH_GEMM).read())
    assert js.read_text() == json.dumps(res.engine.trace.to_json(), indent=1) + "\n"
    assert pf.stat().st_size * 10 < js.stat().st_size
    assert main([MESH_GEMM, "--timing-only", "--quiet", "--trace", str(tmp_path / "t.perfetto-trace")]) == 0
    assert (tmp_path / "t.perfetto-trace").read_bytes() == pf.read_bytes()


def test_trace_kernels(tmp_path):
    text = scale_copy(("scale", "copy", "scale"))
    prog = tmp_path / "p.mlir"
    prog.write_text(text)
    res = _simulate(text)
    trace = res.engine.trace
    sel = trace.select_kernels(["copy"])
    ((name, first, end),) = [x for x in trace.launches() if x[0] == "copy"]
    assert sel.events == trace.events[first:end] and sel.events[-1][3] == "copy"
    assert trace.select_kernels(["sc*"]).events == [e for e in trace.events if e not in sel.events]
    with pytest.raises(TraceOptionError, match="no launch is named 'gemm' .*launches: scale, copy"):
        trace.select_kernels(["copy", "gemm"])
    pf, js = tmp_path / "t.pftrace", tmp_path / "t.json"
    assert main([str(prog), "--timing-only", "--quiet", "--trace", str(pf), "--trace-kernels", "copy"]) == 0
    tr = _decode(pf.read_bytes())
    assert [s["name"] for s in tr["slices"] if s["track_name"] == "MPE"] == ["copy"]
    f_clk = res.engine.machine.f_clk_ghz
    lo, hi = round(sel.events[-1][4] / f_clk), round(sel.events[-1][5] / f_clk)  # the launch: spawn -> join
    assert all(lo <= s["ts"] <= s["ts"] + s["dur"] <= hi for s in tr["slices"])
    assert main([str(prog), "--timing-only", "--quiet", "--trace", str(js), "--trace-kernels", " scale "]) == 0
    spans = [e for e in json.loads(js.read_text())["traceEvents"] if e.get("pid") == 0 and e["ph"] == "X"]
    assert [e["name"] for e in spans] == ["scale", "scale"]


@pytest.mark.parametrize("argv, message", [
    (["--trace", "t.txt"], "--trace t.txt: name the file T.pftrace or T.perfetto-trace"),
    (["--trace", "t.json", "--trace-cpes", "all"], "--trace-cpes applies to the Perfetto protobuf trace"),
    (["--trace-kernels", "scale"], "--trace-kernels limits the trace: it needs --trace FILE"),
    (["--trace", "t.pftrace", "--trace-kernels", ","], "--trace-kernels ',': expected launch names"),
    (["--trace", "t.pftrace", "--trace-cpes", "8-3"], "--trace-cpes '8-3': expected 'all', 'cohorts' or CPE"),
    (["--trace", "t.pftrace", "--trace-cpes", "64"], "--trace-cpes: CPE 64 does not exist (the machine has 64"),
    (["--trace", "t.pftrace", "--trace-kernels", "gemm"], "--trace-kernels: no launch is named 'gemm'"),
])
def test_trace_option_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.mlir").write_text(scale_copy())
    assert main(["p.mlir", "--timing-only", "--quiet", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("taihu-run: error: ") and message in err and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["p.mlir"]  # nothing written


def test_cpe_lanes_parse():
    assert CpeLanes.parse("all") == CpeLanes(every=True)
    assert CpeLanes.parse(" Cohorts ") == CpeLanes()
    assert CpeLanes.parse("0, 8-10,3") == CpeLanes(cpes=frozenset({0, 3, 8, 9, 10}))
    for bad in ("", "x", "1-", "3-1", "1,,2"):
        with pytest.raises(TraceOptionError):
            CpeLanes.parse(bad)
    assert list(CpeLanes.parse("1,3").own(4)) == [False, True, False, True]


def test_cpe_list():
    assert cpe_list(0) == ""
    assert cpe_list(0b1) == "0"
    assert cpe_list((1 << 64) - 1) == "0-63"
    assert cpe_list(0b1011_0001) == "0,4-5,7"
    assert cpe_list(1 << 70 | 1 << 71) == "70-71"


def test_lane_rows():
    rng = np.random.default_rng(0)
    n = 400
    lane = rng.integers(0, 5, n)
    t0 = rng.integers(0, 1000, n)
    t1 = t0 + rng.integers(0, 50, n)
    t0[lane == 4], t1[lane == 4] = np.arange(0, 20 * (lane == 4).sum(), 20), np.arange(10, 20 * (lane == 4).sum() + 10, 20)
    rows = lane_rows(lane, t0, t1)
    assert (rows[lane == 4] == 0).all()  # a lane without overlaps keeps one row
    for key in set(zip(lane.tolist(), rows.tolist())):
        sel = (lane == key[0]) & (rows == key[1])
        o = np.argsort(t0[sel], kind="stable")
        a, b = t0[sel][o], t1[sel][o]
        assert (a[1:] >= b[:-1]).all()  # no overlap within a row
    assert rows.max() > 0
    assert (lane_rows(np.zeros(3, int), np.array([0, 5, 5]), np.array([5, 5, 9])) == 0).all()


@pytest.mark.skipif(TP_SHELL is None, reason="no trace_processor_shell binary (TAIHU_TRACE_PROCESSOR or PATH); "
                    "the perfetto package downloads it on first use, which needs network")
def test_trace_processor_query(gemm, tmp_path):
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    path = tmp_path / "t.pftrace"
    with open(path, "wb") as f:
        write_pftrace(gemm.engine.trace, f)
    tp = TraceProcessor(trace=str(path), config=TraceProcessorConfig(bin_path=TP_SHELL))
    try:
        rows = list(tp.query("select s.name as name, extract_arg(s.arg_set_id, 'debug.cycles') as cycles "
                             "from slice s join track t on s.track_id = t.id where t.name = 'MPE' order by s.ts"))
        assert [(r.name, r.cycles) for r in rows] == [(k["name"], k["cycles"]) for k in gemm.report["kernels"]]
        n_flows = list(tp.query("select count(*) as n from flow"))[0].n
        assert n_flows > 0
    finally:
        tp.close()


def test_swsim_run_target_trace_by_name(tmp_path, capsys):
    """``taihu-opt -t 'swsim-run{trace=...}'`` writes the format of the file name too."""
    from taihu.tools.opt import main as opt_main

    pf = tmp_path / "t.pftrace"
    assert opt_main([MESH_GEMM, "-t", f'swsim-run{{trace="{pf}" timing-only=true}}']) == 0
    assert [s["name"] for s in _decode(pf.read_bytes())["slices"] if s["track_name"] == "MPE"] == \
        ["load", "gemm", "store"]
    capsys.readouterr()
    bad = tmp_path / "t.trace"
    assert opt_main([MESH_GEMM, "-t", f'swsim-run{{trace="{bad}" timing-only=true}}']) == 1
    err = capsys.readouterr().err
    assert f"swsim-run: trace={bad}: name the file T.pftrace" in err and not bad.exists()
