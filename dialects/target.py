"""The ``target`` dialect: the machine a module is compiled for, as an attribute of the module.

As MLIR carries its target in the IR (``#nvvm.target<chip = "sm_90">``, DLTI specs), a taihu module
carries the core group it is planned for from the first pass on::

    builtin.module attributes {target.machine = #target.machine<"sw26010">} { ... }
    builtin.module attributes {target.machine = #target.machine<"sw26010" {ldm_user_bytes = 40000 : i64} source "small.toml">} { ... }

``#target.machine<"BASE" {overrides} source "NAME">`` is a shipped description (``BASE``, a file
stem of ``target/configs/``: ``sw26010``, ``sw26010pro``) with some parameters replaced
(``overrides``: machine keys of :class:`~taihu.target.machine.Machine`, ``instructions`` as a
dictionary of ``{pipes = "P0", latency = 7 : i64[, repeat = N : i64]}`` entries per mnemonic),
read from the file ``NAME`` (default: ``BASE``). The ``set-target`` pass writes it
(:func:`machine_attr` finds the base with the fewest differences for a user's file); it is also
meant to be written by hand to explore a machine (``{ldm_user_bytes = 131072 : i64}``).

Every verifier and planner asks :func:`machine_of` for the machine of an op: the nearest enclosing
op carrying ``target.machine``, else an op with the :class:`BindsMachine` trait at the top of the
module (``swsim.target``), else the shipped ``sw26010`` (the documented default target, as an
MLIR module without a DLTI spec has the default data layout). A description that does not validate
is a ``VerifyException`` at the attribute naming the key.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import os
from collections.abc import Mapping
from typing import Any

from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

from taihu.target.machine import (
    DEFAULT_MACHINE_NAME,
    InstrTiming,
    Machine,
    MachineConfigError,
    machine_from_mapping,
    resolve_machine,
    shipped_machines,
)

__all__ = [
    "MODULE_ATTR",
    "BindsMachine",
    "MachineAttr",
    "Target",
    "machine_attr",
    "machine_from_dict",
    "machine_of",
    "machine_to_dict",
]

#: name of the module attribute holding the :class:`MachineAttr`
MODULE_ATTR = "target.machine"

_PIPE_NAMES = {(0,): "P0", (1,): "P1", (0, 1): "P0/P1"}


# --------------------------------------------------------------------------------------------
# Machine <-> attributes
# --------------------------------------------------------------------------------------------


def _scalar_attr(v: Any) -> Attribute:
    if isinstance(v, bool):
        return IntegerAttr(int(v), IntegerType(1))
    if isinstance(v, int):
        return IntegerAttr(v, i64)
    if isinstance(v, float):
        return FloatAttr(v, f64)
    return StringAttr(str(v))


def _instr_attr(t: InstrTiming) -> DictionaryAttr:
    return DictionaryAttr(
        {"pipes": StringAttr(_PIPE_NAMES[t.pipes]), "latency": IntegerAttr(t.latency, i64)}
        | ({"repeat": IntegerAttr(t.repeat, i64)} if t.repeat != 1 else {})
    )


def _machine_entries(m: Machine) -> dict[str, Attribute]:
    """Every scalar parameter of ``m`` as an attribute (no ``instructions``, no ``source``)."""
    return {
        f.name: _scalar_attr(getattr(m, f.name))
        for f in dataclasses.fields(m)
        if f.name not in ("instructions", "source")
    }


def machine_to_dict(m: Machine) -> DictionaryAttr:
    """Every parameter of ``m`` as a ``DictionaryAttr`` (the ``swsim.target`` payload)."""
    table = {k: _instr_attr(t) for k, t in sorted(m.instructions.items())}
    return DictionaryAttr(_machine_entries(m) | {"instructions": DictionaryAttr(table)})


def _py(attr: Attribute, key: str) -> Any:
    if isinstance(attr, IntegerAttr):
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DictionaryAttr):
        return {k: _py(v, f"{key}.{k}") for k, v in attr.data.items()}
    raise MachineConfigError(f"key {key!r}: unsupported machine parameter value {attr}")


def machine_from_dict(d: DictionaryAttr | Mapping[str, Any], source: str = "swsim.target") -> Machine:
    """Rebuild and validate a :class:`Machine` from every parameter (``swsim.target`` payload);
    raises ``MachineConfigError`` naming the key."""
    data = {k: _py(v, k) for k, v in d.data.items()} if isinstance(d, DictionaryAttr) else dict(d)
    return machine_from_mapping(data, source)


def _raw_table(m: Machine) -> dict[str, dict[str, Any]]:
    """``m``'s instruction table in the TOML form (latency parameters by name, so that a changed
    ``lat_fp`` re-resolves every row that refers to it)."""
    return {k: {"pipes": _PIPE_NAMES[t.pipes], "latency": t.latency_param or t.latency}
            | ({"repeat": t.repeat} if t.repeat != 1 else {})
            for k, t in m.instructions.items()}


def _with_overrides(base: Machine, overrides: Mapping[str, Any], source: str) -> Machine:
    """``base`` with the parameters ``overrides`` (Python values; ``instructions`` a table of
    TOML-form rows) replaced, validated like a loaded file."""
    data: dict[str, Any] = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)
                            if f.name not in ("source", "instructions")}
    table = _raw_table(base)
    for k, v in overrides.items():
        if k == "instructions":
            if not isinstance(v, dict):
                raise MachineConfigError(f"{source}: key 'instructions': expected a dictionary")
            table.update(v)
        else:
            data[k] = v
    return machine_from_mapping(data | {"instructions": table}, source)


@functools.lru_cache(maxsize=64)
def _resolve(base: str, overrides: DictionaryAttr, source: str) -> Machine:
    shipped = shipped_machines()
    if base not in shipped:
        raise MachineConfigError(f"unknown base machine {base!r} (shipped: {', '.join(shipped)})")
    m = resolve_machine(base)
    if not overrides.data and source == base:
        return m
    return _with_overrides(m, {k: _py(v, k) for k, v in overrides.data.items()}, source)


def _differences(m: Machine, base: Machine) -> dict[str, Attribute] | None:
    """The overrides turning ``base`` into ``m`` (None if impossible: ``m`` lacks a mnemonic)."""
    if set(base.instructions) - set(m.instructions):
        return None
    theirs = _machine_entries(base)
    diff: dict[str, Attribute] = {k: v for k, v in _machine_entries(m).items() if theirs[k] != v}
    # rows that follow a changed latency parameter are not differences of their own
    rebased = _with_overrides(base, {k: getattr(m, k) for k in diff}, m.source)
    rows = {k: _instr_attr(t) for k, t in sorted(m.instructions.items())
            if rebased.instructions.get(k) != t}
    if rows:
        diff["instructions"] = DictionaryAttr(rows)
    return diff


def machine_attr(m: Machine, name: str | None = None) -> MachineAttr:
    """The attribute describing ``m``: the shipped description with the fewest differing keys
    as base plus the differences. ``name``: the ``source`` shown in reports (default: ``m``'s
    file name without directory). Raises ``MachineConfigError`` if no shipped description can
    serve as base (``m`` lacks an instruction every one of them has)."""
    source = name or os.path.basename(m.source)
    stem = os.path.splitext(source)[0]
    best: tuple[tuple[int, bool], str, dict[str, Attribute]] | None = None
    for base_name in shipped_machines():
        diff = _differences(m, resolve_machine(base_name))
        if diff is None:
            continue
        rows = diff.get("instructions")
        size = len(diff) + (len(rows.data) if isinstance(rows, DictionaryAttr) else 0)
        rank = (size, base_name != stem)
        if best is None or rank < best[0]:
            best = (rank, base_name, diff)
    if best is None:
        raise MachineConfigError(f"{source}: the instruction table lacks mnemonics every shipped machine has")
    _, base_name, diff = best
    plain = not diff and stem == base_name
    return MachineAttr(base_name, DictionaryAttr(diff), base_name if plain else source)


# --------------------------------------------------------------------------------------------
# The attribute
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class MachineAttr(ParametrizedAttribute):
    """``#target.machine<"BASE" [{overrides}] [source "NAME"]>``: a core-group description (module
    docstring). :meth:`machine` validates and returns it (memoised per attribute)."""

    name = "target.machine"

    base: StringAttr
    overrides: DictionaryAttr
    source: StringAttr

    def __init__(self, base: str | StringAttr, overrides: DictionaryAttr | None = None,
                 source: str | StringAttr | None = None) -> None:
        base = StringAttr(base) if isinstance(base, str) else base
        source = base if source is None else (StringAttr(source) if isinstance(source, str) else source)
        super().__init__(base, overrides or DictionaryAttr({}), source)

    def machine(self) -> Machine:
        """The described :class:`Machine`; raises ``MachineConfigError`` naming the key."""
        return _resolve(self.base.data, self.overrides, self.source.data)

    def verify(self) -> None:
        try:
            self.machine()
        except MachineConfigError as e:
            raise VerifyException(f"#target.machine: invalid machine description: {e}") from None

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.base.data)
            if self.overrides.data:
                printer.print_string(" ")
                printer.print_attribute(self.overrides)
            if self.source != self.base:
                printer.print_string(" source ")
                printer.print_string_literal(self.source.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            base = StringAttr(parser.parse_str_literal("machine name"))
            overrides = DictionaryAttr({})
            if parser.parse_optional_punctuation("{") is not None:
                entries: dict[str, Attribute] = {}
                if parser.parse_optional_punctuation("}") is None:
                    while True:
                        key = parser.parse_optional_str_literal() or parser.parse_identifier("machine key")
                        parser.parse_punctuation("=")
                        entries[key] = parser.parse_attribute()
                        if parser.parse_optional_punctuation(",") is None:
                            break
                    parser.parse_punctuation("}")
                overrides = DictionaryAttr(entries)
            source = base
            if parser.parse_optional_keyword("source") is not None:
                source = StringAttr(parser.parse_str_literal("machine file name"))
        return [base, overrides, source]


class BindsMachine(OpTrait, abc.ABC):
    """Trait of an op that binds the machine of its module (``swsim.target``)."""

    @abc.abstractmethod
    def machine(self, op: Operation) -> Machine:
        """The machine ``op`` binds; raises ``MachineConfigError``."""


def machine_of(op: Operation) -> Machine:
    """The machine ``op`` is compiled for: the ``target.machine`` of the nearest enclosing op
    that has one, else a :class:`BindsMachine` op at the top of the outermost module
    (``swsim.target``), else the shipped ``sw26010``. Raises ``MachineConfigError`` for an
    invalid description."""
    cur: Operation | None = op
    top = op
    while cur is not None:
        attr = cur.attributes.get(MODULE_ATTR)
        if isinstance(attr, MachineAttr):
            return attr.machine()
        top = cur
        cur = cur.parent_op()
    if top.regions and top.regions[0].blocks:
        for o in top.regions[0].block.ops:
            binding = o.get_trait(BindsMachine)
            if binding is not None:
                return binding.machine(o)
    return resolve_machine(DEFAULT_MACHINE_NAME)


Target = Dialect("target", [], [MachineAttr])
