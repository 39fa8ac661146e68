// A full send buffer stalls the sender (spec §5 rules 1, 3; 004 L496; spec §13 #9).
//
// What it shows: CPE (0,0) issues 9 putr to CPE (0,1), which is busy for a while (a chain of 32
// dependent VMADs, 32 * 7 = 224 cycles) before it receives. With rlc_recv_depth = 4 and
// rlc_send_depth = 4 [param], 4 messages wait in (0,1)'s row FIFO, 4 in (0,0)'s send buffer, and
// the 9th putr stalls (0,0) until (0,1) starts popping; then all 9 arrive in order.
// Numerics: OUT[k] = k-th sent vector = IN[k] for k < 9 (stored by the receiver).
// Run: taihu-run examples/sw/rlc_send_full.mlir --report r.json --trace t.json
sw.global @IN : tensor<9x4xf64> io input
sw.global @OUT : tensor<9x4xf64> io output

sw.kernel @rlc_send_full(%in: i64, %out: i64) {
  %buf = sw.ldm_alloc 288
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %is_sender = arith.cmpi eq, %id, %c0 : i64
  %is_recv = arith.cmpi eq, %id, %c1 : i64
  scf.if %is_sender {
    sw.dma_get %in -> %buf, %rw size 288
    sw.dma_wait %rw, 1
    sw.microkernel trip 9 (%buf step 32) {
      sw.vldd r0, 0(p0)
      sw.putr r0, 1
    }
  }
  scf.if %is_recv {
    // busy: 32 dependent VMADs on one accumulator (lat_fp = 7 each)
    sw.microkernel trip 32 () {
      sw.vmad r31, r31, r5
    }
    sw.microkernel trip 9 (%buf step 32) {
      sw.getr r1
      sw.vstd r1, 0(p0)
    }
    sw.dma_put %buf -> %out, %rw size 288
    sw.dma_wait %rw, 1
  }
}

func.func @main() {
  %in = sw.global_addr @IN
  %out = sw.global_addr @OUT
  sw.spawn @rlc_send_full(%in, %out)
  sw.join
  func.return
}
