// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// SW-64 fp compare / select / divide / square root (dest last; lane = 2.0 if true else 0.0),
// scalar fp stores (lane 0), the fp-constant pseudo-instruction sw.ldfi, fp64 lane insert/extract.

sw.kernel @k(%a: i64) {
  sw.microkernel trip 4 (%a step 32) {
    sw.vldd r0, 0(p0)
    sw.vfcmpeq r0, r31, r1
    sw.vfcmple r0, r1, r2
    sw.vfcmplt r0, r31, r3
    sw.vfseleq r3, r0, r31, r4
    sw.vfsellt r0, r31, r0, r5
    sw.vdivd r4, r5, r6
    sw.vdivs r4, r5, r7
    sw.vsqrtd r6, r8
    sw.vsqrts r7, r9
    sw.vstd r9, 0(p0)
    sw.ldfi r10, 0.01
    sw.ldfi r11, -2.0
    sw.ldfi r12, 1.0e-05
    sw.ldfi r13, 0xfff0000000000000
    sw.fstd r10, 8(p0)
    sw.fsts r11, 4(p0)
    sw.vinsf r10, r0, 3, r0
    sw.vextf r0, 2, r14
  }
}

// CHECK:      sw.microkernel trip 4 (%a step 32) {
// CHECK-NEXT:   sw.vldd r0, 0(p0)
// CHECK-NEXT:   sw.vfcmpeq r0, r31, r1
// CHECK-NEXT:   sw.vfcmple r0, r1, r2
// CHECK-NEXT:   sw.vfcmplt r0, r31, r3
// CHECK-NEXT:   sw.vfseleq r3, r0, r31, r4
// CHECK-NEXT:   sw.vfsellt r0, r31, r0, r5
// CHECK-NEXT:   sw.vdivd r4, r5, r6
// CHECK-NEXT:   sw.vdivs r4, r5, r7
// CHECK-NEXT:   sw.vsqrtd r6, r8
// CHECK-NEXT:   sw.vsqrts r7, r9
// CHECK-NEXT:   sw.vstd r9, 0(p0)
// CHECK-NEXT:   sw.ldfi r10, 0.01
// CHECK-NEXT:   sw.ldfi r11, -2.0
// CHECK-NEXT:   sw.ldfi r12, 1.0e-05
// CHECK-NEXT:   sw.ldfi r13, 0xfff0000000000000
// CHECK-NEXT:   sw.fstd r10, 8(p0)
// CHECK-NEXT:   sw.fsts r11, 4(p0)
// CHECK-NEXT:   sw.vinsf r10, r0, 3, r0
// CHECK-NEXT:   sw.vextf r0, 2, r14
// CHECK-NEXT: }

// CHECK-GENERIC: "sw.vfseleq"() <{ra = 3 : i64, rb = 0 : i64, rc = 31 : i64, rd = 4 : i64}> : () -> ()
// CHECK-GENERIC: "sw.vsqrtd"() <{ra = 6 : i64, rc = 8 : i64}> : () -> ()
// CHECK-GENERIC: "sw.ldfi"() <{rd = 10 : i64, value = 1.000000e-02 : f64}> : () -> ()
// CHECK-GENERIC: "sw.ldfi"() <{rd = 13 : i64, value = 0xfff0000000000000 : f64}> : () -> ()
