"""Vectorised micro-kernel numerics with loads and stores on overlapping LDM ranges (in-place
maps, read-modify-write accumulators, aliasing pointers): ``BatchNumerics.run`` (vectorised
unless ``_memory_hazard`` says otherwise) must equal the exact iteration-by-iteration
``run_sequential`` (hypothesis differential test), and the common in-place patterns must stay
vectorised."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from taihu.backends.sim.memory import LDMArray
from taihu.backends.sim.microkernel import BatchNumerics, plan_body
from taihu.backends.sim.pipeline import Instr

_R = st.integers(0, 5)
INSTR = st.one_of(
    st.builds(lambda d, p, o: Instr("vldd", (d,), (), ptr=p, offset=32 * o), _R, st.integers(0, 1), st.integers(0, 2)),
    st.builds(lambda d, p, o: Instr("ldde", (d,), (), ptr=p, offset=8 * o), _R, st.integers(0, 1), st.integers(0, 8)),
    st.builds(lambda a, b, c: Instr("vmuld", (c,), (a, b)), _R, _R, _R),
    st.builds(lambda a, b, c: Instr("vfcmplt", (c,), (a, b)), _R, _R, _R),
    st.builds(lambda s, p, o: Instr("vstd", (), (s,), ptr=p, offset=32 * o), _R, st.integers(0, 1), st.integers(0, 2)),
    st.builds(lambda s, p, o: Instr("fstd", (), (s,), ptr=p, offset=8 * o), _R, st.integers(0, 1), st.integers(0, 8)),
)


def _run(body, n, bases, strides, seed, sequential):
    rng = np.random.default_rng(seed)
    ldm = LDMArray(2, 65536)
    ldm.f64[:, :1024] = rng.integers(-4, 5, (2, 1024)).astype(np.float64)  # exact products
    regs = rng.integers(-3, 4, (2, 32, 4)).astype(np.float64)
    regs[:, 31] = 0
    bn = BatchNumerics(tuple(body), plan_body(tuple(body)), np.arange(2), regs, ldm, n,
                       np.array(bases, dtype=np.int64), strides, {})
    hazard = bn._memory_hazard()
    with np.errstate(over="ignore", invalid="ignore"):  # as Engine.flush_numerics: IEEE inf/nan
        bn.run_sequential() if sequential else bn.run()
    return regs, ldm.f64[:, :1024].copy(), hazard


@settings(max_examples=300, deadline=None)
@given(body=st.lists(INSTR, min_size=1, max_size=8), n=st.integers(1, 5), seed=st.integers(0, 3),
       shift=st.sampled_from([0, 8, 32, 64, 96]), s0=st.sampled_from([32, 64, 0, -32]),
       s1=st.sampled_from([32, 64, 0]))
def test_vectorised_equals_sequential_with_aliasing(body, n, seed, shift, s0, s1):
    bases = [[256, 256 + shift], [512, 512 + shift]]  # p1 = p0 + shift: the pointers alias
    rv, mv, _ = _run(body, n, bases, (s0, s1), seed, False)
    rs, ms, _ = _run(body, n, bases, (s0, s1), seed, True)
    np.testing.assert_array_equal(mv, ms)
    np.testing.assert_array_equal(rv, rs)


def test_in_place_and_accumulator_patterns_stay_vectorised():
    relu = [Instr("vldd", (0,), (), ptr=0, offset=0), Instr("vfsellt", (1,), (0, 31, 0)),
            Instr("vstd", (), (1,), ptr=1, offset=0)]
    # in place (p1 == p0, same stride): no hazard
    assert not _run(relu, 6, [[0, 0], [64, 64]], (32, 32), 0, False)[2]
    # output one vector behind the input (y[i] = f(x[i+1]), same buffer): WAR only, no hazard
    assert not _run(relu, 6, [[32, 0], [96, 64]], (32, 32), 0, False)[2]
    # output one vector ahead (y[i+1] = f(x[i])): iteration i+1 reads what i wrote: hazard
    assert _run(relu, 6, [[0, 32], [64, 96]], (32, 32), 0, False)[2]
    # accumulator read-modify-write of the same element every row: acc[p] += x[p, t]
    rmw = [Instr("ldde", (0,), (), ptr=0, offset=0), Instr("ldde", (1,), (), ptr=1, offset=0),
           Instr("vaddd", (2,), (0, 1)), Instr("fstd", (), (2,), ptr=0, offset=0)]
    assert not _run(rmw, 5, [[2048, 0], [2048 + 512, 512]], (8, 64), 0, False)[2]


def test_store_group_vs_aliasing_store_in_one_iteration():
    """vstd p0+32, vstd p1+0 (= p0+8), vstd p0+0: the p0 stores are one coalesced scatter, so
    the aliasing middle store would win although the last store must (found by hypothesis)."""
    body = [Instr("vstd", (), (0,), ptr=0, offset=32), Instr("vstd", (), (1,), ptr=1, offset=0),
            Instr("vstd", (), (2,), ptr=0, offset=0)]
    bases = [[256, 264], [512, 520]]
    rv, mv, hazard = _run(body, 1, bases, (32, 32), 0, False)
    rs, ms, _ = _run(body, 1, bases, (32, 32), 0, True)
    assert hazard
    np.testing.assert_array_equal(mv, ms)
