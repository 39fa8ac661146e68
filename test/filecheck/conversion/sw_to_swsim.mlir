// RUN: %taihu-opt %s -p sw-to-swsim | filecheck %s
// RUN: %taihu-opt %s -p sw-to-swsim | %taihu-opt | filecheck %s

sw.global @X : tensor<256xf64> io input
sw.kernel @k(%x: i64) {
  %a = sw.ldm_alloc 100
  %b = sw.ldm_alloc 1024 align 128
  %rw = sw.reply_alloc
  %rw2 = sw.reply_alloc
  sw.dma_get %x -> %b, %rw size 1024
  sw.dma_wait %rw, 1
  sw.ldm_free %a
}
func.func @main() {
  %p = sw.global_addr @X
  sw.spawn @k(%p)
  sw.join
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   swsim.target "sw26010.toml" {f_clk_ghz = 1.450000e+00 : f64, {{.*}}dma_latency = 200 : i64, {{.*}}instructions = {{{.*}}vmad = {pipes = "P0", latency = 7 : i64}
// CHECK:        sw.kernel @k(%x: i64) attributes {swsim.ldm_high_water = 1152 : i64, swsim.reply_slots = 2 : i64} {
// CHECK-NEXT:     %a = swsim.ldm_addr 0 size 100
// CHECK-NEXT:     %b = swsim.ldm_addr 128 size 1024
// CHECK-NEXT:     %rw = swsim.reply_slot 0
// CHECK-NEXT:     %rw2 = swsim.reply_slot 1
// CHECK-NEXT:     sw.dma_get %x -> %b, %rw size 1024
// CHECK-NEXT:     sw.dma_wait %rw, 1
// CHECK-NEXT:   }
