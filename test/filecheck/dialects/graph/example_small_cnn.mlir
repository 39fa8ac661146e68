// The README's example graph program parses, verifies, round-trips (custom and generic form,
// byte-identical reprint) and runs on the numpy reference.
// RUN: %taihu-opt %examples/graph/small_cnn.mlir | filecheck %s
// RUN: %taihu-opt %examples/graph/small_cnn.mlir --print-op-generic | %taihu-opt | filecheck %s
// RUN: %taihu-opt %examples/graph/small_cnn.mlir -o %t.1.mlir
// RUN: %taihu-opt %t.1.mlir -o %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: %taihu-run %examples/graph/small_cnn.mlir --level graph | filecheck %s --check-prefix=OUT

// CHECK:      func.func @main(%image: tensor<1x3x8x8xf32> {graph.name = "image"}) -> (tensor<1x10xf32> {graph.name = "probs"}) {
// CHECK-NEXT:   %conv_w = graph.constant dense_resource<conv_w> : tensor<4x3x3x3xf32>
// CHECK-NEXT:   %conv_b = graph.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT:   %conv = graph.conv2d %image, %conv_w, %conv_b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK:        %bn = graph.batch_norm %conv, %bn_scale, %bn_bias, %bn_mean, %bn_var
// CHECK-NEXT:   %relu = graph.relu %bn : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %pool = graph.max_pool %relu {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:   %flat = graph.flatten %pool : tensor<1x4x4x4xf32> -> tensor<1x64xf32>
// CHECK-NEXT:   %fc_w = graph.constant dense_resource<fc_w> : tensor<10x64xf32>
// CHECK-NEXT:   %fc_b = graph.constant dense<[{{.*}}]> : tensor<10xf32>
// CHECK-NEXT:   %logits = graph.gemm %flat, %fc_w, %fc_b {trans_b} : (tensor<1x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<1x10xf32>
// CHECK-NEXT:   %probs = graph.softmax %logits {axis = 1 : i64} : tensor<1x10xf32> -> tensor<1x10xf32>
// CHECK-NEXT:   func.return %probs : tensor<1x10xf32>
// CHECK:      dialect_resources: {
// CHECK-NEXT:   builtin: {
// CHECK-NEXT:     conv_w: "0x04000000{{[0-9a-fA-F]+}}",fc_w: "0x04000000{{[0-9a-fA-F]+}}"

// OUT:      probs   1x10   float32    1
