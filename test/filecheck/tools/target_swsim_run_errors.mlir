// swsim-run diagnostics: one line naming the target, never a traceback. taihu-opt prints it as
// an error (exit status 1); stock xdsl-opt prints it with --verify-diagnostics.
// RUN: xdsl-opt --verify-diagnostics --split-input-file %s -t swsim-run | filecheck %s
// RUN: not %taihu-opt %s --split-input-file -t swsim-run 2>&1 | filecheck %s --check-prefix=OPT
//
// Bad options are found before any pass runs (taihu-opt) or when the target is built (xdsl-opt).
// RUN: not %taihu-opt %s --split-input-file -p taihu-lower -t 'swsim-run{speed=11}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: xdsl-opt --verify-diagnostics %examples/sw/rlc_p2p.mlir -t 'swsim-run{seed=abc}' | filecheck %s --check-prefix=TYPE
// RUN: not %taihu-opt %examples/sw/rlc_p2p.mlir -t 'swsim-run{seed=-1}' 2>&1 | filecheck %s --check-prefix=SEED
// RUN: not %taihu-opt %examples/sw/rlc_p2p.mlir -t 'swsim-run{timing-only=true output="%t.npz"}' 2>&1 | filecheck %s --check-prefix=COMBO
// RUN: not test -e %t.npz
// RUN: not %taihu-opt %examples/sw/rlc_p2p.mlir -t 'swsim-run{machine=sw9}' 2>&1 | filecheck %s --check-prefix=MACHINE
// RUN: not %taihu-opt %examples/sw/rlc_p2p.mlir -t 'swsim-run{inputs="%t.missing.npz"}' 2>&1 | filecheck %s --check-prefix=INPUTS
// RUN: not %taihu-opt %examples/sw/deadlock_getr.mlir -t 'swsim-run{report="%t.dead.json"}' 2>&1 | filecheck %s --check-prefix=DEAD
// RUN: not test -e %t.dead.json

// CHECK:      swsim-run: the module is at the graph level (graph.relu), it has no sw.kernel to simulate: lower it first (-p taihu-lower)
// CHECK-NEXT: {{//}} -----
// CHECK-NEXT: swsim-run: the module has no sw.kernel: nothing to simulate
// CHECK-NOT:  Traceback

// OPT:      taihu-opt: error: swsim-run: the module is at the graph level (graph.relu), it has no sw.kernel to simulate: lower it first (-p taihu-lower)
// OPT-NOT:  Traceback

// UNKNOWN:     taihu-opt: error: swsim-run: unknown option 'speed' (options: report, trace, timing-only, inputs, output, seed, machine)
// UNKNOWN-NOT: module on the simulated
// TYPE:        swsim-run: option seed=abc: expected an integer >= 0
// SEED:        taihu-opt: error: swsim-run: option seed=-1: expected an integer >= 0
// COMBO:       taihu-opt: error: swsim-run: timing-only computes no outputs: it cannot be combined with output
// MACHINE:     taihu-opt: error: swsim-run: unknown machine 'sw9': not a file and not a shipped name (sw26010
// INPUTS:      taihu-opt: error: swsim-run: --inputs {{.*}}missing.npz: no such file
// DEAD:        taihu-opt: error: swsim-run: deadlock at cycle {{[0-9]+}}: no agent can make progress
// DEAD-NOT:    Traceback

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// An sw module without kernels: only a global and the host program.
sw.global @G : tensor<4xf64> io output
func.func @main() {
  func.return
}
