// RUN: %taihu-opt %s -p 'set-target,graph-group' | filecheck %s
// RUN: %taihu-opt %s -p 'set-target,graph-group' | %taihu-opt -p graph-group | filecheck %s

// GT-6 (seed 002 L125-129): a ResNet conv block (main path of 3 conv-bn[-relu] layers, the
// shortcut conv-bn, add-relu) and an identity block (3 layers, add-relu), equal split factors:
// straight merges give {main path}, {shortcut}, {add, relu}, {3 convs}, {add, relu}; the branch
// and straight merges then leave one group. 9 layers (5 + 4), each anchored at its conv or, for
// add-relu, at the relu. The annotations round-trip: the second run line re-runs the pass on
// the printed output and checks the same text.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    attributes {taihu.order = "dfs", taihu.instances = ["g0.0"]}
// CHECK:         graph.conv2d %x, %w1 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 0 : i64, taihu.anchor}
// CHECK-NEXT:    graph.batch_norm %c3, {{.*}} {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 0 : i64}
// CHECK-NEXT:    graph.relu %b4 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 0 : i64}
// CHECK:         graph.conv2d %r5, %w6 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 1 : i64, taihu.anchor
// CHECK:         graph.conv2d %r10, %w11 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 2 : i64, taihu.anchor}
// CHECK:         graph.conv2d %x, %w15 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 3 : i64, taihu.anchor}
// CHECK:         %a19 = graph.add %b14, %b18 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 4 : i64}
// CHECK-NEXT:    %r20 = graph.relu %a19 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 4 : i64, taihu.anchor}
// CHECK:         graph.conv2d %r20, %w21 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 5 : i64, taihu.anchor}
// CHECK:         graph.conv2d %r25, %w26 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 6 : i64, taihu.anchor
// CHECK:         graph.conv2d %r30, %w31 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 7 : i64, taihu.anchor}
// CHECK:         %a35 = graph.add %b34, %r20 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 8 : i64}
// CHECK-NEXT:    %r36 = graph.relu %a35 {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 8 : i64, taihu.anchor}
// CHECK-NOT:     taihu.group = 1
func.func @main(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w1 = graph.constant dense<0.5> : tensor<4x8x1x1xf32>
  %s2 = graph.constant dense<1.0> : tensor<4xf32>
  %c3 = graph.conv2d %x, %w1 {pads = array<i64: 0, 0, 0, 0>} : (tensor<1x8x8x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x8x8xf32>
  %b4 = graph.batch_norm %c3, %s2, %s2, %s2, %s2 : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r5 = graph.relu %b4 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %w6 = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %s7 = graph.constant dense<1.0> : tensor<4xf32>
  %c8 = graph.conv2d %r5, %w6 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %b9 = graph.batch_norm %c8, %s7, %s7, %s7, %s7 : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r10 = graph.relu %b9 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %w11 = graph.constant dense<0.5> : tensor<8x4x1x1xf32>
  %s12 = graph.constant dense<1.0> : tensor<8xf32>
  %c13 = graph.conv2d %r10, %w11 {pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x8x8xf32>
  %b14 = graph.batch_norm %c13, %s12, %s12, %s12, %s12 : (tensor<1x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %w15 = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %s16 = graph.constant dense<1.0> : tensor<8xf32>
  %c17 = graph.conv2d %x, %w15 {pads = array<i64: 0, 0, 0, 0>} : (tensor<1x8x8x8xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x8x8xf32>
  %b18 = graph.batch_norm %c17, %s16, %s16, %s16, %s16 : (tensor<1x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %a19 = graph.add %b14, %b18 : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r20 = graph.relu %a19 : tensor<1x8x8x8xf32> -> tensor<1x8x8x8xf32>
  %w21 = graph.constant dense<0.5> : tensor<4x8x1x1xf32>
  %s22 = graph.constant dense<1.0> : tensor<4xf32>
  %c23 = graph.conv2d %r20, %w21 {pads = array<i64: 0, 0, 0, 0>} : (tensor<1x8x8x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x8x8xf32>
  %b24 = graph.batch_norm %c23, %s22, %s22, %s22, %s22 : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r25 = graph.relu %b24 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %w26 = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %s27 = graph.constant dense<1.0> : tensor<4xf32>
  %c28 = graph.conv2d %r25, %w26 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %b29 = graph.batch_norm %c28, %s27, %s27, %s27, %s27 : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r30 = graph.relu %b29 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %w31 = graph.constant dense<0.5> : tensor<8x4x1x1xf32>
  %s32 = graph.constant dense<1.0> : tensor<8xf32>
  %c33 = graph.conv2d %r30, %w31 {pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x8x8xf32>
  %b34 = graph.batch_norm %c33, %s32, %s32, %s32, %s32 : (tensor<1x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %a35 = graph.add %b34, %r20 : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r36 = graph.relu %a35 : tensor<1x8x8x8xf32> -> tensor<1x8x8x8xf32>
  func.return %r36 : tensor<1x8x8x8xf32>
}
