// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s

// Grouped convolutions with several channels per group (ResNeXt, RegNet) lower to one kernel of
// `tile.map grouped` (graph_to_tile/grouped.py) when the model finds it cheaper than im2col:
// whole groups over the CPEs, their input-row windows in LDM, no im2col / GEMM. x and y are
// viewed (N, G, C/g, H, W) / (N, G, M/g, Ho, Wo), w (G, M/g, C/g, kh*kw), b (G, M/g, 1, 1).

// ResNeXt-50's first grouped layer: 32 groups of 4, row tiles (the DMA fills the pad rows), the
// direct micro-kernel: kw scratch tiles for the column-shifted copies of the input rows.
func.func @main(%x: tensor<1x128x56x56xf32>) -> tensor<1x128x56x56xf32> {
  %w = graph.constant dense<0.25> : tensor<128x4x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<128xf32>
  %c = graph.conv2d %x, %w, %b {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x128x56x56xf32>, tensor<128x4x3x3xf32>, tensor<128xf32>) -> tensor<1x128x56x56xf32>
  %y = graph.relu %c : tensor<1x128x56x56xf32> -> tensor<1x128x56x56xf32>
  func.return %y : tensor<1x128x56x56xf32>
}
// CHECK:      memref.expand_shape %{{.*}} output_shape [1, 32, 4, 56, 56] : memref<401408xf32> into memref<1x32x4x56x56xf32>
// CHECK:      memref.expand_shape %{{.*}} output_shape [32, 4, 4, 9] : memref<4608xf32> into memref<32x4x4x9xf32>
// CHECK:      memref.expand_shape %b {{.*}} output_shape [32, 4, 1, 1] : memref<128xf32> into memref<32x4x1x1xf32>
// CHECK:      tile.kernel "c" ({{.*}}) attributes {taihu.layer = "c", taihu.op = "graph.conv2d", taihu.algorithm = "grouped", taihu.shape = "1x128x56x56 <- 1x128x56x56 * 128x4x3x3 p1,1,1,1 g32", taihu.fused = ["graph.relu"]
// CHECK-NEXT:   %w_t = tile.alloc : !tile.buf<32x4x4x9xf32, cpe>
// CHECK-NEXT:   %b_t = tile.alloc : !tile.buf<32x4x1x1xf32, cpe>
// CHECK-NEXT:   %y_t = tile.alloc double : !tile.buf<32x4x[[R:[0-9]+]]x56xf32, cpe>
// CHECK-NEXT:   %x_t = tile.alloc double : !tile.buf<32x4x[[IN:[0-9]+]]x56xf32, cpe>
// CHECK-NEXT:   %u0_t = tile.alloc : !tile.buf<32x4x[[IN]]x56xf32, cpe>
// CHECK-NEXT:   %u1_t = tile.alloc : !tile.buf<32x4x[[IN]]x56xf32, cpe>
// CHECK-NEXT:   %u2_t = tile.alloc : !tile.buf<32x4x[[IN]]x56xf32, cpe>
// CHECK:        tile.move %w_1[%c0, %c0, %c0, %c0] sizes [32, 4, 4, 9] -> %w_t
// CHECK-NEXT:   tile.move %b_1[%c0, %c0, %c0, %c0] sizes [32, 4, 1, 1] -> %b_t
// CHECK:        tile.for %r = 0 to 56 step [[R]] name "r" {
// CHECK:          tile.move %x_1[%c0, %c0, %c0, %{{.*}}, %c0] sizes [1, 32, 4, [[IN]], 56] pad 0.0 -> %x_t
// CHECK-NEXT:     tile.map grouped_direct ins(%x_t, %w_t, %b_t, %u0_t, %u1_t, %u2_t : {{.*}}) out(%y_t : {{.*}}) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1>}
// CHECK-NEXT:     tile.map relu ins(%y_t : {{.*}}) out(%y_t : {{.*}})
// CHECK-NEXT:     tile.move %y_t -> %y[%c0, %c0, %c0, %r, %c0] sizes [1, 32, 4, [[R]], 56]
// CHECK-NOT:  im2col

// -----

// Batch 2, stride 2, 6 output channels from 4 input channels per group, an edited schedule of
// 2 output rows per tile (the last clipped), the depthwise passes, the weights not constant.
func.func @main(%x: tensor<2x16x9x10xf32>, %w: tensor<24x4x3x3xf32>) -> tensor<2x24x5x5xf32> {
  %y = graph.conv2d %x, %w {group = 4 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 4 : i64, rows = 2 : i64}>} : (tensor<2x16x9x10xf32>, tensor<24x4x3x3xf32>) -> tensor<2x24x5x5xf32>
  func.return %y : tensor<2x24x5x5xf32>
}
// CHECK:      taihu.algorithm = "grouped"
// CHECK:        %w_t = tile.alloc : !tile.buf<4x6x4x9xf32, cpe>
// CHECK-NEXT:   %y_t = tile.alloc double : !tile.buf<4x6x2x5xf32, cpe>
// CHECK-NEXT:   %x_t = tile.alloc double : !tile.buf<4x4x5x10xf32, cpe>
// CHECK:        tile.for %n = 0 to 2 step 1 name "n" {
// CHECK:          tile.for %r = 0 to 5 step 2 name "r" {
// CHECK:            tile.move %x_1[%n, %c0, %c0, %{{.*}}, %c0] sizes [1, 4, 4, 5, 10] pad 0.0 -> %x_t
// CHECK-NEXT:       tile.map grouped ins(%x_t, %w_t : {{.*}}) out(%y_t : {{.*}}) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 0>}
// CHECK-NEXT:       tile.move %y_t -> %y_1[%n, %c0, %c0, %r, %c0] sizes [1, 4, 6, 2, 5] clip

