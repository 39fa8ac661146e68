// RUN: %taihu-opt %s -p 'convert-graph-to-tile' --split-input-file | filecheck %s
// RUN: %taihu-opt %s -p 'convert-graph-to-tile{fuse=false}' --split-input-file | filecheck %s --check-prefix=NOFUSE

// A residual sum (ResNet's shortcut: graph.add / 2-input graph.sum of the conv output and a tensor
// computed before the conv, then relu) is fused into the conv's C store when the chosen plan stores
// the NCHW output from LDM (fuses_residual): the residual window is loaded at the block start
// (before the K loop, prefetched), added to the fp32 tile after the f64 -> f32 convert (the
// reference rounds the conv first), relu, store. No separate add kernel.

// Pointwise (the GEMM reads x, stores y; here the overlapping-distribution GEMM, C and the
// residual window split over the CPEs along M): one kernel with the residual operand.
func.func @main(%x: tensor<1x64x16x16xf32> {graph.name = "x"}, %s: tensor<1x128x16x16xf32> {graph.name = "s"}, %w: tensor<128x64x1x1xf32> {graph.name = "w"}, %b: tensor<128xf32> {graph.name = "b"}) -> (tensor<1x128x16x16xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w, %b : (tensor<1x64x16x16xf32>, tensor<128x64x1x1xf32>, tensor<128xf32>) -> tensor<1x128x16x16xf32>
  %a = graph.add %y, %s : (tensor<1x128x16x16xf32>, tensor<1x128x16x16xf32>) -> tensor<1x128x16x16xf32>
  %r = graph.relu %a : tensor<1x128x16x16xf32> -> tensor<1x128x16x16xf32>
  func.return %r : tensor<1x128x16x16xf32>
}

// CHECK-NOT:  tile.kernel "a"
// CHECK:      %[[SF:.*]] = memref.collapse_shape %s
// CHECK-NEXT: %[[S:.*]] = memref.expand_shape %[[SF]] {{.*}} into memref<1x1x128x256xf32>
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}} : memref<1x128x64xf32>, %x_1 = %{{.*}} : memref<1x1x64x256xf32>, %y_1 = %{{.*}} : memref<1x1x128x256xf32>, %res = %[[S]] : memref<1x1x128x256xf32>, %bias = %{{.*}} : memref<1x128x1xf32>)
// CHECK-SAME:   taihu.algorithm = "im2col"{{.*}}taihu.fused = ["graph.add", "graph.relu"], taihu.blocking = "{{.*}} overlap pointwise"
// CHECK:        %res_1 = tile.alloc double : !tile.buf<128x64xf32, cpe>
// (one K step: the residual window is loaded after the step's operands, which its GEMM waits
// for first)
// CHECK:        tile.for %cN = 0 to 256 step 64 name "cN" {
// CHECK-NEXT:     tile.map fill out(%c
// CHECK-NEXT:     tile.move %x_1[%c0, %c0, %c0, %cN] sizes [1, 1, 64, 64] -> %b_1
// CHECK-NEXT:     tile.move %res[%c0, %c0, %c0, %cN] sizes [1, 1, 128, 64] -> %res_1
// CHECK-NEXT:     tile.gemm
// CHECK:          tile.map add ins(%c, %bias_1
// CHECK-NEXT:     tile.map convert ins(%c : !tile.buf<128x64xf64, cpe>) out(%c_s : !tile.buf<128x64xf32, cpe>)
// CHECK-NEXT:     tile.map add ins(%c_s, %res_1 : !tile.buf<128x64xf32, cpe>, !tile.buf<128x64xf32, cpe>) out(%c_s
// CHECK-NEXT:     tile.map relu ins(%c_s : !tile.buf<128x64xf32, cpe>) out(%c_s
// CHECK-NEXT:     tile.move %c_s -> %y_1[%c0, %c0, %c0, %cN] sizes [1, 1, 128, 64]
// CHECK-NOT:  tile.kernel
// CHECK:      func.return

// NOFUSE:     tile.kernel "y" ({{.*}}) attributes {taihu.layer = "y", taihu.op = "graph.conv2d", taihu.algorithm = "im2col", taihu.shape = "{{[^"]*}}", taihu.blocking
// NOFUSE:     tile.kernel "a" {{.*}}taihu.op = "graph.add"
// NOFUSE:     tile.kernel "r" {{.*}}taihu.op = "graph.relu"

// -----

// im2col (3x3, 16 channels: the implicit algorithm needs 64): the per-image GEMM stores the NCHW
// output, so the 2-input graph.sum is fused the same way.
func.func @main(%x: tensor<1x16x8x8xf32> {graph.name = "x"}, %s: tensor<1x32x8x8xf32> {graph.name = "s"}, %w: tensor<32x16x3x3xf32> {graph.name = "w"}) -> (tensor<1x32x8x8xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  %a = graph.sum %s, %y : (tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %r = graph.relu %a : tensor<1x32x8x8xf32> -> tensor<1x32x8x8xf32>
  func.return %r : tensor<1x32x8x8xf32>
}

// CHECK:      tile.kernel "y_im2col"
// CHECK:      tile.kernel "y" (%w_1 = %{{.*}}, %col = %{{.*}}, %y_1 = %{{.*}} : memref<1x1x32x64xf32>, %res = %{{.*}} : memref<1x1x32x64xf32>)
// CHECK-SAME:   taihu.fused = ["graph.sum", "graph.relu"]
// CHECK:        tile.move %res[%c0, %c0, %c0, {{%c0|%cN}}] sizes [1, 1, [[BM:[0-9]+]], [[BN:[0-9]+]]] pad 0.0 -> %res_1
// CHECK:        tile.gemm
// CHECK:        tile.map convert ins(%c : {{.*}}) out(%c_s
// CHECK-NEXT:   tile.map add ins(%c_s, %res_1
// CHECK-NEXT:   tile.map relu ins(%c_s
// CHECK-NEXT:   tile.move %c_s -> %y_1[%c0, %c0, %c0, {{%c0|%cN}}] sizes [1, 1, [[BM]], [[BN]]] clip
// CHECK-NOT:  tile.kernel
// CHECK:      func.return

// NOFUSE:     tile.kernel "a" {{.*}}taihu.op = "graph.sum"

// -----

// Batched im2col GEMM (N = 4: one GEMM over all images into (M, N, Ho*Wo), then a relayout to
// NCHW): its C store is not the output tensor, so the sum stays a separate kernel.
func.func @main(%x: tensor<4x32x9x9xf32> {graph.name = "x"}, %s: tensor<4x32x5x5xf32> {graph.name = "s"}, %w: tensor<32x8x3x3xf32> {graph.name = "w"}, %b: tensor<32xf32> {graph.name = "b"}) -> (tensor<4x32x5x5xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w, %b {group = 4 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<4x32x9x9xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<4x32x5x5xf32>
  %a = graph.add %y, %s : (tensor<4x32x5x5xf32>, tensor<4x32x5x5xf32>) -> tensor<4x32x5x5xf32>
  %r = graph.relu %a : tensor<4x32x5x5xf32> -> tensor<4x32x5x5xf32>
  func.return %r : tensor<4x32x5x5xf32>
}

// CHECK:      tile.kernel "y" (%w_1 = %{{.*}}, %col = %{{.*}}, %y_1 = %{{.*}} : memref<4x8x100xf32>, %bias = %{{.*}})
// CHECK-NOT:    taihu.fused
// CHECK-SAME:   taihu.blocking = "{{.*}} batched"
// CHECK:      tile.kernel "y_relayout"
// CHECK:      tile.kernel "a" (%x0 = %{{.*}} : memref<3200xf32>, %x1 = %{{.*}} : memref<3200xf32>, %y_1 = %{{.*}} : memref<3200xf32>)
// CHECK-SAME:   taihu.op = "graph.add", taihu.algorithm = "map"{{.*}}taihu.fused = ["graph.relu"]
// CHECK:        tile.map add
// CHECK-NEXT:   tile.map relu

// -----

// The other operand is computed after the conv (here: from x, by an op placed later in the
// block): the conv kernel cannot read it, nothing is absorbed.
func.func @main(%x: tensor<1x64x16x16xf32> {graph.name = "x"}, %w: tensor<64x64x1x1xf32> {graph.name = "w"}) -> (tensor<1x64x16x16xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<1x64x16x16xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x16x16xf32>
  %t = graph.tanh %x : tensor<1x64x16x16xf32> -> tensor<1x64x16x16xf32>
  %a = graph.add %y, %t : (tensor<1x64x16x16xf32>, tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  func.return %a : tensor<1x64x16x16xf32>
}

// CHECK:      tile.kernel "y" (%w_1 = %{{.*}}, %x_1 = %{{.*}}, %y_1 = %{{.*}} : memref<1x1x64x256xf32>) attributes
// CHECK-NOT:    taihu.fused
// CHECK-SAME:   taihu.blocking
// CHECK:      tile.kernel "t" (%x0 = %{{.*}} : memref<16384xf32>, %y_1 = %{{.*}} : memref<16384xf32>, %res = %{{.*}} : memref<16384xf32>)
// CHECK-SAME:   taihu.op = "graph.tanh"{{.*}}taihu.fused = ["graph.add"]
