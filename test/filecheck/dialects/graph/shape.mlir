// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s

// Data-movement ops: concat, reshape, flatten, transpose, unsqueeze, pad (incl. negative
// pads), layout_transform; integer element types are accepted here.

func.func @shape(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>, %i: tensor<6xi64>) {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  %1 = graph.concat %a, %a, %a {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x12xf32>
  %2 = graph.reshape %a : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %3 = graph.reshape %i : tensor<6xi64> -> tensor<1x2x3xi64>
  %4 = graph.flatten %a : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %5 = graph.flatten %a {axis = 0 : i64} : tensor<2x3x4xf32> -> tensor<1x24xf32>
  %6 = graph.flatten %a {axis = -1 : i64} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %7 = graph.transpose %a : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  %8 = graph.transpose %a {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %9 = graph.unsqueeze %a {axes = array<i64: 0, -1>} : tensor<2x3x4xf32> -> tensor<1x2x3x4x1xf32>
  %10 = graph.unsqueeze %i {axes = array<i64: 1>} : tensor<6xi64> -> tensor<6x1xi64>
  %11 = graph.pad %a {pads = array<i64: 0, 1, 2, 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x5x8xf32>
  %12 = graph.pad %a {pads = array<i64: 0, -1, 0, 1, 0, -2>, value = -1.000000e+00 : f32} : tensor<2x3x4xf32> -> tensor<3x2x2xf32>
  %13 = graph.layout_transform %a {from_layout = "NCH", to_layout = "HNC"} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @shape
// CHECK-NEXT:    %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:    %1 = graph.concat %a, %a, %a {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x12xf32>
// CHECK-NEXT:    %2 = graph.reshape %a : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %3 = graph.reshape %i : tensor<6xi64> -> tensor<1x2x3xi64>
// CHECK-NEXT:    %4 = graph.flatten %a : tensor<2x3x4xf32> -> tensor<2x12xf32>
// CHECK-NEXT:    %5 = graph.flatten %a {axis = 0 : i64} : tensor<2x3x4xf32> -> tensor<1x24xf32>
// CHECK-NEXT:    %6 = graph.flatten %a {axis = -1 : i64} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %7 = graph.transpose %a : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT:    %8 = graph.transpose %a {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT:    %9 = graph.unsqueeze %a {axes = array<i64: 0, -1>} : tensor<2x3x4xf32> -> tensor<1x2x3x4x1xf32>
// CHECK-NEXT:    %10 = graph.unsqueeze %i {axes = array<i64: 1>} : tensor<6xi64> -> tensor<6x1xi64>
// CHECK-NEXT:    %11 = graph.pad %a {pads = array<i64: 0, 1, 2, 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x5x8xf32>
// CHECK-NEXT:    %12 = graph.pad %a {pads = array<i64: 0, -1, 0, 1, 0, -2>, value = -1.000000e+00 : f32} : tensor<2x3x4xf32> -> tensor<3x2x2xf32>
// CHECK-NEXT:    %13 = graph.layout_transform %a {from_layout = "NCH", to_layout = "HNC"} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
