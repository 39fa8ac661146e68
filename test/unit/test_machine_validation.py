"""Validation of machine descriptions (target/machine.py): the documented range of every scalar
key, the instruction table, the file checks, ``Machine.replace`` and the ``swsim.target``
dictionary. Every bad input is one ``MachineConfigError`` line naming the file and the key."""

from __future__ import annotations

import math
import os
import random
import re
import tomllib
from typing import Any

import pytest

from taihu.target.machine import (
    DEFAULT_MACHINE_PATH,
    REQUIRED_MNEMONICS,
    InstrTiming,
    Machine,
    MachineConfigError,
    default_machine,
    load_machine,
    machine_from_mapping,
    resolve_machine,
)

# The documented ranges (target/machine.py module docstring), restated here as the specification
# the loader is tested against: integer keys (lo, hi), number keys (lo, hi), booleans, choices.
INT_RANGES: dict[str, tuple[int, int]] = {
    "n_cg": (1, 64),
    "mesh_rows": (1, 64),
    "mesh_cols": (1, 64),
    "ldm_bytes": (1024, 16 << 20),
    "ldm_user_bytes": (1, 16 << 20),
    "n_regs": (32, 256),
    "reg_bits": (64, 4096),
    "zero_reg": (0, 255),
    "vec_lanes_fp64": (1, 64),
    "vec_lanes_fp32": (1, 128),
    "vector_ldm_align": (8, 4096),
    "mem_txn_bytes": (1, 4096),
    "dma_latency": (0, 10_000),
    "n_dma_bus": (1, 64),
    "cpes_per_bus": (1, 4096),
    "chan_buf_depth": (1, 1024),
    "dma_cpe_inflight": (1, 1024),
    "bcast_cost": (0, 10_000),
    "dma_reply_latency": (0, 10_000),
    "gld_bytes_max": (1, 4096),
    "gld_latency": (0, 10_000),
    "gld_gstd_latency": (0, 10_000),
    "rlc_latency": (0, 10_000),
    "rlc_msg_bits": (64, 4096),
    "rlc_send_depth": (1, 1024),
    "rlc_recv_depth": (1, 1024),
    "lat_ldm_load": (1, 10_000),
    "lat_fp": (1, 10_000),
    "lat_int_mul": (1, 10_000),
    "lat_simple": (1, 10_000),
    "sync_rowcol": (0, 10_000),
    "sync_array": (0, 10_000),
    "branch_penalty": (0, 10_000),
    "spawn_cycles": (0, 1_000_000),
}
FLOAT_RANGES: dict[str, tuple[float, float]] = {
    "f_clk_ghz": (0.01, 10.0),
    "peak_bw_cg": (0.001, 10_000.0),
    "theory_bw_cg": (0.001, 10_000.0),
    "dma_put_bw_factor": (0.01, 100.0),
    "gld_bw_cg": (0.001, 10_000.0),
    "rlc_bw_p2p_cg": (0.001, 10_000.0),
    "rlc_bw_bcast_cg": (0.001, 10_000.0),
    "ldm_reg_bw": (0.001, 10_000.0),
    "peak_chip_cpe_gflops": (0.001, 1e6),
    "peak_chip_sp_tflops": (0.001, 1000.0),
}
BOOL_KEYS = ("dma_latency_overlap", "rlc_contention")
CHOICES: dict[str, tuple[str, ...]] = {
    "dma_arbitration": ("round-robin",),
    "dma_cycle_rounding": ("ceil",),
    "dual_tie": ("leader-p1", "leader-p0"),
    "mpe_model": ("none",),
}
#: keys taking part in a rule between keys: their bounds are checked separately
CROSS_KEYS = {"ldm_bytes", "ldm_user_bytes", "mesh_rows", "mesh_cols", "n_regs", "zero_reg",
              "reg_bits", "vec_lanes_fp64", "vec_lanes_fp32", "n_dma_bus", "cpes_per_bus",
              "gld_latency", "gld_gstd_latency"}
EXTRA_RULES = {  # values inside [lo, hi] that break the key's multiple / power-of-two rule
    "ldm_bytes": 65540,
    "reg_bits": 96,
    "rlc_msg_bits": 100,
    "vector_ldm_align": 24,
    "mem_txn_bytes": 96,
}

NAN, INF = float("nan"), float("inf")


def _base_text() -> str:
    with open(DEFAULT_MACHINE_PATH, encoding="utf-8") as f:
        return f.read()


def _raw() -> dict[str, Any]:
    """The shipped file as TOML values (instructions as raw rows)."""
    return tomllib.loads(_base_text())


def _toml(v: Any) -> str:
    """``v`` as a TOML literal."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def _text_with(key: str, literal: str) -> str:
    text, n = re.subn(rf"^{key}\s*=[^#\n]*", f"{key} = {literal} ", _base_text(), flags=re.M)
    assert n == 1, key
    return text


def _write(tmp_path, text: str | bytes, name: str = "m.toml"):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def _expect_error(call, where: str, key: str | None, *fragments: str) -> str:
    """``call()`` raises one one-line MachineConfigError starting with ``where`` naming ``key``."""
    with pytest.raises(MachineConfigError) as info:
        call()
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(f"{where}: "), msg
    if key is not None:
        assert f"key '{key}'" in msg, msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    return msg


def _bad_values(key: str) -> list[Any]:
    if key in INT_RANGES:
        lo, hi = INT_RANGES[key]
        vals = [lo - 1, hi + 1, 2**63, -(2**63) - 1, 10**30, NAN, INF, -INF, True, False, 1.5,
                float(max(lo, 1)), "7", [lo], {"a": 1}]
        if key in EXTRA_RULES:
            vals.append(EXTRA_RULES[key])
        return vals
    if key in FLOAT_RANGES:
        lo, hi = FLOAT_RANGES[key]
        return [lo / 2, hi * 2, 0, 0.0, -1.0, NAN, INF, -INF, 2**63, 10**400, True, "1.0", [1.0]]
    if key in BOOL_KEYS:
        return [0, 1, 1.0, "true", NAN, [True]]
    return [3, 1.5, True, "", "other", NAN, [CHOICES[key][0]]]


def _expected_fragment(key: str) -> str:
    if key in INT_RANGES:
        lo, hi = INT_RANGES[key]
        return f"in [{lo}, {hi}]"
    if key in FLOAT_RANGES:
        lo, hi = FLOAT_RANGES[key]
        return f"expected a finite number in [{lo:g}, {hi:g}]"
    if key in BOOL_KEYS:
        return "expected a boolean (true or false)"
    return "expected one of " + ", ".join(repr(c) for c in CHOICES[key])


ALL_KEYS = list(INT_RANGES) + list(FLOAT_RANGES) + list(BOOL_KEYS) + list(CHOICES)
CASES = [(k, v) for k in ALL_KEYS for v in _bad_values(k)]
CASE_IDS = [f"{k}={v!r}"[:60] for k, v in CASES]


def test_the_specification_covers_every_key() -> None:
    raw = _raw()
    scalars = set(raw) - {"instructions"}
    assert set(ALL_KEYS) == scalars
    assert len(ALL_KEYS) == len(set(ALL_KEYS))
    fields = {f for f in Machine.__dataclass_fields__} - {"instructions", "source"}
    assert fields == scalars


def test_shipped_values_are_inside_their_ranges() -> None:
    from taihu.target.machine import shipped_machines

    for name, path in shipped_machines().items():
        with open(path, "rb") as f:
            raw = tomllib.load(f)
        for key, (lo, hi) in {**INT_RANGES, **FLOAT_RANGES}.items():
            assert lo <= raw[key] <= hi, (name, key)
        assert set(REQUIRED_MNEMONICS) <= set(load_machine(path).instructions), name


@pytest.mark.parametrize(("key", "value"), CASES, ids=CASE_IDS)
def test_bad_value_in_a_file_names_file_and_key(tmp_path, key: str, value: Any) -> None:
    p = _write(tmp_path, _text_with(key, _toml(value)))
    _expect_error(lambda: load_machine(p), "m.toml", key, _expected_fragment(key), ", got ")


@pytest.mark.parametrize(("key", "value"), CASES, ids=CASE_IDS)
def test_bad_value_in_a_mapping_names_key(key: str, value: Any) -> None:
    data = _raw() | {key: value}
    _expect_error(lambda: machine_from_mapping(data, "small.toml"), "small.toml", key,
                  _expected_fragment(key))


@pytest.mark.parametrize(("key", "value"), CASES, ids=CASE_IDS)
def test_replace_is_validated_the_same_way(key: str, value: Any) -> None:
    m = default_machine()
    _expect_error(lambda: m.replace(**{key: value}), "sw26010.toml (modified)", key,
                  _expected_fragment(key))


def test_message_of_the_brief() -> None:
    p_text = _text_with("dma_latency", "1000000000000")
    msg = _expect_error(lambda: machine_from_mapping(tomllib.loads(p_text), "small.toml"),
                        "small.toml", "dma_latency")
    assert msg == ("small.toml: key 'dma_latency': expected an integer in [0, 10000] cycles, "
                   "got 1000000000000")


def test_huge_integers_are_shown_short() -> None:
    msg = _expect_error(lambda: default_machine().replace(peak_bw_cg=10**400),
                        "sw26010.toml (modified)", "peak_bw_cg")
    assert msg.endswith("got an integer of 1329 bits")


@pytest.mark.parametrize("key", [k for k in INT_RANGES if k not in CROSS_KEYS])
def test_int_bounds_are_inclusive(key: str) -> None:
    m = default_machine()
    lo, hi = INT_RANGES[key]
    for v in (lo, hi):
        if key in ("vector_ldm_align", "mem_txn_bytes"):
            v = 1 << (v.bit_length() - 1)  # the power of two at the bound
        elif key == "rlc_msg_bits":
            v -= v % 64
        assert getattr(m.replace(**{key: v}), key) == v


@pytest.mark.parametrize("key", list(FLOAT_RANGES))
def test_number_bounds_are_inclusive_and_ints_are_numbers(key: str) -> None:
    m = default_machine()
    lo, hi = FLOAT_RANGES[key]
    assert getattr(m.replace(**{key: lo}), key) == lo
    m2 = m.replace(**{key: int(hi)})
    assert getattr(m2, key) == hi and isinstance(getattr(m2, key), float)


def test_latency_bound_re_resolves_table_rows() -> None:
    m = default_machine().replace(lat_fp=10_000, lat_simple=1)
    assert m.instruction("vmad").latency == 10_000
    assert m.instruction("vmad").latency_param == "lat_fp"


# ---- rules between keys ----------------------------------------------------------------------

CROSS_CASES = [
    ({"ldm_user_bytes": 70000}, "ldm_user_bytes", "70000 exceeds ldm_bytes = 65536"),
    ({"mesh_rows": 64, "mesh_cols": 64, "cpes_per_bus": 1024, "ldm_bytes": 1 << 20},
     "ldm_bytes", "exceeds 1 GiB"),
    ({"zero_reg": 32}, "zero_reg", "expected a register < n_regs = 32, got 32"),
    ({"reg_bits": 512}, "vec_lanes_fp64", "expected reg_bits / 64 = 8"),
    ({"vec_lanes_fp32": 9}, "vec_lanes_fp32", "expected at most reg_bits / 32 = 8"),
    ({"n_dma_bus": 3}, "n_dma_bus", "must divide mesh_cols = 8, got 3"),
    ({"cpes_per_bus": 8}, "cpes_per_bus", "expected 64 / 4 = 16, got 8"),
    ({"gld_gstd_latency": 100}, "gld_gstd_latency", "must be >= gld_latency = 177"),
]


@pytest.mark.parametrize(("changes", "key", "fragment"), CROSS_CASES, ids=[c[1] for c in CROSS_CASES])
def test_rules_between_keys(changes: dict, key: str, fragment: str) -> None:
    m = default_machine()
    _expect_error(lambda: m.replace(**changes), "sw26010.toml (modified)", key, fragment)


def test_consistent_unusual_machines_load() -> None:
    m = default_machine()
    big = m.replace(mesh_rows=64, mesh_cols=64, cpes_per_bus=1024, ldm_bytes=256 << 10)
    assert big.n_cpes * big.ldm_bytes == 1 << 30
    wide = m.replace(reg_bits=512, vec_lanes_fp64=8, vec_lanes_fp32=16, n_regs=64, zero_reg=63)
    assert wide.flops_per_cycle_cpe == 16 and wide.reg_bytes == 64
    tiny = m.replace(mesh_rows=1, mesh_cols=1, n_dma_bus=1, cpes_per_bus=1)
    assert tiny.n_cpes == 1 and tiny.dma_bus_of(0) == 0


# ---- instruction table -----------------------------------------------------------------------


def test_required_mnemonics_are_the_shipped_table() -> None:
    assert len(REQUIRED_MNEMONICS) == len(set(REQUIRED_MNEMONICS))
    assert set(REQUIRED_MNEMONICS) == set(_raw()["instructions"])
    assert set(REQUIRED_MNEMONICS) == set(default_machine().instructions)


def test_every_mnemonic_of_the_sw_dialect_is_required() -> None:
    from taihu.dialects.sw import Sw

    emitted = {op.MNEMONIC for op in Sw.operations if isinstance(getattr(op, "MNEMONIC", None), str)}
    assert len(emitted) > 50
    assert emitted <= set(REQUIRED_MNEMONICS), sorted(emitted - set(REQUIRED_MNEMONICS))


@pytest.mark.parametrize("mnemonic", REQUIRED_MNEMONICS)
def test_missing_mnemonic_is_reported_at_load(mnemonic: str) -> None:
    data = _raw()
    del data["instructions"][mnemonic]
    msg = _expect_error(lambda: machine_from_mapping(data, "small.toml"), "small.toml",
                        f"instructions.{mnemonic}")
    assert msg == (f"small.toml: key 'instructions.{mnemonic}': missing (every mnemonic of the "
                   f"shipped sw26010.toml table is required)")


def test_missing_mnemonic_in_a_file(tmp_path) -> None:
    text = "\n".join(l for l in _base_text().splitlines() if not l.startswith("vmad "))
    p = _write(tmp_path, text)
    _expect_error(lambda: load_machine(p), "m.toml", "instructions.vmad", ": missing")


def _with_row(name: str, row: Any) -> dict[str, Any]:
    data = _raw()
    data["instructions"][name] = row
    return data


@pytest.mark.parametrize("latency", [10_001, -1, 10**12, 1e12, 7.0, NAN, INF, True, "lat_fpp",
                                     "ldm_bytes", "spawn_cycles", "f_clk_ghz", [7]])
def test_row_latency(latency: Any) -> None:
    data = _with_row("vmad", {"pipes": "P0", "latency": latency})
    _expect_error(lambda: machine_from_mapping(data, "t.toml"), "t.toml",
                  "instructions.vmad.latency", "expected an integer in [0, 10000] cycles or the "
                  "name of a cycle parameter")


@pytest.mark.parametrize("repeat", [0, -1, 10_001, 2**63, 1.5, NAN, True, "12"])
def test_row_repeat(repeat: Any) -> None:
    data = _with_row("vdivd", {"pipes": "P0", "latency": 15, "repeat": repeat})
    _expect_error(lambda: machine_from_mapping(data, "t.toml"), "t.toml",
                  "instructions.vdivd.repeat", "expected an integer in [1, 10000] cycles")


def test_row_bounds_and_parameters_accepted() -> None:
    for row, lat, rep in [({"pipes": "P0", "latency": 0}, 0, 1),
                          ({"pipes": "P0", "latency": 10_000, "repeat": 10_000}, 10_000, 10_000),
                          ({"pipes": "P0/P1", "latency": "dma_latency"}, 200, 1),
                          ({"pipes": "P1", "latency": "sync_array"}, 28, 1)]:
        t = machine_from_mapping(_with_row("vmad", row), "t.toml").instruction("vmad")
        assert (t.latency, t.repeat) == (lat, rep)


@pytest.mark.parametrize(("row", "key", "fragment"), [
    ({"pipes": "P2", "latency": 7}, "instructions.vmad.pipes", "expected 'P0', 'P1' or 'P0/P1'"),
    ({"pipes": 0, "latency": 7}, "instructions.vmad.pipes", "got 0"),
    ({"pipes": ["P0"], "latency": 7}, "instructions.vmad.pipes", "got an array"),
    ({"pipes": "P0"}, "instructions.vmad", "needs both 'pipes' and 'latency'"),
    ({"pipes": "P0", "latency": 7, "lanes": 4}, "instructions.vmad", "unknown field(s) ['lanes']"),
    (7, "instructions.vmad", "expected { pipes = ..., latency = ... }, got 7"),
])
def test_row_shape(row: Any, key: str, fragment: str) -> None:
    _expect_error(lambda: machine_from_mapping(_with_row("vmad", row), "t.toml"), "t.toml", key, fragment)


def test_table_itself() -> None:
    data = _raw() | {"instructions": 3}
    _expect_error(lambda: machine_from_mapping(data, "t.toml"), "t.toml", "instructions",
                  "expected a table of mnemonics, got 3")
    data = _raw()
    data["instructions"]["VMAD"] = {"pipes": "P0", "latency": 7}
    _expect_error(lambda: machine_from_mapping(data, "t.toml"), "t.toml", "instructions.VMAD",
                  "mnemonics are case-insensitive")


def test_extra_mnemonics_are_allowed() -> None:
    m = machine_from_mapping(_with_row("vfoo", {"pipes": "P0", "latency": 3}), "t.toml")
    assert m.instruction("VFOO").latency == 3


def test_replace_validates_instr_timing_rows() -> None:
    m = default_machine()
    table = dict(m.instructions)
    for bad, key in [(InstrTiming((0,), 10**12), "instructions.vmad.latency"),
                     (InstrTiming((0,), -1), "instructions.vmad.latency"),
                     (InstrTiming((2,), 7), "instructions.vmad.pipes"),
                     (InstrTiming((0,), 7, None, 0), "instructions.vmad.repeat")]:
        _expect_error(lambda bad=bad: m.replace(instructions=table | {"vmad": bad}),
                      "sw26010.toml (modified)", key)
    without = {k: v for k, v in table.items() if k != "gld"}
    _expect_error(lambda: m.replace(instructions=without), "sw26010.toml (modified)",
                  "instructions.gld", ": missing")
    m2 = m.replace(instructions=table | {"vmad": InstrTiming((0,), 9)})
    assert m2.instruction("vmad").latency == 9 and m2.instruction("vmas").latency == 7


# ---- files -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "fragment"), [
    ("", "empty machine description (no keys)"),
    ("\n  \n\t\n", "empty machine description (no keys)"),
    ("# comments only\n# nothing else\n", "empty machine description (no keys)"),
    (b"PK\x03\x04\x00\x00\x08\x00", "binary file (NUL byte at offset 4)"),
    ("f_clk_ghz = 1.45\n\x00\n", "binary file (NUL byte at offset 17)"),
    (b"f_clk_ghz = 1.45 # \xe9t\xe9\n", "not UTF-8 text (byte 0xe9 at offset 19)"),
    (b"\xff\xfe\x00f\x00", "binary file (NUL byte at offset 2)"),
    ("f_clk_ghz = = 1", "invalid TOML: Invalid value (at line 1, column 13)"),
    ("[instructions\n", "invalid TOML:"),
    ("a = 1" + "0" * 5000, "invalid TOML: an integer literal is too long"),
    ("a = " + "[" * 3000 + "]" * 3000, "invalid TOML: arrays or tables nested too deeply"),
    ("x = 1\n" + "#" * (1 << 20), "not a machine description (larger than 1 MiB)"),
])
def test_bad_files(tmp_path, content: str | bytes, fragment: str) -> None:
    p = _write(tmp_path, content)
    _expect_error(lambda: load_machine(p), "m.toml", None, fragment)
    _expect_error(lambda: resolve_machine(str(p)), "m.toml", None, fragment)


def test_missing_and_unknown_keys_in_files(tmp_path) -> None:
    text = "\n".join(l for l in _base_text().splitlines() if not l.startswith("lat_fp "))
    _expect_error(lambda: load_machine(_write(tmp_path, text)), "m.toml", None, "missing key 'lat_fp'")
    text = _base_text().replace("lat_fp = 7", "lat_fpp = 7")
    _expect_error(lambda: load_machine(_write(tmp_path, text)), "m.toml", None, "unknown key 'lat_fpp'")
    _expect_error(lambda: load_machine(_write(tmp_path, "[[machine]]\nf_clk_ghz = 1.45\n")),
                  "m.toml", None, "unknown key 'machine'")


def test_unreadable_files(tmp_path) -> None:
    missing = tmp_path / "nope.toml"
    _expect_error(lambda: load_machine(missing), str(missing), None,
                  "cannot read machine description: No such file or directory")
    _expect_error(lambda: load_machine(tmp_path), str(tmp_path), None,
                  "cannot read machine description: Is a directory")
    with pytest.raises(MachineConfigError, match="cannot read machine description: embedded null"):
        load_machine("m\0.toml")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_file_without_read_permission(tmp_path) -> None:
    p = _write(tmp_path, _base_text())
    p.chmod(0)
    try:
        _expect_error(lambda: load_machine(p), str(p), None, "Permission denied")
    finally:
        p.chmod(0o644)


def test_utf8_bom_is_accepted(tmp_path) -> None:
    p = _write(tmp_path, "\ufeff" + _base_text())
    assert load_machine(p) == default_machine()


@pytest.mark.parametrize("data", [[1, 2], None, "f_clk_ghz = 1.45", 3])
def test_non_table_root(data: Any) -> None:
    _expect_error(lambda: machine_from_mapping(data, "x.toml"), "x.toml", None,
                  "expected a table of machine parameters")


def test_non_string_keys() -> None:
    _expect_error(lambda: machine_from_mapping(_raw() | {1: 2}, "x.toml"), "x.toml", None,
                  "unknown key 1")


# ---- swsim.target ----------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "attr_of", "fragment"), [
    ("dma_latency", lambda: _int_attr(10**12), "expected an integer in [0, 10000] cycles, got 1000000000000"),
    ("f_clk_ghz", lambda: _float_attr(NAN), "expected a finite number in [0.01, 10] GHz, got nan"),
    ("lat_fp", lambda: _bool_attr(True), "expected an integer in [1, 10000] cycles, got true"),
    ("n_regs", lambda: _int_attr(1), "expected an integer in [32, 256], got 1"),
])
def test_swsim_target_dictionary_is_validated(key: str, attr_of, fragment: str) -> None:
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr
    from xdsl.utils.exceptions import VerifyException

    from taihu.dialects.swsim import TargetOp

    good = TargetOp(default_machine())
    bad = dict(good.machine.data) | {key: attr_of()}
    op = TargetOp.create(properties={"source": StringAttr("bad.toml"), "machine": DictionaryAttr(bad)})
    _expect_error(op.get_machine, "bad.toml", key, fragment)
    with pytest.raises(VerifyException, match=re.escape(f"bad.toml: key '{key}': {fragment}")):
        op.verify()


def _int_attr(v: int):
    from xdsl.dialects.builtin import IntegerAttr, i64

    return IntegerAttr(v, i64)


def _float_attr(v: float):
    from xdsl.dialects.builtin import FloatAttr, f64

    return FloatAttr(v, f64)


def _bool_attr(v: bool):
    from xdsl.dialects.builtin import IntegerAttr, IntegerType

    return IntegerAttr(int(v), IntegerType(1))


# ---- robustness ------------------------------------------------------------------------------


def test_random_single_key_mutations_only_raise_machine_config_error() -> None:
    """300 random one-key mutations: each gives a Machine whose derived values are finite, or a
    MachineConfigError naming a key; never another exception."""
    rng = random.Random(20240611)
    pool: list[Any] = [0, 1, -1, 7, 8, 31, 32, 64, 65, 255, 256, 1024, 4096, 65536, 10_000, 10_001,
                       2**31, 2**63, 10**30, 0.0, 0.5, 1.45, 1e-300, 1e300, NAN, INF, -INF, True,
                       False, "", "ceil", "none", "leader-p0", [1], {"a": 1}]
    m0 = default_machine()
    loaded = 0
    for _ in range(300):
        key = rng.choice(ALL_KEYS)
        value = rng.choice(pool)
        try:
            m = m0.replace(**{key: value})
        except MachineConfigError as e:
            # the key itself, or the key a rule between keys blames (cpes_per_bus for mesh_rows)
            assert str(e).startswith("sw26010.toml (modified): key '") and "\n" not in str(e)
            continue
        loaded += 1
        assert math.isfinite(m.peak_cg_gflops) and m.peak_cg_gflops > 0
        assert 0 <= m.dma_data_cycles(m.ldm_bytes, put=True) < 2**62
        assert math.isfinite(m.cycles_to_seconds(10**12))
    assert loaded > 0
