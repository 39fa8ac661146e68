// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p sw-check-deadlock | filecheck %s
// RUN: not %taihu-opt %examples/sw/deadlock_getr.mlir -p sw-check-deadlock 2>&1 | filecheck %s --check-prefix=EXAMPLE

// sw-check-deadlock: CPEs that must block (a get with no message left to arrive, a DMA wait whose
// count is never reached, a barrier a member arrives at fewer times) and RLC messages never
// received, found statically per CPE (issue 15). The example of the README deadlock is refused
// before any simulation, at the op CPE 1 waits in:
// EXAMPLE: taihu-opt: error: {{.*}}deadlock_getr.mlir:14:7: sw-check-deadlock: kernel @deadlock_getr must block (1 CPE(s)): CPE 1 (0,1) waits forever in sw.getr (sw.getr number 1 on its row FIFO, which receives at most 0 message(s))

// Row 0 sends 3 messages down column 0 to CPE (1,0), which pops 4: its 4th getc finds none.
sw.kernel @short_col() {
  %row = sw.row_id
  %col = sw.col_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %is_col0 = arith.cmpi eq, %col, %c0 : i64
  scf.if %is_col0 {
    %is_row0 = arith.cmpi eq, %row, %c0 : i64
    %is_row1 = arith.cmpi eq, %row, %c1 : i64
    scf.if %is_row0 {
      sw.microkernel trip 3 () {
        sw.putc r1, 1
      }
    }
    scf.if %is_row1 {
      %c4 = arith.constant 4 : i64
      scf.for %i = %c0 to %c4 step %c1 : i64 {
        sw.microkernel trip 1 () {
          sw.getc r2
        }
      }
    }
  }
}
// CHECK: sw-check-deadlock: kernel @short_col must block (1 CPE(s)): CPE 8 (1,0) waits forever in sw.getc (sw.getc number 4 on its column FIFO, which receives at most 3 message(s))

// -----

// A wait for 2 completions of a reply word that one DMA increments.
sw.kernel @short_wait(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  sw.dma_get %a -> %buf, %rw size 1024
  sw.dma_wait %rw, 2
}
// CHECK: sw-check-deadlock: kernel @short_wait must block (64 CPE(s)): CPE 0 (0,0), CPE 1 (0,1), CPE 2 (0,2), CPE 3 (0,3), CPE 4 (0,4), CPE 5 (0,5), CPE 6 (0,6), CPE 7 (0,7) and 56 more wait forever in sw.dma_wait (sw.dma_wait %rw, 2: its DMAs complete 1 time(s) before it)

// -----

// The reset after the first wait clears the word: the second wait can never finish. The loop runs
// its body for every even CPE id only.
sw.kernel @reset_then_wait(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %odd = arith.remui %id, %c2 : i64
  %n = arith.subi %c1, %odd : i64
  scf.for %i = %c0 to %n step %c1 : i64 {
    sw.dma_get %a -> %buf, %rw size 1024
    sw.dma_wait %rw, 1
    sw.reply_reset %rw
    sw.dma_wait %rw, 1
  }
}
// CHECK: sw-check-deadlock: kernel @reset_then_wait must block (32 CPE(s)): CPE 0 (0,0), CPE 2 (0,2), CPE 4 (0,4), CPE 6 (0,6), CPE 8 (1,0), CPE 10 (1,2), CPE 12 (1,4), CPE 14 (1,6) and 24 more wait forever in sw.dma_wait (sw.dma_wait %rw, 1: its DMAs complete 0 time(s) before it)

// -----

// Only CPE 0 reaches the second array barrier.
sw.kernel @barrier_once_more() {
  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  sw.barrier array
  %first = arith.cmpi eq, %id, %c0 : i64
  scf.if %first {
    sw.barrier array
  }
}
// CHECK: sw-check-deadlock: kernel @barrier_once_more must block (1 CPE(s)): CPE 0 (0,0) waits forever in sw.barrier (sw.barrier arrival number 2: another member arrives at most 1 time(s))

// -----

// A cascade: CPE 0 waits for a DMA nobody issues before it sends to CPE 1; CPE 1's get then blocks
// too (the message could only come from CPE 0).
sw.kernel @cascade(%a: i64) {
  %buf = sw.ldm_alloc 1024
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %is0 = arith.cmpi eq, %id, %c0 : i64
  %is1 = arith.cmpi eq, %id, %c1 : i64
  scf.if %is0 {
    sw.dma_wait %rw, 1
    sw.microkernel trip 1 () {
      sw.putr r1, 1
    }
    sw.dma_get %a -> %buf, %rw size 1024
  }
  scf.if %is1 {
    sw.microkernel trip 1 () {
      sw.getr r1
    }
  }
}
// CHECK: sw-check-deadlock: kernel @cascade must block (2 CPE(s)): CPE 0 (0,0) waits forever in sw.dma_wait (sw.dma_wait %rw, 1: its DMAs complete 0 time(s) before it); CPE 1 (0,1) waits forever in sw.getr (sw.getr number 1 on its row FIFO, which receives at most 0 message(s))

// -----

// Leftover messages: every CPE broadcasts once along its row and pops 6 of the 7 it receives.
sw.kernel @leftover() {
  sw.microkernel trip 1 () {
    sw.putr r1, 8
  }
  sw.microkernel trip 6 () {
    sw.getr r2
  }
}
// CHECK: sw-check-deadlock: kernel @leftover ends with RLC messages never received: CPE 0 (0,0) receives 7 row message(s) and pops 6; CPE 1 (0,1) receives 7 row message(s) and pops 6

// -----

// Conservative: the trip count of the loop is a kernel argument, so the gets are not counted and
// nothing is claimed; a balanced exchange passes.
sw.kernel @unknown_trip(%n: i64) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  scf.for %i = %c0 to %n step %c1 : i64 {
    sw.microkernel trip 1 () {
      sw.getr r2
    }
  }
}
sw.kernel @balanced() {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c8 = arith.constant 8 : i64
  scf.for %t = %c0 to %c8 step %c1 : i64 {
    %col = sw.col_id
    %mine = arith.cmpi eq, %col, %t : i64
    scf.if %mine {
      sw.microkernel trip 2 () {
        sw.putr r1, 8
      }
    } else {
      sw.microkernel trip 2 () {
        sw.getr r1
      }
    }
  }
}
// CHECK:      sw.kernel @unknown_trip(%n: i64) {
// CHECK:      sw.kernel @balanced() {
