// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule}' --split-input-file | filecheck %s
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-graph-to-tile}' --split-input-file | filecheck %s --check-prefix=LOWER

// A depthwise convolution's schedule is its tile (backends/model/depthwise_conv.py): `planes`
// channels per tile (C or a multiple of 64, split over the CPEs) and `rows` output rows (Ho:
// whole planes). graph-schedule writes the model's pick; an edited one is followed exactly.

func.func @main(%x: tensor<1x32x112x112xf32>) -> tensor<1x32x112x112xf32> {
  %w = graph.constant dense<0.25> : tensor<32x1x3x3xf32>
  %y = graph.conv2d %x, %w {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x112x112xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x112x112xf32>
  func.return %y : tensor<1x32x112x112xf32>
}
// CHECK:      graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 32 : i64, rows = 28 : i64}>, group = 32 : i64
// LOWER:      taihu.algorithm = "depthwise"
// LOWER:        %x_t = tile.alloc double : !tile.buf<32x30x112xf32, cpe>
// LOWER:        tile.for %r = 0 to 112 step 28 name "r"

// -----

// Edited: 8 output rows per tile.
func.func @main(%x: tensor<1x32x112x112xf32>) -> tensor<1x32x112x112xf32> {
  %w = graph.constant dense<0.25> : tensor<32x1x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"depthwise" {planes = 32 : i64, rows = 8 : i64}>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x112x112xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x112x112xf32>
  func.return %y : tensor<1x32x112x112xf32>
}
// CHECK:      #tile.schedule<"depthwise" {planes = 32 : i64, rows = 8 : i64}>
// LOWER:        %x_t = tile.alloc double : !tile.buf<32x10x112xf32, cpe>
// LOWER:        %y_t = tile.alloc double : !tile.buf<32x8x112xf32, cpe>
// LOWER:        tile.for %r = 0 to 112 step 8 name "r"
