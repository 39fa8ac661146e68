// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every dma_wait refers to a reply word that some DMA of the kernel increments (spec §4.3 rule 5-6).

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  %other = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 1024
  sw.dma_wait %other, 1
}
// CHECK: sw.dma_wait: reply word %other is never incremented by a sw.dma_get/sw.dma_put of kernel @k (the wait could never finish)

// -----

sw.kernel @k(%a: i64) {
  %rw = sw.reply_alloc
  sw.reply_reset %rw
  sw.dma_wait %rw, 1
}
// CHECK: sw.dma_wait: reply word %rw is never incremented by a sw.dma_get/sw.dma_put of kernel @k (the wait could never finish)

// -----

sw.kernel @k(%a: i64, %n: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_put %buf -> %a, %rw size 1024
  sw.dma_wait %rw, %n
}
// CHECK: sw.dma_wait %rw, %n
