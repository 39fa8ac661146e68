// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// tile.kernel / tile.for / tile.alloc structure and the kernel's LDM footprint.

// Per-CPE footprint: A 256x64 f64 -> 32x8 x 8 B = 2048 B, double -> 4096; B 64x256 double -> 4096;
// C 256x256 -> 8192; big 704x512 -> 88x64 x 8 B = 45056. Total 61440 > 57344 [param].
func.func @f(%A: memref<1024x1024xf64>) {
  tile.kernel "gemm" (%a = %A : memref<1024x1024xf64>) {
    %ta = tile.alloc double : !tile.buf<256x64xf64, cr, col>
    %tb = tile.alloc double : !tile.buf<64x256xf64, cr>
    %tc = tile.alloc : !tile.buf<256x256xf64, cr, col>
    %big = tile.alloc : !tile.buf<704x512xf64, rc>
  }
  func.return
}
// CHECK: tile.kernel "gemm": LDM footprint 61440 bytes per CPE > ldm_user_bytes = 57344: %ta 4096 B, %tb 4096 B, %tc 8192 B, %big 45056 B

// -----

// cpe tiles: ceil(100 / 64) = 2 rows per CPE of 7168 f32 = 57344 B: fits exactly; a second one does not.
func.func @f(%A: memref<100x7168xf32>) {
  tile.kernel "k" (%a = %A : memref<100x7168xf32>) {
    %t = tile.alloc : !tile.buf<100x7168xf32, cpe>
    %r = tile.alloc : !tile.buf<1x8xf32, rep>
  }
  func.return
}
// CHECK: tile.kernel "k": LDM footprint 57376 bytes per CPE > ldm_user_bytes = 57344: %t 57344 B, %r 32 B

// -----

func.func @f(%A: memref<?x64xf64>) {
  tile.kernel "dyn" (%a = %A : memref<?x64xf64>) {
  }
  func.return
}
// CHECK: 'tile.kernel': argument #0 must have a static shape, got memref<?x64xf64>

// -----

func.func @f(%A: memref<64x64xf64, strided<[128, 1]>>) {
  tile.kernel "strided" (%a = %A : memref<64x64xf64, strided<[128, 1]>>) {
  }
  func.return
}
// CHECK: 'tile.kernel': argument #0 must use the identity (row-major) layout in main memory

// -----

func.func @f(%A: memref<64x64xi32>) {
  tile.kernel "int" (%a = %A : memref<64x64xi32>) {
  }
  func.return
}
// CHECK: 'tile.kernel': argument #0 element type must be f32 or f64, got i32

// -----

func.func @f(%A: memref<64xf64>) {
  "tile.kernel"(%A) <{kernel_name = "k"}> ({
  ^bb0(%a: memref<64xf32>):
  }) : (memref<64xf64>) -> ()
  func.return
}
// CHECK: tile.kernel "k": block argument #0 has type memref<64xf32>, operand has memref<64xf64>

// -----

func.func @f(%A: memref<64xf64>) {
  tile.kernel "k" (%a = %A : memref<64xf64>) {
    tile.for %i = 0 to 64 step 0 {
    }
  }
  func.return
}
// CHECK: tile.for: step must be > 0, got 0

// -----

func.func @f(%A: memref<64xf64>) {
  tile.kernel "k" (%a = %A : memref<64xf64>) {
    tile.for %i = 64 to 64 step 8 {
    }
  }
  func.return
}
// CHECK: tile.for: empty loop (64 to 64)

// -----

func.func @f() {
  tile.for %i = 0 to 64 step 8 {
  }
  func.return
}
// CHECK: 'tile.for' must be inside a tile.kernel

// -----

func.func @f(%A: memref<64xf64>) {
  tile.kernel "k" (%a = %A : memref<64xf64>) {
    tile.for %i = 0 to 64 step 8 {
      %t = tile.alloc : !tile.buf<64xf64, cpe>
    }
  }
  func.return
}
// CHECK: tile.alloc must be directly in a tile.kernel body (not in a loop)
