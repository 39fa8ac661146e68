// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-loop-to-sw}' | filecheck %s
// RUN: %taihu-run %s --check --quiet

// loop.map grouped_direct -> register micro-kernels (loop_to_sw/depthwise.py lower_grouped_direct):
// 4 groups of 2 input and 6 output channels, 3x3 s1 p1 on 6 x 8 planes, bias; one group per CPE.
// Per group the column copies u_0 (shift -1) and u_2 (shift +1) of its input rows (scalar loads
// and stores, 0 at the edges; the unshifted column reads x itself); then per output row (scf.for)
// and block of 4 then 2 output channels x 2 units: the accumulators from the bias (LDSE), 2
// iterations (the input channels) of 9 terms -- vector loads of the copies (VLDS), broadcast
// weights (LDSE), VMADs -- and vector stores.

func.func @main(%x: tensor<1x8x6x8xf32> {graph.name = "x"}) -> (tensor<1x24x6x8xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.25> : tensor<24x2x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<24xf32>
  %y = graph.conv2d %x, %w, %b {group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, tile.schedule = #tile.schedule<"grouped" {direct = true, groups = 4 : i64, rows = 6 : i64}>} : (tensor<1x8x6x8xf32>, tensor<24x2x3x3xf32>, tensor<24xf32>) -> tensor<1x24x6x8xf32>
  func.return %y : tensor<1x24x6x8xf32>
}

// CHECK:      sw.kernel @y_1(
// CHECK:        sw.microkernel trip 16 (%x_t step 32, %u0_t step 32) attributes {name = "grouped_direct.copy"} {
// CHECK-DAG:      sw.ldse r{{[0-9]+}}, 0(p0)
// CHECK-DAG:      sw.fsts r31, 0(p1)
// CHECK-DAG:      sw.fsts r{{[0-9]+}}, 28(p1)
// CHECK:        }
// CHECK-NEXT:   sw.microkernel trip 16 (%x_t step 32, %u2_t step 32) attributes {name = "grouped_direct.copy"} {
// CHECK-DAG:      sw.ldse r{{[0-9]+}}, 4(p0)
// CHECK-DAG:      sw.fsts r31, 28(p1)
// CHECK:        }
// CHECK:        scf.for %i = %c0 to %c6 step %c1 : i64 {
// CHECK:          sw.microkernel trip 1 (%b_t step 0) attributes {name = "grouped_direct.init"} {
// CHECK-COUNT-8:    sw.ldse r{{[0-9]+}}, {{[0-9]+}}(p0)
// CHECK-NEXT:     }
// CHECK:          sw.microkernel trip 2 (%{{.*}} step 256, %{{.*}} step 256, %{{.*}} step 256, %w_t step 36) attributes {name = "grouped_direct.terms"} {
// CHECK-DAG:        sw.vlds r{{[0-9]+}}, {{[0-9]+}}(p0)
// CHECK-DAG:        sw.vlds r{{[0-9]+}}, {{[0-9]+}}(p1)
// CHECK-DAG:        sw.vlds r{{[0-9]+}}, {{[0-9]+}}(p2)
// CHECK-DAG:        sw.ldse r{{[0-9]+}}, {{[0-9]+}}(p3)
// CHECK-DAG:        sw.vmad
// CHECK:          }
// CHECK-NEXT:     sw.microkernel trip 1 (%{{.*}} step 0) attributes {name = "grouped_direct.store"} {
// CHECK-COUNT-8:    sw.vsts r{{[0-9]+}}, {{[0-9]+}}(p0)
// CHECK-NEXT:     }
// CHECK:          sw.microkernel trip 1 (%{{.*}} step 0) attributes {name = "grouped_direct.init"} {
// CHECK-COUNT-4:    sw.ldse r{{[0-9]+}}, {{[0-9]+}}(p0)
// CHECK-NEXT:     }
