// RUN: %taihu-opt %s -p 'convert-graph-to-tile{ldm-budget=4096}' | filecheck %s

// global_avg_pool with planes larger than the LDM budget: each plane is reduced in chunks
// (reduce_sum partials accumulated with add, then mul by a rep tile filled with 1/HW).
func.func @main(%x: tensor<1x3x40x40xf32> {graph.name = "x"}) -> (tensor<1x3x1x1xf32> {graph.name = "y"}) {
  %g = graph.global_avg_pool %x : tensor<1x3x40x40xf32> -> tensor<1x3x1x1xf32>
  func.return %g : tensor<1x3x1x1xf32>
}

// CHECK:      tile.kernel "g" (%x_1 = %{{.*}} : memref<3x1600xf32>, %y = %{{.*}} : memref<3x1xf32>)
// CHECK-NEXT:   %tin = tile.alloc double : !tile.buf<3x400xf32, cpe>
// CHECK-NEXT:   %part = tile.alloc : !tile.buf<3x1xf32, cpe>
// CHECK-NEXT:   %acc = tile.alloc : !tile.buf<3x1xf32, cpe>
// CHECK-NEXT:   %inv = tile.alloc : !tile.buf<1x1xf32, rep>
// CHECK-NEXT:   %c0 = arith.constant 0 : index
// CHECK-NEXT:   tile.map fill out(%inv : !tile.buf<1x1xf32, rep>) {value = 6.250000e-04 : f64}
// CHECK-NEXT:   tile.map fill out(%acc : !tile.buf<3x1xf32, cpe>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:   tile.for %hw = 0 to 1600 step 400 name "hw" {
// CHECK-NEXT:     tile.move %x_1[%c0, %hw] sizes [3, 400] -> %tin
// CHECK-NEXT:     tile.map reduce_sum ins(%tin : !tile.buf<3x400xf32, cpe>) out(%part : !tile.buf<3x1xf32, cpe>) {axis = 1 : i64}
// CHECK-NEXT:     tile.map add ins(%acc, %part : !tile.buf<3x1xf32, cpe>, !tile.buf<3x1xf32, cpe>) out(%acc : !tile.buf<3x1xf32, cpe>)
// CHECK-NEXT:   }
// CHECK-NEXT:   tile.map mul ins(%acc, %inv : !tile.buf<3x1xf32, cpe>, !tile.buf<1x1xf32, rep>) out(%acc : !tile.buf<3x1xf32, cpe>)
// CHECK-NEXT:   tile.move %acc -> %y[%c0, %c0] sizes [3, 1]
