// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// loop.view verifier rules: single-slot source and result, element type, capacity, constant offset in range.

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %b = loop.ldm_buffer "b" : !loop.ldm<2x8xf32, double>
    %c0 = arith.constant 0 : index
    %v = loop.view %b[%c0] : !loop.ldm<2x8xf32, double> -> !loop.ldm<8xf32>
  }
  func.return
}
// CHECK: 'loop.view': source %b is double-buffered; select a slot with loop.slot

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %b = loop.ldm_buffer "b" : !loop.ldm<2x8xf32>
    %c0 = arith.constant 0 : index
    %v = loop.view %b[%c0] : !loop.ldm<2x8xf32> -> !loop.ldm<8xf32, double>
  }
  func.return
}
// CHECK: loop.view: the result must be a single-slot buffer

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %b = loop.ldm_buffer "b" : !loop.ldm<2x8xf32>
    %c0 = arith.constant 0 : index
    %v = loop.view %b[%c0] : !loop.ldm<2x8xf32> -> !loop.ldm<8xf64>
  }
  func.return
}
// CHECK: loop.view: element types differ (source f32, view f64)

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %b = loop.ldm_buffer "b" : !loop.ldm<2x8xf32>
    %v = loop.view %b[%r] : !loop.ldm<2x8xf32> -> !loop.ldm<17xf32>
  }
  func.return
}
// CHECK: loop.view: a view of 17 elements does not fit %b (16 elements)

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %b = loop.ldm_buffer "b" : !loop.ldm<2x8xf32>
    %c9 = arith.constant 9 : index
    %v = loop.view %b[%c9] : !loop.ldm<2x8xf32> -> !loop.ldm<8xf32>
  }
  func.return
}
// CHECK: loop.view: elements [9, 17) lie outside %b (16 elements)

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %b = loop.ldm_buffer "b" : !loop.ldm<2x8xf32>
  }
  %b2 = "test.op"() : () -> !loop.ldm<16xf32>
  %c0 = arith.constant 0 : index
  %v = loop.view %b2[%c0] : !loop.ldm<16xf32> -> !loop.ldm<8xf32>
  func.return
}
// CHECK: 'loop.view' is a per-CPE operation: it must be inside a loop.spmd
