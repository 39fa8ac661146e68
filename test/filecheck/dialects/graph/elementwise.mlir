// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s

// Broadcasting binary ops, variadic sum, unary activations, clip (with infinite default
// bounds elided), leaky_relu and dropout.

func.func @binary(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>, %c: tensor<2x1x4xf32>, %d: tensor<3x1xf32>) {
  %0 = graph.add %a, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %1 = graph.sub %c, %d : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %2 = graph.mul %b, %a : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = graph.div %d, %b : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %4 = graph.sum %a : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = graph.sum %a, %b, %c, %d : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return
}

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %0 = graph.add %a, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %1 = graph.sub %c, %d : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %2 = graph.mul %b, %a : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %3 = graph.div %d, %b : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %4 = graph.sum %a : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %5 = graph.sum %a, %b, %c, %d : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>

func.func @unary(%x: tensor<1x16xf16>, %y: tensor<8xf64>) {
  %0 = graph.relu %x : tensor<1x16xf16> -> tensor<1x16xf16>
  %1 = graph.sigmoid %x : tensor<1x16xf16> -> tensor<1x16xf16>
  %2 = graph.tanh %y : tensor<8xf64> -> tensor<8xf64>
  %3 = graph.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<1x16xf16> -> tensor<1x16xf16>
  %4 = graph.clip %y {min = -1.000000e+00 : f32} : tensor<8xf64> -> tensor<8xf64>
  %5 = graph.clip %y : tensor<8xf64> -> tensor<8xf64>
  %6 = graph.leaky_relu %x : tensor<1x16xf16> -> tensor<1x16xf16>
  %7 = graph.leaky_relu %y {alpha = 2.000000e-01 : f32} : tensor<8xf64> -> tensor<8xf64>
  %8 = graph.dropout %x : tensor<1x16xf16> -> tensor<1x16xf16>
  %9 = graph.dropout %y {ratio = 1.000000e-01 : f32} : tensor<8xf64> -> tensor<8xf64>
  %10 = graph.sqrt %y : tensor<8xf64> -> tensor<8xf64>
  %11 = graph.erf %x : tensor<1x16xf16> -> tensor<1x16xf16>
  func.return
}

// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %0 = graph.relu %x : tensor<1x16xf16> -> tensor<1x16xf16>
// CHECK-NEXT:    %1 = graph.sigmoid %x : tensor<1x16xf16> -> tensor<1x16xf16>
// CHECK-NEXT:    %2 = graph.tanh %y : tensor<8xf64> -> tensor<8xf64>
// CHECK-NEXT:    %3 = graph.clip %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<1x16xf16> -> tensor<1x16xf16>
// CHECK-NEXT:    %4 = graph.clip %y {min = -1.000000e+00 : f32} : tensor<8xf64> -> tensor<8xf64>
// CHECK-NEXT:    %5 = graph.clip %y : tensor<8xf64> -> tensor<8xf64>
// CHECK-NEXT:    %6 = graph.leaky_relu %x : tensor<1x16xf16> -> tensor<1x16xf16>
// CHECK-NEXT:    %7 = graph.leaky_relu %y {alpha = 2.000000e-01 : f32} : tensor<8xf64> -> tensor<8xf64>
// CHECK-NEXT:    %8 = graph.dropout %x : tensor<1x16xf16> -> tensor<1x16xf16>
// CHECK-NEXT:    %9 = graph.dropout %y {ratio = 1.000000e-01 : f32} : tensor<8xf64> -> tensor<8xf64>
// CHECK-NEXT:    %10 = graph.sqrt %y : tensor<8xf64> -> tensor<8xf64>
// CHECK-NEXT:    %11 = graph.erf %x : tensor<1x16xf16> -> tensor<1x16xf16>
