// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | filecheck %s
// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | sed 's/hoist_r = true/hoist_r = false/' | %taihu-opt -p convert-graph-to-tile | filecheck %s --check-prefix=STREAMED
// RUN: %taihu-opt %s -p 'set-target,graph-schedule' | sed 's/x.bm = 32/x.bm = 48/' | %taihu-opt -p convert-graph-to-tile --verify-diagnostics 2>&1 | filecheck %s --check-prefix=ILLEGAL

// An LSTM's schedule: its input projection's GEMM (x.*) and whether the recurrence keeps the
// four R_j in LDM (hoist_r); edited to stream them, each R_j is loaded per step and gate.

func.func @main(%x: tensor<5x3x20xf32> {graph.name = "x"}, %w: tensor<1x96x20xf32> {graph.name = "w"}, %r: tensor<1x96x24xf32> {graph.name = "r"}, %b: tensor<1x192xf32> {graph.name = "b"}) -> (tensor<5x1x3x24xf32> {graph.name = "y"}, tensor<1x3x24xf32> {graph.name = "y_h"}, tensor<1x3x24xf32> {graph.name = "y_c"}) {
  %y, %yh, %yc = graph.lstm %x, %w, %r bias(%b : tensor<1x192xf32>) {hidden_size = 24 : i64} : (tensor<5x3x20xf32>, tensor<1x96x20xf32>, tensor<1x96x24xf32>) -> (tensor<5x1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x24xf32>)
  func.return %y, %yh, %yc : tensor<5x1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x24xf32>
}

// CHECK: graph.lstm %x, %w, %r bias(%b : tensor<1x192xf32>) {tile.schedule = #tile.schedule<"lstm" {hoist_r = true, x.bk = 24 : i64, x.bm = 32 : i64, x.bn = 128 : i64, x.double_c = false, x.trans_a = false, x.trans_b = true, x.vec = "n"}>, hidden_size = 24 : i64}

// STREAMED:      tile.kernel "y" (
// STREAMED:      %r0 = tile.alloc : !tile.buf<128x128xf64, cr, col>
// STREAMED-NOT:  %r1 = tile.alloc
// STREAMED:      tile.for %t = 0 to 5 step 1 name "t" {
// STREAMED:        tile.move %r_1[%c0, %c0, %c0] sizes [1, 128, 128] pad 0.0 -> %r_s
// STREAMED:        tile.gemm %h, %r0 -> %g0
// STREAMED:        tile.move %r_1[%c1, %c0, %c0] sizes [1, 128, 128] pad 0.0 -> %r_s

// ILLEGAL: convert-graph-to-tile: graph.lstm: illegal tile.schedule: the input projection (parameters x.*): bm=48 is not a multiple of 32
