"""Tests of the machine description (target/machine.py, target/configs/sw26010.toml)."""

from __future__ import annotations

import dataclasses
import re
import tomllib

import pytest

from taihu.target.machine import (
    DEFAULT_MACHINE_PATH,
    InstrTiming,
    Machine,
    MachineConfigError,
    default_machine,
    load_machine,
)


@pytest.fixture(scope="module")
def m() -> Machine:
    return default_machine()


def test_seed_values(m: Machine) -> None:
    # spec sw26010-model.md §3
    assert m.f_clk_ghz == 1.45
    assert (m.mesh_rows, m.mesh_cols, m.n_cpes) == (8, 8, 64)
    assert m.ldm_bytes == 65536 and m.ldm_user_bytes == 57344
    assert (m.n_regs, m.reg_bits, m.zero_reg, m.reg_bytes) == (32, 256, 31, 32)
    assert (m.mem_txn_bytes, m.dma_latency, m.peak_bw_cg) == (128, 200, 30.94)
    assert (m.n_dma_bus, m.cpes_per_bus, m.chan_buf_depth) == (4, 16, 3)
    assert (m.gld_latency, m.gld_gstd_latency, m.gld_bytes_max) == (177, 278, 32)
    assert (m.rlc_latency, m.rlc_send_depth, m.rlc_recv_depth) == (11, 4, 4)
    assert (m.sync_rowcol, m.sync_array, m.branch_penalty, m.spawn_cycles) == (14, 28, 0, 2900)


def test_derived_values(m: Machine) -> None:
    assert m.dma_bus_bw == pytest.approx(7.735)
    assert m.peak_cpe_gflops == pytest.approx(11.6)
    assert m.peak_cg_gflops == pytest.approx(742.4)
    assert m.cycles_to_seconds(1450) == pytest.approx(1e-6)
    # spec §13 #1, #3, #4, #5: data-phase cycles per bus
    assert m.dma_data_cycles(1024) == 192
    assert m.dma_data_cycles(128) == 24
    assert m.dma_data_cycles(1280) == 240
    assert m.dma_data_cycles(2560) == 480
    # bus = cid / 2 (004 L548)
    assert [m.dma_bus_of(c) for c in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert m.dma_bus_of(8 * 5 + 7) == 3


def test_table_3_2(m: Machine) -> None:
    # 004 Table 3.2 (L520-541), spec §6.2
    expect = {
        "addl": ((0, 1), 1), "subw": ((0, 1), 1), "cmplt": ((0, 1), 1),
        "vaddw": ((0,), 1), "mull": ((0,), 5), "sll": ((0, 1), 1),
        "vaddd": ((0,), 7), "vmuld": ((0,), 7), "vmad": ((0,), 7), "vmas": ((0,), 7),
        "vldd": ((1,), 4), "vlds": ((1,), 4), "ldde": ((1,), 4), "vstd": ((1,), 4),
        "vinsw": ((0,), 1), "vextw": ((0,), 1),
        "getr": ((1,), 1), "putc": ((1,), 1),
        "vldr": ((1,), 1), "vldc": ((1,), 1), "ldder": ((1,), 1), "lddec": ((1,), 1),
        "synr": ((0, 1), 14), "bgt": ((1,), 1), "gld": ((1,), 177),
    }
    for mnemonic, (pipes, lat) in expect.items():
        t = m.instruction(mnemonic)
        assert (t.pipes, t.latency) == (pipes, lat), mnemonic
    assert m.instruction("VMAD").pipe_name == "P0"
    assert m.instruction("addl").pipe_name == "P0/P1"
    with pytest.raises(KeyError, match="'frobnicate'"):
        m.instruction("frobnicate")


def test_every_key_is_commented() -> None:
    # each parameter cites a seed line or is marked param; each Table 3.2 group has a comment
    with open(DEFAULT_MACHINE_PATH) as f:
        text = f.read()
    scalars, table = text.split("[instructions]")
    cite = re.compile(r"004 L\d+|param|spec")
    block: list[str] = []
    last_comment = ""
    for line in table.splitlines():
        if line.startswith("#"):
            block.append(line)
            continue
        if block:
            last_comment, block = "\n".join(block), []
        if re.match(r"^[a-z_0-9]+ *=", line):
            assert cite.search(line) or cite.search(last_comment), line
    if True:
        for line in scalars.splitlines():
            if re.match(r"^[a-z_0-9]+ *=", line):
                assert "#" in line, line
                comment = line.split("#", 1)[1]
                assert re.search(r"004 L\d+|param|derived", comment), line


def test_replace_re_resolves_named_latencies(m: Machine) -> None:
    m2 = m.replace(lat_fp=9)
    assert m2.instruction("vmad").latency == 9
    assert m2.instruction("vaddd").latency == 9
    assert m2.instruction("vldd").latency == 4
    assert m.instruction("vmad").latency == 7
    assert m2 != m
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.lat_fp = 3  # type: ignore[misc]
    assert hash(m) == hash(load_machine())
    assert m == load_machine()


def _write(tmp_path, text: str):
    p = tmp_path / "m.toml"
    p.write_text(text)
    return p


def _base_text() -> str:
    with open(DEFAULT_MACHINE_PATH) as f:
        return f.read()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("dma_latency = 200", "dma_latency = -1", "key 'dma_latency': expected an integer in [0, 10000] cycles, got -1"),
        ("dma_latency = 200", "dma_latency = 2.5", "key 'dma_latency'"),
        ("peak_bw_cg = 30.94", "peak_bw_cg = 0", "key 'peak_bw_cg'"),
        ("rlc_contention = false", "rlc_contention = 1", "key 'rlc_contention': expected a boolean"),
        ("dual_tie = \"leader-p1\"", "dual_tie = \"random\"", "key 'dual_tie'"),
        ("ldm_user_bytes = 57344", "ldm_user_bytes = 70000", "key 'ldm_user_bytes': 70000 exceeds"),
        ("ldm_user_bytes = 57344", "ldm_user_bites = 57344", "unknown key 'ldm_user_bites'"),
        ("lat_fp = 7 ", "", "missing key 'lat_fp'"),
        ('vmad = { pipes = "P0", latency = "lat_fp" }',
         'vmad = { pipes = "P2", latency = "lat_fp" }', "instructions.vmad.pipes"),
        ('vmad = { pipes = "P0", latency = "lat_fp" }',
         'vmad = { pipes = "P0", latency = "lat_fpp" }', "instructions.vmad.latency"),
        ('vmad = { pipes = "P0", latency = "lat_fp" }',
         'vmad = { pipes = "P0" }', "key 'instructions.vmad'"),
    ],
)
def test_validation_names_the_key(tmp_path, old: str, new: str, message: str) -> None:
    text = _base_text()
    assert old in text
    if new == "":
        text = "\n".join(l for l in text.splitlines() if not l.startswith(old))
    else:
        text = text.replace(old, new, 1)
    with pytest.raises(MachineConfigError, match=re.escape(message)):
        load_machine(_write(tmp_path, text))


def test_bad_files(tmp_path) -> None:
    with pytest.raises(MachineConfigError, match="cannot read"):
        load_machine(tmp_path / "nope.toml")
    with pytest.raises(MachineConfigError, match="invalid TOML"):
        load_machine(_write(tmp_path, "f_clk_ghz = = 1"))


def test_override_file_roundtrip(tmp_path) -> None:
    text = _base_text().replace("rlc_latency = 11", "rlc_latency = 20")
    m2 = load_machine(_write(tmp_path, text))
    assert m2.rlc_latency == 20
    assert tomllib.loads(text)["rlc_latency"] == 20
    assert isinstance(m2.instruction("putr"), InstrTiming)
