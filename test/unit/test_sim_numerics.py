"""Micro-kernel numerics: the vectorised (over iterations and CPEs) evaluation equals the exact
iteration-by-iteration evaluation (hypothesis differential test), plus targeted cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taihu.backends.sim.memory import LDMArray
from taihu.backends.sim.microkernel import BatchNumerics, NumericsError, _fma_chain, check_run_addresses, memory_accesses, plan_body
from taihu.backends.sim.pipeline import Instr


def _state(seed: int, n_cpes: int = 3):
    rng = np.random.default_rng(seed)
    ldm = LDMArray(n_cpes, 65536)
    ldm.f64[:, :2048] = rng.standard_normal((n_cpes, 2048))
    regs = rng.standard_normal((n_cpes, 32, 4))
    regs[:, 31] = 0.0
    return ldm, regs


def _run(body, n, strides, bases, seed, sequential, cpes=(0, 1, 2)):
    ldm, regs = _state(seed, max(cpes) + 1)
    plan = plan_body(tuple(body))
    bn = BatchNumerics(tuple(body), plan, np.array(cpes), regs, ldm, n,
                       np.array(bases, dtype=np.int64), strides, {})
    if sequential:
        bn.run_sequential()
    else:
        bn.run()
    return regs, ldm.data.copy()


# loads from p0 (read-only region [0, 8192)), stores to p1 (region [12288, ...)): no hazards
INSTR = st.one_of(
    st.builds(lambda d, o: Instr("vldd", (d,), (), ptr=0, offset=32 * o), st.integers(0, 7), st.integers(0, 3)),
    st.builds(lambda d, o: Instr("ldde", (d,), (), ptr=0, offset=8 * o), st.integers(0, 7), st.integers(0, 15)),
    st.builds(lambda a, b, c: Instr("vmad", (c,), (a, b, c)), st.integers(0, 7), st.integers(0, 7), st.integers(0, 7)),
    st.builds(lambda a, b, c: Instr("vaddd", (c,), (a, b)), st.integers(0, 7), st.integers(0, 7), st.integers(0, 7)),
    st.builds(lambda a, b, c: Instr("vmuld", (c,), (a, b)), st.integers(0, 7), st.integers(0, 7), st.integers(0, 7)),
    st.builds(lambda s, o: Instr("vstd", (), (s,), ptr=1, offset=32 * o), st.integers(0, 7), st.integers(0, 3)),
    st.builds(lambda a: Instr("addl", (24,), (24, a)), st.integers(0, 30)),
)


@settings(max_examples=60, deadline=None)
@given(body=st.lists(INSTR, min_size=1, max_size=10), n=st.integers(1, 6), seed=st.integers(0, 3))
def test_vectorised_equals_sequential(body, n, seed):
    strides = (128, 128)
    bases = [[0, 12288], [256, 12288 + 1024], [512, 12288 + 2048]]
    r_vec, m_vec = _run(body, n, strides, bases, seed, sequential=False)
    r_seq, m_seq = _run(body, n, strides, bases, seed, sequential=True)
    # multiplicative recurrences can overflow to inf/nan identically in both
    np.testing.assert_allclose(r_vec, r_seq, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m_vec.view(np.float64), m_seq.view(np.float64), rtol=1e-9, atol=1e-9)


def test_accumulator_reduces_over_iterations():
    body = (Instr("vldd", (1,), (), ptr=0, offset=0), Instr("ldde", (2,), (), ptr=1, offset=0),
            Instr("vmad", (0,), (1, 2, 0)))
    ldm, regs = _state(0, 1)
    a = ldm.f64[0, :4 * 10].reshape(10, 4).copy()
    b = ldm.f64[0, 1024:1034].copy()
    init = regs[0, 0].copy()
    plan = plan_body(body)
    assert plan.acc  # recognised as a reduction
    BatchNumerics(body, plan, np.array([0]), regs, ldm, 10, np.array([[0, 8192]]), (32, 8), {}).run()
    np.testing.assert_allclose(regs[0, 0], init + (a * b[:, None]).sum(axis=0))


def test_software_pipelined_register_is_carried():
    # r1 is used before it is (re)loaded: iteration i uses the value loaded in iteration i-1
    body = (Instr("vaddd", (2,), (2, 1)), Instr("vldd", (1,), (), ptr=0, offset=0))
    ldm, regs = _state(1, 1)
    init1, init2 = regs[0, 1].copy(), regs[0, 2].copy()
    rows = ldm.f64[0, :4 * 5].reshape(5, 4).copy()
    BatchNumerics(body, plan_body(body), np.array([0]), regs, ldm, 5, np.array([[0]]), (32,), {}).run()
    np.testing.assert_allclose(regs[0, 2], init2 + init1 + rows[:4].sum(axis=0))
    np.testing.assert_allclose(regs[0, 1], rows[4])


def test_integer_result_read_by_fp_is_an_error():
    body = (Instr("addl", (3,), (4, 5)), Instr("vaddd", (6,), (3, 3)))
    ldm, regs = _state(0, 1)
    with pytest.raises(NumericsError, match="integer/shuffle values are not simulated"):
        BatchNumerics(body, plan_body(body), np.array([0]), regs, ldm, 2, np.zeros((1, 0), dtype=np.int64), (), {}).run()


def test_address_checks():
    acc = memory_accesses((Instr("vldd", (1,), (), ptr=0, offset=0),))
    check_run_addresses(acc, 0, (65504,), (0,), 1, 65536, 32)
    with pytest.raises(Exception, match="outside the 65536-byte LDM"):
        check_run_addresses(acc, 0, (65504,), (32,), 2, 65536, 32)
    with pytest.raises(NumericsError, match="not 32-byte aligned"):
        check_run_addresses(acc, 0, (8,), (32,), 2, 65536, 32)


def _fma_exact(xs, ys) -> float:
    """Sequential fused multiply-add chain from 0 with one rounding per step (exact rationals)."""
    from fractions import Fraction

    acc = 0.0
    for x, y in zip(xs, ys):
        acc = float(Fraction(x) * Fraction(y) + Fraction(acc))
    return acc


@pytest.mark.parametrize("scalar_left", [True, False])
def test_fma_chain_is_exact(scalar_left):
    """The vmad partial sums of the fast path (``_fma_chain``) are one FMA chain per element,
    whatever the trip count, operand columns and register-grid shape: the values then do not
    depend on how runs are batched (merged SUMMA roles, chains, lockstep vs per-CPE)."""
    rng = np.random.default_rng(7)
    for trial in range(24):
        n = int(rng.choice([2, 8, 17, 33, 72, 129, 300]))
        m, C = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        a, b = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        xl = rng.standard_normal((C, n, 2 * m, 1 if scalar_left else 4))
        vl = np.repeat(xl, 4, axis=3) if scalar_left else xl
        vr = rng.standard_normal((C, n, 2 * m, 4))
        cl = rng.integers(0, 2 * m, a)
        lo = int(rng.integers(0, 2 * m))
        cr = np.arange(lo, min(lo + b, 2 * m)) if trial % 2 else rng.integers(0, 2 * m, b)
        S = _fma_chain(vl, vr, cl, cr, scalar_left)
        assert S.shape == (C, a, len(cr), 4)
        for _ in range(4):
            c, i, j, lane = rng.integers(0, C), rng.integers(0, a), rng.integers(0, len(cr)), rng.integers(0, 4)
            ref = _fma_exact(vl[c, :, cl[i], lane], vr[c, :, cr[j], lane])
            assert S[c, i, j, lane] == ref, (n, m, a, b, scalar_left)
