"""Cycles per element of the ``loop.map`` micro-kernels (passes/conversion/loop_to_sw/maps.py).

Every case is a loop-level module: each of the 64 CPEs DMAs its block of the inputs into LDM, runs
one ``loop.map`` and DMAs the output back; it is lowered with ``convert-loop-to-sw`` and run on the
simulator. The figure reported is the micro-kernel time of the map (report ``t_compute`` = max over
CPEs of the micro-kernel run cycles) divided by the output elements of one CPE; DMA time is not
included (memory-bound maps are DMA-bound on SW26010: 30.94 GB/s per core group, 004 L597, is
~0.33 B/cycle per CPE, i.e. ~12 cycles per f32 element moved).

Usage: ``python -m taihu.benchmarks.maps_cycles [--quick]``
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="only relu and add")
    a = p.parse_args(argv)
    print(f"{'case':42s} {'dtype':5s} {'cyc/elem':>9s} {'mk ops':>6s} {'sim s':>6s}")
    for name, kind, ins, out, attrs in CASES[:2] if a.quick else CASES:
        for elem in ("f32", "f64"):
            t = time.time()
            cpe, runs, _ = measure(kind, ins, out, elem, attrs)
            print(f"{name:42s} {elem:5s} {cpe:9.3f} {runs:6d} {time.time() - t:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
