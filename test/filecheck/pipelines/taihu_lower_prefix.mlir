// taihu-lower is one pass on the command line; stop-after runs a prefix of its stages, options go
// to the stages that declare them, and an option no stage declares is one error line.
// RUN: %taihu-opt %examples/graph/small_cnn.mlir -p 'taihu-lower{stop-after=graph-simplify}' | filecheck %s
// RUN: not %taihu-opt %examples/graph/small_cnn.mlir -p 'taihu-lower{bogus=1}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not %taihu-opt %examples/graph/small_cnn.mlir -p 'taihu-lower{stop-after=nowhere}' 2>&1 | filecheck %s --check-prefix=STAGE

// CHECK:      func.func @main
// CHECK-NOT:  graph.batch_norm
// CHECK:      graph.conv2d
// CHECK:      graph.softmax

// BAD: taihu-opt: error: taihu-lower: unknown option(s) 'bogus' (accepted: {{.*}}max-elements (graph-fold-constants)
// STAGE: taihu-opt: error: taihu-lower: unknown stage 'nowhere' (stages: set-target, graph-fold-constants, {{.*}}, sw-to-swsim)
