// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// !tile.buf parameters: distribution, layout, shape, element type.

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x64xf64, diag>
  func.return
}
// CHECK: !tile.buf: unknown distribution 'diag' (rc, cr, cpe, cpe<d> or rep)

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x64xf64, rc, zigzag>
  func.return
}
// CHECK: !tile.buf: unknown layout 'zigzag' (row or col)

// -----

// rc/cr split both dims 8-way over the mesh (004 L713).
func.func @f() {
  %t = "test.op"() : () -> !tile.buf<60x64xf64, rc>
  func.return
}
// CHECK: !tile.buf: distribution rc needs a rank >= 2 shape with dims 0 and 1 multiples of 8, got [60, 64]

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<512xf64, cr>
  func.return
}
// CHECK: !tile.buf: distribution cr needs a rank >= 2 shape with dims 0 and 1 multiples of 8, got [512]

// -----

// rank > 2: dims 0 and 1 split over the mesh, the others whole (tile.unfold's input rows).
func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x8x28xf32, rc>
  func.return
}
// CHECK: %t = "test.op"() : () -> !tile.buf<64x8x28xf32, rc>

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x12x28xf32, rc>
  func.return
}
// CHECK: !tile.buf: distribution rc needs a rank >= 2 shape with dims 0 and 1 multiples of 8, got [64, 12, 28]

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x8x8xf32, cpe, col>
  func.return
}
// CHECK: !tile.buf: layout col is only defined for rank-2 tiles

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x8xi32, cpe>
  func.return
}
// CHECK: !tile.buf: element type must be f32 or f64, got i32

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x0xf32, cpe>
  func.return
}
// CHECK: !tile.buf: shape must be non-empty with positive dims, got [64, 0]

// -----

// cpe<d> splits dim d 64-way: d must be a dim of the tile, the local block row-major.
func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x8xf32, cpe2>
  func.return
}
// CHECK: !tile.buf: distribution cpe2 splits dim 2 but the tile has rank 2

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x8xf32, cpe1, col>
  func.return
}
// CHECK: !tile.buf: distribution cpe1 needs layout row

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x8xf32, cpe01>
  func.return
}
// CHECK: !tile.buf: unknown distribution 'cpe01' (rc, cr, cpe, cpe<d> or rep)

// -----

// cpe<d>+<h>: an overlapping split with a halo smaller than the split dim; cpe only.
func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x4xf32, cpe1+4>
  func.return
}
// CHECK: !tile.buf: distribution cpe1+4: the halo 4 must be smaller than dim 1 (4)

// -----

func.func @f() {
  %t = "test.op"() : () -> !tile.buf<64x64xf32, rc+2>
  func.return
}
// CHECK: !tile.buf: unknown distribution 'rc+2' (rc, cr, cpe, cpe<d> or rep)
