// RUN: TAIHU_ROUNDTRIP
// RUN: %taihu-opt %s | filecheck %s
// RUN: TAIHU_GENERIC_ROUNDTRIP

// graph.constant: inline dense, splat, integer, f16 and dense_resource values.

func.func @constants() -> (tensor<2x2xf32>, tensor<3x4xf32>, tensor<3xi64>, tensor<2xf16>, tensor<2x3xf32>, tensor<4xf64>) {
  %0 = graph.constant dense<[[1.0, 2.0], [3.0, 4.5]]> : tensor<2x2xf32>
  %1 = graph.constant dense<0.25> : tensor<3x4xf32>
  %2 = graph.constant dense<[1, -2, 3]> : tensor<3xi64>
  %3 = graph.constant dense<[1.5, -2.0]> : tensor<2xf16>
  %4 = graph.constant dense_resource<conv_w> : tensor<2x3xf32>
  %5 = graph.constant dense_resource<bias64> : tensor<4xf64>
  func.return %0, %1, %2, %3, %4, %5 : tensor<2x2xf32>, tensor<3x4xf32>, tensor<3xi64>, tensor<2xf16>, tensor<2x3xf32>, tensor<4xf64>
}

// CHECK-LABEL: func.func @constants()
// CHECK-NEXT:    %0 = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.500000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %1 = graph.constant dense<2.500000e-01> : tensor<3x4xf32>
// CHECK-NEXT:    %2 = graph.constant dense<[1, -2, 3]> : tensor<3xi64>
// CHECK-NEXT:    %3 = graph.constant dense<[1.500000e+00, -2.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    %4 = graph.constant dense_resource<conv_w> : tensor<2x3xf32>
// CHECK-NEXT:    %5 = graph.constant dense_resource<bias64> : tensor<4xf64>
// CHECK-NEXT:    func.return %0, %1, %2, %3, %4, %5

// The blobs are printed back in the dialect_resources section (sorted by key; xDSL 0.74 puts
// all entries of a dialect on one line).
// CHECK:       {-#
// CHECK-NEXT:    dialect_resources: {
// CHECK-NEXT:      builtin: {
// CHECK-NEXT:        bias64: "0x08000000000000000000F03F0000000000000040000000000000084000000000000010C0",conv_w: "0x040000000000803F000000400000404000008040000080BF00000000"
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  #-}

// CHECK-GENERIC: "graph.constant"() <{value = dense_resource<conv_w> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
// CHECK-GENERIC: bias64: "0x08000000000000000000F03F0000000000000040000000000000084000000000000010C0",

{-#
  dialect_resources: {
    builtin: {
      conv_w: "0x040000000000803F000000400000404000008040000080BF00000000",
      bias64: "0x08000000000000000000F03F0000000000000040000000000000084000000000000010C0"
    }
  }
#-}
