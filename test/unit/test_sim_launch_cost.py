"""Launch cost (issue 13 item 1): every sw.spawn/sw.join costs the machine's ``spawn_cycles``
(2900 cycles = 2.0 us on sw26010.toml, a documented param) before the CPEs start; the report
shows it per launch and in total, the same on the per-CPE, lockstep and memoised paths."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.parser import Parser

from taihu.backends.sim.runner import simulate
from taihu.passes.pipelines import default_context
from taihu.target.machine import default_machine, load_machine, resolve_machine
from taihu.test.unit.sw_programs import scale_copy

# one kernel launched three times on the same arguments (the memo records the second launch
# and replays the third), then a second kernel
PROGRAM = scale_copy(("scale", "scale", "scale", "copy"))


def _run(machine=None, **kw):
    mod = Parser(default_context(), PROGRAM).parse_module()
    return simulate(mod, machine=machine, numerics=False, **kw)


def test_default_launch_cost_is_the_documented_param() -> None:
    m = default_machine()
    assert m.spawn_cycles == 2900  # 2.0 us at 1.45 GHz (reasoning in sw26010.toml)
    assert m.cycles_to_seconds(m.spawn_cycles) == pytest.approx(2.0e-6)
    pro = resolve_machine("sw26010pro")
    assert pro.cycles_to_seconds(pro.spawn_cycles) == pytest.approx(2.0e-6)  # same time at 2.25 GHz


def test_launch_cycles_per_kernel_and_total() -> None:
    m = default_machine()
    free = dataclasses.replace(m, spawn_cycles=0)
    rep, rep0 = _run(m).report, _run(free).report
    assert rep["launches"] == 4 and rep["launch_cycles"] == 4 * 2900
    assert [k["launch_cycles"] for k in rep["kernels"]] == [2900] * 4
    assert [k["launch_cycles"] for k in rep0["kernels"]] == [0] * 4
    # the launches' spans on the CPEs do not change; the host program is longer by the launches
    assert [k["cycles"] for k in rep["kernels"]] == [k["cycles"] for k in rep0["kernels"]]
    assert rep["total_cycles"] == rep0["total_cycles"] + 4 * 2900
    assert rep["total_cycles"] == sum(k["cycles"] + k["launch_cycles"] for k in rep["kernels"])
    assert [(la["layer"], la["launch_cycles"]) for la in rep["layers"]] == [("scale", 3 * 2900), ("copy", 2900)]


def test_launch_cost_same_on_every_simulator_path() -> None:
    """Per-CPE, lockstep, with and without the memo: identical reports (launch costs included)."""
    m = dataclasses.replace(default_machine(), spawn_cycles=1234)
    reps = [_run(m, lockstep=ls, memo=memo) for ls in (False, True) for memo in (False, True)]
    assert reps[1].engine.memo.hits == 1  # the third launch of @scale was replayed
    base = reps[0].report
    assert base["launch_cycles"] == 4 * 1234
    for r in reps[1:]:
        assert r.report == base


def test_machine_file_sets_the_launch_cost(tmp_path) -> None:
    src = default_machine().source
    text = open(src).read()
    assert "spawn_cycles = 2900" in text
    path = tmp_path / "slow_launch.toml"
    path.write_text(text.replace("spawn_cycles = 2900", "spawn_cycles = 14500", 1))
    rep = _run(load_machine(str(path))).report
    assert rep["launch_cycles"] == 4 * 14500 and rep["machine"] == "slow_launch.toml"
