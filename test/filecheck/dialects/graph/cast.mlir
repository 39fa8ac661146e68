// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s

// graph.cast: f16 <-> f32 <-> f64, same shape (the ONNX frontend's float16 boundary casts).

func.func @main(%x: tensor<1x3x4x4xf16> {graph.name = "x"}, %d: tensor<5xf64>) -> (tensor<1x3x4x4xf16> {graph.name = "y"}) {
  %x32 = graph.cast %x : tensor<1x3x4x4xf16> -> tensor<1x3x4x4xf32>
  %r = graph.relu %x32 : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
  %y = graph.cast %r : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf16>
  %d32 = graph.cast %d : tensor<5xf64> -> tensor<5xf32>
  %d64 = graph.cast %d32 : tensor<5xf32> -> tensor<5xf64>
  func.return %y : tensor<1x3x4x4xf16>
}

// CHECK:      func.func @main(%x: tensor<1x3x4x4xf16> {graph.name = "x"}, %d: tensor<5xf64>) -> (tensor<1x3x4x4xf16> {graph.name = "y"}) {
// CHECK-NEXT:   %x32 = graph.cast %x : tensor<1x3x4x4xf16> -> tensor<1x3x4x4xf32>
// CHECK-NEXT:   %r = graph.relu %x32 : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
// CHECK-NEXT:   %y = graph.cast %r : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf16>
// CHECK-NEXT:   %d32 = graph.cast %d : tensor<5xf64> -> tensor<5xf32>
// CHECK-NEXT:   %d64 = graph.cast %d32 : tensor<5xf32> -> tensor<5xf64>
// CHECK-NEXT:   func.return %y : tensor<1x3x4x4xf16>
