// RUN: tessel-opt %s -graph-decompose -split-input-file | FileCheck %s

// softmax: e / sum(e) with e = exp(x - max(x)), reductions with keepdims so
// they broadcast back; a negative axis is normalized.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[MAX:.*]] = graph.reduce max %[[X]] axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT: %[[SH:.*]] = graph.sub %[[X]], %[[MAX]] : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[E:.*]] = graph.exp %[[SH]] : tensor<4x8xf32>
// CHECK-NEXT: %[[SUM:.*]] = graph.reduce sum %[[E]] axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT: %[[R:.*]] = graph.div %[[E]], %[[SUM]] : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.softmax %x axis -1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// f16 softmax computes in f32 and rounds once.
// CHECK-LABEL: func.func @softmax_f16
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x5xf16>)
// CHECK-NEXT: %[[W:.*]] = graph.cast %[[X]] to f32 : tensor<2x3x5xf16>
// CHECK-NEXT: %[[MAX:.*]] = graph.reduce max %[[W]] axes [1] keepdims : tensor<2x3x5xf32> -> tensor<2x1x5xf32>
// CHECK-NEXT: graph.sub %[[W]], %[[MAX]]
// CHECK-NEXT: graph.exp
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: %[[D:.*]] = graph.div
// CHECK-NEXT: %[[R:.*]] = graph.cast %[[D]] to f16 : tensor<2x3x5xf32>
// CHECK-NEXT: return %[[R]]
func.func @softmax_f16(%x: tensor<2x3x5xf16>) -> tensor<2x3x5xf16> {
  %0 = graph.softmax %x axis 1 : tensor<2x3x5xf16>
  return %0 : tensor<2x3x5xf16>
}

// -----

// log_softmax: (x - max) - log(sum(exp(x - max))).
// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[MAX:.*]] = graph.reduce max %[[X]] axes [0] keepdims : tensor<4x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[SH:.*]] = graph.sub %[[X]], %[[MAX]]
// CHECK-NEXT: %[[E:.*]] = graph.exp %[[SH]]
// CHECK-NEXT: %[[SUM:.*]] = graph.reduce sum %[[E]] axes [0] keepdims : tensor<4x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[LOG:.*]] = graph.log %[[SUM]] : tensor<1x8xf32>
// CHECK-NEXT: %[[R:.*]] = graph.sub %[[SH]], %[[LOG]] : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @log_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.log_softmax %x axis 0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax_bf16
// CHECK: graph.cast %{{.*}} to f32 : tensor<4x8xbf16>
// CHECK: graph.log
// CHECK: %[[R:.*]] = graph.cast %{{.*}} to bf16 : tensor<4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @log_softmax_bf16(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = graph.log_softmax %x axis 1 : tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// layer_norm: (x - mean) * rsqrt(mean((x - mean)^2) + eps) * w + b, with the
// biased variance, over the dims from `axis` on.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-DAG: %[[EPS:.*]] = graph.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-DAG: %[[MEAN:.*]] = graph.reduce mean %[[X]] axes [2] keepdims : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
// CHECK: %[[C:.*]] = graph.sub %[[X]], %[[MEAN]]
// CHECK-NEXT: %[[SQ:.*]] = graph.mul %[[C]], %[[C]]
// CHECK-NEXT: %[[VAR:.*]] = graph.reduce mean %[[SQ]] axes [2] keepdims
// CHECK-NEXT: %[[VE:.*]] = graph.add %[[VAR]], %[[EPS]] : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
// CHECK-NEXT: %[[INV:.*]] = graph.rsqrt %[[VE]]
// CHECK-NEXT: %[[N:.*]] = graph.mul %[[C]], %[[INV]]
// CHECK-NEXT: %[[S:.*]] = graph.mul %[[N]], %[[W]] : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = graph.add %[[S]], %[[B]] : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = graph.layer_norm %x weight(%w : tensor<8xf32>) bias(%b : tensor<8xf32>) axis -1 eps 1.0e-05 : tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// Without weight and bias the result is the normalized value.
// CHECK-LABEL: func.func @layer_norm_plain
// CHECK: %[[N:.*]] = graph.mul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @layer_norm_plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.layer_norm %x axis 1 eps 1.0e-05 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// f16 is normalized in f32: the input and the bias are cast up, statistics
// and epsilon are f32, the result is cast back once. With a bias only, no
// weight multiply follows the normalization. axis 1 reduces dims 1 and 2.
// CHECK-LABEL: func.func @layer_norm_f16_bias_only
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf16>, %[[B:.*]]: tensor<4x8xf16>)
// CHECK-DAG: %[[EPS:.*]] = graph.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-DAG: %[[XW:.*]] = graph.cast %[[X]] to f32 : tensor<2x4x8xf16>
// CHECK: %[[MEAN:.*]] = graph.reduce mean %[[XW]] axes [1, 2] keepdims : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
// CHECK: graph.reduce mean %{{.*}} axes [1, 2] keepdims : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT: graph.add %{{.*}}, %[[EPS]]
// CHECK-NEXT: graph.rsqrt
// CHECK-NEXT: %[[N:.*]] = graph.mul
// CHECK-NEXT: %[[BW:.*]] = graph.cast %[[B]] to f32 : tensor<4x8xf16>
// CHECK-NEXT: %[[Y:.*]] = graph.add %[[N]], %[[BW]] : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[R:.*]] = graph.cast %[[Y]] to f16 : tensor<2x4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @layer_norm_f16_bias_only(%x: tensor<2x4x8xf16>, %b: tensor<4x8xf16>) -> tensor<2x4x8xf16> {
  %0 = graph.layer_norm %x bias(%b : tensor<4x8xf16>) axis 1 eps 1.0e-05 : tensor<2x4x8xf16>
  return %0 : tensor<2x4x8xf16>
}

// -----

// rms_norm: x * rsqrt(mean(x^2) + eps) * w, in f32 for bf16.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xbf16>, %[[W:.*]]: tensor<8xbf16>)
// CHECK-DAG: %[[EPS:.*]] = graph.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-DAG: %[[XW:.*]] = graph.cast %[[X]] to f32 : tensor<2x8xbf16>
// CHECK: %[[SQ:.*]] = graph.mul %[[XW]], %[[XW]]
// CHECK-NEXT: %[[MS:.*]] = graph.reduce mean %[[SQ]] axes [1] keepdims : tensor<2x8xf32> -> tensor<2x1xf32>
// CHECK-NEXT: %[[A:.*]] = graph.add %[[MS]], %[[EPS]]
// CHECK-NEXT: %[[INV:.*]] = graph.rsqrt %[[A]]
// CHECK-NEXT: %[[N:.*]] = graph.mul %[[XW]], %[[INV]] : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[WW:.*]] = graph.cast %[[W]] to f32 : tensor<8xbf16>
// CHECK-NEXT: %[[Y:.*]] = graph.mul %[[N]], %[[WW]]
// CHECK-NEXT: %[[R:.*]] = graph.cast %[[Y]] to bf16 : tensor<2x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @rms_norm(%x: tensor<2x8xbf16>, %w: tensor<8xbf16>) -> tensor<2x8xbf16> {
  %0 = graph.rms_norm %x weight(%w : tensor<8xbf16>) axis 1 eps 1.0e-05 : tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}

// -----

// CHECK-LABEL: func.func @rms_norm_no_weight
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x8xf32>)
// CHECK-NOT: graph.cast
// CHECK: graph.reduce mean %{{.*}} axes [1, 2] keepdims : tensor<3x4x8xf32> -> tensor<3x1x1xf32>
// CHECK: %[[N:.*]] = graph.mul %[[X]], %{{.*}} : (tensor<3x4x8xf32>, tensor<3x1x1xf32>) -> tensor<3x4x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @rms_norm_no_weight(%x: tensor<3x4x8xf32>) -> tensor<3x4x8xf32> {
  %0 = graph.rms_norm %x axis -2 eps 1.0e-05 : tensor<3x4x8xf32>
  return %0 : tensor<3x4x8xf32>
}

// -----

// batch_norm: x * s + t with s = scale * rsqrt(var + eps) and
// t = bias - mean * s, reshaped to [C, 1, 1] to line up with axis 1 of NCHW.
// CHECK-LABEL: func.func @batch_norm_nchw
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x5x5xf32>, %[[SC:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>, %[[M:.*]]: tensor<3xf32>, %[[V:.*]]: tensor<3xf32>)
// CHECK-NEXT: %[[EPS:.*]] = graph.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT: %[[VE:.*]] = graph.add %[[V]], %[[EPS]]
// CHECK-NEXT: %[[INV:.*]] = graph.rsqrt %[[VE]] : tensor<3xf32>
// CHECK-NEXT: %[[S:.*]] = graph.mul %[[SC]], %[[INV]]
// CHECK-NEXT: %[[MS:.*]] = graph.mul %[[M]], %[[S]]
// CHECK-NEXT: %[[T:.*]] = graph.sub %[[B]], %[[MS]]
// CHECK-NEXT: %[[S3:.*]] = graph.reshape %[[S]] : tensor<3xf32> -> tensor<3x1x1xf32>
// CHECK-NEXT: %[[T3:.*]] = graph.reshape %[[T]] : tensor<3xf32> -> tensor<3x1x1xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.mul %[[X]], %[[S3]] : (tensor<2x3x5x5xf32>, tensor<3x1x1xf32>) -> tensor<2x3x5x5xf32>
// CHECK-NEXT: %[[R:.*]] = graph.add %[[Y]], %[[T3]]
// CHECK-NEXT: return %[[R]]
func.func @batch_norm_nchw(%x: tensor<2x3x5x5xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x5x5xf32> {
  %0 = graph.batch_norm %x, %s, %b, %m, %v axis 1 eps 1.0e-03 : tensor<2x3x5x5xf32>, tensor<3xf32>
  return %0 : tensor<2x3x5x5xf32>
}

// -----

// NHWC (axis -1): the per-channel vectors are already trailing, so no
// reshape is left; f16 is computed in f32.
// CHECK-LABEL: func.func @batch_norm_nhwc_f16
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x5x3xf16>, %[[P:.*]]: tensor<3xf16>)
// CHECK-NOT: graph.reshape
// CHECK: %[[EPS:.*]] = graph.constant dense<1.000000e-03> : tensor<f32>
// CHECK: %[[VW:.*]] = graph.cast %[[P]] to f32 : tensor<3xf16>
// CHECK-NEXT: graph.add %[[VW]], %[[EPS]]
// CHECK-NEXT: %[[INV:.*]] = graph.rsqrt
// CHECK: %[[S:.*]] = graph.mul %{{.*}}, %[[INV]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: %[[T:.*]] = graph.sub
// CHECK-NEXT: %[[XW:.*]] = graph.cast %[[X]] to f32 : tensor<2x5x5x3xf16>
// CHECK-NEXT: %[[Y:.*]] = graph.mul %[[XW]], %[[S]] : (tensor<2x5x5x3xf32>, tensor<3xf32>) -> tensor<2x5x5x3xf32>
// CHECK-NEXT: %[[A:.*]] = graph.add %[[Y]], %[[T]] : (tensor<2x5x5x3xf32>, tensor<3xf32>) -> tensor<2x5x5x3xf32>
// CHECK-NEXT: %[[R:.*]] = graph.cast %[[A]] to f16 : tensor<2x5x5x3xf32>
// CHECK-NEXT: return %[[R]]
func.func @batch_norm_nhwc_f16(%x: tensor<2x5x5x3xf16>, %p: tensor<3xf16>) -> tensor<2x5x5x3xf16> {
  %0 = graph.batch_norm %x, %p, %p, %p, %p axis -1 eps 1.0e-03 : tensor<2x5x5x3xf16>, tensor<3xf16>
  return %0 : tensor<2x5x5x3xf16>
}

// -----

// linear on a rank-1 input: one row, matmul with the transposed weight, bias,
// and back to rank 1.
// CHECK-LABEL: func.func @linear_rank1
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[ROW:.*]] = graph.reshape %[[X]] : tensor<8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[WT:.*]] = graph.transpose %[[W]] [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[MM:.*]] = graph.matmul %[[ROW]], %[[WT]] : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
// CHECK-NEXT: %[[A:.*]] = graph.add %[[MM]], %[[B]] : (tensor<1x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
// CHECK-NEXT: %[[R:.*]] = graph.reshape %[[A]] : tensor<1x16xf32> -> tensor<16xf32>
// CHECK-NEXT: return %[[R]]
func.func @linear_rank1(%x: tensor<8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %0 = graph.linear %x, %w, %b : (tensor<8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// A rank-3 input is a batched matmul against the [K, N] transposed weight.
// CHECK-LABEL: func.func @linear_rank3
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x8xf16>, %[[W:.*]]: tensor<16x8xf16>, %[[B:.*]]: tensor<16xf16>)
// CHECK-NEXT: %[[WT:.*]] = graph.transpose %[[W]] [1, 0] : tensor<16x8xf16> -> tensor<8x16xf16>
// CHECK-NEXT: %[[MM:.*]] = graph.matmul %[[X]], %[[WT]] : (tensor<2x5x8xf16>, tensor<8x16xf16>) -> tensor<2x5x16xf16>
// CHECK-NEXT: %[[R:.*]] = graph.add %[[MM]], %[[B]] : (tensor<2x5x16xf16>, tensor<16xf16>) -> tensor<2x5x16xf16>
// CHECK-NEXT: return %[[R]]
func.func @linear_rank3(%x: tensor<2x5x8xf16>, %w: tensor<16x8xf16>, %b: tensor<16xf16>) -> tensor<2x5x16xf16> {
  %0 = graph.linear %x, %w, %b : (tensor<2x5x8xf16>, tensor<16x8xf16>, tensor<16xf16>) -> tensor<2x5x16xf16>
  return %0 : tensor<2x5x16xf16>
}

// -----

// Without a bias there is no add.
// CHECK-LABEL: func.func @linear_no_bias
// CHECK-NEXT: graph.transpose
// CHECK-NEXT: %[[MM:.*]] = graph.matmul
// CHECK-NEXT: return %[[MM]]
func.func @linear_no_bias(%x: tensor<4x8xi32>, %w: tensor<3x8xi32>) -> tensor<4x3xi32> {
  %0 = graph.linear %x, %w : (tensor<4x8xi32>, tensor<3x8xi32>) -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}

// -----

// Primitive ops are left alone.
// CHECK-LABEL: func.func @primitives
// CHECK-NEXT: graph.matmul
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: return
func.func @primitives(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4xf32> {
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = graph.reduce sum %0 axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Zero-size tensors: an empty result is an empty constant, a reduction over
// nothing its identity, a concatenation drops its empty operands.
// CHECK-LABEL: func.func @zero_size
// CHECK-DAG: %[[EMPTY:.*]] = graph.constant dense<> : tensor<4x0xf32>
// CHECK-DAG: %[[MAX:.*]] = graph.constant dense<0xFF800000> : tensor<4xf32>
// CHECK-DAG: %[[MM:.*]] = graph.constant dense<0.000000e+00> : tensor<4x3xf32>
// CHECK: return %[[EMPTY]], %[[MAX]], %[[MM]], %arg2
func.func @zero_size(%a: tensor<4x0xf32>, %b: tensor<0x3xf32>, %c: tensor<4x3xf32>) -> (tensor<4x0xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = graph.softmax %a axis 1 : tensor<4x0xf32>
  %1 = graph.reduce max %a axes [1] : tensor<4x0xf32> -> tensor<4xf32>
  %2 = graph.matmul %a, %b : (tensor<4x0xf32>, tensor<0x3xf32>) -> tensor<4x3xf32>
  %3 = graph.concat %a, %c axis 1 : (tensor<4x0xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0, %1, %2, %3 : tensor<4x0xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}
