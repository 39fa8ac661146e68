// F.normalize(q, dim=-1) as torch's dynamo exporter writes it (Inputs/normalize.onnx, opset 18;
// swin_v2_t's cosine attention): ReduceL2 = sqrt of the reduced sum of squares (the sum as a
// global average pool times the count), Expand of the computed norm = a product with a ones
// constant holding only the expanded dim (W: 1 -> 8), then the broadcasting-free Div.
// RUN: %taihu-import %S/Inputs/normalize.onnx | filecheck %s
// RUN: %taihu-import %S/Inputs/normalize.onnx | %taihu-opt | filecheck %s

// CHECK:      func.func @main(%q: tensor<2x3x16x8xf32> {graph.name = "q"}) -> (tensor<2x3x16x8xf32> {graph.name = "y"}) {
// CHECK-NEXT:   %[[SQ:.*]] = graph.mul %q, %q : (tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x16x8xf32>
// CHECK-NEXT:   %[[V:.*]] = graph.reshape %[[SQ]] : tensor<2x3x16x8xf32> -> tensor<1x96x8xf32>
// CHECK-NEXT:   %[[AVG:.*]] = graph.global_avg_pool %[[V]] : tensor<1x96x8xf32> -> tensor<1x96x1xf32>
// CHECK-NEXT:   %[[R:.*]] = graph.constant dense<8.000000e+00> : tensor<1xf32>
// CHECK-NEXT:   %[[SUM:.*]] = graph.mul %[[AVG]], %[[R]]
// CHECK-NEXT:   %[[S:.*]] = graph.reshape %[[SUM]] : tensor<1x96x1xf32> -> tensor<2x3x16x1xf32>
// CHECK-NEXT:   %n = graph.sqrt %[[S]] : tensor<2x3x16x1xf32> -> tensor<2x3x16x1xf32>
// CHECK-NEXT:   %c = graph.clip %n {min = 1.000000e-12 : f32}
// CHECK-NEXT:   %[[ONES:.*]] = graph.constant dense<1.000000e+00> : tensor<1x1x1x8xf32>
// CHECK-NEXT:   %e = graph.mul %c, %[[ONES]] : (tensor<2x3x16x1xf32>, tensor<1x1x1x8xf32>) -> tensor<2x3x16x8xf32>
// CHECK-NEXT:   %y = graph.div %q, %e
// CHECK-NEXT:   func.return %y : tensor<2x3x16x8xf32>
