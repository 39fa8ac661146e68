// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p 'tile-vectorize{dim=m}' | filecheck %s
// RUN: not %taihu-opt %s --split-input-file -p 'tile-vectorize{dim=k}' 2>&1 | filecheck %s --check-prefix=DIM
// RUN: not %taihu-opt %s --split-input-file -p 'tile-vectorize{dim=m buffer=a}' 2>&1 | filecheck %s --check-prefix=NOGEMM
// RUN: not %taihu-opt %s --split-input-file -p 'tile-vectorize{dim=m buffer=q}' 2>&1 | filecheck %s --check-prefix=NOBUF

// Refusals of tile-vectorize: the verifiers decide, their rule is the diagnostic.

// DIM: tile-vectorize: options: dim must be m or n, got 'k'
// NOGEMM: tile-vectorize: buffer %a in tile.kernel "k": no tile.gemm accumulates into this buffer
// NOBUF: tile-vectorize: module: no tile.alloc named %q (buffers: %a, %b, %c)

// M = 64 is not a multiple of 128 (16 per CPE x 8, 004 L885): M cannot be vectorised.
// CHECK: tile-vectorize: tile.kernel "k": the result is not a legal tile program: tile.gemm scheme 2: vectorised dim M = 64 must be a multiple of 128 (16 per CPE x 8, 004 L885)
func.func @small_m(%y: memref<64x128xf64>) {
  tile.kernel "k" (%ya = %y : memref<64x128xf64>) {
    %a = tile.alloc : !tile.buf<64x8xf64, rc>
    %b = tile.alloc : !tile.buf<8x128xf64, rc>
    %c = tile.alloc : !tile.buf<64x128xf64, rc>
    %c0 = arith.constant 0 : index
    tile.map fill out(%a : !tile.buf<64x8xf64, rc>) {value = 1.0 : f64}
    tile.map fill out(%b : !tile.buf<8x128xf64, rc>) {value = 1.0 : f64}
    tile.map fill out(%c : !tile.buf<64x128xf64, rc>) {value = 0.0 : f64}
    tile.gemm %a, %b -> %c m 64 n 128 k 8 scheme 4 vec n : !tile.buf<64x8xf64, rc>, !tile.buf<8x128xf64, rc>, !tile.buf<64x128xf64, rc>
    tile.move %c -> %ya[%c0, %c0] sizes [64, 128] : !tile.buf<64x128xf64, rc> -> memref<64x128xf64>
  }
  func.return
}

// -----

// Overlapping distribution: 2 rows of M per CPE, fewer than the 4 vector lanes.
// CHECK: tile-vectorize: tile.kernel "k": the result is not a legal tile program: tile.gemm scheme 2 (overlapping distribution): the per-CPE extent of the vectorised dim M is 2, not a multiple of 4 (vector lanes)
func.func @lanes(%y: memref<128x128xf64>) {
  tile.kernel "k" (%ya = %y : memref<128x128xf64>) {
    %a = tile.alloc : !tile.buf<128x32xf64, cpe>
    %b = tile.alloc : !tile.buf<32x128xf64, rep>
    %c = tile.alloc : !tile.buf<128x128xf64, cpe>
    %c0 = arith.constant 0 : index
    tile.map fill out(%a : !tile.buf<128x32xf64, cpe>) {value = 1.0 : f64}
    tile.map fill out(%b : !tile.buf<32x128xf64, rep>) {value = 1.0 : f64}
    tile.map fill out(%c : !tile.buf<128x128xf64, cpe>) {value = 0.0 : f64}
    tile.gemm %a, %b -> %c m 128 n 128 k 32 scheme 4 vec n : !tile.buf<128x32xf64, cpe>, !tile.buf<32x128xf64, rep>, !tile.buf<128x128xf64, cpe>
    tile.move %c -> %ya[%c0, %c0] sizes [128, 128] : !tile.buf<128x128xf64, cpe> -> memref<128x128xf64>
  }
  func.return
}

// -----

// C is re-laid col, but an element-wise map adds a row tile to it: the map's rule refuses.
// CHECK: tile-vectorize: tile.kernel "k": the result is not a legal tile program: tile.map add: input %r has layout row, the output col (only copy/convert re-layout)
func.func @mixed(%y: memref<128x128xf64>) {
  tile.kernel "k" (%ya = %y : memref<128x128xf64>) {
    %a = tile.alloc : !tile.buf<128x8xf64, rc>
    %b = tile.alloc : !tile.buf<8x128xf64, rc>
    %c = tile.alloc : !tile.buf<128x128xf64, rc>
    %r = tile.alloc : !tile.buf<128x128xf64, rc>
    %c0 = arith.constant 0 : index
    tile.map fill out(%a : !tile.buf<128x8xf64, rc>) {value = 1.0 : f64}
    tile.map fill out(%b : !tile.buf<8x128xf64, rc>) {value = 1.0 : f64}
    tile.map fill out(%c : !tile.buf<128x128xf64, rc>) {value = 0.0 : f64}
    tile.map fill out(%r : !tile.buf<128x128xf64, rc>) {value = 2.0 : f64}
    tile.gemm %a, %b -> %c m 128 n 128 k 8 scheme 4 vec n : !tile.buf<128x8xf64, rc>, !tile.buf<8x128xf64, rc>, !tile.buf<128x128xf64, rc>
    tile.map add ins(%c, %r : !tile.buf<128x128xf64, rc>, !tile.buf<128x128xf64, rc>) out(%c : !tile.buf<128x128xf64, rc>)
    tile.move %c -> %ya[%c0, %c0] sizes [128, 128] : !tile.buf<128x128xf64, rc> -> memref<128x128xf64>
  }
  func.return
}

// -----

// CHECK: tile-vectorize: module: no tile.gemm to vectorise
func.func @none(%y: memref<256xf32>) {
  tile.kernel "k" (%ya = %y : memref<256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.map fill out(%t : !tile.buf<256xf32, cpe>) {value = 0.0 : f64}
    tile.move %t -> %ya[%c0] sizes [256] : !tile.buf<256xf32, cpe> -> memref<256xf32>
  }
  func.return
}
