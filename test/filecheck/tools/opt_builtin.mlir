// RUN: %taihu-opt %s | filecheck %s
// RUN: %taihu-opt %s -o %t && filecheck %s < %t

// CHECK: func.func @f
func.func @f(%arg0: i32) -> i32 {
  func.return %arg0 : i32
}
