// RUN: %taihu-opt %s -p convert-tile-to-loop | filecheck %s

// DMA inference (004 Alg. 7, algorithms.md §E4, §B item 6): every CPE moves its piece; each
// loop.dma_start is ONE athread DMA (contiguous run repeated with a constant gap).

// rc tile of a row-major matrix: one strided DMA per CPE (B_lead/8 elements per row), waited
// lazily before the first use; the store waits for the load's DMA (same buffer).
func.func @rc(%A: memref<1024x1024xf64>) {
  tile.kernel "rc" (%a = %A : memref<1024x1024xf64>) {
    %t = tile.alloc : !tile.buf<256x64xf64, rc>
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    tile.move %a[%c64, %c0] sizes [256, 64] -> %t : memref<1024x1024xf64> -> !tile.buf<256x64xf64, rc>
    tile.move %t -> %a[%c0, %c64] sizes [256, 64] : !tile.buf<256x64xf64, rc> -> memref<1024x1024xf64>
  }
  func.return
}
// CHECK-LABEL: func.func @rc
// CHECK:        %t = loop.ldm_buffer "t" : !loop.ldm<32x8xf64>
// CHECK:        %[[R:.*]] = arith.muli %row, %c32 : index
// CHECK-NEXT:   %[[C:.*]] = arith.muli %col, %c8 : index
// CHECK-NEXT:   %[[I:.*]] = arith.addi %c64, %[[R]] : index
// CHECK-NEXT:   %[[G:.*]] = loop.dma_start %a[%[[I]], %[[C]]] sizes [32, 8] -> %t : memref<1024x1024xf64> -> !loop.ldm<32x8xf64>
// CHECK-NEXT:   loop.dma_wait %[[G]]
// CHECK-NEXT:   %[[J:.*]] = arith.addi %c64, %[[C]] : index
// CHECK-NEXT:   %[[P:.*]] = loop.dma_start %t -> %a[%[[R]], %[[J]]] sizes [32, 8] : !loop.ldm<32x8xf64> -> memref<1024x1024xf64>
// CHECK-NEXT:   loop.dma_wait %[[P]]

// col layout (LDM holds the transposed block): one DMA per LDM row = one column of the window
// (bsize = one element), into a loop.view at the row's offset.
func.func @col(%A: memref<64x64xf64>) {
  tile.kernel "col" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x16xf64, cr, col>
    %c0 = arith.constant 0 : index
    tile.move %a[%c0, %c0] sizes [64, 16] -> %t : memref<64x64xf64> -> !tile.buf<64x16xf64, cr, col>
  }
  func.return
}
// CHECK-LABEL: func.func @col
// CHECK:        %t = loop.ldm_buffer "t" : !loop.ldm<2x8xf64>
// CHECK:        %[[V0:.*]] = loop.view %t[%c0] : !loop.ldm<2x8xf64> -> !loop.ldm<8xf64>
// CHECK-NEXT:   %[[T0:.*]] = loop.dma_start %a[%{{.*}}, %{{.*}}] sizes [8, 1] -> %[[V0]] : memref<64x64xf64> -> !loop.ldm<8xf64>
// CHECK:        %[[V1:.*]] = loop.view %t[%c8] : !loop.ldm<2x8xf64> -> !loop.ldm<8xf64>
// CHECK-NEXT:   %[[T1:.*]] = loop.dma_start %a[%{{.*}}, %{{.*}}] sizes [8, 1] -> %[[V1]] : memref<64x64xf64> -> !loop.ldm<8xf64>
// CHECK-NEXT:   loop.dma_wait %[[T0]], %[[T1]]

// cpe tile whose rows are not one pattern: split per row (unrolled), LDM offsets via loop.view;
// a strided window is one DMA with strides; a rep load is one broadcast DMA.
func.func @split(%X: memref<128x10x20xf32>, %W: memref<64x128xf32>, %S: memref<56xf32>) {
  tile.kernel "split" (%x = %X : memref<128x10x20xf32>, %w = %W : memref<64x128xf32>, %s = %S : memref<56xf32>) {
    %t = tile.alloc : !tile.buf<128x4x10xf32, cpe>
    %u = tile.alloc : !tile.buf<64x64xf32, cpe>
    %r = tile.alloc : !tile.buf<56xf32, rep>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    tile.move %x[%c0, %c3, %c0] sizes [128, 4, 10] -> %t : memref<128x10x20xf32> -> !tile.buf<128x4x10xf32, cpe>
    tile.move %w[%c0, %c1] sizes [64, 64] strides [1, 2] -> %u : memref<64x128xf32> -> !tile.buf<64x64xf32, cpe>
    tile.move %s[%c0] sizes [56] -> %r : memref<56xf32> -> !tile.buf<56xf32, rep>
  }
  func.return
}
// CHECK-LABEL: func.func @split
// CHECK:        %t = loop.ldm_buffer "t" : !loop.ldm<2x4x10xf32>
// CHECK:        %[[V0:.*]] = loop.view %t[%c0] : !loop.ldm<2x4x10xf32> -> !loop.ldm<40xf32>
// CHECK-NEXT:   %[[A:.*]] = loop.dma_start %x[%{{.*}}, %c3, %c0] sizes [1, 4, 10] -> %[[V0]] : memref<128x10x20xf32> -> !loop.ldm<40xf32>
// CHECK-NEXT:   %[[N:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT:   %[[V1:.*]] = loop.view %t[%c40] : !loop.ldm<2x4x10xf32> -> !loop.ldm<40xf32>
// CHECK-NEXT:   %[[B:.*]] = loop.dma_start %x[%[[N]], %c3, %c0] sizes [1, 4, 10] -> %[[V1]] : memref<128x10x20xf32> -> !loop.ldm<40xf32>
// CHECK-NEXT:   %[[C:.*]] = loop.dma_start %w[%{{.*}}, %c1] sizes [1, 64] strides [1, 2] -> %u : memref<64x128xf32> -> !loop.ldm<1x64xf32>
// CHECK-NEXT:   %[[D:.*]] = loop.dma_start %s[%c0] sizes [56] mode bcast -> %r : memref<56xf32> -> !loop.ldm<56xf32>
// CHECK-NEXT:   loop.dma_wait %[[A]], %[[B]], %[[C]], %[[D]]
