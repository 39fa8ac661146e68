// RUN: %taihu-opt %s -p 'taihu-lower' --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// An illegal grouped schedule is one diagnostic at the op, naming the parameter.

func.func @main(%x: tensor<1x1024x14x14xf32>) -> tensor<1x1024x14x14xf32> {
  %w = graph.constant dense<0.25> : tensor<1024x8x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 96 : i64, rows = 14 : i64}>, group = 128 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1024x14x14xf32>, tensor<1024x8x3x3xf32>) -> tensor<1x1024x14x14xf32>
  func.return %y : tensor<1x1024x14x14xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: groups=96 is neither the groups G = 128 nor a multiple of 64 (the CPEs)

// -----

func.func @main(%x: tensor<1x1024x14x14xf32>) -> tensor<1x1024x14x14xf32> {
  %w = graph.constant dense<0.25> : tensor<1024x8x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 192 : i64, rows = 14 : i64}>, group = 128 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1024x14x14xf32>, tensor<1024x8x3x3xf32>) -> tensor<1x1024x14x14xf32>
  func.return %y : tensor<1x1024x14x14xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: groups=192 exceeds the groups G = 128 rounded up to 64

// -----

func.func @main(%x: tensor<1x1024x14x14xf32>) -> tensor<1x1024x14x14xf32> {
  %w = graph.constant dense<0.25> : tensor<1024x8x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 64 : i64, rows = 15 : i64}>, group = 128 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1024x14x14xf32>, tensor<1024x8x3x3xf32>) -> tensor<1x1024x14x14xf32>
  func.return %y : tensor<1x1024x14x14xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: rows=15 exceeds the output rows Ho = 14

// -----

func.func @main(%x: tensor<1x512x56x56xf32>) -> tensor<1x512x56x56xf32> {
  %w = graph.constant dense<0.25> : tensor<512x8x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 64 : i64, rows = 56 : i64}>, group = 64 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x512x56x56xf32>, tensor<512x8x3x3xf32>) -> tensor<1x512x56x56xf32>
  func.return %y : tensor<1x512x56x56xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: grouped groups=64 rows=56: LDM footprint {{[0-9]+}} B > 56832 B (ldm_user_bytes)

// -----

func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = graph.constant dense<0.25> : tensor<16x1x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 16 : i64, rows = 8 : i64}>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: grouped: not applicable: the grouped kernel needs group > 1 and not depthwise (got group = 16, C = 16, M = 16); use im2col or depthwise

// -----

func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = graph.constant dense<0.25> : tensor<16x4x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 4 : i64}>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: missing parameter "rows" for grouped (expected: direct, groups, rows)

// -----

func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = graph.constant dense<0.25> : tensor<16x4x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 16 : i64, rows = 8 : i64}>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: depthwise: not applicable: the depthwise kernel needs group = C = M
