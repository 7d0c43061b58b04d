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
