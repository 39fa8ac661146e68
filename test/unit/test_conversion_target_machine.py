"""convert-tile-to-loop and convert-loop-to-sw lower for the module's machine (``target.machine``,
:func:`taihu.dialects.target.machine_of`), not the process default: a module without the
attribute and one carrying the shipped ``sw26010`` lower identically; a changed parameter changes
what the pass derives from it (LDM budget of the im2col task buffers; instruction latencies of
the scheduled ``loop.map`` micro-kernels), also after the default machine was lowered in the same
process (no memo keyed without the machine)."""

from __future__ import annotations

from xdsl.parser import Parser

from taihu.dialects import loop, sw
from taihu.dialects.target import MODULE_ATTR, machine_attr
from taihu.passes.conversion.loop_to_sw import ConvertLoopToSwPass
from taihu.passes.conversion.tile_to_loop import ConvertTileToLoopPass
from taihu.passes.pipelines import default_context
from taihu.target.machine import Machine, default_machine
from taihu.test.unit.test_tile_to_loop_mem_prims import im2col_text

SIGMOID = """
builtin.module {
  func.func @main(%x: memref<64x64xf32> {graph.name = "in"}) -> (memref<64x64xf32> {graph.name = "out"}) {
    %y = memref.alloc() {alignment = 128 : i64} : memref<64x64xf32>
    loop.spmd "sig" ids(%row, %col) (%a = %x : memref<64x64xf32>, %b = %y : memref<64x64xf32>) {
      %buf = loop.ldm_buffer "x" : !loop.ldm<8x8xf32>
      %out = loop.ldm_buffer "y" : !loop.ldm<8x8xf32>
      loop.map sigmoid ins(%buf : !loop.ldm<8x8xf32>) out(%out : !loop.ldm<8x8xf32>)
    }
    func.return %y : memref<64x64xf32>
  }
}
"""


def _parse(text: str, machine: Machine | None):
    ctx = default_context()
    m = Parser(ctx, text).parse_module()
    if machine is not None:
        m.attributes[MODULE_ATTR] = machine_attr(machine)
    m.verify()
    return ctx, m


def _microkernels(machine: Machine | None) -> list[str]:
    ctx, m = _parse(SIGMOID, machine)
    ConvertLoopToSwPass().apply(ctx, m)
    m.verify()
    return [str(o) for o in m.walk() if isinstance(o, sw.MicrokernelOp)]


def test_loop_to_sw_schedules_maps_for_the_module_machine() -> None:
    plain = _microkernels(None)
    fast_fp = _microkernels(default_machine().replace(lat_fp=1))
    shipped = _microkernels(default_machine())
    assert len(plain) == 2  # the constants, the sigmoid body
    assert shipped == plain
    # same instructions, another order: the list scheduler weighs the fp latency
    assert fast_fp[1] != plain[1]
    assert sorted(fast_fp[1].splitlines()) == sorted(plain[1].splitlines())


def _im2col_buffers(machine: Machine | None) -> tuple[int, list[str]]:
    text = "builtin.module {" + im2col_text(1, 64, 56, 56, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 0, False) + "}"
    ctx, m = _parse(text, machine)
    ConvertTileToLoopPass().apply(ctx, m)
    m.verify()
    spmd = next(o for o in m.walk() if isinstance(o, loop.SpmdOp))
    return spmd.ldm_bytes(), [str(o.buffer_type) for o in spmd.walk() if isinstance(o, loop.LdmBufferOp)]


def test_tile_to_loop_sizes_task_buffers_for_the_module_machine() -> None:
    plain = _im2col_buffers(None)
    small = _im2col_buffers(default_machine().replace(ldm_user_bytes=8192))
    assert _im2col_buffers(default_machine()) == plain
    assert plain[0] > 8192 >= small[0]  # fewer input rows per task on the small machine
    assert plain[1] != small[1]
