"""Small hand-written ``sw`` programs shared by the simulator's unit tests.

:func:`scale_copy` -- a kernel ``@scale`` (each CPE gets its 4 KiB slice of ``@X``, adds in LDM,
puts it to ``@Y``) and a kernel ``@copy`` (gets a slice of ``@Y``), launched in the order given.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["scale_copy"]


def scale_copy(launches: Sequence[str] = ("scale", "copy"), scale_attrs: str = "") -> str:
    """The program text; ``launches``: kernel names spawned (and joined) in order;
    ``scale_attrs``: an ``attributes {...}`` clause for ``@scale`` (e.g. its taihu.layer)."""
    spawns = "".join(f"  sw.spawn @{k}(%x, %y)\n  sw.join\n" for k in launches)
    return f"""
sw.global @X : tensor<64x512xf64> io input
sw.global @Y : tensor<64x512xf64> io output

sw.kernel @scale(%x: i64, %y: i64) {scale_attrs} {{
  %buf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  sw.dma_get %src -> %buf, %rw size 4096
  sw.dma_wait %rw, 1
  sw.microkernel trip 128 (%buf step 32) {{
    sw.vldd r0, 0(p0)
    sw.vaddd r0, r0, r1
    sw.vstd r1, 0(p0)
  }}
  sw.dma_put %buf -> %dst, %rw size 4096
  sw.dma_wait %rw, 2
}}

sw.kernel @copy(%x: i64, %y: i64) {{
  %buf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %y, %off : i64
  sw.dma_get %src -> %buf, %rw size 4096
  sw.dma_wait %rw, 1
}}

func.func @main() {{
  %x = sw.global_addr @X
  %y = sw.global_addr @Y
{spawns}  func.return
}}
"""
