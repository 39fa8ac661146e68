// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// loop.view: a sub-range of a single-slot LDM buffer, e.g. the interior of a zero-padded row as a
// DMA target (im2col, 004 L1047) or one row of a multi-row buffer as a DMA source.

func.func @f(%X: memref<4x56xf32>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<4x56xf32>) {
    %pad = loop.ldm_buffer "pad" : !loop.ldm<58xf32>
    %rows = loop.ldm_buffer "rows" : !loop.ldm<2x3x56xf32, double>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %in = loop.view %pad[%c1] : !loop.ldm<58xf32> -> !loop.ldm<56xf32>
    %t = loop.dma_start %x[%r, %c0] sizes [1, 56] -> %in : memref<4x56xf32> -> !loop.ldm<56xf32>
    loop.dma_wait %t
    %s = loop.slot %rows[%c0] : !loop.ldm<2x3x56xf32, double>
    %off = arith.muli %c, %c1 : index
    %row = loop.view %s[%off] : !loop.ldm<2x3x56xf32> -> !loop.ldm<3x56xf32>
    %inner = loop.view %row[%c0] : !loop.ldm<3x56xf32> -> !loop.ldm<56xf32>
    %p = loop.dma_start %inner -> %x[%r, %c0] sizes [1, 56] : !loop.ldm<56xf32> -> memref<4x56xf32>
    loop.dma_wait %p
  }
  func.return
}

// CHECK:      %in = loop.view %pad[%c1] : !loop.ldm<58xf32> -> !loop.ldm<56xf32>
// CHECK-NEXT: %t = loop.dma_start %x[%r, %c0] sizes [1, 56] -> %in : memref<4x56xf32> -> !loop.ldm<56xf32>
// CHECK:      %row = loop.view %s[%off] : !loop.ldm<2x3x56xf32> -> !loop.ldm<3x56xf32>
// CHECK-NEXT: %inner = loop.view %row[%c0] : !loop.ldm<3x56xf32> -> !loop.ldm<56xf32>
// CHECK-GENERIC: "loop.view"(%{{.*}}, %{{.*}}) : (!loop.ldm<58xf32>, index) -> !loop.ldm<56xf32>
