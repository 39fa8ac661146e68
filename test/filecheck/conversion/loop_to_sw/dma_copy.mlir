// RUN: %taihu-opt %s -p convert-loop-to-sw | filecheck %s
// RUN: %taihu-opt %s -p convert-loop-to-sw,convert-sw-to-swsim -o %t.mlir && %taihu-run %t.mlir --quiet

// A per-CPE DMA copy: io globals named by graph.name, one reply word per token chain,
// index arithmetic on i64, taihu.* attributes copied onto the kernel.

builtin.module {
  func.func @main(%x: memref<64x128xf32> {graph.name = "in"}) -> (memref<64x128xf32> {graph.name = "out"}) {
    %y = memref.alloc() {alignment = 128 : i64} : memref<64x128xf32>
    loop.spmd "copy" ids(%row, %col) (%a = %x : memref<64x128xf32>, %b = %y : memref<64x128xf32>) attributes {taihu.layer = "copy", taihu.op = "graph.identity"} {
      %buf = loop.ldm_buffer "buf" : !loop.ldm<1x128xf32>
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index
      %t = loop.dma_start %a[%id, %c0] sizes [1, 128] -> %buf : memref<64x128xf32> -> !loop.ldm<1x128xf32>
      loop.dma_wait %t
      %p = loop.dma_start %buf -> %b[%id, %c0] sizes [1, 128] : !loop.ldm<1x128xf32> -> memref<64x128xf32>
      loop.dma_wait %p
    }
    func.return %y : memref<64x128xf32>
  }
}

// CHECK:      sw.global @in : tensor<64x128xf32> io input
// CHECK-NEXT: sw.global @out : tensor<64x128xf32> io output
// CHECK-NEXT: sw.kernel @copy(%a: i64, %b: i64) attributes {taihu.layer = "copy", taihu.op = "graph.identity"} {
// CHECK-DAG:    %[[RW0:.*]] = sw.reply_alloc
// CHECK-DAG:    %[[RW1:.*]] = sw.reply_alloc
// CHECK-DAG:    %[[C512:.*]] = arith.constant 512 : i64
// CHECK-DAG:    %row = sw.row_id
// CHECK-DAG:    %col = sw.col_id
// CHECK:        %buf = sw.ldm_alloc 512
// CHECK:        %id = arith.addi %r8, %col : i64
// CHECK-NEXT:   %[[O:.*]] = arith.muli %id, %[[C512]] : i64
// CHECK-NEXT:   %[[M:.*]] = arith.addi %a, %[[O]] : i64
// CHECK-NEXT:   sw.dma_get %[[M]] -> %buf, %[[RW1]] size 512
// CHECK-NEXT:   sw.dma_wait %[[RW1]], 1
// CHECK-NEXT:   sw.reply_reset %[[RW1]]
// CHECK:        sw.dma_put %buf -> %{{.*}}, %[[RW0]] size 512
// CHECK-NEXT:   sw.dma_wait %[[RW0]], 1
// CHECK-NEXT:   sw.reply_reset %[[RW0]]
// CHECK-NEXT: }
// CHECK:      func.func @main() {
// CHECK-NEXT:   %x = sw.global_addr @in
// CHECK-NEXT:   %y = sw.global_addr @out
// CHECK-NEXT:   sw.spawn @copy(%x, %y)
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   func.return
