"""Spec sw26010-model.md §13 self-check examples and the §4.5 DMA table (HW-1) in cycle mode."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from taihu.target.dma import moved, moved_strided, txn, waste
from taihu.backends.sim.engine import DeadlockError, Engine
from taihu.target.machine import default_machine
from taihu.backends.sim.microkernel import MicroKernel
from taihu.backends.sim.pipeline import Instr, schedule_body
from taihu.backends.sim.rlc import RLCError

#: the spec's cycles count from the kernel's start: the launch cost (spawn_cycles) is left out
M = dataclasses.replace(default_machine(), spawn_cycles=0)


def run_kernel(kernel, args=(), machine=M, eng=None):
    eng = eng or Engine(machine)

    def host(mpe):
        yield from mpe.spawn(kernel, args, name="k")
        yield from mpe.join()

    eng.run_host(host)
    return eng


def test_waste_definition():
    assert txn(0, 1024) == 8 and waste(0, 1024) == 0
    assert txn(64, 128) == 2 and moved(64, 128) == 256 and waste(64, 128) == 128
    assert moved_strided(0, 640, 64, 64) == 1280  # case 4
    assert moved_strided(96, 640, 64, 64) == 2560  # case 5


def _single_get(size, misalign=0, cpes=(0,), bsize=0, stride=0):
    """Each CPE in ``cpes`` issues one get at t = 0; returns {cpe: completion cycle}."""
    eng = Engine(M)
    span = 32768  # bytes of main memory reserved per CPE
    base = eng.memory.alloc(64 * span + 4096, "src")
    done = {}

    def k(cpe):
        if cpe.id not in cpes:
            return
        yield from cpe.dma_get(base + misalign + cpe.id * span, 0, size, reply=0, bsize=bsize,
                               stride=stride)
        yield from cpe.dma_wait(0, 1)
        done[cpe.id] = cpe.t

    run_kernel(k, eng=eng)
    return done


def test_case1_single_cpe_1024():
    assert _single_get(1024) == {0: 392}


def test_case2_all_cpes_1024():
    done = _single_get(1024, cpes=range(64))
    assert max(done.values()) == 200 + 16 * 192 == 3272
    assert sorted(done.values())[:4] == [392] * 4
    # one per bus in the first group
    first = [c for c, t in done.items() if t == 392]
    assert sorted(M.dma_bus_of(c) for c in first) == [0, 1, 2, 3]


def test_case3_channel_buffer():
    eng = Engine(M)
    base = eng.memory.alloc(4096, "src")
    issue, done = [], []
    orig = eng.on_dma_complete

    def record(req):
        done.append(eng.now)
        orig(req)

    eng.on_dma_complete = record

    def k(cpe):
        if cpe.id:
            return
        for i in range(5):
            yield from cpe.dma_get(base + 128 * i, 128 * i, 128, reply=0)
            issue.append(cpe.t - 1)
        yield from cpe.dma_wait(0, 5)

    run_kernel(k, eng=eng)
    assert issue == [0, 1, 2, 3, 224]
    assert done == [224, 448, 672, 896, 1120]


def test_case4_5_strided():
    assert _single_get(640, bsize=64, stride=64) == {0: 440}
    assert _single_get(640, misalign=96, bsize=64, stride=64) == {0: 680}


def test_dma_moves_real_bytes_strided_and_put():
    eng = Engine(M)
    src = eng.memory.alloc(1280, "src")
    dst = eng.memory.alloc(640, "dst")
    data = np.arange(160, dtype=np.float64)
    eng.memory.write(src, data)

    def k(cpe):
        if cpe.id != 5:
            return
        yield from cpe.dma_get(src, 0, 640, reply=0, bsize=64, stride=64)
        yield from cpe.dma_wait(0, 1)
        yield from cpe.dma_put(0, dst, 640, reply=1)
        yield from cpe.dma_wait(1, 1)

    run_kernel(k, eng=eng)
    got = eng.memory.read(dst, 640).view(np.float64)
    np.testing.assert_array_equal(got, data.reshape(10, 16)[:, :8].reshape(-1))


def test_dma_bounds_error():
    from taihu.backends.sim.dma import DMAError

    eng = Engine(M)
    src = eng.memory.alloc(256, "src")

    def k(cpe):
        if cpe.id == 0:
            yield from cpe.dma_get(src, 0, 512, reply=0)

    with pytest.raises(DMAError, match="overruns buffer 'src'"):
        run_kernel(k, eng=eng)


# ---- §4.5 table (HW-1) -----------------------------------------------------------------
CONT = [(32, 5.09, 5.09), (64, 10.17, 10.17), (128, 20.34, 12.27), (256, 24.55, 17.57),
        (512, 27.37, 22.42), (1024, 29.05, 26.00), (2048, 29.96, 28.25),
        (4096, 30.44, 29.54), (16384, 30.81, 30.58)]
STRIDED = [(16, 3.68, 3.36), (32, 7.35, 6.18), (64, 14.70, 9.97), (128, 29.41, 15.85),
           (256, 30.15, 20.96), (512, 30.54, 24.99), (1024, 30.74, 27.65), (2048, 30.84, 29.20)]


def _aggregate_bw(size, misalign=0, bsize=0, stride=0):
    done = _single_get(size, misalign, range(64), bsize, stride)
    cycles = max(done.values())
    return 64 * size / (cycles / (M.f_clk_ghz * 1e9)) / 1e9


@pytest.mark.parametrize("size,aligned,mis", CONT)
def test_hw1_contiguous_table(size, aligned, mis):
    # cycle mode rounds each data phase up to whole cycles: agreement to 1.5 %
    assert _aggregate_bw(size) == pytest.approx(aligned, rel=0.015)
    assert _aggregate_bw(size, misalign=64) == pytest.approx(mis, rel=0.015)


@pytest.mark.parametrize("bsize,aligned,drift", STRIDED)
def test_hw1_strided_table(bsize, aligned, drift):
    size = 10 * bsize
    stride_al = (-bsize) % 128 if bsize % 128 else 0
    assert _aggregate_bw(size, bsize=bsize, stride=stride_al) == pytest.approx(aligned, rel=0.015)
    assert _aggregate_bw(size, bsize=bsize, stride=4) == pytest.approx(drift, rel=0.015)


# ---- RLC (cases 6-9) ---------------------------------------------------------------------
def _mk(*ins, name="mk", strides=()):
    return MicroKernel(tuple(ins), strides, name)


def test_case6_putr_latency():
    seen = {}
    put = _mk(Instr("putr", (), (1,), rlc_dst=1), name="put")
    get = _mk(Instr("getr", (2,), ()), name="get")

    def k(cpe, t):
        if cpe.id == 0:
            cpe.advance(t)
            cpe.regs[1] = np.array([1.0, 2.0, 3.0, 4.0])
            seen["put"] = cpe.t
            yield from cpe.run(put, 1)
        elif cpe.id == 1:
            yield from cpe.run(get, 1)
            seen["ready"] = cpe.reg_ready[2]
            seen["val"] = cpe.regs[2].copy()

    run_kernel(k, (50,))
    assert seen["ready"] == seen["put"] + 12
    np.testing.assert_array_equal(seen["val"], [1, 2, 3, 4])


def test_case7_row_broadcast():
    got = {}
    put = _mk(Instr("putr", (), (1,), rlc_dst=8))
    get = _mk(Instr("getr", (2,), ()))
    src = 3 * 8 + 5

    def k(cpe):
        if cpe.id == src:
            cpe.regs[1] = np.full(4, 7.0)
            yield from cpe.run(put, 1)
        elif cpe.row == 3:
            yield from cpe.run(get, 1)
            got[cpe.id] = (cpe.reg_ready[2] - 1, cpe.regs[2][0])

    eng = run_kernel(k)
    assert sorted(got) == [24, 25, 26, 27, 28, 30, 31]
    assert all(v == (11, 7.0) for v in got.values())
    assert eng.rlc.fifo["row"][src].available() == 0


def test_case8_illegal_target():
    put = _mk(Instr("putr", (), (1,), rlc_dst=0))

    def k(cpe):
        if cpe.id == 0:
            yield from cpe.run(put, 1)

    with pytest.raises(RLCError, match="own column"):
        run_kernel(k)


def test_case9_send_buffer_full_deadlock():
    put = _mk(Instr("putr", (), (1,), rlc_dst=1), name="nine_puts")

    def k(cpe):
        if cpe.id == 0:
            yield from cpe.run(put, 9)

    with pytest.raises(DeadlockError) as e:
        run_kernel(k)
    msg = str(e.value)
    assert "CPE 0 (0,0)" in msg and "send buffer full" in msg and "MPE" in msg


def test_deadlock_getr_without_putr():
    get = _mk(Instr("getr", (2,), ()), name="lonely_get")

    def k(cpe):
        if cpe.id == 9:
            yield from cpe.run(get, 1)

    with pytest.raises(DeadlockError, match=r"CPE 9 \(1,1\): getr in 'lonely_get'"):
        run_kernel(k)


# ---- VMAD (case 10) -----------------------------------------------------------------------
def test_case10_vmad_latency():
    two = schedule_body((Instr("vmad", (0,), (1, 2, 0)), Instr("vmad", (0,), (3, 4, 0))), M)
    assert two.issue[0, 1] - two.issue[0, 0] == 7
    indep = tuple(Instr("vmad", (i,), (20, 21, i)) for i in range(16))
    t = schedule_body(indep, M)
    assert t.cycles(1) == 16 and t.ii == 16


def test_dma_bcast_mode_one_request_many_ldms():
    """spec §4.3 rule 7: BCAST_MODE is one request of the issuer, delivered to the same LDM
    address of every CPE of the rows selected by the mask."""
    eng = Engine(M)
    src = eng.memory.alloc(1024, "src")
    data = np.arange(128, dtype=np.float64)
    eng.memory.write(src, data)
    done = {}

    def k(cpe):
        if cpe.id == 9:
            yield from cpe.dma_get(src, 256, 1024, reply=0, mode="bcast", mask=0b101)
            yield from cpe.dma_wait(0, 1)
            done["t"] = cpe.t

    run_kernel(k, eng=eng)
    assert done["t"] == 392  # one 1024-B request
    got = eng.ldm.f64[:, 32:160]
    for c in range(64):
        want = data if c // 8 in (0, 2) else np.zeros(128)
        np.testing.assert_array_equal(got[c], want)


def test_dma_row_mode_is_rejected():
    from taihu.backends.sim.dma import DMAError

    eng = Engine(M)
    src = eng.memory.alloc(1024, "src")

    def k(cpe):
        if cpe.id == 0:
            yield from cpe.dma_get(src, 0, 1024, reply=0, mode="row")

    with pytest.raises(DMAError, match="mode 'row' is not supported"):
        run_kernel(k, eng=eng)
