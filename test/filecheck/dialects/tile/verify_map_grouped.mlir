// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// tile.map grouped (dialects/mapkind.py): x (P, cg, H, W), w (P, mg, cg, kh*kw), optional b
// (P, mg, 1, 1) -> y (P, mg, Ho, Wo); the window must not cover the split dim.

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<8x4x10x10xf32, cpe>
    %w = tile.alloc : !tile.buf<8x2x4x9xf32, cpe>
    %b = tile.alloc : !tile.buf<8x2x1x1xf32, cpe>
    %u = tile.alloc : !tile.buf<8x2x10x10xf32, cpe>
    tile.map grouped ins(%t, %w, %b : !tile.buf<8x4x10x10xf32, cpe>, !tile.buf<8x2x4x9xf32, cpe>, !tile.buf<8x2x1x1xf32, cpe>) out(%u : !tile.buf<8x2x10x10xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
  }
  func.return
}
// CHECK: tile.map grouped ins(%t, %w, %b : !tile.buf<8x4x10x10xf32, cpe>, !tile.buf<8x2x4x9xf32, cpe>, !tile.buf<8x2x1x1xf32, cpe>) out(%u : !tile.buf<8x2x10x10xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<8x4x10x10xf32, cpe>
    %w = tile.alloc : !tile.buf<8x2x36xf32, cpe>
    %u = tile.alloc : !tile.buf<8x2x10x10xf32, cpe>
    tile.map grouped ins(%t, %w : !tile.buf<8x4x10x10xf32, cpe>, !tile.buf<8x2x36xf32, cpe>) out(%u : !tile.buf<8x2x10x10xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
  }
  func.return
}
// CHECK: tile.map grouped: weights shape [8, 2, 36] != (P, mg, cg, kh*kw) = [8, 2, 4, 9]

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<8x4x10x10xf32, cpe>
    %w = tile.alloc : !tile.buf<8x2x4x9xf32, cpe>
    %u = tile.alloc : !tile.buf<8x2x8x8xf32, cpe>
    tile.map grouped ins(%t, %w : !tile.buf<8x4x10x10xf32, cpe>, !tile.buf<8x2x4x9xf32, cpe>) out(%u : !tile.buf<8x2x8x8xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
  }
  func.return
}
// CHECK: tile.map grouped: output shape [32, 8, 8] != the convolution's [32, 10, 10] of [32, 10, 10]

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<8x4x10x10xf32, cpe>
    %w = tile.alloc : !tile.buf<8x2x4x9xf32, cpe>
    %b = tile.alloc : !tile.buf<8x2x1xf32, cpe>
    %u = tile.alloc : !tile.buf<8x2x10x10xf32, cpe>
    tile.map grouped ins(%t, %w, %b : !tile.buf<8x4x10x10xf32, cpe>, !tile.buf<8x2x4x9xf32, cpe>, !tile.buf<8x2x1xf32, cpe>) out(%u : !tile.buf<8x2x10x10xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
  }
  func.return
}
// CHECK: tile.map grouped: bias shape [8, 2, 1] != (P, mg, 1, 1) = [8, 2, 1, 1]

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<8x4x10x10xf32, cpe>
    %w = tile.alloc : !tile.buf<8x2x4x9xf32, cpe>
    %u = tile.alloc : !tile.buf<8x2x10x10xf32, cpe>
    tile.map grouped ins(%t, %w : !tile.buf<8x4x10x10xf32, cpe>, !tile.buf<8x2x4x9xf32, cpe>) out(%u : !tile.buf<8x2x10x10xf32, cpe>) {kernel = array<i64: 3, 3>}
  }
  func.return
}
// CHECK: tile.map grouped: kind grouped needs parameter 'strides'

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<4x8x10x10xf32, cpe2>
    %w = tile.alloc : !tile.buf<4x2x8x9xf32, cpe2>
    %u = tile.alloc : !tile.buf<4x2x10x10xf32, cpe2>
    tile.map grouped ins(%t, %w : !tile.buf<4x8x10x10xf32, cpe2>, !tile.buf<4x2x8x9xf32, cpe2>) out(%u : !tile.buf<4x2x10x10xf32, cpe2>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
  }
  func.return
}
// CHECK: tile.map grouped: the window must not cover dim 2, which is split over the CPEs (cpe2)
