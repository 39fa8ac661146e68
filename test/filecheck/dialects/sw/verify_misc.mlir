// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Remaining operand-range rules.

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vinsw r1, r2, 8, r3
  }
}
// CHECK: sw.vinsw: lane must be in 0..7 (32-bit words of a 256-bit register)

// -----

sw.kernel @k(%a: i64) {
  sw.barrier row mask 256
}
// CHECK: sw.barrier: mask must be in 1..0xff

// -----

sw.kernel @k(%a: i64) {
  sw.synr mask 0
}
// CHECK: sw.synr: mask must be in 1..0xff (one bit per CPE of the row/column)

// -----

func.func @main() {
  %p = sw.mem_alloc 0
  func.return
}
// CHECK: sw.mem_alloc: bytes must be > 0, got 0

// -----

sw.global @A : tensor<4xf64> = dense<1.000000e+00> : tensor<2xf64>
// CHECK: sw.global @A: initializer type tensor<2xf64> != tensor<4xf64>

// -----

"sw.kernel"() <{sym_name = "k"}> ({
^bb0(%a: i32):
}) : () -> ()
// CHECK: sw.kernel @k: arguments must be i64

// -----

sw.global @A : tensor<4xf64>
func.func @main() {
  sw.spawn @A()
  func.return
}
// CHECK: sw.spawn: no sw.kernel named @A

// -----

sw.kernel @k(%a: i64) {
  sw.microkernel trip 1 () {
    sw.vextw r1, 9, r3
  }
}
// CHECK: sw.vextw: lane must be in 0..7 (32-bit words of a 256-bit register)
