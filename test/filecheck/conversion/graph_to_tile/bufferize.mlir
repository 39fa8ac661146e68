// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s

// Function form: tensor arguments/results become memrefs (graph.name kept); constants become
// memref.global (small/splat: inline dense; large: the dense_resource blob, shared, in
// taihu.initial_value) read with memref.get_global; an unfolded batch_norm becomes an affine map
// with compile-time per-channel scale/shift globals.
func.func @main(%x: tensor<2x4x3x3xf32> {graph.name = "x"}) -> (tensor<2x4x3x3xf32> {graph.name = "y"}) {
  %w = graph.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]]> : tensor<1x4x1x1xf32>
  %gamma = graph.constant dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xf32>
  %beta = graph.constant dense<0.5> : tensor<4xf32>
  %mean = graph.constant dense<[0.0, 1.0, 2.0, 3.0]> : tensor<4xf32>
  %var = graph.constant dense<4.0> : tensor<4xf32>
  %m = graph.mul %x, %w : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
  %bn = graph.batch_norm %m, %gamma, %beta, %mean, %var : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  func.return %bn : tensor<2x4x3x3xf32>
}

// CHECK:      "memref.global"() <{sym_name = "bn_scale", type = memref<4x1x1xf32>, initial_value = dense<[{{.*}}]> : tensor<4x1x1xf32>, sym_visibility = "private", constant, alignment = 128 : i64}> : () -> ()
// CHECK-NEXT: "memref.global"() <{sym_name = "bn_shift", type = memref<4x1x1xf32>, initial_value = dense<[{{.*}}]> : tensor<4x1x1xf32>, sym_visibility = "private", constant, alignment = 128 : i64}> : () -> ()
// CHECK-NEXT: "memref.global"() <{sym_name = "w", type = memref<1x4x1x1xf32>, initial_value = dense<{{.*}}> : tensor<1x4x1x1xf32>, sym_visibility = "private", constant, alignment = 128 : i64}> : () -> ()
// CHECK-NEXT: func.func @main(%x: memref<2x4x3x3xf32> {graph.name = "x"}) -> (memref<2x4x3x3xf32> {graph.name = "y"}) {
// CHECK-NEXT:   %w = memref.get_global @w : memref<1x4x1x1xf32>
// CHECK:        tile.kernel "m" {{.*}}taihu.op = "graph.mul"
// CHECK:          tile.map mul
// CHECK:        memref.get_global @bn_scale : memref<4x1x1xf32>
// CHECK:        memref.get_global @bn_shift : memref<4x1x1xf32>
// CHECK:        tile.kernel "bn" {{.*}}taihu.op = "graph.batch_norm"
// CHECK:          tile.map affine ins(%t, %in1, %in2 : !tile.buf<{{.*}}>, !tile.buf<{{.*}}>, !tile.buf<{{.*}}>) out(%t
// CHECK:        func.return %bn : memref<2x4x3x3xf32>
// CHECK-NOT:  = graph.
// CHECK-NOT:  bufferization.

// -----

// A returned argument, a returned view and the same buffer returned twice are copied into
// distinct allocations (loop-to-sw makes each returned buffer an output global).
func.func @main(%x: tensor<2x3xf32> {graph.name = "x"}) -> (tensor<2x3xf32> {graph.name = "a"}, tensor<6xf32> {graph.name = "b"}, tensor<2x3xf32> {graph.name = "c"}, tensor<2x3xf32> {graph.name = "d"}) {
  %r = graph.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %v = graph.reshape %r : tensor<2x3xf32> -> tensor<6xf32>
  func.return %x, %v, %r, %r : tensor<2x3xf32>, tensor<6xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @main(%x: memref<2x3xf32> {graph.name = "x"})
// CHECK:      tile.kernel "r"
// CHECK:      %output = memref.alloc() {alignment = 128 : i64} : memref<2x3xf32>
// CHECK:      tile.kernel "output_0" {{.*}}taihu.algorithm = "copy"
// CHECK:      %output_1 = memref.alloc() {alignment = 128 : i64} : memref<6xf32>
// CHECK:      tile.kernel "output_1"
// CHECK:      %output_2 = memref.alloc() {alignment = 128 : i64} : memref<2x3xf32>
// CHECK:      tile.kernel "output_3"
// CHECK:      func.return %output, %output_1, %r, %output_2 : memref<2x3xf32>, memref<6xf32>, memref<2x3xf32>, memref<2x3xf32>
