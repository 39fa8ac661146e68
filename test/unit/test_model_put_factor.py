"""``dma_put_bw_factor`` multiplies the data-phase time of a put, in the machine
(``Machine.dma_data_cycles``, which the simulator's DMA engine uses) and in the analytic model alike."""

from __future__ import annotations

import pytest

from taihu.backends.model.gemm_blocking import t_dma_tiles
from taihu.target.machine import default_machine


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_put_factor_scales_the_put_data_time_in_machine_and_model(factor: float) -> None:
    m = default_machine()
    slow = m.replace(dma_put_bw_factor=factor)
    moved = 1 << 20
    # the machine (and so the simulator): put data phase = get data phase x factor
    assert slow.dma_data_cycles(moved, put=True) == pytest.approx(factor * m.dma_data_cycles(moved), abs=1)
    # the model: the same direction
    latency = m.cycles_to_seconds(m.dma_latency)
    get = t_dma_tiles(moved, slow) - latency
    put = t_dma_tiles(moved, slow, put=True) - latency
    assert put == pytest.approx(factor * get)
