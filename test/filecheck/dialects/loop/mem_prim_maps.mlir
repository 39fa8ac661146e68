// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// Loop-only map kinds made by convert-tile-to-loop from tile.im2col (004 L1045-1047) and
// tile.winograd_* (Algorithm 5, L1130-1196) on one CPE's LDM buffers.

func.func @f() {
  loop.spmd "k" ids(%r, %c) () {
    %row = loop.ldm_buffer "row" : !loop.ldm<2x14xf32>
    %col = loop.ldm_buffer "col" : !loop.ldm<2x3x7xf32>
    %w = loop.ldm_buffer "w" : !loop.ldm<8x3x3xf32>
    %u = loop.ldm_buffer "u" : !loop.ldm<16x8xf32>
    %d = loop.ldm_buffer "d" : !loop.ldm<3x9x16xf32>
    %v = loop.ldm_buffer "v" : !loop.ldm<16x4x16xf32>
    %y = loop.ldm_buffer "y" : !loop.ldm<1x7x16xf32>
    loop.map im2col ins(%row : !loop.ldm<2x14xf32>) out(%col : !loop.ldm<2x3x7xf32>) {kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 1>}
    loop.map winograd_filter ins(%w : !loop.ldm<8x3x3xf32>) out(%u : !loop.ldm<16x8xf32>)
    loop.map winograd_input ins(%d : !loop.ldm<3x9x16xf32>) out(%v : !loop.ldm<16x4x16xf32>) {pads = array<i64: 1, 1, 0, 0>}
    loop.map winograd_output ins(%v : !loop.ldm<16x4x16xf32>) out(%y : !loop.ldm<1x7x16xf32>)
  }
  func.return
}

// CHECK:      loop.map im2col ins(%row : !loop.ldm<2x14xf32>) out(%col : !loop.ldm<2x3x7xf32>) {kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 1>}
// CHECK-NEXT: loop.map winograd_filter ins(%w : !loop.ldm<8x3x3xf32>) out(%u : !loop.ldm<16x8xf32>)
// CHECK-NEXT: loop.map winograd_input ins(%d : !loop.ldm<3x9x16xf32>) out(%v : !loop.ldm<16x4x16xf32>) {pads = array<i64: 1, 1, 0, 0>}
// CHECK-NEXT: loop.map winograd_output ins(%v : !loop.ldm<16x4x16xf32>) out(%y : !loop.ldm<1x7x16xf32>)
// CHECK-GENERIC: "loop.map"(%{{.*}}, %{{.*}}) <{kind = #loop<map_kind im2col>, kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 1>}>
