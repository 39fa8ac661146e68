// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s
// RUN: %taihu-opt %s -p convert-graph-to-tile | filecheck %s --check-prefix=LOWER

// graph.gru with and without its optional operands, both reset forms.

func.func @gru(%x: tensor<6x2x5xf32>, %w: tensor<1x9x5xf32>, %r: tensor<1x9x3xf32>, %h: tensor<1x2x3xf32>) -> (tensor<6x1x2x3xf32>, tensor<1x2x3xf32>) {
  %b = graph.constant dense<0.5> : tensor<1x18xf32>
  %y, %yh = graph.gru %x, %w, %r {hidden_size = 3 : i64} : (tensor<6x2x5xf32>, tensor<1x9x5xf32>, tensor<1x9x3xf32>) -> (tensor<6x1x2x3xf32>, tensor<1x2x3xf32>)
  %y1, %yh1 = graph.gru %x, %w, %r bias(%b : tensor<1x18xf32>) initial_h(%h : tensor<1x2x3xf32>) {hidden_size = 3 : i64, linear_before_reset = 1 : i64} : (tensor<6x2x5xf32>, tensor<1x9x5xf32>, tensor<1x9x3xf32>) -> (tensor<6x1x2x3xf32>, tensor<1x2x3xf32>)
  func.return %y, %yh1 : tensor<6x1x2x3xf32>, tensor<1x2x3xf32>
}

// CHECK-LABEL: func.func @gru
// CHECK:         %y, %yh = graph.gru %x, %w, %r {hidden_size = 3 : i64} : (tensor<6x2x5xf32>, tensor<1x9x5xf32>, tensor<1x9x3xf32>) -> (tensor<6x1x2x3xf32>, tensor<1x2x3xf32>)
// CHECK-NEXT:    %y1, %yh1 = graph.gru %x, %w, %r bias(%b : tensor<1x18xf32>) initial_h(%h : tensor<1x2x3xf32>) {hidden_size = 3 : i64, linear_before_reset = 1 : i64}

// The lowering: per GRU the input projection as one GEMM kernel (the constant biases folded into
// its bias row), then the recurrence kernel; linear_before_reset=0 multiplies h by r before the
// h gate's GEMM, 1 after it (with Rbh added).
// LOWER:      tile.kernel "y_x"
// LOWER-SAME:   taihu.algorithm = "gemm"
// LOWER:      tile.kernel "y"
// LOWER-SAME:   taihu.algorithm = "gru"
// LOWER:        tile.for %t = 0 to 6 step 1 name "t" {
// LOWER:          tile.gemm %h_1, %r0 -> %gz
// LOWER-NEXT:     tile.gemm %h_1, %r1 -> %gr
// LOWER:          tile.map mul ins(%gr, %h_1 {{.*}} out(%rh
// LOWER-NEXT:     tile.gemm %rh, %r2 -> %gh
// LOWER:      tile.kernel "y1_x"
// LOWER:        tile.map add ins(%c, %bias_1
// LOWER:      tile.kernel "y1"
// LOWER:          tile.gemm %h_1, %r2 -> %tmp
// LOWER-NEXT:     tile.map add ins(%tmp, %rbh_1
// LOWER-NEXT:     tile.map mul ins(%gr, %tmp
