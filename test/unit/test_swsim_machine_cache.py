"""``swsim.target``'s machine is validated once per distinct description (memoised), not per query."""

from __future__ import annotations

import dataclasses

import pytest

from taihu.target import machine as machine_mod
from taihu.target.machine import MachineConfigError, default_machine
from taihu.dialects import swsim
from taihu.dialects.swsim import TargetOp, machine_to_dict


def test_get_machine_is_memoised(monkeypatch):
    m = default_machine()  # loaded (and parsed) before counting
    calls = []
    real = machine_mod._parse_instructions

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(machine_mod, "_parse_instructions", counting)
    swsim._machine_of.cache_clear()
    t1, t2 = TargetOp(m), TargetOp(m)  # two ops, equal attributes
    first = t1.get_machine()
    assert first == m
    for _ in range(50):
        assert t1.get_machine() is first
        assert t2.get_machine() is first
    assert len(calls) == 1  # parsed once for all 101 queries

    # a different description is a different cache entry, with its own values
    other = dataclasses.replace(m, dma_latency=m.dma_latency + 1)
    t3 = TargetOp(other)
    assert t3.get_machine().dma_latency == m.dma_latency + 1
    assert t1.get_machine() is first
    assert len(calls) == 2


def test_invalid_machine_raises_every_time():
    m = default_machine()
    t = TargetOp(m)
    bad = dict(t.machine.data)
    del bad["dma_latency"]
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr

    t_bad = TargetOp.create(properties={"source": StringAttr("bad.toml"), "machine": DictionaryAttr(bad)})
    for _ in range(2):
        with pytest.raises(MachineConfigError, match="dma_latency"):
            t_bad.get_machine()
    assert machine_to_dict(t.get_machine()) == t.machine
