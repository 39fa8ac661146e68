"""Analytic performance model of one core group (004 eq 3-1, 3-2, 3-3 and the overlap rule of
L607/L674; spec sw26010-model.md §9.1).

Units: seconds unless a name ends in ``_cycles``; bytes; ``PEAK_BW`` in GB/s. All parameters come
from the :class:`~taihu.target.machine.Machine` the caller passes (``target/configs/sw26010.toml``:
``T_latency`` = ``dma_latency`` cycles (200, L597), ``PEAK_BW`` = ``peak_bw_cg`` (30.94 GB/s, L597),
``#CPE`` = ``n_cpes`` (64)).
"""

from __future__ import annotations

from taihu.target.dma import moved, moved_strided
from taihu.target.machine import Machine


def t_latency(machine: Machine) -> float:
    """DMA start-up T_latency in seconds (``dma_latency`` cycles: 200 = 137.9 ns, L597)."""
    return machine.cycles_to_seconds(machine.dma_latency)


def t_cont_dma(size: int, machine: Machine, addr: int = 0, n_cpe: int | None = None) -> float:
    """eq 3-1: ``T_latency + (size + waste) / (PEAK_BW / #CPE)`` seconds for one contiguous
    transfer of ``size`` bytes starting at main-memory byte address ``addr`` (waste by 128-B
    transactions, spec §4.4), every one of ``n_cpe`` CPEs (default ``machine.n_cpes``) issuing
    the same transfer."""
    n = machine.n_cpes if n_cpe is None else n_cpe
    mv = moved(addr, size, machine.mem_txn_bytes)
    return t_latency(machine) + mv / (machine.peak_bw_cg * 1e9 / n)


def t_stride_dma(size: int, bsize: int, stride: int, machine: Machine, addr: int = 0,
                 n_cpe: int | None = None) -> float:
    """eq 3-2: ``T_latency + Σ_i (bsize + waste_i) / (PEAK_BW / #CPE)`` seconds for ``size``
    bytes in blocks of ``bsize`` bytes, ``stride`` = bytes skipped between blocks (L597)."""
    n = machine.n_cpes if n_cpe is None else n_cpe
    mv = moved_strided(addr, size, bsize, stride, machine.mem_txn_bytes)
    return t_latency(machine) + mv / (machine.peak_bw_cg * 1e9 / n)


def aggregate_bandwidth_gbs(size: int, t: float, n_cpe: int = 64) -> float:
    """Useful CG bandwidth in GB/s when ``n_cpe`` CPEs each move ``size`` bytes in ``t`` s."""
    return n_cpe * size / t / 1e9


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

