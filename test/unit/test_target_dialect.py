"""The machine in the IR: #target.machine, machine_of, set-target (dialects/target.py, passes/set_target.py)."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from taihu.dialects.target import MODULE_ATTR, MachineAttr, machine_attr, machine_of
from taihu.passes.set_target import LOWERING_REQUIRES, SetTargetPass, check_lowerable
from taihu.target.machine import MachineConfigError, resolve_machine, shipped_machines


@pytest.mark.parametrize("name", sorted(shipped_machines()))
def test_shipped_machines_are_their_own_base(name: str) -> None:
    m = resolve_machine(name)
    attr = machine_attr(m)
    assert attr == MachineAttr(name)
    assert attr.machine() is m


def test_a_file_is_the_closest_shipped_machine_plus_its_differences() -> None:
    base = resolve_machine("sw26010")
    m = dataclasses.replace(base.replace(ldm_user_bytes=40000, lat_fp=9), source="/somewhere/small.toml")
    attr = machine_attr(m)
    assert attr.base.data == "sw26010" and attr.source.data == "small.toml"
    # lat_fp moves every row that names it: those rows are not differences of their own
    assert set(attr.overrides.data) == {"ldm_user_bytes", "lat_fp"}
    rebuilt = attr.machine()
    assert rebuilt == m and rebuilt.instruction("vmad").latency == 9


def test_instruction_rows_that_differ_are_kept() -> None:
    base = resolve_machine("sw26010")
    table = dict(base.instructions)
    table["vdivd"] = dataclasses.replace(table["vdivd"], latency=20, repeat=20)
    m = dataclasses.replace(base.replace(instructions=table), source="div.toml")
    attr = machine_attr(m)
    assert set(attr.overrides.data) == {"instructions"}
    assert attr.machine().instruction("vdivd").repeat == 20


def test_machine_of_nearest_target_else_default() -> None:
    inner = ModuleOp([])
    outer = ModuleOp([inner])
    assert machine_of(inner) is resolve_machine("sw26010")
    outer.attributes[MODULE_ATTR] = MachineAttr("sw26010pro")
    assert machine_of(inner) is resolve_machine("sw26010pro")
    small = MachineAttr("sw26010", DictionaryAttr({"ldm_user_bytes": IntegerAttr(40000, i64)}), "small.toml")
    inner.attributes[MODULE_ATTR] = small
    assert machine_of(inner).ldm_user_bytes == 40000


def test_invalid_attribute_is_rejected_naming_the_key() -> None:
    with pytest.raises(VerifyException, match="key 'ldm_user_bytes'"):
        MachineAttr("sw26010", DictionaryAttr({"ldm_user_bytes": IntegerAttr(-5, i64)}))
    with pytest.raises(VerifyException, match="unknown base machine 'nope'"):
        MachineAttr("nope")


def test_set_target_sets_keeps_and_rejects() -> None:
    module = ModuleOp([])
    SetTargetPass().apply(Context(), module)
    assert module.attributes[MODULE_ATTR] == MachineAttr("sw26010")
    SetTargetPass(machine="sw26010pro").apply(Context(), module)
    SetTargetPass().apply(Context(), module)  # no option: keeps the module's target
    assert module.attributes[MODULE_ATTR] == MachineAttr("sw26010pro")
    with pytest.raises(DiagnosticException, match="unknown machine 'sw9'"):
        SetTargetPass(machine="sw9").apply(Context(), module)


@pytest.mark.parametrize("key", sorted(LOWERING_REQUIRES))
def test_lowering_requirements_name_the_key(key: str) -> None:
    base = resolve_machine("sw26010")
    bad = {"mesh_rows": {"mesh_rows": 4, "cpes_per_bus": 8}, "mesh_cols": {"mesh_cols": 4, "cpes_per_bus": 8},
           "reg_bits": {"reg_bits": 512, "vec_lanes_fp64": 8, "vec_lanes_fp32": 8},
           "vec_lanes_fp32": {"vec_lanes_fp32": 8}, "zero_reg": {"zero_reg": 0}}[key]
    m = base.replace(**bad)  # a valid machine ...
    with pytest.raises(MachineConfigError, match=f"key '{key}'"):  # ... that taihu cannot lower for
        check_lowerable(m)


def test_shipped_machines_are_lowerable() -> None:
    for name in shipped_machines():
        check_lowerable(resolve_machine(name))
