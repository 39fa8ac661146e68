// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule tuning="%S/Inputs/matmul_records.json"}' | filecheck %s
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule machine=sw26010pro tuning="%S/Inputs/matmul_records.json"}' | filecheck %s --check-prefix=PRO
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=graph-schedule}' | filecheck %s --check-prefix=MODEL
// RUN: not %taihu-opt %s -p 'taihu-lower{tuning="%S/Inputs/illegal_records.json"}' 2>&1 | filecheck %s --check-prefix=ILLEGAL
// RUN: not %taihu-opt %s -p 'taihu-lower{tuning="%S/Inputs/broken_records.json"}' 2>&1 | filecheck %s --check-prefix=BROKEN
// RUN: not %taihu-opt %s -p 'taihu-lower{tuning="%S/Inputs/none.json"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not %taihu-opt %s -p 'graph-schedule{strategy=guess}' 2>&1 | filecheck %s --check-prefix=STRATEGY

// Tuning records (taihu-tune's JSON lines) are looked up by (problem signature, target): the
// sw26010 record and the sw26010pro record of the same GEMM give different schedules; without a
// matching record the model decides.

func.func @main(%a: tensor<256x512xf64>, %b: tensor<512x256xf64>) -> tensor<256x256xf64> {
  %m = graph.matmul %a, %b : (tensor<256x512xf64>, tensor<512x256xf64>) -> tensor<256x256xf64>
  func.return %m : tensor<256x256xf64>
}

// CHECK:    #tile.schedule<"gemm" {bk = 64 : i64, bm = 128 : i64, bn = 64 : i64, double_c = false, trans_a = false, trans_b = false, vec = "m"}>
// PRO:      #tile.schedule<"gemm" {bk = 64 : i64, bm = 256 : i64, bn = 64 : i64, double_c = false, trans_a = false, trans_b = false, vec = "m"}>
// MODEL:    #tile.schedule<"gemm"
// MODEL-NOT: bm = 128 : i64, bn = 64 : i64, double_c = false
// ILLEGAL:  taihu-opt: error: graph-schedule: graph.matmul 'm' (record of {{.*}}illegal_records.json): bm=48 is not a multiple of 128 (vec=m)
// BROKEN:   taihu-opt: error: graph-schedule: {{.*}}broken_records.json:2: key 'signature' missing
// MISSING:  taihu-opt: error: graph-schedule: cannot read tuning records {{.*}}none.json: No such file or directory
// STRATEGY: taihu-opt: error: graph-schedule: strategy must be one of model, records, got 'guess'
