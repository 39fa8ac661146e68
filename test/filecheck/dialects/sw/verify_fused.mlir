// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Fused load-and-broadcast exists only for fp64 (004 L823).

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 64
  sw.microkernel trip 1 (%buf step 0) {
    sw.vldr r0, 0(p0) : f32
  }
}
// CHECK: sw.vldr: fused load-and-send exists only for fp64 (004 L823); for f32 use a load followed by putr

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 64
  sw.microkernel trip 1 (%buf step 0) {
    sw.lddec r0, 0(p0) : f32
  }
}
// CHECK: sw.lddec: fused load-and-send exists only for fp64 (004 L823); for f32 use a load followed by putc

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 64
  sw.microkernel trip 1 (%buf step 0) {
    sw.ldder r0, 0(p0) : f64
    sw.vldc r1, 32(p0)
  }
}
// CHECK: sw.ldder r0, 0(p0) : f64
// CHECK-NEXT: sw.vldc r1, 32(p0)
