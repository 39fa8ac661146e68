// Opset-9 attribute forms (Inputs/opset9_ops.onnx): Clip min/max and Pad pads/value attributes,
// AveragePool auto_pad SAME_LOWER (extra pad at the beginning), ConstantOfShape -> splat constant
// (shared by its two users), Softmax axis=2 with opset<13 coerce-to-2-D semantics
// (reshape + softmax + reshape), Dropout (ratio attr) and Identity forwarded, Unsqueeze axes attr.
// RUN: %taihu-import %S/Inputs/opset9_ops.onnx | filecheck %s
// RUN: %taihu-import %S/Inputs/opset9_ops.onnx | %taihu-opt | filecheck %s

// CHECK:      func.func @main(%x: tensor<1x2x6x6xf32> {graph.name = "x"}) -> (tensor<1x1x4x4x4xf32> {graph.name = "y"}) {
// CHECK-NEXT:   %c = graph.clip %x {min = -1.000000e+00 : f32, max = 6.000000e+00 : f32}
// CHECK-NEXT:   %p = graph.pad %c {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 5.000000e-01 : f32} : tensor<1x2x6x6xf32> -> tensor<1x2x8x8xf32>
// CHECK-NEXT:   %a = graph.avg_pool %p {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:   %l = graph.lrn %a {size = 3 : i64}
// CHECK-NEXT:   %[[K:.*]] = graph.constant dense<2.500000e-01> : tensor<1x2x4x4xf32>
// CHECK-NEXT:   %s = graph.sum %l, %[[K]], %l
// CHECK-NEXT:   %lr = graph.leaky_relu %s {alpha = 2.000000e-01 : f32}
// CHECK-NEXT:   %cat = graph.concat %lr, %[[K]] {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:   %t = graph.transpose %cat {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:   %[[R:.*]] = graph.reshape %t : tensor<1x4x4x4xf32> -> tensor<4x16xf32>
// CHECK-NEXT:   %[[SM:.*]] = graph.softmax %[[R]] {axis = 1 : i64} : tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT:   %sm = graph.reshape %[[SM]] : tensor<4x16xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:   %d = graph.dropout %sm {ratio = 3.000000e-01 : f32}
// CHECK-NEXT:   %y = graph.unsqueeze %d {axes = array<i64: 0>} : tensor<1x4x4x4xf32> -> tensor<1x1x4x4x4xf32>
// CHECK-NEXT:   func.return %y : tensor<1x1x4x4x4xf32>
