// RUN: tessel-opt %s --graph-to-linalg --canonicalize --cse | FileCheck %s

// Size symbols (docs/dynamic-shapes.md) leave the types: upstream ops see
// plain `?` dims. Each dynamic size is read with tensor.dim from the first
// argument dim that is that symbol, and a sum or product of symbols (a
// concat's axis, a mean's count) is computed from them. The arguments keep
// their #graph.shape as the attribute `graph.shape`, for the schedules.

// CHECK-DAG: #[[TWICE:.*]] = affine_map<()[s0] -> (s0 * 2)>
// CHECK-LABEL: func.func @ops(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x?x64xf32> {graph.shape = #graph.shape<[batch, seq, 64]>}
// CHECK-SAME: %[[Y:[^:]*]]: tensor<?x?x64xf32> {graph.shape = #graph.shape<[batch, seq, 64]>}
// CHECK-SAME: -> (tensor<?x1x64xf32>, tensor<?x?x64xf32>, tensor<?x64x?xf32>, tensor<?x?x64xf32>)
// CHECK-NOT: graph.size_arguments
// CHECK-DAG: %[[SEQ:.*]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[BATCH:.*]] = tensor.dim %[[X]], %c0
// The mean divides by the number of elements it reduces, known at run time.
// CHECK: %[[MEAN_INIT:.*]] = tensor.empty(%[[BATCH]]) : tensor<?x1x64xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: %[[N:.*]] = arith.index_cast %[[SEQ]] : index to i64
// CHECK: %[[NF:.*]] = arith.sitofp %[[N]] : i64 to f32
// CHECK: %[[SCALE:.*]] = arith.divf %{{.*}}, %[[NF]] : f32
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// The concat's axis is 2 * seq; the second input starts at seq.
// CHECK: %[[LEN:.*]] = affine.apply #[[TWICE]]()[%[[SEQ]]]
// CHECK: %[[CAT:.*]] = tensor.empty(%[[BATCH]], %[[LEN]]) : tensor<?x?x64xf32>
// CHECK: %[[FIRST:.*]] = tensor.insert_slice %[[X]] into %[[CAT]][0, 0, 0] [%[[BATCH]], %[[SEQ]], 64]
// CHECK: tensor.insert_slice %[[Y]] into %[[FIRST]][0, %[[SEQ]], 0]
// CHECK: %[[T:.*]] = tensor.empty(%[[BATCH]], %[[SEQ]]) : tensor<?x64x?xf32>
// CHECK: linalg.transpose ins(%[[X]] : tensor<?x?x64xf32>) outs(%[[T]] : tensor<?x64x?xf32>)
// broadcast_to's operand has neither symbol: its sizes come from %x.
// CHECK: tensor.empty(%[[BATCH]], %[[SEQ]]) : tensor<?x?x64xf32>
func.func @ops(%x: tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>, %y: tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>, %b: tensor<64xf32>)
    -> (tensor<?x1x64xf32, #graph.shape<[batch, 1, 64]>>, tensor<?x?x64xf32, #graph.shape<[batch, seq * 2, 64]>>, tensor<?x64x?xf32, #graph.shape<[batch, 64, seq]>>, tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>)
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.reduce mean %x axes [1] keepdims : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>> -> tensor<?x1x64xf32, #graph.shape<[batch, 1, 64]>>
  %1 = graph.concat %x, %y axis 1 : (tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>, tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>) -> tensor<?x?x64xf32, #graph.shape<[batch, 2 * seq, 64]>>
  %2 = graph.transpose %x [0, 2, 1] : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>> -> tensor<?x64x?xf32, #graph.shape<[batch, 64, seq]>>
  %3 = graph.broadcast_to %b : tensor<64xf32> -> tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
  return %0, %1, %2, %3 : tensor<?x1x64xf32, #graph.shape<[batch, 1, 64]>>, tensor<?x?x64xf32, #graph.shape<[batch, seq * 2, 64]>>, tensor<?x64x?xf32, #graph.shape<[batch, 64, seq]>>, tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
}

// A matmul over [batch, seq, 256] x [256, 64] is one 2-D matmul of
// batch * seq rows, expanded back with the symbols' sizes.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:[^:]*]]: tensor<?x?x256xf32>
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[A]], %c0
// CHECK-DAG: %[[S:.*]] = tensor.dim %[[A]], %c1
// CHECK: tensor.empty(%[[B]], %[[S]]) : tensor<?x?x64xf32>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : tensor<?x?x256xf32> into tensor<?x256xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[ROWS]], %{{.*}} : tensor<?x256xf32>, tensor<256x64xf32>)
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [%[[B]], %[[S]], 64]
func.func @matmul(%a: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>, %w: tensor<256x64xf32>) -> tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.matmul %a, %w : (tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>, tensor<256x64xf32>) -> tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
  return %0 : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
}

// A reshape collapses and expands the smallest groups of dims whose sizes
// agree, so each group has at most one dynamic dim (memref lowering
// expands no more): [batch, seq, 256] is [batch], [seq], [4, 64].
// CHECK-LABEL: func.func @split_heads(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x?x256xf32>
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[S:.*]] = tensor.dim %[[X]], %c1
// CHECK: tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2, 3]] output_shape [%[[B]], %[[S]], 4, 64] : tensor<?x?x256xf32> into tensor<?x?x4x64xf32>
func.func @split_heads(%x: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>) -> tensor<?x?x4x64xf32, #graph.shape<[batch, seq, 4, 64]>>
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.reshape %x : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>> -> tensor<?x?x4x64xf32, #graph.shape<[batch, seq, 4, 64]>>
  return %0 : tensor<?x?x4x64xf32, #graph.shape<[batch, seq, 4, 64]>>
}

// A symbol declared a multiple of 8 splits into its exact quotient and 8:
// [batch, seq] is [batch], [seq floordiv 8, 8], one dynamic dim per group.
// CHECK-LABEL: func.func @split_by_quotient(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x?xf32>
// CHECK-DAG: %[[B:.*]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[S:.*]] = tensor.dim %[[X]], %c1
// CHECK: %[[Q:.*]] = affine.apply #{{.*}}()[%[[S]]]
// CHECK: tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2]] output_shape [%[[B]], %[[Q]], 8] : tensor<?x?xf32> into tensor<?x?x8xf32>
func.func @split_by_quotient(%x: tensor<?x?xf32, #graph.shape<[batch, seq]>>) -> tensor<?x?x8xf32, #graph.shape<[batch, seq floordiv 8, 8]>>
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<8, 2048, multiple_of 8>}} {
  %0 = graph.reshape %x : tensor<?x?xf32, #graph.shape<[batch, seq]>> -> tensor<?x?x8xf32, #graph.shape<[batch, seq floordiv 8, 8]>>
  return %0 : tensor<?x?x8xf32, #graph.shape<[batch, seq floordiv 8, 8]>>
}

// CHECK-LABEL: func.func @merge_heads(
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<?x?x4x64xf32> into tensor<?x?x256xf32>
func.func @merge_heads(%x: tensor<?x?x4x64xf32, #graph.shape<[batch, seq, 4, 64]>>) -> tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.reshape %x : tensor<?x?x4x64xf32, #graph.shape<[batch, seq, 4, 64]>> -> tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
  return %0 : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
}

// An iota is a generic without inputs whose body is its index.
// CHECK-LABEL: func.func @iota(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<2x?xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<2x?xf32>)
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: arith.sitofp %[[I64]] : i64 to f32
func.func @iota(%x: tensor<?xf32, #graph.shape<[n]>>) -> tensor<2x?xf32, #graph.shape<[2, n]>>
    attributes {graph.dims = {n = #graph.dim<1, 64>}} {
  %0 = graph.iota dim 1 : tensor<2x?xf32, #graph.shape<[2, n]>>
  return %0 : tensor<2x?xf32, #graph.shape<[2, n]>>
}

// A size is read from an argument dim of that very size (m + n) when its
// symbols are not dims of their own; a reshape that regroups two symbols
// ([m, n] into [n, m]) reads each element at its row-major position.
// CHECK-LABEL: func.func @compound_size(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?xf32> {graph.shape = #graph.shape<[m + n]>}
// CHECK: %[[S:.*]] = tensor.dim %[[X]], %c0
// CHECK: tensor.empty(%[[S]]) : tensor<?xf32>
func.func @compound_size(%x: tensor<?xf32, #graph.shape<[m + n]>>) -> tensor<?xf32, #graph.shape<[m + n]>>
    attributes {graph.dims = {m = #graph.dim<1, 8>, n = #graph.dim<1, 8>}} {
  %0 = graph.exp %x : tensor<?xf32, #graph.shape<[m + n]>>
  return %0 : tensor<?xf32, #graph.shape<[m + n]>>
}

// CHECK-LABEL: func.func @regroup(
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<?x?xf32> into tensor<?xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: tensor.extract %[[FLAT]][%{{.*}}] : tensor<?xf32>
func.func @regroup(%x: tensor<?x?xf32, #graph.shape<[m, n]>>) -> tensor<?x?xf32, #graph.shape<[n, m]>>
    attributes {graph.dims = {m = #graph.dim<1, 8>, n = #graph.dim<1, 8>}} {
  %0 = graph.reshape %x : tensor<?x?xf32, #graph.shape<[m, n]>> -> tensor<?x?xf32, #graph.shape<[n, m]>>
  return %0 : tensor<?x?xf32, #graph.shape<[n, m]>>
}
