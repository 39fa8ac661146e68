// RUN: %taihu-opt %s --split-input-file -p convert-tile-to-loop | filecheck %s

// tile.im2col (004 §5.1.1 L1045-1049, algorithms.md §C2) -> per-CPE task loops: a task = one
// input row of one channel (q = n*C*H + c*H + row, dealt cyclically: q = id, id+64, ...); DMA the
// row in, unfold it with loop.map im2col (horizontal padding and stride inside the map), write the
// (kw, Wo) block to col rows c*kh*kw + i*kw for every kernel row i that uses this input row
// (a guard per i at the top/bottom edge); then a zero phase writes the col entries fed by
// vertical padding from a zero-filled buffer.

func.func @main(%X: memref<2x3x9x10xf32> {graph.name = "x"}) -> (memref<27x160xf32> {graph.name = "col"}) {
  %col = memref.alloc() {alignment = 128 : i64} : memref<27x160xf32>
  tile.kernel "im2col" (%x = %X : memref<2x3x9x10xf32>, %c = %col : memref<27x160xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 0, 1>} : memref<2x3x9x10xf32> -> memref<27x160xf32>
  }
  func.return %col : memref<27x160xf32>
}

// CHECK-LABEL: loop.spmd "im2col"
// CHECK-NEXT:  %im2col_in = loop.ldm_buffer "im2col_in" : !loop.ldm<1x10xf32>
// CHECK-NEXT:  %im2col_col = loop.ldm_buffer "im2col_col" : !loop.ldm<1x3x10xf32>
// CHECK-NEXT:  %im2col_zero = loop.ldm_buffer "im2col_zero" : !loop.ldm<3x10xf32>
// CHECK:       %id = arith.addi
// CHECK-NEXT:  loop.map fill out(%im2col_zero : !loop.ldm<3x10xf32>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:  scf.for %q = %id to %c54 step %c64 {
// CHECK:         %[[T:.*]] = loop.dma_start %x[%{{.*}}, %{{.*}}, %[[ROW:.*]], %c0] sizes [1, 1, 1, 10] -> %im2col_in
// CHECK-NEXT:    loop.dma_wait %[[T]]
// CHECK-NEXT:    loop.map im2col ins(%im2col_in : !loop.ldm<1x10xf32>) out(%im2col_col : !loop.ldm<1x3x10xf32>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
// CHECK:         %[[SRC:.*]] = loop.view %im2col_col[%c0] : !loop.ldm<1x3x10xf32> -> !loop.ldm<3x10xf32>
// kernel row 0 feeds output row ho = row + 1 (rows <= 6 only; the other rows' col entries are
// vertical padding, written by the zero phase)
// CHECK-NEXT:    %[[C0:.*]] = arith.cmpi sle, %[[ROW]], %c6 : index
// CHECK-NEXT:    scf.if %[[C0]] {
// CHECK:           loop.dma_start %[[SRC]] -> %c[%{{.*}}, %{{.*}}] sizes [3, 10] : !loop.ldm<3x10xf32> -> memref<27x160xf32>
// CHECK-NEXT:      loop.dma_wait
// kernel row 2 feeds ho = row - 1 (rows >= 1 only)
// CHECK:         arith.cmpi sge, %[[ROW]], %c1 : index
// the zero phase continues the cyclic task numbering after the 54 row tasks: start = (id + 10) mod 64
// CHECK:       %[[S:.*]] = arith.addi %id, %c10 : index
// CHECK-NEXT:  %[[START:.*]] = arith.remui %[[S]], %c64 : index
// CHECK-NEXT:  scf.for %qz = %[[START]] to %c6 step %c64 {
// CHECK:         loop.dma_start %im2col_zero -> %c[%{{.*}}, %{{.*}}] sizes [3, 10] : !loop.ldm<3x10xf32> -> memref<27x160xf32>

// -----

// Stride 2, dilation 2, NHWC input, two input rows per task (rows_per_task, L1049): the row DMA is
// strided (one channel of an NHWC row), the unfold map carries strides/dilations, the puts loop
// over the task's rows (views of the unfolded buffer) with a stride guard (remainder test).

func.func @main(%X: memref<1x8x12x4xf32> {graph.name = "x"}) -> (memref<36x15xf32> {graph.name = "col"}) {
  %col = memref.alloc() {alignment = 128 : i64} : memref<36x15xf32>
  tile.kernel "im2col_s2" (%x = %X : memref<1x8x12x4xf32>, %c = %col : memref<36x15xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, rows_per_task = 2 : i64, layout = #tile<data_layout nhwc>} : memref<1x8x12x4xf32> -> memref<36x15xf32>
  }
  func.return %col : memref<36x15xf32>
}

// CHECK-LABEL: loop.spmd "im2col_s2"
// CHECK-NEXT:  %im2col_in = loop.ldm_buffer "im2col_in" : !loop.ldm<2x12xf32>
// CHECK-NEXT:  %im2col_col = loop.ldm_buffer "im2col_col" : !loop.ldm<2x3x5xf32>
// CHECK:       scf.for %q = %id to %c16 step %c64 {
// CHECK:         loop.dma_start %x[%{{.*}}, %{{.*}}, %c0, %{{.*}}] sizes [1, 2, 12, 1] -> %im2col_in
// CHECK:         loop.map im2col ins(%im2col_in : !loop.ldm<2x12xf32>) out(%im2col_col : !loop.ldm<2x3x5xf32>) {kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 1>, dilations = array<i64: 2>}
// CHECK:         scf.for %k = %c0 to %c2 step %c1 {
// CHECK:           loop.view %im2col_col[%{{.*}}] : !loop.ldm<2x3x5xf32> -> !loop.ldm<3x5xf32>
// CHECK:           arith.remui
// CHECK:           arith.cmpi eq
// CHECK:           scf.if
// CHECK:             loop.dma_start %{{.*}} -> %c[%{{.*}}, %{{.*}}] sizes [3, 5] : !loop.ldm<3x5xf32> -> memref<36x15xf32>
