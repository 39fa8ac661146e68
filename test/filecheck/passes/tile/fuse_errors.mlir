// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p 'tile-fuse{outer=a inner=b}' | filecheck %s
// RUN: not %taihu-opt %s --split-input-file -p 'tile-fuse{outer=a}' 2>&1 | filecheck %s --check-prefix=HALF
// RUN: not %taihu-opt %s --split-input-file -p 'tile-fuse{outer=a inner=b loop=a}' 2>&1 | filecheck %s --check-prefix=BOTH

// Refusals of tile-fuse (two loops): one line naming the outer loop and the reason.

// HALF: tile-fuse: options: give outer=A inner=B (two loops) or loop=A (a loop into its primitives)
// BOTH: tile-fuse: options: give either loop=A (into the primitives) or outer=A inner=B, not both

// An op beside the inner loop would run TA times instead of TA*TB times.
// CHECK: tile-fuse: tile.for "a" in tile.kernel "k": loop 'b' is not perfectly nested in it: 'tile.map' sits beside the loops in its body (only index arithmetic may)
func.func @beside(%x: memref<4x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<4x8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 4 step 1 name "a" {
      tile.map fill out(%t : !tile.buf<256xf32, cpe>) {value = 0.0 : f64}
      tile.for %b = 0 to 8 step 1 name "b" {
        tile.move %t -> %xa[%a, %b, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<4x8x256xf32>
      }
    }
  }
  func.return
}

// -----

// CHECK: tile-fuse: tile.for "a" in tile.kernel "k": loop 'b' is not perfectly nested in it: its body is loop 'm'
func.func @other(%x: memref<4x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<4x8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 4 step 1 name "a" {
      tile.for %m = 0 to 2 step 1 name "m" {
        tile.for %b = 0 to 4 step 1 name "b" {
          %r = arith.addi %m, %b : index
          tile.move %t -> %xa[%a, %r, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<4x8x256xf32>
        }
      }
    }
  }
  func.return
}

// -----

// CHECK: tile-fuse: tile.for "a" in tile.kernel "k": loop 'b' is not perfectly nested in it: its body has no loop
func.func @flat(%x: memref<4x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<4x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 4 step 1 name "a" {
      %i = arith.addi %a, %c0 : index
    }
    tile.for %b = 0 to 4 step 1 name "b" {
      tile.move %t -> %xa[%b, %c0] sizes [1, 256] : !tile.buf<256xf32, cpe> -> memref<4x256xf32>
    }
  }
  func.return
}

// -----

// CHECK: tile-fuse: tile.for "a" in tile.kernel "k": the kernel already has a loop named 'a_b' (choose fused=)
func.func @taken(%x: memref<4x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<4x8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 4 step 1 name "a" {
      tile.for %b = 0 to 8 step 1 name "b" {
        tile.move %t -> %xa[%a, %b, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<4x8x256xf32>
      }
    }
    tile.for %ab = 0 to 1 step 1 name "a_b" {
      tile.move %t -> %xa[%ab, %ab, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<4x8x256xf32>
    }
  }
  func.return
}
