// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// im2col (004 §5.1.1) and Winograd F(2x2,3x3) (Algorithm 5, model §12 #12) shape rules.

func.func @f(%X: memref<2x16x14x14xf32>, %C: memref<144x400xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x14x14xf32>, %c = %C : memref<144x400xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : memref<2x16x14x14xf32> -> memref<144x400xf32>
  }
  func.return
}
// CHECK: tile.im2col: col must be (C*kh*kw, N*Ho*Wo) = [144, 392], got [144, 400]

// -----

// Stride 2, no padding: Ho = (14 - 3) / 2 + 1 = 6; NHWC input (N, H, W, C).
func.func @f(%X: memref<2x14x14x16xf32>, %C: memref<144x72xf32>) {
  tile.kernel "k" (%x = %X : memref<2x14x14x16xf32>, %c = %C : memref<144x72xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, layout = #tile<data_layout nhwc>} : memref<2x14x14x16xf32> -> memref<144x72xf32>
  }
  func.return
}
// CHECK: tile.im2col %x -> %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, layout = #tile<data_layout nhwc>}

// -----

func.func @f(%X: memref<2x16x14x14xf32>, %C: memref<144x392xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x14x14xf32>, %c = %C : memref<144x392xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 0>} : memref<2x16x14x14xf32> -> memref<144x392xf32>
  }
  func.return
}
// CHECK: 'tile.im2col': kernel must have 2 values >= 1, got [3, 0]

// -----

func.func @f(%X: memref<2x16x14x14xf32>, %C: memref<144x392xf64>) {
  tile.kernel "k" (%x = %X : memref<2x16x14x14xf32>, %c = %C : memref<144x392xf64>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : memref<2x16x14x14xf32> -> memref<144x392xf64>
  }
  func.return
}
// CHECK: 'tile.im2col': input and output element types differ (f32 vs f64)

// -----

func.func @f(%X: memref<16x14x14xf32>, %C: memref<144x196xf32>) {
  tile.kernel "k" (%x = %X : memref<16x14x14xf32>, %c = %C : memref<144x196xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : memref<16x14x14xf32> -> memref<144x196xf32>
  }
  func.return
}
// CHECK: 'tile.im2col': expects a rank-4 input and a rank-2 output, got memref<16x14x14xf32> -> memref<144x196xf32>

// -----

func.func @f(%X: memref<2x16x14x14xf32>, %C: memref<144x392xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x14x14xf32>, %c = %C : memref<144x392xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, rows_per_task = 0 : i64} : memref<2x16x14x14xf32> -> memref<144x392xf32>
  }
  func.return
}
// CHECK: tile.im2col: rows_per_task must be >= 1

// -----

func.func @f(%W: memref<32x16x5x5xf32>, %U: memref<16x32x16xf32>) {
  tile.kernel "k" (%w = %W : memref<32x16x5x5xf32>, %u = %U : memref<16x32x16xf32>) {
    tile.winograd_filter %w -> %u : memref<32x16x5x5xf32> -> memref<16x32x16xf32>
  }
  func.return
}
// CHECK: tile.winograd_filter: F(2x2,3x3) needs 3x3 filters, got 5x5

// -----

func.func @f(%W: memref<32x16x3x3xf32>, %U: memref<9x32x16xf32>) {
  tile.kernel "k" (%w = %W : memref<32x16x3x3xf32>, %u = %U : memref<9x32x16xf32>) {
    tile.winograd_filter %w -> %u : memref<32x16x3x3xf32> -> memref<9x32x16xf32>
  }
  func.return
}
// CHECK: tile.winograd_filter: u must be (16, N_o, N_i) = [16, 32, 16], got [9, 32, 16]

// -----

// 14x14, pad 1: R_o = C_o = 14, T = 7*7 = 49 tiles per image, B*T = 98 rows at least.
func.func @f(%X: memref<2x16x14x14xf32>, %V: memref<16x96x16xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x14x14xf32>, %v = %V : memref<16x96x16xf32>) {
    tile.winograd_input %x -> %v {pads = array<i64: 1, 1, 1, 1>} : memref<2x16x14x14xf32> -> memref<16x96x16xf32>
  }
  func.return
}
// CHECK: tile.winograd_input: v must be (16, P >= B*T = 98, N_i = 16), got [16, 96, 16]

// -----

func.func @f(%X: memref<2x16x14x14xf32>, %V: memref<16x128x16xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x14x14xf32>, %v = %V : memref<16x128x16xf32>) {
    tile.winograd_input %x -> %v {pads = array<i64: 1, 1, 1, 1>, tiles_per_cpe = 0 : i64} : memref<2x16x14x14xf32> -> memref<16x128x16xf32>
  }
  func.return
}
// CHECK: tile.winograd_input: tiles_per_cpe must be >= 1

// -----

// Odd output 13x13 (no padding on a 15x15 input): T = 7*7 = 49.
func.func @f(%M: memref<16x98x32xf32>, %Y: memref<2x32x13x13xf32>) {
  tile.kernel "k" (%m = %M : memref<16x98x32xf32>, %y = %Y : memref<2x32x13x13xf32>) {
    tile.winograd_output %m -> %y : memref<16x98x32xf32> -> memref<2x32x13x13xf32>
  }
  func.return
}
// CHECK: tile.winograd_output %m -> %y : memref<16x98x32xf32> -> memref<2x32x13x13xf32>

// -----

func.func @f(%M: memref<16x98x16xf32>, %Y: memref<2x32x13x13xf32>) {
  tile.kernel "k" (%m = %M : memref<16x98x16xf32>, %y = %Y : memref<2x32x13x13xf32>) {
    tile.winograd_output %m -> %y : memref<16x98x16xf32> -> memref<2x32x13x13xf32>
  }
  func.return
}
// CHECK: tile.winograd_output: m must be (16, P >= B*T = 98, N_o = 32), got [16, 98, 16]

// -----

// image_columns P: each image's Ho*Wo = 49 columns padded to 64 (the GEMM's N block).
func.func @f(%X: memref<2x16x7x7xf32>, %C: memref<144x128xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x7x7xf32>, %c = %C : memref<144x128xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, image_columns = 64 : i64} : memref<2x16x7x7xf32> -> memref<144x128xf32>
  }
  func.return
}
// CHECK: tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, image_columns = 64 : i64}

// -----

func.func @f(%X: memref<2x16x7x7xf32>, %C: memref<144x96xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x7x7xf32>, %c = %C : memref<144x96xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, image_columns = 48 : i64} : memref<2x16x7x7xf32> -> memref<144x96xf32>
  }
  func.return
}
// CHECK: tile.im2col: image_columns = 48 < Ho*Wo = 49

// -----

func.func @f(%X: memref<2x16x7x7xf32>, %C: memref<144x98xf32>) {
  tile.kernel "k" (%x = %X : memref<2x16x7x7xf32>, %c = %C : memref<144x98xf32>) {
    tile.im2col %x -> %c {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, image_columns = 64 : i64} : memref<2x16x7x7xf32> -> memref<144x98xf32>
  }
  func.return
}
// CHECK: tile.im2col: col must be (C*kh*kw, N*image_columns) = [144, 128], got [144, 98]

// -----

// The output transform's LDM epilogue: bias per output channel, then a parameter-less activation.
func.func @f(%M: memref<16x98x32xf32>, %B: memref<32xf32>, %Y: memref<2x32x13x13xf32>) {
  tile.kernel "k" (%m = %M : memref<16x98x32xf32>, %b = %B : memref<32xf32>, %y = %Y : memref<2x32x13x13xf32>) {
    tile.winograd_output %m bias %b : memref<32xf32> -> %y {activation = #tile<map_kind relu>} : memref<16x98x32xf32> -> memref<2x32x13x13xf32>
  }
  func.return
}
// CHECK: tile.winograd_output %m bias %b : memref<32xf32> -> %y {activation = #tile<map_kind relu>} : memref<16x98x32xf32> -> memref<2x32x13x13xf32>

// -----

func.func @f(%M: memref<16x98x32xf32>, %B: memref<16xf32>, %Y: memref<2x32x13x13xf32>) {
  tile.kernel "k" (%m = %M : memref<16x98x32xf32>, %b = %B : memref<16xf32>, %y = %Y : memref<2x32x13x13xf32>) {
    tile.winograd_output %m bias %b : memref<16xf32> -> %y : memref<16x98x32xf32> -> memref<2x32x13x13xf32>
  }
  func.return
}
// CHECK: tile.winograd_output: bias must be memref<32xf32>, got memref<16xf32>

// -----

func.func @f(%M: memref<16x98x32xf32>, %Y: memref<2x32x13x13xf32>) {
  tile.kernel "k" (%m = %M : memref<16x98x32xf32>, %y = %Y : memref<2x32x13x13xf32>) {
    tile.winograd_output %m -> %y {activation = #tile<map_kind clip>} : memref<16x98x32xf32> -> memref<2x32x13x13xf32>
  }
  func.return
}
// CHECK: tile.winograd_output: activation must be one of relu, sigmoid, tanh, got clip
