// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{size symbol 'seq' is not declared in the function's graph.dims}}
func.func @undeclared(%x: tensor<?xf32, #graph.shape<[seq]>>) attributes {graph.dims = {batch = #graph.dim<1, 4>}} {
  return
}

// -----

// expected-error @+1 {{dim 0 is ? in the type but 4 in #graph.shape}}
func.func @dynamic_but_constant(%x: tensor<?xf32, #graph.shape<[4]>>) {
  return
}

// -----

// expected-error @+1 {{dim 1 is 8 in the type but not in #graph.shape}}
func.func @static_but_symbolic(%x: tensor<?x8xf32, #graph.shape<[n, n]>>) {
  return
}

// -----

// expected-error @+1 {{#graph.shape has 1 sizes for a tensor of rank 2}}
func.func @rank(%x: tensor<?x?xf32, #graph.shape<[n]>>) {
  return
}

// -----

// expected-error @+1 {{a size can only be divided by an integer}}
func.func @divide_by_symbol(%x: tensor<?xf32, #graph.shape<[n floordiv m]>>) {
  return
}

// -----

// expected-error @+1 {{a size can only be divided by a positive integer}}
func.func @divide_by_zero(%x: tensor<?xf32, #graph.shape<[n mod 0]>>) {
  return
}

// -----

// expected-error @+1 {{expected a size: an integer, a symbol name or a parenthesized expression}}
func.func @not_a_size(%x: tensor<?xf32, #graph.shape<[n + ]>>) {
  return
}

// -----

// expected-error @+1 {{#graph.dim range 9 to 4 is not within 0 to 2147483647}}
func.func @empty_range() attributes {graph.dims = {n = #graph.dim<9, 4>}} {
  return
}

// -----

// expected-error @+1 {{#graph.dim range 9 to 15 holds no multiple of 16}}
func.func @no_multiple() attributes {graph.dims = {n = #graph.dim<9, 15, multiple_of 16>}} {
  return
}

// -----

// expected-error @+1 {{graph.dims gives 'n' 3 : i64, not a #graph.dim}}
func.func @not_a_dim() attributes {graph.dims = {n = 3}} {
  return
}

// -----

// expected-error @+1 {{graph.dims is a function's attribute}}
module attributes {graph.dims = {}} {
}

// -----

func.func @inner_op(%x: tensor<?xf32, #graph.shape<[n]>>) attributes {graph.dims = {n = #graph.dim<1, 4>}} {
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{size symbol 'm' is not declared in the function's graph.dims}}
  %0 = tensor.empty(%c4) : tensor<?xf32, #graph.shape<[m]>>
  return
}
