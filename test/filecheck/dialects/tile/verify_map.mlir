// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// tile.map: arity, parameters, element types, shape rules (dialects/mapkind.py) and CPE-locality
// of the distribution (004 L1227: memory-bound ops run data-parallel per CPE, no RLC).
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map relu ins(%t, %t : !tile.buf<64x8xf32, cpe>, !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x8xf32, cpe>)
  }
  func.return
}
// CHECK: tile.map relu: kind relu takes 1 input(s), got 2

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map leaky_relu ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x8xf32, cpe>)
  }
  func.return
}
// CHECK: tile.map leaky_relu: kind leaky_relu needs parameter 'alpha'

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map relu ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x8xf32, cpe>) {axis = 1 : i64}
  }
  func.return
}
// CHECK: tile.map relu: kind relu does not take parameter 'axis'

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf64, cpe>
    tile.map add ins(%t, %t : !tile.buf<64x8xf32, cpe>, !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x8xf64, cpe>)
  }
  func.return
}
// CHECK: tile.map add: inputs and output must share the element type f64 (got f32, f32)

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map convert ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x8xf32, cpe>)
  }
  func.return
}
// CHECK: tile.map convert: convert must change the element type (both f32)

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x16xf32, cpe>
    tile.map sigmoid ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x16xf32, cpe>)
  }
  func.return
}
// CHECK: tile.map sigmoid: input shape [64, 8] != output shape [64, 16]

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %b = tile.alloc : !tile.buf<1x3xf32, rep>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map add ins(%t, %b : !tile.buf<64x8xf32, cpe>, !tile.buf<1x3xf32, rep>) out(%u : !tile.buf<64x8xf32, cpe>)
  }
  func.return
}
// CHECK: tile.map add: input #1 shape [1, 3] does not broadcast to the output shape [64, 8]

// -----

// Pool windows are VALID over an already padded input tile: (9 - 3) / 2 + 1 = 4 rows.
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x9x57xf32, cpe>
    %u = tile.alloc : !tile.buf<64x5x28xf32, cpe>
    tile.map max_pool ins(%t : !tile.buf<64x9x57xf32, cpe>) out(%u : !tile.buf<64x5x28xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
  }
  func.return
}
// CHECK: tile.map max_pool: output shape [64, 5, 28] != window output [64, 4, 28] of input [64, 9, 57]

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x2x57xf32, cpe>
    %u = tile.alloc : !tile.buf<64x1x28xf32, cpe>
    tile.map max_pool ins(%t : !tile.buf<64x2x57xf32, cpe>) out(%u : !tile.buf<64x1x28xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
  }
  func.return
}
// CHECK: tile.map max_pool: window [3, 3] does not fit the input shape [64, 2, 57]

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x9x57xf32, cpe>
    %u = tile.alloc : !tile.buf<64x4x28xf32, cpe>
    tile.map avg_pool ins(%t : !tile.buf<64x9x57xf32, cpe>) out(%u : !tile.buf<64x4x28xf32, cpe>) {kernel = array<i64: 3, 3, 3>, strides = array<i64: 2, 2>}
  }
  func.return
}
// CHECK: tile.map avg_pool: kernel and strides must have the same length (1 or 2)

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map reduce_sum ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x8xf32, cpe>) {axis = 1 : i64}
  }
  func.return
}
// CHECK: tile.map reduce_sum: output shape [64, 8] != expected [64, 1]

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map softmax ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x8xf32, cpe>) {axis = 2 : i64}
  }
  func.return
}
// CHECK: tile.map softmax: axis 2 out of range for rank 2

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8x4xf32, cpe>
    %u = tile.alloc : !tile.buf<64x4x8xf32, cpe>
    tile.map transpose ins(%t : !tile.buf<64x8x4xf32, cpe>) out(%u : !tile.buf<64x4x8xf32, cpe>) {perm = array<i64: 0, 2, 2>}
  }
  func.return
}
// CHECK: tile.map transpose: perm [0, 2, 2] is not a permutation of 0..2

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8x4xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8x4xf32, cpe>
    tile.map transpose ins(%t : !tile.buf<64x8x4xf32, cpe>) out(%u : !tile.buf<64x8x4xf32, cpe>) {perm = array<i64: 0, 2, 1>}
  }
  func.return
}
// CHECK: tile.map transpose: output shape [64, 8, 4] != transposed input [64, 4, 8]

// -----

// Maps are CPE-local: dim 0 of a cpe tile is split over the CPEs.
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<1x8xf32, cpe>
    tile.map reduce_max ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<1x8xf32, cpe>) {axis = 0 : i64}
  }
  func.return
}
// CHECK: tile.map reduce_max: axis 0 is split over the CPEs (dist cpe); the map must be CPE-local

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8x4xf32, cpe>
    %u = tile.alloc : !tile.buf<8x64x4xf32, cpe>
    tile.map transpose ins(%t : !tile.buf<64x8x4xf32, cpe>) out(%u : !tile.buf<8x64x4xf32, cpe>) {perm = array<i64: 1, 0, 2>}
  }
  func.return
}
// CHECK: tile.map transpose: input %t (cpe) must be split along dim 1 (perm[0]) with 8 elements: the output is cpe

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x16xf32, cpe>
    %u = tile.alloc : !tile.buf<31x7xf32, cpe>
    tile.map max_pool ins(%t : !tile.buf<64x16xf32, cpe>) out(%u : !tile.buf<31x7xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
  }
  func.return
}
// CHECK: tile.map max_pool: the window must not cover dim 0, which is split over the CPEs

// -----

// rc/cr tiles split both dims over the mesh: only element-wise kinds are CPE-local on them.
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %u = tile.alloc : !tile.buf<64x64xf64, rc>
    tile.map softmax ins(%t : !tile.buf<64x64xf64, rc>) out(%u : !tile.buf<64x64xf64, rc>) {axis = 1 : i64}
  }
  func.return
}
// CHECK: tile.map softmax: axis maps must be CPE-local; %u is distributed rc (use cpe or rep tiles)

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %u = tile.alloc : !tile.buf<64x64xf64, cr>
    tile.map relu ins(%t : !tile.buf<64x64xf64, rc>) out(%u : !tile.buf<64x64xf64, cr>)
  }
  func.return
}
// CHECK: tile.map relu: input %t is distributed rc, the output cr: maps are CPE-local

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x64xf64, rc>
    %u = tile.alloc : !tile.buf<64x64xf64, rc, col>
    tile.map relu ins(%t : !tile.buf<64x64xf64, rc>) out(%u : !tile.buf<64x64xf64, rc, col>)
  }
  func.return
}
// CHECK: tile.map relu: input %t has layout row, the output col (only copy/convert re-layout)

// -----

// A per-channel operand of a cpe tile must be split like it (same dim 0) or replicated.
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %b = tile.alloc : !tile.buf<1x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map mul ins(%t, %b : !tile.buf<64x8xf32, cpe>, !tile.buf<1x8xf32, cpe>) out(%u : !tile.buf<64x8xf32, cpe>)
  }
  func.return
}
// CHECK: tile.map mul: broadcast input %b ([1, 8], dist cpe) must be rep, or cpe with the output's rank and dim 0

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x9x9xf32, cpe>
    %u = tile.alloc : !tile.buf<64x4x4xf32, rep>
    tile.map avg_pool ins(%t : !tile.buf<64x9x9xf32, cpe>) out(%u : !tile.buf<64x4x4xf32, rep>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
  }
  func.return
}
// CHECK: tile.map avg_pool: input %t must have the output's distribution rep and dim 0

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map softmax ins(%t : !tile.buf<64x8xf32, cpe>) out(%t : !tile.buf<64x8xf32, cpe>) {axis = 1 : i64}
  }
  func.return
}
// CHECK: tile.map softmax: output must not alias an input

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    tile.map fill out(%t : !tile.buf<64x8xf32, cpe>)
  }
  func.return
}
// CHECK: tile.map fill: kind fill needs parameter 'value'

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %w = tile.alloc : !tile.buf<64x3x3xf32, cpe>
    %u = tile.alloc : !tile.buf<16x64xf32, rep>
    tile.map winograd_filter ins(%w : !tile.buf<64x3x3xf32, cpe>) out(%u : !tile.buf<16x64xf32, rep>)
  }
  func.return
}
// CHECK: tile.map winograd_filter: kind winograd_filter is loop-level only (use tile.im2col / tile.winograd_*)

// -----

// cpe<d>: the split dim d must stay out of reductions / LRN windows; a transpose maps the
// input's split dim onto the output's.
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<1x96x640xf32, cpe1>
    %u = tile.alloc : !tile.buf<1x96x640xf32, cpe1>
    tile.map lrn ins(%t : !tile.buf<1x96x640xf32, cpe1>) out(%u : !tile.buf<1x96x640xf32, cpe1>) {axis = 1 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
  }
  func.return
}
// CHECK: tile.map lrn: axis 1 is split over the CPEs (dist cpe1); the map must be CPE-local

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x256xf32, cpe>
    %u = tile.alloc : !tile.buf<256x64xf32, cpe>
    tile.map transpose ins(%t : !tile.buf<64x256xf32, cpe>) out(%u : !tile.buf<256x64xf32, cpe>) {perm = array<i64: 1, 0>}
  }
  func.return
}
// CHECK: tile.map transpose: input %t (cpe) must be split along dim 1 (perm[0]) with 256 elements: the output is cpe

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<1x28x640xf32, cpe2>
    %u = tile.alloc : !tile.buf<1x24x640xf32, cpe1>
    tile.map lrn ins(%t : !tile.buf<1x28x640xf32, cpe2>) out(%u : !tile.buf<1x24x640xf32, cpe1>) {axis = 1 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
  }
  func.return
}
// CHECK: tile.map lrn: axis 1 is split over the CPEs (dist cpe1); the map must be CPE-local

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<1x26x640xf32, cpe2>
    %u = tile.alloc : !tile.buf<1x24x640xf32, cpe2>
    tile.map lrn ins(%t : !tile.buf<1x26x640xf32, cpe2>) out(%u : !tile.buf<1x24x640xf32, cpe2>) {axis = 1 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
  }
  func.return
}
// CHECK: tile.map lrn: output shape [1, 24, 640] != expected [1, 26, 640] (or the halo form: the input's axis size - 1 elements longer)

// -----

// pool pads: begins then ends of the window dims, each < kernel (a window keeps an input tap).
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x6x6xf32, cpe>
    %u = tile.alloc : !tile.buf<64x6x6xf32, cpe>
    tile.map max_pool ins(%t : !tile.buf<64x6x6xf32, cpe>) out(%u : !tile.buf<64x6x6xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 3, 1, 1>}
  }
  func.return
}
// CHECK: tile.map max_pool: pads [1, 3, 1, 1] must hold 4 values (begins, then ends) in [0, kernel): every window keeps a tap inside the input

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<64x6x6xf32, cpe>
    %u = tile.alloc : !tile.buf<64x5x6xf32, cpe>
    tile.map max_pool ins(%t : !tile.buf<64x6x6xf32, cpe>) out(%u : !tile.buf<64x5x6xf32, cpe>) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}
  }
  func.return
}
// CHECK: tile.map max_pool: output shape [64, 5, 6] != window output [64, 6, 6] of input [64, 6, 6]

// -----

// A halo input (cpe<d>+<h>) only feeds lrn along its split dim with h = size - 1.
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<100x16xf32, cpe+2>
    %u = tile.alloc : !tile.buf<96x16xf32, cpe>
    tile.map lrn ins(%t : !tile.buf<100x16xf32, cpe+2>) out(%u : !tile.buf<96x16xf32, cpe>) {axis = 0 : i64, size = 5 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64}
  }
  func.return
}
// CHECK: tile.map lrn: axis 0 is split over the CPEs (dist cpe); the map must be CPE-local

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %t = tile.alloc : !tile.buf<100x16xf32, cpe+4>
    %u = tile.alloc : !tile.buf<100x16xf32, cpe+4>
    tile.map relu ins(%t : !tile.buf<100x16xf32, cpe+4>) out(%u : !tile.buf<100x16xf32, cpe+4>)
  }
  func.return
}
// CHECK: tile.map relu: the output %u must not have a halo (cpe+4)

// -----

func.func @f(%X: memref<100x16xf32>) {
  tile.kernel "k" (%x = %X : memref<100x16xf32>) {
    %t = tile.alloc : !tile.buf<100x16xf32, cpe+4>
    %c0 = arith.constant 0 : index
    tile.move %t -> %x[%c0, %c0] sizes [100, 16] : !tile.buf<100x16xf32, cpe+4> -> memref<100x16xf32>
  }
  func.return
}
// CHECK: tile.move: a cpe+4 tile overlaps between CPEs (halo); it can only be loaded
