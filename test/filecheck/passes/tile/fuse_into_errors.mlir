// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p 'tile-fuse{loop=f}' | filecheck %s

// Refusals of tile-fuse{loop=...} (a loop into its primitives, passes/tile/grow.py): one line
// naming the loop and why the loop's iterations cannot become one execution on larger tiles.

// Windows 2 rows apart, 1 row each: they leave gaps (a convolution's sliding rows overlap
// instead); no single window covers exactly the union.
// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: the windows of a 'tile.move' on %t are not consecutive along dim 0 (offset step 2, window 1 x stride 1)
func.func @gaps(%x: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %f = 0 to 8 step 2 name "f" {
      tile.move %xa[%f, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
    }
  }
  func.return
}

// -----

// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: the window of a 'tile.move' on %t advances with the loop along 2 dims (one at most)
func.func @diagonal(%x: memref<8x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %f = 0 to 8 step 1 name "f" {
      tile.move %xa[%f, %f, %c0] sizes [1, 1, 256] -> %t : memref<8x8x256xf32> -> !tile.buf<256xf32, cpe>
    }
  }
  func.return
}

// -----

// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: 'tile.map reduce_sum' (reduce) ties its shape to the loop; only element-wise maps can grow
func.func @reduce(%x: memref<8x64x8xf32>, %y: memref<8x64x1xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x64x8xf32>, %ya = %y : memref<8x64x1xf32>) {
    %t = tile.alloc : !tile.buf<64x8xf32, cpe>
    %u = tile.alloc : !tile.buf<64x1xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %f = 0 to 8 step 1 name "f" {
      tile.move %xa[%f, %c0, %c0] sizes [1, 64, 8] -> %t : memref<8x64x8xf32> -> !tile.buf<64x8xf32, cpe>
      tile.map reduce_sum ins(%t : !tile.buf<64x8xf32, cpe>) out(%u : !tile.buf<64x1xf32, cpe>) {axis = 1 : i64}
      tile.move %u -> %ya[%f, %c0, %c0] sizes [1, 64, 1] : !tile.buf<64x1xf32, cpe> -> memref<8x64x1xf32>
    }
  }
  func.return
}

// -----

// The GEMM's operands do not depend on the loop: it adds A x B four times.
// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: 'tile.gemm' into %c does not depend on the loop: fused, it would add its product once instead of 4 times
func.func @invariant_gemm(%y: memref<32x128xf64>) {
  tile.kernel "k" (%ya = %y : memref<32x128xf64>) {
    %a = tile.alloc : !tile.buf<32x8xf64, rc>
    %b = tile.alloc : !tile.buf<8x128xf64, rc>
    %c = tile.alloc : !tile.buf<32x128xf64, rc>
    %c0 = arith.constant 0 : index
    tile.map fill out(%a : !tile.buf<32x8xf64, rc>) {value = 1.0 : f64}
    tile.map fill out(%b : !tile.buf<8x128xf64, rc>) {value = 1.0 : f64}
    tile.map fill out(%c : !tile.buf<32x128xf64, rc>) {value = 0.0 : f64}
    tile.for %f = 0 to 4 step 1 name "f" {
      tile.gemm %a, %b -> %c m 32 n 128 k 8 scheme 4 vec n : !tile.buf<32x8xf64, rc>, !tile.buf<8x128xf64, rc>, !tile.buf<32x128xf64, rc>
    }
    tile.move %c -> %ya[%c0, %c0] sizes [32, 128] : !tile.buf<32x128xf64, rc> -> memref<32x128xf64>
  }
  func.return
}

// -----

// A along M and B along N: the GEMM cannot grow along two dims at once.
// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: a 'tile.gemm' would grow along M and N
func.func @two_dims(%x: memref<128x8xf64>, %w: memref<8x512xf64>) {
  tile.kernel "k" (%xa = %x : memref<128x8xf64>, %wa = %w : memref<8x512xf64>) {
    %a = tile.alloc : !tile.buf<32x8xf64, rc>
    %b = tile.alloc : !tile.buf<8x128xf64, rc>
    %c = tile.alloc : !tile.buf<32x128xf64, rc>
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    tile.for %f = 0 to 4 step 1 name "f" {
      %m = arith.muli %f, %c32 : index
      tile.move %xa[%m, %c0] sizes [32, 8] -> %a : memref<128x8xf64> -> !tile.buf<32x8xf64, rc>
      %n = arith.muli %f, %c128 : index
      tile.move %wa[%c0, %n] sizes [8, 128] -> %b : memref<8x512xf64> -> !tile.buf<8x128xf64, rc>
      tile.map fill out(%c : !tile.buf<32x128xf64, rc>) {value = 0.0 : f64}
      tile.gemm %a, %b -> %c m 32 n 128 k 8 scheme 4 vec n : !tile.buf<32x8xf64, rc>, !tile.buf<8x128xf64, rc>, !tile.buf<32x128xf64, rc>
    }
  }
  func.return
}

// -----

// The tile would grow but the loop's result is read after the loop.
// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: buffer %t would grow but is also used outside the loop ('tile.move')
func.func @used_after(%x: memref<8x256xf32>, %y: memref<256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>, %ya = %y : memref<256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %f = 0 to 8 step 1 name "f" {
      tile.move %xa[%f, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
    }
    tile.move %t -> %ya[%c0] sizes [256] : !tile.buf<256xf32, cpe> -> memref<256xf32>
  }
  func.return
}

// -----

// The first access reads the tile: its value would flow from one iteration to the next.
// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: buffer %t would grow but its first access in the loop ('tile.map') reads it
func.func @read_first(%y: memref<8x256xf32>) {
  tile.kernel "k" (%ya = %y : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %f = 0 to 8 step 1 name "f" {
      tile.map relu ins(%t : !tile.buf<256xf32, cpe>) out(%t : !tile.buf<256xf32, cpe>)
      tile.move %t -> %ya[%f, %c0] sizes [1, 256] : !tile.buf<256xf32, cpe> -> memref<8x256xf32>
    }
  }
  func.return
}

// -----

// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": cannot fuse the loop into its primitives: main-memory data %x are both read ('tile.move') and written in the loop
func.func @inplace(%x: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %f = 0 to 8 step 1 name "f" {
      tile.move %xa[%f, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
      tile.move %t -> %xa[%f, %c0] sizes [1, 256] : !tile.buf<256xf32, cpe> -> memref<8x256xf32>
    }
  }
  func.return
}

// -----

// Fusion is legal, but the fused tile does not fit LDM: the kernel verifier's rule is reported.
// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": the result is not a legal tile program: tile.kernel "k": LDM footprint 100352 bytes per CPE > ldm_user_bytes = 57344: %t 100352 B
func.func @ldm(%x: memref<802816xf32>, %y: memref<802816xf32>) {
  tile.kernel "k" (%xa = %x : memref<802816xf32>, %ya = %y : memref<802816xf32>) {
    %t = tile.alloc double : !tile.buf<100352xf32, cpe>
    tile.for %f = 0 to 802816 step 100352 name "f" {
      tile.move %xa[%f] sizes [100352] -> %t : memref<802816xf32> -> !tile.buf<100352xf32, cpe>
      tile.map relu ins(%t : !tile.buf<100352xf32, cpe>) out(%t : !tile.buf<100352xf32, cpe>)
      tile.move %t -> %ya[%f] sizes [100352] : !tile.buf<100352xf32, cpe> -> memref<802816xf32>
    }
  }
  func.return
}

// -----

// The grown tile gains a leading dim of 4, which the rc distribution cannot split 8 ways.
// CHECK: tile-fuse: tile.for "f" in tile.kernel "k": the result is not a legal tile program: !tile.buf: distribution rc needs a rank >= 2 shape with dims 0 and 1 multiples of 8, got [4, 8, 128]
func.func @distribution(%x: memref<4x8x128xf32>, %y: memref<4x8x128xf32>) {
  tile.kernel "k" (%xa = %x : memref<4x8x128xf32>, %ya = %y : memref<4x8x128xf32>) {
    %t = tile.alloc : !tile.buf<8x128xf32, rc>
    %c0 = arith.constant 0 : index
    tile.for %f = 0 to 4 step 1 name "f" {
      tile.move %xa[%f, %c0, %c0] sizes [1, 8, 128] -> %t : memref<4x8x128xf32> -> !tile.buf<8x128xf32, rc>
      tile.move %t -> %ya[%f, %c0, %c0] sizes [1, 8, 128] : !tile.buf<8x128xf32, rc> -> memref<4x8x128xf32>
    }
  }
  func.return
}
