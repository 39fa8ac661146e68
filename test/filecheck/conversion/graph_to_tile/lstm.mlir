// RUN: %taihu-opt %s -p convert-graph-to-tile | filecheck %s

// LSTM (004 §5.2, Algorithm 6): NAME_bias (Wb + Rb, b is not a constant), NAME_x (one GEMM
// for all time steps: XW = X W^T + b, W (4H, input) read transposed), NAME (the recurrence:
// h, c and the 4 gate tiles stay in LDM; per step and gate the mesh GEMM g_j += h R_j^T, R_j
// loaded once because the four fit in LDM; the cell as maps; y[t] = h).
func.func @main(%x: tensor<5x3x20xf32> {graph.name = "x"}, %w: tensor<1x96x20xf32> {graph.name = "w"}, %r: tensor<1x96x24xf32> {graph.name = "r"}, %b: tensor<1x192xf32> {graph.name = "b"}) -> (tensor<5x1x3x24xf32> {graph.name = "y"}, tensor<1x3x24xf32> {graph.name = "y_h"}, tensor<1x3x24xf32> {graph.name = "y_c"}) {
  %y, %yh, %yc = graph.lstm %x, %w, %r bias(%b : tensor<1x192xf32>) {hidden_size = 24 : i64} : (tensor<5x3x20xf32>, tensor<1x96x20xf32>, tensor<1x96x24xf32>) -> (tensor<5x1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x24xf32>)
  func.return %y, %yh, %yc : tensor<5x1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x24xf32>
}

// CHECK:      tile.kernel "y_bias" ({{.*}}) attributes {taihu.layer = "y", taihu.op = "graph.lstm", taihu.algorithm = "map"
// CHECK:        tile.map add
// CHECK:      tile.kernel "y_x" (%x_1 = %{{.*}} : memref<15x20xf32>, %w_1 = %{{.*}} : memref<96x20xf32>, %xw = %y_xw : memref<15x96xf32>, %bias = %y_bias : memref<1x96xf32>)
// CHECK-SAME:   taihu.algorithm = "gemm", taihu.shape = "15x96 <- 15x20 * 96x20^T (GEPB)"
// CHECK:        tile.gemm {{.*}} trans_b
// CHECK:        tile.map add ins(%c{{.*}}, %bias
// CHECK:      tile.kernel "y" (%xw = %{{.*}} : memref<5x3x4x24xf32>, %r_1 = %{{.*}} : memref<4x24x24xf32>, %y_1 = %{{.*}} : memref<5x3x24xf32>, %y_h_1 = %{{.*}} : memref<3x24xf32>, %y_c_1 = %{{.*}} : memref<3x24xf32>)
// CHECK-SAME:   taihu.algorithm = "lstm", taihu.shape = "5x3x24 <- 5x3x20 (H=24)"
// CHECK:        %h = tile.alloc : !tile.buf<32x128xf64, rc>
// CHECK-NEXT:   %c = tile.alloc : !tile.buf<32x128xf64, rc>
// CHECK:        %r0 = tile.alloc : !tile.buf<128x128xf64, cr, col>
// CHECK:        %r3 = tile.alloc : !tile.buf<128x128xf64, cr, col>
// CHECK:        tile.map fill out(%h : !tile.buf<32x128xf64, rc>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:   tile.map fill out(%c : !tile.buf<32x128xf64, rc>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:   tile.move %r_1[%c0, %c0, %c0] sizes [1, 128, 128] pad 0.0 -> %r_s
// CHECK:        tile.for %t = 0 to 5 step 1 name "t" {
// CHECK-NEXT:     tile.move %xw[%t, %c0, %c0, %c0] sizes [1, 32, 1, 128] pad 0.0 -> %s
// CHECK-NEXT:     tile.map convert ins(%s : !tile.buf<32x128xf32, rc>) out(%g0 : !tile.buf<32x128xf64, rc>)
// CHECK-NEXT:     tile.gemm %h, %r0 -> %g0 m 32 n 128 k 128 scheme 4 vec n trans_b
// CHECK:          tile.gemm %h, %r3 -> %g3 m 32 n 128 k 128 scheme 4 vec n trans_b
// CHECK-NEXT:     tile.map sigmoid ins(%g0
// CHECK-NEXT:     tile.map sigmoid ins(%g1
// CHECK-NEXT:     tile.map sigmoid ins(%g2
// CHECK-NEXT:     tile.map tanh ins(%g3
// CHECK-NEXT:     tile.map mul ins(%g2, %c {{.*}} out(%c
// CHECK-NEXT:     tile.map mul ins(%g0, %g3 {{.*}} out(%tmp
// CHECK-NEXT:     tile.map add ins(%c, %tmp {{.*}} out(%c
// CHECK-NEXT:     tile.map tanh ins(%c {{.*}} out(%tmp
// CHECK-NEXT:     tile.map mul ins(%g1, %tmp {{.*}} out(%h
// CHECK-NEXT:     tile.map convert ins(%h {{.*}} out(%s
// CHECK-NEXT:     tile.move %s -> %y_1[%t, %c0, %c0] sizes [1, 32, 128] clip
// CHECK-NEXT:   }
// CHECK:        tile.move %s -> %y_h_1[%c0, %c0] sizes [32, 128] clip
// CHECK:        tile.move %s -> %y_c_1[%c0, %c0] sizes [32, 128] clip
