// RUN: %taihu-opt %s -p 'graph-group{ldm-budget=2048}' | filecheck %s
// RUN: %taihu-opt %s -p 'graph-group{ldm-budget=2048 order=bfs}' | filecheck %s --check-prefix=BFS
// RUN: %taihu-opt %s -p 'set-target{machine=sw26010pro},graph-group' | filecheck %s --check-prefix=PRO

// A down-sampling (GT-3/GT-5 in small): with 2 KiB per CPE (aggregate 64 x 2 KiB = 128 KiB),
// relu [8,16,32,32] f32 (in + out 1 MiB) needs f = 8 along N; the max_pool joins it (the merged
// peak is still 1 MiB, f = 8); the relu after the pool (256 KiB) needs only f = 2, and rule
// (i)(a) (f(SG2) >= f(SG1)) keeps it apart. Instances g0.0..g0.7 and g1.0, g1.1: each g1
// instance reads four g0 instances (14 inherited edges -> 8 kept). The LIFO order (Algorithm 3)
// keeps at most 4 g0 outputs + one g1 output live (128 KiB), BFS all 8 (192 KiB): DFS is chosen.
// CHECK-LABEL: func.func @stages
// CHECK-SAME:    taihu.order = "dfs", taihu.instances = ["g0.7", "g0.6", "g0.5", "g0.4", "g1.1", "g0.3", "g0.2", "g0.1", "g0.0", "g1.0"]
// CHECK-NEXT:    %r1 = graph.relu %x {taihu.group = 0 : i64, taihu.split = array<i64: 0, 8>, taihu.group_layer = 0 : i64}
// CHECK-NEXT:    %p = graph.max_pool %r1 {taihu.group = 0 : i64, taihu.split = array<i64: 0, 8>, taihu.group_layer = 0 : i64,
// CHECK-NEXT:    %r2 = graph.relu %p {taihu.group = 1 : i64, taihu.split = array<i64: 0, 2>, taihu.group_layer = 0 : i64, taihu.anchor}

// order=bfs forces the breadth-first order.
// BFS: taihu.order = "bfs", taihu.instances = ["g0.0", "g0.1", "g0.2", "g0.3", "g0.4", "g0.5", "g0.6", "g0.7", "g1.0", "g1.1"]

// The budget defaults to the module's machine: the SW26010-Pro's LDM holds the whole chain
// (f = 1), and everything is one group.
// PRO:      taihu.instances = ["g0.0"]
// PRO:      %r1 = graph.relu %x {taihu.group = 0 : i64, taihu.split = array<i64: 0, 1>
// PRO-NEXT: %p = graph.max_pool %r1 {taihu.group = 0 : i64, taihu.split = array<i64: 0, 1>
// PRO-NEXT: %r2 = graph.relu %p {taihu.group = 0 : i64, taihu.split = array<i64: 0, 1>
func.func @stages(%x: tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xf32> {
  %r1 = graph.relu %x : tensor<8x16x32x32xf32> -> tensor<8x16x32x32xf32>
  %p = graph.max_pool %r1 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x16x32x32xf32> -> tensor<8x16x16x16xf32>
  %r2 = graph.relu %p : tensor<8x16x16x16xf32> -> tensor<8x16x16x16xf32>
  func.return %r2 : tensor<8x16x16x16xf32>
}
