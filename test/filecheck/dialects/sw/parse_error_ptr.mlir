// RUN: not %taihu-opt %s 2>&1 | filecheck %s

// A memory operand names a micro-kernel pointer pK.

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vldd r0, 0(q1)
  }
}
// CHECK: parse_error_ptr.mlir:7:19
// CHECK: expected a micro-kernel pointer p0, p1, ...
// CHECK-NOT: Traceback
