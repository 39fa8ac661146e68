"""Dual-issue in-order P0/P1 scoreboard (spec §6.1, 004 L500-514) on small bodies."""

from taihu.target.machine import default_machine
from taihu.backends.sim.pipeline import Instr, schedule_body, simulate_issue

M = default_machine()


def issue(*body, n=1):
    cycles, pipes = simulate_issue(tuple(body), n, M)
    return cycles, pipes


def test_leader_blocked_blocks_trailer():
    # vldd r1 (lat 4) ; vaddd r2 <- r1 (waits) ; addl (independent) must not overtake
    c, _ = issue(Instr("vldd", (1,), (), ptr=0), Instr("vaddd", (2,), (1, 1)), Instr("addl", (3,), (4, 5)))
    assert list(c[0]) == [0, 4, 4]


def test_single_pipe_leader_and_trailer_pair():
    c, p = issue(Instr("vmad", (0,), (1, 2, 0)), Instr("addl", (3,), (4, 5)))
    assert list(c[0]) == [0, 0] and list(p) == [0, 1]


def test_both_flexible_leader_p1_trailer_p0():
    c, p = issue(Instr("addl", (3,), (4, 5)), Instr("addl", (6,), (7, 8)))
    assert list(c[0]) == [0, 0] and list(p) == [1, 0]


def test_raw_inside_pair_splits():
    c, _ = issue(Instr("addl", (3,), (4, 5)), Instr("addl", (6,), (3, 8)))
    assert list(c[0]) == [0, 1]


def test_two_p1_instructions_serialise():
    c, _ = issue(Instr("vldd", (1,), (), ptr=0), Instr("vldd", (2,), (), ptr=0, offset=32))
    assert list(c[0]) == [0, 1]


def test_loop_carried_fma_latency_and_nop_idle():
    t = schedule_body((Instr("vmad", (0,), (1, 2, 0)), Instr("nop")), M)
    assert t.ii == M.lat_fp == 7
    assert (t.p0_valid, t.p1_valid) == (1, 0)
    assert t.cycles(10) == 9 * 7 + 1


def test_fused_send_local_latency_is_ldm_load():
    c, _ = issue(Instr("vldr", (1,), (), ptr=0, rlc_dst=8), Instr("vaddd", (2,), (1, 1)))
    assert c[0, 1] - c[0, 0] == M.lat_ldm_load


def test_issue_times_extrapolate_steady_state():
    t = schedule_body((Instr("vmad", (0,), (1, 2, 0)),), M)
    times = t.issue_times(0, 100)
    assert times[0] == 0 and (times[1:] - times[:-1] == 7).all()
