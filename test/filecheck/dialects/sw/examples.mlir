// The hand-written sw programs of examples/sw/ parse and verify (they double as documentation;
// the simulator tests run them).
// RUN: %taihu-opt %examples/sw/kloop_listing41.mlir | filecheck %s --check-prefix=K41
// RUN: %taihu-opt %examples/sw/kloop_naive.mlir | filecheck %s --check-prefix=NAIVE
// RUN: %taihu-opt %examples/sw/dma_contiguous.mlir | filecheck %s --check-prefix=DMAC
// RUN: %taihu-opt %examples/sw/dma_strided.mlir | filecheck %s --check-prefix=DMAS
// RUN: %taihu-opt %examples/sw/dma_all_cpes.mlir | filecheck %s --check-prefix=DMAA
// RUN: %taihu-opt %examples/sw/rlc_p2p.mlir | filecheck %s --check-prefix=P2P
// RUN: %taihu-opt %examples/sw/rlc_broadcast.mlir | filecheck %s --check-prefix=BCAST
// RUN: %taihu-opt %examples/sw/rlc_send_full.mlir | filecheck %s --check-prefix=FULL
// RUN: %taihu-opt %examples/sw/deadlock_getr.mlir | filecheck %s --check-prefix=DEAD
// RUN: %taihu-opt %examples/sw/overlap.mlir | filecheck %s --check-prefix=OVL
// RUN: %taihu-opt %examples/sw/mesh_gemm.mlir | filecheck %s --check-prefix=MESH

// K41:      sw.microkernel trip 64 (%abuf step 128, %bbuf step 32) {
// K41-NEXT:   sw.vmad r4, r0, r8
// K41-NEXT:   sw.addl r24, r27, r24
// K41-NEXT:   sw.vmad r4, r1, r9
// K41-NEXT:   sw.vldd r3, 96(p0, r24)
// K41:        sw.vmad r7, r3, r23
// K41-NEXT:   sw.bgt r29
// K41-NEXT: }

// NAIVE:      sw.microkernel trip 64 (%abuf step 128, %bbuf step 32) {
// NAIVE-NEXT:   sw.ldde r4, 0(p1, r26)
// NAIVE-NEXT:   sw.vldd r0, 0(p0, r25)
// NAIVE-NEXT:   sw.vmad r4, r0, r8

// DMAC: sw.dma_get %mis -> %buf, %rw size 1024
// DMAS: sw.dma_get %mis -> %buf, %rw size 640 bsize 64 stride 64
// DMAA: sw.dma_get %src -> %buf, %rw size 1024
// P2P: sw.putr r0, 1
// BCAST: sw.putr r0, 8
// BCAST: sw.vldc r0, 0(p0)
// FULL: sw.microkernel trip 9 (%buf step 32) {
// DEAD: sw.getr r0

// OVL: sw.kernel @dma_only(%x: i64, %y: i64) {
// OVL: sw.kernel @compute_only(%x: i64, %y: i64) {
// OVL: sw.kernel @overlap_nosync(%x: i64, %y: i64) {
// OVL: sw.kernel @overlap_sync(%x: i64, %y: i64) {
// OVL: sw.barrier array
// OVL: sw.kernel @overlap_rlc(%x: i64, %y: i64) {
// OVL: sw.putr r3, 8
// OVL: sw.putc r3, 8

// MESH: sw.kernel @gemm()
// MESH: sw.vldc r{{[0-9]+}}, 96(p0, r{{[0-9]+}})
// MESH: sw.getr r{{[0-9]+}}
