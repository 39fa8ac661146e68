// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Placement and micro-kernel structure rules.

func.func @main() {
  %id = sw.cpe_id
  func.return
}
// CHECK: 'sw.cpe_id' is a CPE operation: it must be inside a sw.kernel

// -----

sw.kernel @k(%a: i64) {
  sw.join
}
// CHECK: 'sw.join' is an MPE (host) operation: it cannot be inside a sw.kernel

// -----

sw.kernel @k(%a: i64) {
  %b = sw.ldm_alloc 64
  sw.microkernel trip 1 (%b step 0) {
    sw.vldd r0, 0(p1)
  }
}
// CHECK: sw.vldd: pointer p1 does not exist (the micro-kernel has 1 pointer(s))

// -----

sw.kernel @k(%a: i64) {
  %b = sw.ldm_alloc 64
  sw.microkernel trip 1 (%b step 0) {
    sw.gld r0, 0(p0)
  }
}
// CHECK: sw.gld: p0 must be a main-memory ('mem') pointer

// -----

sw.kernel @k(%a: i64) {
  %b = sw.ldm_alloc 64
  sw.microkernel trip 4 (%b step 8) {
    sw.vldd r0, 0(p0)
  }
}
// CHECK: sw.vldd: offset 0 and stride 8 of p0 must be multiples of 32 bytes (aligned 32-byte access)

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 4 () {
    sw.bgt r1
    sw.nop
  }
}
// CHECK: sw.microkernel: sw.bgt closes the loop and must be the last instruction

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 4 () {
    %c = arith.constant 1 : i64
  }
}
// CHECK: sw.microkernel: body must be straight-line register instructions, found 'arith.constant'

// -----

sw.kernel @k(%a: i64) {
  %b = sw.ldm_alloc 64
  sw.microkernel trip 1 (%b step 0) {
    "sw.addl"() <{ra = 1 : i64, rb = 2 : i64, imm = 3 : i64, rc = 3 : i64}> : () -> ()
  }
}
// CHECK: sw.addl: second operand must be a register or an immediate

// -----

sw.kernel @k(%a: i64) {
}
func.func @main() {
  sw.spawn @k()
  func.return
}
// CHECK: sw.spawn: kernel @k takes 1 argument(s), got 0

// -----

func.func @main() {
  %p = sw.global_addr @nope
  func.return
}
// CHECK: sw.global_addr: no sw.global named @nope

// -----

func.func @main() {
  sw.vmad r0, r1, r2
  func.return
}
// CHECK: 'sw.vmad' is a register instruction: it must be directly in a sw.microkernel body
