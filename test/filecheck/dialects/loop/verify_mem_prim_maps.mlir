// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Shape and parameter rules of the loop-only map kinds im2col / winograd_* (dialects/mapkind.py).

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %row = loop.ldm_buffer "row" : !loop.ldm<2x14xf32>
    %col = loop.ldm_buffer "col" : !loop.ldm<2x3x6xf32>
    loop.map im2col ins(%row : !loop.ldm<2x14xf32>) out(%col : !loop.ldm<2x3x6xf32>) {kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 1>}
  }
  func.return
}
// CHECK: loop.map im2col: output shape [2, 3, 6] != unfolded input [2, 3, 7]

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %row = loop.ldm_buffer "row" : !loop.ldm<2x14xf32>
    %col = loop.ldm_buffer "col" : !loop.ldm<2x3x7xf32>
    loop.map im2col ins(%row : !loop.ldm<2x14xf32>) out(%col : !loop.ldm<2x3x7xf32>) {kernel = array<i64: 3, 3>, strides = array<i64: 2>}
  }
  func.return
}
// CHECK: loop.map im2col: im2col takes kernel = [kw], strides = [s], dilations = [d] and pads = [pl, pr]

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %row = loop.ldm_buffer "row" : !loop.ldm<2x4xf32>
    %col = loop.ldm_buffer "col" : !loop.ldm<2x7x1xf32>
    loop.map im2col ins(%row : !loop.ldm<2x4xf32>) out(%col : !loop.ldm<2x7x1xf32>) {kernel = array<i64: 7>, strides = array<i64: 1>}
  }
  func.return
}
// CHECK: loop.map im2col: im2col: the window does not fit the padded row of 4 elements

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %row = loop.ldm_buffer "row" : !loop.ldm<2x14xf32>
    %col = loop.ldm_buffer "col" : !loop.ldm<2x3x7xf32>
    loop.map im2col ins(%row : !loop.ldm<2x14xf32>) out(%col : !loop.ldm<2x3x7xf32>) {strides = array<i64: 2>}
  }
  func.return
}
// CHECK: loop.map im2col: kind im2col needs parameter 'kernel'

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %w = loop.ldm_buffer "w" : !loop.ldm<8x3x2xf32>
    %u = loop.ldm_buffer "u" : !loop.ldm<16x8xf32>
    loop.map winograd_filter ins(%w : !loop.ldm<8x3x2xf32>) out(%u : !loop.ldm<16x8xf32>)
  }
  func.return
}
// CHECK: loop.map winograd_filter: winograd_filter takes (n, 3, 3) filters, got [8, 3, 2]

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %w = loop.ldm_buffer "w" : !loop.ldm<8x3x3xf32>
    %u = loop.ldm_buffer "u" : !loop.ldm<16x9xf32>
    loop.map winograd_filter ins(%w : !loop.ldm<8x3x3xf32>) out(%u : !loop.ldm<16x9xf32>)
  }
  func.return
}
// CHECK: loop.map winograd_filter: output shape [16, 9] != (16, n) = [16, 8]

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %d = loop.ldm_buffer "d" : !loop.ldm<3x9x16xf32>
    %v = loop.ldm_buffer "v" : !loop.ldm<16x4x16xf32>
    loop.map winograd_input ins(%d : !loop.ldm<3x9x16xf32>) out(%v : !loop.ldm<16x4x16xf32>) {pads = array<i64: 1, 0, 0, 0>}
  }
  func.return
}
// CHECK: loop.map winograd_input: the padded input must be (4, 2t+2) = (4, 10): top 1 + R 3 + bottom 0, left 0 + Wc 9 + right 0

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %d = loop.ldm_buffer "d" : !loop.ldm<4x10x16xf32>
    %v = loop.ldm_buffer "v" : !loop.ldm<16x4x8xf32>
    loop.map winograd_input ins(%d : !loop.ldm<4x10x16xf32>) out(%v : !loop.ldm<16x4x8xf32>)
  }
  func.return
}
// CHECK: loop.map winograd_input: output shape [16, 4, 8] must be (16, t, C = 16)

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %d = loop.ldm_buffer "d" : !loop.ldm<4x10x16xf32>
    %v = loop.ldm_buffer "v" : !loop.ldm<16x4x16xf32>
    loop.map winograd_input ins(%d : !loop.ldm<4x10x16xf32>) out(%v : !loop.ldm<16x4x16xf32>) {pads = array<i64: 1, 0, 0>}
  }
  func.return
}
// CHECK: loop.map winograd_input: winograd_input: pads must be [top, left, bottom, right] >= 0

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %v = loop.ldm_buffer "v" : !loop.ldm<16x4x16xf32>
    %y = loop.ldm_buffer "y" : !loop.ldm<2x6x16xf32>
    loop.map winograd_output ins(%v : !loop.ldm<16x4x16xf32>) out(%y : !loop.ldm<2x6x16xf32>)
  }
  func.return
}
// CHECK: loop.map winograd_output: output shape [2, 6, 16] must be (R <= 2, 2t-2 < Wc <= 2t, C) with t = 4, C = 16

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %v = loop.ldm_buffer "v" : !loop.ldm<9x4x16xf32>
    %y = loop.ldm_buffer "y" : !loop.ldm<2x8x16xf32>
    loop.map winograd_output ins(%v : !loop.ldm<9x4x16xf32>) out(%y : !loop.ldm<2x8x16xf32>)
  }
  func.return
}
// CHECK: loop.map winograd_output: winograd_output takes (16, t, C) -> (R, Wc, C), got [9, 4, 16] -> [2, 8, 16]

// -----

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %v = loop.ldm_buffer "v" : !loop.ldm<16x4x16xf32>
    %y = loop.ldm_buffer "y" : !loop.ldm<2x8x16xf32>
    loop.map winograd_output ins(%v : !loop.ldm<16x4x16xf32>) out(%y : !loop.ldm<2x8x16xf32>) {pads = array<i64: 0, 0, 0, 0>}
  }
  func.return
}
// CHECK: loop.map winograd_output: kind winograd_output does not take parameter 'pads'
