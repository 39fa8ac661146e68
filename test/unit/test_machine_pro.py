"""Tests of the shipped SW26010-Pro core-group description (target/configs/sw26010pro.toml).

The cited values (clock, LDM, mesh, core groups, DDR4 bandwidth, chip peaks) are the ones the
file's header sources give; the derived peaks are the ones its header states; every key carries
a citation tag or ``param``.
"""

from __future__ import annotations

import re
import tomllib

import pytest

from taihu.target import resolve_machine
from taihu.target.machine import Machine, default_machine, shipped_machines

NAME = "sw26010pro"
# citation tags defined in the file's header, plus seed lines and the spec
CITE = re.compile(r"\[(CC|WP|BGL)\]|004 L\d+|param|spec")


@pytest.fixture(scope="module")
def m() -> Machine:
    return resolve_machine(NAME)


@pytest.fixture(scope="module")
def text() -> str:
    with open(shipped_machines()[NAME]) as f:
        return f.read()


def _header(text: str) -> str:
    """The leading comment block (before the first key)."""
    lines = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            lines.append(line)
        else:
            break
    return "\n".join(lines)


def test_loads_by_name_and_by_path(m: Machine) -> None:
    path = shipped_machines()[NAME]
    assert path.endswith("sw26010pro.toml")
    assert m.source == path
    assert resolve_machine(path) == m
    assert resolve_machine(NAME) is m  # shipped names are loaded once
    assert m != default_machine()


def test_cited_values(m: Machine) -> None:
    # [CC] [BGL]: 2.25 GHz; [CC]: 256 KB LDM; [WP] [BGL]: 8x8 CPE cluster; 6 core groups
    assert m.f_clk_ghz == 2.25
    assert m.ldm_bytes == 256 * 1024
    assert (m.mesh_rows, m.mesh_cols, m.n_cpes) == (8, 8, 64)
    assert m.n_cg == 6
    # [CC] [WP]: 51.2 GB/s DDR4 per CG (307.2 GB/s per chip); the timing uses the theoretical value
    assert m.theory_bw_cg == 51.2 and m.n_cg * m.theory_bw_cg == pytest.approx(307.2)
    assert m.peak_bw_cg == m.theory_bw_cg
    # [CC]: 13.8 TFLOPS FP64 = 384 CPEs x 2.25 GHz x 16 flop (512-bit FMA); [BGL]: 14.03 TF FP32
    assert m.peak_chip_cpe_gflops == pytest.approx(m.n_cg * m.n_cpes * m.f_clk_ghz * 16)
    assert round(m.peak_chip_cpe_gflops / 1000, 1) == 13.8
    assert m.peak_chip_sp_tflops == 14.03
    # param: program budget = the SW26010's 7/8 of the LDM, scaled
    d = default_machine()
    assert m.ldm_user_bytes * d.ldm_bytes == d.ldm_user_bytes * m.ldm_bytes
    assert m.ldm_user_bytes == 229376 < m.ldm_bytes


def test_modelled_as_256_bit_8x8(m: Machine) -> None:
    # the lowering's micro-kernels and mesh GEMM: same register file and vectors as the SW26010
    d = default_machine()
    for key in ("reg_bits", "vec_lanes_fp64", "vec_lanes_fp32", "n_regs", "zero_reg",
                "mesh_rows", "mesh_cols", "vector_ldm_align", "rlc_msg_bits"):
        assert getattr(m, key) == getattr(d, key), key
    assert (m.reg_bits, m.vec_lanes_fp64, m.n_regs, m.zero_reg) == (256, 4, 32, 31)
    # RMA modelled as RLC, instruction table kept from Table 3.2
    assert dict(m.instructions) == dict(d.instructions)
    assert (m.rlc_latency, m.sync_rowcol, m.lat_fp, m.lat_ldm_load) == (11, 14, 7, 4)
    assert m.instruction("vmad").latency == 7 and m.instruction("putr").pipes == (1,)


def test_cross_key_rules(m: Machine) -> None:
    assert m.cpes_per_bus * m.n_dma_bus == m.n_cpes
    assert m.mesh_cols % m.n_dma_bus == 0
    assert m.gld_gstd_latency - m.gld_latency == m.instruction("gstd").latency == 101
    assert m.reg_bytes == 32


def test_derived_peaks(m: Machine) -> None:
    assert m.flops_per_cycle_cpe == 8
    assert m.peak_cpe_gflops == pytest.approx(18.0)  # modelled; hardware 36.0
    assert m.peak_cg_gflops == pytest.approx(1152.0)  # modelled; hardware 2304
    assert m.peak_chip_cpe_gflops == pytest.approx(2 * m.n_cg * m.peak_cg_gflops)  # half modelled
    assert m.dma_bus_bw == pytest.approx(12.8)
    assert m.dma_data_cycles(1024) == 180  # 1024 B x 2.25 GHz / 12.8 GB/s
    assert m.dma_data_cycles(128) == 23  # ceil(22.5)
    assert m.cycles_to_seconds(2250) == pytest.approx(1e-6)
    assert [m.dma_bus_of(c) for c in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    # the SW-to-theory-bandwidth ratio quoted in the header (SW26010: 30.94 / 33.6)
    d = default_machine()
    assert round(100 * d.peak_bw_cg / d.theory_bw_cg) == 92
    # RLC sanity ceilings keep the SW26010's bytes per cycle
    assert m.rlc_bw_p2p_cg / m.f_clk_ghz == pytest.approx(d.rlc_bw_p2p_cg / d.f_clk_ghz, rel=1e-4)
    assert m.rlc_bw_bcast_cg / m.f_clk_ghz == pytest.approx(d.rlc_bw_bcast_cg / d.f_clk_ghz, rel=1e-4)
    assert m.ldm_reg_bw / m.f_clk_ghz == pytest.approx(d.ldm_reg_bw / d.f_clk_ghz)


def test_header_states_the_approximations(m: Machine, text: str) -> None:
    head = _header(text)
    hw_cpe = m.f_clk_ghz * 2 * (512 // 64)  # 512-bit FMA per cycle
    for number in (
        f"{m.peak_cpe_gflops:.1f} GFLOPS",  # modelled per-CPE peak
        f"{hw_cpe:.1f} GFLOPS",  # hardware per-CPE peak
        f"peak_cg_gflops = {m.peak_cg_gflops:.0f} GFLOPS",
        f"{2 * m.peak_cg_gflops:.0f}",
        f"{m.n_cg * m.peak_cg_gflops:.0f} vs {m.peak_chip_cpe_gflops:.0f} GFLOPS",
        f"dma_bus_bw = {m.peak_bw_cg} / {m.n_dma_bus} = {m.dma_bus_bw} GB/s",
        f"200 cycles = {m.cycles_to_seconds(200) * 1e9:.0f} ns",
    ):
        assert number in head, number
    for phrase in ("256-bit", "512-bit", "RMA", "RLC", "8x8", "THEORETICAL", "Table 3.2"):
        assert phrase in head, phrase
    # every tag used on a key is defined in the header's source list
    for tag in ("[CC]", "[WP]", "[BGL]"):
        assert re.search(rf"^# {re.escape(tag)} ", head, re.M), tag


def test_every_key_is_commented(text: str) -> None:
    scalars, table = text.split("[instructions]")
    keys = 0
    for line in scalars.splitlines():
        if re.match(r"^[a-z_0-9]+ *=", line):
            keys += 1
            assert "#" in line, line
            assert CITE.search(line.split("#", 1)[1]), line
    assert keys == len(tomllib.loads(text)) - 1  # every scalar key was seen
    block: list[str] = []
    last_comment = ""
    entries = 0
    for line in table.splitlines():
        if line.startswith("#"):
            block.append(line)
            continue
        if block:
            last_comment, block = "\n".join(block), []
        if re.match(r"^[a-z_0-9]+ *=", line):
            entries += 1
            assert CITE.search(line) or CITE.search(last_comment), line
    assert entries == len(tomllib.loads(text)["instructions"])
