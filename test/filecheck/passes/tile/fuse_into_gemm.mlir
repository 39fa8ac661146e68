// RUN: %taihu-opt %s -p 'tile-fuse{loop=cM}' | filecheck %s --check-prefix=M
// RUN: %taihu-opt %s -p 'tile-fuse{loop=cK}' | filecheck %s --check-prefix=K

// tile-fuse{loop=...} into a mesh GEMM (swAutoDNN fuse(l, "op1", inM|inK), 004 L1441, L1482):
// convert-graph-to-tile's 256x256 <- 256x512 * 512x256 GEMM (bm=64 bn=256 bk=256).
//
// Loop cM -- every buffer indexed by cM grows along M (A's staging and fp64 tiles, C and its store
// tile), the fill, the converts and the store grow with them, B's stay; tile.gemm m 64 -> 256.
// The LDM footprint (49152 B per CPE) still fits: the verifiers accept it.
// M:      %a_s = tile.alloc double : !tile.buf<256x256xf32, rc>
// M-NEXT: %a_2 = tile.alloc : !tile.buf<256x256xf64, rc>
// M-NEXT: %b_s = tile.alloc double : !tile.buf<256x256xf32, rc>
// M-NEXT: %b_2 = tile.alloc : !tile.buf<256x256xf64, rc>
// M-NEXT: %c_s = tile.alloc double : !tile.buf<256x256xf32, rc>
// M-NEXT: %c = tile.alloc : !tile.buf<256x256xf64, rc>
// M-NEXT: %c0 = arith.constant 0 : index
// M-NEXT: %cM = arith.constant 0 : index
// M-NEXT: tile.map fill out(%c : !tile.buf<256x256xf64, rc>)
// M-NEXT: tile.for %cK = 0 to 512 step 256 name "cK" {
// M-NEXT:   tile.move %a_1[%cM, %cK] sizes [256, 256] -> %a_s
// M-NEXT:   tile.map convert
// M-NEXT:   tile.move %b_1[%cK, %c0] sizes [256, 256] -> %b_s
// M-NEXT:   tile.map convert
// M-NEXT:   tile.gemm %a_2, %b_2 -> %c m 256 n 256 k 256 scheme 4 vec n
// M-NEXT: }
// M-NEXT: tile.map convert ins(%c : !tile.buf<256x256xf64, rc>) out(%c_s : !tile.buf<256x256xf32, rc>)
// M-NEXT: tile.move %c_s -> %y_1[%cM, %c0] sizes [256, 256]
//
// Loop cK -- A and B grow along K, C keeps accumulating (C += A B over all of K, the same sum up to
// the reassociation of the fp64 additions); tile.gemm k 256 -> 512.
// K:      %a_s = tile.alloc double : !tile.buf<64x512xf32, rc>
// K-NEXT: %a_2 = tile.alloc : !tile.buf<64x512xf64, rc>
// K-NEXT: %b_s = tile.alloc double : !tile.buf<512x256xf32, rc>
// K-NEXT: %b_2 = tile.alloc : !tile.buf<512x256xf64, rc>
// K-NEXT: %c_s = tile.alloc double : !tile.buf<64x256xf32, rc>
// K-NEXT: %c = tile.alloc : !tile.buf<64x256xf64, rc>
// K:      tile.for %cM = 0 to 256 step 64 name "cM" {
// K-NEXT:   tile.map fill out(%c : !tile.buf<64x256xf64, rc>)
// K-NEXT:   %cK = arith.constant 0 : index
// K-NEXT:   tile.move %a_1[%cM, %cK] sizes [64, 512] -> %a_s
// K-NEXT:   tile.map convert
// K-NEXT:   tile.move %b_1[%cK, %c0] sizes [512, 256] -> %b_s
// K-NEXT:   tile.map convert
// K-NEXT:   tile.gemm %a_2, %b_2 -> %c m 64 n 256 k 512 scheme 4 vec n
// K-NEXT:   tile.map convert
// K-NEXT:   tile.move %c_s -> %y_1[%cM, %c0] sizes [64, 256]
// K-NEXT: }
func.func @main(%a: memref<256x512xf32> {graph.name = "a"}, %b: memref<512x256xf32> {graph.name = "b"}) -> (memref<256x256xf32> {graph.name = "y"}) {
  %y = memref.alloc() {alignment = 128 : i64} : memref<256x256xf32>
  tile.kernel "y" (%a_1 = %a : memref<256x512xf32>, %b_1 = %b : memref<512x256xf32>, %y_1 = %y : memref<256x256xf32>) {
    %a_s = tile.alloc double : !tile.buf<64x256xf32, rc>
    %a_2 = tile.alloc : !tile.buf<64x256xf64, rc>
    %b_s = tile.alloc double : !tile.buf<256x256xf32, rc>
    %b_2 = tile.alloc : !tile.buf<256x256xf64, rc>
    %c_s = tile.alloc double : !tile.buf<64x256xf32, rc>
    %c = tile.alloc : !tile.buf<64x256xf64, rc>
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
  func.return %y : memref<256x256xf32>
}
