// Machine files that are not machine descriptions: one line naming the file (and the key where
// there is one), exit status 1, no traceback. Inputs/ holds the files sed cannot make from the
// shipped sw26010.toml: invalid TOML, Latin-1 text (not UTF-8), a binary (zip header) file, a
// file with comments only.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %S/Inputs/not_toml.toml 2>&1 | filecheck %s --check-prefix=TOML
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %S/Inputs/latin1.toml 2>&1 | filecheck %s --check-prefix=LATIN1
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %S/Inputs/binary.toml 2>&1 | filecheck %s --check-prefix=BINARY
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %S/Inputs/comments_only.toml 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: sed '/./d' %S/Inputs/comments_only.toml > %t/empty.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/empty.toml 2>&1 | filecheck %s --check-prefix=EMPTY0
// RUN: sed '/^lat_fp = /d' %S/../../../target/configs/sw26010.toml > %t/no_lat_fp.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/no_lat_fp.toml 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: sed 's/^lat_fp = /lat_fpp = /' %S/../../../target/configs/sw26010.toml > %t/typo.toml
// RUN: not %taihu-run %examples/sw/dma_contiguous.mlir --machine %t/typo.toml 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not %taihu-opt %examples/sw/rlc_p2p.mlir -p 'sw-to-swsim{machine="%S/Inputs"}' 2>&1 | filecheck %s --check-prefix=DIR

// TOML: {{^}}taihu-run: error: {{.*}}not_toml.toml: invalid TOML: Invalid value (at line 2, column 8){{$}}
// TOML-NOT: {{.}}
// LATIN1: {{^}}taihu-run: error: {{.*}}latin1.toml: not a machine description: not UTF-8 text (byte 0xe9 at offset 28){{$}}
// LATIN1-NOT: {{.}}
// BINARY: {{^}}taihu-run: error: {{.*}}binary.toml: not a machine description: binary file (NUL byte at offset 4){{$}}
// BINARY-NOT: {{.}}
// EMPTY: {{^}}taihu-run: error: {{.*}}comments_only.toml: empty machine description (no keys){{$}}
// EMPTY-NOT: {{.}}
// EMPTY0: {{^}}taihu-run: error: {{.*}}empty.toml: empty machine description (no keys){{$}}
// EMPTY0-NOT: {{.}}
// MISSING: {{^}}taihu-run: error: {{.*}}no_lat_fp.toml: missing key 'lat_fp'{{$}}
// MISSING-NOT: {{.}}
// UNKNOWN: {{^}}taihu-run: error: {{.*}}typo.toml: unknown key 'lat_fpp'{{$}}
// UNKNOWN-NOT: {{.}}
// DIR: {{^}}taihu-opt: error: sw-to-swsim: {{.*}}Inputs: cannot read machine description: Is a directory{{$}}
// DIR-NOT: {{.}}
