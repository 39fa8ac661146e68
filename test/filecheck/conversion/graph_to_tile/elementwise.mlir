// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s
// RUN: %taihu-opt %s -p 'convert-graph-to-tile{fuse=false}' --split-input-file | filecheck %s --check-prefix=NOFUSE

// Same-shape binary op + relu: one kernel, canonical 1-D view, in-place maps on a double-buffered
// cpe tile; the relu is fused (taihu.fused) and the result name hint names the kernel.
func.func @main(%a: tensor<2x3x5x7xf32> {graph.name = "a"}, %b: tensor<2x3x5x7xf32> {graph.name = "b"}) -> (tensor<2x3x5x7xf32> {graph.name = "y"}) {
  %s = graph.add %a, %b : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %r = graph.relu %s : tensor<2x3x5x7xf32> -> tensor<2x3x5x7xf32>
  func.return %r : tensor<2x3x5x7xf32>
}

// CHECK:      func.func @main(%a: memref<2x3x5x7xf32> {graph.name = "a"}, %b: memref<2x3x5x7xf32> {graph.name = "b"}) -> (memref<2x3x5x7xf32> {graph.name = "y"}) {
// CHECK-NEXT:   %s = memref.alloc() {alignment = 128 : i64} : memref<2x3x5x7xf32>
// CHECK:        memref.collapse_shape %a {{.*}} : memref<2x3x5x7xf32> into memref<210xf32>
// CHECK:        tile.kernel "s" (%x0 = %{{.*}} : memref<210xf32>, %x1 = %{{.*}} : memref<210xf32>, %y = %{{.*}} : memref<210xf32>) attributes {taihu.layer = "s", taihu.op = "graph.add", taihu.algorithm = "map", taihu.shape = "2x3x5x7 <- 2x3x5x7, 2x3x5x7", taihu.fused = ["graph.relu"], taihu.useful_flops = 420 : i64} {
// CHECK-NEXT:     %t = tile.alloc double : !tile.buf<210xf32, cpe>
// CHECK-NEXT:     %in1 = tile.alloc double : !tile.buf<210xf32, cpe>
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     tile.move %x0[%c0] sizes [210] -> %t : memref<210xf32> -> !tile.buf<210xf32, cpe>
// CHECK-NEXT:     tile.move %x1[%c0] sizes [210] -> %in1 : memref<210xf32> -> !tile.buf<210xf32, cpe>
// CHECK-NEXT:     tile.map add ins(%t, %in1 : !tile.buf<210xf32, cpe>, !tile.buf<210xf32, cpe>) out(%t : !tile.buf<210xf32, cpe>)
// CHECK-NEXT:     tile.map relu ins(%t : !tile.buf<210xf32, cpe>) out(%t : !tile.buf<210xf32, cpe>)
// CHECK-NEXT:     tile.move %t -> %{{y[_0-9]*}}[%c0] sizes [210] : !tile.buf<210xf32, cpe> -> memref<210xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %s : memref<2x3x5x7xf32>

// NOFUSE:     tile.kernel "s" {{.*}}taihu.op = "graph.add"
// NOFUSE-NOT: taihu.fused
// NOFUSE:     tile.kernel "r" {{.*}}taihu.op = "graph.relu"
// NOFUSE:       tile.map relu

// -----

// Per-channel broadcast: (1,64,112,112) + (1,64,1,1) -> canonical (64, 12544) with the bias
// (64, 1); one channel per CPE, planes chunked so the double buffers fit the LDM.
func.func @main(%x: tensor<1x64x112x112xf32> {graph.name = "x"}, %b: tensor<1x64x1x1xf32> {graph.name = "b"}) -> (tensor<1x64x112x112xf32> {graph.name = "y"}) {
  %y = graph.add %x, %b : (tensor<1x64x112x112xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x112x112xf32>
  func.return %y : tensor<1x64x112x112xf32>
}

// CHECK:      memref.expand_shape %{{.*}} output_shape [64, 12544] : memref<802816xf32> into memref<64x12544xf32>
// CHECK:      memref.expand_shape %{{.*}} output_shape [64, 1] : memref<64xf32> into memref<64x1xf32>
// CHECK:      tile.kernel "y" {{.*}}taihu.shape = "1x64x112x112 <- 1x64x112x112, 1x64x1x1"
// CHECK-NEXT:   %t = tile.alloc double : !tile.buf<64x6272xf32, cpe>
// CHECK-NEXT:   %in1 = tile.alloc double : !tile.buf<64x1xf32, cpe>
// CHECK:        tile.move %x1[%c0, %c0] sizes [64, 1] -> %in1
// CHECK-NEXT:   tile.for %i1 = 0 to 12544 step 6272 name "i1" {
// CHECK-NEXT:     tile.move %x0[%c0, %i1] sizes [64, 6272] -> %t
// CHECK-NEXT:     tile.map add ins(%t, %in1 : !tile.buf<64x6272xf32, cpe>, !tile.buf<64x1xf32, cpe>) out(%t : !tile.buf<64x6272xf32, cpe>)
// CHECK-NEXT:     tile.move %t -> %{{y[_0-9]*}}[%c0, %i1] sizes [64, 6272]

// -----

// Both operands broadcast ((4,1) - (1,5)): no input has the output shape, so the tile starts
// from fill 0 and folds the operands in; the operands are rep tiles.
func.func @main(%a: tensor<4x1xf32> {graph.name = "a"}, %b: tensor<1x5xf32> {graph.name = "b"}) -> (tensor<4x5xf32> {graph.name = "y"}) {
  %y = graph.sub %a, %b : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
  func.return %y : tensor<4x5xf32>
}

// CHECK:      tile.kernel "y"
// CHECK-DAG:    %in0 = tile.alloc double : !tile.buf<4x1xf32, cpe>
// CHECK-DAG:    %in1 = tile.alloc double : !tile.buf<1x5xf32, rep>
// CHECK-DAG:    %t = tile.alloc double : !tile.buf<4x5xf32, cpe>
// CHECK:        tile.map fill out(%t : !tile.buf<4x5xf32, cpe>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:   tile.map add ins(%t, %in0 : !tile.buf<4x5xf32, cpe>, !tile.buf<4x1xf32, cpe>) out(%t : !tile.buf<4x5xf32, cpe>)
// CHECK-NEXT:   tile.map sub ins(%t, %in1 : !tile.buf<4x5xf32, cpe>, !tile.buf<1x5xf32, rep>) out(%t : !tile.buf<4x5xf32, cpe>)

// -----

// Long 1-D activation: 64*q elements per tile, q a multiple of 32 (128-B aligned per-CPE runs);
// the last tile is partial, so its load pads and its store clips.
func.func @main(%x: tensor<1000000xf32> {graph.name = "x"}) -> (tensor<1000000xf32> {graph.name = "y"}) {
  %y = graph.clip %x {min = -1.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<1000000xf32> -> tensor<1000000xf32>
  func.return %y : tensor<1000000xf32>
}

// CHECK:      %t = tile.alloc double : !tile.buf<[[T:[0-9]+]]xf32, cpe>
// CHECK:      tile.for %i0 = 0 to 1000000 step [[T]] name "i0" {
// CHECK-NEXT:   tile.move %x0[%i0] sizes [[[T]]] pad 0.0 -> %t
// CHECK-NEXT:   tile.map clip ins(%t : !tile.buf<[[T]]xf32, cpe>) out(%t : !tile.buf<[[T]]xf32, cpe>) {lo = -1.000000e+00 : f64, hi = 6.000000e+00 : f64}
// CHECK-NEXT:   tile.move %t -> %{{y[_0-9]*}}[%i0] sizes [[[T]]] clip

// -----

// graph.sum of three inputs: a chain of in-place adds; sigmoid/tanh/leaky_relu kinds.
func.func @main(%a: tensor<3x5xf32> {graph.name = "a"}, %b: tensor<5xf32> {graph.name = "b"}, %c: tensor<3x1xf32> {graph.name = "c"}) -> (tensor<3x5xf32> {graph.name = "y"}) {
  %s = graph.sum %a, %b, %c : (tensor<3x5xf32>, tensor<5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %g = graph.sigmoid %s : tensor<3x5xf32> -> tensor<3x5xf32>
  %t = graph.tanh %g : tensor<3x5xf32> -> tensor<3x5xf32>
  %l = graph.leaky_relu %t {alpha = 2.000000e-01 : f32} : tensor<3x5xf32> -> tensor<3x5xf32>
  func.return %l : tensor<3x5xf32>
}

// CHECK:      tile.kernel "s" {{.*}}taihu.op = "graph.sum"{{.*}}taihu.fused = ["graph.sigmoid", "graph.tanh", "graph.leaky_relu"]
// CHECK:        tile.map add ins(%t, %in1 : !tile.buf<3x5xf32, cpe>, !tile.buf<1x5xf32, rep>) out(%t : !tile.buf<3x5xf32, cpe>)
// CHECK-NEXT:   tile.map add ins(%t, %in2 : !tile.buf<3x5xf32, cpe>, !tile.buf<3x1xf32, cpe>) out(%t : !tile.buf<3x5xf32, cpe>)
// CHECK-NEXT:   tile.map sigmoid
// CHECK-NEXT:   tile.map tanh
// CHECK-NEXT:   tile.map leaky_relu ins(%t : !tile.buf<3x5xf32, cpe>) out(%t : !tile.buf<3x5xf32, cpe>) {alpha = 0.{{.*}} : f64}
