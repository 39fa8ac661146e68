// taihu-run on an sw program: the per-layer table (kernels without taihu.layer are their own
// layer; without taihu.useful_flops their executed flops are the useful ones: MFLOP = exec
// MFLOP; each launch costs spawn_cycles = 2900), the network total, the output checksums and
// the stage wall times.
// RUN: %taihu-run %examples/sw/overlap.mlir | filecheck %s

// CHECK:      overlap.mlir on the simulated core group (sw26010.toml): [[TOTAL:[0-9]+]] cycles = {{[0-9.]+}} ms
// CHECK-NEXT: layer {{ +}}algorithm  shape  cycles  launch {{ +}}ms  MFLOP  exec MFLOP  GFLOPS  % peak  DMA GB/s  bound
// CHECK-NEXT: dma_only {{ +}}- {{ +}}- {{ +}}{{[0-9]+ +}}2900 {{ +[0-9.]+ +}}0.0 {{ +}}0.0 {{ +}}0.0 {{ +}}0.0 {{ +[0-9.]+ +}}DMA
// CHECK-NEXT: compute_only {{ +}}- {{ +}}- {{ +[0-9]+ +}}2900 {{ +}}[[MS:[0-9.]+]] {{ +}}[[MF:[0-9.]+]] {{ +}}[[MF]] {{ +[0-9.]+ +[0-9.]+ +}}0.00  compute
// CHECK-NEXT: overlap_nosync {{.*}}
// CHECK-NEXT: overlap_sync {{.*}}
// CHECK-NEXT: overlap_rlc {{.*}}
// CHECK-NEXT: total (5 layers)  5 kernels {{ +}}[[TOTAL]] {{ +}}14500 {{.*}}
// CHECK-NEXT: overlap.mlir at level swsim: 1 output(s) in {{[0-9.]+}} s
// CHECK-NEXT: output  shape   dtype {{ +}}sum {{ +}}l2
// CHECK-NEXT: Y       64x512  float64
// CHECK-NEXT: wall time: import {{[0-9.]+}} s, simulate {{[0-9.]+}} s; total {{[0-9.]+}} s
