// RUN: %taihu-opt %s -p 'taihu-lower' --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// An illegal depthwise schedule is one diagnostic at the op, naming the parameter.

func.func @main(%x: tensor<1x144x56x56xf32>) -> tensor<1x144x56x56xf32> {
  %w = graph.constant dense<0.25> : tensor<144x1x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 96 : i64, rows = 56 : i64}>, group = 144 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x144x56x56xf32>, tensor<144x1x3x3xf32>) -> tensor<1x144x56x56xf32>
  func.return %y : tensor<1x144x56x56xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: planes=96 is neither the channels C = 144 nor a multiple of 64 (the CPEs)

// -----

func.func @main(%x: tensor<1x144x56x56xf32>) -> tensor<1x144x56x56xf32> {
  %w = graph.constant dense<0.25> : tensor<144x1x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 64 : i64, rows = 60 : i64}>, group = 144 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x144x56x56xf32>, tensor<144x1x3x3xf32>) -> tensor<1x144x56x56xf32>
  func.return %y : tensor<1x144x56x56xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: rows=60 exceeds the output rows Ho = 56

// -----

func.func @main(%x: tensor<1x144x56x56xf32>) -> tensor<1x144x56x56xf32> {
  %w = graph.constant dense<0.25> : tensor<144x1x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 144 : i64, rows = 56 : i64}>, group = 144 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x144x56x56xf32>, tensor<144x1x3x3xf32>) -> tensor<1x144x56x56xf32>
  func.return %y : tensor<1x144x56x56xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: depthwise planes=144 rows=56: LDM footprint 150656 B > 56832 B (ldm_user_bytes)

// -----

func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = graph.constant dense<0.25> : tensor<16x4x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 16 : i64, rows = 8 : i64}>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: depthwise: not applicable: the depthwise kernel needs group = C = M (one filter per channel; got C = 16, M = 16, group = 4); use im2col

// -----

func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = graph.constant dense<0.25> : tensor<16x1x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 16 : i64}>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: missing parameter "rows" for depthwise (expected: planes, rows)
