// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %s --mlir-print-op-generic | tessel-opt | FileCheck %s

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2x2xf32>, tensor<128x64xf16>, tensor<3xi1>) {
  // CHECK: graph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: graph.constant dense<0.000000e+00> : tensor<128x64xf16>
  %1 = graph.constant dense<0.0> : tensor<128x64xf16>
  // CHECK: graph.constant dense<[true, false, true]> : tensor<3xi1>
  %2 = graph.constant dense<[true, false, true]> : tensor<3xi1>
  return %0, %1, %2 : tensor<2x2xf32>, tensor<128x64xf16>, tensor<3xi1>
}

// CHECK-LABEL: func.func @broadcasting
func.func @broadcasting(%a: tensor<4x1x8xf32>, %b: tensor<3x1xf32>, %i: tensor<5xi32>, %j: tensor<1xi32>) -> (tensor<4x3x8xf32>, tensor<5xi32>) {
  // CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  %0 = graph.add %a, %b : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  // CHECK: graph.sub
  %1 = graph.sub %0, %a : (tensor<4x3x8xf32>, tensor<4x1x8xf32>) -> tensor<4x3x8xf32>
  // CHECK: graph.mul
  %2 = graph.mul %1, %b : (tensor<4x3x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  // CHECK: graph.div
  %3 = graph.div %2, %a : (tensor<4x3x8xf32>, tensor<4x1x8xf32>) -> tensor<4x3x8xf32>
  // CHECK: graph.maximum
  %4 = graph.maximum %3, %a : (tensor<4x3x8xf32>, tensor<4x1x8xf32>) -> tensor<4x3x8xf32>
  // CHECK: graph.minimum %{{.*}}, %{{.*}} : (tensor<5xi32>, tensor<1xi32>) -> tensor<5xi32>
  %5 = graph.minimum %i, %j : (tensor<5xi32>, tensor<1xi32>) -> tensor<5xi32>
  return %4, %5 : tensor<4x3x8xf32>, tensor<5xi32>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<7xbf16>, %i: tensor<7xi64>) -> (tensor<7xbf16>, tensor<7xi64>) {
  // CHECK: graph.relu %{{.*}} : tensor<7xbf16>
  %0 = graph.relu %x : tensor<7xbf16>
  // CHECK: graph.neg %{{.*}} : tensor<7xi64>
  %1 = graph.neg %i : tensor<7xi64>
  // CHECK: graph.exp
  %2 = graph.exp %0 : tensor<7xbf16>
  // CHECK: graph.tanh
  %3 = graph.tanh %2 : tensor<7xbf16>
  // CHECK: graph.sin
  %s = graph.sin %3 : tensor<7xbf16>
  // CHECK: graph.cos
  %c = graph.cos %s : tensor<7xbf16>
  // CHECK: graph.abs %{{.*}} : tensor<7xi64>
  %4 = graph.abs %1 : tensor<7xi64>
  // CHECK: graph.log
  %5 = graph.log %3 : tensor<7xbf16>
  // CHECK: graph.sqrt
  %6 = graph.sqrt %5 : tensor<7xbf16>
  // CHECK: graph.rsqrt
  %7 = graph.rsqrt %6 : tensor<7xbf16>
  // CHECK: graph.sigmoid
  %8 = graph.sigmoid %7 : tensor<7xbf16>
  // CHECK: graph.silu
  %9 = graph.silu %8 : tensor<7xbf16>
  // CHECK: graph.gelu %{{.*}} : tensor<7xbf16>
  %10 = graph.gelu %9 : tensor<7xbf16>
  // CHECK: graph.gelu %{{.*}} approximate tanh : tensor<7xbf16>
  %11 = graph.gelu %10 approximate tanh : tensor<7xbf16>
  return %11, %4 : tensor<7xbf16>, tensor<7xi64>
}

// CHECK-LABEL: func.func @matmuls
func.func @matmuls(%a: tensor<8x64x32xf16>, %b: tensor<32x16xf16>, %c: tensor<2x1x5x3xf32>, %d: tensor<4x3x6xf32>) -> (tensor<8x64x16xf16>, tensor<2x4x5x6xf32>) {
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<8x64x32xf16>, tensor<32x16xf16>) -> tensor<8x64x16xf16>
  %0 = graph.matmul %a, %b : (tensor<8x64x32xf16>, tensor<32x16xf16>) -> tensor<8x64x16xf16>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<2x1x5x3xf32>, tensor<4x3x6xf32>) -> tensor<2x4x5x6xf32>
  %1 = graph.matmul %c, %d : (tensor<2x1x5x3xf32>, tensor<4x3x6xf32>) -> tensor<2x4x5x6xf32>
  return %0, %1 : tensor<8x64x16xf16>, tensor<2x4x5x6xf32>
}

// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  // CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %0 = graph.add %a, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: graph.fused contraction(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>):
  // CHECK-NEXT: %[[M:.*]] = graph.matmul %[[A]], %[[W]]
  // CHECK-NEXT: %[[S:.*]] = graph.add %[[M]], %[[B]]
  // CHECK-NEXT: %[[R:.*]] = graph.relu %[[S]]
  // CHECK-NEXT: graph.yield %[[R]] : tensor<4x16xf32>
  %r = graph.fused contraction (%x, %w, %b) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>, %d: tensor<16xf32>):
    %0 = graph.matmul %a, %c : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = graph.add %0, %d : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %2 = graph.relu %1 : tensor<4x16xf32>
    graph.yield %2 : tensor<4x16xf32>
  }
  return %r : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @fused_kinds
func.func @fused_kinds(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  // CHECK: graph.fused elementwise(%{{.*}}) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  %r:2 = graph.fused elementwise (%x) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<16xf32>):
    %0 = graph.exp %a : tensor<16xf32>
    %1 = graph.neg %0 : tensor<16xf32>
    graph.yield %0, %1 : tensor<16xf32>, tensor<16xf32>
  }
  return %r#0, %r#1 : tensor<16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @pow
func.func @pow(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %h: tensor<3xbf16>) -> (tensor<4x8xf32>, tensor<3xbf16>) {
  // CHECK: graph.pow %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = graph.pow %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: graph.pow %{{.*}}, %{{.*}} : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
  %1 = graph.pow %h, %h : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
  return %0, %1 : tensor<4x8xf32>, tensor<3xbf16>
}

// CHECK-LABEL: func.func @compare
func.func @compare(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4x1xi32>, %j: tensor<5xi32>, %c: tensor<8xi1>) -> (tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x5xi1>, tensor<4x5xi1>, tensor<4x5xi1>, tensor<4x5xi1>, tensor<8xi1>) {
  // CHECK: graph.compare eq, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %0 = graph.compare eq, %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: graph.compare ne, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %1 = graph.compare ne, %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: graph.compare lt, %{{.*}}, %{{.*}} : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  %2 = graph.compare lt, %i, %j : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  // CHECK: graph.compare le, %{{.*}}, %{{.*}} : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  %3 = graph.compare le, %i, %j : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  // CHECK: graph.compare gt, %{{.*}}, %{{.*}} : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  %4 = graph.compare gt, %i, %j : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  // CHECK: graph.compare ge, %{{.*}}, %{{.*}} : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  %5 = graph.compare ge, %i, %j : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  // Booleans compare too.
  // CHECK: graph.compare lt, %{{.*}}, %{{.*}} : (tensor<8xi1>, tensor<8xi1>) -> tensor<8xi1>
  %6 = graph.compare lt, %c, %c : (tensor<8xi1>, tensor<8xi1>) -> tensor<8xi1>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x5xi1>, tensor<4x5xi1>, tensor<4x5xi1>, tensor<4x5xi1>, tensor<8xi1>
}

// CHECK-LABEL: func.func @select
func.func @select(%c: tensor<4x1xi1>, %a: tensor<8xf32>, %b: tensor<1x8xf32>, %x: tensor<4x1xi1>, %y: tensor<i1>) -> (tensor<4x8xf32>, tensor<4x1xi1>) {
  // All three operands broadcast.
  // CHECK: graph.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x1xi1>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %0 = graph.select %c, %a, %b : (tensor<4x1xi1>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  // CHECK: graph.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x1xi1>, tensor<4x1xi1>, tensor<i1>) -> tensor<4x1xi1>
  %1 = graph.select %c, %x, %y : (tensor<4x1xi1>, tensor<4x1xi1>, tensor<i1>) -> tensor<4x1xi1>
  return %0, %1 : tensor<4x8xf32>, tensor<4x1xi1>
}

// CHECK-LABEL: func.func @cast
func.func @cast(%x: tensor<4x8xf32>, %b: tensor<3xi1>, %i: tensor<2xi64>) -> (tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xi32>, tensor<3xf32>, tensor<2xi1>, tensor<2xi32>) {
  // CHECK: %[[H:.*]] = graph.cast %{{.*}} to f16 : tensor<4x8xf32>
  %0 = graph.cast %x to f16 : tensor<4x8xf32>
  // CHECK: graph.cast %[[H]] to bf16 : tensor<4x8xf16>
  %1 = graph.cast %0 to bf16 : tensor<4x8xf16>
  // CHECK: graph.cast %{{.*}} to i32 : tensor<4x8xf32>
  %2 = graph.cast %x to i32 : tensor<4x8xf32>
  // CHECK: graph.cast %{{.*}} to f32 : tensor<3xi1>
  %3 = graph.cast %b to f32 : tensor<3xi1>
  // CHECK: graph.cast %{{.*}} to i1 : tensor<2xi64>
  %4 = graph.cast %i to i1 : tensor<2xi64>
  // CHECK: graph.cast %{{.*}} to i32 : tensor<2xi64>
  %5 = graph.cast %i to i32 : tensor<2xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xi32>, tensor<3xf32>, tensor<2xi1>, tensor<2xi32>
}

// CHECK-LABEL: func.func @reduce
func.func @reduce(%x: tensor<2x3x4xf32>, %i: tensor<2x3x4xi32>, %h: tensor<8x16xf16>) -> (tensor<2x1x4xf32>, tensor<f32>, tensor<2x3xi32>, tensor<4xi32>, tensor<1x1x1xf32>, tensor<8x1xf16>, tensor<2x3x4xf32>) {
  // CHECK: graph.reduce sum %{{.*}} axes [1] keepdims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %0 = graph.reduce sum %x axes [1] keepdims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  // CHECK: graph.reduce mean %{{.*}} axes [0, -1, 1] : tensor<2x3x4xf32> -> tensor<f32>
  %1 = graph.reduce mean %x axes [0, -1, 1] : tensor<2x3x4xf32> -> tensor<f32>
  // CHECK: graph.reduce max %{{.*}} axes [-1] : tensor<2x3x4xi32> -> tensor<2x3xi32>
  %2 = graph.reduce max %i axes [-1] : tensor<2x3x4xi32> -> tensor<2x3xi32>
  // CHECK: graph.reduce min %{{.*}} axes [-3, 1] : tensor<2x3x4xi32> -> tensor<4xi32>
  %3 = graph.reduce min %i axes [-3, 1] : tensor<2x3x4xi32> -> tensor<4xi32>
  // CHECK: graph.reduce max %{{.*}} axes [2, 0, 1] keepdims : tensor<2x3x4xf32> -> tensor<1x1x1xf32>
  %4 = graph.reduce max %x axes [2, 0, 1] keepdims : tensor<2x3x4xf32> -> tensor<1x1x1xf32>
  // CHECK: graph.reduce mean %{{.*}} axes [-1] keepdims : tensor<8x16xf16> -> tensor<8x1xf16>
  %5 = graph.reduce mean %h axes [-1] keepdims : tensor<8x16xf16> -> tensor<8x1xf16>
  // No axes: nothing is reduced.
  // CHECK: graph.reduce sum %{{.*}} axes [] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %6 = graph.reduce sum %x axes [] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x1x4xf32>, tensor<f32>, tensor<2x3xi32>, tensor<4xi32>, tensor<1x1x1xf32>, tensor<8x1xf16>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<4x8xf32>, %h: tensor<2x3x5xf16>) -> (tensor<4x8xf32>, tensor<2x3x5xf16>, tensor<4x8xf32>, tensor<2x3x5xf16>) {
  // CHECK: graph.softmax %{{.*}} axis 1 : tensor<4x8xf32>
  %0 = graph.softmax %x axis 1 : tensor<4x8xf32>
  // CHECK: graph.softmax %{{.*}} axis -2 : tensor<2x3x5xf16>
  %1 = graph.softmax %h axis -2 : tensor<2x3x5xf16>
  // CHECK: graph.log_softmax %{{.*}} axis -1 : tensor<4x8xf32>
  %2 = graph.log_softmax %x axis -1 : tensor<4x8xf32>
  // CHECK: graph.log_softmax %{{.*}} axis 0 : tensor<2x3x5xf16>
  %3 = graph.log_softmax %h axis 0 : tensor<2x3x5xf16>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<2x3x5xf16>, tensor<4x8xf32>, tensor<2x3x5xf16>
}

// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %w2: tensor<4x8xf32>, %b2: tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  // CHECK: graph.layer_norm %{{.*}} weight(%{{.*}} : tensor<8xf32>) bias(%{{.*}} : tensor<8xf32>) axis -1 eps 1.000000e-05 : tensor<2x4x8xf32>
  %0 = graph.layer_norm %x weight(%w : tensor<8xf32>) bias(%b : tensor<8xf32>) axis -1 eps 1.0e-05 : tensor<2x4x8xf32>
  // CHECK: graph.layer_norm %{{.*}} axis 2 eps 1.000000e-03 : tensor<2x4x8xf32>
  %1 = graph.layer_norm %x axis 2 eps 1.0e-03 : tensor<2x4x8xf32>
  // CHECK: graph.layer_norm %{{.*}} weight(%{{.*}} : tensor<8xf32>) axis 2 eps 1.000000e-05 : tensor<2x4x8xf32>
  %2 = graph.layer_norm %x weight(%w : tensor<8xf32>) axis 2 eps 1.0e-05 : tensor<2x4x8xf32>
  // Bias only: the keyword tells it apart from a weight.
  // CHECK: graph.layer_norm %{{[^ ]+}} bias(%{{[^ ]+}} : tensor<8xf32>) axis -1 eps 1.000000e-05 : tensor<2x4x8xf32>
  %3 = graph.layer_norm %x bias(%b : tensor<8xf32>) axis -1 eps 1.0e-05 : tensor<2x4x8xf32>
  // Normalized over the last two dimensions.
  // CHECK: graph.layer_norm %{{.*}} weight(%{{.*}} : tensor<4x8xf32>) bias(%{{.*}} : tensor<4x8xf32>) axis -2 eps 1.000000e-05 : tensor<2x4x8xf32>
  %4 = graph.layer_norm %x weight(%w2 : tensor<4x8xf32>) bias(%b2 : tensor<4x8xf32>) axis -2 eps 1.0e-05 : tensor<2x4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @rms_norm
func.func @rms_norm(%x: tensor<2x4x8xbf16>, %w: tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) {
  // CHECK: graph.rms_norm %{{.*}} weight(%{{.*}} : tensor<8xbf16>) axis -1 eps 1.000000e-03 : tensor<2x4x8xbf16>
  %0 = graph.rms_norm %x weight(%w : tensor<8xbf16>) axis -1 eps 1.0e-03 : tensor<2x4x8xbf16>
  // CHECK: graph.rms_norm %{{.*}} axis 1 eps 1.000000e-05 : tensor<2x4x8xbf16>
  %1 = graph.rms_norm %x axis 1 eps 1.0e-05 : tensor<2x4x8xbf16>
  return %0, %1 : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
}

// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x3x5x5xf32>, %p: tensor<3xf32>, %y: tensor<2x5x5x3xf16>, %q: tensor<3xf16>) -> (tensor<2x3x5x5xf32>, tensor<2x5x5x3xf16>) {
  // CHECK: graph.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} axis 1 eps 1.000000e-05 : tensor<2x3x5x5xf32>, tensor<3xf32>
  %0 = graph.batch_norm %x, %p, %p, %p, %p axis 1 eps 1.0e-05 : tensor<2x3x5x5xf32>, tensor<3xf32>
  // CHECK: graph.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} axis -1 eps 1.000000e-03 : tensor<2x5x5x3xf16>, tensor<3xf16>
  %1 = graph.batch_norm %y, %q, %q, %q, %q axis -1 eps 1.0e-03 : tensor<2x5x5x3xf16>, tensor<3xf16>
  return %0, %1 : tensor<2x3x5x5xf32>, tensor<2x5x5x3xf16>
}

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<2x5x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %v: tensor<8xi32>, %wi: tensor<3x8xi32>) -> (tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<3xi32>) {
  // CHECK: graph.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x5x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  %0 = graph.linear %x, %w, %b : (tensor<2x5x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  // CHECK: graph.linear %{{.*}}, %{{.*}} : (tensor<2x5x8xf32>, tensor<16x8xf32>) -> tensor<2x5x16xf32>
  %1 = graph.linear %x, %w : (tensor<2x5x8xf32>, tensor<16x8xf32>) -> tensor<2x5x16xf32>
  // CHECK: graph.linear %{{.*}}, %{{.*}} : (tensor<8xi32>, tensor<3x8xi32>) -> tensor<3xi32>
  %2 = graph.linear %v, %wi : (tensor<8xi32>, tensor<3x8xi32>) -> tensor<3xi32>
  return %0, %1, %2 : tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<3xi32>
}

// CHECK-LABEL: func.func @conv2d
func.func @conv2d(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>, %xh: tensor<2x9x9x8xf16>, %wh: tensor<3x3x2x12xf16>, %wg: tensor<8x1x3x3xf32>, %xg: tensor<1x8x10x10xf32>) -> (tensor<1x16x16x16xf32>, tensor<2x3x2x12xf16>, tensor<1x8x7x7xf32>) {
  // CHECK: graph.conv2d nchw %{{.*}}, %{{.*}}, %{{.*}} strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
  %0 = graph.conv2d nchw %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
  // NHWC with HWIO weights, 4 groups of 2 channels, stride 3, dilation 2 along W.
  // CHECK: graph.conv2d nhwc %{{.*}}, %{{.*}} strides [3, 3] padding [0, 0, 0, 0] dilations [1, 2] groups 4 : (tensor<2x9x9x8xf16>, tensor<3x3x2x12xf16>) -> tensor<2x3x2x12xf16>
  %1 = graph.conv2d nhwc %xh, %wh strides [3, 3] padding [0, 0, 0, 0] dilations [1, 2] groups 4 : (tensor<2x9x9x8xf16>, tensor<3x3x2x12xf16>) -> tensor<2x3x2x12xf16>
  // Depthwise, asymmetric padding and dilation 2.
  // CHECK: graph.conv2d nchw %{{.*}}, %{{.*}} strides [1, 1] padding [1, 0, 0, 1] dilations [2, 2] groups 8 : (tensor<1x8x10x10xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x7x7xf32>
  %2 = graph.conv2d nchw %xg, %wg strides [1, 1] padding [1, 0, 0, 1] dilations [2, 2] groups 8 : (tensor<1x8x10x10xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x7x7xf32>
  return %0, %1, %2 : tensor<1x16x16x16xf32>, tensor<2x3x2x12xf16>, tensor<1x8x7x7xf32>
}

// CHECK-LABEL: func.func @pool2d
func.func @pool2d(%x: tensor<1x16x32x32xf32>, %y: tensor<2x7x7x4xf16>, %i: tensor<1x2x5x5xi32>) -> (tensor<1x16x16x16xf32>, tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<1x2x2x2xi32>) {
  // CHECK: graph.pool2d max nchw %{{.*}} kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  %0 = graph.pool2d max nchw %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x16x32x32xf32> -> tensor<1x16x16x16xf32>
  // CHECK: graph.pool2d avg nhwc %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<2x7x7x4xf16> -> tensor<2x4x4x4xf16>
  %1 = graph.pool2d avg nhwc %y kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<2x7x7x4xf16> -> tensor<2x4x4x4xf16>
  // CHECK: graph.pool2d avg nhwc %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] count_include_pad : tensor<2x7x7x4xf16> -> tensor<2x4x4x4xf16>
  %2 = graph.pool2d avg nhwc %y kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] count_include_pad : tensor<2x7x7x4xf16> -> tensor<2x4x4x4xf16>
  // Integer max pooling, non-square kernel, asymmetric padding.
  // CHECK: graph.pool2d max nchw %{{.*}} kernel [3, 2] strides [2, 3] padding [0, 1, 1, 0] : tensor<1x2x5x5xi32> -> tensor<1x2x2x2xi32>
  %3 = graph.pool2d max nchw %i kernel [3, 2] strides [2, 3] padding [0, 1, 1, 0] : tensor<1x2x5x5xi32> -> tensor<1x2x2x2xi32>
  return %0, %1, %2, %3 : tensor<1x16x16x16xf32>, tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<1x2x2x2xi32>
}

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<2x3x4xf32>, %b: tensor<5x6xi1>) -> (tensor<4x2x3xf32>, tensor<6x5xi1>) {
  // CHECK: graph.transpose %{{.*}} [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %0 = graph.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: graph.transpose %{{.*}} [1, 0] : tensor<5x6xi1> -> tensor<6x5xi1>
  %1 = graph.transpose %b [1, 0] : tensor<5x6xi1> -> tensor<6x5xi1>
  return %0, %1 : tensor<4x2x3xf32>, tensor<6x5xi1>
}

// CHECK-LABEL: func.func @reshape
func.func @reshape(%x: tensor<2x3x4xf32>, %s: tensor<f32>) -> (tensor<6x4xf32>, tensor<24xf32>, tensor<1x1xf32>, tensor<f32>) {
  // CHECK: graph.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: graph.reshape %{{.*}} : tensor<6x4xf32> -> tensor<24xf32>
  %1 = graph.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  // CHECK: graph.reshape %{{.*}} : tensor<f32> -> tensor<1x1xf32>
  %2 = graph.reshape %s : tensor<f32> -> tensor<1x1xf32>
  // CHECK: graph.reshape %{{.*}} : tensor<1x1xf32> -> tensor<f32>
  %3 = graph.reshape %2 : tensor<1x1xf32> -> tensor<f32>
  return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<24xf32>, tensor<1x1xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @broadcast_to
func.func @broadcast_to(%x: tensor<3x1xf32>, %s: tensor<i64>) -> (tensor<2x3x4xf32>, tensor<5xi64>) {
  // CHECK: graph.broadcast_to %{{.*}} : tensor<3x1xf32> -> tensor<2x3x4xf32>
  %0 = graph.broadcast_to %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
  // CHECK: graph.broadcast_to %{{.*}} : tensor<i64> -> tensor<5xi64>
  %1 = graph.broadcast_to %s : tensor<i64> -> tensor<5xi64>
  return %0, %1 : tensor<2x3x4xf32>, tensor<5xi64>
}

// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<4x3xf32>, %m: tensor<2xi1>) -> (tensor<2x11xf32>, tensor<6x3xf32>, tensor<2xi1>) {
  // CHECK: graph.concat %{{.*}}, %{{.*}}, %{{.*}} axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %0 = graph.concat %a, %b, %a axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  // CHECK: graph.concat %{{.*}}, %{{.*}} axis -2 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %1 = graph.concat %a, %c axis -2 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  // A single input is allowed.
  // CHECK: graph.concat %{{.*}} axis 0 : (tensor<2xi1>) -> tensor<2xi1>
  %2 = graph.concat %m axis 0 : (tensor<2xi1>) -> tensor<2xi1>
  return %0, %1, %2 : tensor<2x11xf32>, tensor<6x3xf32>, tensor<2xi1>
}

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<8x10xf32>) -> (tensor<3x5xf32>, tensor<0x10xf32>, tensor<8x1xf32>) {
  // Sizes are ceil((limit - start) / step).
  // CHECK: graph.slice %{{.*}}{{\[}}[1, 0] : [7, 10] : [2, 2]] : tensor<8x10xf32> -> tensor<3x5xf32>
  %0 = graph.slice %x [[1, 0] : [7, 10] : [2, 2]] : tensor<8x10xf32> -> tensor<3x5xf32>
  // CHECK: graph.slice %{{.*}}{{\[}}[8, 0] : [8, 10] : [1, 1]] : tensor<8x10xf32> -> tensor<0x10xf32>
  %1 = graph.slice %x [[8, 0] : [8, 10] : [1, 1]] : tensor<8x10xf32> -> tensor<0x10xf32>
  // CHECK: graph.slice %{{.*}}{{\[}}[0, 9] : [8, 10] : [1, 3]] : tensor<8x10xf32> -> tensor<8x1xf32>
  %2 = graph.slice %x [[0, 9] : [8, 10] : [1, 3]] : tensor<8x10xf32> -> tensor<8x1xf32>
  return %0, %1, %2 : tensor<3x5xf32>, tensor<0x10xf32>, tensor<8x1xf32>
}

// CHECK-LABEL: func.func @gather
func.func @gather(%table: tensor<100x16xf16>, %ids: tensor<2x7xi64>, %x: tensor<3x4x5xi32>, %j: tensor<6xi32>, %k: tensor<i32>) -> (tensor<2x7x16xf16>, tensor<3x6x5xi32>, tensor<3x4xi32>) {
  // Embedding lookup.
  // CHECK: graph.gather %{{.*}}[%{{.*}}] axis 0 : (tensor<100x16xf16>, tensor<2x7xi64>) -> tensor<2x7x16xf16>
  %0 = graph.gather %table [%ids] axis 0 : (tensor<100x16xf16>, tensor<2x7xi64>) -> tensor<2x7x16xf16>
  // CHECK: graph.gather %{{.*}}[%{{.*}}] axis 1 : (tensor<3x4x5xi32>, tensor<6xi32>) -> tensor<3x6x5xi32>
  %1 = graph.gather %x [%j] axis 1 : (tensor<3x4x5xi32>, tensor<6xi32>) -> tensor<3x6x5xi32>
  // A scalar index drops the axis.
  // CHECK: graph.gather %{{.*}}[%{{.*}}] axis -1 : (tensor<3x4x5xi32>, tensor<i32>) -> tensor<3x4xi32>
  %2 = graph.gather %x [%k] axis -1 : (tensor<3x4x5xi32>, tensor<i32>) -> tensor<3x4xi32>
  return %0, %1, %2 : tensor<2x7x16xf16>, tensor<3x6x5xi32>, tensor<3x4xi32>
}

// A dynamic size along the concat axis makes the result's dynamic.
// CHECK-LABEL: func.func @concat_dynamic
// CHECK: graph.concat %{{.*}}, %{{.*}} axis 0 : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
func.func @concat_dynamic(%a: tensor<?x3xf32>, %b: tensor<2x3xf32>) -> tensor<?x3xf32> {
  %0 = graph.concat %a, %b axis 0 : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// Dynamic spatial sizes and sliced dims give dynamic (not sentinel) results.
// CHECK-LABEL: func.func @dynamic_windows
// CHECK: graph.conv2d nchw {{.*}} -> tensor<1x4x?x3xf32>
// CHECK: graph.pool2d max nchw {{.*}} -> tensor<1x3x?x2xf32>
// CHECK: graph.slice {{.*}} -> tensor<2x4xf32>
func.func @dynamic_windows(%x: tensor<1x3x?x5xf32>, %w: tensor<4x3x3x3xf32>, %y: tensor<?x4xf32>) -> (tensor<1x4x?x3xf32>, tensor<1x3x?x2xf32>, tensor<2x4xf32>) {
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x3x?x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x3xf32>
  %1 = graph.pool2d max nchw %x kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x3x?x5xf32> -> tensor<1x3x?x2xf32>
  %2 = graph.slice %y[[0, 0] : [2, 4] : [1, 1]] : tensor<?x4xf32> -> tensor<2x4xf32>
  return %0, %1, %2 : tensor<1x4x?x3xf32>, tensor<1x3x?x2xf32>, tensor<2x4xf32>
}
