// RUN: %taihu-opt %s --split-input-file -p graph-fold-batchnorm | filecheck %s

// Guards of graph-fold-batchnorm (spec algorithms.md §M4, reproduction-targets §T10): every case
// here is refused and the IR is left exactly as it was.

// Fan-out (DO-6): the conv output also feeds the add, so batch_norm is not folded into the conv.
// CHECK-LABEL: func.func @fanout
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %c = graph.conv2d %x, %w
// CHECK-NEXT:    %s = graph.constant
// CHECK-NEXT:    %m = graph.mul %c, %s
// CHECK-NEXT:    %r = graph.add %m, %c
// CHECK-NEXT:    func.return %r
func.func @fanout(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %s = graph.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %m = graph.mul %c, %s : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.add %m, %c : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %r : tensor<1x2x3x3xf32>
}

// -----

// Padding (DO-7): y = x + 1 precedes a zero-padded conv; folding it backward would put the
// folded bias on the padded border (corner 13 instead of 8), so it is refused.
// CHECK-LABEL: func.func @do7_padded
// CHECK-NEXT:    %t = graph.constant dense<1.000000e+00>
// CHECK-NEXT:    %y = graph.add %x, %t
// CHECK-NEXT:    %w = graph.constant dense<1.000000e+00>
// CHECK-NEXT:    %c = graph.conv2d %y, %w {pads = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT:    func.return %c
func.func @do7_padded(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %t = graph.constant dense<1.0> : tensor<1x1x1x1xf32>
  %y = graph.add %x, %t : (tensor<1x1x3x3xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x3xf32>
  %w = graph.constant dense<1.0> : tensor<1x1x3x3xf32>
  %c = graph.conv2d %y, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  func.return %c : tensor<1x1x3x3xf32>
}

// -----

// Padding, batch_norm flavour: BN before a conv with only a bottom pad is refused too.
// CHECK-LABEL: func.func @bn_before_padded_conv
// CHECK:         %bn = graph.batch_norm %x
// CHECK:         %c = graph.conv2d %bn, %w {pads = array<i64: 0, 0, 1, 0>}
func.func @bn_before_padded_conv(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %one = graph.constant dense<1.0> : tensor<1xf32>
  %bn = graph.batch_norm %x, %one, %one, %one, %one : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %w = graph.constant dense<1.0> : tensor<1x1x2x1xf32>
  %c = graph.conv2d %bn, %w {pads = array<i64: 0, 0, 1, 0>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x2x2xf32>
  func.return %c : tensor<1x1x2x2xf32>
}

// -----

// Profitability (DO-4 in small): FC 8 -> 2 -> 8 would grow from 32 to 64 MACs per row.
// CHECK-LABEL: func.func @gemm_chain_grows
// CHECK-NEXT:    %w1 = graph.constant
// CHECK-NEXT:    %y1 = graph.gemm %x, %w1
// CHECK-NEXT:    %w2 = graph.constant
// CHECK-NEXT:    %y2 = graph.gemm %y1, %w2
// CHECK-NEXT:    func.return %y2
func.func @gemm_chain_grows(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %w1 = graph.constant dense<1.0> : tensor<8x2xf32>
  %y1 = graph.gemm %x, %w1 : (tensor<1x8xf32>, tensor<8x2xf32>) -> tensor<1x2xf32>
  %w2 = graph.constant dense<1.0> : tensor<2x8xf32>
  %y2 = graph.gemm %y1, %w2 : (tensor<1x2xf32>, tensor<2x8xf32>) -> tensor<1x8xf32>
  func.return %y2 : tensor<1x8xf32>
}

// -----

// dtype: in f16, 300 * 300 = 90000 overflows (max 65504): the fold is refused.
// CHECK-LABEL: func.func @f16_overflow
// CHECK-NEXT:    %w = graph.constant dense<3.000000e+02> : tensor<1x1x1x1xf16>
// CHECK-NEXT:    %c = graph.conv2d %x, %w
// CHECK-NEXT:    %s = graph.constant dense<3.000000e+02> : tensor<1x1x1x1xf16>
// CHECK-NEXT:    %m = graph.mul %c, %s
// CHECK-NEXT:    func.return %m
func.func @f16_overflow(%x: tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf16> {
  %w = graph.constant dense<300.0> : tensor<1x1x1x1xf16>
  %c = graph.conv2d %x, %w : (tensor<1x1x2x2xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x2x2xf16>
  %s = graph.constant dense<300.0> : tensor<1x1x1x1xf16>
  %m = graph.mul %c, %s : (tensor<1x1x2x2xf16>, tensor<1x1x1x1xf16>) -> tensor<1x1x2x2xf16>
  func.return %m : tensor<1x1x2x2xf16>
}

// -----

// Constants only: the BN mean is a function argument, the second conv's weight is computed.
// CHECK-LABEL: func.func @not_constant
// CHECK:         %bn = graph.batch_norm %c, %one, %one, %mean, %one
// CHECK:         %m = graph.mul %c2, %s
func.func @not_constant(%x: tensor<1x1x2x2xf32>, %mean: tensor<1xf32>, %w2: tensor<1x1x1x1xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = graph.constant dense<1.0> : tensor<1x1x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %one = graph.constant dense<1.0> : tensor<1xf32>
  %bn = graph.batch_norm %c, %one, %one, %mean, %one : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %c2 = graph.conv2d %x, %w2 : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %s = graph.constant dense<2.0> : tensor<1x1x1x1xf32>
  %m = graph.mul %c2, %s : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  func.return %bn, %m : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// -----

// Not per-channel: the scale varies along W (a (3,) vector broadcasts over the last dim), and
// an add that broadcasts the result beyond the conv output (batch 1 -> 2).
// CHECK-LABEL: func.func @not_per_channel
// CHECK:         %m = graph.mul %c, %s
// CHECK:         %a = graph.add %m, %t
func.func @not_per_channel(%x: tensor<1x2x3x3xf32>) -> tensor<2x2x3x3xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %s = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %m = graph.mul %c, %s : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
  %t = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %a = graph.add %m, %t : (tensor<1x2x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32>
  func.return %a : tensor<2x2x3x3xf32>
}

// -----

// DO-5: conv -> relu -> conv has no consecutive linear ops: unchanged (the pass does no
// unrelated dead-code elimination either: %dead stays).
// CHECK-LABEL: func.func @do5
// CHECK-NEXT:    %dead = graph.relu %x
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %c1 = graph.conv2d %x, %w
// CHECK-NEXT:    %r = graph.relu %c1
// CHECK-NEXT:    %c2 = graph.conv2d %r, %w
// CHECK-NEXT:    func.return %c2
func.func @do5(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %dead = graph.relu %x : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
  %w = graph.constant dense<1.0> : tensor<1x1x2x2xf32>
  %c1 = graph.conv2d %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x3x3xf32>
  %r = graph.relu %c1 : tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %c2 = graph.conv2d %r, %w : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %c2 : tensor<1x1x2x2xf32>
}
