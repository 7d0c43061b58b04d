// RUN: tessel-opt %s -graph-decompose -graph-form-fusion-groups -graph-outline-kernels -split-input-file | FileCheck %s
// Once outlined, the module lowers like any other (the kernels are called,
// not inlined):
// RUN: tessel-opt %s -graph-decompose -graph-form-fusion-groups -graph-outline-kernels -graph-to-linalg -split-input-file | FileCheck %s --check-prefix=LINALG

// Each group of @mlp becomes a private function @mlp_kernel<N>, marked with
// its fusion kind, and @mlp calls them in dependency order. The large
// weight stays in the host and is passed as an argument; the small scale is
// cloned into its kernel.
// CHECK-LABEL: func.func private @mlp_kernel0
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-SAME: attributes {tessel.kernel = "contraction"}
// CHECK-NEXT: %[[M:.*]] = graph.matmul %[[X]], %[[W]]
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[M]]
// CHECK-NEXT: return %[[R]] : tensor<4x4xf32>
// CHECK-NEXT: }
// CHECK-LABEL: func.func private @mlp_kernel1
// CHECK-SAME: (%[[Y:.*]]: tensor<4x4xf32>) -> tensor<16xf32>
// CHECK-SAME: attributes {tessel.kernel = "elementwise"}
// CHECK-NEXT: %[[F:.*]] = graph.reshape %[[Y]] : tensor<4x4xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[S:.*]] = graph.constant dense<[0.000000e+00, 1.000000e+00, {{.*}}]> : tensor<16xf32>
// CHECK-NEXT: %[[P:.*]] = graph.mul %[[F]], %[[S]]
// CHECK-NEXT: return %[[P]] : tensor<16xf32>
// CHECK-NEXT: }
// CHECK-LABEL: func.func private @mlp_kernel2
// CHECK-SAME: (%[[Z:.*]]: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-SAME: attributes {tessel.kernel = "reduction"}
// CHECK-NEXT: graph.reduce max %[[Z]]
// CHECK: graph.div
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[HX:.*]]: tensor<4x8xf32>) -> (tensor<16xf32>, tensor<4x4xf32>) {
// CHECK-NEXT: %[[HW:.*]] = graph.constant dense<{{.*}}> : tensor<8x4xf32>
// CHECK-NEXT: %[[C0:.*]] = call @mlp_kernel0(%[[HX]], %[[HW]]) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[C1:.*]] = call @mlp_kernel1(%[[C0]]) : (tensor<4x4xf32>) -> tensor<16xf32>
// CHECK-NEXT: %[[C2:.*]] = call @mlp_kernel2(%[[C0]]) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: return %[[C1]], %[[C2]]
// CHECK-NOT: graph.fused

// LINALG-LABEL: func.func private @mlp_kernel0
// LINALG: linalg.matmul
// LINALG-LABEL: func.func @mlp
// LINALG: arith.constant dense<{{.*}}> : tensor<8x4xf32>
// LINALG: call @mlp_kernel0
// LINALG: call @mlp_kernel1
// LINALG: call @mlp_kernel2
func.func @mlp(%x: tensor<4x8xf32>) -> (tensor<16xf32>, tensor<4x4xf32>) {
  %w = graph.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0], [20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0], [28.0, 29.0, 30.0, 31.0]]> : tensor<8x4xf32>
  %s = graph.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %1 = graph.relu %0 : tensor<4x4xf32>
  %2 = graph.reshape %1 : tensor<4x4xf32> -> tensor<16xf32>
  %3 = graph.mul %2, %s : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %4 = graph.softmax %1 axis 1 : tensor<4x4xf32>
  return %3, %4 : tensor<16xf32>, tensor<4x4xf32>
}

// -----

// Kernel names do not collide with existing symbols; every function with
// groups is a host.
// CHECK-LABEL: func.func @f_kernel0
// CHECK-SAME: (%{{.*}}: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @f_kernel0_0
// CHECK-SAME: attributes {tessel.kernel = "elementwise"}
// CHECK-NEXT: graph.exp
// CHECK-LABEL: func.func @f(
// CHECK-NEXT: call @f_kernel0_0
// CHECK-LABEL: func.func private @g_kernel0
// CHECK-SAME: attributes {tessel.kernel = "reduction"}
// CHECK-NEXT: graph.reduce sum
// CHECK-LABEL: func.func @g(
// CHECK-NEXT: call @g_kernel0
func.func @f_kernel0(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @g(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = graph.reduce sum %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
