// taihu-tune --list-space: every distinct conv/GEMM problem of the network with its schedule
// space (each candidate with its model cycles, the model's default marked) and the average
// space size beside 004 Table 6.1. --layers keeps some problems by number or layer name.
// RUN: %taihu-tune %examples/graph/small_cnn.mlir --list-space | filecheck %s
// RUN: %taihu-tune %examples/graph/small_cnn.mlir --list-space --layers logits | filecheck %s --check-prefix=ONE

// CHECK:      [1] conv2d bn: ConvShape n=1 c=3 h=8 w=8 m=4 kh=3 kw=3 pads=1,1,1,1 bias=True relu=True const_weights=True{{$}}
// CHECK-NEXT:     1  {{ *}}[[#]]  im2col batched=false bk=8 bm=32 bn=128 double_c=true overlap=false pointwise=false vec=n
// CHECK:      im2col {{.*}}  (default)
// CHECK:      winograd {{.*}}tiles_per_cpe=
// CHECK:      space size [[#]]
// CHECK-NEXT: [2] gemm logits: GemmShape m=1 n=10 k=64 trans_b=True
// CHECK:      gemm {{.*}}  (default)
// CHECK:      space size [[#]]
// CHECK-NEXT: average space size per layer: {{[0-9.]+}} over 2 distinct layers (004 Table 6.1, swAutoDNN: VGG16 454.2, ResNet50 353.7, Yolo 365.1)

// ONE-NOT:  conv2d
// ONE:      [2] gemm logits:
// ONE:      average space size per layer: {{[0-9.]+}} over 1 distinct layers
