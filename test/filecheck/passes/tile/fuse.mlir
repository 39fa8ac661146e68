// RUN: %taihu-opt %s --split-input-file -p 'tile-fuse{outer=a inner=b}' | filecheck %s
// RUN: %taihu-opt %s --split-input-file -p 'tile-fuse{outer=a inner=b fused=ab}' | filecheck %s --check-prefix=NAMED

// tile-fuse of two loops (004 L1482; 001 eq 4.3: l <0, f1*f2, 1> = fuse(l1 <0, f1, 1>, l2 <0, f2, 1>)).
// FT-1: fuse(<0,4,1>, <0,8,1>) -> <0,32,1>; the iterators are recovered by div/mod.

// CHECK-LABEL: func.func @ft1
// CHECK:         %c8 = arith.constant 8 : index
// CHECK-NEXT:    tile.for %a_b = 0 to 32 step 1 name "a_b" {
// CHECK-NEXT:      %a = arith.divui %a_b, %c8 : index
// CHECK-NEXT:      %b = arith.remui %a_b, %c8 : index
// CHECK-NEXT:      tile.move %xa[%a, %b, %c0] sizes [1, 1, 256] -> %t
// CHECK-NEXT:      tile.map relu
// CHECK-NEXT:      tile.move %t -> %ya[%a, %b, %c0] sizes [1, 1, 256]
// CHECK-NEXT:    }
// NAMED-LABEL: func.func @ft1
// NAMED:         tile.for %ab = 0 to 32 step 1 name "ab" {
func.func @ft1(%x: memref<4x8x256xf32>, %y: memref<4x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<4x8x256xf32>, %ya = %y : memref<4x8x256xf32>) {
    %t = tile.alloc double : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 4 step 1 name "a" {
      tile.for %b = 0 to 8 step 1 name "b" {
        tile.move %xa[%a, %b, %c0] sizes [1, 1, 256] -> %t : memref<4x8x256xf32> -> !tile.buf<256xf32, cpe>
        tile.map relu ins(%t : !tile.buf<256xf32, cpe>) out(%t : !tile.buf<256xf32, cpe>)
        tile.move %t -> %ya[%a, %b, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<4x8x256xf32>
      }
    }
  }
  func.return
}

// -----

// Steps and lower bounds: a = (q * 8), b = (r * 128) + 128; the index arithmetic between the
// loops (%a1) is sunk into the fused body, after the recovered iterators.
// CHECK-LABEL: func.func @stepped
// CHECK:         %c3 = arith.constant 3 : index
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %c128 = arith.constant 128 : index
// CHECK-NEXT:    tile.for %a_b = 0 to 24 step 1 name "a_b" {
// CHECK-NEXT:      %0 = arith.divui %a_b, %c3 : index
// CHECK-NEXT:      %1 = arith.remui %a_b, %c3 : index
// CHECK-NEXT:      %a = arith.muli %0, %c8 : index
// CHECK-NEXT:      %2 = arith.muli %1, %c128 : index
// CHECK-NEXT:      %b = arith.addi %2, %c128 : index
// CHECK-NEXT:      %a1 = arith.addi %a, %c1 : index
// CHECK-NEXT:      tile.move %xa[%a1, %b] sizes [8, 128] -> %t
func.func @stepped(%x: memref<72x512xf32>) {
  tile.kernel "k" (%xa = %x : memref<72x512xf32>) {
    %t = tile.alloc : !tile.buf<8x128xf32, rc>
    %c1 = arith.constant 1 : index
    tile.for %a = 0 to 64 step 8 name "a" {
      %a1 = arith.addi %a, %c1 : index
      tile.for %b = 128 to 512 step 128 name "b" {
        tile.move %xa[%a1, %b] sizes [8, 128] -> %t : memref<72x512xf32> -> !tile.buf<8x128xf32, rc>
      }
    }
  }
  func.return
}
