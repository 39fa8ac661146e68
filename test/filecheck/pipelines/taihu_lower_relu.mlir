// One memory-bound layer through every level of taihu-lower (the README's level-by-level example),
// then simulated and checked against the reference by taihu-run.
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-graph-to-tile}' | filecheck %s --check-prefix=TILE
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-tile-to-loop}' | filecheck %s --check-prefix=LOOP
// RUN: %taihu-opt %s -p 'taihu-lower{stop-after=convert-loop-to-sw}' | filecheck %s --check-prefix=SW
// RUN: %taihu-opt %s -p taihu-lower | filecheck %s --check-prefix=SWSIM
// RUN: %taihu-run %s --check --verify | filecheck %s --check-prefix=EXEC

func.func @main(%x: tensor<1x64x56x56xf32> {graph.name = "x"}) -> (tensor<1x64x56x56xf32> {graph.name = "y"}) {
  %y = graph.relu %x : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32>
  func.return %y : tensor<1x64x56x56xf32>
}

// TILE:      func.func @main(%x: memref<1x64x56x56xf32> {graph.name = "x"}) -> (memref<1x64x56x56xf32> {graph.name = "y"})
// TILE:        %y = memref.alloc() {alignment = 128 : i64} : memref<1x64x56x56xf32>
// TILE:        tile.kernel "y" ({{.*}}) attributes {taihu.layer = "y", taihu.op = "graph.relu", taihu.algorithm = "map", taihu.shape = "1x64x56x56 <- 1x64x56x56", taihu.useful_flops = 200704 : i64}
// TILE:          tile.move
// TILE:          tile.map relu
// TILE:          tile.move
// TILE:        func.return %y

// LOOP:      loop.spmd "y" ids(%row, %col) ({{.*}}) attributes {taihu.layer = "y", taihu.op = "graph.relu", taihu.algorithm = "map"
// LOOP:        loop.ldm_buffer
// LOOP:        loop.dma_start
// LOOP:        loop.dma_wait
// LOOP:        loop.map relu
// LOOP:        loop.dma_start
// LOOP:        loop.dma_wait

// SW:      sw.global @x : tensor<1x64x56x56xf32> io input
// SW:      sw.global @y : tensor<1x64x56x56xf32> io output
// SW:      sw.kernel @{{[a-z_0-9]+}}({{.*}}) attributes {taihu.layer = "y", taihu.op = "graph.relu", taihu.algorithm = "map"
// SW:        sw.ldm_alloc
// SW:        sw.dma_get
// SW:        sw.microkernel trip {{[0-9]+}}
// SW:        sw.dma_put
// SW:      func.func @main()
// SW:        sw.spawn
// SW-NEXT:   sw.join

// SWSIM:      swsim.target "sw26010.toml"
// SWSIM:      sw.kernel {{.*}}swsim.ldm_high_water = {{[0-9]+}} : i64, swsim.reply_slots = {{[0-9]+}} : i64}
// SWSIM:        swsim.ldm_addr 0 size {{[0-9]+}}
// SWSIM-NOT:  sw.ldm_alloc

// EXEC:      taihu_lower_relu.mlir on the simulated core group (sw26010.toml): {{[0-9]+}} cycles
// EXEC:      layer {{ +}}algorithm  shape
// EXEC-NEXT: y {{ +}}map {{ +}}1x64x56x56 <- 1x64x56x56 {{.*}} DMA
// EXEC:      output  against    max abs err  max rel err  result
// EXEC-NEXT: y       reference {{.*}} ok
// EXEC-NEXT: wall time: import {{.*}}, convert-graph-to-tile {{.*}}, sw-to-swsim {{[0-9.]+}} s, verify {{[0-9.]+}} s, simulate {{[0-9.]+}} s, reference {{[0-9.]+}} s; total
