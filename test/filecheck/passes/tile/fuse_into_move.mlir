// RUN: %taihu-opt %s -p 'tile-fuse{loop=b}' | filecheck %s
// RUN: %taihu-opt %s -p 'tile-fuse{loop=b},tile-fuse{loop=a}' | filecheck %s --check-prefix=BOTH

// tile-fuse{loop=...}: a loop into the primitives of its body (004 L1441 fuse(cCo_out, "op1",
// inM), L1482). Loop b moves consecutive windows along memref dim 1 (unit windows): one move of
// 8 rows instead, the tile gains a dim of 8 in front and its distribution keeps splitting the
// 256 elements (cpe -> cpe1); the element-wise relu grows with it; b's iterator becomes the
// constant 0. Fusing a as well leaves one move of the whole array.

// CHECK:      %t = tile.alloc double : !tile.buf<8x256xf32, cpe1>
// CHECK:      tile.for %a = 0 to 4 step 1 name "a" {
// CHECK-NEXT:   %b = arith.constant 0 : index
// CHECK-NEXT:   tile.move %xa[%a, %b, %c0] sizes [1, 8, 256] -> %t : memref<4x8x256xf32> -> !tile.buf<8x256xf32, cpe1>
// CHECK-NEXT:   tile.map relu ins(%t : !tile.buf<8x256xf32, cpe1>) out(%t : !tile.buf<8x256xf32, cpe1>)
// CHECK-NEXT:   tile.move %t -> %ya[%a, %b, %c0] sizes [1, 8, 256] : !tile.buf<8x256xf32, cpe1> -> memref<4x8x256xf32>
// CHECK-NEXT: }

// BOTH:      %t = tile.alloc double : !tile.buf<4x8x256xf32, cpe2>
// BOTH:      %a = arith.constant 0 : index
// BOTH-NEXT: %b = arith.constant 0 : index
// BOTH-NEXT: tile.move %xa[%a, %b, %c0] sizes [4, 8, 256] -> %t
// BOTH-NEXT: tile.map relu ins(%t : !tile.buf<4x8x256xf32, cpe2>) out(%t : !tile.buf<4x8x256xf32, cpe2>)
// BOTH-NEXT: tile.move %t -> %ya[%a, %b, %c0] sizes [4, 8, 256]
// BOTH-NOT:  tile.for
func.func @relu(%x: memref<4x8x256xf32>, %y: memref<4x8x256xf32>) {
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
