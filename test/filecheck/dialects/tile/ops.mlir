// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// Round trip of every tile op and of the !tile.buf type (custom -> generic -> custom).

builtin.module {
  // Memory-level GEMM, K innermost (004 L863), scheme 1: A travels along mesh columns.
  func.func @gemm(%A: memref<1024x1024xf64>, %B: memref<1024x1024xf64>, %C: memref<1024x1024xf64>) {
    tile.kernel "gemm" (%a = %A : memref<1024x1024xf64>, %b = %B : memref<1024x1024xf64>, %c = %C : memref<1024x1024xf64>) {
      %ta = tile.alloc double : !tile.buf<256x64xf64, cr, col>
      %tb = tile.alloc double : !tile.buf<64x256xf64, cr>
      %tc = tile.alloc : !tile.buf<256x256xf64, cr, col>
      tile.for %i = 0 to 1024 step 256 name "cM" {
        tile.for %j = 0 to 1024 step 256 {
          tile.map fill out(%tc : !tile.buf<256x256xf64, cr, col>) {value = 0.000000e+00 : f64}
          tile.for %k = 0 to 1024 step 64 name "cK" {
            tile.move %a[%i, %k] sizes [256, 64] -> %ta : memref<1024x1024xf64> -> !tile.buf<256x64xf64, cr, col>
            tile.move %b[%k, %j] sizes [64, 256] -> %tb : memref<1024x1024xf64> -> !tile.buf<64x256xf64, cr>
            tile.gemm %ta, %tb -> %tc m 256 n 256 k 64 scheme 1 vec m : !tile.buf<256x64xf64, cr, col>, !tile.buf<64x256xf64, cr>, !tile.buf<256x256xf64, cr, col>
          }
          tile.move %tc -> %c[%i, %j] sizes [256, 256] : !tile.buf<256x256xf64, cr, col> -> memref<1024x1024xf64>
        }
      }
    }
    func.return
  }

// CHECK:      func.func @gemm(%A: memref<1024x1024xf64>, %B: memref<1024x1024xf64>, %C: memref<1024x1024xf64>) {
// CHECK-NEXT:   tile.kernel "gemm" (%a = %A : memref<1024x1024xf64>, %b = %B : memref<1024x1024xf64>, %c = %C : memref<1024x1024xf64>) {
// CHECK-NEXT:     %ta = tile.alloc double : !tile.buf<256x64xf64, cr, col>
// CHECK-NEXT:     %tb = tile.alloc double : !tile.buf<64x256xf64, cr>
// CHECK-NEXT:     %tc = tile.alloc : !tile.buf<256x256xf64, cr, col>
// CHECK-NEXT:     tile.for %i = 0 to 1024 step 256 name "cM" {
// CHECK-NEXT:       tile.for %j = 0 to 1024 step 256 {
// CHECK-NEXT:         tile.map fill out(%tc : !tile.buf<256x256xf64, cr, col>) {value = 0.000000e+00 : f64}
// CHECK-NEXT:         tile.for %k = 0 to 1024 step 64 name "cK" {
// CHECK-NEXT:           tile.move %a[%i, %k] sizes [256, 64] -> %ta : memref<1024x1024xf64> -> !tile.buf<256x64xf64, cr, col>
// CHECK-NEXT:           tile.move %b[%k, %j] sizes [64, 256] -> %tb : memref<1024x1024xf64> -> !tile.buf<64x256xf64, cr>
// CHECK-NEXT:           tile.gemm %ta, %tb -> %tc m 256 n 256 k 64 scheme 1 vec m : !tile.buf<256x64xf64, cr, col>, !tile.buf<64x256xf64, cr>, !tile.buf<256x256xf64, cr, col>
// CHECK-NEXT:         }
// CHECK-NEXT:         tile.move %tc -> %c[%i, %j] sizes [256, 256] : !tile.buf<256x256xf64, cr, col> -> memref<1024x1024xf64>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }

  // Transposed operands, schemes 2-4, fp32 -> fp64 conversion, strided/padded/clipped moves.
  func.func @variants(%X: memref<512x300xf32>, %Y: memref<300x512xf32>) {
    tile.kernel "variants" (%x = %X : memref<512x300xf32>, %y = %Y : memref<300x512xf32>) {
      %s = tile.alloc : !tile.buf<128x64xf32, rc>
      %a = tile.alloc : !tile.buf<128x64xf64, rc, col>
      %b = tile.alloc : !tile.buf<64x32xf64, rc>
      %c = tile.alloc : !tile.buf<128x32xf64, rc, col>
      %at = tile.alloc : !tile.buf<64x128xf64, cr>
      %bt = tile.alloc : !tile.buf<32x64xf64, cr>
      %c3 = tile.alloc : !tile.buf<32x128xf64, cr>
      %a3 = tile.alloc : !tile.buf<32x64xf64, cr>
      %b3 = tile.alloc : !tile.buf<64x128xf64, cr>
      %c4 = tile.alloc : !tile.buf<32x128xf64, rc>
      %a4 = tile.alloc : !tile.buf<32x64xf64, rc>
      %b4 = tile.alloc : !tile.buf<64x128xf64, rc>
      tile.for %i = 0 to 512 step 128 {
        %c0 = arith.constant 0 : index
        %c256 = arith.constant 256 : index
        tile.move %x[%i, %c256] sizes [128, 64] pad 0.0 -> %s : memref<512x300xf32> -> !tile.buf<128x64xf32, rc>
        tile.move %x[%i, %c0] sizes [128, 64] strides [1, 2] -> %s : memref<512x300xf32> -> !tile.buf<128x64xf32, rc>
        tile.move %x[%i, %c0] sizes [128, 64] pad -inf -> %s : memref<512x300xf32> -> !tile.buf<128x64xf32, rc>
        tile.map convert ins(%s : !tile.buf<128x64xf32, rc>) out(%a : !tile.buf<128x64xf64, rc, col>)
        tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 2 vec m : !tile.buf<128x64xf64, rc, col>, !tile.buf<64x32xf64, rc>, !tile.buf<128x32xf64, rc, col>
        tile.gemm %at, %bt -> %c m 128 n 32 k 64 scheme 2 vec m trans_a trans_b : !tile.buf<64x128xf64, cr>, !tile.buf<32x64xf64, cr>, !tile.buf<128x32xf64, rc, col>
        tile.gemm %a3, %b3 -> %c3 m 32 n 128 k 64 scheme 3 vec n : !tile.buf<32x64xf64, cr>, !tile.buf<64x128xf64, cr>, !tile.buf<32x128xf64, cr>
        tile.gemm %a4, %b4 -> %c4 m 32 n 128 k 64 scheme 4 vec n : !tile.buf<32x64xf64, rc>, !tile.buf<64x128xf64, rc>, !tile.buf<32x128xf64, rc>
        tile.map convert ins(%a : !tile.buf<128x64xf64, rc, col>) out(%s : !tile.buf<128x64xf32, rc>)
        tile.move %s -> %x[%i, %c256] sizes [128, 64] clip : !tile.buf<128x64xf32, rc> -> memref<512x300xf32>
      }
    }
    func.return
  }

// CHECK-LABEL: func.func @variants
// CHECK:      tile.move %x[%i, %c256] sizes [128, 64] pad 0.0 -> %s : memref<512x300xf32> -> !tile.buf<128x64xf32, rc>
// CHECK-NEXT: tile.move %x[%i, %c0] sizes [128, 64] strides [1, 2] -> %s : memref<512x300xf32> -> !tile.buf<128x64xf32, rc>
// CHECK-NEXT: tile.move %x[%i, %c0] sizes [128, 64] pad -inf -> %s : memref<512x300xf32> -> !tile.buf<128x64xf32, rc>
// CHECK-NEXT: tile.map convert ins(%s : !tile.buf<128x64xf32, rc>) out(%a : !tile.buf<128x64xf64, rc, col>)
// CHECK-NEXT: tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 2 vec m : !tile.buf<128x64xf64, rc, col>, !tile.buf<64x32xf64, rc>, !tile.buf<128x32xf64, rc, col>
// CHECK-NEXT: tile.gemm %at, %bt -> %c m 128 n 32 k 64 scheme 2 vec m trans_a trans_b : !tile.buf<64x128xf64, cr>, !tile.buf<32x64xf64, cr>, !tile.buf<128x32xf64, rc, col>
// CHECK-NEXT: tile.gemm %a3, %b3 -> %c3 m 32 n 128 k 64 scheme 3 vec n
// CHECK-NEXT: tile.gemm %a4, %b4 -> %c4 m 32 n 128 k 64 scheme 4 vec n
// CHECK-NEXT: tile.map convert ins(%a : !tile.buf<128x64xf64, rc, col>) out(%s : !tile.buf<128x64xf32, rc>)
// CHECK-NEXT: tile.move %s -> %x[%i, %c256] sizes [128, 64] clip : !tile.buf<128x64xf32, rc> -> memref<512x300xf32>

  // Memory-bound maps on cpe / rep tiles (data-parallel, no RLC: 004 L1227).
  func.func @maps(%X: memref<64x56x56xf32>, %S: memref<64x1x1xf32>) {
    tile.kernel "maps" (%x = %X : memref<64x56x56xf32>, %s = %S : memref<64x1x1xf32>) {
      %in = tile.alloc : !tile.buf<64x9x57xf32, cpe>
      %t = tile.alloc : !tile.buf<64x8x56xf32, cpe>
      %u = tile.alloc : !tile.buf<64x8x56xf32, cpe>
      %p = tile.alloc : !tile.buf<64x4x28xf32, cpe>
      %sc = tile.alloc : !tile.buf<64x1x1xf32, cpe>
      %sh = tile.alloc : !tile.buf<1x1x56xf32, rep>
      %r = tile.alloc : !tile.buf<64x8x1xf32, cpe>
      %tr = tile.alloc : !tile.buf<64x56x8xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.for %h = 0 to 56 step 8 {
        tile.move %x[%c0, %h, %c0] sizes [64, 8, 56] -> %t : memref<64x56x56xf32> -> !tile.buf<64x8x56xf32, cpe>
        tile.move %s[%c0, %c0, %c0] sizes [64, 1, 1] -> %sc : memref<64x1x1xf32> -> !tile.buf<64x1x1xf32, cpe>
        tile.map relu ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map leaky_relu ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {alpha = 1.000000e-01 : f64}
        tile.map clip ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {lo = 0.000000e+00 : f64, hi = 6.000000e+00 : f64}
        tile.map sigmoid ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map tanh ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map copy ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map add ins(%t, %u : !tile.buf<64x8x56xf32, cpe>, !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map sub ins(%t, %sh : !tile.buf<64x8x56xf32, cpe>, !tile.buf<1x1x56xf32, rep>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map mul ins(%t, %sc : !tile.buf<64x8x56xf32, cpe>, !tile.buf<64x1x1xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map div ins(%t, %sc : !tile.buf<64x8x56xf32, cpe>, !tile.buf<64x1x1xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map max ins(%t, %u : !tile.buf<64x8x56xf32, cpe>, !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map affine ins(%t, %sc, %sc : !tile.buf<64x8x56xf32, cpe>, !tile.buf<64x1x1xf32, cpe>, !tile.buf<64x1x1xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
        tile.map reduce_sum ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%r : !tile.buf<64x8x1xf32, cpe>) {axis = 2 : i64}
        tile.map reduce_max ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%r : !tile.buf<64x8x1xf32, cpe>) {axis = 2 : i64}
        tile.map reduce_mean ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%r : !tile.buf<64x8x1xf32, cpe>) {axis = 2 : i64}
        tile.map softmax ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {axis = 2 : i64}
        tile.map lrn ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {axis = 1 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
        tile.map transpose ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%tr : !tile.buf<64x56x8xf32, cpe>) {perm = array<i64: 0, 2, 1>}
        tile.map max_pool ins(%in : !tile.buf<64x9x57xf32, cpe>) out(%p : !tile.buf<64x4x28xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
        tile.map avg_pool ins(%in : !tile.buf<64x9x57xf32, cpe>) out(%p : !tile.buf<64x4x28xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
        tile.map max_pool ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
        tile.move %u -> %x[%c0, %h, %c0] sizes [64, 8, 56] : !tile.buf<64x8x56xf32, cpe> -> memref<64x56x56xf32>
      }
    }
    func.return
  }

// CHECK-LABEL: func.func @maps
// CHECK:      tile.map relu ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
// CHECK-NEXT: tile.map leaky_relu ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {alpha = 1.000000e-01 : f64}
// CHECK-NEXT: tile.map clip ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {lo = 0.000000e+00 : f64, hi = 6.000000e+00 : f64}
// CHECK:      tile.map sub ins(%t, %sh : !tile.buf<64x8x56xf32, cpe>, !tile.buf<1x1x56xf32, rep>) out(%u : !tile.buf<64x8x56xf32, cpe>)
// CHECK:      tile.map affine ins(%t, %sc, %sc : !tile.buf<64x8x56xf32, cpe>, !tile.buf<64x1x1xf32, cpe>, !tile.buf<64x1x1xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>)
// CHECK:      tile.map reduce_mean ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%r : !tile.buf<64x8x1xf32, cpe>) {axis = 2 : i64}
// CHECK:      tile.map lrn ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {axis = 1 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
// CHECK-NEXT: tile.map transpose ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%tr : !tile.buf<64x56x8xf32, cpe>) {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT: tile.map max_pool ins(%in : !tile.buf<64x9x57xf32, cpe>) out(%p : !tile.buf<64x4x28xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
// CHECK-NEXT: tile.map avg_pool
// CHECK-NEXT: tile.map max_pool ins(%t : !tile.buf<64x8x56xf32, cpe>) out(%u : !tile.buf<64x8x56xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}

  // cpe<d>: the 64-way split along dim d (LRN at batch 1: H*W split, channels whole; an NCHW ->
  // NHWC transpose: the input split along H*W, the transposed output along its dim 0);
  // cpe<d>+<h>: with a halo (LRN channel blocks plus the window's neighbours).
  func.func @split_dims(%X: memref<1x96x2916xf32>, %Y: memref<64x3136xf32>, %Z: memref<3136x64xf32>) {
    tile.kernel "split_dims" (%x = %X : memref<1x96x2916xf32>, %y = %Y : memref<64x3136xf32>, %z = %Z : memref<3136x64xf32>) {
      %in = tile.alloc double : !tile.buf<1x28x2916xf32, cpe2>
      %out = tile.alloc double : !tile.buf<1x24x2916xf32, cpe2>
      %a = tile.alloc : !tile.buf<64x256xf32, cpe1>
      %b = tile.alloc : !tile.buf<256x64xf32, cpe>
      %c0 = arith.constant 0 : index
      tile.map lrn ins(%in : !tile.buf<1x28x2916xf32, cpe2>) out(%out : !tile.buf<1x24x2916xf32, cpe2>) {axis = 1 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
      tile.move %y[%c0, %c0] sizes [64, 256] -> %a : memref<64x3136xf32> -> !tile.buf<64x256xf32, cpe1>
      tile.map transpose ins(%a : !tile.buf<64x256xf32, cpe1>) out(%b : !tile.buf<256x64xf32, cpe>) {perm = array<i64: 1, 0>}
      tile.move %b -> %z[%c0, %c0] sizes [256, 64] : !tile.buf<256x64xf32, cpe> -> memref<3136x64xf32>
      %h = tile.alloc double : !tile.buf<1x100x64xf32, cpe1+4>
      %o = tile.alloc double : !tile.buf<1x96x64xf32, cpe1>
      %cm2 = arith.constant -2 : index
      tile.move %x[%c0, %cm2, %c0] sizes [1, 100, 64] pad 0.0 -> %h : memref<1x96x2916xf32> -> !tile.buf<1x100x64xf32, cpe1+4>
      tile.map lrn ins(%h : !tile.buf<1x100x64xf32, cpe1+4>) out(%o : !tile.buf<1x96x64xf32, cpe1>) {axis = 1 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
    }
    func.return
  }

// CHECK-LABEL: func.func @split_dims
// CHECK:      %in = tile.alloc double : !tile.buf<1x28x2916xf32, cpe2>
// CHECK:      tile.map lrn ins(%in : !tile.buf<1x28x2916xf32, cpe2>) out(%out : !tile.buf<1x24x2916xf32, cpe2>)
// CHECK:      tile.map transpose ins(%a : !tile.buf<64x256xf32, cpe1>) out(%b : !tile.buf<256x64xf32, cpe>) {perm = array<i64: 1, 0>}
// CHECK:      tile.move %x[%c0, %cm2, %c0] sizes [1, 100, 64] pad 0.0 -> %h : memref<1x96x2916xf32> -> !tile.buf<1x100x64xf32, cpe1+4>
// CHECK-NEXT: tile.map lrn ins(%h : !tile.buf<1x100x64xf32, cpe1+4>) out(%o : !tile.buf<1x96x64xf32, cpe1>)

  // Memory-to-memory primitives: im2col (004 §5.1.1) and Winograd F(2x2,3x3) (Algorithm 5).
  func.func @conv_prims(%X: memref<2x16x14x14xf32>, %Col: memref<144x392xf32>, %W: memref<32x16x3x3xf32>,
                        %U: memref<16x32x16xf32>, %V: memref<16x128x16xf32>, %M: memref<16x128x32xf32>,
                        %Y: memref<2x32x14x14xf32>, %Xh: memref<2x14x14x16xf32>) {
    tile.kernel "im2col" (%x = %X : memref<2x16x14x14xf32>, %col = %Col : memref<144x392xf32>) {
      tile.im2col %x -> %col {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : memref<2x16x14x14xf32> -> memref<144x392xf32>
    }
    tile.kernel "wino" (%w = %W : memref<32x16x3x3xf32>, %u = %U : memref<16x32x16xf32>, %x = %X : memref<2x16x14x14xf32>,
                        %v = %V : memref<16x128x16xf32>, %m = %M : memref<16x128x32xf32>, %y = %Y : memref<2x32x14x14xf32>,
                        %xh = %Xh : memref<2x14x14x16xf32>) {
      tile.winograd_filter %w -> %u : memref<32x16x3x3xf32> -> memref<16x32x16xf32>
      tile.winograd_input %x -> %v {pads = array<i64: 1, 1, 1, 1>, tiles_per_cpe = 4 : i64} : memref<2x16x14x14xf32> -> memref<16x128x16xf32>
      tile.winograd_input %xh -> %v {pads = array<i64: 1, 1, 1, 1>, layout = #tile<data_layout nhwc>} : memref<2x14x14x16xf32> -> memref<16x128x16xf32>
      tile.winograd_output %m -> %y : memref<16x128x32xf32> -> memref<2x32x14x14xf32>
    }
    func.return
  }
}

// CHECK-LABEL: func.func @conv_prims
// CHECK:      tile.im2col %x -> %col {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : memref<2x16x14x14xf32> -> memref<144x392xf32>
// CHECK:      tile.winograd_filter %w -> %u : memref<32x16x3x3xf32> -> memref<16x32x16xf32>
// CHECK-NEXT: tile.winograd_input %x -> %v {pads = array<i64: 1, 1, 1, 1>, tiles_per_cpe = 4 : i64} : memref<2x16x14x14xf32> -> memref<16x128x16xf32>
// CHECK-NEXT: tile.winograd_input %xh -> %v {pads = array<i64: 1, 1, 1, 1>, layout = #tile<data_layout nhwc>} : memref<2x14x14x16xf32> -> memref<16x128x16xf32>
// CHECK-NEXT: tile.winograd_output %m -> %y : memref<16x128x32xf32> -> memref<2x32x14x14xf32>

// CHECK-GENERIC: "tile.kernel"
// CHECK-GENERIC: "tile.for"() <{lb = 0 : i64, ub = 1024 : i64, step = 256 : i64, name = "cM"}>
// CHECK-GENERIC: "tile.move"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{sizes = array<i64: 256, 64>}>
// CHECK-GENERIC: "tile.gemm"(%{{.*}}, %{{.*}}, %{{.*}}) <{m = 256 : i64, n = 256 : i64, k = 64 : i64, scheme = 1 : i64, vec = #tile<vec m>}>
