// The swsim-run target: `-t swsim-run` simulates the module instead of printing it, and writes
// taihu-run's per-layer table and output checksums to the output stream. An sw module is lowered
// by sw-to-swsim first: the same table as the swsim module (and as taihu-run's).
// RUN: xdsl-opt %examples/sw/mesh_gemm.mlir -t swsim-run > %t.sw
// RUN: xdsl-opt %examples/sw/mesh_gemm.mlir -p sw-to-swsim -t swsim-run > %t.swsim
// RUN: diff %t.sw %t.swsim
// RUN: filecheck %s < %t.swsim
// RUN: %taihu-opt %examples/sw/mesh_gemm.mlir -p sw-to-swsim -t 'swsim-run{machine=sw26010}' -o %t.opt
// RUN: diff %t.sw %t.opt
// RUN: %taihu-run %examples/sw/mesh_gemm.mlir > %t.run
// RUN: cat %t.swsim %t.run | filecheck %s --check-prefix=SAME
//
// Files: report, trace and outputs (taihu-run's flags as options; paths are quoted). Timing only:
// the same report and table, no outputs.
// RUN: rm -f %t.npz
// RUN: xdsl-opt %examples/sw/rlc_p2p.mlir -t 'swsim-run{report="%t.json" trace="%t.trace.json" output="%t.npz" seed=3}' | filecheck %s --check-prefix=P2P
// RUN: filecheck %s --check-prefix=REPORT --input-file %t.json
// RUN: filecheck %s --check-prefix=TRACE --input-file %t.trace.json
// RUN: test -s %t.npz
// RUN: %taihu-opt %examples/sw/rlc_p2p.mlir -t 'swsim-run{timing-only=true report="%t.timing.json"}' | filecheck %s --check-prefix=TIMING
// RUN: diff %t.json %t.timing.json

// CHECK:      module on the simulated core group (sw26010.toml): [[TOTAL:[0-9]+]] cycles = {{[0-9.]+}} ms
// CHECK-NEXT: layer {{ +}}algorithm  shape {{ +}}cycles  launch {{ +}}ms  MFLOP  exec MFLOP  GFLOPS  % peak  DMA GB/s  bound
// CHECK-NEXT: load {{ +}}gemm {{ +}}128x128x512 scheme 1 {{ +}}[[LOAD:[0-9]+]] {{.*}} DMA
// CHECK-NEXT: gemm {{ +}}gemm {{ +}}128x128x512 scheme 1 {{ +}}[[GEMM:[0-9]+]] {{.*}} compute
// CHECK-NEXT: store {{ +}}gemm {{ +}}128x128x512 scheme 1 {{ +}}[[STORE:[0-9]+]] {{.*}} DMA
// CHECK-NEXT: total (3 layers)  3 kernels {{ +}}[[TOTAL]] {{.*}}
// CHECK-NEXT: module: 1 output(s)
// CHECK-NEXT: output  shape    dtype {{ +}}sum {{ +}}l2
// CHECK-NEXT: CT      128x128  float64 {{ +}}[[SUM:[-0-9.e+]+]] {{ +}}[[L2:[0-9.e+]+]]
// CHECK-NOT:  {{.}}

// SAME:      module on the simulated core group (sw26010.toml): [[TOTAL:[0-9]+]] cycles
// SAME:      CT      128x128  float64 {{ +}}[[SUM:[-0-9.e+]+]] {{ +}}[[L2:[0-9.e+]+]]
// SAME:      mesh_gemm.mlir on the simulated core group (sw26010.toml): [[TOTAL]] cycles
// SAME:      total (3 layers)  3 kernels {{ +}}[[TOTAL]] {{.*}}
// SAME:      CT      128x128  float64 {{ +}}[[SUM]] {{ +}}[[L2]]

// P2P:      module on the simulated core group (sw26010.toml): [[TOTAL:[0-9]+]] cycles
// P2P-NEXT: layer
// P2P-NEXT: rlc_p2p {{ +}}- {{ +}}- {{ +}}[[CYC:[0-9]+]] {{ +}}[[LAUNCH:[0-9]+]] {{.*}}
// P2P-NEXT: total (1 layers)  1 kernels {{ +}}[[TOTAL]] {{ +}}[[LAUNCH]] {{.*}}
// P2P-NEXT: module: 1 output(s)
// P2P-NEXT: output  shape  dtype
// P2P-NEXT: OUT     64x4   float64

// REPORT:      "machine": "sw26010.toml",
// REPORT:      "total_cycles": [[TOTAL:[0-9]+]],
// REPORT:      "launch_cycles": [[LAUNCH:[0-9]+]],
// REPORT:      "name": "rlc_p2p",
// REPORT-NEXT: "cycles": [[CYC:[0-9]+]],
// REPORT-NEXT: "launch_cycles": [[LAUNCH]],

// TRACE: "traceEvents": [

// TIMING:      module on the simulated core group (sw26010.toml): {{[0-9]+}} cycles
// TIMING:      total (1 layers)  1 kernels
// TIMING-NOT:  output
