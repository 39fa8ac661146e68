// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s

// Pooling (floor and ceil mode, dilations, count_include_pad, 1-D and 3-D windows),
// global average pooling, batch_norm, lrn and softmax.

func.func @pool(%x: tensor<1x8x112x112xf32>, %s: tensor<1x2x5xf32>, %v: tensor<2x3x4x6x6xf32>) {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x112x112xf32> -> tensor<1x8x56x56xf32>
  %1 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode} : tensor<1x8x112x112xf32> -> tensor<1x8x56x56xf32>
  %2 = graph.max_pool %s {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 1, 1>, ceil_mode} : tensor<1x2x5xf32> -> tensor<1x2x3xf32>
  %3 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 2, 3>} : tensor<1x8x112x112xf32> -> tensor<1x8x110x109xf32>
  %4 = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x112x112xf32> -> tensor<1x8x56x56xf32>
  %5 = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : tensor<1x8x112x112xf32> -> tensor<1x8x112x112xf32>
  %6 = graph.avg_pool %v {kernel_shape = array<i64: 2, 3, 3>, strides = array<i64: 1, 3, 3>, ceil_mode} : tensor<2x3x4x6x6xf32> -> tensor<2x3x3x2x2xf32>
  %7 = graph.global_avg_pool %x : tensor<1x8x112x112xf32> -> tensor<1x8x1x1xf32>
  %8 = graph.global_avg_pool %v : tensor<2x3x4x6x6xf32> -> tensor<2x3x1x1x1xf32>
  func.return
}

// CHECK-LABEL: func.func @pool
// CHECK-NEXT:    %0 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x112x112xf32> -> tensor<1x8x56x56xf32>
// CHECK-NEXT:    %1 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode} : tensor<1x8x112x112xf32> -> tensor<1x8x56x56xf32>
// CHECK-NEXT:    %2 = graph.max_pool %s {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 1, 1>, ceil_mode} : tensor<1x2x5xf32> -> tensor<1x2x3xf32>
// CHECK-NEXT:    %3 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 2, 3>} : tensor<1x8x112x112xf32> -> tensor<1x8x110x109xf32>
// CHECK-NEXT:    %4 = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x112x112xf32> -> tensor<1x8x56x56xf32>
// CHECK-NEXT:    %5 = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : tensor<1x8x112x112xf32> -> tensor<1x8x112x112xf32>
// CHECK-NEXT:    %6 = graph.avg_pool %v {kernel_shape = array<i64: 2, 3, 3>, strides = array<i64: 1, 3, 3>, ceil_mode} : tensor<2x3x4x6x6xf32> -> tensor<2x3x3x2x2xf32>
// CHECK-NEXT:    %7 = graph.global_avg_pool %x : tensor<1x8x112x112xf32> -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %8 = graph.global_avg_pool %v : tensor<2x3x4x6x6xf32> -> tensor<2x3x1x1x1xf32>

func.func @norm(%x: tensor<2x4x5x5xf32>, %c: tensor<4xf32>, %l: tensor<3x7xf32>) {
  %0 = graph.batch_norm %x, %c, %c, %c, %c : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
  %1 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-03 : f32} : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
  %2 = graph.lrn %x {size = 5 : i64} : tensor<2x4x5x5xf32> -> tensor<2x4x5x5xf32>
  %3 = graph.lrn %x {size = 3 : i64, alpha = 2.000000e-04 : f32, beta = 5.000000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<2x4x5x5xf32> -> tensor<2x4x5x5xf32>
  %4 = graph.softmax %l : tensor<3x7xf32> -> tensor<3x7xf32>
  %5 = graph.softmax %x {axis = 1 : i64} : tensor<2x4x5x5xf32> -> tensor<2x4x5x5xf32>
  func.return
}

// CHECK-LABEL: func.func @norm
// CHECK-NEXT:    %0 = graph.batch_norm %x, %c, %c, %c, %c : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
// CHECK-NEXT:    %1 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-03 : f32} : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
// CHECK-NEXT:    %2 = graph.lrn %x {size = 5 : i64} : tensor<2x4x5x5xf32> -> tensor<2x4x5x5xf32>
// CHECK-NEXT:    %3 = graph.lrn %x {size = 3 : i64, alpha = 2.000000e-04 : f32, beta = 5.000000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<2x4x5x5xf32> -> tensor<2x4x5x5xf32>
// CHECK-NEXT:    %4 = graph.softmax %l : tensor<3x7xf32> -> tensor<3x7xf32>
// CHECK-NEXT:    %5 = graph.softmax %x {axis = 1 : i64} : tensor<2x4x5x5xf32> -> tensor<2x4x5x5xf32>
