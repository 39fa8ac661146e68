// RUN: %taihu-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

builtin.module attributes {target.machine = #target.machine<"sw26011">} {
}
// CHECK: #target.machine: invalid machine description: unknown base machine 'sw26011' (shipped: sw26010, sw26010pro)

// -----

builtin.module attributes {target.machine = #target.machine<"sw26010" {ldm_user_bytes = 70000 : i64} source "my.toml">} {
}
// CHECK: #target.machine: invalid machine description: my.toml: key 'ldm_user_bytes': {{.*}}70000{{.*}}

// -----

builtin.module attributes {target.machine = #target.machine<"sw26010" {no_such_key = 1 : i64}>} {
}
// CHECK: #target.machine: invalid machine description: {{.*}}unknown key 'no_such_key'

// -----

// The LDM footprint of a tile.kernel is checked against the module's machine (40000 B here).
builtin.module attributes {target.machine = #target.machine<"sw26010" {ldm_user_bytes = 40000 : i64} source "small.toml">} {
  func.func @f(%a: memref<4096xf64>) {
    tile.kernel "k" (%x = %a : memref<4096xf64>) {
      %t = tile.alloc double : !tile.buf<192x16xf64, rep>
    }
    func.return
  }
}
// CHECK: tile.kernel "k": LDM footprint 49152 bytes per CPE > ldm_user_bytes = 40000: %t 49152 B

// -----

// The same kernel verifies without a target (sw26010: 57344 B).
builtin.module {
  func.func @f(%a: memref<4096xf64>) {
    tile.kernel "k" (%x = %a : memref<4096xf64>) {
      %t = tile.alloc double : !tile.buf<192x16xf64, rep>
    }
    func.return
  }
}
// CHECK: tile.kernel "k" (%x = %a : memref<4096xf64>) {
// CHECK-NEXT: %t = tile.alloc double : !tile.buf<192x16xf64, rep>
