// RUN: %taihu-opt %s -p convert-loop-to-sw | filecheck %s
// RUN: %taihu-opt %s -p 'convert-loop-to-sw{dedup-kernels=false}' | filecheck %s --check-prefix=NODEDUP

// Kernel deduplication (default): "b" has the body of "a" up to value and LDM buffer names and other
// buffers, so it spawns @a under its own launch name with its own taihu.* attributes; "c"
// differs in one property (the barrier scope) and "d" in an operand type:
// both get their own kernel. With dedup-kernels=false every loop.spmd has its sw.kernel.

builtin.module {
  func.func @main(%x: memref<64xf32> {graph.name = "in"}) -> (memref<64xf32> {graph.name = "out"}) {
    %t = memref.alloc() {alignment = 128 : i64} : memref<64xf32>
    %u = memref.alloc() {alignment = 128 : i64} : memref<64xf32>
    %o = memref.alloc() {alignment = 128 : i64} : memref<64xf32>
    %v = memref.alloc() {alignment = 128 : i64} : memref<128xf32>
    loop.spmd "a" ids(%r, %c) (%p = %x : memref<64xf32>, %q = %t : memref<64xf32>) attributes {taihu.layer = "la", taihu.op = "graph.relu"} {
      %buf = loop.ldm_buffer "in_a" : !loop.ldm<8xf32>
      %c0 = arith.constant 0 : index
      %tk = loop.dma_start %p[%c0] sizes [8] -> %buf : memref<64xf32> -> !loop.ldm<8xf32>
      loop.dma_wait %tk
      loop.barrier array
    }
    loop.spmd "b" ids(%r, %c) (%p = %t : memref<64xf32>, %q = %u : memref<64xf32>) attributes {taihu.layer = "lb", taihu.op = "graph.relu"} {
      %buf = loop.ldm_buffer "in_b" : !loop.ldm<8xf32>
      %c0 = arith.constant 0 : index
      %tk = loop.dma_start %p[%c0] sizes [8] -> %buf : memref<64xf32> -> !loop.ldm<8xf32>
      loop.dma_wait %tk
      loop.barrier array
    }
    loop.spmd "c" ids(%r, %c) (%p = %u : memref<64xf32>, %q = %o : memref<64xf32>) {
      %buf = loop.ldm_buffer "in_c" : !loop.ldm<8xf32>
      %c0 = arith.constant 0 : index
      %tk = loop.dma_start %p[%c0] sizes [8] -> %buf : memref<64xf32> -> !loop.ldm<8xf32>
      loop.dma_wait %tk
      loop.barrier row
    }
    loop.spmd "d" ids(%r, %c) (%p = %v : memref<128xf32>, %q = %o : memref<64xf32>) {
      %buf = loop.ldm_buffer "in_d" : !loop.ldm<8xf32>
      %c0 = arith.constant 0 : index
      %tk = loop.dma_start %p[%c0] sizes [8] -> %buf : memref<128xf32> -> !loop.ldm<8xf32>
      loop.dma_wait %tk
      loop.barrier array
    }
    func.return %o : memref<64xf32>
  }
}

// CHECK:      sw.kernel @a(%p: i64, %q: i64) attributes {taihu.layer = "la", taihu.op = "graph.relu"} {
// CHECK:      sw.kernel @c(%p: i64, %q: i64) {
// CHECK:        sw.barrier row
// CHECK:      sw.kernel @d(%p: i64, %q: i64) {
// CHECK-NOT:  sw.kernel
// CHECK:      func.func @main() {
// CHECK:        sw.spawn @a(%x, %t)
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   sw.spawn @a(%t, %u) {taihu.name = "b", taihu.layer = "lb", taihu.op = "graph.relu"}
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   sw.spawn @c(%u, %o)
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   sw.spawn @d(%v, %o)
// CHECK-NEXT:   sw.join

// NODEDUP:      sw.kernel @a(
// NODEDUP:      sw.kernel @b(%p: i64, %q: i64) attributes {taihu.layer = "lb", taihu.op = "graph.relu"} {
// NODEDUP:      sw.kernel @c(
// NODEDUP:      sw.kernel @d(
// NODEDUP:        sw.spawn @a(%x, %t)
// NODEDUP-NEXT:   sw.join
// NODEDUP-NEXT:   sw.spawn @b(%t, %u)
