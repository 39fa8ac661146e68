// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=implicit}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IMPL
// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=winograd}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=WINO

// Forcing an algorithm that cannot run the layer is a diagnostic naming the op and the reason.

// channels < 64: the implicit GEMM primitive cannot be used (004 L1266); 5x5: no F(2x2,3x3)
func.func @main(%x: tensor<1x3x16x16xf32> {graph.name = "x"}, %w: tensor<64x3x5x5xf32> {graph.name = "w"}) -> (tensor<1x64x12x12xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w : (tensor<1x3x16x16xf32>, tensor<64x3x5x5xf32>) -> tensor<1x64x12x12xf32>
  func.return %y : tensor<1x64x12x12xf32>
}
// IMPL: convert-graph-to-tile: graph.conv2d: conv-algorithm=implicit: implicit GEMM convolution needs >= 64 input and output channels (got 3 -> 64; 004 L1266); use im2col
// WINO: convert-graph-to-tile: graph.conv2d: conv-algorithm=winograd: Winograd F(2x2,3x3) needs a 3x3 kernel (got 5x5)

// -----

// grouped (depthwise) and strided
func.func @main(%x: tensor<1x64x16x16xf32> {graph.name = "x"}, %w: tensor<64x1x3x3xf32> {graph.name = "w"}) -> (tensor<1x64x8x8xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w {group = 64 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x16x16xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x8x8xf32>
  func.return %y : tensor<1x64x8x8xf32>
}
// IMPL: convert-graph-to-tile: graph.conv2d: conv-algorithm=implicit: implicit GEMM convolution needs group = 1 (got group = 64); use im2col
// WINO: convert-graph-to-tile: graph.conv2d: conv-algorithm=winograd: Winograd F(2x2,3x3) needs stride 1 (got [2, 2])

// -----

// dilated 3x3
func.func @main(%x: tensor<1x64x16x16xf32> {graph.name = "x"}, %w: tensor<64x64x3x3xf32> {graph.name = "w"}) -> (tensor<1x64x12x12xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w {dilations = array<i64: 2, 2>} : (tensor<1x64x16x16xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x12x12xf32>
  func.return %y : tensor<1x64x12x12xf32>
}
// IMPL: tile.kernel "y"{{.*}}taihu.algorithm = "implicit"
// WINO: convert-graph-to-tile: graph.conv2d: conv-algorithm=winograd: Winograd F(2x2,3x3) needs dilation 1 (got [2, 2])
