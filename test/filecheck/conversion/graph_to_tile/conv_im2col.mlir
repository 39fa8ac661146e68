// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=im2col}' --split-input-file | filecheck %s
// RUN: %taihu-opt %s -p 'convert-graph-to-tile' --split-input-file | filecheck %s

// Explicit GEMM convolution (004 §5.1.1): kernel NAME_im2col (tile.im2col, col = (C*kh*kw, N*Ho*Wo))
// + kernel NAME (memory-level GEMM per group, bias and the absorbed relu in its epilogue). Grouped
// and strided layers cannot use the implicit algorithm, so 'auto' picks im2col too.

// N = 2: one GEMM per group over all N*Ho*Wo columns of col into (M, N, Ho*Wo), then a relayout
// kernel to NCHW (cheaper than per-image GEMMs padded to the block multiple, per the model).
func.func @main(%x: tensor<2x32x9x9xf32> {graph.name = "x"}, %w: tensor<32x8x3x3xf32> {graph.name = "w"}, %b: tensor<32xf32> {graph.name = "b"}) -> (tensor<2x32x5x5xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w, %b {group = 4 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x32x9x9xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<2x32x5x5xf32>
  %r = graph.relu %y : tensor<2x32x5x5xf32> -> tensor<2x32x5x5xf32>
  func.return %r : tensor<2x32x5x5xf32>
}

// CHECK:      %y_col = memref.alloc() {alignment = 128 : i64} : memref<288x50xf32>
// CHECK-NEXT: tile.kernel "y_im2col" (%x_1 = %x : memref<2x32x9x9xf32>, %col = %y_col : memref<288x50xf32>)
// CHECK-SAME:   taihu.layer = "y", taihu.op = "graph.conv2d", taihu.algorithm = "im2col", taihu.shape = "2x32x5x5 <- 2x32x9x9 * 32x8x3x3 s2 p1,1,1,1 g4"
// CHECK-NEXT:   tile.im2col %x_1 -> %col {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : memref<2x32x9x9xf32> -> memref<288x50xf32>
// CHECK:      %[[C:.*]] = memref.expand_shape {{.*}} into memref<4x72x50xf32>
// CHECK:      %[[W:.*]] = memref.expand_shape {{.*}} into memref<4x8x72xf32>
// CHECK:      %y_gemm = memref.alloc() {alignment = 128 : i64} : memref<32x50xf32>
// CHECK:      %[[Y:.*]] = memref.expand_shape {{.*}} into memref<4x8x50xf32>
// CHECK:      %[[B:.*]] = memref.expand_shape %b {{.*}} into memref<4x8x1xf32>
// CHECK:      tile.kernel "y" (%w_1 = %[[W]] : memref<4x8x72xf32>, %col = %[[C]] : memref<4x72x50xf32>, %y_1 = %[[Y]] : memref<4x8x50xf32>, %bias = %[[B]] : memref<4x8x1xf32>)
// CHECK-SAME:   taihu.algorithm = "im2col"{{.*}}taihu.fused = ["graph.relu"], taihu.blocking = "{{.*}} batched"
// CHECK:        %c_s = tile.alloc {{(double )?}}: !tile.buf<32x128xf32, rc>
// CHECK:        tile.for %g = 0 to 4 step 1 name "g" {
// CHECK-NEXT:     tile.map fill out(%c
// CHECK-NEXT:     tile.move %w_1[%g, %c0, %c0] sizes [1, 32, 72] pad 0.0 -> %a_s
// CHECK-NEXT:     tile.map convert
// CHECK-NEXT:     tile.move %col[%g, %c0, %c0] sizes [1, 72, 128] pad 0.0 -> %b_s
// CHECK-NEXT:     tile.map convert
// CHECK-NEXT:     tile.gemm %a, %b_1 -> %c m 32 n 128 k 72 scheme 4 vec n
// CHECK-NEXT:     tile.move %bias[%g, %c0, %c0] sizes [1, 32, 1] pad 0.0 -> %bias_s
// CHECK-NEXT:     tile.map convert
// CHECK-NEXT:     tile.map add ins(%c, %bias_1 : !tile.buf<32x128xf64, rc>, !tile.buf<32x1xf64, rep>) out(%c
// CHECK-NEXT:     tile.map relu
// CHECK-NEXT:     tile.map convert
// CHECK-NEXT:     tile.move %c_s -> %y_1[%g, %c0, %c0] sizes [1, 32, 128] clip
// CHECK:      tile.kernel "y_relayout" (%src = %{{.*}} : memref<32x2x25xf32>, %y_1 = %{{.*}} : memref<2x32x25xf32>)
// CHECK-SAME:   taihu.algorithm = "relayout"
// CHECK:        tile.for %n = 0 to 2 step 1 name "n" {
// CHECK-NEXT:     tile.move %src[%c0, %n, %c0] sizes [32, 1, 25] -> %t
// CHECK-NEXT:     tile.move %t -> %y_1[%n, %c0, %c0] sizes [1, 32, 25]

// -----

// N = 1, dilated 5x5 with channels < 64: per-image GEMM straight into the NCHW output; each
// image's Ho*Wo = 64 columns of col padded to the GEMM's N block (image_columns = 128), so no B
// window crosses the border (full, prefetched DMAs; 004 L865 padded allocation).
func.func @main(%x: tensor<1x16x12x12xf32> {graph.name = "x"}, %w: tensor<32x16x5x5xf32> {graph.name = "w"}) -> (tensor<1x32x8x8xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w {dilations = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>} : (tensor<1x16x12x12xf32>, tensor<32x16x5x5xf32>) -> tensor<1x32x8x8xf32>
  func.return %y : tensor<1x32x8x8xf32>
}

// CHECK:      tile.kernel "y_im2col"
// CHECK-NEXT:   tile.im2col %x_1 -> %col {kernel = array<i64: 5, 5>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, image_columns = 128 : i64} : memref<1x16x12x12xf32> -> memref<400x128xf32>
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x32x400xf32>, %col = %{{.*}} : memref<1x400x1x128xf32>, %y_1 = %{{.*}} : memref<1x1x32x64xf32>)
// CHECK:          tile.move %col[%c0, %{{.*}}, %c0, %c0] sizes [1, {{[0-9]+}}, 1, 128] -> %b_s
// CHECK:          tile.move %c_s -> %y_1[%c0, %c0, %{{.*}}, %{{.*}}] sizes [1, 1, {{[0-9]+}}, {{[0-9]+}}]
// CHECK-NOT:  tile.kernel "y_relayout"

// -----

// Pointwise (1x1, stride 1, no padding): im2col is the identity, the GEMM reads x directly
// (Ho*Wo = 256 is a multiple of the GEMM's N block).
func.func @main(%x: tensor<2x16x16x16xf32> {graph.name = "x"}, %w: tensor<48x16x1x1xf32> {graph.name = "w"}) -> (tensor<2x48x16x16xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<2x16x16x16xf32>, tensor<48x16x1x1xf32>) -> tensor<2x48x16x16xf32>
  func.return %y : tensor<2x48x16x16xf32>
}

// CHECK-NOT:  tile.kernel "y_im2col"
// CHECK:      %[[X:.*]] = memref.expand_shape {{.*}} into memref<2x1x16x256xf32>
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x48x16xf32>, %x_1 = %[[X]] : memref<2x1x16x256xf32>, %y_1 = %{{.*}} : memref<2x1x48x256xf32>)
// CHECK-SAME:   taihu.blocking = "{{.*}} pointwise"
// CHECK:        tile.for %n = 0 to 2 step 1 name "n" {
// CHECK:          tile.move %x_1[%n, %c0, %c0, %c0] sizes [1, 1, 16, 256] -> %b_s

// -----

// Pointwise, Ho*Wo = 36 < the N block (64) and K = 1024 in several steps (B streamed, every K
// step on the border, clipped inside a CPE's piece): the plan (plan_explicit) copies x with a 1x1
// im2col into a col whose image columns are padded to 64, so the GEMM's B loads are full,
// prefetched DMAs.
func.func @main(%x: tensor<1x1024x6x6xf32> {graph.name = "x"}, %w: tensor<256x1024x1x1xf32> {graph.name = "w"}) -> (tensor<1x256x6x6xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<1x1024x6x6xf32>, tensor<256x1024x1x1xf32>) -> tensor<1x256x6x6xf32>
  func.return %y : tensor<1x256x6x6xf32>
}

// CHECK:      tile.kernel "y_im2col" (%x_1 = %x : memref<1x1024x6x6xf32>, %col = %y_col : memref<1024x64xf32>)
// CHECK-NEXT:   tile.im2col %x_1 -> %col {kernel = array<i64: 1, 1>, image_columns = 64 : i64} : memref<1x1024x6x6xf32> -> memref<1024x64xf32>
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x256x1024xf32>, %col = %{{.*}} : memref<1x1024x1x64xf32>, %y_1 = %{{.*}} : memref<1x1x256x36xf32>)
// CHECK-NOT:    pointwise
// CHECK:          tile.move %col[%c0, %cK, %c0, %c0] sizes [1, 256, 1, 64] -> %b_s
