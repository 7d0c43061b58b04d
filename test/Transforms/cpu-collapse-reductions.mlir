// RUN: tessel-opt %s -split-input-file -cpu-collapse-reductions | FileCheck %s

// The sum of a whole tensor: its two reduction loops become one, over the
// input read as 4096 elements.
// CHECK-LABEL: func.func @sum_all
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<64x64xf32> into tensor<4096xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[FLAT]] : tensor<4096xf32>)
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> ()>
func.func @sum_all(%x: tensor<64x64xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<64x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Sums over H and W of NCHW: the parallel loops stay, H and W merge.
// CHECK-LABEL: func.func @spatial_sums
// CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<2x8x7x7xf32> into tensor<2x8x49xf32>
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
#in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
func.func @spatial_sums(%x: tensor<2x8x7x7xf32>, %init: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<2x8x7x7xf32>) outs(%init : tensor<2x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// Left alone: reduced axes that are not contiguous in the input (axes 0
// and 2); a reduction of a value the kernel computes, whose producer
// would no longer fuse into the reduction's tiles through the reshape; one
// that reads its loop indices (a gather fused into it); one that reads an
// input broadcast along a reduced loop (not a projected permutation).
// CHECK-LABEL: func.func @outer_and_inner
// CHECK-NOT: tensor.collapse_shape
// CHECK: iterator_types = ["parallel", "reduction", "reduction"]
// CHECK-LABEL: func.func @computed
// CHECK-NOT: tensor.collapse_shape
// CHECK: iterator_types = ["reduction", "reduction"]
#in3 = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
#out3 = affine_map<(d0, d1, d2) -> (d0)>
func.func @outer_and_inner(%x: tensor<4x8x16xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [#in3, #out3], iterator_types = ["parallel", "reduction", "reduction"]} ins(%x : tensor<4x8x16xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @computed(%x: tensor<64x64xf32>, %init: tensor<f32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %x : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<64x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction", "reduction"]} ins(%sq : tensor<64x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
// CHECK-LABEL: func.func @indexed
// CHECK-NOT: tensor.collapse_shape
// CHECK: iterator_types = ["reduction", "reduction"]
func.func @indexed(%x: tensor<64x64xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<64x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %v = tensor.extract %x[%j, %i] : tensor<64x64xf32>
    %0 = arith.addf %acc, %v : f32
    %1 = arith.addf %0, %in : f32
    linalg.yield %1 : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
#bc = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @broadcast
// CHECK-NOT: tensor.collapse_shape
// CHECK: iterator_types = ["reduction", "reduction"]
func.func @broadcast(%x: tensor<64x64xf32>, %b: tensor<1x64xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#id, #bc, #scalar], iterator_types = ["reduction", "reduction"]} ins(%x, %b : tensor<64x64xf32>, tensor<1x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %bias: f32, %acc: f32):
    %0 = arith.addf %in, %bias : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
