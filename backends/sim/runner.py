"""Run an ``sw`` / ``swsim`` module on the simulated core group (``taihu-run FILE.mlir``).

``simulate(module, machine=None, inputs=None, trace=False)`` lowers an ``sw`` module with
``sw-to-swsim`` if it has no ``swsim.target`` yet, decodes it and runs it on an
:class:`~taihu.backends.sim.engine.Engine`; returns a :class:`SimResult` (outputs, report
dictionary, engine). Decoding:

* ``sw.global``: a 128-B aligned main-memory buffer filled from its initializer, from
  ``inputs[name]`` (``io input``), or with seeded random numbers (``io input`` without a value),
  else zeros. ``io output`` globals (all globals if none is marked) are returned.
* ``func.func @main`` is the MPE program: ``sw.global_addr``, ``sw.mem_alloc``, ``arith``
  constants/integer ops, ``sw.spawn`` / ``sw.join``.
* ``sw.kernel``: interpreted per CPE (SPMD) by a generator: ``arith`` integer ops, ``scf.for``,
  ``scf.if``, ids, ``swsim.ldm_addr``, ``swsim.reply_slot``, DMA, waits, barriers and
  ``sw.microkernel`` (timed once per body, numerics vectorised, see ``microkernel.py``).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import Operation, SSAValue

from taihu.backends.sim.engine import CPE, MPE, Engine
from taihu.backends.sim.machine import Machine
from taihu.backends.sim.memory import SimError
from taihu.backends.sim.microkernel import MicroKernel
from taihu.backends.sim.pipeline import Instr
from taihu.backends.sim.report import build_report
from taihu.dialects import sw
from taihu.dialects.swsim import LdmAddrOp, ReplySlotOp, TargetOp, kernel_ldm_high_water


class SimDecodeError(SimError):
    """An op the simulator cannot execute (names the op)."""


@dataclass
class SimResult:
    outputs: dict[str, np.ndarray]
    report: dict[str, Any]
    engine: Engine


def _np_dtype(t) -> np.dtype:
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, IntegerType):
        return np.dtype({64: np.int64, 32: np.int32, 16: np.int16, 8: np.int8}[t.width.data])
    raise SimDecodeError(f"unsupported element type {t}")


def decode_microkernel(op: sw.MicrokernelOp) -> MicroKernel:
    """``sw.microkernel`` -> :class:`MicroKernel` (register numbers, pointer offsets)."""
    body = []
    for ins in op.instructions():
        mem = ins.mem()
        rlc = ins.rlc()
        if mem is not None and mem.space == "mem":
            raise SimDecodeError(f"{ins.name}: gld/gstd numerics are not simulated (use DMA, 004 L655)")
        body.append(Instr(
            op=ins.mnemonic,
            dst=ins.writes(),
            src=ins.reads(),
            ptr=None if mem is None else mem.ptr,
            offset=0 if mem is None else mem.offset,
            rlc_dst=None if rlc is None or rlc.role != "put" else rlc.dst,
        ))
    name = op.attributes.get("name")
    label = name.data if name is not None and hasattr(name, "data") else f"microkernel x{op.trip}"
    return MicroKernel(tuple(body), op.pointer_strides(), label)


_INT_BIN = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: lambda a, b: int(a / b),
    arith.DivUIOp: lambda a, b: a // b,
    arith.RemSIOp: lambda a, b: a - b * int(a / b),
    arith.RemUIOp: lambda a, b: a % b,
    arith.FloorDivSIOp: lambda a, b: a // b,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
    arith.XOrIOp: lambda a, b: a ^ b,
    arith.ShLIOp: lambda a, b: a << b,
    arith.ShRSIOp: lambda a, b: a >> b,
}
_CMP = [lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b]


def _eval_pure(op: Operation, env: dict[SSAValue, Any]) -> bool:
    """Evaluate an arith op into ``env``; False if ``op`` is not a supported pure op."""
    t = type(op)
    if t is arith.ConstantOp:
        v = op.value
        env[op.result] = v.value.data if hasattr(v, "value") else v
        return True
    f = _INT_BIN.get(t)
    if f is not None:
        env[op.result] = f(env[op.lhs], env[op.rhs])
        return True
    if t is arith.CmpiOp:
        env[op.result] = bool(_CMP[op.predicate.value.data](env[op.lhs], env[op.rhs]))
        return True
    if t is arith.SelectOp:
        env[op.result] = env[op.lhs] if env[op.cond] else env[op.rhs]
        return True
    if t in (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp):
        env[op.result] = env[op.input]
        return True
    return False


class KernelProgram:
    """A decoded ``sw.kernel``: ``run(cpe, *args)`` is the per-CPE generator."""

    def __init__(self, kernel: sw.KernelOp) -> None:
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.ldm_high_water = kernel_ldm_high_water(kernel)
        self._mk: dict[int, MicroKernel] = {}
        for op in kernel.walk():
            if isinstance(op, sw.MicrokernelOp):
                self._mk[id(op)] = decode_microkernel(op)
            if isinstance(op, sw.LdmAllocOp):
                raise SimDecodeError(f"kernel @{self.name}: sw.ldm_alloc left (run sw-to-swsim)")

    def run(self, cpe: CPE, *args: int) -> Generator:
        env: dict[SSAValue, Any] = dict(zip(self.kernel.body.block.args, args))
        yield from self._block(self.kernel.body.block.ops, cpe, env)

    def _block(self, ops, cpe: CPE, env: dict) -> Generator:
        for op in ops:
            if _eval_pure(op, env):
                continue
            t = type(op)
            if t is sw.MicrokernelOp:
                mk = self._mk[id(op)]
                bases = tuple(env[p] for p in op.pointers)
                yield from cpe.run(mk, op.trip, bases)
            elif t is scf.ForOp:
                lb, ub, st = env[op.lb], env[op.ub], env[op.step]
                body = op.body.block
                iv = body.args[0]
                carried = [env[a] for a in op.iter_args]
                ops_ = list(body.ops)
                for i in range(lb, ub, st):
                    env[iv] = i
                    for a, v in zip(body.args[1:], carried):
                        env[a] = v
                    res = yield from self._block(ops_, cpe, env)
                    carried = res
                for r, v in zip(op.results, carried):
                    env[r] = v
            elif t is scf.IfOp:
                region = op.true_region if env[op.cond] else op.false_region
                res = []
                if region.blocks:
                    res = yield from self._block(list(region.block.ops), cpe, env)
                for r, v in zip(op.results, res or []):
                    env[r] = v
            elif t is scf.YieldOp:
                return [env[a] for a in op.arguments]
            elif t is sw.DmaGetOp or t is sw.DmaPutOp:
                ldm = env[op.ldm]
                owner = op.ldm.owner
                limit = None
                if isinstance(owner, LdmAddrOp):
                    limit = owner.address.value.data + owner.bytes.value.data
                slot = env[op.reply]
                kw = dict(size=op.size.value.data, reply=slot, bsize=sw._int(op.bsize) or 0,
                          stride=sw._int(op.stride) or 0, ldm_limit=limit)
                if t is sw.DmaGetOp:
                    yield from cpe.dma_get(env[op.mem], ldm, mode=str(op.dma_mode.value),
                                           mask=sw._int(op.mask) or 0xFF, **kw)
                else:
                    yield from cpe.dma_put(ldm, env[op.mem], **kw)
            elif t is sw.DmaWaitOp:
                n = op.count.value.data if op.count is not None else env[op.count_val]
                yield from cpe.dma_wait(env[op.reply], n)
            elif t is LdmAddrOp:
                env[op.result] = op.address.value.data
            elif t is ReplySlotOp:
                env[op.result] = op.slot.value.data
            elif t is sw.ReplyResetOp:
                cpe.reply_reset(env[op.reply])
            elif t is sw.CpeIdOp:
                env[op.results[0]] = cpe.id
            elif t is sw.RowIdOp:
                env[op.results[0]] = cpe.row
            elif t is sw.ColIdOp:
                env[op.results[0]] = cpe.col
            elif t is sw.BarrierOp:
                mask = sw._int(op.mask)
                yield from cpe.barrier(str(op.scope.data.value), mask)
            elif t is sw.SynrOp or t is sw.SyncOp:
                yield from cpe.barrier("row" if t is sw.SynrOp else "col", sw._int(op.mask))
            elif t is sw.LdmFreeOp:
                pass
            else:
                raise SimDecodeError(f"kernel @{self.name}: the simulator cannot execute '{op.name}'")
        return []


def _global_value(g: sw.GlobalOp, inputs: Mapping[str, np.ndarray], seed: int) -> np.ndarray | None:
    name = g.sym_name.data
    t = g.type
    shape = tuple(t.get_shape())
    dt = _np_dtype(t.get_element_type())
    if name in inputs:
        v = np.asarray(inputs[name])
        if v.shape != shape:
            raise SimDecodeError(f"input '{name}': shape {v.shape} != {shape}")
        return v.astype(dt)
    init = g.initial_value
    if isinstance(init, DenseIntOrFPElementsAttr):
        vals = np.array(init.get_values(), dtype=dt)
        return np.broadcast_to(vals, shape).copy() if vals.size == 1 else vals.reshape(shape)
    if init is not None:
        raise SimDecodeError(f"sw.global @{name}: dense_resource initializers are not supported")
    if g.io is not None and str(g.io.data.value) == "input":
        rng = np.random.default_rng([seed, sum(map(ord, name))])
        if dt.kind == "f":
            return rng.standard_normal(shape).astype(dt)
        return rng.integers(0, 10, shape).astype(dt)
    return None


def ensure_swsim(module: ModuleOp, machine_path: str | None = None) -> None:
    """Apply ``sw-to-swsim`` (in place) unless the module is already in swsim form (and no
    ``machine_path`` override is requested)."""
    has_target = any(isinstance(o, TargetOp) for o in module.body.block.ops)
    if has_target and machine_path is None:
        return
    from xdsl.context import Context

    from taihu.passes.conversion.sw_to_swsim import SwToSwsimPass

    SwToSwsimPass(machine=machine_path or "").apply(Context(), module)


def simulate(module: ModuleOp, machine_path: str | None = None,
             inputs: Mapping[str, np.ndarray] | None = None, trace: bool = False,
             seed: int = 0, machine: Machine | None = None) -> SimResult:
    """Run an sw/swsim ``module`` (modified in place by ``sw-to-swsim`` if needed)."""
    ensure_swsim(module, machine_path)
    target = next(o for o in module.body.block.ops if isinstance(o, TargetOp))
    m = machine or target.get_machine()
    eng = Engine(m, trace=trace)
    inputs = inputs or {}
    globals_: dict[str, tuple[int, sw.GlobalOp]] = {}
    kernels: dict[str, KernelProgram] = {}
    main = None
    for op in module.body.block.ops:
        if isinstance(op, sw.GlobalOp):
            addr = eng.memory.alloc(op.nbytes, op.sym_name.data)
            v = _global_value(op, inputs, seed)
            if v is not None:
                eng.memory.write(addr, v)
            globals_[op.sym_name.data] = (addr, op)
        elif isinstance(op, sw.KernelOp):
            kernels[op.sym_name.data] = KernelProgram(op)
        elif isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            main = op
    if main is None:
        raise SimDecodeError("no func.func @main (the MPE host program)")

    def host(mpe: MPE) -> Generator:
        env: dict[SSAValue, Any] = {}
        for op in main.body.block.ops:
            if _eval_pure(op, env):
                continue
            if isinstance(op, sw.GlobalAddrOp):
                env[op.results[0]] = globals_[op.global_name.root_reference.data][0]
            elif isinstance(op, sw.MemAllocOp):
                env[op.results[0]] = eng.memory.alloc(op.bytes.value.data)
            elif isinstance(op, sw.SpawnOp):
                kp = kernels[op.kernel.root_reference.data]
                args = tuple(env[a] for a in op.args)
                yield from mpe.spawn(kp.run, args, name=kp.name, ldm_high_water=kp.ldm_high_water)
            elif isinstance(op, sw.JoinOp):
                yield from mpe.join()
            elif isinstance(op, func.ReturnOp):
                break
            else:
                raise SimDecodeError(f"@main: the simulator cannot execute '{op.name}' on the MPE")

    eng.run_host(host)
    outs = [g for g in globals_.values() if g[1].io is not None and str(g[1].io.data.value) == "output"]
    if not outs:
        outs = list(globals_.values())
    outputs = {}
    for addr, g in outs:
        t = g.type
        dt = _np_dtype(t.get_element_type())
        outputs[g.sym_name.data] = eng.memory.read(addr, g.nbytes).view(dt).reshape(tuple(t.get_shape()))
    return SimResult(outputs, build_report(eng), eng)


def is_sw_module(module: ModuleOp) -> bool:
    """True if the module holds sw kernels (i.e. it runs on the simulator directly)."""
    return any(isinstance(o, (sw.KernelOp, TargetOp)) for o in module.body.block.ops)


def run_module(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``taihu-run --level swsim`` hook: sw/swsim modules run directly; graph modules need the
    lowering pipeline (``taihu.passes.pipelines``)."""
    if not is_sw_module(module):
        try:
            from taihu.passes import pipelines  # noqa: F401
        except ImportError:
            raise SimDecodeError("--level swsim: lowering graph -> sw is not available yet; "
                                 "run an sw/swsim module") from None
        lower = getattr(pipelines, "lower_to_sw", None)
        if lower is None:
            raise SimDecodeError("--level swsim: taihu.passes.pipelines has no lower_to_sw")
        lower(module)
    return simulate(module, inputs=inputs).outputs


def summary_table(report: dict[str, Any]):
    """A rich table of the per-kernel report."""
    from rich import box
    from rich.table import Table

    tab = Table(title=f"simulated core group: {report['total_cycles']} cycles = "
                      f"{report['seconds'] * 1e6:.2f} µs, {report['gflops']:.1f} GFLOPS "
                      f"({report['percent_of_peak']:.1f} % of peak)",
                box=box.SIMPLE_HEAVY)
    for c in ("kernel", "cycles", "GFLOPS", "% peak", "DMA B", "waste B", "RLC msgs", "EE",
              "T_DMA", "T_comp", "T_ovl", "LDM B"):
        tab.add_column(c, justify="left" if c == "kernel" else "right")
    for k in report["kernels"]:
        tab.add_row(k["name"], str(k["cycles"]), f"{k['gflops']:.1f}", f"{k['percent_of_peak']:.1f}",
                    str(k["dma_bytes"]), str(k["dma_waste_bytes"]), str(k["rlc_messages"]),
                    f"{k['ee']:.2f}", str(k["t_dma"]), str(k["t_compute"]), str(k["t_overlap"]),
                    str(k["ldm_high_water"]))
    return tab


def run_cli(module: ModuleOp, args, shown: str) -> int:
    """``taihu-run`` for sw/swsim modules: simulate, write --report/--trace/--output, print the
    summary. Errors (deadlock, bounds, bad machine) are one message on stderr, status 1."""
    import sys
    import time

    from rich.console import Console

    from taihu.backends.sim.machine import MachineConfigError
    from taihu.backends.sim.report import write_json_atomically

    inputs = {}
    if getattr(args, "inputs", None):
        with np.load(args.inputs, allow_pickle=False) as data:
            inputs = {k: data[k] for k in data.files}
    try:
        t0 = time.perf_counter()
        res = simulate(module, machine_path=getattr(args, "machine", None), inputs=inputs,
                       trace=bool(getattr(args, "trace", None)), seed=getattr(args, "seed", 0))
        wall = time.perf_counter() - t0
    except (SimError, MachineConfigError) as e:
        msg = str(e).replace("\n", "\n  ")
        print(f"taihu-run: error: {shown}: {msg}", file=sys.stderr)
        return 1
    if getattr(args, "report", None):
        write_json_atomically(args.report, res.report)
    if getattr(args, "trace", None):
        res.engine.trace.write(args.trace)
    if getattr(args, "output", None):
        import tempfile

        folder = os.path.dirname(os.path.abspath(args.output))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".taihu-run-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **res.outputs)
            os.replace(tmp, args.output)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    if not getattr(args, "quiet", False):
        con = Console(file=sys.stdout, width=200 if not sys.stdout.isatty() else None,
                      no_color=not sys.stdout.isatty())
        con.print(summary_table(res.report))
        con.print(f"{shown}: simulated in {wall:.3f} s wall")
    return 0


__all__ = ["simulate", "run_module", "run_cli", "SimResult", "is_sw_module", "ensure_swsim",
           "decode_microkernel", "KernelProgram"]
