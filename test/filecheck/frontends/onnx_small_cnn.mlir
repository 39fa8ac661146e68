// Import of a small opset-13 CNN (Inputs/small_cnn.onnx, made by Inputs/make_inputs.py):
// initializers become graph.constant (inline, splat or dense_resource), auto_pad SAME_UPPER is
// resolved to explicit pads, Reshape's constant shape [0, -1] is resolved statically.
// The printed module parses back (dialect_resources section included).
// RUN: %taihu-import %S/Inputs/small_cnn.onnx | filecheck %s
// RUN: %taihu-import %S/Inputs/small_cnn.onnx | %taihu-opt | filecheck %s
// RUN: %taihu-import %S/Inputs/small_cnn.onnx -o %t.mlir && filecheck %s < %t.mlir

// CHECK:      func.func @main(%x: tensor<1x3x8x8xf32> {graph.name = "x"}) -> (tensor<1x10xf32> {graph.name = "y"}) {
// CHECK-NEXT:   %[[W:.*]] = graph.constant dense_resource<w> : tensor<4x3x3x3xf32>
// CHECK-NEXT:   %[[B:.*]] = graph.constant dense<[{{.*}}]> : tensor<4xf32>
// CHECK-NEXT:   %c = graph.conv2d %x, %[[W]], %[[B]] {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:   %[[S:.*]] = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:   %[[BB:.*]] = graph.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:        %n = graph.batch_norm %c, %[[S]], %[[BB]], %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f32}
// CHECK-NEXT:   %r = graph.relu %n
// CHECK-NEXT:   %p = graph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x4x4x4xf32> -> tensor<1x4x2x2xf32>
// CHECK-NEXT:   %f = graph.reshape %p : tensor<1x4x2x2xf32> -> tensor<1x16xf32>
// CHECK-NEXT:   %[[FW:.*]] = graph.constant dense_resource<fc_w> : tensor<10x16xf32>
// CHECK-NEXT:   %[[FB:.*]] = graph.constant dense<[{{.*}}]> : tensor<10xf32>
// CHECK-NEXT:   %g = graph.gemm %f, %[[FW]], %[[FB]] {trans_b} : (tensor<1x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<1x10xf32>
// CHECK-NEXT:   %y = graph.softmax %g {axis = 1 : i64} : tensor<1x10xf32> -> tensor<1x10xf32>
// CHECK-NEXT:   func.return %y : tensor<1x10xf32>
// CHECK:      dialect_resources: {
// CHECK-NEXT:   builtin: {
// CHECK-NEXT:     fc_w: "0x04000000{{[0-9A-Fa-f]+}}",
// CHECK-SAME:     w: "0x04000000{{[0-9A-Fa-f]+}}"

// --name renames the function; --print-op-generic prints the generic form.
// RUN: %taihu-import %S/Inputs/small_cnn.onnx --name net --print-op-generic | filecheck %s --check-prefix=GEN
// GEN: "func.func"() <{sym_name = "net", function_type = (tensor<1x3x8x8xf32>) -> tensor<1x10xf32>, arg_attrs = [{graph.name = "x"}], res_attrs = [{graph.name = "y"}]}>
// GEN: "graph.conv2d"(
