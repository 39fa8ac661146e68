// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per graph op and per distinct verifier rule; each CHECK is the exact message.

func.func @constant_missing_blob() {
  %0 = graph.constant dense_resource<nope> : tensor<2x3xf32>
  func.return
}

// CHECK: graph.constant: dense_resource<nope> has no blob in dialect_resources

// -----

func.func @constant_blob_size() {
  %0 = graph.constant dense_resource<short_blob> : tensor<2x3xf32>
  func.return
}

{-#
  dialect_resources: {
    builtin: {
      short_blob: "0x040000000000803F00000040"
    }
  }
#-}

// CHECK: graph.constant: dense_resource<short_blob> blob holds 8 bytes but tensor<2x3xf32> needs 24

// -----

func.func @conv_input_rank(%x3: tensor<3x8x8xf32>, %w4: tensor<4x3x3x3xf32>) {
  %0 = graph.conv2d %x3, %w4 : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: input must be 4-D (N, C, H, W), got rank 3

// -----

func.func @conv_weight_rank(%x4: tensor<1x3x8x8xf32>, %w3: tensor<4x3x3xf32>) {
  %0 = graph.conv2d %x4, %w3 : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: weight must be 4-D (M, C/group, kH, kW), got rank 3

// -----

func.func @conv_channels(%x4: tensor<1x3x8x8xf32>, %w4: tensor<4x4x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 : (tensor<1x3x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: input channel dim 1 (=3) must equal weight dim 1 (=4) * group (=1)

// -----

func.func @conv_group_divides_m(%x4: tensor<1x6x8x8xf32>, %w4: tensor<4x2x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {group = 3 : i64} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: weight dim 0 (=4) must be divisible by group (=3)

// -----

func.func @conv_bias_shape(%x4: tensor<1x3x8x8xf32>, %w4: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  %0 = graph.conv2d %x4, %w4, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// CHECK: graph.conv2d: bias shape [3] must be [4] (weight dim 0)

// -----

func.func @conv_strides_len(%x4: tensor<1x3x8x8xf32>, %w4: tensor<4x3x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {strides = array<i64: 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return
}

// CHECK: graph.conv2d: strides has 1 entries, expected 2

// -----

func.func @conv_negative_pads(%x4: tensor<1x3x8x8xf32>, %w4: tensor<4x3x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {pads = array<i64: 0, -1, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x5xf32>
  func.return
}

// CHECK: graph.conv2d: pads must be >= 0, got [0, -1, 0, 0]

// -----

func.func @conv_zero_dilation(%x4: tensor<1x3x8x8xf32>, %w4: tensor<4x3x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {dilations = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: dilations must be >= 1, got [0, 1]

// -----

func.func @conv_empty_output(%x4: tensor<1x3x2x8xf32>, %w4: tensor<4x3x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x0x6xf32>
  func.return
}

// CHECK: graph.conv2d: output dim 2 is empty: input dim 2 (=2) + pads (=0+0) is smaller than the dilated kernel (=3)

// -----

func.func @conv_result_dim(%x4: tensor<1x3x224x224xf32>, %w4: tensor<4x3x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x112x111xf32>
  func.return
}

// CHECK: graph.conv2d: result dim 2 is 112 but inferred 111

// -----

func.func @conv_element_type(%x4: tensor<1x3x8x8xf32>, %w4: tensor<4x3x3x3xf16>) {
  %0 = graph.conv2d %x4, %w4 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: weight element type f16 differs from input element type f32

// -----

func.func @matmul_contraction(%a: tensor<2x3x4xf32>, %b: tensor<5x6xf32>) {
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<5x6xf32>) -> tensor<2x3x6xf32>
  func.return
}

// CHECK: graph.matmul: contraction dim: lhs dim 2 (=4) must equal rhs dim 0 (=5)

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x6xf32>) {
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x6xf32>) -> tensor<2x3x6xf32>
  func.return
}

// CHECK: graph.matmul: operands are not broadcastable: result dim 0 is 2 in lhs batch dims but 3 in rhs batch dims

// -----

func.func @matmul_result(%a: tensor<4xf32>, %b: tensor<4x6xf32>) {
  %0 = graph.matmul %a, %b : (tensor<4xf32>, tensor<4x6xf32>) -> tensor<1x6xf32>
  func.return
}

// CHECK: graph.matmul: result rank is 2 but inferred 1 (tensor<6xf32>)

// -----

func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  %0 = graph.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  func.return
}

// CHECK: graph.gemm: a must be 2-D, got rank 3

// -----

func.func @gemm_contraction(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  %0 = graph.gemm %a, %b {trans_a} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return
}

// CHECK: graph.gemm: contraction dim: a dim 0 (=3) must equal b dim 0 (=4)

// -----

func.func @gemm_c_broadcast(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<3x4xf32>) {
  %0 = graph.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3x4xf32>) -> tensor<3x5xf32>
  func.return
}

// CHECK: graph.gemm: c dim 1 (=4) is not broadcastable to result dim 1 (=5)

// -----

func.func @gemm_c_rank(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<1x3x5xf32>) {
  %0 = graph.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<1x3x5xf32>) -> tensor<3x5xf32>
  func.return
}

// CHECK: graph.gemm: c must have rank <= 2, got rank 3

// -----

func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK: graph.add: operands are not broadcastable: result dim 0 is 2 in lhs but 4 in rhs

// -----

func.func @sub_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf64>) {
  %0 = graph.sub %a, %b : (tensor<2x3xf32>, tensor<2x3xf64>) -> tensor<2x3xf32>
  func.return
}

// CHECK: graph.sub: rhs element type f64 differs from lhs element type f32

// -----

func.func @mul_result(%a: tensor<2x1xf32>, %b: tensor<1x3xf32>) {
  %0 = graph.mul %a, %b : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x1xf32>
  func.return
}

// CHECK: graph.mul: result dim 1 is 1 but inferred 3

// -----

func.func @div_integer(%a: tensor<2xi32>, %b: tensor<2xi32>) {
  %0 = graph.div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return
}

// CHECK: graph.div: lhs element type must be f16, f32 or f64, got i32

// -----

func.func @sum_empty() {
  %0 = graph.sum : () -> tensor<2xf32>
  func.return
}

// CHECK: graph.sum: expects at least one input

// -----

func.func @sum_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>) {
  %0 = graph.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// CHECK: graph.sum: operands are not broadcastable: result dim 1 is 3 in input #0 but 2 in input #2

// -----

func.func @relu_integer(%a: tensor<4xi64>) {
  %0 = graph.relu %a : tensor<4xi64> -> tensor<4xi64>
  func.return
}

// CHECK: graph.relu: input element type must be f16, f32 or f64, got i64

// -----

func.func @sigmoid_result_rank(%a: tensor<4x2xf32>) {
  %0 = graph.sigmoid %a : tensor<4x2xf32> -> tensor<8xf32>
  func.return
}

// CHECK: graph.sigmoid: result rank is 1 but inferred 2 (tensor<4x2xf32>)

// -----

func.func @tanh_dynamic(%a: tensor<?x4xf32>) {
  %0 = graph.tanh %a : tensor<?x4xf32> -> tensor<?x4xf32>
  func.return
}

// CHECK: graph.tanh: input must have a static shape, got tensor<?x4xf32>

// -----

func.func @clip_bounds(%a: tensor<4xf32>) {
  %0 = graph.clip %a {min = 6.000000e+00 : f32, max = 0.000000e+00 : f32} : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// CHECK: graph.clip: min (=6.0) must be <= max (=0.0)

// -----

func.func @leaky_relu_result_type(%a: tensor<4xf32>) {
  %0 = graph.leaky_relu %a : tensor<4xf32> -> tensor<4xf16>
  func.return
}

// CHECK: graph.leaky_relu: result element type f16 but inferred f32

// -----

func.func @dropout_ratio(%a: tensor<4xf32>) {
  %0 = graph.dropout %a {ratio = 1.000000e+00 : f32} : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// CHECK: graph.dropout: ratio (=1.0) must be in [0, 1)

// -----

func.func @max_pool_rank(%a: tensor<1x8x8xf32>) {
  %0 = graph.max_pool %a {kernel_shape = array<i64: 3, 3>} : tensor<1x8x8xf32> -> tensor<1x8x6xf32>
  func.return
}

// CHECK: graph.max_pool: input rank 3 must be 2 + kernel_shape rank (2) (N, C, spatial...)

// -----

func.func @max_pool_pads(%a: tensor<1x1x8x8xf32>) {
  %0 = graph.max_pool %a {kernel_shape = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>} : tensor<1x1x8x8xf32> -> tensor<1x1x9x7xf32>
  func.return
}

// CHECK: graph.max_pool: pads of spatial dim 2 (=2, 0) must be smaller than the kernel (=2)

// -----

func.func @max_pool_strides_len(%a: tensor<1x1x8x8xf32>) {
  %0 = graph.max_pool %a {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2, 2>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  func.return
}

// CHECK: graph.max_pool: strides has 3 entries, expected 2

// -----

func.func @max_pool_kernel_zero(%a: tensor<1x1x8x8xf32>) {
  %0 = graph.max_pool %a {kernel_shape = array<i64: 0, 2>} : tensor<1x1x8x8xf32> -> tensor<1x1x8x7xf32>
  func.return
}

// CHECK: graph.max_pool: kernel_shape entries must be >= 1, got [0, 2]

// -----

func.func @max_pool_ceil_result(%a: tensor<1x1x112x112xf32>) {
  %0 = graph.max_pool %a {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<1x1x112x112xf32> -> tensor<1x1x56x56xf32>
  func.return
}

// CHECK: graph.max_pool: result dim 2 is 56 but inferred 55

// -----

func.func @avg_pool_empty(%a: tensor<1x1x4x8xf32>) {
  %0 = graph.avg_pool %a {kernel_shape = array<i64: 5, 5>} : tensor<1x1x4x8xf32> -> tensor<1x1x0x4xf32>
  func.return
}

// CHECK: graph.avg_pool: output dim 2 is empty: input dim 2 (=4) + pads (=0+0) is smaller than the dilated kernel (=5)

// -----

func.func @avg_pool_result(%a: tensor<1x2x5xf32>) {
  %0 = graph.avg_pool %a {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 1, 1>, ceil_mode} : tensor<1x2x5xf32> -> tensor<1x2x4xf32>
  func.return
}

// CHECK: graph.avg_pool: result dim 2 is 4 but inferred 3

// -----

func.func @global_avg_pool_rank(%a: tensor<2x3xf32>) {
  %0 = graph.global_avg_pool %a : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// CHECK: graph.global_avg_pool: input must have rank >= 3 (N, C, spatial...), got 2

// -----

func.func @global_avg_pool_result(%a: tensor<1x8x7x7xf32>) {
  %0 = graph.global_avg_pool %a : tensor<1x8x7x7xf32> -> tensor<1x8x1xf32>
  func.return
}

// CHECK: graph.global_avg_pool: result rank is 3 but inferred 4 (tensor<1x8x1x1xf32>)

// -----

func.func @batch_norm_channels(%x: tensor<1x4x2x2xf32>, %s: tensor<4xf32>, %v: tensor<3xf32>) {
  %0 = graph.batch_norm %x, %s, %s, %s, %v : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<1x4x2x2xf32>
  func.return
}

// CHECK: graph.batch_norm: var shape [3] must be [4] (input channel dim 1)

// -----

func.func @lrn_size(%a: tensor<1x4x2x2xf32>) {
  %0 = graph.lrn %a {size = 0 : i64} : tensor<1x4x2x2xf32> -> tensor<1x4x2x2xf32>
  func.return
}

// CHECK: graph.lrn: size must be >= 1, got 0

// -----

func.func @softmax_axis(%a: tensor<3x7xf32>) {
  %0 = graph.softmax %a {axis = 2 : i64} : tensor<3x7xf32> -> tensor<3x7xf32>
  func.return
}

// CHECK: graph.softmax: axis 2 is out of range for rank 2

// -----

func.func @concat_axis(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %0 = graph.concat %a, %b {axis = 3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}

// CHECK: graph.concat: axis 3 is out of range for rank 2

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  func.return
}

// CHECK: graph.concat: input #1 has rank 3, input #0 has rank 2

// -----

func.func @concat_dim(%a: tensor<2x3xf32>, %b: tensor<5x4xf32>) {
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<7x3xf32>
  func.return
}

// CHECK: graph.concat: input #1 dim 1 (=4) must equal input #0 dim 1 (=3)

// -----

func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x6xf32>
  func.return
}

// CHECK: graph.concat: result dim 1 is 6 but inferred 7

// -----

func.func @reshape_count(%a: tensor<2x3x4xf32>) {
  %0 = graph.reshape %a : tensor<2x3x4xf32> -> tensor<5x5xf32>
  func.return
}

// CHECK: graph.reshape: result has 25 elements ([5, 5]) but input has 24 ([2, 3, 4])

// -----

func.func @reshape_element_type(%a: tensor<2x3xf32>) {
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<6xf16>
  func.return
}

// CHECK: graph.reshape: result element type f16 differs from input f32

// -----

func.func @flatten_axis(%a: tensor<2x3x4xf32>) {
  %0 = graph.flatten %a {axis = 4 : i64} : tensor<2x3x4xf32> -> tensor<24x1xf32>
  func.return
}

// CHECK: graph.flatten: axis 4 is out of range [-3, 3]

// -----

func.func @flatten_result(%a: tensor<2x3x4xf32>) {
  %0 = graph.flatten %a : tensor<2x3x4xf32> -> tensor<6x4xf32>
  func.return
}

// CHECK: graph.flatten: result dim 0 is 6 but inferred 2

// -----

func.func @transpose_perm(%a: tensor<2x3x4xf32>) {
  %0 = graph.transpose %a {perm = array<i64: 0, 0, 1>} : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
  func.return
}

// CHECK: graph.transpose: perm [0, 0, 1] is not a permutation of 0..2

// -----

func.func @transpose_result(%a: tensor<2x3x4xf32>) {
  %0 = graph.transpose %a : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return
}

// CHECK: graph.transpose: result dim 0 is 2 but inferred 4

// -----

func.func @unsqueeze_duplicate(%a: tensor<4xf32>) {
  %0 = graph.unsqueeze %a {axes = array<i64: 0, -3>} : tensor<4xf32> -> tensor<1x1x4xf32>
  func.return
}

// CHECK: graph.unsqueeze: axes [0, -3] contain duplicates

// -----

func.func @unsqueeze_range(%a: tensor<4xf32>) {
  %0 = graph.unsqueeze %a {axes = array<i64: 3>} : tensor<4xf32> -> tensor<4x1xf32>
  func.return
}

// CHECK: graph.unsqueeze: axes entry 3 is out of range for rank 2

// -----

func.func @pad_count(%a: tensor<2x3xf32>) {
  %0 = graph.pad %a {pads = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
  func.return
}

// CHECK: graph.pad: pads has 2 entries, expected 4 (2 * rank)

// -----

func.func @pad_negative(%a: tensor<2x3xf32>) {
  %0 = graph.pad %a {pads = array<i64: 0, -2, 0, -2>} : tensor<2x3xf32> -> tensor<2x0xf32>
  func.return
}

// CHECK: graph.pad: dim 1 (=3) padded by -2+-2 would be negative

// -----

func.func @pad_result(%a: tensor<2x3xf32>) {
  %0 = graph.pad %a {pads = array<i64: 1, 0, 1, 0>} : tensor<2x3xf32> -> tensor<3x3xf32>
  func.return
}

// CHECK: graph.pad: result dim 0 is 3 but inferred 4

// -----

func.func @layout_letters(%a: tensor<1x2x3x4xf32>) {
  %0 = graph.layout_transform %a {from_layout = "NCHW", to_layout = "NHWD"} : tensor<1x2x3x4xf32> -> tensor<1x3x4x2xf32>
  func.return
}

// CHECK: graph.layout_transform: layouts "NCHW" and "NHWD" have different dimension letters

// -----

func.func @layout_repeated(%a: tensor<1x2x3x4xf32>) {
  %0 = graph.layout_transform %a {from_layout = "NCHH", to_layout = "NHCH"} : tensor<1x2x3x4xf32> -> tensor<1x3x2x4xf32>
  func.return
}

// CHECK: graph.layout_transform: from_layout "NCHH" must be distinct dimension letters

// -----

func.func @layout_rank(%a: tensor<2x3x4xf32>) {
  %0 = graph.layout_transform %a {from_layout = "NCHW", to_layout = "NHWC"} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return
}

// CHECK: graph.layout_transform: layout "NCHW" has 4 dims, input has rank 3

// -----

func.func @layout_result(%a: tensor<1x2x3x4xf32>) {
  %0 = graph.layout_transform %a {from_layout = "NCHW", to_layout = "NHWC"} : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  func.return
}

// CHECK: graph.layout_transform: result dim 1 is 2 but inferred 3

// -----

func.func @lstm_x_rank(%x: tensor<7x5xf32>, %w: tensor<1x12x5xf32>, %r: tensor<1x12x3xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 3 : i64} : (tensor<7x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.lstm: x must be 3-D (seq, batch, input), got rank 2

// -----

func.func @lstm_w_dim(%x: tensor<7x2x5xf32>, %w: tensor<1x16x5xf32>, %r: tensor<1x12x3xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x16x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.lstm: w dim 1 is 16, expected 12 (shape [1, 12, 5])

// -----

func.func @lstm_r_dim(%x: tensor<7x2x5xf32>, %w: tensor<1x12x5xf32>, %r: tensor<1x12x4xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x4xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.lstm: r dim 2 is 4, expected 3 (shape [1, 12, 3])

// -----

func.func @lstm_bias_rank(%x: tensor<7x2x5xf32>, %w: tensor<1x12x5xf32>, %r: tensor<1x12x3xf32>, %b: tensor<24xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r bias(%b : tensor<24xf32>) {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.lstm: b must have rank 2 [1, 24], got [24]

// -----

func.func @lstm_initial_h_batch(%x: tensor<7x2x5xf32>, %w: tensor<1x12x5xf32>, %r: tensor<1x12x3xf32>, %h: tensor<1x3x3xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r initial_h(%h : tensor<1x3x3xf32>) {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.lstm: initial_h dim 1 is 3, expected 2 (shape [1, 2, 3])

// -----

func.func @lstm_hidden_size(%x: tensor<7x2x5xf32>, %w: tensor<1x0x5xf32>, %r: tensor<1x0x0xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 0 : i64} : (tensor<7x2x5xf32>, tensor<1x0x5xf32>, tensor<1x0x0xf32>) -> (tensor<7x1x2x0xf32>, tensor<1x2x0xf32>, tensor<1x2x0xf32>)
  func.return
}

// CHECK: graph.lstm: hidden_size must be >= 1, got 0

// -----

func.func @lstm_result_y(%x: tensor<7x2x5xf32>, %w: tensor<1x12x5xf32>, %r: tensor<1x12x3xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.lstm: result y rank is 3 but inferred 4 (tensor<7x1x2x3xf32>)

// -----

func.func @lstm_result_y_c(%x: tensor<7x2x5xf32>, %w: tensor<1x12x5xf32>, %r: tensor<1x12x3xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x4xf32>)
  func.return
}

// CHECK: graph.lstm: result y_c dim 2 is 4 but inferred 3

// -----

// Rules on attribute counts and ranges, operand ranks, and the result shape of ops whose
// other cases above test other rules.

func.func @conv_group_positive(%x4: tensor<1x4x8x8xf32>, %w4: tensor<4x4x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {group = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: group must be >= 1, got 0

// -----

func.func @conv_pads_count(%x4: tensor<1x4x8x8xf32>, %w4: tensor<4x4x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {pads = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// CHECK: graph.conv2d: pads has 2 entries, expected 4

// -----

func.func @conv_dilations_count(%x4: tensor<1x4x8x8xf32>, %w4: tensor<4x4x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {dilations = array<i64: 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: dilations has 3 entries, expected 2

// -----

func.func @conv_strides_positive(%x4: tensor<1x4x8x8xf32>, %w4: tensor<4x4x3x3xf32>) {
  %0 = graph.conv2d %x4, %w4 {strides = array<i64: 0, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// CHECK: graph.conv2d: strides must be >= 1, got [0, 1]

// -----

func.func @max_pool_kernel_count(%a: tensor<1x4x8x8xf32>) {
  %0 = graph.max_pool %a {kernel_shape = array<i64: 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x7x7xf32>
  func.return
}

// CHECK: graph.max_pool: input rank 4 must be 2 + kernel_shape rank (1) (N, C, spatial...)

// -----

func.func @avg_pool_pads_count(%a: tensor<1x4x8x8xf32>) {
  %0 = graph.avg_pool %a {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0>} : tensor<1x4x8x8xf32> -> tensor<1x4x7x7xf32>
  func.return
}

// CHECK: graph.avg_pool: pads has 3 entries, expected 4

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<f32>
  func.return
}

// CHECK: graph.matmul: operands must have rank >= 1

// -----

func.func @gemm_b_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %0 = graph.gemm %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  func.return
}

// CHECK: graph.gemm: b must be 2-D, got rank 1

// -----

func.func @batch_norm_rank(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  %0 = graph.batch_norm %x, %s, %s, %s, %s : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// CHECK: graph.batch_norm: input must have rank >= 2 (N, C, ...), got 1

// -----

func.func @lrn_rank(%a: tensor<4xf32>) {
  %0 = graph.lrn %a {size = 3 : i64} : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// CHECK: graph.lrn: input must have rank >= 2 (N, C, ...), got 1

// -----

func.func @softmax_rank(%a: tensor<f32>) {
  %0 = graph.softmax %a : tensor<f32> -> tensor<f32>
  func.return
}

// CHECK: graph.softmax: input must have rank >= 1

// -----

func.func @concat_empty() {
  %0 = "graph.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  func.return
}

// CHECK: graph.concat: expects at least one input

// -----

func.func @leaky_relu_result_shape(%a: tensor<2x3xf32>) {
  %0 = graph.leaky_relu %a {alpha = 0.2 : f32} : tensor<2x3xf32> -> tensor<2x4xf32>
  func.return
}

// CHECK: graph.leaky_relu: result dim 1 is 4 but inferred 3

// -----

func.func @dropout_result_shape(%a: tensor<2x3xf32>) {
  %0 = graph.dropout %a : tensor<2x3xf32> -> tensor<3x3xf32>
  func.return
}

// CHECK: graph.dropout: result dim 0 is 3 but inferred 2

// -----

func.func @lrn_result_shape(%a: tensor<1x4x2x2xf32>) {
  %0 = graph.lrn %a {size = 3 : i64} : tensor<1x4x2x2xf32> -> tensor<1x4x2x3xf32>
  func.return
}

// CHECK: graph.lrn: result dim 3 is 3 but inferred 2

// -----

func.func @softmax_result_shape(%a: tensor<3x7xf32>) {
  %0 = graph.softmax %a : tensor<3x7xf32> -> tensor<3x8xf32>
  func.return
}

// CHECK: graph.softmax: result dim 1 is 8 but inferred 7

// -----

func.func @batch_norm_result_shape(%x: tensor<1x4x2x2xf32>, %s: tensor<4xf32>) {
  %0 = graph.batch_norm %x, %s, %s, %s, %s : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x1xf32>
  func.return
}

// CHECK: graph.batch_norm: result dim 3 is 1 but inferred 2

// -----

func.func @clip_result_shape(%a: tensor<2x3xf32>) {
  %0 = graph.clip %a {min = 0.0 : f32} : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// CHECK: graph.clip: result rank is 1 but inferred 2 (tensor<2x3xf32>)

// -----

func.func @unsqueeze_result_shape(%a: tensor<2x3xf32>) {
  %0 = graph.unsqueeze %a {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<2x1x3xf32>
  func.return
}

// CHECK: graph.unsqueeze: result dim 0 is 2 but inferred 1

// -----

func.func @gemm_result_shape(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %0 = graph.gemm %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x5xf32>
  func.return
}

// CHECK: graph.gemm: result dim 1 is 5 but inferred 4

// -----

func.func @gru_reset(%x: tensor<6x2x5xf32>, %w: tensor<1x9x5xf32>, %r: tensor<1x9x3xf32>) {
  %y, %yh = graph.gru %x, %w, %r {hidden_size = 3 : i64, linear_before_reset = 2 : i64} : (tensor<6x2x5xf32>, tensor<1x9x5xf32>, tensor<1x9x3xf32>) -> (tensor<6x1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.gru: linear_before_reset must be 0 or 1, got 2

// -----

func.func @gru_r_shape(%x: tensor<6x2x5xf32>, %w: tensor<1x9x5xf32>, %r: tensor<1x9x4xf32>) {
  %y, %yh = graph.gru %x, %w, %r {hidden_size = 3 : i64} : (tensor<6x2x5xf32>, tensor<1x9x5xf32>, tensor<1x9x4xf32>) -> (tensor<6x1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK: graph.gru: r dim 2 is 4, expected 3 (shape [1, 9, 3])
