// RUN: not %taihu-opt %s -p 'set-target{machine=sw26011}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not %taihu-opt %s -p 'set-target{machine="%S/Inputs/missing.toml"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: sed 's/^mesh_rows = 8 /mesh_rows = 4 /; s/^cpes_per_bus = 16 /cpes_per_bus = 8 /' %S/../../../../target/configs/sw26010.toml > %t.mesh4.toml
// RUN: not %taihu-opt %s -p 'set-target{machine="%t.mesh4.toml"}' 2>&1 | filecheck %s --check-prefix=MESH
// RUN: sed 's/^ldm_user_bytes = 57344/ldm_user_bytes = -1/' %S/../../../../target/configs/sw26010.toml > %t.neg.toml
// RUN: not %taihu-opt %s -p 'set-target{machine="%t.neg.toml"}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not %taihu-opt %s -p 'taihu-lower{machine="%t.mesh4.toml"}' 2>&1 | filecheck %s --check-prefix=MESH

// Each bad machine is one line naming the file (or name) and the key, before any planning.

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// NAME:    taihu-opt: error: set-target: unknown machine 'sw26011': not a file and not a shipped name (sw26010, sw26010pro)
// MISSING: taihu-opt: error: set-target: {{.*}}missing.toml: cannot read machine description
// MESH:    taihu-opt: error: set-target: {{.*}}mesh4.toml: key 'mesh_rows': taihu's lowering needs 8 (the mesh GEMM and the 64-way distributions assume an 8x8 mesh), got 4
// VALUE:   taihu-opt: error: set-target: {{.*}}neg.toml: key 'ldm_user_bytes': {{.*}}-1
