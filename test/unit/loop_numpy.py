"""A numpy evaluator of loop-level modules (the output of ``convert-tile-to-loop``), for tests.

It executes ``func.func @main``: memrefs are numpy arrays, every ``loop.spmd`` runs its body once
per CPE (row, col) with that CPE's own LDM (every ``loop.ldm_buffer`` a flat array filled with
NaN, so reading LDM that no DMA/map wrote shows up). ``loop.barrier`` is honoured: the 64 CPEs
run as coroutines that all reach a barrier before any passes it. DMAs complete at
``loop.dma_start`` (the timing is the simulator's business) but the evaluator checks what the
timing would need: every token is waited exactly once before the end of the kernel, a window is
inside its memref, a buffer access (DMA or map) stays inside the buffer, and a map never reads a
buffer with an un-waited DMA into it (``strict_waits``).

``loop.map`` uses :func:`taihu.test.unit.tile_numpy.map_numpy` on the local buffers.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from taihu.dialects import loop
from taihu.dialects.resources import element_dtype

MESH = 8


class _Buf:
    """A single-slot view: flat array ``arr[off:off+n]`` reshaped to ``shape``."""

    def __init__(self, arr: np.ndarray, off: int, shape: tuple[int, ...], owner: str):
        self.arr, self.off, self.shape, self.owner = arr, off, shape, owner
        n = math.prod(shape)
        assert 0 <= off and off + n <= arr.size, f"LDM view [{off}, {off + n}) outside buffer {owner} ({arr.size})"

    @property
    def n(self) -> int:
        return math.prod(self.shape)

    def get(self) -> np.ndarray:
        return self.arr[self.off : self.off + self.n].reshape(self.shape)

    def set(self, v: np.ndarray) -> None:
        self.arr[self.off : self.off + self.n] = np.asarray(v).reshape(-1)


def run_loop_module(module: ModuleOp, inputs: Mapping[str, np.ndarray], strict_waits: bool = True) -> dict[str, np.ndarray]:
    """Run ``@main`` of a loop-level module; returns outputs keyed by result ``graph.name``.

    Host ops: ``memref.alloc``/``get_global``/collapse/expand views, ``loop.spmd``, return."""
    from taihu.test.unit.tile_numpy import run_host_main

    def kernel(op: Operation, env: dict) -> bool:
        if not isinstance(op, loop.SpmdOp):
            return False
        run_spmd(op, [env[v] for v in op.args], strict_waits)  # type: ignore[misc]
        return True

    return run_host_main(module, inputs, kernel)


def run_spmd(op: loop.SpmdOp, mems: list[np.ndarray], strict_waits: bool = True) -> None:
    """Run one ``loop.spmd`` on the 64 CPEs (coroutines synchronised at ``loop.barrier``)."""
    cpes = []
    for r in range(MESH):
        for c in range(MESH):
            env: dict[SSAValue, object] = {op.row: r, op.col: c}
            for a, m in zip(op.memref_args, mems):
                env[a] = m
            st = _CpeState(r, c, strict_waits)
            cpes.append((st, _run_block(op.body.block, env, st)))
    live = list(cpes)
    while live:
        nxt = []
        for st, g in live:
            try:
                next(g)
                nxt.append((st, g))
            except StopIteration:
                pass
        assert len(nxt) in (0, len(live)), "some CPEs finished while others wait at a barrier"
        live = nxt
    for st, _ in cpes:
        assert not st.inflight, f"CPE ({st.row}, {st.col}): {len(st.inflight)} DMA(s) never waited"


class _CpeState:
    def __init__(self, row: int, col: int, strict: bool):
        self.row, self.col, self.strict = row, col, strict
        self.inflight: dict[SSAValue, _Buf] = {}  # token -> LDM view written/read by the DMA
        self.waited: set[int] = set()

    def check_ready(self, b: _Buf, what: str, writes: bool = True) -> None:
        """``what`` reads (``writes=False``) or writes LDM ``b``: it must not overlap an in-flight
        DMA that writes LDM (a get), nor, when it writes, any in-flight DMA (concurrent reads of
        the same LDM, e.g. several puts from one zero buffer, are fine)."""
        if not self.strict or b.owner.startswith("dma_scratch"):  # dummy-DMA targets are never read
            return
        for v in self.inflight.values():
            if v.arr is b.arr and v.off < b.off + b.n and b.off < v.off + v.n and (writes or v.is_get):
                raise AssertionError(f"CPE ({self.row}, {self.col}): {what} touches LDM of {b.owner} with a DMA in flight")


def _run_block(block: Block, env: dict, st: _CpeState) -> Generator[None, None, list]:
    for op in block.ops:
        if isinstance(op, scf.YieldOp):
            return [env[v] for v in op.operands]
        yield from _run_op(op, env, st)
    return []


def _ldm(env: dict, v: SSAValue) -> _Buf:
    b = env[v]
    assert isinstance(b, _Buf), f"%{v.name_hint} is not a single-slot LDM buffer"
    return b


def _run_op(op: Operation, env: dict, st: _CpeState) -> Generator[None, None, None]:
    if isinstance(op, arith.ConstantOp):
        env[op.result] = op.value.value.data  # type: ignore[union-attr]
    elif isinstance(op, arith.AddiOp):
        env[op.result] = env[op.lhs] + env[op.rhs]
    elif isinstance(op, arith.SubiOp):
        env[op.result] = env[op.lhs] - env[op.rhs]
    elif isinstance(op, arith.MuliOp):
        env[op.result] = env[op.lhs] * env[op.rhs]
    elif isinstance(op, (arith.DivUIOp, arith.RemUIOp)):
        a, b = env[op.lhs], env[op.rhs]
        assert a >= 0 and b > 0, f"{op.name} on {a}, {b}"
        env[op.result] = a // b if isinstance(op, arith.DivUIOp) else a % b
    elif isinstance(op, (arith.MinSIOp, arith.MaxSIOp)):
        f = min if isinstance(op, arith.MinSIOp) else max
        env[op.result] = f(env[op.lhs], env[op.rhs])
    elif isinstance(op, (arith.AndIOp, arith.OrIOp)):
        a, b = env[op.lhs], env[op.rhs]
        env[op.result] = (a & b) if isinstance(op, arith.AndIOp) else (a | b)
    elif isinstance(op, arith.CmpiOp):
        a, b = env[op.lhs], env[op.rhs]
        env[op.result] = {"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b, "sgt": a > b, "sge": a >= b,
                          "ult": a < b, "ule": a <= b, "ugt": a > b, "uge": a >= b}[
            arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        ]
    elif isinstance(op, loop.LdmBufferOp):
        t = op.buffer_type
        env[op.result] = (np.full(t.n_elems * t.slots.data, np.nan, dtype=element_dtype(t.element_type)), t, op.buffer_name.data)
    elif isinstance(op, loop.SlotOp):
        arr, t, nm = env[op.buffer]  # type: ignore[misc]
        k = env[op.index] % 2
        env[op.result] = _Buf(arr, k * t.n_elems, t.get_shape(), f"{nm}[{k}]")
    elif isinstance(op, loop.ViewOp):
        src = env[op.buffer]
        if isinstance(src, tuple):
            arr, t, nm = src
            src = _Buf(arr, 0, t.get_shape(), nm)
        assert isinstance(src, _Buf)
        off = env[op.offset]
        rt = op.result.type
        assert isinstance(rt, loop.LdmBufType)
        assert off + rt.n_elems <= src.n, f"loop.view [{off}, {off + rt.n_elems}) outside {src.owner} ({src.n})"
        env[op.result] = _Buf(src.arr, src.off + off, rt.get_shape(), src.owner)
    elif isinstance(op, loop.DmaStartOp):
        _dma(op, env, st)
    elif isinstance(op, loop.DmaWaitOp):
        for t in op.tokens:
            key = env[t]
            assert key in st.inflight, f"CPE ({st.row}, {st.col}): wait on a token that is not in flight"
            del st.inflight[key]
    elif isinstance(op, loop.BarrierOp):
        yield
    elif isinstance(op, loop.MapOp):
        from taihu.test.unit.tile_numpy import map_numpy

        ins = [_buf_of(env, v) for v in op.inputs]
        out = _buf_of(env, op.out)
        for b in ins:
            st.check_ready(b, "loop.map", writes=False)
        st.check_ready(out, "loop.map")
        res = map_numpy(op.kind.data, [b.get() for b in ins], out.shape, out.arr.dtype, op.params())
        out.set(res)
    elif isinstance(op, scf.ForOp):
        lb, ub, step = env[op.lb], env[op.ub], env[op.step]
        vals = [env[v] for v in op.iter_args]
        blk = op.body.block
        i = lb
        while i < ub:
            env[blk.args[0]] = i
            for a, v in zip(blk.args[1:], vals):
                env[a] = v
            vals = yield from _run_block(blk, env, st)
            i += step
        for r, v in zip(op.results, vals):
            env[r] = v
    elif isinstance(op, scf.IfOp):
        region = op.true_region if env[op.cond] else op.false_region
        vals = []
        if region.blocks:
            vals = yield from _run_block(region.block, env, st)
        for r, v in zip(op.results, vals):
            env[r] = v
    else:
        raise AssertionError(f"loop_numpy: unsupported op {op.name}")


def _buf_of(env: dict, v: SSAValue) -> _Buf:
    b = env[v]
    if isinstance(b, tuple):
        arr, t, nm = b
        assert not t.is_double, f"double buffer {nm} used without a slot"
        return _Buf(arr, 0, t.get_shape(), nm)
    assert isinstance(b, _Buf)
    return b


def _dma(op: loop.DmaStartOp, env: dict, st: _CpeState) -> None:
    mem = env[op.memref]
    assert isinstance(mem, np.ndarray)
    buf = _buf_of(env, op.buffer)
    offs = [env[v] for v in op.offsets]
    sizes, strides = op.size_values, op.stride_values
    idx = []
    for d, (o, n, s) in enumerate(zip(offs, sizes, strides)):
        ix = o + s * np.arange(n)
        assert ix.min() >= 0 and ix.max() < mem.shape[d], (
            f"CPE ({st.row}, {st.col}): DMA window dim {d} [{ix.min()}, {ix.max()}] outside [0, {mem.shape[d]})"
        )
        idx.append(ix)
    n = math.prod(sizes)
    assert n <= buf.n
    st.check_ready(_Buf(buf.arr, buf.off, (n,), buf.owner), "loop.dma_start", writes=op.is_get)
    sel = np.ix_(*idx)
    if op.is_get:
        buf.arr[buf.off : buf.off + n] = mem[sel].reshape(-1)
    else:
        mem[sel] = buf.arr[buf.off : buf.off + n].reshape(tuple(sizes))
    key = object()
    env[op.token] = key
    flight = _Buf(buf.arr, buf.off, (n,), buf.owner)
    flight.is_get = op.is_get  # type: ignore[attr-defined]
    st.inflight[key] = flight  # type: ignore[index]
