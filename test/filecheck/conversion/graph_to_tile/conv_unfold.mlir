// RUN: %taihu-opt %s -p 'convert-graph-to-tile{conv-algorithm=implicit}' --split-input-file | filecheck %s

// Implicit convolution with constant weights: the taps are concatenated along K (tile.unfold).
// Per C block (128 output channels x 8 output rows, one per mesh column) and K block (here 32
// input channels x 9 taps = 288, the planner's pick): the weight tile (K-major constant re-laid
// at compile time, cr, so the fp32 -> fp64 conversion is a plain convert), 3 input-row tiles
// (one per kernel row, pad 0.0 at the image border), tile.unfold into B, ONE tile.gemm with
// k = 288 (k_local = 36).
func.func @main(%x: tensor<1x64x10x12xf32> {graph.name = "x"}, %b: tensor<128xf32> {graph.name = "b"}) -> (tensor<1x128x10x12xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<128x64x3x3xf32>
  %y = graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x10x12xf32>, tensor<128x64x3x3xf32>, tensor<128xf32>) -> tensor<1x128x10x12xf32>
  %r = graph.relu %y : tensor<1x128x10x12xf32> -> tensor<1x128x10x12xf32>
  func.return %r : tensor<1x128x10x12xf32>
}

// CHECK:      "memref.global"() <{sym_name = "y_wu", type = memref<576x128xf32>
// CHECK:      tile.kernel "y" (%x_1 = %x : memref<1x64x10x12xf32>, %w = %y_wu : memref<576x128xf32>, %y_1 = %{{.*}} : memref<1x128x120xf32>, %bias = %{{.*}} : memref<128x1xf32>)
// CHECK-SAME:   taihu.algorithm = "implicit"
// CHECK-SAME:   taihu.blocking = "bm=128 bn=96 bk=288 cb=32 scheme=2 vec=m variant=unfold"
// CHECK-NEXT:   %w_s = tile.alloc double : !tile.buf<288x128xf32, cr>
// CHECK-NEXT:   %w_t = tile.alloc : !tile.buf<288x128xf64, cr>
// CHECK-NEXT:   %x_r0 = tile.alloc double : !tile.buf<32x8x12xf32, rc>
// CHECK-NEXT:   %x_r1 = tile.alloc double : !tile.buf<32x8x12xf32, rc>
// CHECK-NEXT:   %x_r2 = tile.alloc double : !tile.buf<32x8x12xf32, rc>
// CHECK-NEXT:   %x_u = tile.alloc : !tile.buf<288x96xf64, rc>
// CHECK-NEXT:   %y_t = tile.alloc : !tile.buf<128x96xf64, rc, col>
// CHECK-NEXT:   %y_s = tile.alloc double : !tile.buf<128x96xf32, rc>
// CHECK:        tile.for %cRo = 0 to 10 step 8 name "cRo" {
// CHECK-NEXT:     tile.map fill out(%y_t : !tile.buf<128x96xf64, rc, col>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:     tile.for %cNi = 0 to 64 step 32 name "cNi" {
// CHECK-NEXT:       %[[K:.*]] = arith.muli %cNi, %c9 : index
// CHECK-NEXT:       tile.move %w[%[[K]], %c0] sizes [288, 128] -> %w_s
// CHECK-NEXT:       tile.map convert ins(%w_s : !tile.buf<288x128xf32, cr>) out(%w_t : !tile.buf<288x128xf64, cr>)
// CHECK-NEXT:       %[[R0:.*]] = arith.subi %cRo, %c1 : index
// CHECK-NEXT:       tile.move %x_1[%c0, %cNi, %[[R0]], %c0] sizes [1, 32, 8, 12] pad 0.0 -> %x_r0
// CHECK-NEXT:       tile.move %x_1[%c0, %cNi, %cRo, %c0] sizes [1, 32, 8, 12] pad 0.0 -> %x_r1
// CHECK-NEXT:       %[[R2:.*]] = arith.addi %cRo, %c1 : index
// CHECK-NEXT:       tile.move %x_1[%c0, %cNi, %[[R2]], %c0] sizes [1, 32, 8, 12] pad 0.0 -> %x_r2
// CHECK-NEXT:       tile.unfold ins(%x_r0, %x_r1, %x_r2 : {{.*}}) out(%x_u : !tile.buf<288x96xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1>}
// CHECK-NEXT:       tile.gemm %w_t, %x_u -> %y_t m 128 n 96 k 288 scheme 2 vec m trans_a
// CHECK-NEXT:     }
// CHECK:          tile.map relu ins(%y_t
// CHECK-NEXT:     tile.map convert ins(%y_t : !tile.buf<128x96xf64, rc, col>) out(%y_s : !tile.buf<128x96xf32, rc>)
// CHECK-NEXT:     %[[P:.*]] = arith.muli %cRo, %c12 : index
// CHECK-NEXT:     tile.move %y_s -> %y_1[%c0, %c0, %[[P]]] sizes [1, 128, 96] clip

// -----

// Wo = 7 is not a multiple of the 4-pixel register tile: rows are padded to 8 in LDM (the unfold's
// right pad grows by 1), C goes to a (1, 128, 7*8) buffer and y_relayout keeps 7 of every 8.
func.func @main(%x: tensor<1x128x7x7xf32> {graph.name = "x"}) -> (tensor<1x128x7x7xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<128x128x3x3xf32>
  %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x128x7x7xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x7x7xf32>
  func.return %y : tensor<1x128x7x7xf32>
}

// CHECK:      %y_rows = memref.alloc() {alignment = 128 : i64} : memref<1x128x56xf32>
// CHECK:      tile.kernel "y" ({{.*}}%y_1 = %y_rows : memref<1x128x56xf32>)
// CHECK:          tile.unfold ins({{.*}}) out(%x_u : !tile.buf<{{[0-9]+}}x64xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 2>, dilations = array<i64: 1>}
// CHECK:        tile.move %y_s -> %y_1[%c0, %c0, %c0] sizes [1, 128, 64] clip
// CHECK:      tile.kernel "y_relayout" (%src = %{{.*}} : memref<896x8xf32>, %y_1 = %{{.*}} : memref<896x7xf32>)
// CHECK-SAME:   taihu.algorithm = "relayout"
// CHECK-NEXT:   %t = tile.alloc double : !tile.buf<896x7xf32, cpe>
// CHECK:        tile.move %src[%c0, %c0] sizes [896, 7] -> %t
// CHECK-NEXT:   tile.move %t -> %y_1[%c0, %c0] sizes [896, 7]
