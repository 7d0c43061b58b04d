// RUN: tessel-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linalg-im2col),canonicalize)' | FileCheck %s
// RUN: tessel-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linalg-im2col{fold-padding}),canonicalize)' | FileCheck %s --check-prefix=FOLD

// An NHWC convolution becomes the gather of its input's 3x3x8 patches into
// [N, OH*OW, KH*KW*C] (by tensor.extract, which tiling slices soundly) and
// a batched matmul with the filter collapsed to [KH*KW*C, F], expanded back
// to NHWC. Strides and dilations left out of the text are ones.
// CHECK-LABEL: func.func private @nhwc
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x36x72xf32>) {
// CHECK: linalg.index 0
// CHECK: tensor.extract %{{.*}} : tensor<2x8x8x8xf32>
// CHECK: %[[FILTER:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : tensor<3x3x8x16xf32> into tensor<72x16xf32>
// CHECK: %[[MM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[COLS]], %[[FILTER]] : tensor<2x36x72xf32>, tensor<72x16xf32>)
// CHECK: tensor.expand_shape %[[MM]] {{\[}}[0], [1, 2], [3]] output_shape [2, 6, 6, 16]
// CHECK-NOT: linalg.conv_2d
func.func private @nhwc(%x: tensor<2x8x8x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<2x6x6x16xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x6x6x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6x6x16xf32>) -> tensor<2x6x6x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf
      ins(%x, %w : tensor<2x8x8x8xf32>, tensor<3x3x8x16xf32>) outs(%f : tensor<2x6x6x16xf32>) -> tensor<2x6x6x16xf32>
  return %c : tensor<2x6x6x16xf32>
}

// -----

// NCHW: the filter [F, C*KH*KW] times the patches [N, C*KH*KW, OH*OW]; a
// stride of 2 is in the gather's indices. The gather carries its geometry
// (C, KH, KW, strides, dilations, OH, OW), by which the CPU packs blocks of
// it (cpu/PackPatches.cpp); an NHWC gather, whose patches are A, does not.
// CHECK-LABEL: func.func private @nchw
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x36x16xf16>) attrs = {tessel.patches = array<i64: 4, 3, 3, 2, 2, 1, 1, 4, 4>}
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[COLS]] : tensor<8x36xf16>, tensor<1x36x16xf16>) outs(%{{.*}} : tensor<1x8x16xf32>)
// CHECK: arith.extf
func.func private @nchw(%x: tensor<1x4x9x9xf16>, %w: tensor<8x4x3x3xf16>) -> tensor<1x8x4x4xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x4x9x9xf16>, tensor<8x4x3x3xf16>) outs(%f : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %c : tensor<1x8x4x4xf32>
}

// -----

// Dilations scale the taps' offsets in the gather: input row = output row
// * stride + tap row * dilation.
// CHECK-LABEL: func.func private @dilated
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x16x36xf32>)
// CHECK: %[[TAP:.*]] = arith.muli %{{.*}}, %[[TWO]] : index
// CHECK: arith.addi %{{.*}}, %[[TAP]] : index
// CHECK-NOT: linalg.conv_2d
func.func private @dilated(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x4xf32>) -> tensor<1x4x4x4xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) outs(%f : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %c : tensor<1x4x4x4xf32>
}

// -----

// A convolution of dynamic shape has no static patch matrix: it is left as
// it is (its schedule blocks the convolution's own loops).
// CHECK-LABEL: func.func private @dynamic
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK-NOT: tensor.extract
func.func private @dynamic(%x: tensor<?x8x8x4xf32>, %w: tensor<3x3x4x4xf32>, %o: tensor<?x6x6x4xf32>) -> tensor<?x6x6x4xf32> attributes {tessel.kernel = "contraction"} {
  %c = linalg.conv_2d_nhwc_hwcf
      ins(%x, %w : tensor<?x8x8x4xf32>, tensor<3x3x4x4xf32>) outs(%o : tensor<?x6x6x4xf32>) -> tensor<?x6x6x4xf32>
  return %c : tensor<?x6x6x4xf32>
}

// -----

// A convolution of a zero-padded input (as graph-to-linalg pads): without
// fold-padding the patches read the padded copy; with it (GPU targets)
// they read the unpadded input at clamped indices and select the padding
// value outside it, and the copy is gone; those bounds tests are not in
// a geometry, so that gather is not marked.
// CHECK-LABEL: func.func private @padded
// CHECK: tensor.pad
// CHECK: tessel.patches = array<i64: 4, 3, 3, 1, 1, 1, 1, 8, 8>
// CHECK: tensor.extract %{{.*}} : tensor<1x4x10x10xf32>
// FOLD-LABEL: func.func private @padded
// FOLD-NOT: tensor.pad
// FOLD-NOT: tessel.patches
// FOLD: arith.cmpi sge
// FOLD: arith.cmpi slt
// FOLD: %[[X:.*]] = tensor.extract %{{.*}} : tensor<1x4x8x8xf32>
// FOLD: arith.select %{{.*}}, %[[X]], %{{.*}} : f32
func.func private @padded(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw
      ins(%p, %w : tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) outs(%f : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %c : tensor<1x8x8x8xf32>
}
