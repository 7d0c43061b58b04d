// RUN: tessel-opt %s --graph-to-linalg -split-input-file -verify-diagnostics

func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{has dynamic shape 'tensor<?x8xf32>' without size symbols (#graph.shape); graph-to-linalg needs each `?` named}}
  %0 = graph.add %a, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A symbol that no argument dim is exactly (only 2 * seq) has no size to read.
func.func @symbol_not_an_argument_dim(%a: tensor<?xf32, #graph.shape<[2 * seq]>>) -> tensor<?xf32, #graph.shape<[2 * seq]>>
    attributes {graph.dims = {seq = #graph.dim<1, 64>}} {
  // expected-error @+1 {{has a size over symbol 'seq', which is not the size of any dim of its function's arguments}}
  %0 = graph.relu %a : tensor<?xf32, #graph.shape<[2 * seq]>>
  return %0 : tensor<?xf32, #graph.shape<[2 * seq]>>
}
