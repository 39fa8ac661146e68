"""Tests of the static checks before simulation (issue 15 item 4): ``sw-check-deadlock`` and
``sw-check-dma`` (``passes/sw``), where lit is awkward: every shipped example, the lowered small
CNN, loop extrapolation against stepping, the step budget, ``taihu-lower{check=true}``. The
diagnostics themselves are lit tests (``test/filecheck/passes/sw``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import sw
from taihu.dialects.target import machine_of
from taihu.passes.pipelines import (
    CHECK_STAGES,
    TaihuLowerPass,
    default_context,
    lower_to_swsim,
)
from taihu.passes.sw import effects
from taihu.passes.sw.check_deadlock import SwCheckDeadlockPass
from taihu.passes.sw.check_dma import SwCheckDmaPass
from taihu.passes.sw.effects import analyze
from taihu.tools.diagnostics import parse_mlir

ROOT = Path(__file__).resolve().parents[2]
SW_EXAMPLES = sorted((ROOT / "examples" / "sw").glob("*.mlir"))


def _parse(text: str):
    m = parse_mlir(default_context(), text, "<test>")
    m.verify()
    return m


def _kernel(module, name: str) -> sw.KernelOp:
    return next(k for k in module.walk() if isinstance(k, sw.KernelOp) and k.sym_name.data == name)


@pytest.mark.parametrize("path", SW_EXAMPLES, ids=[p.name for p in SW_EXAMPLES])
def test_examples_pass_except_the_deadlock(path):
    module = _parse(path.read_text())
    ctx = default_context()
    SwCheckDmaPass().apply(ctx, module)
    if path.name == "deadlock_getr.mlir":
        with pytest.raises(DiagnosticException, match=r"CPE 1 \(0,1\) waits forever in sw.getr"):
            SwCheckDeadlockPass().apply(ctx, module)
    else:
        SwCheckDeadlockPass().apply(ctx, module)


def test_lowered_small_cnn_passes_both_checks():
    module = _parse((ROOT / "examples" / "graph" / "small_cnn.mlir").read_text())
    lower_to_swsim(module, check=True)  # raises on any diagnostic
    kernels = [k for k in module.walk() if isinstance(k, sw.KernelOp)]
    assert kernels
    for k in kernels:
        eff = analyze(k, effects.arg_bases(module).get(k.sym_name.data, ()))
        assert not eff.blocked and not eff.leftover and not eff.dma_errors and not eff.exhausted


_LOOP = """
sw.kernel @k() {{
  %col = sw.col_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %n = arith.constant {trips} : i64
  %is0 = arith.cmpi eq, %col, %c0 : i64
  %is1 = arith.cmpi eq, %col, %c1 : i64
  scf.for %i = %c0 to %n step %c1 : i64 {{
    scf.if %is0 {{
      sw.microkernel trip 2 () {{
        sw.putr r1, 1
      }}
    }}
    scf.if %is1 {{
      sw.microkernel trip 2 () {{
        sw.getr r2
      }}
    }}
  }}
  scf.if %is1 {{
    sw.microkernel trip {extra} () {{
      sw.getr r2
    }}
  }}
}}
"""


def test_invariant_loop_is_extrapolated_exactly():
    """A 1000-trip loop whose effects do not depend on its induction variable is run twice and
    extrapolated (a balanced kernel costs a few dozen op evaluations, not 1000 iterations); the
    extra get after it is found, and located by stepping, at its exact position (number 2001)."""
    balanced = analyze(_kernel(_parse(_LOOP.format(trips=1000, extra=0)), "k"))
    assert not balanced.blocked and not balanced.leftover and balanced.steps < 100
    eff = analyze(_kernel(_parse(_LOOP.format(trips=1000, extra=1)), "k"))
    (b,) = eff.blocked
    assert b.cpes == tuple(range(1, 64, 8)) and b.op.name == "sw.getr"
    assert "sw.getr number 2001 on its row FIFO, which receives at most 2000" in b.reason


def test_loop_counts_match_stepping():
    """Extrapolated counters equal the stepped ones (the invariance test off)."""
    text = _LOOP.format(trips=37, extra=0)
    fast = effects._Kernel  # the interpreter, run through analyze's precomputation
    k = _kernel(_parse(text), "k")
    m = machine_of(k)
    eff_mk, mk_info, invariant = effects._precompute(k, m)
    assert all(invariant.values())
    base, roots = effects._ldm_roots(k)
    runs = []
    for inv in (invariant, {op: False for op in invariant}):
        run = fast(k, m, (), None, eff_mk, mk_info, inv, base, roots, None)
        run.run()
        runs.append(run)
    assert np.array_equal(runs[0].rlc_in, runs[1].rlc_in)
    assert np.array_equal(runs[0].rlc_get, runs[1].rlc_get)
    assert runs[0].steps < runs[1].steps


def test_step_budget_claims_nothing(monkeypatch):
    """Past the step budget every CPE is tainted: no diagnostic, however unbalanced."""
    monkeypatch.setattr(effects, "STEP_BUDGET", 50)
    text = """
    sw.kernel @k() {
      %c0 = arith.constant 0 : i64
      %c1 = arith.constant 1 : i64
      %c100 = arith.constant 100 : i64
      %col = sw.col_id
      scf.for %i = %c0 to %c100 step %c1 : i64 {
        %mine = arith.cmpi eq, %col, %i : i64
        scf.if %mine {
          sw.microkernel trip 1 () {
            sw.getr r2
          }
        }
      }
    }
    """
    eff = analyze(_kernel(_parse(text), "k"))
    assert eff.exhausted and not eff.blocked and not eff.leftover


def test_taihu_lower_check_option():
    p = TaihuLowerPass.from_spec(parse_spec("taihu-lower{check=true}"))
    assert p.check and [q.name for q in p.pipeline().passes][-2:] == list(CHECK_STAGES)
    assert TaihuLowerPass.from_spec(parse_spec(str(p.spec()))).check
    assert not TaihuLowerPass.from_spec(parse_spec("taihu-lower")).check
    with pytest.raises(DiagnosticException, match="option check: expected true or false"):
        TaihuLowerPass.from_spec(parse_spec("taihu-lower{check=3}"))


@pytest.mark.slow
def test_lowered_squeezenet_passes_both_checks():
    """Every kernel of a lowered network passes (issue 15: no false positive)."""
    from taihu.tools.run import example_path, load_onnx

    module = load_onnx(example_path("squeezenet")).module
    lower_to_swsim(module, check=True)  # raises on any diagnostic
    assert sum(isinstance(k, sw.KernelOp) for k in module.walk()) > 30
