// ONNX's light SqueezeNet (opset 9, conv weights are ConstantOfShape, biases initializers):
// ConstantOfShape weights become splat constants, biases dense_resource blobs, fire modules
// conv2d + concat, the head global_avg_pool + softmax. With --randomize-weights every weight is
// a dense_resource blob.
// RUN: %taihu-import %onnx-light/light_squeezenet.onnx | filecheck %s
// RUN: %taihu-import %onnx-light/light_squeezenet.onnx --randomize-weights 0 | filecheck %s --check-prefix=RAND

// CHECK:      func.func @main(%{{.*}}: tensor<1x3x224x224xf32> {graph.name = "data_0"}) -> (tensor<1x1000x1x1xf32> {graph.name = "softmaxout_1"}) {
// CHECK-NEXT:   %{{.*}} = graph.constant dense<2.000000e-02> : tensor<64x3x3x3xf32>
// CHECK-NEXT:   %{{.*}} = graph.constant dense_resource<conv1_b_0> : tensor<64xf32>
// CHECK-NEXT:   %{{.*}} = graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<1x64x111x111xf32>
// CHECK-NEXT:   %{{.*}} = graph.relu
// CHECK-NEXT:   %{{.*}} = graph.max_pool %{{.*}} {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<1x64x111x111xf32> -> tensor<1x64x55x55xf32>
// CHECK:        graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x64x55x55xf32>, tensor<1x64x55x55xf32>) -> tensor<1x128x55x55xf32>
// CHECK:        graph.dropout
// CHECK:        graph.global_avg_pool %{{.*}} : tensor<1x1000x13x13xf32> -> tensor<1x1000x1x1xf32>
// CHECK-NEXT:   %{{.*}} = graph.softmax %{{.*}} {axis = 1 : i64} : tensor<1x1000x1x1xf32> -> tensor<1x1000x1x1xf32>
// CHECK-NEXT:   func.return
// CHECK:      dialect_resources
// CHECK:        conv1_b_0: "0x04000000

// RAND:       graph.constant dense_resource<{{.*}}> : tensor<64x3x3x3xf32>
// RAND:       dialect_resources
