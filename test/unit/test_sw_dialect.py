"""Tests of the sw dialect's Python API (used by the simulator) and of the hand-written examples.

The examples' register code is checked here independently of the simulator: a minimal
sequential interpreter of micro-kernel bodies (one CPE, no timing) runs the Listing 4.1 k-loop
and its naive variant and compares with numpy; the Listing 4.1 schedule is checked against the
latency rules of 004 L819 (load >= 4 cycles before use, VMAD destination reused >= 7 later).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, scf
from xdsl.parser import Parser

from taihu.target.machine import default_machine
from taihu.dialects import sw

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sw")


def _ctx() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, scf.Scf, sw.Sw):
        ctx.load_dialect(d)
    return ctx


def _parse(text: str) -> builtin.ModuleOp:
    m = Parser(_ctx(), text).parse_module()
    m.verify()
    return m


def _example(name: str) -> builtin.ModuleOp:
    with open(os.path.join(EXAMPLES, name)) as f:
        return _parse(f.read())


def _microkernels(m: builtin.ModuleOp) -> list[sw.MicrokernelOp]:
    return [op for op in m.walk() if isinstance(op, sw.MicrokernelOp)]


def test_instruction_api() -> None:
    m = _parse(
        """
        sw.kernel @k(%a: i64) {
          %b = sw.ldm_alloc 256
          sw.microkernel trip 8 (%b step 32, %a step 32 mem) {
            sw.vldd r1, 32(p0, r9)
            sw.vmad r1, r2, r3
            sw.vmad r1, r2, r3, r4
            sw.addl r5, 8, r6
            sw.putr r1, 8
            sw.getc r7
            sw.lddec r8, 8(p0)
            sw.gld r10, 0(p1)
            sw.vsts r1, 16(p0)
          }
        }
        """
    )
    (mk,) = _microkernels(m)
    assert mk.trip == 8 and mk.pointer_strides() == (32, 32) and mk.mem_pointer_indices() == {1}
    vldd, vmad3, vmad4, addl, putr, getc, lddec, gld, vsts = mk.instructions()
    mach = default_machine()
    assert (vldd.mnemonic, vldd.kind, vldd.reads(), vldd.writes()) == ("vldd", "load", (9,), (1,))
    assert vldd.mem() == sw.MemOperand(0, 32, 32, "f64", 4, False, "load", "ldm", 9)
    assert vldd.timing(mach) == mach.instruction("vldd")
    assert (vmad3.reads(), vmad3.writes(), vmad3.flops) == ((1, 2, 3), (3,), 8)
    assert (vmad4.reads(), vmad4.writes()) == ((1, 2, 3), (4,))
    assert vmad4.timing().pipes == (0,) and vmad4.timing().latency == 7
    assert (addl.reads(), addl.writes(), addl.imm.value.data) == ((5,), (6,), 8)
    assert addl.timing().pipes == (0, 1)
    assert putr.rlc() == sw.RlcInfo("row", "put", 8) and putr.reads() == (1,)
    assert getc.rlc() == sw.RlcInfo("col", "get", None) and getc.writes() == (7,)
    assert lddec.rlc() == sw.RlcInfo("col", "put", 8)
    assert lddec.mem().replicate and lddec.mem().nbytes == 8 and lddec.kind == "load_send"
    assert gld.mem().space == "mem" and gld.timing().latency == 177
    assert vsts.mem().access == "store" and vsts.mem().elem == "f32" and vsts.mem().nbytes == 16


def test_dma_descriptor_helpers() -> None:
    m = _parse(
        """
        sw.kernel @k(%a: i64) {
          %b = sw.ldm_alloc 640
          %rw = sw.reply_alloc
          sw.dma_get %a -> %b, %rw size 640 bsize 64 stride 64
          sw.dma_put %b -> %a, %rw size 640
          sw.dma_wait %rw, 2
        }
        """
    )
    get, put = [op for op in m.walk() if isinstance(op, (sw.DmaGetOp, sw.DmaPutOp))]
    assert (get.n_blocks, get.block_bytes, get.gap_bytes) == (10, 64, 64)
    assert get.block_offsets() == [128 * i for i in range(10)]
    assert (put.n_blocks, put.block_bytes, put.dma_mode) == (1, 640, sw.DmaMode.PE)
    assert get.mnemonic == "dma_get" and put.IS_PUT


def test_ldm_layout() -> None:
    m = _parse(
        """
        sw.kernel @k(%a: i64) {
          %x = sw.ldm_alloc 8
          %y = sw.ldm_alloc 100 align 128
          %z = sw.ldm_alloc 64
        }
        """
    )
    (k,) = [op for op in m.walk() if isinstance(op, sw.KernelOp)]
    assert [(s.name, s.offset, s.bytes) for s in k.ldm_layout()] == [
        ("x", 0, 8), ("y", 128, 100), ("z", 256, 64)
    ]
    assert k.ldm_bytes_used() == 320


def test_static_coords() -> None:
    m = _parse(
        """
        sw.kernel @k(%a: i64) {
          %r = sw.row_id
          %id = sw.cpe_id
          %c3 = arith.constant 3 : i64
          %c42 = arith.constant 42 : i64
          %p = arith.cmpi eq, %r, %c3 : i64
          %q = arith.cmpi eq, %id, %c42 : i64
          scf.if %p {
            sw.microkernel trip 1 () {
              sw.nop
            }
          }
          scf.if %q {
            sw.microkernel trip 1 () {
              sw.nop
            }
          } else {
            sw.microkernel trip 1 () {
              sw.nop
            }
          }
        }
        """
    )
    a, b, c = [mk.instructions()[0] for mk in _microkernels(m)]
    assert sw.static_coords(a) == (3, None)
    assert sw.static_coords(b) == (5, 2)
    assert sw.static_coords(c) == (None, None)


# ---- a minimal sequential reference interpreter of micro-kernel bodies (one CPE) -------------


def _run_microkernel(mk: sw.MicrokernelOp, regs: np.ndarray, buffers: dict, addr_of) -> None:
    """Execute ``mk`` sequentially; ``buffers`` maps an LDM alloc result to a float64 array;
    ``addr_of(ssa)`` gives (buffer key, byte offset) of a pointer operand."""
    strides = mk.pointer_strides()
    for it in range(mk.trip):
        for ins in mk.instructions():
            mo = ins.mem()
            if mo is not None:
                key, base = addr_of(mk.pointers[mo.ptr])
                byte = base + it * strides[mo.ptr] + mo.offset
                assert byte % 8 == 0
                arr, e = buffers[key], byte // 8
                if isinstance(ins, sw.VlddOp):
                    regs[ins.writes()[0]] = arr[e : e + 4]
                elif isinstance(ins, sw.LddeOp):
                    regs[ins.writes()[0]] = arr[e]
                elif isinstance(ins, sw.VstdOp):
                    arr[e : e + 4] = regs[ins.reads()[0]]
                else:
                    raise NotImplementedError(ins.name)
            elif isinstance(ins, sw.VmadOp):
                a, b, c = ins.reads()
                regs[ins.writes()[0]] = regs[a] * regs[b] + regs[c]
            elif isinstance(ins, (sw.AddlOp, sw.SubwOp, sw.NopOp, sw.BgtOp)):
                pass  # address/counter bookkeeping: addresses come from the pointers
            else:
                raise NotImplementedError(ins.name)
            regs[31] = 0.0


@pytest.mark.parametrize("name", ["kloop_listing41.mlir", "kloop_naive.mlir"])
def test_kloop_examples_compute_btA(name: str) -> None:
    m = _example(name)
    (k,) = [op for op in m.walk() if isinstance(op, sw.KernelOp)]
    slots = {s.op.result: s for s in k.ldm_layout()}
    rng = np.random.default_rng(7)
    K = 64
    A = rng.standard_normal((K, 16))
    B = rng.standard_normal((K, 4))
    C0 = rng.standard_normal((4, 16))
    buffers = {v: np.zeros(s.bytes // 8) for v, s in slots.items()}
    names = {s.name: v for v, s in slots.items()}
    buffers[names["abuf"]][: K * 16] = A.ravel()
    buffers[names["bbuf"]][: K * 4] = B.ravel()
    buffers[names["cbuf"]][:] = C0.ravel()
    regs = np.zeros((32, 4))
    for mk in _microkernels(m):
        _run_microkernel(mk, regs, buffers, lambda v: (v, 0))
    C = buffers[names["cbuf"]].reshape(4, 16)
    np.testing.assert_allclose(C, C0 + B.T @ A, rtol=1e-12, atol=1e-12)


def test_listing41_schedule_respects_latencies() -> None:
    """Pair i of the k-loop body issues in cycle i (16 cycles per iteration) only if every
    operand is ready: loads (lat_ldm_load = 4) and VMADs (lat_fp = 7), across the loop back-edge."""
    mach = default_machine()
    (_, loop, _) = _microkernels(_example("kloop_listing41.mlir"))
    body = loop.instructions()
    assert len(body) == 32
    pairs = [body[i : i + 2] for i in range(0, 32, 2)]
    assert all(p0.timing(mach).pipes == (0,) for p0, _ in pairs)  # 16 VMAD on P0
    assert all(1 in p1.timing(mach).pipes for _, p1 in pairs)  # 16 P1 slots
    period = len(pairs)
    ready: dict[int, int] = {}
    # two unrolled iterations: the second sees the registers produced by the first
    for it in range(2):
        for cyc, pair in enumerate(pairs):
            t = it * period + cyc
            for ins in pair:
                for r in ins.reads():
                    if it == 1 or r in ready:
                        assert ready.get(r, -99) <= t, (ins, r, ready.get(r), t)
            for ins in pair:
                for r in ins.writes():
                    ready[r] = t + ins.timing(mach).latency


def test_module_docstring_example_verifies() -> None:
    """The example at the top of dialects/sw.py is a valid program."""
    import re

    block = sw.__doc__.split("::\n\n", 1)[1].split("\n\n")[0]
    text = "\n".join(re.sub(r"\s*//.*$", "", line[4:]) for line in block.splitlines())
    m = _parse(text)
    (k,) = [op for op in m.walk() if isinstance(op, sw.KernelOp)]
    assert k.ldm_bytes_used() == 4096
