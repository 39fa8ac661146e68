// 004 Listing 4.1 (L794-819) as a micro-kernel: the hand-scheduled k-loop of the LDM GEMM
// primitive, with the two corrections of algorithms.md §A6 (cycle 9: VMAD (B2, A0, C8), printed
// (B2, A3, C19); cycle 10: FETCHB (B1, 32(LDM_B)), printed B0).
//
// What it shows: 16 VMAD on P0 paired with 16 P1 slots (8 FETCH + 5 ADD + SUBW + NOP + BGT)
// issue in 16 cycles per iteration, P0 EE = 100 % (004 L819; sw5cc -O3 needs 25 cycles, L790).
// Every FETCH is >= 4 cycles before its use (lat_ldm_load, L819), every accumulator is reused
// 16 >= 7 cycles later (lat_fp). The loop is software-pipelined: A0..A2 and B0..B2 are loaded for
// the NEXT k-step (offset +128 / +32 bytes), A3 and B3 for the current one.
//
// FETCHA/FETCHB expand to the role's instruction (L792); here every CPE works on its own data,
// so they are plain LDM loads: FETCHA = vldd (4 x fp64 of A, M vectorised), FETCHB = ldde (one
// fp64 of B replicated into 4 lanes) -- scheme 1 of Table 4.1 without the broadcast (the RLC
// roles are in mesh_gemm.mlir). Address bookkeeping (ADD/SUBW on r24..r29) is timed as in the
// listing; the memory operands advance with the micro-kernel pointers (p0: A, 128 B per k-step;
// p1: B, 32 B per k-step), and `(pK, rN)` names the listing's address register for the timing.
//
// Registers: A0..A3 = r0..r3, B0..B3 = r4..r7, C0..C15 = r8..r23 (C4j+i = column j, rows 4i..4i+3),
// LDM_A_P = r24, LDM_A = r25, LDM_B = r26, K = r27, M = r28, cK = r29, r31 = 0.
// Expected (spec §6, Table 3.2): k-loop 16 cycles/iteration, P0_valid 16, P1_valid 15 (NOP idle).
// Numerics: C[cpe] = A[cpe]^T-contracted: C[n, m] = sum_k A[k, m] * B[k, n] (C starts as zeros).
// Run: taihu-run examples/sw/kloop_listing41.mlir --report r.json
sw.global @A : tensor<64x64x16xf64> io input    // per CPE: A^T, K rows of 16 (M) fp64 = 8192 B
sw.global @B : tensor<64x64x4xf64> io input     // per CPE: B, K rows of 4 (N) fp64 = 2048 B
sw.global @C : tensor<64x4x16xf64> io output    // per CPE: C^T (N-major): C[n, m] = sum_k A[k, m] * B[k, n]

sw.kernel @kloop(%a: i64, %b: i64, %c: i64) {
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
  // prologue: C tile into the 16 accumulators, A0..A2 and B0..B2 of k = 0 (the loop prefetches k+1)
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
    sw.vldd r0, 0(p0)      // A0 of k = 0
    sw.vldd r1, 32(p0)     // A1 of k = 0
    sw.vldd r2, 64(p0)     // A2 of k = 0
    sw.ldde r4, 0(p1)      // B0 of k = 0
    sw.ldde r5, 8(p1)      // B1 of k = 0
    sw.ldde r6, 16(p1)     // B2 of k = 0
    sw.addl r31, 128, r27  // K: LDM_A_P increment (address bookkeeping, timed only)
    sw.addl r31, 32, r28   // M: LDM_B increment (address bookkeeping, timed only)
    sw.addl r31, 64, r29   // cK = 64 (loop counter)
  }
  // the k-loop: one iteration = one k-step = 16 VMAD = 128 flop
  sw.microkernel trip 64 (%abuf step 128, %bbuf step 32) {
    sw.vmad r4, r0, r8        // cycle  1 P0: VMAD (B0, A0, C0)
    sw.addl r24, r27, r24     // cycle  1 P1: ADD (LDM_A_P, K, LDM_A_P)
    sw.vmad r4, r1, r9        // cycle  2 P0: VMAD (B0, A1, C1)
    sw.vldd r3, 96(p0, r24)   // cycle  2 P1: FETCHA (A3, LDM_A_P)
    sw.vmad r4, r2, r10       // cycle  3 P0: VMAD (B0, A2, C2)
    sw.ldde r7, 24(p1, r26)   // cycle  3 P1: FETCHB (B3, 96(LDM_B))
    sw.vmad r5, r0, r12       // cycle  4 P0: VMAD (B1, A0, C4)
    sw.addl r25, 8, r25       // cycle  4 P1: ADD (LDM_A, 8, LDM_A)
    sw.vmad r5, r1, r13       // cycle  5 P0: VMAD (B1, A1, C5)
    sw.addl r25, r27, r24     // cycle  5 P1: ADD (LDM_A, K, LDM_A_P)
    sw.vmad r6, r1, r17       // cycle  6 P0: VMAD (B2, A1, C9)
    sw.subw r29, 1, r29       // cycle  6 P1: SUBW (cK, 1, cK)
    sw.vmad r4, r3, r11       // cycle  7 P0: VMAD (B0, A3, C3)
    sw.nop                    // cycle  7 P1: NOP
    sw.vmad r5, r2, r14       // cycle  8 P0: VMAD (B1, A2, C6)
    sw.addl r26, r28, r26     // cycle  8 P1: ADD (LDM_B, M, LDM_B)
    sw.vmad r6, r0, r16       // cycle  9 P0: VMAD (B2, A0, C8)
    sw.ldde r4, 32(p1, r26)   // cycle  9 P1: FETCHB (B0, LDM_B)
    sw.vmad r5, r3, r15       // cycle 10 P0: VMAD (B1, A3, C7)
    sw.ldde r5, 40(p1, r26)   // cycle 10 P1: FETCHB (B1, 32(LDM_B))  [corrected: printed B0]
    sw.vmad r7, r0, r20       // cycle 11 P0: VMAD (B3, A0, C12)
    sw.vldd r0, 128(p0, r25)  // cycle 11 P1: FETCHA (A0, LDM_A)
    sw.vmad r7, r1, r21       // cycle 12 P0: VMAD (B3, A1, C13)
    sw.vldd r1, 160(p0, r24)  // cycle 12 P1: FETCHA (A1, LDM_A_P)
    sw.vmad r6, r2, r18       // cycle 13 P0: VMAD (B2, A2, C10)
    sw.addl r24, r27, r24     // cycle 13 P1: ADD (LDM_A_P, K, LDM_A_P)
    sw.vmad r7, r2, r22       // cycle 14 P0: VMAD (B3, A2, C14)
    sw.vldd r2, 192(p0, r24)  // cycle 14 P1: FETCHA (A2, LDM_A_P)
    sw.vmad r6, r3, r19       // cycle 15 P0: VMAD (B2, A3, C11)
    sw.ldde r6, 48(p1, r26)   // cycle 15 P1: FETCHB (B2, 64(LDM_B))
    sw.vmad r7, r3, r23       // cycle 16 P0: VMAD (B3, A3, C15)
    sw.bgt r29                // cycle 16 P1: BGT cK .Kloop
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
  sw.spawn @kloop(%a, %b, %c)
  sw.join
  func.return
}
