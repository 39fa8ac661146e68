// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s
// RUN: TAIHU_GENERIC_ROUNDTRIP

// graph.conv2d (bias, no bias, strides/pads/dilations, grouped, depthwise), graph.matmul
// (2-D, 1-D promotion, batch broadcasting), graph.gemm (alpha/beta/transposes, optional C).

func.func @conv(%x: tensor<1x3x224x224xf32>, %w: tensor<64x3x7x7xf32>, %b: tensor<64xf32>,
                %g: tensor<1x8x10x12xf32>, %wg: tensor<4x4x3x3xf32>, %wd: tensor<8x1x3x3xf32>) {
  %0 = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<1x64x112x112xf32>
  %1 = graph.conv2d %x, %w : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x218x218xf32>
  %2 = graph.conv2d %g, %wg {pads = array<i64: 0, 1, 2, 0>, dilations = array<i64: 2, 1>, group = 2 : i64} : (tensor<1x8x10x12xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x11xf32>
  %3 = graph.conv2d %g, %wd {pads = array<i64: 1, 1, 1, 1>, group = 8 : i64} : (tensor<1x8x10x12xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x10x12xf32>
  func.return
}

// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %0 = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<1x64x112x112xf32>
// CHECK-NEXT:    %1 = graph.conv2d %x, %w : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x218x218xf32>
// CHECK-NEXT:    %2 = graph.conv2d %g, %wg {pads = array<i64: 0, 1, 2, 0>, dilations = array<i64: 2, 1>, group = 2 : i64} : (tensor<1x8x10x12xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x11xf32>
// CHECK-NEXT:    %3 = graph.conv2d %g, %wd {pads = array<i64: 1, 1, 1, 1>, group = 8 : i64} : (tensor<1x8x10x12xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x10x12xf32>

// The generic form carries every property, defaults included.
// CHECK-GENERIC: "graph.conv2d"(%{{.*}}, %{{.*}}) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x218x218xf32>

func.func @matmul(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>, %v: tensor<4xf32>, %m: tensor<3x4xf64>, %n: tensor<4x2xf64>) {
  %0 = graph.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  %1 = graph.matmul %v, %b : (tensor<4xf32>, tensor<5x4x6xf32>) -> tensor<5x6xf32>
  %2 = graph.matmul %a, %v : (tensor<2x1x3x4xf32>, tensor<4xf32>) -> tensor<2x1x3xf32>
  %3 = graph.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %4 = graph.matmul %m, %n : (tensor<3x4xf64>, tensor<4x2xf64>) -> tensor<3x2xf64>
  func.return
}

// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %0 = graph.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
// CHECK-NEXT:    %1 = graph.matmul %v, %b : (tensor<4xf32>, tensor<5x4x6xf32>) -> tensor<5x6xf32>
// CHECK-NEXT:    %2 = graph.matmul %a, %v : (tensor<2x1x3x4xf32>, tensor<4xf32>) -> tensor<2x1x3xf32>
// CHECK-NEXT:    %3 = graph.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
// CHECK-NEXT:    %4 = graph.matmul %m, %n : (tensor<3x4xf64>, tensor<4x2xf64>) -> tensor<3x2xf64>

func.func @gemm(%a: tensor<2x8xf32>, %at: tensor<8x2xf32>, %b: tensor<8x10xf32>, %bt: tensor<10x8xf32>, %c: tensor<10xf32>, %c1: tensor<2x1xf32>) {
  %0 = graph.gemm %a, %b, %c : (tensor<2x8xf32>, tensor<8x10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  %1 = graph.gemm %at, %bt, %c1 {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a, trans_b} : (tensor<8x2xf32>, tensor<10x8xf32>, tensor<2x1xf32>) -> tensor<2x10xf32>
  %2 = graph.gemm %a, %bt {trans_b} : (tensor<2x8xf32>, tensor<10x8xf32>) -> tensor<2x10xf32>
  func.return
}

// CHECK-LABEL: func.func @gemm
// CHECK-NEXT:    %0 = graph.gemm %a, %b, %c : (tensor<2x8xf32>, tensor<8x10xf32>, tensor<10xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    %1 = graph.gemm %at, %bt, %c1 {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a, trans_b} : (tensor<8x2xf32>, tensor<10x8xf32>, tensor<2x1xf32>) -> tensor<2x10xf32>
// CHECK-NEXT:    %2 = graph.gemm %a, %bt {trans_b} : (tensor<2x8xf32>, tensor<10x8xf32>) -> tensor<2x10xf32>
