// A verification error is one diagnostic on stderr with the failing op, exit status 1,
// and no output file is written.
// RUN: not %taihu-opt %s -o %t.out 2>&1 | filecheck %s
// RUN: not test -e %t.out
// RUN: not %taihu-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not %taihu-opt %t.missing.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not %taihu-opt %s -p 'graph-simplify{dce=true' 2>&1 | filecheck %s --check-prefix=SPEC

// CHECK: taihu-opt: error: {{.*}}opt_errors.mlir:{{[0-9]+}}:{{[0-9]+}}: Expected arguments to have the same types as the function output types
// CHECK-NEXT: "func.func"
// CHECK: "func.return"(%0) : (i64) -> ()
// CHECK-NEXT: ^^^
// CHECK-NOT: Traceback
// PASS: taihu-opt: error: Unrecognized passes: ['no-such-pass']
// MISSING: taihu-opt: error: No such file or directory: {{.*}}missing.mlir
// SPEC: taihu-opt: error: Error parsing pass pipeline specification:
// SPEC: Malformed pass arguments
// SPEC-NOT: Traceback

func.func @f() -> i32 {
  %0 = arith.constant 1 : i64
  func.return %0 : i64
}
