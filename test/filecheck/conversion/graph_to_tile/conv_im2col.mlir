// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=im2col}' | filecheck %s
// RUN: %taihu-opt %s -p 'convert-graph-to-tile' | filecheck %s

// Explicit GEMM convolution (004 §5.1.1): kernel NAME_im2col (tile.im2col, col = (C*kh*kw, N*Ho*Wo))
// + kernel NAME: per group g and image n the memory-level GEMM W_g (M/g, C/g*kh*kw) x col[g, :, n, :]
// -> y[n, g] (M/g, Ho*Wo), with bias and the absorbed relu in its epilogue. Grouped and strided
// (the implicit algorithm does not apply: group != 1, so 'auto' picks im2col too).
func.func @main(%x: tensor<2x32x9x9xf32> {graph.name = "x"}, %w: tensor<32x8x3x3xf32> {graph.name = "w"}, %b: tensor<32xf32> {graph.name = "b"}) -> (tensor<2x32x5x5xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w, %b {group = 4 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x9x9xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<2x32x5x5xf32>
  %r = graph.relu %y : tensor<2x32x5x5xf32> -> tensor<2x32x5x5xf32>
  func.return %r : tensor<2x32x5x5xf32>
}

// CHECK:      %y_col = memref.alloc() {alignment = 128 : i64} : memref<288x50xf32>
// CHECK-NEXT: tile.kernel "y_im2col" (%x_1 = %x : memref<2x32x9x9xf32>, %col = %y_col : memref<288x50xf32>)
// CHECK-SAME:   taihu.layer = "y", taihu.op = "graph.conv2d", taihu.algorithm = "im2col", taihu.shape = "2x32x5x5 <- 2x32x9x9 * 32x8x3x3 s2 p1,1,1,1 g4"
// CHECK-NEXT:   tile.im2col %x_1 -> %col {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : memref<2x32x9x9xf32> -> memref<288x50xf32>
// CHECK:      %[[W:.*]] = memref.expand_shape {{.*}} into memref<4x8x72xf32>
// CHECK:      %[[C:.*]] = memref.expand_shape {{.*}} into memref<4x72x2x25xf32>
// CHECK:      %[[Y:.*]] = memref.expand_shape {{.*}} into memref<2x4x8x25xf32>
// CHECK:      %[[B:.*]] = memref.expand_shape %b {{.*}} into memref<4x8x1xf32>
// CHECK:      tile.kernel "y" (%w_1 = %[[W]] : memref<4x8x72xf32>, %col = %[[C]] : memref<4x72x2x25xf32>, %y_1 = %[[Y]] : memref<2x4x8x25xf32>, %bias = %[[B]] : memref<4x8x1xf32>)
// CHECK-SAME:   taihu.algorithm = "im2col"{{.*}}taihu.fused = ["graph.relu"]
// CHECK:        tile.for %g = 0 to 4 step 1 name "g" {
// CHECK-NEXT:     tile.for %n = 0 to 2 step 1 name "n" {
// CHECK-NEXT:       tile.map fill out(%c
// CHECK-NEXT:       tile.move %w_1[%g, %c0, %c0] sizes [1, 32, 72] pad 0.0 -> %a_s
// CHECK-NEXT:       tile.map convert
// CHECK-NEXT:       tile.move %col[%g, %c0, %n, %c0] sizes [1, 72, 1, 128] pad 0.0 -> %b_s
// CHECK-NEXT:       tile.map convert
// CHECK-NEXT:       tile.gemm %a, %b_1 -> %c m 32 n 128 k 72 scheme 4 vec n
// CHECK-NEXT:       tile.move %bias[%g, %c0, %c0] sizes [1, 32, 1] pad 0.0 -> %bias_s
// CHECK-NEXT:       tile.map convert
// CHECK-NEXT:       tile.map add ins(%c, %bias_1 : !tile.buf<32x128xf64, rc>, !tile.buf<32x1xf64, rep>) out(%c
// CHECK-NEXT:       tile.map relu
// CHECK-NEXT:       tile.map convert
// CHECK-NEXT:       tile.move %c_s -> %y_1[%n, %g, %c0, %c0] sizes [1, 1, 32, 128] clip
