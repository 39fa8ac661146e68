// RUN: TAIHU_ROUNDTRIP
// RUN: TAIHU_GENERIC_ROUNDTRIP

// A shipped machine by name.
builtin.module attributes {target.machine = #target.machine<"sw26010">} {
}

// CHECK: builtin.module attributes {target.machine = #target.machine<"sw26010">} {
// CHECK-GENERIC: "builtin.module"() ({
// CHECK-GENERIC: }) {target.machine = #target.machine<"sw26010">} : () -> ()

// -----

// A shipped machine with parameters replaced, read from a user's file: the verifiers and planners
// of everything in the module use 128 KiB of LDM and a 9-cycle fp latency (every Table 3.2 row
// that refers to lat_fp follows it).
builtin.module attributes {target.machine = #target.machine<"sw26010" {ldm_bytes = 131072 : i64, ldm_user_bytes = 122880 : i64, lat_fp = 9 : i64, instructions = {vdivd = {pipes = "P0", latency = 20 : i64, repeat = 20 : i64}}} source "big.toml">} {
}

// CHECK: builtin.module attributes {target.machine = #target.machine<"sw26010" {ldm_bytes = 131072 : i64, ldm_user_bytes = 122880 : i64, lat_fp = 9 : i64, instructions = {vdivd = {pipes = "P0", latency = 20 : i64, repeat = 20 : i64}}} source "big.toml">} {
// CHECK-GENERIC: target.machine = #target.machine<"sw26010" {ldm_bytes = 131072 : i64, ldm_user_bytes = 122880 : i64, lat_fp = 9 : i64, instructions = {vdivd = {pipes = "P0", latency = 20 : i64, repeat = 20 : i64}}} source "big.toml">

// -----

builtin.module attributes {target.machine = #target.machine<"sw26010pro">} {
}

// CHECK: #target.machine<"sw26010pro">
