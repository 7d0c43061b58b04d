// RUN: tessel-opt %s -canonicalize -split-input-file | FileCheck %s
// batch_norm folds into the weights of a preceding conv2d or matmul once
// graph-decompose has turned it into x * s + t:
// RUN: tessel-opt %s -graph-decompose -canonicalize -split-input-file | FileCheck %s --check-prefixes=CHECK,BN

//===----------------------------------------------------------------------===//
// Constant folding of elementwise ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @fold_splat_binary
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<6.000000e+00> : tensor<4xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_splat_binary() -> tensor<4xf32> {
  %a = graph.constant dense<2.0> : tensor<4xf32>
  %b = graph.constant dense<3.0> : tensor<4xf32>
  %0 = graph.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A splat result stays a splat even when the operands broadcast.
// CHECK-LABEL: func.func @fold_splat_broadcast
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<-1.000000e+00> : tensor<2x3xf16>
// CHECK-NEXT: return %[[C]]
func.func @fold_splat_broadcast() -> tensor<2x3xf16> {
  %a = graph.constant dense<2.0> : tensor<2x1xf16>
  %b = graph.constant dense<3.0> : tensor<3xf16>
  %0 = graph.sub %a, %b : (tensor<2x1xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

// Non-splat operands broadcast like numpy: the row is added to every row.
// CHECK-LABEL: func.func @fold_non_splat_broadcast
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<{{\[}}[1.100000e+01, 2.200000e+01, 3.300000e+01], [1.400000e+01, 2.500000e+01, 3.600000e+01]]> : tensor<2x3xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_non_splat_broadcast() -> tensor<2x3xf32> {
  %a = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = graph.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A column broadcast against a row gives an outer product.
// CHECK-LABEL: func.func @fold_outer
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<{{\[}}[1, 2, 3], [2, 4, 6]]> : tensor<2x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @fold_outer() -> tensor<2x3xi64> {
  %a = graph.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %b = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %0 = graph.mul %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// Integer division truncates toward zero, like the lowering (arith.divsi).
// CHECK-LABEL: func.func @fold_int_div
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[3, -3, 4]> : tensor<3xi32>
// CHECK-NEXT: return %[[C]]
func.func @fold_int_div() -> tensor<3xi32> {
  %i = graph.constant dense<[7, -7, 8]> : tensor<3xi32>
  %j = graph.constant dense<2> : tensor<3xi32>
  %0 = graph.div %i, %j : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// Integer division by zero gives 0, as in the kernels (and numpy).
// CHECK-LABEL: func.func @fold_int_div_by_zero
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[5, 0]> : tensor<2xi32>
// CHECK-NEXT: return %[[C]]
func.func @fold_int_div_by_zero() -> tensor<2xi32> {
  %l = graph.constant dense<5> : tensor<2xi32>
  %r = graph.constant dense<[1, 0]> : tensor<2xi32>
  %0 = graph.div %l, %r : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// The remainder has the dividend's sign (C's % and fmod); by 0 or -1 it is 0
// for integers (MIN % -1 would trap), NaN for floats; the rounding ops fold
// halves to even (round) and toward -inf/+inf (floor/ceil).
// CHECK-LABEL: func.func @fold_rem_and_rounding
// CHECK-DAG: graph.constant dense<[1, -1, 1, 0, 0]> : tensor<5xi32>
// CHECK-DAG: graph.constant dense<[1.500000e+00, -1.500000e+00, 0x{{[7F]}}FC00000]> : tensor<3xf32>
// CHECK-DAG: graph.constant dense<[2.000000e+00, -2.000000e+00, 2.000000e+00, -3.000000e+00]> : tensor<4xf32>
// CHECK-DAG: graph.constant dense<[2.000000e+00, -3.000000e+00, 1.000000e+00, -3.000000e+00]> : tensor<4xf32>
// CHECK-DAG: graph.constant dense<[3.000000e+00, -2.000000e+00, 2.000000e+00, -2.000000e+00]> : tensor<4xf32>
// CHECK-NOT: graph.rem
// CHECK-NOT: graph.round
func.func @fold_rem_and_rounding() -> (tensor<5xi32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %i = graph.constant dense<[7, -7, 7, 5, -2147483648]> : tensor<5xi32>
  %j = graph.constant dense<[3, 3, -3, 0, -1]> : tensor<5xi32>
  %0 = graph.rem %i, %j : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %x = graph.constant dense<[5.5, -5.5, 1.0]> : tensor<3xf32>
  %y = graph.constant dense<[2.0, 2.0, 0.0]> : tensor<3xf32>
  %1 = graph.rem %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %h = graph.constant dense<[2.5, -2.5, 1.5, -2.6]> : tensor<4xf32>
  %2 = graph.round %h : tensor<4xf32>
  %3 = graph.floor %h : tensor<4xf32>
  %4 = graph.ceil %h : tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<5xi32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Float division by zero folds to IEEE infinities.
// CHECK-LABEL: func.func @fold_float_div_by_zero
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[0x7F800000, 0xFF800000]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_float_div_by_zero() -> tensor<2xf32> {
  %l = graph.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %r = graph.constant dense<0.0> : tensor<2xf32>
  %0 = graph.div %l, %r : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Integer results wrap to the element width.
// CHECK-LABEL: func.func @fold_int_wraps
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<-2147483648> : tensor<2xi32>
// CHECK-NEXT: return %[[C]]
func.func @fold_int_wraps() -> tensor<2xi32> {
  %a = graph.constant dense<2147483647> : tensor<2xi32>
  %b = graph.constant dense<1> : tensor<2xi32>
  %0 = graph.add %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// maximum/minimum propagate NaN.
// CHECK-LABEL: func.func @fold_max_min
// CHECK-DAG: %[[MAX:.*]] = graph.constant dense<[2.000000e+00, 0x7FC00000]> : tensor<2xf32>
// CHECK-DAG: %[[MIN:.*]] = graph.constant dense<[-3, 1]> : tensor<2xi32>
// CHECK: return %[[MAX]], %[[MIN]]
func.func @fold_max_min() -> (tensor<2xf32>, tensor<2xi32>) {
  %a = graph.constant dense<[1.0, 0x7FC00000]> : tensor<2xf32>
  %b = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.maximum %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %i = graph.constant dense<[-3, 4]> : tensor<2xi32>
  %j = graph.constant dense<[5, 1]> : tensor<2xi32>
  %1 = graph.minimum %i, %j : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0, %1 : tensor<2xf32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @fold_pow
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[8.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_pow() -> tensor<2xf32> {
  %a = graph.constant dense<[2.0, 9.0]> : tensor<2xf32>
  %b = graph.constant dense<[3.0, 0.5]> : tensor<2xf32>
  %0 = graph.pow %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Unary chains fold step by step.
// CHECK-LABEL: func.func @fold_unary
// CHECK-DAG: %[[F:.*]] = graph.constant dense<[0.000000e+00, 0.000000e+00, 2.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[I:.*]] = graph.constant dense<[-3, -5]> : tensor<2xi32>
// CHECK-DAG: %[[H:.*]] = graph.constant dense<2.718750e+00> : tensor<2xf16>
// CHECK-NOT: graph.relu
// CHECK-NOT: graph.exp
// CHECK: return %[[F]], %[[I]], %[[H]]
func.func @fold_unary() -> (tensor<3xf32>, tensor<2xi32>, tensor<2xf16>) {
  %a = graph.constant dense<[-1.0, 0.0, 4.0]> : tensor<3xf32>
  %0 = graph.relu %a : tensor<3xf32>
  %1 = graph.sqrt %0 : tensor<3xf32>
  %i = graph.constant dense<[-3, 5]> : tensor<2xi32>
  %2 = graph.abs %i : tensor<2xi32>
  %3 = graph.neg %2 : tensor<2xi32>
  %h = graph.constant dense<1.0> : tensor<2xf16>
  %4 = graph.exp %h : tensor<2xf16>
  return %1, %3, %4 : tensor<3xf32>, tensor<2xi32>, tensor<2xf16>
}

// -----

// CHECK-LABEL: func.func @fold_activations
// CHECK-DAG: graph.constant dense<[-0.158808008, 0.000000e+00, 3.99992967]> : tensor<3xf32>
// CHECK-DAG: graph.constant dense<[-0.158655256, 0.000000e+00, 3.9998734]> : tensor<3xf32>
// CHECK-DAG: graph.constant dense<[0.268941432, 5.000000e-01, 0.982013761]> : tensor<3xf32>
// CHECK-NOT: graph.gelu
// CHECK-NOT: graph.sigmoid
func.func @fold_activations() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %a = graph.constant dense<[-1.0, 0.0, 4.0]> : tensor<3xf32>
  %0 = graph.gelu %a approximate tanh : tensor<3xf32>
  %1 = graph.gelu %a : tensor<3xf32>
  %2 = graph.sigmoid %a : tensor<3xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Only constants fold.
// CHECK-LABEL: func.func @no_fold_non_constant
// CHECK: graph.mul
// CHECK: graph.exp
func.func @no_fold_non_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.constant dense<2.0> : tensor<4xf32>
  %0 = graph.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.exp %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

// -----

// f32 -> f16 rounds; values beyond the f16 range become infinities.
// CHECK-LABEL: func.func @fold_cast_to_f16
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[1.000000e+00, 0x7C00, 0xFC00, 3.000000e+00]> : tensor<4xf16>
// CHECK-NEXT: return %[[C]]
func.func @fold_cast_to_f16() -> tensor<4xf16> {
  %a = graph.constant dense<[1.0, 70000.0, -1.0e6, 3.0]> : tensor<4xf32>
  %0 = graph.cast %a to f16 : tensor<4xf32>
  return %0 : tensor<4xf16>
}

// -----

// Float to integer truncates toward zero.
// CHECK-LABEL: func.func @fold_cast_float_to_int
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[2, -2, 0, 0]> : tensor<4xi32>
// CHECK-NEXT: return %[[C]]
func.func @fold_cast_float_to_int() -> tensor<4xi32> {
  %a = graph.constant dense<[2.7, -2.7, 0.5, -0.0]> : tensor<4xf32>
  %0 = graph.cast %a to i32 : tensor<4xf32>
  return %0 : tensor<4xi32>
}

// -----

// Out-of-range values and NaN have no defined integer: the cast stays.
// CHECK-LABEL: func.func @no_fold_cast_out_of_range
// CHECK-DAG: %[[BIG:.*]] = graph.constant dense<[1.000000e+00, 3.000000e+09]> : tensor<2xf32>
// CHECK-DAG: %[[NAN:.*]] = graph.constant dense<0x7FC00000> : tensor<2xf32>
// CHECK-DAG: %[[C0:.*]] = graph.cast %[[BIG]] to i32 : tensor<2xf32>
// CHECK-DAG: %[[C1:.*]] = graph.cast %[[NAN]] to i64 : tensor<2xf32>
// CHECK: return %[[C0]], %[[C1]]
func.func @no_fold_cast_out_of_range() -> (tensor<2xi32>, tensor<2xi64>) {
  %a = graph.constant dense<[1.0, 3.0e9]> : tensor<2xf32>
  %0 = graph.cast %a to i32 : tensor<2xf32>
  %b = graph.constant dense<0x7FC00000> : tensor<2xf32>
  %1 = graph.cast %b to i64 : tensor<2xf32>
  return %0, %1 : tensor<2xi32>, tensor<2xi64>
}

// -----

// To i1 is `!= 0` (-0.0 is zero); from i1 gives 0 or 1 (not -1).
// CHECK-LABEL: func.func @fold_cast_bool
// CHECK-DAG: %[[B:.*]] = graph.constant dense<[false, false, true]> : tensor<3xi1>
// CHECK-DAG: %[[BI:.*]] = graph.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: %[[F:.*]] = graph.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[I:.*]] = graph.constant dense<[1, 0]> : tensor<2xi64>
// CHECK: return %[[B]], %[[BI]], %[[F]], %[[I]]
func.func @fold_cast_bool() -> (tensor<3xi1>, tensor<2xi1>, tensor<2xf32>, tensor<2xi64>) {
  %d = graph.constant dense<[0.0, -0.0, 0.5]> : tensor<3xf32>
  %0 = graph.cast %d to i1 : tensor<3xf32>
  %i = graph.constant dense<[-4, 0]> : tensor<2xi32>
  %1 = graph.cast %i to i1 : tensor<2xi32>
  %e = graph.constant dense<[true, false]> : tensor<2xi1>
  %2 = graph.cast %e to f32 : tensor<2xi1>
  %3 = graph.cast %e to i64 : tensor<2xi1>
  return %0, %1, %2, %3 : tensor<3xi1>, tensor<2xi1>, tensor<2xf32>, tensor<2xi64>
}

// -----

// Integer narrowing keeps the low bits; int -> float is signed.
// CHECK-LABEL: func.func @fold_cast_int
// CHECK-DAG: %[[N:.*]] = graph.constant dense<[1, -1]> : tensor<2xi32>
// CHECK-DAG: %[[F:.*]] = graph.constant dense<-7.000000e+00> : tensor<bf16>
// CHECK: return %[[N]], %[[F]]
func.func @fold_cast_int() -> (tensor<2xi32>, tensor<bf16>) {
  %a = graph.constant dense<[4294967297, -1]> : tensor<2xi64>
  %0 = graph.cast %a to i32 : tensor<2xi64>
  %s = graph.constant dense<-7> : tensor<i32>
  %1 = graph.cast %s to bf16 : tensor<i32>
  return %0, %1 : tensor<2xi32>, tensor<bf16>
}

// -----

// A cast to the same element type is the identity.
// CHECK-LABEL: func.func @fold_cast_identity
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @fold_cast_identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.cast %x to f32 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Transpose, reshape, broadcast_to
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @fold_transpose_constant
// CHECK-DAG: %[[T:.*]] = graph.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG: %[[S:.*]] = graph.constant dense<7> : tensor<4x2x3xi32>
// CHECK-DAG: %[[P:.*]] = graph.constant dense<{{\[\[\[}}0, 2], [4, 6], [8, 10]], {{\[\[}}1, 3], [5, 7], [9, 11]]]> : tensor<2x3x2xi64>
// CHECK-NOT: graph.transpose
// CHECK: return %[[T]], %[[S]], %[[P]]
func.func @fold_transpose_constant() -> (tensor<3x2xf32>, tensor<4x2x3xi32>, tensor<2x3x2xi64>) {
  %a = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = graph.transpose %a [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = graph.constant dense<7> : tensor<2x3x4xi32>
  %1 = graph.transpose %b [2, 0, 1] : tensor<2x3x4xi32> -> tensor<4x2x3xi32>
  // [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11]]] with perm [2, 0, 1].
  %c = graph.constant dense<[[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11]]]> : tensor<3x2x2xi64>
  %2 = graph.transpose %c [2, 0, 1] : tensor<3x2x2xi64> -> tensor<2x3x2xi64>
  return %0, %1, %2 : tensor<3x2xf32>, tensor<4x2x3xi32>, tensor<2x3x2xi64>
}

// -----

// transpose(transpose(x, p), q) is transpose(x, p[q[i]]); the identity
// permutation folds away.
// CHECK-LABEL: func.func @fold_transpose_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = graph.transpose %[[X]] [2, 1, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT: return %[[X]], %[[T]], %[[X]]
func.func @fold_transpose_chain(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x3x2xf32>, tensor<2x3x4xf32>) {
  %0 = graph.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = graph.transpose %0 [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  %2 = graph.transpose %x [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %3 = graph.transpose %2 [2, 0, 1] : tensor<3x2x4xf32> -> tensor<4x3x2xf32>
  %4 = graph.transpose %x [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %1, %3, %4 : tensor<2x3x4xf32>, tensor<4x3x2xf32>, tensor<2x3x4xf32>
}

// -----

// Reshape chains become one reshape, back to the input shape none, and a
// reshape of a constant is a constant.
// CHECK-LABEL: func.func @fold_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-DAG: %[[C:.*]] = graph.constant dense<{{\[}}[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
// CHECK-DAG: %[[R:.*]] = graph.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NOT: graph.reshape
// CHECK: return %[[R]], %[[X]], %[[C]], %[[X]]
func.func @fold_reshape(%x: tensor<2x3x4xf32>) -> (tensor<4x6xf32>, tensor<2x3x4xf32>, tensor<3x2xi32>, tensor<2x3x4xf32>) {
  %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = graph.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  %2 = graph.reshape %1 : tensor<24xf32> -> tensor<4x6xf32>
  %3 = graph.reshape %0 : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %c = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %4 = graph.reshape %c : tensor<2x3xi32> -> tensor<3x2xi32>
  %5 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %2, %3, %4, %5 : tensor<4x6xf32>, tensor<2x3x4xf32>, tensor<3x2xi32>, tensor<2x3x4xf32>
}

// -----

// broadcast_to of a splat is a splat; a non-splat constant is not expanded.
// CHECK-LABEL: func.func @fold_broadcast_to
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK-DAG: %[[S:.*]] = graph.constant dense<5.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[D:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[B0:.*]] = graph.broadcast_to %[[D]] : tensor<3xf32> -> tensor<2x3xf32>
// CHECK-DAG: %[[B1:.*]] = graph.broadcast_to %[[X]] : tensor<3xf32> -> tensor<2x3xf32>
// CHECK: return %[[S]], %[[B0]], %[[X]], %[[B1]]
func.func @fold_broadcast_to(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %c = graph.constant dense<5.0> : tensor<1xf32>
  %0 = graph.broadcast_to %c : tensor<1xf32> -> tensor<2x3xf32>
  %d = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %1 = graph.broadcast_to %d : tensor<3xf32> -> tensor<2x3xf32>
  %2 = graph.broadcast_to %x : tensor<3xf32> -> tensor<3xf32>
  %3 = graph.broadcast_to %x : tensor<3xf32> -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>
}

//===----------------------------------------------------------------------===//
// Algebraic identities
//===----------------------------------------------------------------------===//

// -----

// x + (-0.0), -0.0 + x, 1 * x, x - 0, x / 1 are x, also when the constant
// broadcasts to x's shape. (x + 0.0 is not: -0.0 + 0.0 is +0.0.)
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NOT: graph.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[I]], %[[I]]
func.func @identities(%x: tensor<2x3xf32>, %i: tensor<4xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>, tensor<4xi32>) {
  %z = graph.constant dense<0.0> : tensor<3xf32>
  %nz = graph.constant dense<-0.0> : tensor<3xf32>
  %o = graph.constant dense<1.0> : tensor<2x3xf32>
  %0 = graph.add %x, %nz : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.add %nz, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.mul %o, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.sub %x, %z : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %4 = graph.div %x, %o : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %iz = graph.constant dense<0> : tensor<i32>
  %5 = graph.add %i, %iz : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %io = graph.constant dense<1> : tensor<1xi32>
  %6 = graph.mul %io, %i : (tensor<1xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// Not an identity for floats: x + 0.0 (x = -0.0 gives +0.0).
// CHECK-LABEL: func.func @add_positive_zero
// CHECK: graph.add
func.func @add_positive_zero(%x: tensor<3xf32>) -> tensor<3xf32> {
  %z = graph.constant dense<0.0> : tensor<3xf32>
  %0 = graph.add %x, %z : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Not identities: 0 - x, 1 / x, and x + 0 where the zero broadcasts x to a
// larger shape (the result is not x).
// CHECK-LABEL: func.func @not_identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-DAG: %[[ZB:.*]] = graph.constant dense<0.000000e+00> : tensor<4x1x1xf32>
// CHECK-DAG: %[[Z:.*]] = graph.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[O:.*]] = graph.constant dense<1.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[A:.*]] = graph.add %[[X]], %[[ZB]] : (tensor<2x3xf32>, tensor<4x1x1xf32>) -> tensor<4x2x3xf32>
// CHECK-DAG: %[[S:.*]] = graph.sub %[[Z]], %[[X]]
// CHECK-DAG: %[[D:.*]] = graph.div %[[O]], %[[X]]
// CHECK-DAG: %[[M:.*]] = graph.mul %[[X]], %[[Z]]
// CHECK: return %[[A]], %[[S]], %[[D]], %[[M]]
func.func @not_identities(%x: tensor<2x3xf32>) -> (tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %z = graph.constant dense<0.0> : tensor<3xf32>
  %o = graph.constant dense<1.0> : tensor<2x3xf32>
  %zb = graph.constant dense<0.0> : tensor<4x1x1xf32>
  %0 = graph.add %x, %zb : (tensor<2x3xf32>, tensor<4x1x1xf32>) -> tensor<4x2x3xf32>
  %1 = graph.sub %z, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.div %o, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // x * 0 is not 0 for inf or NaN.
  %3 = graph.mul %x, %z : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

//===----------------------------------------------------------------------===//
// Per-channel scale and shift folded into conv2d / matmul weights
//===----------------------------------------------------------------------===//

// -----

// conv(x, W) * s + t -> conv(x, W * s, t) directly, without graph-decompose:
// s is per output channel (here [F, 1, 1] on the left), t a scalar that
// becomes a bias of F copies. Grouped convolutions scale the same way.
// CHECK-LABEL: func.func @scale_shift_into_grouped_conv
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x4x4xf32>)
// CHECK-DAG: %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}1.000000e+00]]], {{\[\[\[}}2.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}3.000000e+00]]], {{\[\[\[}}4.000000e+00]], {{\[\[}}4.000000e+00]]]]> : tensor<4x2x1x1xf32>
// CHECK-DAG: %[[B:.*]] = graph.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK: %[[C:.*]] = graph.conv2d nchw %[[X]], %[[W]], %[[B]] strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2
// CHECK-NOT: graph.mul
// CHECK-NOT: graph.add
// CHECK: return %[[C]]
func.func @scale_shift_into_grouped_conv(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<4x2x1x1xf32>
  %s = graph.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %t = graph.constant dense<3.0> : tensor<1xf32>
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 2 : (tensor<1x4x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  %1 = graph.mul %s, %0 : (tensor<4x1x1xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %2 = graph.add %1, %t : (tensor<1x4x4x4xf32>, tensor<1xf32>) -> tensor<1x4x4x4xf32>
  return %2 : tensor<1x4x4x4xf32>
}

// -----

// A batched matmul with a 2-D constant weight scales the weight's columns.
// CHECK-LABEL: func.func @scale_into_batched_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<5x3x2xf32>)
// CHECK: %[[W:.*]] = graph.constant dense<{{\[}}[2.000000e+00, 8.000000e+00], [6.000000e+00, 1.600000e+01]]> : tensor<2x2xf32>
// CHECK-NEXT: %[[M:.*]] = graph.matmul %[[X]], %[[W]]
// CHECK-NEXT: return %[[M]]
func.func @scale_into_batched_matmul(%x: tensor<5x3x2xf32>) -> tensor<5x3x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = graph.constant dense<[[[2.0, 4.0]]]> : tensor<1x1x2xf32>
  %0 = graph.matmul %x, %w : (tensor<5x3x2xf32>, tensor<2x2xf32>) -> tensor<5x3x2xf32>
  %1 = graph.mul %0, %s : (tensor<5x3x2xf32>, tensor<1x1x2xf32>) -> tensor<5x3x2xf32>
  return %1 : tensor<5x3x2xf32>
}

// -----

// A scale that varies along a non-channel dimension cannot move into the
// weight.
// CHECK-LABEL: func.func @no_scale_along_rows
// CHECK: graph.matmul
// CHECK: graph.mul
func.func @no_scale_along_rows(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = graph.constant dense<[[2.0], [4.0]]> : tensor<2x1xf32>
  %0 = graph.matmul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = graph.mul %0, %s : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}

// -----

// With scale [2, 4], variance [3, 0] and eps 1: s = [1, 4] and
// t = bias - mean * s = [-0.5, -12.5]. The weight's filters are scaled by s
// and the conv bias becomes b * s + t = [0.5, -4.5].
// BN-LABEL: func.func @batch_norm_into_conv_nchw
// BN-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>)
// BN-DAG: %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}1.000000e+00]]], {{\[\[\[}}4.000000e+00]], {{\[\[}}4.000000e+00]]]]> : tensor<2x2x1x1xf32>
// BN-DAG: %[[B:.*]] = graph.constant dense<[5.000000e-01, -4.500000e+00]> : tensor<2xf32>
// BN: %[[C:.*]] = graph.conv2d nchw %[[X]], %[[W]], %[[B]]
// BN-NEXT: return %[[C]]
func.func @batch_norm_into_conv_nchw(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %scale = graph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %shift = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.conv2d nchw %x, %w, %b strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var axis 1 eps 1.0 : tensor<1x2x4x4xf32>, tensor<2xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----

// NHWC: the HWIO weight is scaled along its last (output) dimension; the
// conv had no bias, so t becomes one.
// BN-LABEL: func.func @batch_norm_into_conv_nhwc
// BN-SAME: (%[[X:.*]]: tensor<1x4x4x2xf32>)
// BN-DAG: %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}1.000000e+00, 8.000000e+00], [3.000000e+00, 1.600000e+01]]]]> : tensor<1x1x2x2xf32>
// BN-DAG: %[[B:.*]] = graph.constant dense<[-5.000000e-01, -1.250000e+01]> : tensor<2xf32>
// BN: %[[C:.*]] = graph.conv2d nhwc %[[X]], %[[W]], %[[B]]
// BN-NEXT: return %[[C]]
func.func @batch_norm_into_conv_nhwc(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = graph.constant dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>
  %scale = graph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %shift = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.conv2d nhwc %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var axis -1 eps 1.0 : tensor<1x4x4x2xf32>, tensor<2xf32>
  return %1 : tensor<1x4x4x2xf32>
}

// -----

// matmul with a constant weight: the scale goes into the weight's columns,
// the shift stays an add (matmul has no bias).
// BN-LABEL: func.func @batch_norm_into_matmul
// BN-SAME: (%[[X:.*]]: tensor<3x2xf32>)
// BN-DAG: %[[W:.*]] = graph.constant dense<{{\[}}[1.000000e+00, 8.000000e+00], [3.000000e+00, 1.600000e+01]]> : tensor<2x2xf32>
// BN-DAG: %[[T:.*]] = graph.constant dense<[-5.000000e-01, -1.250000e+01]> : tensor<2xf32>
// BN: %[[M:.*]] = graph.matmul %[[X]], %[[W]]
// BN-NEXT: %[[A:.*]] = graph.add %[[M]], %[[T]]
// BN-NEXT: return %[[A]]
func.func @batch_norm_into_matmul(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %scale = graph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %shift = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var axis 1 eps 1.0 : tensor<3x2xf32>, tensor<2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// The conv result is also returned: folding would change it, so the conv
// keeps its weight and batch_norm stays x * s + t.
// BN-LABEL: func.func @no_fold_conv_second_use
// BN-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>)
// BN-DAG: %[[W:.*]] = graph.constant dense<1.000000e+00> : tensor<2x2x1x1xf32>
// BN-DAG: %[[S:.*]] = graph.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}4.000000e+00]]]> : tensor<2x1x1xf32>
// BN-DAG: %[[T:.*]] = graph.constant dense<{{\[\[\[}}-5.000000e-01]], {{\[\[}}-1.250000e+01]]]> : tensor<2x1x1xf32>
// BN: %[[C:.*]] = graph.conv2d nchw %[[X]], %[[W]] strides
// BN-NEXT: %[[M:.*]] = graph.mul %[[C]], %[[S]]
// BN-NEXT: %[[A:.*]] = graph.add %[[M]], %[[T]]
// BN-NEXT: return %[[C]], %[[A]]
func.func @no_fold_conv_second_use(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %scale = graph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %shift = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var axis 1 eps 1.0 : tensor<1x2x4x4xf32>, tensor<2xf32>
  return %0, %1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// A weight that is not a constant cannot absorb the scale.
// BN-LABEL: func.func @no_fold_conv_weight_argument
// BN-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[W:.*]]: tensor<2x2x1x1xf32>)
// BN: %[[C:.*]] = graph.conv2d nchw %[[X]], %[[W]] strides
// BN-NEXT: %[[M:.*]] = graph.mul %[[C]], %{{.*}}
// BN-NEXT: %[[A:.*]] = graph.add %[[M]], %{{.*}}
// BN-NEXT: return %[[A]]
func.func @no_fold_conv_weight_argument(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %scale = graph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %shift = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var axis 1 eps 1.0 : tensor<1x2x4x4xf32>, tensor<2xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----

// BN-LABEL: func.func @no_fold_matmul_weight_argument
// BN-SAME: (%[[X:.*]]: tensor<3x2xf32>, %[[W:.*]]: tensor<2x2xf32>)
// BN: %[[M:.*]] = graph.matmul %[[X]], %[[W]]
// BN-NEXT: graph.mul %[[M]], %{{.*}}
// BN-NEXT: graph.add
func.func @no_fold_matmul_weight_argument(%x: tensor<3x2xf32>, %w: tensor<2x2xf32>) -> tensor<3x2xf32> {
  %scale = graph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %shift = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var axis 1 eps 1.0 : tensor<3x2xf32>, tensor<2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// Non-constant batch_norm parameters leave s and t computed at run time.
// BN-LABEL: func.func @no_fold_parameter_argument
// BN-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[SCALE:.*]]: tensor<2xf32>)
// BN-DAG: %[[W:.*]] = graph.constant dense<1.000000e+00> : tensor<2x2x1x1xf32>
// BN-DAG: %[[C:.*]] = graph.conv2d nchw %[[X]], %[[W]] strides
// BN-DAG: %[[S:.*]] = graph.mul %[[SCALE]], %{{.*}} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// BN: %[[SR:.*]] = graph.reshape %[[S]] : tensor<2xf32> -> tensor<2x1x1xf32>
// BN: %[[M:.*]] = graph.mul %[[C]], %[[SR]]
// BN: %[[A:.*]] = graph.add %[[M]], %{{.*}}
// BN: return %[[A]]
func.func @no_fold_parameter_argument(%x: tensor<1x2x4x4xf32>, %scale: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %shift = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var axis 1 eps 1.0 : tensor<1x2x4x4xf32>, tensor<2xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----

// MIN / -1 wraps around to MIN, as in the kernels (and numpy).
// CHECK-LABEL: func.func @int_div_overflow
// CHECK-DAG: graph.constant dense<-9223372036854775808> : tensor<i64>
// CHECK-DAG: graph.constant dense<-2147483648> : tensor<i32>
// CHECK-NOT: graph.div
func.func @int_div_overflow() -> (tensor<i64>, tensor<i32>) {
  %min = graph.constant dense<-9223372036854775808> : tensor<i64>
  %m1 = graph.constant dense<-1> : tensor<i64>
  %0 = graph.div %min, %m1 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %min32 = graph.constant dense<-2147483648> : tensor<i32>
  %m132 = graph.constant dense<-1> : tensor<i32>
  %1 = graph.div %min32, %m132 : (tensor<i32>, tensor<i32>) -> tensor<i32>
  return %0, %1 : tensor<i64>, tensor<i32>
}

// -----

// Constants are not folded into dynamically shaped results.
// CHECK-LABEL: func.func @no_fold_to_dynamic
// CHECK: graph.reshape
// CHECK: graph.broadcast_to
func.func @no_fold_to_dynamic() -> (tensor<?x4xf32>, tensor<?xf32>) {
  %c = graph.constant dense<1.0> : tensor<2x4xf32>
  %0 = graph.reshape %c : tensor<2x4xf32> -> tensor<?x4xf32>
  %s = graph.constant dense<2.0> : tensor<1xf32>
  %1 = graph.broadcast_to %s : tensor<1xf32> -> tensor<?xf32>
  return %0, %1 : tensor<?x4xf32>, tensor<?xf32>
}
