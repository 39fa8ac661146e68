// RUN: %taihu-opt %s --split-input-file -p 'tile-vectorize{dim=m}' | filecheck %s
// RUN: %taihu-opt %s --split-input-file -p 'tile-vectorize{dim=m},tile-vectorize{dim=n buffer=c}' | filecheck %s --check-prefix=BACK

// tile-vectorize (004 L1466, DSL vectorization("op1", VecM), L1443): the GEMM's scheme moves to
// its partner with the same travel directions (4 -> 2, Table 4.1 L769-775) and the buffers the
// new vector loads read contiguously (A for M, and C) are re-laid col for every op using them;
// the converts that fill/empty them re-layout on the way (tile-to-loop: a transpose).

// CHECK-LABEL: func.func @mesh
// CHECK:         %a_s = tile.alloc double : !tile.buf<256x256xf32, rc>
// CHECK-NEXT:    %a_2 = tile.alloc : !tile.buf<256x256xf64, rc, col>
// CHECK-NEXT:    %b_s = tile.alloc double : !tile.buf<256x256xf32, rc>
// CHECK-NEXT:    %b_2 = tile.alloc : !tile.buf<256x256xf64, rc>
// CHECK-NEXT:    %c_s = tile.alloc double : !tile.buf<256x256xf32, rc>
// CHECK-NEXT:    %c = tile.alloc : !tile.buf<256x256xf64, rc, col>
// CHECK:         tile.map fill out(%c : !tile.buf<256x256xf64, rc, col>)
// CHECK:         tile.map convert ins(%a_s : !tile.buf<256x256xf32, rc>) out(%a_2 : !tile.buf<256x256xf64, rc, col>)
// CHECK:         tile.gemm %a_2, %b_2 -> %c m 256 n 256 k 256 scheme 2 vec m : !tile.buf<256x256xf64, rc, col>, !tile.buf<256x256xf64, rc>, !tile.buf<256x256xf64, rc, col>
// CHECK:         tile.map convert ins(%c : !tile.buf<256x256xf64, rc, col>) out(%c_s : !tile.buf<256x256xf32, rc>)
// And back to N (the GEMM named by its C buffer): scheme 4, C row again; A may stay col.
// BACK-LABEL: func.func @mesh
// BACK:         tile.gemm %a_2, %b_2 -> %c m 256 n 256 k 256 scheme 4 vec n : !tile.buf<256x256xf64, rc, col>, !tile.buf<256x256xf64, rc>, !tile.buf<256x256xf64, rc>
func.func @mesh(%a: memref<256x512xf32>, %b: memref<512x256xf32>, %y: memref<256x256xf32>) {
  tile.kernel "y" (%a_1 = %a : memref<256x512xf32>, %b_1 = %b : memref<512x256xf32>, %y_1 = %y : memref<256x256xf32>) {
    %a_s = tile.alloc double : !tile.buf<256x256xf32, rc>
    %a_2 = tile.alloc : !tile.buf<256x256xf64, rc>
    %b_s = tile.alloc double : !tile.buf<256x256xf32, rc>
    %b_2 = tile.alloc : !tile.buf<256x256xf64, rc>
    %c_s = tile.alloc double : !tile.buf<256x256xf32, rc>
    %c = tile.alloc : !tile.buf<256x256xf64, rc>
    %c0 = arith.constant 0 : index
    tile.map fill out(%c : !tile.buf<256x256xf64, rc>) {value = 0.000000e+00 : f64}
    tile.for %cK = 0 to 512 step 256 name "cK" {
      tile.move %a_1[%c0, %cK] sizes [256, 256] -> %a_s : memref<256x512xf32> -> !tile.buf<256x256xf32, rc>
      tile.map convert ins(%a_s : !tile.buf<256x256xf32, rc>) out(%a_2 : !tile.buf<256x256xf64, rc>)
      tile.move %b_1[%cK, %c0] sizes [256, 256] -> %b_s : memref<512x256xf32> -> !tile.buf<256x256xf32, rc>
      tile.map convert ins(%b_s : !tile.buf<256x256xf32, rc>) out(%b_2 : !tile.buf<256x256xf64, rc>)
      tile.gemm %a_2, %b_2 -> %c m 256 n 256 k 256 scheme 4 vec n : !tile.buf<256x256xf64, rc>, !tile.buf<256x256xf64, rc>, !tile.buf<256x256xf64, rc>
    }
    tile.map convert ins(%c : !tile.buf<256x256xf64, rc>) out(%c_s : !tile.buf<256x256xf32, rc>)
    tile.move %c_s -> %y_1[%c0, %c0] sizes [256, 256] : !tile.buf<256x256xf32, rc> -> memref<256x256xf32>
  }
  func.return
}

// -----

// Overlapping distribution (004 L708; A, C cpe, B rep): 4 rows of M per CPE, a multiple of the
// 4 vector lanes, so M can be vectorised: A and C col.
// CHECK-LABEL: func.func @overlapping
// CHECK:         tile.gemm %a, %b -> %c m 256 n 128 k 32 scheme 2 vec m : !tile.buf<256x32xf64, cpe, col>, !tile.buf<32x128xf64, rep>, !tile.buf<256x128xf64, cpe, col>
// BACK-LABEL: func.func @overlapping
// BACK:         tile.gemm %a, %b -> %c m 256 n 128 k 32 scheme 4 vec n : !tile.buf<256x32xf64, cpe, col>, !tile.buf<32x128xf64, rep>, !tile.buf<256x128xf64, cpe>
func.func @overlapping(%x: memref<256x32xf64>, %w: memref<32x128xf64>, %y: memref<256x128xf64>) {
  tile.kernel "k" (%xa = %x : memref<256x32xf64>, %wa = %w : memref<32x128xf64>, %ya = %y : memref<256x128xf64>) {
    %a = tile.alloc : !tile.buf<256x32xf64, cpe>
    %b = tile.alloc : !tile.buf<32x128xf64, rep>
    %c = tile.alloc : !tile.buf<256x128xf64, cpe>
    %c0 = arith.constant 0 : index
    tile.move %xa[%c0, %c0] sizes [256, 32] -> %a : memref<256x32xf64> -> !tile.buf<256x32xf64, cpe>
    tile.move %wa[%c0, %c0] sizes [32, 128] -> %b : memref<32x128xf64> -> !tile.buf<32x128xf64, rep>
    tile.map fill out(%c : !tile.buf<256x128xf64, cpe>) {value = 0.0 : f64}
    tile.gemm %a, %b -> %c m 256 n 128 k 32 scheme 4 vec n : !tile.buf<256x32xf64, cpe>, !tile.buf<32x128xf64, rep>, !tile.buf<256x128xf64, cpe>
    tile.move %c -> %ya[%c0, %c0] sizes [256, 128] : !tile.buf<256x128xf64, cpe> -> memref<256x128xf64>
  }
  func.return
}
