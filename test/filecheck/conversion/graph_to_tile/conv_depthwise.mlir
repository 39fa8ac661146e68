// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s

// Depthwise convolutions (group = C = M) lower to one kernel of `tile.map depthwise` (graph_to_tile/
// depthwise.py): channels over the CPEs, a window of whole input rows in LDM, no im2col / GEMM.

// MobileNetV2's first depthwise layer with its relu6: 32 planes (one per CPE), tiles of 28 output
// rows loaded as 30 input rows from row 28*r - 1 (pad 0.0 rows above and below the plane); the
// column pads are the map's. Filters and bias are loaded once; the clip runs on the output tile.
func.func @main(%x: tensor<1x32x112x112xf32> {graph.name = "x"}) -> (tensor<1x32x112x112xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.25> : tensor<32x1x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %c = graph.conv2d %x, %w, %b {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x112x112xf32>, tensor<32x1x3x3xf32>, tensor<32xf32>) -> tensor<1x32x112x112xf32>
  %y = graph.clip %c {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x32x112x112xf32> -> tensor<1x32x112x112xf32>
  func.return %y : tensor<1x32x112x112xf32>
}

// CHECK:      %[[W:.*]] = memref.expand_shape %{{.*}} output_shape [32, 1, 9] : memref<288xf32> into memref<32x1x9xf32>
// CHECK:      %[[B:.*]] = memref.expand_shape %b {{.*}} output_shape [32, 1, 1] : memref<32xf32> into memref<32x1x1xf32>
// CHECK:      tile.kernel "c" (%x_1 = %x : memref<1x32x112x112xf32>, %w_1 = %[[W]] : memref<32x1x9xf32>, %b_1 = %[[B]] : memref<32x1x1xf32>, %y = %c : memref<1x32x112x112xf32>) attributes {taihu.layer = "c", taihu.op = "graph.conv2d", taihu.algorithm = "depthwise", taihu.shape = "1x32x112x112 <- 1x32x112x112 * 32x1x3x3 p1,1,1,1 g32", taihu.fused = ["graph.clip"], taihu.useful_flops = 8028160 : i64} {
// CHECK-NEXT:   %w_t = tile.alloc : !tile.buf<32x1x9xf32, cpe>
// CHECK-NEXT:   %b_t = tile.alloc : !tile.buf<32x1x1xf32, cpe>
// CHECK-NEXT:   %x_t = tile.alloc double : !tile.buf<32x30x112xf32, cpe>
// CHECK-NEXT:   %y_t = tile.alloc double : !tile.buf<32x28x112xf32, cpe>
// CHECK:        tile.move %w_1[%c0, %c0, %c0] sizes [32, 1, 9] -> %w_t
// CHECK-NEXT:   tile.move %b_1[%c0, %c0, %c0] sizes [32, 1, 1] -> %b_t
// CHECK-NEXT:   tile.for %r = 0 to 112 step 28 name "r" {
// CHECK-NEXT:     %[[R:.*]] = arith.subi %r, %c1 : index
// CHECK-NEXT:     tile.move %x_1[%c0, %c0, %[[R]], %c0] sizes [1, 32, 30, 112] pad 0.0 -> %x_t
// CHECK-NEXT:     tile.map depthwise ins(%x_t, %w_t, %b_t : !tile.buf<32x30x112xf32, cpe>, !tile.buf<32x1x9xf32, cpe>, !tile.buf<32x1x1xf32, cpe>) out(%y_t : !tile.buf<32x28x112xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>}
// CHECK-NEXT:     tile.map clip ins(%y_t : !tile.buf<32x28x112xf32, cpe>) out(%y_t : !tile.buf<32x28x112xf32, cpe>) {lo = 0.000000e+00 : f64, hi = 6.000000e+00 : f64}
// CHECK-NEXT:     tile.move %y_t -> %y[%c0, %c0, %r, %c0] sizes [1, 32, 28, 112]

// -----

// Batch 2, stride 2, 144 channels, weights not constant (read from their memref) and no bias:
// tiles of 64 channels (the third one clipped at 144: pad / clip), whole 56x56 planes per CPE
// (one contiguous DMA each way) with the top / left pads in the map; the filters of the next
// channel tile are prefetched (double buffer).
func.func @main(%x: tensor<2x144x56x56xf32> {graph.name = "x"}, %w: tensor<144x1x3x3xf32> {graph.name = "w"}) -> (tensor<2x144x28x28xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w {group = 144 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x144x56x56xf32>, tensor<144x1x3x3xf32>) -> tensor<2x144x28x28xf32>
  func.return %y : tensor<2x144x28x28xf32>
}

// CHECK:      tile.kernel "y" (%x_1 = %x : memref<2x144x56x56xf32>, %w_1 = %{{.*}} : memref<144x1x9xf32>, %y_1 = %y : memref<2x144x28x28xf32>) attributes {{{.*}}taihu.algorithm = "depthwise"
// CHECK-NEXT:   %w_t = tile.alloc double : !tile.buf<64x1x9xf32, cpe>
// CHECK-NEXT:   %x_t = tile.alloc double : !tile.buf<64x56x56xf32, cpe>
// CHECK-NEXT:   %y_t = tile.alloc double : !tile.buf<64x28x28xf32, cpe>
// CHECK:        tile.for %n = 0 to 2 step 1 name "n" {
// CHECK-NEXT:     tile.for %c = 0 to 144 step 64 name "c" {
// CHECK-NEXT:       tile.move %w_1[%c, %c0, %c0] sizes [64, 1, 9] pad 0.0 -> %w_t
// CHECK-NEXT:       tile.move %x_1[%n, %c, %c0, %c0] sizes [1, 64, 56, 56] pad 0.0 -> %x_t
// CHECK-NEXT:       tile.map depthwise ins(%x_t, %w_t : !tile.buf<64x56x56xf32, cpe>, !tile.buf<64x1x9xf32, cpe>) out(%y_t : !tile.buf<64x28x28xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>}
// CHECK-NEXT:       tile.move %y_t -> %y_1[%n, %c, %c0, %c0] sizes [1, 64, 28, 28] clip

// -----

// A grouped convolution with several channels per group is not depthwise: the grouped kernel
// (conv_grouped.mlir).
func.func @main(%x: tensor<1x16x8x8xf32> {graph.name = "x"}, %w: tensor<16x4x3x3xf32> {graph.name = "w"}) -> (tensor<1x16x8x8xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w {group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}

// CHECK:     tile.map grouped
// CHECK-NOT: depthwise
