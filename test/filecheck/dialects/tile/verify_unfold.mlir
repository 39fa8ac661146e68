// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// tile.unfold verifier rules (one per case).

func.func @f(%X: memref<1x64x28x28xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x28x28xf32>) {
    %p0 = tile.alloc double : !tile.buf<64x8x28xf32, rc>
    %b = tile.alloc : !tile.buf<192x232xf64, rc>
    tile.unfold ins(%p0 : !tile.buf<64x8x28xf32, rc>) out(%b : !tile.buf<192x232xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
  }
  func.return
}
// CHECK: tile.unfold: output shape [192, 232] != (kh*G*kw, 8*Wo) = [192, 224] for kh = 1, G = 64, kw = 3, Wo = 28

// -----

func.func @f(%X: memref<1x64x28x28xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x28x28xf32>) {
    %p0 = tile.alloc double : !tile.buf<64x16x28xf32, rc>
    %b = tile.alloc : !tile.buf<192x448xf64, rc>
    tile.unfold ins(%p0 : !tile.buf<64x16x28xf32, rc>) out(%b : !tile.buf<192x448xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
  }
  func.return
}
// CHECK: tile.unfold: input row tiles must be rank-3 rc (G, 8, W) (G channels, one output row per mesh column), got !tile.buf<64x16x28xf32, rc>

// -----

func.func @f(%X: memref<1x64x28x28xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x28x28xf32>) {
    %p0 = tile.alloc double : !tile.buf<64x8x28xf32, rc>
    %p1 = tile.alloc double : !tile.buf<64x8x28xf64, rc>
    %b = tile.alloc : !tile.buf<384x224xf64, rc>
    tile.unfold ins(%p0, %p1 : !tile.buf<64x8x28xf32, rc>, !tile.buf<64x8x28xf64, rc>) out(%b : !tile.buf<384x224xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
  }
  func.return
}
// CHECK: tile.unfold: all input row tiles must have one type, got !tile.buf<64x8x28xf32, rc> and !tile.buf<64x8x28xf64, rc>

// -----

func.func @f(%X: memref<1x64x28x28xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x28x28xf32>) {
    %p0 = tile.alloc double : !tile.buf<64x8x28xf32, rc>
    %b = tile.alloc : !tile.buf<192x224xf64, rc, col>
    tile.unfold ins(%p0 : !tile.buf<64x8x28xf32, rc>) out(%b : !tile.buf<192x224xf64, rc, col>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
  }
  func.return
}
// CHECK: tile.unfold: the output must be a rank-2 rc tile with layout row, got !tile.buf<192x224xf64, rc, col>

// -----

func.func @f(%X: memref<1x64x28x28xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x28x28xf32>) {
    %p0 = tile.alloc double : !tile.buf<64x8x28xf32, rc>
    %b = tile.alloc : !tile.buf<192x224xf64, rc>
    tile.unfold ins(%p0 : !tile.buf<64x8x28xf32, rc>) out(%b : !tile.buf<192x224xf64, rc>) {kernel = array<i64: 3>, pads = array<i64: 1, 1>}
  }
  func.return
}
// CHECK: tile.unfold: missing parameter 'strides'

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x8x28xf32, rc>
  %b = "test.op"() : () -> !tile.buf<192x224xf64, rc>
  tile.unfold ins(%t : !tile.buf<64x8x28xf32, rc>) out(%b : !tile.buf<192x224xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
  func.return
}
// CHECK: 'tile.unfold' must be inside a tile.kernel
