// RUN: %taihu-opt %s -p convert-loop-to-sw | filecheck %s
// RUN: %taihu-opt %s -p convert-loop-to-sw,convert-sw-to-swsim -o %t.mlir && %taihu-run %t.mlir --quiet

// Broadcast DMA (mode bcast, spec §4.3 rule 7): CPE 0 issues one get that lands in every CPE's
// LDM; its wait = CPE 0 waits, then a barrier. The first write of a buffer outside loops needs
// no barrier before it; inside a loop a barrier first makes sure no CPE still reads the buffer.

builtin.module {
  func.func @main(%W: memref<4x128xf32> {graph.name = "w"}) -> (memref<64x128xf32> {graph.name = "out"}) {
    %Y = memref.alloc() {alignment = 128 : i64} : memref<64x128xf32>
    loop.spmd "bcast" ids(%row, %col) (%w = %W : memref<4x128xf32>, %y = %Y : memref<64x128xf32>) {
      %buf = loop.ldm_buffer "w" : !loop.ldm<1x128xf32>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index
      %t = loop.dma_start %w[%c0, %c0] sizes [1, 128] mode bcast -> %buf : memref<4x128xf32> -> !loop.ldm<1x128xf32>
      loop.dma_wait %t
      scf.for %i = %c1 to %c4 step %c1 {
        %u = loop.dma_start %w[%i, %c0] sizes [1, 128] mode bcast -> %buf : memref<4x128xf32> -> !loop.ldm<1x128xf32>
        loop.dma_wait %u
      }
      %p = loop.dma_start %buf -> %y[%id, %c0] sizes [1, 128] : !loop.ldm<1x128xf32> -> memref<64x128xf32>
      loop.dma_wait %p
    }
    func.return %Y : memref<64x128xf32>
  }
}

// CHECK:      sw.kernel @bcast(%w: i64, %y: i64) {
// CHECK:        %w_1 = sw.ldm_alloc 512
// CHECK:        %[[IS0:.*]] = arith.cmpi eq, %cpe, %c0 : i64
// CHECK-NEXT:   scf.if %[[IS0]] {
// CHECK-NEXT:     sw.dma_get %w -> %w_1, %[[RW:.*]] size 512 mode bcast
// CHECK-NEXT:   } else {
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[IS0B:.*]] = arith.cmpi eq, %cpe, %c0 : i64
// CHECK-NEXT:   scf.if %[[IS0B]] {
// CHECK-NEXT:     sw.dma_wait %[[RW]], 1
// CHECK-NEXT:     sw.reply_reset %[[RW]]
// CHECK-NEXT:   } else {
// CHECK-NEXT:   }
// CHECK-NEXT:   sw.barrier array
// CHECK-NEXT:   scf.for %i = %c1 to %c4 step %c1 : i64 {
// CHECK-NEXT:     %{{.*}} = arith.muli %i, %c512 : i64
// CHECK-NEXT:     %[[A:.*]] = arith.addi %w, %{{.*}} : i64
// CHECK-NEXT:     sw.barrier array
// CHECK-NEXT:     %{{.*}} = arith.cmpi eq, %cpe, %c0 : i64
// CHECK-NEXT:     scf.if %{{.*}} {
// CHECK-NEXT:       sw.dma_get %[[A]] -> %w_1, %{{.*}} size 512 mode bcast
// CHECK:          sw.barrier array
// CHECK-NEXT:   }
