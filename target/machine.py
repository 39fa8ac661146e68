"""Machine description of one SW26010 core group, loaded from a TOML file.

The single source of truth for every hardware number used by the simulator (``backends/sim``),
the analytic model and the verifiers of the ``sw`` dialect. The default file is
``target/configs/sw26010.toml``; each key there cites its seed line (``004 Lnnn`` =
``seeds/004_9451f19c807291d7.txt``) or is marked ``param`` (not fixed by the seeds, spec
``sw26010-model.md`` §11).

Units: cycles of the CPE clock (``f_clk_ghz`` = 1.45 GHz), bytes, GB/s = 1e9 B/s,
GFLOPS = 1e9 flop/s.

Public API::

    m = default_machine()                  # cached, the shipped sw26010.toml
    m = load_machine("my.toml")            # raises MachineConfigError naming the key
    m.instruction("vmad")                  # InstrTiming(pipes=(0,), latency=7)
    m.dma_bus_bw, m.peak_cg_gflops         # 7.735 GB/s, 742.4 GFLOPS

This module has no IR imports (it is used by dialect verifiers and by the simulator alike).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import tomllib
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_MACHINE_NAME",
    "DEFAULT_MACHINE_PATH",
    "InstrTiming",
    "Machine",
    "MachineConfigError",
    "default_machine",
    "load_machine",
    "machine_from_mapping",
    "resolve_machine",
    "shipped_machines",
]

CONFIGS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
DEFAULT_MACHINE_NAME = "sw26010"
DEFAULT_MACHINE_PATH = os.path.join(CONFIGS_DIR, DEFAULT_MACHINE_NAME + ".toml")


class MachineConfigError(ValueError):
    """A machine description is missing a key, has an unknown key or an invalid value.

    The message names the file and the offending key, e.g.
    ``sw26010.toml: key 'dma_latency': expected an integer >= 0, got -1``.
    """


@dataclass(frozen=True)
class InstrTiming:
    """Dispatch pipes and latency of one mnemonic (004 Table 3.2, L520-541).

    ``pipes``: the pipes the instruction may enter, as pipe numbers: ``(0,)`` = P0,
    ``(1,)`` = P1, ``(0, 1)`` = P0/P1. ``latency``: cycles from issue until a consumer of the
    result may issue (spec §6.1).
    """

    pipes: tuple[int, ...]
    latency: int
    #: name of the latency parameter the table row refers to (``"lat_fp"``), if any: a
    #: ``Machine.replace(lat_fp=...)`` re-resolves it
    latency_param: str | None = field(default=None, compare=False)
    #: issue interval, cycles: 1 = fully pipelined; ``repeat > 1`` = the instruction occupies the
    #: CPE's one non-pipelined fp divide/sqrt unit for ``repeat`` cycles (every such instruction
    #: waits for it; other instructions are unaffected). Optional table field, default 1.
    repeat: int = 1

    @property
    def pipe_name(self) -> str:
        """``"P0"``, ``"P1"`` or ``"P0/P1"`` (the table's notation)."""
        return "/".join(f"P{p}" for p in self.pipes)


# (type, constraint) of every scalar key; the constraint is a predicate + description.
_INT_GE0 = (int, lambda v: v >= 0, "an integer >= 0")
_INT_GT0 = (int, lambda v: v > 0, "an integer > 0")
_FLOAT_GT0 = (float, lambda v: v > 0, "a number > 0")
_FLOAT_GE0 = (float, lambda v: v >= 0, "a number >= 0")
_BOOL = (bool, lambda v: True, "a boolean")


def _one_of(*choices: str):
    return (str, lambda v: v in choices, "one of " + ", ".join(repr(c) for c in choices))


@dataclass(frozen=True)
class Machine:
    """Parameters of one SW26010 core group (spec sw26010-model.md §3, §6.2).

    Every field mirrors a key of ``sw26010.toml`` (see that file for the seed line of each).
    Cycle counts are CPE clock cycles; bandwidths GB/s; sizes bytes.
    """

    # structure
    f_clk_ghz: float  # 004 L453, L460
    n_cg: int  # 004 L451
    mesh_rows: int  # 004 L460
    mesh_cols: int  # 004 L460
    ldm_bytes: int  # 004 L460 (hard limit)
    ldm_user_bytes: int  # param (public SW26010 code budgets ~56 KiB)
    n_regs: int  # 004 L821
    reg_bits: int  # 004 L460
    zero_reg: int  # 004 L821
    vec_lanes_fp64: int  # 004 L471
    vec_lanes_fp32: int  # 004 L765
    vector_ldm_align: int  # param (spec §11)
    # DMA
    mem_txn_bytes: int  # 004 L481
    dma_latency: int  # 004 L597
    peak_bw_cg: float  # 004 L597
    theory_bw_cg: float  # 004 L471, L563
    n_dma_bus: int  # 004 L462, L573
    cpes_per_bus: int  # 004 L462, L548
    chan_buf_depth: int  # 004 L485
    dma_cpe_inflight: int  # param
    dma_latency_overlap: bool  # param
    dma_arbitration: str  # param
    dma_cycle_rounding: str  # param
    bcast_cost: int  # param
    dma_reply_latency: int  # param
    dma_put_bw_factor: float  # param
    # gld/gstd
    gld_bytes_max: int  # 004 L483
    gld_latency: int  # 004 L483
    gld_gstd_latency: int  # 004 L483
    gld_bw_cg: float  # 004 L483
    # RLC
    rlc_latency: int  # 004 L496
    rlc_msg_bits: int  # 004 L496
    rlc_bw_p2p_cg: float  # 004 L496
    rlc_bw_bcast_cg: float  # 004 L496
    rlc_send_depth: int  # param
    rlc_recv_depth: int  # param
    rlc_contention: bool  # param
    # pipelines
    ldm_reg_bw: float  # 004 L624
    lat_ldm_load: int  # 004 L534, L819
    lat_fp: int  # 004 L530-532
    lat_int_mul: int  # 004 L527
    lat_simple: int  # 004 L524-541
    dual_tie: str  # param (004 L512 ambiguous)
    sync_rowcol: int  # 004 L540
    sync_array: int  # param
    branch_penalty: int  # param
    # host and chip
    mpe_model: str  # param
    spawn_cycles: int  # param
    peak_chip_cpe_gflops: float  # 004 L1634
    peak_chip_sp_tflops: float  # 004 L563
    # Table 3.2: mnemonic (lower case) -> timing
    instructions: Mapping[str, InstrTiming] = field(hash=False)
    source: str = field(default="<built-in>", compare=False, hash=False)

    # ---- derived values ------------------------------------------------------------------
    @property
    def n_cpes(self) -> int:
        """CPEs per core group (64)."""
        return self.mesh_rows * self.mesh_cols

    @property
    def dma_bus_bw(self) -> float:
        """Bandwidth of one DMA bus, GB/s: ``peak_bw_cg / n_dma_bus`` = 7.735 [derived, spec §3,
        implied by "4 CPEs at a time" 004 L573 and T_local_DMA = T_DMA/16 L607]."""
        return self.peak_bw_cg / self.n_dma_bus

    @property
    def reg_bytes(self) -> int:
        """Bytes per register (32)."""
        return self.reg_bits // 8

    @property
    def flops_per_cycle_cpe(self) -> int:
        """Peak flop per cycle per CPE: one 4-lane FMA per cycle = 8 (004 L777 ``1.45GHz×8``)."""
        return 2 * self.vec_lanes_fp64

    @property
    def peak_cpe_gflops(self) -> float:
        """Peak of one CPE, GFLOPS: 1.45 × 8 = 11.6 [derived, spec §3]."""
        return self.f_clk_ghz * self.flops_per_cycle_cpe

    @property
    def peak_cg_gflops(self) -> float:
        """Peak of the 64-CPE mesh of one CG, GFLOPS: 742.4 [derived; 722.95 GF = 97.3 %, 004 L895]."""
        return self.peak_cpe_gflops * self.n_cpes

    @property
    def cycle_ns(self) -> float:
        """Duration of one cycle, ns."""
        return 1.0 / self.f_clk_ghz

    def cycles_to_seconds(self, cycles: float) -> float:
        """Convert CPE cycles to seconds."""
        return cycles / (self.f_clk_ghz * 1e9)

    def dma_bus_of(self, cpe_id: int) -> int:
        """DMA bus used by CPE ``cpe_id``: ``cid // 2`` (2 adjacent columns per bus, 004 L548)."""
        return (cpe_id % self.mesh_cols) * self.n_dma_bus // self.mesh_cols

    def dma_data_cycles(self, moved_bytes: int, put: bool = False) -> int:
        """Data-phase cycles of one DMA moving ``moved_bytes`` on one bus:
        ``ceil(moved · f_clk / dma_bus_bw)`` (× ``dma_put_bw_factor`` for puts) [param, spec §4.3].
        ``dma_data_cycles(1024)`` = 192 (spec §13 #1)."""
        factor = self.dma_put_bw_factor if put else 1.0
        exact = moved_bytes * self.f_clk_ghz / self.dma_bus_bw * factor
        # guard against binary round-off producing ceil(192.0000000001) = 193
        return math.ceil(round(exact, 9))

    def instruction(self, mnemonic: str) -> InstrTiming:
        """Timing of ``mnemonic`` (case-insensitive). Raises ``KeyError`` naming it if absent."""
        try:
            return self.instructions[mnemonic.lower()]
        except KeyError:
            raise KeyError(
                f"mnemonic {mnemonic!r} is not in the machine's instruction table ({self.source})"
            ) from None

    def replace(self, **changes: Any) -> Machine:
        """A copy with some parameters changed (validated like a loaded file)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data.update(changes)
        return _validated(data, source=f"{self.source} (modified)")


_SCALAR_KEYS: dict[str, tuple[type, Any, str]] = {
    "f_clk_ghz": _FLOAT_GT0,
    "n_cg": _INT_GT0,
    "mesh_rows": _INT_GT0,
    "mesh_cols": _INT_GT0,
    "ldm_bytes": _INT_GT0,
    "ldm_user_bytes": _INT_GT0,
    "n_regs": _INT_GT0,
    "reg_bits": _INT_GT0,
    "zero_reg": _INT_GE0,
    "vec_lanes_fp64": _INT_GT0,
    "vec_lanes_fp32": _INT_GT0,
    "vector_ldm_align": _INT_GT0,
    "mem_txn_bytes": _INT_GT0,
    "dma_latency": _INT_GE0,
    "peak_bw_cg": _FLOAT_GT0,
    "theory_bw_cg": _FLOAT_GT0,
    "n_dma_bus": _INT_GT0,
    "cpes_per_bus": _INT_GT0,
    "chan_buf_depth": _INT_GE0,
    "dma_cpe_inflight": _INT_GT0,
    "dma_latency_overlap": _BOOL,
    "dma_arbitration": _one_of("round-robin"),
    "dma_cycle_rounding": _one_of("ceil"),
    "bcast_cost": _INT_GE0,
    "dma_reply_latency": _INT_GE0,
    "dma_put_bw_factor": _FLOAT_GT0,
    "gld_bytes_max": _INT_GT0,
    "gld_latency": _INT_GE0,
    "gld_gstd_latency": _INT_GE0,
    "gld_bw_cg": _FLOAT_GT0,
    "rlc_latency": _INT_GE0,
    "rlc_msg_bits": _INT_GT0,
    "rlc_bw_p2p_cg": _FLOAT_GT0,
    "rlc_bw_bcast_cg": _FLOAT_GT0,
    "rlc_send_depth": _INT_GT0,
    "rlc_recv_depth": _INT_GT0,
    "rlc_contention": _BOOL,
    "ldm_reg_bw": _FLOAT_GT0,
    "lat_ldm_load": _INT_GT0,
    "lat_fp": _INT_GT0,
    "lat_int_mul": _INT_GT0,
    "lat_simple": _INT_GT0,
    "dual_tie": _one_of("leader-p1", "leader-p0"),
    "sync_rowcol": _INT_GE0,
    "sync_array": _INT_GE0,
    "branch_penalty": _INT_GE0,
    "mpe_model": _one_of("none"),
    "spawn_cycles": _INT_GE0,
    "peak_chip_cpe_gflops": _FLOAT_GT0,
    "peak_chip_sp_tflops": _FLOAT_GT0,
}

_PIPES = {"P0": (0,), "P1": (1,), "P0/P1": (0, 1), "P1/P0": (0, 1)}


def _check_scalar(key: str, value: Any, where: str) -> Any:
    typ, pred, what = _SCALAR_KEYS[key]
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if typ is int and isinstance(value, bool) or not isinstance(value, typ):
        raise MachineConfigError(f"{where}: key {key!r}: expected {what}, got {value!r}")
    if not pred(value):
        raise MachineConfigError(f"{where}: key {key!r}: expected {what}, got {value!r}")
    return value


def _parse_instructions(raw: Any, scalars: Mapping[str, Any], where: str) -> dict[str, InstrTiming]:
    if isinstance(raw, Mapping) and all(isinstance(v, InstrTiming) for v in raw.values()):
        return {
            k: InstrTiming(v.pipes, scalars[v.latency_param], v.latency_param, v.repeat)
            if v.latency_param
            else v
            for k, v in raw.items()
        }
    if not isinstance(raw, Mapping):
        raise MachineConfigError(f"{where}: key 'instructions': expected a table")
    table: dict[str, InstrTiming] = {}
    for name, entry in raw.items():
        key = f"instructions.{name}"
        if not isinstance(entry, Mapping):
            raise MachineConfigError(f"{where}: key {key!r}: expected {{ pipes = ..., latency = ... }}")
        unknown = set(entry) - {"pipes", "latency", "repeat"}
        if unknown:
            raise MachineConfigError(f"{where}: key {key!r}: unknown field(s) {sorted(unknown)}")
        if "pipes" not in entry or "latency" not in entry:
            raise MachineConfigError(f"{where}: key {key!r}: needs both 'pipes' and 'latency'")
        pipes = _PIPES.get(entry["pipes"]) if isinstance(entry["pipes"], str) else None
        if pipes is None:
            raise MachineConfigError(
                f"{where}: key {key}.pipes: expected 'P0', 'P1' or 'P0/P1', got {entry['pipes']!r}"
            )
        lat = entry["latency"]
        param = lat if isinstance(lat, str) else None
        if isinstance(lat, str):
            if lat not in scalars or not isinstance(scalars[lat], int) or isinstance(scalars[lat], bool):
                raise MachineConfigError(
                    f"{where}: key {key}.latency: {lat!r} is not an integer latency parameter"
                )
            lat = scalars[lat]
        if isinstance(lat, bool) or not isinstance(lat, int) or lat < 0:
            raise MachineConfigError(
                f"{where}: key {key}.latency: expected cycles >= 0 or a parameter name, got {lat!r}"
            )
        rep = entry.get("repeat", 1)
        if isinstance(rep, bool) or not isinstance(rep, int) or rep < 1:
            raise MachineConfigError(f"{where}: key {key}.repeat: expected cycles >= 1, got {rep!r}")
        table[name.lower()] = InstrTiming(pipes, lat, param, rep)
    return table


def machine_from_mapping(data: Mapping[str, Any], source: str) -> Machine:
    """Validate ``data`` (the keys of a machine TOML file, ``instructions`` as a table or as
    :class:`InstrTiming` values) into a :class:`Machine`; ``source`` names it in diagnostics.
    Raises :class:`MachineConfigError` naming the key."""
    return _validated(data, source)


def _validated(data: Mapping[str, Any], source: str) -> Machine:
    where = os.path.basename(source) if os.sep in source else source
    data = dict(data)
    data.pop("source", None)
    unknown = sorted(set(data) - set(_SCALAR_KEYS) - {"instructions"})
    if unknown:
        raise MachineConfigError(f"{where}: unknown key {unknown[0]!r}")
    missing = [k for k in list(_SCALAR_KEYS) + ["instructions"] if k not in data]
    if missing:
        raise MachineConfigError(f"{where}: missing key {missing[0]!r}")
    scalars = {k: _check_scalar(k, data[k], where) for k in _SCALAR_KEYS}
    # cross-key consistency
    if scalars["ldm_user_bytes"] > scalars["ldm_bytes"]:
        raise MachineConfigError(
            f"{where}: key 'ldm_user_bytes': {scalars['ldm_user_bytes']} exceeds ldm_bytes "
            f"= {scalars['ldm_bytes']}"
        )
    if scalars["zero_reg"] >= scalars["n_regs"]:
        raise MachineConfigError(f"{where}: key 'zero_reg': must be < n_regs = {scalars['n_regs']}")
    if scalars["reg_bits"] % 64:
        raise MachineConfigError(f"{where}: key 'reg_bits': must be a multiple of 64")
    if scalars["mesh_cols"] % scalars["n_dma_bus"]:
        raise MachineConfigError(
            f"{where}: key 'n_dma_bus': must divide mesh_cols = {scalars['mesh_cols']}"
        )
    if scalars["cpes_per_bus"] * scalars["n_dma_bus"] != scalars["mesh_rows"] * scalars["mesh_cols"]:
        raise MachineConfigError(f"{where}: key 'cpes_per_bus': cpes_per_bus * n_dma_bus != CPE count")
    if scalars["gld_gstd_latency"] < scalars["gld_latency"]:
        raise MachineConfigError(f"{where}: key 'gld_gstd_latency': must be >= gld_latency")
    instructions = _parse_instructions(data["instructions"], scalars, where)
    return Machine(
        **scalars,
        instructions=types.MappingProxyType(instructions),
        source=source,
    )


def load_machine(path: str | os.PathLike[str] | None = None) -> Machine:
    """Load and validate a machine description (TOML, format of ``sw26010.toml``).

    ``path=None`` loads the shipped ``target/configs/sw26010.toml``.
    Raises ``MachineConfigError`` (a ``ValueError``) naming the file and the key for unknown,
    missing, mistyped or inconsistent keys, and for unreadable or malformed files.
    """
    path = DEFAULT_MACHINE_PATH if path is None else os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise MachineConfigError(f"{path}: cannot read machine description: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise MachineConfigError(f"{os.path.basename(path)}: invalid TOML: {e}") from None
    return _validated(data, source=path)


def shipped_machines() -> dict[str, str]:
    """The shipped descriptions: name (file stem, e.g. ``"sw26010"``, ``"sw26010pro"``) -> path
    of its TOML file in ``target/configs/``."""
    return {
        os.path.splitext(f)[0]: os.path.join(CONFIGS_DIR, f)
        for f in sorted(os.listdir(CONFIGS_DIR))
        if f.endswith(".toml")
    }


@functools.lru_cache(maxsize=16)
def _load_shipped(name: str) -> Machine:
    return load_machine(shipped_machines()[name])


def resolve_machine(spec: str | os.PathLike[str]) -> Machine:
    """The machine named by ``spec``: a shipped name (``sw26010``, ``sw26010pro``; loaded once)
    or the path of a TOML file. Raises :class:`MachineConfigError` for an unknown name, an
    unreadable file or an invalid description (naming the file and key)."""
    text = os.fspath(spec)
    shipped = shipped_machines()
    if text in shipped:
        return _load_shipped(text)
    if not os.path.exists(text) and os.sep not in text and not text.endswith(".toml"):
        raise MachineConfigError(
            f"unknown machine {text!r}: not a file and not a shipped name "
            f"({', '.join(shipped)})"
        )
    return load_machine(text)


@functools.lru_cache(maxsize=1)
def default_machine() -> Machine:
    """The shipped SW26010 core group (``target/configs/sw26010.toml``), loaded once."""
    return load_machine(None)
