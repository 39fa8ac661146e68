// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// loop.spmd structure and the per-CPE LDM footprint (double buffers twice, 32-B rounding).

// A 64x64 f64 double = 2 x 32768 B already exceeds ldm_user_bytes = 57344 [param] (64 KB, 004 L460).
func.func @f(%X: memref<8xf64>) {
  loop.spmd "big" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "A" : !loop.ldm<64x64xf64, double>
  }
  func.return
}
// CHECK: loop.spmd "big": LDM footprint 65536 bytes per CPE > ldm_user_bytes = 57344 (double buffers counted twice): "A" 65536 B (double)

// -----

// 3 f32 elements = 12 B occupy a 32-B slot: 57312 + 32 = 57344 fits, one more slot does not.
func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "A" : !loop.ldm<7164xf64>
    %s = loop.ldm_buffer "s" : !loop.ldm<3xf32>
    %t = loop.ldm_buffer "t" : !loop.ldm<3xf32, double>
  }
  func.return
}
// CHECK: loop.spmd "k": LDM footprint 57408 bytes per CPE > ldm_user_bytes = 57344 (double buffers counted twice): "A" 57312 B, "s" 32 B, "t" 64 B (double)

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "A" : !loop.ldm<8xf64>
    %b = loop.ldm_buffer "A" : !loop.ldm<8xf64>
  }
  func.return
}
// CHECK: loop.spmd "k": two LDM buffers are named "A"

// -----

func.func @f(%X: memref<8xf64>) {
  "loop.spmd"(%X) <{kernel_name = "k"}> ({
  ^bb0(%r: index, %x: memref<8xf64>):
  }) : (memref<8xf64>) -> ()
  func.return
}
// CHECK: loop.spmd "k": the body takes (row, col) index arguments then one per operand

// -----

func.func @f(%X: memref<8xf64>) {
  "loop.spmd"(%X) <{kernel_name = "k"}> ({
  ^bb0(%r: index, %c: index, %x: memref<8xf32>):
  }) : (memref<8xf64>) -> ()
  func.return
}
// CHECK: loop.spmd "k": block argument #2 has type memref<8xf32>, operand has memref<8xf64>

// -----

func.func @f(%X: memref<?xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<?xf64>) {
  }
  func.return
}
// CHECK: loop.spmd "k": operand #0 must be a static identity-layout memref, got memref<?xf64>

// -----

func.func @f(%X: memref<8xf64>, %n: index) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c1 step %c1 {
      %a = loop.ldm_buffer "A" : !loop.ldm<8xf64>
    }
  }
  func.return
}
// CHECK: loop.ldm_buffer must be directly in a loop.spmd body (not in a loop/if)

// -----

func.func @f() {
  loop.barrier array
  func.return
}
// CHECK: 'loop.barrier' is a per-CPE operation: it must be inside a loop.spmd

// -----

func.func @f() {
  %t = "test.op"() : () -> !loop.ldm<0x8xf64>
  func.return
}
// CHECK: !loop.ldm: shape must be non-empty with positive dims, got [0, 8]

// -----

func.func @f() {
  %t = "test.op"() : () -> !loop.ldm<8xi32>
  func.return
}
// CHECK: !loop.ldm: element type must be f32 or f64, got i32

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "A" : !loop.ldm<8xf64>
    %c0 = arith.constant 0 : index
    %s = loop.slot %a[%c0] : !loop.ldm<8xf64>
  }
  func.return
}
// CHECK: loop.slot: %a is not double-buffered

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "A" : !loop.ldm<8xf64, double>
    %m = arith.constant -1 : index
    %s = loop.slot %a[%m] : !loop.ldm<8xf64, double>
  }
  func.return
}
// CHECK: loop.slot: slot index must be >= 0

// -----

func.func @f(%X: memref<8xf64>) {
  loop.spmd "k" ids(%r, %c) (%x = %X : memref<8xf64>) {
    %a = loop.ldm_buffer "A" : !loop.ldm<8xf64, double>
    %c0 = arith.constant 0 : index
    %s = "loop.slot"(%a, %c0) : (!loop.ldm<8xf64, double>, index) -> !loop.ldm<4xf64>
  }
  func.return
}
// CHECK: loop.slot: result type must be !loop.ldm<8xf64>, got !loop.ldm<4xf64>
