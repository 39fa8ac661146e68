// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Register rules of the fp compare / select / divide / sqrt instructions (004 L821).

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vfseleq r0, r1, r2, r31
  }
}
// CHECK: sw.vfseleq: r31 is hard-wired to 0 and cannot be written (004 L821)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vsqrtd r40, r1
  }
}
// CHECK: sw.vsqrtd: register r40 does not exist (r0..r31)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vfcmplt r0, r1, r31
  }
}
// CHECK: sw.vfcmplt: r31 is hard-wired to 0 and cannot be written (004 L821)

// -----

sw.kernel @k(%a: i64) {
  sw.vdivd r0, r1, r2
}
// CHECK: 'sw.vdivd' is a register instruction: it must be directly in a sw.microkernel body

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 (%a step 8) {
    sw.fstd r0, 4(p0)
  }
}
// CHECK: sw.fstd: offset 4 and stride 8 of p0 must be multiples of 8 bytes (aligned 8-byte access)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.ldfi r31, 1.0
  }
}
// CHECK: sw.ldfi: r31 is hard-wired to 0 and cannot be written (004 L821)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vinsf r0, r1, 4, r2
  }
}
// CHECK: sw.vinsf: lane must be in 0..3 (fp64 lanes of a 256-bit register)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vextf r0, -1, r2
  }
}
// CHECK: sw.vextf: lane must be in 0..3 (fp64 lanes of a 256-bit register)
