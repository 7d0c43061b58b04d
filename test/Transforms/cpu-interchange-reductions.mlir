// RUN: tessel-opt %s -split-input-file -cpu-interchange-reductions | FileCheck %s

// A sum over axis 0 walks its input down the columns: the loop along the
// rows (the result's) moves innermost, the reduction outward.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @column_sums
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["reduction", "parallel"]}
#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @column_sums(%x: memref<64x32xf32>, %y: memref<32xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%x : memref<64x32xf32>) outs(%y : memref<32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A reduction over the middle axis of a 3-D input: its last loop (the
// input's contiguous one) moves innermost; the batch stays outermost.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @middle_axis
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK: arith.maximumf
#in = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @middle_axis(%x: tensor<4x64x32xf32>, %init: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<4x64x32xf32>) outs(%init : tensor<4x32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.maximumf %acc, %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}

// -----

// Row reductions, and elementwise ops, are left as they are.
// CHECK-LABEL: func.func @row_sums
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "parallel"]
#rin = affine_map<(d0, d1) -> (d0, d1)>
#rout = affine_map<(d0, d1) -> (d0)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @row_sums(%x: memref<64x32xf32>, %y: memref<64xf32>, %z: memref<32x64xf32>) {
  linalg.generic {indexing_maps = [#rin, #rout], iterator_types = ["parallel", "reduction"]} ins(%x : memref<64x32xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#t, #rin], iterator_types = ["parallel", "parallel"]} ins(%x : memref<64x32xf32>) outs(%z : memref<32x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}
