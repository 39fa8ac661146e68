// RUN: %taihu-opt %s -p convert-tile-to-loop | filecheck %s

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
