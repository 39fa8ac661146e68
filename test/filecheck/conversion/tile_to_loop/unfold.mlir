// RUN: %taihu-opt %s -p convert-tile-to-loop | filecheck %s

// tile.unfold -> per kernel row one loop.map im2col from the CPE's input-row block (8/8 channels x
// 1 output row x W, f32) into its slice of the B block (fp64, converted on the way); the rank-3 rc
// row tiles are one strided DMA per CPE (8 channel rows of W elements).
func.func @f(%X: memref<1x64x28x28xf32>) {
  tile.kernel "k" (%x = %X : memref<1x64x28x28xf32>) {
    %p0 = tile.alloc : !tile.buf<64x8x28xf32, rc>
    %p1 = tile.alloc : !tile.buf<64x8x28xf32, rc>
    %b = tile.alloc : !tile.buf<384x224xf64, rc>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    tile.move %x[%c0, %c0, %c0, %c0] sizes [1, 64, 8, 28] strides [1, 1, 2, 1] -> %p0 : memref<1x64x28x28xf32> -> !tile.buf<64x8x28xf32, rc>
    tile.move %x[%c0, %c0, %c1, %c0] sizes [1, 64, 8, 28] strides [1, 1, 2, 1] -> %p1 : memref<1x64x28x28xf32> -> !tile.buf<64x8x28xf32, rc>
    tile.unfold ins(%p0, %p1 : !tile.buf<64x8x28xf32, rc>, !tile.buf<64x8x28xf32, rc>) out(%b : !tile.buf<384x224xf64, rc>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
  }
  func.return
}

// CHECK:      loop.spmd "k" ids(%row, %col) (%x = %X : memref<1x64x28x28xf32>) {
// CHECK-NEXT:   %p0 = loop.ldm_buffer "p0" : !loop.ldm<8x1x28xf32>
// CHECK-NEXT:   %p1 = loop.ldm_buffer "p1" : !loop.ldm<8x1x28xf32>
// CHECK-NEXT:   %b = loop.ldm_buffer "b" : !loop.ldm<48x28xf64>
// CHECK:        %[[R:.*]] = arith.muli %row, %c8 : index
// CHECK-NEXT:   %[[C:.*]] = arith.muli %col, %c2 : index
// CHECK-NEXT:   %[[T0:.*]] = loop.dma_start %x[%c0, %[[R]], %[[C]], %c0] sizes [1, 8, 1, 28] strides [1, 1, 2, 1] -> %p0
// CHECK:        %[[T1:.*]] = loop.dma_start %x[%c0, %[[R]], %{{.*}}, %c0] sizes [1, 8, 1, 28] strides [1, 1, 2, 1] -> %p1
// CHECK-NEXT:   loop.dma_wait %[[T0]], %[[T1]]
// CHECK-NEXT:   %[[V0:.*]] = loop.view %b[%c0] : !loop.ldm<48x28xf64> -> !loop.ldm<8x1x3x28xf64>
// CHECK-NEXT:   loop.map im2col ins(%p0 : !loop.ldm<8x1x28xf32>) out(%[[V0]] : !loop.ldm<8x1x3x28xf64>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
// CHECK-NEXT:   %[[V1:.*]] = loop.view %b[%c672] : !loop.ldm<48x28xf64> -> !loop.ldm<8x1x3x28xf64>
// CHECK-NEXT:   loop.map im2col ins(%p1 : !loop.ldm<8x1x28xf32>) out(%[[V1]] : !loop.ldm<8x1x3x28xf64>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
