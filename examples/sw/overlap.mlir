// The overlap experiment of 004 Fig 3.6 (L582-588, L607): every CPE gets 4 KB, computes on it and
// puts 4 KB back; five kernels run one after the other and the report lists their cycles.
//
//   @dma_only        get + put, no compute                          -> T_DMA
//   @compute_only    the compute alone (on whatever is in LDM)      -> T_compute
//   @overlap_nosync  get, compute, put; no dependence between CPEs  -> < T_DMA + T_compute
//   @overlap_sync    the same with an array barrier after the get and after the compute
//   @overlap_rlc     the same with an RLC all-gather (row then column broadcasts) after the get
//                                                                   -> about T_DMA + T_compute
// What it shows: with 64 CPEs the DMA engine serves 4 CPEs at a time (004 L573-575), so CPEs own
// their data at different times and, without inter-CPE dependences, early CPEs compute while later
// ones still transfer (hardware overlap, L582-586). A barrier (sw.barrier, spec §7) or register
// communication ties every CPE to the slowest DMA and the times simply add (L586-588; analytic
// overlap rule, spec §9.1: T_overlap ~ 0 with sync/RLC).
// Sizes: DMA 64 x 4096 B each way ~ 12.3k cycles per direction at 30.94 GB/s (eq 3-1); compute
// 128 iterations of 1 vldd + 1 vaddd + 16 dependent VMADs + 1 vstd (~ 120 cycles each, lat_fp = 7).
// Numerics (last writer @overlap_rlc): Y[cpe, v] = c * sum_{i=0..16} X[cpe, v]^i elementwise,
// c = X[cpe, 0] (the first element of the CPE's slice).
// Run: taihu-run examples/sw/overlap.mlir --report r.json --trace t.json
sw.global @X : tensor<64x512xf64> io input
sw.global @Y : tensor<64x512xf64> io output

sw.kernel @dma_only(%x: i64, %y: i64) {
  %xbuf = sw.ldm_alloc 4096 align 128
  %ybuf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  sw.dma_get %src -> %xbuf, %rw size 4096
  sw.dma_wait %rw, 1
  sw.dma_put %xbuf -> %dst, %rw size 4096
  sw.dma_wait %rw, 2
}

sw.kernel @compute_only(%x: i64, %y: i64) {
  %xbuf = sw.ldm_alloc 4096 align 128
  %ybuf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  // compute: y = c, then 16 x (y = y * x + c), c = x[0] of this CPE's slice
  sw.microkernel trip 1 (%xbuf step 0) {
    sw.ldde r1, 0(p0)
  }
  sw.microkernel trip 128 (%xbuf step 32, %ybuf step 32) {
    sw.vldd r0, 0(p0)
    sw.vaddd r1, r31, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vstd r2, 0(p1)
  }
}

sw.kernel @overlap_nosync(%x: i64, %y: i64) {
  %xbuf = sw.ldm_alloc 4096 align 128
  %ybuf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  sw.dma_get %src -> %xbuf, %rw size 4096
  sw.dma_wait %rw, 1
  // compute: y = c, then 16 x (y = y * x + c), c = x[0] of this CPE's slice
  sw.microkernel trip 1 (%xbuf step 0) {
    sw.ldde r1, 0(p0)
  }
  sw.microkernel trip 128 (%xbuf step 32, %ybuf step 32) {
    sw.vldd r0, 0(p0)
    sw.vaddd r1, r31, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vstd r2, 0(p1)
  }
  sw.dma_put %ybuf -> %dst, %rw size 4096
  sw.dma_wait %rw, 2
}

sw.kernel @overlap_sync(%x: i64, %y: i64) {
  %xbuf = sw.ldm_alloc 4096 align 128
  %ybuf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  sw.dma_get %src -> %xbuf, %rw size 4096
  sw.dma_wait %rw, 1
  sw.barrier array
  // compute: y = c, then 16 x (y = y * x + c), c = x[0] of this CPE's slice
  sw.microkernel trip 1 (%xbuf step 0) {
    sw.ldde r1, 0(p0)
  }
  sw.microkernel trip 128 (%xbuf step 32, %ybuf step 32) {
    sw.vldd r0, 0(p0)
    sw.vaddd r1, r31, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vstd r2, 0(p1)
  }
  sw.barrier array
  sw.dma_put %ybuf -> %dst, %rw size 4096
  sw.dma_wait %rw, 2
}

sw.kernel @overlap_rlc(%x: i64, %y: i64) {
  %xbuf = sw.ldm_alloc 4096 align 128
  %ybuf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 4096 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %x, %off : i64
  %dst = arith.addi %y, %off : i64
  sw.dma_get %src -> %xbuf, %rw size 4096
  sw.dma_wait %rw, 1
  // RLC all-gather: in round t, column t broadcasts its first vector along each row, the other
  // columns receive it; then the same along the columns. Every CPE now depends on every other's get.
  %row = sw.row_id
  %col = sw.col_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c8 = arith.constant 8 : i64
  scf.for %t = %c0 to %c8 step %c1 : i64 {
    %mine = arith.cmpi eq, %col, %t : i64
    scf.if %mine {
      sw.microkernel trip 1 (%xbuf step 0) {
        sw.vldd r3, 0(p0)
        sw.putr r3, 8
      }
    } else {
      sw.microkernel trip 1 () {
        sw.getr r4
      }
    }
  }
  scf.for %t = %c0 to %c8 step %c1 : i64 {
    %mine = arith.cmpi eq, %row, %t : i64
    scf.if %mine {
      sw.microkernel trip 1 (%xbuf step 0) {
        sw.vldd r3, 0(p0)
        sw.putc r3, 8
      }
    } else {
      sw.microkernel trip 1 () {
        sw.getc r4
      }
    }
  }
  // compute: y = c, then 16 x (y = y * x + c), c = x[0] of this CPE's slice
  sw.microkernel trip 1 (%xbuf step 0) {
    sw.ldde r1, 0(p0)
  }
  sw.microkernel trip 128 (%xbuf step 32, %ybuf step 32) {
    sw.vldd r0, 0(p0)
    sw.vaddd r1, r31, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vmad r2, r0, r1, r2
    sw.vstd r2, 0(p1)
  }
  sw.dma_put %ybuf -> %dst, %rw size 4096
  sw.dma_wait %rw, 2
}

func.func @main() {
  %x = sw.global_addr @X
  %y = sw.global_addr @Y
  sw.spawn @dma_only(%x, %y)
  sw.join
  sw.spawn @compute_only(%x, %y)
  sw.join
  sw.spawn @overlap_nosync(%x, %y)
  sw.join
  sw.spawn @overlap_sync(%x, %y)
  sw.join
  sw.spawn @overlap_rlc(%x, %y)
  sw.join
  func.return
}
