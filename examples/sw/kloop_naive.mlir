// The k-loop of 004 Listing 4.1 with the SAME instructions (16 VMAD, 4 vldd, 4 ldde, 5 ADD, SUBW,
// NOP, BGT) but without the hand schedule: every load is placed right before its first use and
// loads the current k-step (no software pipelining), the way a naive compiler emits it.
//
// What it shows: the dual-issue in-order pipeline (spec §6.1, 004 L500-514) stalls on every
// load-to-use distance < lat_ldm_load = 4 and cannot pair the loads with VMADs, so an iteration
// takes well over 16 cycles (compare with kloop_listing41.mlir; the seed reports 25 cycles,
// EE 64 %, for sw5cc -O3, 004 L790, L819). Same data, same result as kloop_listing41.mlir.
//
// Registers: A0..A3 = r0..r3, B0..B3 = r4..r7, C0..C15 = r8..r23, LDM_A_P = r24, LDM_A = r25,
// LDM_B = r26, K = r27, M = r28, cK = r29.
// Run: taihu-run examples/sw/kloop_naive.mlir --report r.json
sw.global @A : tensor<64x64x16xf64> io input    // per CPE: A^T, K rows of 16 (M) fp64 = 8192 B
sw.global @B : tensor<64x64x4xf64> io input     // per CPE: B, K rows of 4 (N) fp64 = 2048 B
sw.global @C : tensor<64x4x16xf64> io output    // per CPE: C^T (N-major): C[n, m] = sum_k A[k, m] * B[k, n]

sw.kernel @kloop_naive(%a: i64, %b: i64, %c: i64) {
  // LDM: one extra k-block behind A and B: the last iteration's prefetch reads it (value unused)
  %abuf = sw.ldm_alloc 8320
  %bbuf = sw.ldm_alloc 2080
  %cbuf = sw.ldm_alloc 512
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %sa = arith.constant 8192 : i64
  %sb = arith.constant 2048 : i64
  %sc = arith.constant 512 : i64
  %oa = arith.muli %id, %sa : i64
  %ob = arith.muli %id, %sb : i64
  %oc = arith.muli %id, %sc : i64
  %pa = arith.addi %a, %oa : i64
  %pb = arith.addi %b, %ob : i64
  %pc = arith.addi %c, %oc : i64
  sw.dma_get %pa -> %abuf, %rw size 8192
  sw.dma_get %pb -> %bbuf, %rw size 2048
  sw.dma_get %pc -> %cbuf, %rw size 512
  sw.dma_wait %rw, 3
  // prologue: C tile into the 16 accumulators
  sw.microkernel trip 1 (%abuf step 0, %bbuf step 0, %cbuf step 0) {
    sw.vldd r8, 0(p2)      // C0 = C[n=0, m=0..3]
    sw.vldd r9, 32(p2)     // C1 = C[n=0, m=4..7]
    sw.vldd r10, 64(p2)    // C2 = C[n=0, m=8..11]
    sw.vldd r11, 96(p2)    // C3 = C[n=0, m=12..15]
    sw.vldd r12, 128(p2)   // C4 = C[n=1, m=0..3]
    sw.vldd r13, 160(p2)   // C5 = C[n=1, m=4..7]
    sw.vldd r14, 192(p2)   // C6 = C[n=1, m=8..11]
    sw.vldd r15, 224(p2)   // C7 = C[n=1, m=12..15]
    sw.vldd r16, 256(p2)   // C8 = C[n=2, m=0..3]
    sw.vldd r17, 288(p2)   // C9 = C[n=2, m=4..7]
    sw.vldd r18, 320(p2)   // C10 = C[n=2, m=8..11]
    sw.vldd r19, 352(p2)   // C11 = C[n=2, m=12..15]
    sw.vldd r20, 384(p2)   // C12 = C[n=3, m=0..3]
    sw.vldd r21, 416(p2)   // C13 = C[n=3, m=4..7]
    sw.vldd r22, 448(p2)   // C14 = C[n=3, m=8..11]
    sw.vldd r23, 480(p2)   // C15 = C[n=3, m=12..15]
    sw.addl r31, 128, r27  // K: LDM_A_P increment (address bookkeeping, timed only)
    sw.addl r31, 32, r28   // M: LDM_B increment (address bookkeeping, timed only)
    sw.addl r31, 64, r29   // cK = 64 (loop counter)
  }
  // the k-loop: one iteration = one k-step = 16 VMAD = 128 flop
  sw.microkernel trip 64 (%abuf step 128, %bbuf step 32) {
    sw.ldde r4, 0(p1, r26)   // FETCHB (B0) right before first use
    sw.vldd r0, 0(p0, r25)   // FETCHA (A0) right before first use
    sw.vmad r4, r0, r8       // VMAD (B0, A0, C0)
    sw.addl r24, r27, r24    // ADD (LDM_A_P, K, LDM_A_P)
    sw.vldd r1, 32(p0, r24)  // FETCHA (A1) right before first use
    sw.vmad r4, r1, r9       // VMAD (B0, A1, C1)
    sw.vldd r2, 64(p0, r24)  // FETCHA (A2) right before first use
    sw.vmad r4, r2, r10      // VMAD (B0, A2, C2)
    sw.ldde r5, 8(p1, r26)   // FETCHB (B1) right before first use
    sw.vmad r5, r0, r12      // VMAD (B1, A0, C4)
    sw.addl r25, 8, r25      // ADD (LDM_A, 8, LDM_A)
    sw.vmad r5, r1, r13      // VMAD (B1, A1, C5)
    sw.addl r25, r27, r24    // ADD (LDM_A, K, LDM_A_P)
    sw.ldde r6, 16(p1, r26)  // FETCHB (B2) right before first use
    sw.vmad r6, r1, r17      // VMAD (B2, A1, C9)
    sw.subw r29, 1, r29      // SUBW (cK, 1, cK)
    sw.vldd r3, 96(p0, r24)  // FETCHA (A3) right before first use
    sw.vmad r4, r3, r11      // VMAD (B0, A3, C3)
    sw.nop                   // NOP
    sw.vmad r5, r2, r14      // VMAD (B1, A2, C6)
    sw.addl r26, r28, r26    // ADD (LDM_B, M, LDM_B)
    sw.vmad r6, r0, r16      // VMAD (B2, A0, C8)
    sw.vmad r5, r3, r15      // VMAD (B1, A3, C7)
    sw.ldde r7, 24(p1, r26)  // FETCHB (B3) right before first use
    sw.vmad r7, r0, r20      // VMAD (B3, A0, C12)
    sw.vmad r7, r1, r21      // VMAD (B3, A1, C13)
    sw.vmad r6, r2, r18      // VMAD (B2, A2, C10)
    sw.addl r24, r27, r24    // ADD (LDM_A_P, K, LDM_A_P)
    sw.vmad r7, r2, r22      // VMAD (B3, A2, C14)
    sw.vmad r6, r3, r19      // VMAD (B2, A3, C11)
    sw.vmad r7, r3, r23      // VMAD (B3, A3, C15)
    sw.bgt r29               // BGT cK .Kloop
  }
  // epilogue: store the accumulators
  sw.microkernel trip 1 (%cbuf step 0) {
    sw.vstd r8, 0(p0)     // C0
    sw.vstd r9, 32(p0)    // C1
    sw.vstd r10, 64(p0)   // C2
    sw.vstd r11, 96(p0)   // C3
    sw.vstd r12, 128(p0)  // C4
    sw.vstd r13, 160(p0)  // C5
    sw.vstd r14, 192(p0)  // C6
    sw.vstd r15, 224(p0)  // C7
    sw.vstd r16, 256(p0)  // C8
    sw.vstd r17, 288(p0)  // C9
    sw.vstd r18, 320(p0)  // C10
    sw.vstd r19, 352(p0)  // C11
    sw.vstd r20, 384(p0)  // C12
    sw.vstd r21, 416(p0)  // C13
    sw.vstd r22, 448(p0)  // C14
    sw.vstd r23, 480(p0)  // C15
  }
  sw.dma_put %cbuf -> %pc, %rw size 512
  sw.dma_wait %rw, 4
}

func.func @main() {
  %a = sw.global_addr @A
  %b = sw.global_addr @B
  %c = sw.global_addr @C
  sw.spawn @kloop_naive(%a, %b, %c)
  sw.join
  func.return
}
