// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p convert-loop-to-sw 2>&1 | filecheck %s

// Diagnostics of convert-loop-to-sw: one line naming the op, no traceback.

builtin.module {
  func.func @main(%x: memref<4xf64>) -> memref<4xf64> {
    func.return %x : memref<4xf64>
  }
}
// CHECK: convert-loop-to-sw: 'func.return': result #0 ('out0') must be a buffer allocated by the host function

// -----

builtin.module {
  func.func @main(%x: memref<64x8xf64>) {
    loop.spmd "k" ids(%r, %c) (%a = %x : memref<64x8xf64>) {
      %b = loop.ldm_buffer "b" : !loop.ldm<1x8xf64>
      %c0 = arith.constant 0 : index
      %t = loop.dma_start %a[%r, %c0] sizes [1, 8] mode row -> %b : memref<64x8xf64> -> !loop.ldm<1x8xf64>
      loop.dma_wait %t
    }
    func.return
  }
}
// CHECK: convert-loop-to-sw: 'loop.dma_start': DMA mode row is not supported by the simulator (use pe or bcast)

// -----

builtin.module {
  func.func @main(%x: memref<64x8xf64>) {
    loop.spmd "k" ids(%r, %c) (%a = %x : memref<64x8xf64>) {
      %m = memref.alloca() : memref<4xf64>
    }
    func.return
  }
}
// CHECK: convert-loop-to-sw: 'memref.alloca': cannot lower this op inside loop.spmd "k"

// -----

// A 1424-element vectorised block (k = 1): the k-loop's one-row over-read might leave the LDM.
builtin.module {
  func.func @main() {
    loop.spmd "big" ids(%r, %c) () {
      %a = loop.ldm_buffer "A" : !loop.ldm<1x1424xf64>
      %b = loop.ldm_buffer "B" : !loop.ldm<1x4xf64>
      %cc = loop.ldm_buffer "C" : !loop.ldm<4x1424xf64>
      %c0 = arith.constant 0 : index
      loop.summa_step %c0, %a, %b -> %cc scheme 1 trans_a trans_c : !loop.ldm<1x1424xf64>, !loop.ldm<1x4xf64>, !loop.ldm<4x1424xf64>
    }
    func.return
  }
}
// CHECK: convert-loop-to-sw: 'loop.summa_step': the software-pipelined k-loop over-reads one k-row (11392 B) past its blocks

// -----

builtin.module {
  func.func @a() {
    func.return
  }
  func.func @b() {
    func.return
  }
}
// CHECK: convert-loop-to-sw: expected one host function (func.func @main), found 2 functions
// CHECK-NOT: Traceback
