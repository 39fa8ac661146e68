// taihu-tune --list-space: every distinct problem of the network (compute layers and the
// memory-bound ops with a kernel of their own) with its schedule space (each candidate with its
// model cycles, the model's default marked) and the average space size of the compute layers
// beside 004 Table 6.1. --layers keeps some problems by number or layer name.
// RUN: %taihu-tune %examples/graph/small_cnn.mlir --list-space | filecheck %s
// RUN: %taihu-tune %examples/graph/small_cnn.mlir --list-space --layers logits | filecheck %s --check-prefix=ONE

// CHECK:      [1] conv2d bn: ConvShape n=1 c=3 h=8 w=8 m=4 kh=3 kw=3 pads=1,1,1,1 bias=True relu=True const_weights=True{{$}}
// CHECK-NEXT:     1  {{ *}}[[#]]  im2col batched=false bk=8 bm=32 bn=128 double_c=true overlap=false pointwise=false vec=n
// CHECK:      im2col {{.*}}  (default)
// CHECK:      winograd {{.*}}tiles_per_cpe=
// CHECK:      space size [[#]]
// CHECK-NEXT: [2] window pool: PoolShape planes=4 h=8 w=8 ho=4 wo=4 kh=2 kw=2 sh=2 sw=2 pt=0 pl=0 elem_bytes=4 inv_count=False
// CHECK:      window planes={{.*}}  (default)
// CHECK:      space size [[#]]
// CHECK-NEXT: [3] gemm logits: GemmShape m=1 n=10 k=64 trans_b=True
// CHECK:      gemm {{.*}}  (default)
// CHECK:      space size [[#]]
// CHECK-NEXT: [4] axis probs: AxisShape outer=1 axis=10 inner=1 elem_bytes=4 halo=-1
// CHECK-NEXT:     1  {{ *}}[[#]]  axis {{.*}}  (default)
// CHECK-NEXT: space size 1
// CHECK-NEXT: average space size per layer: {{[0-9.]+}} over 2 distinct compute layers (004 Table 6.1, swAutoDNN: VGG16 454.2, ResNet50 353.7, Yolo 365.1)

// ONE-NOT:  conv2d
// ONE:      [3] gemm logits:
// ONE:      average space size per layer: {{[0-9.]+}} over 1 distinct compute layers
