// RUN: %taihu-opt %s -p convert-loop-to-sw | filecheck %s
// RUN: %taihu-opt %s -p convert-loop-to-sw,convert-sw-to-swsim -o %t.mlir && %taihu-run %t.mlir --quiet

// loop.map -> register micro-kernels (loop_to_sw/maps.py): vector units (VLDS/VSTS), broadcast
// operands as replicated loads (LDSE), fp constants in r30.. (sw.ldfi in a trip-1 micro-kernel),
// scalar units for strided windows (LDSE/FSTS), compare + select for max, the softmax phases.

builtin.module {
  func.func @main(%x: memref<64x64xf32> {graph.name = "in"}, %bias: memref<64x8xf32> {graph.name = "bias"}) -> (memref<64x64xf32> {graph.name = "out"}) {
    %y = memref.alloc() {alignment = 128 : i64} : memref<64x64xf32>
    loop.spmd "maps" ids(%row, %col) (%a = %x : memref<64x64xf32>, %bb = %bias : memref<64x8xf32>, %b = %y : memref<64x64xf32>) {
      %buf = loop.ldm_buffer "x" : !loop.ldm<8x8xf32>
      %bv = loop.ldm_buffer "b" : !loop.ldm<8x1xf32>
      %out = loop.ldm_buffer "y" : !loop.ldm<8x8xf32>
      %pool = loop.ldm_buffer "p" : !loop.ldm<3x3xf32>
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %r8 = arith.muli %row, %c8 : index
      %id = arith.addi %r8, %col : index
      %t = loop.dma_start %a[%id, %c0] sizes [1, 64] -> %buf : memref<64x64xf32> -> !loop.ldm<8x8xf32>
      loop.dma_wait %t
      %t2 = loop.dma_start %bb[%id, %c0] sizes [1, 8] -> %bv : memref<64x8xf32> -> !loop.ldm<8x1xf32>
      loop.dma_wait %t2
      loop.map relu ins(%buf : !loop.ldm<8x8xf32>) out(%buf : !loop.ldm<8x8xf32>)
      loop.map add ins(%buf, %bv : !loop.ldm<8x8xf32>, !loop.ldm<8x1xf32>) out(%out : !loop.ldm<8x8xf32>)
      loop.map leaky_relu ins(%out : !loop.ldm<8x8xf32>) out(%out : !loop.ldm<8x8xf32>) {alpha = 0.25 : f64}
      loop.map max_pool ins(%out : !loop.ldm<8x8xf32>) out(%pool : !loop.ldm<3x3xf32>) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>}
      loop.map softmax ins(%buf : !loop.ldm<8x8xf32>) out(%out : !loop.ldm<8x8xf32>) {axis = 1 : i64}
      %p = loop.dma_start %out -> %b[%id, %c0] sizes [1, 64] : !loop.ldm<8x8xf32> -> memref<64x64xf32>
      loop.dma_wait %p
    }
    func.return %y : memref<64x64xf32>
  }
}

// In-place relu: 16 vector units (64 f32) as 2 iterations of 8 units, VFSELLT x, 0, x.
// CHECK:      sw.microkernel trip 2 (%x step 128, %x step 128) attributes {name = "relu"} {
// CHECK-NEXT:   sw.vlds r{{[0-9]+}}, 0(p0)
// CHECK:        sw.vfsellt r[[R:[0-9]+]], r31, r[[R]], r{{[0-9]+}}
// CHECK:        sw.vsts r{{[0-9]+}}, 112(p1)
// CHECK-NEXT: }

// Per-row bias (8x1 broadcast to 8x8): vector units of the rows, the bias replicated by LDSE.
// CHECK:      sw.microkernel trip 2 (%x step 128, %b_1 step 16, %y step 128) attributes {name = "add"} {
// CHECK:        sw.ldse r{{[0-9]+}}, 0(p1)
// CHECK:        sw.ldse r{{[0-9]+}}, 4(p1)
// CHECK:        sw.vaddd
// CHECK:        sw.vsts r{{[0-9]+}}, 112(p2)

// leaky_relu: alpha loaded once into r30, then y = x < 0 ? alpha*x : x.
// CHECK:      sw.microkernel trip 1 () attributes {name = "leaky_relu.consts"} {
// CHECK-NEXT:   sw.ldfi r30, 0.25
// CHECK-NEXT: }
// CHECK:      sw.microkernel trip 2 (%y step 128, %y step 128) attributes {name = "leaky_relu"} {
// CHECK:        sw.vmuld r{{[0-9]+}}, r30, r{{[0-9]+}}
// CHECK:        sw.vfsellt

// 3x3 stride-2 max pool: packed units (3 outputs of a row, scalar loads moved into lanes with
// VINSF, results stored lane by lane via VEXTF), all 3 output rows in one body.
// CHECK:      sw.microkernel trip 1 (%y step 192, %p step 36) attributes {name = "max_pool.max"} {
// CHECK:        sw.ldse r{{[0-9]+}}, 0(p0)
// CHECK:        sw.vinsf
// CHECK:        sw.vfcmplt
// CHECK:        sw.vfseleq
// CHECK:        sw.vextf
// CHECK:        sw.fsts r{{[0-9]+}}, 32(p1)
// CHECK-NEXT: }

// softmax along the rows: max -> y[:, 7] (rows of 8 f32 are aligned: 2 vector loads per row,
// then across the lanes), exp of the main taps, 1/sum -> y[:, 6], scale, tail;
// exp constants: clamp -87, Taylor coefficients of p(x / 2^10): 2^(-10j) / j!, j = 6 .. 0.
// CHECK:      sw.microkernel trip 2 (%x step 128, %y step 128) attributes {name = "softmax.max"} {
// CHECK:        sw.vlds r{{[0-9]+}}, 16(p0)
// CHECK:        sw.vextf r{{[0-9]+}}, 3, r{{[0-9]+}}
// CHECK:        sw.fsts r{{[0-9]+}}, 28(p1)
// CHECK:      sw.microkernel trip 1 () attributes {name = "softmax.exp.consts"} {
// CHECK-NEXT:   sw.ldfi r30, -87.0
// CHECK-NEXT:   sw.ldfi r29, 1.2046690805394494e-21
// CHECK-NEXT:   sw.ldfi r28, 7.401486830834377e-18
// CHECK:        sw.ldfi r24, 0.0009765625
// CHECK-NEXT:   sw.ldfi r23, 1.0
// CHECK:      sw.microkernel trip 1 (%x step 256, %y step 256, %y step 256) attributes {name = "softmax.exp"} {
// CHECK:        sw.vmad
// CHECK:      attributes {name = "softmax.sum"}
// CHECK:        sw.vdivs
// CHECK:      attributes {name = "softmax.scale"}
// CHECK:      attributes {name = "softmax.tail"}
