"""``convert-tile-to-loop``: tile-level kernels -> the per-CPE (SPMD) ``loop`` dialect.

Input: ``tile.kernel`` ops (dialects/tile.py) anywhere in the module (the host function keeps its
memrefs). Output: one ``loop.spmd`` per kernel, same name, the kernel's discardable attributes
(``taihu.layer``/``op``/``algorithm``/``shape``) copied; every op verifies under the ``loop``
dialect (LDM footprint <= ``ldm_user_bytes``, naming the buffers)::

    tile.kernel "relu" (%x = %X : memref<64x4096xf32>) {           loop.spmd "relu" ids(%row, %col) (%x = %X : ...) {
      %t = tile.alloc double : !tile.buf<64x512xf32, cpe>              %t = loop.ldm_buffer "t" : !loop.ldm<1x512xf32, double>
      tile.for %j = 0 to 4096 step 512 {                    ==>        (prologue DMA into slot 0, scf.for with the prefetch
        tile.move %x[%c0, %j] sizes [64, 512] -> %t ...                 of the next tile into the other slot, tokens
        tile.map relu ins(%t ...) out(%t ...)                           through iter_args, peeled last iteration)
        tile.move %t -> %x[%c0, %j] sizes [64, 512] ...
      }
    }

Lowering rules:

* ``tile.kernel`` -> ``loop.spmd`` (ids ``%row``, ``%col``; ``id = 8*row + col``, 004 L734).
  Kernels whose bodies are structurally identical
  (:func:`~taihu.passes.conversion.kernel_key.structural_key`: same ops, types, properties; other
  buffers and value names -- a network's repeated layers) are lowered once; each repeat gets a
  copy of that ``loop.spmd`` body with its own name, attributes, operands and LDM buffer names.
* ``tile.alloc`` -> ``loop.ldm_buffer`` of the CPE-local block (:meth:`TileBufType.local_shape`;
  layout ``col`` = the two dims swapped; ``double`` -> two slots, every consumer gets a
  ``loop.slot`` view). Names: the SSA name hint, made unique.
* ``tile.for`` -> ``scf.for`` (1:1), or the double-buffered form below. Loop-invariant loads
  (address independent of the loop, tile written by nothing else in it) are placed before the
  loop (004 Alg. 7: a DMA belongs to the innermost loop whose iterator its address uses).
  Iterations in which a ``pad``/``clip`` window may cross the array border (along a dim that
  depends on the loop's iterator) and whose variants cannot dispatch asynchronously (see
  token balancing below) are peeled and lowered with the iterator as a constant
  (algorithms.md §E6 "primitive switching" at the boundary), so the other iterations keep
  uniform, asynchronous, prefetchable DMAs.
* ``tile.move`` -> DMA inference (004 Alg. 7 L1514-1534, algorithms.md §E4; helpers in
  :mod:`.dma`): each CPE's piece of the window (its local block) is split into ``loop.dma_start``
  windows that are each ONE athread DMA (a contiguous run repeated with a constant gap), the LDM
  side contiguous (``loop.view`` at the element offset inside the block). Boundary windows of
  non-divisible shapes (``pad`` loads, ``clip`` stores, algorithms.md §E6, 004 §4.2.4 L883-889):
  the possible in-bounds sub-ranges of each piece are enumerated statically from the loop bounds;
  a piece that may cross the array border is dispatched (``scf.if`` on its start) to the variant
  for its case: loads fill the LDM block with the pad value and transfer only the valid part;
  stores transfer only the valid part (clipping: no extra main memory at all, nothing outside the
  array is read or written). The ``cpe`` distribution's ragged last CPE and the empty CPEs after
  it are dispatched on the CPE id the same way. ``rep`` loads use one broadcast DMA (``mode
  bcast``) when the piece is one DMA; ``rep`` stores are done by CPE 0 only.
* Waits: DMAs of a move are waited lazily, just before the first later op that touches the
  buffer (or the memref, for read/write hazards), and at the latest at the end of the region that
  started them (tokens never escape a region except through the prefetch iter_args).
* Double buffering (004 Alg. 8 L1544-1562, algorithms.md §E5, DLIR G7): in a ``tile.for`` whose
  body directly contains a load ``tile.move`` into a ``double`` tile (the first op of the body
  that touches it, the tile used nowhere else), the first tile is fetched before the loop
  (prologue), iteration ``n`` waits for its tile in slot ``n mod 2`` and immediately starts the
  DMA of iteration ``n+1`` (address = the offsets re-evaluated at ``iv + step``) into the other
  slot; the tokens and the iteration counter flow through ``scf.for`` iter_args; the last
  iteration is peeled (no prefetch). Stores from a ``double`` tile (its last use in the body)
  are waited one iteration later (first iteration peeled), so the put overlaps the next compute.
  Alg. 8's wrap: when the loop is the only loop of an outer loop's body, its last iteration
  prefetches the first tile of the outer loop's next iteration (tokens and the slot counter
  carried by the outer ``scf.for``), so only the nest's very first tile is exposed. Moves that
  dispatch per CPE (boundary, ragged, rep store) take part when every variant issues at most
  as many DMAs as the whole piece (the others are padded with 1-element dummy gets into a
  32-B scratch buffer, and the ``scf.if`` yields the tokens).
* ``tile.map`` -> ``loop.map`` on the local buffers (same kind and parameters; window maps keep
  their halos because the tile already holds them). A ``copy``/``convert`` that changes the
  layout becomes a ``transpose`` (perm [1, 0], converting on the way). A ``rep`` broadcast
  input of a map whose output is split over the CPEs is handed over as a ``loop.view`` of this
  CPE's block of it.
* ``tile.gemm`` -> :func:`.gemm.lower_gemm`; ``tile.im2col`` / ``tile.winograd_*`` ->
  :mod:`.mem_prims` (engineer E2's modules, called with :class:`LowerCtx`).
* Barriers: a ``loop.barrier array`` precedes a load from a memref that this kernel may already
  have written (a store earlier in program order, or anywhere in an enclosing loop), after the
  pending puts are waited: another CPE may have written the data.

Options: ``double_buffer`` (default true; false = no prefetch, double tiles use slot 0),
``max_unrolled_dmas`` (DMAs of one move emitted inline before a ``scf.for`` is used, default 64),
``rep_bcast`` (default true: rep loads as one broadcast DMA).

Machine: kernels are lowered for the module's machine (``target.machine``,
:func:`~taihu.dialects.target.machine_of`; ``sw26010`` when the module has none), computed once
per run and carried by :class:`LowerCtx` (``machine``): its ``ldm_user_bytes`` bounds the LDM
buffers (the task buffers of :mod:`.mem_prims` are sized within what the kernel leaves free).

Errors: :class:`xdsl.utils.exceptions.PassFailedException` naming the op and the reason (or the
key of an invalid ``target.machine``).

Modules: :mod:`.convert` (the pass), :mod:`.kernel` (``tile.kernel`` -> ``loop.spmd``, clones
of identical kernels), :mod:`.body` (op dispatch, ``tile.for``), :mod:`.moves` (``tile.move``
-> DMAs) with :mod:`.move_plan` (its static analysis) and :mod:`.dma` (the DMA rules),
:mod:`.maps` (``tile.map``), :mod:`.gemm` (``tile.gemm``), :mod:`.mem_prims` (``tile.im2col``,
``tile.unfold``, ``tile.winograd_*``), :mod:`.context` (:class:`LowerCtx`, the per-kernel
state), :mod:`.facts` (static facts about index values), :mod:`.common` (shared helpers).
"""

from .body import lower_block, lower_op
from .common import MESH, local_buffer_shape
from .context import LowerCtx
from .convert import ConvertTileToLoopPass
from .facts import index_values
from .kernel import lower_kernel
from .move_plan import plan_move
from .moves import balanced_tokens, emit_move

__all__ = [
    "MESH",
    "ConvertTileToLoopPass",
    "LowerCtx",
    "balanced_tokens",
    "emit_move",
    "index_values",
    "local_buffer_shape",
    "lower_block",
    "lower_kernel",
    "lower_op",
    "plan_move",
]
