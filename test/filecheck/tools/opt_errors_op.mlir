// The diagnostic of a verification error shows the failing op and xDSL's underline, also when
// the enclosing block has arguments (its `^bb0(...)` label is not the underline).
// RUN: not %taihu-opt %s 2>&1 | filecheck %s
// An output file that cannot be created is one error line, not a traceback.
// RUN: not %taihu-opt %S/opt_builtin.mlir -o %t.missing-dir/out.mlir 2>&1 | filecheck %s --check-prefix=WRITE

// CHECK: taihu-opt: error: {{.*}}opt_errors_op.mlir:{{[0-9]+}}:{{[0-9]+}}: graph.conv2d: input channel dim 1 (=3) must equal weight dim 1 (=2) * group (=1)
// CHECK-NEXT: "func.func"
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %y = "graph.conv2d"(%x, %w)
// CHECK-NEXT: ^^^^
// CHECK-NEXT: | Operation does not verify: graph.conv2d: input channel dim 1
// CHECK-NOT: Traceback
// WRITE: taihu-opt: error: cannot write {{.*}}missing-dir/out.mlir: No such file or directory
// WRITE-NOT: Traceback

func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}
