// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=im2col}' --split-input-file | filecheck %s
// RUN: %taihu-opt %s -p 'convert-graph-to-tile' --split-input-file | filecheck %s

// Explicit GEMM convolution (004 §5.1.1): kernel NAME_im2col (tile.im2col, col = (C*kh*kw, N*Ho*Wo))
// + kernel NAME (memory-level GEMM per group, bias and the absorbed relu in its epilogue). Strided
// layers cannot use the implicit algorithm, so 'auto' picks im2col too; the grouped layer carries
// the im2col schedule (the model would pick the grouped kernel: conv_grouped.mlir).

// N = 4: one GEMM per group over all N*Ho*Wo columns of col into (M, N, Ho*Wo), then a relayout
// kernel to NCHW (cheaper than per-image GEMMs padded to the block multiple, per the model; with N = 2 the
// per-image overlapping-distribution GEMMs win).
func.func @main(%x: tensor<4x32x9x9xf32> {graph.name = "x"}, %w: tensor<32x8x3x3xf32> {graph.name = "w"}, %b: tensor<32xf32> {graph.name = "b"}) -> (tensor<4x32x5x5xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w, %b {group = 4 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, tile.schedule = #tile.schedule<"im2col" {batched = true, bk = 72 : i64, bm = 32 : i64, bn = 128 : i64, double_c = false, overlap = false, pointwise = false, vec = "n"}>} : (tensor<4x32x9x9xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<4x32x5x5xf32>
  %r = graph.relu %y : tensor<4x32x5x5xf32> -> tensor<4x32x5x5xf32>
  func.return %r : tensor<4x32x5x5xf32>
}

// CHECK:      %y_col = memref.alloc() {alignment = 128 : i64} : memref<288x100xf32>
// CHECK-NEXT: tile.kernel "y_im2col" (%x_1 = %x : memref<4x32x9x9xf32>, %col = %y_col : memref<288x100xf32>)
// CHECK-SAME:   taihu.layer = "y", taihu.op = "graph.conv2d", taihu.algorithm = "im2col", taihu.shape = "4x32x5x5 <- 4x32x9x9 * 32x8x3x3 s2 p1,1,1,1 g4"
// CHECK-NEXT:   tile.im2col %x_1 -> %col {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : memref<4x32x9x9xf32> -> memref<288x100xf32>
// CHECK:      %[[C:.*]] = memref.expand_shape {{.*}} into memref<4x72x100xf32>
// CHECK:      %[[W:.*]] = memref.expand_shape {{.*}} into memref<4x8x72xf32>
// CHECK:      %y_gemm = memref.alloc() {alignment = 128 : i64} : memref<32x100xf32>
// CHECK:      %[[Y:.*]] = memref.expand_shape {{.*}} into memref<4x8x100xf32>
// CHECK:      %[[B:.*]] = memref.expand_shape %b {{.*}} into memref<4x8x1xf32>
// CHECK:      tile.kernel "y" (%w_1 = %[[W]] : memref<4x8x72xf32>, %col = %[[C]] : memref<4x72x100xf32>, %y_1 = %[[Y]] : memref<4x8x100xf32>, %bias = %[[B]] : memref<4x8x1xf32>)
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
// CHECK:      tile.kernel "y_relayout" (%src = %{{.*}} : memref<32x4x25xf32>, %y_1 = %{{.*}} : memref<4x32x25xf32>)
// CHECK-SAME:   taihu.algorithm = "relayout"
// CHECK:        tile.for %n = 0 to 4 step 1 name "n" {
// CHECK-NEXT:     tile.move %src[%c0, %n, %c0] sizes [32, 1, 25] -> %t
// CHECK-NEXT:     tile.move %t -> %y_1[%n, %c0, %c0] sizes [1, 32, 25]

// -----

// N = 1, dilated 5x5 with channels < 64: per-image GEMM straight into the NCHW output; each
// image's Ho*Wo = 400 columns of col padded to the GEMM's N block (image_columns = 512), so no B
// window crosses the border (full, prefetched DMAs; 004 L865 padded allocation).
func.func @main(%x: tensor<1x16x24x24xf32> {graph.name = "x"}, %w: tensor<32x16x5x5xf32> {graph.name = "w"}) -> (tensor<1x32x20x20xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w {dilations = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>} : (tensor<1x16x24x24xf32>, tensor<32x16x5x5xf32>) -> tensor<1x32x20x20xf32>
  func.return %y : tensor<1x32x20x20xf32>
}

// CHECK:      tile.kernel "y_im2col"
// CHECK-NEXT:   tile.im2col %x_1 -> %col {kernel = array<i64: 5, 5>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, image_columns = 512 : i64} : memref<1x16x24x24xf32> -> memref<400x512xf32>
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x32x400xf32>, %col = %{{.*}} : memref<1x400x1x512xf32>, %y_1 = %{{.*}} : memref<1x1x32x400xf32>)
// CHECK:          tile.move %col[%c0, %{{.*}}, %c0, %c0] sizes [1, {{[0-9]+}}, 1, 512] pad 0.0 -> %b_s
// CHECK:          tile.move %c_s -> %y_1[%c0, %c0, %{{.*}}, %{{.*}}] sizes [1, 1, {{[0-9]+}}, {{[0-9]+}}]
// CHECK-NOT:  tile.kernel "y_relayout"

// -----

// Pointwise (1x1, stride 1, no padding): im2col is the identity, the GEMM reads x directly
// (Ho*Wo = 256 is a multiple of the GEMM's N block), one image per iteration of the loop "n".
func.func @main(%x: tensor<2x16x16x16xf32> {graph.name = "x"}, %w: tensor<48x16x1x1xf32> {graph.name = "w"}) -> (tensor<2x48x16x16xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<2x16x16x16xf32>, tensor<48x16x1x1xf32>) -> tensor<2x48x16x16xf32>
  func.return %y : tensor<2x48x16x16xf32>
}

// CHECK-NOT:  tile.kernel "y_im2col"
// CHECK:      %[[X:.*]] = memref.expand_shape {{.*}} into memref<2x1x16x256xf32>
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x48x16xf32>, %x_1 = %[[X]] : memref<2x1x16x256xf32>, %y_1 = %{{.*}} : memref<2x1x48x256xf32>)
// CHECK-SAME:   taihu.blocking = "{{.*}} pointwise"
// CHECK:        tile.for %n = 0 to 2 step 1 name "n" {
// CHECK:          tile.move %x_1[%n, %c0, %c0, %{{.*}}] sizes [1, 1, 16, {{[0-9]+}}] -> %b

// -----

// Pointwise on a small map (Ho*Wo = 36, K = 1024): the GEMM with the overlapping distribution
// (backends/model/overlap_gemm.py, 004 L708): the weights' rows split 64-way over the CPEs (cpe),
// x's K block on every CPE (rep: one broadcast DMA), f32 operands of the fp64 C (mixed precision,
// no convert), N not split over the mesh (no padding of the 36 columns, no clipped pieces).
func.func @main(%x: tensor<1x1024x6x6xf32> {graph.name = "x"}, %w: tensor<256x1024x1x1xf32> {graph.name = "w"}) -> (tensor<1x256x6x6xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<1x1024x6x6xf32>, tensor<256x1024x1x1xf32>) -> tensor<1x256x6x6xf32>
  func.return %y : tensor<1x256x6x6xf32>
}

// CHECK-NOT:  tile.kernel "y_im2col"
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x256x1024xf32>, %x_1 = %{{.*}} : memref<1x1x1024x36xf32>, %y_1 = %{{.*}} : memref<1x1x256x36xf32>)
// CHECK-SAME:   taihu.blocking = "bm=256 bn=36 bk=64 scheme=4 vec=n overlap pointwise"
// CHECK:        %a = tile.alloc double : !tile.buf<256x64xf32, cpe>
// CHECK-NEXT:   %b = tile.alloc double : !tile.buf<64x36xf32, rep>
// CHECK:        tile.for %cK = 0 to 1024 step 64 name "cK" {
// CHECK-NEXT:     tile.move %w_1[%c0, %c0, %cK] sizes [1, 256, 64] -> %a
// CHECK-NEXT:     tile.move %x_1[%c0, %c0, %cK, %c0] sizes [1, 1, 64, 36] -> %b
// CHECK-NEXT:     tile.gemm %a, %b -> %c m 256 n 36 k 64 scheme 4 vec n : !tile.buf<256x64xf32, cpe>, !tile.buf<64x36xf32, rep>, !tile.buf<256x36xf64, cpe>
// CHECK:        tile.map convert ins(%c : !tile.buf<256x36xf64, cpe>) out(%c_s : !tile.buf<256x36xf32, cpe>)
// CHECK-NEXT:   tile.move %c_s -> %y_1[%c0, %c0, %c0, %c0] sizes [1, 1, 256, 36] :

// -----

// The same with Ho*Wo = 25 (not a multiple of the 4 vector lanes): a 1x1 im2col copies x into a
// col whose image columns are padded to 28; the C store is clipped to the 25 columns.
func.func @main(%x: tensor<1x1024x5x5xf32> {graph.name = "x"}, %w: tensor<256x1024x1x1xf32> {graph.name = "w"}) -> (tensor<1x256x5x5xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<1x1024x5x5xf32>, tensor<256x1024x1x1xf32>) -> tensor<1x256x5x5xf32>
  func.return %y : tensor<1x256x5x5xf32>
}

// CHECK:      tile.kernel "y_im2col" (%x_1 = %x : memref<1x1024x5x5xf32>, %col = %y_col : memref<1024x28xf32>)
// CHECK-NEXT:   tile.im2col %x_1 -> %col {kernel = array<i64: 1, 1>, image_columns = 28 : i64} : memref<1x1024x5x5xf32> -> memref<1024x28xf32>
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x256x1024xf32>, %col = %{{.*}} : memref<1x1024x1x28xf32>, %y_1 = %{{.*}} : memref<1x1x256x25xf32>)
// CHECK-SAME:   taihu.blocking = "bm=256 bn=28 bk=64 scheme=4 vec=n overlap"
// CHECK:          tile.move %col[%c0, %cK, %c0, %c0] sizes [1, 64, 1, 28] -> %b
// CHECK:        tile.move %c_s -> %y_1[%c0, %c0, %c0, %c0] sizes [1, 1, 256, 28] clip
