// RUN: %taihu-opt %s -p graph-group | filecheck %s

// GT-4's merge patterns (seed 002 L117; the LB is large, so every op's BestSplit factor is 1 and
// rules (i)/(ii) accept every merge).

// Straight: b -> d (sole producer / sole consumer) is one group; the fan-out a -> b, a -> c is
// no straight pattern, so a, {b, d} and c stay apart.
// CHECK-LABEL: func.func @straight
// CHECK-SAME:    attributes {taihu.order = "dfs", taihu.instances = ["g0.0", "g2.0", "g1.0"]}
// CHECK-NEXT:    %a = graph.relu %x {taihu.group = 0 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 0 : i64, taihu.anchor}
// CHECK-NEXT:    %b = graph.sigmoid %a {taihu.group = 1 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 1 : i64}
// CHECK-NEXT:    %c = graph.tanh %a {taihu.group = 2 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 2 : i64, taihu.anchor}
// CHECK-NEXT:    %d = graph.sqrt %b {taihu.group = 1 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 1 : i64, taihu.anchor}
func.func @straight(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %a = graph.relu %x : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %b = graph.sigmoid %a : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %c = graph.tanh %a : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %d = graph.sqrt %b : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  func.return %d, %c : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// Diamond a -> b, a -> c, b -> d, c -> d merges {b, c, d}; a also feeds e, so it stays apart.
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %a = graph.relu %x {taihu.group = 0 : i64
// CHECK-NEXT:    %b = graph.sigmoid %a {taihu.group = 1 : i64
// CHECK-NEXT:    %c = graph.tanh %a {taihu.group = 1 : i64
// CHECK-NEXT:    %d = graph.add %b, %c {taihu.group = 1 : i64
// CHECK-NEXT:    %e = graph.sqrt %a {taihu.group = 2 : i64
func.func @diamond(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %a = graph.relu %x : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %b = graph.sigmoid %a : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %c = graph.tanh %a : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %d = graph.add %b, %c : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %e = graph.sqrt %a : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  func.return %d, %e : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// Branch X -> conv -> add, X -> add merges {conv, add} (the conv is its layer's anchor); X also
// feeds e, so it stays apart. The weight (a graph.constant) belongs to no group.
// CHECK-LABEL: func.func @branch
// CHECK-NEXT:    %X = graph.relu %x {taihu.group = 0 : i64
// CHECK-NEXT:    %w = graph.constant dense<5.000000e-01> : tensor<8x8x1x1xf32>{{$}}
// CHECK-NEXT:    %conv = graph.conv2d %X, %w {taihu.group = 1 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 1 : i64, taihu.anchor}
// CHECK-NEXT:    %add = graph.add %conv, %X {taihu.group = 1 : i64, taihu.split = array<i64: 1, 1>, taihu.group_layer = 2 : i64, taihu.anchor}
// CHECK-NEXT:    %e = graph.sqrt %X {taihu.group = 2 : i64
func.func @branch(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %X = graph.relu %x : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %conv = graph.conv2d %X, %w : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %add = graph.add %conv, %X : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %e = graph.sqrt %X : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  func.return %add, %e : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}
