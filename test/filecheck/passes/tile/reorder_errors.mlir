// RUN: %taihu-opt %s --split-input-file --verify-diagnostics -p 'tile-reorder{loops=b,a}' | filecheck %s
// RUN: not %taihu-opt %s --split-input-file -p 'tile-reorder{loops=a}' 2>&1 | filecheck %s --check-prefix=ONE
// RUN: not %taihu-opt %s --split-input-file -p 'tile-reorder{loops=a,a}' 2>&1 | filecheck %s --check-prefix=TWICE

// Refusals of tile-reorder: one line naming the outer loop and the reason. The legality test is
// conservative (passes/tile/deps.py): what it cannot prove safe is refused.

// ONE: tile-reorder: options: option 'loops' needs at least two loop names, got 'a'
// TWICE: tile-reorder: options: option 'loops' names a loop twice: a, a

// Not a perfect nest: the fill between the loops would run a different number of times.
// CHECK: tile-reorder: tile.for "a" in tile.kernel "k": the loops b, a are not a perfect nest: 'tile.map' between loop 'a' and the loops inside it (only index arithmetic may sit between the loops of a perfect nest)
func.func @imperfect(%x: memref<8x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 8 step 1 name "a" {
      tile.map fill out(%t : !tile.buf<256xf32, cpe>) {value = 0.0 : f64}
      tile.for %b = 0 to 8 step 1 name "b" {
        tile.move %t -> %xa[%a, %b, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<8x8x256xf32>
      }
    }
  }
  func.return
}

// -----

// A sum carried by an in-place map (not a tile.gemm accumulation): refused.
// CHECK: tile-reorder: tile.for "a" in tile.kernel "k": reordering to b, a is not provably safe: buffer %acc carries a value from one iteration to the next (the first access in the body, 'tile.map', reads it before it is overwritten)
func.func @carried(%x: memref<8x8x256xf32>, %y: memref<256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x8x256xf32>, %ya = %y : memref<256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %acc = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.map fill out(%acc : !tile.buf<256xf32, cpe>) {value = 0.0 : f64}
    tile.for %a = 0 to 8 step 1 name "a" {
      tile.for %b = 0 to 8 step 1 name "b" {
        tile.move %xa[%a, %b, %c0] sizes [1, 1, 256] -> %t : memref<8x8x256xf32> -> !tile.buf<256xf32, cpe>
        tile.map add ins(%acc, %t : !tile.buf<256xf32, cpe>, !tile.buf<256xf32, cpe>) out(%acc : !tile.buf<256xf32, cpe>)
      }
    }
    tile.move %acc -> %ya[%c0] sizes [256] : !tile.buf<256xf32, cpe> -> memref<256xf32>
  }
  func.return
}

// -----

// Main memory read and written in the body (here in place): refused, even though each
// iteration touches its own window.
// CHECK: tile-reorder: tile.for "a" in tile.kernel "k": reordering to b, a is not provably safe: main-memory data %x are both read ('tile.move') and written ('tile.move') in the body
func.func @inplace(%x: memref<8x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 8 step 1 name "a" {
      tile.for %b = 0 to 8 step 1 name "b" {
        tile.move %xa[%a, %b, %c0] sizes [1, 1, 256] -> %t : memref<8x8x256xf32> -> !tile.buf<256xf32, cpe>
        tile.map relu ins(%t : !tile.buf<256xf32, cpe>) out(%t : !tile.buf<256xf32, cpe>)
        tile.move %t -> %xa[%a, %b, %c0] sizes [1, 1, 256] : !tile.buf<256xf32, cpe> -> memref<8x8x256xf32>
      }
    }
  }
  func.return
}

// -----

// Every iteration of b stores to the same window: which write is last depends on the order.
// CHECK: tile-reorder: tile.for "a" in tile.kernel "k": reordering to b, a is not provably safe: different iterations write overlapping windows of %y ('tile.move' and 'tile.move'): the last write would change
func.func @overlap(%x: memref<8x8x256xf32>, %y: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x8x256xf32>, %ya = %y : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 8 step 1 name "a" {
      tile.for %b = 0 to 8 step 1 name "b" {
        tile.move %xa[%a, %b, %c0] sizes [1, 1, 256] -> %t : memref<8x8x256xf32> -> !tile.buf<256xf32, cpe>
        tile.move %t -> %ya[%a, %c0] sizes [1, 256] : !tile.buf<256xf32, cpe> -> memref<8x256xf32>
      }
    }
  }
  func.return
}

// -----

// CHECK: tile-reorder: tile.kernel "k": the loops b, a are not nested in one another
func.func @siblings(%x: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 8 step 1 name "a" {
      tile.move %xa[%a, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
    }
    tile.for %b = 0 to 8 step 1 name "b" {
      tile.move %xa[%b, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
    }
  }
  func.return
}

// -----

// CHECK: tile-reorder: tile.for "a" in tile.kernel "k": the loops b, a are not a perfect nest: loop 'm' lies between the listed loops (list it too)
func.func @between(%x: memref<8x2x8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x2x8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 8 step 1 name "a" {
      tile.for %m = 0 to 2 step 1 name "m" {
        tile.for %b = 0 to 8 step 1 name "b" {
          tile.move %xa[%a, %m, %b, %c0] sizes [1, 1, 1, 256] -> %t : memref<8x2x8x256xf32> -> !tile.buf<256xf32, cpe>
        }
      }
    }
  }
  func.return
}

// -----

// CHECK: tile-reorder: tile.kernel "k": no tile.for named 'b'
func.func @missing(%x: memref<8x256xf32>) {
  tile.kernel "k" (%xa = %x : memref<8x256xf32>) {
    %t = tile.alloc : !tile.buf<256xf32, cpe>
    %c0 = arith.constant 0 : index
    tile.for %a = 0 to 8 step 1 name "a" {
      tile.move %xa[%a, %c0] sizes [1, 256] -> %t : memref<8x256xf32> -> !tile.buf<256xf32, cpe>
    }
  }
  func.return
}
