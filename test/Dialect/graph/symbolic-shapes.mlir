// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %s --mlir-print-op-generic | tessel-opt | FileCheck %s

// Size symbols (docs/dynamic-shapes.md): a function declares each one's
// range in graph.dims; #graph.shape gives each `?` dim's size over them.

// CHECK-LABEL: func.func @sizes
// CHECK-SAME: %{{.*}}: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
// CHECK-SAME: %{{.*}}: tensor<?x?xf32, #graph.shape<[seq * 2, batch * seq - 1]>>
// CHECK-SAME: %{{.*}}: tensor<?xf32, #graph.shape<[(seq + 1) floordiv 2]>>
// Sizes are kept in one canonical form (MLIR's simplified affine
// expressions: a mod as the floordiv it stands for), so equal sizes are
// equal attributes.
// CHECK-SAME: %{{.*}}: tensor<?xf32, #graph.shape<[seq + seq ceildiv 8 - seq floordiv 8 * 8]>>
// CHECK-SAME: graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<8, 2048, multiple_of 8>}
func.func @sizes(%x: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>,
                 // Names may come in any order; the attribute keeps them sorted.
                 %y: tensor<?x?xf32, #graph.shape<[2 * seq, seq * batch - 1]>>,
                 %z: tensor<?xf32, #graph.shape<[(seq + 1) floordiv 2]>>,
                 %w: tensor<?xf32, #graph.shape<[seq ceildiv 8 + seq mod 8]>>)
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<8, 2048, multiple_of 8>}} {
  return
}

// CHECK-LABEL: func.func @static_dims_only
// CHECK-SAME: tensor<4x8xf32, #graph.shape<[4, 8]>>
func.func @static_dims_only(%x: tensor<4x8xf32, #graph.shape<[4, 8]>>) attributes {graph.dims = {}} {
  return
}

// Expressions print as they re-parse: subtraction, negation and the
// parentheses a right-nested product needs.
// CHECK-LABEL: func.func @expressions
// CHECK-SAME: #graph.shape<[-seq + 4, a * 2 + b * 2, a * (b * c), a - b * 2, a mod 3 * (b floordiv 2)]>
func.func @expressions(%x: tensor<?x?x?x?x?xf32, #graph.shape<[-seq + 4, 2 * (a + b), a * (b * c), a - 2 * b, (a mod 3) * (b floordiv 2)]>>) {
  return
}

// Shape rules carry the symbols: broadcasting against 1 and the same size,
// a matmul's batch and its M/N, unary ops unchanged.
// CHECK-LABEL: func.func @rules
// CHECK: graph.add {{.*}} -> tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
// CHECK: graph.matmul {{.*}} -> tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
// CHECK: graph.relu {{.*}} : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
// CHECK: graph.matmul {{.*}} -> tensor<?x?x?xf32, #graph.shape<[batch, seq, seq]>>
// CHECK: graph.compare gt, {{.*}} -> tensor<?x?x?xi1, #graph.shape<[batch, seq, seq]>>
// CHECK: graph.reduce max {{.*}} -> tensor<?x1x64xf32, #graph.shape<[batch, 1, 64]>>
// CHECK: graph.reduce sum {{.*}} -> tensor<?xf32, #graph.shape<[seq]>>
func.func @rules(%x: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>, %b: tensor<1x?x1xf32, #graph.shape<[1, seq, 1]>>,
                 %w: tensor<256x64xf32>) -> tensor<?x?x?xi1, #graph.shape<[batch, seq, seq]>>
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.add %x, %b : (tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>, tensor<1x?x1xf32, #graph.shape<[1, seq, 1]>>) -> tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
  %1 = graph.matmul %0, %w : (tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>, tensor<256x64xf32>) -> tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
  %2 = graph.relu %1 : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>
  %3 = graph.transpose %2 [0, 2, 1] : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>> -> tensor<?x64x?xf32, #graph.shape<[batch, 64, seq]>>
  %4 = graph.matmul %2, %3 : (tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>>, tensor<?x64x?xf32, #graph.shape<[batch, 64, seq]>>) -> tensor<?x?x?xf32, #graph.shape<[batch, seq, seq]>>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %5 = graph.compare gt, %4, %zero : (tensor<?x?x?xf32, #graph.shape<[batch, seq, seq]>>, tensor<f32>) -> tensor<?x?x?xi1, #graph.shape<[batch, seq, seq]>>
  %6 = graph.reduce max %2 axes [1] keepdims : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>> -> tensor<?x1x64xf32, #graph.shape<[batch, 1, 64]>>
  %7 = graph.reduce sum %2 axes [0, 2] : tensor<?x?x64xf32, #graph.shape<[batch, seq, 64]>> -> tensor<?xf32, #graph.shape<[seq]>>
  return %5 : tensor<?x?x?xi1, #graph.shape<[batch, seq, seq]>>
}

// The ops of a transformer block's MLP and attention scores keep the
// symbols of their batch and sequence dims.
// CHECK-LABEL: func.func @block_ops
// CHECK: graph.layer_norm {{.*}} : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
// CHECK: graph.linear {{.*}} -> tensor<?x?x1024xf32, #graph.shape<[batch, seq, 1024]>>
// CHECK: graph.gelu {{.*}} : tensor<?x?x1024xf32, #graph.shape<[batch, seq, 1024]>>
// CHECK: graph.softmax {{.*}} axis 2 : tensor<?x?x1024xf32, #graph.shape<[batch, seq, 1024]>>
func.func @block_ops(%x: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>, %w: tensor<1024x256xf32>, %b: tensor<1024xf32>)
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.layer_norm %x axis 2 eps 1.0e-05 : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
  %1 = graph.linear %0, %w, %b : (tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>, tensor<1024x256xf32>, tensor<1024xf32>) -> tensor<?x?x1024xf32, #graph.shape<[batch, seq, 1024]>>
  %2 = graph.gelu %1 : tensor<?x?x1024xf32, #graph.shape<[batch, seq, 1024]>>
  %3 = graph.softmax %2 axis 2 : tensor<?x?x1024xf32, #graph.shape<[batch, seq, 1024]>>
  return
}

// A concat sums its axis: two seqs are 2 * seq, seq and 3 more are seq + 3;
// sums are kept in one form, so [seq, 3, seq] is seq * 2 + 3 however
// ordered.
// CHECK-LABEL: func.func @concats
// CHECK: graph.concat {{.*}} -> tensor<?x8xf32, #graph.shape<[seq * 2, 8]>>
// CHECK: graph.concat {{.*}} -> tensor<?x8xf32, #graph.shape<[seq + 3, 8]>>
// CHECK: graph.concat {{.*}} -> tensor<?x8xf32, #graph.shape<[seq * 2 + 3, 8]>>
func.func @concats(%x: tensor<?x8xf32, #graph.shape<[seq, 8]>>, %y: tensor<3x8xf32>) attributes {graph.dims = {seq = #graph.dim<1, 512>}} {
  %0 = graph.concat %x, %x axis 0 : (tensor<?x8xf32, #graph.shape<[seq, 8]>>, tensor<?x8xf32, #graph.shape<[seq, 8]>>) -> tensor<?x8xf32, #graph.shape<[2 * seq, 8]>>
  %1 = graph.concat %x, %y axis 0 : (tensor<?x8xf32, #graph.shape<[seq, 8]>>, tensor<3x8xf32>) -> tensor<?x8xf32, #graph.shape<[seq + 3, 8]>>
  %2 = graph.concat %x, %y, %x axis 0 : (tensor<?x8xf32, #graph.shape<[seq, 8]>>, tensor<3x8xf32>, tensor<?x8xf32, #graph.shape<[seq, 8]>>) -> tensor<?x8xf32, #graph.shape<[3 + 2 * seq, 8]>>
  return
}

// A reshape keeps the element count as the same product of symbols: heads
// split out of [batch, seq, 256], rows of batch * seq, the symbols in
// another order.
// CHECK-LABEL: func.func @reshapes
// CHECK: graph.reshape {{.*}} -> tensor<?x?x4x64xf32, #graph.shape<[batch, seq, 4, 64]>>
// CHECK: graph.reshape {{.*}} -> tensor<?x256xf32, #graph.shape<[batch * seq, 256]>>
// CHECK: graph.reshape {{.*}} -> tensor<?x?x256xf32, #graph.shape<[seq, batch, 256]>>
func.func @reshapes(%x: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>) attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.reshape %x : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>> -> tensor<?x?x4x64xf32, #graph.shape<[batch, seq, 4, 64]>>
  %1 = graph.reshape %x : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>> -> tensor<?x256xf32, #graph.shape<[batch * seq, 256]>>
  %2 = graph.reshape %x : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>> -> tensor<?x?x256xf32, #graph.shape<[seq, batch, 256]>>
  return
}

// A symbol declared a multiple of 8 splits into its exact quotient and 8,
// alone or in a flattened product.
// CHECK-LABEL: func.func @reshape_by_quotient
// CHECK: graph.reshape {{.*}} -> tensor<?x?x8x4xf32, #graph.shape<[batch, seq floordiv 8, 8, 4]>>
// CHECK: graph.reshape {{.*}} -> tensor<?x8x4xf32, #graph.shape<[batch * seq floordiv 8, 8, 4]>>
func.func @reshape_by_quotient(%x: tensor<?x?x4xf32, #graph.shape<[batch, seq, 4]>>) attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<8, 2048, multiple_of 8>}} {
  %0 = graph.reshape %x : tensor<?x?x4xf32, #graph.shape<[batch, seq, 4]>> -> tensor<?x?x8x4xf32, #graph.shape<[batch, seq floordiv 8, 8, 4]>>
  %1 = graph.reshape %x : tensor<?x?x4xf32, #graph.shape<[batch, seq, 4]>> -> tensor<?x8x4xf32, #graph.shape<[(batch * seq) floordiv 8, 8, 4]>>
  return
}

// An iota's size may be a symbol: a causal mask over any sequence length.
// CHECK-LABEL: func.func @causal_mask
// CHECK: graph.iota dim 0 : tensor<?x1xi64, #graph.shape<[seq, 1]>>
// CHECK: graph.iota dim 1 : tensor<1x?xi64, #graph.shape<[1, seq]>>
// CHECK: graph.compare ge, {{.*}} -> tensor<?x?xi1, #graph.shape<[seq, seq]>>
func.func @causal_mask(%x: tensor<?xf32, #graph.shape<[seq]>>) -> tensor<?x?xi1, #graph.shape<[seq, seq]>> attributes {graph.dims = {seq = #graph.dim<1, 2048>}} {
  %rows = graph.iota dim 0 : tensor<?x1xi64, #graph.shape<[seq, 1]>>
  %cols = graph.iota dim 1 : tensor<1x?xi64, #graph.shape<[1, seq]>>
  %0 = graph.compare ge, %rows, %cols : (tensor<?x1xi64, #graph.shape<[seq, 1]>>, tensor<1x?xi64, #graph.shape<[1, seq]>>) -> tensor<?x?xi1, #graph.shape<[seq, seq]>>
  return %0 : tensor<?x?xi1, #graph.shape<[seq, seq]>>
}

// A gather keeps the symbols of its input and of its indices; a slice takes
// a symbol's dim whole (0 to the end, step 1); conv2d and pool2d keep a
// symbolic batch.
// CHECK-LABEL: func.func @data_movement
// CHECK: graph.gather {{.*}} -> tensor<?x?x16xf32, #graph.shape<[batch, seq, 16]>>
// CHECK: graph.slice {{.*}} -> tensor<?x?x8xf32, #graph.shape<[batch, seq, 8]>>
// CHECK: graph.conv2d {{.*}} -> tensor<?x4x8x8xf32, #graph.shape<[batch, 4, 8, 8]>>
// CHECK: graph.pool2d {{.*}} -> tensor<?x4x4x4xf32, #graph.shape<[batch, 4, 4, 4]>>
func.func @data_movement(%table: tensor<50x16xf32>, %ids: tensor<?x?xi64, #graph.shape<[batch, seq]>>,
                         %x: tensor<?x?x16xf32, #graph.shape<[batch, seq, 16]>>,
                         %img: tensor<?x3x8x8xf32, #graph.shape<[batch, 3, 8, 8]>>, %w: tensor<4x3x3x3xf32>)
    attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  %0 = graph.gather %table[%ids] axis 0 : (tensor<50x16xf32>, tensor<?x?xi64, #graph.shape<[batch, seq]>>) -> tensor<?x?x16xf32, #graph.shape<[batch, seq, 16]>>
  %1 = graph.slice %x[[0, 0, 2] : [9223372036854775807, 9223372036854775807, 10] : [1, 1, 1]] : tensor<?x?x16xf32, #graph.shape<[batch, seq, 16]>> -> tensor<?x?x8xf32, #graph.shape<[batch, seq, 8]>>
  %2 = graph.conv2d nchw %img, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 : (tensor<?x3x8x8xf32, #graph.shape<[batch, 3, 8, 8]>>, tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32, #graph.shape<[batch, 4, 8, 8]>>
  %3 = graph.pool2d max nchw %2 kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<?x4x8x8xf32, #graph.shape<[batch, 4, 8, 8]>> -> tensor<?x4x4x4xf32, #graph.shape<[batch, 4, 4, 4]>>
  return
}
