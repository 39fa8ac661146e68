// One CPE, strided DMA (004 L489, Fig 3.2): 10 blocks of 64 B, 64 B skipped between blocks
// (stride = gap bytes, L597 / public "stepsize"); the LDM side is packed.
//
// What it shows: eq 3-2 (L597) with per-block transaction waste (spec §4.4): one start-up for the
// whole descriptor, then the sum of the blocks' moved bytes.
//   aligned start (offset 0)   : every block inside one 128-B transaction -> moved 10 * 128 =
//                                1280 B -> 200 + 240 = 440 cycles (spec §13 #4)
//   start misaligned by 96 B   : every block [96 + 128 i, 160 + 128 i) straddles two transactions
//                                -> moved 2560 B -> 200 + 480 = 680 cycles (spec §13 #5)
//   strided put of the packed buffer back to OUT, aligned, same pattern: 440 cycles
// Numerics: OUT[128 i .. 128 i + 64) = IN[96 + 128 i .. 160 + 128 i) bytes, i < 10; the gaps of
// OUT stay 0.
// Run: taihu-run examples/sw/dma_strided.mlir --report r.json
sw.global @IN : tensor<256xf64> io input
sw.global @OUT : tensor<160xf64> io output

sw.kernel @dma_strided(%in: i64, %out: i64) {
  %buf = sw.ldm_alloc 640 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %c96 = arith.constant 96 : i64
  %is0 = arith.cmpi eq, %id, %c0 : i64
  scf.if %is0 {
    sw.dma_get %in -> %buf, %rw size 640 bsize 64 stride 64
    sw.dma_wait %rw, 1
    %mis = arith.addi %in, %c96 : i64
    sw.dma_get %mis -> %buf, %rw size 640 bsize 64 stride 64
    sw.dma_wait %rw, 2
    sw.dma_put %buf -> %out, %rw size 640 bsize 64 stride 64
    sw.dma_wait %rw, 3
  }
}

func.func @main() {
  %in = sw.global_addr @IN
  %out = sw.global_addr @OUT
  sw.spawn @dma_strided(%in, %out)
  sw.join
  func.return
}
