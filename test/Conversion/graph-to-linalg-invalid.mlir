// RUN: tessel-opt %s --graph-to-linalg -split-input-file -verify-diagnostics

func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{has dynamic shape 'tensor<?x8xf32>' without size symbols (#graph.shape); graph-to-linalg needs each `?` named}}
  %0 = graph.add %a, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A size that is no argument dim's (2 * seq + 1) over a symbol that no
// argument dim is alone (only 2 * seq) has no size to read.
func.func @symbol_not_an_argument_dim(%a: tensor<?xf32, #graph.shape<[2 * seq]>>, %b: tensor<1xf32>) -> tensor<?xf32, #graph.shape<[2 * seq + 1]>>
    attributes {graph.dims = {seq = #graph.dim<1, 64>}} {
  // expected-error @+1 {{has a size over symbol 'seq' (seq * 2 + 1), which is neither the size of a dim of its function's arguments nor computed from symbols that are}}
  %0 = graph.concat %a, %b axis 0 : (tensor<?xf32, #graph.shape<[2 * seq]>>, tensor<1xf32>) -> tensor<?xf32, #graph.shape<[2 * seq + 1]>>
  return %0 : tensor<?xf32, #graph.shape<[2 * seq + 1]>>
}
