// RUN: %taihu-opt %s -p set-target | filecheck %s --check-prefix=DEFAULT
// RUN: %taihu-opt %s -p 'set-target{machine=sw26010pro}' | filecheck %s --check-prefix=PRO
// RUN: sed 's/^ldm_user_bytes = 57344/ldm_user_bytes = 40000/' %S/../../../../target/configs/sw26010.toml > %t.small.toml
// RUN: %taihu-opt %s -p 'set-target{machine="%t.small.toml"}' | filecheck %s --check-prefix=FILE
// RUN: %taihu-opt %s -p 'set-target{machine=sw26010pro},set-target' | filecheck %s --check-prefix=KEEP

// set-target makes the machine part of the module: a shipped name, or a file as the shipped
// description closest to it plus the keys that differ; without an option it keeps the module's
// target (and sets sw26010 where there is none).

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// DEFAULT: builtin.module attributes {target.machine = #target.machine<"sw26010">} {
// PRO:     builtin.module attributes {target.machine = #target.machine<"sw26010pro">} {
// FILE:    builtin.module attributes {target.machine = #target.machine<"sw26010" {ldm_user_bytes = 40000 : i64} source "{{.*}}small.toml">} {
// KEEP:    builtin.module attributes {target.machine = #target.machine<"sw26010pro">} {
