"""Analytic performance model of one core group (004 eq 3-1, 3-2, 3-3 and the overlap rule of
L607/L674; spec sw26010-model.md §9.1).

Units: seconds unless a name ends in ``_cycles``; bytes; ``PEAK_BW`` in GB/s. All parameters come
from a :class:`~taihu.target.machine.Machine` (default ``target/configs/sw26010.toml``):
``T_latency`` = ``dma_latency`` cycles (200, L597), ``PEAK_BW`` = ``peak_bw_cg`` (30.94 GB/s, L597),
``#CPE`` = ``n_cpes`` (64).
"""

from __future__ import annotations

from collections.abc import Sequence

from taihu.target.dma import moved, moved_strided
from taihu.target.machine import Machine, default_machine


def _m(machine: Machine | None) -> Machine:
    return machine or default_machine()


def t_latency(machine: Machine | None = None) -> float:
    """DMA start-up T_latency in seconds (200 cycles = 137.9 ns, L597)."""
    m = _m(machine)
    return m.cycles_to_seconds(m.dma_latency)


def t_cont_dma(size: int, addr: int = 0, n_cpe: int | None = None,
               machine: Machine | None = None) -> float:
    """eq 3-1: ``T_latency + (size + waste) / (PEAK_BW / #CPE)`` for one contiguous transfer of
    ``size`` bytes starting at main-memory byte address ``addr`` (waste by 128-B transactions,
    spec §4.4), every one of ``n_cpe`` CPEs (default 64) issuing the same transfer."""
    m = _m(machine)
    n = m.n_cpes if n_cpe is None else n_cpe
    mv = moved(addr, size, m.mem_txn_bytes)
    return t_latency(m) + mv / (m.peak_bw_cg * 1e9 / n)


def t_stride_dma(size: int, bsize: int, stride: int, addr: int = 0, n_cpe: int | None = None,
                 machine: Machine | None = None) -> float:
    """eq 3-2: ``T_latency + Σ_i (bsize + waste_i) / (PEAK_BW / #CPE)``; ``stride`` = bytes
    skipped between blocks (L597)."""
    m = _m(machine)
    n = m.n_cpes if n_cpe is None else n_cpe
    mv = moved_strided(addr, size, bsize, stride, m.mem_txn_bytes)
    return t_latency(m) + mv / (m.peak_bw_cg * 1e9 / n)


def aggregate_bandwidth_gbs(size: int, t: float, n_cpe: int = 64) -> float:
    """Useful CG bandwidth in GB/s when ``n_cpe`` CPEs each move ``size`` bytes in ``t`` s."""
    return n_cpe * size / t / 1e9


def t_compute(p0_cycles: int, p1_cycles: int, machine: Machine | None = None) -> float:
    """eq 3-3: ``T_compute = max(#P0_cycle, #P1_cycle) / f_clk``."""
    return _m(machine).cycles_to_seconds(max(p0_cycles, p1_cycles))


def t_overlap(t_dma: float, t_comp: float, sync: bool = False, double_buffered: bool = False,
              local_fraction: float = 1 / 16) -> float:
    """Overlap rule (L607, L674; spec §9.1 table).

    * ``sync`` (CPEs use SYNR/SYNC or RLC): 0.
    * no timing dependence: ``T_compute`` if ``T_DMA - T_local_DMA > T_compute`` else
      ``T_DMA - T_local_DMA``, with ``T_local_DMA = T_DMA / 16`` (one 4-CPE group).
    * software double buffering: ``T_DMA`` if compute-bound (``T_compute > T_DMA``), else only
      ``T_local_DMA`` is gained.
    """
    t_local = t_dma * local_fraction
    if double_buffered:
        return t_dma if t_comp > t_dma else t_local
    if sync:
        return 0.0
    if t_dma - t_local > t_comp:
        return t_comp
    return t_dma - t_local


def t_exec(t_dma: float, t_comp: float, sync: bool = False, double_buffered: bool = False) -> float:
    """eq 3-3: ``T_exec = T_compute + T_DMA - T_overlap``."""
    return t_comp + t_dma - t_overlap(t_dma, t_comp, sync, double_buffered)


def dma_table(sizes: Sequence[int], misalign: int = 0, machine: Machine | None = None) -> list[tuple[int, float, float]]:
    """HW-1 rows: (bytes per CPE, T per CPE in µs, CG GB/s) for 64 identical contiguous gets."""
    rows = []
    for s in sizes:
        t = t_cont_dma(s, misalign, machine=machine)
        rows.append((s, t * 1e6, aggregate_bandwidth_gbs(s, t)))
    return rows
