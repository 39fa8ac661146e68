// RUN: %taihu-opt %s -p 'set-target,graph-schedule' --split-input-file | filecheck %s
// RUN: %taihu-opt %s -p 'set-target,convert-graph-to-tile' --split-input-file | filecheck %s --check-prefix=LOWER

// The memory-bound ops get their tile as a schedule: the dim split over the CPEs and the tile's
// extents (backends/model/map_plans.py). A relu fused into its producer's kernel gets none.

func.func @main(%x: tensor<1x64x56x56xf32>, %b: tensor<1x64x1x1xf32>) -> (tensor<1x64x28x28xf32>, tensor<1x64x1x1xf32>, tensor<1x56x56x64xf32>) {
  %a = graph.add %x, %b : (tensor<1x64x56x56xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x56x56xf32>
  %r = graph.relu %a : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32>
  %p = graph.max_pool %r {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x64x56x56xf32> -> tensor<1x64x28x28xf32>
  %g = graph.global_avg_pool %x : tensor<1x64x56x56xf32> -> tensor<1x64x1x1xf32>
  %s = graph.softmax %g {axis = 1 : i64} : tensor<1x64x1x1xf32> -> tensor<1x64x1x1xf32>
  %t = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x64x56x56xf32> -> tensor<1x56x56x64xf32>
  func.return %p, %s, %t : tensor<1x64x28x28xf32>, tensor<1x64x1x1xf32>, tensor<1x56x56x64xf32>
}

// CHECK:      %a = graph.add %x, %b {tile.schedule = #tile.schedule<"map" {chunk = 3136 : i64, rows = 64 : i64, split = 0 : i64}>}
// CHECK-NEXT: %r = graph.relu %a : tensor
// CHECK-NEXT: %p = graph.max_pool %r {tile.schedule = #tile.schedule<"window" {planes = 64 : i64, rows = 14 : i64}>
// CHECK-NEXT: %g = graph.global_avg_pool %x {tile.schedule = #tile.schedule<"reduce" {chunk = 3136 : i64, planes = 64 : i64}>}
// CHECK-NEXT: %s = graph.softmax %g {tile.schedule = #tile.schedule<"axis" {channels = 64 : i64, cols = 1 : i64, rows = 1 : i64, split = 0 : i64}>
// CHECK-NEXT: %t = graph.transpose %x {tile.schedule = #tile.schedule<"transpose" {rows = 3136 : i64, split = 1 : i64, window = "0,1"}>

// -----

// An edited schedule is followed: 4 output rows per tile instead of the model's 14.

func.func @main(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x28x28xf32> {
  %p = graph.max_pool %x {tile.schedule = #tile.schedule<"window" {planes = 64 : i64, rows = 4 : i64}>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x64x56x56xf32> -> tensor<1x64x28x28xf32>
  func.return %p : tensor<1x64x28x28xf32>
}

// CHECK:      graph.max_pool %x {tile.schedule = #tile.schedule<"window" {planes = 64 : i64, rows = 4 : i64}>
// LOWER:      %tin = tile.alloc double : !tile.buf<64x9x56xf32, cpe>
// LOWER-NEXT: %tout = tile.alloc double : !tile.buf<64x4x28xf32, cpe>
// LOWER:      tile.for %h = 0 to 28 step 4 name "h" {

// -----

// A channel-bias add on (64, 3136): one channel per CPE, 448 of its 3136 columns per tile.

func.func @main(%x: tensor<1x64x56x56xf32>, %b: tensor<1x64x1x1xf32>) -> tensor<1x64x56x56xf32> {
  %a = graph.add %x, %b {tile.schedule = #tile.schedule<"map" {chunk = 448 : i64, rows = 64 : i64, split = 0 : i64}>} : (tensor<1x64x56x56xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x56x56xf32>
  func.return %a : tensor<1x64x56x56xf32>
}

// LOWER:      %t = tile.alloc double : !tile.buf<64x448xf32, cpe>
// LOWER:      tile.for %i1 = 0 to 3136 step 448 name "i1" {
