// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// tile.gemm: fp64 only (004 L823), shapes, scheme/vec (Table 4.1), §A5 multiples (004 L885),
// distribution and LDM layout implied by the scheme, aliasing, LDM footprint.

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf32, cr, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 1 vec m : !tile.buf<128x64xf32, cr, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm: operand A (%a) must be f64, got f32: the fused load-and-broadcast instructions are fp64 only (004 L823); convert with tile.map convert

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, cr, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 1 vec m trans_b : !tile.buf<128x64xf64, cr, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm: operand B has shape [64, 32], expected [32, 64] = (N, K)

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, cr, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 5 vec m : !tile.buf<128x64xf64, cr, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm: scheme must be 1, 2, 3 or 4 (Table 4.1), got 5

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, cr, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 3 vec m : !tile.buf<128x64xf64, cr, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 3: vectorises N (Table 4.1), but vec = m

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<64x64xf64, cr, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<64x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 64 n 32 k 64 scheme 1 vec m : !tile.buf<64x64xf64, cr, col>, !tile.buf<64x32xf64, cr>, !tile.buf<64x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1: vectorised dim M = 64 must be a multiple of 128 (16 per CPE x 8, 004 L885)

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, cr, col>
    %b = tile.alloc : !tile.buf<64x16xf64, cr>
    %c = tile.alloc : !tile.buf<128x16xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 16 k 64 scheme 1 vec m : !tile.buf<128x64xf64, cr, col>, !tile.buf<64x16xf64, cr>, !tile.buf<128x16xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1: dim N = 16 must be a multiple of 32 (4 per CPE x 8, 004 L885)

// -----

// K itself must be a multiple of 8 (one k column per CPE and mesh column); here A, B are (M, 12)
// laid out in rep tiles so the type accepts K = 12.
func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x12xf64, rep, col>
    %b = tile.alloc : !tile.buf<12x32xf64, rep>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 12 scheme 1 vec m : !tile.buf<128x12xf64, rep, col>, !tile.buf<12x32xf64, rep>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1: K = 12 must be a multiple of 8 (004 L885)

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, rep, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 1 vec m : !tile.buf<128x64xf64, rep, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1: operand A (%a) must be distributed rc or cr over the mesh, got rep

// -----

// Scheme 1: A travels along mesh columns (VLDC), so its K index must sit on mesh rows.
func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, rc, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 1 vec m : !tile.buf<128x64xf64, rc, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1: A travels along mesh columns (Table 4.1), so %a needs K on mesh rows, but its dims (M, K) with dist rc put M on mesh rows

// -----

// Scheme 2: B travels along mesh columns (LDDEC), so its K index must sit on mesh rows.
func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, rc, col>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, rc, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 2 vec m : !tile.buf<128x64xf64, rc, col>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, rc, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 2: B travels along mesh columns (Table 4.1), so %b needs K on mesh rows, but its dims (K, N) with dist cr put N on mesh rows

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, rc, col>
    %b = tile.alloc : !tile.buf<64x32xf64, rc>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 2 vec m : !tile.buf<128x64xf64, rc, col>, !tile.buf<64x32xf64, rc>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 2: A travels along mesh rows (Table 4.1), so %c needs M on mesh rows, but its dims (M, N) with dist cr put N on mesh rows

// -----

// The vector-loaded operand (A for scheme 1) must store M contiguously in LDM.
func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, cr>
    %b = tile.alloc : !tile.buf<64x32xf64, cr>
    %c = tile.alloc : !tile.buf<128x32xf64, cr, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 1 vec m : !tile.buf<128x64xf64, cr>, !tile.buf<64x32xf64, cr>, !tile.buf<128x32xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1: %a must store the vectorised dim M contiguously in LDM (vector loads of 4 consecutive elements), but layout row makes K contiguous

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<32x64xf64, rc>
    %b = tile.alloc : !tile.buf<64x128xf64, rc>
    %c = tile.alloc : !tile.buf<32x128xf64, rc, col>
    tile.gemm %a, %b -> %c m 32 n 128 k 64 scheme 4 vec n : !tile.buf<32x64xf64, rc>, !tile.buf<64x128xf64, rc>, !tile.buf<32x128xf64, rc, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 4: %c must store the vectorised dim N contiguously in LDM (vector loads of 4 consecutive elements), but layout col makes M contiguous

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x128xf64, cr, col>
    %b = tile.alloc : !tile.buf<128x128xf64, cr>
    tile.gemm %a, %b -> %a m 128 n 128 k 128 scheme 1 vec m : !tile.buf<128x128xf64, cr, col>, !tile.buf<128x128xf64, cr>, !tile.buf<128x128xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm: C must be a different buffer from A and B

// -----

// §A5 footprint with double buffers: A 512x256 f64 per CPE 64x32 x 8 B = 16384, double -> 32768;
// B 256x256 -> 8192, double -> 16384; C 512x256 -> 16384: 65536 B > 57344 [param].
func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc double : !tile.buf<512x256xf64, cr, col>
    %b = tile.alloc double : !tile.buf<256x256xf64, cr>
    %c = tile.alloc : !tile.buf<512x256xf64, cr, col>
    tile.gemm %a, %b -> %c m 512 n 256 k 256 scheme 1 vec m : !tile.buf<512x256xf64, cr, col>, !tile.buf<256x256xf64, cr>, !tile.buf<512x256xf64, cr, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1: LDM footprint of A, B, C is 65536 bytes per CPE > ldm_user_bytes = 57344 (double buffers counted twice): %a 32768 B, %b 16384 B, %c 16384 B
