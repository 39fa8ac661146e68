// RUN: %taihu-opt %s -p 'tile-split{loop=i factor=2},tile-split{loop=j factor=2},tile-reorder{loops=i_o,j_o,i_i,j_i}' | filecheck %s --check-prefix=TILE
// RUN: %taihu-opt %s -p 'tile-reorder{loops=i,j}' | filecheck %s --check-prefix=SAME

// tile-reorder (004 L1482: the for nodes are re-ordered; DSL reorder({...}), L1440).

// Tiling = split, split, reorder (001 eq 4.4-4.5): the iterators rebuilt by the splits sink to
// the innermost body; the body is a private tile per iteration, stored to disjoint windows.
// TILE-LABEL: func.func @tiling
// TILE:         tile.for %i_o = 0 to 64 step 16 name "i_o" {
// TILE-NEXT:      tile.for %j_o = 0 to 512 step 256 name "j_o" {
// TILE-NEXT:        tile.for %i_i = 0 to 16 step 8 name "i_i" {
// TILE-NEXT:          tile.for %j_i = 0 to 256 step 128 name "j_i" {
// TILE-NEXT:            %i = arith.addi %i_o, %i_i : index
// TILE-NEXT:            %j = arith.addi %j_o, %j_i : index
// TILE-NEXT:            tile.move %xa[%i, %j] sizes [8, 128] -> %t
// TILE-NEXT:            tile.map relu
// TILE-NEXT:            tile.move %t -> %ya[%i, %j] sizes [8, 128]
// TILE-NEXT:          }
// TILE-NEXT:        }
// TILE-NEXT:      }
// TILE-NEXT:    }
// The order given is the current one: nothing changes.
// SAME-LABEL: func.func @tiling
// SAME:         tile.for %i = 0 to 64 step 8 name "i" {
// SAME-NEXT:      tile.for %j = 0 to 512 step 128 name "j" {
func.func @tiling(%x: memref<64x512xf32>, %y: memref<64x512xf32>) {
  tile.kernel "relu" (%xa = %x : memref<64x512xf32>, %ya = %y : memref<64x512xf32>) {
    %t = tile.alloc double : !tile.buf<8x128xf32, rc>
    tile.for %i = 0 to 64 step 8 name "i" {
      tile.for %j = 0 to 512 step 128 name "j" {
        tile.move %xa[%i, %j] sizes [8, 128] -> %t : memref<64x512xf32> -> !tile.buf<8x128xf32, rc>
        tile.map relu ins(%t : !tile.buf<8x128xf32, rc>) out(%t : !tile.buf<8x128xf32, rc>)
        tile.move %t -> %ya[%i, %j] sizes [8, 128] : !tile.buf<8x128xf32, rc> -> memref<64x512xf32>
      }
    }
  }
  func.return
}
