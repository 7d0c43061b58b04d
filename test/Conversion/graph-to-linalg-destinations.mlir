// RUN: tessel-opt %s --graph-to-linalg=destinations --canonicalize | FileCheck %s

// With `destinations`, a function with a dynamically shaped result takes a
// destination per result, which its callers size: @fill's result is the
// only tensor that names n, so it reads n from its destination; @host's
// results are its caller's buffers, and a kernel result it returns is
// written straight into them.

// CHECK-LABEL: func.func private @relu(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x64xf32> {graph.shape = #graph.shape<[n, 64]>},
// CHECK-SAME: %[[OUT:[^:]*]]: tensor<?x64xf32> {graph.shape = #graph.shape<[n, 64]>})
// CHECK-SAME: tessel.destinations = 1
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: %[[W:.*]] = bufferization.materialize_in_destination %[[R]] in %[[OUT]]
// CHECK: return %[[W]]
func.func private @relu(%x: tensor<?x64xf32, #graph.shape<[n, 64]>>) -> tensor<?x64xf32, #graph.shape<[n, 64]>>
    attributes {graph.dims = {n = #graph.dim<1, 128>}, tessel.kernel = "elementwise"} {
  %0 = graph.relu %x : tensor<?x64xf32, #graph.shape<[n, 64]>>
  return %0 : tensor<?x64xf32, #graph.shape<[n, 64]>>
}

// CHECK-LABEL: func.func private @fill(
// CHECK-SAME: %[[W:[^:]*]]: tensor<64xf32>, %[[OUT:[^:]*]]: tensor<?x64xf32> {graph.shape = #graph.shape<[n, 64]>})
// CHECK: %[[N:.*]] = tensor.dim %[[OUT]], %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x64xf32>
func.func private @fill(%w: tensor<64xf32>) -> tensor<?x64xf32, #graph.shape<[n, 64]>>
    attributes {graph.dims = {n = #graph.dim<1, 128>}, tessel.kernel = "elementwise"} {
  %0 = graph.broadcast_to %w : tensor<64xf32> -> tensor<?x64xf32, #graph.shape<[n, 64]>>
  return %0 : tensor<?x64xf32, #graph.shape<[n, 64]>>
}

// CHECK-LABEL: func.func @host(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x64xf32> {graph.shape = #graph.shape<[n, 64]>}, %[[W:[^:]*]]: tensor<64xf32>,
// CHECK-SAME: %[[OUT0:[^:]*]]: tensor<?x64xf32> {graph.shape = #graph.shape<[n, 64]>}, %[[OUT1:[^:]*]]: tensor<?x64xf32> {graph.shape = #graph.shape<[n, 64]>})
// CHECK-SAME: tessel.destinations = 2
// CHECK: %[[A:.*]] = call @relu(%[[X]], %[[OUT0]])
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x64xf32>
// CHECK: %[[F:.*]] = call @fill(%[[W]], %[[E]])
// CHECK: %[[B:.*]] = call @relu(%[[F]], %[[OUT1]])
// CHECK: bufferization.materialize_in_destination %[[A]] in %[[OUT0]]
// CHECK: bufferization.materialize_in_destination %[[B]] in %[[OUT1]]
func.func @host(%x: tensor<?x64xf32, #graph.shape<[n, 64]>>, %w: tensor<64xf32>) -> (tensor<?x64xf32, #graph.shape<[n, 64]>>, tensor<?x64xf32, #graph.shape<[n, 64]>>)
    attributes {graph.dims = {n = #graph.dim<1, 128>}} {
  %0 = call @relu(%x) : (tensor<?x64xf32, #graph.shape<[n, 64]>>) -> tensor<?x64xf32, #graph.shape<[n, 64]>>
  %1 = call @fill(%w) : (tensor<64xf32>) -> tensor<?x64xf32, #graph.shape<[n, 64]>>
  %2 = call @relu(%1) : (tensor<?x64xf32, #graph.shape<[n, 64]>>) -> tensor<?x64xf32, #graph.shape<[n, 64]>>
  return %0, %2 : tensor<?x64xf32, #graph.shape<[n, 64]>>, tensor<?x64xf32, #graph.shape<[n, 64]>>
}
