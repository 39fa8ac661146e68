// All 64 CPEs issue one 1024-B contiguous get at t = 0 (each its own 128-B aligned slice), wait,
// and put it back to a second buffer.
//
// What it shows: the shared DMA engine (spec §4.3): 4 buses (bus = column / 2, 004 L462, L548),
// 16 CPEs per bus served one at a time, start-ups overlapping. The first 4 gets (one per bus)
// complete at 200 + 192 = 392 cycles, the last at 200 + 16 * 192 = 3272 cycles (spec §13 #2;
// analytic eq 3-1: 3271.3 cycles = 2.256 us), aggregate 29.05 GB/s (spec §4.5 table, 1024 B row).
// The puts then queue the same way. Larger slices tend to 30.94 GB/s (PEAK_BW, L597).
// Numerics: OUT = IN.
// Run: taihu-run examples/sw/dma_all_cpes.mlir --report r.json --trace t.json
sw.global @IN : tensor<64x128xf64> io input
sw.global @OUT : tensor<64x128xf64> io output

sw.kernel @dma_all_cpes(%in: i64, %out: i64) {
  %buf = sw.ldm_alloc 1024 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %s = arith.constant 1024 : i64
  %off = arith.muli %id, %s : i64
  %src = arith.addi %in, %off : i64
  %dst = arith.addi %out, %off : i64
  sw.dma_get %src -> %buf, %rw size 1024
  sw.dma_wait %rw, 1
  sw.dma_put %buf -> %dst, %rw size 1024
  sw.dma_wait %rw, 2
}

func.func @main() {
  %in = sw.global_addr @IN
  %out = sw.global_addr @OUT
  sw.spawn @dma_all_cpes(%in, %out)
  sw.join
  func.return
}
