// RUN: %taihu-opt %s -p 'set-target,convert-graph-to-tile' --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// An illegal tile of a memory-bound op is one diagnostic at the op, naming the parameter.

func.func @main(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32> {
  %r = graph.sigmoid %x {tile.schedule = #tile.schedule<"map" {chunk = 448 : i64, rows = 64 : i64, split = 0 : i64}>} : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32>
  func.return %r : tensor<1x64x56x56xf32>
}
// CHECK: convert-graph-to-tile: graph.sigmoid: illegal tile.schedule: unknown parameter "chunk" for map (expected: rows, split)

// -----

func.func @main(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32> {
  %r = graph.sigmoid %x {tile.schedule = #tile.schedule<"map" {rows = 100 : i64, split = 0 : i64}>} : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32>
  func.return %r : tensor<1x64x56x56xf32>
}
// CHECK: convert-graph-to-tile: graph.sigmoid: illegal tile.schedule: rows=100 is neither the whole dim 0 (200704) nor a multiple of 64 (the CPEs)

// -----

func.func @main(%x: tensor<1x256x112x112xf32>) -> tensor<1x256x112x112xf32> {
  %r = graph.sigmoid %x {tile.schedule = #tile.schedule<"map" {rows = 3211264 : i64, split = 0 : i64}>} : tensor<1x256x112x112xf32> -> tensor<1x256x112x112xf32>
  func.return %r : tensor<1x256x112x112xf32>
}
// CHECK: convert-graph-to-tile: graph.sigmoid: illegal tile.schedule: LDM footprint 401408 B per CPE > the budget 56832 B

// -----

func.func @main(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x28x28xf32> {
  %p = graph.max_pool %x {tile.schedule = #tile.schedule<"map" {rows = 64 : i64, split = 0 : i64}>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x64x56x56xf32> -> tensor<1x64x28x28xf32>
  func.return %p : tensor<1x64x28x28xf32>
}
// CHECK: convert-graph-to-tile: graph.max_pool: illegal tile.schedule: algorithm "map" does not apply: the op's schedule is "window"

// -----

func.func @main(%x: tensor<1x64x56x56xf32>) -> tensor<1x56x56x64xf32> {
  %t = graph.transpose %x {tile.schedule = #tile.schedule<"transpose" {rows = 64 : i64, split = 0 : i64, window = "1,0"}>, perm = array<i64: 0, 2, 3, 1>} : tensor<1x64x56x56xf32> -> tensor<1x56x56x64xf32>
  func.return %t : tensor<1x56x56x64xf32>
}
// CHECK: convert-graph-to-tile: graph.transpose: illegal tile.schedule: window="1,0" must list distinct input dims in increasing order (0 .. 1), e.g. "0,1"

// -----

func.func @main(%x: tensor<1x1000xf32>) -> tensor<1x1000xf32> {
  %s = graph.softmax %x {axis = 1 : i64, tile.schedule = #tile.schedule<"axis" {channels = 500 : i64, cols = 1 : i64, rows = 1 : i64, split = 0 : i64}>} : tensor<1x1000xf32> -> tensor<1x1000xf32>
  func.return %s : tensor<1x1000xf32>
}
// CHECK: convert-graph-to-tile: graph.softmax: illegal tile.schedule: channels=500: split=0 tiles hold the whole axis (1000)
