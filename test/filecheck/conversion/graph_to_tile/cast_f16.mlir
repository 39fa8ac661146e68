// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file --verify-diagnostics | filecheck %s

// float16 at the function boundary ("f16 storage, f32 compute", as the ONNX frontend imports a
// half model): the graph.cast of an f16 argument and the graph.cast to an f16 result are the
// host's conversions -- the argument and result buffers are f32 memrefs, the casts disappear,
// the kernels see f32 only.

func.func @main(%x: tensor<2x64xf16> {graph.name = "x"}) -> (tensor<2x64xf16> {graph.name = "y"}) {
  %x32 = graph.cast %x : tensor<2x64xf16> -> tensor<2x64xf32>
  %r = graph.relu %x32 : tensor<2x64xf32> -> tensor<2x64xf32>
  %y = graph.cast %r : tensor<2x64xf32> -> tensor<2x64xf16>
  func.return %y : tensor<2x64xf16>
}

// CHECK:      func.func @main(%x: memref<2x64xf32> {graph.name = "x"}) -> (memref<2x64xf32> {graph.name = "y"}) {
// CHECK-NOT:    graph.cast
// CHECK:        tile.kernel "r"
// CHECK:        tile.map relu
// CHECK-NOT:    f16
// CHECK:        func.return

// -----

// An f16 argument read by anything but casts: refused (the core group holds no f16).
func.func @main(%x: tensor<4x4xf16> {graph.name = "x"}) -> (tensor<4x4xf32> {graph.name = "y"}) {
  %x32 = graph.cast %x : tensor<4x4xf16> -> tensor<4x4xf32>
  %r = graph.relu %x : tensor<4x4xf16> -> tensor<4x4xf16>
  func.return %x32 : tensor<4x4xf32>
}
// CHECK: convert-graph-to-tile: @main argument 0 is f16 and read by graph.relu: an f16 argument must be read only by graph.cast to f32 or f64 (f16 storage, f32 compute; the host converts it)

// -----

func.func @main(%x: tensor<4x4xf32> {graph.name = "x"}) -> (tensor<4x4xf16> {graph.name = "y"}) {
  %c = graph.constant dense<1.0> : tensor<4x4xf16>
  func.return %c : tensor<4x4xf16>
}
// CHECK: convert-graph-to-tile: @main result 0 is f16 and made by graph.constant: an f16 result must be a graph.cast from f32 or f64 (the host rounds it)

// -----

// A cast between ops (here f32 -> f64) has no lowering.
func.func @main(%x: tensor<4x4xf32> {graph.name = "x"}) -> (tensor<4x4xf64> {graph.name = "y"}) {
  %d = graph.cast %x : tensor<4x4xf32> -> tensor<4x4xf64>
  %r = graph.relu %d : tensor<4x4xf64> -> tensor<4x4xf64>
  func.return %r : tensor<4x4xf64>
}
// CHECK: convert-graph-to-tile: graph.cast tensor<4x4xf32> -> tensor<4x4xf64> inside @main has no lowering: only the f16 casts of arguments and results (the host's conversions) are lowered
