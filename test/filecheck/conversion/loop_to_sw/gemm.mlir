// RUN: %taihu-opt %s -p convert-loop-to-sw | filecheck %s
// RUN: %taihu-opt %s -p convert-loop-to-sw,convert-sw-to-swsim -o %t.mlir && %taihu-run %t.mlir --quiet

// Register micro-kernels of the mesh GEMM (004 Alg. 2, Listing 4.1): a SUMMA loop fused over the
// 8 steps (C kept in registers per 16x4 tile, 4 roles by scf.if on the mesh ids), a single
// SUMMA step, a local gemm_block (plain loads, partial tiles) and an RLC broadcast.

builtin.module {
  func.func @main() {
    loop.spmd "mm" ids(%row, %col) () {
      %a = loop.ldm_buffer "A" : !loop.ldm<8x16xf64>
      %b = loop.ldm_buffer "B" : !loop.ldm<8x4xf64>
      %c = loop.ldm_buffer "C" : !loop.ldm<4x16xf64>
      %ga = loop.ldm_buffer "ga" : !loop.ldm<3x20xf32>
      %gb = loop.ldm_buffer "gb" : !loop.ldm<3x5xf32>
      %gc = loop.ldm_buffer "gc" : !loop.ldm<5x20xf32>
      %d = loop.ldm_buffer "D" : !loop.ldm<8x16xf64>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %c8 = arith.constant 8 : index
      scf.for %T = %c0 to %c8 step %c1 {
        loop.summa_step %T, %a, %b -> %c scheme 1 trans_a trans_c : !loop.ldm<8x16xf64>, !loop.ldm<8x4xf64>, !loop.ldm<4x16xf64>
      }
      loop.summa_step %c5, %a, %b -> %c scheme 1 trans_a trans_c : !loop.ldm<8x16xf64>, !loop.ldm<8x4xf64>, !loop.ldm<4x16xf64>
      loop.gemm_block %ga, %gb -> %gc vec m trans_a trans_c : !loop.ldm<3x20xf32>, !loop.ldm<3x5xf32>, !loop.ldm<5x20xf32>
      loop.rlc_bcast %a -> %d row root %c1 : !loop.ldm<8x16xf64>, !loop.ldm<8x16xf64>
    }
    loop.spmd "mm2" ids(%row, %col) () {
      %a = loop.ldm_buffer "A" : !loop.ldm<8x32xf64>
      %b = loop.ldm_buffer "B" : !loop.ldm<8x4xf64>
      %c = loop.ldm_buffer "C" : !loop.ldm<4x32xf64>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %T = %c0 to %c8 step %c1 {
        loop.summa_step %T, %a, %b -> %c scheme 1 trans_a trans_c : !loop.ldm<8x32xf64>, !loop.ldm<8x4xf64>, !loop.ldm<4x32xf64>
      }
    }
    func.return
  }
}

// CHECK:      sw.kernel @mm() {
// CHECK-DAG:    %row = sw.row_id
// CHECK-DAG:    %col = sw.col_id
// CHECK:        %A = sw.ldm_alloc 1024
// CHECK-NEXT:   %B = sw.ldm_alloc 256
// CHECK-NEXT:   %C = sw.ldm_alloc 512

// The fused SUMMA loop: prologue (load C + first FETCHes) dispatched on the roles of step 0.
// CHECK:        %[[SA0:.*]] = arith.cmpi eq, %row, %c0 : i64
// CHECK-NEXT:   %[[SB0:.*]] = arith.cmpi eq, %col, %c0 : i64
// CHECK-NEXT:   scf.if %[[SA0]] {
// CHECK-NEXT:     scf.if %[[SB0]] {
// CHECK-NEXT:       sw.microkernel trip 1 (%A step 0, %B step 0, %C step 0) attributes {name = "summa_prologue"} {
// CHECK-NEXT:         sw.vldd r0, 0(p2)
// CHECK:              sw.vldd r15, 480(p2)
// CHECK-NEXT:         sw.vldc r16, 0(p0)
// CHECK-NEXT:         sw.ldder r20, 0(p1)
// CHECK:            } else {
// CHECK-NEXT:       sw.microkernel trip 1 (%A step 0, %B step 0, %C step 0) attributes {name = "summa_prologue"} {
// CHECK:              sw.vldc r16, 0(p0)
// CHECK-NEXT:         sw.getr r20

// Per step T: the Listing 4.1 k-loop (8 iterations) of the CPE's role, then the first FETCHes
// of step T + 1.
// CHECK:        scf.for %t = %c0 to %c8 step %c1 : i64 {
// CHECK-NEXT:     %[[SA:.*]] = arith.cmpi eq, %row, %t : i64
// CHECK-NEXT:     %[[SB:.*]] = arith.cmpi eq, %col, %t : i64
// CHECK-NEXT:     scf.if %[[SA]] {
// CHECK-NEXT:       scf.if %[[SB]] {
// CHECK-NEXT:         sw.microkernel trip 8 (%A step 128, %B step 32) attributes {name = "summa_kloop"} {
// CHECK-NEXT:           sw.vmad r20, r16, r0
// CHECK-NEXT:           sw.addl r25, r27, r25
// CHECK-NEXT:           sw.vmad r20, r17, r1
// CHECK-NEXT:           sw.vldc r19, 96(p0, r25)
// CHECK-NEXT:           sw.vmad r20, r18, r2
// CHECK-NEXT:           sw.ldder r23, 24(p1, r26)
// CHECK:                sw.vmad r23, r19, r15
// CHECK-NEXT:           sw.bgt r29
// CHECK-NEXT:         }
// CHECK:            } else {
// CHECK:                sw.getc r19
// CHECK:              %[[T1:.*]] = arith.addi %t, %c1 : i64
// CHECK-NEXT:     %[[MORE:.*]] = arith.cmpi slt, %[[T1]], %c8 : i64
// CHECK:          scf.if %[[MORE]] {
// CHECK:            attributes {name = "summa_next_step"}
// CHECK:        sw.microkernel trip 1 (%C step 0) attributes {name = "summa_store_c"} {
// CHECK-NEXT:     sw.vstd r0, 0(p0)

// The single step T = 5: prologue, k-loop, store (no step loop).
// CHECK:        arith.cmpi eq, %row, %c5 : i64
// CHECK:        attributes {name = "summa_prologue"}
// CHECK:        attributes {name = "summa_kloop"}
// CHECK-NOT:    summa_next_step
// CHECK:        attributes {name = "summa_store_c"}

// gemm_block f32: 20 x 5 = one 16x4 tile (Listing 4.1 with vlds/ldse/vmas), a 4x4 strip (1 vector
// register) and two partial tiles of one scalar; k = 3 -> prologue, 2 k-loop iterations, epilogue.
// CHECK:        attributes {name = "gemm_prologue"}
// CHECK:        sw.microkernel trip 2 (%{{.*}} step 80, %{{.*}} step 20) attributes {name = "gemm_kloop"} {
// CHECK-NEXT:     sw.vmas r20, r16, r0
// CHECK:          sw.vlds r19, 48(p0, r25)
// CHECK:        attributes {name = "gemm_epilogue"}
// CHECK:          sw.vsts r0, 0(p2)

// rlc_bcast along the row from column 1: the root loads and broadcasts (vldr) and keeps a copy.
// CHECK:        %[[ROOT:.*]] = arith.cmpi eq, %col, %c1 : i64
// CHECK-NEXT:   scf.if %[[ROOT]] {
// CHECK-NEXT:     sw.microkernel trip 8 (%A step 128, %D step 128) attributes {name = "rlc_bcast_row"} {
// CHECK-NEXT:       sw.vldr r0, 0(p0)
// CHECK:            sw.vstd r3, 96(p1)
// CHECK:        } else {
// CHECK-NEXT:     sw.microkernel trip 8 (%A step 128, %D step 128) attributes {name = "rlc_bcast_row"} {
// CHECK-NEXT:       sw.getr r0

// Two register tiles (C is 4 x 32): a loop over the tiles; one run stores C of tile q and loads
// C and the first FETCHes of tile q + 1; the last tile only stores.
// CHECK:      sw.kernel @mm2() {
// CHECK:        scf.for %q = %c0 to %c2 step %c1 : i64 {
// CHECK:          scf.for %t = %c0 to %c8 step %c1 : i64 {
// CHECK:          %[[Q1:.*]] = arith.addi %q, %c1 : i64
// CHECK-NEXT:     %[[MORE:.*]] = arith.cmpi slt, %[[Q1]], %c2 : i64
// CHECK-NEXT:     scf.if %[[MORE]] {
// CHECK:              sw.microkernel trip 1 (%{{.*}} step 0, %{{.*}} step 0, %{{.*}} step 0, %{{.*}} step 0) attributes {name = "summa_next_tile"} {
// CHECK-NEXT:           sw.vstd r0, 0(p3)
// CHECK:                sw.vstd r15, 864(p3)
// CHECK-NEXT:           sw.vldd r0, 0(p2)
// CHECK:                sw.vldd r15, 864(p2)
// CHECK-NEXT:           sw.vldc r16, 0(p0)
// CHECK-NEXT:           sw.ldder r20, 0(p1)
// CHECK:            sw.microkernel trip 1 (%{{.*}} step 0) attributes {name = "summa_store_c"} {

// CHECK:      func.func @main() {
// CHECK-NEXT:   sw.spawn @mm()
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   sw.spawn @mm2()
// CHECK-NEXT:   sw.join
// CHECK-NEXT:   func.return
