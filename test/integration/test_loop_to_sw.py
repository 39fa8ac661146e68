"""``convert-loop-to-sw`` end to end: hand-written ``loop`` modules -> sw -> swsim -> the
simulator, against numpy (DMA copies, double buffering, broadcast DMA, barriers, RLC broadcast,
local register-tiled GEMMs, the SUMMA mesh GEMM of every scheme with its % of peak)."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from taihu.backends.sim.runner import simulate
from taihu.dialects import sw
from taihu.passes.conversion.loop_to_sw import ConvertLoopToSwPass
from taihu.passes.pipelines import default_context

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sw")
RNG = np.random.default_rng(7)


def _ctx() -> Context:
    return default_context()


def lower(text: str):
    ctx = _ctx()
    m = Parser(ctx, text).parse_module()
    m.verify()
    ConvertLoopToSwPass().apply(ctx, m)
    m.verify()
    return m


def run(text: str, **inputs: np.ndarray):
    return simulate(lower(text), inputs=inputs)


def _kernel(report: dict, name: str) -> dict:
    return next(k for k in report["kernels"] if k["name"] == name)


def _mesh_gemm():
    spec = importlib.util.spec_from_file_location("mesh_gemm", os.path.join(EXAMPLES, "mesh_gemm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------------------------
# DMA, tokens, double buffering, broadcast, barriers
# --------------------------------------------------------------------------------------------

COPY = """
builtin.module {
  func.func @main(%x: memref<64x128xf32> {graph.name = "in"}) -> (memref<64x128xf32> {graph.name = "out"}) {
    %y = memref.alloc() {alignment = 128 : i64} : memref<64x128xf32>
    loop.spmd "copy" ids(%row, %col) (%a = %x : memref<64x128xf32>, %b = %y : memref<64x128xf32>) {
      %buf = loop.ldm_buffer "buf" : !loop.ldm<1x128xf32>
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index
      %t = loop.dma_start %a[%id, %c0] sizes [1, 128] -> %buf : memref<64x128xf32> -> !loop.ldm<1x128xf32>
      loop.dma_wait %t
      %p = loop.dma_start %buf -> %b[%id, %c0] sizes [1, 128] : !loop.ldm<1x128xf32> -> memref<64x128xf32>
      loop.dma_wait %p
    }
    func.return %y : memref<64x128xf32>
  }
}
"""


def test_dma_copy() -> None:
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    r = run(COPY, **{"in": x})
    np.testing.assert_array_equal(r.outputs["out"], x)
    k = _kernel(r.report, "copy")
    assert k["dma_bytes"] == 2 * x.nbytes


DOUBLE_BUFFER = """
builtin.module {
  func.func @main(%X: memref<256x256xf64> {graph.name = "x"}) -> (memref<256x256xf64> {graph.name = "y"}) {
    %Y = memref.alloc() {alignment = 128 : i64} : memref<256x256xf64>
    loop.spmd "dbuf" ids(%row, %col) (%x = %X : memref<256x256xf64>, %y = %Y : memref<256x256xf64>) {
      %buf = loop.ldm_buffer "rows" : !loop.ldm<1x256xf64, double>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index
      %r0 = arith.muli %id, %c4 : index
      %s0 = loop.slot %buf[%c0] : !loop.ldm<1x256xf64, double>
      %t0 = loop.dma_start %x[%r0, %c0] sizes [1, 256] -> %s0 : memref<256x256xf64> -> !loop.ldm<1x256xf64>
      %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%tok = %t0) -> (!loop.token) {
        loop.dma_wait %tok
        %cur = loop.slot %buf[%i] : !loop.ldm<1x256xf64, double>
        %i1 = arith.addi %i, %c1 : index
        %in = arith.minsi %i1, %c3 : index
        %rn = arith.addi %r0, %in : index
        %nxt = loop.slot %buf[%i1] : !loop.ldm<1x256xf64, double>
        %tn = loop.dma_start %x[%rn, %c0] sizes [1, 256] -> %nxt : memref<256x256xf64> -> !loop.ldm<1x256xf64>
        %ri = arith.addi %r0, %i : index
        %tp = loop.dma_start %cur -> %y[%ri, %c0] sizes [1, 256] : !loop.ldm<1x256xf64> -> memref<256x256xf64>
        loop.dma_wait %tp
        scf.yield %tn : !loop.token
      }
      loop.dma_wait %last
      loop.dma_wait %last
      loop.barrier array
    }
    func.return %Y : memref<256x256xf64>
  }
}
"""


def test_double_buffered_loop() -> None:
    """A prefetching loop (token carried through scf.for iter_args, two LDM slots): the row of
    iteration i + 1 is fetched while row i is written back; a token waited twice waits once."""
    x = RNG.standard_normal((256, 256))
    m = lower(DOUBLE_BUFFER)
    k = next(o for o in m.body.block.ops if isinstance(o, sw.KernelOp))
    waits = [o for o in k.walk() if isinstance(o, sw.DmaWaitOp)]
    assert len(waits) == 3  # loop wait, put wait, one final wait (the second is dominated)
    allocs = [o for o in k.walk() if isinstance(o, sw.LdmAllocOp)]
    assert [a.bytes.value.data for a in allocs] == [2 * 2048]
    r = simulate(m, inputs={"x": x})
    np.testing.assert_array_equal(r.outputs["y"], x)


BCAST = """
builtin.module {
  func.func @main(%W: memref<128xf32> {graph.name = "w"}) -> (memref<64x128xf32> {graph.name = "out"}) {
    %Y = memref.alloc() {alignment = 128 : i64} : memref<64x128xf32>
    %V = memref.expand_shape %Y [[0, 1], [2]] output_shape [8, 8, 128] : memref<64x128xf32> into memref<8x8x128xf32>
    loop.spmd "bcast" ids(%row, %col) (%w = %W : memref<128xf32>, %y = %V : memref<8x8x128xf32>) {
      %buf = loop.ldm_buffer "w" : !loop.ldm<128xf32>
      %c0 = arith.constant 0 : index
      %t = loop.dma_start %w[%c0] sizes [128] mode bcast -> %buf : memref<128xf32> -> !loop.ldm<128xf32>
      loop.dma_wait %t
      %p = loop.dma_start %buf -> %y[%row, %col, %c0] sizes [1, 1, 128] : !loop.ldm<128xf32> -> memref<8x8x128xf32>
      loop.dma_wait %p
    }
    func.return %Y : memref<64x128xf32>
  }
}
"""


def test_broadcast_dma_and_views() -> None:
    """mode bcast: one DMA delivered to every CPE (CPE 0 issues it between two barriers); the
    output is written through an expand_shape view of the returned buffer."""
    w = RNG.standard_normal(128).astype(np.float32)
    r = run(BCAST, w=w)
    np.testing.assert_array_equal(r.outputs["out"], np.broadcast_to(w, (64, 128)))
    k = _kernel(r.report, "bcast")
    assert k["dma_bytes"] == w.nbytes + 64 * w.nbytes  # one broadcast get + 64 puts


RLC_BCAST = """
builtin.module {
  func.func @main(%X: memref<64x48xf64> {graph.name = "x"}) -> (memref<64x48xf64> {graph.name = "yr"}, memref<64x48xf64> {graph.name = "yc"}) {
    %YR = memref.alloc() {alignment = 128 : i64} : memref<64x48xf64>
    %YC = memref.alloc() {alignment = 128 : i64} : memref<64x48xf64>
    loop.spmd "rlc" ids(%row, %col) (%x = %X : memref<64x48xf64>, %yr = %YR : memref<64x48xf64>, %yc = %YC : memref<64x48xf64>) {
      %s = loop.ldm_buffer "s" : !loop.ldm<6x8xf64>
      %d = loop.ldm_buffer "d" : !loop.ldm<6x8xf64>
      %e = loop.ldm_buffer "e" : !loop.ldm<6x8xf64>
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index
      %t = loop.dma_start %x[%id, %c0] sizes [1, 48] -> %s : memref<64x48xf64> -> !loop.ldm<6x8xf64>
      loop.dma_wait %t
      loop.rlc_bcast %s -> %d row root %c3 : !loop.ldm<6x8xf64>, !loop.ldm<6x8xf64>
      loop.rlc_bcast %s -> %e col root %col : !loop.ldm<6x8xf64>, !loop.ldm<6x8xf64>
      %p = loop.dma_start %d -> %yr[%id, %c0] sizes [1, 48] : !loop.ldm<6x8xf64> -> memref<64x48xf64>
      %q = loop.dma_start %e -> %yc[%id, %c0] sizes [1, 48] : !loop.ldm<6x8xf64> -> memref<64x48xf64>
      loop.dma_wait %p, %q
    }
    func.return %YR, %YC : memref<64x48xf64>, memref<64x48xf64>
  }
}
"""


def test_rlc_bcast() -> None:
    """Row broadcast from column 3; column broadcast whose root row = the CPE's own column."""
    x = RNG.standard_normal((64, 48))
    r = run(RLC_BCAST, x=x)
    ids = np.arange(64)
    rows, cols = ids // 8, ids % 8
    np.testing.assert_array_equal(r.outputs["yr"], x[rows * 8 + 3])
    np.testing.assert_array_equal(r.outputs["yc"], x[cols * 8 + cols])
    # 384 B = 12 messages of 32 B per broadcast, one root per row (8) and per column (8)
    assert _kernel(r.report, "rlc")["rlc_messages"] == 2 * 8 * 12


# --------------------------------------------------------------------------------------------
# Local register-tiled GEMM (loop.gemm_block)
# --------------------------------------------------------------------------------------------


def _gemm_block_module(m: int, n: int, k: int, vec: str, ta: bool, tb: bool, elem: str) -> str:
    tc = vec == "m"
    sa = (k, m) if ta else (m, k)
    sb = (n, k) if tb else (k, n)
    sc = (n, m) if tc else (m, n)

    def mt(s):
        return f"memref<64x{s[0]}x{s[1]}x{elem}>"

    def lt(s):
        return f"!loop.ldm<{s[0]}x{s[1]}x{elem}>"

    flags = (" trans_a" if ta else "") + (" trans_b" if tb else "") + (" trans_c" if tc else "")
    body = []
    for nm, s in (("a", sa), ("b", sb), ("c", sc)):
        body.append(f'      %{nm}buf = loop.ldm_buffer "{nm}" : {lt(s)}')
    body += ["      %c0 = arith.constant 0 : index", "      %c8 = arith.constant 8 : index",
             "      %r8 = arith.muli %row, %c8 : index", "      %id = arith.addi %r8, %col : index"]
    for nm, s in (("a", sa), ("b", sb), ("c", sc)):
        body.append(f"      %t{nm} = loop.dma_start %{nm}[%id, %c0, %c0] sizes [1, {s[0]}, {s[1]}] -> %{nm}buf : "
                    f"{mt(s)} -> {lt(s)}")
    body.append("      loop.dma_wait %ta, %tb, %tc")
    body.append(f"      loop.gemm_block %abuf, %bbuf -> %cbuf vec {vec}{flags} : {lt(sa)}, {lt(sb)}, {lt(sc)}")
    body.append(f"      %p = loop.dma_start %cbuf -> %c[%id, %c0, %c0] sizes [1, {sc[0]}, {sc[1]}] : {lt(sc)} -> {mt(sc)}")
    body.append("      loop.dma_wait %p")
    return "\n".join([
        "builtin.module {",
        f'  func.func @main(%A: {mt(sa)} {{graph.name = "a"}}, %B: {mt(sb)} {{graph.name = "b"}}, '
        f'%C0: {mt(sc)} {{graph.name = "c0"}}) -> ({mt(sc)} {{graph.name = "c"}}) {{',
        f"    %C = memref.alloc() : {mt(sc)}",
        f'    loop.spmd "init" ids(%r0, %c0_) (%x = %C0 : {mt(sc)}, %y = %C : {mt(sc)}) {{',
        f'      %buf = loop.ldm_buffer "c" : {lt(sc)}',
        "      %z = arith.constant 0 : index", "      %e = arith.constant 8 : index",
        "      %q = arith.muli %r0, %e : index", "      %id = arith.addi %q, %c0_ : index",
        f"      %t = loop.dma_start %x[%id, %z, %z] sizes [1, {sc[0]}, {sc[1]}] -> %buf : {mt(sc)} -> {lt(sc)}",
        "      loop.dma_wait %t",
        f"      %p = loop.dma_start %buf -> %y[%id, %z, %z] sizes [1, {sc[0]}, {sc[1]}] : {lt(sc)} -> {mt(sc)}",
        "      loop.dma_wait %p",
        "    }",
        f'    loop.spmd "gemm_block" ids(%row, %col) (%a = %A : {mt(sa)}, %b = %B : {mt(sb)}, %c = %C : {mt(sc)}) {{',
        *body,
        "    }",
        f"    func.return %C : {mt(sc)}",
        "  }",
        "}",
    ])


@pytest.mark.parametrize(
    "m, n, k, vec, ta, tb, elem",
    [
        (32, 8, 16, "m", True, False, "f64"),  # full 16x4 tiles
        (20, 7, 5, "m", True, True, "f64"),  # partial tiles both ways
        (6, 12, 3, "n", False, False, "f64"),  # vectorise N, A row-major
        (8, 20, 1, "n", True, False, "f32"),  # f32 (vmas), k = 1
        (24, 5, 4, "m", True, False, "f32"),
        (2, 100, 5, "n", False, False, "f64"),  # wide tiles of the remainder strips (8 x 2, 4 x 2 ...)
        (9, 40, 3, "n", True, False, "f32"),  # 12 x 1 wide and 2 x 8 tall tiles
        (13, 8, 4, "n", False, False, "f64"),  # 1 x 12 tall tile + a 1 x 1 rest
    ],
)
def test_gemm_block(m, n, k, vec, ta, tb, elem) -> None:
    """C += A x B per CPE (64 different problems), every storage the verifier allows."""
    dt = np.float64 if elem == "f64" else np.float32
    a = RNG.standard_normal((64, m, k)).astype(dt)
    b = RNG.standard_normal((64, k, n)).astype(dt)
    c0 = RNG.standard_normal((64, m, n)).astype(dt)
    ins = {"a": a.transpose(0, 2, 1).copy() if ta else a, "b": b.transpose(0, 2, 1).copy() if tb else b,
           "c0": c0.transpose(0, 2, 1).copy() if vec == "m" else c0}
    r = run(_gemm_block_module(m, n, k, vec, ta, tb, elem), **ins)
    out = r.outputs["c"]
    out = out.transpose(0, 2, 1) if vec == "m" else out
    want = c0.astype(np.float64) + np.einsum("imk,ikn->imn", a.astype(np.float64), b.astype(np.float64))
    tol = 1e-12 if elem == "f64" else 1e-4
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    assert _kernel(r.report, "gemm_block")["flops"] >= 64 * 2 * m * n * k


@pytest.mark.parametrize("m, n, k, vec", [(32, 49, 8, "m"), (8, 52, 5, "n"), (20, 7, 3, "m"),
                                         (2, 112, 6, "n"), (1, 76, 5, "n"), (12, 4, 7, "n"), (10, 40, 4, "n")])
def test_gemm_block_mixed_precision(m, n, k, vec) -> None:
    """f32 A and B, f64 C: VLDS / LDSE widen the operands, VMAD accumulates in fp64 -- the same
    values as converting A and B first (full and partial register tiles)."""
    ta = vec == "m"
    sa, sb = ((k, m) if ta else (m, k)), (k, n)
    text = _gemm_block_module(m, n, k, vec, ta, False, "f64")
    for sh in (sa, sb):
        text = text.replace(f"memref<64x{sh[0]}x{sh[1]}xf64>", f"memref<64x{sh[0]}x{sh[1]}xf32>")
        text = text.replace(f"!loop.ldm<{sh[0]}x{sh[1]}xf64>", f"!loop.ldm<{sh[0]}x{sh[1]}xf32>")
    a = RNG.standard_normal((64, *sa)).astype(np.float32)
    b = RNG.standard_normal((64, *sb)).astype(np.float32)
    c0 = RNG.standard_normal((64, n, m) if ta else (64, m, n))
    r = run(text, a=a, b=b, c0=c0)
    am = a.astype(np.float64).transpose(0, 2, 1) if ta else a.astype(np.float64)
    want = (c0.transpose(0, 2, 1) if ta else c0) + np.einsum("imk,ikn->imn", am, b.astype(np.float64))
    out = r.outputs["c"]
    np.testing.assert_allclose(out.transpose(0, 2, 1) if ta else out, want, rtol=1e-12, atol=1e-12)


def test_gemm_block_full_tile_speed() -> None:
    """Full 16 x 4 tiles run Listing 4.1 at 16 cycles per k-step: the long block is near peak."""
    a = RNG.standard_normal((64, 16, 64))
    b = RNG.standard_normal((64, 64, 64))
    c0 = np.zeros((64, 16, 64))
    r = run(_gemm_block_module(16, 64, 64, "m", True, False, "f64"),
            a=a.transpose(0, 2, 1).copy(), b=b, c0=c0.transpose(0, 2, 1).copy())
    np.testing.assert_allclose(r.outputs["c"].transpose(0, 2, 1), np.einsum("imk,ikn->imn", a, b), rtol=1e-10, atol=1e-12)
    k = _kernel(r.report, "gemm_block")
    assert k["t_compute"] <= 64 * 64 // 4 * 16 * 1.15


# --------------------------------------------------------------------------------------------
# SUMMA mesh GEMM on LDM-resident blocks, every scheme
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme, trans_s, shape", [
    (1, False, (128, 128, 512)),
    (1, True, (256, 32, 256)),
    (2, False, (128, 64, 512)),
    (2, True, (128, 32, 256)),
    (3, False, (64, 128, 512)),
    (3, True, (32, 256, 256)),
    (4, False, (32, 128, 512)),
    (4, True, (64, 128, 256)),
])
def test_summa_schemes(scheme, trans_s, shape) -> None:
    """The mesh GEMM of every vector scheme (Table 4.1, 4 roles per step) equals numpy and its
    primitive runs near peak (>= 90 %; 16 cycles per 128 flop-k-step, step boundaries cost)."""
    mg = _mesh_gemm()
    M, N, K = shape
    a, b = RNG.standard_normal((M, K)), RNG.standard_normal((K, N))
    an, bn, cn = mg.names(scheme, trans_s)
    ins = {an: a.T.copy() if an == "AT" else a, bn: b.T.copy() if bn == "BT" else b}
    r = simulate(mg.lower_to_sw(mg.mesh_gemm_loop(M, N, K, scheme, trans_s)), inputs=ins)
    c = r.outputs[cn]
    np.testing.assert_allclose(c.T if cn == "CT" else c, a @ b, rtol=1e-12, atol=1e-11)
    g = _kernel(r.report, "gemm")
    assert g["percent_of_peak"] > 90.0, g["percent_of_peak"]


def test_summa_split_step_loops_and_single_steps() -> None:
    """Steps fused over strided loops (even steps, then odd ones) and single summa_steps with a
    dynamic T give the same product: each step is independent of the order."""
    mg = _mesh_gemm()
    M, N, K = 128, 32, 64
    text = mg.mesh_gemm_loop(M, N, K, 2)
    loop_line = next(line for line in text.splitlines() if "loop.summa_step" in line)
    head = "        scf.for %T = %c0 to %c8 step %c1 {\n" + loop_line + "\n        }"
    assert head in text
    c2 = "      %c2 = arith.constant 2 : index\n"
    split = ("        scf.for %T = %c0 to %c8 step %c2 {\n" + loop_line + "\n        }\n"
             "        scf.for %T = %c1 to %c8 step %c2 {\n" + loop_line.replace("%T,", "%T,") + "\n          %x = arith.addi %T, %c0 : index\n        }")
    text = text.replace(head, split).replace("      scf.for %rep", c2 + "      scf.for %rep")
    a, b = RNG.standard_normal((M, K)), RNG.standard_normal((K, N))
    an, bn, cn = mg.names(2)
    r = simulate(mg.lower_to_sw(text), inputs={an: a.T.copy(), bn: b})
    np.testing.assert_allclose(r.outputs[cn].T, a @ b, rtol=1e-12, atol=1e-11)


def test_summa_large_k_peak() -> None:
    """LDM-resident fp64 blocks with a long k-loop: >= 95 % of peak (seed 97.3 %, 004 L895)."""
    mg = _mesh_gemm()
    r = simulate(mg.lower_to_sw(mg.mesh_gemm_loop(128, 32, 1664, 1)))
    assert _kernel(r.report, "gemm")["percent_of_peak"] >= 95.0


KLOOP_GEMM = """
builtin.module {
  func.func @main(%A: memref<256x128xf64> {graph.name = "at"}, %B: memref<256x128xf64> {graph.name = "b"}) -> (memref<128x128xf64> {graph.name = "ct"}) {
    %C = memref.alloc() {alignment = 128 : i64} : memref<128x128xf64>
    loop.spmd "mm" ids(%row, %col) (%a = %A : memref<256x128xf64>, %b = %B : memref<256x128xf64>, %c = %C : memref<128x128xf64>) {
      %bufA = loop.ldm_buffer "A" : !loop.ldm<8x16xf64, double>
      %bufB = loop.ldm_buffer "B" : !loop.ldm<8x16xf64, double>
      %bufC = loop.ldm_buffer "C" : !loop.ldm<16x16xf64>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c64 = arith.constant 64 : index
      %c192 = arith.constant 192 : index
      %c256 = arith.constant 256 : index
      %m0 = arith.muli %col, %c16 : index
      %n0 = arith.muli %row, %c16 : index
      %ka = arith.muli %row, %c8 : index
      %kb = arith.muli %col, %c8 : index
      %tc = loop.dma_start %c[%n0, %m0] sizes [16, 16] -> %bufC : memref<128x128xf64> -> !loop.ldm<16x16xf64>
      loop.dma_wait %tc
      %a0 = loop.slot %bufA[%c0] : !loop.ldm<8x16xf64, double>
      %b0 = loop.slot %bufB[%c0] : !loop.ldm<8x16xf64, double>
      %ta0 = loop.dma_start %a[%ka, %m0] sizes [8, 16] -> %a0 : memref<256x128xf64> -> !loop.ldm<8x16xf64>
      %tb0 = loop.dma_start %b[%kb, %n0] sizes [8, 16] -> %b0 : memref<256x128xf64> -> !loop.ldm<8x16xf64>
      %res:2 = scf.for %kk = %c0 to %c256 step %c64 iter_args(%ta = %ta0, %tb = %tb0) -> (!loop.token, !loop.token) {
        loop.dma_wait %ta, %tb
        %i = arith.divui %kk, %c64 : index
        %curA = loop.slot %bufA[%i] : !loop.ldm<8x16xf64, double>
        %curB = loop.slot %bufB[%i] : !loop.ldm<8x16xf64, double>
        %i1 = arith.addi %i, %c1 : index
        %nA = loop.slot %bufA[%i1] : !loop.ldm<8x16xf64, double>
        %nB = loop.slot %bufB[%i1] : !loop.ldm<8x16xf64, double>
        %kn = arith.addi %kk, %c64 : index
        %kc = arith.minsi %kn, %c192 : index
        %kra = arith.addi %kc, %ka : index
        %krb = arith.addi %kc, %kb : index
        %na = loop.dma_start %a[%kra, %m0] sizes [8, 16] -> %nA : memref<256x128xf64> -> !loop.ldm<8x16xf64>
        %nb = loop.dma_start %b[%krb, %n0] sizes [8, 16] -> %nB : memref<256x128xf64> -> !loop.ldm<8x16xf64>
        scf.for %T = %c0 to %c8 step %c1 {
          loop.summa_step %T, %curA, %curB -> %bufC scheme 1 trans_a trans_c : !loop.ldm<8x16xf64>, !loop.ldm<8x16xf64>, !loop.ldm<16x16xf64>
        }
        scf.yield %na, %nb : !loop.token, !loop.token
      }
      loop.dma_wait %res#0, %res#1
      %tp = loop.dma_start %bufC -> %c[%n0, %m0] sizes [16, 16] : !loop.ldm<16x16xf64> -> memref<128x128xf64>
      loop.dma_wait %tp
      loop.barrier array
    }
    func.return %C : memref<128x128xf64>
  }
}
"""


def test_summa_in_double_buffered_k_loop() -> None:
    """A GEMM from main memory: A/B K-blocks double-buffered (two token chains through
    iter_args), 8 fused SUMMA steps per block on the current slots, C resident."""
    at, b = RNG.standard_normal((256, 128)), RNG.standard_normal((256, 128))
    r = run(KLOOP_GEMM, at=at, b=b)
    np.testing.assert_allclose(r.outputs["ct"].T, at.T @ b, rtol=1e-12, atol=1e-11)


# --------------------------------------------------------------------------------------------
# Host side and diagnostics
# --------------------------------------------------------------------------------------------


def test_globals_and_attributes() -> None:
    text = """
builtin.module {
  "memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<4xf64>, initial_value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf64>, constant}> : () -> ()
  func.func @main(%x: memref<4xf64> {graph.name = "in:0"}) -> (memref<2x2xf64> {graph.name = "w"}) {
    %g = memref.get_global @w : memref<4xf64>
    %y = memref.alloc() : memref<4xf64>
    %v = memref.expand_shape %y [[0, 1]] output_shape [2, 2] : memref<4xf64> into memref<2x2xf64>
    loop.spmd "w" ids(%r, %c) (%a = %g : memref<4xf64>) attributes {taihu.layer = "L", other = 1 : i64} {
    }
    func.return %v : memref<2x2xf64>
  }
}
"""
    m = lower(text)
    gl = {o.sym_name.data: o for o in m.body.block.ops if isinstance(o, sw.GlobalOp)}
    assert set(gl) == {"in_0", "w", "w_1"}  # io names kept, the constant renamed
    assert gl["w_1"].initial_value is not None and gl["w"].io is not None
    k = next(o for o in m.body.block.ops if isinstance(o, sw.KernelOp))
    assert k.sym_name.data == "w_2" and "taihu.layer" in k.attributes and "other" not in k.attributes


@pytest.mark.parametrize("snippet, message", [
    ("func.return %x : memref<4xf64>", "must be a buffer allocated by the host function"),
])
def test_host_diagnostics(snippet, message) -> None:
    text = f"""
builtin.module {{
  func.func @main(%x: memref<4xf64>) -> memref<4xf64> {{
    {snippet}
  }}
}}
"""
    with pytest.raises(DiagnosticException, match=message):
        lower(text)
