// RUN: tessel-opt %s -cpu-flatten-constants | FileCheck %s
// RUN: tessel-opt %s -cpu-flatten-constants -expand-strided-metadata -finalize-memref-to-llvm -reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// An N-D constant global becomes rank-1 (its elements in the same order) and
// each use a view of it with the old type.
// CHECK: memref.global "private" constant @weight : memref<6xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> {alignment = 64 : i64}
// LLVM: llvm.mlir.global private constant @weight(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<6xf32>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<6 x f32>
memref.global "private" constant @weight : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> {alignment = 64 : i64}

// Kept: already rank 1, mutable, or without a dense value.
// CHECK: memref.global "private" constant @bias : memref<3xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
memref.global "private" constant @bias : memref<3xf32> = dense<[1.0, 2.0, 3.0]>
// CHECK: memref.global "private" @state : memref<2x2xf32> = dense<0.000000e+00>
memref.global "private" @state : memref<2x2xf32> = dense<0.0>
// CHECK: memref.global "private" @scratch : memref<2x2xf32> = uninitialized
memref.global "private" @scratch : memref<2x2xf32> = uninitialized

// CHECK-LABEL: func.func @read
// CHECK: %[[FLAT:.*]] = memref.get_global @weight : memref<6xf32>
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [2, 3] : memref<6xf32> into memref<2x3xf32>
// CHECK: memref.get_global @state : memref<2x2xf32>
// CHECK: memref.load %[[VIEW]][%{{.*}}, %{{.*}}] : memref<2x3xf32>
func.func @read(%i: index, %j: index) -> (f32, f32) {
  %w = memref.get_global @weight : memref<2x3xf32>
  %s = memref.get_global @state : memref<2x2xf32>
  %a = memref.load %w[%i, %j] : memref<2x3xf32>
  %b = memref.load %s[%i, %j] : memref<2x2xf32>
  return %a, %b : f32, f32
}
