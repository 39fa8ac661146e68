// Import errors: one line on stderr naming op type, node and reason; exit status 1; -o never
// leaves a (partial) file and never touches an existing one.
// RUN: not %taihu-import %S/Inputs/unsupported_op.onnx 2>&1 | filecheck %s --check-prefix=OP
// OP: taihu-import: error: {{.*}}unsupported_op.onnx: Celu node 'celu0': unsupported op
// OP-NOT: Traceback

// RUN: not %taihu-import %S/Inputs/unsupported_attr.onnx 2>&1 | filecheck %s --check-prefix=ATTR
// ATTR: taihu-import: error: {{.*}}unsupported_attr.onnx: Pad node 'pad0': mode 'reflect' is not supported (only 'constant')

// RUN: not %taihu-import %S/Inputs/nonconstant_shape.onnx 2>&1 | filecheck %s --check-prefix=SHAPE
// SHAPE: taihu-import: error: {{.*}}: Reshape node 'reshape0': shape input 's' must be a constant (initializer or Constant), not a graph input or computed value

// RUN: not %taihu-import %S/Inputs/dynamic_input.onnx 2>&1 | filecheck %s --check-prefix=DYN
// DYN: taihu-import: error: {{.*}}: graph input 'x' dim 0 is dynamic ('N'); static shapes are required

// RUN: not %taihu-import %S/Inputs/not_a_model.onnx 2>&1 | filecheck %s --check-prefix=BAD
// BAD: taihu-import: error: {{.*}}not_a_model.onnx: not a readable ONNX model
// BAD-NOT: Traceback

// RUN: not %taihu-import %S/Inputs/does_not_exist.onnx 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: taihu-import: error: {{.*}}does_not_exist.onnx: no such file

// No partial output file on error; an existing output file is left untouched.
// RUN: rm -f %t.mlir
// RUN: not %taihu-import %S/Inputs/unsupported_op.onnx -o %t.mlir
// RUN: not test -e %t.mlir
// RUN: echo "previous contents" > %t.keep
// RUN: not %taihu-import %S/Inputs/unsupported_op.onnx -o %t.keep
// RUN: filecheck %s --check-prefix=KEEP < %t.keep
// KEEP: previous contents
