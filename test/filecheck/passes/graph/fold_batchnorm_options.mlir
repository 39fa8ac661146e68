// RUN: %taihu-opt %s -p 'graph-fold-batchnorm{fold-backward=false fold-gemm-chains=false}' | filecheck %s

// With both options off only forward folds (affine op after conv/gemm) remain.

// CHECK-LABEL: func.func @options
// CHECK-NEXT:    %t = graph.constant
// CHECK-NEXT:    %y = graph.add %x, %t
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %c = graph.conv2d %y, %w
// CHECK-NEXT:    %v = graph.constant
// CHECK-NEXT:    %g1 = graph.gemm %f, %v
// CHECK-NEXT:    %g2 = graph.gemm %g1, %v
// CHECK-NEXT:    func.return %c, %g2
func.func @options(%x: tensor<1x1x3x3xf32>, %f: tensor<1x2xf32>) -> (tensor<1x1x1x1xf32>, tensor<1x2xf32>) {
  %t = graph.constant dense<1.0> : tensor<1x1x1x1xf32>
  %y = graph.add %x, %t : (tensor<1x1x3x3xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x3xf32>
  %w = graph.constant dense<1.0> : tensor<1x1x3x3xf32>
  %c = graph.conv2d %y, %w : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  %v = graph.constant dense<1.0> : tensor<2x2xf32>
  %g1 = graph.gemm %f, %v : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %g2 = graph.gemm %g1, %v : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return %c, %g2 : tensor<1x1x1x1xf32>, tensor<1x2xf32>
}
