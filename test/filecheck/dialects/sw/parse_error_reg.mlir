// RUN: not %taihu-opt %s 2>&1 | filecheck %s

// A malformed register is a parse diagnostic pointing at the token (no traceback).

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vmad x0, r1, r2
  }
}
// CHECK: parse_error_reg.mlir:7:13
// CHECK: expected a register r0..r31
// CHECK-NOT: Traceback
