// RUN: %taihu-opt %s --split-input-file -p convert-tile-to-loop | filecheck %s

// tile.winograd_* (Algorithm 5, 004 L1130-1196, algorithms.md §C4) -> per-CPE task loops of
// DMA in, loop.map winograd_* (+ transposes for NCHW), DMA out. Tasks of one op are dealt out
// cyclically over the 64 CPEs as one sequence (group g starts at (id - base_g) mod 64).

// Filter transform, data-parallel over the N_o x N_i filters (L1187): here 2 filters per task
// (>= 64 tasks), (k, 2 input channels) in, 16 blocks of 2 out.
func.func @main(%W: memref<8x16x3x3xf32> {graph.name = "w"}) -> (memref<16x8x16xf32> {graph.name = "u"}) {
  %U = memref.alloc() {alignment = 128 : i64} : memref<16x8x16xf32>
  tile.kernel "wf" (%w = %W : memref<8x16x3x3xf32>, %u = %U : memref<16x8x16xf32>) {
    tile.winograd_filter %w -> %u : memref<8x16x3x3xf32> -> memref<16x8x16xf32>
  }
  func.return %U : memref<16x8x16xf32>
}

// CHECK-LABEL: loop.spmd "wf"
// CHECK-NEXT:  %wino_filter_in = loop.ldm_buffer "wino_filter_in" : !loop.ldm<2x3x3xf32>
// CHECK-NEXT:  %wino_filter_out = loop.ldm_buffer "wino_filter_out" : !loop.ldm<16x2xf32>
// CHECK:       scf.for %q = %id to %c64 step %c64 {
// CHECK-NEXT:    %[[K:.*]] = arith.divui %q, %c8 : index
// CHECK-NEXT:    %[[JC:.*]] = arith.remui %q, %c8 : index
// CHECK-NEXT:    %[[C0:.*]] = arith.muli %[[JC]], %c2 : index
// CHECK-NEXT:    %[[T:.*]] = loop.dma_start %w[%[[K]], %[[C0]], %c0, %c0] sizes [1, 2, 3, 3] -> %wino_filter_in
// CHECK-NEXT:    loop.dma_wait %[[T]]
// CHECK-NEXT:    loop.map winograd_filter ins(%wino_filter_in : !loop.ldm<2x3x3xf32>) out(%wino_filter_out : !loop.ldm<16x2xf32>)
// CHECK-NEXT:    %[[P:.*]] = loop.dma_start %wino_filter_out -> %u[%c0, %[[K]], %[[C0]]] sizes [16, 1, 2]
// CHECK-NEXT:    loop.dma_wait %[[P]]

// -----

// Input transform, NHWC (the seed's layout, L1140): m' = tiles_per_cpe = 3 consecutive tiles of a
// tile row and all N_i channels per task: one DMA of (rows, 2m'+2 cols, N_i), one DMA of 16
// blocks of m'*N_i out. Tasks with the same boundary clipping form a group with static sizes
// (here 3 row classes x 3 column classes); the last chunk of a tile row is shifted left (tiles
// 4..6 of 7). Rows of v past B*T = 49 (GEMM block padding, L1194-1196) are not written.
func.func @main(%X: memref<1x14x14x16xf32> {graph.name = "x"}) -> (memref<16x64x16xf32> {graph.name = "v"}) {
  %V = memref.alloc() {alignment = 128 : i64} : memref<16x64x16xf32>
  tile.kernel "wi" (%x = %X : memref<1x14x14x16xf32>, %v = %V : memref<16x64x16xf32>) {
    tile.winograd_input %x -> %v {pads = array<i64: 1, 1, 1, 1>, tiles_per_cpe = 3 : i64, layout = #tile<data_layout nhwc>} : memref<1x14x14x16xf32> -> memref<16x64x16xf32>
  }
  func.return %V : memref<16x64x16xf32>
}

// CHECK-LABEL: loop.spmd "wi"
// CHECK-NEXT:  %wino_in = loop.ldm_buffer "wino_in" : !loop.ldm<512xf32>
// CHECK-NEXT:  %wino_in_v = loop.ldm_buffer "wino_in_v" : !loop.ldm<16x3x16xf32>
// CHECK-NOT:   wino_in_zero
// top-left corner tile chunk: 3 input rows, 7 columns, padding 1 on top and left
// CHECK:       scf.for %q = %id to %c1 step %c64 {
// CHECK-NEXT:    %[[D:.*]] = loop.view %wino_in[%c0] : !loop.ldm<512xf32> -> !loop.ldm<3x7x16xf32>
// CHECK-NEXT:    %[[T:.*]] = loop.dma_start %x[%c0, %c0, %c0, %c0] sizes [1, 3, 7, 16] -> %[[D]]
// CHECK-NEXT:    loop.dma_wait %[[T]]
// CHECK-NEXT:    loop.map winograd_input ins(%[[D]] : !loop.ldm<3x7x16xf32>) out(%wino_in_v : !loop.ldm<16x3x16xf32>) {pads = array<i64: 1, 1, 0, 0>}
// CHECK-NEXT:    loop.dma_start %wino_in_v -> %v[%c0, %c0, %c0] sizes [16, 3, 16] : !loop.ldm<16x3x16xf32> -> memref<16x64x16xf32>
// interior: 5 tile rows x 1 chunk, 4 rows x 8 columns, no padding
// CHECK:       scf.for %q_4 = %{{.*}} to %c5 step %c64 {
// CHECK:         loop.dma_start %x[%c0, %{{.*}}, %{{.*}}, %c0] sizes [1, 4, 8, 16]
// CHECK:         loop.map winograd_input ins(%{{.*}} : !loop.ldm<4x8x16xf32>) out(%wino_in_v : !loop.ldm<16x3x16xf32>){{$}}
// bottom-right: shifted last chunk (tiles 4..6), padding 1 bottom and right
// CHECK:       loop.map winograd_input ins(%{{.*}} : !loop.ldm<3x7x16xf32>) out(%wino_in_v : !loop.ldm<16x3x16xf32>) {pads = array<i64: 0, 0, 1, 1>}
// CHECK:       loop.dma_start %wino_in_v -> %v[%c0, %c46, %c0] sizes [16, 3, 16]
// CHECK-NOT:   loop.map fill

// -----

// Input transform, NCHW (D's layout), m' = tiles_per_cpe = 3 tiles of a tile row, all 16
// channels: one DMA per image row of (16 channels x cols) into LDM, a transpose to channels-last,
// the transform, and ONE DMA of 16 blocks of 3 x 16 to v (the 16x larger side).
func.func @main(%X: memref<1x16x14x14xf32> {graph.name = "x"}) -> (memref<16x49x16xf32> {graph.name = "v"}) {
  %V = memref.alloc() {alignment = 128 : i64} : memref<16x49x16xf32>
  tile.kernel "wi_nchw" (%x = %X : memref<1x16x14x14xf32>, %v = %V : memref<16x49x16xf32>) {
    tile.winograd_input %x -> %v {pads = array<i64: 1, 1, 1, 1>, tiles_per_cpe = 3 : i64} : memref<1x16x14x14xf32> -> memref<16x49x16xf32>
  }
  func.return %V : memref<16x49x16xf32>
}

// CHECK-LABEL: loop.spmd "wi_nchw"
// CHECK:       %wino_in_v = loop.ldm_buffer "wino_in_v" : !loop.ldm<16x3x16xf32>
// interior tasks: 4 image rows of 8 columns
// CHECK:       scf.for %q_4 = %{{.*}} to %c5 step %c64 {
// CHECK:         %[[D:.*]] = loop.view %wino_in[%c0] : !loop.ldm<512xf32> -> !loop.ldm<4x8x16xf32>
// CHECK-COUNT-4: loop.dma_start %x[%c0, %c0, %{{.*}}, %{{.*}}] sizes [1, 16, 1, 8] -> %{{.*}} : memref<1x16x14x14xf32> -> !loop.ldm<16x8xf32>
// CHECK-NEXT:    loop.dma_wait
// CHECK-NEXT:    %[[DC:.*]] = loop.view %wino_in_chw[%c0] : !loop.ldm<512xf32> -> !loop.ldm<4x16x8xf32>
// CHECK-NEXT:    loop.map transpose ins(%[[DC]] : !loop.ldm<4x16x8xf32>) out(%[[D]] : !loop.ldm<4x8x16xf32>) {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT:    loop.map winograd_input ins(%[[D]] : !loop.ldm<4x8x16xf32>) out(%wino_in_v : !loop.ldm<16x3x16xf32>){{$}}
// CHECK:         loop.dma_start %wino_in_v -> %v[%c0, %{{.*}}, %c0] sizes [16, 3, 16] : !loop.ldm<16x3x16xf32> -> memref<16x49x16xf32>

// -----

// Output transform, NCHW, odd R_o = C_o = 13: tasks of 4 tiles (the last chunk of a tile row
// shifted left and clipped to 7 columns) with all 8 channels: ONE DMA of 16 blocks of 4 x 8 in,
// the transform, a transpose to (rows, channels, cols) and one DMA per output row.
func.func @main(%M: memref<16x49x8xf32> {graph.name = "m"}) -> (memref<1x8x13x13xf32> {graph.name = "y"}) {
  %Y = memref.alloc() {alignment = 128 : i64} : memref<1x8x13x13xf32>
  tile.kernel "wo" (%m = %M : memref<16x49x8xf32>, %y = %Y : memref<1x8x13x13xf32>) {
    tile.winograd_output %m -> %y : memref<16x49x8xf32> -> memref<1x8x13x13xf32>
  }
  func.return %Y : memref<1x8x13x13xf32>
}

// CHECK-LABEL: loop.spmd "wo"
// CHECK-NEXT:  %wino_out_m = loop.ldm_buffer "wino_out_m" : !loop.ldm<16x4x8xf32>
// CHECK:       scf.for %q = %id to %c6 step %c64 {
// CHECK:         loop.dma_start %m[%c0, %{{.*}}, %c0] sizes [16, 4, 8] -> %wino_out_m
// CHECK:         loop.map winograd_output ins(%wino_out_m : !loop.ldm<16x4x8xf32>) out(%[[Y:.*]] : !loop.ldm<2x8x8xf32>)
// CHECK:         loop.map transpose ins(%[[Y]] : !loop.ldm<2x8x8xf32>) out(%{{.*}} : !loop.ldm<2x8x8xf32>) {perm = array<i64: 0, 2, 1>}
// CHECK-COUNT-2: loop.dma_start %{{.*}} -> %y[%c0, %c0, %{{.*}}, %{{.*}}] sizes [1, 8, 1, 8]
// last tile row (one output row), last chunk (7 columns)
// CHECK:       loop.map winograd_output ins(%wino_out_m : !loop.ldm<16x4x8xf32>) out(%{{.*}} : !loop.ldm<1x7x8xf32>)
// CHECK:       loop.dma_start %{{.*}} -> %y[%c0, %c0, %c12, %c6] sizes [1, 8, 1, 7]

// -----

// Output transform with the LDM epilogue: per task the g bias values arrive by one small DMA
// (issued before the transform map, waited after it), then add (bias broadcast over the
// channels-last block) and relu, before the transpose to NCHW and the store.
func.func @f(%M: memref<16x8x64xf32>, %B: memref<64xf32>, %Y: memref<1x64x4x4xf32>) {
  tile.kernel "k" (%m = %M : memref<16x8x64xf32>, %b = %B : memref<64xf32>, %y = %Y : memref<1x64x4x4xf32>) {
    tile.winograd_output %m bias %b : memref<64xf32> -> %y {activation = #tile<map_kind relu>} : memref<16x8x64xf32> -> memref<1x64x4x4xf32>
  }
  func.return
}

// CHECK:      %wino_out_bias = loop.ldm_buffer "wino_out_bias" : !loop.ldm<8xf32>
// CHECK:        %[[TB:.*]] = loop.dma_start %b[%{{.*}}] sizes [8] -> %wino_out_bias : memref<64xf32> -> !loop.ldm<8xf32>
// CHECK-NEXT:   loop.map winograd_output ins(%wino_out_m : !loop.ldm<16x2x8xf32>) out(%[[Y:.*]] : !loop.ldm<2x4x8xf32>)
// CHECK-NEXT:   loop.dma_wait %[[TB]]
// CHECK-NEXT:   loop.map add ins(%[[Y]], %wino_out_bias : !loop.ldm<2x4x8xf32>, !loop.ldm<8xf32>) out(%[[Y]] : !loop.ldm<2x4x8xf32>)
// CHECK-NEXT:   loop.map relu ins(%[[Y]] : !loop.ldm<2x4x8xf32>) out(%[[Y]] : !loop.ldm<2x4x8xf32>)
// CHECK:        loop.map transpose ins(%[[Y]] : !loop.ldm<2x4x8xf32>)
