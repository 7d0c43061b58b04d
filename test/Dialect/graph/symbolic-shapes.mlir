// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %s --mlir-print-op-generic | tessel-opt | FileCheck %s

// Size symbols (docs/dynamic-shapes.md): a function declares each one's
// range in graph.dims; #graph.shape gives each `?` dim's size over them.

// CHECK-LABEL: func.func @sizes
// CHECK-SAME: %{{.*}}: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>
// CHECK-SAME: %{{.*}}: tensor<?x?xf32, #graph.shape<[seq * 2, batch * seq - 1]>>
// CHECK-SAME: %{{.*}}: tensor<?xf32, #graph.shape<[(seq + 1) floordiv 2]>>
// CHECK-SAME: %{{.*}}: tensor<?xf32, #graph.shape<[seq ceildiv 8 + seq mod 8]>>
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
// CHECK-SAME: #graph.shape<[-seq + 4, (a + b) * 2, a * (b * c), a - b * 2, a mod 3 * (b floordiv 2)]>
func.func @expressions(%x: tensor<?x?x?x?x?xf32, #graph.shape<[-seq + 4, 2 * (a + b), a * (b * c), a - 2 * b, (a mod 3) * (b floordiv 2)]>>) {
  return
}
