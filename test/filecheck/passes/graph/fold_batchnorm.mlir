// RUN: %taihu-opt %s -p graph-fold-batchnorm | filecheck %s
// RUN: %taihu-opt %s -p graph-fold-batchnorm,graph-simplify | filecheck %s

// Positive folds of graph-fold-batchnorm (seed 003 linear folding, spec algorithms.md §M3).
// One module (no --split-input-file): CI also runs stock `xdsl-opt -p graph-fold-batchnorm`
// on this file. The refused folds (guards) are in fold_batchnorm_guards.mlir.


builtin.module {
  // DO-2: 1x1 conv W = 2, b = 1; BN mu = 3, var = 4, eps = 0, gamma = 2, beta = 1; scale s = 3, t = -1.
// CHECK-LABEL: func.func @do2
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<6.000000e+00> : tensor<1x1x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<-4.000000e+00> : tensor<1xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %x, %[[W]], %[[B]] : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
// CHECK-NEXT:    func.return %[[C]]
  func.func @do2(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
    %w = graph.constant dense<2.0> : tensor<1x1x1x1xf32>
    %b = graph.constant dense<1.0> : tensor<1xf32>
    %c = graph.conv2d %x, %w, %b : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
    %gamma = graph.constant dense<2.0> : tensor<1xf32>
    %beta = graph.constant dense<1.0> : tensor<1xf32>
    %mean = graph.constant dense<3.0> : tensor<1xf32>
    %var = graph.constant dense<4.0> : tensor<1xf32>
    %bn = graph.batch_norm %c, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
    %s = graph.constant dense<3.0> : tensor<1x1x1x1xf32>
    %m = graph.mul %bn, %s : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
    %t = graph.constant dense<-1.0> : tensor<1x1x1x1xf32>
    %a = graph.add %m, %t : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
    func.return %a : tensor<1x1x2x2xf32>
  }

  // Per-channel BN + scale into a padded conv without bias: the bias is created.
// CHECK-LABEL: func.func @conv_no_bias
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[}}[{{\[}}[2.000000e+00]], [{{\[}}4.000000e+00]]], [{{\[}}[1.500000e+00]], [{{\[}}2.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[-1.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %x, %[[W]], %[[B]] {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT:    func.return %[[C]]
  func.func @conv_no_bias(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
    %w = graph.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>
    %c = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
    %s = graph.constant dense<[[[2.0]], [[0.5]]]> : tensor<2x1x1xf32>
    %m = graph.mul %s, %c : (tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %t = graph.constant dense<[[[[1.0]], [[-1.0]]]]> : tensor<1x2x1x1xf32>
    %a = graph.sub %m, %t : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
    func.return %a : tensor<1x2x3x3xf32>
  }

  // Gemm followed by BN over the column (channel) dim: B' = B*k per column, C' = k*beta*C + t.
// CHECK-LABEL: func.func @gemm_bn
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[}}[5.000000e-01, 2.000000e+00], [1.500000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[1.000000e+00, -3.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm %x, %[[W]], %[[B]] : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %[[G]]
  func.func @gemm_bn(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
    %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %b = graph.constant dense<[1.0, -1.0]> : tensor<2xf32>
    %g = graph.gemm %x, %w, %b {beta = 2.0 : f32} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
    %gamma = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
    %beta = graph.constant dense<[0.5, 0.0]> : tensor<2xf32>
    %mean = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
    %var = graph.constant dense<[4.0, 9.0]> : tensor<2xf32>
    %bn = graph.batch_norm %g, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
    func.return %bn : tensor<3x2xf32>
  }

  // DO-1: two consecutive FCs fold into one (003 eq. 6-7): W' = W1 W2, B' = B1 W2 + B2.
// CHECK-LABEL: func.func @do1
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [3.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[1.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm %x, %[[W]], %[[B]] : (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:    func.return %[[G]]
  func.func @do1(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
    %w1 = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %b1 = graph.constant dense<1.0> : tensor<2xf32>
    %y1 = graph.gemm %x, %w1, %b1 : (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
    %w2 = graph.constant dense<[[1.0, 0.0], [0.0, 2.0]]> : tensor<2x2xf32>
    %b2 = graph.constant dense<[0.0, 1.0]> : tensor<2xf32>
    %y2 = graph.gemm %y1, %w2, %b2 : (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
    func.return %y2 : tensor<1x2xf32>
  }

  // Backward fold into an unpadded conv: W'[m,c] = W[m,c] k_c, b'_m = b_m + sum W[m,c,h,w] t_c.
// CHECK-LABEL: func.func @backward_unpadded
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<1.000000e+00> : tensor<1x1x3x3xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<9.000000e+00> : tensor<1xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %x, %[[W]], %[[B]] : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x1x1xf32>
// CHECK-NEXT:    func.return %[[C]]
  func.func @backward_unpadded(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32> {
    %t = graph.constant dense<1.0> : tensor<1x1x1x1xf32>
    %y = graph.add %x, %t : (tensor<1x1x3x3xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x3xf32>
    %w = graph.constant dense<1.0> : tensor<1x1x3x3xf32>
    %c = graph.conv2d %y, %w : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
    func.return %c : tensor<1x1x1x1xf32>
  }

  // f16 stays f16: the fold is computed in f64 and rounded once.
// CHECK-LABEL: func.func @f16
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<6.000000e+00> : tensor<1x1x1x1xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<0.000000e+00> : tensor<1xf16>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %x, %[[W]], %[[B]] : (tensor<1x1x2x2xf16>, tensor<1x1x1x1xf16>, tensor<1xf16>) -> tensor<1x1x2x2xf16>
// CHECK-NEXT:    func.return %[[C]]
  func.func @f16(%x: tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf16> {
    %w = graph.constant dense<3.0> : tensor<1x1x1x1xf16>
    %c = graph.conv2d %x, %w : (tensor<1x1x2x2xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x2x2xf16>
    %s = graph.constant dense<0.5> : tensor<1x1x1x1xf16>
    %m = graph.div %c, %s : (tensor<1x1x2x2xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x2x2xf16>
    func.return %m : tensor<1x1x2x2xf16>
  }
}
