// RUN: tessel-opt %s --pass-pipeline='builtin.module(func.func(linalg-sink-reshapes))' | FileCheck %s

// The epilogue of a batched x @ W consumed the matmul's rows expanded back
// to [2, 16, 64]; collapsed to 2-D it consumes the matmul directly, and the
// expand_shape moves to the kernel's result.
// CHECK-LABEL: func.func private @batched_linear
// CHECK: %[[M:.*]] = linalg.matmul
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%[[M]], %{{.*}} : tensor<32x64xf32>, tensor<32x64xf32>) outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: %[[OUT:.*]] = tensor.expand_shape %[[E]] {{\[}}[0, 1], [2]] output_shape [2, 16, 64]
// CHECK: return %[[OUT]] : tensor<2x16x64xf32>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @batched_linear(%x: tensor<2x16x64xf32>, %w: tensor<64x64xf32>, %res: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> attributes {tessel.kernel = "contraction"} {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %m = linalg.matmul ins(%rows, %w : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  %m3 = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xf32> into tensor<2x16x64xf32>
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m3, %res : tensor<2x16x64xf32>, tensor<2x16x64xf32>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x16x64xf32>
  return %r : tensor<2x16x64xf32>
}
