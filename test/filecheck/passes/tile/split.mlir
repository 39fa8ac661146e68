// RUN: %taihu-opt %s --split-input-file -p 'tile-split{loop=i factor=8}' | filecheck %s
// RUN: %taihu-opt %s --split-input-file -p 'tile-split{loop=i factor=8 outer=io inner=ii}' | filecheck %s --check-prefix=NAMES

// tile-split (004 L1482: i = i_out * factor + i_in; 001 eq 4.2). FT-1: split(<0,64,1>, 8) ->
// <0,8,1>, <0,8,1> in the trip-count view: the outer loop steps by 8 (8 iterations), the inner
// one covers 8 steps; the iterator is rebuilt as i = i_o + i_i at the top of the inner body.

// CHECK-LABEL: func.func @ft1
// CHECK:         tile.for %i_o = 0 to 64 step 8 name "i_o" {
// CHECK-NEXT:      tile.for %i_i = 0 to 8 step 1 name "i_i" {
// CHECK-NEXT:        %i = arith.addi %i_o, %i_i : index
// CHECK-NEXT:        tile.move %xa[%i, %c0] sizes [1, 256] -> %t
// CHECK-NEXT:        tile.map relu ins(%t : !tile.buf<256xf32, cpe>) out(%t : !tile.buf<256xf32, cpe>)
// CHECK-NEXT:        tile.move %t -> %ya[%i, %c0] sizes [1, 256]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// NAMES-LABEL: func.func @ft1
// NAMES:         tile.for %io = 0 to 64 step 8 name "io" {
// NAMES-NEXT:      tile.for %ii = 0 to 8 step 1 name "ii" {
// NAMES-NEXT:        %i = arith.addi %io, %ii : index
func.func @ft1(%x: memref<64x256xf32>, %y: memref<64x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<64x256xf32>, %ya = %y : memref<64x256xf32>) {
    %t = tile.alloc double : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %i = 0 to 64 step 1 name "i" {
      tile.move %xa[%i, %c0] sizes [1, 256] -> %t : memref<64x256xf32> -> !tile.buf<256xf32, cpe>
      tile.map relu ins(%t : !tile.buf<256xf32, cpe>) out(%t : !tile.buf<256xf32, cpe>)
      tile.move %t -> %ya[%i, %c0] sizes [1, 256] : !tile.buf<256xf32, cpe> -> memref<64x256xf32>
    }
  }
  func.return
}

// -----

// A loop with a step: 0 to 2000 step 125 = 16 iterations, F = 8: the outer loop steps by
// 1000 (2 iterations), the inner one by 125 up to 1000 (8). The loop's attributes go to the
// outer loop; index arithmetic on the iterator now uses the rebuilt one.

// CHECK-LABEL: func.func @stepped
// CHECK:         tile.for %i_o = 0 to 2000 step 1000 name "i_o" attributes {note = "kept"} {
// CHECK-NEXT:      tile.for %i_i = 0 to 1000 step 125 name "i_i" {
// CHECK-NEXT:        %i = arith.addi %i_o, %i_i : index
// CHECK-NEXT:        %j = arith.addi %i, %c1 : index
// CHECK-NEXT:        tile.move %xa[%j] sizes [125] -> %t
func.func @stepped(%x: memref<2001xf64>) {
  tile.kernel "k" (%xa = %x : memref<2001xf64>) {
    %t = tile.alloc : !tile.buf<125xf64, rep>
    %c1 = arith.constant 1 : index
    tile.for %i = 0 to 2000 step 125 name "i" attributes {note = "kept"} {
      %j = arith.addi %i, %c1 : index
      tile.move %xa[%j] sizes [125] -> %t : memref<2001xf64> -> !tile.buf<125xf64, rep>
    }
  }
  func.return
}
