// RUN: %taihu-opt %s --split-input-file -p convert-tile-to-loop | filecheck %s

// tile.gemm with the overlapping distribution (004 L708, algorithms.md §A1): B rep (every CPE
// holds all of B), A and C cpe (ceil(M/64) rows per CPE) -> one CPE-local loop.gemm_block, no
// RLC; f32 is legal here (vmas).

func.func @main(%A: memref<256x64xf32> {graph.name = "a"}, %B: memref<64x32xf32> {graph.name = "b"}) -> (memref<256x32xf32> {graph.name = "c"}) {
  %C = memref.alloc() {alignment = 128 : i64} : memref<256x32xf32>
  tile.kernel "ov" (%a = %A : memref<256x64xf32>, %b = %B : memref<64x32xf32>, %c = %C : memref<256x32xf32>) {
    %c0 = arith.constant 0 : index
    %ta = tile.alloc : !tile.buf<256x64xf32, cpe>
    %tb = tile.alloc : !tile.buf<64x32xf32, rep>
    %tc = tile.alloc : !tile.buf<256x32xf32, cpe>
    tile.move %a[%c0, %c0] sizes [256, 64] -> %ta : memref<256x64xf32> -> !tile.buf<256x64xf32, cpe>
    tile.move %b[%c0, %c0] sizes [64, 32] -> %tb : memref<64x32xf32> -> !tile.buf<64x32xf32, rep>
    tile.map fill out(%tc : !tile.buf<256x32xf32, cpe>) {value = 0.0 : f64}
    tile.gemm %ta, %tb -> %tc m 256 n 32 k 64 scheme 3 vec n : !tile.buf<256x64xf32, cpe>, !tile.buf<64x32xf32, rep>, !tile.buf<256x32xf32, cpe>
    tile.move %tc -> %c[%c0, %c0] sizes [256, 32] : !tile.buf<256x32xf32, cpe> -> memref<256x32xf32>
  }
  func.return %C : memref<256x32xf32>
}

// CHECK-LABEL: loop.spmd "ov"
// CHECK-DAG:   %ta = loop.ldm_buffer "ta" : !loop.ldm<4x64xf32>
// CHECK-DAG:   %tb = loop.ldm_buffer "tb" : !loop.ldm<64x32xf32>
// CHECK-DAG:   %tc = loop.ldm_buffer "tc" : !loop.ldm<4x32xf32>
// CHECK:       loop.map fill out(%tc : !loop.ldm<4x32xf32>)
// CHECK:       loop.gemm_block %ta, %tb -> %tc vec n : !loop.ldm<4x64xf32>, !loop.ldm<64x32xf32>, !loop.ldm<4x32xf32>
// CHECK-NOT:   loop.summa_step
// CHECK:       loop.dma_start %tc -> %c

// -----

// Mixed precision, vec m (the pointwise-convolution form): A stored (K, M) and split along M
// (cpe1, trans_a), B rep (49 columns: no padding), both f32 and streamed over K (double
// buffers); C f64 (n, m) in LDM, converted (transposed) into an f32 (m, n) staging tile whose
// per-CPE rows are one contiguous block of the output.

func.func @main(%A: memref<64x256xf32> {graph.name = "a"}, %B: memref<64x49xf32> {graph.name = "b"}) -> (memref<256x49xf32> {graph.name = "c"}) {
  %C = memref.alloc() {alignment = 128 : i64} : memref<256x49xf32>
  tile.kernel "ovm" (%a = %A : memref<64x256xf32>, %b = %B : memref<64x49xf32>, %c = %C : memref<256x49xf32>) {
    %c0 = arith.constant 0 : index
    %ta = tile.alloc double : !tile.buf<32x256xf32, cpe1>
    %tb = tile.alloc double : !tile.buf<32x49xf32, rep>
    %tc = tile.alloc : !tile.buf<256x49xf64, cpe, col>
    %ts = tile.alloc : !tile.buf<256x49xf32, cpe>
    tile.map fill out(%tc : !tile.buf<256x49xf64, cpe, col>) {value = 0.0 : f64}
    tile.for %k = 0 to 64 step 32 name "cK" {
      tile.move %a[%k, %c0] sizes [32, 256] -> %ta : memref<64x256xf32> -> !tile.buf<32x256xf32, cpe1>
      tile.move %b[%k, %c0] sizes [32, 49] -> %tb : memref<64x49xf32> -> !tile.buf<32x49xf32, rep>
      tile.gemm %ta, %tb -> %tc m 256 n 49 k 32 scheme 2 vec m trans_a : !tile.buf<32x256xf32, cpe1>, !tile.buf<32x49xf32, rep>, !tile.buf<256x49xf64, cpe, col>
    }
    tile.map convert ins(%tc : !tile.buf<256x49xf64, cpe, col>) out(%ts : !tile.buf<256x49xf32, cpe>)
    tile.move %ts -> %c[%c0, %c0] sizes [256, 49] : !tile.buf<256x49xf32, cpe> -> memref<256x49xf32>
  }
  func.return %C : memref<256x49xf32>
}

// CHECK-LABEL: loop.spmd "ovm"
// CHECK-DAG:   %ta = loop.ldm_buffer "ta" : !loop.ldm<32x4xf32, double>
// CHECK-DAG:   %tb = loop.ldm_buffer "tb" : !loop.ldm<32x49xf32, double>
// CHECK-DAG:   %tc = loop.ldm_buffer "tc" : !loop.ldm<49x4xf64>
// CHECK:       loop.dma_start %b{{.*}} mode bcast
// CHECK:       loop.gemm_block {{.*}} vec m trans_a trans_c : !loop.ldm<32x4xf32>, !loop.ldm<32x49xf32>, !loop.ldm<49x4xf64>
// CHECK-NOT:   loop.summa_step
// CHECK:       loop.map transpose
