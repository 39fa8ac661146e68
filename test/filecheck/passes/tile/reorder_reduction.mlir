// RUN: %taihu-opt %s -p 'tile-reorder{loops=cKc,cKr kernel=conv}' | filecheck %s

// tile-reorder (004 L1482, DSL reorder({cRo, cCo_out, cKr, cKc, cCo_in}), L1440) of a reduction.

// The kernel rows/columns of an implicit convolution (convert-graph-to-tile output, 004 Alg. 3):
// both loops only accumulate into the LDM-resident outputs %y0/%y1 (tile.gemm) and refill the
// private operand tiles, so any order gives the same sum (up to the reassociation of the fp64
// additions); the index arithmetic between and inside the loops follows the body.
// CHECK-LABEL: func.func @implicit
// CHECK:         tile.for %cRo = 0 to 14 step 2 name "cRo" {
// CHECK-NEXT:      tile.map fill out(%y0
// CHECK-NEXT:      tile.map fill out(%y1
// CHECK-NEXT:      tile.for %cKc = 0 to 3 step 1 name "cKc" {
// CHECK-NEXT:        tile.for %cKr = 0 to 3 step 1 name "cKr" {
// CHECK-NEXT:          %r = arith.addi %cRo, %cKr : index
// CHECK-NEXT:          tile.move %w_1[%c0, %cKr, %cKc, %c0] sizes [128, 1, 1, 64] pad 0.0 -> %w_s
// CHECK:               tile.gemm %w_t, %x_t -> %y0 m 128 n 32 k 64 scheme 2 vec m
// CHECK:               tile.gemm %w_t, %x_t -> %y1 m 128 n 32 k 64 scheme 2 vec m
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      tile.map convert ins(%y0
func.func @implicit(%x: memref<1x64x14x14xf32>, %w: memref<64x3x3x64xf32>, %y: memref<1x64x14x14xf32>) {
  tile.kernel "conv" (%x_1 = %x : memref<1x64x14x14xf32>, %w_1 = %w : memref<64x3x3x64xf32>, %y_1 = %y : memref<1x64x14x14xf32>) {
    %w_s = tile.alloc double : !tile.buf<128x64xf32, rc>
    %w_t = tile.alloc : !tile.buf<128x64xf64, rc, col>
    %x_s = tile.alloc double : !tile.buf<64x32xf32, rc>
    %x_t = tile.alloc : !tile.buf<64x32xf64, rc>
    %y0 = tile.alloc : !tile.buf<128x32xf64, rc, col>
    %y1 = tile.alloc : !tile.buf<128x32xf64, rc, col>
    %y_s = tile.alloc double : !tile.buf<128x32xf32, rc>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    tile.for %cRo = 0 to 14 step 2 name "cRo" {
      tile.map fill out(%y0 : !tile.buf<128x32xf64, rc, col>) {value = 0.000000e+00 : f64}
      tile.map fill out(%y1 : !tile.buf<128x32xf64, rc, col>) {value = 0.000000e+00 : f64}
      tile.for %cKr = 0 to 3 step 1 name "cKr" {
        %r = arith.addi %cRo, %cKr : index
        tile.for %cKc = 0 to 3 step 1 name "cKc" {
          tile.move %w_1[%c0, %cKr, %cKc, %c0] sizes [128, 1, 1, 64] pad 0.0 -> %w_s : memref<64x3x3x64xf32> -> !tile.buf<128x64xf32, rc>
          tile.map convert ins(%w_s : !tile.buf<128x64xf32, rc>) out(%w_t : !tile.buf<128x64xf64, rc, col>)
          %col = arith.subi %cKc, %c1 : index
          %row = arith.subi %r, %c1 : index
          tile.move %x_1[%c0, %c0, %row, %col] sizes [1, 64, 1, 32] pad 0.0 -> %x_s : memref<1x64x14x14xf32> -> !tile.buf<64x32xf32, rc>
          tile.map convert ins(%x_s : !tile.buf<64x32xf32, rc>) out(%x_t : !tile.buf<64x32xf64, rc>)
          tile.gemm %w_t, %x_t -> %y0 m 128 n 32 k 64 scheme 2 vec m : !tile.buf<128x64xf64, rc, col>, !tile.buf<64x32xf64, rc>, !tile.buf<128x32xf64, rc, col>
          tile.move %x_1[%c0, %c0, %r, %col] sizes [1, 64, 1, 32] pad 0.0 -> %x_s : memref<1x64x14x14xf32> -> !tile.buf<64x32xf32, rc>
          tile.map convert ins(%x_s : !tile.buf<64x32xf32, rc>) out(%x_t : !tile.buf<64x32xf64, rc>)
          tile.gemm %w_t, %x_t -> %y1 m 128 n 32 k 64 scheme 2 vec m : !tile.buf<128x64xf64, rc, col>, !tile.buf<64x32xf64, rc>, !tile.buf<128x32xf64, rc, col>
        }
      }
      tile.map convert ins(%y0 : !tile.buf<128x32xf64, rc, col>) out(%y_s : !tile.buf<128x32xf32, rc>)
      tile.move %y_s -> %y_1[%c0, %c0, %cRo, %c0] sizes [1, 128, 1, 32] clip : !tile.buf<128x32xf32, rc> -> memref<1x64x14x14xf32>
      tile.map convert ins(%y1 : !tile.buf<128x32xf64, rc, col>) out(%y_s : !tile.buf<128x32xf32, rc>)
      %next = arith.addi %cRo, %c1 : index
      tile.move %y_s -> %y_1[%c0, %c0, %next, %c0] sizes [1, 128, 1, 32] clip : !tile.buf<128x32xf32, rc> -> memref<1x64x14x14xf32>
    }
  }
  func.return
}
