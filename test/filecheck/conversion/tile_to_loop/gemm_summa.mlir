// RUN: %taihu-opt %s --split-input-file -p convert-tile-to-loop | filecheck %s

// tile.gemm (non-overlapping distribution, 004 L713) -> the 8 SUMMA steps of algorithms.md §A2
// per CPE: scf.for %T = 0 to 8 { loop.summa_step %T, A, B -> C scheme S [trans_*] } on the
// CPE's local LDM blocks. Loop-level trans flags: tile trans_x XOR layout col (buffers of col
// tiles are stored with their two dims swapped), C: layout col.

func.func @main(%A: memref<128x64xf64> {graph.name = "a"}, %B: memref<64x32xf64> {graph.name = "b"}) -> (memref<128x32xf64> {graph.name = "c"}) {
  %C = memref.alloc() {alignment = 128 : i64} : memref<128x32xf64>
  tile.kernel "s1" (%a = %A : memref<128x64xf64>, %b = %B : memref<64x32xf64>, %c = %C : memref<128x32xf64>) {
    %c0 = arith.constant 0 : index
    %ta = tile.alloc : !tile.buf<128x64xf64, cr, col>
    %tb = tile.alloc : !tile.buf<64x32xf64, cr>
    %tc = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.move %a[%c0, %c0] sizes [128, 64] -> %ta : memref<128x64xf64> -> !tile.buf<128x64xf64, cr, col>
    tile.move %b[%c0, %c0] sizes [64, 32] -> %tb : memref<64x32xf64> -> !tile.buf<64x32xf64, cr>
    tile.map fill out(%tc : !tile.buf<128x32xf64, cr, col>) {value = 0.0 : f64}
    tile.gemm %ta, %tb -> %tc m 128 n 32 k 64 scheme 1 vec m : !tile.buf<128x64xf64, cr, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
    tile.move %tc -> %c[%c0, %c0] sizes [128, 32] : !tile.buf<128x32xf64, cr, col> -> memref<128x32xf64>
  }
  func.return %C : memref<128x32xf64>
}

// CHECK-LABEL: loop.spmd "s1"
// CHECK-DAG:   %ta = loop.ldm_buffer "ta" : !loop.ldm<8x16xf64>
// CHECK-DAG:   %tb = loop.ldm_buffer "tb" : !loop.ldm<8x4xf64>
// CHECK-DAG:   %tc = loop.ldm_buffer "tc" : !loop.ldm<4x16xf64>
// CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:   %[[C8:.*]] = arith.constant 8 : index
// CHECK:       loop.map fill out(%tc : !loop.ldm<4x16xf64>)
// CHECK-NEXT:  loop.dma_wait
// CHECK-NEXT:  scf.for %T = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-NEXT:    loop.summa_step %T, %ta, %tb -> %tc scheme 1 trans_a trans_c : !loop.ldm<8x16xf64>, !loop.ldm<8x4xf64>, !loop.ldm<4x16xf64>
// CHECK-NEXT:  }
// CHECK:       loop.dma_start %{{.*}} -> %c

// -----

// Scheme 4 (B vector-loaded along N, A travels along rows), both operands transposed in the tile
// program: A (K, M) rc row -> buffer (k, m) = trans_a; B (N, K) rc col -> buffer (k, n).

func.func @main(%A: memref<64x32xf64> {graph.name = "a"}, %B: memref<128x64xf64> {graph.name = "b"}) -> (memref<32x128xf64> {graph.name = "c"}) {
  %C = memref.alloc() {alignment = 128 : i64} : memref<32x128xf64>
  tile.kernel "s4t" (%a = %A : memref<64x32xf64>, %b = %B : memref<128x64xf64>, %c = %C : memref<32x128xf64>) {
    %c0 = arith.constant 0 : index
    %ta = tile.alloc : !tile.buf<64x32xf64, cr>
    %tb = tile.alloc : !tile.buf<128x64xf64, cr, col>
    %tc = tile.alloc : !tile.buf<32x128xf64, rc>
    tile.move %a[%c0, %c0] sizes [64, 32] -> %ta : memref<64x32xf64> -> !tile.buf<64x32xf64, cr>
    tile.move %b[%c0, %c0] sizes [128, 64] -> %tb : memref<128x64xf64> -> !tile.buf<128x64xf64, cr, col>
    tile.map fill out(%tc : !tile.buf<32x128xf64, rc>) {value = 0.0 : f64}
    tile.gemm %ta, %tb -> %tc m 32 n 128 k 64 scheme 4 vec n trans_a trans_b : !tile.buf<64x32xf64, cr>, !tile.buf<128x64xf64, cr, col>, !tile.buf<32x128xf64, rc>
    tile.move %tc -> %c[%c0, %c0] sizes [32, 128] : !tile.buf<32x128xf64, rc> -> memref<32x128xf64>
  }
  func.return %C : memref<32x128xf64>
}

// CHECK-LABEL: loop.spmd "s4t"
// CHECK-DAG:   %ta = loop.ldm_buffer "ta" : !loop.ldm<8x4xf64>
// CHECK-DAG:   %tb = loop.ldm_buffer "tb" : !loop.ldm<8x16xf64>
// CHECK-DAG:   %tc = loop.ldm_buffer "tc" : !loop.ldm<4x16xf64>
// CHECK:       scf.for %T = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:    loop.summa_step %T, %ta, %tb -> %tc scheme 4 trans_a : !loop.ldm<8x4xf64>, !loop.ldm<8x16xf64>, !loop.ldm<4x16xf64>
// CHECK-NEXT:  }

// -----

// Inside a double-buffered K loop: the SUMMA steps take the current slot of A and B.

func.func @main(%A: memref<32x128xf64> {graph.name = "a"}, %B: memref<128x128xf64> {graph.name = "b"}) -> (memref<32x128xf64> {graph.name = "c"}) {
  %C = memref.alloc() {alignment = 128 : i64} : memref<32x128xf64>
  tile.kernel "s3k" (%a = %A : memref<32x128xf64>, %b = %B : memref<128x128xf64>, %c = %C : memref<32x128xf64>) {
    %c0 = arith.constant 0 : index
    %ta = tile.alloc double : !tile.buf<32x64xf64, cr>
    %tb = tile.alloc double : !tile.buf<64x128xf64, cr>
    %tc = tile.alloc : !tile.buf<32x128xf64, cr>
    tile.map fill out(%tc : !tile.buf<32x128xf64, cr>) {value = 0.0 : f64}
    tile.for %k = 0 to 128 step 64 name "cK" {
      tile.move %a[%c0, %k] sizes [32, 64] -> %ta : memref<32x128xf64> -> !tile.buf<32x64xf64, cr>
      tile.move %b[%k, %c0] sizes [64, 128] -> %tb : memref<128x128xf64> -> !tile.buf<64x128xf64, cr>
      tile.gemm %ta, %tb -> %tc m 32 n 128 k 64 scheme 3 vec n : !tile.buf<32x64xf64, cr>, !tile.buf<64x128xf64, cr>, !tile.buf<32x128xf64, cr>
    }
    tile.move %tc -> %c[%c0, %c0] sizes [32, 128] : !tile.buf<32x128xf64, cr> -> memref<32x128xf64>
  }
  func.return %C : memref<32x128xf64>
}

// CHECK-LABEL: loop.spmd "s3k"
// CHECK:       scf.for %k = %{{.*}} iter_args(
// CHECK:         %ta_cur{{.*}} = loop.slot %ta[%slot] : !loop.ldm<4x8xf64, double>
// CHECK:         %tb_cur{{.*}} = loop.slot %tb[%slot] : !loop.ldm<8x16xf64, double>
// CHECK:         scf.for %T = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      loop.summa_step %T, %ta_cur{{.*}}, %tb_cur{{.*}} -> %tc scheme 3 : !loop.ldm<4x8xf64>, !loop.ldm<8x16xf64>, !loop.ldm<4x16xf64>

// -----

// Scheme 2 (A vector-loaded along M, A travels along rows, B along columns), both operands
// transposed: A (K, M) cr row -> buffer (k, m) = trans_a; B (N, K) cr row -> buffer (n, k) =
// trans_b; C rc col -> trans_c.

func.func @main(%A: memref<64x128xf64> {graph.name = "a"}, %B: memref<32x64xf64> {graph.name = "b"}) -> (memref<128x32xf64> {graph.name = "c"}) {
  %C = memref.alloc() {alignment = 128 : i64} : memref<128x32xf64>
  tile.kernel "s2t" (%a = %A : memref<64x128xf64>, %b = %B : memref<32x64xf64>, %c = %C : memref<128x32xf64>) {
    %c0 = arith.constant 0 : index
    %ta = tile.alloc : !tile.buf<64x128xf64, cr>
    %tb = tile.alloc : !tile.buf<32x64xf64, cr>
    %tc = tile.alloc : !tile.buf<128x32xf64, rc, col>
    tile.move %a[%c0, %c0] sizes [64, 128] -> %ta : memref<64x128xf64> -> !tile.buf<64x128xf64, cr>
    tile.move %b[%c0, %c0] sizes [32, 64] -> %tb : memref<32x64xf64> -> !tile.buf<32x64xf64, cr>
    tile.map fill out(%tc : !tile.buf<128x32xf64, rc, col>) {value = 0.0 : f64}
    tile.gemm %ta, %tb -> %tc m 128 n 32 k 64 scheme 2 vec m trans_a trans_b : !tile.buf<64x128xf64, cr>, !tile.buf<32x64xf64, cr>, !tile.buf<128x32xf64, rc, col>
    tile.move %tc -> %c[%c0, %c0] sizes [128, 32] : !tile.buf<128x32xf64, rc, col> -> memref<128x32xf64>
  }
  func.return %C : memref<128x32xf64>
}

// CHECK-LABEL: loop.spmd "s2t"
// CHECK-DAG:   %ta = loop.ldm_buffer "ta" : !loop.ldm<8x16xf64>
// CHECK-DAG:   %tb = loop.ldm_buffer "tb" : !loop.ldm<4x8xf64>
// CHECK-DAG:   %tc = loop.ldm_buffer "tc" : !loop.ldm<4x16xf64>
// CHECK:       scf.for %T = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:    loop.summa_step %T, %ta, %tb -> %tc scheme 2 trans_a trans_b trans_c : !loop.ldm<8x16xf64>, !loop.ldm<4x8xf64>, !loop.ldm<4x16xf64>
// CHECK-NEXT:  }
