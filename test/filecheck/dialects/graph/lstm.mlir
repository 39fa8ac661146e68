// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s
// RUN: TAIHU_GENERIC_ROUNDTRIP

// graph.lstm with every combination class of optional operands (segment sizes in the generic form).

func.func @lstm(%x: tensor<7x2x5xf32>, %w: tensor<1x12x5xf32>, %r: tensor<1x12x3xf32>, %b: tensor<1x24xf32>, %h: tensor<1x2x3xf32>, %c: tensor<1x2x3xf32>) {
  %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  %y1, %yh1, %yc1 = graph.lstm %x, %w, %r bias(%b : tensor<1x24xf32>) initial_h(%h : tensor<1x2x3xf32>) initial_c(%c : tensor<1x2x3xf32>) {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  %y2, %yh2, %yc2 = graph.lstm %x, %w, %r initial_c(%yc1 : tensor<1x2x3xf32>) {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
  func.return
}

// CHECK-LABEL: func.func @lstm
// CHECK-NEXT:    %y, %yh, %yc = graph.lstm %x, %w, %r {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
// CHECK-NEXT:    %y1, %yh1, %yc1 = graph.lstm %x, %w, %r bias(%b : tensor<1x24xf32>) initial_h(%h : tensor<1x2x3xf32>) initial_c(%c : tensor<1x2x3xf32>) {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)
// CHECK-NEXT:    %y2, %yh2, %yc2 = graph.lstm %x, %w, %r initial_c(%yc1 : tensor<1x2x3xf32>) {hidden_size = 3 : i64} : (tensor<7x2x5xf32>, tensor<1x12x5xf32>, tensor<1x12x3xf32>) -> (tensor<7x1x2x3xf32>, tensor<1x2x3xf32>, tensor<1x2x3xf32>)

// CHECK-GENERIC: "graph.lstm"(%x, %w, %r) <{hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}>
// CHECK-GENERIC: "graph.lstm"(%x, %w, %r, %b, %h, %c) <{hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>}>
// CHECK-GENERIC: "graph.lstm"(%x, %w, %r, %yc1) <{hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>}>
