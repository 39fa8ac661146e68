// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule}' --split-input-file | filecheck %s
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-graph-to-tile}' --split-input-file | filecheck %s --check-prefix=LOWER

// A grouped convolution's schedule is its tile (backends/model/grouped_conv.py): `groups` groups
// per tile (G or a multiple of 64, split over the CPEs) and `rows` output rows (Ho: whole
// planes), `direct` (the micro-kernel: column copies and 4 x 4 register blocks, or depthwise
// passes per input channel). graph-schedule writes the model's pick; an edited one is followed.

func.func @main(%x: tensor<1x440x7x7xf32>) -> tensor<1x440x7x7xf32> {
  %w = graph.constant dense<0.25> : tensor<440x8x3x3xf32>
  %y = graph.conv2d %x, %w {group = 55 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x440x7x7xf32>, tensor<440x8x3x3xf32>) -> tensor<1x440x7x7xf32>
  func.return %y : tensor<1x440x7x7xf32>
}
// CHECK:      graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = true, groups = 55 : i64, rows = 7 : i64}>, group = 55 : i64
// LOWER:      taihu.algorithm = "grouped"
// LOWER:        %x_t = tile.alloc double : !tile.buf<55x8x9x7xf32, cpe>
// LOWER:        %u0_t = tile.alloc : !tile.buf<55x8x9x8xf32, cpe>
// LOWER:        tile.map grouped_direct {{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1>}

// -----

// Edited: 2 output rows per tile, the depthwise passes.
func.func @main(%x: tensor<1x440x7x7xf32>) -> tensor<1x440x7x7xf32> {
  %w = graph.constant dense<0.25> : tensor<440x8x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"grouped" {direct = false, groups = 55 : i64, rows = 2 : i64}>, group = 55 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x440x7x7xf32>, tensor<440x8x3x3xf32>) -> tensor<1x440x7x7xf32>
  func.return %y : tensor<1x440x7x7xf32>
}
// CHECK:      #tile.schedule<"grouped" {direct = false, groups = 55 : i64, rows = 2 : i64}>
// LOWER:        %y_t = tile.alloc double : !tile.buf<55x8x2x7xf32, cpe>
// LOWER:        %x_t = tile.alloc double : !tile.buf<55x8x4x7xf32, cpe>
// LOWER:        tile.for %r = 0 to 7 step 2 name "r"

// -----

// A schedule of another algorithm is followed too: this layer's im2col GEMM.
func.func @main(%x: tensor<1x440x7x7xf32>) -> tensor<1x440x7x7xf32> {
  %w = graph.constant dense<0.25> : tensor<440x8x3x3xf32>
  %y = graph.conv2d %x, %w {tile.schedule = #tile.schedule<"im2col" {batched = false, bk = 72 : i64, bm = 64 : i64, bn = 52 : i64, double_c = true, overlap = true, pointwise = false, vec = "n"}>, group = 55 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x440x7x7xf32>, tensor<440x8x3x3xf32>) -> tensor<1x440x7x7xf32>
  func.return %y : tensor<1x440x7x7xf32>
}
// CHECK:      #tile.schedule<"im2col"
// LOWER:      taihu.algorithm = "im2col"
// LOWER-NOT:  tile.map grouped
