// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=implicit}' --split-input-file | filecheck %s

// Implicit GEMM convolution (004 §5.1.2, Algorithms 3/4): C tiles of (out channels x out columns
// of one output row) stay in LDM while the reduction over (kr, kc, input-channel blocks) streams
// weight and input tiles (K innermost); the b_B x b_Ro C tiles of a group share every weight
// tile (here 2 images x 4 rows: batch-size-aware reuse). Weights that are not constants are
// re-laid (M, kh, kw, C) by a kernel; stride 2 = strided input windows; pads = 'pad 0.0'.
func.func @main(%x: tensor<2x64x14x14xf32> {graph.name = "x"}, %w: tensor<128x64x3x3xf32> {graph.name = "w"}, %b: tensor<128xf32> {graph.name = "b"}) -> (tensor<2x128x7x7xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x64x14x14xf32>, tensor<128x64x3x3xf32>, tensor<128xf32>) -> tensor<2x128x7x7xf32>
  %r = graph.relu %y : tensor<2x128x7x7xf32> -> tensor<2x128x7x7xf32>
  func.return %r : tensor<2x128x7x7xf32>
}

// CHECK:      tile.kernel "y_weights" (%w_1 = %{{.*}} : memref<128x64x9xf32>, %wt = %y_wt : memref<128x9x64xf32>)
// CHECK-SAME:   taihu.layer = "y", taihu.op = "graph.conv2d", taihu.algorithm = "relayout"
// CHECK:        tile.map transpose ins(%t_in : !tile.buf<128x64x9xf32, cpe>) out(%t_out : !tile.buf<128x9x64xf32, cpe>) {perm = array<i64: 0, 2, 1>}
// CHECK:      tile.kernel "y" (%x_1 = %x : memref<2x64x14x14xf32>, %w_1 = %{{.*}} : memref<128x3x3x64xf32>, %y_1 = %y : memref<2x128x7x7xf32>, %bias = %{{.*}} : memref<128x1xf32>)
// CHECK-SAME:   taihu.layer = "y", taihu.op = "graph.conv2d", taihu.algorithm = "implicit", taihu.shape = "2x128x7x7 <- 2x64x14x14 * 128x64x3x3 s2 p1,1,1,1", taihu.fused = ["graph.relu"], taihu.blocking = "bm=128 bn=32 bk=64 b_b=2 b_ro=4 scheme=2 vec=m variant=batch"
// CHECK-NEXT:   %w_s = tile.alloc double : !tile.buf<128x64xf32, rc>
// CHECK-NEXT:   %w_t = tile.alloc : !tile.buf<128x64xf64, rc, col>
// CHECK-NEXT:   %x_s = tile.alloc double : !tile.buf<64x32xf32, rc>
// CHECK-NEXT:   %x_t = tile.alloc : !tile.buf<64x32xf64, rc>
// CHECK-NEXT:   %y0 = tile.alloc : !tile.buf<128x32xf64, rc, col>
// CHECK:        %y7 = tile.alloc : !tile.buf<128x32xf64, rc, col>
// CHECK-NEXT:   %y_s = tile.alloc double : !tile.buf<128x32xf32, rc>
// CHECK-NEXT:   %bias_s = tile.alloc : !tile.buf<128x1xf32, rep>
// CHECK-NEXT:   %bias_1 = tile.alloc : !tile.buf<128x1xf64, rep>
// CHECK:        tile.for %cRo = 0 to 7 step 4 name "cRo" {
// CHECK-COUNT-8:  tile.map fill out(%y{{[0-7]}} : !tile.buf<128x32xf64, rc, col>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:     tile.for %cKr = 0 to 3 step 1 name "cKr" {
// CHECK-NEXT:       tile.for %cKc = 0 to 3 step 1 name "cKc" {
// CHECK-NEXT:         tile.move %w_1[%c0, %cKr, %cKc, %c0] sizes [128, 1, 1, 64] -> %w_s
// CHECK-NEXT:         tile.map convert ins(%w_s : !tile.buf<128x64xf32, rc>) out(%w_t : !tile.buf<128x64xf64, rc, col>)
// CHECK:              tile.move %x_1[%c0, %c0, %{{.*}}, %{{.*}}] sizes [1, 64, 1, 32] strides [1, 1, 1, 2] pad 0.0 -> %x_s
// CHECK-NEXT:         tile.map convert ins(%x_s : !tile.buf<64x32xf32, rc>) out(%x_t : !tile.buf<64x32xf64, rc>)
// CHECK-NEXT:         tile.gemm %w_t, %x_t -> %y0 m 128 n 32 k 64 scheme 2 vec m
// CHECK:              tile.move %x_1[%c1, %c0, %{{.*}}, %{{.*}}] sizes [1, 64, 1, 32] strides [1, 1, 1, 2] pad 0.0 -> %x_s
// CHECK:              tile.gemm %w_t, %x_t -> %y7 m 128 n 32 k 64 scheme 2 vec m
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     tile.move %bias[%c0, %c0] sizes [128, 1] -> %bias_s
// CHECK-NEXT:     tile.map convert ins(%bias_s : !tile.buf<128x1xf32, rep>) out(%bias_1 : !tile.buf<128x1xf64, rep>)
// CHECK-NEXT:     tile.map add ins(%y0, %bias_1 : !tile.buf<128x32xf64, rc, col>, !tile.buf<128x1xf64, rep>) out(%y0
// CHECK-NEXT:     tile.map relu ins(%y0 : !tile.buf<128x32xf64, rc, col>) out(%y0
// CHECK-NEXT:     tile.map convert ins(%y0 : !tile.buf<128x32xf64, rc, col>) out(%y_s : !tile.buf<128x32xf32, rc>)
// CHECK-NEXT:     tile.move %y_s -> %y_1[%c0, %c0, %cRo, %c0] sizes [1, 128, 1, 32] clip
// CHECK-NOT:  = graph.

// -----

// Constant weights are re-laid (M, kh, kw, C) at compile time: a new memref.global, no kernel.
// (C = 68 is not a multiple of 8, so the unfolded form of conv_unfold.mlir does not apply.)
func.func @main(%x: tensor<1x68x8x8xf32> {graph.name = "x"}) -> (tensor<1x64x8x8xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<64x68x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x68x8x8xf32>, tensor<64x68x3x3xf32>) -> tensor<1x64x8x8xf32>
  func.return %y : tensor<1x64x8x8xf32>
}

// CHECK:      "memref.global"() <{sym_name = "y_wt", type = memref<64x3x3x68xf32>, initial_value = dense<5.000000e-01> : tensor<64x3x3x68xf32>
// CHECK-NOT:  tile.kernel "y_weights"
// CHECK:      %y_wt = memref.get_global @y_wt : memref<64x3x3x68xf32>
// CHECK:      tile.kernel "y" ({{.*}}%w_1 = %y_wt : memref<64x3x3x68xf32>{{.*}}taihu.algorithm = "implicit"

// -----

// 1x1 convolution: a single tap, no kr/kc loops; the weights are only viewed (M, 1, 1, C).
func.func @main(%x: tensor<1x64x8x8xf32> {graph.name = "x"}, %w: tensor<128x64x1x1xf32> {graph.name = "w"}) -> (tensor<1x128x8x8xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<1x64x8x8xf32>, tensor<128x64x1x1xf32>) -> tensor<1x128x8x8xf32>
  func.return %y : tensor<1x128x8x8xf32>
}

// CHECK:      memref.expand_shape {{.*}} into memref<128x1x1x64xf32>
// CHECK-NOT:  tile.kernel "y_weights"
// CHECK:      tile.kernel "y"{{.*}}taihu.algorithm = "implicit"
// CHECK-NOT:    name "cKr"
// CHECK:        tile.move %w_1[%{{.*}}, %c0, %c0, %{{.*}}] sizes [{{[0-9]+}}, 1, 1, {{[0-9]+}}] -> %w_s
// CHECK:        tile.gemm
