// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

sw.kernel @k() {
  %b = swsim.ldm_addr 4096 size 1024
  %rw = swsim.reply_slot 3
  sw.reply_reset %rw
}

// CHECK:      sw.kernel @k() {
// CHECK-NEXT:   %b = swsim.ldm_addr 4096 size 1024
// CHECK-NEXT:   %rw = swsim.reply_slot 3
// CHECK-NEXT:   sw.reply_reset %rw
// CHECK-NEXT: }

// CHECK-GENERIC: "swsim.ldm_addr"() <{address = 4096 : i64, bytes = 1024 : i64}> : () -> i64
// CHECK-GENERIC: "swsim.reply_slot"() <{slot = 3 : i64}> : () -> !sw.reply
