// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=implicit}' --split-input-file | filecheck %s

// The unfolded implicit convolution with a residual sum (constant weights). Output rows not
// padded (Wo = 16 is a register-tile multiple): the C blocks are rows of the NCHW output, the
// residual window is loaded at the block start, added after the f64 -> f32 convert, relu, store.
func.func @main(%x: tensor<1x64x16x16xf32> {graph.name = "x"}, %s: tensor<1x128x16x16xf32> {graph.name = "s"}) -> (tensor<1x128x16x16xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<128x64x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x16x16xf32>, tensor<128x64x3x3xf32>) -> tensor<1x128x16x16xf32>
  %a = graph.add %s, %y : (tensor<1x128x16x16xf32>, tensor<1x128x16x16xf32>) -> tensor<1x128x16x16xf32>
  %r = graph.relu %a : tensor<1x128x16x16xf32> -> tensor<1x128x16x16xf32>
  func.return %r : tensor<1x128x16x16xf32>
}

// CHECK:      tile.kernel "y" (%x_1 = %x : memref<1x64x16x16xf32>, %w = %y_wu : memref<128x576xf32>, %y_1 = %{{.*}} : memref<1x128x256xf32>, %res = %{{.*}} : memref<1x128x256xf32>)
// CHECK-SAME:   taihu.algorithm = "implicit"{{.*}}taihu.fused = ["graph.add", "graph.relu"], taihu.blocking = "{{.*}} variant=unfold"
// CHECK:        %y_s = tile.alloc double : !tile.buf<128x128xf32, rc>
// CHECK-NEXT:   %res_1 = tile.alloc double : !tile.buf<128x128xf32, rc>
// CHECK:        tile.for %cRo = 0 to 16 step 8 name "cRo" {
// CHECK-NEXT:     %[[R:.*]] = arith.muli %cRo, %c16 : index
// CHECK-NEXT:     tile.move %res[%c0, %c0, %[[R]]] sizes [1, 128, 128] -> %res_1
// CHECK-NEXT:     tile.map fill out(%y_t
// CHECK-NEXT:     tile.for %cNi = 0 to 64 step 32 name "cNi" {
// CHECK:            tile.unfold
// CHECK-NEXT:       tile.gemm
// CHECK-NEXT:     }
// CHECK-NEXT:     tile.map convert ins(%y_t : !tile.buf<128x128xf64, rc>) out(%y_s : !tile.buf<128x128xf32, rc>)
// CHECK-NEXT:     tile.map add ins(%y_s, %res_1 : !tile.buf<128x128xf32, rc>, !tile.buf<128x128xf32, rc>) out(%y_s
// CHECK-NEXT:     tile.map relu ins(%y_s
// CHECK-NEXT:     tile.move %y_s -> %y_1[%c0, %c0, %[[R]]] sizes [1, 128, 128]
// CHECK-NOT:  tile.kernel
// CHECK:      func.return

// -----

// Wo = 7: rows padded to 8 in LDM, the C blocks go to a (N, M, Ho*8) buffer and a relayout kernel
// crops them: the sum (and the relu after it) stay a separate kernel.
func.func @main(%x: tensor<1x128x7x7xf32> {graph.name = "x"}, %s: tensor<1x128x7x7xf32> {graph.name = "s"}) -> (tensor<1x128x7x7xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<128x128x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x128x7x7xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x7x7xf32>
  %a = graph.add %y, %s : (tensor<1x128x7x7xf32>, tensor<1x128x7x7xf32>) -> tensor<1x128x7x7xf32>
  %r = graph.relu %a : tensor<1x128x7x7xf32> -> tensor<1x128x7x7xf32>
  func.return %r : tensor<1x128x7x7xf32>
}

// CHECK:      tile.kernel "y" (%x_1 = %x : memref<1x128x7x7xf32>, %w = %y_wu : memref<1152x128xf32>, %y_1 = %y_rows : memref<1x128x56xf32>) attributes
// CHECK-NOT:    taihu.fused
// CHECK-SAME:   taihu.blocking = "{{.*}} variant=unfold"
// CHECK-NOT:    tile.map relu
// CHECK:      tile.kernel "y_relayout"
// CHECK:      tile.kernel "a" {{.*}}taihu.op = "graph.add", taihu.algorithm = "map"{{.*}}taihu.fused = ["graph.relu"]
// CHECK:        tile.map add
// CHECK-NEXT:   tile.map relu
