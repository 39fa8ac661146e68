// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// Round trip of every sw op (custom form -> generic -> custom).

builtin.module {
  sw.global @A : tensor<8x8xf64> io input
  sw.global @C : tensor<2x2xf32> = dense<1.000000e+00> : tensor<2x2xf32> io output
  sw.global @T : tensor<4xi64>
  sw.kernel @k(%a: i64, %n: i64) {
    %id = sw.cpe_id
    %row = sw.row_id
    %col = sw.col_id
    %buf = sw.ldm_alloc 512
    %buf2 = sw.ldm_alloc 1024 align 128
    %rw = sw.reply_alloc
    sw.reply_reset %rw
    sw.dma_get %a -> %buf, %rw size 512
    sw.dma_get %a -> %buf2, %rw size 1024 bsize 256 stride 768
    sw.dma_get %a -> %buf2, %rw size 1024 mode bcast mask 255
    sw.dma_put %buf -> %a, %rw size 512 bsize 64 stride 64 mode pe
    sw.dma_wait %rw, 4
    sw.dma_wait %rw, %n
    sw.barrier array
    sw.barrier row mask 255
    sw.synr mask 255
    sw.sync
    sw.microkernel trip 4 (%buf step 32, %buf2 step 8, %a step 32 mem) {
      sw.vldd r0, 0(p0)
      sw.vlds r1, 16(p0)
      sw.ldde r2, 8(p1)
      sw.ldse r3, 4(p1)
      sw.ldl r4, 0(p1)
      sw.ldw r5, 4(p1, r6)
      sw.vstd r0, 0(p0)
      sw.vsts r1, 16(p0)
      sw.stl r4, 0(p1)
      sw.stw r5, 4(p1)
      sw.gld r7, 0(p2)
      sw.gstd r7, 32(p2)
      sw.vldr r8, 0(p0)
      sw.vldc r9, 32(p0)
      sw.ldder r10, 0(p1)
      sw.lddec r11, 8(p1) : f64
      sw.vaddd r0, r1, r2
      sw.vadds r0, r1, r2
      sw.vsubd r0, r1, r2
      sw.vsubs r0, r1, r2
      sw.vmuld r0, r1, r2
      sw.vmuls r0, r1, r2
      sw.vmad r0, r1, r2
      sw.vmad r0, r1, r2, r3
      sw.vmas r0, r1, r2
      sw.addl r4, 8, r4
      sw.subl r4, r5, r4
      sw.addw r4, -1, r4
      sw.subw r4, 1, r4
      sw.s4addl r4, r5, r6
      sw.s8addl r4, r5, r6
      sw.mull r4, r5, r6
      sw.mulw r4, 3, r6
      sw.sll r4, 3, r6
      sw.srl r4, 3, r6
      sw.sra r4, 3, r6
      sw.cmpeq r4, r31, r6
      sw.cmplt r4, r5, r6
      sw.cmple r4, 0, r6
      sw.vinsw r4, r12, 3, r12
      sw.vextw r12, 3, r4
      sw.putr r0, 8
      sw.putc r0, 3
      sw.getr r13
      sw.getc r14
      sw.nop
      sw.bgt r4
    }
    sw.ldm_free %buf
  }
  func.func @main() {
    %p = sw.global_addr @A
    %q = sw.mem_alloc 4096
    sw.spawn @k(%p, %q)
    sw.join
    func.return
  }
}

// CHECK:       sw.global @A : tensor<8x8xf64> io input
// CHECK-NEXT:  sw.global @C : tensor<2x2xf32> = dense<1.000000e+00> : tensor<2x2xf32> io output
// CHECK-NEXT:  sw.global @T : tensor<4xi64>
// CHECK-NEXT:  sw.kernel @k(%a: i64, %n: i64) {
// CHECK-NEXT:    %id = sw.cpe_id
// CHECK-NEXT:    %row = sw.row_id
// CHECK-NEXT:    %col = sw.col_id
// CHECK-NEXT:    %buf = sw.ldm_alloc 512
// CHECK-NEXT:    %buf2 = sw.ldm_alloc 1024 align 128
// CHECK-NEXT:    %rw = sw.reply_alloc
// CHECK-NEXT:    sw.reply_reset %rw
// CHECK-NEXT:    sw.dma_get %a -> %buf, %rw size 512
// CHECK-NEXT:    sw.dma_get %a -> %buf2, %rw size 1024 bsize 256 stride 768
// CHECK-NEXT:    sw.dma_get %a -> %buf2, %rw size 1024 mode bcast mask 255
// CHECK-NEXT:    sw.dma_put %buf -> %a, %rw size 512 bsize 64 stride 64 mode pe
// CHECK-NEXT:    sw.dma_wait %rw, 4
// CHECK-NEXT:    sw.dma_wait %rw, %n
// CHECK-NEXT:    sw.barrier array
// CHECK-NEXT:    sw.barrier row mask 255
// CHECK-NEXT:    sw.synr mask 255
// CHECK-NEXT:    sw.sync
// CHECK-NEXT:    sw.microkernel trip 4 (%buf step 32, %buf2 step 8, %a step 32 mem) {
// CHECK-NEXT:      sw.vldd r0, 0(p0)
// CHECK-NEXT:      sw.vlds r1, 16(p0)
// CHECK-NEXT:      sw.ldde r2, 8(p1)
// CHECK-NEXT:      sw.ldse r3, 4(p1)
// CHECK-NEXT:      sw.ldl r4, 0(p1)
// CHECK-NEXT:      sw.ldw r5, 4(p1, r6)
// CHECK-NEXT:      sw.vstd r0, 0(p0)
// CHECK-NEXT:      sw.vsts r1, 16(p0)
// CHECK-NEXT:      sw.stl r4, 0(p1)
// CHECK-NEXT:      sw.stw r5, 4(p1)
// CHECK-NEXT:      sw.gld r7, 0(p2)
// CHECK-NEXT:      sw.gstd r7, 32(p2)
// CHECK-NEXT:      sw.vldr r8, 0(p0)
// CHECK-NEXT:      sw.vldc r9, 32(p0)
// CHECK-NEXT:      sw.ldder r10, 0(p1)
// CHECK-NEXT:      sw.lddec r11, 8(p1) : f64
// CHECK-NEXT:      sw.vaddd r0, r1, r2
// CHECK-NEXT:      sw.vadds r0, r1, r2
// CHECK-NEXT:      sw.vsubd r0, r1, r2
// CHECK-NEXT:      sw.vsubs r0, r1, r2
// CHECK-NEXT:      sw.vmuld r0, r1, r2
// CHECK-NEXT:      sw.vmuls r0, r1, r2
// CHECK-NEXT:      sw.vmad r0, r1, r2
// CHECK-NEXT:      sw.vmad r0, r1, r2, r3
// CHECK-NEXT:      sw.vmas r0, r1, r2
// CHECK-NEXT:      sw.addl r4, 8, r4
// CHECK-NEXT:      sw.subl r4, r5, r4
// CHECK-NEXT:      sw.addw r4, -1, r4
// CHECK-NEXT:      sw.subw r4, 1, r4
// CHECK-NEXT:      sw.s4addl r4, r5, r6
// CHECK-NEXT:      sw.s8addl r4, r5, r6
// CHECK-NEXT:      sw.mull r4, r5, r6
// CHECK-NEXT:      sw.mulw r4, 3, r6
// CHECK-NEXT:      sw.sll r4, 3, r6
// CHECK-NEXT:      sw.srl r4, 3, r6
// CHECK-NEXT:      sw.sra r4, 3, r6
// CHECK-NEXT:      sw.cmpeq r4, r31, r6
// CHECK-NEXT:      sw.cmplt r4, r5, r6
// CHECK-NEXT:      sw.cmple r4, 0, r6
// CHECK-NEXT:      sw.vinsw r4, r12, 3, r12
// CHECK-NEXT:      sw.vextw r12, 3, r4
// CHECK-NEXT:      sw.putr r0, 8
// CHECK-NEXT:      sw.putc r0, 3
// CHECK-NEXT:      sw.getr r13
// CHECK-NEXT:      sw.getc r14
// CHECK-NEXT:      sw.nop
// CHECK-NEXT:      sw.bgt r4
// CHECK-NEXT:    }
// CHECK-NEXT:    sw.ldm_free %buf
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @main() {
// CHECK-NEXT:    %p = sw.global_addr @A
// CHECK-NEXT:    %q = sw.mem_alloc 4096
// CHECK-NEXT:    sw.spawn @k(%p, %q)
// CHECK-NEXT:    sw.join
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// CHECK-GENERIC: "sw.kernel"() <{sym_name = "k"}> ({
// CHECK-GENERIC: "sw.dma_get"(%{{.*}}, %{{.*}}, %{{.*}}) <{size = 1024 : i64, mode = #sw<dma_mode bcast>, mask = 255 : i64}> : (i64, i64, !sw.reply) -> ()
// CHECK-GENERIC: "sw.microkernel"(%{{.*}}, %{{.*}}, %{{.*}}) <{trip_count = 4 : i64, strides = array<i64: 32, 8, 32>, mem_ptrs = array<i64: 2>}>
// CHECK-GENERIC: "sw.vmad"() <{ra = 0 : i64, rb = 1 : i64, rc = 2 : i64, rd = 3 : i64}> : () -> ()
