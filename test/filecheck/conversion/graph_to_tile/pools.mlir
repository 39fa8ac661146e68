// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s

// ResNet-50 pool1: 3x3 stride 2 pad 1 max pooling of 1x64x112x112. Planes (N*C = 64) are split
// over the CPEs; a tile is 14 output rows, loaded as 29 whole input rows (contiguous) starting
// at row 2*h - 1 (-inf padding above row 0); the column pad is the map's `pads` (taps skipped).
func.func @main(%x: tensor<1x64x112x112xf32> {graph.name = "x"}) -> (tensor<1x64x56x56xf32> {graph.name = "y"}) {
  %p = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x64x112x112xf32> -> tensor<1x64x56x56xf32>
  func.return %p : tensor<1x64x56x56xf32>
}

// CHECK:      tile.kernel "p" (%x_1 = %{{.*}} : memref<64x112x112xf32>, %y = %{{.*}} : memref<64x56x56xf32>) attributes {taihu.layer = "p", taihu.op = "graph.max_pool", taihu.algorithm = "window", taihu.shape = "1x64x56x56 <- 1x64x112x112 k3x3 s2x2", taihu.useful_flops = 1806336 : i64} {
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<64x29x112xf32, cpe>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<64x14x56xf32, cpe>
// CHECK:        tile.for %h = 0 to 56 step 14 name "h" {
// CHECK-NEXT:     %[[M:.*]] = arith.muli %h, %c2 : index
// CHECK-NEXT:     %[[R:.*]] = arith.subi %[[M]], %c1 : index
// CHECK-NEXT:     tile.move %x_1[%c0, %[[R]], %c0] sizes [64, 29, 112] pad -inf -> %tin
// CHECK-NEXT:     tile.map max_pool ins(%tin : !tile.buf<64x29x112xf32, cpe>) out(%tout : !tile.buf<64x14x56xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 0>}
// CHECK-NEXT:     tile.move %tout -> %y[%c0, %h, %c0] sizes [64, 14, 56]

// -----

// Average pooling with pads, ceil_mode and count_include_pad = false: the divisor varies per
// output position, so 1/count is a constant (Ho, Wo) operand (rep tile, second map input). One
// row tile: the whole planes move (one DMA per CPE) and all four pads are the map's.
func.func @main(%x: tensor<2x3x7x9xf32> {graph.name = "x"}) -> (tensor<2x3x4x5xf32> {graph.name = "y"}) {
  %p = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode} : tensor<2x3x7x9xf32> -> tensor<2x3x4x5xf32>
  func.return %p : tensor<2x3x4x5xf32>
}

// CHECK:      "memref.global"() <{sym_name = "p_inv_count", type = memref<4x5xf32>, initial_value, sym_visibility = "private", constant, alignment = 128 : i64}> {taihu.initial_value = dense_resource<p_inv_count> : tensor<4x5xf32>}
// CHECK:      func.func @main
// CHECK:        %p_inv_count = memref.get_global @p_inv_count : memref<4x5xf32>
// CHECK:        tile.kernel "p" (%x_1 = %{{.*}} : memref<6x7x9xf32>, %y = %{{.*}} : memref<6x4x5xf32>, %inv_count = %p_inv_count : memref<4x5xf32>)
// CHECK-NEXT:     %tin = tile.alloc double : !tile.buf<6x7x9xf32, cpe>
// CHECK-NEXT:     %tout = tile.alloc double : !tile.buf<6x4x5xf32, cpe>
// CHECK-NEXT:     %tinv = tile.alloc double : !tile.buf<4x5xf32, rep>
// CHECK:          tile.move %x_1[%c0, %c0, %c0] sizes [6, 7, 9] -> %tin
// CHECK-NEXT:     tile.move %inv_count[%c0, %c0] sizes [4, 5] -> %tinv
// CHECK-NEXT:     tile.map avg_pool ins(%tin, %tinv : !tile.buf<6x7x9xf32, cpe>, !tile.buf<4x5xf32, rep>) out(%tout : !tile.buf<6x4x5xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>}

// -----

// count_include_pad without a ceil tail: constant divisor, single-input avg_pool; 1-D pooling
// is a 2-D window with a 1-row kernel.
func.func @main(%x: tensor<1x5x8x8xf32> {graph.name = "x"}, %z: tensor<2x3x11xf32> {graph.name = "z"}) -> (tensor<1x5x8x4xf32> {graph.name = "y"}, tensor<2x3x6xf32> {graph.name = "w"}) {
  %p = graph.avg_pool %x {kernel_shape = array<i64: 3, 2>, strides = array<i64: 1, 2>, pads = array<i64: 1, 0, 1, 0>, count_include_pad} : tensor<1x5x8x8xf32> -> tensor<1x5x8x4xf32>
  %q = graph.max_pool %z {kernel_shape = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 1>} : tensor<2x3x11xf32> -> tensor<2x3x6xf32>
  func.return %p, %q : tensor<1x5x8x4xf32>, tensor<2x3x6xf32>
}

// CHECK-LABEL: func.func @main(%x: memref<1x5x8x8xf32>
// CHECK-NOT:  inv_count
// CHECK:      tile.kernel "p"
// CHECK:        tile.map avg_pool ins(%tin : !tile.buf<5x8x8xf32, cpe>) out(%tout : !tile.buf<5x8x4xf32, cpe>) {kernel = array<i64: 3, 2>, strides = array<i64: 1, 2>, pads = array<i64: 1, 0, 1, 0>}
// CHECK:      tile.kernel "q" (%x_1 = %{{.*}} : memref<6x1x11xf32>, %y = %{{.*}} : memref<6x1x6xf32>)
// CHECK:        tile.move %x_1[%c0, %c0, %c0] sizes [6, 1, 11] -> %tin
// CHECK-NEXT:   tile.map max_pool ins(%tin : !tile.buf<6x1x11xf32, cpe>) out(%tout : !tile.buf<6x1x6xf32, cpe>) {kernel = array<i64: 1, 3>, strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 1>}
