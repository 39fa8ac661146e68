"""``loop.map`` lowering (passes/conversion/loop_to_sw/maps.py) run on the simulator against numpy,
for every map kind, f32 and f64, odd sizes (tails), broadcast operands, all 64 CPEs with different
data; hypothesis for exp-based kinds over the input ranges networks produce.

Harness: :func:`run_map` builds an ``sw`` module with one io-input global per map input and one
io-output global (shape ``(64, *shape)``: a slice per CPE), a kernel ``@load`` (DMA the CPE's
slices into LDM), a kernel ``@map`` holding exactly the ops of ``lower_map`` (no DMA: it runs as
one lockstep group, its report entry is the micro-kernel time) and a kernel ``@store`` (DMA the
output back). LDM persists across spawns.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, ModuleOp, TensorType, i64
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import DiagnosticException

from taihu.backends.reference import kernels as ref
from taihu.backends.sim.runner import simulate
from taihu.dialects import loop, sw
from taihu.dialects.mapkind import MapKind
from taihu.passes.conversion.loop_to_sw.maps import lower_map
from taihu.target.machine import default_machine

NP = {"f32": np.float32, "f64": np.float64}


def _elem(e: str):
    return Float32Type() if e == "f32" else Float64Type()


def _round32(n: int) -> int:
    return -(-n // 32) * 32


def build(kind: MapKind, in_specs, out_spec, params, same_buffer=False, views=None):
    """(module, map op) for a map with inputs ``[(shape, elem)]`` and output ``(shape, elem)``;
    ``same_buffer``: the output is input 0's buffer (in place); ``views = {i: off}``: input i is
    a ``loop.view`` at element ``off`` of a larger buffer (its global holds ``off`` extra leading
    elements per CPE)."""
    views = views or {}
    bufs = [loop.LdmBufferOp(f"in{i}", loop.LdmBufType((math.prod(s) + views[i],) if i in views else s, _elem(e)))
            for i, (s, e) in enumerate(in_specs)]
    operands = []
    for i, (b, (s, e)) in enumerate(zip(bufs, in_specs)):
        if i in views:
            c = arith.ConstantOp.from_int_and_width(views[i], IndexType())
            operands.append(loop.ViewOp(b.result, c.result, loop.LdmBufType(s, _elem(e))).result)
        else:
            operands.append(b.result)
    ob = bufs[0] if same_buffer else loop.LdmBufferOp("out", loop.LdmBufType(out_spec[0], _elem(out_spec[1])))
    mop = loop.MapOp(kind, operands, ob.result, **params)
    allb = bufs + ([] if same_buffer else [ob])
    in_specs = [((math.prod(s) + views[i],), e) if i in views else (s, e) for i, (s, e) in enumerate(in_specs)]
    specs = list(in_specs) + ([] if same_buffer else [out_spec])  # one LDM buffer each
    out_i = 0 if same_buffer else len(in_specs)
    nbytes = [math.prod(s) * (4 if e == "f32" else 8) for s, e in specs]
    names = [f"in{i}" for i in range(len(in_specs))] + ["out"]
    gspecs = list(in_specs) + [out_spec]
    mod = ModuleOp([])
    blk = mod.body.block
    for name, (s, e) in zip(names, gspecs):
        io = sw.IoKind.OUTPUT if name == "out" else sw.IoKind.INPUT
        blk.add_op(sw.GlobalOp.build(properties={"sym_name": sw.StringAttr(name),
                                                 "type": TensorType(_elem(e), [64, *s]), "io": sw.IoKindAttr(io)}))

    def kernel(name: str, fill) -> sw.KernelOp:
        kb = Block(arg_types=[i64] * len(names))
        ldm = []
        for nb in nbytes:  # the same allocations in the same order in every kernel: same layout
            a = sw.LdmAllocOp.build(properties={"bytes": sw._i(_round32(nb))}, result_types=[i64])
            kb.add_op(a)
            ldm.append(a.results[0])
        fill(kb, ldm)
        return sw.KernelOp.build(properties={"sym_name": sw.StringAttr(name)}, regions=[Region(kb)])

    def dma(kb: Block, ldm, put: bool):
        cpe = sw.CpeIdOp.build(result_types=[i64])
        rw = sw.ReplyAllocOp.build(result_types=[sw.ReplyType()])
        kb.add_op(cpe)
        kb.add_op(rw)
        moves = [(out_i, len(names) - 1)] if put else [(i, i) for i in range(len(in_specs))]
        for li, gi in moves:
            c = arith.ConstantOp.from_int_and_width(nbytes[li], 64)
            off = arith.MuliOp(cpe.results[0], c.result)
            mem = arith.AddiOp(kb.args[gi], off.result)
            for o in (c, off, mem):
                kb.add_op(o)
            props = {"size": sw._i(nbytes[li])}
            if put:
                kb.add_op(sw.DmaPutOp.build(operands=[ldm[li], mem.result, rw.results[0]], properties=props))
            else:
                kb.add_op(sw.DmaGetOp.build(operands=[mem.result, ldm[li], rw.results[0]], properties=props))
        if moves:
            kb.add_op(sw.DmaWaitOp.build(operands=[rw.results[0], []], properties={"count": sw._i(len(moves))}))

    def mapk(kb: Block, ldm):
        amap = {b.result: a for b, a in zip(allb, ldm)}
        for i, off in views.items():
            c = arith.ConstantOp.from_int_and_width(off * (4 if in_specs[i][1] == "f32" else 8), 64)
            a = arith.AddiOp(ldm[i], c.result)
            kb.add_op(c)
            kb.add_op(a)
            amap[operands[i]] = a.result
        for o in lower_map(mop, lambda v: amap[v], default_machine()):
            kb.add_op(o)

    blk.add_op(kernel("load", lambda kb, l: dma(kb, l, False)))
    blk.add_op(kernel("map", mapk))
    blk.add_op(kernel("store", lambda kb, l: dma(kb, l, True)))
    main = func.FuncOp("main", ((), ()))
    mb = main.body.block
    addrs = []
    for name in names:
        a = sw.GlobalAddrOp.build(properties={"global_name": sw.SymbolRefAttr(name)}, result_types=[i64])
        mb.add_op(a)
        addrs.append(a.results[0])
    for k in ("load", "map", "store"):
        mb.add_op(sw.SpawnOp.build(operands=[addrs], properties={"kernel": sw.SymbolRefAttr(k)}))
        mb.add_op(sw.JoinOp.build())
    mb.add_op(func.ReturnOp())
    blk.add_op(main)
    return mod, mop


def run_map(kind, inputs, out_shape, out_elem, params, same_buffer=False, views=None):
    """Simulate; returns (output (64, *out_shape), cycles of the map kernel, module)."""
    views = views or {}
    specs = [(a.shape[1:], "f32" if a.dtype == np.float32 else "f64") for a in inputs]
    mod, _ = build(kind, specs, (tuple(out_shape), out_elem), params, same_buffer, views)
    mod.verify()
    feed = {}
    for i, a in enumerate(inputs):  # a view's global: `off` garbage elements, then the data
        if i in views:
            a = np.concatenate([np.full((64, views[i]), 7.0, a.dtype), a.reshape(64, -1)], axis=1)
        feed[f"in{i}"] = a
    res = simulate(mod, inputs=feed)
    cyc = next(k["cycles"] for k in res.report["kernels"] if k["name"] == "map")
    return res.outputs["out"], cyc, mod


def _alt(first, second):
    """Cases ``(a, b, elem)`` of ``first x second`` (or ``(a, elem)`` of ``first`` when
    ``second`` is None), the element type alternating f32 / f64 so that every ``a`` meets both
    types across its cases while the suite stays short."""
    if second is None:
        return [(a, ("f32", "f64")[i % 2]) for i, a in enumerate(first)]
    return [(a, b, ("f32", "f64")[(i + j) % 2]) for i, a in enumerate(first) for j, b in enumerate(second)]


def _rand(shape, dt, seed=0, lo=-3.0, hi=3.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, size=(64, *shape)).astype(dt)


def _tol(dt):
    return dict(rtol=1e-4, atol=1e-5) if dt == np.float32 else dict(rtol=1e-6, atol=1e-9)


# ---- element-wise ----------------------------------------------------------------------------

UNARY = {
    MapKind.RELU: (lambda x: np.maximum(x, 0), {}),
    MapKind.LEAKY_RELU: (lambda x: ref.leaky_relu(x, alpha=0.1), {"alpha": 0.1}),
    MapKind.CLIP: (lambda x: ref.clip(x, min=-1.0, max=2.5), {"lo": -1.0, "hi": 2.5}),
    MapKind.SIGMOID: (lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), {}),
    MapKind.TANH: (lambda x: np.tanh(x.astype(np.float64)), {}),
    MapKind.COPY: (lambda x: x, {}),
}


@pytest.mark.parametrize("kind, shape, elem", _alt(list(UNARY), [(3, 5), (16,), (2, 3, 8)]))
def test_unary(kind, shape, elem):
    dt = NP[elem]
    x = _rand(shape, dt, seed=1)
    f, params = UNARY[kind]
    y, _, _ = run_map(kind, [x], shape, elem, params)
    np.testing.assert_allclose(y, f(x).astype(dt), **_tol(dt))


@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_sqrt_and_erf(elem):
    """sqrt: VSQRT, exact to rounding; erf: Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7 (+ the
    exp polynomial's), checked against math.erf over [-6, 6] (both tails and the origin)."""
    import math

    dt = NP[elem]
    x = np.abs(_rand((3, 5), dt, seed=2)) + dt(0.01)
    y, _, _ = run_map(MapKind.SQRT, [x], (3, 5), elem, {})
    np.testing.assert_allclose(y, np.sqrt(x), **_tol(dt))
    x = np.linspace(-6, 6, 64 * 24, dtype=dt).reshape(64, 24)
    y, _, _ = run_map(MapKind.ERF, [x], (24,), elem, {})
    want = np.vectorize(math.erf)(x.astype(np.float64))
    assert np.max(np.abs(y - want)) <= 2.5e-7


def test_clip_one_sided_and_fill():
    x = _rand((7,), np.float32)
    y, _, _ = run_map(MapKind.CLIP, [x], (7,), "f32", {"lo": 0.5})
    np.testing.assert_array_equal(y, np.maximum(x, np.float32(0.5)))
    y, _, _ = run_map(MapKind.FILL, [], (3, 3), "f64", {"value": -0.25})
    np.testing.assert_array_equal(y, np.full((64, 3, 3), -0.25))


@pytest.mark.parametrize("src, dst", [("f32", "f64"), ("f64", "f32")])
def test_convert(src, dst):
    x = _rand((5, 3), NP[src])
    y, _, _ = run_map(MapKind.CONVERT, [x], (5, 3), dst, {})
    np.testing.assert_array_equal(y, x.astype(NP[dst]))


BINARY = {MapKind.ADD: np.add, MapKind.SUB: np.subtract, MapKind.MUL: np.multiply, MapKind.DIV: np.divide,
          MapKind.MAX: np.maximum}


@pytest.mark.parametrize("kind, shapes, elem", _alt(list(BINARY), [
    ((4, 6), (4, 6), (4, 6)),          # same shape
    ((3, 7), (1,), (3, 7)),            # scalar operand
    ((5, 1, 1), (5, 3, 3), (5, 3, 3)),  # per-channel, odd plane (scalar units)
    ((2, 8), (8,), (2, 8)),            # row vector (vector units)
    ((4, 8), (4, 1), (4, 8)),          # per-row scalar, aligned rows (vector + replicate)
]))
def test_binary_broadcast(kind, shapes, elem):
    sa, sb, so = shapes
    dt = NP[elem]
    a = _rand(sa, dt, 2)
    b = _rand(sb, dt, 3, 0.5, 2.0)
    y, _, _ = run_map(kind, [a, b], so, elem, {})
    want = BINARY[kind](a.reshape(64, *((1,) * (len(so) - len(sa))), *sa), b.reshape(64, *((1,) * (len(so) - len(sb))), *sb))
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_affine_per_channel(elem):
    dt = NP[elem]
    x = _rand((6, 7, 7), dt)
    s = _rand((6, 1, 1), dt, 4)
    t = _rand((6, 1, 1), dt, 5)
    y, _, _ = run_map(MapKind.AFFINE, [x, s, t], (6, 7, 7), elem, {})
    np.testing.assert_allclose(y, (x * s + t).astype(dt), **_tol(dt))


@pytest.mark.parametrize("off", [1, 2, 4, 8])
@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_views_at_any_offset(off, elem):
    """Inputs that are loop.view s at element offsets: vector units only where aligned."""
    dt = NP[elem]
    a = _rand((4, 8), dt, 20)
    b = _rand((4, 1), dt, 21)
    y, _, _ = run_map(MapKind.ADD, [a, b], (4, 8), elem, {}, views={0: off, 1: off + 1})
    np.testing.assert_allclose(y, (a + b).astype(dt), **_tol(dt))


def test_in_place_relu():
    x = _rand((9,), np.float64)
    y, _, _ = run_map(MapKind.RELU, [x], (9,), "f64", {}, same_buffer=True)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


# ---- windows, reductions, softmax, lrn, transpose -------------------------------------------


def _pool(x, k, s, how):
    lead = x.shape[: x.ndim - len(k)]
    sp = x.shape[x.ndim - len(k):]
    out = [(d - kk) // ss + 1 for d, kk, ss in zip(sp, k, s)]
    taps = []
    for idx in np.ndindex(*k):
        sl = tuple(slice(i, i + (o - 1) * ss + 1, ss) for i, o, ss in zip(idx, out, s))
        taps.append(x[(Ellipsis, *sl)])
    t = np.stack(taps)
    return t.max(axis=0) if how == "max" else t.astype(np.float64).mean(axis=0), tuple(lead) + tuple(out)


@pytest.mark.parametrize("kind, case, elem", _alt([MapKind.MAX_POOL, MapKind.AVG_POOL], [
    ((2, 9, 9), (3, 3), (2, 2)), ((3, 8, 8), (2, 2), (2, 2)), ((2, 5, 5), (5, 5), (1, 1)), ((4, 10), (3,), (1,))]))
def test_pool(kind, case, elem):
    shape, k, s = case
    dt = NP[elem]
    x = _rand(shape, dt, 6)
    want, oshape = _pool(x, k, s, "max" if kind == MapKind.MAX_POOL else "avg")
    y, _, _ = run_map(kind, [x], oshape[1:], elem, {"kernel": k, "strides": s})
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("kind", [MapKind.MAX_POOL, MapKind.AVG_POOL])
@pytest.mark.parametrize("shape, k, s, pads", [((3, 6, 9), (3, 3), (1, 1), (1, 1, 1, 1)),
                                                ((2, 8, 11), (3, 3), (2, 2), (0, 1, 0, 2)),
                                                ((4, 13), (3,), (2,), (1, 1)),
                                                ((2, 5, 7), (2, 3), (2, 1), (1, 2, 1, 0))])
def test_pool_pads(kind, shape, k, s, pads, elem):
    """``pads``: the taps outside the input are skipped (= pad -inf for max, 0 for the sum);
    avg_pool scales by its inv_count input (the per-position divisor)."""
    from taihu.test.unit.tile_numpy import map_numpy

    dt = NP[elem]
    x = _rand(shape, dt, 9)
    nk = len(k)
    p = {"kernel": k, "strides": s, "pads": pads}
    pw = [(0, 0)] * (x.ndim - nk) + [(pads[i], pads[nk + i]) for i in range(nk)]
    xp = np.pad(x, pw, constant_values=-np.inf if kind == MapKind.MAX_POOL else 0.0)
    want, oshape = _pool(xp, k, s, "max" if kind == MapKind.MAX_POOL else "avg")
    ins = [x]
    if kind == MapKind.AVG_POOL:  # divisor = the in-bounds taps (count_include_pad = 0)
        cnt = _pool(np.pad(np.ones_like(x), pw), k, s, "avg")[0] * math.prod(k)
        sp = cnt.shape[cnt.ndim - nk:]  # (per output position, the same in every plane)
        inv = np.ascontiguousarray(np.broadcast_to((1.0 / cnt[(0,) * (cnt.ndim - nk)]).astype(dt), (64, *sp)))
        ins.append(inv)
        want = want * math.prod(k) * inv[0]
    y, _, _ = run_map(kind, ins, oshape[1:], elem, p)
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))
    ref_np = map_numpy(kind, [x[0]] + ([inv[0]] if kind == MapKind.AVG_POOL else []), oshape[1:], np.float64, p)
    np.testing.assert_allclose(ref_np, want[0], rtol=1e-6, atol=1e-9)


def test_avg_pool_inv_count_and_many_taps():
    x = _rand((2, 13, 13), np.float32, 7)  # 169 taps: 3 chunks through the output accumulator
    inv = _rand((2, 1, 1), np.float32, 8, 0.1, 1.0)
    y, _, _ = run_map(MapKind.AVG_POOL, [x, inv], (2, 1, 1), "f32", {"kernel": (13, 13), "strides": (1, 1)})
    want = x.astype(np.float64).sum(axis=(2, 3), keepdims=True) * inv
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kf, case, elem", _alt([(MapKind.REDUCE_SUM, np.sum), (MapKind.REDUCE_MAX, np.max),
                                                  (MapKind.REDUCE_MEAN, np.mean)],
                                                 [((3, 8, 4), 1), ((5, 70), 1), ((6, 3), 0), ((4, 36), 1),
                                                  ((2, 600), 1), ((1, 42), 1)]))
def test_reduce(kf, case, elem):
    (kind, f), (shape, axis) = kf, case
    dt = NP[elem]
    x = _rand(shape, dt, 9)
    oshape = tuple(1 if d == axis else n for d, n in enumerate(shape))
    y, _, _ = run_map(kind, [x], oshape, elem, {"axis": axis})
    np.testing.assert_allclose(y, f(x.astype(np.float64), axis=axis + 1, keepdims=True).astype(dt), **_tol(dt))


@pytest.mark.parametrize("case, elem", _alt([((2, 10), 1), ((1, 1000), 1), ((5, 4, 8), 1), ((3, 2), 1),
                                             ((1, 7, 1, 1), 1), ((4, 1), 1), ((3, 6, 5), 2)], None))
def test_softmax(case, elem):
    shape, axis = case
    dt = NP[elem]
    x = _rand(shape, dt, 10, -8, 8)
    y, _, _ = run_map(MapKind.SOFTMAX, [x], shape, elem, {"axis": axis})
    want = ref.softmax(x.astype(np.float64), axis=axis + 1)
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("shape, size, beta", [((7, 3, 5), 5, 0.75), ((6, 8), 3, 0.5), ((4, 2, 4), 5, 1.0),
                                               ((3, 4), 2, 1.25)])
def test_lrn(shape, size, beta, elem):
    dt = NP[elem]
    x = _rand(shape, dt, 11)
    y, _, _ = run_map(MapKind.LRN, [x], shape, elem,
                      {"axis": 0, "size": size, "alpha": 1e-2, "beta": beta, "bias": 1.5})
    want = ref.lrn(x.astype(np.float64), size=size, alpha=1e-2, beta=beta, bias=1.5)
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("shape, axis, c0, ca, size", [((9, 6), 0, 0, 4, 5), ((9, 6), 0, 3, 4, 5),
                                                        ((2, 12, 5), 1, 8, 4, 3), ((2, 7, 3), 1, 2, 3, 4)])
def test_lrn_halo_form(shape, axis, c0, ca, size, elem):
    """The halo form: channels [c0, c0+ca) of an LRN over the whole axis, from an input holding
    channels [c0-lo, c0+ca+hi) (zeros outside the tensor, like a ``pad 0.0`` tile load)."""
    from taihu.test.unit.tile_numpy import map_numpy

    dt = NP[elem]
    X = _rand(shape, dt, 5)  # (64, *shape): one block per CPE
    p = {"axis": axis, "size": size, "alpha": 1e-2, "beta": 0.75, "bias": 1.5}
    full = map_numpy(MapKind.LRN, [X], X.shape, np.float64, {**p, "axis": axis + 1})
    lo = (size - 1) // 2
    hi = size - 1 - lo
    pw = [(0, 0)] * X.ndim
    pw[axis + 1] = (size, size)
    xp = np.pad(X, pw)
    x = np.take(xp, range(c0 - lo + size, c0 + ca + hi + size), axis=axis + 1)
    out_shape = list(shape)
    out_shape[axis] = ca
    y, _, _ = run_map(MapKind.LRN, [np.ascontiguousarray(x)], tuple(out_shape), elem, p)
    want = np.take(full, range(c0, c0 + ca), axis=axis + 1)
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


def test_lrn_bad_beta_is_a_diagnostic():
    b = loop.LdmBufferOp("x", loop.LdmBufType((4, 4), Float32Type()))
    o = loop.LdmBufferOp("y", loop.LdmBufType((4, 4), Float32Type()))
    m = loop.MapOp(MapKind.LRN, [b.result], o.result, axis=0, size=3, alpha=1e-4, beta=0.6, bias=1.0)
    with pytest.raises(DiagnosticException, match="beta = 0.6 is not supported"):
        lower_map(m, lambda v: v, default_machine())


def test_softmax_in_place_is_a_diagnostic():
    b = loop.LdmBufferOp("x", loop.LdmBufType((4, 4), Float32Type()))
    m = loop.MapOp(MapKind.SOFTMAX, [b.result], b.result, axis=1)
    with pytest.raises(DiagnosticException, match="must be a different buffer"):
        lower_map(m, lambda v: v, default_machine())


@pytest.mark.parametrize("case, elem", _alt([((3, 5), (1, 0)), ((2, 3, 8), (0, 2, 1)), ((2, 4, 8), (1, 0, 2)),
                                             ((4, 4), (1, 0))], None))
def test_transpose(case, elem):
    shape, perm = case
    dt = NP[elem]
    x = _rand(shape, dt, 12)
    oshape = tuple(shape[p] for p in perm)
    y, _, _ = run_map(MapKind.TRANSPOSE, [x], oshape, elem, {"perm": perm})
    np.testing.assert_array_equal(y, x.transpose(0, *(p + 1 for p in perm)))


# ---- exp accuracy over network input ranges ---------------------------------------------------


@settings(max_examples=8, deadline=None)
@given(scale=st.sampled_from([1e-6, 0.1, 1.0, 10.0, 100.0, 1e4]), seed=st.integers(0, 2**16),
       kind=st.sampled_from([MapKind.SIGMOID, MapKind.TANH, MapKind.SOFTMAX]))
def test_exp_kinds_accuracy(scale, seed, kind):
    x = (np.random.default_rng(seed).standard_normal((64, 12)) * scale).astype(np.float32)
    params = {"axis": 1} if kind == MapKind.SOFTMAX else {}
    y, _, _ = run_map(kind, [x], (12,) if kind != MapKind.SOFTMAX else (12,), "f32", params) \
        if kind != MapKind.SOFTMAX else run_map(kind, [x.reshape(64, 1, 12)], (1, 12), "f32", {"axis": 1})
    xd = x.astype(np.float64)
    if kind == MapKind.SIGMOID:
        want = 1 / (1 + np.exp(-xd))
    elif kind == MapKind.TANH:
        want = np.tanh(xd)
    else:
        want = ref.softmax(xd.reshape(64, 1, 12), axis=2)
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-4, atol=1e-5)


# ---- loop-only kinds of tile_to_loop/mem_prims.py (im2col, Winograd F(2x2, 3x3)) --------------


def _mem_prims_reference(kind, x, out_shape, params):
    from taihu.passes.conversion.tile_to_loop.mem_prims import map_reference

    return np.stack([map_reference(kind, xi, out_shape, params) for xi in x])


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("shape, kw, s, pads, d", [((3, 9), 3, 1, (1, 1), 1), ((2, 10), 3, 2, (1, 0), 1),
                                                   ((2, 12), 3, 1, (2, 2), 2), ((1, 8), 1, 1, (0, 0), 1),
                                                   ((2, 5), 5, 1, (4, 4), 1)])
def test_im2col(shape, kw, s, pads, d, elem):
    x = _rand(shape, NP[elem], 13)
    wo = (shape[-1] + pads[0] + pads[1] - d * (kw - 1) - 1) // s + 1
    oshape = shape[:-1] + (kw, wo)
    params = {"kernel": (kw,), "strides": (s,), "pads": pads, "dilations": (d,)}
    y, _, _ = run_map(MapKind.IM2COL, [x], oshape, elem, params)
    np.testing.assert_array_equal(y, _mem_prims_reference(MapKind.IM2COL, x, oshape, params))


@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_winograd_filter(elem):
    x = _rand((5, 3, 3), NP[elem], 14)
    y, _, _ = run_map(MapKind.WINOGRAD_FILTER, [x], (16, 5), elem, {})
    np.testing.assert_allclose(y, _mem_prims_reference(MapKind.WINOGRAD_FILTER, x, (16, 5), {}), **_tol(NP[elem]))


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("R, Wc, C, t, pads", [(4, 10, 8, 4, (0, 0, 0, 0)), (3, 7, 4, 4, (1, 1, 0, 2)),
                                               (2, 5, 3, 3, (1, 1, 1, 2)), (4, 6, 8, 3, (0, 1, 0, 1))])
def test_winograd_input(R, Wc, C, t, pads, elem):
    x = _rand((R, Wc, C), NP[elem], 15)
    params = {"pads": pads}
    y, _, _ = run_map(MapKind.WINOGRAD_INPUT, [x], (16, t, C), elem, params)
    np.testing.assert_allclose(y, _mem_prims_reference(MapKind.WINOGRAD_INPUT, x, (16, t, C), params), **_tol(NP[elem]))


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("t, C, R, Wc", [(4, 8, 2, 8), (3, 4, 2, 5), (3, 3, 1, 6), (1, 4, 1, 1)])
def test_winograd_output(t, C, R, Wc, elem):
    x = _rand((16, t, C), NP[elem], 16)
    y, _, _ = run_map(MapKind.WINOGRAD_OUTPUT, [x], (R, Wc, C), elem, {})
    np.testing.assert_allclose(y, _mem_prims_reference(MapKind.WINOGRAD_OUTPUT, x, (R, Wc, C), {}), **_tol(NP[elem]))


@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_packed_units_with_partial_lanes(elem):
    """Strided windows go through packed units (VINSF/VEXTF); rows of 5 outputs = 4 + 1 lanes."""
    dt = NP[elem]
    x = _rand((2, 11, 11), dt, 30)
    want, oshape = _pool(x, (3, 3), (2, 2), "max")
    y, _, mod = run_map(MapKind.MAX_POOL, [x], oshape[1:], elem, {"kernel": (3, 3), "strides": (2, 2)})
    np.testing.assert_array_equal(y, want)
    names = {op.name for op in mod.walk()}
    assert {"sw.vinsf", "sw.vextf"} <= names


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("kind, f", [(MapKind.SIGMOID, lambda x: 0.5 * (1 + np.tanh(0.5 * x))), (MapKind.TANH, np.tanh)])
def test_exp_kinds_extremes(kind, f, elem):
    """+-inf, huge and tiny inputs: the clamp keeps exp finite, results saturate correctly."""
    dt = NP[elem]
    vals = np.array([np.inf, -np.inf, 1e30, -1e30, 700.0, -700.0, 88.5, -88.5, 1e-30, -1e-30, 0.0, -0.0], dt)
    x = np.tile(vals, (64, 1))
    y, _, _ = run_map(kind, [x], (12,), elem, {})
    np.testing.assert_allclose(y, f(x.astype(np.float64)).astype(dt), rtol=1e-4, atol=1e-5)


@st.composite
def _bcast_case(draw):
    rank = draw(st.integers(1, 3))
    out = tuple(draw(st.integers(1, 9)) for _ in range(rank))
    def operand():
        k = draw(st.integers(0, rank))
        return tuple(1 if draw(st.booleans()) else d for d in out[rank - k:])
    a, b = operand(), operand()
    if draw(st.booleans()):
        a = out
    else:
        b = out
    return out, a or (1,), b or (1,)


@settings(max_examples=12, deadline=None)
@given(case=_bcast_case(), kind=st.sampled_from(list(BINARY)), elem=st.sampled_from(["f32", "f64"]),
       seed=st.integers(0, 99))
def test_binary_random_broadcasting(case, kind, elem, seed):
    out, sa, sb = case
    dt = NP[elem]
    a = _rand(sa, dt, seed)
    b = _rand(sb, dt, seed + 1, 0.5, 2.0)
    y, _, _ = run_map(kind, [a, b], out, elem, {})
    ra = a.reshape(64, *((1,) * (len(out) - len(sa))), *sa)
    rb = b.reshape(64, *((1,) * (len(out) - len(sb))), *sb)
    np.testing.assert_allclose(y, BINARY[kind](ra, rb).astype(dt), **_tol(dt))


@st.composite
def _axis_case(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(rank))
    return shape, draw(st.integers(0, rank - 1))


@settings(max_examples=10, deadline=None)
@given(case=_axis_case(), kind=st.sampled_from(["softmax", "reduce_sum", "reduce_max", "reduce_mean", "transpose"]),
       elem=st.sampled_from(["f32", "f64"]), seed=st.integers(0, 99))
def test_axis_kinds_random_shapes(case, kind, elem, seed):
    shape, axis = case
    dt = NP[elem]
    x = _rand(shape, dt, seed)
    xd = x.astype(np.float64)
    if kind == "softmax":
        y, _, _ = run_map(MapKind.SOFTMAX, [x], shape, elem, {"axis": axis})
        want = ref.softmax(xd, axis=axis + 1)
    elif kind == "transpose":
        perm = tuple(np.random.default_rng(seed).permutation(len(shape)))
        y, _, _ = run_map(MapKind.TRANSPOSE, [x], tuple(shape[p] for p in perm), elem, {"perm": perm})
        want = xd.transpose(0, *(p + 1 for p in perm))
    else:
        oshape = tuple(1 if d == axis else n for d, n in enumerate(shape))
        f = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_mean": np.mean}[kind]
        y, _, _ = run_map(MapKind(kind), [x], oshape, elem, {"axis": axis})
        want = f(xd, axis=axis + 1, keepdims=True)
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


@st.composite
def _pool_case(draw):
    nk = draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(nk))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nk))
    lead = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 1))))
    spatial = tuple(k + draw(st.integers(0, 8)) for k in kernel)
    return lead + spatial, kernel, strides


@settings(max_examples=10, deadline=None)
@given(case=_pool_case(), kind=st.sampled_from([MapKind.MAX_POOL, MapKind.AVG_POOL]),
       elem=st.sampled_from(["f32", "f64"]), seed=st.integers(0, 99))
def test_pool_random_shapes(case, kind, elem, seed):
    shape, k, s = case
    dt = NP[elem]
    x = _rand(shape, dt, seed)
    want, oshape = _pool(x, k, s, "max" if kind == MapKind.MAX_POOL else "avg")
    y, _, _ = run_map(kind, [x], oshape[1:], elem, {"kernel": k, "strides": s})
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


@settings(max_examples=8, deadline=None)
@given(case=_axis_case(), size=st.integers(1, 6), beta=st.sampled_from([0.25, 0.5, 0.75, 1.0, 1.5, 2.0]),
       elem=st.sampled_from(["f32", "f64"]), seed=st.integers(0, 99))
def test_lrn_random(case, size, beta, elem, seed):
    shape, axis = case
    dt = NP[elem]
    x = _rand(shape, dt, seed)
    p = {"axis": axis, "size": size, "alpha": 3e-2, "beta": beta, "bias": 1.25}
    y, _, _ = run_map(MapKind.LRN, [x], shape, elem, p)
    xm = np.moveaxis(x.astype(np.float64), axis + 1, 1)  # reference: channels are dim 1
    want = np.moveaxis(ref.lrn(xm, size=size, alpha=3e-2, beta=beta, bias=1.25), 1, axis + 1)
    np.testing.assert_allclose(y, want.astype(dt), **_tol(dt))


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple), off=st.integers(0, 9),
       kind=st.sampled_from([MapKind.SIGMOID, MapKind.RELU, MapKind.CLIP]), elem=st.sampled_from(["f32", "f64"]),
       seed=st.integers(0, 99))
def test_unary_on_views_random(shape, off, kind, elem, seed):
    dt = NP[elem]
    x = _rand(shape, dt, seed)
    f, params = UNARY[kind]
    y, _, _ = run_map(kind, [x], shape, elem, params, views={0: off})
    np.testing.assert_allclose(y, f(x).astype(dt), **_tol(dt))
