// RUN: %taihu-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// A schedule's parameters are integers, strings or booleans.
func.func @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = graph.matmul %a, %b {tile.schedule = #tile.schedule<"gemm" {bm = 1.5 : f64}>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %m : tensor<4x4xf32>
}
// CHECK: #tile.schedule: parameter 'bm' must be an integer, a string or a boolean, got 1.500000e+00 : f64

// -----

func.func @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = graph.matmul %a, %b {tile.schedule = #tile.schedule<"gemm" [1, 2]>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %m : tensor<4x4xf32>
}
// CHECK: #tile.schedule: expected a dictionary of parameters
