"""backends/model/schedule.py: schedules as data (issue 12).

The contract's invariants on every distinct conv layer of the light ResNet-50, VGG-19, AlexNet,
SqueezeNet and Inception v1 (batch 1 and 32; shapes collected by ``benchmarks/kernels.py``'s
``conv_layers``) and on GEMM shapes (the models' FC layers, 1024^3): the default plan
(``choose_conv_schedule`` / ``plan_gemm``) is the minimum of the space under the planner's key;
every plan of the space is distinct, fits the planning machine's LDM and comes back from its
schedule (``*_plan_for(*_schedule_of(p)) == p``); a sample of plans of every algorithm and form
lowers to ``sw`` following the schedule; every kind of illegal schedule is a one-line
:class:`IllegalSchedule` naming the parameter.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from operator import itemgetter

import onnx
import pytest
from onnx import shape_inference

from taihu.backends.model.conv import (
    ConvShape,
    GemmShape,
    NotApplicable,
    applicability,
    gemm_plan,
    gemm_storages,
    plan_gemm,
    plan_implicit,
)
from taihu.backends.model.schedule import (
    IllegalSchedule,
    Schedule,
    choose_conv_schedule,
    conv_plan_for,
    conv_ranked,
    conv_schedule_of,
    conv_space,
    gemm_plan_for,
    gemm_ranked,
    gemm_schedule_of,
    gemm_space,
    plan_footprint,
    space_size,
)
from taihu.backends.model.unfold_conv import unfold_applicability
from taihu.benchmarks import kernels as K
from taihu.passes import pipelines
from taihu.dialects import graph
from taihu.passes.conversion.graph_to_tile.schedule_attr import set_op_schedule
from taihu.tools.layers import conv_module

MODELS = ("resnet50", "vgg19", "bvlc_alexnet", "squeezenet", "inception_v1")
#: the machine the lowering plans GEMM-like kernels for (ldm_user_bytes minus the pass's
#: reserve) and the memory primitives' budget (benchmarks/kernels.py's)
PM, BUD = K.PM, K.M.ldm_user_bytes


@functools.cache
def layers(model: str, batch: int) -> tuple[ConvShape, ...]:
    return tuple(K.conv_layers(model, batch))


def fc_layers(model: str, batch: int) -> list[GemmShape]:
    """The model's FC layers (ONNX Gemm with constant weights, transB = 1, a bias; relu when a
    Relu follows) as convert-graph-to-tile plans them."""
    m = onnx.load(K._onnx_light(model), load_external_data=False)
    mi = shape_inference.infer_shapes(m)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(mi.graph.value_info) + list(mi.graph.input) + list(mi.graph.output)}
    shapes.update({i.name: list(i.dims) for i in m.graph.initializer})
    out = []
    for nd in m.graph.node:
        if nd.op_type != "Gemm":
            continue
        trans_b = any(a.name == "transB" and a.i for a in nd.attribute)
        w = shapes[nd.input[1]]
        n, k = (w[0], w[1]) if trans_b else (w[1], w[0])
        relu = any(c.op_type == "Relu" for c in m.graph.node if nd.output[0] in c.input)
        out.append(GemmShape(batch, n, k, "f32", False, trans_b, bias_along="n", maps=1 if relu else 0,
                             const_b=True))
    return out


def _with(s: Schedule, drop: tuple[str, ...] = (), **changes) -> Schedule:
    d = {k: v for k, v in s.as_dict().items() if k not in drop}
    d.update(changes)
    return Schedule.make(s.algorithm, **d)


def _illegal(match: str, f, *args) -> str:
    with pytest.raises(IllegalSchedule, match=match) as e:
        f(*args)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# --------------------------------------------------------------------------------------------
# Schedule values
# --------------------------------------------------------------------------------------------


def test_schedule_value() -> None:
    s = Schedule.make("implicit", vec="n", bm=64, bn=56, bk=64, b_b=1, b_ro=2)
    assert [k for k, _ in s.params] == ["b_b", "b_ro", "bk", "bm", "bn", "vec"]
    assert s.as_dict()["bm"] == 64
    assert s.describe() == "implicit b_b=1 b_ro=2 bk=64 bm=64 bn=56 vec=n"
    assert Schedule.parse(s.describe()) == s
    t = Schedule.make("im2col", overlap=True, batched=False, vec="m", bm=256)
    assert t.describe() == "im2col batched=false bm=256 overlap=true vec=m"
    assert Schedule.parse(t.describe()) == t
    with pytest.raises(ValueError, match="sorted"):
        Schedule("gemm", (("bn", 1), ("bm", 2)))
    with pytest.raises(ValueError, match="sorted"):
        Schedule("gemm", (("bm", 1), ("bm", 2)))
    for text, word in (("bm=3", "algorithm name"), ("gemm bm", "'bm'"), ("gemm bm=1 bm=2", '"bm"')):
        with pytest.raises(IllegalSchedule, match=word):
            Schedule.parse(text)


# --------------------------------------------------------------------------------------------
# Convolution: the contract's invariants on the five models' layers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", (1, 32))
@pytest.mark.parametrize("model", MODELS)
def test_conv_default_is_the_minimum_of_the_space(model: str, batch: int) -> None:
    """choose_conv_schedule = min(conv_space) under the planner's key; the space's plans are
    distinct (and so are their schedules), fit LDM, and the default and a sample round-trip."""
    for i, s in enumerate(layers(model, batch)):
        ranked = list(conv_ranked(s, PM, BUD))
        plans = [p for _, p in ranked]
        pick = choose_conv_schedule(s, PM, "auto", BUD)
        assert min(ranked, key=itemgetter(0))[1] == pick, s
        if i == 0:
            assert plans == list(conv_space(s, PM, BUD))  # the lazy space enumerates the same plans
        assert len(set(plans)) == len(plans), s
        schedules = [conv_schedule_of(p) for p in plans]
        assert len(set(schedules)) == len(schedules), s
        assert all(plan_footprint(p) <= PM.ldm_user_bytes for p in plans), s
        assert {sc.algorithm for sc in schedules} >= {"im2col"}
        assert ("implicit" in {sc.algorithm for sc in schedules}) == (applicability(s, "implicit") is None)
        for p in [pick] + plans[:: max(1, len(plans) // 6)]:
            assert conv_plan_for(s, PM, conv_schedule_of(p), BUD) == p, conv_schedule_of(p).describe()


@pytest.mark.parametrize("algorithm", ("implicit", "im2col", "winograd"))
def test_conv_forced_algorithm_is_the_minimum_of_its_space(algorithm: str) -> None:
    """conv-algorithm=...: the forced default is the minimum of the forced space (implicit: the
    unfolded variant whenever it has a plan); a forced algorithm that cannot run the layer has an
    empty space and the planner's NotApplicable."""
    for s in layers("resnet50", 1) + layers("squeezenet", 1):
        ranked = list(conv_ranked(s, PM, BUD, algorithm))
        try:
            pick = choose_conv_schedule(s, PM, algorithm, BUD)
        except NotApplicable:
            assert ranked == []
            continue
        assert min(ranked, key=itemgetter(0))[1] == pick
        algs = {conv_schedule_of(p).algorithm for _, p in ranked}
        assert algs <= ({"implicit", "unfold"} if algorithm == "implicit" else {algorithm})
        if algorithm == "implicit" and unfold_applicability(s) is None:
            assert conv_schedule_of(pick).algorithm == "unfold"
        assert conv_plan_for(s, PM, conv_schedule_of(pick), BUD) == pick


def test_conv_variants_round_trip() -> None:
    """Runtime weights (weights relayout / filter transform kernels, no unfold, no vec-m
    overlapping GEMM), f64, batch 2 and a residual 3x3 layer: the plans are distinct and fit, a
    sample comes back from its schedule, the default is the space's minimum."""
    r50 = layers("resnet50", 1)
    res = next(s for s in r50 if s.residual and s.kh == 1)
    wino = next(s for s in r50 if s.kh == 3 and s.strides == (1, 1) and s.c >= 64)
    for s in (dataclasses.replace(wino, const_weights=False), dataclasses.replace(wino, dtype="f64"),
              dataclasses.replace(res, n=2), dataclasses.replace(wino, residual=True)):
        plans = list(conv_space(s, PM, BUD))
        assert len(set(plans)) == len(plans)
        assert all(plan_footprint(p) <= PM.ldm_user_bytes for p in plans)
        for p in plans[:: max(1, len(plans) // 25)]:
            assert conv_plan_for(s, PM, conv_schedule_of(p), BUD) == p, conv_schedule_of(p).describe()
        pick = choose_conv_schedule(s, PM, "auto", BUD)
        assert min(conv_ranked(s, PM, BUD), key=itemgetter(0))[1] == pick


def test_space_size_and_laziness() -> None:
    """space_size counts conv_space / gemm_space; the space is a generator (its first plan comes
    without enumerating the rest) and a layer's whole space takes well under seconds."""
    s = max(layers("vgg19", 32), key=lambda x: x.flops)
    gen = conv_space(s, PM, BUD)
    t0 = time.perf_counter()
    first = next(gen)
    t_first = time.perf_counter() - t0
    n = 1 + sum(1 for _ in gen)
    t_all = time.perf_counter() - t0
    assert plan_footprint(first) <= PM.ldm_user_bytes
    assert n == space_size(s, PM, BUD) > 100
    assert t_first < t_all and t_all < 5.0, (t_first, t_all)
    g = GemmShape(1024, 1024, 1024, "f32")
    assert space_size(g, PM) == sum(1 for _ in gemm_space(g, PM)) > 50


def _groups(plans) -> dict[tuple, list]:
    """Plans by algorithm and form (the schedule's boolean parameters)."""
    out: dict[tuple, list] = {}
    for p in plans:
        sc = conv_schedule_of(p)
        out.setdefault((sc.algorithm,) + tuple(sorted((k, v) for k, v in sc.params if isinstance(v, bool)
                                                      and k != "double_c")), []).append(p)
    return out


def _lowering_cases() -> list[tuple[ConvShape, Schedule]]:
    r50 = layers("resnet50", 1)
    shapes = [
        next(s for s in r50 if s.kh == 3 and s.strides == (1, 1) and s.c == 64),  # winograd, unfold, implicit
        next(s for s in r50 if s.residual and s.kh == 1 and s.strides == (1, 1) and s.ho == 7),  # 7x7: padded rows
        next(s for s in r50 if s.residual and s.strides == (2, 2)),  # strided 1x1 + residual
        dataclasses.replace(next(s for s in r50 if s.kh == 3 and s.ho == 7), n=2),  # batched, b_b > 1
        dataclasses.replace(next(s for s in r50 if s.kh == 3 and s.ho == 14 and s.strides == (1, 1)),
                            const_weights=False),  # weights relayout / filter transform kernels
    ]
    cases = []
    for s in shapes:
        for ps in _groups(conv_space(s, PM, BUD)).values():
            cases += [(s, conv_schedule_of(p)) for p in {id(ps[0]): ps[0], id(ps[-1]): ps[-1]}.values()]
    return cases


@pytest.mark.parametrize("case", _lowering_cases(), ids=lambda c: f"{c[0].describe()} {c[1].describe()}")
def test_space_plans_lower(case) -> None:
    """The first and last plan of every algorithm / form of the space lowers to sw (the loop
    level checks every kernel's LDM) following its schedule (the conv's tile.schedule)."""
    s, sc = case
    module = conv_module(s).module
    conv = next(o for o in module.walk() if isinstance(o, graph.Conv2dOp))
    set_op_schedule(conv, sc)
    pipelines.run_pipeline(pipelines.build_pipeline({}, stop_after=pipelines.SW_STAGE), module)
    d = sc.as_dict()
    blocking = [str(o.attributes["taihu.blocking"]) for o in module.walk() if "taihu.blocking" in o.attributes]
    assert any(f"bm={d['bm']} " in b and f"vec={d['vec']}" in b for b in blocking), (blocking, sc.describe())


# --------------------------------------------------------------------------------------------
# GEMM
# --------------------------------------------------------------------------------------------


def _gemm_shapes() -> list[GemmShape]:
    fcs = {g for model in MODELS for batch in (1, 32) for g in fc_layers(model, batch)}
    return sorted(fcs, key=repr) + [GemmShape(1024, 1024, 1024, "f32"), GemmShape(1024, 1024, 1024, "f64"),
                                    GemmShape(256, 200, 300, "f32", trans_a=True, const_a=True, c_full=True, scalars=2)]


@pytest.mark.parametrize("p", _gemm_shapes(), ids=repr)
def test_gemm_default_is_the_minimum_of_the_space(p: GemmShape) -> None:
    ranked = list(gemm_ranked(p, PM, name="fc"))
    pick = plan_gemm(p, PM, name="fc")
    assert min(ranked, key=itemgetter(0))[1] == pick
    plans = [g for _, g in ranked]
    assert plans == list(gemm_space(p, PM, name="fc"))
    assert len({gemm_schedule_of(g) for g in plans}) == len(plans)
    for g in plans:
        assert g.ldm_bytes <= PM.ldm_user_bytes
        assert gemm_plan_for(p, PM, gemm_schedule_of(g), name="fc") == g
    if p.const_b:  # both storage orders of the constant weights are in the space
        assert {g.trans_b for g in plans} == {False, True}


# --------------------------------------------------------------------------------------------
# Illegal schedules
# --------------------------------------------------------------------------------------------


def test_illegal_gemm_schedules() -> None:
    p = GemmShape(1024, 1024, 1024, "f32")
    sc = gemm_schedule_of(plan_gemm(p, PM))
    expected = "bk, bm, bn, double_c, trans_a, trans_b, vec"
    assert _illegal(r'unknown parameter "foo"', gemm_plan_for, p, PM, _with(sc, foo=1)).endswith(
        f"(expected: {expected})")
    assert _illegal(r'missing parameter "bk"', gemm_plan_for, p, PM, _with(sc, drop=("bk",))).endswith(
        f"(expected: {expected})")
    _illegal(r'unknown algorithm "overlap" for a GEMM', gemm_plan_for, p, PM, Schedule.make("overlap", **sc.as_dict()))
    _illegal(r"^bm=48 is not a multiple of 32 \(vec=n\)$", gemm_plan_for, p, PM, _with(sc, vec="n", bm=48))
    _illegal(r"^bm=96 is not a multiple of 128 \(vec=m\)$", gemm_plan_for, p, PM, _with(sc, vec="m", bm=96, bn=32))
    _illegal(r"^bk=12 is not a multiple of 8$", gemm_plan_for, p, PM, _with(sc, bk=12))
    _illegal(r"^bn=2048 exceeds N = 1024 rounded up to 128 \(1024\)$", gemm_plan_for, p, PM,
             _with(sc, vec="n", bn=2048))
    big = gemm_plan(gemm_storages(p)[0], PM, "n", 1024, 1024, 1024, True)
    assert big.ldm_bytes > PM.ldm_user_bytes
    _illegal(rf"LDM footprint {big.ldm_bytes} B > {PM.ldm_user_bytes} B \(ldm_user_bytes\)$", gemm_plan_for, p, PM,
             _with(sc, vec="n", bm=1024, bn=1024, bk=1024))
    _illegal(r"^trans_a=true: A is not a constant", gemm_plan_for, p, PM, _with(sc, trans_a=True))
    _illegal(r"^vec=x must be m or n$", gemm_plan_for, p, PM, _with(sc, vec="x"))
    _illegal(r"^bm=true must be a positive integer$", gemm_plan_for, p, PM, _with(sc, bm=True))
    _illegal(r"^double_c=1 must be true or false$", gemm_plan_for, p, PM, _with(sc, double_c=1))
    c_full = GemmShape(256, 256, 256, "f32", c_full=True)
    _illegal(r"^double_c=true: the full C operand", gemm_plan_for, c_full, PM,
             _with(gemm_schedule_of(plan_gemm(c_full, PM)), double_c=True))
    fc = GemmShape(1, 1000, 2048, "f32", trans_b=True, const_b=True, bias_along="n")
    flipped = _with(gemm_schedule_of(plan_gemm(fc, PM)), trans_b=not plan_gemm(fc, PM).trans_b)
    assert gemm_plan_for(fc, PM, flipped).trans_b == flipped.as_dict()["trans_b"]  # a constant: either order


def test_illegal_conv_schedules() -> None:
    r50 = layers("resnet50", 1)
    first = r50[0]  # 7x7 s2, 3 input channels
    s3 = next(s for s in r50 if s.kh == 3 and s.strides == (1, 1) and s.c == 64)  # 56x56
    s7 = next(s for s in r50 if s.residual and s.kh == 1 and s.strides == (1, 1) and s.ho == 7)  # residual, Wo = 7
    strided = next(s for s in r50 if s.kh == 3 and s.strides == (2, 2))
    pw = next(s for s in r50 if s.kh == 1 and s.strides == (1, 1) and not s.residual and s.ho == 7)
    pick = {s: conv_schedule_of(choose_conv_schedule(s, PM, "auto", BUD)) for s in (first, s3, s7, strided, pw)}
    implicit = conv_schedule_of(plan_implicit(s3, PM))
    im2col = conv_schedule_of(choose_conv_schedule(s3, PM, "im2col", BUD))
    wino = conv_schedule_of(choose_conv_schedule(s3, PM, "winograd", BUD))

    # unknown algorithm, inapplicable algorithms (with the planner's reason)
    _illegal(r'^unknown algorithm "direct" for a convolution \(expected: im2col, implicit, unfold, winograd, depthwise, grouped\)$',
             conv_plan_for, s3, PM, Schedule.make("direct"), BUD)
    _illegal(r"^winograd: not applicable: ", conv_plan_for, strided, PM, wino, BUD)
    assert _illegal("winograd", conv_plan_for, strided, PM, wino, BUD) == (
        f"winograd: not applicable: {applicability(strided, 'winograd')}")
    assert _illegal("implicit", conv_plan_for, first, PM, implicit, BUD) == (
        f"implicit: not applicable: {applicability(first, 'implicit')}")
    unfold = Schedule.make("unfold", vec="n", bm=64, cb=32)
    runtime = dataclasses.replace(s3, const_weights=False)
    assert _illegal("unfold", conv_plan_for, runtime, PM, unfold, BUD) == (
        f"unfold: not applicable: {unfold_applicability(runtime)}")

    # parameters: unknown, missing, types
    assert _illegal(r'^unknown parameter "residual_fused" for implicit', conv_plan_for, s3, PM,
                    _with(implicit, residual_fused=True), BUD).endswith("(expected: b_b, b_ro, bk, bm, bn, vec)")
    _illegal(r'^missing parameter "residual_fused" for unfold \(expected: bm, cb, residual_fused, vec\)$',
             conv_plan_for, s7, PM, Schedule.make("unfold", vec="n", bm=64, cb=64), BUD)
    _illegal(r'^missing parameter "tiles_per_cpe" for winograd', conv_plan_for, s3, PM,
             _with(wino, drop=("tiles_per_cpe",)), BUD)
    _illegal(r"^b_ro=0 must be a positive integer$", conv_plan_for, s3, PM, _with(implicit, b_ro=0), BUD)

    # blocks and units
    _illegal(r"^bn=48 is not a multiple of 32 \(vec=m\)$", conv_plan_for, s3, PM,
             Schedule.make("implicit", vec="m", bm=128, bn=48, bk=64, b_b=1, b_ro=1), BUD)
    _illegal(r"^bk=128 exceeds C = 64 rounded up to 8 \(64\)$", conv_plan_for, s3, PM,
             Schedule.make("implicit", vec="n", bm=64, bn=128, bk=128, b_b=1, b_ro=1), BUD)
    _illegal(r"^b_b=2 b_ro=1: ", conv_plan_for, s3, PM, _with(implicit, b_b=2, b_ro=1), BUD)  # N = 1
    _illegal(r"^cb=12 is not a multiple of 8 dividing C = 64$", conv_plan_for, s3, PM, _with(unfold, cb=12), BUD)
    _illegal(r"^bm=96 is not a multiple of 32 \(vec=n\)$|^bm=96 exceeds", conv_plan_for, s3, PM,
             _with(unfold, bm=96), BUD)
    _illegal(r"^vec=m: the unfolded convolution with vec m needs M >= 128 \(got 64\)$", conv_plan_for, s3, PM,
             Schedule.make("unfold", vec="m", bm=128, cb=64), BUD)
    _illegal(r"^residual_fused=true: vec=n pads the output rows \(Wo = 7 -> 16\)", conv_plan_for, s7, PM,
             Schedule.make("unfold", vec="n", bm=64, cb=64, residual_fused=True), BUD)
    _illegal(r"^tiles_per_cpe=1000 exceeds the 28 4x4 tiles", conv_plan_for, s3, PM,
             _with(wino, tiles_per_cpe=1000), BUD)

    # GEMM forms of im2col
    _illegal(r"^batched=true needs more than one image \(N = 1\)$", conv_plan_for, s3, PM,
             _with(im2col, batched=True, overlap=False, pointwise=False), BUD)
    _illegal(r"^pointwise=true needs a 1x1 kernel", conv_plan_for, s3, PM, _with(im2col, pointwise=True), BUD)
    _illegal(r"^bn=64: the GEMM reads x directly \(pointwise=true\)", conv_plan_for, pw, PM,
             Schedule.make("im2col", overlap=False, batched=False, pointwise=True, vec="m", bm=128, bn=64, bk=64,
                           double_c=True), BUD)
    ov_m = Schedule.make("im2col", overlap=True, batched=False, pointwise=True, vec="m", bm=256, bn=49, bk=64,
                         double_c=True)
    conv_plan_for(pw, PM, ov_m, BUD)  # constant weights: legal
    _illegal(r"^vec=m: the overlapping GEMM with vec m needs constant weights", conv_plan_for,
             dataclasses.replace(pw, const_weights=False), PM, ov_m, BUD)
    _illegal(r"^bk=60 is not a multiple of 8 dividing K = ", conv_plan_for, pw, PM, _with(ov_m, bk=60), BUD)
    _illegal(r"^bm=192 is not a multiple of 256 \(vec=m: 4 rows per CPE\)$", conv_plan_for, pw, PM,
             _with(ov_m, bm=192), BUD)
    _illegal(r"^bn=20 is neither N = 49 nor a multiple of 4 >= 16 dividing it$", conv_plan_for, pw, PM,
             _with(ov_m, bn=20), BUD)
    _illegal(r"^overlap=true: the overlapping Winograd GEMM needs constant weights", conv_plan_for, runtime, PM,
             _with(wino, overlap=True), BUD)

    # LDM overflow, with the bytes and the budget
    huge = Schedule.make("implicit", vec="n", bm=512, bn=128, bk=64, b_b=1, b_ro=8)
    msg = _illegal(r"LDM footprint \d+ B > \d+ B \(ldm_user_bytes\)$", conv_plan_for,
                   dataclasses.replace(s3, m=512), PM, huge, BUD)
    assert f"> {PM.ldm_user_bytes} B" in msg and msg.startswith("implicit bm=512 bn=128 bk=64 b_b=1 b_ro=8: ")

    # the defaults of every layer are legal
    for s, sc in pick.items():
        assert conv_plan_for(s, PM, sc, BUD) == choose_conv_schedule(s, PM, "auto", BUD)
