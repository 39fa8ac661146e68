"""The static work estimate of a launch (backends/sim/program.static_work, issue 15 item 2): loop
nests with bounds known before the launch multiply, unknown bounds never over-estimate, and a
launch over the bound is refused before anything is simulated."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser

from taihu.backends.sim.memory import SimError
from taihu.backends.sim.program import MAX_LAUNCH_OPS, static_work
from taihu.backends.sim.runner import KernelProgram, ensure_swsim
from taihu.dialects import sw
from taihu.passes.pipelines import default_context

KERNEL = """
sw.kernel @k(%n: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %id = sw.cpe_id
  %m = arith.index_cast %n : i64 to index
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      sw.sync
    }
  }
  %idx = arith.index_cast %id : i64 to index
  scf.for %k = %c0 to %idx step %c1 {
    sw.sync
  }
}
"""


def _program() -> KernelProgram:
    mod = Parser(default_context(), KERNEL).parse_module()
    ensure_swsim(mod)
    return KernelProgram(next(o for o in mod.walk() if isinstance(o, sw.KernelOp)))


def test_known_bounds_multiply_and_unknown_ones_count_once() -> None:
    kp = _program()
    w = static_work(kp.code, {kp.args[0]: 10})
    # 6 scalar ops + the outer loop (10 x (inner loop 1 + 3 x sync 1)) + the lane-dependent loop
    # counted once (its body: one sync)
    assert w.nest == (10, 3) and w.nest_ops == 10 * (1 + 3)
    assert w.ops == 6 + 1 + 10 * 4 + 1 + 1
    unknown = static_work(kp.code, {})  # n unknown: the outer loop counts its body once
    assert unknown.ops == 6 + 1 + 4 + 1 + 1


def test_a_launch_over_the_bound_is_refused_before_it_runs() -> None:
    kp = _program()
    kp.check_launch((1000,))
    n = MAX_LAUNCH_OPS // 3 + 1
    with pytest.raises(SimError, match=rf"kernel @k: one CPE would execute .* nest runs {n:,} x 3 iterations"):
        kp.check_launch((n,))
