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

// Batched matmuls with broadcast batch dims are generic contractions; a
// broadcast dim of size 1 is sliced away, so every map is a projection.
// CHECK-DAG: #[[L:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d4)>
// CHECK-DAG: #[[R:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @batched
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [2, 1, 5, 3] [1, 1, 1, 1] : tensor<2x1x5x3xbf16> to tensor<2x5x3xbf16>
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

// CHECK-LABEL: func.func @rem_and_rounding
// CHECK: arith.remf %{{.*}} : f32
// CHECK: arith.remsi
// CHECK: math.floor %{{.*}} : f32
// CHECK: math.ceil %{{.*}} : f32
// CHECK: math.roundeven %{{.*}} : f32
func.func @rem_and_rounding(%x: tensor<8xf32>, %y: tensor<8xf32>, %i: tensor<8xi64>) -> (tensor<8xf32>, tensor<8xi64>) {
  %0 = graph.rem %x, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = graph.rem %i, %i : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
  %2 = graph.floor %0 : tensor<8xf32>
  %3 = graph.ceil %2 : tensor<8xf32>
  %4 = graph.round %3 : tensor<8xf32>
  return %4, %1 : tensor<8xf32>, tensor<8xi64>
}

// -----

// CHECK-LABEL: func.func @sin_cos_erf
// CHECK: math.sin %{{.*}} : f32
// CHECK: math.cos %{{.*}} : f32
// CHECK: math.erf %{{.*}} : f32
func.func @sin_cos_erf(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.sin %x : tensor<8xf32>
  %1 = graph.cos %0 : tensor<8xf32>
  %2 = graph.erf %1 : tensor<8xf32>
  return %2 : tensor<8xf32>
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

// -----

// Reductions are one linalg.generic over the result's loops then the reduced
// loops, accumulating into a filled init tensor.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @reduce_sum
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<4x8xf32>) outs(%[[FILL]] : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: return %[[R]]
func.func @reduce_sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = graph.reduce sum %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An f16 mean sums in f32 (extf in the body), then scales by 1 / count and
// rounds once; keepdims keeps size-1 dims in the accumulator.
// CHECK-LABEL: func.func @reduce_mean_f16
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x1x1xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<2x3x4xf16>) outs(%{{.*}} : tensor<2x1x1xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: %[[INV:.*]] = arith.constant 0.0833333358 : f32
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2x1x1xf32>) outs(%{{.*}} : tensor<2x1x1xf16>)
// CHECK: arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: return %[[MEAN]] : tensor<2x1x1xf16>
func.func @reduce_mean_f16(%x: tensor<2x3x4xf16>) -> tensor<2x1x1xf16> {
  %0 = graph.reduce mean %x axes [-1, 1] keepdims : tensor<2x3x4xf16> -> tensor<2x1x1xf16>
  return %0 : tensor<2x1x1xf16>
}

// -----

// max starts from -inf (and stays in f16: no accumulation type change); an
// integer min starts from the largest value.
// CHECK-LABEL: func.func @reduce_max_min
// CHECK: %[[NINF:.*]] = arith.constant 0xFC00 : f16
// CHECK: linalg.fill ins(%[[NINF]] : f16) outs(%{{.*}} : tensor<8xf16>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x8xf16>) outs(%{{.*}} : tensor<8xf16>)
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f16
// CHECK: %[[IMAX:.*]] = arith.constant 2147483647 : i32
// CHECK: linalg.fill ins(%[[IMAX]] : i32)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK: arith.minsi
func.func @reduce_max_min(%x: tensor<4x8xf16>, %i: tensor<4x8xi32>) -> (tensor<8xf16>, tensor<4xi32>) {
  %0 = graph.reduce max %x axes [0] : tensor<4x8xf16> -> tensor<8xf16>
  %1 = graph.reduce min %i axes [1] : tensor<4x8xi32> -> tensor<4xi32>
  return %0, %1 : tensor<8xf16>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x2x3xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[E]] : tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK: return %[[T]]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = graph.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// Reshapes collapse to one dimension, then expand; rank-1 sides skip a step.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[V:.*]]: tensor<6xf32>)
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
// CHECK: %[[F:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: %[[U:.*]] = tensor.expand_shape %[[V]] {{\[\[}}0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
// CHECK: return %[[E]], %[[F]], %[[U]]
func.func @reshape(%x: tensor<2x3x4xf32>, %v: tensor<6xf32>) -> (tensor<4x6xf32>, tensor<24xf32>, tensor<2x3xf32>) {
  %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
  %1 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %2 = graph.reshape %v : tensor<6xf32> -> tensor<2x3xf32>
  return %0, %1, %2 : tensor<4x6xf32>, tensor<24xf32>, tensor<2x3xf32>
}

// -----

// To and from rank 0 the reassociation is empty.
// CHECK-LABEL: func.func @reshape_rank0
// CHECK: tensor.expand_shape %{{.*}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: tensor.collapse_shape %{{.*}} [] : tensor<1x1xf32> into tensor<f32>
func.func @reshape_rank0(%s: tensor<f32>, %t: tensor<1x1xf32>) -> (tensor<1x1xf32>, tensor<f32>) {
  %0 = graph.reshape %s : tensor<f32> -> tensor<1x1xf32>
  %1 = graph.reshape %t : tensor<1x1xf32> -> tensor<f32>
  return %0, %1 : tensor<1x1xf32>, tensor<f32>
}

// -----

// Each input is inserted at its running offset along the axis.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x11xf32>
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x11xf32>
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[B]] into %[[I0]][0, 3] [2, 5] [1, 1] : tensor<2x5xf32> into tensor<2x11xf32>
// CHECK: %[[I2:.*]] = tensor.insert_slice %[[A]] into %[[I1]][0, 8] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x11xf32>
// CHECK: return %[[I2]]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x11xf32> {
  %0 = graph.concat %a, %b, %a axis -1 : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  return %0 : tensor<2x11xf32>
}

// -----

// A strided slice is an extract_slice; an empty one is just an empty tensor.
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<8x10xf32>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][1, 0] [3, 5] [2, 2] : tensor<8x10xf32> to tensor<3x5xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<0x10xf32>
// CHECK: return %[[S]], %[[E]]
func.func @slice(%x: tensor<8x10xf32>) -> (tensor<3x5xf32>, tensor<0x10xf32>) {
  %0 = graph.slice %x [[1, 0] : [7, 10] : [2, 2]] : tensor<8x10xf32> -> tensor<3x5xf32>
  %1 = graph.slice %x [[8, 0] : [8, 10] : [1, 1]] : tensor<8x10xf32> -> tensor<0x10xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<0x10xf32>
}

// -----

// gather: a parallel generic over the result reads the index, wraps a
// negative one, clamps it into [0, 3] and extracts from the input.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-DAG: #[[RES:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x5xf32>, %[[I:.*]]: tensor<2x6xi64>)
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[RES]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[I]] : tensor<2x6xi64>) outs(%{{.*}} : tensor<3x2x6x5xf32>)
// CHECK: ^bb0(%[[IN:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[K:.*]] = arith.index_cast %[[IN]] : i64 to index
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[K]], %{{.*}} : index
// CHECK: %[[WRAP:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK: %[[SEL:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[K]] : index
// CHECK: %[[LO:.*]] = arith.minsi %[[SEL]], %{{.*}} : index
// CHECK: %[[CL:.*]] = arith.maxsi %[[LO]], %{{.*}} : index
// CHECK: %[[D0:.*]] = linalg.index 0 : index
// CHECK: %[[D3:.*]] = linalg.index 3 : index
// CHECK: %[[V:.*]] = tensor.extract %[[X]][%[[D0]], %[[CL]], %[[D3]]] : tensor<3x4x5xf32>
// CHECK: linalg.yield %[[V]] : f32
func.func @gather(%x: tensor<3x4x5xf32>, %i: tensor<2x6xi64>) -> tensor<3x2x6x5xf32> {
  %0 = graph.gather %x [%i] axis 1 : (tensor<3x4x5xf32>, tensor<2x6xi64>) -> tensor<3x2x6x5xf32>
  return %0 : tensor<3x2x6x5xf32>
}

// -----

// NCHW conv: zero padding, then linalg's named NCHW/FCHW convolution into a
// zero-filled accumulator; the bias is added along the channel dim.
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @conv_nchw
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4x4x4xf32>)
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[P]], %[[W]] : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%[[FILL]] : tensor<1x4x4x4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[CH]], #[[ID4]]], {{.*}}} ins(%[[C]], %[[B]] : tensor<1x4x4x4xf32>, tensor<4xf32>)
// CHECK: arith.addf
// CHECK: return %[[R]]
func.func @conv_nchw(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = graph.conv2d nchw %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Without bias or padding, f32 conv is the named op alone.
// CHECK-LABEL: func.func @conv_nchw_plain
// CHECK-NOT: tensor.pad
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw
// CHECK-NEXT: return %[[C]]
func.func @conv_nchw_plain(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv2d nchw %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// NHWC conv uses NHWC/HWCF; f16 accumulates in f32 and rounds once.
// CHECK-LABEL: func.func @conv_nhwc_f16
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x6x6x4xf32>)
// CHECK: %[[C:.*]] = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<1x10x10x3xf16>, tensor<3x3x3x4xf16>) outs(%{{.*}} : tensor<1x6x6x4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[C]] : tensor<1x6x6x4xf32>) outs(%{{.*}} : tensor<1x6x6x4xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: return %[[R]]
func.func @conv_nhwc_f16(%x: tensor<1x10x10x3xf16>, %w: tensor<3x3x3x4xf16>) -> tensor<1x6x6x4xf16> {
  %0 = graph.conv2d nhwc %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [2, 2] groups 1 : (tensor<1x10x10x3xf16>, tensor<3x3x3x4xf16>) -> tensor<1x6x6x4xf16>
  return %0 : tensor<1x6x6x4xf16>
}

// -----

// Grouped conv: input, weight and output are expanded to expose the group
// dimension, contracted by one generic (loops n, g, f, oh, ow, c, kh, kw with
// the stride in the input map), and the output collapsed back.
// CHECK-DAG: #[[GIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 * 2 + d7)>
// CHECK-DAG: #[[GW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[GOUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv_grouped
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<6x2x3x3xf32>)
// CHECK-NOT: linalg.conv_2d
// CHECK-DAG: %[[XE:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 2, 8, 8]
// CHECK-DAG: %[[WE:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
// CHECK-DAG: %[[OE:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 3, 3, 3]
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[GIN]], #[[GW]], #[[GOUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XE]], %[[WE]] : tensor<1x2x2x8x8xf32>, tensor<2x3x2x3x3xf32>) outs(%[[OE]] : tensor<1x2x3x3x3xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x3x3x3xf32> into tensor<1x6x3x3xf32>
// CHECK: return %[[R]]
func.func @conv_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x3x3xf32> {
  %0 = graph.conv2d nchw %x, %w strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] groups 2 : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  return %0 : tensor<1x6x3x3xf32>
}

// -----

// Depthwise NHWC with dilation 2: loops (n, c, oh, ow, kh, kw) on the image
// as it is; only the weight drops its unit dim, the result is not reshaped.
// CHECK-DAG: #[[DIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2 + d4 * 2, d3 + d5 * 2, d1)>
// CHECK-DAG: #[[DW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5, d1)>
// CHECK-DAG: #[[DOUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d1)>
// CHECK-LABEL: func.func @conv_depthwise_nhwc
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x4xf32>, %[[W:.*]]: tensor<3x3x1x4xf32>)
// CHECK: %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1], [2, 3]] : tensor<3x3x1x4xf32> into tensor<3x3x4xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[DIN]], #[[DW]], #[[DOUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[X]], %[[WC]] : tensor<1x8x8x4xf32>, tensor<3x3x4xf32>) outs(%{{.*}} : tensor<1x4x4x4xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK: return %[[R]]
func.func @conv_depthwise_nhwc(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = graph.conv2d nhwc %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [2, 2] groups 4 : (tensor<1x8x8x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Depthwise NCHW (MobileNet's), stride 2 and padding 1: the padded image read
// at (n, c, oh * 2 + kh, ow * 2 + kw); the weight [C, 1, KH, KW] as [C, KH, KW].
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-DAG: #[[WT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d4, d5)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @conv_depthwise_nchw
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<4x1x3x3xf32>)
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[WC:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1], [2], [3]] : tensor<4x1x3x3xf32> into tensor<4x3x3xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[WT]], #[[OUT]]], {{.*}} ins(%[[P]], %[[WC]] : tensor<1x4x10x10xf32>, tensor<4x3x3xf32>) outs(%{{.*}} : tensor<1x4x4x4xf32>)
// CHECK: return %[[R]]
func.func @conv_depthwise_nchw(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = graph.conv2d nchw %x, %w strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 4 : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Max pooling pads with -inf (INT_MIN for integers) and starts from it.
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NINF]] : f32
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x2x4x4xf32>)
// CHECK: %[[WIN:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[P]], %[[WIN]] : tensor<1x2x10x10xf32>, tensor<3x3xf32>)
// CHECK: %[[IMIN:.*]] = arith.constant -2147483648 : i32
// CHECK: linalg.fill ins(%[[IMIN]] : i32)
// CHECK: linalg.pooling_nhwc_max {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x2xi32>, tensor<2x2xi32>)
func.func @max_pool(%x: tensor<1x2x8x8xf32>, %y: tensor<1x8x8x2xi32>) -> (tensor<1x2x4x4xf32>, tensor<1x4x4x2xi32>) {
  %0 = graph.pool2d max nchw %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  %1 = graph.pool2d max nhwc %y kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] : tensor<1x8x8x2xi32> -> tensor<1x4x4x2xi32>
  return %0, %1 : tensor<1x2x4x4xf32>, tensor<1x4x4x2xi32>
}

// -----

// Average pooling sums (f16 in f32) over a zero-padded input, then divides:
// by the window size with count_include_pad, else by the number of cells of
// the window inside the image, computed from linalg.index.
// CHECK-LABEL: func.func @avg_pool
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x2x4x4xf32>)
// CHECK: %[[S:.*]] = linalg.pooling_nchw_sum {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x10x10xf16>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x2x4x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<1x2x4x4xf32>) outs(%{{.*}} : tensor<1x2x4x4xf16>)
// CHECK: %[[NINE:.*]] = arith.constant 9.000000e+00 : f32
// CHECK: arith.divf %{{.*}}, %[[NINE]] : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: %[[T:.*]] = linalg.pooling_nhwc_sum {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x10x10x2xf32>, tensor<3x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[T]] : tensor<1x4x4x2xf32>)
// CHECK-DAG: linalg.index 1 : index
// CHECK-DAG: linalg.index 2 : index
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: %[[CELLS:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.divf %{{.*}}, %[[CELLS]] : f32
func.func @avg_pool(%x: tensor<1x2x8x8xf16>, %y: tensor<1x8x8x2xf32>) -> (tensor<1x2x4x4xf16>, tensor<1x4x4x2xf32>) {
  %0 = graph.pool2d avg nchw %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] count_include_pad : tensor<1x2x8x8xf16> -> tensor<1x2x4x4xf16>
  %1 = graph.pool2d avg nhwc %y kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<1x8x8x2xf32> -> tensor<1x4x4x2xf32>
  return %0, %1 : tensor<1x2x4x4xf16>, tensor<1x4x4x2xf32>
}

// -----

// Float compares are ordered except ne (une); integers compare signed and
// booleans unsigned. i1 results are stored as i8 (extui), i1 operands are
// loaded with trunci, and the function signature uses i8.
// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xi64>, %{{.*}}: tensor<4xi64>, %{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>)
// CHECK: outs(%{{.*}} : tensor<4xi8>)
// CHECK: %[[F:.*]] = arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK: arith.extui %[[F]] : i1 to i8
// CHECK: %[[O:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: arith.extui %[[O]] : i1 to i8
// CHECK: %[[I:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : i64
// CHECK: arith.extui %[[I]] : i1 to i8
// CHECK: ^bb0(%[[P:.*]]: i8, %[[Q:.*]]: i8, %{{.*}}: i8):
// CHECK: %[[P1:.*]] = arith.trunci %[[P]] : i8 to i1
// CHECK: %[[Q1:.*]] = arith.trunci %[[Q]] : i8 to i1
// CHECK: %[[B:.*]] = arith.cmpi ult, %[[P1]], %[[Q1]] : i1
// CHECK: arith.extui %[[B]] : i1 to i8
// CHECK: return %{{.*}} : tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>
func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi64>, %j: tensor<4xi64>, %p: tensor<4xi1>, %q: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = graph.compare ne, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = graph.compare lt, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %2 = graph.compare ge, %i, %j : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %3 = graph.compare lt, %p, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// All three select operands broadcast; the condition is loaded from i8.
// CHECK-DAG: #[[COND:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @select
// CHECK-SAME: (%[[C:.*]]: tensor<4x1xi8>, %[[A:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[COND]], #[[ROW]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[C]], %[[A]], %[[B]] : tensor<4x1xi8>, tensor<8xf32>, tensor<4x8xf32>)
// CHECK: ^bb0(%[[CI:.*]]: i8, %[[AI:.*]]: f32, %[[BI:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[C1:.*]] = arith.trunci %[[CI]] : i8 to i1
// CHECK: %[[S:.*]] = arith.select %[[C1]], %[[AI]], %[[BI]] : f32
// CHECK: linalg.yield %[[S]] : f32
func.func @select(%c: tensor<4x1xi1>, %a: tensor<8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.select %c, %a, %b : (tensor<4x1xi1>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Casts: truncf/extf between floats (f16 <-> bf16 through f32), fptosi and
// sitofp, `!= 0` to i1, uitofp/extui from i1, extsi/trunci between integers.
// CHECK-LABEL: func.func @cast
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[W:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT: arith.truncf %[[W]] : f32 to bf16
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: %[[FZ:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[FB:.*]] = arith.cmpf une, %{{.*}}, %[[FZ]] : f32
// CHECK-NEXT: arith.extui %[[FB]] : i1 to i8
// CHECK: %[[BI:.*]] = arith.trunci %{{.*}} : i8 to i1
// CHECK-NEXT: arith.uitofp %[[BI]] : i1 to f32
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: %[[IZ:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[IB:.*]] = arith.cmpi ne, %{{.*}}, %[[IZ]] : i32
// CHECK-NEXT: arith.extui %[[IB]] : i1 to i8
// CHECK: %[[BJ:.*]] = arith.trunci %{{.*}} : i8 to i1
// CHECK-NEXT: arith.extui %[[BJ]] : i1 to i64
func.func @cast(%x: tensor<4xf32>, %h: tensor<4xf16>, %i: tensor<4xi32>, %b: tensor<4xi1>, %l: tensor<4xi64>) -> (tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xi32>, tensor<4xi1>, tensor<4xi64>) {
  %0 = graph.cast %x to f16 : tensor<4xf32>
  %1 = graph.cast %h to bf16 : tensor<4xf16>
  %2 = graph.cast %x to i32 : tensor<4xf32>
  %3 = graph.cast %i to f32 : tensor<4xi32>
  %4 = graph.cast %x to i1 : tensor<4xf32>
  %5 = graph.cast %b to f32 : tensor<4xi1>
  %6 = graph.cast %i to i64 : tensor<4xi32>
  %7 = graph.cast %l to i32 : tensor<4xi64>
  %8 = graph.cast %i to i1 : tensor<4xi32>
  %9 = graph.cast %b to i64 : tensor<4xi1>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xi32>, tensor<4xi1>, tensor<4xi64>
}

// -----

// Booleans live as i8 everywhere outside scalar bodies: constants, function
// signatures, data movement and calls.
// CHECK-LABEL: func.func private @bool_callee(tensor<3xi8>) -> tensor<3xi8>
// CHECK-LABEL: func.func @bool_storage
// CHECK-SAME: (%[[M:.*]]: tensor<2x3xi8>) -> (tensor<3x2xi8>, tensor<6xi8>, tensor<2x6xi8>, tensor<3xi8>)
// CHECK: %[[C:.*]] = arith.constant dense<[1, 0, 1]> : tensor<3xi8>
// CHECK: linalg.transpose ins(%[[M]] : tensor<2x3xi8>) outs(%{{.*}} : tensor<3x2xi8>)
// CHECK: tensor.collapse_shape %[[M]] {{\[\[}}0, 1]] : tensor<2x3xi8> into tensor<6xi8>
// CHECK: tensor.insert_slice %[[M]] into %{{.*}}[0, 3] [2, 3] [1, 1] : tensor<2x3xi8> into tensor<2x6xi8>
// CHECK: %[[R:.*]] = call @bool_callee(%[[C]]) : (tensor<3xi8>) -> tensor<3xi8>
// CHECK: linalg.generic {{.*}} ins(%[[R]], %[[R]], %[[R]] : tensor<3xi8>, tensor<3xi8>, tensor<3xi8>) outs(%{{.*}} : tensor<3xi8>)
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : i1
// CHECK: arith.extui %{{.*}} : i1 to i8
func.func private @bool_callee(tensor<3xi1>) -> tensor<3xi1>
func.func @bool_storage(%m: tensor<2x3xi1>) -> (tensor<3x2xi1>, tensor<6xi1>, tensor<2x6xi1>, tensor<3xi1>) {
  %c = graph.constant dense<[true, false, true]> : tensor<3xi1>
  %0 = graph.transpose %m [1, 0] : tensor<2x3xi1> -> tensor<3x2xi1>
  %1 = graph.reshape %m : tensor<2x3xi1> -> tensor<6xi1>
  %2 = graph.concat %m, %m axis 1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x6xi1>
  %r = func.call @bool_callee(%c) : (tensor<3xi1>) -> tensor<3xi1>
  %3 = graph.select %r, %r, %r : (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return %0, %1, %2, %3 : tensor<3x2xi1>, tensor<6xi1>, tensor<2x6xi1>, tensor<3xi1>
}

// -----

// pow computes in f32 for f16 operands.
// CHECK-LABEL: func.func @pow_f16
// CHECK: ^bb0(%[[X:.*]]: f16, %[[Y:.*]]: f16, %{{.*}}: f16):
// CHECK-DAG: %[[A:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK-DAG: %[[B:.*]] = arith.extf %[[Y]] : f16 to f32
// CHECK: %[[P:.*]] = math.powf %[[A]], %[[B]] : f32
// CHECK: arith.truncf %[[P]] : f32 to f16
func.func @pow_f16(%a: tensor<4xf16>, %b: tensor<4xf16>) -> tensor<4xf16> {
  %0 = graph.pow %a, %b : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// broadcast_to is a copy through a broadcasting indexing map.
// CHECK-DAG: #[[BIN:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[BOUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @broadcast_to
// CHECK-SAME: (%[[X:.*]]: tensor<3x1xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[BIN]], #[[BOUT]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<3x1xf32>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
func.func @broadcast_to(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.broadcast_to %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Composite ops are decomposed first: no graph op is left.
// CHECK-LABEL: func.func @composites
// CHECK-NOT: graph.
// CHECK: math.exp
// CHECK: math.rsqrt
// CHECK: linalg.transpose
// CHECK: linalg.matmul
// CHECK: return
func.func @composites(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x16xf32>) {
  %0 = graph.softmax %x axis 1 : tensor<4x8xf32>
  %1 = graph.rms_norm %x axis 1 eps 1.0e-05 : tensor<4x8xf32>
  %2 = graph.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x16xf32>
}

// -----

// A full reduction gives a rank-0 result.
// CHECK-LABEL: func.func @reduce_to_scalar
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<f32>)
func.func @reduce_to_scalar(%x: tensor<4x8xf32>) -> tensor<f32> {
  %0 = graph.reduce sum %x axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Empty concat inputs are skipped.
// CHECK-LABEL: func.func @concat_empty_last
// CHECK-COUNT-1: tensor.insert_slice
// CHECK-NOT: tensor.insert_slice
func.func @concat_empty_last(%a: tensor<2x0xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.concat %b, %a axis 1 : (tensor<2x3xf32>, tensor<2x0xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Resource-backed constants (imported weights) lower as they are.
// CHECK-LABEL: func.func @resource_constant
// CHECK: arith.constant dense_resource<blob1> : tensor<2xf32>
func.func @resource_constant() -> tensor<2xf32> {
  %0 = graph.constant dense_resource<blob1> : tensor<2xf32>
  return %0 : tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000803F00000040"
    }
  }
#-}
