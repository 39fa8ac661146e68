// RUN: %taihu-opt %s -p graph-fold-constants | filecheck %s
// RUN: %taihu-opt %s -p 'graph-fold-constants{max-elements=3}' | filecheck %s --check-prefix=LIMIT

// With max-elements=3 nothing with a 4-element result in @chain is materialised.

// Partial evaluation (seed 003): ops whose operands are all constants become constants.

// A constant subgraph transpose(reshape(c)) + splat collapses into one constant; the conv weight
// computed from constants is folded, the conv itself (runtime input) stays.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[}}[{{\[}}[2.000000e+00, 4.000000e+00], [3.000000e+00, 5.000000e+00]]]]> : tensor<1x1x2x2xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %x, %[[W]]
// CHECK-NEXT:    func.return %[[C]]
// LIMIT-LABEL: func.func @chain
// LIMIT:         graph.reshape
// LIMIT:         graph.transpose
// LIMIT:         graph.add
// LIMIT:         graph.reshape
func.func @chain(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r = graph.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  %t = graph.transpose %r {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
  %one = graph.constant dense<1.0> : tensor<2x2xf32>
  %a = graph.add %t, %one : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %w = graph.reshape %a : tensor<2x2xf32> -> tensor<1x1x2x2xf32>
  %y = graph.conv2d %x, %w : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}

// Uniform results become splats; a constant used elsewhere is kept.
// CHECK-LABEL: func.func @splat
// CHECK-NEXT:    %[[K:.*]] = graph.constant dense<2.000000e+00> : tensor<2x3xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<6.000000e+00> : tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[S]], %[[K]]
func.func @splat() -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %k = graph.constant dense<2.0> : tensor<2x3xf32>
  %three = graph.constant dense<3.0> : tensor<1x3xf32>
  %m = graph.mul %k, %three : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %m, %k : tensor<2x3xf32>, tensor<2x3xf32>
}

// Conv with a constant input and bias; batch_norm of constants; relu of a constant.
// CHECK-LABEL: func.func @conv_bn
// CHECK-NEXT:    %[[R:.*]] = graph.constant dense<[{{\[}}[{{\[}}1.000000e+01]], [{{\[}}0.000000e+00]]]]> : tensor<1x2x1x1xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @conv_bn() -> tensor<1x2x1x1xf32> {
  %x = graph.constant dense<1.0> : tensor<1x1x2x2xf32>
  %w = graph.constant dense<[[[[1.0, 1.0], [1.0, 1.0]]], [[[-1.0, -1.0], [-1.0, -1.0]]]]> : tensor<2x1x2x2xf32>
  %b = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %c = graph.conv2d %x, %w, %b : (tensor<1x1x2x2xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x1x1xf32>
  %g = graph.constant dense<2.0> : tensor<2xf32>
  %z = graph.constant dense<0.0> : tensor<2xf32>
  %v = graph.constant dense<1.0> : tensor<2xf32>
  %bn = graph.batch_norm %c, %g, %z, %z, %v {epsilon = 0.0 : f32} : (tensor<1x2x1x1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x1x1xf32>
  %r = graph.relu %bn : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xf32>
  func.return %r : tensor<1x2x1x1xf32>
}

// An op with a runtime operand is not touched.
// CHECK-LABEL: func.func @runtime
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %a = graph.add %x, %c
func.func @runtime(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = graph.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %a : tensor<2xf32>
}

// A large non-uniform result is stored as a dense_resource blob. What matters is the folded
// data: MLIR's blob format is the f32 alignment word 04000000, then the little-endian values;
// the transpose makes them 0.0, 1.0, ..., 19.0 in order (all 20, nothing else). Hex digits are
// matched case-insensitively: MLIR's parser accepts either case, and the printer's case is not
// part of the format.
// CHECK-LABEL: func.func @blob
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense_resource<[[KEY:.*]]> : tensor<5x4xf32>
// CHECK-NEXT:    func.return %[[T]]
// CHECK:         dialect_resources
// CHECK:         [[KEY]]: "{{(?i:0x04000000(00000000)(0000803f)(00000040)(00004040)(00008040)(0000a040)(0000c040)(0000e040)(00000041)(00001041)(00002041)(00003041)(00004041)(00005041)(00006041)(00007041)(00008041)(00008841)(00009041)(00009841))}}"
func.func @blob() -> tensor<5x4xf32> {
  %c = graph.constant dense<[[0.0, 4.0, 8.0, 12.0, 16.0], [1.0, 5.0, 9.0, 13.0, 17.0], [2.0, 6.0, 10.0, 14.0, 18.0], [3.0, 7.0, 11.0, 15.0, 19.0]]> : tensor<4x5xf32>
  %t = graph.transpose %c : tensor<4x5xf32> -> tensor<5x4xf32>
  func.return %t : tensor<5x4xf32>
}
