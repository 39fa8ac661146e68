"""taihu-run's per-layer aggregation of report kernels and the --check comparison."""

from __future__ import annotations

import numpy as np
import pytest

from taihu.tools.run import compare, layer_rows


def kernel(name, layer, alg, cycles, flops, dma, t_comp, t_dma, rlc=0, shape=None):
    return {"name": name, "layer": layer, "algorithm": alg, "shape": shape, "op": "graph.conv2d",
            "cycles": cycles, "flops": flops, "dma_bytes": dma, "t_compute": t_comp, "t_dma": t_dma,
            "rlc_wait": rlc, "breakdown": {"compute": t_comp, "rlc": 0, "dma": cycles - t_comp, "idle": 0}}


REPORT = {
    "f_clk_ghz": 1.45, "peak_gflops": 742.4, "n_cpes": 64,
    "kernels": [
        kernel("conv1_im2col", "conv1", "im2col", 1000, 0, 4_000_000, 0, 1000, shape=None),
        kernel("conv1", "conv1", "im2col", 2000, 2_900_000, 1_000_000, 1900, 500,
               shape="1x64x56x56 <- 1x64x56x56 * 64x64x3x3"),
        kernel("relu_3", "relu_3", "map", 500, 0, 800_000, 10, 500),
        kernel("copy", None, None, 100, 0, 1000, 0, 100),
        kernel("conv1_again", "conv1", "gemm", 100, 100, 10, 100, 10),
    ],
}


def test_kernels_grouped_by_layer_in_order():
    rows = layer_rows(REPORT)
    assert [r["layer"] for r in rows] == ["conv1", "relu_3", "copy"]
    conv = rows[0]
    assert conv["kernels"] == 3 and conv["cycles"] == 3100 and conv["flops"] == 2_900_100
    assert conv["algorithm"] == "im2col+gemm"
    assert conv["shape"] == "1x64x56x56 <- 1x64x56x56 * 64x64x3x3"  # the heaviest kernel's shape
    secs = 3100 / 1.45e9
    assert conv["ms"] == pytest.approx(secs * 1e3)
    assert conv["gflops"] == pytest.approx(2_900_100 / secs / 1e9)
    assert conv["percent_of_peak"] == pytest.approx(100 * conv["gflops"] / 742.4)
    assert conv["dma_gbps"] == pytest.approx(5_000_010 / secs / 1e9)
    assert conv["bound"] == "compute"  # t_compute 2000 vs t_dma 1510
    assert conv["breakdown"]["compute"] == 2000
    assert rows[1]["bound"] == "DMA" and rows[2]["algorithm"] is None


def test_compare_tolerance_nan_and_shape():
    b = np.array([1.0, -2.0, 1e-7, 0.0], np.float32)
    ok = compare({"y": b + np.float32(5e-6)}, {"y": b}, "reference")[0]
    assert ok.ok and ok.max_abs == pytest.approx(5e-6, rel=1e-2)
    bad = compare({"y": b * np.float32(1.001)}, {"y": b}, "reference")[0]
    assert not bad.ok and bad.max_rel == pytest.approx(1e-3, rel=1e-2)
    nan = compare({"y": np.array([np.nan, 1.0])}, {"y": np.array([np.nan, 1.0])}, "r")[0]
    assert nan.ok
    assert not compare({"y": np.array([np.nan, 1.0])}, {"y": np.array([0.0, 1.0])}, "r")[0].ok
    assert not compare({"y": np.zeros(3)}, {"y": np.zeros(4)}, "r")[0].ok
