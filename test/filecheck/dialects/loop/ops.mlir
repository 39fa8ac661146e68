// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// Round trip of every loop op and type: the per-CPE view of a 256^3 DGEMM blocked as
// (B_M, B_N, B_K) = (256, 256, 64), K innermost, A/B double-buffered (004 Alg 8), SUMMA steps.

builtin.module {
  func.func @mm(%A: memref<256x256xf64>, %B: memref<256x256xf64>, %C: memref<256x256xf64>) {
    loop.spmd "mm" ids(%row, %col) (%a = %A : memref<256x256xf64>, %b = %B : memref<256x256xf64>, %c = %C : memref<256x256xf64>) {
      %bufA = loop.ldm_buffer "A" : !loop.ldm<8x32xf64, double>
      %bufB = loop.ldm_buffer "B" : !loop.ldm<32x8xf64, double>
      %bufC = loop.ldm_buffer "C" : !loop.ldm<32x32xf64>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %c256 = arith.constant 256 : index
      %m0 = arith.muli %col, %c32 : index
      %n0 = arith.muli %row, %c32 : index
      %k0 = arith.muli %row, %c8 : index
      loop.map fill out(%bufC : !loop.ldm<32x32xf64>) {value = 0.000000e+00 : f64}
      %a0 = loop.slot %bufA[%c0] : !loop.ldm<8x32xf64, double>
      %t0 = loop.dma_start %a[%k0, %m0] sizes [8, 32] -> %a0 : memref<256x256xf64> -> !loop.ldm<8x32xf64>
      %last = scf.for %k = %c0 to %c256 step %c64 iter_args(%tok = %t0) -> (!loop.token) {
        loop.dma_wait %tok
        %cur = loop.slot %bufA[%k] : !loop.ldm<8x32xf64, double>
        %curB = loop.slot %bufB[%k] : !loop.ldm<32x8xf64, double>
        %kn = arith.addi %k, %c64 : index
        %nxt = loop.slot %bufA[%kn] : !loop.ldm<8x32xf64, double>
        %kr = arith.addi %kn, %k0 : index
        %next = loop.dma_start %a[%kr, %m0] sizes [8, 32] -> %nxt : memref<256x256xf64> -> !loop.ldm<8x32xf64>
        scf.for %T = %c0 to %c8 step %c1 {
          loop.summa_step %T, %cur, %curB -> %bufC scheme 1 trans_a trans_b trans_c : !loop.ldm<8x32xf64>, !loop.ldm<32x8xf64>, !loop.ldm<32x32xf64>
        }
        scf.yield %next : !loop.token
      }
      loop.dma_wait %last
      %tp = loop.dma_start %bufC -> %c[%n0, %m0] sizes [32, 32] : !loop.ldm<32x32xf64> -> memref<256x256xf64>
      loop.dma_wait %tp, %last
      loop.barrier array
    }
    func.return
  }

// CHECK:      loop.spmd "mm" ids(%row, %col) (%a = %A : memref<256x256xf64>, %b = %B : memref<256x256xf64>, %c = %C : memref<256x256xf64>) {
// CHECK-NEXT:   %bufA = loop.ldm_buffer "A" : !loop.ldm<8x32xf64, double>
// CHECK-NEXT:   %bufB = loop.ldm_buffer "B" : !loop.ldm<32x8xf64, double>
// CHECK-NEXT:   %bufC = loop.ldm_buffer "C" : !loop.ldm<32x32xf64>
// CHECK:        loop.map fill out(%bufC : !loop.ldm<32x32xf64>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:   %a0 = loop.slot %bufA[%c0] : !loop.ldm<8x32xf64, double>
// CHECK-NEXT:   %t0 = loop.dma_start %a[%k0, %m0] sizes [8, 32] -> %a0 : memref<256x256xf64> -> !loop.ldm<8x32xf64>
// CHECK-NEXT:   %last = scf.for %k = %c0 to %c256 step %c64 iter_args(%tok = %t0) -> (!loop.token) {
// CHECK-NEXT:     loop.dma_wait %tok
// CHECK:          loop.summa_step %T, %cur, %curB -> %bufC scheme 1 trans_a trans_b trans_c : !loop.ldm<8x32xf64>, !loop.ldm<32x8xf64>, !loop.ldm<32x32xf64>
// CHECK:        loop.dma_wait %last
// CHECK-NEXT:   %tp = loop.dma_start %bufC -> %c[%n0, %m0] sizes [32, 32] : !loop.ldm<32x32xf64> -> memref<256x256xf64>
// CHECK-NEXT:   loop.dma_wait %tp, %last
// CHECK-NEXT:   loop.barrier array

  // Broadcast DMA, RLC broadcast, block GEMM (f32), maps on local buffers, barriers.
  func.func @misc(%X: memref<64x128xf32>, %W: memref<128xf32>) {
    loop.spmd "misc" ids(%r, %cc) (%x = %X : memref<64x128xf32>, %w = %W : memref<128xf32>) {
      %in = loop.ldm_buffer "in" : !loop.ldm<1x128xf32>
      %bias = loop.ldm_buffer "bias" : !loop.ldm<128xf32>
      %out = loop.ldm_buffer "out" : !loop.ldm<1x128xf32>
      %ga = loop.ldm_buffer "ga" : !loop.ldm<8x16xf32>
      %gb = loop.ldm_buffer "gb" : !loop.ldm<8x4xf32>
      %gc = loop.ldm_buffer "gc" : !loop.ldm<4x16xf32>
      %ha = loop.ldm_buffer "ha" : !loop.ldm<4x8xf32>
      %hb = loop.ldm_buffer "hb" : !loop.ldm<8x16xf32>
      %hc = loop.ldm_buffer "hc" : !loop.ldm<4x16xf32>
      %d = loop.ldm_buffer "d" : !loop.ldm<8x16xf64>
      %e = loop.ldm_buffer "e" : !loop.ldm<8x16xf64>
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %id = arith.muli %r, %c8 : index
      %row = arith.addi %id, %cc : index
      %t1 = loop.dma_start %w[%c0] sizes [128] mode bcast -> %bias : memref<128xf32> -> !loop.ldm<128xf32>
      %t2 = loop.dma_start %x[%row, %c0] sizes [1, 128] -> %in : memref<64x128xf32> -> !loop.ldm<1x128xf32>
      loop.dma_wait %t1, %t2
      %t4 = loop.dma_start %x[%row, %c0] sizes [4, 32] strides [8, 1] -> %ga : memref<64x128xf32> -> !loop.ldm<8x16xf32>
      loop.dma_wait %t4
      loop.map add ins(%in, %bias : !loop.ldm<1x128xf32>, !loop.ldm<128xf32>) out(%out : !loop.ldm<1x128xf32>)
      loop.map relu ins(%out : !loop.ldm<1x128xf32>) out(%out : !loop.ldm<1x128xf32>)
      loop.gemm_block %ga, %gb -> %gc vec m trans_a trans_c : !loop.ldm<8x16xf32>, !loop.ldm<8x4xf32>, !loop.ldm<4x16xf32>
      loop.gemm_block %ha, %hb -> %hc vec n : !loop.ldm<4x8xf32>, !loop.ldm<8x16xf32>, !loop.ldm<4x16xf32>
      loop.rlc_bcast %d -> %e row root %c0 : !loop.ldm<8x16xf64>, !loop.ldm<8x16xf64>
      loop.rlc_bcast %e -> %d col root %r : !loop.ldm<8x16xf64>, !loop.ldm<8x16xf64>
      %t3 = loop.dma_start %out -> %x[%row, %c0] sizes [1, 128] : !loop.ldm<1x128xf32> -> memref<64x128xf32>
      loop.dma_wait %t3
      loop.barrier row
      loop.barrier col
    }
    func.return
  }
}

// CHECK-LABEL: func.func @misc
// CHECK:      %t1 = loop.dma_start %w[%c0] sizes [128] mode bcast -> %bias : memref<128xf32> -> !loop.ldm<128xf32>
// CHECK:      %t4 = loop.dma_start %x[%row, %c0] sizes [4, 32] strides [8, 1] -> %ga : memref<64x128xf32> -> !loop.ldm<8x16xf32>
// CHECK:      loop.map add ins(%in, %bias : !loop.ldm<1x128xf32>, !loop.ldm<128xf32>) out(%out : !loop.ldm<1x128xf32>)
// CHECK-NEXT: loop.map relu ins(%out : !loop.ldm<1x128xf32>) out(%out : !loop.ldm<1x128xf32>)
// CHECK-NEXT: loop.gemm_block %ga, %gb -> %gc vec m trans_a trans_c : !loop.ldm<8x16xf32>, !loop.ldm<8x4xf32>, !loop.ldm<4x16xf32>
// CHECK-NEXT: loop.gemm_block %ha, %hb -> %hc vec n : !loop.ldm<4x8xf32>, !loop.ldm<8x16xf32>, !loop.ldm<4x16xf32>
// CHECK-NEXT: loop.rlc_bcast %d -> %e row root %c0 : !loop.ldm<8x16xf64>, !loop.ldm<8x16xf64>
// CHECK-NEXT: loop.rlc_bcast %e -> %d col root %r
// CHECK:      loop.barrier row
// CHECK-NEXT: loop.barrier col

// CHECK-GENERIC: "loop.spmd"
// CHECK-GENERIC: "loop.ldm_buffer"() <{name = "A"}> : () -> !loop.ldm<8x32xf64, double>
// CHECK-GENERIC: "loop.slot"
// CHECK-GENERIC: "loop.dma_start"({{.*}}) <{sizes = array<i64: 8, 32>}> : (memref<256x256xf64>, !loop.ldm<8x32xf64>, index, index) -> !loop.token
// CHECK-GENERIC: "loop.summa_step"({{.*}}) <{scheme = 1 : i64, trans_a, trans_b, trans_c}>
