// Row and column broadcast over the RLC network (spec §5 rule 2, 004 L496, L538-539).
//
// What it shows: CPE (3,5) broadcasts a register along row 3 with `putr r0, 8` (dst 8 =
// broadcast): it reaches (3,0..4), (3,6), (3,7) at t + 11, not (3,5) itself (spec §13 #7).
// CPE (0,2) loads a vector and broadcasts it down column 2 in ONE instruction, the fused
// load-and-send `vldc` (fp64 only, 004 L823): rows 1..7 of column 2 receive it with getc.
// Numerics: OUT[cpe] = X for the 7 CPEs of row 3 other than (3,5); OUT[cpe] = Y for the 7 CPEs of
// column 2 other than (0,2); CPE (3,2) is in both and stores X + Y; all other rows of OUT are 0.
// Run: taihu-run examples/sw/rlc_broadcast.mlir --report r.json --trace t.json
sw.global @X : tensor<4xf64> io input
sw.global @Y : tensor<4xf64> io input
sw.global @OUT : tensor<64x4xf64> io output

sw.kernel @rlc_broadcast(%x: i64, %y: i64, %out: i64) {
  %buf = sw.ldm_alloc 32
  %res = sw.ldm_alloc 32
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %row = sw.row_id
  %col = sw.col_id
  %c32 = arith.constant 32 : i64
  %off = arith.muli %id, %c32 : i64
  %dst = arith.addi %out, %off : i64
  %c0 = arith.constant 0 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %c5 = arith.constant 5 : i64
  %in_row3 = arith.cmpi eq, %row, %c3 : i64
  %is_col5 = arith.cmpi eq, %col, %c5 : i64
  %in_col2 = arith.cmpi eq, %col, %c2 : i64
  %is_row0 = arith.cmpi eq, %row, %c0 : i64
  // row 3: (3,5) sends X, the others receive it
  scf.if %in_row3 {
    scf.if %is_col5 {
      sw.dma_get %x -> %buf, %rw size 32
      sw.dma_wait %rw, 1
      sw.microkernel trip 1 (%buf step 0) {
        sw.vldd r0, 0(p0)
        sw.putr r0, 8
      }
    } else {
      sw.microkernel trip 1 () {
        sw.getr r1
      }
    }
  }
  // column 2: (0,2) loads Y and sends it with the fused vldc, the others receive it
  scf.if %in_col2 {
    scf.if %is_row0 {
      sw.dma_get %y -> %buf, %rw size 32
      sw.dma_wait %rw, 1
      sw.microkernel trip 1 (%buf step 0) {
        sw.vldc r0, 0(p0)
      }
    } else {
      sw.microkernel trip 1 () {
        sw.getc r2
      }
    }
  }
  // receivers store what they got (r1 from the row, r2 from the column; untouched registers are 0)
  %recv_row = arith.cmpi ne, %col, %c5 : i64
  %recv_col = arith.cmpi ne, %row, %c0 : i64
  %r_row = arith.andi %in_row3, %recv_row : i1
  %r_col = arith.andi %in_col2, %recv_col : i1
  %any = arith.ori %r_row, %r_col : i1
  scf.if %any {
    sw.microkernel trip 1 (%res step 0) {
      sw.vaddd r1, r2, r3
      sw.vstd r3, 0(p0)
    }
    sw.dma_put %res -> %dst, %rw size 32
    sw.dma_wait %rw, 1
  }
}

func.func @main() {
  %x = sw.global_addr @X
  %y = sw.global_addr @Y
  %out = sw.global_addr @OUT
  sw.spawn @rlc_broadcast(%x, %y, %out)
  sw.join
  func.return
}
