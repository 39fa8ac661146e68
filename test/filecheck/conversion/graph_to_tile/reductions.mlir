// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s

// global_avg_pool: (N*C, H*W) planes split over the CPEs, reduce_mean over H*W (whole planes),
// in two tiles of 16 planes per CPE (double buffering overlaps one tile's reduction with the
// other's DMA).
func.func @main(%x: tensor<1x2048x7x7xf32> {graph.name = "x"}) -> (tensor<1x2048x1x1xf32> {graph.name = "y"}) {
  %g = graph.global_avg_pool %x : tensor<1x2048x7x7xf32> -> tensor<1x2048x1x1xf32>
  func.return %g : tensor<1x2048x1x1xf32>
}

// CHECK:      tile.kernel "g" (%x_1 = %{{.*}} : memref<2048x49xf32>, %y = %{{.*}} : memref<2048x1xf32>) attributes {taihu.layer = "g", taihu.op = "graph.global_avg_pool", taihu.algorithm = "reduce", taihu.shape = "1x2048x1x1 <- 1x2048x7x7", taihu.useful_flops = 100352 : i64} {
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<1024x49xf32, cpe>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<1024x1xf32, cpe>
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   tile.for %p = 0 to 2048 step 1024 name "p" {
// CHECK-NEXT:     tile.move %x_1[%p, %c0] sizes [1024, 49] -> %tin
// CHECK-NEXT:     tile.map reduce_mean ins(%tin : !tile.buf<1024x49xf32, cpe>) out(%tout : !tile.buf<1024x1xf32, cpe>) {axis = 1 : i64}
// CHECK-NEXT:     tile.move %tout -> %y[%p, %c0] sizes [1024, 1]

// -----

// softmax over the last axis: rows split over the CPEs, the whole axis in LDM; over a middle
// axis: (outer, A, inner) view, axis 1 of the tile.
func.func @main(%x: tensor<3x1000xf32> {graph.name = "x"}, %z: tensor<2x5x3xf32> {graph.name = "z"}) -> (tensor<3x1000xf32> {graph.name = "y"}, tensor<2x5x3xf32> {graph.name = "w"}) {
  %s = graph.softmax %x {axis = 1 : i64} : tensor<3x1000xf32> -> tensor<3x1000xf32>
  %t = graph.softmax %z {axis = 1 : i64} : tensor<2x5x3xf32> -> tensor<2x5x3xf32>
  func.return %s, %t : tensor<3x1000xf32>, tensor<2x5x3xf32>
}

// CHECK:      tile.kernel "s" (%x_1 = %{{.*}} : memref<3x1000x1xf32>, %y = %{{.*}} : memref<3x1000x1xf32>) attributes {{{.*}}taihu.algorithm = "axis", taihu.shape = "3x1000 axis 1", taihu.useful_flops = 9000 : i64}
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<3x1000x1xf32, cpe>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<3x1000x1xf32, cpe>
// CHECK:        tile.map softmax ins(%tin : !tile.buf<3x1000x1xf32, cpe>) out(%tout : !tile.buf<3x1000x1xf32, cpe>) {axis = 1 : i64}
// CHECK:      tile.kernel "t" (%x_1 = %{{.*}} : memref<2x5x3xf32>, %y = %{{.*}} : memref<2x5x3xf32>)
// CHECK:        tile.map softmax ins(%tin : !tile.buf<2x5x3xf32, cpe>) out(%tout : !tile.buf<2x5x3xf32, cpe>) {axis = 1 : i64}

// -----

// LRN across channels of an (N, C, H*W) view at a small batch: H*W split over the CPEs (cpe2
// tiles, 55 columns per CPE: 3025 = 55 x 55, the tile runs to 64 x 55 with pad / clip), the
// channels in chunks of 16 whose input tiles carry the 4 neighbouring channels of the window
// (pad 0.0 outside the tensor; tile.map lrn in its halo form).
func.func @main(%x: tensor<1x64x55x55xf32> {graph.name = "x"}) -> (tensor<1x64x55x55xf32> {graph.name = "y"}) {
  %l = graph.lrn %x {size = 5 : i64, alpha = 9.99999974E-5 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<1x64x55x55xf32> -> tensor<1x64x55x55xf32>
  func.return %l : tensor<1x64x55x55xf32>
}

// CHECK:      tile.kernel "l" (%x_1 = %{{.*}} : memref<1x64x3025xf32>, %y = %{{.*}} : memref<1x64x3025xf32>)
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<1x20x3520xf32, cpe2>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<1x16x3520xf32, cpe2>
// CHECK:        tile.for %c = 0 to 64 step 16 name "c" {
// CHECK-NEXT:     %[[LO:.*]] = arith.subi %c, %c2 : index
// CHECK-NEXT:     tile.move %x_1[%c0, %[[LO]], %c0] sizes [1, 20, 3520] pad 0.0 -> %tin
// CHECK-NEXT:     tile.map lrn ins(%tin : !tile.buf<1x20x3520xf32, cpe2>) out(%tout : !tile.buf<1x16x3520xf32, cpe2>) {axis = 1 : i64, size = 5 : i64, alpha = {{.*}} : f64, beta = 7.500000e-01 : f64, bias = 2.000000e+00 : f64}
// CHECK-NEXT:     tile.move %tout -> %y[%c0, %c, %c0] sizes [1, 16, 3520] clip

// -----

// LRN with 96 channels on small planes: channel blocks over the CPEs (cpe1, 2 channels each);
// the input tile holds each CPE's block plus the window's 4 neighbours (cpe1+4, an overlapping
// distribution: one contiguous DMA of 6 planes per CPE), the images looped.
func.func @main(%x: tensor<2x96x27x27xf32> {graph.name = "x"}) -> (tensor<2x96x27x27xf32> {graph.name = "y"}) {
  %l = graph.lrn %x {size = 5 : i64, alpha = 9.99999974E-5 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<2x96x27x27xf32> -> tensor<2x96x27x27xf32>
  func.return %l : tensor<2x96x27x27xf32>
}

// CHECK:      tile.kernel "l" (%x_1 = %{{.*}} : memref<2x96x729xf32>, %y = %{{.*}} : memref<2x96x729xf32>)
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<1x100x729xf32, cpe1+4>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<1x96x729xf32, cpe1>
// CHECK:        tile.for %o = 0 to 2 step 1 name "o" {
// CHECK-NEXT:     tile.move %x_1[%o, %cm2, %c0] sizes [1, 100, 729] pad 0.0 -> %tin
// CHECK-NEXT:     tile.map lrn ins(%tin : !tile.buf<1x100x729xf32, cpe1+4>) out(%tout : !tile.buf<1x96x729xf32, cpe1>)
// CHECK-NEXT:     tile.move %tout -> %y[%o, %c0, %c0] sizes [1, 96, 729]

// -----

// LRN with enough images for the 64 CPEs: images split (cpe), every tile holds whole channels.
func.func @main(%x: tensor<128x8x5x5xf32> {graph.name = "x"}) -> (tensor<128x8x5x5xf32> {graph.name = "y"}) {
  %l = graph.lrn %x {size = 3 : i64, alpha = 9.99999974E-5 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32} : tensor<128x8x5x5xf32> -> tensor<128x8x5x5xf32>
  func.return %l : tensor<128x8x5x5xf32>
}

// CHECK:      tile.kernel "l" (%x_1 = %{{.*}} : memref<128x8x25xf32>, %y = %{{.*}} : memref<128x8x25xf32>)
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<128x8x25xf32, cpe>
// CHECK-NEXT:   %tout = tile.alloc double : !tile.buf<128x8x25xf32, cpe>
// CHECK:        tile.map lrn ins(%tin : !tile.buf<128x8x25xf32, cpe>) out(%tout : !tile.buf<128x8x25xf32, cpe>)
