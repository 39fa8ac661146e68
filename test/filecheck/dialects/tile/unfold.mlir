// RUN: TAIHU_ROUNDTRIP

// tile.unfold: the B operand (kh*G*kw, 8*Wo) of the implicit convolution built in LDM from kh
// input-row tiles (G channels x 8 output rows x W). 3x3, pads 1: Wo = 28 -> B (3*64*3, 8*28).
func.func @f(%X: memref<1x64x28x28xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x28x28xf32>) {
    %p0 = tile.alloc double : !tile.buf<64x8x28xf32, rc>
    %p1 = tile.alloc double : !tile.buf<64x8x28xf32, rc>
    %p2 = tile.alloc double : !tile.buf<64x8x28xf32, rc>
    %b = tile.alloc : !tile.buf<576x224xf64, rc>
    tile.unfold ins(%p0, %p1, %p2 : !tile.buf<64x8x28xf32, rc>, !tile.buf<64x8x28xf32, rc>, !tile.buf<64x8x28xf32, rc>) out(%b : !tile.buf<576x224xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
  }
  func.return
}
// CHECK: tile.unfold ins(%p0, %p1, %p2 : !tile.buf<64x8x28xf32, rc>, !tile.buf<64x8x28xf32, rc>, !tile.buf<64x8x28xf32, rc>) out(%b : !tile.buf<576x224xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}

// -----

// 1x1 stride 2 (a subsampled row per output row): W = 56 -> Wo = 28.
func.func @f(%X: memref<1x64x56x56xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x56x56xf32>) {
    %p0 = tile.alloc double : !tile.buf<64x8x56xf32, rc>
    %b = tile.alloc : !tile.buf<64x224xf64, rc>
    tile.unfold ins(%p0 : !tile.buf<64x8x56xf32, rc>) out(%b : !tile.buf<64x224xf64, rc>) {kernel = array<i64: 1>, strides = array<i64: 2>}
  }
  func.return
}
// CHECK: tile.unfold ins(%p0 : !tile.buf<64x8x56xf32, rc>) out(%b : !tile.buf<64x224xf64, rc>) {kernel = array<i64: 1>, strides = array<i64: 2>}

