// RUN: tessel-opt %s --graph-to-linalg --split-input-file | FileCheck %s
// The output is upstream MLIR only: mlir-opt, which knows no tessel dialect, takes it.
// RUN: tessel-opt %s --graph-to-linalg | mlir-opt | FileCheck %s --check-prefix=UPSTREAM
// UPSTREAM-NOT: graph.
// UPSTREAM: linalg.matmul

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @mlp_layer
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[FILL]] : tensor<4x16xf32>)
// CHECK: %[[ADD:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[MM]], %[[B]] : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: arith.addf
// CHECK: %[[RELU:.*]] = linalg.generic {{.*}} ins(%[[ADD]] : tensor<4x16xf32>)
// CHECK: arith.maximumf
// CHECK: return %[[RELU]]
func.func @mlp_layer(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = graph.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = graph.relu %1 : tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// Size-1 dimensions broadcast through constant-0 indexing.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @broadcast
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK: arith.subi
func.func @broadcast(%a: tensor<4x1x8xi32>, %b: tensor<3x1xi32>) -> tensor<4x3x8xi32> {
  %0 = graph.sub %a, %b : (tensor<4x1x8xi32>, tensor<3x1xi32>) -> tensor<4x3x8xi32>
  return %0 : tensor<4x3x8xi32>
}

// -----

// f16 matmuls accumulate in f32 and round once.
// CHECK-LABEL: func.func @half_matmul
// CHECK: %[[ACC:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x32xf16>, tensor<32x16xf16>) outs(%{{.*}} : tensor<64x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACC]] : tensor<64x16xf32>) outs(%{{.*}} : tensor<64x16xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @half_matmul(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>) -> tensor<64x16xf16> {
  %0 = graph.matmul %a, %b : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x16xf16>
  return %0 : tensor<64x16xf16>
}

// -----

// Batched matmuls with broadcast batch dims are generic contractions.
// CHECK-DAG: #[[L:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG: #[[R:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @batched
// CHECK: linalg.generic {indexing_maps = [#[[L]], #[[R]], #[[O]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @batched(%a: tensor<2x1x5x3xbf16>, %b: tensor<4x3x6xbf16>) -> tensor<2x4x5x6xbf16> {
  %0 = graph.matmul %a, %b : (tensor<2x1x5x3xbf16>, tensor<4x3x6xbf16>) -> tensor<2x4x5x6xbf16>
  return %0 : tensor<2x4x5x6xbf16>
}

// -----

// Constants and fusion groups: groups are inlined into their function.
// CHECK-LABEL: func.func @group
// CHECK-NOT: graph.
// CHECK: arith.constant dense<2.000000e+00> : tensor<16xf32>
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK: return
func.func @group(%x: tensor<16xf32>) -> tensor<16xf32> {
  %c = graph.constant dense<2.0> : tensor<16xf32>
  %r = graph.fused elementwise (%x, %c) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%a: tensor<16xf32>, %b: tensor<16xf32>):
    %0 = graph.exp %a : tensor<16xf32>
    %1 = graph.mul %0, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    graph.yield %1 : tensor<16xf32>
  }
  return %r : tensor<16xf32>
}

// -----

// Transcendentals on f16 compute in f32.
// CHECK-LABEL: func.func @half_tanh
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: math.tanh %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @half_tanh(%x: tensor<8xf16>) -> tensor<8xf16> {
  %0 = graph.tanh %x : tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

// Exact GELU uses erf; the tanh form uses tanh; sigmoid is 1 / (1 + exp(-x)).
// CHECK-LABEL: func.func @activations
// CHECK: linalg.generic
// CHECK: math.erf
// CHECK: linalg.generic
// CHECK-NOT: math.erf
// CHECK: math.tanh
// CHECK: linalg.generic
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
func.func @activations(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.gelu %x : tensor<8xf32>
  %1 = graph.gelu %0 approximate tanh : tensor<8xf32>
  %2 = graph.sigmoid %1 : tensor<8xf32>
  return %2 : tensor<8xf32>
}
