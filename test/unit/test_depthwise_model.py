"""The depthwise convolution's plan space and register plan (backends/model/depthwise_conv.py) and
its place among the convolution algorithms (backends/model/schedule.py)."""

from __future__ import annotations

import dataclasses
from operator import itemgetter

import pytest

from taihu.backends.model.conv import ConvShape, NotApplicable
from taihu.backends.model.depthwise_conv import (
    DepthwisePlan,
    depthwise_applicability,
    depthwise_footprint,
    in_rows,
    register_plan,
    row_pads,
)
from taihu.backends.model.schedule import (
    IllegalSchedule,
    Schedule,
    choose_conv_schedule,
    conv_plan_for,
    conv_ranked,
    conv_schedule_of,
    conv_space,
    plan_footprint,
)
from taihu.benchmarks import kernels as K

PM, BUD = K.PM, K.M.ldm_user_bytes


def dw(c: int, h: int, s: int = 1, k: int = 3, n: int = 1, **kw) -> ConvShape:
    p = k // 2
    return ConvShape(n, c, h, h, c, k, k, strides=(s, s), pads=(p, p, p, p), group=c, bias=True, relu=True,
                     const_weights=True, **kw)


MOBILENET_V2 = [dw(32, 112), dw(96, 112, 2), dw(144, 56), dw(144, 56, 2), dw(192, 28), dw(192, 28, 2),
                dw(384, 14), dw(576, 14), dw(576, 14, 2), dw(960, 7)]


def test_register_plan() -> None:
    """Offsets d = l*sw + j*dw of a unit's inputs, kernel rows per pass beside 3 unit banks."""
    rp = register_plan(3, 1, 1, True)
    assert rp is not None and rp.taps == (0, 1, 2, 3, 4, 5)
    assert rp.passes(3) == ((0, 1, 2),) and rp.weight_regs(3) == 19 and rp.banks(3) == 3
    s2 = register_plan(3, 2, 1, True)
    assert s2 is not None and s2.taps == tuple(range(9)) and s2.passes(3) == ((0, 1), (2,))
    assert s2.banks(1) == 5
    d2 = register_plan(3, 1, 2, False)
    assert d2 is not None and d2.taps == (0, 1, 2, 3, 4, 5, 6, 7)  # l + 2j
    seven = register_plan(7, 1, 1, True)
    assert seven is not None and seven.passes(7) == tuple((i,) for i in range(7))
    assert register_plan(31, 1, 1, True) is None  # one kernel row's 34 vectors do not fit
    wide = ConvShape(1, 8, 40, 40, 8, 1, 31, pads=(0, 15, 0, 15), group=8)
    assert "do not fit the registers" in (depthwise_applicability(wide) or "")
    assert "at most 11 kernel rows" in (depthwise_applicability(dw(8, 40, k=13)) or "")


def test_applicability_and_geometry() -> None:
    assert depthwise_applicability(dw(32, 16)) is None
    assert depthwise_applicability(dataclasses.replace(dw(32, 16), const_weights=False)) is None
    grouped = ConvShape(1, 16, 8, 8, 16, 3, 3, pads=(1, 1, 1, 1), group=4)
    assert "group = C = M" in (depthwise_applicability(grouped) or "")
    mult = ConvShape(1, 16, 8, 8, 32, 3, 3, pads=(1, 1, 1, 1), group=16)  # channel multiplier 2
    assert depthwise_applicability(mult) is not None
    s = dw(32, 112)
    assert in_rows(s, 28) == 30 and in_rows(s, 112) == 112
    assert row_pads(s, 28) == (0, 1, 0, 1) and row_pads(s, 112) == (1, 1, 1, 1)
    s2 = dw(144, 56, 2)
    assert row_pads(s2, 28) == (1, 1, 0, 0)  # the last window ends inside the plane
    # double-buffered x and y tiles; the filters single when there is one channel tile
    one = depthwise_footprint(s, 1, 28)
    assert one == 2 * (30 * 112 * 4 + 28 * 112 * 4) + 64 + 32


@pytest.mark.parametrize("s", MOBILENET_V2 + [dw(70, 13, 2, n=2), dw(16, 12, k=5), dw(8, 9, dtype="f64")],
                         ids=lambda s: s.describe())
def test_depthwise_is_chosen_and_the_minimum_of_the_space(s: ConvShape) -> None:
    """Depthwise layers pick the depthwise kernel; the pick is min(conv_ranked); the plans are
    distinct, fit LDM and come back from their schedules."""
    ranked = list(conv_ranked(s, PM, BUD))
    pick = choose_conv_schedule(s, PM, "auto", BUD)
    assert isinstance(pick, DepthwisePlan)
    assert min(ranked, key=itemgetter(0))[1] == pick
    plans = [p for p in conv_space(s, PM, BUD, "depthwise")]
    assert len(set(plans)) == len(plans) and pick in plans
    assert all(plan_footprint(p) <= PM.ldm_user_bytes for p in plans)
    for p in plans:
        sc = conv_schedule_of(p)
        assert sc.algorithm == "depthwise" and set(sc.as_dict()) == {"planes", "rows"}
        assert conv_plan_for(s, PM, sc, BUD) == p
    assert choose_conv_schedule(s, PM, "depthwise", BUD) == pick
    # the depthwise kernel beats per-group im2col + GEMM by far
    assert pick.cost.t_total * 5 < choose_conv_schedule(s, PM, "im2col", BUD).cost.t_total


def test_forced_depthwise_on_other_layers_and_illegal_schedules() -> None:
    dense = ConvShape(1, 64, 14, 14, 64, 3, 3, pads=(1, 1, 1, 1), bias=True, const_weights=True)
    with pytest.raises(NotApplicable, match="group = C = M"):
        choose_conv_schedule(dense, PM, "depthwise", BUD)
    assert choose_conv_schedule(dense, PM, "auto", BUD).algorithm != "depthwise"
    s = dw(144, 56)
    for sched, msg in (
        (Schedule.make("depthwise", planes=96, rows=56), "planes=96 is neither the channels C = 144 nor a multiple of 64"),
        (Schedule.make("depthwise", planes=256, rows=56), "planes=256 exceeds the channels C = 144 rounded up to 64"),
        (Schedule.make("depthwise", planes=64, rows=57), "rows=57 exceeds the output rows Ho = 56"),
        (Schedule.make("depthwise", planes=144, rows=56), "LDM footprint"),
        (Schedule.make("depthwise", planes=64), 'missing parameter "rows"'),
        (Schedule.make("depthwise", planes=64, rows=8, vec="n"), 'unknown parameter "vec"'),
    ):
        with pytest.raises(IllegalSchedule, match=msg):
            conv_plan_for(s, PM, sched, BUD)
    with pytest.raises(IllegalSchedule, match="depthwise: not applicable: the depthwise kernel needs group"):
        conv_plan_for(dense, PM, Schedule.make("depthwise", planes=64, rows=14), BUD)
