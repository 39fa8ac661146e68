// A machine file with one out-of-range or mistyped value: taihu-run and sw-to-swsim stop with one
// line naming the file and the key (ranges: target/machine.py), exit status 1, no traceback.
// Each bad file is the shipped sw26010.toml with one line changed by sed.
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed 's/^dma_latency = 200/dma_latency = 1e12/' %S/../../../target/configs/sw26010.toml > %t/lat_float.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/lat_float.toml 2>&1 | filecheck %s --check-prefix=LATF
// RUN: sed 's/^dma_latency = 200/dma_latency = 1000000000000/' %S/../../../target/configs/sw26010.toml > %t/lat.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/lat.toml 2>&1 | filecheck %s --check-prefix=LAT
// RUN: sed 's/^n_regs = 32/n_regs = 1/' %S/../../../target/configs/sw26010.toml > %t/regs.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/regs.toml 2>&1 | filecheck %s --check-prefix=REGS
// RUN: sed 's/^f_clk_ghz = 1.45/f_clk_ghz = nan/' %S/../../../target/configs/sw26010.toml > %t/nan.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/nan.toml 2>&1 | filecheck %s --check-prefix=NAN
// RUN: sed 's/^peak_bw_cg = 30.94/peak_bw_cg = inf/' %S/../../../target/configs/sw26010.toml > %t/inf.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/inf.toml 2>&1 | filecheck %s --check-prefix=INF
// RUN: sed 's/^lat_fp = 7/lat_fp = true/' %S/../../../target/configs/sw26010.toml > %t/bool.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/bool.toml 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: sed 's/^dual_tie = "leader-p1"/dual_tie = 3/' %S/../../../target/configs/sw26010.toml > %t/str.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/str.toml 2>&1 | filecheck %s --check-prefix=STR
// RUN: sed 's/^mesh_rows = 8 /mesh_rows = 9223372036854775807 /' %S/../../../target/configs/sw26010.toml > %t/huge.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/huge.toml 2>&1 | filecheck %s --check-prefix=HUGE
// RUN: sed 's/^zero_reg = 31/zero_reg = 40/' %S/../../../target/configs/sw26010.toml > %t/zero.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/zero.toml 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: sed '/^vmad = /d' %S/../../../target/configs/sw26010.toml > %t/no_vmad.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/no_vmad.toml 2>&1 | filecheck %s --check-prefix=NOVMAD
// RUN: sed 's/^vmad = .*/vmad = { pipes = "P0", latency = 1000000000000 }/' %S/../../../target/configs/sw26010.toml > %t/vmad_lat.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/vmad_lat.toml 2>&1 | filecheck %s --check-prefix=VMADLAT
// RUN: sed 's/^vdivd = .*/vdivd = { pipes = "P0", latency = 15, repeat = 0 }/' %S/../../../target/configs/sw26010.toml > %t/repeat.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/repeat.toml 2>&1 | filecheck %s --check-prefix=REPEAT
// RUN: sed 's/^ldm_bytes = 65536/ldm_bytes = 1073741824/' %S/../../../target/configs/sw26010.toml > %t/ldm.toml
// RUN: not %taihu-opt %examples/sw/rlc_p2p.mlir -p 'sw-to-swsim{machine="%t/ldm.toml"}' 2>&1 | filecheck %s --check-prefix=LDM

// LATF: {{^}}taihu-run: error: {{.*}}lat_float.toml: key 'dma_latency': expected an integer in [0, 10000] cycles, got 1000000000000.0{{$}}
// LATF-NOT: {{.}}
// LAT: {{^}}taihu-run: error: {{.*}}lat.toml: key 'dma_latency': expected an integer in [0, 10000] cycles, got 1000000000000{{$}}
// LAT-NOT: {{.}}
// REGS: {{^}}taihu-run: error: {{.*}}regs.toml: key 'n_regs': expected an integer in [32, 256], got 1{{$}}
// REGS-NOT: {{.}}
// NAN: {{^}}taihu-run: error: {{.*}}nan.toml: key 'f_clk_ghz': expected a finite number in [0.01, 10] GHz, got nan{{$}}
// NAN-NOT: {{.}}
// INF: {{^}}taihu-run: error: {{.*}}inf.toml: key 'peak_bw_cg': expected a finite number in [0.001, 10000] GB/s, got inf{{$}}
// INF-NOT: {{.}}
// BOOL: {{^}}taihu-run: error: {{.*}}bool.toml: key 'lat_fp': expected an integer in [1, 10000] cycles, got true{{$}}
// BOOL-NOT: {{.}}
// STR: {{^}}taihu-run: error: {{.*}}str.toml: key 'dual_tie': expected one of 'leader-p1', 'leader-p0', got 3{{$}}
// STR-NOT: {{.}}
// HUGE: {{^}}taihu-run: error: {{.*}}huge.toml: key 'mesh_rows': expected an integer in [1, 64], got 9223372036854775807{{$}}
// HUGE-NOT: {{.}}
// ZERO: {{^}}taihu-run: error: {{.*}}zero.toml: key 'zero_reg': expected a register < n_regs = 32, got 40{{$}}
// ZERO-NOT: {{.}}
// NOVMAD: {{^}}taihu-run: error: {{.*}}no_vmad.toml: key 'instructions.vmad': missing (every mnemonic of the shipped sw26010.toml table is required){{$}}
// NOVMAD-NOT: {{.}}
// VMADLAT: {{^}}taihu-run: error: {{.*}}vmad_lat.toml: key 'instructions.vmad.latency': expected an integer in [0, 10000] cycles or the name of a cycle parameter (e.g. 'lat_fp'), got 1000000000000{{$}}
// VMADLAT-NOT: {{.}}
// REPEAT: {{^}}taihu-run: error: {{.*}}repeat.toml: key 'instructions.vdivd.repeat': expected an integer in [1, 10000] cycles, got 0{{$}}
// REPEAT-NOT: {{.}}
// LDM: {{^}}taihu-opt: error: sw-to-swsim: {{.*}}ldm.toml: key 'ldm_bytes': expected a multiple of 8 in [1024, 16777216] bytes, got 1073741824{{$}}
// LDM-NOT: {{.}}
