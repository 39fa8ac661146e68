// RUN: %taihu-opt %s -p convert-tile-to-loop | filecheck %s

// Structurally identical tile.kernels (same ops, types and properties; other buffers and value
// names) are lowered once and the repeats copied: each loop.spmd keeps its own name,
// attributes, operands and LDM buffer names (from its tile.alloc names).

func.func @main(%X: memref<64x64xf32>, %Y: memref<64x64xf32>, %Z: memref<64x64xf32>) {
  tile.kernel "first" (%x = %X : memref<64x64xf32>, %y = %Y : memref<64x64xf32>) attributes {taihu.layer = "l1"} {
    %t = tile.alloc : !tile.buf<64x64xf32, rc>
    %c0 = arith.constant 0 : index
    tile.move %x[%c0, %c0] sizes [64, 64] -> %t : memref<64x64xf32> -> !tile.buf<64x64xf32, rc>
    tile.map relu ins(%t : !tile.buf<64x64xf32, rc>) out(%t : !tile.buf<64x64xf32, rc>)
    tile.move %t -> %y[%c0, %c0] sizes [64, 64] : !tile.buf<64x64xf32, rc> -> memref<64x64xf32>
  }
  tile.kernel "second" (%a = %Y : memref<64x64xf32>, %b = %Z : memref<64x64xf32>) attributes {taihu.layer = "l2"} {
    %buf = tile.alloc : !tile.buf<64x64xf32, rc>
    %zero = arith.constant 0 : index
    tile.move %a[%zero, %zero] sizes [64, 64] -> %buf : memref<64x64xf32> -> !tile.buf<64x64xf32, rc>
    tile.map relu ins(%buf : !tile.buf<64x64xf32, rc>) out(%buf : !tile.buf<64x64xf32, rc>)
    tile.move %buf -> %b[%zero, %zero] sizes [64, 64] : !tile.buf<64x64xf32, rc> -> memref<64x64xf32>
  }
  func.return
}

// CHECK:      loop.spmd "first" ids(%row, %col) (%x = %X : memref<64x64xf32>, %y = %Y : memref<64x64xf32>) attributes {taihu.layer = "l1"} {
// CHECK-NEXT:   %t = loop.ldm_buffer "t" : !loop.ldm<8x8xf32>
// CHECK:        loop.map relu
// CHECK:      loop.spmd "second" ids(%row, %col) (%a = %Y : memref<64x64xf32>, %b = %Z : memref<64x64xf32>) attributes {taihu.layer = "l2"} {
// CHECK-NEXT:   %buf = loop.ldm_buffer "buf" : !loop.ldm<8x8xf32>
// CHECK:        loop.dma_start %a[
// CHECK:        loop.map relu
// CHECK:        loop.dma_start %buf -> %b[
