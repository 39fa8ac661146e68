// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-loop-to-sw}' | filecheck %s
// RUN: %taihu-run %s --check --quiet

// loop.map grouped -> register micro-kernels (loop_to_sw/depthwise.py lower_grouped): 4 groups of
// 2 input and 2 output channels, 3x3 s1 p1 on 6 x 8 planes, no bias; one group per CPE. Per output
// plane (an scf.for over the group's 2 output planes) the depthwise micro-kernels of its first
// input channel -- weight vectors built from its 9 taps, row runs from 0 (no bias) -- then those
// of its second input channel: its x plane (192 B further) and taps (36 B further), the row runs
// starting from the partial sums loaded from y (VLDS) instead of 0.

func.func @main(%x: tensor<1x8x6x8xf32> {graph.name = "x"}) -> (tensor<1x8x6x8xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.25> : tensor<8x2x3x3xf32>
  %y = graph.conv2d %x, %w {group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x6x8xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x6x8xf32>
  func.return %y : tensor<1x8x6x8xf32>
}

// CHECK:      sw.kernel @y_1(%x: i64, %w: i64, %y: i64) attributes {{{.*}}taihu.algorithm = "grouped"
// CHECK:        scf.for %i = %c0 to %c2 step %c1 : i64 {
// CHECK:          %[[Y:.*]] = arith.addi %y_t, %{{.*}} : i64
// CHECK:          %[[W:.*]] = arith.addi %w_t, %{{.*}} : i64
// CHECK:          sw.microkernel trip 1 (%[[W]] step 0) attributes {name = "grouped.weights"} {
// CHECK:          sw.microkernel trip 1 (%x_t step 32, %[[Y]] step 32) attributes {name = "grouped.rows"} {
// CHECK-NOT:        sw.vlds
// CHECK:          }
// CHECK:          %[[X1:.*]] = arith.addi %x_t, %c192 : i64
// CHECK:          %[[W1:.*]] = arith.addi %[[W]], %c36 : i64
// CHECK:          sw.microkernel trip 1 (%[[W1]] step 0) attributes {name = "grouped.weights"} {
// CHECK:          sw.microkernel trip 1 (%[[X1]] step 32, %[[Y]] step 32) attributes {name = "grouped.rows"} {
// CHECK-DAG:        sw.vlds
// CHECK-DAG:        sw.ldse
// CHECK-DAG:        sw.vmad
// CHECK-DAG:        sw.vsts
// CHECK:          }
