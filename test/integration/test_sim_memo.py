"""Launch memo (backends/sim/memo.py): replaying a recorded launch gives exactly the report and
the trace of simulating it (every event: times, DMA addresses, RLC flow ids), in lockstep and
per-CPE mode; launches whose timing could differ are simulated. With numerics, the replay
re-runs the recorded queue of data effects re-based on the new arguments: outputs, registers
and LDM equal those of the full simulation."""

from __future__ import annotations

import importlib.util
import io
import json
import os

import pytest
from xdsl.parser import Parser

from taihu.backends.sim.pftrace import write_pftrace
from taihu.backends.sim.runner import KernelProgram, ensure_swsim, simulate
from taihu.dialects import sw
from taihu.passes.pipelines import default_context

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sw")


def parse(text: str):
    mod = Parser(default_context(), text).parse_module()
    mod.verify()
    return mod


def program(text: str, name: str) -> KernelProgram:
    mod = parse(text)
    ensure_swsim(mod)
    return KernelProgram(next(o for o in mod.walk()
                              if isinstance(o, sw.KernelOp) and o.sym_name.data == name))


def _double_buffer(tiles: int, tile_bytes: int, **kw) -> str:
    path = os.path.join(EXAMPLES, "double_buffer.py")
    spec = importlib.util.spec_from_file_location("double_buffer", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.double_buffer_mlir(tiles, tile_bytes, **kw)


def repeated_stream(main: list[str], tiles: int = 3, tile_bytes: int = 1024, **kw) -> str:
    """double_buffer's module with a second copy of the kernel (@stream2), extra globals of the
    same shape (X2, Y2, a larger Z) and the host program ``main`` (lines)."""
    text = _double_buffer(tiles, tile_bytes, **kw)
    head, rest = text.split("sw.kernel @stream", 1)
    kernel, _ = ("sw.kernel @stream" + rest).split("func.func @main", 1)
    n = tile_bytes // 8
    g = (f"sw.global @X2 : tensor<{tiles}x64x{n}xf64> io input\n"
         f"sw.global @Y2 : tensor<{tiles}x64x{n}xf64> io output\n"
         f"sw.global @Z : tensor<{tiles + 1}x64x{n}xf64> io output\n")
    return (head + g + kernel + kernel.replace("@stream(", "@stream2(") + "func.func @main() {\n"
            + "".join(f"  {x}\n" for x in main) + "  func.return\n}\n")


MAIN = ["%x = sw.global_addr @X", "%y = sw.global_addr @Y", "%x2 = sw.global_addr @X2",
        "%y2 = sw.global_addr @Y2", "%z = sw.global_addr @Z", "%c8 = arith.constant 8 : i64",
        "%z8 = arith.addi %z, %c8 : i64",
        "sw.spawn @stream(%x, %y)", "sw.join",      # DMA round-robin pointers still initial
        "sw.spawn @stream2(%x2, %y2)", "sw.join",   # same body, other buffers: simulated
        "sw.spawn @stream(%x2, %z)", "sw.join",     # output in a larger buffer: simulated
        "sw.spawn @stream(%x, %z)", "sw.join",      # ... replayed
        "sw.spawn @stream(%x, %z8)", "sw.join",     # other alignment: simulated
        "sw.spawn @stream2(%y, %y2)", "sw.join"]   # replayed (same class as the first)


def run(text: str, **kw):
    return simulate(parse(text), numerics=False, trace=True, **kw)


def pftrace_bytes(trace) -> bytes:
    buf = io.BytesIO()
    write_pftrace(trace, buf)
    return buf.getvalue()


def assert_memo_exact(text: str, lockstep: bool = True) -> object:
    a = run(text, memo=True, lockstep=lockstep)
    b = run(text, memo=False, lockstep=lockstep)
    assert json.dumps(a.report) == json.dumps(b.report)
    assert a.engine.trace.events == b.engine.trace.events
    assert a.engine.trace.to_json() == b.engine.trace.to_json()
    assert pftrace_bytes(a.engine.trace) == pftrace_bytes(b.engine.trace)  # (replays' compact entries)
    assert (a.engine.reg_ready == b.engine.reg_ready).all()
    assert [c.t for c in a.engine.cpes] == [c.t for c in b.engine.cpes]
    assert [c.replies for c in a.engine.cpes] == [c.replies for c in b.engine.cpes]
    assert b.engine.memo is None
    return a


@pytest.mark.parametrize("lockstep", [True, False])
def test_memo_replays_repeated_dma_kernels_exactly(lockstep):
    a = assert_memo_exact(repeated_stream(MAIN), lockstep)
    memo = a.engine.memo
    assert (memo.hits, memo.misses) == (2, 4)


def test_memo_with_barriers_and_contention():
    a = assert_memo_exact(repeated_stream(MAIN, tiles=4, tile_bytes=2048, barrier="row"))
    assert a.engine.memo.hits == 2


def test_memo_replays_rlc_kernels_exactly():
    """mesh_gemm's SUMMA kernel (RLC broadcasts, flow ids in the trace) launched three times."""
    with open(os.path.join(EXAMPLES, "mesh_gemm.mlir")) as f:
        text = f.read()
    text = text.replace("    sw.spawn @gemm()\n    sw.join\n",
                        "    sw.spawn @gemm()\n    sw.join\n" * 3)
    a = assert_memo_exact(text)
    # @load and @store are launched once: never recorded
    assert (a.engine.memo.hits, a.engine.memo.misses) == (2, 1)
    flows = [e for e in a.engine.trace.events if e[0] == "s"]
    assert len({e[6] for e in flows}) == len(flows)  # flow ids stay unique


def test_memo_plan_classifies_arguments():
    kp = program(repeated_stream(MAIN), "stream")
    exact, pointers, dma_base = kp.memo_plan()
    assert exact == frozenset() and pointers == {0, 1}
    assert sorted(set(dma_base.values())) == [0, 1]


def test_memo_skips_kernels_whose_timing_reads_an_argument():
    """An argument used as a loop bound is keyed by its value: different counts are simulated,
    equal ones replayed."""
    text = repeated_stream(MAIN)
    text = text.replace("sw.kernel @stream(%x: i64, %y: i64)", "sw.kernel @stream(%x: i64, %y: i64, %n: i64)")
    text = text.replace("%nt = arith.constant 3 : i64", "%nt = arith.addi %n, %c0 : i64", 1)
    main = ["%x = sw.global_addr @X", "%y = sw.global_addr @Y", "%z = sw.global_addr @Z",
            "%c2 = arith.constant 2 : i64", "%c3 = arith.constant 3 : i64",
            "sw.spawn @stream(%x, %y, %c2)", "sw.join", "sw.spawn @stream(%x, %y, %c3)", "sw.join",
            "sw.spawn @stream(%x, %y, %c2)", "sw.join", "sw.spawn @stream(%x, %y, %c2)", "sw.join"]
    text = text.split("func.func @main")[0].replace(
        "sw.kernel @stream2(", "sw.kernel @unused(") + "func.func @main() {\n" + \
        "".join(f"  {x}\n" for x in main) + "  func.return\n}\n"
    a = assert_memo_exact(text)
    kp = program(text, "stream")
    assert kp.memo_plan()[0] == {2}
    # the third launch differs from the first in the DMA round-robin pointers only
    assert (a.engine.memo.hits, a.engine.memo.misses) == (1, 3)


def assert_memo_exact_numerics(text: str, lockstep: bool = True) -> object:
    a = simulate(parse(text), trace=True, lockstep=lockstep)  # memo on by default
    b = simulate(parse(text), trace=True, lockstep=lockstep, memo=False)
    assert json.dumps(a.report) == json.dumps(b.report)
    assert a.engine.trace.events == b.engine.trace.events
    assert a.outputs.keys() == b.outputs.keys() and a.outputs
    for k, v in b.outputs.items():
        assert a.outputs[k].tobytes() == v.tobytes(), k
    assert (a.engine.regs == b.engine.regs).all()
    assert (a.engine.ldm.data == b.engine.ldm.data).all()
    assert not a.engine.tasks and b.engine.memo is None
    return a


@pytest.mark.parametrize("lockstep", [True, False])
def test_memo_with_numerics_moves_the_replayed_launches_data(lockstep):
    """The replayed launches copy other buffers than the recorded ones (X -> Z after X2 -> Z,
    Y -> Y2 after X -> Y): their DMA effects are re-based on the new arguments."""
    a = assert_memo_exact_numerics(repeated_stream(MAIN), lockstep)
    assert (a.engine.memo.hits, a.engine.memo.misses) == (2, 4)
    a = assert_memo_exact_numerics(repeated_stream(MAIN, tiles=4, tile_bytes=2048,
                                                   barrier="row"), lockstep)
    assert a.engine.memo.hits == 2


@pytest.mark.parametrize("lockstep", [True, False])
def test_memo_with_numerics_replays_rlc_kernels(lockstep):
    """mesh_gemm's SUMMA kernel accumulates C in LDM: three launches (two replayed, their
    micro-kernel runs and RLC messages re-created from the record) give 3 A.B."""
    with open(os.path.join(EXAMPLES, "mesh_gemm.mlir")) as f:
        text = f.read()
    once = simulate(parse(text), memo=False).outputs["CT"]
    text = text.replace("    sw.spawn @gemm()\n    sw.join\n",
                        "    sw.spawn @gemm()\n    sw.join\n" * 3)
    a = assert_memo_exact_numerics(text, lockstep)
    assert a.engine.memo.hits == 2
    assert abs(a.outputs["CT"] - 3 * once).max() < 1e-9 * abs(once).max()


def test_memo_does_not_store_launches_flushed_before_their_join(monkeypatch):
    """A data-effect queue flushed before the join (long DMA stretches) is incomplete at the
    join: such launches are simulated every time."""
    from taihu.backends.sim.engine import Engine

    queue_data = Engine.queue_data

    def flushing(self, req, snap):
        queue_data(self, req, snap)
        self.flush_numerics()

    monkeypatch.setattr(Engine, "queue_data", flushing)
    a = assert_memo_exact_numerics(repeated_stream(MAIN))
    assert (a.engine.memo.hits, a.engine.memo.misses) == (0, 6)
