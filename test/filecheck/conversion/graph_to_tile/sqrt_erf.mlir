// RUN: %taihu-opt %s -p convert-graph-to-tile | filecheck %s
// RUN: %taihu-opt %s -p 'taihu-lower' | filecheck %s --check-prefix=SW

// graph.sqrt and graph.erf are in-place maps: fused into their producer's kernel (here the
// sigmoid's), lowered to VSQRT and to Abramowitz & Stegun 7.1.26 (a reciprocal, VMADs, exp).

func.func @main(%x: tensor<4x96xf32>) -> tensor<4x96xf32> {
  %s = graph.sigmoid %x : tensor<4x96xf32> -> tensor<4x96xf32>
  %q = graph.sqrt %s : tensor<4x96xf32> -> tensor<4x96xf32>
  %e = graph.erf %q : tensor<4x96xf32> -> tensor<4x96xf32>
  func.return %e : tensor<4x96xf32>
}

// CHECK:      tile.kernel "s" {{.*}}taihu.fused = ["graph.sqrt", "graph.erf"]
// CHECK:        tile.map sigmoid
// CHECK-NEXT:   tile.map sqrt
// CHECK-NEXT:   tile.map erf

// SW:         sw.kernel @s(
// SW:         sw.vsqrts
// SW:         sw.vdivs
