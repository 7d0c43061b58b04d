// RUN: tessel-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(cpu-gather-rows),canonicalize)' | FileCheck %s

// An embedding lookup: each (i, j) point of the ids is a row of 32 points
// of the table. The generic is tiled to one row (scf.for over i and j), its
// unit dims dropped, and the id read once per row, before the row's generic,
// which then only reads the table.
// CHECK-LABEL: func.func @embedding
// CHECK: scf.for %[[I:.*]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[J:.*]] = %c0 to %c3 step %c1
// CHECK: %[[IDS:.*]] = tensor.extract_slice %{{.*}}[%[[I]], %[[J]]] [1, 1] [1, 1] : tensor<2x3xi64> to tensor<1x1xi64>
// CHECK: %[[ID0:.*]] = tensor.extract_slice %[[IDS]][0, 0] [1, 1] [1, 1] : tensor<1x1xi64> to tensor<i64>
// CHECK: %[[ID:.*]] = tensor.extract %[[ID0]][] : tensor<i64>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]} outs(%{{.*}} : tensor<32xf32>)
// CHECK: arith.index_cast %[[ID]]
// CHECK: tensor.extract %{{.*}} : tensor<10x32xf32>
// CHECK: linalg.yield
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[I]], %[[J]], 0] [1, 1, 32] [1, 1, 1]
#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @embedding(%table: tensor<10x32xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x32xf32> {
  %e = tensor.empty() : tensor<2x3x32xf32>
  %r = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x3xi64>) outs(%e : tensor<2x3x32xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 2 : index
    %v = tensor.extract %table[%i, %j] : tensor<10x32xf32>
    linalg.yield %v : f32
  } -> tensor<2x3x32xf32>
  return %r : tensor<2x3x32xf32>
}

// -----

// Left as they are: rows shorter than 16 points, and a gather along the
// innermost loop, whose ids vary along it.
// CHECK-LABEL: func.func @short_rows
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK-LABEL: func.func @along_rows
// CHECK-NOT: scf.for
// CHECK: linalg.generic
#ids2 = affine_map<(d0, d1) -> (d0)>
#out2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @short_rows(%table: tensor<10x8xf32>, %ids: tensor<4xi64>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#ids2, #out2], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
#cols = affine_map<(d0, d1) -> (d1)>
func.func @along_rows(%x: tensor<4x50xf32>, %ids: tensor<20xi64>) -> tensor<4x20xf32> {
  %e = tensor.empty() : tensor<4x20xf32>
  %r = linalg.generic {indexing_maps = [#cols, #out2], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<20xi64>) outs(%e : tensor<4x20xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %id : i64 to index
    %v = tensor.extract %x[%i, %j] : tensor<4x50xf32>
    linalg.yield %v : f32
  } -> tensor<4x20xf32>
  return %r : tensor<4x20xf32>
}
