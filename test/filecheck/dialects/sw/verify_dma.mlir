// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// DMA descriptors (spec §4.2-4.4): size > 0, size a multiple of bsize, a stride needs a block size,
// bcast only for gets, mask only with bcast, sizes / block sizes / gaps multiples of 4 B.

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

// Sizes, block sizes and gaps are multiples of 4 bytes (DMA_GRANULE: whole f32/i32 elements; the
// fuzzer's 1/7/33-byte transfers, issue 15). 12 B (three f32) is a valid size.

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 7
}
// CHECK: sw.dma_get: size 7 is not a multiple of 4 bytes (a DMA moves whole elements; the smallest is 4 B: f32, i32)

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_put %buf -> %a, %rw size 36 bsize 6 stride 4
}
// CHECK: sw.dma_put: bsize 6 is not a multiple of 4 bytes (a DMA moves whole elements; the smallest is 4 B: f32, i32)

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 48 bsize 12 stride 33
}
// CHECK: sw.dma_get: stride 33 is not a multiple of 4 bytes (a DMA moves whole elements; the smallest is 4 B: f32, i32)

// -----

sw.kernel @k(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 12
  sw.dma_get %a -> %buf, %rw size 1024 bsize 128 stride 0
  sw.dma_get %a -> %buf, %rw size 640 bsize 64 stride 64
}
// CHECK: sw.dma_get %a -> %buf, %rw size 12
// CHECK: sw.dma_get %a -> %buf, %rw size 1024 bsize 128 stride 0
