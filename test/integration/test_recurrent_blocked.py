"""LSTM and GRU with hidden sizes whose R_j does not fit in LDM (issue 14 item 2): the recurrence
streams R_j in (b, b) blocks (backends/model/lstm_plan.py "Blocked recurrence"), the state in
column blocks. Numerics against the reference on the tile interpreter and on swsim, GRU against
onnxruntime, an ONNX LSTM of H = 1024 through ``taihu-run --check``, and the recurrence's cycles
against its DMA roofline (the R stream: 4 H^2 f32 per step at 30.94 GB/s)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from xdsl.utils.exceptions import PassFailedException

from taihu.dialects import tile
from taihu.target.machine import default_machine
from taihu.test.integration.test_lowering_conv import (
    ATOL,
    RTOL,
    _simulate,
    check_tile_multi,
    kernels,
    lower_tile,
    lstm_graph,
    run_module,
)
from taihu.test.integration.test_onnx_ops_swsim import _check, _model


def _roofline_cycles(seq: int, hidden: int, gates: int = 4) -> float:
    """Cycles of the recurrence's R stream at the core group's DMA peak (004 L597)."""
    m = default_machine()
    return seq * gates * hidden * hidden * 4 / m.peak_bw_cg * m.f_clk_ghz


@pytest.mark.parametrize("hidden", [512, 1000, 1024])
def test_blocked_lstm_on_the_tile_interpreter(hidden: int) -> None:
    lowered = check_tile_multi(lambda dt: lstm_graph(dt, seq=3, batch=2, inp=8, hidden=hidden))
    rec = next(k for k in kernels(lowered) if k.kernel_name.data == "lstm")
    nb = -(-hidden // 128) * 128 // 256  # the model's block: 256
    gemms = [o for o in rec.walk() if isinstance(o, tile.GemmOp)]
    assert len(gemms) == 4 * nb * nb and all(g.mnk == (32, 256, 256) for g in gemms)


def _simulated_lstm(seq: int, hidden: int) -> dict:
    g, outs = lstm_graph(np.float32, seq=seq, batch=1, inp=8, hidden=hidden)
    module = g.module(*outs)
    inputs = g.inputs(1)
    ref = run_module(module.clone(), inputs)
    res = _simulate(module, inputs)
    for k, v in ref.items():
        np.testing.assert_allclose(res.outputs[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    return next(k for k in res.report["kernels"] if k["name"] == "lstm")


def test_blocked_lstm_h512_simulated() -> None:
    """Two steps of H = 512 on swsim (about 7 s): 465 717 cycles, 84 % of the R stream's roofline."""
    rec = _simulated_lstm(2, 512)
    assert _roofline_cycles(2, 512) / rec["cycles"] > 0.75


@pytest.mark.slow
def test_blocked_lstm_h1024_simulated() -> None:
    """Two steps of H = 1024 on swsim (about 25 s): 1 692 981 cycles, 93 % of the roofline."""
    rec = _simulated_lstm(2, 1024)
    assert _roofline_cycles(2, 1024) / rec["cycles"] > 0.85


def _gru(hidden: int, lbr: int, seq: int = 2, batch: int = 1, inp: int = 8):
    rng = np.random.default_rng(7)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32), name)

    inits = [w("W", 1, 3 * hidden, inp), w("R", 1, 3 * hidden, hidden), w("B", 1, 6 * hidden),
             w("h0", 1, batch, hidden)]
    node = helper.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "yh"], hidden_size=hidden,
                            linear_before_reset=lbr)
    return _model([node], (seq, batch, inp), ["y", "yh"], inits, opset=14), (seq, batch, inp)


@pytest.mark.parametrize("hidden, lbr", [(512, 0), (500, 1)])
def test_blocked_gru_matches_onnxruntime(hidden: int, lbr: int) -> None:
    """GRU H = 512 (r*h blocks, h updated in place) and H = 500 with linear_before_reset (the
    new h in its own blocks, Rbh per block, the last block padded) on swsim, about 6 s each."""
    _check(*_gru(hidden, lbr))


@pytest.mark.slow
def test_onnx_lstm_h1024_taihu_run_check(tmp_path, capsys) -> None:
    """An ONNX LSTM of H = 1024 through taihu-run (lowered, simulated) --check against the graph
    reference and onnxruntime (about 30 s)."""
    from taihu.tools import run as run_tool

    seq, batch, inp, hid = 2, 1, 16, 1024
    rng = np.random.default_rng(3)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(hid)).astype(np.float32), name)

    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["y", "yh", "yc"], hidden_size=hid)
    m = _model([node], (seq, batch, inp), ["y", "yh", "yc"],
               [w("W", 1, 4 * hid, inp), w("R", 1, 4 * hid, hid), w("B", 1, 8 * hid)], opset=14)
    path = tmp_path / "lstm1024.onnx"
    path.write_bytes(m.SerializeToString())
    code = run_tool.main([str(path), "--check"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "onnxruntime" in out and "lstm" in out


def test_state_too_large_names_the_hidden_size() -> None:
    """The new limit: batch 256 with H = 1024 (h, c and the new h in fp64 alone need 96 KiB)."""
    g, outs = lstm_graph(np.float32, seq=2, batch=256, inp=8, hidden=1024)
    with pytest.raises(PassFailedException, match="hidden_size 1024: the LDM-resident recurrence state .* 256x1024"):
        lower_tile(g.module(*outs))
