// RUN: not %taihu-opt %s -p 'sw-to-swsim{machine="%S/Inputs/small_ldm.toml"}' 2>&1 | filecheck %s
// RUN: not %taihu-opt %s -p 'sw-to-swsim{machine="%S/Inputs/missing.toml"}' 2>&1 | filecheck %s --check-prefix=MISSING

sw.kernel @big() {
  %a = sw.ldm_alloc 40000
  %b = sw.ldm_alloc 16000
}

// CHECK: sw-to-swsim: kernel @big needs 56000 bytes of LDM > ldm_user_bytes = 50000: %a 40000 B at 0, %b 16000 B at 40000
// MISSING: sw-to-swsim: {{.*}}missing.toml: cannot read machine description
