// RUN: %taihu-opt %s -p convert-tile-to-loop | filecheck %s

// tile.kernel -> loop.spmd (name, operands, taihu.* attributes), tile.alloc -> loop.ldm_buffer of
// the CPE-local block (rc/cr: d/8 x d/8, col = dims swapped (a re-layout copy/convert is a
// loop.map transpose, converting on the way), cpe: ceil(d0/64) rows, rep: whole,
// double -> two slots used through loop.slot), tile.for -> scf.for, tile.map -> loop.map.

func.func @k(%X: memref<100x64xf32>, %W: memref<64x256xf64>) {
  tile.kernel "k" (%x = %X : memref<100x64xf32>, %w = %W : memref<64x256xf64>) attributes {taihu.layer = "fc", taihu.op = "graph.gemm", taihu.algorithm = "map", taihu.shape = "100x64"} {
    %a = tile.alloc : !tile.buf<100x64xf32, cpe>
    %b = tile.alloc double : !tile.buf<64x128xf64, rc>
    %bt = tile.alloc : !tile.buf<64x128xf64, rc, col>
    %s = tile.alloc : !tile.buf<1x64xf32, rep>
    %b32 = tile.alloc : !tile.buf<64x128xf32, rc>
    %c0 = arith.constant 0 : index
    tile.map fill out(%a : !tile.buf<100x64xf32, cpe>) {value = 1.0 : f64}
    tile.map relu ins(%a : !tile.buf<100x64xf32, cpe>) out(%a : !tile.buf<100x64xf32, cpe>)
    tile.map add ins(%a, %s : !tile.buf<100x64xf32, cpe>, !tile.buf<1x64xf32, rep>) out(%a : !tile.buf<100x64xf32, cpe>)
    tile.for %j = 0 to 256 step 128 name "cN" {
      %j2 = arith.addi %j, %c0 : index
      tile.map copy ins(%b : !tile.buf<64x128xf64, rc>) out(%bt : !tile.buf<64x128xf64, rc, col>)
      tile.map convert ins(%b32 : !tile.buf<64x128xf32, rc>) out(%bt : !tile.buf<64x128xf64, rc, col>)
    }
  }
  func.return
}

// CHECK:      loop.spmd "k" ids(%row, %col) (%x = %X : memref<100x64xf32>, %w = %W : memref<64x256xf64>) attributes {taihu.layer = "fc", taihu.op = "graph.gemm", taihu.algorithm = "map", taihu.shape = "100x64"} {
// CHECK-NEXT:   %a = loop.ldm_buffer "a" : !loop.ldm<2x64xf32>
// CHECK-NEXT:   %b = loop.ldm_buffer "b" : !loop.ldm<8x16xf64, double>
// CHECK-NEXT:   %bt = loop.ldm_buffer "bt" : !loop.ldm<16x8xf64>
// CHECK-NEXT:   %s = loop.ldm_buffer "s" : !loop.ldm<1x64xf32>
// CHECK-NEXT:   %b32 = loop.ldm_buffer "b32" : !loop.ldm<8x16xf32>
// CHECK:        %b0 = loop.slot %b[%c0] : !loop.ldm<8x16xf64, double>
// CHECK:        loop.map fill out(%a : !loop.ldm<2x64xf32>) {value = 1.000000e+00 : f64}
// CHECK-NEXT:   loop.map relu ins(%a : !loop.ldm<2x64xf32>) out(%a : !loop.ldm<2x64xf32>)
// CHECK-NEXT:   loop.map add ins(%a, %s : !loop.ldm<2x64xf32>, !loop.ldm<1x64xf32>) out(%a : !loop.ldm<2x64xf32>)
// CHECK-NEXT:   scf.for %j = %c0 to %c256 step %c128 {
// CHECK-NEXT:     %{{.*}} = arith.addi %j, %c0 : index
// CHECK-NEXT:     loop.map transpose ins(%b0 : !loop.ldm<8x16xf64>) out(%bt : !loop.ldm<16x8xf64>) {perm = array<i64: 1, 0>}
// CHECK-NEXT:     loop.map transpose ins(%b32 : !loop.ldm<8x16xf32>) out(%bt : !loop.ldm<16x8xf64>) {perm = array<i64: 1, 0>}
// CHECK-NEXT:   }
// CHECK-NEXT: }
