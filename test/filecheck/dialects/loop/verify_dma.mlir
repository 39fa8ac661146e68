// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// loop.dma_start / loop.dma_wait: operand kinds, element types, ranks, sizes, buffer capacity,
// one athread DMA per window (spec §4.2), modes, slots.

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %c0 = arith.constant 0 : index
    %t = "loop.dma_start"(%x, %x, %c0, %c0) <{sizes = array<i64: 8, 8>}> : (memref<64x64xf64>, memref<64x64xf64>, index, index) -> !loop.token
  }
  func.return
}
// CHECK: loop.dma_start: exactly one side must be a memref (main memory) and the other a !loop.ldm buffer

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf32>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 8] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf32>
  }
  func.return
}
// CHECK: loop.dma_start: element types differ (memref f64, buffer f32)

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0] sizes [8, 8] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64>
  }
  func.return
}
// CHECK: loop.dma_start: memref rank 2 needs 2 offsets and sizes (got 1, 2)

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 65] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64>
  }
  func.return
}
// CHECK: loop.dma_start: sizes [8, 65] must be in 1..dim of memref<64x64xf64>

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 16] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64>
  }
  func.return
}
// CHECK: loop.dma_start: window of 128 elements does not fit buffer %b (64 elements)

// -----

// (2, 4, 4) of (10, 20, 8): runs of 4 elements, then gaps of 4 and of 132 -- two levels.
func.func @f(%X: memref<10x20x8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<10x20x8xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<32xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0, %c0] sizes [2, 4, 4] -> %b : memref<10x20x8xf64> -> !loop.ldm<32xf64>
  }
  func.return
}
// CHECK: loop.dma_start: window sizes [2, 4, 4] of memref<10x20x8xf64> is not one strided DMA (more than one outer dim repeats the contiguous block); split it

// -----

// (2, 4, 8) of (10, 20, 8) is one strided DMA: blocks of 32 elements, gap 128.
func.func @f(%X: memref<10x20x8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<10x20x8xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<64xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0, %c0] sizes [2, 4, 8] -> %b : memref<10x20x8xf64> -> !loop.ldm<64xf64>
  }
  func.return
}
// CHECK: loop.dma_start %x[%c0, %c0, %c0] sizes [2, 4, 8] -> %b

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %b -> %x[%c0, %c0] sizes [8, 8] mode bcast : !loop.ldm<8x8xf64> -> memref<64x64xf64>
  }
  func.return
}
// CHECK: loop.dma_start: mode bcast is only valid for gets (memory -> LDM)

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64, double>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 8] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64, double>
  }
  func.return
}
// CHECK: 'loop.dma_start': buffer %b is double-buffered; select a slot with loop.slot

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    "loop.dma_wait"() : () -> ()
  }
  func.return
}
// CHECK: loop.dma_wait: needs at least one token

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 8] strides [1, 0] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64>
  }
  func.return
}
// CHECK: loop.dma_start: strides [1, 0] must be 2 values >= 1 (one per memref dim)

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 8] strides [10, 1] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64>
  }
  func.return
}
// CHECK: loop.dma_start: window sizes [8, 8] with strides [10, 1] span more than the dims of memref<64x64xf64>

// -----

func.func @f(%X: memref<64x64xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<64x64xf64>) {
    %b = loop.ldm_buffer "b" : !loop.ldm<8x8xf64>
    %c0 = arith.constant 0 : index
    %t = loop.dma_start %x[%c0, %c0] sizes [8, 8] strides [2, 2] -> %b : memref<64x64xf64> -> !loop.ldm<8x8xf64>
  }
  func.return
}
// CHECK: loop.dma_start: window sizes [8, 8] of memref<64x64xf64> is not one strided DMA
