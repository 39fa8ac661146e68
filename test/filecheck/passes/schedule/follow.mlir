// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-graph-to-tile}' | filecheck %s
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule}' | filecheck %s --check-prefix=KEEP

// A schedule written (or edited) by hand is followed exactly: this GEMM is blocked 128 x 64 x 64
// with the vector along m, not what the model would pick; re-running graph-schedule keeps it.

func.func @main(%a: tensor<256x512xf64>, %b: tensor<512x256xf64>) -> tensor<256x256xf64> {
  %m = graph.matmul %a, %b {tile.schedule = #tile.schedule<"gemm" {bk = 64 : i64, bm = 128 : i64, bn = 64 : i64, double_c = false, trans_a = false, trans_b = false, vec = "m"}>} : (tensor<256x512xf64>, tensor<512x256xf64>) -> tensor<256x256xf64>
  func.return %m : tensor<256x256xf64>
}

// CHECK: tile.kernel "m"
// CHECK-SAME: taihu.blocking = "bm=128 bn=64 bk=64 scheme={{[0-9]}} vec=m"
// KEEP:  #tile.schedule<"gemm" {bk = 64 : i64, bm = 128 : i64, bn = 64 : i64, double_c = false, trans_a = false, trans_b = false, vec = "m"}>
