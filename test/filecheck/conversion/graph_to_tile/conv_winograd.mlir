// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=winograd}' --split-input-file | filecheck %s

// Winograd F(2x2, 3x3) (004 §5.1.3, Algorithm 5): NAME_filter (U = G w G^T, (16, M, C)),
// NAME_input (V = B^T d B, (16, P_pad, C), P = N*ceil(Ho/2)*ceil(Wo/2) padded to the GEMM block,
// 004 L1194-1196), NAME (16 GEMMs M^(xi) = V^(xi) x U^(xi)^T, an outer loop over xi),
// NAME_output (y = A^T m A, then the bias and the absorbed relu while the outputs are in LDM:
// no NAME_bias pass over y).
func.func @main(%x: tensor<2x64x10x12xf32> {graph.name = "x"}, %w: tensor<64x64x3x3xf32> {graph.name = "w"}, %b: tensor<64xf32> {graph.name = "b"}) -> (tensor<2x64x10x12xf32> {graph.name = "y"}) {
  %y = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x64x10x12xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<2x64x10x12xf32>
  %r = graph.relu %y : tensor<2x64x10x12xf32> -> tensor<2x64x10x12xf32>
  func.return %r : tensor<2x64x10x12xf32>
}

// CHECK:      %y_u = memref.alloc() {alignment = 128 : i64} : memref<16x64x64xf32>
// CHECK-NEXT: tile.kernel "y_filter" (%w_1 = %w : memref<64x64x3x3xf32>, %u = %y_u : memref<16x64x64xf32>)
// CHECK-SAME:   taihu.algorithm = "winograd"
// CHECK-NEXT:   tile.winograd_filter %w_1 -> %u : memref<64x64x3x3xf32> -> memref<16x64x64xf32>
// CHECK:      %y_v = memref.alloc() {alignment = 128 : i64} : memref<16x[[P:[0-9]+]]x64xf32>
// CHECK-NEXT: tile.kernel "y_input" (%x_1 = %x : memref<2x64x10x12xf32>, %v = %y_v : memref<16x[[P]]x64xf32>)
// CHECK-NEXT:   tile.winograd_input %x_1 -> %v {tiles_per_cpe = {{[0-9]+}} : i64, pads = array<i64: 1, 1, 1, 1>}
// CHECK:      %y_m = memref.alloc() {alignment = 128 : i64} : memref<16x[[P]]x64xf32>
// CHECK-NEXT: tile.kernel "y" (%v = %y_v : memref<16x[[P]]x64xf32>, %u = %y_u : memref<16x64x64xf32>, %m = %y_m : memref<16x[[P]]x64xf32>)
// CHECK-SAME:   taihu.algorithm = "winograd"
// CHECK:        tile.for %xi = 0 to 16 step 1 name "xi" {
// CHECK:          tile.move %v[%xi, %{{.*}}, %c0] sizes [1, {{[0-9]+}}, 64] -> %a_s
// CHECK:          tile.move %u[%xi, %c0, %c0] sizes [1, {{[0-9]+}}, 64] {{.*}}-> %b_s
// CHECK:          tile.gemm %a, %b_1 -> %c m {{[0-9]+}} n {{[0-9]+}} k 64 scheme {{[24]}} vec {{[mn]}} trans_b
// CHECK:          tile.move %c_s -> %m[%xi, %{{.*}}, %c0]
// CHECK:      tile.kernel "y_output" (%m = %y_m : memref<16x[[P]]x64xf32>, %y_1 = %y : memref<2x64x10x12xf32>, %bias = %b : memref<64xf32>)
// CHECK-SAME:   taihu.fused = ["graph.relu"]
// CHECK-NEXT:   tile.winograd_output %m bias %bias : memref<64xf32> -> %y_1 {activation = #tile<map_kind relu>} : memref<16x[[P]]x64xf32> -> memref<2x64x10x12xf32>
// CHECK-NOT:  tile.kernel "y_bias"

// -----

// Constant weights: U is computed at compile time (a memref.global), no filter kernel; stored
// (16, C, M) when the GEMMs use the overlapping distribution (B = U^T, M contiguous), else (16, M, C).
func.func @main(%x: tensor<1x16x6x6xf32> {graph.name = "x"}) -> (tensor<1x8x6x6xf32> {graph.name = "y"}) {
  %w = graph.constant dense<1.0> : tensor<8x16x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x6x6xf32>, tensor<8x16x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}

// CHECK:      "memref.global"() <{sym_name = "y_u", type = memref<16x[[U:16x8|8x16]]xf32>
// CHECK-NOT:  tile.kernel "y_filter"
// CHECK:      tile.kernel "y_input"
// CHECK:      tile.kernel "y" ({{.*}}%u = %y_u : memref<16x[[U]]xf32>
// CHECK:      tile.kernel "y_output"
// CHECK-NOT:  tile.kernel "y_bias"
