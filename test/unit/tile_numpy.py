"""A numpy evaluator of tile-level modules (the output of ``convert-graph-to-tile``), for tests.

It executes ``func.func @main`` on the host view only: ``memref.alloc`` / ``memref.global`` /
views are numpy arrays (views share memory like the memrefs do), a ``tile.kernel`` runs its body
with every ``!tile.buf`` held as ONE logical array (the distribution over the CPEs does not
change the numbers, only which CPE computes them), ``tile.for`` is a Python loop, ``tile.move``
copies the (strided) window with ``pad`` / ``clip`` at the boundary, ``tile.gemm`` is ``C += op(A) op(B)``,
``tile.im2col`` / ``tile.winograd_*`` use tile-to-loop's whole-op numpy references, ``tile.map`` evaluates the
map kind with numpy (semantics of :mod:`taihu.dialects.mapkind`, matching
``taihu.backends.reference.kernels``). It checks window/tile shapes as it goes and raises
``AssertionError`` on any mismatch, so it also catches lowering bugs the verifiers cannot see.

Not a simulator: no timing, no LDM. Inputs/outputs are keyed by the ``graph.name`` attributes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from taihu.dialects import graph, tile
from taihu.dialects.mapkind import LOOP_ONLY_KINDS, MapKind
from taihu.dialects.resources import element_dtype


def _globals(module: ModuleOp) -> dict[str, np.ndarray]:
    out = {}
    for op in module.body.block.ops:
        if isinstance(op, memref.GlobalOp):
            t = op.type
            dt = element_dtype(t.get_element_type())
            shape = tuple(t.get_shape())
            init = op.initial_value if isinstance(op.initial_value, DenseIntOrFPElementsAttr) else op.attributes.get("taihu.initial_value")
            assert isinstance(init, (DenseIntOrFPElementsAttr, DenseResourceAttr)), f"global {op.sym_name.data} has no value"
            out[op.sym_name.data] = np.array(graph.constant_value(init), dtype=dt).reshape(shape)
    return out


def run_host_main(module: ModuleOp, inputs: Mapping[str, np.ndarray], run_kernel: Callable[[Operation, dict], bool]) -> dict[str, np.ndarray]:
    """Run the host side of ``@main`` (the same at tile and loop level): arguments from ``inputs``
    (keyed by ``graph.name``), ``memref.alloc`` (NaN-filled), ``memref.get_global``, collapse/expand
    views (sharing memory), ``func.return``. Every other op goes to ``run_kernel(op, env)``, which
    returns False for an op it does not know. Returns the outputs keyed by result ``graph.name``."""
    fn = next(o for o in module.body.block.ops if isinstance(o, func.FuncOp) and o.sym_name.data == "main")
    env: dict[SSAValue, object] = {}
    for i, a in enumerate(fn.body.block.args):
        attrs = fn.arg_attrs.data[i].data if fn.arg_attrs else {}
        n = attrs.get("graph.name")
        name = n.data if isinstance(n, StringAttr) else f"arg{i}"
        t = a.type
        assert isinstance(t, MemRefType)
        arr = np.array(inputs[name], dtype=element_dtype(t.get_element_type())).reshape(tuple(t.get_shape()))
        env[a] = np.ascontiguousarray(arr)
    glb = _globals(module)
    outs = None
    for op in fn.body.block.ops:
        if isinstance(op, memref.AllocOp):
            t = op.memref.type
            env[op.memref] = np.full(tuple(t.get_shape()), np.nan, dtype=element_dtype(t.get_element_type()))
        elif isinstance(op, memref.GetGlobalOp):
            env[op.memref] = glb[op.name_.root_reference.data]
        elif isinstance(op, (memref.CollapseShapeOp, memref.ExpandShapeOp)):
            src = env[op.operands[0]]
            assert isinstance(src, np.ndarray)
            v = src.reshape(tuple(op.result.type.get_shape()))
            assert np.shares_memory(v, src) or v.size == 0
            env[op.result] = v
        elif isinstance(op, memref.ReinterpretCastOp):  # a contiguous sub-range (static offset)
            src = env[op.source]
            assert isinstance(src, np.ndarray) and src.flags.c_contiguous
            shape = tuple(op.result.type.get_shape())
            off = int(op.static_offsets.get_values()[0])
            env[op.result] = src.reshape(-1)[off : off + math.prod(shape)].reshape(shape)
        elif isinstance(op, func.ReturnOp):
            outs = [env[v] for v in op.operands]
        elif not run_kernel(op, env):
            raise AssertionError(f"unexpected host op {op.name}")
    assert outs is not None
    res = {}
    for i, v in enumerate(outs):
        attrs = fn.res_attrs.data[i].data if fn.res_attrs else {}
        n = attrs.get("graph.name")
        res[n.data if isinstance(n, StringAttr) else f"out{i}"] = np.array(v)
    return res


def run_tile_module(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``@main`` of a tile-level module; returns outputs keyed by result ``graph.name``."""

    def kernel(op: Operation, env: dict) -> bool:
        if not isinstance(op, tile.KernelOp):
            return False
        _run_kernel(op, env)
        return True

    return run_host_main(module, inputs, kernel)


def _run_kernel(k: tile.KernelOp, host: dict) -> None:
    env: dict[SSAValue, object] = {}
    for a, v in zip(k.body.block.args, k.args):
        env[a] = host[v]
    for step in _compiled(k):
        step(env)


_CACHE: dict[int, tuple[tile.KernelOp, list]] = {}


def _compiled(k: tile.KernelOp) -> list:
    """The kernel body as a list of closures ``f(env)`` (built once per kernel op: reading xDSL
    properties in the inner loops would dominate the run time)."""
    hit = _CACHE.get(id(k))
    if hit is None or hit[0] is not k:
        hit = (k, _compile_block(k.body.block.ops))
        _CACHE[id(k)] = hit
    return hit[1]


def _compile_block(ops) -> list:
    return [_compile_op(op) for op in ops]


def _compile_op(op: Operation):  # noqa: C901 - one branch per op
    if isinstance(op, tile.AllocOp):
        t = op.tile_type
        shape, dt, res = t.get_shape(), element_dtype(t.element_type), op.result

        def alloc(env):
            env[res] = np.full(shape, np.nan, dtype=dt)
        return alloc
    if isinstance(op, arith.ConstantOp):
        val, res = op.value.value.data, op.result

        def const(env):
            env[res] = val
        return const
    if isinstance(op, (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivUIOp, arith.RemUIOp)):
        fn = {arith.AddiOp: int.__add__, arith.SubiOp: int.__sub__, arith.MuliOp: int.__mul__,
              arith.DivUIOp: int.__floordiv__, arith.RemUIOp: int.__mod__}[type(op)]
        lhs, rhs, res = op.lhs, op.rhs, op.result

        def binop(env):
            env[res] = fn(env[lhs], env[rhs])
        return binop
    if isinstance(op, tile.ForOp):
        rng, iv, body = range(op.lb_value, op.ub_value, op.step_value), op.iv, _compile_block(op.body.block.ops)

        def loop(env):
            for i in rng:
                env[iv] = i
                for f in body:
                    f(env)
        return loop
    if isinstance(op, tile.MoveOp):
        return _compile_move(op)
    if isinstance(op, tile.MapOp):
        kind, params, ins, outv = op.map_kind, op.params(), list(op.inputs), op.out

        def tmap(env):
            out = env[outv]
            res = map_numpy(kind, [env[v] for v in ins], out.shape, out.dtype, params)
            assert res.shape == out.shape, (kind, res.shape, out.shape)
            out[...] = res
        return tmap
    if isinstance(op, (tile.GemmOp, tile.UnfoldOp, tile.Im2colOp, tile.WinogradFilterOp, tile.WinogradInputOp,
                       tile.WinogradOutputOp)):
        # looked up at call time: tests may wrap _run_op for these primitives
        return lambda env: _run_op(op, env)
    raise AssertionError(f"tile_numpy: unsupported op {op.name}")


def _run_op(op: Operation, env: dict) -> None:
    """Evaluate one op (the primitives directly, everything else through its closure)."""
    if isinstance(op, tile.GemmOp):  # C += op(A) x op(B) on the logical tiles
        a, b, c = env[op.a], env[op.b], env[op.c]
        a = a.T if op.trans_a is not None else a
        b = b.T if op.trans_b is not None else b
        c[...] = (c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)).astype(c.dtype)
    elif isinstance(op, (tile.Im2colOp, tile.WinogradFilterOp, tile.WinogradInputOp, tile.WinogradOutputOp)):
        _mem_primitive(op, env)
    elif isinstance(op, tile.UnfoldOp):  # implicit convolution's B operand (mem_prims reference)
        from taihu.passes.conversion.tile_to_loop.mem_prims import unfold_reference

        geo = op.geometry()
        out = env[op.out]
        out[...] = unfold_reference([env[v] for v in op.inputs], geo["kw"], geo["stride"], (geo["pl"], geo["pr"]),
                                    geo["dilation"]).astype(out.dtype)
    else:
        _compile_op(op)(env)


def _mem_primitive(op: Operation, env: dict) -> None:
    """tile.im2col / tile.winograd_*: the whole-op numpy references of tile-to-loop."""
    from taihu.passes.conversion.tile_to_loop import mem_prims as mp

    x, y = env[op.input], env[op.output]
    if isinstance(op, tile.Im2colOp):
        g = op.geometry()
        r = mp.im2col_reference(x, g["kernel"], g["strides"], g["pads"], g["dilations"], op.data_layout,
                                op.columns_per_image())
    elif isinstance(op, tile.WinogradFilterOp):
        r = mp.winograd_filter_full_reference(x)
    elif isinstance(op, tile.WinogradInputOp):
        pads = tuple(int(v) for v in op.pads.get_values()) if op.pads is not None else (0, 0, 0, 0)
        r = mp.winograd_input_full_reference(x, pads, y.shape[1], op.data_layout)
    else:
        r = mp.winograd_output_full_reference(x, y.shape, op.data_layout,
                                              env[op.bias] if op.bias is not None else None,
                                              op.activation.data if op.activation is not None else None)
    assert r.shape == y.shape, (op.name, r.shape, y.shape)
    y[...] = r


def _compile_move(op: tile.MoveOp):
    """A window copy: basic strided slicing when the window is inside the memref, otherwise
    index arrays with the ``pad`` value / ``clip`` at the boundary (asserting one is present)."""
    memv, bufv, offv = op.memref, op.tile, list(op.offsets)
    sizes, strides = op.size_values, op.stride_values
    is_load, has_pad, has_clip = op.is_load, op.pad is not None, op.clip is not None
    pad = op.pad_value if has_pad else np.nan
    n = math.prod(sizes)

    def move(env):
        mem, buf = env[memv], env[bufv]
        offsets = [env[v] for v in offv]
        assert n == buf.size
        inside = all(o >= 0 and o + (sz - 1) * st < d for o, sz, st, d in zip(offsets, sizes, strides, mem.shape))
        if inside:
            sl = tuple(slice(o, o + (sz - 1) * st + 1, st) for o, sz, st in zip(offsets, sizes, strides))
            if is_load:
                buf[...] = mem[sl].reshape(buf.shape)
            else:
                mem[sl] = buf.reshape(sizes)
            return
        assert has_pad or has_clip, f"tile.move window leaves the memref without pad/clip: {offsets} {sizes}"
        idx, ok = _window_index(offsets, sizes, strides, mem.shape)
        sel = [i[m] for i, m in zip(idx, ok)]
        loc = [np.nonzero(m)[0] for m in ok]
        if is_load:
            win = np.full(tuple(sizes), pad, dtype=mem.dtype)
            if all(len(x) for x in sel):
                win[np.ix_(*loc)] = mem[np.ix_(*sel)]
            buf[...] = win.reshape(buf.shape)
        else:
            win = buf.reshape(tuple(sizes))
            if all(len(x) for x in sel):
                mem[np.ix_(*sel)] = win[np.ix_(*loc)]
    return move


def _window_index(offsets, sizes, strides, shape):
    """Per-dim index arrays of the window and masks of the in-bounds positions."""
    idx, ok = [], []
    for o, n, s, d in zip(offsets, sizes, strides, shape):
        ix = o + s * np.arange(n)
        idx.append(ix)
        ok.append((ix >= 0) & (ix < d))
    return idx, ok


def _window_taps(x: np.ndarray, kernel, strides, out_shape):
    nk = len(kernel)
    lead = (slice(None),) * (x.ndim - nk)
    for tap in itertools.product(*(range(k) for k in kernel)):
        index = tuple(slice(t, t + s * (o - 1) + 1, s) for t, s, o in zip(tap, strides, out_shape[-nk:]))
        yield x[lead + index]


def map_numpy(kind: MapKind, ins: list[np.ndarray], out_shape, dtype, p: dict) -> np.ndarray:
    """numpy semantics of one map kind (mapkind.py), computed in float64, cast to ``dtype``."""
    xs = [np.asarray(a, np.float64) for a in ins]
    x = xs[0] if xs else None
    with np.errstate(all="ignore"):
        if kind == MapKind.FILL:
            r = np.full(out_shape, p["value"])
        elif kind in (MapKind.COPY, MapKind.CONVERT):
            r = x
        elif kind == MapKind.RELU:
            r = np.maximum(x, 0)
        elif kind == MapKind.LEAKY_RELU:
            r = np.where(x >= 0, x, x * p["alpha"])
        elif kind == MapKind.CLIP:
            r = np.minimum(np.maximum(x, p.get("lo", -np.inf)), p.get("hi", np.inf))
        elif kind == MapKind.SIGMOID:
            r = 1 / (1 + np.exp(-x))
        elif kind == MapKind.TANH:
            r = np.tanh(x)
        elif kind == MapKind.SQRT:
            with np.errstate(invalid="ignore"):
                r = np.sqrt(x)
        elif kind == MapKind.ERF:
            r = np.asarray(np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)), np.float64)
        elif kind == MapKind.ADD:
            r = np.broadcast_to(xs[0] + xs[1], out_shape)
        elif kind == MapKind.SUB:
            r = np.broadcast_to(xs[0] - xs[1], out_shape)
        elif kind == MapKind.MUL:
            r = np.broadcast_to(xs[0] * xs[1], out_shape)
        elif kind == MapKind.DIV:
            r = np.broadcast_to(xs[0] / xs[1], out_shape)
        elif kind == MapKind.MAX:
            r = np.broadcast_to(np.maximum(xs[0], xs[1]), out_shape)
        elif kind == MapKind.AFFINE:
            r = np.broadcast_to(xs[0] * xs[1] + xs[2], out_shape)
        elif kind in (MapKind.MAX_POOL, MapKind.AVG_POOL):
            kernel, strides = p["kernel"], p["strides"]
            if p.get("pads"):  # skipped taps = pad -inf (max) / 0 (sum)
                nk = len(kernel)
                pw = [(0, 0)] * (x.ndim - nk) + [(p["pads"][i], p["pads"][nk + i]) for i in range(nk)]
                x = np.pad(x, pw, constant_values=-np.inf if kind == MapKind.MAX_POOL else 0.0)
            acc = None
            for v in _window_taps(x, kernel, strides, out_shape):
                acc = v.copy() if acc is None else (np.maximum(acc, v) if kind == MapKind.MAX_POOL else acc + v)
            if kind == MapKind.AVG_POOL:
                acc = acc * xs[1] if len(xs) == 2 else acc / math.prod(kernel)
            r = acc
        elif kind == MapKind.DEPTHWISE:
            (kh, kw), (sh, sw) = p["kernel"], p["strides"]
            pt, pl, pb, pr = p.get("pads") or (0, 0, 0, 0)
            dh, dw = p.get("dilations") or (1, 1)
            xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr)])
            r = np.zeros(out_shape) if len(xs) == 2 else np.broadcast_to(xs[2], out_shape).copy()
            _, ho, wo = out_shape
            for i in range(kh):
                for j in range(kw):
                    win = xp[:, i * dh : i * dh + sh * (ho - 1) + 1 : sh, j * dw : j * dw + sw * (wo - 1) + 1 : sw]
                    r += xs[1][:, :, i * kw + j][:, :, None] * win
        elif kind in (MapKind.GROUPED, MapKind.GROUPED_DIRECT):
            (kh, kw), (sh, sw) = p["kernel"], p["strides"]
            dh, dw = p.get("dilations") or (1, 1)
            if kind == MapKind.GROUPED:  # pads top, left, bottom, right
                pt, pl, pb, pr = p.get("pads") or (0, 0, 0, 0)
                has_bias = len(xs) == 3
            else:  # the rows hold their pad rows; pads left, right; scratch copies after x, w, b
                pt = pb = 0
                pl, pr = p.get("pads") or (0, 0)
                has_bias = len(xs) - kw == 3
            xp = np.pad(x, [(0, 0), (0, 0), (pt, pb), (pl, pr)])
            w = xs[1]  # (P, mg, cg, kh*kw)
            r = np.zeros(out_shape) if not has_bias else np.broadcast_to(xs[2], out_shape).copy()
            _, _, ho, wo = out_shape
            for i in range(kh):
                for j in range(kw):
                    win = xp[:, :, i * dh : i * dh + sh * (ho - 1) + 1 : sh, j * dw : j * dw + sw * (wo - 1) + 1 : sw]
                    r += np.einsum("pmk,pkhw->pmhw", w[:, :, :, i * kw + j], win)
        elif kind == MapKind.REDUCE_SUM:
            r = x.sum(axis=p["axis"], keepdims=True)
        elif kind == MapKind.REDUCE_MAX:
            r = x.max(axis=p["axis"], keepdims=True)
        elif kind == MapKind.REDUCE_MEAN:
            r = x.mean(axis=p["axis"], keepdims=True)
        elif kind == MapKind.SOFTMAX:
            e = np.exp(x - x.max(axis=p["axis"], keepdims=True))
            r = e / e.sum(axis=p["axis"], keepdims=True)
        elif kind == MapKind.LRN:
            ax, size = p["axis"], p["size"]
            lo = (size - 1) // 2
            hi = size - 1 - lo
            sq = x * x
            c = out_shape[ax]
            padw = [(0, 0)] * x.ndim
            if x.shape[ax] == c:  # plain form: zero-pad the clipped windows
                padw[ax] = (lo, hi)
            sqp = np.pad(sq, padw)  # halo form: the input already holds the window's halo
            ssum = sum(np.take(sqp, range(j, j + c), axis=ax) for j in range(size))
            xc = np.take(x, range(lo, lo + c), axis=ax) if x.shape[ax] != c else x
            r = xc / (p["bias"] + p["alpha"] / size * ssum) ** p["beta"]
        elif kind == MapKind.TRANSPOSE:
            r = np.transpose(x, p["perm"])
        elif kind in LOOP_ONLY_KINDS:  # im2col / winograd_* (loop level only)
            from taihu.passes.conversion.tile_to_loop.mem_prims import map_reference

            r = map_reference(kind, x, out_shape, p)
        else:
            raise AssertionError(f"map kind {kind} not implemented")
    return np.asarray(r).astype(dtype)
