// RUN: %taihu-opt %s -p convert-loop-to-sw | filecheck %s

// The host program: constants keep their initial value (an inline dense, or graph-to-tile's
// taihu.initial_value dense_resource), arguments/results become io globals named by graph.name,
// intermediates sw.mem_alloc, views the same address (+ static offset), dealloc disappears, one
// sw.spawn/sw.join per loop.spmd, taihu.* attributes on the kernel.

builtin.module {
  "memref.global"() <{sym_name = "bias", sym_visibility = "private", type = memref<8xf32>, initial_value = dense<1.5> : tensor<8xf32>, constant}> : () -> ()
  "memref.global"() <{sym_name = "data", sym_visibility = "private", type = memref<2x4xf32>, initial_value, constant}> {taihu.initial_value = dense_resource<blob_w> : tensor<2x4xf32>} : () -> ()
  func.func @main(%x: memref<1x8x8xf32> {graph.name = "data"}) -> (memref<64xf32> {graph.name = "prob:0"}) {
    %b = memref.get_global @bias : memref<8xf32>
    %w = memref.get_global @data : memref<2x4xf32>
    %t = memref.alloc() {alignment = 128 : i64} : memref<8x8xf32>
    %o = memref.alloc() {alignment = 128 : i64} : memref<8x8xf32>
    %xv = memref.collapse_shape %x [[0, 1], [2]] : memref<1x8x8xf32> into memref<8x8xf32>
    %row3 = memref.reinterpret_cast %t to offset: [24], sizes: [2, 8], strides: [8, 1] : memref<8x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 24>>
    loop.spmd "first" ids(%r, %c) (%a = %xv : memref<8x8xf32>, %d = %t : memref<8x8xf32>) attributes {taihu.layer = "conv1", taihu.op = "graph.relu", unrelated = 3 : i64} {
      loop.barrier array
    }
    loop.spmd "first" ids(%r, %c) (%a = %t : memref<8x8xf32>, %bb = %b : memref<8xf32>, %ww = %w : memref<2x4xf32>, %d = %o : memref<8x8xf32>) {
      loop.barrier row
    }
    memref.dealloc %t : memref<8x8xf32>
    %flat = memref.collapse_shape %o [[0, 1]] : memref<8x8xf32> into memref<64xf32>
    func.return %flat : memref<64xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      blob_w: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041"
    }
  }
#-}

// CHECK:      sw.global @bias : tensor<8xf32> = dense<1.500000e+00> : tensor<8xf32>
// CHECK-NEXT: sw.global @data_1 : tensor<2x4xf32> = dense_resource<blob_w> : tensor<2x4xf32>
// CHECK-NEXT: sw.global @data : tensor<1x8x8xf32> io input{{$}}
// CHECK-NEXT: sw.global @prob_0 : tensor<64xf32> io output {graph.name = "prob:0"}
// CHECK-NEXT: sw.kernel @first(%a: i64, %d: i64) attributes {taihu.layer = "conv1", taihu.op = "graph.relu"} {
// CHECK-NEXT:   sw.barrier array
// CHECK-NEXT: }
// CHECK-NEXT: sw.kernel @first_1(%a: i64, %bb: i64, %ww: i64, %d: i64) {
// CHECK-NEXT:   sw.barrier row
// CHECK-NEXT: }
// CHECK-NEXT: func.func @main() {
// CHECK-NEXT:   %x = sw.global_addr @data
// CHECK-NEXT:   %b = sw.global_addr @bias
// CHECK-NEXT:   %w = sw.global_addr @data_1
// CHECK-NEXT:   %t = sw.mem_alloc 256
// CHECK-NEXT:   %o = sw.global_addr @prob_0
// CHECK-NEXT:   %{{.*}} = arith.constant 96 : i64
// CHECK-NEXT:   %row3 = arith.addi %t, %{{.*}} : i64
// CHECK-NEXT:   sw.spawn @first(%x, %t)
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   sw.spawn @first_1(%t, %b, %w, %o)
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
