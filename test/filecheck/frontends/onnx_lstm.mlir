// Forward LSTM (Inputs/lstm.onnx): optional sequence_lens skipped, bias and initial state
// passed, all three results named after the ONNX outputs; Y and a MatMul+Tanh of Y_h returned.
// RUN: %taihu-import %S/Inputs/lstm.onnx | filecheck %s
// RUN: %taihu-import %S/Inputs/lstm.onnx | %taihu-opt | filecheck %s

// CHECK:      func.func @main(%x: tensor<5x2x3xf32> {graph.name = "x"}) -> (tensor<5x1x2x4xf32> {graph.name = "Y"}, tensor<1x2x2xf32> {graph.name = "out"}) {
// CHECK:        %Y, %Y_h, %Y_c = graph.lstm %x, %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<1x32xf32>) initial_h(%{{.*}} : tensor<1x2x4xf32>) initial_c(%{{.*}} : tensor<1x2x4xf32>) {hidden_size = 4 : i64}
// CHECK-SAME:     -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
// CHECK:        %mm = graph.matmul %Y_h, %{{.*}} : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
// CHECK-NEXT:   %out = graph.tanh %mm
// CHECK-NEXT:   func.return %Y, %out : tensor<5x1x2x4xf32>, tensor<1x2x2xf32>
