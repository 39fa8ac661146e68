"""Cycles per element of the ``loop.map`` micro-kernels (passes/conversion/loop_to_sw/maps.py).

Every case is a loop-level module: each of the 64 CPEs DMAs its block of the inputs into LDM, runs
one ``loop.map`` and DMAs the output back; it is lowered with ``convert-loop-to-sw`` and run on the
simulator. The figure reported is the micro-kernel time of the map (report ``t_compute`` = max over
CPEs of the micro-kernel run cycles) divided by the output elements of one CPE; DMA time is not
included (memory-bound maps are DMA-bound on SW26010: 30.94 GB/s per core group, 004 L597, is
~0.33 B/cycle per CPE, i.e. ~12 cycles per f32 element moved).

Usage: ``python -m taihu.benchmarks.maps_cycles [--quick]``

``--layers NET ...`` (resnet50 vgg19 alexnet squeezenet inception_v1): every distinct
memory-bound layer of the light ONNX network (after graph-fold-constants, -fold-batchnorm,
-simplify: pools, LRN, softmax, element-wise maps, concat, pad, transposes) as a one-op graph
module through ``taihu-lower`` and the simulator: cycles, useful DMA GB/s (report ``dma_bytes``
per second at 1.45 GHz), % of the 30.94 GB/s DMA roof (004 L597), 128-B transaction waste,
``ideal%`` = the tensors' bytes (every input and output once) per second as a % of the roof
(counts halo re-reads and waste against the kernel);
``--check`` also simulates the numerics and compares with the graph reference (rtol 1e-4,
atol 1e-5). A one-op concat copies its graph inputs: in a network its producers write the
output slices in place (no kernel) at batch 1.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from xdsl.parser import Parser

from taihu.backends.sim.runner import simulate
from taihu.passes.conversion.loop_to_sw import ConvertLoopToSwPass
from taihu.passes.pipelines import default_context


def _ty(shape, elem: str) -> str:
    return "x".join(map(str, shape)) + "x" + elem


def loop_module(kind: str, in_shapes, out_shape, elem: str = "f32", attrs: str = "") -> str:
    """A loop module: CPE ``id`` maps block ``id`` of every input (``(64, *shape)`` memrefs)."""
    args, spmd_args, bufs, gets, ins = [], [], [], [], []
    for i, s in enumerate(in_shapes):
        n = math.prod(s)
        args.append(f"%x{i}: memref<64x{n}x{elem}> {{graph.name = \"in{i}\"}}")
        spmd_args.append(f"%a{i} = %x{i} : memref<64x{n}x{elem}>")
        bufs.append(f'%b{i} = loop.ldm_buffer "in{i}" : !loop.ldm<{_ty(s, elem)}>')
        gets.append(f"%t{i} = loop.dma_start %a{i}[%id, %c0] sizes [1, {n}] -> %b{i} : "
                    f"memref<64x{n}x{elem}> -> !loop.ldm<{_ty(s, elem)}>\n      loop.dma_wait %t{i}")
        ins.append((f"%b{i}", f"!loop.ldm<{_ty(s, elem)}>"))
    no = math.prod(out_shape)
    ot = f"!loop.ldm<{_ty(out_shape, elem)}>"
    ins_txt = f"ins({', '.join(v for v, _ in ins)} : {', '.join(t for _, t in ins)}) " if ins else ""
    nl = "\n      "
    return f"""
builtin.module {{
  func.func @main({', '.join(args)}) -> (memref<64x{no}x{elem}> {{graph.name = "out"}}) {{
    %y = memref.alloc() {{alignment = 128 : i64}} : memref<64x{no}x{elem}>
    loop.spmd "{kind}" ids(%row, %col) ({', '.join(spmd_args + [f'%o = %y : memref<64x{no}x{elem}>'])}) {{
      {nl.join(bufs)}
      %bo = loop.ldm_buffer "out" : {ot}
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index
      {nl.join(gets)}
      loop.map {kind} {ins_txt}out(%bo : {ot}) {attrs}
      %p = loop.dma_start %bo -> %o[%id, %c0] sizes [1, {no}] : {ot} -> memref<64x{no}x{elem}>
      loop.dma_wait %p
    }}
    func.return %y : memref<64x{no}x{elem}>
  }}
}}
"""


def measure(kind: str, in_shapes, out_shape, elem: str = "f32", attrs: str = "", seed: int = 0):
    """(micro-kernel cycles per output element of one CPE, sw.microkernel ops in the IR, output)."""
    ctx = default_context()
    mod = Parser(ctx, loop_module(kind, in_shapes, out_shape, elem, attrs)).parse_module()
    ConvertLoopToSwPass().apply(ctx, mod)
    from taihu.dialects import sw

    runs = sum(1 for op in mod.walk() if isinstance(op, sw.MicrokernelOp))
    rng = np.random.default_rng(seed)
    dt = np.float32 if elem == "f32" else np.float64
    inputs = {f"in{i}": rng.uniform(-3, 3, (64, math.prod(s))).astype(dt) for i, s in enumerate(in_shapes)}
    res = simulate(mod, inputs=inputs)
    k = res.report["kernels"][0]
    return k["t_compute"] / math.prod(out_shape), runs, res.outputs["out"]


CASES = [
    # name, kind, input shapes (per CPE), output shape, attrs
    ("relu 32x56", "relu", [(32, 56)], (32, 56), ""),
    ("add same shape 32x56", "add", [(32, 56), (32, 56)], (32, 56), ""),
    ("add per-channel bias 16x7x7", "add", [(16, 7, 7), (16, 1, 1)], (16, 7, 7), ""),
    ("affine (batch-norm) 4x28x28", "affine", [(4, 28, 28), (4, 1, 1), (4, 1, 1)], (4, 28, 28), ""),
    ("max_pool 3x3 s2 4x27x27", "max_pool", [(4, 27, 27)], (4, 13, 13),
     "{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}"),
    ("max_pool 2x2 s2 4x28x28", "max_pool", [(4, 28, 28)], (4, 14, 14),
     "{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}"),
    ("softmax 1x1000 (classifier row)", "softmax", [(1, 1000)], (1, 1000), "{axis = 1 : i64}"),
    ("softmax 8x16 axis 1", "softmax", [(8, 16)], (8, 16), "{axis = 1 : i64}"),
    ("sigmoid 2048", "sigmoid", [(2048,)], (2048,), ""),
    ("lrn 96x37 size 5 beta 0.75 (AlexNet-like)", "lrn", [(96, 37)], (96, 37),
     "{axis = 0 : i64, size = 5 : i64, alpha = 1.0e-04 : f64, beta = 7.5e-01 : f64, bias = 1.0 : f64}"),
]


#: graph ops that are not memory-bound (GEMM-like) or not kernels at all (views, constants)
_NOT_MEMORY_BOUND = ("graph.conv2d", "graph.gemm", "graph.matmul", "graph.lstm", "graph.constant", "graph.reshape",
                     "graph.flatten", "graph.unsqueeze", "graph.dropout")


def _fmt_attr(v: object) -> str:
    if hasattr(v, "get_values"):
        return ",".join(str(x) for x in v.get_values())  # type: ignore[attr-defined]
    if hasattr(v, "value") and hasattr(v.value, "data"):  # type: ignore[attr-defined]
        return str(v.value.data)  # type: ignore[attr-defined]
    return "1"  # unit attribute


def network_layers(net: str) -> list[tuple[str, object]]:
    """(description, one-op graph builder) of every distinct memory-bound op of a light ONNX
    network (the graph passes of ``taihu-lower`` applied first); constant operands are copied
    into the one-op module, the other operands become its arguments."""
    from xdsl.ir import Operation

    from taihu.dialects import graph
    from taihu.passes.conversion.graph_to_tile.common import unary_map_of
    from taihu.passes.graph.fold_batchnorm import GraphFoldBatchNormPass
    from taihu.passes.graph.fold_constants import GraphFoldConstantsPass
    from taihu.passes.graph.simplify import GraphSimplifyPass
    from taihu.test.unit.graph_builder import G
    from taihu.tools.run import example_path, load_onnx

    module = load_onnx(example_path(net), 0).module
    ctx = default_context()
    for p in (GraphFoldConstantsPass(), GraphFoldBatchNormPass(), GraphSimplifyPass()):
        p.apply(ctx, module)
    seen: dict[str, object] = {}
    for op in module.walk():
        if op.dialect_name() != "graph" or op.name in _NOT_MEMORY_BOUND:
            continue
        src = op.operands[0].owner if op.operands else None
        if (unary_map_of(op) is not None and len(list(op.operands[0].uses)) == 1
                and isinstance(src, Operation) and src.dialect_name() == "graph"):
            continue  # fused into its producer's kernel (absorb_elementwise_consumers)
        consts = {i for i, v in enumerate(op.operands) if isinstance(v.owner, graph.ConstantOp)}
        shapes = [tuple(v.type.get_shape()) for v in op.operands]
        key = f"{op.name} {' '.join('x'.join(map(str, sh)) or 'scalar' for sh in shapes)} {dict(op.properties)}"
        if key in seen:
            continue

        def build(op=op, consts=consts, shapes=shapes):
            g = G(*[sh for i, sh in enumerate(shapes) if i not in consts])
            args = iter(g.args)
            ops = [g(v.owner.clone()) if i in consts else next(args) for i, v in enumerate(op.operands)]
            new = op.clone()
            for i, v in enumerate(ops):
                new.operands[i] = v
            g(new)
            return g, list(new.results)

        short = f"{op.name.split('.')[1]} {' '.join('x'.join(map(str, sh)) for i, sh in enumerate(shapes) if i not in consts)}"
        for k in ("kernel_shape", "strides", "pads", "axis", "size", "perm", "ceil_mode"):
            v = op.properties.get(k)
            if v is not None:
                short += f" {k.split('_')[0]}={_fmt_attr(v)}"
        seen[key] = (short, build)
    return list(seen.values())  # type: ignore[arg-type]


def run_layers(nets: list[str], check: bool) -> int:
    """Print the ``--layers`` table (module docstring); returns 1 when a check fails."""
    from taihu.backends.reference import run_module
    from taihu.passes.pipelines import lower_to_swsim

    bad = 0
    print(f"{'layer':62s} {'cycles':>9s} {'GB/s':>6s} {'% roof':>6s} {'waste':>6s} {'ideal%':>6s} {'sim s':>6s}"
          + ("  check" if check else ""))
    for net in nets:
        print(f"== {net}")
        for desc, build in network_layers(net):
            g, outs = build()
            m = g.module(*outs)
            inputs = g.inputs()
            ref = run_module(m, inputs) if check else None
            lower_to_swsim(m)
            t = time.process_time()
            res = simulate(m, inputs=inputs, numerics=check)
            dt = time.process_time() - t
            cyc = res.report["total_cycles"]
            byts = sum(k["dma_bytes"] for k in res.report["kernels"])
            waste = sum(k["dma_waste_bytes"] for k in res.report["kernels"])
            gbps = byts / (cyc / (res.report["f_clk_ghz"] * 1e9)) / 1e9 if cyc else 0.0
            roof = res.report["peak_dma_gbps"]
            # ideal: every input and output tensor moved exactly once at the roof
            ideal = sum(math.prod(a.type.get_shape()) * a.type.get_element_type().bitwidth // 8  # type: ignore[attr-defined]
                        for a in [*g.args, *outs])
            ideal_pct = 100 * ideal / (cyc / (res.report["f_clk_ghz"] * 1e9)) / 1e9 / roof if cyc else 0.0
            line = (f"{desc[:62]:62s} {cyc:9d} {gbps:6.2f} {100 * gbps / roof:6.1f} {100 * waste / max(1, byts):5.1f}% "
                    f"{ideal_pct:6.1f} {dt:6.2f}")
            if check and ref is not None:
                ok = all(np.allclose(res.outputs[k], v, rtol=1e-4, atol=1e-5) for k, v in ref.items())
                bad += not ok
                line += "  ok" if ok else "  MISMATCH"
            print(line, flush=True)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="only relu and add")
    p.add_argument("--layers", nargs="+", metavar="NET", help="memory-bound layers of these light ONNX networks")
    p.add_argument("--check", action="store_true", help="--layers: simulate numerics, compare with the reference")
    a = p.parse_args(argv)
    if a.layers:
        return run_layers(a.layers, a.check)
    print(f"{'case':42s} {'dtype':5s} {'cyc/elem':>9s} {'mk ops':>6s} {'sim s':>6s}")
    for name, kind, ins, out, attrs in CASES[:2] if a.quick else CASES:
        for elem in ("f32", "f64"):
            t = time.time()
            cpe, runs, _ = measure(kind, ins, out, elem, attrs)
            print(f"{name:42s} {elem:5s} {cpe:9.3f} {runs:6d} {time.time() - t:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
