// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s

// concat along axis 1: one copy kernel per input (same taihu.layer) writing its column slice
// of the (outer, R) view of the output; no tile.map (load and store the same tile).
func.func @main(%a: tensor<2x3x4xf32> {graph.name = "a"}, %b: tensor<2x5x4xf32> {graph.name = "b"}) -> (tensor<2x8x4xf32> {graph.name = "y"}) {
  %c = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  func.return %c : tensor<2x8x4xf32>
}

// CHECK:      tile.kernel "c" (%x = %{{.*}} : memref<2x12xf32>, %y = %{{.*}} : memref<2x32xf32>) attributes {taihu.layer = "c", taihu.op = "graph.concat", taihu.algorithm = "copy", taihu.shape = "2x8x4[0:12] <- 2x3x4", taihu.useful_flops = 0 : i64} {
// CHECK-NEXT:   %t = tile.alloc double : !tile.buf<2x12xf32, cpe>
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   tile.move %x[%c0, %c0] sizes [2, 12] -> %t
// CHECK-NEXT:   tile.move %t -> %y[%c0, %c0] sizes [2, 12]
// CHECK:      tile.kernel "c_1" (%x = %{{.*}} : memref<2x20xf32>, %y = %{{.*}} : memref<2x32xf32>) attributes {taihu.layer = "c", taihu.op = "graph.concat", taihu.algorithm = "copy", taihu.shape = "2x8x4[12:32] <- 2x5x4", taihu.useful_flops = 0 : i64} {
// CHECK:        %c12 = arith.constant 12 : index
// CHECK:        tile.move %t -> %y[%c0, %c12] sizes [2, 20]
// CHECK-NOT:  tile.map

// -----

// pad (negative = crop): unpadded trailing dims merge into their left neighbour; the output
// tile is loaded from x[iv - begin] with the pad value outside x.
func.func @main(%x: tensor<2x3x4xf32> {graph.name = "x"}) -> (tensor<3x6x3xf32> {graph.name = "y"}) {
  %p = graph.pad %x {pads = array<i64: 0, 1, -1, 1, 2, 0>, value = 5.000000e-01 : f32} : tensor<2x3x4xf32> -> tensor<3x6x3xf32>
  func.return %p : tensor<3x6x3xf32>
}

// CHECK:      tile.kernel "p" (%x_1 = %x : memref<2x3x4xf32>, %y = %{{.*}} : memref<3x6x3xf32>) attributes {{{.*}}taihu.algorithm = "copy", taihu.shape = "3x6x3 <- 2x3x4", taihu.useful_flops = 0 : i64} {
// CHECK-NEXT:   %t = tile.alloc double : !tile.buf<3x6x3xf32, cpe>
// CHECK-DAG:    %c0 = arith.constant 0 : index
// CHECK-DAG:    %cm1 = arith.constant -1 : index
// CHECK-DAG:    %c1 = arith.constant 1 : index
// CHECK:        tile.move %x_1[%c0, %cm1, %c1] sizes [3, 6, 3] pad 0.5 -> %t
// CHECK-NEXT:   tile.move %t -> %y[%c0, %c0, %c0] sizes [3, 6, 3]

// -----

// NCHW -> NHWC: unit N dropped, (H, W) merged: a (64, 3136) -> (3136, 64) transpose. H*W is
// split over the CPEs on both sides (cpe1 input tile: 64 runs of 49 columns per CPE; cpe
// output tile: one contiguous 49x64 block per CPE), tile.map transpose in LDM.
func.func @main(%x: tensor<1x64x56x56xf32> {graph.name = "x"}) -> (tensor<1x56x56x64xf32> {graph.name = "y"}) {
  %t = graph.layout_transform %x {from_layout = "NCHW", to_layout = "NHWC"} : tensor<1x64x56x56xf32> -> tensor<1x56x56x64xf32>
  func.return %t : tensor<1x56x56x64xf32>
}

// CHECK:      tile.kernel "t" (%x_1 = %{{.*}} : memref<64x3136xf32>, %y = %{{.*}} : memref<3136x64xf32>) attributes {{{.*}}taihu.op = "graph.layout_transform", taihu.algorithm = "transpose", taihu.shape = "1x56x56x64 <- 1x64x56x56 perm [0, 2, 3, 1]", taihu.useful_flops = 0 : i64} {
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<64x3136xf32, cpe1>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<3136x64xf32, cpe>
// CHECK:        tile.move %x_1[%c0, %c0] sizes [64, 3136] -> %tin
// CHECK-NEXT:   tile.map transpose ins(%tin : !tile.buf<64x3136xf32, cpe1>) out(%tout : !tile.buf<3136x64xf32, cpe>) {perm = array<i64: 1, 0>}
// CHECK-NEXT:   tile.move %tout -> %y[%c0, %c0] sizes [3136, 64]

// -----

// transpose keeping dim 0 first: tile.map transpose in LDM (perm of the tile dims).
func.func @main(%x: tensor<3x4x5xf32> {graph.name = "x"}) -> (tensor<3x5x4xf32> {graph.name = "y"}) {
  %t = graph.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<3x4x5xf32> -> tensor<3x5x4xf32>
  func.return %t : tensor<3x5x4xf32>
}

// CHECK:      tile.kernel "t"
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<3x4x5xf32, cpe>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<3x5x4xf32, cpe>
// CHECK:        tile.move %x_1[%c0, %c0, %c0] sizes [3, 4, 5] -> %tin
// CHECK-NEXT:   tile.map transpose ins(%tin : !tile.buf<3x4x5xf32, cpe>) out(%tout : !tile.buf<3x5x4xf32, cpe>) {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT:   tile.move %tout -> %y[%c0, %c0, %c0] sizes [3, 5, 4]

// -----

// Views (reshape, flatten, unsqueeze, dropout) are memref.collapse_shape/expand_shape of the
// producer's buffer, no kernel; the consumer kernel reads the view.
func.func @main(%x: tensor<2x3x4xf32> {graph.name = "x"}) -> (tensor<1x6x4xf32> {graph.name = "y"}) {
  %e = graph.tanh %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %f = graph.flatten %e {axis = 2 : i64} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %d = graph.dropout %f : tensor<6x4xf32> -> tensor<6x4xf32>
  %u = graph.unsqueeze %d {axes = array<i64: 0>} : tensor<6x4xf32> -> tensor<1x6x4xf32>
  %r = graph.relu %u : tensor<1x6x4xf32> -> tensor<1x6x4xf32>
  func.return %r : tensor<1x6x4xf32>
}

// CHECK:      %e = memref.alloc() {alignment = 128 : i64} : memref<2x3x4xf32>
// CHECK:      tile.kernel "e" {{.*}}taihu.op = "graph.tanh"
// CHECK:      %[[F:.*]] = memref.collapse_shape %e {{.*}} : memref<2x3x4xf32> into memref<24xf32>
// CHECK-NEXT: %[[V:.*]] = memref.expand_shape %[[F]] {{.*}} output_shape [6, 4] : memref<24xf32> into memref<6x4xf32>
// CHECK-NEXT: %[[U:.*]] = memref.collapse_shape %[[V]] {{.*}} : memref<6x4xf32> into memref<24xf32>
// CHECK-NEXT: %[[W:.*]] = memref.expand_shape %[[U]] {{.*}} output_shape [1, 6, 4] : memref<24xf32> into memref<1x6x4xf32>
// CHECK-NEXT: %r = memref.alloc() {alignment = 128 : i64} : memref<1x6x4xf32>
// CHECK:      tile.kernel "r" {{.*}}taihu.op = "graph.relu"
// CHECK:      func.return %r : memref<1x6x4xf32>

// -----

// Channel concat at batch 1 (contiguous output slices): inputs written only by their producer
// kernels are produced in place (their alloc becomes a reinterpret_cast view of the output
// slice, no copy); a graph input and a fanned-out value are copied into their slices.
func.func @main(%x: tensor<1x3x4x5xf32> {graph.name = "x"}, %z: tensor<1x2x4x5xf32> {graph.name = "z"}) -> (tensor<1x8x4x5xf32> {graph.name = "y"}, tensor<1x3x4x5xf32> {graph.name = "s"}) {
  %a = graph.relu %x : tensor<1x3x4x5xf32> -> tensor<1x3x4x5xf32>
  %s = graph.sigmoid %x : tensor<1x3x4x5xf32> -> tensor<1x3x4x5xf32>
  %c = graph.concat %a, %z, %s {axis = 1 : i64} : (tensor<1x3x4x5xf32>, tensor<1x2x4x5xf32>, tensor<1x3x4x5xf32>) -> tensor<1x8x4x5xf32>
  func.return %c, %s : tensor<1x8x4x5xf32>, tensor<1x3x4x5xf32>
}

// CHECK:      %c = memref.alloc() {alignment = 128 : i64} : memref<1x8x4x5xf32>
// CHECK-NEXT: %a = memref.reinterpret_cast %c to offset: [0], sizes: [1, 3, 4, 5], strides: [60, 20, 5, 1] : memref<1x8x4x5xf32> to memref<1x3x4x5xf32>
// CHECK:      tile.kernel "a" {{.*}}taihu.op = "graph.relu"
// CHECK:      %s = memref.alloc() {alignment = 128 : i64} : memref<1x3x4x5xf32>
// CHECK:      tile.kernel "s" {{.*}}taihu.op = "graph.sigmoid"
// CHECK:      tile.kernel "c" {{.*}}taihu.shape = "1x8x4x5[60:100] <- 1x2x4x5"
// CHECK:      tile.kernel "c_1" {{.*}}taihu.shape = "1x8x4x5[100:160] <- 1x3x4x5"
// CHECK-NOT:  tile.kernel
// CHECK:      func.return %c, %s : memref<1x8x4x5xf32>, memref<1x3x4x5xf32>
