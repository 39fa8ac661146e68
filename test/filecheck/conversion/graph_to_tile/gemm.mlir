// RUN: %taihu-opt %s -p convert-graph-to-tile --split-input-file | filecheck %s

// Memory-level GEMM (004 §4.2): K innermost, fp32 tiles DMA'd into double-buffered staging
// buffers and converted to fp64 for the mesh primitive (004 L823), boundary tiles padded /
// clipped (lightweight padding, 004 L883-889), a trailing relu absorbed into the C block.
func.func @main(%a: tensor<300x200xf32> {graph.name = "a"}, %b: tensor<200x500xf32> {graph.name = "b"}) -> (tensor<300x500xf32> {graph.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<300x200xf32>, tensor<200x500xf32>) -> tensor<300x500xf32>
  %r = graph.relu %y : tensor<300x500xf32> -> tensor<300x500xf32>
  func.return %r : tensor<300x500xf32>
}

// CHECK:      tile.kernel "y" (%a_1 = %a : memref<300x200xf32>, %b_1 = %b : memref<200x500xf32>, %y_1 = %y : memref<300x500xf32>)
// CHECK-SAME:   taihu.layer = "y", taihu.op = "graph.matmul", taihu.algorithm = "gemm", taihu.shape = "300x500 <- 300x200 * 200x500 (GEMM)", taihu.fused = ["graph.relu"], taihu.blocking = "bm=32 bn=512 bk=200 scheme=4 vec=n hoist_b"
// CHECK-NEXT:   %a_s = tile.alloc double : !tile.buf<32x200xf32, rc>
// CHECK-NEXT:   %a_2 = tile.alloc : !tile.buf<32x200xf64, rc>
// CHECK-NEXT:   %b_s = tile.alloc : !tile.buf<200x512xf32, rc>
// CHECK-NEXT:   %b_2 = tile.alloc : !tile.buf<200x512xf64, rc>
// CHECK-NEXT:   %c_s = tile.alloc double : !tile.buf<32x512xf32, rc>
// CHECK-NEXT:   %c = tile.alloc : !tile.buf<32x512xf64, rc>
// The B panel (one K block, one N block) is loop-invariant: loaded once (GEMP hoisting).
// CHECK:        tile.move %b_1[%c0, %c0] sizes [200, 512] pad 0.0 -> %b_s
// CHECK-NEXT:   tile.map convert ins(%b_s : !tile.buf<200x512xf32, rc>) out(%b_2 : !tile.buf<200x512xf64, rc>)
// CHECK-NEXT:   tile.for %cM = 0 to 300 step 32 name "cM" {
// CHECK-NEXT:     tile.map fill out(%c : !tile.buf<32x512xf64, rc>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:     tile.move %a_1[%cM, %c0] sizes [32, 200] pad 0.0 -> %a_s
// CHECK-NEXT:     tile.map convert ins(%a_s : !tile.buf<32x200xf32, rc>) out(%a_2 : !tile.buf<32x200xf64, rc>)
// CHECK-NEXT:     tile.gemm %a_2, %b_2 -> %c m 32 n 512 k 200 scheme 4 vec n
// CHECK-NEXT:     tile.map relu ins(%c : !tile.buf<32x512xf64, rc>) out(%c : !tile.buf<32x512xf64, rc>)
// CHECK-NEXT:     tile.map convert ins(%c : !tile.buf<32x512xf64, rc>) out(%c_s : !tile.buf<32x512xf32, rc>)
// CHECK-NEXT:     tile.move %c_s -> %y_1[%cM, %c0] sizes [32, 512] clip
// CHECK-NEXT:   }
// CHECK-NOT:  = graph.

// -----

// Square GEMM: K innermost (004 L863); the (M, N) blocks are ONE loop cMN (block b -> rows
// (b / nn) * BM, columns (b % nn) * BN) so that tile-to-loop's Alg. 8 wrap prefetches across
// every block boundary.
func.func @main(%a: tensor<1024x1024xf32> {graph.name = "a"}, %b: tensor<1024x1024xf32> {graph.name = "b"}) -> (tensor<1024x1024xf32> {graph.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  func.return %y : tensor<1024x1024xf32>
}

// CHECK:      tile.for %cMN = 0 to [[NB:[0-9]+]] step 1 name "cMN" {
// CHECK-NEXT:   %[[I:.*]] = arith.divui %cMN, %[[NN:.*]] : index
// CHECK-NEXT:   %[[J:.*]] = arith.remui %cMN, %[[NN]] : index
// CHECK-NEXT:   %[[M0:.*]] = arith.muli %[[I]], %[[BMC:.*]] : index
// CHECK-NEXT:   %[[N0:.*]] = arith.muli %[[J]], %[[BNC:.*]] : index
// CHECK-NEXT:   tile.map fill
// CHECK-NEXT:   tile.for %cK = 0 to 1024 step [[BK:[0-9]+]] name "cK" {
// CHECK-NEXT:     tile.move %a_1[%[[M0]], %cK] sizes [[[BM:[0-9]+]], [[BK]]] -> %a_s
// CHECK-NEXT:     tile.map convert
// CHECK-NEXT:     tile.move %b_1[%cK, %[[N0]]] sizes [[[BK]], [[BN:[0-9]+]]] -> %b_s
// CHECK-NEXT:     tile.map convert
// CHECK-NEXT:     tile.gemm %a_2, %b_2 -> %c m [[BM]] n [[BN]] k [[BK]] scheme 4 vec n
// CHECK-NEXT:   }
// CHECK-NEXT:   tile.map convert
// CHECK-NEXT:   tile.move %c_s -> %y_1[%[[M0]], %[[N0]]] sizes [[[BM]], [[BN]]] : !tile.buf

// -----

// ONNX Gemm (FC): transB, alpha scale, bias row broadcast (1, N) scaled by beta, fp64 data.
func.func @main(%x: tensor<64x256xf64> {graph.name = "x"}, %w: tensor<512x256xf64> {graph.name = "w"}, %b: tensor<512xf64> {graph.name = "b"}) -> (tensor<64x512xf64> {graph.name = "y"}) {
  %y = graph.gemm %x, %w, %b {alpha = 2.0 : f32, beta = 0.5 : f32, trans_b} : (tensor<64x256xf64>, tensor<512x256xf64>, tensor<512xf64>) -> tensor<64x512xf64>
  func.return %y : tensor<64x512xf64>
}

// CHECK:      %[[BV:.*]] = memref.expand_shape %b {{.*}} into memref<1x512xf64>
// CHECK:      tile.kernel "y" ({{.*}}%c = %[[BV]] : memref<1x512xf64>)
// CHECK-SAME:   taihu.op = "graph.gemm", taihu.algorithm = "gemm", taihu.shape = "64x512 <- 64x256 * 512x256^T (GEMP)"
// CHECK:        %alpha = tile.alloc : !tile.buf<1x1xf64, rep>
// CHECK-NEXT:   %beta = tile.alloc : !tile.buf<1x1xf64, rep>
// CHECK-NEXT:   %bias_s = tile.alloc : !tile.buf<1x{{[0-9]+}}xf64, rep>
// CHECK-NEXT:   %bias = tile.alloc : !tile.buf<1x{{[0-9]+}}xf64, rep>
// CHECK:        tile.map fill out(%alpha : !tile.buf<1x1xf64, rep>) {value = 2.000000e+00 : f64}
// CHECK-NEXT:   tile.map fill out(%beta : !tile.buf<1x1xf64, rep>) {value = 5.000000e-01 : f64}
// (the bias row of each N block is loaded before the GEMM, after its single K step's operands:
// its DMA overlaps the GEMM)
// CHECK:        tile.for %cN = 0 to 512 step {{[0-9]+}} name "cN" {
// CHECK:        tile.move %c[%c0, %cN] sizes [1, {{[0-9]+}}] -> %bias_s
// CHECK-NEXT:   tile.gemm {{.*}} scheme {{[24]}} vec {{[mn]}} trans_b
// CHECK:        tile.map mul ins(%c{{.*}}, %alpha : {{.*}}) out(%c
// CHECK-NEXT:   tile.map copy ins(%bias_s {{.*}}) out(%bias
// CHECK-NEXT:   tile.map mul ins(%bias, %beta {{.*}}) out(%bias
// CHECK-NEXT:   tile.map add ins(%c{{.*}}, %bias {{.*}}) out(%c

// -----

// Batched matmul with a broadcast operand: one outer loop per batch dim, B keeps index 0.
func.func @main(%a: tensor<3x2x40x50xf32> {graph.name = "a"}, %b: tensor<3x1x50x60xf32> {graph.name = "b"}) -> (tensor<3x2x40x60xf32> {graph.name = "y"}) {
  %y = graph.matmul %a, %b : (tensor<3x2x40x50xf32>, tensor<3x1x50x60xf32>) -> tensor<3x2x40x60xf32>
  func.return %y : tensor<3x2x40x60xf32>
}

// CHECK:      taihu.shape = "3x2 x 40x60 <- 40x50 * 50x60 (GEPB)"
// (one 64x128 block per batch iteration: its A/B loads are prefetched over the batch loops)
// CHECK:      tile.for %g0 = 0 to 3 step 1 name "g0" {
// CHECK-NEXT:   tile.for %g1 = 0 to 2 step 1 name "g1" {
// CHECK:          tile.move %a_1[%g0, %g1, %c0, %c0] sizes [1, 1, 64, {{[0-9]+}}] pad 0.0 -> %a_s
// CHECK:          tile.move %b_1[%g0, %c0, %c0, %c0] sizes [1, 1, {{[0-9]+}}, 128] pad 0.0 -> %b_s
// CHECK:          tile.move %c_s -> %y_1[%g0, %g1, %c0, %c0] sizes [1, 1, 64, 128] clip
