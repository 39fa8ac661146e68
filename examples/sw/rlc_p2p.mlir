// Point-to-point register communication: CPE (0,0) sends one 256-bit register to CPE (0,1)
// along row 0 (putr, dst = target column) and to CPE (1,0) along column 0 (putc, dst = target row).
//
// What it shows: RLC latency (spec §5, 004 L496): a message put at cycle t is in the target's
// receive FIFO at t + 11 and, with the getr/getc already waiting, usable at t + 12 (GET latency 1,
// spec §13 #6). getr/getc block until the data arrive: the receivers issue their GET long before
// the sender, which first loads the vector from LDM (DMA + vldd).
// Numerics: OUT[1] = OUT[8] = IN (the receivers store what they got), other rows of OUT = 0.
// Run: taihu-run examples/sw/rlc_p2p.mlir --report r.json --trace t.json
sw.global @IN : tensor<4xf64> io input
sw.global @OUT : tensor<64x4xf64> io output

sw.kernel @rlc_p2p(%in: i64, %out: i64) {
  %buf = sw.ldm_alloc 32
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c32 = arith.constant 32 : i64
  %off = arith.muli %id, %c32 : i64
  %dst = arith.addi %out, %off : i64
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c8 = arith.constant 8 : i64
  %is_sender = arith.cmpi eq, %id, %c0 : i64
  %is_right = arith.cmpi eq, %id, %c1 : i64
  %is_below = arith.cmpi eq, %id, %c8 : i64
  scf.if %is_sender {
    sw.dma_get %in -> %buf, %rw size 32
    sw.dma_wait %rw, 1
    sw.microkernel trip 1 (%buf step 0) {
      sw.vldd r0, 0(p0)
      sw.putr r0, 1        // to (0,1): row 0, column 1
      sw.putc r0, 1        // to (1,0): column 0, row 1
    }
  }
  scf.if %is_right {
    sw.microkernel trip 1 (%buf step 0) {
      sw.getr r1           // blocks until the message of (0,0) arrives
      sw.vstd r1, 0(p0)
    }
    sw.dma_put %buf -> %dst, %rw size 32
    sw.dma_wait %rw, 1
  }
  scf.if %is_below {
    sw.microkernel trip 1 (%buf step 0) {
      sw.getc r1
      sw.vstd r1, 0(p0)
    }
    sw.dma_put %buf -> %dst, %rw size 32
    sw.dma_wait %rw, 1
  }
}

func.func @main() {
  %in = sw.global_addr @IN
  %out = sw.global_addr @OUT
  sw.spawn @rlc_p2p(%in, %out)
  sw.join
  func.return
}
