// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// tile.move: operand kinds, element types, ranks, window/tile shapes, pad/clip, static bounds.

func.func @f(%A: memref<64x64xf64>, %B: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>, %b = %B : memref<64x64xf64>) {
    %c0 = arith.constant 0 : index
    "tile.move"(%a, %b, %c0, %c0) <{sizes = array<i64: 64, 64>}> : (memref<64x64xf64>, memref<64x64xf64>, index, index) -> ()
  }
  func.return
}
// CHECK: tile.move: exactly one side must be a memref (main memory) and the other a !tile.buf (LDM)

// -----

func.func @f(%A: memref<64x64xf32>) {
  tile.kernel "k" (%a = %A : memref<64x64xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %c0 = arith.constant 0 : index
    tile.move %a[%c0, %c0] sizes [64, 64] -> %t : memref<64x64xf32> -> !tile.buf<64x64xf64, rc>
  }
  func.return
}
// CHECK: tile.move: element types differ (memref f32, tile f64); convert in LDM with tile.map convert

// -----

func.func @f(%A: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %c0 = arith.constant 0 : index
    tile.move %a[%c0] sizes [64, 64] -> %t : memref<64x64xf64> -> !tile.buf<64x64xf64, rc>
  }
  func.return
}
// CHECK: tile.move: memref rank 2 needs 2 offsets, sizes and strides (got 1, 2, 2)

// -----

func.func @f(%A: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %c0 = arith.constant 0 : index
    tile.move %a[%c0, %c0] sizes [64, 64] strides [1, 0] -> %t : memref<64x64xf64> -> !tile.buf<64x64xf64, rc>
  }
  func.return
}
// CHECK: tile.move: sizes and strides must be >= 1

// -----

func.func @f(%A: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x32xf64, rc>
    %c0 = arith.constant 0 : index
    tile.move %a[%c0, %c0] sizes [32, 64] -> %t : memref<64x64xf64> -> !tile.buf<64x32xf64, rc>
  }
  func.return
}
// CHECK: tile.move: window sizes [32, 64] do not match the tile shape [64, 32] (unit dims aside)

// -----

// A rank-reducing window is fine (the unit dim is dropped), so this one verifies.
func.func @f(%A: memref<4x64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<4x64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    tile.move %a[%c3, %c0, %c0] sizes [1, 64, 64] -> %t : memref<4x64x64xf64> -> !tile.buf<64x64xf64, rc>
  }
  func.return
}
// CHECK: tile.move %a[%c3, %c0, %c0] sizes [1, 64, 64] -> %t : memref<4x64x64xf64> -> !tile.buf<64x64xf64, rc>

// -----

func.func @f(%A: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %c0 = arith.constant 0 : index
    tile.move %t -> %a[%c0, %c0] sizes [64, 64] pad 0.0 : !tile.buf<64x64xf64, rc> -> memref<64x64xf64>
  }
  func.return
}
// CHECK: tile.move: pad is only valid for loads (memref -> tile); use clip for stores

// -----

func.func @f(%A: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %c0 = arith.constant 0 : index
    tile.move %a[%c0, %c0] sizes [64, 64] clip -> %t : memref<64x64xf64> -> !tile.buf<64x64xf64, rc>
  }
  func.return
}
// CHECK: tile.move: clip is only valid for stores (tile -> memref); use pad for loads

// -----

// The last iteration of %i (i = 96) reads rows 96..159 of a 100-row matrix.
func.func @f(%A: memref<100x64xf64>) {
  tile.kernel "k" (%a = %A : memref<100x64xf64>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %c0 = arith.constant 0 : index
    tile.for %i = 0 to 100 step 32 {
      tile.move %a[%i, %c0] sizes [64, 64] -> %t : memref<100x64xf64> -> !tile.buf<64x64xf64, rc>
    }
  }
  func.return
}
// CHECK: tile.move: window of dim 0 spans [0, 159] outside [0, 100) of memref<100x64xf64>; use 'pad' for boundary tiles

// -----

// Offsets built with arith are bounded too; a negative start (conv padding) needs pad on loads ...
func.func @f(%A: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<8x64xf64, cpe>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    tile.for %i = 0 to 64 step 8 {
      %r = arith.subi %i, %c1 : index
      tile.move %a[%r, %c0] sizes [8, 64] -> %t : memref<64x64xf64> -> !tile.buf<8x64xf64, cpe>
    }
  }
  func.return
}
// CHECK: tile.move: window of dim 0 spans [-1, 62] outside [0, 64) of memref<64x64xf64>; use 'pad' for boundary tiles

// -----

// ... and clip on stores; strides count: 32 + 15*2 = 62 is fine, 34 + 15*2 = 64 is not.
func.func @f(%A: memref<64x64xf64>) {
  tile.kernel "k" (%a = %A : memref<64x64xf64>) {
    %t = tile.alloc : !tile.buf<64x16xf64, rc>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %o = arith.addi %c32, %c2 : index
    tile.move %t -> %a[%c0, %c32] sizes [64, 16] strides [1, 2] : !tile.buf<64x16xf64, rc> -> memref<64x64xf64>
    tile.move %t -> %a[%c0, %o] sizes [64, 16] strides [1, 2] : !tile.buf<64x16xf64, rc> -> memref<64x64xf64>
  }
  func.return
}
// CHECK: tile.move: window of dim 1 spans [34, 64] outside [0, 64) of memref<64x64xf64>; use 'clip' for boundary tiles

// -----

func.func @f(%A: memref<64x64xf64>) {
  %t = "test.op"() : () -> !tile.buf<64x64xf64, rc>
  %c0 = arith.constant 0 : index
  tile.move %A[%c0, %c0] sizes [64, 64] -> %t : memref<64x64xf64> -> !tile.buf<64x64xf64, rc>
  func.return
}
// CHECK: 'tile.move' must be inside a tile.kernel
