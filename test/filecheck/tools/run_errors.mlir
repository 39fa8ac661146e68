// taihu-run errors: each is one message on stderr (a deadlock lists the blocked agents), exit
// status 1, no traceback, and no --report/--output file left behind.
// RUN: not %taihu-run %s --report %t.json 2>&1 | filecheck %s --check-prefix=LDM
// RUN: not test -e %t.json
// RUN: not %taihu-run %S/does-not-exist.onnx 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not %taihu-run %S/../frontends/Inputs/not_a_model.onnx 2>&1 | filecheck %s --check-prefix=BADONNX
// RUN: not %taihu-run %S/../frontends/Inputs/unsupported_op.onnx --output %t.npz 2>&1 | filecheck %s --check-prefix=OP
// RUN: not test -e %t.npz
// RUN: not %taihu-run %examples/sw/deadlock_getr.mlir 2>&1 | filecheck %s --check-prefix=DEAD
// RUN: not %taihu-run %examples/graph/small_cnn.mlir --level graph --check 2>&1 | filecheck %s --check-prefix=CHECK0
// RUN: not %taihu-run %examples/graph/small_cnn.mlir --level graph --plot %t.plots 2>&1 | filecheck %s --check-prefix=PLOT
// RUN: not %taihu-run %examples/graph/small_cnn.mlir --random-weights 1 2>&1 | filecheck %s --check-prefix=RW

// Two LDM buffers of 40000 + 30000 B > the 57344 B user budget of one CPE.
sw.kernel @too_big() {
  %a = sw.ldm_alloc 40000 align 128
  %b = sw.ldm_alloc 30000 align 128
}
func.func @main() {
  sw.spawn @too_big()
  sw.join
  func.return
}

// LDM: taihu-run: error: {{.*}}run_errors.mlir:{{[0-9]+}}:{{[0-9]+}}: sw.kernel @too_big: LDM allocations need {{[0-9]+}} bytes > ldm_user_bytes = 57344: %a 40000 B, %b 30000 B
// LDM-NOT: Traceback
// MISSING: taihu-run: error: no such file: {{.*}}does-not-exist.onnx
// BADONNX: taihu-run: error: {{.*}}not_a_model.onnx: not a readable ONNX model
// OP: taihu-run: error: {{.*}}unsupported_op.onnx: Celu node 'celu0': unsupported op
// OP-NOT: Traceback
// DEAD:      taihu-run: error: {{.*}}deadlock_getr.mlir: deadlock at cycle {{[0-9]+}}: no agent can make progress
// DEAD-NEXT: CPE 1 (0,1): getr in {{.*}} waiting for 1 messages on the row FIFO (0 posted)
// CHECK0: taihu-run: error: --check: nothing to compare with
// PLOT: taihu-run: error: --plot needs a simulated run (--level swsim or an sw module)
// RW: taihu-run: error: --random-weights applies to ONNX models
