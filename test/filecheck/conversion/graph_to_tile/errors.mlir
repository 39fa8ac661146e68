// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file --verify-diagnostics | filecheck %s
// RUN: not %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=fft}' --split-input-file 2>&1 | filecheck %s --check-prefix=OPT

// OPT: convert-graph-to-tile: conv-algorithm must be one of auto, implicit, im2col, winograd, depthwise, grouped, got 'fft'

func.func @main(%x: tensor<1x2x8x8xf32> {graph.name = "x"}) -> (tensor<1x2x6x6xf32> {graph.name = "y"}) {
  %p = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : tensor<1x2x8x8xf32> -> tensor<1x2x6x6xf32>
  func.return %p : tensor<1x2x6x6xf32>
}
// CHECK: convert-graph-to-tile: graph.max_pool: dilated pooling is not supported

// -----

func.func @main(%x: tensor<1x2x3x3xf32> {graph.name = "x"}, %s: tensor<2xf32> {graph.name = "s"}) -> (tensor<1x2x3x3xf32> {graph.name = "y"}) {
  %b = graph.constant dense<0.0> : tensor<2xf32>
  %bn = graph.batch_norm %x, %s, %b, %b, %b : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %bn : tensor<1x2x3x3xf32>
}
// CHECK: convert-graph-to-tile: graph.batch_norm: scale, bias, mean and var must be graph.constant (run graph-fold-constants)

// -----

func.func @main(%x: tensor<4x4xf16> {graph.name = "x"}) -> (tensor<4x4xf16> {graph.name = "y"}) {
  %r = graph.relu %x : tensor<4x4xf16> -> tensor<4x4xf16>
  func.return %r : tensor<4x4xf16>
}
// CHECK: convert-graph-to-tile: @main argument 0 is f16 and read by graph.relu: an f16 argument must be read only by graph.cast to f32 or f64

// -----

func.func @main(%x: tensor<2x100000xf32> {graph.name = "x"}) -> (tensor<2x100000xf32> {graph.name = "y"}) {
  %s = graph.softmax %x : tensor<2x100000xf32> -> tensor<2x100000xf32>
  func.return %s : tensor<2x100000xf32>
}
// CHECK: convert-graph-to-tile: graph.softmax: axis of 100000 elements does not fit 56832 B of LDM per CPE
