// RUN: tessel-opt %s --memref-expand-shapes-as-casts | FileCheck %s

// A group of two dynamic sizes ([b * s] into [b, s]) is a reinterpret_cast
// with strides from the output sizes; one dynamic size per group is left
// to upstream's expand-strided-metadata.
// CHECK-LABEL: func.func @two_dynamic(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x8xf32>, %[[B:[^:]*]]: index, %[[S:[^:]*]]: index
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[X]]
// CHECK: %[[STRIDE:.*]] = affine.apply #{{.*}}()[%[[S]]]
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[S]], 8], strides: [%[[STRIDE]], 8, 1] : memref<f32> to memref<?x?x8xf32>
func.func @two_dynamic(%x: memref<?x8xf32>, %b: index, %s: index) -> memref<?x?x8xf32> {
  %0 = memref.expand_shape %x [[0, 1], [2]] output_shape [%b, %s, 8] : memref<?x8xf32> into memref<?x?x8xf32>
  return %0 : memref<?x?x8xf32>
}

// CHECK-LABEL: func.func @one_dynamic(
// CHECK: memref.expand_shape
func.func @one_dynamic(%x: memref<?x8xf32>, %b: index) -> memref<?x4x8xf32> {
  %0 = memref.expand_shape %x [[0, 1], [2]] output_shape [%b, 4, 8] : memref<?x8xf32> into memref<?x4x8xf32>
  return %0 : memref<?x4x8xf32>
}
