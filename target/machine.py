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

Validation (every path: :func:`load_machine`, :func:`resolve_machine`,
:func:`machine_from_mapping`, :meth:`Machine.replace`, the ``swsim.target`` / ``target.machine``
attributes): every key is required, unknown keys are rejected, and each value must lie in the
documented range of its key in ``_SCALAR_KEYS`` below (one comment per group gives the reason).
Integers are TOML integers (not booleans, not floats), numbers are finite (no ``nan``/``inf``),
booleans are ``true``/``false``, strings are one of the listed choices. In short:

* cycle counts (latencies, sync/branch costs, DMA start-up and reply): integers in [0, 10000]
  (result latencies ``lat_*`` [1, 10000]), ``gld_gstd_latency`` >= ``gld_latency``;
  ``spawn_cycles`` [0, 1000000]; ``bcast_cost`` [0, 10000] requests;
* sizes: ``ldm_bytes`` a multiple of 8 in [1024, 16 MiB], ``ldm_user_bytes`` in
  [1, ldm_bytes], ``n_cpes * ldm_bytes`` <= 1 GiB; mesh sides in [1, 64]; ``n_regs`` in
  [32, 256], ``zero_reg`` < ``n_regs``; ``reg_bits`` and ``rlc_msg_bits`` multiples of 64 in
  [64, 4096]; ``vec_lanes_fp64`` = ``reg_bits / 64``, ``vec_lanes_fp32`` <= ``reg_bits / 32``;
  ``vector_ldm_align`` a power of two in [8, 4096] B, ``mem_txn_bytes`` a power of two in
  [1, 4096] B;
* counts: ``n_cg`` and ``n_dma_bus`` in [1, 64], ``cpes_per_bus`` in [1, 4096] with
  ``n_dma_bus`` dividing ``mesh_cols`` and ``cpes_per_bus * n_dma_bus = n_cpes``;
  ``zero_reg`` in [0, 255]; ``gld_bytes_max`` in [1, 4096] B; queue depths (channel buffer,
  in-flight requests, RLC buffers) in [1, 1024];
* rates: ``f_clk_ghz`` in [0.01, 10] GHz, bandwidths in [0.001, 10000] GB/s,
  ``dma_put_bw_factor`` in [0.01, 100]; chip peaks (reported only) ``peak_chip_cpe_gflops`` in
  [0.001, 1e6] GFLOPS, ``peak_chip_sp_tflops`` in [0.001, 1000] TFLOPS;
* ``instructions``: every mnemonic of the shipped table (:data:`REQUIRED_MNEMONICS`, the
  instructions the ``sw`` dialect emits and the simulator times) must be present; extra
  mnemonics are allowed. Each row: ``pipes`` "P0" | "P1" | "P0/P1", ``latency`` an integer in
  [0, 10000] or the name of a cycle parameter (``"lat_fp"``), ``repeat`` in [1, 10000]
  (default 1); mnemonics are case-insensitive (two spellings of one mnemonic are an error).

Files: an unreadable, empty, binary (NUL bytes, not UTF-8), oversized (> 1 MiB) or malformed
TOML file is a :class:`MachineConfigError` as well (a leading UTF-8 BOM is accepted). Every error is one line naming the file and,
where there is one, the key: ``small.toml: key 'dma_latency': expected an integer in
[0, 10000] cycles, got 1000000000000``.

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
    "REQUIRED_MNEMONICS",
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
    """A machine description is missing a key, has an unknown key or an invalid value, or its
    file cannot be read as TOML.

    The message is one line naming the file and (where there is one) the offending key, e.g.
    ``sw26010.toml: key 'dma_latency': expected an integer in [0, 10000] cycles, got -1``.
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


@dataclass(frozen=True)
class Machine:
    """Parameters of one SW26010 core group (spec sw26010-model.md §3, §6.2).

    Every field mirrors a key of ``sw26010.toml`` (see that file for the seed line of each).
    Cycle counts are CPE clock cycles; bandwidths GB/s; sizes bytes.

    Instances come from :func:`load_machine`, :func:`machine_from_mapping` or
    :meth:`replace`, which all validate every value against its documented range
    (``_SCALAR_KEYS``; rule summary in the module docstring): integers bounded so that no timing
    computation overflows or steps through more than 10000 cycles per latency, finite positive
    rates, consistent register/lane/mesh/bus counts, a complete instruction table. Building a
    ``Machine(...)`` or ``dataclasses.replace(m, ...)`` directly skips that validation.
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
        """A copy with some parameters changed, validated like a loaded file (raises
        :class:`MachineConfigError` naming the key; ``instructions`` may be given as a table of
        :class:`InstrTiming` values or of TOML rows)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data.update(changes)
        return _validated(data, source=f"{self.source} (modified)")


# --------------------------------------------------------------------------------------------
# Value ranges
# --------------------------------------------------------------------------------------------


def _show(value: Any) -> str:
    """``value`` as a diagnostic shows it: TOML spelling of booleans, no giant integers."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (list, tuple)):
        return "an array"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class _Range:
    """Type and range of one scalar key. ``kind``: "int", "float", "bool" or "choice";
    ``lo``/``hi``: inclusive bounds (int/float); ``multiple_of``/``pow2``: extra int rules;
    ``unit``: shown after the range; ``choices``: the allowed strings."""

    kind: str
    lo: float = 0
    hi: float = 0
    unit: str = ""
    multiple_of: int = 1
    pow2: bool = False
    choices: tuple[str, ...] = ()

    @property
    def description(self) -> str:
        """``"an integer in [0, 10000] cycles"`` and the like (the diagnostics' wording)."""
        if self.kind == "bool":
            return "a boolean (true or false)"
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "float":
            what = "a finite number"
            bounds = f"[{self.lo:g}, {self.hi:g}]"
        else:
            what = ("a power of two" if self.pow2 else
                    f"a multiple of {self.multiple_of}" if self.multiple_of > 1 else "an integer")
            bounds = f"[{int(self.lo)}, {int(self.hi)}]"
        return f"{what} in {bounds}" + (f" {self.unit}" if self.unit else "")

    def check(self, value: Any) -> Any:
        """``value`` (an int becomes a float for a "float" key) if it satisfies the range, else
        ``ValueError`` with :attr:`description`."""
        ok = False
        if self.kind == "bool":
            ok = isinstance(value, bool)
        elif self.kind == "choice":
            ok = isinstance(value, str) and value in self.choices
        elif isinstance(value, bool):
            ok = False
        elif self.kind == "int":
            ok = (isinstance(value, int) and self.lo <= value <= self.hi
                  and value % self.multiple_of == 0
                  and (not self.pow2 or value & (value - 1) == 0))
        elif isinstance(value, (int, float)):
            # compared before float(): float(10**400) would overflow; nan fails every comparison
            ok = self.lo <= value <= self.hi
            value = float(value) if ok else value
        if not ok:
            raise ValueError(self.description)
        return value


def _int(lo: int, hi: int, unit: str = "", *, multiple_of: int = 1, pow2: bool = False) -> _Range:
    return _Range("int", lo, hi, unit, multiple_of=multiple_of, pow2=pow2)


def _num(lo: float, hi: float, unit: str = "") -> _Range:
    return _Range("float", lo, hi, unit)


def _one_of(*choices: str) -> _Range:
    return _Range("choice", choices=choices)


_BOOL = _Range("bool")

#: the cycle bound of latencies and costs the instruction scheduler steps through one cycle at a
#: time (``backends/sim/pipeline.simulate_issue``): 10000 cycles = 6.9 us at 1.45 GHz, 36x the
#: largest seed value (gld_gstd_latency = 278); a 64-instruction dependent chain at this latency
#: schedules in ~1.4 s of Python (1e12 would take hours).
MAX_CYCLES = 10_000
_CYCLES = _int(0, MAX_CYCLES, "cycles")
_LATENCY = _int(1, MAX_CYCLES, "cycles")
#: bandwidths: positive and finite, and >= 0.001 GB/s so that even at the extremes (a 16 MiB
#: DMA on one of 64 buses at 10 GHz, put factor 100) one data phase is ~1e15 cycles: the cycle
#: counts of any run that fits in memory stay inside int64 (numpy cycle arrays), where 1e-300
#: GB/s overflowed; the upper bound is 300x the SW26010 DMA peak and above every aggregate
#: on-chip bandwidth of the seeds (RLC broadcast 4461 GB/s).
_GBPS = _num(0.001, 10_000.0, "GB/s")
#: queue depths: a depth of 0 could never accept a request / message (every run deadlocks)
_DEPTH = _int(1, 1024)
_MIB = 1 << 20

_SCALAR_KEYS: dict[str, _Range] = {
    # ---- structure: what one core group can be. Clock 10 MHz .. 10 GHz (every cycle <-> second
    # conversion divides by it). Mesh sides 1..64 (sync masks are one bit per row / column, i64).
    # LDM <= 16 MiB per CPE and a multiple of 8 (the simulator views each LDM as float64 words);
    # >= 1 KiB (no CPE scratchpad is smaller). n_regs >= 32: the lowering names r0..r31 directly
    # (loop_to_sw/gemm.py: accumulators r0..r15, operands r16..r23, address registers r24..r29;
    # loop_to_sw/maps.py: r0..r30 allocatable, r31 the zero register), so a smaller file fails
    # every lowered kernel; <= 256 (an 8-bit register field). Registers of 64..4096 bits in whole
    # fp64 words; lanes are checked against reg_bits below. vector_ldm_align >= 8: the simulator
    # reads LDM words at address // 8, so fp64 accesses must be 8-B aligned at least.
    "f_clk_ghz": _num(0.01, 10.0, "GHz"),
    "n_cg": _int(1, 64),
    "mesh_rows": _int(1, 64),
    "mesh_cols": _int(1, 64),
    "ldm_bytes": _int(1024, 16 * _MIB, "bytes", multiple_of=8),
    "ldm_user_bytes": _int(1, 16 * _MIB, "bytes"),
    "n_regs": _int(32, 256),
    "reg_bits": _int(64, 4096, "bits", multiple_of=64),
    "zero_reg": _int(0, 255),
    "vec_lanes_fp64": _int(1, 64),
    "vec_lanes_fp32": _int(1, 128),
    "vector_ldm_align": _int(8, 4096, "bytes", pow2=True),
    # ---- DMA: cycle costs bounded by MAX_CYCLES; transaction sizes are powers of two up to a
    # 4 KiB page; bus counts are checked against the mesh below; bcast_cost (requests per
    # broadcast) is bounded like a cycle cost.
    "mem_txn_bytes": _int(1, 4096, "bytes", pow2=True),
    "dma_latency": _CYCLES,
    "peak_bw_cg": _GBPS,
    "theory_bw_cg": _GBPS,
    "n_dma_bus": _int(1, 64),
    "cpes_per_bus": _int(1, 4096),
    "chan_buf_depth": _DEPTH,
    "dma_cpe_inflight": _DEPTH,
    "dma_latency_overlap": _BOOL,
    "dma_arbitration": _one_of("round-robin"),
    "dma_cycle_rounding": _one_of("ceil"),
    "bcast_cost": _int(0, MAX_CYCLES, "requests"),
    "dma_reply_latency": _CYCLES,
    # a data-phase time multiplier: 1/100 .. 100 keeps it a factor, not a unit change
    "dma_put_bw_factor": _num(0.01, 100.0),
    # ---- gld/gstd: one access moves at most a 4 KiB page; latencies bounded by MAX_CYCLES.
    "gld_bytes_max": _int(1, 4096, "bytes"),
    "gld_latency": _CYCLES,
    "gld_gstd_latency": _CYCLES,
    "gld_bw_cg": _GBPS,
    # ---- RLC: a message is whole fp64 words of a register (64..4096 bits); depths >= 1.
    "rlc_latency": _CYCLES,
    "rlc_msg_bits": _int(64, 4096, "bits", multiple_of=64),
    "rlc_bw_p2p_cg": _GBPS,
    "rlc_bw_bcast_cg": _GBPS,
    "rlc_send_depth": _DEPTH,
    "rlc_recv_depth": _DEPTH,
    "rlc_contention": _BOOL,
    # ---- pipelines: result latencies >= 1 (a result is never usable in its issue cycle) and
    # <= MAX_CYCLES (the scheduler steps through them); sync/branch costs likewise.
    "ldm_reg_bw": _GBPS,
    "lat_ldm_load": _LATENCY,
    "lat_fp": _LATENCY,
    "lat_int_mul": _LATENCY,
    "lat_simple": _LATENCY,
    "dual_tie": _one_of("leader-p1", "leader-p0"),
    "sync_rowcol": _CYCLES,
    "sync_array": _CYCLES,
    "branch_penalty": _CYCLES,
    # ---- host and chip: spawn_cycles is added once per launch as an event (no cycle stepping),
    # so it may be up to 1e6 cycles (~0.7 ms, above any athread_spawn cost); chip peaks are
    # reported only: positive, at most 1 PFLOPS per chip.
    "mpe_model": _one_of("none"),
    "spawn_cycles": _int(0, 1_000_000, "cycles"),
    "peak_chip_cpe_gflops": _num(0.001, 1e6, "GFLOPS"),
    "peak_chip_sp_tflops": _num(0.001, 1000.0, "TFLOPS"),
}

#: scalar keys an instruction row may name as its latency (``latency = "lat_fp"``): the cycle
#: counts of at most MAX_CYCLES
_LATENCY_PARAMS = frozenset(k for k, r in _SCALAR_KEYS.items()
                            if r.unit == "cycles" and r.hi <= MAX_CYCLES)

#: Table 3.2 row fields: latency in cycles (or a parameter name), repeat = issue interval
_ROW_LATENCY = _int(0, MAX_CYCLES, "cycles")
_ROW_REPEAT = _int(1, MAX_CYCLES, "cycles")

#: Every mnemonic of the shipped ``sw26010.toml`` instruction table; a machine file must list
#: all of them (extra mnemonics are allowed). The ``sw`` dialect's register, memory, RLC, sync
#: and DMA ops, the micro-kernels of the lowering and the simulator's scheduler look timings up
#: by these names, so a missing one would be a ``KeyError`` in the middle of a run; requiring
#: the whole shipped table (not only the subset today's lowering emits) keeps the rule simple
#: and a file written for this version valid for the next lowering. ``test_machine_validation``
#: checks this tuple against the shipped table and the dialect's mnemonics.
REQUIRED_MNEMONICS: tuple[str, ...] = (
    "addw", "subw", "addl", "subl", "s4addl", "s4subl", "s8addl", "s8subl",
    "cmpeq", "cmplt", "cmple", "cmpult", "cmpule",
    "vaddw", "vsubw", "vaddl", "vsubl",
    "mulw", "umulw", "mull", "umulh",
    "sll", "srl", "sra",
    "fadds", "faddd", "fsubs", "fsubd", "vadds", "vaddd", "vsubs", "vsubd",
    "fmuls", "fmuld", "vmuls", "vmuld",
    "fmas", "fmad", "vmas", "vmad",
    "vfcmpeq", "vfcmple", "vfcmplt", "vfseleq", "vfsellt",
    "vdivs", "vdivd", "vsqrts", "vsqrtd",
    "ldw", "ldl", "stw", "stl",
    "vlds", "vldd", "ldde", "vsts", "vstd", "ldse", "fstd", "fsts", "ldfi",
    "vinsw", "vextw", "vinsf", "vextf", "vshff", "vshfw",
    "getr", "getc", "putr", "putc",
    "vldr", "vldc", "ldder", "lddec",
    "synr", "sync",
    "halt", "memb", "bgt", "beq", "bne", "nop",
    "gld", "gstd",
    "dma_get", "dma_put",
)

#: the simulator holds the LDMs of all CPEs in one array: n_cpes * ldm_bytes <= 1 GiB
MAX_TOTAL_LDM_BYTES = 1 << 30
#: machine files are a few KiB; a larger file is not a machine description
MAX_FILE_BYTES = _MIB

_PIPES = {"P0": (0,), "P1": (1,), "P0/P1": (0, 1), "P1/P0": (0, 1)}


def _check_scalar(key: str, value: Any, where: str) -> Any:
    try:
        return _SCALAR_KEYS[key].check(value)
    except ValueError as e:
        raise MachineConfigError(f"{where}: key {key!r}: expected {e}, got {_show(value)}") from None


def _row_latency(key: str, lat: Any, scalars: Mapping[str, Any], where: str) -> int:
    """The latency of a table row: an integer in [0, MAX_CYCLES] or a cycle parameter's value."""
    if isinstance(lat, str) and lat in _LATENCY_PARAMS:
        return scalars[lat]
    try:
        return _ROW_LATENCY.check(lat)
    except ValueError as e:
        raise MachineConfigError(
            f"{where}: key '{key}.latency': expected {e} or the name of a cycle parameter "
            f"(e.g. 'lat_fp'), got {_show(lat)}"
        ) from None


def _parse_instructions(raw: Any, scalars: Mapping[str, Any], where: str) -> dict[str, InstrTiming]:
    """Validate the Table 3.2 rows: TOML tables ``{pipes, latency[, repeat]}`` or
    :class:`InstrTiming` values (a row naming a latency parameter re-resolves it in
    ``scalars``); every mnemonic of :data:`REQUIRED_MNEMONICS` must be present."""
    if not isinstance(raw, Mapping):
        raise MachineConfigError(
            f"{where}: key 'instructions': expected a table of mnemonics, got {_show(raw)}")
    table: dict[str, InstrTiming] = {}
    spelled: dict[str, str] = {}
    for name, entry in raw.items():
        if not isinstance(name, str) or not name:
            raise MachineConfigError(
                f"{where}: key 'instructions': expected mnemonic names, got {_show(name)}")
        key = f"instructions.{name}"
        if isinstance(entry, InstrTiming):
            pipes, lat, param, rep = entry.pipes, entry.latency, entry.latency_param, entry.repeat
            if pipes not in _PIPES.values():
                raise MachineConfigError(
                    f"{where}: key '{key}.pipes': expected (0,), (1,) or (0, 1), got {_show(pipes)}")
            lat = _row_latency(key, param if param else lat, scalars, where)
        elif isinstance(entry, Mapping):
            unknown = sorted(map(str, set(entry) - {"pipes", "latency", "repeat"}))
            if unknown:
                raise MachineConfigError(f"{where}: key {key!r}: unknown field(s) {unknown}")
            if "pipes" not in entry or "latency" not in entry:
                raise MachineConfigError(f"{where}: key {key!r}: needs both 'pipes' and 'latency'")
            named = _PIPES.get(entry["pipes"]) if isinstance(entry["pipes"], str) else None
            if named is None:
                raise MachineConfigError(
                    f"{where}: key '{key}.pipes': expected 'P0', 'P1' or 'P0/P1', "
                    f"got {_show(entry['pipes'])}"
                )
            pipes = named
            lat = entry["latency"]
            param = lat if isinstance(lat, str) else None
            lat = _row_latency(key, lat, scalars, where)
            rep = entry.get("repeat", 1)
        else:
            raise MachineConfigError(
                f"{where}: key {key!r}: expected {{ pipes = ..., latency = ... }}, got {_show(entry)}")
        try:
            rep = _ROW_REPEAT.check(rep)
        except ValueError as e:
            raise MachineConfigError(f"{where}: key '{key}.repeat': expected {e}, got {_show(rep)}") from None
        low = name.lower()
        if low in spelled:
            raise MachineConfigError(
                f"{where}: key {key!r}: mnemonic {low!r} is already given as "
                f"'instructions.{spelled[low]}' (mnemonics are case-insensitive)"
            )
        spelled[low] = name
        table[low] = InstrTiming(pipes, lat, param, rep)
    for mnemonic in REQUIRED_MNEMONICS:
        if mnemonic not in table:
            raise MachineConfigError(
                f"{where}: key 'instructions.{mnemonic}': missing (every mnemonic of the shipped "
                f"sw26010.toml table is required)"
            )
    return table


def _check_consistency(s: Mapping[str, Any], where: str) -> None:
    """Rules between keys (each names the key it blames)."""

    def fail(key: str, msg: str) -> None:
        raise MachineConfigError(f"{where}: key {key!r}: {msg}")

    if s["ldm_user_bytes"] > s["ldm_bytes"]:
        fail("ldm_user_bytes", f"{s['ldm_user_bytes']} exceeds ldm_bytes = {s['ldm_bytes']}")
    n_cpes = s["mesh_rows"] * s["mesh_cols"]
    if n_cpes * s["ldm_bytes"] > MAX_TOTAL_LDM_BYTES:
        fail("ldm_bytes", f"{n_cpes} CPEs x {s['ldm_bytes']} B = {n_cpes * s['ldm_bytes']} B of LDM "
                          f"exceeds 1 GiB (the simulator holds every LDM in memory)")
    if s["zero_reg"] >= s["n_regs"]:
        fail("zero_reg", f"expected a register < n_regs = {s['n_regs']}, got {s['zero_reg']}")
    if s["vec_lanes_fp64"] != s["reg_bits"] // 64:
        fail("vec_lanes_fp64", f"expected reg_bits / 64 = {s['reg_bits'] // 64} (fp64 lanes of a "
                               f"{s['reg_bits']}-bit register), got {s['vec_lanes_fp64']}")
    if s["vec_lanes_fp32"] > s["reg_bits"] // 32:
        fail("vec_lanes_fp32", f"expected at most reg_bits / 32 = {s['reg_bits'] // 32} (fp32 "
                               f"lanes of a {s['reg_bits']}-bit register), got {s['vec_lanes_fp32']}")
    if s["mesh_cols"] % s["n_dma_bus"]:
        fail("n_dma_bus", f"must divide mesh_cols = {s['mesh_cols']}, got {s['n_dma_bus']}")
    if s["cpes_per_bus"] * s["n_dma_bus"] != n_cpes:
        fail("cpes_per_bus", f"cpes_per_bus * n_dma_bus != CPE count: expected {n_cpes} / "
                             f"{s['n_dma_bus']} = {n_cpes // s['n_dma_bus']}, got {s['cpes_per_bus']}")
    if s["gld_gstd_latency"] < s["gld_latency"]:
        fail("gld_gstd_latency", f"must be >= gld_latency = {s['gld_latency']}, "
                                 f"got {s['gld_gstd_latency']}")


def machine_from_mapping(data: Mapping[str, Any], source: str) -> Machine:
    """Validate ``data`` (the keys of a machine TOML file, ``instructions`` as a table or as
    :class:`InstrTiming` values) into a :class:`Machine`; ``source`` names it in diagnostics.
    Raises :class:`MachineConfigError` naming the key (ranges: module docstring)."""
    return _validated(data, source)


def _validated(data: Any, source: str) -> Machine:
    where = os.path.basename(source) if os.sep in source else source
    if not isinstance(data, Mapping):
        raise MachineConfigError(f"{where}: expected a table of machine parameters, got {_show(data)}")
    data = dict(data)
    data.pop("source", None)
    unknown = sorted((k for k in data if k not in _SCALAR_KEYS and k != "instructions"), key=str)
    if unknown:
        raise MachineConfigError(f"{where}: unknown key {_show(unknown[0])}")
    missing = [k for k in list(_SCALAR_KEYS) + ["instructions"] if k not in data]
    if missing:
        raise MachineConfigError(f"{where}: missing key {missing[0]!r}")
    scalars = {k: _check_scalar(k, data[k], where) for k in _SCALAR_KEYS}
    _check_consistency(scalars, where)
    instructions = _parse_instructions(data["instructions"], scalars, where)
    return Machine(
        **scalars,
        instructions=types.MappingProxyType(instructions),
        source=source,
    )


def _read_toml(path: str) -> dict[str, Any]:
    """The TOML table of the file ``path``; every failure is a :class:`MachineConfigError`
    (the path as given for an unreadable file, else the file name)."""
    name = os.path.basename(path) or path
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise MachineConfigError(
            f"{path}: cannot read machine description: {e.strerror or e}") from None
    except ValueError as e:  # a path with a NUL character
        raise MachineConfigError(f"{path!r}: cannot read machine description: {e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise MachineConfigError(f"{name}: not a machine description (larger than 1 MiB)")
    nul = raw.find(b"\0")
    if nul >= 0:
        raise MachineConfigError(
            f"{name}: not a machine description: binary file (NUL byte at offset {nul})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise MachineConfigError(
            f"{name}: not a machine description: not UTF-8 text (byte 0x{raw[e.start]:02x} at "
            f"offset {e.start})"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MachineConfigError(f"{name}: invalid TOML: {e}") from None
    except ValueError:  # an integer literal of more than 4300 digits (int() refuses it)
        raise MachineConfigError(f"{name}: invalid TOML: an integer literal is too long") from None
    except RecursionError:
        raise MachineConfigError(f"{name}: invalid TOML: arrays or tables nested too deeply") from None
    if not data:
        raise MachineConfigError(f"{name}: empty machine description (no keys)")
    return data


def load_machine(path: str | os.PathLike[str] | None = None) -> Machine:
    """Load and validate a machine description (TOML, format of ``sw26010.toml``).

    ``path=None`` loads the shipped ``target/configs/sw26010.toml``.
    Raises ``MachineConfigError`` (a ``ValueError``) naming the file and the key for unknown,
    missing, mistyped, out-of-range or inconsistent keys (ranges: module docstring), and for
    unreadable, empty, binary, oversized or malformed files.
    """
    path = DEFAULT_MACHINE_PATH if path is None else os.fspath(path)
    return _validated(_read_toml(path), source=path)


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
