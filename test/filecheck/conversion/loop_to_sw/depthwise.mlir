// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-loop-to-sw}' | filecheck %s
// RUN: %taihu-run %s --check --quiet

// loop.map depthwise -> register micro-kernels (loop_to_sw/depthwise.py), 3x3 s1 p1 on 64 planes
// of 6 x 8, no bias. Per plane: the weight vectors are built once -- each tap loaded with LDSE and
// inserted (VINSF) into the 4 vectors whose lane it occupies, the first insert starting from r31
// = 0 -- in r30 down to r13 (3 kernel rows x 6 offsets); then one micro-kernel per run of output
// rows with the same in-bounds kernel rows (top row, 4 interior rows in one body, bottom row):
// units of 4 outputs along W, scalar-broadcast input loads (LDSE) times the weight vectors
// (VMAD), two chains added, vector stores (rows of 8: aligned).

func.func @main(%x: tensor<1x64x6x8xf32> {graph.name = "x"}) -> (tensor<1x64x6x8xf32> {graph.name = "y"}) {
  %w = graph.constant dense<0.25> : tensor<64x1x3x3xf32>
  %y = graph.conv2d %x, %w {group = 64 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x6x8xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x6x8xf32>
  func.return %y : tensor<1x64x6x8xf32>
}

// CHECK:      sw.kernel @y
// CHECK:        sw.microkernel trip 1 (%w_t step 0) attributes {name = "depthwise.weights"} {
// CHECK-DAG:      sw.ldse r{{[0-9]+}}, 32(p0)
// CHECK-DAG:      sw.vinsf r{{[0-9]+}}, r31, 0, r30
// CHECK-DAG:      sw.vinsf r{{[0-9]+}}, r31, 3, r13
// CHECK:        }
// CHECK:        sw.microkernel trip 1 (%x_t step 32, %y_t step 32) attributes {name = "depthwise.rows"} {
// CHECK:        sw.microkernel trip 1 (%{{.*}} step 128, %{{.*}} step 128) attributes {name = "depthwise.rows"} {
// CHECK-DAG:      sw.ldse
// CHECK-DAG:      sw.vmad
// CHECK-DAG:      sw.vaddd
// CHECK-DAG:      sw.vsts
// CHECK:        sw.microkernel trip 1 (%{{.*}} step 32, %{{.*}} step 32) attributes {name = "depthwise.rows"} {
