"""Tile-level schedule primitives: swAutoDNN's loop and primitive transformations (004 Ch.6,
L1399-1468, IR mapping L1482-1489) and FlexTensor's split/fuse/reorder (001 Table 4.1, eq
4.2-4.5, L1348-1379) as passes on ``tile.for`` nests, one pass per module:

* ``tile-split{loop=NAME factor=F}`` (:mod:`.split`), ``tile-reorder{loops=A,B,...}``
  (:mod:`.reorder`), ``tile-fuse{outer=A inner=B}`` / ``tile-fuse{loop=A}`` (:mod:`.fuse`, a loop
  into its primitives with :mod:`.grow`), ``tile-vectorize{dim=m|n}`` (:mod:`.vectorize`),
  ``tile-layout{buffer=NAME layout=row|col}`` (:mod:`.layout`);
* shared helpers in :mod:`.common` (selection by name, diagnostics) and the read/write analysis
  behind the legality of reordering in :mod:`.deps`.

Each primitive preserves what the kernel computes (exactly, or up to the reassociation of a
GEMM's fp64 sum) and refuses what it cannot prove with a one-line diagnostic naming the loop or
buffer; the verifiers decide the legality of the resulting tiles.
"""

from .fuse import TileFusePass
from .layout import TileLayoutPass
from .reorder import TileReorderPass
from .split import TileSplitPass
from .vectorize import TileVectorizePass

__all__ = ["TileFusePass", "TileLayoutPass", "TileReorderPass", "TileSplitPass", "TileVectorizePass"]
