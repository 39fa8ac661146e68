"""``convert-loop-to-sw``: the per-CPE ``loop`` level + its host program -> the ``sw`` dialect.

Input (contract "host-side form"): a ``builtin.module`` with ``memref.global`` constants and ONE
host function (``func.func @main``, or the only ``func.func`` of the module) whose arguments and
results are main-memory memrefs (``{graph.name = "..."}`` names them) and whose body holds
``memref.get_global``, ``memref.alloc``, reshape views (``memref.collapse_shape``,
``memref.expand_shape``, ``memref.reinterpret_cast``, ``memref.cast``, static ``memref.subview``),
``memref.dealloc`` and ``loop.spmd`` kernels. Output: an ``sw`` module (contract-sw.md)::

    sw.global @w_conv1 : tensor<64x3x7x7xf32> = dense<...>      // memref.global (value kept)
    sw.global @data : tensor<1x3x224x224xf32> io input           // func argument (graph.name)
    sw.global @prob : tensor<1x1000xf32> io output               // returned buffer (graph.name)
    sw.kernel @conv1(%a: i64, %b: i64, %c: i64) attributes {taihu.layer = ...} { ... }
    func.func @main() {
      %a = sw.global_addr @data                                  // argument / get_global
      %t0 = sw.mem_alloc 1605632                                 // memref.alloc (bytes)
      %v = arith.addi %t0, %off : i64                            // a view with an offset
      sw.spawn @conv1(%a, %w, %t0)                               // loop.spmd
      sw.join
      func.return
    }

Host mapping: ``memref.global`` -> ``sw.global`` with its initial value (a ``dense`` /
``dense_resource`` attribute re-typed as a tensor, no copy of blob bytes); argument ``i`` ->
``sw.global @<graph.name> io input`` (name sanitised to ``[A-Za-z0-9_.]``, default ``arg<i>``;
a sanitised name keeps the original as ``{graph.name = "..."}``);
a returned buffer (a ``memref.alloc``, possibly seen through views) -> ``sw.global @<graph.name>
io output`` of the returned type, default ``out<i>``; other allocations -> ``sw.mem_alloc``
(bytes, 128-B aligned by the simulator, 004 L865 R7); views -> the same address + the view's
static byte offset; ``memref.dealloc`` is dropped. Symbols are unique in the module: io globals
keep their names, other globals and kernels get ``_1``, ``_2`` ... suffixes on a clash.

Kernel mapping (``loop.spmd "NAME"`` -> ``sw.kernel @NAME`` + ``sw.spawn``/``sw.join``; the
``taihu.*`` attributes are copied onto the kernel; one i64 argument per memref operand = its
main-memory byte address):

* ``%row``/``%col`` -> ``sw.row_id``/``sw.col_id``; ``index`` arithmetic (``arith``), ``scf.for``,
  ``scf.if`` -> the same ops on ``i64``; ``!loop.ldm`` values (incl. those carried by ``scf``)
  -> i64 LDM byte addresses; ``!loop.token`` values disappear from ``scf`` iter_args/results.
* ``loop.ldm_buffer`` -> ``sw.ldm_alloc`` of its footprint (two 32-B rounded slots for double
  buffers); ``loop.slot %b[%i]`` -> ``base + (i & 1) * slot_bytes`` (folded for constants).
* Tokens: every chain of tokens connected through ``scf.for`` iter_args/yields/results and
  ``scf.if`` yields/results gets ONE reply word (``sw.reply_alloc``, loop.py docstring: one DMA in
  flight per chain). ``loop.dma_start`` -> ``sw.dma_get``/``sw.dma_put`` of
  :meth:`DmaStartOp.descriptor` (size, bsize, stride bytes; address = base + row-major offset)
  incrementing it; ``loop.dma_wait`` -> ``sw.dma_wait %rw, 1`` + ``sw.reply_reset %rw`` per
  chain (a token waited again where an earlier wait of the same token dominates is skipped).
  ``mode bcast`` gets (one DMA delivered to every CPE, spec §4.3 rule 7): ``sw.barrier array``
  (no CPE still reads the buffer; omitted for the first write of a buffer outside loops), CPE 0
  issues the broadcast get -- a large one (>= :data:`BCAST_SPLIT_BYTES`) in up to 4 parts
  issued by CPEs 0, 2, 4, 6, one per DMA bus (:func:`bcast_parts`); its wait = the issuers wait
  + ``sw.barrier array``. ``mode row`` is refused (the simulator has no row mode).
* ``loop.barrier`` -> ``sw.barrier``.
* ``loop.summa_step`` / ``loop.gemm_block`` / ``loop.rlc_bcast`` -> register micro-kernels
  (:mod:`.gemm`, 004 Alg. 2 / Listing 4.1); ``loop.map`` -> :func:`.maps.lower_map` (owner B).

Kernel deduplication (option ``dedup-kernels``, default on): networks repeat layers (ResNet-50: 98
``loop.spmd``, 40 distinct bodies) and a kernel takes its buffers as arguments, so a body is
lowered once per :func:`~taihu.passes.conversion.kernel_key.structural_key` (equal op
structure, types, properties and attributes; ``loop.ldm_buffer`` names ignored) and every
repeat becomes a spawn of the first one's ``sw.kernel``, carrying its own launch name and
``taihu.*`` attributes::

    sw.kernel @r97(...) attributes {taihu.layer = "r97", ...} { ... }
    sw.spawn @r97(%a, %b, %c)
    sw.spawn @r97(%d, %e, %f) {taihu.name = "r107", taihu.layer = "r107", ...}

The simulator reports each launch under ``taihu.name`` (default: the kernel symbol) with the
spawn's ``taihu.*`` attributes (default: the kernel's). The launch names are the symbols the
kernels get without deduplication, so reports are identical either way.

Machine: the kernels are lowered for the module's machine (``target.machine``,
:func:`~taihu.dialects.target.machine_of`; ``sw26010`` when the module has none), computed once
per run and carried by :class:`KernelLowering`: its instruction table schedules the ``loop.map``
micro-kernels, its LDM size bounds the mesh GEMM's k-loop over-read.

Errors: ``DiagnosticException`` naming the op (unsupported op or view, dynamic shapes, a
returned buffer that is not an allocation of the host function, several host functions, an
invalid ``target.machine``).

Modules: :mod:`.convert` (the pass), :mod:`.host` (the host program, :func:`lower_module`),
:mod:`.kernel` (a ``loop.spmd`` body, :class:`KernelLowering`), :mod:`.maps` (``loop.map``
micro-kernels), :mod:`.gemm` (the mesh GEMM micro-kernels), :mod:`.common` (shared helpers).
"""

from .common import cmpi, int_attr, int_binop, reg_instr, sanitize
from .convert import ConvertLoopToSwPass
from .host import LAUNCH_NAME, lower_module
from .kernel import BCAST_ISSUERS, BCAST_SPLIT_BYTES, KernelLowering, bcast_parts

__all__ = [
    "BCAST_ISSUERS",
    "BCAST_SPLIT_BYTES",
    "LAUNCH_NAME",
    "ConvertLoopToSwPass",
    "KernelLowering",
    "bcast_parts",
    "cmpi",
    "int_attr",
    "int_binop",
    "lower_module",
    "reg_instr",
    "sanitize",
]
