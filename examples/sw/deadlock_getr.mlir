// A deliberately deadlocking program: CPE (0,1) waits in getr for a message nobody sends.
//
// What it shows: getr blocks on an empty row FIFO (004 L496). When every unfinished CPE is
// blocked and nothing is in flight, the simulator must stop with an error naming each blocked
// CPE and what it waits for (spec §1 "Deadlock", §13 #9) -- here "CPE 1 (0,1): getr on an empty
// row FIFO" -- and never hang. Every other CPE finishes its (empty) kernel normally.
// Run: taihu-run examples/sw/deadlock_getr.mlir   (expected: a one-line deadlock error, exit 1)
sw.kernel @deadlock_getr() {
  %id = sw.cpe_id
  %c1 = arith.constant 1 : i64
  %is1 = arith.cmpi eq, %id, %c1 : i64
  scf.if %is1 {
    sw.microkernel trip 1 () {
      sw.getr r0
    }
  }
}

func.func @main() {
  sw.spawn @deadlock_getr()
  sw.join
  func.return
}
