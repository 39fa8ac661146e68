// ONNX's light SqueezeNet (opset 9, every weight a ConstantOfShape): weights become splat
// constants, fire modules become conv2d + concat, the head global_avg_pool + softmax.
// RUN: %taihu-import %onnx-light/light_squeezenet.onnx | filecheck %s
// RUN: %taihu-import %onnx-light/light_squeezenet.onnx --randomize-weights 0 | filecheck %s --check-prefix=RAND

// CHECK:      func.func @main(%{{.*}}: tensor<1x3x224x224xf32> {graph.name = "data_0"}) -> (tensor<1x1000x1x1xf32> {graph.name = "softmaxout_1"}) {
// CHECK-NEXT:   %{{.*}} = graph.constant dense<{{.*}}> : tensor<64x3x3x3xf32>
// CHECK-NEXT:   %{{.*}} = graph.constant dense<{{.*}}> : tensor<64xf32>
// CHECK-NEXT:   %{{.*}} = graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<1x64x111x111xf32>
// CHECK-NEXT:   %{{.*}} = graph.relu
// CHECK-NEXT:   %{{.*}} = graph.max_pool %{{.*}} {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<1x64x111x111xf32> -> tensor<1x64x55x55xf32>
// CHECK:        graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x64x55x55xf32>, tensor<1x64x55x55xf32>) -> tensor<1x128x55x55xf32>
// CHECK:        graph.dropout
// CHECK:        graph.global_avg_pool %{{.*}} : tensor<1x1000x13x13xf32> -> tensor<1x1000x1x1xf32>
// CHECK-NEXT:   %{{.*}} = graph.softmax %{{.*}} {axis = 1 : i64} : tensor<1x1000x1x1xf32> -> tensor<1x1000x1x1xf32>
// CHECK-NEXT:   func.return
// CHECK-NOT:  dialect_resources

// RAND:       graph.constant dense_resource<{{.*}}> : tensor<64x3x3x3xf32>
// RAND:       dialect_resources
