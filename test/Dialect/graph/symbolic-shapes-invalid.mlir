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

// -----

func.func @symbol_against_static(%x: tensor<?xf32, #graph.shape<[seq]>>, %y: tensor<256xf32>) attributes {graph.dims = {seq = #graph.dim<1, 512>}} {
  // expected-error @+2 {{operand shapes [seq] and [256] are not broadcast-compatible (a size symbol broadcasts only against 1 or the same size)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %x, %y : (tensor<?xf32, #graph.shape<[seq]>>, tensor<256xf32>) -> tensor<?xf32, #graph.shape<[seq]>>
  return
}

// -----

func.func @two_symbols(%x: tensor<?xf32, #graph.shape<[seq]>>, %y: tensor<?xf32, #graph.shape<[batch]>>) attributes {graph.dims = {batch = #graph.dim<1, 8>, seq = #graph.dim<1, 512>}} {
  // expected-error @+2 {{operand shapes [seq] and [batch] are not broadcast-compatible (a size symbol broadcasts only against 1 or the same size)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %x, %y : (tensor<?xf32, #graph.shape<[seq]>>, tensor<?xf32, #graph.shape<[batch]>>) -> tensor<?xf32, #graph.shape<[seq]>>
  return
}

// -----

func.func @plain_dynamic_among_symbols(%x: tensor<?xf32, #graph.shape<[seq]>>, %y: tensor<?xf32>) attributes {graph.dims = {seq = #graph.dim<1, 512>}} {
  // expected-error @+2 {{operand 'tensor<?xf32>' has a ? dim without #graph.shape among operands with size symbols}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %x, %y : (tensor<?xf32, #graph.shape<[seq]>>, tensor<?xf32>) -> tensor<?xf32, #graph.shape<[seq]>>
  return
}

// -----

func.func @contraction(%x: tensor<?x?xf32, #graph.shape<[seq, k]>>, %w: tensor<256x64xf32>) attributes {graph.dims = {k = #graph.dim<1, 512>, seq = #graph.dim<1, 512>}} {
  // expected-error @+2 {{matmul contraction dimensions differ: lhs [seq, k] has K = k, rhs [256, 64] has K = 256}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %x, %w : (tensor<?x?xf32, #graph.shape<[seq, k]>>, tensor<256x64xf32>) -> tensor<?x64xf32, #graph.shape<[seq, 64]>>
  return
}

// -----

func.func @result_symbols(%x: tensor<?xf32, #graph.shape<[seq]>>) attributes {graph.dims = {seq = #graph.dim<1, 512>}} {
  // expected-error @+1 {{'graph.relu' op requires the same encoding for all operands and results}}
  %0 = "graph.relu"(%x) : (tensor<?xf32, #graph.shape<[seq]>>) -> tensor<?xf32, #graph.shape<[seq + 1]>>
  return
}

// -----

func.func @slice_of_a_symbol(%x: tensor<?x4xf32, #graph.shape<[seq, 4]>>) attributes {graph.dims = {seq = #graph.dim<1, 512>}} {
  // expected-error @+2 {{slice 0:2:1 of dimension 0, whose size is seq: a dim of a size symbol is only taken whole (0:9223372036854775807:1) so far}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x[[0, 0] : [2, 4] : [1, 1]] : tensor<?x4xf32, #graph.shape<[seq, 4]>> -> tensor<2x4xf32>
  return
}

// -----

func.func @conv_of_a_symbolic_height(%x: tensor<1x3x?x8xf32, #graph.shape<[1, 3, h, 8]>>, %w: tensor<4x3x3x3xf32>) attributes {graph.dims = {h = #graph.dim<3, 64>}} {
  // expected-error @+2 {{conv2d takes a size symbol as its batch dim only; dim 2 of 'tensor<1x3x?x8xf32, #graph.shape<[1, 3, h, 8]>>' is one}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x3x?x8xf32, #graph.shape<[1, 3, h, 8]>>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x6xf32>
  return
}

// -----

func.func @linear_symbolic_k(%x: tensor<?x?xf32, #graph.shape<[seq, k]>>, %w: tensor<64x256xf32>) attributes {graph.dims = {k = #graph.dim<1, 512>, seq = #graph.dim<1, 512>}} {
  // expected-error @+2 {{linear needs static input features K}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.linear %x, %w : (tensor<?x?xf32, #graph.shape<[seq, k]>>, tensor<64x256xf32>) -> tensor<?x64xf32, #graph.shape<[seq, 64]>>
  return
}

// -----

func.func @concat_mismatch(%x: tensor<?x?xf32, #graph.shape<[seq, seq]>>, %y: tensor<?x?xf32, #graph.shape<[seq, batch]>>) attributes {graph.dims = {batch = #graph.dim<1, 8>, seq = #graph.dim<1, 512>}} {
  // expected-error @+2 {{concat input #1 [seq, batch] does not match input #0 [seq, seq] outside axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %x, %y axis 0 : (tensor<?x?xf32, #graph.shape<[seq, seq]>>, tensor<?x?xf32, #graph.shape<[seq, batch]>>) -> tensor<?x?xf32, #graph.shape<[seq * 2, seq]>>
  return
}

// -----

func.func @reshape_loses_a_symbol(%x: tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>>) attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048>}} {
  // expected-error @+1 {{'graph.reshape' op cannot reshape batch * seq * 256 elements into seq * 512 elements (size symbols must appear as the same factors; a quotient counts as its dividend over the divisor only where the symbols' declared multiples make it exact)}}
  %0 = graph.reshape %x : tensor<?x?x256xf32, #graph.shape<[batch, seq, 256]>> -> tensor<?x512xf32, #graph.shape<[seq, 512]>>
  return
}

// -----

// Without a declared multiple, seq floordiv 8 * 8 is not seq.
func.func @reshape_by_inexact_quotient(%x: tensor<?x?xf32, #graph.shape<[batch, seq]>>) attributes {graph.dims = {batch = #graph.dim<1, 64>, seq = #graph.dim<1, 2048, multiple_of 4>}} {
  // expected-error @+1 {{'graph.reshape' op cannot reshape batch * seq * 1 elements into batch * seq floordiv 8 * 8 elements (size symbols must appear as the same factors; a quotient counts as its dividend over the divisor only where the symbols' declared multiples make it exact)}}
  %0 = graph.reshape %x : tensor<?x?xf32, #graph.shape<[batch, seq]>> -> tensor<?x?x8xf32, #graph.shape<[batch, seq floordiv 8, 8]>>
  return
}

// -----

func.func @reshape_count(%x: tensor<?x8xf32, #graph.shape<[seq, 8]>>) attributes {graph.dims = {seq = #graph.dim<1, 64>}} {
  // expected-error @+1 {{'graph.reshape' op cannot reshape seq * 8 elements into seq * 6 elements}}
  %0 = graph.reshape %x : tensor<?x8xf32, #graph.shape<[seq, 8]>> -> tensor<?x2x3xf32, #graph.shape<[seq, 2, 3]>>
  return
}

// -----

func.func @linear_of_a_symbolic_weight(%x: tensor<3x4xf32>, %w: tensor<?x4xf32, #graph.shape<[n, 4]>>) attributes {graph.dims = {n = #graph.dim<1, 8>}} {
  // expected-error @+2 {{linear needs a weight of static shape, got 'tensor<?x4xf32, #graph.shape<[n, 4]>>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.linear %x, %w : (tensor<3x4xf32>, tensor<?x4xf32, #graph.shape<[n, 4]>>) -> tensor<3x?xf32>
  return
}
