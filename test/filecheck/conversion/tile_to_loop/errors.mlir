// RUN: not %taihu-opt %s -p convert-tile-to-loop 2>&1 | filecheck %s

// A boundary (pad) move whose offset cannot be bounded statically: the clip cases cannot be
// enumerated, so the pass stops with a diagnostic naming the op.

func.func @f(%X: memref<64x64xf32>) {
  tile.kernel "unbounded" (%x = %X : memref<64x64xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf32, rc>
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    tile.for %i = 0 to 4 step 1 {
      %o = arith.maxui %i, %c3 : index
      tile.move %x[%o, %c0] sizes [64, 64] pad 0.0 -> %t : memref<64x64xf32> -> !tile.buf<64x64xf32, rc>
    }
  }
  func.return
}
// CHECK: taihu-opt: error: convert-tile-to-loop: tile.move: cannot bound offset #0 of a boundary (pad/clip) move statically
