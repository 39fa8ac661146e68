// RUN: %taihu-opt %s -p convert-tile-to-loop | filecheck %s

// Boundary windows (algorithms.md §E6, 004 §4.2.4): the in-bounds part of each CPE's piece is
// enumerated statically; a piece that may cross the array border is dispatched on its start
// (scf.if + arith.cmpi sle): loads fill the block with the pad value and transfer only the valid
// rows/columns, clipped stores transfer only the valid part. No extra main memory.

// 100x70 in 64x64 rc tiles, no loop: CPE rows' starts 8*row are <= 88 (full), 96 (4 valid rows)
// or beyond (nothing valid); columns 64 + 8*col: 64 (6 valid) or beyond.
func.func @pad(%X: memref<100x70xf32>) {
  tile.kernel "pad" (%x = %X : memref<100x70xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf32, rc>
    %c64 = arith.constant 64 : index
    tile.move %x[%c64, %c64] sizes [64, 64] pad -inf -> %t : memref<100x70xf32> -> !tile.buf<64x64xf32, rc>
  }
  func.return
}
// CHECK-LABEL: func.func @pad
// CHECK:        %[[I:.*]] = arith.addi %c64, %{{.*}} : index
// CHECK-NEXT:   %[[J:.*]] = arith.addi %c64, %{{.*}} : index
// CHECK-NEXT:   %[[A:.*]] = arith.cmpi sle, %[[I]], %c88 : index
// CHECK-NEXT:   scf.if %[[A]] {
// CHECK-NEXT:     %[[B:.*]] = arith.cmpi sle, %[[J]], %c64 : index
// CHECK-NEXT:     scf.if %[[B]] {
// CHECK-NEXT:       loop.map fill out(%t : !loop.ldm<8x8xf32>) {value = 0xfff0000000000000 : f64}
// CHECK-NEXT:       %{{.*}} = loop.view %t[%c0] : !loop.ldm<8x8xf32> -> !loop.ldm<6xf32>
// CHECK-NEXT:       %{{.*}} = loop.dma_start %x[%[[I]], %[[J]]] sizes [1, 6] -> %{{.*}} : memref<100x70xf32> -> !loop.ldm<6xf32>
// CHECK:          } else {
// CHECK-NEXT:       loop.map fill out(%t : !loop.ldm<8x8xf32>) {value = 0xfff0000000000000 : f64}
// CHECK-NEXT:     }
// CHECK-NEXT:   } else {
// CHECK-NEXT:     %{{.*}} = arith.cmpi sle, %[[I]], %c96 : index
// CHECK:              loop.map fill out(%t : !loop.ldm<8x8xf32>) {value = 0xfff0000000000000 : f64}
// CHECK:              %[[V:.*]] = loop.view %t[%c24] : !loop.ldm<8x8xf32> -> !loop.ldm<6xf32>
// CHECK-NEXT:         %[[L:.*]] = loop.dma_start %x[%{{.*}}, %[[J]]] sizes [1, 6] -> %[[V]]
// CHECK-NEXT:         loop.dma_wait %{{.*}}, %{{.*}}, %{{.*}}, %[[L]]

// In a loop, the iterations whose windows may cross the border are peeled when their variants
// cannot dispatch asynchronously (E6 primitive switching): 196 columns in 64-wide rc tiles, the
// window at 192 leaves CPE column 0 with 4 of its 8 columns, one DMA per row (8 > the whole
// piece's 1), so it is peeled; columns 0..191 run in an scf.for with plain asynchronous DMAs.
func.func @peel(%X: memref<64x196xf32>) {
  tile.kernel "peel" (%x = %X : memref<64x196xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf32, rc>
    %c0 = arith.constant 0 : index
    tile.for %j = 0 to 196 step 64 {
      tile.move %x[%c0, %j] sizes [64, 64] pad 0.0 -> %t : memref<64x196xf32> -> !tile.buf<64x64xf32, rc>
      tile.map relu ins(%t : !tile.buf<64x64xf32, rc>) out(%t : !tile.buf<64x64xf32, rc>)
    }
  }
  func.return
}
// CHECK-LABEL: func.func @peel
// CHECK:        scf.for %j = %c0 to %c192 step %c64 {
// CHECK-NEXT:     %[[S:.*]] = arith.addi %j, %{{.*}} : index
// CHECK-NEXT:     %[[T:.*]] = loop.dma_start %x[%{{.*}}, %[[S]]] sizes [8, 8] -> %t
// CHECK-NEXT:     loop.dma_wait %[[T]]
// CHECK-NEXT:     loop.map relu
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[S2:.*]] = arith.addi %c192, %{{.*}} : index
// CHECK-NEXT:   %[[C:.*]] = arith.cmpi sle, %[[S2]], %c192 : index
// CHECK-NEXT:   scf.if %[[C]] {
// CHECK:          loop.dma_start %x[%{{.*}}, %[[S2]]] sizes [1, 4]
// CHECK:          loop.dma_wait
// CHECK:        } else {
// CHECK-NEXT:     loop.map fill out(%t : !loop.ldm<8x8xf32>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.map relu

// ... but when every variant issues at most the whole piece's DMA count, the dispatch stays in
// the loop and yields the token (200 rows: the window at 192 leaves CPE row 0 a full block,
// the others nothing; the empty variant issues a 1-element dummy get into a scratch buffer).
func.func @nopeel(%X: memref<200x64xf32>) {
  tile.kernel "nopeel" (%x = %X : memref<200x64xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf32, rc>
    %c0 = arith.constant 0 : index
    tile.for %i = 0 to 200 step 64 {
      tile.move %x[%i, %c0] sizes [64, 64] pad 0.0 -> %t : memref<200x64xf32> -> !tile.buf<64x64xf32, rc>
      tile.map relu ins(%t : !tile.buf<64x64xf32, rc>) out(%t : !tile.buf<64x64xf32, rc>)
    }
  }
  func.return
}
// CHECK-LABEL: func.func @nopeel
// CHECK:        scf.for %i = %c0 to %c256 step %c64 {
// CHECK-NEXT:     %[[S:.*]] = arith.addi %i, %{{.*}} : index
// CHECK-NEXT:     %[[C:.*]] = arith.cmpi sle, %[[S]], %c192 : index
// CHECK-NEXT:     %[[TOK:.*]] = scf.if %[[C]] -> (!loop.token) {
// CHECK-NEXT:       %[[T2:.*]] = loop.dma_start %x[%[[S]], %{{.*}}] sizes [8, 8] -> %t
// CHECK-NEXT:       scf.yield %[[T2]] : !loop.token
// CHECK-NEXT:     } else {
// CHECK-NEXT:       loop.map fill out(%t : !loop.ldm<8x8xf32>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:       %[[D:.*]] = loop.dma_start %x[%c0, %c0] sizes [1, 1] -> %dma_scratch_f32
// CHECK-NEXT:       scf.yield %[[D]] : !loop.token
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.dma_wait %[[TOK]]
// CHECK-NEXT:     loop.map relu

// A rep window that is always partly outside (a bias of 10 padded to 128 for the GEMM
// multiples) is the same for every CPE: no dispatch, one fill + one broadcast DMA of the valid
// part, waited lazily like an interior move.
func.func @static_pad(%B: memref<1x10xf32>) {
  tile.kernel "static_pad" (%b = %B : memref<1x10xf32>) {
    %t = tile.alloc : !tile.buf<1x128xf32, rep>
    %c0 = arith.constant 0 : index
    tile.move %b[%c0, %c0] sizes [1, 128] pad 0.0 -> %t : memref<1x10xf32> -> !tile.buf<1x128xf32, rep>
    tile.map relu ins(%t : !tile.buf<1x128xf32, rep>) out(%t : !tile.buf<1x128xf32, rep>)
  }
  func.return
}
// CHECK-LABEL: func.func @static_pad
// CHECK-NOT:    scf.if
// CHECK:        loop.map fill out(%t : !loop.ldm<1x128xf32>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:   %[[V:.*]] = loop.view %t[%c0] : !loop.ldm<1x128xf32> -> !loop.ldm<10xf32>
// CHECK-NEXT:   %[[T:.*]] = loop.dma_start %b[%c0, %c0] sizes [1, 10] mode bcast -> %[[V]] : memref<1x10xf32> -> !loop.ldm<10xf32>
// CHECK-NEXT:   loop.dma_wait %[[T]]
// CHECK-NEXT:   loop.map relu

// cpe distribution with 130 rows: q = 3 rows per CPE, CPEs 0..42 full, CPE 43 one row, 44..63
// nothing (dispatch on the CPE id, one DMA per variant: the token is yielded); a rep store is
// done by CPE 0 only; clip on a store.
func.func @ragged(%X: memref<130x37xf32>, %R: memref<4x5xf32>, %Y: memref<60x60xf32>) {
  tile.kernel "ragged" (%x = %X : memref<130x37xf32>, %r = %R : memref<4x5xf32>, %y = %Y : memref<60x60xf32>) {
    %t = tile.alloc : !tile.buf<130x37xf32, cpe>
    %s = tile.alloc : !tile.buf<4x5xf32, rep>
    %u = tile.alloc : !tile.buf<64x64xf32, rc>
    %c0 = arith.constant 0 : index
    tile.move %t -> %x[%c0, %c0] sizes [130, 37] : !tile.buf<130x37xf32, cpe> -> memref<130x37xf32>
    tile.move %s -> %r[%c0, %c0] sizes [4, 5] : !tile.buf<4x5xf32, rep> -> memref<4x5xf32>
    tile.move %u -> %y[%c0, %c0] sizes [64, 64] clip : !tile.buf<64x64xf32, rc> -> memref<60x60xf32>
  }
  func.return
}
// CHECK-LABEL: func.func @ragged
// CHECK:        %[[C:.*]] = arith.cmpi sle, %id, %c42 : index
// CHECK-NEXT:   %[[R:.*]] = scf.if %[[C]] -> (!loop.token) {
// CHECK-NEXT:     %[[T:.*]] = loop.dma_start %t -> %x[%{{.*}}, %c0] sizes [3, 37] : !loop.ldm<3x37xf32> -> memref<130x37xf32>
// CHECK-NEXT:     scf.yield %[[T]] : !loop.token
// CHECK-NEXT:   } else {
// CHECK-NEXT:     %[[D:.*]] = arith.cmpi sle, %id, %c43 : index
// CHECK-NEXT:     %[[R2:.*]] = scf.if %[[D]] -> (!loop.token) {
// CHECK-NEXT:       %[[V:.*]] = loop.view %t[%c0] : !loop.ldm<3x37xf32> -> !loop.ldm<37xf32>
// CHECK-NEXT:       %[[T2:.*]] = loop.dma_start %[[V]] -> %x[%{{.*}}, %c0] sizes [1, 37] : !loop.ldm<37xf32> -> memref<130x37xf32>
// CHECK-NEXT:       scf.yield %[[T2]] : !loop.token
// CHECK-NEXT:     } else {
// CHECK-NEXT:       %[[DUMMY:.*]] = loop.dma_start %x[%c0, %c0] sizes [1, 1] -> %dma_scratch_f32 : memref<130x37xf32> -> !loop.ldm<8xf32>
// CHECK-NEXT:       scf.yield %[[DUMMY]] : !loop.token
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.yield %[[R2]] : !loop.token
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[Z:.*]] = arith.cmpi sle, %id, %c0 : index
// CHECK-NEXT:   %{{.*}} = scf.if %[[Z]] -> (!loop.token) {
// CHECK-NEXT:     %[[T3:.*]] = loop.dma_start %s -> %r[%c0, %c0] sizes [4, 5] : !loop.ldm<4x5xf32> -> memref<4x5xf32>
// CHECK-NEXT:     scf.yield %[[T3]] : !loop.token
// CHECK-NEXT:   } else {
// CHECK-NEXT:     %{{.*}} = loop.dma_start %r[%c0, %c0] sizes [1, 1] -> %dma_scratch_f32
// CHECK:        }
//               the clipped columns need one DMA per row (more than the whole piece's one):
//               no token balancing, the branches wait for their own DMAs
// CHECK:        arith.cmpi sle, %{{.*}}, %c48 : index
// CHECK:        loop.dma_start %u -> %y[%{{.*}}, %{{.*}}] sizes [8, 8] : !loop.ldm<8x8xf32> -> memref<60x60xf32>
// CHECK-NEXT:   loop.dma_wait
// CHECK:        loop.dma_start %{{.*}} -> %y[%{{.*}}, %{{.*}}] sizes [1, 4] : !loop.ldm<4xf32> -> memref<60x60xf32>
