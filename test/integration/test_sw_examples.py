"""The hand-written programs of examples/sw/ run on the simulator and do what their headers say:
numerics against numpy, and the cycle counts their comments derive from the spec (§13)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, scf
from xdsl.parser import Parser

from taihu.dialects import sw

runner = pytest.importorskip("taihu.backends.sim.runner")

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sw")


def _load(name: str) -> builtin.ModuleOp:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, scf.Scf, sw.Sw):
        ctx.load_dialect(d)
    with open(os.path.join(EXAMPLES, name)) as f:
        return Parser(ctx, f.read(), name).parse_module()


def _run(name: str, **inputs: np.ndarray):
    return runner.simulate(_load(name), inputs=inputs)


def _kernel(report: dict, name: str) -> dict:
    return next(k for k in report["kernels"] if k["name"] == name)


RNG = np.random.default_rng(2024)


def test_dma_contiguous() -> None:
    x = RNG.standard_normal(1024)
    r = _run("dma_contiguous.mlir", IN=x)
    np.testing.assert_array_equal(r.outputs["OUT"], x[:512])
    # 392 + 416 + 224 + 968 (gets) + 968 (put), header of the example
    assert _kernel(r.report, "dma_contiguous")["cycles"] == 2968


def test_dma_strided() -> None:
    x = RNG.standard_normal(256)
    r = _run("dma_strided.mlir", IN=x)
    out = r.outputs["OUT"].reshape(10, 16)  # 10 x 128 B
    src = x.view(np.uint8)
    for i in range(10):
        np.testing.assert_array_equal(out[i, :8].view(np.uint8), src[96 + 128 * i : 160 + 128 * i])
        assert not out[i, 8:].any()
    assert _kernel(r.report, "dma_strided")["cycles"] == 440 + 680 + 440


def test_dma_all_cpes() -> None:
    x = RNG.standard_normal((64, 128))
    r = _run("dma_all_cpes.mlir", IN=x)
    np.testing.assert_array_equal(r.outputs["OUT"], x)


@pytest.mark.parametrize("name", ["kloop_listing41.mlir", "kloop_naive.mlir"])
def test_kloop(name: str) -> None:
    a = RNG.standard_normal((64, 64, 16))
    b = RNG.standard_normal((64, 64, 4))
    r = _run(name, A=a, B=b)
    want = np.einsum("ckn,ckm->cnm", b, a)
    np.testing.assert_allclose(r.outputs["C"], want, rtol=1e-12, atol=1e-12)


def test_rlc_p2p() -> None:
    x = RNG.standard_normal(4)
    out = _run("rlc_p2p.mlir", IN=x).outputs["OUT"]
    want = np.zeros((64, 4))
    want[1] = want[8] = x
    np.testing.assert_array_equal(out, want)


def test_rlc_broadcast() -> None:
    x, y = RNG.standard_normal(4), RNG.standard_normal(4)
    out = _run("rlc_broadcast.mlir", X=x, Y=y).outputs["OUT"]
    want = np.zeros((64, 4))
    for c in range(8):
        if c != 5:
            want[3 * 8 + c] += x
    for r_ in range(1, 8):
        want[r_ * 8 + 2] += y
    np.testing.assert_array_equal(out, want)


def test_rlc_send_full() -> None:
    x = RNG.standard_normal((9, 4))
    r = _run("rlc_send_full.mlir", IN=x)
    np.testing.assert_array_equal(r.outputs["OUT"], x)
    assert _kernel(r.report, "rlc_send_full")["rlc_messages"] == 9


def test_overlap() -> None:
    x = RNG.uniform(0, 1, (64, 512))
    r = _run("overlap.mlir", X=x)
    c = x[:, :1]
    want = c * sum(x**i for i in range(17))
    np.testing.assert_allclose(r.outputs["Y"], want, rtol=1e-12)
    cyc = {k["name"]: k["cycles"] for k in r.report["kernels"]}
    both = cyc["dma_only"] + cyc["compute_only"]
    assert cyc["overlap_nosync"] < 0.85 * both  # hardware overlap (004 L582-586)
    for name in ("overlap_sync", "overlap_rlc"):  # times add (L586-588)
        assert abs(cyc[name] - both) < 0.05 * both


def test_deadlock_getr_is_reported() -> None:
    with pytest.raises(Exception, match=r"deadlock[\s\S]*CPE 1 \(0,1\): getr"):
        _run("deadlock_getr.mlir")
