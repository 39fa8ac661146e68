// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// The grouped convolution's schedule (backends/model/grouped_conv.py): `groups` groups per tile
// (G or a multiple of 64, split over the CPEs) and `rows` output rows per tile (Ho: whole planes).
func.func @main(%x: tensor<1x128x56x56xf32>, %w: tensor<128x4x3x3xf32>) -> tensor<1x128x56x56xf32> {
  %y = graph.conv2d %x, %w {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 32 : i64, rows = 7 : i64}>} : (tensor<1x128x56x56xf32>, tensor<128x4x3x3xf32>) -> tensor<1x128x56x56xf32>
  func.return %y : tensor<1x128x56x56xf32>
}

// CHECK: tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 32 : i64, rows = 7 : i64}>
// CHECK-GENERIC: tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 32 : i64, rows = 7 : i64}>
