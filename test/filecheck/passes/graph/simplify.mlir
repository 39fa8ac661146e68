// RUN: %taihu-opt %s -p graph-simplify | filecheck %s
// RUN: %taihu-opt %s -p 'graph-simplify{dce=false}' | filecheck %s --check-prefix=NODCE

// Dropout (inference) and identity-like ops disappear.
// CHECK-LABEL: func.func @identities
// CHECK-NEXT:    %r = graph.relu %x
// CHECK-NEXT:    func.return %r
// NODCE-LABEL: func.func @identities
// NODCE:         graph.constant
func.func @identities(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %d = graph.dropout %x {ratio = 0.3 : f32} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %t = graph.transpose %d {perm = array<i64: 0, 1, 2, 3>} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = graph.pad %t {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %rs = graph.reshape %p : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %s = graph.sum %rs : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %one = graph.constant dense<1.0> : tensor<1x1x1x1xf32>
  %m = graph.mul %one, %s : (tensor<1x1x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %a = graph.sub %m, %zero : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
  %c = graph.clip %a : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %l = graph.layout_transform %c {from_layout = "NCHW", to_layout = "NCHW"} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %r = graph.relu %l : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  func.return %r : tensor<1x2x3x3xf32>
}

// Not identities: a nonzero pad, a broadcasting add of zero (result type grows), 0 - x.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %p = graph.pad %x
// CHECK-NEXT:    %zero = graph.constant
// CHECK-NEXT:    %a = graph.add %x, %zero
// CHECK-NEXT:    %s = graph.sub %zero, %x
// CHECK-NEXT:    func.return %p, %a, %s
func.func @kept(%x: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x2x3xf32>, tensor<2x2x3xf32>) {
  %p = graph.pad %x {pads = array<i64: 0, 0, 0, 1>} : tensor<2x3xf32> -> tensor<2x4xf32>
  %zero = graph.constant dense<0.0> : tensor<2x1x1xf32>
  %a = graph.add %x, %zero : (tensor<2x3xf32>, tensor<2x1x1xf32>) -> tensor<2x2x3xf32>
  %s = graph.sub %zero, %x : (tensor<2x1x1xf32>, tensor<2x3xf32>) -> tensor<2x2x3xf32>
  func.return %p, %a, %s : tensor<2x4xf32>, tensor<2x2x3xf32>, tensor<2x2x3xf32>
}

// Reshape / flatten / unsqueeze chains become one reshape (or nothing when the type returns).
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4x1xf32>
// CHECK-NEXT:    func.return %[[R]], %x
func.func @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<6x4x1xf32>, tensor<2x3x4xf32>) {
  %f = graph.flatten %x {axis = 2 : i64} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %u = graph.unsqueeze %f {axes = array<i64: 2>} : tensor<6x4xf32> -> tensor<6x4x1xf32>
  %r1 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %r2 = graph.reshape %r1 : tensor<24xf32> -> tensor<4x6xf32>
  %r3 = graph.reshape %r2 : tensor<4x6xf32> -> tensor<2x3x4xf32>
  func.return %u, %r3 : tensor<6x4x1xf32>, tensor<2x3x4xf32>
}

// transpose . transpose composes (p[i] = inner[outer[i]]); inverse pairs vanish; two
// layout_transforms stay one layout_transform.
// CHECK-LABEL: func.func @permutations
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    %[[L:.*]] = graph.layout_transform %y {from_layout = "NCHW", to_layout = "CHWN"}
// CHECK-NEXT:    func.return %[[T]], %x, %[[L]]
func.func @permutations(%x: tensor<2x3x4xf32>, %y: tensor<1x2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4x1xf32>) {
  %t1 = graph.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %t2 = graph.transpose %t1 {perm = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %i1 = graph.transpose %x : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  %i2 = graph.transpose %i1 : tensor<4x3x2xf32> -> tensor<2x3x4xf32>
  %l1 = graph.layout_transform %y {from_layout = "NCHW", to_layout = "NHWC"} : tensor<1x2x3x4xf32> -> tensor<1x3x4x2xf32>
  %l2 = graph.layout_transform %l1 {from_layout = "NHWC", to_layout = "CHWN"} : tensor<1x3x4x2xf32> -> tensor<2x3x4x1xf32>
  func.return %t2, %i2, %l2 : tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4x1xf32>
}

// Dead graph ops are erased, including whole unused chains.
// CHECK-LABEL: func.func @dead
// CHECK-NEXT:    func.return %x
// NODCE-LABEL: func.func @dead
// NODCE-NEXT:    %c = graph.constant
// NODCE-NEXT:    %a = graph.add %x, %c
// NODCE-NEXT:    %r = graph.relu %a
func.func @dead(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = graph.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = graph.relu %a : tensor<2xf32> -> tensor<2xf32>
  func.return %x : tensor<2xf32>
}
