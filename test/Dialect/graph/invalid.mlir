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
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = graph.exp %a : tensor<4xi32>
  return
}

// -----

func.func @floor_of_integers(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = graph.floor %a : tensor<4xi32>
  return
}

// -----

func.func @rem_of_bools(%a: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values}}
  %0 = graph.rem %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @sin_of_integers(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = graph.sin %a : tensor<4xi32>
  return
}

// -----

func.func @cos_of_integers(%a: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = graph.cos %a : tensor<4xi64>
  return
}

// -----

func.func @erf_of_booleans(%a: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = graph.erf %a : tensor<4xi1>
  return
}

// -----

func.func @gelu_of_integers(%a: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
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
  %0 = graph.constant dense<1> : tensor<4xui8>
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

// -----

func.func @constant_not_a_tensor() {
  // expected-error @+2 {{constant value must be a ranked tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "graph.constant"() <{value = dense<1.0> : vector<4xf32>}> : () -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// pow, compare, select, cast
//===----------------------------------------------------------------------===//

// -----

func.func @pow_of_integers(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = graph.pow %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @compare_element_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+2 {{compares different element types 'f32' and 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.compare lt, %a, %b : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_shapes(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes [4, 3] and [4] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.compare eq, %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xi1>
  return
}

// -----

func.func @compare_result_not_bool(%a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = graph.compare eq, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @compare_unknown_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %0 = graph.compare neq, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @select_condition_not_bool(%c: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = graph.select %c, %a, %a : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @select_element_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{selects between different element types 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @select_shapes(%c: tensor<3xi1>, %a: tensor<2x1xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes [3] and [2, 1] and [4] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.select %c, %a, %b : (tensor<3xi1>, tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @cast_unsupported_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'element_type' failed to satisfy constraint: type attribute of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 1-bit signless integer}}
  %0 = graph.cast %x to ui8 : tensor<4xf32>
  return
}

// -----

func.func @cast_result_type(%x: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf16>' are incompatible with return type(s) of operation 'tensor<4xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "graph.cast"(%x) <{element_type = f16}> : (tensor<4xf32>) -> tensor<4xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (valid: -2 to 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce sum %x axes [2] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_negative_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{axis -3 is out of range for rank 2 (valid: -2 to 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce max %x axes [-3] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis_twice(%x: tensor<4x8xf32>) {
  // -1 and 1 are the same dimension.
  // expected-error @+2 {{axis 1 is reduced twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce sum %x axes [1, -1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_mean_of_integers(%x: tensor<4x8xi32>) {
  // expected-error @+2 {{mean needs a float tensor, got 'tensor<4x8xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce mean %x axes [1] : tensor<4x8xi32> -> tensor<4xi32>
  return
}

// -----

func.func @reduce_keepdims_result(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce sum %x axes [1] keepdims : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_of_booleans(%x: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values}}
  %0 = graph.reduce sum %x axes [0] : tensor<4xi1> -> tensor<i1>
  return
}

// -----

func.func @softmax_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = graph.softmax %x axis 2 : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = graph.log_softmax %x axis -3 : tensor<4x8xf16>
  return
}

// -----

func.func @softmax_of_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = graph.softmax %x axis 0 : tensor<4xi32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = graph.layer_norm %x axis 2 eps 1.0e-05 : tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_weight_shape(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // axis 1 normalizes the last two dimensions.
  // expected-error @+1 {{weight must be 'tensor<4x8xf32>' (the normalized dimensions), got 'tensor<8xf32>'}}
  %0 = graph.layer_norm %x weight(%w : tensor<8xf32>) axis 1 eps 1.0e-05 : tensor<2x4x8xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias must be 'tensor<8xf32>' (the normalized dimensions), got 'tensor<4xf32>'}}
  %0 = graph.layer_norm %x weight(%w : tensor<8xf32>) bias(%b : tensor<4xf32>) axis -1 eps 1.0e-05 : tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_bias_only_shape(%x: tensor<4x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{bias must be 'tensor<8xf32>' (the normalized dimensions), got 'tensor<1x8xf32>'}}
  %0 = graph.layer_norm %x bias(%b : tensor<1x8xf32>) axis 1 eps 1.0e-05 : tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_weight_element_type(%x: tensor<4x8xf16>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight must be 'tensor<8xf16>' (the normalized dimensions), got 'tensor<8xf32>'}}
  %0 = graph.layer_norm %x weight(%w : tensor<8xf32>) axis 1 eps 1.0e-05 : tensor<4x8xf16>
  return
}

// -----

func.func @rms_norm_weight_shape(%x: tensor<4x8xbf16>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{weight must be 'tensor<8xbf16>' (the normalized dimensions), got 'tensor<4x8xbf16>'}}
  %0 = graph.rms_norm %x weight(%w : tensor<4x8xbf16>) axis -1 eps 1.0e-05 : tensor<4x8xbf16>
  return
}

// -----

func.func @rms_norm_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = graph.rms_norm %x axis -3 eps 1.0e-05 : tensor<4x8xf32>
  return
}

// -----

func.func @batch_norm_param_shape(%x: tensor<2x3x5x5xf32>, %p: tensor<5xf32>) {
  // expected-error @+1 {{batch_norm parameters must be 'tensor<3xf32>' (one per channel of axis 1), got 'tensor<5xf32>'}}
  %0 = graph.batch_norm %x, %p, %p, %p, %p axis 1 eps 1.0e-05 : tensor<2x3x5x5xf32>, tensor<5xf32>
  return
}

// -----

func.func @batch_norm_param_element_type(%x: tensor<2x5x5x3xf16>, %p: tensor<3xf32>) {
  // The negative axis is reported normalized.
  // expected-error @+1 {{batch_norm parameters must be 'tensor<3xf16>' (one per channel of axis 3), got 'tensor<3xf32>'}}
  %0 = graph.batch_norm %x, %p, %p, %p, %p axis -1 eps 1.0e-05 : tensor<2x5x5x3xf16>, tensor<3xf32>
  return
}

// -----

func.func @batch_norm_axis(%x: tensor<2x3xf32>, %p: tensor<3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = graph.batch_norm %x, %p, %p, %p, %p axis 2 eps 1.0e-05 : tensor<2x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @batch_norm_params_differ(%x: tensor<2x3xf32>, %p: tensor<3xf32>, %q: tensor<3xf16>) {
  // expected-error @+1 {{failed to verify that all of {scale, bias, mean, variance} have same type}}
  %0 = "graph.batch_norm"(%x, %p, %q, %p, %p) <{axis = 1 : i64, epsilon = 1.0e-05 : f64}> : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf16>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// linear, conv2d, pool2d
//===----------------------------------------------------------------------===//

// -----

func.func @linear_k_mismatch(%x: tensor<2x8xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+2 {{linear weight 'tensor<16x4xf32>' does not match input features K = 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.linear %x, %w : (tensor<2x8xf32>, tensor<16x4xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{linear takes input [..., K] and weight [N, K], got 'tensor<2x8xf32>' and 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.linear %x, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<4x1xf32>) {
  // expected-error @+2 {{linear takes input [..., K] and weight [N, K], got 'tensor<f32>' and 'tensor<4x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.linear %x, %w : (tensor<f32>, tensor<4x1xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @linear_element_types(%x: tensor<2x8xf16>, %w: tensor<16x8xf32>) {
  // expected-error @+2 {{linear operands have different element types: 'f16' and 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.linear %x, %w : (tensor<2x8xf16>, tensor<16x8xf32>) -> tensor<2x16xf16>
  return
}

// -----

func.func @linear_bias_shape(%x: tensor<2x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{linear bias must be 'tensor<16xf32>', got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.linear %x, %w, %b : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @conv2d_rank(%x: tensor<3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{conv2d takes rank-4 input and weight, got 'tensor<3x32x32xf32>' and 'tensor<16x3x3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<16x30x30xf32>
  return
}

// -----

func.func @conv2d_element_types(%x: tensor<1x3x8x8xf16>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{conv2d operands have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf16>
  return
}

// -----

func.func @conv2d_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{conv2d weight 'tensor<16x3x3x3xf32>' has 3 input channels per group; the input has 4 channels in 1 group(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x4x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv2d_nhwc_channels(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x6xf32>) {
  // HWIO weights: 2 groups of 4 channels need I = 2.
  // expected-error @+2 {{conv2d weight 'tensor<3x3x4x6xf32>' has 4 input channels per group; the input has 4 channels in 2 group(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nhwc %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 : (tensor<1x8x8x4xf32>, tensor<3x3x4x6xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv2d_groups_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<8x2x3x3xf32>) {
  // expected-error @+2 {{groups = 4 must divide the 6 input channels and the 8 filters}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 4 : (tensor<1x6x8x8xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x6x6xf32>
  return
}

// -----

func.func @conv2d_groups_filters(%x: tensor<1x8x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+2 {{groups = 4 must divide the 8 input channels and the 6 filters}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 4 : (tensor<1x8x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv2d_groups_zero(%x: tensor<1x8x8x8xf32>, %w: tensor<8x8x3x3xf32>) {
  // expected-error @+2 {{groups = 0 must divide the 8 input channels and the 8 filters}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 0 : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  return
}

// -----

func.func @conv2d_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{conv2d bias must be 'tensor<16xf32>', got 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w, %b strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv2d_window_too_large(%x: tensor<1x3x4x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // Dilation 2 spreads the 3 taps over 5 rows; the input has 4 + 0 padding.
  // expected-error @+2 {{window of 5 cells does not fit height = 4 (after padding)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [2, 1] groups 1 : (tensor<1x3x4x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x1x6xf32>
  return
}

// -----

func.func @conv2d_nhwc_window_too_large(%x: tensor<1x8x2x3xf32>, %w: tensor<3x3x3x16xf32>) {
  // expected-error @+2 {{window of 3 cells does not fit width = 2 (after padding)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nhwc %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x8x2x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x6x1x16xf32>
  return
}

// -----

func.func @conv2d_strides(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{strides must have 2 values, each at least 1, got [1, 0]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 0] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv2d_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{padding must have 4 values, each at least 0, got [1, 1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [1, 1] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  return
}

// -----

func.func @conv2d_dilations(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{dilations must have 2 values, each at least 1, got [1, 1, 1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv2d_result_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x16x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x16x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv2d nchw %x, %w strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  return
}

// -----

func.func @pool2d_rank(%x: tensor<16x32x32xf32>) {
  // expected-error @+2 {{pool2d takes a rank-4 input, got 'tensor<16x32x32xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pool2d max nchw %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<16x32x32xf32> -> tensor<16x16x16xf32>
  return
}

// -----

func.func @avg_pool_of_integers(%x: tensor<1x2x8x8xi32>) {
  // expected-error @+2 {{avg pooling needs a float tensor, got 'tensor<1x2x8x8xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pool2d avg nchw %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x2x8x8xi32> -> tensor<1x2x4x4xi32>
  return
}

// -----

func.func @pool2d_padding_not_below_kernel(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{padding must be smaller than the kernel, so that no window is all padding}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pool2d max nchw %x kernel [2, 2] strides [2, 2] padding [0, 2, 0, 0] : tensor<1x2x8x8xf32> -> tensor<1x2x4x5xf32>
  return
}

// -----

func.func @pool2d_kernel(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{kernel must have 2 values, each at least 1, got [2, 0]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pool2d max nchw %x kernel [2, 0] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @pool2d_negative_padding(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{padding must have 4 values, each at least 0, got [0, -1, 0, 0]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pool2d max nchw %x kernel [2, 2] strides [2, 2] padding [0, -1, 0, 0] : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @pool2d_window_too_large(%x: tensor<1x3x3x2xf32>) {
  // NHWC: H is dimension 1 (3 rows); C = 2 is not spatial.
  // expected-error @+2 {{window of 4 cells does not fit height = 3 (after padding)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pool2d max nhwc %x kernel [4, 3] strides [1, 1] padding [0, 0, 0, 0] : tensor<1x3x3x2xf32> -> tensor<1x1x1x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// -----

func.func @transpose_repeated(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{perm [0, 2, 0] is not a permutation of the 3 dimensions of 'tensor<2x3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %x [0, 2, 0] : tensor<2x3x4xf32> -> tensor<2x4x2xf32>
  return
}

// -----

func.func @transpose_short(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{perm [1, 0] is not a permutation of the 3 dimensions of 'tensor<2x3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %x [1, 0] : tensor<2x3x4xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{perm [-1, 0] is not a permutation of the 2 dimensions of 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %x [-1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @reshape_element_count(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'graph.reshape' op cannot reshape 24 elements [2, 3, 4] into 25 elements [5, 5]}}
  %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<5x5xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.reshape' op cannot change the element type ('f32' to 'f16')}}
  %0 = graph.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  return
}

// -----

func.func @broadcast_to_incompatible(%x: tensor<3xf32>) {
  // expected-error @+1 {{operand shapes [3] and [2, 4] are not broadcast-compatible}}
  %0 = graph.broadcast_to %x : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_to_smaller(%x: tensor<2x3xf32>) {
  // Compatible shapes, but the result would have to be [2, 3].
  // expected-error @+1 {{'graph.broadcast_to' op cannot broadcast [2, 3] to [1, 3]}}
  %0 = graph.broadcast_to %x : tensor<2x3xf32> -> tensor<1x3xf32>
  return
}

// -----

func.func @broadcast_to_lower_rank(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.broadcast_to' op cannot broadcast [2, 3] to [3]}}
  %0 = graph.broadcast_to %x : tensor<2x3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @broadcast_to_element_type(%x: tensor<3xf32>) {
  // expected-error @+1 {{'graph.broadcast_to' op cannot change the element type}}
  %0 = graph.broadcast_to %x : tensor<3xf32> -> tensor<2x3xi32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+2 {{concat input #1 'tensor<3x3xf32>' does not match input #0 'tensor<2x3xf32>' outside axis 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+2 {{concat input #1 'tensor<2x3x1xf32>' does not match input #0 'tensor<2x3xf32>' outside axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_element_types(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+2 {{concat input #1 'tensor<2xf16>' does not match input #0 'tensor<2xf32>' outside axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %b axis 0 : (tensor<2xf32>, tensor<2xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (valid: -2 to 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %a axis 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_nothing() {
  // expected-error @+2 {{concat needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat axis 0 : () -> tensor<2xf32>
  return
}

// -----

func.func @slice_limit_past_end(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{slice 0:11:1 of dimension 1 (size 10) needs 0 <= start <= limit <= size and step >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x [[0, 0] : [8, 11] : [1, 1]] : tensor<8x10xf32> -> tensor<8x11xf32>
  return
}

// -----

func.func @slice_start_after_limit(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{slice 5:4:1 of dimension 0 (size 8) needs 0 <= start <= limit <= size and step >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x [[5, 0] : [4, 10] : [1, 1]] : tensor<8x10xf32> -> tensor<0x10xf32>
  return
}

// -----

func.func @slice_negative_start(%x: tensor<8x10xf32>) {
  // Front ends resolve Python's negative indices first.
  // expected-error @+2 {{slice -1:8:1 of dimension 0 (size 8) needs 0 <= start <= limit <= size and step >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x [[-1, 0] : [8, 10] : [1, 1]] : tensor<8x10xf32> -> tensor<9x10xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{slice 0:10:0 of dimension 1 (size 10) needs 0 <= start <= limit <= size and step >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x [[0, 0] : [8, 10] : [1, 0]] : tensor<8x10xf32> -> tensor<8x10xf32>
  return
}

// -----

func.func @slice_entries(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{slice needs one start, limit and step per dimension of 'tensor<8x10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x [[0] : [8] : [1]] : tensor<8x10xf32> -> tensor<8x10xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (valid: -2 to 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather %x [%i] axis 2 : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<4x5xf32>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<4x5xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = graph.gather %x [%i] axis 0 : (tensor<4x5xf32>, tensor<3xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gather_result_shape(%x: tensor<4x5xf32>, %i: tensor<3xi32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<3x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather %x [%i] axis 1 : (tensor<4x5xf32>, tensor<3xi32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @fused_without_yield(%x: tensor<4xf32>) {
  graph.fused elementwise (%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{block with no terminator}}
    %0 = graph.exp %a : tensor<4xf32>
  }
  return
}

// -----

func.func @too_many_bytes(%a: tensor<4611686018427387904x4xf32>) {
  // expected-error @below {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values of rank at most 64 and less than 2^63 bytes}}
  %0 = graph.relu %a : tensor<4611686018427387904x4xf32>
  return
}

// -----

func.func @gather_empty_axis(%a: tensor<0x4xf32>, %i: tensor<2xi32>) {
  // expected-error @+2 {{gather of indices 'tensor<2xi32>' from axis 0 of 'tensor<0x4xf32>', which is empty}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather %a[%i] axis 0 : (tensor<0x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @rank_0_resource() {
  // expected-error @+1 {{a rank-0 dense_resource constant is not supported; write it as dense<...>}}
  %0 = graph.constant dense_resource<blob> : tensor<f32>
  return
}

// -----

func.func @sparse() {
  // expected-error @+1 {{constant value must be dense<...> or dense_resource<...>; sparse constants are not supported}}
  %0 = graph.constant sparse<[[0]], [1.0]> : tensor<2xf32>
  return
}

// -----

func.func @iota_dim() {
  // expected-error @+1 {{'graph.iota' op dim 2 is not a dim of a tensor of rank 2}}
  %0 = graph.iota dim 2 : tensor<2x3xi64>
  return
}

// -----

func.func @iota_bool() {
  // expected-error @+1 {{'graph.iota' op needs an integer or float element type, not 'i1'}}
  %0 = graph.iota dim 0 : tensor<4xi1>
  return
}
