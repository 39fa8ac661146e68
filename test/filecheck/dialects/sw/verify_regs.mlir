// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Register numbers < 32; r31 reads 0 and is never written (004 L821).

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vmad r0, r32, r4
  }
}
// CHECK: sw.vmad: register r32 does not exist (r0..r31)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vmad r0, r1, r31
  }
}
// CHECK: sw.vmad: r31 is hard-wired to 0 and cannot be written (004 L821)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.getc r31
  }
}
// CHECK: sw.getc: r31 is hard-wired to 0 and cannot be written (004 L821)

// -----

sw.kernel @k(%a: i64) {
  %b = sw.ldm_alloc 64
  sw.microkernel trip 1 (%b step 0) {
    sw.vldd r0, 0(p0, r40)
  }
}
// CHECK: sw.vldd: register r40 does not exist (r0..r31)

// -----

// r31 may be read (it reads 0).
sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vmad r31, r31, r0
    sw.addl r31, 5, r1
  }
}
// CHECK: sw.vmad r31, r31, r0
