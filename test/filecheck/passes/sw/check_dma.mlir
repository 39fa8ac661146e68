// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p sw-check-dma | filecheck %s

// sw-check-dma: the athread DMA rules on static addresses, per CPE (issue 15), with the rules'
// numbers taken from the module's machine.

// The LDM range of a DMA stays inside the LDM buffer its address is computed from (spec §4.3
// rule 8): here the last 64 bytes overrun the 1024-byte buffer.
sw.kernel @overrun(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  %c992 = arith.constant 992 : i64
  %p = arith.addi %buf, %c992 : i64
  sw.dma_get %a -> %p, %rw size 96
  sw.dma_wait %rw, 1
}
// CHECK: sw-check-dma: kernel @overrun: sw.dma_get: 96 B at LDM offset 992 overrun their 1024-byte LDM buffer (spec §4.3 rule 8) (on CPE 0 (0,0), CPE 1 (0,1), CPE 2 (0,2), CPE 3 (0,3) and 60 more)

// -----

// ... and inside the machine's LDM: this machine has a 32 KiB LDM, so a transfer ending past
// 32768 bytes is refused although it would fit in the shipped sw26010's 64 KiB.
builtin.module attributes {target.machine = #target.machine<"sw26010" {ldm_bytes = 32768 : i64, ldm_user_bytes = 32768 : i64}>} {
  sw.kernel @small_ldm(%a: i64) {
    %rw = swsim.reply_slot 0
    %buf = swsim.ldm_addr 30720 size 2048
    %c2048 = arith.constant 2048 : i64
    %p = arith.addi %buf, %c2048 : i64
    sw.dma_put %p -> %a, %rw size 1024
  }
}
// CHECK: sw-check-dma: kernel @small_ldm: sw.dma_put: 1024 B at LDM address 32768 exceed the 32768-byte LDM (spec §4.3 rule 8)

// -----

// Addresses are multiples of 4 bytes (a DMA moves whole elements): the LDM offset of the odd CPEs
// is 2 bytes off.
sw.kernel @ldm_misaligned(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c2 = arith.constant 2 : i64
  %odd = arith.remui %id, %c2 : i64
  %off = arith.muli %odd, %c2 : i64
  %p = arith.addi %buf, %off : i64
  sw.dma_get %a -> %p, %rw size 512
  sw.dma_wait %rw, 1
}
// CHECK: sw-check-dma: kernel @ldm_misaligned: sw.dma_get: LDM address 2 is not a multiple of 4 B (DMA moves whole 4-byte words) (on CPE 1 (0,1), CPE 3 (0,3), CPE 5 (0,5), CPE 7 (0,7) and 28 more)

// -----

// Main memory: every CPE reads its own 128-byte slice of @A (64 x 128 B would need 8 KiB; @A has
// 4 KiB), so CPEs 32..63 read outside the global.
sw.global @A : tensor<512xf64> io input
sw.kernel @outside(%a: i64) {
  %buf = sw.ldm_alloc 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c128 = arith.constant 128 : i64
  %off = arith.muli %id, %c128 : i64
  %p = arith.addi %a, %off : i64
  sw.dma_get %p -> %buf, %rw size 128
  sw.dma_wait %rw, 1
}
func.func @main() {
  %pa = sw.global_addr @A
  sw.spawn @outside(%pa)
  sw.join
  func.return
}
// CHECK: sw-check-dma: kernel @outside: sw.dma_get: main-memory bytes [4096, 4224) of @A lie outside its 4096 bytes (spec §4.3 rule 8) (on CPE 32 (4,0), CPE 33 (4,1), CPE 34 (4,2), CPE 35 (4,3) and 28 more)

// -----

// A strided put to @B + 6 (the host adds 6 to the address): misaligned main memory.
sw.global @B : tensor<1024xf32> io output
sw.kernel @mem_misaligned(%b: i64) {
  %buf = sw.ldm_alloc 256
  %rw = sw.reply_alloc
  sw.dma_put %buf -> %b, %rw size 256 bsize 64 stride 64
  sw.dma_wait %rw, 1
}
func.func @main() {
  %pb = sw.global_addr @B
  %c6 = arith.constant 6 : i64
  %p = arith.addi %pb, %c6 : i64
  sw.spawn @mem_misaligned(%p)
  sw.join
  func.return
}
// CHECK: sw-check-dma: kernel @mem_misaligned: sw.dma_put: main-memory address @B + 6 is not a multiple of 4 B (DMA moves whole 4-byte words)

// -----

// Row mode is not modelled by the simulator (spec §10).
sw.kernel @row_mode(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 1024 mode row
  sw.dma_wait %rw, 1
}
// CHECK: sw-check-dma: kernel @row_mode: sw.dma_get: mode row is not modelled (the simulator runs pe and bcast transfers; spec §10: row-distributed modes are out of scope)

// -----

// An RLC put to the sender's own column: every CPE runs it, so column 3 sends to itself (the
// verifier sees it only under an scf.if fixing the column).
sw.kernel @self_put() {
  sw.microkernel trip 1 () {
    sw.putr r1, 3
  }
}
// CHECK: sw-check-dma: kernel @self_put: sw.putr 3: sends to the CPE's own column 3 (RLC targets another CPE of the same row/column, spec §5 rule 2) (on CPE 3 (0,3), CPE 11 (1,3), CPE 19 (2,3), CPE 27 (3,3) and 4 more)

// -----

// A valid program passes unchanged: each CPE gets its own aligned slice, in bounds.
sw.global @C : tensor<8192xf64> io input
sw.kernel @fine(%c: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c1024 = arith.constant 1024 : i64
  %off = arith.muli %id, %c1024 : i64
  %p = arith.addi %c, %off : i64
  sw.dma_get %p -> %buf, %rw size 1024 bsize 256 stride 0
  sw.dma_wait %rw, 1
}
func.func @main() {
  %pc = sw.global_addr @C
  sw.spawn @fine(%pc)
  sw.join
  func.return
}
// CHECK: sw.kernel @fine(%c: i64) {
// CHECK: sw.dma_get %p -> %buf, %rw size 1024 bsize 256 stride 0
