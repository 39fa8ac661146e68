// RUN: %taihu-opt %s --split-input-file -p 'tile-layout{buffer=c_s layout=col}' | filecheck %s
// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p 'tile-layout{buffer=c layout=col}' | filecheck %s --check-prefix=GEMM
// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p 'tile-layout{buffer=t layout=col}' | filecheck %s --check-prefix=RANK
// RUN: not %taihu-opt %s --split-input-file -p 'tile-layout{buffer=c_s layout=diag}' 2>&1 | filecheck %s --check-prefix=OPT
// RUN: not %taihu-opt %s --split-input-file -p 'tile-layout{layout=col}' 2>&1 | filecheck %s --check-prefix=NOBUF

// tile-layout (004 L1464, L1484-1489): the LDM layout of a named buffer, for every op using it; the
// verifiers decide.

// OPT: tile-layout: options: layout must be row or col, got 'diag'
// NOBUF: tile-layout: options: option 'buffer' (a tile.alloc SSA name) is required

// The GEMM's output staging tile can be stored column-major: its convert re-lays it (a
// transpose in tile-to-loop) and the store reads the transposed block.
// CHECK-LABEL: func.func @gemm
// CHECK:         %c_s = tile.alloc double : !tile.buf<64x256xf32, rc, col>
// CHECK:         tile.map convert ins(%c : !tile.buf<64x256xf64, rc>) out(%c_s : !tile.buf<64x256xf32, rc, col>)
// CHECK-NEXT:    tile.move %c_s -> %y_1[%cM, %c0] sizes [64, 256] : !tile.buf<64x256xf32, rc, col> -> memref<256x256xf32>
// C itself cannot: the scheme-4 GEMM vectorises N, which must stay contiguous in C.
// GEMM: tile-layout: buffer %c in tile.kernel "y": the result is not a legal tile program: tile.gemm scheme 4: %c must store the vectorised dim N contiguously in LDM (vector loads of 4 consecutive elements), but layout col makes M contiguous
func.func @gemm(%a: memref<256x512xf32>, %b: memref<512x256xf32>, %y: memref<256x256xf32>) {
  tile.kernel "y" (%a_1 = %a : memref<256x512xf32>, %b_1 = %b : memref<512x256xf32>, %y_1 = %y : memref<256x256xf32>) {
    %a_s = tile.alloc double : !tile.buf<64x256xf32, rc>
    %a_2 = tile.alloc : !tile.buf<64x256xf64, rc>
    %b_s = tile.alloc double : !tile.buf<256x256xf32, rc>
    %b_2 = tile.alloc : !tile.buf<256x256xf64, rc>
    %c_s = tile.alloc double : !tile.buf<64x256xf32, rc>
    %c = tile.alloc : !tile.buf<64x256xf64, rc>
    %t = tile.alloc : !tile.buf<8x8x8xf32, rc>
    %c0 = arith.constant 0 : index
    tile.for %cM = 0 to 256 step 64 name "cM" {
      tile.map fill out(%c : !tile.buf<64x256xf64, rc>) {value = 0.000000e+00 : f64}
      tile.for %cK = 0 to 512 step 256 name "cK" {
        tile.move %a_1[%cM, %cK] sizes [64, 256] -> %a_s : memref<256x512xf32> -> !tile.buf<64x256xf32, rc>
        tile.map convert ins(%a_s : !tile.buf<64x256xf32, rc>) out(%a_2 : !tile.buf<64x256xf64, rc>)
        tile.move %b_1[%cK, %c0] sizes [256, 256] -> %b_s : memref<512x256xf32> -> !tile.buf<256x256xf32, rc>
        tile.map convert ins(%b_s : !tile.buf<256x256xf32, rc>) out(%b_2 : !tile.buf<256x256xf64, rc>)
        tile.gemm %a_2, %b_2 -> %c m 64 n 256 k 256 scheme 4 vec n : !tile.buf<64x256xf64, rc>, !tile.buf<256x256xf64, rc>, !tile.buf<64x256xf64, rc>
      }
      tile.map convert ins(%c : !tile.buf<64x256xf64, rc>) out(%c_s : !tile.buf<64x256xf32, rc>)
      tile.move %c_s -> %y_1[%cM, %c0] sizes [64, 256] : !tile.buf<64x256xf32, rc> -> memref<256x256xf32>
    }
  }
  func.return
}

// RANK: tile-layout: buffer %t in tile.kernel "y": the result is not a legal tile program: !tile.buf: layout col is only defined for rank-2 tiles
