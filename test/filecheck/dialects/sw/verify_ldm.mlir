// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The LDM allocations of a kernel must fit in ldm_user_bytes = 57344 (param; 64 KB hard limit,
// 004 L460); the message lists every allocation.

sw.kernel @k(%a: i64) {
  %A = sw.ldm_alloc 32768
  %B = sw.ldm_alloc 16384
  %C = sw.ldm_alloc 8200
}
// CHECK: sw.kernel @k: LDM allocations need 57352 bytes > ldm_user_bytes = 57344: %A 32768 B, %B 16384 B, %C 8200 B

// -----

// Alignment padding counts: 8 + pad 24 + 57312 = 57344 fits exactly.
sw.kernel @k(%a: i64) {
  %s = sw.ldm_alloc 8
  %big = sw.ldm_alloc 57312
}
// CHECK: %big = sw.ldm_alloc 57312

// -----

sw.kernel @k(%a: i64) {
  %s = sw.ldm_alloc 8 align 128
  %big = sw.ldm_alloc 57312 align 128
}
// CHECK: sw.kernel @k: LDM allocations need 57440 bytes > ldm_user_bytes = 57344: %s 8 B, %big 57312 B

// -----

sw.kernel @k(%a: i64, %n: i64) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  scf.for %i = %c0 to %n step %c1 : i64 {
    %buf = sw.ldm_alloc 64
  }
}
// CHECK: sw.ldm_alloc must be directly in a sw.kernel body (not in a loop/if)

// -----

sw.kernel @k(%a: i64) {
  %s = sw.ldm_alloc 64 align 48
}
// CHECK: sw.ldm_alloc: align must be a power of two, got 48
