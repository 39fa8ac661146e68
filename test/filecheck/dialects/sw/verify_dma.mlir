// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// DMA descriptors (spec §4.2-4.4): size > 0, size a multiple of bsize, a stride needs a block size,
// bcast only for gets, mask only with bcast.

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 0
}
// CHECK: sw.dma_get: size must be > 0, got 0

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 1000 bsize 64 stride 64
}
// CHECK: sw.dma_get: size 1000 is not a multiple of bsize 64

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_put %buf -> %a, %rw size 1024 stride 64
}
// CHECK: sw.dma_put: stride 64 needs a block size (bsize = 0 means contiguous)

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_put %buf -> %a, %rw size 1024 mode bcast
}
// CHECK: sw.dma_put: mode bcast is only valid for sw.dma_get

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 1024 mask 3
}
// CHECK: sw.dma_get: mask is only valid with mode bcast

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 131072
}
// CHECK: sw.dma_get: size 131072 exceeds the LDM (65536 bytes)

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 1024 bsize 128 stride 0
  sw.dma_get %a -> %buf, %rw size 640 bsize 64 stride 64
}
// CHECK: sw.dma_get %a -> %buf, %rw size 1024 bsize 128 stride 0
