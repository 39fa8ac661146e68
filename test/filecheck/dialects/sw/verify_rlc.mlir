// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// RLC only along the row (putr/getr) or the column (putc/getc): dst 0..7 names a CPE of the
// sender's row/column, 8 broadcasts (spec §5 rule 2, 004 L462, L496).

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 64
  sw.microkernel trip 1 (%buf step 0) {
    sw.vldd r0, 0(p0)
    sw.putr r0, 9
  }
}
// CHECK: sw.putr: dst 9 out of range: 0..7 names a CPE of the same row, 8 broadcasts (RLC only along the row, 004 L462, L496)

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 64
  sw.microkernel trip 1 (%buf step 0) {
    sw.putc r0, -1
  }
}
// CHECK: sw.putc: dst -1 out of range: 0..7 names a CPE of the same col, 8 broadcasts (RLC only along the col, 004 L462, L496)

// -----

// A CPE of column 1 (statically known from the scf.if guard) sends to its own column.
sw.kernel @k(%a: i64) {
  %col = sw.col_id
  %c1 = arith.constant 1 : i64
  %is1 = arith.cmpi eq, %col, %c1 : i64
  scf.if %is1 {
    sw.microkernel trip 1 () {
      sw.putr r0, 1
    }
  }
}
// CHECK: sw.putr: a CPE of column 1 sends to itself (dst 1); RLC targets another CPE of the same row

// -----

// cpe_id == 10 is row 1, column 2: putc to row 1 is a self-target.
sw.kernel @k(%a: i64) {
  %id = sw.cpe_id
  %c10 = arith.constant 10 : i64
  %ne = arith.cmpi ne, %id, %c10 : i64
  scf.if %ne {
  } else {
    sw.microkernel trip 1 () {
      sw.putc r0, 1
    }
  }
}
// CHECK: sw.putc: a CPE of row 1 sends to itself (dst 1); RLC targets another CPE of the same col

// -----

// Same guard, legal targets: another column, and broadcast.
sw.kernel @k(%a: i64) {
  %col = sw.col_id
  %c1 = arith.constant 1 : i64
  %is1 = arith.cmpi eq, %col, %c1 : i64
  scf.if %is1 {
    sw.microkernel trip 1 () {
      sw.putr r0, 2
      sw.putr r0, 8
      sw.putc r0, 1
    }
  }
}
// CHECK: sw.putr r0, 2
// CHECK-NEXT: sw.putr r0, 8
// CHECK-NEXT: sw.putc r0, 1
