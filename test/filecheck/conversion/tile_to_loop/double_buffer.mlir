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

// Alg. 8's wrap: the k loop is the only loop of the n loop's body, so its last iteration
// prefetches the first x tile of the next n iteration; the n loop carries that token and the
// k loop's slot counter. The bias load does not depend on n or k: placed before the nest
// (Alg. 7).
func.func @wrap(%X: memref<256x512xf32>, %B: memref<64x1xf32>, %Y: memref<256x128xf32>) {
  tile.kernel "wrap" (%x = %X : memref<256x512xf32>, %b = %B : memref<64x1xf32>, %y = %Y : memref<256x128xf32>) {
    %t = tile.alloc double : !tile.buf<64x128xf32, cpe>
    %bb = tile.alloc : !tile.buf<64x1xf32, cpe>
    %acc = tile.alloc : !tile.buf<64x128xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %n = 0 to 256 step 64 {
      tile.map fill out(%acc : !tile.buf<64x128xf32, cpe>) {value = 0.0 : f64}
      tile.for %k = 0 to 512 step 128 {
        tile.move %x[%n, %k] sizes [64, 128] -> %t : memref<256x512xf32> -> !tile.buf<64x128xf32, cpe>
        tile.map add ins(%acc, %t : !tile.buf<64x128xf32, cpe>, !tile.buf<64x128xf32, cpe>) out(%acc : !tile.buf<64x128xf32, cpe>)
      }
      tile.move %b[%c0, %c0] sizes [64, 1] -> %bb : memref<64x1xf32> -> !tile.buf<64x1xf32, cpe>
      tile.map add ins(%acc, %bb : !tile.buf<64x128xf32, cpe>, !tile.buf<64x1xf32, cpe>) out(%acc : !tile.buf<64x128xf32, cpe>)
      tile.move %acc -> %y[%n, %c0] sizes [64, 128] : !tile.buf<64x128xf32, cpe> -> memref<256x128xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @wrap
// CHECK:        %[[BIAS:.*]] = loop.dma_start %b[%id, %c0] sizes [1, 1] -> %bb
// CHECK-NEXT:   loop.dma_wait %[[BIAS]]
// CHECK-NEXT:   %[[S0:.*]] = loop.slot %t[%c0]
// CHECK-NEXT:   %[[P:.*]] = loop.dma_start %x[%id, %c0] sizes [1, 128] -> %[[S0]]
// CHECK-NEXT:   %[[NL:.*]], %{{.*}}, %[[SLOTIN:.*]] = scf.for %n = %c0 to %c192 step %c64 iter_args(%[[TOK:.*]] = %[[P]], %slot = %c0, %slot_in = %c0) -> (!loop.token, index, index) {
// CHECK:          %[[KL:.*]], %[[KS:.*]] = scf.for %k = %c0 to %c384 step %c128 iter_args(%{{.*}} = %[[TOK]], %{{.*}} = %slot_in) -> (!loop.token, index) {
// CHECK:          }
//                 the k loop's peeled last iteration: wait, then prefetch x[n + 64, 0]
// CHECK:          loop.dma_wait %[[KL]]
// CHECK-NEXT:     %[[NN:.*]] = arith.addi %n, %c64 : index
// CHECK:          %[[W:.*]] = loop.dma_start %x[%{{.*}}, %c0] sizes [1, 128]
// CHECK:          scf.yield %[[W]], %{{.*}}, %{{.*}} : !loop.token, index, index
// CHECK-NEXT:   }
//               the n loop's peeled last iteration: no prefetch after its k loop
// CHECK:        scf.for %k{{.*}} iter_args(%{{.*}} = %[[NL]], %{{.*}} = %[[SLOTIN]])
// CHECK:          scf.yield
// CHECK-NEXT:   }
// CHECK-NOT:    loop.dma_start %x
// CHECK:        loop.dma_start %{{.*}} -> %y
