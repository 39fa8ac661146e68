// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// A schedule annotation on a graph op: the algorithm and its parameters (integers, strings,
// booleans), printed with sorted keys.
func.func @main(%x: tensor<1x64x56x56xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32> {
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, tile.schedule = #tile.schedule<"implicit" {b_b = 1 : i64, b_ro = 2 : i64, bk = 32 : i64, bm = 64 : i64, bn = 56 : i64, vec = "n"}>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32>
  func.return %y : tensor<1x64x56x56xf32>
}

// CHECK: tile.schedule = #tile.schedule<"implicit" {b_b = 1 : i64, b_ro = 2 : i64, bk = 32 : i64, bm = 64 : i64, bn = 56 : i64, vec = "n"}>
// CHECK-GENERIC: tile.schedule = #tile.schedule<"implicit" {b_b = 1 : i64, b_ro = 2 : i64, bk = 32 : i64, bm = 64 : i64, bn = 56 : i64, vec = "n"}>

// -----

func.func @fc(%x: tensor<1x2048xf32>, %w: tensor<1000x2048xf32>) -> tensor<1x1000xf32> {
  %y = graph.gemm %x, %w {trans_b, tile.schedule = #tile.schedule<"gemm" {bk = 256 : i64, bm = 32 : i64, bn = 256 : i64, double_c = true, trans_b = false, vec = "n"}>} : (tensor<1x2048xf32>, tensor<1000x2048xf32>) -> tensor<1x1000xf32>
  func.return %y : tensor<1x1000xf32>
}

// CHECK: #tile.schedule<"gemm" {bk = 256 : i64, bm = 32 : i64, bn = 256 : i64, double_c = true, trans_b = false, vec = "n"}>
// CHECK-GENERIC: #tile.schedule<"gemm" {bk = 256 : i64, bm = 32 : i64, bn = 256 : i64, double_c = true, trans_b = false, vec = "n"}>
