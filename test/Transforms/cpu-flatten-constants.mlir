// RUN: tessel-opt %s -cpu-flatten-constants | FileCheck %s
// RUN: tessel-opt %s -cpu-flatten-constants -expand-strided-metadata -finalize-memref-to-llvm -convert-arith-to-llvm -reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// A constant global becomes its bytes (little-endian f32s here, a splat
// written out), keeping its alignment; each use is a view with the old type.
// CHECK: memref.global "private" constant @weight : memref<24xi8> = dense<[0, 0, -128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, -128, 64, 0, 0, -96, 64, 0, 0, -64, 64]> {alignment = 64 : i64}
// LLVM: llvm.mlir.global private constant @weight(dense<[0, 0, -128, 63, {{.*}}]> : tensor<24xi8>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<24 x i8>
memref.global "private" constant @weight : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> {alignment = 64 : i64}
// CHECK: memref.global "private" constant @ones : memref<4xi8> = dense<[1, 0, 1, 0]>
memref.global "private" constant @ones : memref<2xi16> = dense<1>

// Kept: mutable, without a value, or of bits (i1).
// CHECK: memref.global "private" @state : memref<2x2xf32> = dense<0.000000e+00>
memref.global "private" @state : memref<2x2xf32> = dense<0.0>
// CHECK: memref.global "private" @scratch : memref<2x2xf32> = uninitialized
memref.global "private" @scratch : memref<2x2xf32> = uninitialized
// CHECK: memref.global "private" constant @mask : memref<2xi1> = dense<[true, false]>
memref.global "private" constant @mask : memref<2xi1> = dense<[true, false]>

// CHECK-LABEL: func.func @read
// CHECK: %[[BYTES:.*]] = memref.get_global @weight : memref<24xi8>
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[VIEW:.*]] = memref.view %[[BYTES]][%[[ZERO]]][] : memref<24xi8> to memref<2x3xf32>
// CHECK: memref.get_global @state : memref<2x2xf32>
// CHECK: memref.load %[[VIEW]][%{{.*}}, %{{.*}}] : memref<2x3xf32>
func.func @read(%i: index, %j: index) -> (f32, f32) {
  %w = memref.get_global @weight : memref<2x3xf32>
  %s = memref.get_global @state : memref<2x2xf32>
  %a = memref.load %w[%i, %j] : memref<2x3xf32>
  %b = memref.load %s[%i, %j] : memref<2x2xf32>
  return %a, %b : f32, f32
}
