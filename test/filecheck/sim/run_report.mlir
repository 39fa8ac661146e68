// RUN: %taihu-run %s --quiet --report %t.json && filecheck %s --input-file %t.json
// RUN: not %taihu-run %examples/sw/deadlock_getr.mlir 2>&1 | filecheck %s --check-prefix=DEAD

// One CPE gets 1024 B (spec §13 #1: 392 cycles) and puts them back when the get completed: 392 + 392;
// the launch costs spawn_cycles = 2900 before the CPEs start: total 2900 + 784.
sw.global @X : tensor<128xf64> io input
sw.global @Y : tensor<128xf64> io output
sw.kernel @copy(%x: i64, %y: i64) {
  %b = sw.ldm_alloc 1024 align 128
  %rw = sw.reply_alloc
  %id = sw.cpe_id
  %c0 = arith.constant 0 : i64
  %first = arith.cmpi eq, %id, %c0 : i64
  scf.if %first {
    sw.dma_get %x -> %b, %rw size 1024
    sw.dma_wait %rw, 1
    sw.dma_put %b -> %y, %rw size 1024
    sw.dma_wait %rw, 2
  }
}
func.func @main() {
  %x = sw.global_addr @X
  %y = sw.global_addr @Y
  sw.spawn @copy(%x, %y)
  sw.join
  func.return
}

// CHECK:      "total_cycles": 3684,
// CHECK:      "launches": 1,
// CHECK-NEXT: "launch_cycles": 2900,
// CHECK:      "useful_flops": 0,
// CHECK:      "name": "copy",
// CHECK-NEXT: "cycles": 784,
// CHECK-NEXT: "launch_cycles": 2900,
// CHECK:      "dma_bytes": 2048,
// CHECK-NEXT: "dma_waste_bytes": 0,
// CHECK-NEXT: "dma_requests": 2,
// CHECK:      "ldm_high_water": 1024

// DEAD: taihu-run: error: {{.*}}deadlock_getr.mlir: deadlock at cycle {{[0-9]+}}: no agent can make progress
// DEAD-NEXT: CPE 1 (0,1): getr in {{.*}} waiting for 1 messages on the row FIFO (0 posted)
// DEAD-NEXT: MPE: join: waiting for the CPEs of kernel 'deadlock_getr'
