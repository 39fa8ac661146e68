// Tuning records and taihu-tune errors: one diagnostic line, exit status 1, no traceback, no
// records file written.
// RUN: echo '{"op": "conv2d", "signature": "ConvShape n=1", "target": "x", "model_cycles": 1, "sim_cycles": null}' > %t.bad.json
// RUN: not %taihu-run %examples/graph/small_cnn.mlir --tuning %t.bad.json --timing-only 2>&1 | filecheck %s --check-prefix=KEY
// RUN: echo 'not json' > %t.notjson.json
// RUN: not %taihu-run %examples/graph/small_cnn.mlir --tuning %t.notjson.json --timing-only 2>&1 | filecheck %s --check-prefix=JSON
// RUN: not %taihu-run %examples/graph/small_cnn.mlir --tuning %t.missing.json --timing-only 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not %taihu-tune %examples/graph/small_cnn.mlir 2>&1 | filecheck %s --check-prefix=NOOUT
// RUN: rm -f %t.out.json
// RUN: not %taihu-tune %examples/graph/small_cnn.mlir -o %t.out.json --layers 9 2>&1 | filecheck %s --check-prefix=LAYERS
// RUN: not test -e %t.out.json
// RUN: not %taihu-tune %examples/graph/small_cnn.mlir -o %t.out.json --machine nosuch 2>&1 | filecheck %s --check-prefix=MACHINE
// RUN: not test -e %t.out.json

// KEY: taihu-run: error: {{.*}}graph-schedule: {{.*}}bad.json:1: key 'schedule' missing
// KEY-NOT: Traceback
// JSON: taihu-run: error: {{.*}}notjson.json:1: not a JSON record
// MISSING: taihu-run: error: {{.*}}cannot read tuning records {{.*}}missing.json
// NOOUT: taihu-tune: error: -o RECORDS.json is required (or --list-space)
// LAYERS: taihu-tune: error: --layers: '9' is neither a problem number (1..4) nor a layer name of the model
// MACHINE: taihu-tune: error: set-target: {{.*}}nosuch
// MACHINE-NOT: Traceback
