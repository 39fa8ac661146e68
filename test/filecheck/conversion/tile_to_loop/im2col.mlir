// RUN: %taihu-opt %s --split-input-file -p convert-tile-to-loop | filecheck %s

// tile.im2col (004 §5.1.1 L1045-1049, algorithms.md §C2) -> per-CPE task loops. A task = input
// rows of one channel (here one row, L1045); the rows are grouped by the kernel rows they
// feed (interior rows / stride residues / edge rows), one scf.for per group, tasks dealt out
// cyclically over the 64 CPEs as one sequence. A task DMAs its rows in, unfolds them with
// loop.map im2col (horizontal padding, stride, dilation inside the map), and writes a kw x Wo
// block per kernel row it feeds (no guards; all puts waited at the end of the task). A zero phase
// writes the col entries fed by vertical padding from a zero-filled buffer.

func.func @main(%X: memref<2x3x9x10xf32> {graph.name = "x"}) -> (memref<27x160xf32> {graph.name = "col"}) {
  %col = memref.alloc() {alignment = 128 : i64} : memref<27x160xf32>
  tile.kernel "im2col" (%x = %X : memref<2x3x9x10xf32>, %c = %col : memref<27x160xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 0, 1>, rows_per_task = 1 : i64} : memref<2x3x9x10xf32> -> memref<27x160xf32>
  }
  func.return %col : memref<27x160xf32>
}

// CHECK-LABEL: loop.spmd "im2col"
// CHECK-NEXT:  %im2col_in = loop.ldm_buffer "im2col_in" : !loop.ldm<1x10xf32>
// CHECK-NEXT:  %im2col_col = loop.ldm_buffer "im2col_col" : !loop.ldm<1x3x10xf32>
// CHECK-NEXT:  %im2col_zero = loop.ldm_buffer "im2col_zero" : !loop.ldm<3x10xf32>
// CHECK:       %id = arith.addi
// CHECK-NEXT:  loop.map fill out(%im2col_zero : !loop.ldm<3x10xf32>) {value = 0.000000e+00 : f64}
// CHECK-NOT:   scf.if
// row 0 (pad 1 on top) feeds kernel rows 0 and 1 only: (n, c) tasks, two puts, one wait
// CHECK:       scf.for %q = %id to %c6 step %c64 {
// CHECK-NEXT:    %[[N:.*]] = arith.divui %q, %c3 : index
// CHECK-NEXT:    %[[C:.*]] = arith.remui %q, %c3 : index
// CHECK-NEXT:    %[[T:.*]] = loop.dma_start %x[%[[N]], %[[C]], %c0, %c0] sizes [1, 1, 1, 10] -> %im2col_in
// CHECK-NEXT:    loop.dma_wait %[[T]]
// CHECK-NEXT:    loop.map im2col ins(%im2col_in : !loop.ldm<1x10xf32>) out(%im2col_col : !loop.ldm<1x3x10xf32>) {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 1, 1>}
// CHECK-NEXT:    %[[SRC:.*]] = loop.view %im2col_col[%c0] : !loop.ldm<1x3x10xf32> -> !loop.ldm<3x10xf32>
// CHECK:         %[[P0:.*]] = loop.dma_start %[[SRC]] -> %c[%{{.*}}, %{{.*}}] sizes [3, 10] : !loop.ldm<3x10xf32> -> memref<27x160xf32>
// CHECK:         %[[P1:.*]] = loop.dma_start %[[SRC]] -> %c[%{{.*}}, %{{.*}}] sizes [3, 10]
// CHECK-NEXT:    loop.dma_wait %[[P0]], %[[P1]]
// interior rows 1..6 feed all three kernel rows; this group starts at (id - 6) mod 64
// CHECK:       %[[S:.*]] = arith.addi %id, %c58 : index
// CHECK-NEXT:  %[[START:.*]] = arith.remui %[[S]], %c64 : index
// CHECK-NEXT:  scf.for %q_1 = %[[START]] to %c36 step %c64 {
// CHECK-COUNT-3: loop.dma_start %{{.*}} -> %c[%{{.*}}, %{{.*}}] sizes [3, 10]
// CHECK-NEXT:    loop.dma_wait %{{.*}}, %{{.*}}, %{{.*}}
// zero phase (ho = 0 of kernel row 0: its input row -1 is padding)
// CHECK:       scf.for %qz = %{{.*}} to %c6 step %c64 {
// CHECK:         loop.dma_start %im2col_zero -> %c[%{{.*}}, %{{.*}}] sizes [3, 10] : !loop.ldm<3x10xf32> -> memref<27x160xf32>

// -----

// Stride 2 and rows_per_task = 2 (L1049): each stride residue is one group; a task DMAs 2 rows
// of the same residue (one strided DMA), unfolds them, transposes (2, kw, Wo) -> (kw, 2, Wo) in
// LDM, and writes kw x (2*Wo) per kernel row (the two rows feed consecutive output rows).

func.func @main(%X: memref<1x4x12x12xf32> {graph.name = "x"}) -> (memref<36x36xf32> {graph.name = "col"}) {
  %col = memref.alloc() {alignment = 128 : i64} : memref<36x36xf32>
  tile.kernel "im2col_s2" (%x = %X : memref<1x4x12x12xf32>, %c = %col : memref<36x36xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, rows_per_task = 2 : i64} : memref<1x4x12x12xf32> -> memref<36x36xf32>
  }
  func.return %col : memref<36x36xf32>
}

// CHECK-LABEL: loop.spmd "im2col_s2"
// CHECK-NEXT:  %im2col_in = loop.ldm_buffer "im2col_in" : !loop.ldm<2x12xf32>
// CHECK-NEXT:  %im2col_col = loop.ldm_buffer "im2col_col" : !loop.ldm<2x3x6xf32>
// CHECK-NEXT:  %im2col_colT = loop.ldm_buffer "im2col_colT" : !loop.ldm<3x2x6xf32>
// even rows 0, 2, .. 10 feed kernel row 1 (ho = row / 2)
// CHECK:       scf.for %q = %id to %c12 step %c64 {
// CHECK:         loop.dma_start %x[%c0, %{{.*}}, %{{.*}}, %c0] sizes [1, 1, 2, 12] strides [1, 1, 2, 1] -> %im2col_in
// CHECK:         loop.map im2col ins(%im2col_in : !loop.ldm<2x12xf32>) out(%im2col_col : !loop.ldm<2x3x6xf32>) {kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 1>}
// CHECK-NEXT:    loop.map transpose ins(%im2col_col : !loop.ldm<2x3x6xf32>) out(%im2col_colT : !loop.ldm<3x2x6xf32>) {perm = array<i64: 1, 0, 2>}
// CHECK-COUNT-1: loop.dma_start %im2col_colT -> %c[%{{.*}}, %{{.*}}] sizes [3, 12]
// CHECK-NEXT:    loop.dma_wait
// odd rows 1, 3, .. 9 feed kernel rows 0 and 2; 5 rows in chunks of 2, the last shifted (min)
// CHECK:       scf.for %q_1 =
// CHECK:         arith.minsi %{{.*}}, %c3 : index
// CHECK-COUNT-2: loop.dma_start %im2col_colT -> %c[%{{.*}}, %{{.*}}] sizes [3, 12]

// -----

// Small maps (no rows_per_task): whole-plane tasks when they move fewer bytes (tasks.py
// im2col_planes): a task = q channels; per channel one contiguous plane DMA into a zero-padded LDM
// plane (the padding rows stay zero: no zero phase), per channel and kernel row one unfold of the
// Ho padded rows + a transpose into the channel's (kh*kw, Ho*Wo) block, ONE put of the q blocks.

func.func @main(%X: memref<1x4x7x7xf32> {graph.name = "x"}) -> (memref<36x49xf32> {graph.name = "col"}) {
  %col = memref.alloc() {alignment = 128 : i64} : memref<36x49xf32>
  tile.kernel "im2col_planes" (%x = %X : memref<1x4x7x7xf32>, %c = %col : memref<36x49xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : memref<1x4x7x7xf32> -> memref<36x49xf32>
  }
  func.return %col : memref<36x49xf32>
}

// CHECK-LABEL: loop.spmd "im2col_planes"
// CHECK-NEXT:  %im2col_planes = loop.ldm_buffer "im2col_planes" : !loop.ldm<1x9x7xf32>
// CHECK-NEXT:  %im2col_block = loop.ldm_buffer "im2col_block" : !loop.ldm<1x9x49xf32>
// CHECK-NEXT:  %im2col_rows = loop.ldm_buffer "im2col_rows" : !loop.ldm<7x3x7xf32>
// CHECK:       loop.map fill out(%im2col_planes : !loop.ldm<1x9x7xf32>) {value = 0.000000e+00 : f64}
// CHECK:       scf.for %q = %id to %c4 step %c64 {
// CHECK:         loop.dma_start %x[%c0, %q, %c0, %c0] sizes [1, 1, 7, 7] -> %{{.*}} : memref<1x4x7x7xf32> -> !loop.ldm<7x7xf32>
// CHECK-NEXT:    loop.dma_wait
// CHECK-COUNT-3: loop.map transpose ins(%im2col_rows : !loop.ldm<7x3x7xf32>)
// CHECK:         %[[P:.*]] = loop.dma_start %im2col_block -> %c[%{{.*}}, %c0] sizes [9, 49] : !loop.ldm<1x9x49xf32> -> memref<36x49xf32>
// CHECK-NEXT:    loop.dma_wait %[[P]]
