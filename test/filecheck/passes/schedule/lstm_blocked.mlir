// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | filecheck %s
// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | %taihu-opt -p convert-graph-to-tile | filecheck %s --check-prefix=BLOCKED
// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | sed 's/r_block = 256/r_block = 384/' | %taihu-opt -p convert-graph-to-tile --verify-diagnostics 2>&1 | filecheck %s --check-prefix=ILLEGAL
// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | sed 's/r_block = 256 : i64, //' | %taihu-opt -p convert-graph-to-tile --verify-diagnostics 2>&1 | filecheck %s --check-prefix=WHOLE

// H = 512: one R_j (512x512 fp64 + its f32 staging tile) does not fit in LDM beside the state, so
// the model streams R_j in 256x256 blocks (r_block): the state in two column blocks of (32, 256)
// tiles, per step and gate one mesh GEMM per R block, block i+1 loaded into the other staging
// tile before block i is converted and multiplied. A schedule without r_block names the whole-R_j
// form, which does not fit.

func.func @main(%x: tensor<2x1x8xf32> {graph.name = "x"}, %w: tensor<1x2048x8xf32> {graph.name = "w"}, %r: tensor<1x2048x512xf32> {graph.name = "r"}) -> (tensor<2x1x1x512xf32> {graph.name = "y"}, tensor<1x1x512xf32> {graph.name = "y_h"}, tensor<1x1x512xf32> {graph.name = "y_c"}) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 512 : i64} : (tensor<2x1x8xf32>, tensor<1x2048x8xf32>, tensor<1x2048x512xf32>) -> (tensor<2x1x1x512xf32>, tensor<1x1x512xf32>, tensor<1x1x512xf32>)
  func.return %y, %yh, %yc : tensor<2x1x1x512xf32>, tensor<1x1x512xf32>, tensor<1x1x512xf32>
}

// CHECK: graph.lstm %x, %w, %r {tile.schedule = #tile.schedule<"lstm" {hoist_r = false, r_block = 256 : i64, x.bk = 8 : i64, x.bm = 32 : i64, x.bn = 256 : i64, x.double_c = false, x.trans_a = false, x.trans_b = true, x.vec = "n"}>, hidden_size = 512 : i64}

// BLOCKED:      tile.kernel "y" (
// BLOCKED:      %h0 = tile.alloc : !tile.buf<32x256xf64, rc>
// BLOCKED-NEXT: %h1 = tile.alloc : !tile.buf<32x256xf64, rc>
// BLOCKED-NEXT: %hn0 = tile.alloc : !tile.buf<32x256xf64, rc>
// BLOCKED:      %r_s0 = tile.alloc : !tile.buf<256x256xf32, cr>
// BLOCKED-NEXT: %r_s1 = tile.alloc : !tile.buf<256x256xf32, cr>
// BLOCKED-NEXT: %[[R:.*]] = tile.alloc : !tile.buf<256x256xf64, cr, col>
// BLOCKED:      tile.for %t = 0 to 2 step 1 name "t" {
// BLOCKED-NEXT:   tile.move %r_1[%c0_1, %c0_1, %c0_1] sizes [1, 256, 256] -> %r_s0
// BLOCKED:        tile.move %r_1[%c0_1, %c0_1, %c256] sizes [1, 256, 256] -> %r_s1
// BLOCKED-NEXT:   tile.map convert ins(%r_s0 : {{.*}}) out(%[[R]] : {{.*}})
// BLOCKED-NEXT:   tile.gemm %h0, %[[R]] -> %g0 m 32 n 256 k 256 scheme 4 vec n trans_b
// BLOCKED-NEXT:   tile.move %r_1[%c1_1, %c0_1, %c0_1] sizes [1, 256, 256] -> %r_s0
// BLOCKED-NEXT:   tile.map convert ins(%r_s1 : {{.*}}) out(%[[R]] : {{.*}})
// BLOCKED-NEXT:   tile.gemm %h1, %[[R]] -> %g0 m 32 n 256 k 256 scheme 4 vec n trans_b
// BLOCKED:        tile.map mul ins(%g1, %tmp : {{.*}}) out(%hn0 : {{.*}})
// BLOCKED:        tile.map copy ins(%hn1 : {{.*}}) out(%h1 : {{.*}})
// BLOCKED-NEXT: }

// ILLEGAL: convert-graph-to-tile: graph.lstm: illegal tile.schedule: r_block=384 must be a multiple of 128 dividing the padded hidden size 512

// WHOLE: convert-graph-to-tile: graph.lstm: illegal tile.schedule: hoist_r=false: the LDM-resident recurrence (h, c, gates and one R_j of 512x512) needs 65536 B per CPE > 56832
