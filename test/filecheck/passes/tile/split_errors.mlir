// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p 'tile-split{loop=cK factor=4}' | filecheck %s
// RUN: not %taihu-opt %s --split-input-file -p 'tile-split{loop=cK factor=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not %taihu-opt %s --split-input-file -p 'tile-split{factor=2}' 2>&1 | filecheck %s --check-prefix=NOLOOP
// RUN: not %taihu-opt %s --split-input-file -p 'tile-split{loop=cK factor=2 outer=a inner=a}' 2>&1 | filecheck %s --check-prefix=SAME
// RUN: not %taihu-opt %s --split-input-file -p 'tile-split{loop=cK factor=2 kernel=zz}' 2>&1 | filecheck %s --check-prefix=KERNEL

// Every refusal of tile-split is one line naming the loop (or the option) and the reason.

// ZERO: tile-split: tile.for "cK" in tile.kernel "k": factor must be >= 1, got 0
// NOLOOP: tile-split: options: option 'loop' (a tile.for name) is required
// SAME: tile-split: options: outer and inner loops need different names, got 'a' twice
// KERNEL: tile-split: module: no tile.kernel named 'zz' (kernels: k)

// F must divide the trip count (FlexTensor's divisor-only factors, 001 L1440).
// CHECK: tile-split: tile.for "cK" in tile.kernel "k": factor 4 does not divide the trip count 6 (0 to 6 step 1); divisors: 1, 2, 3, 6
func.func @ragged(%x: memref<6x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<6x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %k = 0 to 6 step 1 name "cK" {
      tile.move %xa[%k, %c0] sizes [1, 256] -> %t : memref<6x256xf32> -> !tile.buf<256xf32, cpe>
    }
  }
  func.return
}

// -----

// Two loops of one name in a kernel: the option cannot say which.
// CHECK: tile-split: tile.kernel "k": 2 tile.for loops are named 'cK'; name them apart
func.func @twice(%x: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %k = 0 to 8 step 1 name "cK" {
      tile.move %xa[%k, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
    }
    tile.for %k2 = 0 to 8 step 1 name "cK" {
      tile.move %xa[%k2, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
    }
  }
  func.return
}

// -----

// The default name of the outer loop is taken.
// CHECK: tile-split: tile.for "cK" in tile.kernel "k": the kernel already has a loop named 'cK_o' (choose outer=/inner=)
func.func @taken(%x: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %o = 0 to 1 step 1 name "cK_o" {
      tile.for %k = 0 to 8 step 1 name "cK" {
        tile.move %xa[%k, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
      }
    }
  }
  func.return
}

// -----

// No loop of that name: the diagnostic lists the loops there are.
// CHECK: tile-split: module: no tile.for named 'cK' (loops: i, j)
func.func @missing(%x: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %i = 0 to 2 step 1 name "i" {
      tile.for %j = 0 to 4 step 1 {
        %r = arith.addi %i, %j : index
        tile.move %xa[%r, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
      }
    }
  }
  func.return
}

// -----

// Nothing to schedule before convert-graph-to-tile.
// CHECK: tile-split: module: no tile.kernel to schedule (run convert-graph-to-tile first)
func.func @graph(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
