// One CPE, contiguous DMA gets of several sizes and alignments, each waited for before the next,
// then the data are written back with one put.
//
// What it shows: the DMA cost model of 004 eq 3-1 (L597) with 128-byte transactions (L481) and
// the waste of a misaligned start (spec §4.4): cycles = dma_latency (200) +
// ceil(moved * 1.45 / dma_bus_bw), dma_bus_bw = 30.94 / 4 = 7.735 GB/s (one CPE owns its bus).
//   #1  1024 B, 128-B aligned  : moved 1024 -> 200 + 192 = 392 cycles (spec §13 #1)
//   #2  1024 B, start +64 B    : moved 1152 -> 200 + 216 = 416 cycles (9 transactions)
//   #3    32 B, aligned        : moved  128 -> 200 +  24 = 224 cycles (96 B waste)
//   #4  4096 B, aligned        : moved 4096 -> 200 + 768 = 968 cycles
//   put 4096 B, aligned        : 968 cycles (dma_put_bw_factor = 1.0)
// Every other CPE does nothing. Numerics: OUT = IN[0:512] (the buffer of get #4).
// Run: taihu-run examples/sw/dma_contiguous.mlir --report r.json --trace t.json
sw.global @IN : tensor<1024xf64> io input
sw.global @OUT : tensor<512xf64> io output

sw.kernel @dma_contiguous(%in: i64, %out: i64) {
  %buf = sw.ldm_alloc 4096 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %c64 = arith.constant 64 : i64
  %is0 = arith.cmpi eq, %id, %c0 : i64
  scf.if %is0 {
    sw.dma_get %in -> %buf, %rw size 1024
    sw.dma_wait %rw, 1
    %mis = arith.addi %in, %c64 : i64
    sw.dma_get %mis -> %buf, %rw size 1024
    sw.dma_wait %rw, 2
    sw.dma_get %in -> %buf, %rw size 32
    sw.dma_wait %rw, 3
    sw.dma_get %in -> %buf, %rw size 4096
    sw.dma_wait %rw, 4
    sw.dma_put %buf -> %out, %rw size 4096
    sw.dma_wait %rw, 5
  }
}

func.func @main() {
  %in = sw.global_addr @IN
  %out = sw.global_addr @OUT
  sw.spawn @dma_contiguous(%in, %out)
  sw.join
  func.return
}
