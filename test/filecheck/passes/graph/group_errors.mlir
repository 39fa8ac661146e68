// RUN: not %taihu-opt %s -p 'graph-group{order=widest}' 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: not %taihu-opt %s -p 'graph-group{ldm-budget=-1}' 2>&1 | filecheck %s --check-prefix=NEG

// ORDER: error: graph-group: option order must be auto, dfs or bfs, got 'widest'
// NEG:   error: graph-group: option ldm-budget must be >= 0 bytes (0 = the machine's ldm_user_bytes = 57344), got -1
// ORDER-NOT: Traceback
func.func @f(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %a = graph.relu %x : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  func.return %a : tensor<1x8x4x4xf32>
}
