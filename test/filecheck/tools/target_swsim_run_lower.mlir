// A graph-level ReLU lowered by taihu-lower and simulated by the swsim-run target in one
// taihu-opt call (the README's level-by-level example): the per-layer table, its total, the
// report written by the target and taihu-run's own run of the same file agree.
// RUN: %taihu-opt -p taihu-lower %s -t 'swsim-run{report="%t.json"}' > %t.txt
// RUN: %taihu-run %s --timing-only > %t.run
// RUN: cat %t.txt %t.json %t.run | filecheck %s

func.func @main(%x: tensor<1x64x56x56xf32> {graph.name = "x"}) -> (tensor<1x64x56x56xf32> {graph.name = "y"}) {
  %y = graph.relu %x : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32>
  func.return %y : tensor<1x64x56x56xf32>
}

// CHECK:      module on the simulated core group (sw26010.toml): [[TOTAL:[0-9]+]] cycles = [[MS:[0-9.]+]] ms
// CHECK-NEXT: layer {{ +}}algorithm  shape {{ +}}cycles  launch {{ +}}ms  MFLOP  exec MFLOP  GFLOPS  % peak  DMA GB/s  bound
// CHECK-NEXT: y {{ +}}map {{ +}}1x64x56x56 <- 1x64x56x56 {{ +}}[[CYC:[0-9]+]] {{ +}}2900 {{ +}}[[KMS:[0-9.]+]] {{ +}}0.2 {{ +}}0.0 {{ +[0-9.]+ +[0-9.]+ +[0-9.]+}}  DMA
// CHECK-NEXT: total (1 layers)  1 kernels {{ +}}[[TOTAL]] {{ +}}2900 {{ +}}[[MS]] {{ +}}0.2 {{ +}}0.0 {{ +[0-9.]+ +[0-9.]+ +[0-9.]+}}  DMA
// CHECK-NEXT: module: 1 output(s)
// CHECK-NEXT: output  shape {{ +}}dtype {{ +}}sum {{ +}}l2
// CHECK-NEXT: y {{ +}}1x64x56x56  float32
// CHECK:      "total_cycles": [[TOTAL]],
// CHECK:      "launch_cycles": 2900,
// CHECK:      "useful_flops": 200704,
// CHECK:      "name": "y_1",
// CHECK-NEXT: "cycles": [[CYC]],
// CHECK-NEXT: "launch_cycles": 2900,
// CHECK:      target_swsim_run_lower.mlir on the simulated core group (sw26010.toml): [[TOTAL]] cycles = [[MS]] ms
// CHECK:      y {{ +}}map {{ +}}1x64x56x56 <- 1x64x56x56 {{ +}}[[CYC]] {{ +}}2900 {{ +}}[[KMS]]
