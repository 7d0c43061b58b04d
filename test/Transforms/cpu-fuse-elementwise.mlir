// RUN: tessel-opt %s -cpu-fuse-elementwise | FileCheck %s

// The two elementwise generics become one; the matmul and the reshapes
// around it stay as they are (no reshape propagation).
// CHECK-LABEL: func.func @chain
// CHECK: tensor.collapse_shape
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @chain(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %init: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %mm = linalg.matmul ins(%x2, %w : tensor<8x8xf32>, tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = tensor.expand_shape %mm [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %e = tensor.empty() : tensor<2x4x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x4x16xf32>) outs(%e : tensor<2x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<2x4x16xf32>) outs(%e : tensor<2x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %zero : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16xf32>
  return %r : tensor<2x4x16xf32>
}

// A transpose read only by an elementwise generic fuses into it: the
// generic reads the input through the transposed map. One feeding a
// matmul stays a linalg.transpose (the matmul's tile copies its slice).
// CHECK-LABEL: func.func @transposes
// CHECK: linalg.transpose
// CHECK: linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8x16xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.transpose
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @transposes(%x: tensor<8x16xf32>) -> (tensor<16x8xf32>, tensor<16x16xf32>) {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %m0 = tensor.empty() : tensor<16x16xf32>
  %t2 = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %mm = linalg.matmul ins(%t2, %x : tensor<16x8xf32>, tensor<8x16xf32>) outs(%m0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  } -> tensor<16x8xf32>
  return %r, %mm : tensor<16x8xf32>, tensor<16x16xf32>
}
