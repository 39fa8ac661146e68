// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | filecheck %s
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule}' | filecheck %s
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule conv-algorithm=im2col}' | filecheck %s --check-prefix=IM2COL

// graph-schedule puts the model's plan on every conv / gemm / matmul as data: the algorithm and
// each decision (blocks, vector dimension, distribution, double buffering, fusion).

func.func @main(%x: tensor<1x64x56x56xf32>, %a: tensor<300x500xf32>, %b: tensor<500x700xf32>) -> (tensor<1x64x56x56xf32>, tensor<300x700xf32>) {
  %w = graph.constant dense<0.5> : tensor<64x64x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32>
  %r = graph.relu %y : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32>
  %m = graph.matmul %a, %b : (tensor<300x500xf32>, tensor<500x700xf32>) -> tensor<300x700xf32>
  func.return %r, %m : tensor<1x64x56x56xf32>, tensor<300x700xf32>
}

// CHECK:      %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"unfold" {bm = {{[0-9]+}} : i64, cb = {{[0-9]+}} : i64, vec = "{{[mn]}}"}>, pads = array<i64: 1, 1, 1, 1>}
// CHECK:      %m = graph.matmul %a, %b {tile.schedule = #tile.schedule<"gemm" {bk = {{[0-9]+}} : i64, bm = {{[0-9]+}} : i64, bn = {{[0-9]+}} : i64, double_c = {{true|false}}, trans_a = false, trans_b = false, vec = "{{[mn]}}"}>}

// IM2COL:     #tile.schedule<"im2col"
