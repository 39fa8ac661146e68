// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// graph.cast verifier: a float element type on both sides, a different one, the same shape.

func.func @same_type(%x: tensor<4xf32>) {
  %0 = graph.cast %x : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// CHECK: graph.cast: input and result have the same element type f32: nothing to cast

// -----

func.func @shape(%x: tensor<4xf16>) {
  %0 = graph.cast %x : tensor<4xf16> -> tensor<2x2xf32>
  func.return
}

// CHECK: graph.cast: result rank is 2 but inferred 1 (tensor<4xf32>)

// -----

func.func @int(%x: tensor<4xi64>) {
  %0 = graph.cast %x : tensor<4xi64> -> tensor<4xf32>
  func.return
}

// CHECK: graph.cast: input element type must be f16, f32 or f64, got i64
