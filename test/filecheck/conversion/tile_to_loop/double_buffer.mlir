// RUN: %taihu-opt %s -p convert-tile-to-loop | filecheck %s
// RUN: %taihu-opt %s -p 'convert-tile-to-loop{double-buffer=false}' | filecheck %s --check-prefix=SINGLE

// Double buffering (004 Alg. 8 L1544-1562, algorithms.md §E5, DLIR G7): prologue DMA of the first
// tile into slot 0; iteration n waits for slot n mod 2 and starts the DMA of iteration n+1
// (offsets re-evaluated at iv + step) into the other slot; tokens and the slot counter are
// scf.for iter_args; the last iteration is peeled (no prefetch). The store from a double tile is
// waited one iteration later (first iteration peeled).

func.func @db(%X: memref<64x2048xf32>, %Y: memref<64x2048xf32>) {
  tile.kernel "db" (%x = %X : memref<64x2048xf32>, %y = %Y : memref<64x2048xf32>) {
    %t = tile.alloc double : !tile.buf<64x512xf32, cpe>
    %u = tile.alloc double : !tile.buf<64x512xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %j = 0 to 2048 step 512 {
      tile.move %x[%c0, %j] sizes [64, 512] -> %t : memref<64x2048xf32> -> !tile.buf<64x512xf32, cpe>
      tile.map sigmoid ins(%t : !tile.buf<64x512xf32, cpe>) out(%u : !tile.buf<64x512xf32, cpe>)
      tile.move %u -> %y[%c0, %j] sizes [64, 512] : !tile.buf<64x512xf32, cpe> -> memref<64x2048xf32>
    }
  }
  func.return
}

// CHECK:      %t = loop.ldm_buffer "t" : !loop.ldm<1x512xf32, double>
// CHECK-NEXT: %u = loop.ldm_buffer "u" : !loop.ldm<1x512xf32, double>
// CHECK:      %[[S0:.*]] = loop.slot %t[%c0] : !loop.ldm<1x512xf32, double>
// CHECK-NEXT: %[[P:.*]] = loop.dma_start %x[%id, %c0] sizes [1, 512] -> %[[S0]] : memref<64x2048xf32> -> !loop.ldm<1x512xf32>
//             iteration 0 (peeled for the delayed store)
// CHECK:      loop.dma_wait %[[P]]
// CHECK-NEXT: %[[N1:.*]] = loop.slot %t[%c1] : !loop.ldm<1x512xf32, double>
// CHECK-NEXT: %[[F1:.*]] = loop.dma_start %x[%id, %c512] sizes [1, 512] -> %[[N1]] : memref<64x2048xf32> -> !loop.ldm<1x512xf32>
// CHECK-NEXT: loop.map sigmoid
// CHECK-NEXT: %[[ST0:.*]] = loop.dma_start %{{.*}} -> %y[%id, %c0] sizes [1, 512] : !loop.ldm<1x512xf32> -> memref<64x2048xf32>
//             iterations 1 .. 2
// CHECK-NEXT: %[[R0:[0-9]+]], %[[R1:[0-9]+]], %{{.*}} = scf.for %j = %c512 to %c1536 step %c512 iter_args(%[[TL:.*]] = %[[F1]], %[[TS:.*]] = %[[ST0]], %slot = %c1) -> (!loop.token, !loop.token, index) {
// CHECK-NEXT:   %[[CT:.*]] = loop.slot %t[%slot] : !loop.ldm<1x512xf32, double>
// CHECK-NEXT:   %[[CU:.*]] = loop.slot %u[%slot] : !loop.ldm<1x512xf32, double>
// CHECK-NEXT:   loop.dma_wait %[[TL]]
// CHECK-NEXT:   %[[NJ:.*]] = arith.addi %j, %c512 : index
// CHECK-NEXT:   %[[NS:.*]] = arith.addi %slot, %c1 : index
// CHECK-NEXT:   %[[NT:.*]] = loop.slot %t[%[[NS]]] : !loop.ldm<1x512xf32, double>
// CHECK-NEXT:   %[[FN:.*]] = loop.dma_start %x[%id, %[[NJ]]] sizes [1, 512] -> %[[NT]] : memref<64x2048xf32> -> !loop.ldm<1x512xf32>
// CHECK-NEXT:   loop.map sigmoid ins(%[[CT]] : !loop.ldm<1x512xf32>) out(%[[CU]] : !loop.ldm<1x512xf32>)
// CHECK-NEXT:   loop.dma_wait %[[TS]]
// CHECK-NEXT:   %[[SN:.*]] = loop.dma_start %[[CU]] -> %y[%id, %j] sizes [1, 512] : !loop.ldm<1x512xf32> -> memref<64x2048xf32>
// CHECK-NEXT:   %[[INC:.*]] = arith.addi %slot, %c1 : index
// CHECK-NEXT:   scf.yield %[[FN]], %[[SN]], %[[INC]] : !loop.token, !loop.token, index
// CHECK-NEXT: }
//             iteration 3 (peeled: no prefetch)
// CHECK-NEXT: %{{.*}} = loop.slot %t[%c3] : !loop.ldm<1x512xf32, double>
// CHECK-NEXT: %{{.*}} = loop.slot %u[%c3] : !loop.ldm<1x512xf32, double>
// CHECK-NEXT: loop.dma_wait %[[R0]]
// CHECK-NEXT: loop.map sigmoid
// CHECK-NEXT: loop.dma_wait %[[R1]]
// CHECK-NEXT: %[[LAST:.*]] = loop.dma_start %{{.*}} -> %y[%id, %c1536] sizes [1, 512]
// CHECK-NEXT: loop.dma_wait %[[LAST]]
// CHECK-NEXT: }

// SINGLE:      %t = loop.ldm_buffer "t" : !loop.ldm<1x512xf32>
// SINGLE:      scf.for %j = %c0 to %c2048 step %c512 {
// SINGLE-NEXT:   %[[G:.*]] = loop.dma_start %x[%id, %j] sizes [1, 512] -> %t
// SINGLE-NEXT:   loop.dma_wait %[[G]]
// SINGLE-NEXT:   loop.map sigmoid ins(%t : !loop.ldm<1x512xf32>) out(%u : !loop.ldm<1x512xf32>)
// SINGLE-NEXT:   %[[P:.*]] = loop.dma_start %u -> %y[%id, %j] sizes [1, 512]
// SINGLE-NEXT:   loop.dma_wait %[[P]]
// SINGLE-NEXT: }
