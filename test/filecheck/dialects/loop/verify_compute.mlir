// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// loop.summa_step / loop.gemm_block / loop.rlc_bcast / loop.map rules.

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<8x32xf32>
    %b = loop.ldm_buffer "b" : !loop.ldm<32x8xf64>
    %cc = loop.ldm_buffer "c" : !loop.ldm<32x32xf64>
    loop.summa_step %r, %a, %b -> %cc scheme 1 trans_a trans_b trans_c : !loop.ldm<8x32xf32>, !loop.ldm<32x8xf64>, !loop.ldm<32x32xf64>
  }
  func.return
}
// CHECK: loop.summa_step: A must be f64 (fused load-and-broadcast is fp64 only, 004 L823), got f32

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<8x32xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<32x8xf64>
    %cc = loop.ldm_buffer "c" : !loop.ldm<32x32xf64>
    loop.summa_step %r, %a, %b -> %cc scheme 0 trans_a trans_b trans_c : !loop.ldm<8x32xf64>, !loop.ldm<32x8xf64>, !loop.ldm<32x32xf64>
  }
  func.return
}
// CHECK: loop.summa_step: scheme must be 1, 2, 3 or 4 (Table 4.1), got 0

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<8x32xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<32x8xf64>
    %cc = loop.ldm_buffer "c" : !loop.ldm<32x32xf64>
    loop.summa_step %r, %a, %b -> %cc scheme 1 trans_a trans_c : !loop.ldm<8x32xf64>, !loop.ldm<32x8xf64>, !loop.ldm<32x32xf64>
  }
  func.return
}
// CHECK: 'loop.summa_step': block shapes disagree: A gives (m, k) = (32, 8), B gives (k, n) = (32, 8), C gives (m, n) = (32, 32)

// -----

// Register tile 16 x 4 (004 L777): local M = 8 cannot be vectorised.
func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<8x8xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<32x8xf64>
    %cc = loop.ldm_buffer "c" : !loop.ldm<32x8xf64>
    loop.summa_step %r, %a, %b -> %cc scheme 1 trans_a trans_b trans_c : !loop.ldm<8x8xf64>, !loop.ldm<32x8xf64>, !loop.ldm<32x8xf64>
  }
  func.return
}
// CHECK: loop.summa_step scheme 1: local m = 8 must be a multiple of 16 and n = 32 of 4 (4x4 register tile, 004 L777)

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<32x8xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<32x8xf64>
    %cc = loop.ldm_buffer "c" : !loop.ldm<32x32xf64>
    loop.summa_step %r, %a, %b -> %cc scheme 1 trans_b trans_c : !loop.ldm<32x8xf64>, !loop.ldm<32x8xf64>, !loop.ldm<32x32xf64>
  }
  func.return
}
// CHECK: 'loop.summa_step': vectorised dim M must be contiguous in A (trans_a: store A with M as its last dim)

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x8xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<8x16xf64>
    %cc = loop.ldm_buffer "c" : !loop.ldm<16x4xf64>
    loop.summa_step %r, %a, %b -> %cc scheme 3 trans_c : !loop.ldm<4x8xf64>, !loop.ldm<8x16xf64>, !loop.ldm<16x4xf64>
  }
  func.return
}
// CHECK: 'loop.summa_step': vectorised dim N must be contiguous in C (no trans_c)

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<16x16xf64>
    loop.summa_step %r, %a, %a -> %a scheme 1 trans_a trans_c : !loop.ldm<16x16xf64>, !loop.ldm<16x16xf64>, !loop.ldm<16x16xf64>
  }
  func.return
}
// CHECK: loop.summa_step: C must be a different buffer from A and B

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<8x32xf64, double>
    %b = loop.ldm_buffer "b" : !loop.ldm<32x8xf64>
    %cc = loop.ldm_buffer "c" : !loop.ldm<32x32xf64>
    loop.summa_step %r, %a, %b -> %cc scheme 1 trans_a trans_b trans_c : !loop.ldm<8x32xf64, double>, !loop.ldm<32x8xf64>, !loop.ldm<32x32xf64>
  }
  func.return
}
// CHECK: 'loop.summa_step': A %a is double-buffered; select a slot with loop.slot

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x8xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<8x16xf32>
    %cc = loop.ldm_buffer "c" : !loop.ldm<4x16xf32>
    loop.gemm_block %a, %b -> %cc vec n : !loop.ldm<4x8xf64>, !loop.ldm<8x16xf32>, !loop.ldm<4x16xf32>
  }
  func.return
}
// CHECK: loop.gemm_block: A, B, C must share the element type, or C be f64 (mixed: f32 operands widened on load) (got f64, f32, f32)

// -----

// mixed precision: f32 operands of an f64 C are legal
func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x8xf32>
    %b = loop.ldm_buffer "b" : !loop.ldm<8x16xf32>
    %cc = loop.ldm_buffer "c" : !loop.ldm<4x16xf64>
    loop.gemm_block %a, %b -> %cc vec n : !loop.ldm<4x8xf32>, !loop.ldm<8x16xf32>, !loop.ldm<4x16xf64>
  }
  func.return
}
// CHECK: loop.gemm_block %a, %b -> %cc vec n : !loop.ldm<4x8xf32>, !loop.ldm<8x16xf32>, !loop.ldm<4x16xf64>

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x8xf32>
    %b = loop.ldm_buffer "b" : !loop.ldm<8x6xf32>
    %cc = loop.ldm_buffer "c" : !loop.ldm<4x6xf32>
    loop.gemm_block %a, %b -> %cc vec n : !loop.ldm<4x8xf32>, !loop.ldm<8x6xf32>, !loop.ldm<4x6xf32>
  }
  func.return
}
// CHECK: loop.gemm_block: vectorised dim N = 6 must be a multiple of 4 (vector lanes)

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x8xf32>
    %b = loop.ldm_buffer "b" : !loop.ldm<16x8xf32>
    %cc = loop.ldm_buffer "c" : !loop.ldm<4x16xf32>
    loop.gemm_block %a, %b -> %cc vec n trans_b : !loop.ldm<4x8xf32>, !loop.ldm<16x8xf32>, !loop.ldm<4x16xf32>
  }
  func.return
}
// CHECK: 'loop.gemm_block': vectorised dim N must be contiguous in B (no trans_b: store B with N as its last dim)

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x4xf32>
    loop.gemm_block %a, %a -> %a vec n : !loop.ldm<4x4xf32>, !loop.ldm<4x4xf32>, !loop.ldm<4x4xf32>
  }
  func.return
}
// CHECK: loop.gemm_block: C must be a different buffer from A and B

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x4xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<4x8xf64>
    loop.rlc_bcast %a -> %b row root %r : !loop.ldm<4x4xf64>, !loop.ldm<4x8xf64>
  }
  func.return
}
// CHECK: loop.rlc_bcast: source !loop.ldm<4x4xf64> and destination !loop.ldm<4x8xf64> differ

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<3xf64>
    %b = loop.ldm_buffer "b" : !loop.ldm<3xf64>
    loop.rlc_bcast %a -> %b col root %c : !loop.ldm<3xf64>, !loop.ldm<3xf64>
  }
  func.return
}
// CHECK: loop.rlc_bcast: 24 bytes is not a multiple of 32 (256-bit RLC messages)

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4xf64>
    loop.rlc_bcast %a -> %a col root %c : !loop.ldm<4xf64>, !loop.ldm<4xf64>
  }
  func.return
}
// CHECK: loop.rlc_bcast: source and destination must be different buffers

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x8xf32>
    %b = loop.ldm_buffer "b" : !loop.ldm<4x1xf32>
    loop.map reduce_sum ins(%a : !loop.ldm<4x8xf32>) out(%b : !loop.ldm<4x1xf32>) {axis = 0 : i64}
  }
  func.return
}
// CHECK: loop.map reduce_sum: output shape [4, 1] != expected [1, 8]

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "a" : !loop.ldm<4x8xf32>
    %b = loop.ldm_buffer "b" : !loop.ldm<4x8xf64>
    loop.map relu ins(%a : !loop.ldm<4x8xf32>) out(%b : !loop.ldm<4x8xf64>)
  }
  func.return
}
// CHECK: loop.map relu: inputs and output must share the element type f64 (got f32)
