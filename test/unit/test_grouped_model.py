"""The grouped convolution's plan space (backends/model/grouped_conv.py) and its place among the
convolution algorithms (backends/model/schedule.py)."""

from __future__ import annotations

from operator import itemgetter

import pytest

from taihu.backends.model.conv import ConvShape, NotApplicable
from taihu.backends.model.depthwise_conv import depthwise_cost, plane_cycles
from taihu.backends.model.grouped_conv import (
    GroupedPlan,
    direct_block_cycles,
    direct_copies,
    direct_footprint,
    direct_in_rows,
    direct_width,
    group_cycles,
    grouped_applicability,
    grouped_footprint,
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


def gr(c: int, h: int, g: int, s: int = 1, m: int | None = None, **kw) -> ConvShape:
    return ConvShape(1, c, h, h, c if m is None else m, 3, 3, strides=(s, s), pads=(1, 1, 1, 1), group=g, bias=True,
                     relu=True, const_weights=True, **kw)


def test_applicability_and_footprint() -> None:
    assert grouped_applicability(gr(128, 56, 32)) is None
    assert grouped_applicability(gr(16, 8, 8, m=32)) is None  # C/g = 2, M/g = 4
    assert grouped_applicability(gr(16, 8, 16, m=32)) is None  # channel multiplier 2
    assert "not depthwise" in (grouped_applicability(gr(16, 8, 16)) or "")
    assert "group > 1" in (grouped_applicability(gr(16, 8, 1)) or "")
    assert "at most 64 input channels" in (grouped_applicability(gr(256, 8, 2)) or "")
    s = gr(128, 56, 32)
    # per CPE one group: 4 input planes of 6 rows, 4 output planes of 4 rows (double), 4 x 4 filters
    assert grouped_footprint(s, 1, 4) == 2 * (4 * 6 * 56 * 4 + 4 * 4 * 56 * 4) + 4 * 4 * 9 * 4 + 32


def test_group_cycles_are_the_depthwise_passes() -> None:
    """A group costs M/g output planes of one pass from the bias and C/g - 1 adding passes."""
    s = gr(64, 14, 8)
    want = 8 * (plane_cycles(s, 14) + 7 * plane_cycles(s, 14, first_pass=False) + 8 * 5.0)
    assert group_cycles(s, 14) == pytest.approx(want)
    assert plane_cycles(s, 14, first_pass=False) > plane_cycles(s, 14)  # partial sums loaded


def test_direct_variant() -> None:
    """The direct micro-kernel: kw scratch copies beside the row windows (none needed for the
    unshifted column of a stride-1 row), 4 x 4 register blocks of C/g iterations of kh*kw terms."""
    s = gr(128, 56, 32)
    assert direct_copies(s) == 2 and direct_copies(gr(128, 56, 32, 2)) == 3
    assert direct_width(gr(440, 7, 55)) == 8 and direct_in_rows(s, 4) == 6
    r32 = -(-4 * 6 * 56 * 4 // 32) * 32
    assert direct_footprint(s, 1, 4) == 2 * (r32 + 4 * 4 * 56 * 4) + 3 * r32 + 4 * 4 * 9 * 4 + 32
    # a block's terms: 16 VMADs (busier pipe), 4 x 4 accumulators; a 2 x 1 block is latency-bound
    assert direct_block_cycles(s, 4, 4) == pytest.approx(60 + 16 + 4 * 9 * 1.07 * 16 + 16)
    assert direct_block_cycles(s, 2, 1) == pytest.approx(60 + 2 + 4 * 9 * 7 + 2)
    plans = [p for p in conv_space(s, PM, BUD, "grouped")]
    assert {p.direct for p in plans} == {True, False}
    pick = choose_conv_schedule(s, PM, "grouped", BUD)
    assert pick.direct and pick.cost.t_total < min(p.cost.t_total for p in plans if not p.direct)


def test_depthwise_cost_unchanged_by_the_tiled_core() -> None:
    """depthwise_cost is tiled_cost with a plane as the unit (figures of the depthwise benchmark)."""
    s = ConvShape(1, 32, 112, 112, 32, 3, 3, pads=(1, 1, 1, 1), group=32, bias=True, relu=True, const_weights=True)
    c = depthwise_cost(s, PM, 32, 28)
    assert c.name == "depthwise" and c.useful_bytes == (32 * 2 * 112 * 112 + 32 * 9 + 32) * 4


@pytest.mark.parametrize("s", [gr(440, 7, 55), gr(208, 14, 26), gr(128, 56, 32), gr(104, 28, 13), gr(208, 28, 26, 2),
                               gr(130, 6, 65, m=260)], ids=lambda s: s.describe())
def test_grouped_space_round_trips_and_competes(s: ConvShape) -> None:
    """Every grouped plan fits LDM and comes back from its schedule; the auto pick is
    min(conv_ranked) and, on these layers, the grouped kernel."""
    plans = list(conv_space(s, PM, BUD, "grouped"))
    assert plans and len(set(plans)) == len(plans)
    assert all(isinstance(p, GroupedPlan) and plan_footprint(p) <= PM.ldm_user_bytes for p in plans)
    for p in plans:
        sc = conv_schedule_of(p)
        assert sc.algorithm == "grouped" and set(sc.as_dict()) == {"direct", "groups", "rows"}
        assert conv_plan_for(s, PM, sc, BUD) == p
    pick = choose_conv_schedule(s, PM, "auto", BUD)
    assert min(conv_ranked(s, PM, BUD), key=itemgetter(0))[1] == pick
    assert isinstance(pick, GroupedPlan)
    assert choose_conv_schedule(s, PM, "grouped", BUD) == min(plans, key=lambda p: p.cost.t_total)


def test_forced_grouped_elsewhere_and_illegal_schedules() -> None:
    dense = ConvShape(1, 64, 14, 14, 64, 3, 3, pads=(1, 1, 1, 1), bias=True, const_weights=True)
    with pytest.raises(NotApplicable, match="group > 1"):
        choose_conv_schedule(dense, PM, "grouped", BUD)
    dw = gr(32, 14, 32)
    with pytest.raises(NotApplicable, match="not depthwise"):
        choose_conv_schedule(dw, PM, "grouped", BUD)
    with pytest.raises(NotApplicable, match="group = C = M"):
        choose_conv_schedule(gr(64, 14, 8), PM, "depthwise", BUD)
    s = gr(1024, 14, 128)
    for sched, msg in (
        (Schedule.make("grouped", groups=96, rows=14, direct=False), "groups=96 is neither the groups G = 128 nor a multiple of 64"),
        (Schedule.make("grouped", groups=192, rows=14, direct=True), "groups=192 exceeds the groups G = 128 rounded up to 64"),
        (Schedule.make("grouped", groups=64, rows=15, direct=True), "rows=15 exceeds the output rows Ho = 14"),
        (Schedule.make("grouped", groups=64, direct=True), 'missing parameter "rows"'),
        (Schedule.make("grouped", groups=64, rows=7), 'missing parameter "direct"'),
        (Schedule.make("grouped", groups=64, rows=7, direct=3), "direct=3 must be true or false"),
        (Schedule.make("grouped", groups=64, rows=7, direct=False, planes=3), 'unknown parameter "planes"'),
    ):
        with pytest.raises(IllegalSchedule, match=msg):
            conv_plan_for(s, PM, sched, BUD)
    with pytest.raises(IllegalSchedule, match="LDM footprint"):
        conv_plan_for(gr(512, 56, 64), PM, Schedule.make("grouped", groups=64, rows=56, direct=False), BUD)
    with pytest.raises(IllegalSchedule, match="grouped groups=64 rows=56 direct: LDM footprint"):
        conv_plan_for(gr(512, 56, 64), PM, Schedule.make("grouped", groups=64, rows=56, direct=True), BUD)
    with pytest.raises(IllegalSchedule, match="grouped: not applicable"):
        conv_plan_for(dense, PM, Schedule.make("grouped", groups=1, rows=14, direct=False), BUD)
