// swsim.target's machine dictionary goes through the same validation as a machine file: an
// out-of-range, non-finite or mistyped value, or a missing mnemonic, is a verifier diagnostic
// naming the source and the key. The module is rlc_p2p lowered with the shipped machine, its
// swsim.target edited by sed (source renamed bad.toml, one value changed). taihu-run prints the
// error line, then the excerpt of the failing op (tools/diagnostics.py), never a traceback.
// RUN: %taihu-opt %examples/sw/rlc_p2p.mlir -p sw-to-swsim | sed -e 's/swsim.target "sw26010.toml"/swsim.target "bad.toml"/' -e 's/dma_latency = 200 : i64/dma_latency = 1000000000000 : i64/' | %taihu-opt --verify-diagnostics | filecheck %s --check-prefix=LAT
// RUN: %taihu-opt %examples/sw/rlc_p2p.mlir -p sw-to-swsim | sed -e 's/swsim.target "sw26010.toml"/swsim.target "bad.toml"/' -e 's/f_clk_ghz = 1.450000e+00 : f64/f_clk_ghz = 0x7FF8000000000000 : f64/' | %taihu-opt --verify-diagnostics | filecheck %s --check-prefix=NAN
// RUN: %taihu-opt %examples/sw/rlc_p2p.mlir -p sw-to-swsim | sed -e 's/swsim.target "sw26010.toml"/swsim.target "bad.toml"/' -e 's/n_regs = 32 : i64/n_regs = true/' | %taihu-opt --verify-diagnostics | filecheck %s --check-prefix=BOOL
// RUN: %taihu-opt %examples/sw/rlc_p2p.mlir -p sw-to-swsim | sed -e 's/swsim.target "sw26010.toml"/swsim.target "bad.toml"/' -e 's/vmad = {pipes = "P0", latency = 7 : i64}/vmad = {pipes = "P0", latency = 100000 : i64}/' | %taihu-opt --verify-diagnostics | filecheck %s --check-prefix=VMADLAT
// RUN: %taihu-opt %examples/sw/rlc_p2p.mlir -p sw-to-swsim | sed -e 's/swsim.target "sw26010.toml"/swsim.target "bad.toml"/' -e 's/vmad = {pipes = "P0", latency = 7 : i64}, //' > %t.mlir
// RUN: not %taihu-run %t.mlir 2>&1 | filecheck %s --check-prefix=SIM

// LAT: {{^}}stdin:{{[0-9]+}}:{{[0-9]+}}: swsim.target: invalid machine description: bad.toml: key 'dma_latency': expected an integer in [0, 10000] cycles, got 1000000000000{{$}}
// NAN: {{^}}stdin:{{[0-9]+}}:{{[0-9]+}}: swsim.target: invalid machine description: bad.toml: key 'f_clk_ghz': expected a finite number in [0.01, 10] GHz, got nan{{$}}
// BOOL: {{^}}stdin:{{[0-9]+}}:{{[0-9]+}}: swsim.target: invalid machine description: bad.toml: key 'n_regs': expected an integer in [32, 256], got true{{$}}
// VMADLAT: {{^}}stdin:{{[0-9]+}}:{{[0-9]+}}: swsim.target: invalid machine description: bad.toml: key 'instructions.vmad.latency': expected an integer in [0, 10000] cycles or the name of a cycle parameter (e.g. 'lat_fp'), got 100000{{$}}
// SIM: {{^}}taihu-run: error: {{.*}}bad.toml: key 'instructions.vmad': missing (every mnemonic of the shipped sw26010.toml table is required){{$}}
// SIM-NOT: Traceback
