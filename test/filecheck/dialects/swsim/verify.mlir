// RUN: %taihu-opt %s --split-input-file --verify-diagnostics | filecheck %s

sw.kernel @k() {
  %b = swsim.ldm_addr 65000 size 1024
}
// CHECK: swsim.ldm_addr: buffer [65000, 66024) does not fit in the 65536-byte LDM

// -----

func.func @f() {
  %b = swsim.ldm_addr 0 size 8
  func.return
}
// CHECK: swsim.ldm_addr must be inside a sw.kernel

// -----

sw.kernel @k() {
  %rw = swsim.reply_slot -1
}
// CHECK: swsim.reply_slot: slot must be >= 0

// -----

swsim.target "bad.toml" {f_clk_ghz = 1.45 : f64}
// CHECK: swsim.target: invalid machine description: {{.*}}missing key
