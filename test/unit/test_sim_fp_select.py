"""SW-64 fp compare / select / divide / sqrt, scalar fp stores and fp constants: numerics through the whole simulator (sw module ->
swsim -> engine) against numpy, vectorised == sequential evaluation, machine-table parsing and
the non-pipelined divide/sqrt unit of the P0/P1 scoreboard."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, scf
from xdsl.parser import Parser

from taihu.target.machine import MachineConfigError, default_machine, load_machine
from taihu.backends.sim.memory import LDMArray
from taihu.backends.sim.microkernel import BatchNumerics, plan_body
from taihu.backends.sim.pipeline import Instr, schedule_body
from taihu.backends.sim.runner import simulate
from taihu.dialects.sw import Sw
from taihu.dialects.swsim import machine_from_dict, machine_to_dict

N = 16  # f64 elements per CPE (4 vectors)


def _ctx() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, scf.Scf, Sw):
        ctx.load_dialect(d)
    return ctx


def _module(body: str, elem: str = "f64") -> builtin.ModuleOp:
    """Every CPE loads its rows of X and Z (N elements each) into LDM, runs ``body`` with p0 = X,
    p1 = Z, p2 = Y for N/4 iterations and writes Y back."""
    eb = 8 if elem == "f64" else 4
    nb = N * eb
    step = 4 * eb
    text = f"""
    sw.global @X : tensor<64x{N}x{elem}> io input
    sw.global @Z : tensor<64x{N}x{elem}> io input
    sw.global @Y : tensor<64x{N}x{elem}> io output
    sw.kernel @k(%x: i64, %z: i64, %y: i64) {{
      %id = sw.cpe_id
      %c = arith.constant {nb} : i64
      %off = arith.muli %id, %c : i64
      %xa = arith.addi %x, %off : i64
      %za = arith.addi %z, %off : i64
      %ya = arith.addi %y, %off : i64
      %bx = sw.ldm_alloc {nb}
      %bz = sw.ldm_alloc {nb}
      %by = sw.ldm_alloc {nb}
      %rw = sw.reply_alloc
      sw.dma_get %xa -> %bx, %rw size {nb}
      sw.dma_get %za -> %bz, %rw size {nb}
      sw.dma_wait %rw, 2
      sw.microkernel trip {N // 4} (%bx step {step}, %bz step {step}, %by step {step}) {{
        {body}
      }}
      sw.dma_put %by -> %ya, %rw size {nb}
      sw.dma_wait %rw, 3
    }}
    func.func @main() {{
      %x = sw.global_addr @X
      %z = sw.global_addr @Z
      %y = sw.global_addr @Y
      sw.spawn @k(%x, %z, %y)
      sw.join
      func.return
    }}
    """
    return Parser(_ctx(), "builtin.module {" + text + "}").parse_module()


def _inputs(elem=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, N)).astype(elem)
    z = rng.standard_normal((64, N)).astype(elem)
    x[:, ::5] = z[:, ::5]  # some equal lanes for the == compare
    x[:, 3] = 0.0
    return x, z


def _run(body: str, elem="f64"):
    dt = np.float64 if elem == "f64" else np.float32
    x, z = _inputs(dt)
    res = simulate(_module(body, elem), inputs={"X": x, "Z": z})
    return x.astype(np.float64), z.astype(np.float64), res.outputs["Y"].astype(np.float64)


@pytest.mark.parametrize(
    "mn, ref",
    [
        ("vfcmpeq", lambda x, z: np.where(x == z, 2.0, 0.0)),
        ("vfcmple", lambda x, z: np.where(x <= z, 2.0, 0.0)),
        ("vfcmplt", lambda x, z: np.where(x < z, 2.0, 0.0)),
        ("vdivd", lambda x, z: x / z),
    ],
)
def test_binary_f64(mn, ref):
    x, z, y = _run(f"sw.vldd r0, 0(p0)\n sw.vldd r1, 0(p1)\n sw.{mn} r0, r1, r2\n sw.vstd r2, 0(p2)")
    np.testing.assert_array_equal(y, ref(x, z))


def test_select_is_max_and_relu():
    # max(x, z) = vfseleq(vfcmplt(x, z), x, z); relu(x) = vfsellt(x, 0, x)
    x, z, y = _run("sw.vldd r0, 0(p0)\n sw.vldd r1, 0(p1)\n sw.vfcmplt r0, r1, r2\n"
                   " sw.vfseleq r2, r0, r1, r3\n sw.vfsellt r0, r31, r0, r4\n sw.vaddd r3, r4, r5\n"
                   " sw.vstd r5, 0(p2)")
    np.testing.assert_array_equal(y, np.maximum(x, z) + np.maximum(x, 0.0))


def test_sqrt_f64():
    x, z, y = _run("sw.vldd r0, 0(p0)\n sw.vmuld r0, r0, r1\n sw.vsqrtd r1, r2\n sw.vstd r2, 0(p2)")
    np.testing.assert_allclose(y, np.abs(x), rtol=1e-15)


def test_f32_divide_and_sqrt_round_to_fp32():
    x, z, y = _run("sw.vlds r0, 0(p0)\n sw.vlds r1, 0(p1)\n sw.vmuls r1, r1, r1\n sw.vsqrts r1, r2\n"
                   " sw.vdivs r0, r2, r3\n sw.vsts r3, 0(p2)", elem="f32")
    x32, z32 = x.astype(np.float32), z.astype(np.float32)
    want = x32 / np.sqrt(z32 * z32)
    np.testing.assert_array_equal(y.astype(np.float32), want)


def test_divide_by_zero_is_ieee():
    x, z, y = _run("sw.vldd r0, 0(p0)\n sw.vdivd r0, r31, r1\n sw.vstd r1, 0(p2)")
    with np.errstate(divide="ignore", invalid="ignore"):
        want = x / 0.0
    np.testing.assert_array_equal(y, want)


def test_scalar_stores_write_lane_zero_only():
    # y[4i] = x[4i] + 0.5 (fstd of lane 0), the other 3 elements of each vector untouched (0)
    x, z, y = _run("sw.vldd r0, 0(p0)\n sw.ldfi r1, 0.5\n sw.vaddd r0, r1, r2\n sw.fstd r2, 0(p2)")
    want = np.zeros_like(x)
    want[:, ::4] = x[:, ::4] + 0.5
    np.testing.assert_array_equal(y, want)
    x, z, y = _run("sw.ldse r0, 4(p0)\n sw.ldfi r1, -2.0\n sw.vmuld r0, r1, r2\n sw.fsts r2, 8(p2)",
                   elem="f32")
    want = np.zeros_like(x)
    want[:, 2::4] = (x[:, 1::4].astype(np.float32) * np.float32(-2.0))
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("v", [0.1, 1e-05, -3.0, 1 / 3, 2.5e300, 0.0, -np.inf, np.inf])
def test_ldfi_constant_is_exact(v):
    from taihu.dialects.sw import LdfiOp

    mod = _module("sw.ldfi r0, 0.0\n sw.vstd r0, 0(p2)")
    ldfi = next(op for op in mod.walk() if isinstance(op, LdfiOp))
    ldfi.properties["value"] = LdfiOp(0, v).value
    text = str(mod)  # custom form, parsed again: exact value
    mod2 = Parser(_ctx(), text).parse_module()
    assert next(op for op in mod2.walk() if isinstance(op, LdfiOp)).imm == v
    y = simulate(mod2, inputs=dict(zip("XZ", _inputs())))
    np.testing.assert_array_equal(y.outputs["Y"], np.full((64, N), v))


def test_lane_insert_and_extract():
    # pack x[3], x[2], x[1], x[0] (scalar loads) into one vector: y = reversed vector of x
    x, z, y = _run("sw.ldde r0, 24(p0)\n sw.ldde r1, 16(p0)\n sw.vinsf r1, r0, 1, r0\n"
                   " sw.ldde r1, 8(p0)\n sw.vinsf r1, r0, 2, r0\n sw.ldde r1, 0(p0)\n sw.vinsf r1, r0, 3, r0\n"
                   " sw.vstd r0, 0(p2)")
    np.testing.assert_array_equal(y, x.reshape(64, -1, 4)[:, :, ::-1].reshape(64, -1))
    # lane 2 of every vector, stored as a scalar at the vector's first element
    x, z, y = _run("sw.vldd r0, 0(p0)\n sw.vextf r0, 2, r1\n sw.fstd r1, 0(p2)")
    want = np.zeros_like(x)
    want[:, ::4] = x[:, 2::4]
    np.testing.assert_array_equal(y, want)


# ---- vectorised evaluation == exact sequential evaluation -------------------------------------

_R = st.integers(0, 7)
INSTR = st.one_of(
    st.builds(lambda d, o: Instr("vldd", (d,), (), ptr=0, offset=32 * o), _R, st.integers(0, 3)),
    st.builds(lambda a, b, c: Instr("vaddd", (c,), (a, b)), _R, _R, _R),
    st.builds(lambda op, a, b, c: Instr(op, (c,), (a, b)),
              st.sampled_from(["vfcmpeq", "vfcmple", "vfcmplt", "vdivd", "vdivs"]), _R, _R, _R),
    st.builds(lambda op, a, b, c, d: Instr(op, (d,), (a, b, c)),
              st.sampled_from(["vfseleq", "vfsellt"]), _R, _R, _R, _R),
    st.builds(lambda op, a, c: Instr(op, (c,), (a,)), st.sampled_from(["vsqrtd", "vsqrts"]), _R, _R),
    st.builds(lambda s, o: Instr("vstd", (), (s,), ptr=1, offset=32 * o), _R, st.integers(0, 3)),
    st.builds(lambda s, o: Instr("fstd", (), (s,), ptr=1, offset=8 * o), _R, st.integers(0, 15)),
    st.builds(lambda d, v: Instr("ldfi", (d,), (), imm=v), _R, st.floats(-4, 4)),
    st.builds(lambda a, b, c, ln: Instr("vinsf", (c,), (a, b), offset=ln), _R, _R, _R, st.integers(0, 3)),
    st.builds(lambda a, c, ln: Instr("vextf", (c,), (a,), offset=ln), _R, _R, st.integers(0, 3)),
)


def _state(seed):
    rng = np.random.default_rng(seed)
    ldm = LDMArray(3, 65536)
    ldm.f64[:, :2048] = rng.standard_normal((3, 2048))
    regs = rng.standard_normal((3, 32, 4))
    regs[:, 31] = 0.0
    return ldm, regs


@settings(max_examples=60, deadline=None)
@given(body=st.lists(INSTR, min_size=1, max_size=10), n=st.integers(1, 6), seed=st.integers(0, 3))
def test_vectorised_equals_sequential(body, n, seed):
    out = []
    for sequential in (False, True):
        ldm, regs = _state(seed)
        bn = BatchNumerics(tuple(body), plan_body(tuple(body)), np.arange(3), regs, ldm, n,
                           np.array([[0, 12288], [256, 13312], [512, 14336]], dtype=np.int64), (128, 128), {})
        with np.errstate(all="ignore"):
            bn.run_sequential() if sequential else bn.run()
        out.append((regs, ldm.data.copy().view(np.float64)))
    # additive recurrences are summed in another order by the vectorised evaluation
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12, atol=1e-12)


# ---- machine table and timing -----------------------------------------------------------------


def test_machine_table_rows():
    m = default_machine()
    for mn in ("vfcmpeq", "vfcmple", "vfcmplt", "vfseleq", "vfsellt"):
        t = m.instruction(mn)
        assert t.pipes == (0,) and t.latency == m.lat_fp and t.repeat == 1
    for mn in ("vdivd", "vdivs", "vsqrtd", "vsqrts"):
        t = m.instruction(mn)
        assert t.pipes == (0,) and t.repeat == t.latency > m.lat_fp
    # the swsim target dictionary keeps the repeat field
    m2 = machine_from_dict(machine_to_dict(m))
    assert m2.instruction("vsqrtd") == m.instruction("vsqrtd")


def test_bad_repeat_is_named(tmp_path):
    from taihu.target.machine import DEFAULT_MACHINE_PATH

    text = open(DEFAULT_MACHINE_PATH).read().replace(
        'vdivd = { pipes = "P0", latency = 15, repeat = 15 }', 'vdivd = { pipes = "P0", latency = 15, repeat = 0 }')
    p = tmp_path / "m.toml"
    p.write_text(text)
    with pytest.raises(MachineConfigError, match=r"instructions.vdivd.repeat"):
        load_machine(str(p))


def test_divide_unit_is_not_pipelined():
    m = default_machine()
    rep = m.instruction("vdivd").repeat
    two_div = (Instr("vdivd", (2,), (0, 1)), Instr("vdivd", (3,), (0, 1)))
    assert schedule_body(two_div, m).ii == 2 * rep
    # other P0 work proceeds while the divider is busy: 1 div + 8 independent adds per iteration
    mixed = (Instr("vdivd", (2,), (0, 1)),) + tuple(Instr("vaddd", (4 + k,), (0, 1)) for k in range(8))
    assert schedule_body(mixed, m).ii == rep
    # compares and selects are ordinary pipelined P0 ops
    sel = tuple(Instr("vfcmplt", (4 + k,), (0, 1)) for k in range(4))
    assert schedule_body(sel, m).ii == 4
