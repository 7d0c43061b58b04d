// RUN: tessel-opt %s -split-input-file -verify-diagnostics

func.func @not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{operand shapes [4, 3] and [5] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %a, %b : (tensor<4x3xf32>, tensor<5xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @wrong_result_shape(%a: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.mul %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @mixed_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = graph.sub %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @bool_arithmetic(%a: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of}}
  %0 = graph.add %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @exp_of_integers(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = graph.exp %a : tensor<4xi32>
  return
}

// -----

func.func @gelu_of_integers(%a: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = graph.gelu %a approximate tanh : tensor<4xi64>
  return
}

// -----

func.func @unary_type_change(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.sigmoid' op requires the same type for all operands and results}}
  %0 = "graph.sigmoid"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @unsupported_dtype() {
  // expected-error @+1 {{result #0 must be ranked tensor of}}
  %0 = graph.constant dense<1> : tensor<4xi8>
  return
}

// -----

func.func @matmul_k_mismatch(%a: tensor<4x8xf32>, %b: tensor<9x16xf32>) {
  // expected-error @+2 {{matmul contraction dimensions differ: lhs [4, 8] has K = 8, rhs [9, 16] has K = 9}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<9x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @matmul_rank1(%a: tensor<8xf32>, %b: tensor<8x16xf32>) {
  // expected-error @+2 {{matmul operands need rank >= 2, got ranks 1 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<8xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<3x4x8xf32>, %b: tensor<2x8x16xf32>) {
  // expected-error @+2 {{matmul batch dimensions [3] and [2] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<3x4x8xf32>, tensor<2x8x16xf32>) -> tensor<3x4x16xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x16xf16>) {
  // expected-error @+2 {{matmul operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @fused_argument_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{body argument #0 has type 'tensor<8xf32>' but input #0 has type 'tensor<4xf32>'}}
  %r = graph.fused elementwise (%x) : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    graph.yield %a : tensor<8xf32>
  }
  return
}

// -----

func.func @fused_argument_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{body has 2 arguments but the group has 1 inputs}}
  %r = graph.fused elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @fused_yield_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{yields 'tensor<4xf32>' but the group returns 'tensor<4xf16>'}}
  %r = graph.fused elementwise (%x) : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @fused_nested(%x: tensor<4xf32>) {
  %r = graph.fused elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{fusion groups do not nest}}
    %0 = graph.fused elementwise (%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      graph.yield %b : tensor<4xf32>
    }
    graph.yield %0 : tensor<4xf32>
  }
  return
}

// -----

func.func @fused_foreign_op(%x: tensor<4xf32>) {
  %r = graph.fused elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{is not a graph op; fusion groups hold graph ops only}}
    %0 = tensor.empty() : tensor<4xf32>
    graph.yield %0 : tensor<4xf32>
  }
  return
}

// -----

func.func @fused_uses_value_from_above(%x: tensor<4xf32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = graph.fused elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %0 = graph.add %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %0 : tensor<4xf32>
  }
  return
}

// -----

func.func @fused_unknown_kind(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [elementwise, reduction, contraction]}}
  %r = graph.fused convolution (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @yield_outside_group(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'graph.fused'}}
  graph.yield %x : tensor<4xf32>
}
