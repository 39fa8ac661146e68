// RUN: %taihu-opt %s -p 'taihu-lower' --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// Illegal schedules are one diagnostic at the op, naming the parameter.

func.func @main(%a: tensor<256x512xf64>, %b: tensor<512x256xf64>) -> tensor<256x256xf64> {
  %m = graph.matmul %a, %b {tile.schedule = #tile.schedule<"gemm" {bk = 64 : i64, bm = 48 : i64, bn = 128 : i64, double_c = false, trans_a = false, trans_b = false, vec = "m"}>} : (tensor<256x512xf64>, tensor<512x256xf64>) -> tensor<256x256xf64>
  func.return %m : tensor<256x256xf64>
}
// CHECK: convert-graph-to-tile: graph.matmul: illegal tile.schedule: bm=48 is not a multiple of 128 (vec=m)

// -----

func.func @main(%a: tensor<1024x1024xf64>, %b: tensor<1024x1024xf64>) -> tensor<1024x1024xf64> {
  %m = graph.matmul %a, %b {tile.schedule = #tile.schedule<"gemm" {bk = 512 : i64, bm = 512 : i64, bn = 512 : i64, double_c = true, trans_a = false, trans_b = false, vec = "n"}>} : (tensor<1024x1024xf64>, tensor<1024x1024xf64>) -> tensor<1024x1024xf64>
  func.return %m : tensor<1024x1024xf64>
}
// CHECK: convert-graph-to-tile: graph.matmul: illegal tile.schedule: gemm bm=512 bn=512 bk=512: LDM footprint 196608 B > 56832 B (ldm_user_bytes)

// -----

func.func @main(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x28x28xf32> {
  %w = graph.constant dense<0.5> : tensor<64x64x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, tile.schedule = #tile.schedule<"winograd" {bk = 64 : i64, bm = 64 : i64, bn = 64 : i64, double_c = true, tiles_per_cpe = 4 : i64, vec = "n"}>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x28x28xf32>
  func.return %y : tensor<1x64x28x28xf32>
}
// CHECK: convert-graph-to-tile: graph.conv2d: illegal tile.schedule: winograd: not applicable: Winograd F(2x2,3x3) needs stride 1 (got [2, 2])

// -----

func.func @main(%a: tensor<256x512xf64>, %b: tensor<512x256xf64>) -> tensor<256x256xf64> {
  %m = graph.matmul %a, %b {tile.schedule = #tile.schedule<"gemm" {bm = 64 : i64}>} : (tensor<256x512xf64>, tensor<512x256xf64>) -> tensor<256x256xf64>
  func.return %m : tensor<256x256xf64>
}
// CHECK: convert-graph-to-tile: graph.matmul: illegal tile.schedule: missing parameter "bk" for gemm (expected: bk, bm, bn, double_c, trans_a, trans_b, vec)
