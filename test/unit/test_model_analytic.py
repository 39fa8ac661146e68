"""Analytic mode: eq 3-1/3-2 (HW-1 table of spec §4.5) and the overlap rule (§13 cases 11-12)."""

import pytest

from taihu.backends.model.analytic import (
    aggregate_bandwidth_gbs,
    t_cont_dma,
    t_exec,
    t_stride_dma,
)
from taihu.target.machine import default_machine

M = default_machine()


@pytest.mark.parametrize(
    "size,us,aligned,mis",
    [(32, 0.403, 5.09, 5.09), (128, 0.403, 20.34, 12.27), (256, 0.667, 24.55, 17.57),
     (1024, 2.256, 29.05, 26.00), (4096, 8.611, 30.44, 29.54), (16384, 34.03, 30.81, 30.58)],
)
def test_eq31_table(size, us, aligned, mis):
    t = t_cont_dma(size, M)
    assert t * 1e6 == pytest.approx(us, abs=0.002 * max(1, us))
    assert aggregate_bandwidth_gbs(size, t) == pytest.approx(aligned, abs=0.01)
    assert aggregate_bandwidth_gbs(size, t_cont_dma(size, M, addr=64)) == pytest.approx(mis, abs=0.01)


@pytest.mark.parametrize("bsize,aligned,drift", [(16, 3.68, 3.36), (128, 29.41, 15.85), (2048, 30.84, 29.20)])
def test_eq32_table(bsize, aligned, drift):
    size = 10 * bsize
    gap = (-bsize) % 128
    assert aggregate_bandwidth_gbs(size, t_stride_dma(size, bsize, gap, M)) == pytest.approx(aligned, abs=0.01)
    assert aggregate_bandwidth_gbs(size, t_stride_dma(size, bsize, 4, M)) == pytest.approx(drift, abs=0.01)


def test_case11_overlap():
    assert t_exec(16.0, 10.0) == pytest.approx(16.0)
    assert t_exec(16.0, 10.0, sync=True) == pytest.approx(26.0)


def test_case12_overlap():
    assert t_exec(16.0, 20.0) == pytest.approx(21.0)
    assert t_exec(16.0, 20.0, sync=True) == pytest.approx(36.0)
    assert t_exec(16.0, 20.0, double_buffered=True) == pytest.approx(20.0)
