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

// -----

// Overlapping distribution (004 L708): B rep, A and C cpe along M; one CPE-local GEMM each.

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %a = tile.alloc : !tile.buf<256x64xf32, cpe>
    %b = tile.alloc : !tile.buf<64x32xf32, rep>
    %c = tile.alloc : !tile.buf<256x32xf32, cpe>
    tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 3 vec n : !tile.buf<256x64xf32, cpe>, !tile.buf<64x32xf32, rep>, !tile.buf<256x32xf32, cpe>
  }
  func.return
}
// CHECK: tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 3 vec n : !tile.buf<256x64xf32, cpe>, !tile.buf<64x32xf32, rep>, !tile.buf<256x32xf32, cpe>

// -----

func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %a = tile.alloc : !tile.buf<256x64xf32, cpe>
    %b = tile.alloc : !tile.buf<64x32xf64, rep>
    %c = tile.alloc : !tile.buf<256x32xf32, cpe>
    tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 3 vec n : !tile.buf<256x64xf32, cpe>, !tile.buf<64x32xf64, rep>, !tile.buf<256x32xf32, cpe>
  }
  func.return
}
// CHECK: tile.gemm scheme 3 (overlapping distribution): A, B and C must share the element type (f32 or f64), or C be f64 with f32 operands (mixed), got ['f32', 'f64']

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<64x256xf64, cpe>
    %b = tile.alloc : !tile.buf<64x32xf64, rep>
    %c = tile.alloc : !tile.buf<256x32xf64, cpe>
    tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 3 vec n trans_a : !tile.buf<64x256xf64, cpe>, !tile.buf<64x32xf64, rep>, !tile.buf<256x32xf64, cpe>
  }
  func.return
}
// CHECK: tile.gemm scheme 3 (overlapping distribution): %a must be split over the CPEs along its M dim (dim 1: dist cpe1), got cpe

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<256x64xf64, cpe>
    %b = tile.alloc : !tile.buf<64x32xf64, rep>
    %c = tile.alloc : !tile.buf<256x32xf64, cpe1>
    tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 3 vec n : !tile.buf<256x64xf64, cpe>, !tile.buf<64x32xf64, rep>, !tile.buf<256x32xf64, cpe1>
  }
  func.return
}
// CHECK: tile.gemm scheme 3 (overlapping distribution): %c must be split over the CPEs along its M dim (dim 0: dist cpe), got cpe1

// -----

// mixed precision (f32 A and B, f64 C) and A stored (K, M) split along dim 1 (cpe1, trans_a)
func.func @f(%X: memref<8xf32>) {
  tile.kernel "k" (%x = %X : memref<8xf32>) {
    %a = tile.alloc : !tile.buf<64x2048xf32, cpe1>
    %b = tile.alloc : !tile.buf<64x49xf32, rep>
    %c = tile.alloc : !tile.buf<2048x49xf64, cpe, col>
    tile.gemm %a, %b -> %c m 2048 n 49 k 64 scheme 2 vec m trans_a : !tile.buf<64x2048xf32, cpe1>, !tile.buf<64x49xf32, rep>, !tile.buf<2048x49xf64, cpe, col>
  }
  func.return
}
// CHECK: tile.gemm %a, %b -> %c m 2048 n 49 k 64 scheme 2 vec m trans_a : !tile.buf<64x2048xf32, cpe1>, !tile.buf<64x49xf32, rep>, !tile.buf<2048x49xf64, cpe, col>

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<128x64xf64, cpe, col>
    %b = tile.alloc : !tile.buf<64x32xf64, rep>
    %c = tile.alloc : !tile.buf<128x32xf64, cpe, col>
    tile.gemm %a, %b -> %c m 128 n 32 k 64 scheme 1 vec m : !tile.buf<128x64xf64, cpe, col>, !tile.buf<64x32xf64, rep>, !tile.buf<128x32xf64, cpe, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 1 (overlapping distribution): the per-CPE extent of the vectorised dim M is 2, not a multiple of 4 (vector lanes)

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<256x64xf64, cpe>
    %b = tile.alloc : !tile.buf<64x32xf64, rep>
    %c = tile.alloc : !tile.buf<256x32xf64, cpe>
    tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 1 vec m : !tile.buf<256x64xf64, cpe>, !tile.buf<64x32xf64, rep>, !tile.buf<256x32xf64, cpe>
  }
  func.return
}
// CHECK: tile.gemm scheme 1 (overlapping distribution): %a must store the vectorised dim M contiguously in LDM (vector loads of 4 consecutive elements), but layout row makes K contiguous

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<256x64xf64, cpe>
    %b = tile.alloc : !tile.buf<64x32xf64, rep>
    %c = tile.alloc : !tile.buf<256x32xf64, cpe, col>
    tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 4 vec n : !tile.buf<256x64xf64, cpe>, !tile.buf<64x32xf64, rep>, !tile.buf<256x32xf64, cpe, col>
  }
  func.return
}
// CHECK: tile.gemm scheme 4 (overlapping distribution): %c must store the vectorised dim N contiguously in LDM (vector loads of 4 consecutive elements), but layout col makes M contiguous

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<256x64xf64, cpe>
    %b = tile.alloc : !tile.buf<64x32xf64, rep>
    %c = tile.alloc : !tile.buf<256x32xf64, cpe>
    tile.gemm %a, %b -> %c m 256 n 32 k 64 scheme 3 vec m : !tile.buf<256x64xf64, cpe>, !tile.buf<64x32xf64, rep>, !tile.buf<256x32xf64, cpe>
  }
  func.return
}
// CHECK: tile.gemm scheme 3 (overlapping distribution): vectorises N (Table 4.1), but vec = m

// -----

func.func @f(%X: memref<8xf64>) {
  tile.kernel "k" (%x = %X : memref<8xf64>) {
    %a = tile.alloc : !tile.buf<256x64xf64, cpe>
    %b = tile.alloc : !tile.buf<64x7000xf64, rep>
    %c = tile.alloc : !tile.buf<256x7000xf64, cpe>
    tile.gemm %a, %b -> %c m 256 n 7000 k 64 scheme 3 vec n : !tile.buf<256x64xf64, cpe>, !tile.buf<64x7000xf64, rep>, !tile.buf<256x7000xf64, cpe>
  }
  func.return
}
// CHECK: tile.gemm scheme 3 (overlapping distribution): LDM footprint of A, B, C is 3810048 bytes per CPE > ldm_user_bytes = 57344 (double buffers counted twice): %a 2048 B, %b 3584000 B, %c 224000 B
