// taihu-run on a graph-dialect file and on a shipped light ONNX model: output table and errors.
// RUN: %taihu-run %s --level graph --seed 3 | filecheck %s
// RUN: %taihu-run %s --level graph --quiet | filecheck %s --allow-empty --check-prefix=QUIET
// RUN: %taihu-run %onnx-light/light_bvlc_alexnet.onnx --level graph | filecheck %s --check-prefix=ALEXNET
// RUN: not %taihu-run %S/does-not-exist.onnx 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not %taihu-run --example lenet 2>&1 | filecheck %s --check-prefix=EXAMPLE

// CHECK:      run.mlir at level graph: 3 output(s) in {{[0-9.]+}} s
// CHECK-NEXT: output  shape  dtype    sum      l2
// CHECK-NEXT: relu    2x3    float32    9  5.91608
// CHECK-NEXT: zero    3x2    float32    0        0
// CHECK-NEXT: out2    2      float32  0.5  0.519287

// QUIET-NOT: {{.}}

// ALEXNET:      light_bvlc_alexnet.onnx at level graph: 1 output(s) in {{[0-9.]+}} s
// ALEXNET-NEXT: output  shape   dtype    sum         l2
// ALEXNET-NEXT: prob_1  1x1000  float32    1  0.0316228

// MISSING: taihu-run: error: no such file: {{.*}}does-not-exist.onnx
// EXAMPLE: taihu-run: error: unknown example 'lenet' (choose from resnet50, vgg19, alexnet, squeezenet, inception_v1)

func.func @main(%x: tensor<3x2xf32> {graph.name = "x"}) -> (tensor<2x3xf32> {graph.name = "relu"}, tensor<3x2xf32> {graph.name = "zero"}, tensor<2xf32>) {
  %c = graph.constant dense<[[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]> : tensor<2x3xf32>
  %r = graph.relu %c : tensor<2x3xf32> -> tensor<2x3xf32>
  %z = graph.sub %x, %x : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %h = graph.constant dense<[0.75, -0.25]> : tensor<2xf32>
  %s = graph.softmax %h : tensor<2xf32> -> tensor<2xf32>
  %d = graph.sub %s, %h : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r, %z, %d : tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>
}
